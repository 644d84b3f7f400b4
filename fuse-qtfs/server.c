// SPDX-License-Identifier: Apache-2.0
/*
 * qtfs-server's file operations.  Each connection is a session: MOUNT
 * picks a directory inside one export as the session's root, and every
 * later request names files by a path relative to that root.
 *
 * Confinement.  A path from the wire is first checked lexically
 * (qtfs_path_check: no "..", ".", empty or absolute components), then
 * resolved with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) from the
 * root's O_PATH descriptor, and the last component is always used with
 * AT_SYMLINK_NOFOLLOW or O_NOFOLLOW.  So neither "..", nor a symlink
 * (relative or absolute) planted on the host, nor a /proc magic link can
 * lead outside the root: the kernel refuses the walk with EXDEV or ELOOP.
 * Mount points beneath an export are crossed (an export of /sys must reach
 * /sys/fs/cgroup).
 *
 * Ownership.  The server runs as root and creates files as root, then
 * gives them the caller's uid and gid (the parent's gid under a set-group-ID
 * directory), which is what a local create would have produced.  Permission
 * checks happen on the client: fuse-qtfs mounts with default_permissions,
 * against the host's owners and modes.
 *
 * Session states:
 *   NEW --MOUNT ok--> MOUNTED --connection closed--> CLOSED
 * Requests other than MOUNT before MOUNTED get EPERM.  A session is freed
 * when the connection is closed and no request of it is still running; its
 * open handles are closed then.
 *
 * Locking: sess->lock protects sess->handles, sess->next_handle and the
 * root (written once by MOUNT); the loop thread takes it too, so it is
 * never held across a call that can wait.  sess->owners_lock protects
 * sess->lock_owners, whose descriptors are opened and closed under it (an
 * open can wait for a lease, a close for a network file system): only
 * the session's other lock requests wait for it.  A handle's own
 * lock serializes directory reads on it (the directory offset is shared
 * state).
 *
 * File locks.  The host must see the DPU's locks, and the DPU the host's,
 * so they are taken on the host.  flock(2) locks belong to an open file
 * description: one per client open, which is what a handle is.  POSIX
 * record locks belong to a process, but this server is one process for
 * all its clients, so each (file, lock owner) pair gets an open file
 * description of its own, reopened from a handle, on which open file
 * description locks (F_OFD_SETLK) are taken: they conflict with each other
 * and with the host's ordinary POSIX locks exactly as two processes'
 * locks would.  The owner's description is closed (its locks released)
 * when the client says the owner closed the file, or with the session.
 * Nothing here blocks: waiting for a lock is the client's loop.
 *
 * Name caching.  A client that mounts with QTFS_MNT_WATCH and keeps a
 * WATCH request outstanding may cache names for long: before a reply
 * names a file (LOOKUP, the creates, READDIR with PLUS) the server has
 * its directory watched (dirwatch.c) and says so (QTFS_AF_WATCHED), and
 * from then on a name there that is deleted, renamed away or renamed over
 * on the host, by anyone, goes into the client's queue and out with the
 * next WATCH reply.  The watch is in place before the name is looked at,
 * so a change can only come after the look and is reported.  The kernel
 * on the client orders the rest: a name being looked up holds its
 * directory's lock until the answer is in the dentry cache, and the
 * invalidation takes that lock.  Queue overflow (here or in the kernel)
 * and a new subscription (QTFS_WF_START: after a restart, or once every
 * session of the client was gone) tell the client to drop every name.
 * Pseudo file systems are never cached by the client; network file
 * systems are never watched (inotify sees only this host's changes).
 * A directory MKDIR makes for the client is watched for new names too
 * (watch_new_dir(): QTFS_AF_LISTED when it was empty once watched), so
 * that the client may keep all its names.  WATCH_SYNC (watch_sync()) is
 * the barrier: what the host changed before it goes out at once.
 */
#include "config.h"

#include "server.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "dirwatch.h"
#include "endpoint.h"
#include "log.h"
#include "mountinfo.h"
#include "proto.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

struct qtfs_export {
	char *path;
	bool ro;
	int fd; /* O_PATH directory */
};

/* First member of both structs a connection's user data may point to. */
enum { TAG_SRV = 0x51535256, TAG_SESS = 0x53455353 };

struct qtfs_srv {
	uint32_t tag; /* TAG_SRV */
	uint64_t instance; /* QTFS_MNT_INSTANCE: random, never 0 */
	struct qt_loop *loop;
	struct qtfs_export *exports;
	unsigned n_exports;
	const struct qtfs_wl *wl;
	unsigned max_handles;
	GArray *unix_uids; /* uint32_t */
	GThreadPool *pool;     /* ordinary requests */
	GThreadPool *blocking; /* requests that may wait on other processes */
	bool inline_meta;      /* see runs_inline() */
	bool ring_ops;	       /* see ring_start() */
	void (*conn_closed)(void *arg);
	void *conn_closed_arg;
	unsigned sessions;
	int live; /* atomic: sessions not freed yet (their requests, timers and replies hold them) */
	gint64 ns_here_after; /* loop thread: see ns_here() */

	GMutex dev_lock;
	GHashTable *dev_pseudo; /* st_dev -> GINT_TO_POINTER(1 + is_pseudo) */

	struct qtfs_dirwatch *dw; /* NULL: no name caching (see "Name caching") */
	unsigned max_watches;	  /* directories, in all */
	unsigned client_watches;  /* directories, per client (subscription) */
	GMutex sub_lock;
	GHashTable *subs; /* client id (u64*) -> struct watch_sub*; sub_lock */

	/* What the sessions hold, in all (atomic; qtfs_srv_log_counts()): handles not freed yet,
	 * lock owners' descriptors. */
	int n_handles, n_owners;
	/* Requests taken in since the start, by operation (qtfs_srv_log_counts()); atomic. */
	uint64_t op_count[QTFS_OP_MAX - QTFS_MOUNT];
};

/*
 * One client's subscription to directory events: shared by the sessions
 * that mounted with its id (QTFS_MNT_WATCH), alive while one of them is.
 * It hears of the directories its sessions had watched only: another
 * client's, perhaps of another export, are none of its business.
 * Everything but the id is under srv->sub_lock.
 */
struct watch_sub {
	uint64_t client;
	struct qtfs_srv *srv;
	int refs;	/* sessions */
	int started;	/* atomic: a WATCH came; events are kept from then on */
	GHashTable *dirs; /* struct sub_dir: the directories watched for this client */
	GArray *queue;	/* struct watch_ev, at most QTFS_WATCH_BATCH_MAX */
	bool overflow;	/* events were dropped since the last reply */
	struct job *waiting; /* the WATCH request held, or NULL */
	struct qt_timer *timer; /* ends the wait of @waiting */
	bool flushing;		/* @timer is the short one of watch_soon() */
	bool sync;		/* a WATCH_SYNC waits for the queue: answer without delay */
	uint64_t seq;		/* of the last WATCH reply */
	bool full_logged;	/* client_watches reached: said once */
	bool moves;		/* QTFS_MNT_WATCH_MOVES: moves go as one name (QTFS_WN_MOVED) */
};

/* What a subscription hears of a directory: names that go, or those that appear too. */
enum { DIR_NAMES = 1, DIR_NEW = 2 };

/*
 * A directory watched for a client.  The key is (dev, ino); gen tells
 * the incarnation, so that the end of a removed directory (QTFS_DW_GONE)
 * does not take the entry of a new one that reused its inode number.
 */
struct sub_dir {
	struct qtfs_dirid id;
	int what; /* DIR_NAMES or DIR_NEW */
};

/*
 * A held WATCH is answered this long after the first name is queued, so
 * that a burst of changes (a DPU process unlinking files one after the
 * other: each comes back as an event) travels in a few replies, not one
 * round trip and two thread wake-ups per name.  At half a batch it goes
 * at once.
 */
#define WATCH_COALESCE_MS 5

struct watch_ev {
	struct qtfs_dirid dir;
	bool is_new;
	char *name;
	bool is_dir;
	/* a directory's move (dirwatch.h); sent as one where the client asked (QTFS_MNT_WATCH_MOVES) */
	bool moved;
	struct qtfs_dirid to_dir, self;
	char *to_name;
};

struct handle {
	struct qtfs_srv *srv;
	int fd;
	bool dir;
	bool stream;	   /* a FIFO or pseudo_waits(): read(2)/write(2), no offsets */
	bool quick_close; /* on a memory or pseudo file system: see ring_submit() */
	bool splice;	  /* a regular file, not on a pseudo file system: see SPLICE_MIN */
	int append;	  /* atomic: the descriptor has O_APPEND, pwrite(2) appends (see op_write()) */
	bool released;	  /* out of the session's table (RELEASE); sess->lock */
	int refs;    /* atomic */
	GMutex lock; /* directory position, and the rd_* fields */
	/* A directory: where the last READDIR ended, and what it read past that (op_readdir()). */
	bool rd_at;	   /* the descriptor stands at rd_next, rd_left read past it */
	uint64_t rd_next;  /* the d_off of the last entry sent */
	uint8_t *rd_left;  /* getdents records read and not sent, or NULL */
	size_t rd_left_len;
};

struct session {
	uint32_t tag; /* TAG_SESS */
	struct qtfs_srv *srv;
	bool refused; /* unix peer with a uid not allowed: every request gets EACCES */
	struct qt_conn *conn;
	int refs; /* atomic: the connection + running jobs */
	int closed; /* atomic: the connection is gone; jobs not started yet are dropped */
	GMutex lock;
	int root_fd; /* -1 until MOUNT */
	char *root_path;
	bool ro;
	bool root_pseudo;    /* the root is on procfs, sysfs...: see tl_cached_only */
	bool dir_attrs;	     /* QTFS_MNT_DIR_ATTRS: see put_dir_attr() */
	bool xattr_fh;	     /* QTFS_MNT_XATTR_FH: see xattr_open() */
	bool umask;	     /* QTFS_MNT_UMASK: see rd_caller() */
	bool write_mode;     /* QTFS_MNT_WRITE_MODE: see op_write() */
	bool list_dirs;	     /* QTFS_MNT_LIST_DIRS granted: see op_readdir() */
	bool splice;	     /* large READ replies may be spliced: see SPLICE_MIN */
	GHashTable *handles; /* u64 -> struct handle* */
	uint64_t next_handle;
	GMutex owners_lock;
	GHashTable *lock_owners; /* struct lock_owner* (key and value), see "File locks"; owners_lock */
	GHashTable *blocked;	 /* request id -> struct blocked*, under lock: see "Interrupts" */
	struct watch_sub *sub;	 /* set by MOUNT with QTFS_MNT_WATCH, then fixed */
};

/* A POSIX lock owner's open file description of one host file. */
struct lock_owner {
	uint64_t dev, ino, owner;
	int fd;
	uint32_t pid; /* the client's pid of the owner, for GETLK */
	struct qtfs_srv *srv;
};

struct job {
	struct session *sess;
	struct qt_msg *req;
	struct qt_msg *reply;
	bool lazy; /* the reply may wait for company (a RELEASE's: see qt_conn_reply_lazy()) */
};

/* ---- exports ----------------------------------------------------------- */

static bool path_has_prefix(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (!strcmp(prefix, "/"))
		return true;
	return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

int qtfs_export_parse(const char *s, struct qtfs_export_spec *out, char **msg)
{
	g_autofree char *p = g_strdup(s);
	bool ro = false;
	char *colon = strrchr(p, ':');
	g_autofree char *canon = NULL;

	if (colon && (!strcmp(colon, ":ro") || !strcmp(colon, ":rw"))) {
		ro = colon[1] == 'r' && colon[2] == 'o';
		*colon = '\0';
	}
	if (p[0] != '/') {
		*msg = g_strdup_printf("export \"%s\": not an absolute path", s);
		return -EINVAL;
	}
	canon = g_canonicalize_filename(p, "/");
	if (strlen(canon) >= PATH_MAX) {
		*msg = g_strdup_printf("export \"%s\": path too long", s);
		return -EINVAL;
	}
	out->path = g_steal_pointer(&canon);
	out->ro = ro;
	return 0;
}

void qtfs_export_clear(struct qtfs_export_spec *e)
{
	g_clear_pointer(&e->path, g_free);
}

/* ---- pseudo file systems ------------------------------------------------ */

/*
 * What reading a file of a pseudo file system costs and risks.  procfs and
 * cgroupfs files are generated by the read itself and reading them has no
 * effect (but /proc/kmsg, see prefetch_ok()), so the first chunk may be
 * read at open time; sysfs attributes are driver code (some clear a counter
 * when read), debugfs and tracefs have consuming files: those are read
 * only when the client reads.
 */
enum dev_kind {
	DEV_PLAIN = 1,
	DEV_MEMORY,	 /* tmpfs, ramfs: plain files that never wait for a disk */
	DEV_PSEUDO,
	DEV_PSEUDO_SNAP, /* pseudo, and safe to read at open (prefetch) */
	DEV_SHARED,	 /* plain, but changed by other machines too (NFS...) */
};

static bool kind_pseudo(enum dev_kind k)
{
	return k == DEV_PSEUDO || k == DEV_PSEUDO_SNAP;
}

/*
 * DEV_SHARED: file systems whose files other machines change too (network
 * and cluster file systems, FUSE): inotify sees only this host's changes
 * there, so names from them are never watched (see "Name caching" below).
 */
static enum dev_kind fs_type_kind(long type)
{
	switch ((unsigned long)type) {
	case PROC_SUPER_MAGIC:
	case CGROUP_SUPER_MAGIC:
	case CGROUP2_SUPER_MAGIC:
		return DEV_PSEUDO_SNAP;
	case SYSFS_MAGIC:
	case DEBUGFS_MAGIC:
	case TRACEFS_MAGIC:
	case SECURITYFS_MAGIC:
	case BPF_FS_MAGIC:
		return DEV_PSEUDO;
	case TMPFS_MAGIC:
	case RAMFS_MAGIC:
		return DEV_MEMORY;
	case 0x6969:	 /* NFS */
	case 0x517b:	 /* SMB */
	case 0xff534d42: /* CIFS */
	case 0xfe534d42: /* SMB2 */
	case 0x65735546: /* FUSE */
	case 0x00c36400: /* Ceph */
	case 0x01021997: /* 9P */
	case 0x5346414f: /* AFS */
	case 0x6b414653: /* kAFS */
	case 0x73757245: /* Coda */
	case 0x01161970: /* GFS2 */
	case 0x7461636f: /* OCFS2 */
	case 0x0bd00bd0: /* Lustre */
	case 0x20030528: /* OrangeFS */
		return DEV_SHARED;
	default:
		return DEV_PLAIN;
	}
}

/* Linux 6.13 or later: multigrain timestamps (see fs_fine_ctime()). */
static bool kernel_mgtime(void)
{
	static gsize once;
	static bool yes;

	if (g_once_init_enter(&once)) {
		struct utsname u;
		unsigned major = 0, minor = 0;

		yes = uname(&u) == 0 && sscanf(u.release, "%u.%u", &major, &minor) == 2 &&
		      (major > 6 || (major == 6 && minor >= 13));
		g_once_init_leave(&once, 1);
	}
	return yes;
}

/* The type name of the file system mounted from @dev, in @buf, per this process's mount table. */
static bool mount_type_of(dev_t dev, char *buf, size_t len)
{
	g_autoptr(GPtrArray) mounts = qt_mountinfo_read();
	const struct qt_mount *m = mounts ? qt_mountinfo_of_dev(mounts, dev) : NULL;

	if (m)
		g_strlcpy(buf, m->fstype, len);
	return m != NULL;
}

/*
 * Does any change of a directory here after a stat of it get a ctime
 * other than the one that stat saw, however soon it comes?  Since Linux
 * 6.13 tmpfs, ext4, xfs and btrfs stamp the first change after a stat
 * with the fine clock when the coarse one has not moved on (multigrain
 * timestamps), so the ctime always moves.  ext2 and ext3 share ext4's
 * magic number and not its timestamps: the type's name tells them apart.
 */
static bool fs_fine_ctime(long type, dev_t dev)
{
	char name[64];

	if (!kernel_mgtime())
		return false;
	switch ((unsigned long)type) {
	case TMPFS_MAGIC:
	case XFS_SUPER_MAGIC:
	case BTRFS_SUPER_MAGIC:
		return true;
	case EXT4_SUPER_MAGIC:
		return mount_type_of(dev, name, sizeof(name)) && !strcmp(name, "ext4");
	default:
		return false;
	}
}

/* A dev_info() bit: fs_fine_ctime() of the device. */
#define DEV_FINE_CTIME 0x100

/*
 * What the server knows of the file system holding st_dev: its enum
 * dev_kind, and DEV_FINE_CTIME.  Remembered per device so that only the
 * first file seen on a device costs an fstatfs.  @fd/@name locate a file
 * on it (name "" for @fd itself).
 */
static int dev_info(struct qtfs_srv *srv, dev_t dev, int fd, const char *name)
{
	gpointer v;
	struct statfs sfs;
	int info = DEV_PLAIN;
	int tfd;

	g_mutex_lock(&srv->dev_lock);
	v = g_hash_table_lookup(srv->dev_pseudo, GSIZE_TO_POINTER((gsize)dev));
	g_mutex_unlock(&srv->dev_lock);
	if (v)
		return GPOINTER_TO_INT(v);

	tfd = *name ? openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC) : fd;
	if (tfd < 0)
		return DEV_PLAIN;
	if (fstatfs(tfd, &sfs) == 0) {
		static const char *const kinds[] = {
			[DEV_PLAIN] = "a local disk",
			[DEV_MEMORY] = "memory",
			[DEV_PSEUDO] = "pseudo",
			[DEV_PSEUDO_SNAP] = "pseudo",
			[DEV_SHARED] = "shared with other machines",
		};
		enum dev_kind kind = fs_type_kind(sfs.f_type);

		info = (int)kind | (fs_fine_ctime(sfs.f_type, dev) ? DEV_FINE_CTIME : 0);
		qt_debug("device %u:%u: file system type 0x%lx, %s%s", major(dev), minor(dev),
			 (unsigned long)sfs.f_type, kinds[kind],
			 info & DEV_FINE_CTIME ? "; a directory's ctime moves at every change after a stat" : "");
		g_mutex_lock(&srv->dev_lock);
		g_hash_table_insert(srv->dev_pseudo, GSIZE_TO_POINTER((gsize)dev), GINT_TO_POINTER(info));
		g_mutex_unlock(&srv->dev_lock);
	}
	if (tfd != fd)
		close(tfd);
	return info;
}

/* The enum dev_kind in a dev_info(). */
static enum dev_kind info_kind(int info)
{
	return (enum dev_kind)(info & ~DEV_FINE_CTIME);
}

/* The kind of file system holding st_dev (see dev_info()). */
static enum dev_kind dev_kind(struct qtfs_srv *srv, dev_t dev, int fd, const char *name)
{
	return info_kind(dev_info(srv, dev, fd, name));
}

/* ---- path resolution ---------------------------------------------------- */

/*
 * An op returns DEFER to be run again where it may wait: from the loop
 * thread on the worker pool, from there on the blocking pool (see
 * tl_blocking_ok below).
 */
#define DEFER (-100000)

/*
 * The loop thread must not wait for a disk: the requests it runs itself
 * (runs_inline(), and the checks before a ring submission) resolve paths
 * from the dentry cache only (RESOLVE_CACHED), and a path that is not all
 * there is done again on the worker pool (DEFER), which may read the disk.
 * For a name looked up in its directory (at_resolve()) only the directory
 * must be cached: the name itself is looked up by the loop thread, since
 * the LOOKUP before every create asks for a name that is not there yet,
 * and the directory's blocks are in the page cache when it is in use.
 * cached_ok is cleared, and the loop thread then resolves like everyone
 * else, on a kernel without RESOLVE_CACHED (before 5.12).  Not for a
 * session whose root is a pseudo file system (procfs, sysfs, cgroupfs):
 * there nothing waits for a disk, and RESOLVE_CACHED always fails (their
 * dentries revalidate, which a cached-only walk does not do).
 */
static __thread bool tl_cached_only;
static gint cached_ok = 1; /* atomic */
#define OPENAT2_RETRIES 1000

static int openat2_beneath1(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	long r;

	if (tl_cached_only && g_atomic_int_get(&cached_ok)) {
		how.resolve |= RESOLVE_CACHED;
		r = syscall(SYS_openat2, dirfd, *path ? path : ".", &how, sizeof(how));
		if (r >= 0 || errno != EINVAL)
			return r >= 0 ? (int)r : errno == EAGAIN ? DEFER : -errno;
		/* EINVAL: maybe no RESOLVE_CACHED here; ask once without it. */
		how.resolve &= ~(uint64_t)RESOLVE_CACHED;
		r = syscall(SYS_openat2, dirfd, *path ? path : ".", &how, sizeof(how));
		if (r >= 0 || errno != EINVAL)
			g_atomic_int_set(&cached_ok, 0);
		if (r >= 0)
			close((int)r);
		return DEFER;
	}
	/*
	 * EAGAIN: a rename or mount anywhere on the host raced with the walk.
	 * Try again, but not forever: a host renaming without pause would
	 * keep a worker here.  The caller then gets EAGAIN.
	 */
	for (int i = 0;; i++) {
		r = syscall(SYS_openat2, dirfd, *path ? path : ".", &how, sizeof(how));
		if (r >= 0 || errno != EAGAIN || i == OPENAT2_RETRIES)
			break;
		if (i >= 8)
			sched_yield();
	}
	return r < 0 ? -errno : (int)r;
}

/*
 * openat2() with RESOLVE_BENEATH from @dirfd.  The kernel takes a path of
 * less than PATH_MAX bytes; a longer one (a tree deeper than that, which a
 * local program walks relative to a directory) is walked a piece at a
 * time, each piece of less than PATH_MAX bytes ending at a '/' and
 * resolved beneath the directory the last one reached: still beneath
 * @dirfd, and a symlink whose ".." would climb back across a piece's start
 * is EXDEV, as one climbing out of @dirfd is.  Wire paths name directories
 * the client looked up, so only a host that swapped one for a symlink
 * meanwhile meets that.  Components are at most QTFS_NAME_MAX bytes, so
 * every piece has a '/' to end at.
 */
static int openat2_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
	const char *rest = path;
	int fd = dirfd, r;

	while (strlen(rest) >= PATH_MAX) {
		const char *cut = memrchr(rest, '/', PATH_MAX - 1);
		g_autofree char *piece = NULL;
		int next;

		if (!cut || cut == rest) {
			r = -ENAMETOOLONG;
			goto out;
		}
		piece = g_strndup(rest, (gsize)(cut - rest));
		next = openat2_beneath1(fd, piece, O_PATH | O_DIRECTORY, 0);
		if (fd != dirfd)
			close(fd);
		if (next < 0)
			return next;
		fd = next;
		rest = cut + 1;
	}
	r = openat2_beneath1(fd, rest, flags, mode);
out:
	if (fd != dirfd)
		close(fd);
	return r;
}

/*
 * A path split into the O_PATH descriptor of its directory and its last
 * component.  For the root itself, name is "" and dirfd is the root: use
 * AT_EMPTY_PATH.
 */
struct at {
	int dirfd;
	bool own;
	const char *name;
	char *path; /* owned copy, cut at the last '/' */
	/*
	 * The directory's attributes and inode_gen() as first looked at for
	 * this request (at_dir_stat(), at_dir_gen()): what a request asks
	 * of them more than once is its identity, file system and mode,
	 * which a change of its names leaves as they were.
	 */
	bool dir_st_ok, dir_gen_ok;
	struct stat dir_st;
	uint64_t dir_gen;
};

