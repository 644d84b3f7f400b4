/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fuse-qtfs file operations on top of the shared framed protocol
 * (docs/protocol.md, "File operations").  Pure code: message type numbers,
 * the attribute record, path validation and the small codecs both halves
 * use.  No I/O, no globals.
 *
 * Requests name files by a path relative to the mount root the connection
 * chose with MOUNT, not by server-side handles: the server stays almost
 * stateless (only open files are handles), a reconnect or a server restart
 * needs no handle recovery for names, and any connection of a client can
 * serve any request.  The server resolves every path beneath the mount
 * root; see server.c for how.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "wire.h"

/* Message types, 0x0100-0x0fff (docs/protocol.md lists the fields). */
enum qtfs_op {
	QTFS_MOUNT = 0x0100,
	QTFS_STATFS = 0x0101,
	QTFS_LOOKUP = 0x0102,
	QTFS_GETATTR = 0x0103,
	QTFS_SETATTR = 0x0104,
	QTFS_READLINK = 0x0105,
	QTFS_MKNOD = 0x0106,
	QTFS_MKDIR = 0x0107,
	QTFS_UNLINK = 0x0108,
	QTFS_RMDIR = 0x0109,
	QTFS_SYMLINK = 0x010a,
	QTFS_RENAME = 0x010b,
	QTFS_LINK = 0x010c,
	QTFS_OPEN = 0x010d,
	QTFS_CREATE = 0x010e,
	QTFS_READ = 0x010f,
	QTFS_WRITE = 0x0110,
	QTFS_RELEASE = 0x0111,
	QTFS_FSYNC = 0x0112,
	QTFS_OPENDIR = 0x0113,
	QTFS_READDIR = 0x0114,
	QTFS_ACCESS = 0x0115,
	QTFS_GETXATTR = 0x0116,
	QTFS_SETXATTR = 0x0117,
	QTFS_LISTXATTR = 0x0118,
	QTFS_REMOVEXATTR = 0x0119,
	QTFS_FALLOCATE = 0x011a,
	QTFS_LSEEK = 0x011b,
	QTFS_COPY_RANGE = 0x011c,
	QTFS_FLUSH = 0x011d,
	QTFS_POLL = 0x011e,
	QTFS_SETLK = 0x011f,
	QTFS_GETLK = 0x0120,
	/* One-way, client to server: u64 id of a request to end early with EINTR. */
	QTFS_INTERRUPT = 0x0121,
	/* Held by the server until names the client may have cached change (see below). */
	QTFS_WATCH = 0x0122,
	/* Answered once every change made on the host before it is on its way in a WATCH reply. */
	QTFS_WATCH_SYNC = 0x0123,
	/* The client forgot these directories: stop watching them for it (see below). */
	QTFS_UNWATCH = 0x0124,
	QTFS_OP_MAX = 0x0125,
};

/*
 * Longest relative path a request may carry, and longest name component.
 * Above the host's PATH_MAX: a host tree may be deeper than a whole path
 * there can be (the server walks such a path a piece at a time).
 */
#define QTFS_PATH_MAX 65536
#define QTFS_NAME_MAX 1024 /* above NAME_MAX so the host's ENAMETOOLONG shows */
#define QTFS_SYMLINK_MAX 4096
/* Longest READLINK answer the kernel takes (its buffer is a page less the NUL; PATH_MAX less the NUL). */
#define QTFS_READLINK_MAX 4095
#define QTFS_XATTR_NAME_MAX 255
#define QTFS_XATTR_SIZE_MAX 65536
/* Largest READ or WRITE; the FUSE side asks for at most 1 MiB. */
#define QTFS_IO_MAX (1u << 20)

/* OPEN reply, after the attributes: what the prefetch section holds. */
enum {
	QTFS_PREFETCH_NONE = 0, /* nothing follows */
	QTFS_PREFETCH_PART = 1, /* bytes 0..n of the file follow; there may be more */
	QTFS_PREFETCH_ALL = 2,	/* the whole file follows */
};

