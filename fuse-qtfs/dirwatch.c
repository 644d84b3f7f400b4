// SPDX-License-Identifier: Apache-2.0
/*
 * Directory watches for qtfs-server (see dirwatch.h).
 *
 * inotify rather than fanotify: it works on every local file system
 * (tmpfs included, on any kernel), needs no CAP_SYS_ADMIN, and watches
 * exactly the directories asked for, so host activity elsewhere costs
 * nothing.  What it does not say is who made a change: the server's own
 * unlinks come back as events too, and the client's kernel then drops a
 * name it had already dropped (cheap).
 *
 * The events asked for are those that make a cached name wrong: a name
 * deleted (IN_DELETE), renamed away (IN_MOVED_FROM) or renamed over
 * (IN_MOVED_TO).  A new name (IN_CREATE) makes nothing cached wrong, and
 * is asked for only in the directories whose every name a client keeps
 * (QTFS_AF_LISTED, the directories it made itself): there a name that
 * appears on the host must reach it.  A watch keeps its inode in memory; max_watches
 * bounds that.  When a directory goes, the kernel ends its watch
 * (IN_IGNORED) and the entry goes too.
 *
 * Moves.  A directory renamed from one watched directory into another,
 * itself watched, gives three events in a row: IN_MOVED_FROM in the old
 * parent, IN_MOVED_TO in the new one (the same cookie), IN_MOVE_SELF on
 * the directory.  Put together they say which directory went where, and
 * the client moves its node there, so that names relative to it (a
 * process's working directory in it) follow.  Events of other changes
 * may come between them (another rename at the same moment); then each
 * is handed on alone, as before, and the client learns the new place by
 * its next lookup.  struct dw_move holds a move being put together; one
 * whose events a read ended between waits DW_MOVE_WAIT_MS for the rest
 * (a busy host's loop can read while the rename is still queuing them).
 *
 * Locking: one mutex over both tables; qtfs_dirwatch_add() runs on any
 * thread, the events are read on the loop thread.
 */
#include "config.h"

#include "dirwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "log.h"

#define DW_MASK (IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MOVE_SELF | IN_ONLYDIR)
/* Reads per wake-up before the loop gets to run something else. */
#define DW_READS_MAX 16
/*
 * Reads a drain makes at most.  Each returns at least one event and
 * usually hundreds, so this is past the kernel's default queue
 * (fs.inotify.max_queued_events, 16384) even when the host keeps adding
 * to it meanwhile; a drain that does not get to the end says so.
 */
#define DW_DRAIN_READS_MAX 1024
/*
 * How long a directory's move whose events a read ended in the middle of
 * is held for the rest (the kernel queues them within the rename, so they
 * come at once where they come at all: where the directory or its new
 * parent is watched).
 */
#define DW_MOVE_WAIT_MS 5

struct dw_entry {
	int wd;
	bool creates; /* IN_CREATE in the mask */
	struct qtfs_dirid id;
};

/* A directory's move being put together from its events (see the top); loop thread. */
struct dw_move {
	int stage; /* 0: nothing held; 1: an IN_MOVED_FROM; 2: and its IN_MOVED_TO */
	uint32_t cookie;
	struct qtfs_dirid from, to;
	char from_name[NAME_MAX + 1], to_name[NAME_MAX + 1];
};

struct qtfs_dirwatch {
	int fd;
	struct dw_move move;
	struct qt_timer *move_timer; /* a move held past the end of a read (DW_MOVE_WAIT_MS) */
	struct qt_loop *loop;
	struct qt_watch *watch;
	unsigned max;
	qtfs_dirwatch_fn fn;
	void *arg;

	GMutex lock;
	GHashTable *by_id; /* struct dw_entry* (dev, ino) -> itself */
	GHashTable *by_wd; /* wd -> struct dw_entry*, owns them */
	bool full_logged;
};

static guint id_hash(gconstpointer p)
{
	const struct dw_entry *e = p;
	uint64_t h = e->id.dev * 0x9E3779B97F4A7C15ull ^ e->id.ino;

	return (guint)(h ^ h >> 32);
}