static void at_clear(struct at *a)
{
	if (a->own && a->dirfd >= 0)
		close(a->dirfd);
	a->dirfd = -1;
	g_clear_pointer(&a->path, g_free);
}

static int at_resolve(struct session *sess, const char *path, struct at *a)
{
	char *slash;
	int fd;

	*a = (struct at){.dirfd = sess->root_fd, .own = false, .name = ""};
	a->path = g_strdup(path);
	slash = strrchr(a->path, '/');
	if (!slash) {
		a->name = a->path;
		return 0;
	}
	*slash = '\0';
	a->name = slash + 1;
	fd = openat2_beneath(sess->root_fd, a->path, O_PATH | O_DIRECTORY, 0);
	if (fd < 0) {
		g_clear_pointer(&a->path, g_free);
		return fd;
	}
	a->dirfd = fd;
	a->own = true;
	return 0;
}

static uint64_t inode_gen(int fd, const char *name);

/* The directory's attributes as first looked at (see struct at); NULL on error. */
static const struct stat *at_dir_stat(struct at *a)
{
	if (!a->dir_st_ok && fstat(a->dirfd, &a->dir_st) == 0)
		a->dir_st_ok = true;
	return a->dir_st_ok ? &a->dir_st : NULL;
}

static uint64_t at_dir_gen(struct at *a)
{
	if (!a->dir_gen_ok) {
		a->dir_gen = inode_gen(a->dirfd, "");
		a->dir_gen_ok = true;
	}
	return a->dir_gen;
}

static int at_stat(const struct at *a, struct stat *st)
{
	return fstatat(a->dirfd, a->name, st, AT_SYMLINK_NOFOLLOW | (*a->name ? 0 : AT_EMPTY_PATH)) < 0
		       ? -errno
		       : 0;
}

/* ---- handles ------------------------------------------------------------- */

/* Free @h, whose last reference is gone, but not its descriptor. */
static void handle_free(struct handle *h)
{
	g_atomic_int_add(&h->srv->n_handles, -1);
	g_mutex_clear(&h->lock);
	g_free(h->rd_left);
	g_free(h);
}

static void handle_unref(struct handle *h)
{
	if (!h || !g_atomic_int_dec_and_test(&h->refs))
		return;
	close(h->fd);
	handle_free(h);
}

/*
 * A new handle for @fd, its id in *@id.  *@out holds a reference of the
 * caller's: a peer may RELEASE the id (they are sequential) before the
 * reply that tells it, and the descriptor must outlive the caller's use.
 */
static int handle_add(struct session *sess, int fd, bool dir, bool stream, bool quick_close,
		      bool splice, uint64_t *id, struct handle **out)
{
	struct handle *h;
	uint64_t *key;

	g_mutex_lock(&sess->lock);
	if (g_hash_table_size(sess->handles) >= sess->srv->max_handles) {
		g_mutex_unlock(&sess->lock);
		return -EMFILE;
	}
	h = g_new0(struct handle, 1);
	h->srv = sess->srv;
	g_atomic_int_inc(&h->srv->n_handles);
	h->fd = fd;
	h->dir = dir;
	h->stream = stream;
	h->quick_close = quick_close && !stream;
	h->splice = splice;
	h->refs = 2;
	g_mutex_init(&h->lock);
	key = g_new(uint64_t, 1);
	*key = ++sess->next_handle;
	g_hash_table_insert(sess->handles, key, h);
	*id = *key;
	*out = h;
	g_mutex_unlock(&sess->lock);
	return 0;
}

static struct handle *handle_get(struct session *sess, uint64_t id)
{
	struct handle *h;

	g_mutex_lock(&sess->lock);
	h = g_hash_table_lookup(sess->handles, &id);
	if (h)
		g_atomic_int_inc(&h->refs);
	g_mutex_unlock(&sess->lock);
	return h;
}

typedef struct handle handle; /* for g_autoptr() */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(handle, handle_unref)

/* ---- lock owners ----------------------------------------------------- */

static guint lock_owner_hash(gconstpointer p)
{
	const struct lock_owner *o = p;
	uint64_t h = o->dev * 0x9E3779B97F4A7C15ull ^ o->ino * 0xC2B2AE3D27D4EB4Full ^ o->owner;

	return (guint)(h ^ h >> 32);
}

static gboolean lock_owner_equal(gconstpointer a, gconstpointer b)
{
	const struct lock_owner *x = a, *y = b;

	return x->dev == y->dev && x->ino == y->ino && x->owner == y->owner;
}

static void lock_owner_free(gpointer p)
{
	struct lock_owner *o = p;

	close(o->fd);
	g_atomic_int_add(&o->srv->n_owners, -1);
	g_free(o);
}

/* ---- sessions ----------------------------------------------------------- */

static struct session *session_ref(struct session *sess)
{
	g_atomic_int_inc(&sess->refs);
	return sess;
}

static void sub_put(struct qtfs_srv *srv, struct watch_sub *sub);

static void session_free(struct session *sess)
{
	if (sess->sub)
		sub_put(sess->srv, sess->sub);
	g_hash_table_destroy(sess->handles);
	g_hash_table_destroy(sess->lock_owners);
	g_hash_table_destroy(sess->blocked);
	if (sess->root_fd >= 0)
		close(sess->root_fd);
	g_free(sess->root_path);
	g_mutex_clear(&sess->lock);
	g_mutex_clear(&sess->owners_lock);
	qt_conn_unref(sess->conn);
	g_atomic_int_add(&sess->srv->live, -1);
	g_free(sess);
}

/*
 * The last reference.  Freeing the session closes the files it still has
 * open and its lock owners' descriptors: closes that may write back, ask a
 * network file system or a FUSE daemon, or free a large unlinked file.  On
 * the loop thread (a connection that ended with no request running) that
 * would hold every other connection meanwhile: the pool does it then, as a
 * job without a request (run_job).
 */
static void session_unref(struct session *sess)
{
	if (!g_atomic_int_dec_and_test(&sess->refs))
		return;
	if (qt_loop_in_thread(sess->srv->loop) &&
	    (g_hash_table_size(sess->handles) || g_hash_table_size(sess->lock_owners))) {
		struct job *j = g_new0(struct job, 1);

		j->sess = sess;
		g_thread_pool_push(sess->srv->pool, j, NULL);
		return;
	}
	session_free(sess);
}

/* ---- the operations ------------------------------------------------------ */

/*
 * Each op reads its request with @r and, on success, appends its answer to
 * @rep (a reply already carrying the request's id and type) and returns 0;
 * on failure it returns -errno and the reply is replaced by an error reply.
 */
typedef int (*op_fn)(struct session *sess, struct qt_rd *r, struct qt_msg *rep);

static int rd_path(struct qt_rd *r, char **path)
{
	struct qt_rd peek = *r;
	uint32_t len;
	char *p = NULL;
	int err;

	/*
	 * A whole path longer than the protocol carries, in a request that
	 * holds it: a directory tree deeper than that on the host, which a
	 * local program could still walk relative to a directory.  The
	 * DPU's programs get ENAMETOOLONG, as for a path too long there.
	 */
	if (qt_rd_u32(&peek, &len) == 0 && len > QTFS_PATH_MAX && len <= peek.left) {
		r->err = -ENAMETOOLONG;
		return -ENAMETOOLONG;
	}
	err = qt_rd_strdup(r, QTFS_PATH_MAX, &p);
	if (err < 0)
		return err;
	if (qtfs_path_check(p, strlen(p)) < 0) {
		g_free(p);
		return -EINVAL;
	}
	*path = p;
	return 0;
}

/*
 * The incarnation of the inode @fd/@name (name "" for @fd itself) stands
 * for: a hash (64-bit FNV-1a) of its file handle.  A file handle is what
 * NFS uses to tell a reused inode number from the file it once was; it
 * holds the inode's generation where the file system has one (ext4, xfs,
 * btrfs, tmpfs).  Hashing the opaque bytes keeps us out of each file
 * system's handle layout.  0 when the file system makes no handles.
 */
static uint64_t inode_gen(int fd, const char *name)
{
	union {
		struct file_handle h;
		char buf[sizeof(struct file_handle) + MAX_HANDLE_SZ];
	} u;
	uint64_t hash = 0xcbf29ce484222325ull;
	const uint8_t *p = (const uint8_t *)u.h.f_handle;
	int mount_id;

	u.h.handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(fd, name, &u.h, &mount_id, *name ? 0 : AT_EMPTY_PATH) < 0)
		return 0;
	for (unsigned i = 0; i < u.h.handle_bytes; i++)
		hash = (hash ^ p[i]) * 0x100000001b3ull;
	hash = (hash ^ (uint32_t)u.h.handle_type) * 0x100000001b3ull;
	return hash ? hash : 1;
}

/*
 * Was @st's last change long enough ago that any later one gets another
 * ctime (QTFS_AF_SETTLED)?  A change is stamped with the coarse clock (a
 * tick of 1-10 ms) cut to the file system's granularity: a later change,
 * whose stamp is at least the coarse clock now less that granularity,
 * stamps another ctime once the last one is older than the granularity.
 * A ctime with nanoseconds comes from a file system that keeps them (1 ns,
 * or 100 ns, 1 us, 10 ms for the coarsest, FAT's): QTFS_SETTLED_FINE_MS
 * by the coarse clock is enough.  One without may come from one that
 * keeps seconds, or two: QTFS_SETTLED_S.
 *
 * A directory on a file system whose ctime moves at every change after a
 * stat (@fine_ctime, see fs_fine_ctime()) is settled at once: @st was
 * read by a stat, so any change after it gets another ctime, and one
 * that had stamped its ctime before holds the directory's lock until its
 * names are in place, which a listing read after @st waits for.  Not a
 * regular file: a write stamps its times before its data is in.
 */
static bool settled(const struct stat *st, bool fine_ctime)
{
	struct timespec now;
	int64_t ns;

	if (clock_gettime(CLOCK_REALTIME_COARSE, &now) < 0)
		return false;
	if (now.tv_sec - st->st_ctim.tv_sec > QTFS_SETTLED_S)
		return true;
	if (st->st_ctim.tv_nsec == 0)
		return false;
	if (fine_ctime && S_ISDIR(st->st_mode))
		return true;
	ns = (int64_t)(now.tv_sec - st->st_ctim.tv_sec) * 1000000000 + (now.tv_nsec - st->st_ctim.tv_nsec);
	return ns > (int64_t)QTFS_SETTLED_FINE_MS * 1000000;
}

/*
 * Put the attribute record of @st, the file at @fd/@name (name "" for @fd
 * itself), with @flags (QTFS_AF_WATCHED or 0) among its flags.  @dir, if
 * not NULL, is the request's directory and the file is that directory
 * itself (its inode_gen() is kept there).  Returns the kind of file
 * system it is on.
 */
static enum dev_kind put_attr_gen(struct session *sess, struct qt_msg *rep, const struct stat *st,
				  int fd, const char *name, uint32_t flags, struct at *dir)
{
	int info = dev_info(sess->srv, st->st_dev, fd, name);
	enum dev_kind kind = info_kind(info);
	bool pseudo = kind_pseudo(kind);
	struct qtfs_attr a;

	if ((S_ISREG(st->st_mode) || S_ISDIR(st->st_mode)) && (kind == DEV_PLAIN || kind == DEV_MEMORY) &&
	    settled(st, info & DEV_FINE_CTIME))
		flags |= QTFS_AF_SETTLED;
	/* Pseudo files are never cached by the client: no need to tell them apart. */
	qtfs_attr_from_stat(&a, st, flags | (pseudo ? QTFS_AF_PSEUDO : 0),
			    pseudo ? 0 : dir ? at_dir_gen(dir) : inode_gen(fd, name));
	qtfs_put_attr(rep, &a);
	return kind;
}

static enum dev_kind put_attr_flags(struct session *sess, struct qt_msg *rep, const struct stat *st,
				    int fd, const char *name, uint32_t flags)
{
	return put_attr_gen(sess, rep, st, fd, name, flags, NULL);
}

static enum dev_kind put_attr_of(struct session *sess, struct qt_msg *rep, const struct stat *st,
				 int fd, const char *name)
{
	return put_attr_flags(sess, rep, st, fd, name, 0);
}

static guint sub_dir_hash(gconstpointer p)
{
	const struct sub_dir *d = p;
	uint64_t h = (d->id.dev * 0x9E3779B97F4A7C15ull) ^ d->id.ino;

	return (guint)(h ^ (h >> 32));
}

static gboolean sub_dir_equal(gconstpointer a, gconstpointer b)
{
	const struct sub_dir *x = a, *y = b;

	return x->id.dev == y->id.dev && x->id.ino == y->id.ino;
}

/* What @id is watched for in @sub: DIR_NAMES, DIR_NEW, or 0.  srv->sub_lock held. */
static int sub_dir_what(struct watch_sub *sub, const struct qtfs_dirid *id)
{
	struct sub_dir probe = {.id = *id};
	const struct sub_dir *d = g_hash_table_lookup(sub->dirs, &probe);

	return d && d->id.gen == id->gen ? d->what : 0;
}

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static bool watching(struct session *sess)
{
	return sess->sub && g_atomic_int_get(&sess->sub->started);
}

/*
 * Watch the directory @dirfd, of attributes @st, for this session's
 * client, if the client subscribed (see "Name caching"): for names that
 * go (@what DIR_NAMES), or for new names too (DIR_NEW).  @a, if not NULL,
 * is what @dirfd came from (its inode_gen() may be known).
 * QTFS_AF_WATCHED, or 0.
 */
static uint32_t watch_stat(struct session *sess, int dirfd, const struct stat *st, struct at *a,
			   int what)
{
	struct qtfs_srv *srv = sess->srv;
	struct watch_sub *sub = sess->sub;
	struct sub_dir probe, *d;
	enum dev_kind kind;
	bool mine, watched;

	kind = dev_kind(srv, st->st_dev, dirfd, "");
	if (kind != DEV_PLAIN && kind != DEV_MEMORY)
		return 0;
	probe.id = (struct qtfs_dirid){.dev = st->st_dev,
				       .ino = st->st_ino,
				       .gen = a ? at_dir_gen(a) : inode_gen(dirfd, "")};
	g_mutex_lock(&srv->sub_lock);
	d = g_hash_table_lookup(sub->dirs, &probe);
	mine = d || g_hash_table_size(sub->dirs) < srv->client_watches;
	if (!mine && !sub->full_logged) {
		sub->full_logged = true;
		qt_notice("peer %s: %u directories watched for this client, its limit "
			  "(client_watches); it caches names elsewhere for entry_timeout only",
			  qt_conn_peer(sess->conn), srv->client_watches);
	}
	if (mine && !d) {
		d = g_new0(struct sub_dir, 1);
		d->id = probe.id;
		g_hash_table_add(sub->dirs, d);
	}
	if (mine && d->id.gen != probe.id.gen) {
		/* A new directory with the inode number of a removed one. */
		d->id.gen = probe.id.gen;
		d->what = 0;
	}
	if (mine && d->what < what)
		d->what = what;
	/*
	 * Into the client's set first: an event right after the watch is added
	 * is for it.  The watch is added with sub_lock still held, as
	 * op_unwatch() and sub_put() take the directory out of the set and
	 * remove its watch: else an UNWATCH taken in between could empty the
	 * set and find no watch to remove, and the watch added after it would
	 * be in no client's set until the directory went or was looked in
	 * again.  (dirwatch's lock comes after sub_lock, and its events are
	 * handed on without it.)
	 */
	watched = mine && qtfs_dirwatch_add(srv->dw, dirfd, &probe.id, what == DIR_NEW);
	g_mutex_unlock(&srv->sub_lock);
	return watched ? QTFS_AF_WATCHED : 0;
}

/* watch_stat() of the directory @dirfd. */
static uint32_t watch_fd(struct session *sess, int dirfd, int what)
{
	struct stat st;

	if (!watching(sess) || dirfd < 0 || fstat(dirfd, &st) < 0)
		return 0;
	return watch_stat(sess, dirfd, &st, NULL, what);
}

/*
 * Before a name in the directory @a resolved to is looked at for a reply
 * that names it: watch the directory for this session's client.
 * QTFS_AF_WATCHED, or 0.
 */
static uint32_t watch_dir(struct session *sess, struct at *a)
{
	const struct stat *st;

	if (!watching(sess) || a->dirfd < 0 || !(st = at_dir_stat(a)))
		return 0;
	return watch_stat(sess, a->dirfd, st, a, DIR_NAMES);
}

/*
 * The directory @a names, of attributes @st, was just made for the
 * client, in a directory watched for it: watch it for new names too.
 * True (QTFS_AF_LISTED) if that worked and it was still empty afterwards,
 * so that every name that appears in it from now on is reported.
 */
static bool watch_new_dir(struct session *sess, const struct at *a, const struct stat *st)
{
	char buf[256] __attribute__((aligned(8)));
	struct stat fst;
	bool empty = true;
	long n;
	int fd = openat(a->dirfd, a->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return false;
	if (fstat(fd, &fst) < 0 || fst.st_dev != st->st_dev || fst.st_ino != st->st_ino ||
	    !watching(sess) || !watch_stat(sess, fd, &fst, NULL, DIR_NEW)) {
		close(fd);
		return false;
	}
	while (empty && (n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long pos = 0; pos < n;) {
			const struct linux_dirent64 *d = (const void *)(buf + pos);

			if (strcmp(d->d_name, ".") && strcmp(d->d_name, ".."))
				empty = false;
			pos += d->d_reclen;
		}
	}
	close(fd);
	return empty && n == 0;
}

/*
 * The attribute record of the file @a names; in an entry reply @wflags is
 * watch_dir()'s answer, else 0.
 */
static int put_at_attr(struct session *sess, const struct at *a, uint32_t wflags,
		       struct qt_msg *rep)
{
	struct stat st;
	int err = at_stat(a, &st);

	if (err < 0)
		return err;
	put_attr_flags(sess, rep, &st, a->dirfd, a->name, wflags);
	return 0;
}

/*
 * With QTFS_MNT_DIR_ATTRS, a reply that changed the entries of the
 * directory @dirfd ends with the directory's attributes after the change:
 * u8 1 and an attr, or u8 0 (@dirfd < 0, or it cannot be stat'ed).  The
 * client's kernel drops a directory's cached attributes after every such
 * change, and its next permission check in that directory would otherwise
 * be a GETATTR round trip; NFS's post-operation attributes do the same.
 */
static void put_dir_attr(struct session *sess, struct qt_msg *rep, struct at *a)
{
	struct stat st;

	if (!sess->dir_attrs)
		return;
	if (!a || a->dirfd < 0 || fstat(a->dirfd, &st) < 0) {
		qt_msg_put_u8(rep, 0);
		return;
	}
	qt_msg_put_u8(rep, 1);
	put_attr_gen(sess, rep, &st, a->dirfd, "", 0, a);
}

static int put_fd_attr(struct session *sess, int fd, struct qt_msg *rep)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	put_attr_of(sess, rep, &st, fd, "");
	return 0;
}

static int proc_fd_path(int fd, char buf[64])
{
	return snprintf(buf, 64, "/proc/self/fd/%d", fd) < 64 ? 0 : -ENAMETOOLONG;
}

/*
 * The whitelist judges real host paths: symlinks in the middle of a wire
 * path are resolved by the kernel (beneath the root), so the path of what
 * was actually reached is read back from /proc/self/fd, never taken from
 * the request's text.  @fd is the file itself (@name NULL) or its directory
 * (@name the last component).  Logs one line per denial.
 */
/* The host path of @name in the directory @fd (@fd itself for ""), or NULL. */
static char *host_path(int fd, const char *name)
{
	g_autofree char *dir = NULL;
	char link[64];

	if (proc_fd_path(fd, link) < 0 || !(dir = g_file_read_link(link, NULL)))
		return NULL;
	if (!name || !*name)
		return g_steal_pointer(&dir);
	return strcmp(dir, "/") ? g_strconcat(dir, "/", name, NULL) : g_strconcat("/", name, NULL);
}

/*
 * A host path made fit for a denial's log line: its names are the
 * client's, so control characters (a newline would start a line of the
 * client's making), quotes and backslashes are escaped C-style; other
 * bytes, UTF-8 included, are kept as they are.
 */
static char *wl_log_path(const char *path)
{
	char keep[129];

	for (size_t i = 0; i < 128; i++)
		keep[i] = (char)(0x80 + i);
	keep[128] = '\0';
	return g_strescape(path, keep);
}

/*
 * Log the denial of @op at the host path @hp (NULL: a path the host cannot
 * name), the line ending in @why if that is not NULL, and return -EACCES.
 */
static int wl_denied(struct session *sess, enum qtfs_wl_op op, const char *hp, const char *why)
{
	g_autofree char *quoted = NULL;

	if (!hp) {
		/* The kernel names no path of PATH_MAX bytes or more (a deep tree's). */
		qt_warn("peer %s: %s of a path the host cannot name (longer than %d bytes?) denied "
			"by the whitelist%s",
			qt_conn_peer(sess->conn), qtfs_wl_op_name(op), PATH_MAX, why ? why : "");
		return -EACCES;
	}
	quoted = wl_log_path(hp);
	qt_warn("peer %s: %s \"%s\" denied by the whitelist%s", qt_conn_peer(sess->conn),
		qtfs_wl_op_name(op), quoted, why ? why : "");
	return -EACCES;
}

static int wl_check_fd(struct session *sess, enum qtfs_wl_op op, int fd, const char *name)
{
	g_autofree char *hp = NULL;

	if (!sess->srv->wl || !qtfs_wl_restricts(sess->srv->wl, op))
		return 0;
	if ((hp = host_path(fd, name)) && qtfs_wl_check(sess->srv->wl, op, hp))
		return 0;
	return wl_denied(sess, op, hp, NULL);
}

static int wl_check_at(struct session *sess, enum qtfs_wl_op op, const struct at *a)
{
	return wl_check_fd(sess, op, a->dirfd, a->name);
}

/* Resolve @path and check it for @op: 0 with @a, or -errno with @a cleared. */
static int at_resolve_wl(struct session *sess, const char *path, enum qtfs_wl_op op, struct at *a)
{
	int err = at_resolve(sess, path, a);

	if (err == 0 && (err = wl_check_at(sess, op, a)) < 0)
		at_clear(a);
	return err;
}

/*
 * RENAME and LINK: resolve @from and @to, both before any whitelist check
 * (so a missing directory is ENOENT whatever the whitelist says).  0 with
 * both, or -errno with neither.
 */
static int at_resolve_pair(struct session *sess, const char *from, const char *to, struct at *a,
			   struct at *b)
{
	int err = at_resolve(sess, from, a);

	if (err == 0 && (err = at_resolve(sess, to, b)) < 0)
		at_clear(a);
	return err;
}

/*
 * A hard link @b to @a gives the file every access the whitelist grants at
 * @b: refused if that is more than it grants at @a, for opening, reading,
 * writing or changing attributes (else a file could be linked from where
 * it may not be written to where it may).
 */