/* Flags in qtfs_attr.flags: what the server knows about the file. */
enum {
	QTFS_AF_PSEUDO = 0x1, /* on procfs, sysfs, cgroupfs...: size is meaningless */
	QTFS_AF_RELAY = 0x2,  /* a host FIFO relayed as a stream (fuse side: S_IFREG) */
	/*
	 * In a reply that names the file (LOOKUP, MKNOD, MKDIR, SYMLINK,
	 * LINK, CREATE, READDIR with PLUS): its directory was watched for this
	 * client before the name was looked at, so a WATCH reply will report
	 * the name if it goes or changes inode.
	 */
	QTFS_AF_WATCHED = 0x4,
	/*
	 * In a MKDIR reply, with QTFS_AF_WATCHED: the new directory is
	 * watched for this client too, for new names as well (IN_CREATE),
	 * and it was empty once watched.  From here on, a WATCH reply
	 * reports every name that appears in it (QTFS_WN_NEW), so the client
	 * can know all its names.
	 */
	QTFS_AF_LISTED = 0x8,
	/*
	 * In an OPEN reply: the file's reads wait for events, without end
	 * (/proc/kmsg, trace_pipe).  The server reads it as a stream (no
	 * offsets) where a wait can be interrupted; the client gives such
	 * reads no deadline and forwards interrupts, as for a relayed FIFO.
	 */
	QTFS_AF_STREAM = 0x10,
	/*
	 * A regular file or a directory on a local file system whose last
	 * change (ctime) was, by the host's coarse clock when these attributes
	 * were read, more than QTFS_SETTLED_FINE_MS milliseconds ago if the
	 * ctime has nanoseconds, else more than QTFS_SETTLED_S seconds ago.
	 * Any later change of its data (a directory's: its names) gets another
	 * ctime, whatever the granularity of the file system's timestamps: the
	 * same mtime, ctime and size later mean the same data.  A directory
	 * is also settled at once where any change after a stat moves the
	 * ctime (Linux 6.13 or later, on tmpfs, ext4, xfs or btrfs).
	 */
	QTFS_AF_SETTLED = 0x20,
};

#define QTFS_SETTLED_S 2
#define QTFS_SETTLED_FINE_MS 50

/* MOUNT request flags: what the client asks of the session. */
enum {
	/* replies that change a directory's entries end with its new attributes */
	QTFS_MNT_DIR_ATTRS = 0x1,
	/*
	 * a u64 client id follows the flags: the sessions with one id share
	 * one subscription to WATCH events (any of them may carry the WATCH)
	 */
	QTFS_MNT_WATCH = 0x2,
	/*
	 * the client takes the bytes of large READ replies into pipes
	 * (lib/conn.h, "Replies into pipes"): the server splices them on a TCP
	 * connection from its own host too
	 */
	QTFS_MNT_PIPE_READS = 0x4,
	/*
	 * the extended attribute requests carry a u64 handle after the path
	 * (0: by path), so that those of an open file reach it wherever the
	 * host has moved it
	 */
	QTFS_MNT_XATTR_FH = 0x8,
	/* with WATCH: a directory's move may come as one name (QTFS_WN_MOVED) */
	QTFS_MNT_WATCH_MOVES = 0x10,
	/*
	 * the caller of MKNOD, MKDIR, SYMLINK and CREATE ends with a u32 umask,
	 * and the request's mode is not masked yet: the server masks it unless
	 * the parent directory has a default ACL, as the host's kernel would
	 */
	QTFS_MNT_UMASK = 0x20,
	/*
	 * every WRITE says whether the writer's file is in append mode
	 * (QTFS_WR_APPEND): one that does not writes at its offset also on a
	 * handle opened with O_APPEND, whose mode fcntl(F_SETFL) cleared
	 */
	QTFS_MNT_WRITE_MODE = 0x40,
	/*
	 * the reply ends with the server's instance, a u64 drawn at random
	 * when the server process starts: a client that finds another one
	 * after reconnecting knows that nothing it sent before can still be
	 * carried out (see "changes whose answer was lost" in fs.c)
	 */
	QTFS_MNT_INSTANCE = 0x80,
	/*
	 * with WATCH: a READDIR from offset 0 may ask for its directory to be
	 * watched for new names too (QTFS_RD_LIST), so that a client that
	 * reads the whole listing may keep all its names
	 */
	QTFS_MNT_LIST_DIRS = 0x100,
	/* with WATCH: the client says which directories it forgot (QTFS_UNWATCH) */
	QTFS_MNT_UNWATCH = 0x200,
};