static gboolean id_equal(gconstpointer a, gconstpointer b)
{
	const struct dw_entry *x = a, *y = b;

	return x->id.dev == y->id.dev && x->id.ino == y->id.ino;
}

/*
 * Forget watch @wd (the kernel ended it).  True, with its identity in
 * *@gone, if no newer watch has the same inode number.  w->lock held.
 */
static bool forget_wd(struct qtfs_dirwatch *w, int wd, struct qtfs_dirid *gone)
{
	struct dw_entry *e = g_hash_table_lookup(w->by_wd, GINT_TO_POINTER(wd));
	bool last = false;

	if (!e)
		return false;
	if (g_hash_table_lookup(w->by_id, e) == e) {
		g_hash_table_remove(w->by_id, e);
		*gone = e->id;
		last = true;
	}
	g_hash_table_remove(w->by_wd, GINT_TO_POINTER(wd));
	return last;
}

/* A directory's name left or changed: @dir/@name. */
static void emit_dir_name(struct qtfs_dirwatch *w, const struct qtfs_dirid *dir, const char *name)
{
	struct qtfs_dirwatch_event out = {
		.kind = QTFS_DW_NAME, .dir = *dir, .name = name, .len = strlen(name), .is_dir = true};

	w->fn(w->arg, &out);
}

/* Hand on what is held of a move as the plain names it is. */
static void move_flush(struct qtfs_dirwatch *w)
{
	struct dw_move *m = &w->move;

	g_clear_pointer(&w->move_timer, qt_timer_cancel);
	if (m->stage >= 1)
		emit_dir_name(w, &m->from, m->from_name);
	if (m->stage >= 2)
		emit_dir_name(w, &m->to, m->to_name);
	m->stage = 0;
}

/* The move held is whole: directory @self went from @from/@from_name to @to/@to_name. */
static void move_emit(struct qtfs_dirwatch *w, const struct qtfs_dirid *self)
{
	struct dw_move *m = &w->move;
	struct qtfs_dirwatch_event out = {
		.kind = QTFS_DW_NAME,
		.dir = m->from,
		.name = m->from_name,
		.len = strlen(m->from_name),
		.is_dir = true,
		.moved = true,
		.to_dir = m->to,
		.self = *self,
		.to_name = m->to_name,
	};

	w->fn(w->arg, &out);
	emit_dir_name(w, &m->to, m->to_name);
	m->stage = 0;
}

static void dispatch(struct qtfs_dirwatch *w, const struct inotify_event *ev)
{
	struct qtfs_dirwatch_event out = {.kind = QTFS_DW_NAME};
	uint32_t dir_mask = ev->mask & (IN_MOVED_FROM | IN_MOVED_TO | IN_ISDIR);
	struct dw_move *m = &w->move;
	struct dw_entry *e;
	size_t len;

	if (ev->mask & (IN_Q_OVERFLOW | IN_IGNORED))
		move_flush(w);
	if (ev->mask & IN_Q_OVERFLOW) {
		qt_warn("directory watch: the kernel's event queue overflowed; clients drop their "
			"cached names");
		out.kind = QTFS_DW_OVERFLOW;
		w->fn(w->arg, &out);
		return;
	}
	g_mutex_lock(&w->lock);
	if (ev->mask & IN_IGNORED) {
		bool gone = forget_wd(w, ev->wd, &out.dir);

		g_mutex_unlock(&w->lock);
		if (gone) {
			out.kind = QTFS_DW_GONE;
			w->fn(w->arg, &out);
		}
		return;
	}
	e = g_hash_table_lookup(w->by_wd, GINT_TO_POINTER(ev->wd));
	if (e)
		out.dir = e->id;
	g_mutex_unlock(&w->lock);
	len = ev->len ? strnlen(ev->name, ev->len) : 0;
	if (ev->mask & IN_MOVE_SELF) {
		if (m->stage == 2 && e)
			move_emit(w, &out.dir);
		else
			move_flush(w);
		return;
	}
	if (m->stage == 1 && e && len && len <= NAME_MAX && dir_mask == (IN_MOVED_TO | IN_ISDIR) &&
	    ev->cookie == m->cookie) {
		m->to = out.dir;
		memcpy(m->to_name, ev->name, len);
		m->to_name[len] = '\0';
		m->stage = 2;
		return;
	}
	move_flush(w);
	if (!e || !len || !(ev->mask & (IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE)))
		return;
	if (dir_mask == (IN_MOVED_FROM | IN_ISDIR) && len <= NAME_MAX) {
		m->from = out.dir;
		memcpy(m->from_name, ev->name, len);
		m->from_name[len] = '\0';
		m->cookie = ev->cookie;
		m->stage = 1;
		return;
	}
	out.name = ev->name;
	out.len = len;
	out.is_dir = ev->mask & IN_ISDIR;
	out.is_new = ev->mask & IN_CREATE;
	if (out.len)
		w->fn(w->arg, &out);
}

