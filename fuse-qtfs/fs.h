/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The FUSE file system of fuse-qtfs: libfuse3's low-level operations on
 * top of the connection pool (client.h), the client's table of nodes, and
 * proc mode.  fuse-qtfs.c creates it and runs the session.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include "client.h"

/* -o readahead_kb's default, bytes: see docs/benchmarks.md. */
#define QTFS_READAHEAD_DEFAULT (16u << 20)
/*
 * The largest READ the kernel sends the mount (max_read), chosen so that
 * a reply whose bytes come into a pipe (lib/conn.h, "Replies into pipes")
 * fits it, and libfuse's own pipe after it.  A pipe may not be over 1 MiB
 * (fs.pipe-max-size, without CAP_SYS_RESOURCE) and holds 256 buffers,
 * one per socket buffer fragment however small, and libfuse sizes its own
 * as the reply plus three pages: 1008 KiB at most.  Over a unix socket a
 * reply the server spliced is a fragment per page (252 for 1008 KiB),
 * and it fits.  Over TCP there is one more wherever TCP's segments split
 * a page, and the pages of the first bytes, received before the splice
 * began: at 1008 KiB nearly every such reply overflowed and was copied,
 * at 896 KiB none did here, and 832 KiB leaves a margin.  (A smaller READ
 * costs requests: over unix 832 KiB read 15% slower than 1008.)  libfuse
 * copies a reply it cannot splice.
 */
#define QTFS_FUSE_READ_MAX_UNIX (1008u * 1024)
#define QTFS_FUSE_READ_MAX (832u * 1024)

struct qtfs_fs_opts {
	double attr_timeout;  /* seconds; files on pseudo file systems always get 0 */
	double entry_timeout;
	/*
	 * Names in directories the host watches for us (QTFS_AF_WATCHED) are
	 * cached this long; 0: do not subscribe (see fs.c "Name caching").
	 */
	double watch_timeout;
	/*
	 * At most this many names in all the lists of directories made here
	 * (fs.c "Listed directories"); 0: keep no lists.
	 */
	unsigned listed_names;
	/*
	 * At most this many names in all the listings kept across opens of
	 * directories (fs.c "Listings kept across opens"); 0: keep none.
	 */
	unsigned dir_cache;
	/*
	 * Sequential readahead, bytes.  The kernel takes the smaller of what
	 * INIT's reply says and the mount's read_ahead_kb, so both are set.
	 */
	uint32_t readahead;
	uint32_t max_read; /* bytes: QTFS_FUSE_READ_MAX, or _UNIX for a unix socket */
	/*
	 * An open keeps the kernel's cached pages of a file while the host's
	 * copy is unchanged (fs.c, "Pages kept across opens"); false: every
	 * open drops them.
	 */
	bool auto_cache;
	/*
	 * The server takes a handle in extended attribute requests
	 * (QTFS_MF_XATTR_FH): those of an open file go through it.
	 */
	bool xattr_fh;
	/*
	 * The server applies the caller's umask (QTFS_MF_UMASK): the kernel
	 * leaves it to us (FUSE_CAP_DONT_MASK), so that a directory's default
	 * ACL takes its place as on the host.
	 */
	bool umask;
	/*
	 * The server watches a directory for new names at a listing's start
	 * when asked (QTFS_MF_LIST_DIRS): a whole listing read after that
	 * starts a list of its names (fs.c, "listed directories").
	 */
	bool list_dirs;
	/*
	 * The server takes the directories the client forgot out of its
	 * watches (QTFS_MF_UNWATCH; fs.c, "Forgotten directories").
	 */
	bool unwatch;
	/*
	 * Bytes of writes answered before the host's reply, in flight at most,
	 * in all (fs.c "Write-behind"); 0: every write waits for the host.
	 */
	size_t write_behind;
	bool proc;	      /* the mount is the host's /proc: see fs.c "Proc mode" */
	const char *local_proc;		/* proc mode: where the local procfs is; borrowed */
	const char *const *local_comms; /* proc mode: comms whose /proc/PID is local */
	bool rdonly;
	/*
	 * Host FIFOs under these paths (relative to the mount root; "*" for
	 * all) are relayed: shown as regular files that stream to and from
	 * the host FIFO (see fs.c).  Borrowed; NULL: none.
	 */
	const char *const *fifo_relay;
};

struct qtfs_fs;

struct qtfs_fs *qtfs_fs_new(const struct qtfs_fs_opts *o, struct qtfs_client *cl,
			    const struct qtfs_attr *root);
/*
 * Before the client shuts down: waits for the writes answered before the
 * host's reply to be done; the calls the client fails from then on (the
 * host's name watch) are the shutdown's, not news to log or retry.
 */
void qtfs_fs_stopping(struct qtfs_fs *fs);
/*
 * Before the client goes: finish the operations waiting to be redone
 * synchronously (after a reconnection); later ones fail with EIO.
 */
void qtfs_fs_stop(struct qtfs_fs *fs);
/* Where the kernel's request @buf (@len bytes as read from /dev/fuse) runs (session.c). */
enum qtfs_run {
	/*
	 * It never waits, for the host or another request: on the client's
	 * loop thread, whose operation only sends a call; the loop answers
	 * the kernel when the reply comes.
	 */
	QTFS_RUN_LOOP,
	/*
	 * The same, and its operation may keep the request's bytes (a
	 * WRITE's data, sent from there) until it is answered: the session
	 * lends it the buffer (qtfs_fs_lend()) and reads on into another.
	 */
	QTFS_RUN_LOOP_LEND,
	/* It may wait: on a FUSE worker thread. */
	QTFS_RUN_WORKER,
	/*
	 * It may wait without end (the open, read or write of a relayed FIFO
	 * or a stream pseudo file, a lock waiting for its holder): on a thread
	 * of its own, so that however many wait, the others find a worker.
	 */
	QTFS_RUN_BLOCKER,
};
enum qtfs_run qtfs_fs_where(struct qtfs_fs *fs, const void *buf, size_t len);
/*
 * Lending a QTFS_RUN_LOOP_LEND request's buffer, on the loop thread:
 * qtfs_fs_lend(fs, buf) before the request runs, qtfs_fs_lend(fs, NULL)
 * after it, which returns the buffer unless the operation kept it.  A kept
 * one comes back through @give_back(@arg, buf), on any thread, once its
 * operation is answered (before qtfs_fs_stop() returns).
 */
void qtfs_fs_set_lender(struct qtfs_fs *fs, void (*give_back)(void *arg, void *buf), void *arg);
void *qtfs_fs_lend(struct qtfs_fs *fs, void *buf);
void qtfs_fs_free(struct qtfs_fs *fs);
/*
 * The session the name cache notifications go to (before it runs).  Only
 * with watch_timeout > 0, and the server must have granted QTFS_MF_WATCH
 * (else set watch_timeout to 0): the subscription then starts with the
 * session's INIT.
 */
void qtfs_fs_set_session(struct qtfs_fs *fs, struct fuse_session *se);

/*
 * Log one line of what the client holds (SIGUSR1): nodes, the kernel's
 * lookups of them, open files and directories, names kept.  Any thread.
 */
void qtfs_fs_log_state(struct qtfs_fs *fs);
extern const struct fuse_lowlevel_ops qtfs_fs_ops;
