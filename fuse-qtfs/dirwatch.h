/* SPDX-License-Identifier: Apache-2.0 */
/*
 * qtfs-server's watch on the directories its clients have names cached
 * from: one inotify instance, a watch per directory, and a callback on the
 * loop thread for every name that left or changed its inode (deleted,
 * renamed away, renamed over), and in the directories asked for, every
 * name that appeared (created).  server.c turns those into the WATCH
 * replies that let a client cache names for long (docs/fuse-qtfs.md,
 * "Name caching").
 *
 * A directory is known by its host identity (st_dev, st_ino and the
 * handle hash of qtfs_attr.gen), the same the client keys its nodes on.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "loop.h"

struct qtfs_dirid {
	uint64_t dev, ino, gen;
};

enum qtfs_dirwatch_kind {
	QTFS_DW_NAME,	  /* @dir/@name was deleted, renamed away or over, or created */
	QTFS_DW_OVERFLOW, /* events were lost: anything may have changed */
	QTFS_DW_BATCH_END, /* the end of one read of events: a good time to send */
	QTFS_DW_GONE,	   /* @dir is no longer watched (it was removed) */
};

struct qtfs_dirwatch_event {
	enum qtfs_dirwatch_kind kind;
	struct qtfs_dirid dir; /* QTFS_DW_NAME, QTFS_DW_GONE */
	const char *name;      /* QTFS_DW_NAME: not NUL-terminated past len */
	size_t len;
	bool is_dir;	       /* QTFS_DW_NAME: the name is (was) a directory's */
	bool is_new;	       /* QTFS_DW_NAME: created (IN_CREATE) */
	/*
	 * QTFS_DW_NAME of a watched directory renamed away from @dir/@name
	 * into another watched directory: where it went, and which directory
	 * it is (@self), when inotify told all three (IN_MOVED_FROM,
	 * IN_MOVED_TO, IN_MOVE_SELF) in a row.  The IN_MOVED_TO comes as a
	 * QTFS_DW_NAME of its own too.
	 */
	bool moved;
	struct qtfs_dirid to_dir, self;
	const char *to_name; /* NUL-terminated */
};

typedef void (*qtfs_dirwatch_fn)(void *arg, const struct qtfs_dirwatch_event *ev);

struct qtfs_dirwatch;

/*
 * An inotify instance on @l, with at most @max_watches directories; @fn
 * runs on the loop thread.  -errno (no inotify here) with a one-line *msg.
 */
int qtfs_dirwatch_new(struct qt_loop *l, unsigned max_watches, qtfs_dirwatch_fn fn, void *arg,
		      struct qtfs_dirwatch **out, char **msg);
void qtfs_dirwatch_free(struct qtfs_dirwatch *w);

/* The directories watched now (0 for NULL).  Any thread. */
unsigned qtfs_dirwatch_count(struct qtfs_dirwatch *w);

/*
 * Make sure the directory open at @fd, identity @id, is watched from now
 * on, for created names too if @creates.  True if it is; false when the
 * limit is reached or inotify refuses (then names from it must not be
 * cached for long).  Any thread.
 */
bool qtfs_dirwatch_add(struct qtfs_dirwatch *w, int fd, const struct qtfs_dirid *id, bool creates);

/*
 * Stop watching the directory @id (dev and ino; any generation), if it is
 * watched: no client needs its events any more.  Events of it already
 * queued are dropped.  Any thread.
 */
void qtfs_dirwatch_remove(struct qtfs_dirwatch *w, const struct qtfs_dirid *id);

/*
 * Read every event the kernel has queued now and hand them to the
 * callback, as if the instance had become readable.  False if it stopped
 * before the queue was empty (the host adds events faster than they are
 * read).  Loop thread.
 */
bool qtfs_dirwatch_drain(struct qtfs_dirwatch *w);