static int wl_check_link_access(struct session *sess, const struct at *a, const struct at *b)
{
	static const enum qtfs_wl_op ops[] = {QTFS_WL_OPEN, QTFS_WL_READ, QTFS_WL_WRITE,
					      QTFS_WL_SETATTR, QTFS_WL_SETXATTR};
	const struct qtfs_wl *wl = sess->srv->wl;
	g_autofree char *from = NULL, *to = NULL;

	if (!wl)
		return 0;
	for (size_t i = 0; i < G_N_ELEMENTS(ops); i++) {
		if (!qtfs_wl_restricts(wl, ops[i]))
			continue;
		if ((!from && !(from = host_path(a->dirfd, a->name))) ||
		    (!to && !(to = host_path(b->dirfd, b->name))))
			return -EACCES;
		if (qtfs_wl_check(wl, ops[i], to) && !qtfs_wl_check(wl, ops[i], from)) {
			g_autofree char *qto = wl_log_path(to), *qfrom = wl_log_path(from);

			qt_warn("peer %s: Link \"%s\" to \"%s\" denied by the whitelist: it would "
				"allow %s there", qt_conn_peer(sess->conn), qto, qfrom,
				qtfs_wl_op_name(ops[i]));
			return -EACCES;
		}
	}
	return 0;
}

/*
 * RENAME checks the source, then the destination; LINK the new name, then
 * the old one (op_link()), then what the new name would allow.
 */
static int wl_check_pair(struct session *sess, bool link, const struct at *a, const struct at *b)
{
	int err;

	if (link) {
		if ((err = wl_check_at(sess, QTFS_WL_CREATE, b)) < 0 ||
		    (err = wl_check_at(sess, QTFS_WL_CREATE, a)) < 0)
			return err;
		return wl_check_link_access(sess, a, b);
	}
	return (err = wl_check_at(sess, QTFS_WL_RENAME, a)) < 0 ? err
								 : wl_check_at(sess, QTFS_WL_RENAME, b);
}

/*
 * What a rename removes or makes besides moving a name.  Without
 * RENAME_NOREPLACE or RENAME_EXCHANGE it replaces an existing target: a
 * non-directory as an unlink would remove it, an empty directory as an
 * rmdir would.  So on top of [Rename] at both names (wl_check_pair()) it
 * needs what removing the target needs there, [Unlink] or [Rmdir], or a
 * file that may not be unlinked could be replaced by any other (openEuler
 * qtfs has that hole).  RENAME_EXCHANGE removes nothing: both names are
 * renamed, and [Rename] was judged at both.  RENAME_WHITEOUT makes a device
 * node at the old name: [Create] there.
 *
 * The target may appear, vanish or change between this look and the
 * rename, which names it by the same directory descriptor and name:
 *   - where both kinds may be removed there (or nothing is restricted),
 *     there is nothing to look at;
 *   - a target that is there is judged by its kind: refused with EACCES
 *     and a log line, or allowed (a name of the source's file, which the
 *     rename leaves as it is, too);
 *   - where there is none, the rename is made with RENAME_NOREPLACE
 *     added (*@added), so one that appears meanwhile is not replaced: the
 *     kernel says EEXIST, and rename_again() judges the new target and
 *     makes the rename again, a few times at most.  A file system without
 *     RENAME_NOREPLACE (NFS, CIFS: EINVAL) gets the rename without it,
 *     judged by the look only.
 * What the check cannot see is a target of an allowed kind swapped
 * meanwhile for one of a denied kind (a file for an empty directory, with
 * a directory renamed over it): the race every path-based whitelist has.
 * 0 with *@added the flags to add to the client's @flags, or -EACCES.
 */
static int wl_check_rename(struct session *sess, const struct at *a, const struct at *b,
			   uint32_t flags, uint32_t *added)
{
	const struct qtfs_wl *wl = sess->srv->wl;
	g_autofree char *hp = NULL;
	bool unlink_ok, rmdir_ok;
	struct stat st, src;
	enum qtfs_wl_op op;
	int err;

	if ((flags & RENAME_WHITEOUT) && !(flags & RENAME_EXCHANGE) &&
	    (err = wl_check_at(sess, QTFS_WL_CREATE, a)) < 0)
		return err;
	if (!wl || (flags & (RENAME_NOREPLACE | RENAME_EXCHANGE)) ||
	    (!qtfs_wl_restricts(wl, QTFS_WL_UNLINK) && !qtfs_wl_restricts(wl, QTFS_WL_RMDIR))) {
		*added = 0;
		return 0;
	}
	hp = host_path(b->dirfd, b->name);
	unlink_ok = !qtfs_wl_restricts(wl, QTFS_WL_UNLINK) ||
		    (hp && qtfs_wl_check(wl, QTFS_WL_UNLINK, hp));
	rmdir_ok = !qtfs_wl_restricts(wl, QTFS_WL_RMDIR) ||
		   (hp && qtfs_wl_check(wl, QTFS_WL_RMDIR, hp));
	if (unlink_ok && rmdir_ok) {
		*added = 0;
		return 0;
	}
	if (at_stat(b, &st) < 0) {
		*added = RENAME_NOREPLACE;
		return 0;
	}
	op = S_ISDIR(st.st_mode) ? QTFS_WL_RMDIR : QTFS_WL_UNLINK;
	if ((op == QTFS_WL_RMDIR ? rmdir_ok : unlink_ok) ||
	    (at_stat(a, &src) == 0 && src.st_dev == st.st_dev && src.st_ino == st.st_ino)) {
		*added = 0;
		return 0;
	}
	return wl_denied(sess, op, hp, ": a rename would replace it");
}

/* How often a rename is made again for a target that appeared (rename_again()). */
#define RENAME_TRIES 3

/*
 * A rename of @a to @b (the client's @flags, wl_check_rename()'s *@added)
 * answered *@res: true to make it again with the new *@added, or false
 * with *@res the answer.  *@tries counts the targets that appeared.
 */
static bool rename_again(struct session *sess, const struct at *a, const struct at *b,
			 uint32_t flags, uint32_t *added, unsigned *tries, int *res)
{
	g_autofree char *hp = NULL;
	int was = *res;

	if (!(*added & RENAME_NOREPLACE) || (was != -EEXIST && was != -EINVAL))
		return false;
	if (was == -EEXIST && ++*tries > RENAME_TRIES) {
		hp = host_path(b->dirfd, b->name);
		*res = wl_denied(sess, QTFS_WL_RENAME, hp, ": a target keeps appearing there");
		return false;
	}
	if ((*res = wl_check_rename(sess, a, b, flags, added)) < 0)
		return false;
	/* EINVAL: a file system without RENAME_NOREPLACE, or a rename it refuses anyway. */
	if (was == -EINVAL)
		*added = 0;
	return true;
}

/* Device nodes are never opened on the host (FUSE opens them on the client). */
static bool is_device(mode_t mode)
{
	return S_ISCHR(mode) || S_ISBLK(mode);
}

/*
 * The blocking pool: requests that may wait for as long as another process
 * pleases (a FIFO open or read, a POLL wait) are moved there, so they never
 * hold the workers ordinary requests need.  An op returns DEFER to be run
 * again on that pool; tl_blocking_ok says where we are.
 */
static __thread bool tl_blocking_ok;

/*
 * Interrupts.  A request on the blocking pool (a FIFO open, read or write,
 * a POLL wait) may wait for as long as another process pleases; when the
 * DPU process behind it gets a signal, the kernel tells the client, which
 * sends QTFS_INTERRUPT with the request's id.  The worker running it is
 * registered in sess->blocked; the interrupt marks it and sends it
 * INTR_SIGNAL, whose handler does nothing and is installed without
 * SA_RESTART, so the blocking system call returns EINTR and the operation
 * answers EINTR instead of trying again (tl_interrupted()).  A signal that
 * lands just before the worker enters the system call would be lost, so
 * the loop sends it again every INTR_REPEAT_MS until the request is done.
 */
#define INTR_SIGNAL (SIGRTMIN + 1)
#define INTR_REPEAT_MS 20

struct blocked {
	pthread_t thread;
	gint interrupted; /* atomic */
	uint64_t poll_hid; /* a POLL wait on this handle (see op_poll()), or 0; sess->lock */
};

static __thread struct blocked *tl_blocked;

/* Whether the request this worker runs was interrupted: EINTR means stop. */
static bool tl_interrupted(void)
{
	return tl_blocked && g_atomic_int_get(&tl_blocked->interrupted);
}

/* EINTR that is not ours (a stray signal) means try again. */
static bool retry_eintr(ssize_t n)
{
	return n < 0 && errno == EINTR && !tl_interrupted();
}

static void intr_handler(int sig)
{
	(void)sig;
}

static void intr_sigset(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, INTR_SIGNAL);
}

/*
 * Once per process, from the thread that will run the loop (every thread
 * it starts inherits the mask): INTR_SIGNAL blocked except in a worker
 * running a request that may be interrupted.
 */