/* MOUNT reply flags. */
enum {
	QTFS_MF_RDONLY = 0x1,	 /* the export is read-only */
	QTFS_MF_DIR_ATTRS = 0x2, /* QTFS_MNT_DIR_ATTRS granted */
	QTFS_MF_WATCH = 0x4,	 /* QTFS_MNT_WATCH granted */
	QTFS_MF_XATTR_FH = 0x8,	 /* QTFS_MNT_XATTR_FH granted */
	QTFS_MF_WATCH_MOVES = 0x10, /* QTFS_MNT_WATCH_MOVES granted */
	QTFS_MF_UMASK = 0x20,	    /* QTFS_MNT_UMASK granted */
	QTFS_MF_INSTANCE = 0x40,    /* QTFS_MNT_INSTANCE granted: the instance follows the attributes */
	QTFS_MF_LIST_DIRS = 0x80,   /* QTFS_MNT_LIST_DIRS granted */
	QTFS_MF_UNWATCH = 0x100,    /* QTFS_MNT_UNWATCH granted */
};

/*
 * WATCH: request u32 wait_ms (at most QTFS_WATCH_WAIT_MAX_MS); the reply,
 * sent when there is something to say or the wait is over: u32 flags, u64
 * seq (numbers the subscription's replies from 1), u32 count, then count
 * x (u64 dev, u64 ino, u64 gen of a directory, u8 name flags, bytes
 * name): names that were deleted, renamed away or renamed over since the
 * last reply, and in QTFS_AF_LISTED directories names that appeared, at
 * most QTFS_WATCH_BATCH_MAX per reply (more in between is an overflow).
 *
 * WATCH_SYNC: empty request; the reply is u64 seq: every change the host
 * made before the request is in WATCH reply seq or an earlier one.
 *
 * UNWATCH (sessions granted QTFS_MF_UNWATCH): request u32 count (1 to
 * QTFS_UNWATCH_MAX), then count x (u64 dev, u64 ino, u64 gen) of
 * directories the client no longer holds anything of; the server stops
 * watching each for this client (and altogether where no other client's
 * subscription has it).  Empty reply.  A request that went out while the
 * client looked in one of them again may undo the watch that request's
 * reply relied on: the client trusts no QTFS_AF_WATCHED or
 * QTFS_AF_LISTED of a call that overlapped an UNWATCH.
 */
#define QTFS_UNWATCH_MAX 1024
enum {
	QTFS_WF_START = 0x1,	/* a new subscription: what came before is unknown */
	QTFS_WF_OVERFLOW = 0x2, /* events were lost: anything may have changed */
};

/* Name flags in a WATCH reply. */
enum {
	QTFS_WN_DIR = 0x1, /* the name is (or was) a directory's */
	/*
	 * The name was created (IN_CREATE): nothing cached is wrong.  A name
	 * renamed in comes without it, since it may replace a cached one.
	 */
	QTFS_WN_NEW = 0x2,
	/*
	 * (QTFS_MNT_WATCH_MOVES only) a directory renamed away from this name
	 * into a watched directory: then follow u64 dev, ino, gen of the new
	 * parent, bytes new name, u64 dev, ino, gen of the directory moved
	 */
	QTFS_WN_MOVED = 0x4,
};
#define QTFS_WATCH_WAIT_MAX_MS 60000
#define QTFS_WATCH_BATCH_MAX 4096

/* One name of a WATCH reply. */
struct qtfs_watch_name {
	uint64_t dev, ino, gen; /* its directory */
	bool is_dir;
	bool is_new; /* QTFS_WN_NEW */
	const char *name; /* into the reply's buffer; not NUL-terminated */
	size_t len;
	bool moved; /* QTFS_WN_MOVED: the rest is set */
	uint64_t to_dev, to_ino, to_gen; /* the new parent */
	const char *to_name;		  /* into the reply's buffer; not NUL-terminated */
	size_t to_len;
	uint64_t self_dev, self_ino, self_gen; /* the directory moved */
};

/*
 * Read a WATCH reply into *@flags, *@seq and @names (a GArray of struct
 * qtfs_watch_name, appended to): at most QTFS_WATCH_BATCH_MAX names, each
 * a single valid component (qtfs_name_check) with known name flags,
 * nothing after them.  0, or -EBADMSG (and @names holds whatever came
 * before the fault).
 */
int qtfs_watch_reply_read(const struct qt_msg *rep, uint32_t *flags, uint64_t *seq,
			  GArray *names);