/* A move held past the end of a read got no more events: plain names. */
static void move_due(void *arg)
{
	struct qtfs_dirwatch *w = arg;
	struct qtfs_dirwatch_event end = {.kind = QTFS_DW_BATCH_END};

	w->move_timer = NULL;
	move_flush(w);
	w->fn(w->arg, &end);
}

/*
 * Up to @reads reads of events, handed to the callback.  True if the
 * queue was emptied.
 */
static bool read_events(struct qtfs_dirwatch *w, unsigned reads, bool drain)
{
	/* Aligned for struct inotify_event, as inotify(7) shows. */
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	struct qtfs_dirwatch_event end = {.kind = QTFS_DW_BATCH_END};
	bool any = false, empty = false;

	for (unsigned i = 0; i < reads && !empty; i++) {
		ssize_t n = read(w->fd, buf, sizeof(buf));

		if (n <= 0) {
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				qt_warn("directory watch: read: %s", g_strerror(errno));
			empty = true;
			break;
		}
		any = true;
		/*
		 * A read takes every queued event that fits: with room left for
		 * one of the largest, the queue was empty (no read for EAGAIN;
		 * one that comes later makes the descriptor readable again).
		 */
		if ((size_t)n <= sizeof(buf) - (sizeof(struct inotify_event) + NAME_MAX + 1))
			empty = true;
		for (ssize_t pos = 0; pos + (ssize_t)sizeof(struct inotify_event) <= n;) {
			const struct inotify_event *ev = (const struct inotify_event *)(buf + pos);

			if (pos + (ssize_t)sizeof(*ev) + (ssize_t)ev->len > n)
				break;
			dispatch(w, ev);
			pos += (ssize_t)sizeof(*ev) + ev->len;
		}
	}
	/*
	 * A move cut short by the end of what was read: the rest of its
	 * events may be queued a moment later (the rename is still under way
	 * on another CPU), so it waits DW_MOVE_WAIT_MS for them, then goes as
	 * plain names.  A drain (the barrier) takes what is queued now.
	 */
	if (drain || !w->move.stage)
		move_flush(w);
	else if (!w->move_timer)
		w->move_timer = qt_timer_add(w->loop, DW_MOVE_WAIT_MS, move_due, w);
	if (any)
		w->fn(w->arg, &end);
	return empty;
}

static void readable(struct qt_watch *qw, int fd, uint32_t revents, void *arg)
{
	(void)qw;
	(void)fd;
	(void)revents;
	read_events(arg, DW_READS_MAX, false);
}

bool qtfs_dirwatch_drain(struct qtfs_dirwatch *w)
{
	return read_events(w, DW_DRAIN_READS_MAX, true);
}

int qtfs_dirwatch_new(struct qt_loop *l, unsigned max_watches, qtfs_dirwatch_fn fn, void *arg,
		      struct qtfs_dirwatch **out, char **msg)
{
	struct qtfs_dirwatch *w;
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

	if (fd < 0) {
		int err = -errno;

		*msg = g_strdup_printf("inotify: %s", g_strerror(errno));
		return err;
	}
	w = g_new0(struct qtfs_dirwatch, 1);
	w->fd = fd;
	w->max = max_watches;
	w->fn = fn;
	w->arg = arg;
	w->loop = l;
	g_mutex_init(&w->lock);
	w->by_id = g_hash_table_new(id_hash, id_equal);
	w->by_wd = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
	w->watch = qt_watch_add(l, fd, QT_EV_IN, readable, w);
	*out = w;
	return 0;
}