static void intr_setup(void)
{
	static gsize done;
	struct sigaction sa = {.sa_handler = intr_handler}; /* no SA_RESTART */
	sigset_t set;

	intr_sigset(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (g_once_init_enter(&done)) {
		sigemptyset(&sa.sa_mask);
		sigaction(INTR_SIGNAL, &sa, NULL);
		g_once_init_leave(&done, 1);
	}
}

/* A blocking-pool worker takes request @id: interrupts may reach it from now on. */
static void blocked_enter(struct session *sess, uint64_t id, struct blocked *b)
{
	uint64_t *key = g_new(uint64_t, 1);
	sigset_t set;

	*key = id;
	b->thread = pthread_self();
	b->interrupted = 0;
	b->poll_hid = 0;
	g_mutex_lock(&sess->lock);
	g_hash_table_insert(sess->blocked, key, b);
	g_mutex_unlock(&sess->lock);
	tl_blocked = b;
	intr_sigset(&set);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

/* ... and is done with it: no signal is sent after this, and one still pending is dropped. */
static void blocked_leave(struct session *sess, uint64_t id)
{
	const struct timespec zero = {0, 0};
	sigset_t set;

	intr_sigset(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	g_mutex_lock(&sess->lock);
	g_hash_table_remove(sess->blocked, &id);
	g_mutex_unlock(&sess->lock);
	while (sigtimedwait(&set, NULL, &zero) == INTR_SIGNAL)
		;
	tl_blocked = NULL;
}

/* Signal the worker of request @id if it is still on it; whether it was. */
static bool intr_kick(struct session *sess, uint64_t id, bool mark)
{
	struct blocked *b;

	g_mutex_lock(&sess->lock);
	b = g_hash_table_lookup(sess->blocked, &id);
	if (b && mark)
		g_atomic_int_set(&b->interrupted, 1);
	if (b && g_atomic_int_get(&b->interrupted))
		pthread_kill(b->thread, INTR_SIGNAL);
	g_mutex_unlock(&sess->lock);
	return b != NULL;
}

struct intr_timer {
	struct session *sess;
	uint64_t id;
};

static void intr_again(void *arg)
{
	struct intr_timer *t = arg;

	if (intr_kick(t->sess, t->id, false)) {
		qt_timer_add(t->sess->srv->loop, INTR_REPEAT_MS, intr_again, t);
		return;
	}
	session_unref(t->sess);
	g_free(t);
}

static void interrupt_request(struct session *sess, uint64_t id);

/*
 * The connection of @sess is gone (loop thread): the jobs queued for it
 * are dropped when their turn comes, and the ones blocked (a FIFO open or
 * read that no peer may ever end) are interrupted, as an INTERRUPT from
 * the client would.  So a peer that disconnects leaves no thread of the
 * blocking pool behind, nor its session's descriptors.
 */
static void session_abandon(struct session *sess)
{
	g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	GHashTableIter it;
	gpointer key;

	g_atomic_int_set(&sess->closed, 1);
	g_mutex_lock(&sess->lock);
	g_hash_table_iter_init(&it, sess->blocked);
	while (g_hash_table_iter_next(&it, &key, NULL))
		g_array_append_val(ids, *(uint64_t *)key);
	g_mutex_unlock(&sess->lock);
	for (guint i = 0; i < ids->len; i++)
		interrupt_request(sess, g_array_index(ids, uint64_t, i));
}

/* QTFS_INTERRUPT for request @id (loop thread).  Unknown ids: done already, or never blocking. */
static void interrupt_request(struct session *sess, uint64_t id)
{
	struct intr_timer *t;

	if (!intr_kick(sess, id, true))
		return;
	t = g_new(struct intr_timer, 1);
	t->sess = session_ref(sess);
	t->id = id;
	qt_timer_add(sess->srv->loop, INTR_REPEAT_MS, intr_again, t);
}

static int op_statfs(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	g_autofree char *path = NULL;
	struct statvfs sv;
	int fd, err;

	if ((err = rd_path(r, &path)) < 0 || (err = qt_rd_end(r)) < 0)
		return err;
	fd = openat2_beneath(sess->root_fd, path, O_PATH, 0);
	if (fd < 0)
		return fd;
	err = fstatvfs(fd, &sv) < 0 ? -errno : 0;
	close(fd);
	if (err < 0)
		return err;
	qt_msg_put_u64(rep, sv.f_bsize);
	qt_msg_put_u64(rep, sv.f_frsize);
	qt_msg_put_u64(rep, sv.f_blocks);
	qt_msg_put_u64(rep, sv.f_bfree);
	qt_msg_put_u64(rep, sv.f_bavail);
	qt_msg_put_u64(rep, sv.f_files);
	qt_msg_put_u64(rep, sv.f_ffree);
	qt_msg_put_u64(rep, sv.f_favail);
	qt_msg_put_u64(rep, sv.f_fsid);
	qt_msg_put_u64(rep, sv.f_flag);
	qt_msg_put_u64(rep, sv.f_namemax);
	return 0;
}

static int op_lookup(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	g_autofree char *path = NULL;
	struct at a;
	int err;

	if ((err = rd_path(r, &path)) < 0 || (err = qt_rd_end(r)) < 0)
		return err;
	if ((err = at_resolve(sess, path, &a)) < 0)
		return err;
	err = put_at_attr(sess, &a, *a.name ? watch_dir(sess, &a) : 0, rep);
	at_clear(&a);
	return err;
}

static int op_getattr(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	g_autofree char *path = NULL;
	uint64_t hid;
	struct at a;
	int err;

	if ((err = rd_path(r, &path)) < 0 || (err = qt_rd_u64(r, &hid)) < 0 ||
	    (err = qt_rd_end(r)) < 0)
		return err;
	if (hid) {
		g_autoptr(handle) h = handle_get(sess, hid);

		return h ? put_fd_attr(sess, h->fd, rep) : -EBADF;
	}
	if ((err = at_resolve(sess, path, &a)) < 0)
		return err;
	err = put_at_attr(sess, &a, 0, rep);
	at_clear(&a);
	return err;
}

static int op_setattr(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	g_autofree char *path = NULL;
	uint64_t hid;
	uint32_t valid, mode, uid, gid, ans, mns;
	int64_t size, as, ms;
	g_autoptr(handle) h = NULL;
	int fd = -1, err = 0, wfl;
	struct stat tst;
	char pfd[64];

	if ((err = rd_path(r, &path)) < 0)
		return err;
	qt_rd_u64(r, &hid);
	qt_rd_u32(r, &valid);
	qt_rd_u32(r, &mode);
	qt_rd_u32(r, &uid);
	qt_rd_u32(r, &gid);
	qt_rd_i64(r, &size);
	qt_rd_i64(r, &as);
	qt_rd_u32(r, &ans);
	qt_rd_i64(r, &ms);
	qt_rd_u32(r, &mns);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	if (valid & ~QTFS_SA_KNOWN)
		return -EINVAL;
	if (hid) {
		h = handle_get(sess, hid);
		if (!h)
			return -EBADF;
		fd = h->fd;
	} else {
		fd = openat2_beneath(sess->root_fd, path, O_PATH | O_NOFOLLOW, 0);
		if (fd < 0)
			return fd;
	}
	if ((err = proc_fd_path(fd, pfd)) < 0 || (err = wl_check_fd(sess, QTFS_WL_SETATTR, fd, NULL)) < 0)
		goto out;
	/*
	 * A truncation not through a handle open to write (whose open [Write]
	 * judged) opens the file to write below: [Write] judges it as it does
	 * an O_TRUNC open, before anything changes.
	 */
	wfl = (valid & QTFS_SA_SIZE) && h && !h->dir ? fcntl(fd, F_GETFL) : -1;
	if ((valid & QTFS_SA_SIZE) && (wfl < 0 || (wfl & O_ACCMODE) == O_RDONLY) &&
	    (err = wl_check_fd(sess, QTFS_WL_WRITE, fd, NULL)) < 0)
		goto out;
	if (fstat(fd, &tst) < 0) {
		err = -errno;
		goto out;
	}
	/* Through /proc/self/fd a symlink could lead elsewhere: only owner and times apply to links. */
	if (S_ISLNK(tst.st_mode) && (valid & (QTFS_SA_MODE | QTFS_SA_SIZE))) {
		err = (valid & QTFS_SA_MODE) ? -EOPNOTSUPP : -ELOOP;
		goto out;
	}

	/* Order as a local chown + chmod + truncate + utimes would apply them. */
	if (valid & (QTFS_SA_UID | QTFS_SA_GID)) {
		uid_t u = (valid & QTFS_SA_UID) ? uid : (uid_t)-1;
		gid_t g = (valid & QTFS_SA_GID) ? gid : (gid_t)-1;

		if (fchownat(fd, "", u, g, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
			err = -errno;
			goto out;
		}
	}
	if (valid & QTFS_SA_MODE) {
		/* fchmod refuses O_PATH descriptors; the /proc link reaches the inode. */
		if ((h ? fchmod(fd, mode & 07777) : chmod(pfd, mode & 07777)) < 0) {
			err = -errno;
			goto out;
		}
	}
	if (valid & QTFS_SA_SIZE) {
		/* A handle open for reading only (the client's choice for any SETATTR of an open file) cannot. */
		if (wfl >= 0 && (wfl & O_ACCMODE) != O_RDONLY) {
			err = ftruncate(fd, size) < 0 ? -errno : 0;
		} else {
			int wfd;

			if (is_device(tst.st_mode)) {
				err = -EACCES;
				goto out;
			}
			wfd = open(pfd, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
			if (wfd < 0) {
				err = -errno;
				goto out;
			}
			err = ftruncate(wfd, size) < 0 ? -errno : 0;
			close(wfd);
		}
		if (err < 0)
			goto out;
	}
	if (valid & (QTFS_SA_ATIME | QTFS_SA_MTIME)) {
		struct timespec ts[2] = {
			{.tv_nsec = UTIME_OMIT},
			{.tv_nsec = UTIME_OMIT},
		};

		if (valid & QTFS_SA_ATIME_NOW)
			ts[0].tv_nsec = UTIME_NOW;
		else if (valid & QTFS_SA_ATIME)
			ts[0] = (struct timespec){.tv_sec = as, .tv_nsec = ans};
		if (valid & QTFS_SA_MTIME_NOW)
			ts[1].tv_nsec = UTIME_NOW;
		else if (valid & QTFS_SA_MTIME)
			ts[1] = (struct timespec){.tv_sec = ms, .tv_nsec = mns};
		for (int i = 0; i < 2; i++) {
			if (ts[i].tv_nsec != UTIME_NOW && ts[i].tv_nsec != UTIME_OMIT &&
			    ts[i].tv_nsec >= 1000000000) {
				err = -EINVAL;
				goto out;
			}
		}
		if (utimensat(fd, "", ts, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
			err = -errno;
			goto out;
		}
	}
	err = put_fd_attr(sess, fd, rep);
out:
	if (!h && fd >= 0)
		close(fd);
	return err;
}

static int op_readlink(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	g_autofree char *path = NULL;
	char buf[QTFS_SYMLINK_MAX + 1];
	struct at a;
	ssize_t n;
	int err;

	if ((err = rd_path(r, &path)) < 0 || (err = qt_rd_end(r)) < 0)
		return err;
	if ((err = at_resolve(sess, path, &a)) < 0)
		return err;
	n = readlinkat(a.dirfd, a.name, buf, sizeof(buf));
	err = n < 0 ? -errno : n > QTFS_SYMLINK_MAX ? -ENAMETOOLONG : 0;
	at_clear(&a);
	if (err < 0)
		return err;
	qt_msg_put_bytes(rep, buf, (size_t)n);
	return 0;
}

/*
 * The caller of a request that makes a name (docs/protocol.md, "caller"):
 * the owner the new file gets and, on a session with QTFS_MNT_UMASK, the
 * umask its mode has not been through yet.
 */
struct caller {
	uint32_t uid, gid, umask;
};

static void rd_caller(struct session *sess, struct qt_rd *r, struct caller *c)
{
	qt_rd_u32(r, &c->uid);
	qt_rd_u32(r, &c->gid);
	c->umask = 0;
	if (sess->umask)
		qt_rd_u32(r, &c->umask);
}

/*
 * The mode to make a name in @a's directory with: the caller's umask taken
 * off, unless the directory has a default ACL, which takes its place (the
 * host's kernel then derives the mode from both, as for a local create;
 * the server's own umask is 0).  The client's kernel cannot tell, as it
 * does not know the host's default ACLs: it leaves the umask to us.
 */
static uint32_t caller_mode(const struct at *a, uint32_t mode, const struct caller *c)
{
	uint32_t um = c->umask & 0777;
	char proc[64];

	if (!(mode & um))
		return mode;
	/* An O_PATH descriptor takes no fgetxattr(); its /proc link is the directory itself. */
	if (proc_fd_path(a->dirfd, proc) == 0 && getxattr(proc, "system.posix_acl_default", NULL, 0) > 0)
		return mode;
	return mode & ~um;
}

/*
 * Give a new file the caller's ownership, as a local create by the caller
 * would have: uid of the caller, gid of the caller or, under a set-group-ID
 * directory, of the directory.  @fd is the file if it is open (a CREATE),
 * else -1.  Everything goes through a descriptor of the file, never its
 * name again: the client may rename something else, a symlink out of the
 * export for one, over the name meanwhile.  1 when it had them already:
 * *@st is then the file's attributes; 0 when they were changed (stat it
 * again), or -errno.
 */
static int own_new(struct at *a, int fd, uint32_t uid, uint32_t gid, struct stat *st)
{
	int pfd = fd >= 0 ? fd : openat(a->dirfd, a->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	const struct stat *dst = at_dir_stat(a);
	char proc[64];
	int err = 0;

	if (pfd < 0)
		return -errno;
	if (!dst || fstat(pfd, st) < 0) {
		err = -errno;
		goto out;
	}
	/* (The directory as it was before the name was made: the same mode and group.) */
	if (dst->st_mode & S_ISGID)
		gid = dst->st_gid;
	if (st->st_uid == uid && st->st_gid == gid) {
		err = 1;
		goto out;
	}
	if (fchownat(pfd, "", uid, gid, AT_EMPTY_PATH) < 0) {
		err = -errno;
		goto out;
	}
	/* chown cleared set-id bits of a non-directory: put back what was asked. */
	if (!S_ISDIR(st->st_mode) && !S_ISLNK(st->st_mode) && (st->st_mode & 06000)) {
		/* An O_PATH descriptor takes no fchmod(); its /proc link is the inode itself. */
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
		if ((fd >= 0 ? fchmod(fd, st->st_mode & 07777) : chmod(proc, st->st_mode & 07777)) < 0)
			qt_debug("restoring the set-id bits of a new file: %s", g_strerror(errno));
	}
out:
	if (pfd != fd)
		close(pfd);
	return err;
}

/*
 * A name we just made: the caller's ownership, then the reply is its
 * attributes (@wflags: watch_dir() before the name was made).
 */
static int answer_made(struct session *sess, struct at *a, uint32_t uid, uint32_t gid,
		       uint32_t wflags, struct qt_msg *rep)
{
	struct stat st;
	int err = own_new(a, -1, uid, gid, &st);

	if (err < 0 || (err == 0 && (err = at_stat(a, &st)) < 0))
		return err;
	if (S_ISDIR(st.st_mode) && (wflags & QTFS_AF_WATCHED) && watch_new_dir(sess, a, &st))
		wflags |= QTFS_AF_LISTED;
	put_attr_flags(sess, rep, &st, a->dirfd, a->name, wflags);
	return 0;
}

enum make_kind { MAKE_NODE, MAKE_DIR, MAKE_SYMLINK };

/*
 * MKNOD, MKDIR and SYMLINK: make @path, give it the caller's ownership and
 * answer with its attributes.  A symlink's @target is only text: it is
 * resolved on the client, never here.
 */
static int make_at(struct session *sess, enum make_kind kind, const char *path, uint32_t mode,
		   uint64_t rdev, const char *target, const struct caller *c, struct qt_msg *rep)
{
	uint32_t wflags;
	struct at a;
	int err, r;

	if (!*path)
		return -EEXIST;
	if ((err = at_resolve_wl(sess, path, kind == MAKE_DIR ? QTFS_WL_MKDIR : QTFS_WL_CREATE,
				 &a)) < 0)
		return err;
	wflags = watch_dir(sess, &a);
	if (kind == MAKE_DIR)
		r = mkdirat(a.dirfd, a.name, caller_mode(&a, mode & 07777, c));
	else if (kind == MAKE_SYMLINK)
		r = symlinkat(target, a.dirfd, a.name);
	else
		r = mknodat(a.dirfd, a.name, caller_mode(&a, mode, c), (dev_t)rdev);
	err = r < 0 ? -errno : answer_made(sess, &a, c->uid, c->gid, wflags, rep);
	if (err == 0)
		put_dir_attr(sess, rep, &a);
	at_clear(&a);
	return err;
}

static int op_mknod(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	g_autofree char *path = NULL;
	struct caller c;
	uint32_t mode;
	uint64_t rdev;
	int err;

	if ((err = rd_path(r, &path)) < 0)
		return err;
	qt_rd_u32(r, &mode);
	qt_rd_u64(r, &rdev);
	rd_caller(sess, r, &c);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	return make_at(sess, MAKE_NODE, path, mode, rdev, NULL, &c, rep);
}

static int op_mkdir(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	g_autofree char *path = NULL;
	struct caller c;
	uint32_t mode;
	int err;

	if ((err = rd_path(r, &path)) < 0)
		return err;
	qt_rd_u32(r, &mode);
	rd_caller(sess, r, &c);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	return make_at(sess, MAKE_DIR, path, mode, 0, NULL, &c, rep);
}

static int op_remove(struct session *sess, struct qt_rd *r, struct qt_msg *rep, bool dir)
{
	g_autofree char *path = NULL;
	struct at a;
	int err;

	if ((err = rd_path(r, &path)) < 0 || (err = qt_rd_end(r)) < 0)
		return err;
	if (!*path)
		return -EBUSY;
	if ((err = at_resolve_wl(sess, path, dir ? QTFS_WL_RMDIR : QTFS_WL_UNLINK, &a)) < 0)
		return err;
	err = unlinkat(a.dirfd, a.name, dir ? AT_REMOVEDIR : 0) < 0 ? -errno : 0;
	if (err == 0)
		put_dir_attr(sess, rep, &a);
	at_clear(&a);
	return err;
}

static int op_unlink(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	return op_remove(sess, r, rep, false);
}

static int op_rmdir(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	return op_remove(sess, r, rep, true);
}

static int op_symlink(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	g_autofree char *path = NULL, *target = NULL;
	struct caller c;
	int err;

	if ((err = rd_path(r, &path)) < 0 || (err = qt_rd_strdup(r, QTFS_SYMLINK_MAX, &target)) < 0)
		return err;
	rd_caller(sess, r, &c);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	return make_at(sess, MAKE_SYMLINK, path, 0, 0, target, &c, rep);
}

/*
 * RENAME_WHITEOUT leaves a whiteout (a character device 0:0, which opens
 * nothing) at the old name, as overlayfs does in its upper layer; the
 * client's kernel lets only a caller with CAP_MKNOD ask, as it lets only
 * root make device nodes.
 */
#define RENAME_FLAGS_OK (RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT)

static int op_rename(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	g_autofree char *from = NULL, *to = NULL;
	uint32_t flags, added;
	unsigned tries = 0;
	struct at a, b;
	int err;

	if ((err = rd_path(r, &from)) < 0 || (err = rd_path(r, &to)) < 0)
		return err;
	qt_rd_u32(r, &flags);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	if (flags & ~RENAME_FLAGS_OK)
		return -EINVAL;
	if (!*from || !*to)
		return -EBUSY;
	if ((err = at_resolve_pair(sess, from, to, &a, &b)) < 0)
		return err;
	if ((err = wl_check_pair(sess, false, &a, &b)) == 0 &&
	    (err = wl_check_rename(sess, &a, &b, flags, &added)) == 0) {
		/* The client's kernel moves its cached names: both must stay watched. */
		watch_dir(sess, &a);
		watch_dir(sess, &b);
		do {
			err = renameat2(a.dirfd, a.name, b.dirfd, b.name, flags | added);
			err = err < 0 ? -errno : 0;
		} while (rename_again(sess, &a, &b, flags, &added, &tries, &err));
	}
	if (err == 0) {
		put_dir_attr(sess, rep, &a);
		put_dir_attr(sess, rep, &b);
	}
	at_clear(&a);
	at_clear(&b);
	return err;
}

static int op_link(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	g_autofree char *from = NULL, *to = NULL;
	uint32_t wflags;
	struct at a, b;
	int err;

	if ((err = rd_path(r, &from)) < 0 || (err = rd_path(r, &to)) < 0 ||
	    (err = qt_rd_end(r)) < 0)
		return err;
	if (!*from)
		return -EPERM;
	if (!*to)
		return -EEXIST;
	if ((err = at_resolve_pair(sess, from, to, &a, &b)) < 0)
		return err;
	/*
	 * A new name gives new access to the old file: the source must be
	 * creatable-in too, and the new name may not allow more than the old
	 * (wl_check_link_access()), or a link would carry a denied file into
	 * an allowed directory.
	 */
	if ((err = wl_check_pair(sess, true, &a, &b)) == 0) {
		wflags = watch_dir(sess, &b);
		if (linkat(a.dirfd, a.name, b.dirfd, b.name, 0) < 0)
			err = -errno;
		else if ((err = put_at_attr(sess, &b, wflags, rep)) == 0)
			put_dir_attr(sess, rep, &b);
	}
	at_clear(&a);
	at_clear(&b);
	return err;
}

/*
 * Open flags a client may ask for; the rest are the server's business.
 * Not O_DIRECT: the client's kernel already sends an O_DIRECT file's reads
 * and writes to us as they come, uncached on the DPU; here they go through
 * the host's page cache, as an NFS server's do.  The host's O_DIRECT wants
 * the buffer, offset and size aligned to the disk's blocks, which our
 * reply buffers are not (every READ of such a file failed with EINVAL).
 */
#define OPEN_FLAGS_OK                                                                 \
	(O_ACCMODE | O_APPEND | O_TRUNC | O_NONBLOCK | O_DSYNC | O_SYNC | O_NOATIME | \
	 O_LARGEFILE | O_DIRECTORY | O_NOCTTY)

/*
 * What is being opened: @fd itself (O_PATH, or already open; @name NULL),
 * or @name in the directory @fd, a file CREATE is about to make.  A new
 * file's handle is judged as an OPEN of it would be: [Create] alone lets a
 * file be made, not written or read where [Write] or [Read] deny it.
 */
static int check_open(struct session *sess, int fd, const char *name, int flags)
{
	int err;

	if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) {
		if (sess->ro)
			return -EROFS;
		if ((err = wl_check_fd(sess, QTFS_WL_WRITE, fd, name)) < 0)
			return err;
	}
	/* [Read] is judged when the file is opened for reading: the reads go by handle. */
	if ((flags & O_ACCMODE) != O_WRONLY && !(flags & O_DIRECTORY) &&
	    (err = wl_check_fd(sess, QTFS_WL_READ, fd, name)) < 0)
		return err;
	return wl_check_fd(sess, QTFS_WL_OPEN, fd, name);
}

/*
 * OPEN of a small pseudo file is usually followed by one READ at offset 0
 * and one more that finds the end: `cat /proc/meminfo` is LOOKUP, OPEN,
 * READ, READ, RELEASE.  When the client asks for it (@prefetch > 0), the
 * OPEN reply carries the file's first @prefetch bytes and whether that was
 * all, read right after the open, so those two READs need no round trip.
 * Only files whose read has no effect qualify (dev_kind(); not /proc/kmsg,
 * whose read consumes), only read-only opens, and the reader sees the
 * content as of its open rather than its first read.
 */
#define PREFETCH_MAX (64u << 10)

static bool prefetch_ok(enum dev_kind kind, const struct stat *st, int flags, const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return kind == DEV_PSEUDO_SNAP && S_ISREG(st->st_mode) && (flags & O_ACCMODE) == O_RDONLY &&
	       strcmp(base, "kmsg") != 0;
}

/* Append the prefetch section of an OPEN reply: u32 state, then the bytes. */
static void put_prefetch(struct qt_msg *rep, int fd, uint32_t want)
{
	size_t state_at = qt_msg_payload_len(rep), len_at;
	uint32_t state = QTFS_PREFETCH_PART;
	char probe;
	uint8_t *p;
	ssize_t n;

	want = MIN(want, PREFETCH_MAX);
	qt_msg_put_u32(rep, QTFS_PREFETCH_NONE);
	if (!want)
		return;
	len_at = qt_msg_payload_len(rep);
	if (!(p = qt_msg_reserve(rep, 4 + (size_t)want)))
		return;
	do
		n = pread(fd, p + 4, want, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		/* The client's own READ will get (and report) the error. */
		rep->len -= 4 + (size_t)want;
		return;
	}
	/*
	 * A short read of a generated file is not proof of its end; a read
	 * that returns nothing is.  A byte that the probe finds goes with
	 * the others: the descriptor's position is then the end of what the
	 * client has, and its READ from there continues the seq_file where
	 * this read left it (the rest of a record, from the same pass)
	 * instead of starting it again.
	 */
	if ((size_t)n < want) {
		ssize_t more;

		do
			more = pread(fd, &probe, 1, (off_t)n);
		while (more < 0 && errno == EINTR);
		if (more == 0)
			state = QTFS_PREFETCH_ALL;
		else if (more == 1)
			p[4 + n++] = (uint8_t)probe;
	}
	rep->len -= want - (size_t)n;
	qt_msg_patch_u32(rep, len_at, (uint32_t)n);
	qt_msg_patch_u32(rep, state_at, state);
}

/*
 * Register @fd as a handle and answer with its id and attributes.  Consumes
 * @fd.  @prefetch: NULL for OPENDIR and CREATE, whose replies end there;
 * for OPEN, how many bytes the client would take (see put_prefetch()).
 */
/*
 * Pseudo files whose reads wait for events without end: /proc/kmsg and
 * the tracing trace_pipe files.  Their handles are streams, as FIFOs'
 * are: read(2) on the blocking pool, where an INTERRUPT or the end of the
 * connection stops a wait, never on a shared worker or io_uring's.
 */
static bool pseudo_waits(int fd, const struct stat *st, const char *path)
{
	const char *base = strrchr(path, '/');
	struct statfs sfs;

	base = base ? base + 1 : path;
	if (!S_ISREG(st->st_mode) || fstatfs(fd, &sfs) < 0)
		return false;
	switch ((unsigned long)sfs.f_type) {
	case PROC_SUPER_MAGIC:
		return strcmp(base, "kmsg") == 0;
	case TRACEFS_MAGIC:
	case DEBUGFS_MAGIC:
		return g_str_has_prefix(base, "trace_pipe");
	default:
		return false;
	}
}

/*
 * Make @fd, just opened, a handle of this session and answer with its id
 * and attributes (@known, if the caller has them, else fstat()).  On
 * error @fd is closed.
 */
static int put_new_handle(struct session *sess, int fd, const struct stat *known, bool dir,
			  const char *path, int flags, const uint32_t *prefetch, uint32_t wflags,
			  struct qt_msg *rep)
{
	g_autoptr(handle) h = NULL;
	struct stat st;
	uint64_t hid;
	enum dev_kind kind;
	bool waits;
	int err;

	if (known) {
		st = *known;
	} else if (fstat(fd, &st) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	kind = dev_kind(sess->srv, st.st_dev, fd, "");
	waits = kind_pseudo(kind) && pseudo_waits(fd, &st, path);
	if ((err = handle_add(sess, fd, dir, S_ISFIFO(st.st_mode) || waits,
			      kind == DEV_MEMORY || kind_pseudo(kind),
			      S_ISREG(st.st_mode) && !kind_pseudo(kind), &hid, &h)) < 0) {
		close(fd);
		return err;
	}
	h->append = (flags & O_APPEND) != 0; /* nobody else has @h yet */
	qt_msg_put_u64(rep, hid);
	/* The handle owns @fd now; our reference keeps it open. */
	put_attr_flags(sess, rep, &st, fd, "", wflags | (waits ? QTFS_AF_STREAM : 0));
	if (prefetch)
		put_prefetch(rep, fd, prefetch_ok(kind, &st, flags, path) ? *prefetch : 0);
	return 0;
}

static void kill_priv(int fd, uint32_t gid);

/*
 * Open an existing file in two steps: an O_PATH descriptor first (opening
 * touches nothing), checked for what it is and against the whitelist, then
 * the real open through /proc/self/fd, which reaches exactly that inode.
 * Opening a device can have effects of its own (a watchdog starts, a tape
 * rewinds), and a FIFO open may block, hence the look before the open.
 * @truncator: for CREATE, who opens; an unprivileged one's O_TRUNC drops
 * the file's set-id bits, as a local one would (an OPEN does not say who:
 * the client does that, fs.c's open_kills_priv()).
 */
static int open_existing(struct session *sess, const char *path, uint32_t flags,
			 const uint32_t *prefetch, const struct caller *truncator, struct qt_msg *rep)
{
	struct stat st;
	char link[64];
	int pfd, fd, err, oflags = ((int)flags & OPEN_FLAGS_OK) | O_CLOEXEC;

	/* On the loop thread (runs_inline()): a truncation writes, so not there. */
	if (tl_cached_only && (flags & O_TRUNC))
		return DEFER;
	pfd = openat2_beneath(sess->root_fd, path, O_PATH | O_NOFOLLOW | ((int)flags & O_DIRECTORY), 0);
	if (pfd < 0)
		return pfd;
	if (fstat(pfd, &st) < 0) {
		err = -errno;
		goto out;
	}
	if (S_ISLNK(st.st_mode)) {
		err = -ELOOP;
		goto out;
	}
	if (is_device(st.st_mode)) {
		qt_notice("peer %s: refused to open device node \"%s\" on the host",
			  qt_conn_peer(sess->conn), path);
		err = -EACCES;
		goto out;
	}
	if ((err = check_open(sess, pfd, NULL, (int)flags)) < 0)
		goto out;
	if (S_ISFIFO(st.st_mode) && !(flags & O_NONBLOCK) && !tl_blocking_ok) {
		err = DEFER;
		goto out;
	}
	if ((err = proc_fd_path(pfd, link)) < 0)
		goto out;
	/*
	 * On the loop thread, O_NONBLOCK: an open that would wait for another
	 * host process's lease to break fails with EWOULDBLOCK instead, and is
	 * done again on the pool.
	 */
	fd = open(link, oflags | (tl_cached_only ? O_NONBLOCK : 0));
	if (fd < 0) {
		err = tl_cached_only && errno == EWOULDBLOCK ? DEFER : -errno;
		goto out;
	}
	if (tl_cached_only && !(oflags & O_NONBLOCK) && fcntl(fd, F_SETFL, oflags & ~O_CLOEXEC) < 0) {
		err = -errno;
		close(fd);
		goto out;
	}
	close(pfd);
	if (truncator && truncator->uid && (flags & O_TRUNC) && S_ISREG(st.st_mode))
		kill_priv(fd, truncator->gid);
	return put_new_handle(sess, fd, NULL, false, path, (int)flags, prefetch, 0, rep);
out:
	close(pfd);
	return err;
}

static int op_open(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	g_autofree char *path = NULL;
	uint32_t flags, prefetch;
	int err;

	if ((err = rd_path(r, &path)) < 0)
		return err;
	qt_rd_u32(r, &flags);
	qt_rd_u32(r, &prefetch);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	return open_existing(sess, path, flags, &prefetch, NULL, rep);
}

/*
 * A file we just created (@fd, exclusively): the caller's ownership, then
 * the reply is its new handle.  Consumes @fd; the file goes again if its
 * ownership cannot be set.  @wflags: watch_dir() before the create.
 */
static int answer_created(struct session *sess, struct at *a, int fd, uint32_t uid, uint32_t gid,
			  int flags, uint32_t wflags, struct qt_msg *rep)
{
	struct stat st;
	int err = own_new(a, fd, uid, gid, &st);

	if (err < 0) {
		unlinkat(a->dirfd, a->name, 0);
		close(fd);
		return err;
	}
	return put_new_handle(sess, fd, err == 1 ? &st : NULL, false, "", flags, NULL, wflags, rep);
}

static int op_create(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	g_autofree char *path = NULL;
	uint32_t flags, mode;
	struct caller c;
	struct at a;
	int fd, err;

	if ((err = rd_path(r, &path)) < 0)
		return err;
	qt_rd_u32(r, &flags);
	qt_rd_u32(r, &mode);
	rd_caller(sess, r, &c);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	if (!*path)
		return (flags & O_EXCL) ? -EEXIST : -EISDIR;
	for (int attempt = 0; attempt < 4; attempt++) {
		uint32_t wflags;

		if ((err = at_resolve_wl(sess, path, QTFS_WL_CREATE, &a)) < 0)
			return err;
		if ((err = check_open(sess, a.dirfd, a.name, (int)flags & ~O_DIRECTORY)) < 0) {
			at_clear(&a);
			return err;
		}
		wflags = watch_dir(sess, &a);
		/*
		 * Always exclusive here, so that "did we create it" (and must
		 * give it the caller's ownership) has one answer; without
		 * O_EXCL an existing file is simply opened.
		 */
		fd = openat(a.dirfd, a.name,
			    ((int)flags & OPEN_FLAGS_OK & ~O_DIRECTORY) | O_CREAT | O_EXCL | O_NOFOLLOW |
				    O_CLOEXEC,
			    caller_mode(&a, mode & 07777, &c));
		if (fd >= 0) {
			err = answer_created(sess, &a, fd, c.uid, c.gid, (int)flags, wflags, rep);
			if (err == 0)
				put_dir_attr(sess, rep, &a);
			at_clear(&a);
			return err;
		}
		err = -errno;
		at_clear(&a);
		if (err != -EEXIST || (flags & O_EXCL))
			return err;
		err = open_existing(sess, path, flags, NULL, &c, rep);
		if (err == 0)
			put_dir_attr(sess, rep, NULL); /* the directory did not change */
		if (err != -ENOENT)
			return err;
		/* Removed between the two opens: try to create it again. */
	}
	return -EAGAIN;
}

/*
 * READs of at least SPLICE_MIN bytes of a regular file from a page
 * boundary (the kernel's page-cache reads; direct I/O may start anywhere)
 * send the file's pages without copying them (see "Pipes" in
 * lib/loop.h): the data never passes through this process.  Below it,
 * moving page references and the extra system calls cost more than the
 * copy saves.  Pseudo files are always copied (they are generated at each
 * read).  So are replies on a TCP connection from this same host
 * (session.splice): TCP makes each spliced page cache page a fragment of
 * its own, and over loopback the receiving side runs on this host too,
 * walking those fragments, so sequential reads were slower spliced than
 * copied into TCP's own larger chunks (docs/benchmarks.md), unless the
 * client splices them on from the socket, moving the fragments without
 * walking their bytes (QTFS_MNT_PIPE_READS): then they are faster spliced
 * and cost this host a sixth of the CPU time.  Across a real
 * link the network card sends the spliced pages without the host copying
 * them, which is what the splice is for.  Unix sockets and pipes
 * (--stdio) move the pages whole and splice.
 */
#define SPLICE_MIN (64u * 1024)
G_STATIC_ASSERT(QTFS_IO_MAX <= QT_PIPE_DATA_MAX);

static bool read_splices(const struct session *sess, const struct handle *h, uint64_t off,
			 uint32_t size)
{
	return size >= SPLICE_MIN && sess->splice && h->splice &&
	       off % (uint64_t)sysconf(_SC_PAGESIZE) == 0;
}

/* READ into a pipe on a worker: the reply carries the count, the pipe the data. */
static int read_spliced(struct handle *h, uint64_t off, uint32_t size, struct qt_pipe *pipe,
			struct qt_msg *rep)
{
	size_t done = 0;
	ssize_t n = 0;

	while (done < size && (n = qt_pipe_fill(pipe, h->fd, off + done, size - done)) > 0)
		done += (size_t)n;
	if (n < 0 && done == 0) {
		qt_pipe_put(pipe);
		return (int)n;
	}
	/* An error after some bytes is a short read, as pread(2) would give. */
	qt_msg_put_u32(rep, (uint32_t)done);
	qt_msg_set_pipe_tail(rep, pipe, done);
	return 0;
}

static int op_read(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	struct qt_pipe *pipe;
	uint64_t hid, off;
	uint32_t size;
	size_t len_at;
	uint8_t *p;
	ssize_t n;
	int err;

	qt_rd_u64(r, &hid);
	qt_rd_u64(r, &off);
	qt_rd_u32(r, &size);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	if (size > QTFS_IO_MAX || off > INT64_MAX)
		return -EINVAL;
	g_autoptr(handle) h = handle_get(sess, hid);
	if (!h)
		return -EBADF;
	if (h->dir)
		return -EISDIR;
	if (h->stream && !tl_blocking_ok)
		return DEFER;
	if (read_splices(sess, h, off, size) && (pipe = qt_pipe_get()))
		return read_spliced(h, off, size, pipe, rep);
	len_at = qt_msg_payload_len(rep);
	p = qt_msg_reserve(rep, 4 + (size_t)size);
	if (!p)
		return -ENOMEM;
	do
		n = h->stream ? read(h->fd, p + 4, size) : pread(h->fd, p + 4, size, (off_t)off);
	while (retry_eintr(n));
	if (n < 0)
		return -errno;
	/* Give back what the read did not fill, then write the length prefix. */
	rep->len -= size - (size_t)n;
	return qt_msg_patch_u32(rep, len_at, (uint32_t)n);
}

/*
 * A write (or a truncating open) by an unprivileged caller clears
 * set-user-ID, and set-group-ID when the group may execute or the caller
 * is not in the group, as a local one would; ours runs as root, which
 * keeps them.  (The caller's supplementary groups are not known here: only
 * its primary gid counts.)
 */
static void kill_priv(int fd, uint32_t gid)
{
	struct stat st;
	mode_t mode;

	if (fstat(fd, &st) < 0 || !(st.st_mode & (S_ISUID | S_ISGID)))
		return;
	mode = st.st_mode & 07777 & ~(mode_t)S_ISUID;
	if ((st.st_mode & S_IXGRP) || st.st_gid != gid)
		mode &= ~(mode_t)S_ISGID;
	if (mode != (st.st_mode & 07777))
		fchmod(fd, mode);
}

/*
 * The writer's append mode, which fcntl(F_SETFL) on the DPU may have
 * changed since the open, is not always the host descriptor's: does a
 * WRITE with @flags on @h need its own?  Set after the open, the write
 * asks for it (RWF_APPEND); cleared, on a session that says so in every
 * write, the descriptor's O_APPEND goes (Linux's pwrite appends at any
 * offset on one with it).  op_write() does both; the ring neither.
 */
static bool write_mode_differs(const struct session *sess, struct handle *h, uint32_t flags)
{
	bool want = flags & QTFS_WR_APPEND;

	return !h->stream && want != (g_atomic_int_get(&h->append) != 0) && (want || sess->write_mode);
}

static int op_write(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	uint32_t flags, gid;
	uint64_t hid, off;
	const uint8_t *data;
	size_t len;
	ssize_t n;
	int err;

	qt_rd_u64(r, &hid);
	qt_rd_u64(r, &off);
	qt_rd_u32(r, &flags);
	qt_rd_u32(r, &gid);
	qt_rd_bytes(r, QTFS_IO_MAX, &data, &len);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	if (off > INT64_MAX)
		return -EINVAL;
	g_autoptr(handle) h = handle_get(sess, hid);
	if (!h)
		return -EBADF;
	if (h->stream && !tl_blocking_ok)
		return DEFER;
	/* Append mode cleared on the DPU (see write_mode_differs()). */
	if (write_mode_differs(sess, h, flags) && !(flags & QTFS_WR_APPEND)) {
		int fl = fcntl(h->fd, F_GETFL);

		if (fl < 0 || fcntl(h->fd, F_SETFL, fl & ~O_APPEND) < 0)
			return -errno;
		g_atomic_int_set(&h->append, 0);
	}
	do {
		struct iovec iov = {.iov_base = (void *)data, .iov_len = len};

		if (h->stream)
			n = write(h->fd, data, len);
		else if ((flags & QTFS_WR_APPEND) && !g_atomic_int_get(&h->append))
			n = pwritev2(h->fd, &iov, 1, (off_t)off, RWF_APPEND);
		else
			n = pwrite(h->fd, data, len, (off_t)off);
	} while (retry_eintr(n));
	if (n < 0)
		return -errno;
	if ((flags & QTFS_WR_KILL_PRIV) && n > 0)
		kill_priv(h->fd, gid);
	qt_msg_put_u32(rep, (uint32_t)n);
	return 0;
}

/*
 * Take handle @hid out of the session: the session's reference to it, or
 * NULL.  A POLL wait on it ends now (op_poll()): the file is closed on
 * the DPU, and the wait's reference would keep the host file open, and a
 * thread of the blocking pool busy, for up to POLL_WAIT_MAX_MS.
 */
static struct handle *handle_steal(struct session *sess, uint64_t hid)
{
	struct handle *h = NULL;
	gpointer key = NULL;
	GHashTableIter it;
	gpointer v;

	g_mutex_lock(&sess->lock);
	g_hash_table_steal_extended(sess->handles, &hid, &key, (gpointer *)&h);
	if (h) {
		h->released = true;
		g_hash_table_iter_init(&it, sess->blocked);
		while (g_hash_table_iter_next(&it, NULL, &v)) {
			struct blocked *b = v;

			if (b->poll_hid != hid)
				continue;
			g_atomic_int_set(&b->interrupted, 1);
			pthread_kill(b->thread, INTR_SIGNAL);
		}
	}
	g_mutex_unlock(&sess->lock);
	g_free(key);
	return h;
}

/* Forget handle @hid; its file closes with the last call using it. */
static int release_handle(struct session *sess, uint64_t hid)
{
	struct handle *h = handle_steal(sess, hid);

	if (!h)
		return -EBADF;
	handle_unref(h);
	return 0;
}

/*
 * A RELEASE on the loop thread: take handle @hid, for which the caller
 * holds the reference @h, out of the session.  Returns its descriptor for
 * the caller to close when that reference was the last; -1 when a request
 * still running holds another (the last of them closes it).
 */
static int release_take_fd(struct session *sess, uint64_t hid, struct handle *h)
{
	int fd;

	handle_unref(handle_steal(sess, hid)); /* the session's reference; ours remains */
	/* Out of the table, no one takes a new reference: ours is last if the count is 1. */
	if (!g_atomic_int_compare_and_exchange(&h->refs, 1, 0)) {
		handle_unref(h);
		return -1;
	}
	fd = h->fd;
	handle_free(h);
	return fd;
}

static int op_release(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	uint64_t hid;
	int err;

	qt_rd_u64(r, &hid);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	return release_handle(sess, hid);
}

/* F_OFD_SETLK and flock report a conflict as EAGAIN or EACCES; the client wants one. */
static int lock_errno(int e)
{
	return e == EACCES || e == EWOULDBLOCK ? -EAGAIN : -e;
}

static void rd_lock(struct qt_rd *r, uint64_t *hid, uint64_t *owner, uint32_t *type,
		   uint64_t *start, uint64_t *len)
{
	qt_rd_u64(r, hid);
	qt_rd_u64(r, owner);
	qt_rd_u32(r, type);
	qt_rd_u64(r, start);
	qt_rd_u64(r, len);
}

static int check_lock_range(uint32_t type, uint64_t start, uint64_t len)
{
	if (type != F_RDLCK && type != F_WRLCK && type != F_UNLCK)
		return -EINVAL;
	if (start > INT64_MAX || len > INT64_MAX)
		return -EINVAL;
	return 0;
}

/*
 * The owner's open file description of @h's file (sess->owners_lock held):
 * found, or reopened from @h with the same access mode when @create.
 * NULL and *err otherwise.
 */
static struct lock_owner *owner_fd_locked(struct session *sess, struct handle *h, uint64_t owner,
					  bool create, bool *created, int *err)
{
	struct lock_owner key = {.owner = owner}, *o;
	char path[64];
	struct stat st;
	int fl, fd;

	if (fstat(h->fd, &st) < 0) {
		*err = -errno;
		return NULL;
	}
	key.dev = st.st_dev;
	key.ino = st.st_ino;
	o = g_hash_table_lookup(sess->lock_owners, &key);
	*created = false;
	if (o || !create) {
		*err = 0;
		return o;
	}
	if (g_hash_table_size(sess->lock_owners) >= sess->srv->max_handles) {
		*err = -ENOLCK;
		return NULL;
	}
	fl = fcntl(h->fd, F_GETFL);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", h->fd);
	fd = fl < 0 ? -1 : open(path, (fl & O_ACCMODE) | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		*err = -errno;
		return NULL;
	}
	o = g_new0(struct lock_owner, 1);
	*o = key;
	o->fd = fd;
	o->srv = sess->srv;
	g_atomic_int_inc(&o->srv->n_owners);
	g_hash_table_add(sess->lock_owners, o);
	*created = true;
	return o;
}

static int op_setlk(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	uint64_t hid, owner, start, len;
	uint32_t type, flags, pid;
	struct lock_owner *o;
	struct flock fl;
	bool created;
	int err;

	rd_lock(r, &hid, &owner, &type, &start, &len);
	qt_rd_u32(r, &flags);
	qt_rd_u32(r, &pid);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	if ((flags & ~QTFS_LK_KNOWN) || (err = check_lock_range(type, start, len)) < 0)
		return -EINVAL;
	g_autoptr(handle) h = handle_get(sess, hid);
	if (!h)
		return -EBADF;
	if (flags & QTFS_LK_FLOCK) {
		int op = type == F_UNLCK ? LOCK_UN : type == F_RDLCK ? LOCK_SH : LOCK_EX;

		return flock(h->fd, op | LOCK_NB) < 0 ? lock_errno(errno) : 0;
	}
	g_mutex_lock(&sess->owners_lock);
	o = owner_fd_locked(sess, h, owner, type != F_UNLCK && !(flags & QTFS_LK_RELEASE_OWNER),
			    &created, &err);
	if (o && (flags & QTFS_LK_RELEASE_OWNER)) {
		g_hash_table_remove(sess->lock_owners, o); /* closing it drops its locks */
	} else if (o) {
		fl = (struct flock){
			.l_type = (short)type,
			.l_whence = SEEK_SET,
			.l_start = (off_t)start,
			.l_len = (off_t)len,
		};
		err = fcntl(o->fd, F_OFD_SETLK, &fl) < 0 ? lock_errno(errno) : 0;
		if (!err && type != F_UNLCK)
			o->pid = pid;
		/*
		 * A description made for a lock that was refused holds nothing,
		 * and the client, which records an owner only once a lock is
		 * granted, would never release it.
		 */
		if (err && created)
			g_hash_table_remove(sess->lock_owners, o);
	}
	g_mutex_unlock(&sess->owners_lock);
	return err;
}

/*
 * Which of the session's other owners of @o's file holds @conflict, the
 * lock F_OFD_GETLK found for @want: the one from whose own description the
 * same question no longer finds it (its own locks never conflict).  Its
 * pid, or 0 (a host process, or no single owner).  sess->owners_lock held.
 */
static uint32_t conflict_pid_locked(struct session *sess, uint64_t dev, uint64_t ino,
				    uint64_t owner, const struct flock *want,
				    const struct flock *conflict)
{
	GHashTableIter it;
	gpointer k;

	g_hash_table_iter_init(&it, sess->lock_owners);
	while (g_hash_table_iter_next(&it, &k, NULL)) {
		const struct lock_owner *o = k;
		struct flock fl = *want;

		if (o->dev != dev || o->ino != ino || o->owner == owner)
			continue;
		if (fcntl(o->fd, F_OFD_GETLK, &fl) < 0)
			continue;
		if (fl.l_type == F_UNLCK || fl.l_start != conflict->l_start ||
		    fl.l_len != conflict->l_len || fl.l_type != conflict->l_type)
			return o->pid;
	}
	return 0;
}

static int op_getlk(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	uint64_t hid, owner, start, len;
	struct lock_owner *o;
	struct flock fl, want;
	uint32_t type, pid = 0;
	struct stat st;
	bool created;
	int err;

	rd_lock(r, &hid, &owner, &type, &start, &len);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	if ((err = check_lock_range(type, start, len)) < 0 || type == F_UNLCK)
		return -EINVAL;
	g_autoptr(handle) h = handle_get(sess, hid);
	if (!h)
		return -EBADF;
	fl = (struct flock){
		.l_type = (short)type,
		.l_whence = SEEK_SET,
		.l_start = (off_t)start,
		.l_len = (off_t)len,
	};
	want = fl;
	/* The owner's own locks never conflict; without any, any description will do. */
	g_mutex_lock(&sess->owners_lock);
	o = owner_fd_locked(sess, h, owner, false, &created, &err);
	if (!err && fcntl(o ? o->fd : h->fd, F_OFD_GETLK, &fl) < 0)
		err = -errno;
	/* A host process's pid means nothing on the DPU: only our owners' are told. */
	if (!err && fl.l_type != F_UNLCK && fstat(h->fd, &st) == 0)
		pid = conflict_pid_locked(sess, st.st_dev, st.st_ino, owner, &want, &fl);
	g_mutex_unlock(&sess->owners_lock);
	if (err < 0)
		return err;
	qt_msg_put_u32(rep, (uint32_t)fl.l_type);
	qt_msg_put_u64(rep, (uint64_t)fl.l_start);
	qt_msg_put_u64(rep, (uint64_t)fl.l_len);
	qt_msg_put_u32(rep, pid);
	return 0;
}

static int op_flush(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	uint64_t hid;
	int err;

	qt_rd_u64(r, &hid);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	g_autoptr(handle) h = handle_get(sess, hid);
	return h ? 0 : -EBADF;
}

static int op_fsync(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	uint64_t hid;
	uint32_t datasync;
	int err;

	qt_rd_u64(r, &hid);
	qt_rd_u32(r, &datasync);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	g_autoptr(handle) h = handle_get(sess, hid);
	if (!h)
		return -EBADF;
	return (datasync ? fdatasync(h->fd) : fsync(h->fd)) < 0 ? -errno : 0;
}

static int op_opendir(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	g_autofree char *path = NULL;
	int fd, err;

	if ((err = rd_path(r, &path)) < 0 || (err = qt_rd_end(r)) < 0)
		return err;
	fd = openat2_beneath(sess->root_fd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd;
	if ((err = wl_check_fd(sess, QTFS_WL_READDIR, fd, NULL)) < 0) {
		close(fd);
		return err;
	}
	return put_new_handle(sess, fd, NULL, true, path, O_RDONLY | O_DIRECTORY, NULL, 0, rep);
}

/* What an entry costs in the client's FUSE buffer (struct fuse_dirent[plus]). */
static size_t fuse_entry_size(size_t namelen, bool plus)
{
	size_t s = ((24 + namelen) + 7) & ~(size_t)7;

	return plus ? s + 128 : s;
}

/*
 * How many bytes of the host's getdents records to ask for when @left
 * bytes of the client's buffer are free, @used taken by entries whose
 * records took @seen: about what will fit.  Entries read past what fits
 * would be dropped, and the next READDIR's seek back to the first of them
 * costs a hashed directory (ext4's) a walk of its index from there; asking
 * for what fits keeps the directory's position where the next READDIR
 * begins.  A record (struct linux_dirent64: ALIGN(20 + namelen, 8), at
 * least 24 bytes) is never larger than its FUSE entry, which is at most
 * 4/3 of it (32 for 24), or 20/3 with a READDIRPLUS's 128 bytes of
 * attributes: the first call asks for what is sure to fit, the later
 * ones for a fifth less than the entries so far say will.  0 when too
 * little is left to be worth another call (a record can take 280 bytes).
 */
static size_t getdents_want(size_t left, size_t used, size_t seen, bool plus)
{
	size_t want = seen ? left / 5 * 4 * seen / used : plus ? left / 20 * 3 : left / 4 * 3;

	if (want > 32768)
		want = 32768;
	return want < 512 ? 0 : want;
}

/*
 * Entries from offset @off on, as many as fit in @size bytes of the
 * client's buffer.  Each carries the offset of the entry after it (the
 * d_off cookie, which lseek accepts), so the client restarts exactly where
 * its buffer filled even if it drops entries we sent.  The reply may
 * leave some of @size unused; only a reply of no entries ends a listing.
 */
static int op_readdir(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	uint64_t hid, off;
	uint32_t size, flags, count = 0, wflags = 0;
	size_t used = 0, seen = 0, count_at;
	uint64_t last;
	bool plus, list, full = false, going_on;
	g_autofree uint8_t *buf = NULL;
	int err = 0;

	qt_rd_u64(r, &hid);
	qt_rd_u64(r, &off);
	qt_rd_u32(r, &size);
	qt_rd_u32(r, &flags);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	if (size > QTFS_IO_MAX || off > INT64_MAX)
		return -EINVAL;
	plus = flags & QTFS_RD_PLUS;
	list = flags & QTFS_RD_LIST;
	if ((flags & ~(uint32_t)(QTFS_RD_PLUS | QTFS_RD_LIST)) || (list && (!sess->list_dirs || off != 0)))
		return -EINVAL;
	g_autoptr(handle) h = handle_get(sess, hid);
	if (!h)
		return -EBADF;
	if (!h->dir)
		return -ENOTDIR;

	/*
	 * QTFS_RD_LIST: the watch for new names goes in before the first
	 * getdents below (a fresh read from the start, nothing kept from
	 * before), so that every name the listing misses is reported.
	 */
	if (plus || list)
		wflags = watch_fd(sess, h->fd, list ? DIR_NEW : DIR_NAMES);
	if (list)
		qt_msg_put_u32(rep, wflags ? QTFS_AF_LISTED : 0);
	count_at = qt_msg_payload_len(rep);
	qt_msg_put_u32(rep, 0);
	buf = g_malloc(32768);
	g_mutex_lock(&h->lock);
	/*
	 * A READDIR that goes on from where the last one ended takes the
	 * entries that one read past its end, then the descriptor where it
	 * stands: no seek.  Some file systems' offsets count entries (tmpfs
	 * before Linux 6.6, ramfs, and others built on the kernel's
	 * dcache_readdir): a seek to one after earlier entries were removed
	 * lands that many entries too far, and a program removing the
	 * entries it reads as it reads them (rm -r) missed some.  The
	 * descriptor's own cursor does not move so.
	 */
	going_on = !list && h->rd_at && off == h->rd_next;
	h->rd_at = false; /* until this one ends well */
	if (!going_on) {
		g_clear_pointer(&h->rd_left, g_free);
		if (lseek(h->fd, (off_t)off, SEEK_SET) < 0) {
			struct stat st;

			err = -errno;
			/*
			 * A directory removed meanwhile.  ext4 then seeks in it as
			 * in a plain file, and its end-of-listing cookie lies past
			 * where one may (EINVAL); the host's getdents would have
			 * said ENOENT.
			 */
			if (err == -EINVAL && fstat(h->fd, &st) == 0 && st.st_nlink == 0)
				err = -ENOENT;
			goto out;
		}
	}
	last = off;
	while (!full) {
		/* The first entry may have taken more than @size. */
		size_t want = getdents_want(used < size ? size - used : 0, used, seen, plus);
		g_autofree uint8_t *left = NULL;
		const uint8_t *src = buf;
		long n, pos = 0;

		if (want == 0 && count > 0)
			break;
		if (h->rd_left) {
			/* Read past the end of the last one. */
			src = left = g_steal_pointer(&h->rd_left);
			n = (long)h->rd_left_len;
		} else {
			/* The first entry goes out whatever its size (the client asks again with more room). */
			n = syscall(SYS_getdents64, h->fd, buf, want ? want : 512);
			if (n < 0) {
				err = -errno;
				break;
			}
			if (n == 0)
				break;
		}
		for (; pos < n;) {
			const struct linux_dirent64 *d = (const struct linux_dirent64 *)(src + pos);
			size_t nl = strlen(d->d_name);
			size_t cost = fuse_entry_size(nl, plus);

			if (used + cost > size && count > 0) {
				full = true;
				break;
			}
			pos += d->d_reclen;
			last = (uint64_t)d->d_off;
			used += cost;
			seen += d->d_reclen;
			count++;
			qt_msg_put_u64(rep, d->d_ino);
			qt_msg_put_u64(rep, (uint64_t)d->d_off);
			qt_msg_put_u8(rep, d->d_type);
			qt_msg_put_bytes(rep, d->d_name, nl);
			if (plus) {
				struct stat st;
				bool dot = !strcmp(d->d_name, ".") || !strcmp(d->d_name, "..");

				if (!dot && fstatat(h->fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
					qt_msg_put_u8(rep, 1);
					put_attr_flags(sess, rep, &st, h->fd, d->d_name, wflags);
				} else {
					qt_msg_put_u8(rep, 0);
				}
			}
		}
		/* What did not fit waits for the next READDIR, which goes on from @last. */
		if (full) {
			h->rd_left_len = (size_t)(n - pos);
			h->rd_left = g_memdup2(src + pos, h->rd_left_len);
		}
	}
	if (err == 0 && !rep->err) {
		h->rd_next = last;
		h->rd_at = true;
	}
out:
	g_mutex_unlock(&h->lock);
	if (err < 0)
		return err;
	if (rep->err)
		return rep->err;
	return qt_msg_patch_u32(rep, count_at, count);
}

static int op_access(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	g_autofree char *path = NULL;
	uint32_t mask;
	struct at a;
	int err;

	if ((err = rd_path(r, &path)) < 0)
		return err;
	qt_rd_u32(r, &mask);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	if ((err = at_resolve(sess, path, &a)) < 0)
		return err;
	/* Never through a final symlink: its target may lie outside the root. */
	err = faccessat(a.dirfd, *a.name ? a.name : ".", (int)mask & 7, AT_EACCESS | AT_SYMLINK_NOFOLLOW) < 0
		      ? -errno
		      : 0;
	at_clear(&a);
	if (err == 0 && (mask & W_OK) && sess->ro)
		err = -EROFS;
	return err;
}

/*
 * The xattr calls have no *at() form on the kernels we support, so they go
 * through /proc/self/fd/N of an O_PATH descriptor opened beneath the root.
 * That link cannot be used on a symlink without reaching its target: a
 * symlink's own attributes (trusted.* and security.* ones; user.* cannot
 * exist on symlinks) go through its directory's link and its name,
 * /proc/self/fd/D/NAME, with the l*xattr() calls, which do not follow the
 * last component.  The directory was resolved beneath the root; a name
 * swapped meanwhile is still a name in it, and is not followed either.
 * On a session with QTFS_MNT_XATTR_FH a u64 handle follows the request's
 * path (rd_xattr_path()): when it is not 0 the call goes to that open file
 * (a copy of its descriptor) instead, wherever its name is now.
 */
struct xattr_at {
	int fd;	  /* to close: the file (O_PATH or a handle's copy), or a symlink's directory */
	bool link; /* a symlink: l*xattr() on @path */
	char path[64 + NAME_MAX + 2];
};

static int xattr_open(struct session *sess, const char *path, uint64_t hid, bool change,
		      struct xattr_at *x)
{
	struct stat st;
	struct at a;
	int fd, err;

	if (hid) {
		g_autoptr(handle) h = handle_get(sess, hid);

		if (!h)
			return -EBADF;
		fd = fcntl(h->fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
	} else {
		fd = openat2_beneath(sess->root_fd, path, O_PATH | O_NOFOLLOW, 0);
	}
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto fail;
	}
	if (change && (err = wl_check_fd(sess, QTFS_WL_SETXATTR, fd, NULL)) < 0)
		goto fail;
	x->link = S_ISLNK(st.st_mode);
	if (!x->link) {
		x->fd = fd;
		proc_fd_path(fd, x->path);
		return 0;
	}
	close(fd);
	/* (Only a name in a directory can be a symlink: never "", "." or "..".) */
	if ((err = at_resolve(sess, path, &a)) < 0)
		return err;
	if (!*a.name || !strcmp(a.name, ".") || !strcmp(a.name, "..")) {
		at_clear(&a);
		return -EINVAL;
	}
	x->fd = fcntl(a.dirfd, F_DUPFD_CLOEXEC, 0);
	err = x->fd < 0 ? -errno : 0;
	if (err == 0)
		snprintf(x->path, sizeof(x->path), "/proc/self/fd/%d/%s", x->fd, a.name);
	at_clear(&a);
	return err;
fail:
	close(fd);
	return err;
}

/* An xattr request's path, and its handle on a session with QTFS_MNT_XATTR_FH (else 0). */
static int rd_xattr_path(struct session *sess, struct qt_rd *r, char **path, uint64_t *hid)
{
	int err = rd_path(r, path);

	*hid = 0;
	if (err == 0 && sess->xattr_fh)
		qt_rd_u64(r, hid);
	return err;
}

static int op_getxattr(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	g_autofree char *path = NULL, *name = NULL, *buf = NULL;
	struct xattr_at x;
	uint32_t size;
	uint64_t hid;
	ssize_t n;
	int err;

	if ((err = rd_xattr_path(sess, r, &path, &hid)) < 0 ||
	    (err = qt_rd_strdup(r, QTFS_XATTR_NAME_MAX, &name)) < 0)
		return err;
	qt_rd_u32(r, &size);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	if (size > QTFS_XATTR_SIZE_MAX)
		size = QTFS_XATTR_SIZE_MAX;
	if ((err = xattr_open(sess, path, hid, false, &x)) < 0)
		return err;
	buf = size ? g_malloc(size) : NULL;
	n = x.link ? lgetxattr(x.path, name, buf, size) : getxattr(x.path, name, buf, size);
	err = n < 0 ? -errno : 0;
	if (!err) {
		qt_msg_put_u32(rep, (uint32_t)n);
		qt_msg_put_bytes(rep, buf, size ? (size_t)n : 0);
	}
	close(x.fd);
	return err;
}

static int op_listxattr(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	g_autofree char *path = NULL, *buf = NULL;
	struct xattr_at x;
	uint32_t size;
	uint64_t hid;
	ssize_t n;
	int err;

	if ((err = rd_xattr_path(sess, r, &path, &hid)) < 0)
		return err;
	qt_rd_u32(r, &size);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	if (size > QTFS_XATTR_SIZE_MAX)
		size = QTFS_XATTR_SIZE_MAX;
	if ((err = xattr_open(sess, path, hid, false, &x)) < 0)
		return err;
	buf = size ? g_malloc(size) : NULL;
	n = x.link ? llistxattr(x.path, buf, size) : listxattr(x.path, buf, size);
	err = n < 0 ? -errno : 0;
	if (!err) {
		qt_msg_put_u32(rep, (uint32_t)n);
		qt_msg_put_bytes(rep, buf, size ? (size_t)n : 0);
	}
	close(x.fd);
	return err;
}

static int op_setxattr(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	g_autofree char *path = NULL, *name = NULL;
	struct xattr_at x;
	const uint8_t *val;
	size_t len;
	uint32_t flags;
	uint64_t hid;
	int err;

	if ((err = rd_xattr_path(sess, r, &path, &hid)) < 0 ||
	    (err = qt_rd_strdup(r, QTFS_XATTR_NAME_MAX, &name)) < 0)
		return err;
	qt_rd_bytes(r, QTFS_XATTR_SIZE_MAX, &val, &len);
	qt_rd_u32(r, &flags);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	if ((err = xattr_open(sess, path, hid, true, &x)) < 0)
		return err;
	err = (x.link ? lsetxattr(x.path, name, val, len, (int)flags)
		      : setxattr(x.path, name, val, len, (int)flags)) < 0
		      ? -errno
		      : 0;
	close(x.fd);
	return err;
}

static int op_removexattr(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	g_autofree char *path = NULL, *name = NULL;
	struct xattr_at x;
	uint64_t hid;
	int err;

	if ((err = rd_xattr_path(sess, r, &path, &hid)) < 0 ||
	    (err = qt_rd_strdup(r, QTFS_XATTR_NAME_MAX, &name)) < 0 || (err = qt_rd_end(r)) < 0)
		return err;
	if ((err = xattr_open(sess, path, hid, true, &x)) < 0)
		return err;
	err = (x.link ? lremovexattr(x.path, name) : removexattr(x.path, name)) < 0 ? -errno : 0;
	close(x.fd);
	return err;
}

static int op_fallocate(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	uint64_t hid, off, len;
	uint32_t mode;
	int err;

	qt_rd_u64(r, &hid);
	qt_rd_u32(r, &mode);
	qt_rd_u64(r, &off);
	qt_rd_u64(r, &len);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	if (off > INT64_MAX || len > INT64_MAX)
		return -EINVAL;
	g_autoptr(handle) h = handle_get(sess, hid);
	if (!h)
		return -EBADF;
	return fallocate(h->fd, (int)mode, (off_t)off, (off_t)len) < 0 ? -errno : 0;
}

static int op_lseek(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	uint64_t hid;
	int64_t off;
	uint32_t whence;
	off_t res;
	int err;

	qt_rd_u64(r, &hid);
	qt_rd_i64(r, &off);
	qt_rd_u32(r, &whence);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END && whence != SEEK_DATA &&
	    whence != SEEK_HOLE)
		return -EINVAL;
	g_autoptr(handle) h = handle_get(sess, hid);
	if (!h)
		return -EBADF;
	g_mutex_lock(&h->lock);
	res = lseek(h->fd, (off_t)off, (int)whence);
	err = res < 0 ? -errno : 0;
	/* A directory's next READDIR seeks where it is asked to (op_readdir()). */
	h->rd_at = false;
	g_clear_pointer(&h->rd_left, g_free);
	g_mutex_unlock(&h->lock);
	if (err < 0)
		return err;
	qt_msg_put_i64(rep, res);
	return 0;
}

/*
 * copy_file_range between two host files; across host file systems, a copy
 * loop here, of at most COPY_LOOP_MAX bytes per request so that one request
 * holds a worker for a bounded time.
 */
#define COPY_LOOP_MAX ((uint64_t)64 << 20)
static int op_copy_range(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	uint64_t hin, hout, oin, oout, len;
	uint32_t flags;
	loff_t li, lo;
	ssize_t n;
	int err;

	qt_rd_u64(r, &hin);
	qt_rd_u64(r, &oin);
	qt_rd_u64(r, &hout);
	qt_rd_u64(r, &oout);
	qt_rd_u64(r, &len);
	qt_rd_u32(r, &flags);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	if (oin > INT64_MAX || oout > INT64_MAX)
		return -EINVAL;
	g_autoptr(handle) a = handle_get(sess, hin);
	g_autoptr(handle) b = handle_get(sess, hout);
	if (!a || !b)
		return -EBADF;
	li = (loff_t)oin;
	lo = (loff_t)oout;
	n = copy_file_range(a->fd, &li, b->fd, &lo, len, flags);
	if (n < 0 && (errno == EXDEV || errno == EOPNOTSUPP || errno == ENOSYS)) {
		g_autofree uint8_t *buf = g_malloc(1 << 20);
		uint64_t done = 0;

		/* A short count, as copy_file_range(2) may give: the caller goes on. */
		len = MIN(len, COPY_LOOP_MAX);
		while (done < len) {
			size_t want = MIN(len - done, (uint64_t)(1 << 20));
			ssize_t got = pread(a->fd, buf, want, (off_t)(oin + done));

			if (got < 0)
				return done ? (qt_msg_put_u64(rep, done), 0) : -errno;
			if (got == 0)
				break;
			if (pwrite(b->fd, buf, (size_t)got, (off_t)(oout + done)) != got)
				return done ? (qt_msg_put_u64(rep, done), 0) : -EIO;
			done += (uint64_t)got;
		}
		qt_msg_put_u64(rep, done);
		return 0;
	}
	if (n < 0)
		return -errno;
	qt_msg_put_u64(rep, (uint64_t)n);
	return 0;
}

/*
 * Readiness of a handle: poll(2) on the host descriptor for the events the
 * client's caller asked about, waiting up to wait_ms (capped) for one.  A
 * reply with no events means "not yet": the client asks again.  The
 * client may close the file while its wait is out (the DPU process polled
 * with a timeout, or died): the RELEASE ends the wait (handle_steal()),
 * which answers EINTR.  INTR_SIGNAL stays blocked from the check of
 * h->released to ppoll(), which unblocks it, so a signal sent in between
 * is not lost.
 */
#define POLL_WAIT_MAX_MS 30000

static int op_poll(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	uint64_t hid;
	uint32_t events, wait_ms;
	struct pollfd pfd;
	struct timespec ts;
	sigset_t intr, old;
	bool released;
	int n, err;

	qt_rd_u64(r, &hid);
	qt_rd_u32(r, &events);
	qt_rd_u32(r, &wait_ms);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	g_autoptr(handle) h = handle_get(sess, hid);
	if (!h)
		return -EBADF;
	if (wait_ms && !tl_blocking_ok)
		return DEFER;
	pfd = (struct pollfd){.fd = h->fd, .events = (short)(events & 0xffff)};
	if (!wait_ms || !tl_blocked) {
		do
			n = poll(&pfd, 1, 0);
		while (retry_eintr(n));
		if (n < 0)
			return -errno;
		qt_msg_put_u32(rep, n ? (uint32_t)(unsigned short)pfd.revents : 0);
		return 0;
	}
	intr_sigset(&intr);
	pthread_sigmask(SIG_BLOCK, &intr, &old);
	g_mutex_lock(&sess->lock);
	released = h->released;
	if (!released)
		tl_blocked->poll_hid = hid;
	g_mutex_unlock(&sess->lock);
	ts.tv_sec = MIN(wait_ms, POLL_WAIT_MAX_MS) / 1000;
	ts.tv_nsec = (long)(MIN(wait_ms, POLL_WAIT_MAX_MS) % 1000) * 1000000;
	n = -1;
	errno = EINTR;
	if (!released && !tl_interrupted()) {
		do
			n = ppoll(&pfd, 1, &ts, &old);
		while (retry_eintr(n));
	}
	err = errno;
	g_mutex_lock(&sess->lock);
	tl_blocked->poll_hid = 0;
	g_mutex_unlock(&sess->lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (n < 0)
		return -err;
	qt_msg_put_u32(rep, n ? (uint32_t)(unsigned short)pfd.revents : 0);
	return 0;
}

/* ---- MOUNT --------------------------------------------------------------- */

/* ---- name caching: subscriptions (see "Name caching" at the top) ------- */

static void sub_clear_queue(struct watch_sub *sub)
{
	for (guint i = 0; i < sub->queue->len; i++) {
		g_free(g_array_index(sub->queue, struct watch_ev, i).name);
		g_free(g_array_index(sub->queue, struct watch_ev, i).to_name);
	}
	g_array_set_size(sub->queue, 0);
}

/* Names were lost: the next reply says OVERFLOW instead of naming any.  sub_lock held. */
static void sub_overflow(struct watch_sub *sub)
{
	sub_clear_queue(sub);
	sub->overflow = true;
}

static void sub_free(struct watch_sub *sub)
{
	sub_clear_queue(sub);
	g_array_unref(sub->queue);
	g_hash_table_destroy(sub->dirs);
	g_free(sub);
}

/* Client @client's subscription, made if new, with one more reference. */
static struct watch_sub *sub_get(struct qtfs_srv *srv, uint64_t client)
{
	struct watch_sub *sub;

	g_mutex_lock(&srv->sub_lock);
	sub = g_hash_table_lookup(srv->subs, &client);
	if (!sub) {
		sub = g_new0(struct watch_sub, 1);
		sub->client = client;
		sub->srv = srv;
		sub->queue = g_array_new(FALSE, FALSE, sizeof(struct watch_ev));
		sub->dirs = g_hash_table_new_full(sub_dir_hash, sub_dir_equal, g_free, NULL);
		g_hash_table_insert(srv->subs, &sub->client, sub);
	}
	sub->refs++;
	g_mutex_unlock(&srv->sub_lock);
	return sub;
}

/*
 * Whether another client's subscription has directory @id (any
 * generation).  srv->sub_lock held.
 */
static bool sub_dir_wanted_locked(struct qtfs_srv *srv, const struct qtfs_dirid *id)
{
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, srv->subs);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct sub_dir probe = {.id = *id};

		if (g_hash_table_contains(((struct watch_sub *)v)->dirs, &probe))
			return true;
	}
	return false;
}

/*
 * Drop a session's reference; the last one ends the subscription (nothing
 * is waiting then), and the watches of the directories no other client
 * has: the client is gone, and they would stay until each directory is
 * removed, its inode pinned on the host and counted against max_watches,
 * so that a server whose clients come and go would end up watching
 * nothing new.  Under sub_lock: a session that wants one of them again
 * puts it in its set under that lock, then adds the watch anew.
 */
static void sub_put(struct qtfs_srv *srv, struct watch_sub *sub)
{
	g_mutex_lock(&srv->sub_lock);
	if (--sub->refs == 0) {
		GHashTableIter it;
		gpointer v;

		g_hash_table_remove(srv->subs, &sub->client);
		g_hash_table_iter_init(&it, sub->dirs);
		while (g_hash_table_iter_next(&it, &v, NULL)) {
			const struct sub_dir *d = v;

			if (!sub_dir_wanted_locked(srv, &d->id))
				qtfs_dirwatch_remove(srv->dw, &d->id);
		}
		sub_free(sub);
	}
	g_mutex_unlock(&srv->sub_lock);
}

/*
 * UNWATCH: directories the client forgot (the DPU's kernel dropped them
 * and everything beneath them) leave its set, and are unwatched where no
 * other client's set has them: else a client that walks a large tree
 * over months would hold a watch on every directory it ever looked in,
 * up to client_watches, and cache names nowhere new from then on.  Under
 * sub_lock, as sub_put().  The client orders this against its own calls
 * (proto.h): a directory it looks in again is watched again.
 */
static int op_unwatch(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	struct qtfs_srv *srv = sess->srv;
	g_autofree struct qtfs_dirid *ids = NULL;
	struct watch_sub *sub = sess->sub;
	unsigned dropped = 0;
	uint32_t count;
	int err;

	(void)rep;
	if ((err = qt_rd_u32(r, &count)) < 0)
		return err;
	if (count == 0 || count > QTFS_UNWATCH_MAX)
		return -EBADMSG;
	ids = g_new(struct qtfs_dirid, count);
	for (uint32_t i = 0; i < count; i++) {
		if ((err = qt_rd_u64(r, &ids[i].dev)) < 0 || (err = qt_rd_u64(r, &ids[i].ino)) < 0 ||
		    (err = qt_rd_u64(r, &ids[i].gen)) < 0)
			return err;
	}
	if ((err = qt_rd_end(r)) < 0)
		return err;
	if (!sub)
		return -EPERM; /* not granted: no subscription, as WATCH */
	g_mutex_lock(&srv->sub_lock);
	for (uint32_t i = 0; i < count; i++) {
		struct sub_dir probe = {.id = ids[i]};
		const struct sub_dir *d = g_hash_table_lookup(sub->dirs, &probe);

		/* Another incarnation of the inode number is another directory. */
		if (!d || d->id.gen != ids[i].gen)
			continue;
		g_hash_table_remove(sub->dirs, d);
		dropped++;
		if (!sub_dir_wanted_locked(srv, &ids[i]))
			qtfs_dirwatch_remove(srv->dw, &ids[i]);
	}
	if (dropped)
		sub->full_logged = false;
	g_mutex_unlock(&srv->sub_lock);
	return 0;
}

static int op_mount(struct session *sess, struct qt_rd *r, struct qt_msg *rep)
{
	struct qtfs_srv *srv = sess->srv;
	g_autofree char *want = NULL, *canon = NULL;
	const struct qtfs_export *best = NULL;
	const char *rel;
	uint32_t flags;
	uint64_t client = 0;
	struct stat st;
	int fd, err;

	if ((err = qt_rd_strdup(r, QTFS_PATH_MAX, &want)) < 0)
		return err;
	qt_rd_u32(r, &flags);
	if (flags & QTFS_MNT_WATCH)
		qt_rd_u64(r, &client);
	if ((err = qt_rd_end(r)) < 0)
		return err;
	if (want[0] != '/')
		return -EINVAL;
	canon = g_canonicalize_filename(want, "/");
	for (unsigned i = 0; i < srv->n_exports; i++) {
		const struct qtfs_export *e = &srv->exports[i];

		if (path_has_prefix(canon, e->path) && (!best || strlen(e->path) > strlen(best->path)))
			best = e;
	}
	if (!best) {
		qt_notice("peer %s: MOUNT \"%s\" refused: not inside an export", qt_conn_peer(sess->conn),
			  canon);
		return -EPERM;
	}
	rel = canon + (strcmp(best->path, "/") ? strlen(best->path) : 0);
	while (*rel == '/')
		rel++;
	if (qtfs_path_check(rel, strlen(rel)) < 0)
		return -EINVAL;
	fd = openat2_beneath(best->fd, rel, O_PATH | O_DIRECTORY, 0);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	g_mutex_lock(&sess->lock);
	if (sess->root_fd >= 0) {
		g_mutex_unlock(&sess->lock);
		close(fd);
		return -EALREADY;
	}
	sess->root_fd = fd;
	sess->root_path = g_steal_pointer(&canon);
	sess->ro = best->ro;
	sess->root_pseudo = kind_pseudo(dev_kind(sess->srv, st.st_dev, fd, ""));
	sess->dir_attrs = flags & QTFS_MNT_DIR_ATTRS;
	sess->xattr_fh = flags & QTFS_MNT_XATTR_FH;
	sess->umask = flags & QTFS_MNT_UMASK;
	sess->write_mode = flags & QTFS_MNT_WRITE_MODE;
	if (flags & QTFS_MNT_PIPE_READS)
		sess->splice = true; /* see read_splices() */
	if ((flags & QTFS_MNT_WATCH) && srv->dw && !sess->root_pseudo) {
		sess->sub = sub_get(srv, client);
		if (flags & QTFS_MNT_WATCH_MOVES) {
			g_mutex_lock(&srv->sub_lock);
			sess->sub->moves = true;
			g_mutex_unlock(&srv->sub_lock);
		}
		sess->list_dirs = flags & QTFS_MNT_LIST_DIRS;
	}
	g_mutex_unlock(&sess->lock);
	qt_info("peer %s (%s): mounted \"%s\"%s%s", qt_conn_peer(sess->conn),
		qt_conn_peer_name(sess->conn), sess->root_path, sess->ro ? " read-only" : "",
		sess->splice ? "" : " (TCP from this host: large reads are copied, not spliced)");
	qt_msg_put_u32(rep, (sess->ro ? QTFS_MF_RDONLY : 0) | (sess->dir_attrs ? QTFS_MF_DIR_ATTRS : 0) |
				    (sess->sub ? QTFS_MF_WATCH : 0) | (sess->xattr_fh ? QTFS_MF_XATTR_FH : 0) |
				    (sess->sub && (flags & QTFS_MNT_WATCH_MOVES) ? QTFS_MF_WATCH_MOVES : 0) |
				    (sess->umask ? QTFS_MF_UMASK : 0) |
				    (flags & QTFS_MNT_INSTANCE ? QTFS_MF_INSTANCE : 0) |
				    (sess->list_dirs ? QTFS_MF_LIST_DIRS : 0) |
				    (sess->sub && (flags & QTFS_MNT_UNWATCH) ? QTFS_MF_UNWATCH : 0));
	put_attr_of(sess, rep, &st, fd, "");
	if (flags & QTFS_MNT_INSTANCE)
		qt_msg_put_u64(rep, srv->instance);
	return 0;
}

/* ---- dispatch ------------------------------------------------------------ */

static const op_fn ops[QTFS_OP_MAX - QTFS_MOUNT] = {
	[QTFS_MOUNT - QTFS_MOUNT] = op_mount,
	[QTFS_STATFS - QTFS_MOUNT] = op_statfs,
	[QTFS_LOOKUP - QTFS_MOUNT] = op_lookup,
	[QTFS_GETATTR - QTFS_MOUNT] = op_getattr,
	[QTFS_SETATTR - QTFS_MOUNT] = op_setattr,
	[QTFS_READLINK - QTFS_MOUNT] = op_readlink,
	[QTFS_MKNOD - QTFS_MOUNT] = op_mknod,
	[QTFS_MKDIR - QTFS_MOUNT] = op_mkdir,
	[QTFS_UNLINK - QTFS_MOUNT] = op_unlink,
	[QTFS_RMDIR - QTFS_MOUNT] = op_rmdir,
	[QTFS_SYMLINK - QTFS_MOUNT] = op_symlink,
	[QTFS_RENAME - QTFS_MOUNT] = op_rename,
	[QTFS_LINK - QTFS_MOUNT] = op_link,
	[QTFS_OPEN - QTFS_MOUNT] = op_open,
	[QTFS_CREATE - QTFS_MOUNT] = op_create,
	[QTFS_READ - QTFS_MOUNT] = op_read,
	[QTFS_WRITE - QTFS_MOUNT] = op_write,
	[QTFS_RELEASE - QTFS_MOUNT] = op_release,
	[QTFS_FSYNC - QTFS_MOUNT] = op_fsync,
	[QTFS_OPENDIR - QTFS_MOUNT] = op_opendir,
	[QTFS_READDIR - QTFS_MOUNT] = op_readdir,
	[QTFS_ACCESS - QTFS_MOUNT] = op_access,
	[QTFS_GETXATTR - QTFS_MOUNT] = op_getxattr,
	[QTFS_SETXATTR - QTFS_MOUNT] = op_setxattr,
	[QTFS_LISTXATTR - QTFS_MOUNT] = op_listxattr,
	[QTFS_REMOVEXATTR - QTFS_MOUNT] = op_removexattr,
	[QTFS_FALLOCATE - QTFS_MOUNT] = op_fallocate,
	[QTFS_LSEEK - QTFS_MOUNT] = op_lseek,
	[QTFS_COPY_RANGE - QTFS_MOUNT] = op_copy_range,
	[QTFS_FLUSH - QTFS_MOUNT] = op_flush,
	[QTFS_POLL - QTFS_MOUNT] = op_poll,
	[QTFS_SETLK - QTFS_MOUNT] = op_setlk,
	[QTFS_GETLK - QTFS_MOUNT] = op_getlk,
	[QTFS_UNWATCH - QTFS_MOUNT] = op_unwatch,
};

static void deliver(void *arg)
{
	struct job *j = arg;

	if (j->lazy)
		qt_conn_reply_lazy(j->sess->conn, j->reply);
	else
		qt_conn_reply(j->sess->conn, j->reply);
	session_unref(j->sess);
	g_free(j);
}

/* ---- name caching: WATCH requests and events ---------------------------- */

/* A directory's identity in a WATCH name: u64 dev, ino, gen. */
static void put_dirid(struct qt_msg *rep, const struct qtfs_dirid *id)
{
	qt_msg_put_u64(rep, id->dev);
	qt_msg_put_u64(rep, id->ino);
	qt_msg_put_u64(rep, id->gen);
}

/*
 * Turn the held WATCH @j into its reply: @flags, and the queued names if
 * @events (a replaced request gets none: its connection may be going).
 * sub_lock held; deliver() it after unlocking.
 */
static void watch_answer(struct watch_sub *sub, struct job *j, uint32_t flags, bool events)
{
	struct qt_msg *rep = qt_msg_new_reply(j->req, QTFS_WATCH);
	guint n = 0;

	if (events) {
		if (sub->overflow)
			flags |= QTFS_WF_OVERFLOW;
		if (!(flags & (QTFS_WF_START | QTFS_WF_OVERFLOW)))
			n = sub->queue->len;
		sub->overflow = false;
	}
	qt_msg_put_u32(rep, flags);
	qt_msg_put_u64(rep, ++sub->seq);
	qt_msg_put_u32(rep, n);
	for (guint i = 0; i < n; i++) {
		const struct watch_ev *ev = &g_array_index(sub->queue, struct watch_ev, i);

		put_dirid(rep, &ev->dir);
		qt_msg_put_u8(rep, (ev->is_dir ? QTFS_WN_DIR : 0) | (ev->is_new ? QTFS_WN_NEW : 0) |
					   (ev->moved ? QTFS_WN_MOVED : 0));
		qt_msg_put_bytes(rep, ev->name, strlen(ev->name));
		if (ev->moved) {
			put_dirid(rep, &ev->to_dir);
			qt_msg_put_bytes(rep, ev->to_name, strlen(ev->to_name));
			put_dirid(rep, &ev->self);
		}
	}
	if (events) {
		sub_clear_queue(sub);
		sub->sync = false;
	}
	qt_msg_free(j->req);
	j->req = NULL;
	j->reply = rep;
}

/* The held WATCH of @sub, taken out (its timer cancelled); NULL if none.  sub_lock held. */
static struct job *watch_take(struct watch_sub *sub)
{
	struct job *j = sub->waiting;

	sub->waiting = NULL;
	qt_timer_cancel(sub->timer);
	sub->timer = NULL;
	sub->flushing = false;
	return j;
}

static void watch_expired(void *arg)
{
	struct watch_sub *sub = arg;
	struct qtfs_srv *srv = sub->srv;
	struct job *j;

	g_mutex_lock(&srv->sub_lock);
	sub->timer = NULL; /* fired */
	j = watch_take(sub);
	watch_answer(sub, j, 0, true);
	g_mutex_unlock(&srv->sub_lock);
	deliver(j);
}

/*
 * Names were queued for @sub: answer its held WATCH now, or shortly (see
 * WATCH_COALESCE_MS).  The answered request, to deliver() after unlocking,
 * or NULL.  sub_lock held.
 */
static struct job *watch_soon(struct watch_sub *sub)
{
	struct job *j;

	if (!sub->waiting || (!sub->queue->len && !sub->overflow))
		return NULL;
	if (sub->overflow || sub->sync || sub->queue->len >= QTFS_WATCH_BATCH_MAX / 2) {
		j = watch_take(sub);
		watch_answer(sub, j, 0, true);
		return j;
	}
	if (!sub->flushing) {
		qt_timer_cancel(sub->timer);
		sub->timer = qt_timer_add(sub->srv->loop, WATCH_COALESCE_MS, watch_expired, sub);
		sub->flushing = true;
	}
	return NULL;
}

/*
 * WATCH and WATCH_SYNC: @err from reading the request, else a session
 * without a subscription is refused.  0, or the error @j was answered
 * with.
 */
static int watch_check(struct session *sess, struct job *j, int err)
{
	if (err == 0 && (sess->refused || !sess->sub))
		err = sess->refused ? -EACCES : -EPERM; /* not MOUNTed with QTFS_MNT_WATCH */
	if (err < 0) {
		j->reply = qt_msg_new_error(j->req, -err);
		qt_msg_free(g_steal_pointer(&j->req));
		deliver(j);
	}
	return err;
}

/* WATCH, on the loop thread: answer now, or hold it until there is news. */
static void watch_request(struct session *sess, struct job *j)
{
	struct qtfs_srv *srv = sess->srv;
	struct watch_sub *sub = sess->sub;
	struct job *old = NULL;
	uint32_t wait_ms = 0;
	struct qt_rd r;

	qt_rd_init_msg(&r, j->req);
	qt_rd_u32(&r, &wait_ms);
	if (watch_check(sess, j, qt_rd_end(&r)) < 0)
		return;
	wait_ms = MIN(wait_ms, QTFS_WATCH_WAIT_MAX_MS);
	g_mutex_lock(&srv->sub_lock);
	/* A newer WATCH of the client replaces a held one (its connection may be gone). */
	if ((old = watch_take(sub)))
		watch_answer(sub, old, 0, false);
	if (!g_atomic_int_get(&sub->started)) {
		g_atomic_int_set(&sub->started, 1);
		sub->overflow = false;
		watch_answer(sub, j, QTFS_WF_START, true);
	} else if (!wait_ms) {
		watch_answer(sub, j, 0, true);
	} else {
		sub->waiting = j;
		sub->timer = qt_timer_add(srv->loop, wait_ms, watch_expired, sub);
		j = watch_soon(sub);
	}
	g_mutex_unlock(&srv->sub_lock);
	if (old)
		deliver(old);
	if (j)
		deliver(j);
}

/*
 * WATCH_SYNC, on the loop thread: take in every event the kernel has
 * queued, send what concerns the client now, and answer with the number
 * of the WATCH reply that carries (or carried) the last of it.  The
 * client waits for that reply to be taken in: whatever the host did
 * before the WATCH_SYNC is then known to its kernel.  A change made
 * before is queued by inotify before its system call returns.  A drain
 * that could not empty the kernel's queue counts as an overflow: the
 * client then expires everything, which is a barrier too.
 */
static void watch_sync(struct session *sess, struct job *j)
{
	struct qtfs_srv *srv = sess->srv;
	struct watch_sub *sub = sess->sub;
	struct job *now = NULL;
	bool drained;
	uint64_t seq;

	if (watch_check(sess, j, qt_msg_payload_len(j->req) ? -EBADMSG : 0) < 0)
		return;
	drained = qtfs_dirwatch_drain(srv->dw);
	g_mutex_lock(&srv->sub_lock);
	if (!drained)
		sub_overflow(sub); /* events from before the request may still be in the kernel */
	if (!sub->queue->len && !sub->overflow) {
		seq = sub->seq;
	} else if (sub->waiting) {
		now = watch_take(sub);
		watch_answer(sub, now, 0, true);
		seq = sub->seq;
	} else {
		/* The client's next WATCH is on its way: it gets the queue at once. */
		sub->sync = true;
		seq = sub->seq + 1;
	}
	g_mutex_unlock(&srv->sub_lock);
	if (now)
		deliver(now);
	j->reply = qt_msg_new_reply(j->req, QTFS_WATCH_SYNC);
	qt_msg_put_u64(j->reply, seq);
	qt_msg_free(g_steal_pointer(&j->req));
	deliver(j);
}

/* A connection ends: a WATCH it carried is dropped, unanswered. */
static void watch_conn_closed(struct session *sess)
{
	struct job *j = NULL;

	if (!sess->sub)
		return;
	g_mutex_lock(&sess->srv->sub_lock);
	if (sess->sub->waiting && sess->sub->waiting->sess == sess)
		j = watch_take(sess->sub);
	g_mutex_unlock(&sess->srv->sub_lock);
	if (j) {
		qt_msg_free(j->req);
		session_unref(j->sess);
		g_free(j);
	}
}

/* dirwatch.c's events, on the loop thread: into the queue of each subscription they concern. */
static void watch_event(void *arg, const struct qtfs_dirwatch_event *ev)
{
	struct qtfs_srv *srv = arg;
	g_autoptr(GPtrArray) ready = g_ptr_array_new();
	GHashTableIter it;
	gpointer v;

	g_mutex_lock(&srv->sub_lock);
	g_hash_table_iter_init(&it, srv->subs);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct watch_sub *sub = v;
		struct watch_ev e;

		if (!g_atomic_int_get(&sub->started))
			continue;
		switch (ev->kind) {
		case QTFS_DW_GONE:
			if (sub_dir_what(sub, &ev->dir)) {
				struct sub_dir probe = {.id = ev->dir};

				g_hash_table_remove(sub->dirs, &probe);
			}
			break;
		case QTFS_DW_NAME: {
			int what = sub_dir_what(sub, &ev->dir);

			/* A new name only where the client keeps every name. */
			if (sub->overflow || what < (ev->is_new ? DIR_NEW : DIR_NAMES))
				break;
			if (sub->queue->len >= QTFS_WATCH_BATCH_MAX) {
				sub_overflow(sub);
				break;
			}
			e.dir = ev->dir;
			e.name = g_strndup(ev->name, ev->len);
			e.is_dir = ev->is_dir;
			e.is_new = ev->is_new;
			e.moved = ev->moved && sub->moves;
			e.to_dir = ev->to_dir;
			e.self = ev->self;
			e.to_name = e.moved ? g_strdup(ev->to_name) : NULL;
			g_array_append_val(sub->queue, e);
			break;
		}
		case QTFS_DW_OVERFLOW:
			sub_overflow(sub);
			break;
		case QTFS_DW_BATCH_END: {
			struct job *j = watch_soon(sub);

			if (j)
				g_ptr_array_add(ready, j);
			break;
		}
		}
	}
	g_mutex_unlock(&srv->sub_lock);
	for (guint i = 0; i < ready->len; i++)
		deliver(g_ptr_array_index(ready, i));
}

struct park {
	struct session *sess;
	uint64_t id;
};

static void park_on_loop(void *arg)
{
	struct park *p = arg;

	if (!g_atomic_int_get(&p->sess->closed))
		qt_conn_park(p->sess->conn, p->id);
	session_unref(p->sess);
	g_free(p);
}

/*
 * Request @id goes to the blocking pool, where it may wait for as long as
 * a FIFO or a lock does: on the loop thread, take it out of the
 * connection's max_inflight (qt_conn_park), so that a client with many
 * such calls waiting still gets its other requests read.  Its reply,
 * posted later, finds it parked or, if first, answered already.
 */
static void park_later(struct session *sess, uint64_t id)
{
	struct park *p = g_new(struct park, 1);

	p->sess = session_ref(sess);
	p->id = id;
	qt_loop_post(sess->srv->loop, park_on_loop, p);
}

/* Where run_job runs: the user data of each pool, or inline on the loop thread. */
enum { RUN_POOL = 0, RUN_BLOCKING = 1, RUN_INLINE = 2 };

static void run_job(gpointer data, gpointer user)
{
	int where = GPOINTER_TO_INT(user);
	struct job *j = data;
	struct session *sess = j->sess;
	uint16_t type = qt_msg_type(j->req);
	op_fn fn = type >= QTFS_MOUNT && type < QTFS_OP_MAX ? ops[type - QTFS_MOUNT] : NULL;
	struct qt_msg *rep = qt_msg_new_reply(j->req, type);
	struct blocked blk;
	struct qt_rd r;
	bool mounted;
	int err;

	g_mutex_lock(&sess->lock);
	mounted = sess->root_fd >= 0;
	g_mutex_unlock(&sess->lock);

	tl_blocking_ok = where == RUN_BLOCKING;
	tl_cached_only = where == RUN_INLINE && !sess->root_pseudo;
	if (where == RUN_BLOCKING)
		blocked_enter(sess, qt_msg_id(j->req), &blk);
	qt_rd_init_msg(&r, j->req);
	if (sess->refused)
		err = -EACCES;
	else if (g_atomic_int_get(&sess->closed))
		err = -ECONNABORTED; /* nobody to answer: not run */
	else if (!fn)
		err = -ENOSYS;
	else if (!mounted && type != QTFS_MOUNT)
		err = -EPERM;
	else if (mounted && sess->ro && qtfs_op_writes(type))
		err = -EROFS;
	else
		err = fn(sess, &r, rep);
	if (where == RUN_BLOCKING)
		blocked_leave(sess, qt_msg_id(j->req));
	if (err == DEFER) {
		/* Run it again where it may block (see tl_blocking_ok). */
		qt_msg_free(rep);
		if (where != RUN_INLINE)
			park_later(sess, qt_msg_id(j->req));
		g_thread_pool_push(where == RUN_INLINE ? sess->srv->pool : sess->srv->blocking, j, NULL);
		return;
	}
	if (err == 0 && rep->err)
		err = rep->err;
	if (err < 0) {
		qt_msg_free(rep);
		rep = qt_msg_new_error(j->req, -err);
		qt_debug("peer %s: %s: %s", qt_conn_peer(sess->conn), qtfs_op_name(type), g_strerror(-err));
	}
	qt_msg_free(j->req);
	j->req = NULL;
	j->reply = rep;
	if (where == RUN_INLINE)
		deliver(j);
	else
		qt_loop_post(sess->srv->loop, deliver, j);
}

/* What the pools run: a request, or a session's last reference (session_unref). */
static void pool_job(gpointer data, gpointer user)
{
	struct job *j = data;

	if (!j->req) {
		session_free(j->sess);
		g_free(j);
		return;
	}
	run_job(data, user);
}

/*
 * Requests answered from the dentry and inode caches in a few microseconds
 * run on the loop thread itself: handing them to a worker and back costs
 * two thread wake-ups, several times the work (on a 2-vCPU VM about
 * 100 us a round trip).  Their paths resolve from the dentry cache only
 * (tl_cached_only): a path not all there, a truncating open, and an open
 * that would wait for a lease go to the worker pool instead (DEFER).
 * What may still touch the disk here: the body of a long symlink, an
 * extended attribute kept outside the inode, and on a network file
 * system the attributes themselves.  An OPEN of a pseudo file also reads
 * its first bytes here (put_prefetch()); a /proc/PID file may wait
 * briefly for that process's memory map lock.  inline_metadata=false in
 * the configuration turns all of this off.
 */
static bool runs_inline(const struct qtfs_srv *srv, uint16_t type)
{
	if (!srv->inline_meta)
		return false;
	switch (type) {
	case QTFS_LOOKUP:
	case QTFS_GETATTR:
	case QTFS_STATFS:
	case QTFS_READLINK:
	case QTFS_ACCESS:
	case QTFS_FLUSH:
	case QTFS_GETXATTR:
	case QTFS_LISTXATTR:
	case QTFS_OPEN:
		return true;
	default:
		return false;
	}
}

/*
 * File operations on the loop's io_uring.  With the io_uring loop, READ,
 * WRITE, FSYNC and FALLOCATE on open files and CREATE, UNLINK, RMDIR,
 * MKDIR, SYMLINK, RENAME and LINK never go to a worker: the loop thread checks the request (handle, export,
 * whitelist; the parent directory is resolved there like an inline
 * lookup), hands the system call to the kernel (qt_fop_*()), and answers
 * from the completion.  A read from the page cache completes inside the
 * submission; what must wait for a disk waits in the kernel's workers,
 * never in the loop thread.  Anything else (FIFO handles, writes that
 * must clear set-id bits, the epoll loop, ring_file_ops=false) takes the
 * ordinary path: ring_start() returns false and run_job() does it all,
 * errors included.
 */
struct ring_job {
	struct job *j;
	struct qt_msg *rep;
	struct handle *h; /* reference held while in flight */
	struct at at, at2; /* path operations: the (first) name, the second name */
	bool has_at, has_at2;
	struct caller caller; /* MKDIR, SYMLINK, CREATE */
	uint32_t wflags;   /* MKDIR, SYMLINK, CREATE, LINK: watch_dir() of the new name's directory */
	char *target;	   /* SYMLINK */
	uint32_t flags;	   /* CREATE: the client's open flags; RENAME: its rename flags */
	uint32_t added;	   /* RENAME: wl_check_rename()'s flags */
	unsigned tries;	   /* RENAME: rename_again()'s count */
	struct open_how how; /* CREATE */
	size_t len_at; /* READ: where the length goes */
	uint32_t size; /* READ: bytes reserved (asked for, when spliced) */
	uint64_t off;  /* READ, spliced: the file offset asked for */
	uint32_t done; /* READ, spliced: bytes in the pipe so far */
	struct qt_pipe *pipe; /* READ, spliced: until the reply owns it */
	int (*finish)(struct ring_job *rj, int res);
};

static void ring_end(struct ring_job *rj, int err)
{
	struct job *j = rj->j;
	uint16_t type = qt_msg_type(j->req);

	if (err == 0) {
		switch (type) {
		case QTFS_RENAME:
			put_dir_attr(j->sess, rj->rep, &rj->at);
			put_dir_attr(j->sess, rj->rep, &rj->at2);
			break;
		case QTFS_LINK:
			put_dir_attr(j->sess, rj->rep, &rj->at2);
			break;
		case QTFS_UNLINK:
		case QTFS_RMDIR:
		case QTFS_MKDIR:
		case QTFS_SYMLINK:
		case QTFS_CREATE:
			put_dir_attr(j->sess, rj->rep, &rj->at);
			break;
		default:
			break;
		}
	}
	if (err < 0) {
		qt_msg_free(rj->rep);
		rj->rep = qt_msg_new_error(j->req, -err);
		qt_debug("peer %s: %s: %s", qt_conn_peer(j->sess->conn), qtfs_op_name(type),
			 g_strerror(-err));
	}
	qt_msg_free(j->req);
	j->req = NULL;
	j->reply = rj->rep;
	/* The client waits for no RELEASE: its answer can go out with the next. */
	j->lazy = type == QTFS_RELEASE;
	if (rj->h)
		handle_unref(rj->h);
	qt_pipe_put(rj->pipe);
	if (rj->has_at)
		at_clear(&rj->at);
	if (rj->has_at2)
		at_clear(&rj->at2);
	g_free(rj->target);
	g_free(rj);
	deliver(j);
}

static void ring_done(void *arg, int res)
{
	struct ring_job *rj = arg;

	ring_end(rj, res < 0 ? res : rj->finish ? rj->finish(rj, res) : 0);
}

static int ring_read_finish(struct ring_job *rj, int res)
{
	rj->rep->len -= rj->size - (size_t)res;
	return qt_msg_patch_u32(rj->rep, rj->len_at, (uint32_t)res);
}

/*
 * A spliced READ: a short count before the end of the file asks for the
 * rest (the client takes a short reply for the end of the file), then the
 * pipe becomes the reply's tail.
 */
static void ring_splice_done(void *arg, int res)
{
	struct ring_job *rj = arg;
	struct qt_loop *l = rj->j->sess->srv->loop;

	if (res > 0) {
		rj->done += (uint32_t)res;
		if (rj->done < rj->size && qt_fop_splice(l, rj->h->fd, rj->off + rj->done, rj->pipe,
							 rj->size - rj->done, ring_splice_done, rj) == 0)
			return;
	}
	if (res < 0 && rj->done == 0) {
		ring_end(rj, res);
		return;
	}
	qt_msg_patch_u32(rj->rep, rj->len_at, rj->done);
	qt_msg_set_pipe_tail(rj->rep, g_steal_pointer(&rj->pipe), rj->done);
	ring_end(rj, 0);
}

static int ring_write_finish(struct ring_job *rj, int res)
{
	qt_msg_put_u32(rj->rep, (uint32_t)res);
	return 0;
}

/* MKDIR, SYMLINK: the new name gets the caller's ownership, then the reply its attributes. */
static int ring_made_finish(struct ring_job *rj, int res)
{
	return answer_made(rj->j->sess, &rj->at, rj->caller.uid, rj->caller.gid, rj->wflags, rj->rep);
}

/*
 * CREATE: the file was made (give it the caller's ownership and register
 * the handle), or it exists and the client did not ask for O_EXCL: then
 * the worker path opens it (op_create() does it all again, races included).
 */
static void ring_create_done(void *arg, int res)
{
	struct ring_job *rj = arg;
	struct job *j = rj->j;

	if (res == -EEXIST && !(rj->flags & O_EXCL)) {
		qt_msg_free(rj->rep);
		at_clear(&rj->at);
		g_free(rj);
		g_thread_pool_push(j->sess->srv->pool, j, NULL);
		return;
	}
	ring_end(rj, res < 0 ? res
			     : answer_created(j->sess, &rj->at, res, rj->caller.uid, rj->caller.gid,
					      (int)rj->flags, rj->wflags, rj->rep));
}

/* LINK: the reply is the new name's attributes. */
static int ring_link_finish(struct ring_job *rj, int res)
{
	return put_at_attr(rj->j->sess, &rj->at2, rj->wflags, rj->rep);
}

/* RENAME: made again on the ring where a target appeared meanwhile (rename_again()). */
static void ring_rename_done(void *arg, int res)
{
	struct ring_job *rj = arg;
	struct session *sess = rj->j->sess;

	if (rename_again(sess, &rj->at, &rj->at2, rj->flags, &rj->added, &rj->tries, &res) &&
	    (res = qt_fop_renameat(sess->srv->loop, rj->at.dirfd, rj->at.name, rj->at2.dirfd,
				   rj->at2.name, rj->flags | rj->added, ring_rename_done, rj)) == 0)
		return;
	ring_done(rj, res);
}

/*
 * Namespace changes (create, unlink, rmdir, mkdir, symlink, rename, link):
 * io_uring makes each on one of its kernel workers, a thread wake-up each
 * way that costs more than the change itself on a 2-vCPU VM (creates on
 * an ext4 export, one after another: a tenth of their time).  So the loop
 * thread makes them itself:
 *   - on a memory file system (tmpfs, ramfs: the container runtimes'
 *     state under /run), where nothing waits for a disk;
 *   - on a local disk (a file system neither pseudo, memory nor shared)
 *     with inline_metadata on.  A change there may wait for the disk (an
 *     inode table block to read, a full journal) while every connection
 *     waits for the loop: one that took longer than NS_HERE_SLOW_US
 *     sends all of them to the workers for NS_HERE_PAUSE_US.  (Wall
 *     time: a loop thread preempted that long on a busy host counts too,
 *     and pauses a while for nothing.)
 * Never on a network or cluster file system, whose server may not answer.
 */
#define NS_HERE_SLOW_US 20000
#define NS_HERE_PAUSE_US G_USEC_PER_SEC

static bool ns_here(struct session *sess, struct at *a)
{
	struct qtfs_srv *srv = sess->srv;
	const struct stat *st = at_dir_stat(a);
	enum dev_kind kind = st ? dev_kind(srv, st->st_dev, a->dirfd, "") : DEV_SHARED;

	return kind == DEV_MEMORY || (kind == DEV_PLAIN && srv->inline_meta &&
				      g_get_monotonic_time() >= srv->ns_here_after);
}

/* The loop made a namespace change, begun at @t0: was it slow? */
static void ns_here_took(struct session *sess, uint16_t type, gint64 t0)
{
	gint64 now = g_get_monotonic_time();

	if (now - t0 <= NS_HERE_SLOW_US)
		return;
	sess->srv->ns_here_after = now + NS_HERE_PAUSE_US;
	qt_info("a %s took %.1f ms on the event loop: namespace changes on disks go to "
		"io_uring's workers for %d s",
		qtfs_op_name(type), (double)(now - t0) / 1000.0, NS_HERE_PAUSE_US / G_USEC_PER_SEC);
}

/*
 * Except where the call frees a large file's pages or blocks: the unlink
 * (or the close, once unlinked) that drops a tmpfs file takes time with
 * its size (2 GiB: about 90 ms here), and so does freeing a large file's
 * extents on a disk, which every connection would wait for.  Past this
 * size the loop thread leaves it to io_uring or the pool.
 */
#define MEMORY_FREE_MAX_BLOCKS ((64u << 20) / 512)

/* Would unlinking @name in @dirfd free a large file? */
static bool unlink_frees_much(int dirfd, const char *name)
{
	struct stat st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	       st.st_nlink <= 1 && (uint64_t)st.st_blocks > MEMORY_FREE_MAX_BLOCKS;
}

/* Would closing @fd free a large (unlinked) file? */
static bool close_frees_much(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 0 &&
	       (uint64_t)st.st_blocks > MEMORY_FREE_MAX_BLOCKS;
}

/* Resolve @path into rj->at and check it for @op, as the worker path does. */
static int ring_at(struct session *sess, struct ring_job *rj, const char *path, enum qtfs_wl_op op)
{
	int err = at_resolve_wl(sess, path, op, &rj->at);

	rj->has_at = err == 0;
	return err;
}

/* Undo ring_at() for a request that goes to the pool after all. */
static void ring_at_drop(struct ring_job *rj)
{
	at_clear(&rj->at);
	rj->has_at = false;
}

/*
 * Whether the loop thread may apply the caller's umask to @mode in @a's
 * directory (caller_mode()) itself: when the umask changes nothing, or the
 * look for the directory's default ACL waits for no other machine (not on
 * a network file system, where a getxattr is a request to its server).
 */
static bool caller_mode_here(struct session *sess, struct at *a, uint32_t mode,
			     const struct caller *c)
{
	const struct stat *st;

	if (!(mode & c->umask & 0777))
		return true;
	st = at_dir_stat(a);
	return st && dev_kind(sess->srv, st->st_dev, a->dirfd, "") != DEV_SHARED;
}

/* The open, non-FIFO file handle @hid, or NULL (the ordinary path then answers). */
static struct handle *ring_handle(struct session *sess, uint64_t hid)
{
	struct handle *h = handle_get(sess, hid);

	if (h && (h->dir || h->stream)) {
		handle_unref(h);
		return NULL;
	}
	return h;
}

/* Parse and submit; false: not for the ring, run_job() will do it. */
static bool ring_submit(struct session *sess, struct ring_job *rj, uint16_t type, struct qt_rd *r)
{
	struct qt_loop *l = sess->srv->loop;
	uint64_t hid, off, len;
	uint32_t u, gid;
	const uint8_t *data;
	size_t n;
	uint8_t *p;

	switch (type) {
	case QTFS_READ:
		qt_rd_u64(r, &hid);
		qt_rd_u64(r, &off);
		qt_rd_u32(r, &u);
		if (qt_rd_end(r) < 0 || u > QTFS_IO_MAX || off > INT64_MAX || !(rj->h = ring_handle(sess, hid)))
			return false;
		rj->size = u;
		rj->len_at = qt_msg_payload_len(rj->rep);
		if (read_splices(sess, rj->h, off, u) && (rj->pipe = qt_pipe_get())) {
			qt_msg_put_u32(rj->rep, 0);
			rj->off = off;
			return qt_fop_splice(l, rj->h->fd, off, rj->pipe, u, ring_splice_done, rj) == 0;
		}
		if (!(p = qt_msg_reserve(rj->rep, 4 + (size_t)u)))
			return false;
		rj->finish = ring_read_finish;
		return qt_fop_read(l, rj->h->fd, p + 4, u, off, ring_done, rj) == 0;
	case QTFS_WRITE:
		qt_rd_u64(r, &hid);
		qt_rd_u64(r, &off);
		qt_rd_u32(r, &u);
		qt_rd_u32(r, &gid);
		qt_rd_bytes(r, QTFS_IO_MAX, &data, &n);
		/*
		 * An unprivileged writer's write also clears set-id bits, and
		 * one whose append mode is not its descriptor's changes that:
		 * the pool does those.
		 */
		if (qt_rd_end(r) < 0 || off > INT64_MAX || (u & QTFS_WR_KILL_PRIV) ||
		    !(rj->h = ring_handle(sess, hid)) || write_mode_differs(sess, rj->h, u))
			return false;
		rj->finish = ring_write_finish;
		return qt_fop_write(l, rj->h->fd, data, (unsigned)n, off, ring_done, rj) == 0;
	case QTFS_FSYNC:
		qt_rd_u64(r, &hid);
		qt_rd_u32(r, &u);
		if (qt_rd_end(r) < 0 || !(rj->h = ring_handle(sess, hid)))
			return false;
		return qt_fop_fsync(l, rj->h->fd, u != 0, ring_done, rj) == 0;
	case QTFS_FALLOCATE:
		qt_rd_u64(r, &hid);
		qt_rd_u32(r, &u);
		qt_rd_u64(r, &off);
		qt_rd_u64(r, &len);
		if (qt_rd_end(r) < 0 || off > INT64_MAX || len > INT64_MAX ||
		    !(rj->h = ring_handle(sess, hid)))
			return false;
		return qt_fop_fallocate(l, rj->h->fd, (int)u, off, len, ring_done, rj) == 0;
	case QTFS_UNLINK:
	case QTFS_RMDIR: {
		g_autofree char *path = NULL;
		bool dir = type == QTFS_RMDIR;
		int err;

		if (rd_path(r, &path) < 0 || qt_rd_end(r) < 0 || !*path)
			return false;
		if ((err = ring_at(sess, rj, path, dir ? QTFS_WL_RMDIR : QTFS_WL_UNLINK)) == DEFER)
			return false;
		if (err == 0 && ns_here(sess, &rj->at) &&
		    (dir || !unlink_frees_much(rj->at.dirfd, rj->at.name))) {
			gint64 t0 = g_get_monotonic_time();
			int rc = unlinkat(rj->at.dirfd, rj->at.name, dir ? AT_REMOVEDIR : 0) < 0 ? -errno : 0;

			ns_here_took(sess, type, t0);
			ring_done(rj, rc);
		} else if (err < 0 ||
			   (err = qt_fop_unlinkat(l, rj->at.dirfd, rj->at.name, dir ? AT_REMOVEDIR : 0,
						  ring_done, rj)) < 0) {
			ring_end(rj, err);
		}
		return true;
	}
	case QTFS_MKDIR:
	case QTFS_SYMLINK: {
		g_autofree char *path = NULL;
		bool dir = type == QTFS_MKDIR;
		int err;

		if (rd_path(r, &path) < 0)
			return false;
		if (dir)
			qt_rd_u32(r, &u);
		else if (qt_rd_strdup(r, QTFS_SYMLINK_MAX, &rj->target) < 0)
			return false;
		rd_caller(sess, r, &rj->caller);
		if (qt_rd_end(r) < 0 || !*path)
			return false;
		rj->finish = ring_made_finish;
		if ((err = ring_at(sess, rj, path, dir ? QTFS_WL_MKDIR : QTFS_WL_CREATE)) == DEFER)
			return false;
		if (err == 0 && dir && !caller_mode_here(sess, &rj->at, u & 07777, &rj->caller)) {
			ring_at_drop(rj);
			return false;
		}
		if (err == 0) {
			rj->wflags = watch_dir(sess, &rj->at);
			if (dir)
				u = caller_mode(&rj->at, u & 07777, &rj->caller);
		}
		if (err == 0 && ns_here(sess, &rj->at)) {
			gint64 t0 = g_get_monotonic_time();
			int rc = (dir ? mkdirat(rj->at.dirfd, rj->at.name, u & 07777)
				      : symlinkat(rj->target, rj->at.dirfd, rj->at.name)) < 0
					 ? -errno
					 : 0;

			ns_here_took(sess, type, t0);
			ring_done(rj, rc);
		} else if (err < 0 ||
			   (err = dir ? qt_fop_mkdirat(l, rj->at.dirfd, rj->at.name, u & 07777, ring_done,
						       rj)
				      : qt_fop_symlinkat(l, rj->target, rj->at.dirfd, rj->at.name,
							 ring_done, rj)) < 0) {
			ring_end(rj, err);
		}
		return true;
	}
	case QTFS_CREATE: {
		g_autofree char *path = NULL;
		int err;

		if (rd_path(r, &path) < 0)
			return false;
		qt_rd_u32(r, &rj->flags);
		qt_rd_u32(r, &u);
		rd_caller(sess, r, &rj->caller);
		if (qt_rd_end(r) < 0 || !*path)
			return false;
		/* Always exclusive, as in op_create(). */
		rj->how = (struct open_how){
			.flags = (uint64_t)(((int)rj->flags & OPEN_FLAGS_OK & ~O_DIRECTORY) | O_CREAT |
					    O_EXCL | O_NOFOLLOW | O_CLOEXEC),
			.mode = u & 07777,
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
		};
		if ((err = ring_at(sess, rj, path, QTFS_WL_CREATE)) == DEFER)
			return false;
		/* The handle as op_create() judges it; ring_end() drops rj->at on an error. */
		if (err == 0)
			err = check_open(sess, rj->at.dirfd, rj->at.name,
					 (int)rj->flags & ~O_DIRECTORY);
		if (err == 0 && !caller_mode_here(sess, &rj->at, u & 07777, &rj->caller)) {
			ring_at_drop(rj);
			return false;
		}
		if (err == 0) {
			rj->wflags = watch_dir(sess, &rj->at);
			rj->how.mode = caller_mode(&rj->at, u & 07777, &rj->caller);
		}
		if (err == 0 && ns_here(sess, &rj->at)) {
			gint64 t0 = g_get_monotonic_time();
			long fd = syscall(SYS_openat2, rj->at.dirfd, rj->at.name, &rj->how, sizeof(rj->how));
			int rc = fd < 0 ? -errno : (int)fd;

			ns_here_took(sess, type, t0);
			ring_create_done(rj, rc);
		} else if (err < 0 ||
			   (err = qt_fop_openat2(l, rj->at.dirfd, rj->at.name, &rj->how, ring_create_done,
						 rj)) < 0) {
			ring_end(rj, err);
		}
		return true;
	}
	case QTFS_RENAME:
	case QTFS_LINK: {
		g_autofree char *from = NULL, *to = NULL;
		bool link = type == QTFS_LINK;
		int err;

		if (rd_path(r, &from) < 0 || rd_path(r, &to) < 0)
			return false;
		if (!link)
			qt_rd_u32(r, &u);
		if (qt_rd_end(r) < 0 || !*from || !*to || (!link && (u & ~RENAME_FLAGS_OK)))
			return false;
		if ((err = at_resolve_pair(sess, from, to, &rj->at, &rj->at2)) == DEFER)
			return false;
		if (err == 0) {
			rj->has_at = rj->has_at2 = true;
			err = wl_check_pair(sess, link, &rj->at, &rj->at2);
		}
		if (err == 0 && !link) {
			rj->flags = u;
			err = wl_check_rename(sess, &rj->at, &rj->at2, u, &rj->added);
			u |= rj->added;
		}
		if (err == 0) {
			/* LINK names the new file; RENAME moves cached names (see op_rename()). */
			if (!link)
				watch_dir(sess, &rj->at);
			rj->wflags = watch_dir(sess, &rj->at2);
			rj->finish = link ? ring_link_finish : NULL;
			/* A rename over a large file frees it, as an unlink would. */
			if (ns_here(sess, &rj->at) && ns_here(sess, &rj->at2) &&
			    (link || (u & (RENAME_EXCHANGE | RENAME_NOREPLACE)) ||
			     !unlink_frees_much(rj->at2.dirfd, rj->at2.name))) {
				gint64 t0 = g_get_monotonic_time();
				int rc = link ? linkat(rj->at.dirfd, rj->at.name, rj->at2.dirfd, rj->at2.name, 0)
					      : renameat2(rj->at.dirfd, rj->at.name, rj->at2.dirfd,
							  rj->at2.name, u);

				rc = rc < 0 ? -errno : 0;
				ns_here_took(sess, type, t0);
				(link ? ring_done : ring_rename_done)(rj, rc);
				return true;
			}
			err = link ? qt_fop_linkat(l, rj->at.dirfd, rj->at.name, rj->at2.dirfd,
						   rj->at2.name, 0, ring_done, rj)
				   : qt_fop_renameat(l, rj->at.dirfd, rj->at.name, rj->at2.dirfd,
						     rj->at2.name, u, ring_rename_done, rj);
		}
		if (err < 0)
			ring_end(rj, err);
		return true;
	}
	case QTFS_RELEASE: {
		/*
		 * Closing a file on a memory or pseudo file system never
		 * waits: done right here.  Elsewhere a close may write back
		 * or ask a network file system: io_uring's close does it here
		 * too unless the file has a flush method, and then its worker
		 * does (a disk file's close, the common case, costs no thread
		 * wake-up either way).  Relayed FIFOs and sockets (streams),
		 * and the close that frees a large unlinked file, go to the
		 * pool.
		 */
		bool quick;
		int fd;

		qt_rd_u64(r, &hid);
		if (qt_rd_end(r) < 0 || !(rj->h = handle_get(sess, hid)))
			return false;
		if (rj->h->stream || close_frees_much(rj->h->fd)) {
			g_clear_pointer(&rj->h, handle_unref);
			return false;
		}
		quick = rj->h->quick_close;
		fd = release_take_fd(sess, hid, g_steal_pointer(&rj->h));
		if (fd >= 0 && !quick && qt_fop_close(l, fd, ring_done, rj) == 0)
			return true;
		if (fd >= 0)
			close(fd);
		ring_end(rj, 0);
		return true;
	}
	default:
		return false;
	}
}

/* Start @j on the ring; false if it is not one for the ring (see above). */
static bool ring_start(struct session *sess, struct job *j)
{
	uint16_t type = qt_msg_type(j->req);
	struct ring_job *rj;
	struct qt_rd r;
	bool mounted;

	switch (type) {
	case QTFS_READ:
	case QTFS_WRITE:
	case QTFS_FSYNC:
	case QTFS_FALLOCATE:
	case QTFS_UNLINK:
	case QTFS_RMDIR:
	case QTFS_MKDIR:
	case QTFS_SYMLINK:
	case QTFS_RENAME:
	case QTFS_LINK:
	case QTFS_CREATE:
	case QTFS_RELEASE:
		break;
	default:
		return false;
	}
	g_mutex_lock(&sess->lock);
	mounted = sess->root_fd >= 0;
	g_mutex_unlock(&sess->lock);
	if (sess->refused || !mounted || (sess->ro && qtfs_op_writes(type)))
		return false;
	tl_cached_only = !sess->root_pseudo; /* the loop thread: see openat2_beneath() */
	rj = g_new0(struct ring_job, 1);
	rj->j = j;
	rj->rep = qt_msg_new_reply(j->req, type);
	qt_rd_init_msg(&r, j->req);
	if (ring_submit(sess, rj, type, &r))
		return true;
	qt_pipe_put(rj->pipe);
	g_free(rj->target); /* a SYMLINK deferred to the pool */
	if (rj->h)
		handle_unref(rj->h);
	qt_msg_free(rj->rep);
	g_free(rj);
	return false;
}

/* The connection and session callbacks share user data; the tag tells which. */

static void srv_conn_ready(struct qt_conn *c, void *user)
{
	struct qtfs_srv *srv = user;
	struct session *sess;
	uint32_t uid;

	bool refused = false;

	if (qt_socket_peer_uid(qt_conn_fd(c), &uid) == 0) {
		bool ok = false;

		for (guint i = 0; i < srv->unix_uids->len; i++)
			ok = ok || g_array_index(srv->unix_uids, uint32_t, i) == uid;
		if (!ok) {
			/* Answered, not just closed, so the client can say why. */
			qt_warn("peer %s: uid %u is not allowed on unix sockets", qt_conn_peer(c), uid);
			refused = true;
		}
	}
	sess = g_new0(struct session, 1);
	sess->refused = refused;
	sess->tag = TAG_SESS;
	sess->srv = srv;
	sess->conn = qt_conn_ref(c);
	sess->splice = !qt_socket_tcp_same_host(qt_conn_fd(c));
	sess->refs = 1;
	sess->root_fd = -1;
	g_mutex_init(&sess->lock);
	g_mutex_init(&sess->owners_lock);
	sess->handles = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
					      (GDestroyNotify)handle_unref);
	sess->lock_owners = g_hash_table_new_full(lock_owner_hash, lock_owner_equal,
						  lock_owner_free, NULL);
	sess->blocked = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
	srv->sessions++;
	g_atomic_int_inc(&srv->live);
	qt_conn_set_user(c, sess);
	qt_info("peer %s (%s): connected", qt_conn_peer(c), qt_conn_peer_name(c));
}

static void srv_conn_request(struct qt_conn *c, struct qt_msg *m, void *user)
{
	struct session *sess = user;
	struct job *j;

	if (*(uint32_t *)user != TAG_SESS || !qt_msg_id(m)) {
		/* Not ready (refused peer) or a one-way message: nothing to answer. */
		if (*(uint32_t *)user == TAG_SESS && qt_msg_type(m) == QTFS_INTERRUPT) {
			struct qt_rd r;
			uint64_t id;

			qt_rd_init_msg(&r, m);
			if (qt_rd_u64(&r, &id) == 0 && qt_rd_end(&r) == 0)
				interrupt_request(sess, id);
		}
		qt_msg_free(m);
		return;
	}
	if (qt_msg_type(m) >= QTFS_MOUNT && qt_msg_type(m) < QTFS_OP_MAX)
		__atomic_fetch_add(&sess->srv->op_count[qt_msg_type(m) - QTFS_MOUNT], 1, __ATOMIC_RELAXED);
	j = g_new0(struct job, 1);
	j->sess = session_ref(sess);
	j->req = m;
	if (qt_msg_type(m) == QTFS_WATCH) {
		watch_request(sess, j);
		return;
	}
	if (qt_msg_type(m) == QTFS_WATCH_SYNC) {
		watch_sync(sess, j);
		return;
	}
	if (sess->srv->ring_ops && ring_start(sess, j))
		return;
	if (runs_inline(sess->srv, qt_msg_type(m)))
		run_job(j, GINT_TO_POINTER(RUN_INLINE));
	else
		g_thread_pool_push(sess->srv->pool, j, NULL);
}

static void srv_conn_closed(struct qt_conn *c, int err, const char *reason, void *user)
{
	struct session *sess = user;
	struct qtfs_srv *srv;

	/* Before ready (or refused), the user data is still the server. */
	if (*(uint32_t *)user != TAG_SESS) {
		srv = user;
		if (err)
			qt_info("peer %s: %s", qt_conn_peer(c), reason);
	} else {
		srv = sess->srv;
		srv->sessions--;
		watch_conn_closed(sess);
		session_abandon(sess);
		if (err)
			qt_notice("peer %s: connection closed: %s", qt_conn_peer(c), reason);
		else
			qt_info("peer %s: disconnected", qt_conn_peer(c));
		session_unref(sess);
	}
	if (srv->conn_closed)
		srv->conn_closed(srv->conn_closed_arg);
}

const struct qt_conn_ops qtfs_srv_conn_ops = {
	.ready = srv_conn_ready,
	.request = srv_conn_request,
	.closed = srv_conn_closed,
};

int qtfs_srv_new(struct qt_loop *l, const struct qtfs_srv_opts *o, struct qtfs_srv **out, char **msg)
{
	struct qtfs_srv *srv = g_new0(struct qtfs_srv, 1);
	GError *gerr = NULL;
	uint32_t me = (uint32_t)geteuid(), root = 0;

	srv->tag = TAG_SRV;
	while (!srv->instance)
		srv->instance = ((uint64_t)g_random_int() << 32) | g_random_int();
	srv->loop = l;
	srv->wl = o->whitelist;
	srv->max_handles = o->max_handles ? o->max_handles : 4096;
	srv->inline_meta = !o->no_inline_metadata;
	srv->ring_ops = !o->no_ring_file_ops && qt_loop_has_fops(l);
	srv->conn_closed = o->conn_closed;
	srv->conn_closed_arg = o->conn_closed_arg;
	srv->unix_uids = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	if (o->n_unix_uids)
		g_array_append_vals(srv->unix_uids, o->unix_uids, o->n_unix_uids);
	else {
		g_array_append_val(srv->unix_uids, root);
		g_array_append_val(srv->unix_uids, me);
	}
	g_mutex_init(&srv->dev_lock);
	srv->dev_pseudo = g_hash_table_new(g_direct_hash, g_direct_equal);
	g_mutex_init(&srv->sub_lock);
	srv->subs = g_hash_table_new(g_int64_hash, g_int64_equal);
	srv->max_watches = o->max_watches ? o->max_watches : 65536;
	srv->client_watches = o->client_watches ? MIN(o->client_watches, srv->max_watches)
						: srv->max_watches;
	if (!o->no_name_watch) {
		g_autofree char *why = NULL;

		if (qtfs_dirwatch_new(l, srv->max_watches, watch_event, srv, &srv->dw, &why) < 0)
			qt_warn("%s: clients cache names for entry_timeout only", why);
	}
	srv->exports = g_new0(struct qtfs_export, o->n_exports ? o->n_exports : 1);
	for (unsigned i = 0; i < o->n_exports; i++) {
		struct qtfs_export *e = &srv->exports[i];
		int fd = open(o->exports[i].path, O_PATH | O_DIRECTORY | O_CLOEXEC);

		if (fd < 0) {
			int err = -errno;

			*msg = g_strdup_printf("export \"%s\": %s", o->exports[i].path, g_strerror(errno));
			qtfs_srv_free(srv);
			return err;
		}
		e->fd = fd;
		e->path = g_strdup(o->exports[i].path);
		e->ro = o->exports[i].ro;
		srv->n_exports++;
	}
	/*
	 * A client mounts one export, the one deepest around the path it
	 * asks for; from a read-write export it can write a read-only one
	 * nested in it.  Not refused (it may be meant), but said.
	 */
	for (unsigned i = 0; i < srv->n_exports; i++)
		for (unsigned j = 0; j < srv->n_exports; j++)
			if (srv->exports[i].ro && !srv->exports[j].ro &&
			    path_has_prefix(srv->exports[i].path, srv->exports[j].path))
				qt_warn("export \"%s\" is read-only, but clients that mount the read-write "
					"export \"%s\" can write it there", srv->exports[i].path,
					srv->exports[j].path);
	intr_setup();
	srv->pool = g_thread_pool_new(pool_job, GINT_TO_POINTER(RUN_POOL), (gint)(o->workers ? o->workers : 64),
				      FALSE, &gerr);
	if (srv->pool)
		srv->blocking = g_thread_pool_new(pool_job, GINT_TO_POINTER(RUN_BLOCKING), 4096, FALSE, &gerr);
	if (!srv->pool || !srv->blocking) {
		*msg = g_strdup_printf("cannot start the worker pool: %s", gerr->message);
		g_error_free(gerr);
		qtfs_srv_free(srv);
		return -ENOMEM;
	}
	/* Modes come from the client already masked; ours must not mask them again. */
	umask(0);
	*out = srv;
	return 0;
}

void qtfs_srv_free(struct qtfs_srv *srv)
{
	if (!srv)
		return;
	/* With no session left (qtfs_srv_busy()), both pools are idle. */
	if (srv->pool)
		g_thread_pool_free(srv->pool, FALSE, TRUE);
	if (srv->blocking)
		g_thread_pool_free(srv->blocking, FALSE, TRUE);
	for (unsigned i = 0; i < srv->n_exports; i++) {
		close(srv->exports[i].fd);
		g_free(srv->exports[i].path);
	}
	g_free(srv->exports);
	g_array_unref(srv->unix_uids);
	g_hash_table_destroy(srv->dev_pseudo);
	g_mutex_clear(&srv->dev_lock);
	qtfs_dirwatch_free(srv->dw);
	/* Sessions end before the server; their subscriptions with them. */
	g_hash_table_destroy(srv->subs);
	g_mutex_clear(&srv->sub_lock);
	g_free(srv);
}

unsigned qtfs_srv_sessions(const struct qtfs_srv *srv)
{
	return srv->sessions;
}

unsigned qtfs_srv_busy(const struct qtfs_srv *srv)
{
	return (unsigned)g_atomic_int_get(&srv->live);
}

void qtfs_srv_log_counts(struct qtfs_srv *srv)
{
	g_autoptr(GString) line = g_string_new("requests since the start:");
	uint64_t total = 0;
	unsigned subs, devs;

	for (unsigned i = 0; i < G_N_ELEMENTS(srv->op_count); i++) {
		uint64_t n = __atomic_load_n(&srv->op_count[i], __ATOMIC_RELAXED);

		if (n) {
			g_string_append_printf(line, " %s %" G_GUINT64_FORMAT, qtfs_op_name((uint16_t)(QTFS_MOUNT + i)), n);
			total += n;
		}
	}
	if (!total)
		g_string_append(line, " none");
	qt_notice("%s", line->str);
	g_mutex_lock(&srv->sub_lock);
	subs = g_hash_table_size(srv->subs);
	g_mutex_unlock(&srv->sub_lock);
	g_mutex_lock(&srv->dev_lock);
	devs = g_hash_table_size(srv->dev_pseudo);
	g_mutex_unlock(&srv->dev_lock);
	qt_notice("sessions: %u connected, %d not freed yet, %d handles, %d lock owners, "
		  "%u watch subscriptions, %u watched directories, %u file systems seen",
		  srv->sessions, g_atomic_int_get(&srv->live), g_atomic_int_get(&srv->n_handles),
		  g_atomic_int_get(&srv->n_owners), subs, qtfs_dirwatch_count(srv->dw), devs);
}