/* SETATTR valid bits (the same meaning as FUSE_SET_ATTR_*). */
enum {
	QTFS_SA_MODE = 0x01,
	QTFS_SA_UID = 0x02,
	QTFS_SA_GID = 0x04,
	QTFS_SA_SIZE = 0x08,
	QTFS_SA_ATIME = 0x10,
	QTFS_SA_MTIME = 0x20,
	QTFS_SA_ATIME_NOW = 0x80,
	QTFS_SA_MTIME_NOW = 0x100,
	QTFS_SA_CTIME = 0x400,
	QTFS_SA_KNOWN = 0x5bf,
};

/* WRITE request flags. */
enum {
	QTFS_WR_KILL_PRIV = 0x1, /* the writer is unprivileged: clear set-id bits as a local write would */
	/*
	 * The writer's file is in append mode (O_APPEND, also when set by
	 * fcntl(F_SETFL) after the open, which the handle's open flags do not
	 * have): the data goes at the end of the host's file, whatever the
	 * offset.  A server that ignores it writes at the offset.
	 */
	QTFS_WR_APPEND = 0x2,
};

/* SETLK request flags. */
enum {
	QTFS_LK_FLOCK = 0x1,	     /* flock(2) on the handle, not a POSIX record lock */
	QTFS_LK_RELEASE_OWNER = 0x2, /* drop every POSIX lock of the owner on the file (close) */
	QTFS_LK_KNOWN = 0x3,
};

/* READDIR request flags. */
enum {
	QTFS_RD_PLUS = 0x1, /* include each entry's attributes */
	/*
	 * From offset 0, on a session granted QTFS_MNT_LIST_DIRS: before any
	 * entry is read, watch the directory for this client for new names
	 * too, as a MKDIR's; the reply begins with a u32, QTFS_AF_LISTED if
	 * that worked (from here on a WATCH reply reports every name that
	 * appears in it, QTFS_WN_NEW, and the entries are read anew from the
	 * directory's start), else 0, before the count.
	 */
	QTFS_RD_LIST = 0x2,
};

/*
 * A file's attributes as the host sees them.  Owner, mode and times are
 * the host's unchanged; dev/ino identify the host inode (the client maps
 * them to its own node ids).
 */
struct qtfs_attr {
	uint64_t dev;
	uint64_t ino;
	uint32_t mode;
	uint32_t nlink;
	uint32_t uid;
	uint32_t gid;
	uint64_t rdev;
	int64_t size;
	int64_t blocks;
	uint32_t blksize;
	uint32_t flags; /* QTFS_AF_* */
	int64_t atime_sec, mtime_sec, ctime_sec;
	uint32_t atime_nsec, mtime_nsec, ctime_nsec;
	/*
	 * Which incarnation of the inode number this is: a hash of the host's
	 * file handle (name_to_handle_at), which carries the file system's
	 * inode generation, so a reused inode number gets a new value; 0 where
	 * the file system makes no handles (procfs, sysfs...).
	 */
	uint64_t gen;
};

#define QTFS_ATTR_WIRE_SIZE 108
/* Where mode, size and blksize lie in the record (docs/protocol.md). */
#define QTFS_ATTR_MODE_OFFSET 16
#define QTFS_ATTR_SIZE_OFFSET 40
#define QTFS_ATTR_BLKSIZE_OFFSET 56

void qtfs_attr_from_stat(struct qtfs_attr *a, const struct stat *st, uint32_t flags, uint64_t gen);
void qtfs_attr_to_stat(const struct qtfs_attr *a, struct stat *st);
void qtfs_put_attr(struct qt_msg *m, const struct qtfs_attr *a);
int qtfs_rd_attr(struct qt_rd *r, struct qtfs_attr *a); /* -EBADMSG: short, or no file could have them */
bool qtfs_mode_type_ok(uint32_t mode); /* one of the seven file types */

/*
 * Check a relative path from the wire: "" (the mount root) or components
 * joined by single '/', none empty, "." or "..", no leading or trailing
 * '/', at most QTFS_PATH_MAX bytes.  0 or -EINVAL.
 */
int qtfs_path_check(const char *path, size_t len);
/* A single name component: non-empty, no '/', not "." or "..".  0 or -EINVAL. */
int qtfs_name_check(const char *name, size_t len);

/* A name for log lines: "LOOKUP", or "op 0x1234". */
const char *qtfs_op_name(uint16_t type);
/* True for operations that change the exported tree or a file's data. */
bool qtfs_op_writes(uint16_t type);