void qtfs_dirwatch_remove(struct qtfs_dirwatch *w, const struct qtfs_dirid *id)
{
	struct dw_entry probe = {.id = *id}, *e;

	if (!w)
		return;
	g_mutex_lock(&w->lock);
	e = g_hash_table_lookup(w->by_id, &probe);
	if (e) {
		int wd = e->wd;

		/* Its IN_IGNORED, still to come, then finds no entry (forget_wd()). */
		inotify_rm_watch(w->fd, wd);
		g_hash_table_remove(w->by_id, e);
		g_hash_table_remove(w->by_wd, GINT_TO_POINTER(wd));
		w->full_logged = false;
	}
	g_mutex_unlock(&w->lock);
}

unsigned qtfs_dirwatch_count(struct qtfs_dirwatch *w)
{
	unsigned n;

	if (!w)
		return 0;
	g_mutex_lock(&w->lock);
	n = g_hash_table_size(w->by_wd);
	g_mutex_unlock(&w->lock);
	return n;
}

void qtfs_dirwatch_free(struct qtfs_dirwatch *w)
{
	if (!w)
		return;
	qt_watch_remove(w->watch);
	g_clear_pointer(&w->move_timer, qt_timer_cancel);
	close(w->fd);
	g_hash_table_destroy(w->by_id);
	g_hash_table_destroy(w->by_wd);
	g_mutex_clear(&w->lock);
	g_free(w);
}

bool qtfs_dirwatch_add(struct qtfs_dirwatch *w, int fd, const struct qtfs_dirid *id, bool creates)
{
	struct dw_entry probe = {.id = *id}, *e;
	char path[64];
	int wd;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	g_mutex_lock(&w->lock);
	e = g_hash_table_lookup(w->by_id, &probe);
	if (e && e->id.gen == id->gen && (e->creates || !creates)) {
		g_mutex_unlock(&w->lock);
		return true;
	}
	if (e && e->id.gen == id->gen) {
		/* The same inode: inotify changes the mask of its watch descriptor. */
		wd = inotify_add_watch(w->fd, path, DW_MASK | IN_CREATE);
		if (wd == e->wd)
			e->creates = true;
		if (wd == e->wd || wd < 0) {
			g_mutex_unlock(&w->lock);
			return wd == e->wd;
		}
		/*
		 * A new watch descriptor: another directory after all, on a
		 * file system without generations (gen 0 for all), whose old
		 * watch's IN_IGNORED is still queued.  Kept as a new one.
		 */
		goto add;
	}
	/*
	 * New, or the inode number now belongs to another directory whose
	 * old watch's IN_IGNORED is still queued: inotify then gives a new
	 * watch descriptor.
	 */
	if (!e && g_hash_table_size(w->by_wd) >= w->max) {
		if (!w->full_logged)
			qt_notice("directory watch: %u directories watched, the limit (max_watches); "
				  "names elsewhere are cached for entry_timeout only",
				  w->max);
		w->full_logged = true;
		g_mutex_unlock(&w->lock);
		return false;
	}
	wd = inotify_add_watch(w->fd, path, DW_MASK | (creates ? IN_CREATE : 0));
	if (wd < 0) {
		if (!w->full_logged)
			qt_notice("directory watch: cannot watch a directory: %s%s", g_strerror(errno),
				  errno == ENOSPC ? " (fs.inotify.max_user_watches)" : "");
		w->full_logged = true;
		g_mutex_unlock(&w->lock);
		return false;
	}
add:
	if (e)
		g_hash_table_remove(w->by_id, e);
	{
		struct qtfs_dirid unused;

		forget_wd(w, wd, &unused);
	}
	e = g_new(struct dw_entry, 1);
	e->wd = wd;
	e->creates = creates;
	e->id = *id;
	g_hash_table_insert(w->by_wd, GINT_TO_POINTER(wd), e);
	g_hash_table_add(w->by_id, e);
	g_mutex_unlock(&w->lock);
	return true;
}
