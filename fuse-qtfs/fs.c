// SPDX-License-Identifier: Apache-2.0
/*
 * The FUSE half of fuse-qtfs: libfuse3's low-level operations, each turned
 * into one request to qtfs-server (client.h) and exactly one reply to the
 * kernel.
 *
 * Nodes.  The kernel knows files by node id; the server knows them by path
 * relative to the mount root.  Each node records the host's (st_dev,
 * st_ino, generation), so one host inode is one node id however it is
 * reached (hard links, renames on either side) and a file that reuses the
 * inode number of a deleted one is a new node, and its current parent and name, from
 * which its path is rebuilt for every request.  A file's other names that
 * the kernel looked up (hard links, or a name renamed away on the host)
 * are kept too, as aliases, for one thing only: a sweep of the name cache
 * must reach every name the kernel may hold (see "Name caching").  Lookup counts are kept
 * exactly: +1 for every entry reply (lookup, create, mknod, mkdir, symlink,
 * link, each readdirplus entry with attributes), -n on forget; a node is
 * freed when its count and the number of children naming it as parent are
 * both zero.  fs->lock protects the node table and every node's parent,
 * name and counts; it is never held across a network call.
 *
 * Open files.  An open file is a handle on the server connection that
 * opened it (struct fh).  When that connection is replaced (link loss,
 * server restart) the next operation reopens the file by its current path,
 * without O_CREAT/O_EXCL/O_TRUNC, on any live connection, and goes on; a
 * file whose name is gone (unlinked while open), or names another file
 * now (replaced meanwhile), then fails with ESTALE.
 * fh->reopen_lock serializes reopening; fh->lock is only ever held for a
 * moment, since the loop thread takes it (session.c).
 *
 * Proc mode (-o proc, for a mount of the host's /proc).  The names "self"
 * and "thread-self" in the root are symlinks to the caller's own entries in
 * the local procfs (local_proc=, default /local_proc), and a numeric name
 * whose local process has a comm in the configured list (kubelet,
 * containerd...) is a symlink to that local process; every other pid is
 * the host's.  These nodes are made up here (dev = UINT64_MAX) and never
 * cached by the kernel.
 *
 * FIFOs.  The kernel turns every S_IFIFO inode of a FUSE mount into a local
 * pipe: it never asks us to open one, so a FIFO on the mount could not
 * connect a DPU process with a host process.  Under the fifo_relay= paths
 * a host FIFO is therefore shown as a regular file (QTFS_AF_RELAY) opened
 * with direct I/O and no seeking, whose opens, reads and writes are those
 * of the host FIFO, blocking as long as they block there (no deadline;
 * they still fail if the connection goes).  The price: stat() says
 * "regular file" for them.  mknod of a FIFO there answers with the FIFO
 * (the kernel insists on the type it asked for) and zero cache times, so
 * the next lookup sees the relay and gets a node of its own.  An open of
 * one waits for the host's close of every close before (relay_closing_add()).
 *
 * Pseudo files.  Files the server flags QTFS_AF_PSEUDO (procfs, sysfs,
 * cgroupfs) report sizes that mean nothing, so they are opened with
 * direct I/O and get zero attribute and entry timeouts.
 *
 * Directory attributes after a change.  The kernel forgets a directory's
 * attributes whenever an entry in it is made, removed or renamed, and
 * (default_permissions) needs them again for the next permission check
 * there: every create or unlink in a row would cost a GETATTR round trip
 * before its own.  The server ends such replies with the directory's
 * attributes after the change (QTFS_MNT_DIR_ATTRS); they wait on the node
 * (node->post) and answer the next GETATTR of it, once, within
 * attr_timeout of their arrival.  So they are never older than attributes
 * the kernel itself would have kept; of two changes answered out of
 * order, the attributes may be the earlier change's, within that bound.
 * They are dropped when they are older than what the kernel learnt
 * since: after a SETATTR of the directory, and when the host reports a
 * change in it (see "Name caching"), whose notification also makes the
 * kernel forget the directory's attributes.
 */
#include "config.h"

#include "fs.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/fuse.h>

#include "log.h"
#include "qtfs-sync.h"

#define SYNTH_DEV UINT64_MAX
/* A host directory as the WATCH replies name it. */
struct dir_key {
	uint64_t dev, ino, gen;
};
/* Reports kept for the MKDIRs on their way (see "listed directories"). */
#define UNLISTED_RING 256
enum { SYNTH_SELF = 1, SYNTH_THREAD_SELF = 2, SYNTH_PID_BASE = 16 };

/* A regular file's data as of an open: its host attributes then (see open_keeps_cache()). */
struct data_ver {
	int64_t size, mtime_sec, ctime_sec;
	uint32_t mtime_nsec, ctime_nsec;
	bool settled; /* an open recorded it, and the attributes had QTFS_AF_SETTLED */
	bool opened;  /* an open recorded it */
};

struct node {
	fuse_ino_t id;
	uint64_t dev, ino, gen; /* the host inode and its incarnation (qtfs_attr.gen) */
	uint64_t nlookup;
	unsigned children;
	struct node *parent; /* NULL: root, or name unknown (unlinked) */
	char *name;
	uint32_t type; /* S_IFMT bits */
	bool pseudo;
	bool relay; /* a host FIFO shown as a regular file */
	GList *fhs; /* struct fh* open on this node, for files without a name */
	GList *dirfhs; /* struct fh* of the directory open on this node */
	struct listing *listing; /* a directory's names as last read (see "Listings kept") */
	struct post_attr *post; /* a directory's attributes after our last change in it */
	GHashTable *names; /* a directory we know every name of (see "Listed directories"), or NULL */
	GSList *aliases;   /* struct alias*: other names the kernel looked this file up by */
	struct data_ver ver; /* a regular file: what its cached pages come from (open_keeps_cache()) */
	gint64 nocaps_until; /* a regular file: no file capabilities until then ("File capabilities") */
	unsigned xattr_gen;  /* SETXATTRs and REMOVEXATTRs made from here */
	bool setid;	     /* the kernel was last told of set-id bits (write_kills_setid()) */
	unsigned names_gen;  /* a directory: changes of names in it taken in here (node_name()) */
	unsigned made_gen;   /* a directory without a list: names made from here or reported in it */
};

/* A node's host identity, as the WATCH replies name a directory. */
static struct dir_key node_key(const struct node *n)
{
	return (struct dir_key){.dev = n->dev, .ino = n->ino, .gen = n->gen};
}

static bool key_eq(const struct dir_key *a, uint64_t dev, uint64_t ino, uint64_t gen)
{
	return a->dev == dev && a->ino == ino && a->gen == gen;
}

/* A name of a node other than its current one (parent, name). */
struct alias {
	fuse_ino_t parent;
	char name[];
};

struct post_attr {
	struct qtfs_attr a;
	gint64 at_us; /* g_get_monotonic_time() at arrival */
};

struct qtfs_fs {
	struct qtfs_fs_opts o;
	struct qtfs_client *cl;
	char *local_proc;
	GStrv local_comms;
	GStrv relay; /* fifo_relay prefixes without leading or trailing '/' */

	GMutex lock;
	GHashTable *by_id;   /* fuse_ino_t -> node */
	GHashTable *by_key;  /* node (dev, ino) -> node */
	GHashTable *by_name; /* node (parent, name) -> node */
	uint64_t next_id;
	struct node *root;
	struct qtfs_attr root_attr;

	GMutex lk_lock;
	GHashTable *lk_owners; /* struct lk_owner*: POSIX lock owners with locks on the host */
	GCond lk_cond;	       /* signalled when lk_releasing drops */
	unsigned lk_releasing; /* RELEASEs carrying an unlock (flock, OFD) still on their way; lk_lock */
	uint64_t lk_release_gen; /* RELEASEs with an unlock done so far; lk_lock */

	/* The RELEASEs of relayed FIFOs on their way (see relay_open_wait()), under relay_lock. */
	GMutex relay_lock;
	GCond relay_cond;	   /* one is done */
	GHashTable *relay_closing; /* fuse_ino_t* -> how many of its RELEASEs are on their way */

	GMutex slow_lock;
	GThreadPool *slow; /* see slow_push(); NULL once stopping; slow_lock */

	/* Write-behind (see "Write-behind"), under wb_lock. */
	GMutex wb_lock;
	GCond wb_cond;	      /* a write is done */
	GHashTable *wb_nodes; /* struct wb_node*: the nodes with writes on their way */
	GQueue wb_all;	      /* struct wb_write*: every write on its way, oldest first */
	GQueue wb_waiters;    /* struct wb_waiter*: calls waiting for writes of every node */
	int wb_count;	      /* atomic: the length of wb_all */
	size_t wb_bytes;      /* of writes answered before the host's reply, on their way */
	unsigned wb_early;    /* those writes */
	uint64_t wb_seq;      /* the last write's */

	/* The request buffer lent with a QTFS_RUN_LOOP_LEND request (loop thread), and its return. */
	void *lent;
	void (*give_back)(void *arg, void *buf);
	void *give_back_arg;

	struct fuse_session *session; /* for notifications other than name caching's */
	/* Name caching (see "Name caching" below). */
	struct fuse_session *se; /* for the notifications; NULL: no subscription */
	bool can_expire;	 /* the kernel expires names (FUSE_CAP_EXPIRE_ONLY) */
	GThread *notifier;
	GAsyncQueue *invals;  /* struct inval* for the notifier */
	int watch_on;	      /* atomic: a WATCH loop is running on a subscription */
	unsigned watch_epoch; /* atomic: bumped when names may have been missed */
	unsigned trust_epoch; /* atomic: bumped with watch_epoch, and by UNWATCH calls (trusted()) */
	int unwatch_busy;     /* atomic: UNWATCH calls on their way */
	GArray *unwatch_keys; /* struct dir_key: forgotten directories, not sent yet; fs->lock */
	uint64_t unwatched;   /* directories sent in UNWATCH calls so far; fs->lock */
	bool unwatch_due;     /* a flush of unwatch_keys is on its way; fs->lock */
	int watch_long;	      /* atomic: names were cached for watch_timeout since the last sweep */
	int sync_count;	      /* atomic: the length of sync_waiters */
	guint moves;	      /* atomic: directories moved by reports (watch_moved()) */
	int watch_stop;	      /* atomic */
	unsigned list_epoch;  /* atomic: bumped when every list is dropped */
	size_t listed_total;  /* names in every node->names; fs->lock */
	GQueue listings;      /* struct listing*, least recently used first; fs->lock */
	size_t listing_names; /* entries in all of them; fs->lock */
	/* The directories of the last reports that found no list there, and their count; fs->lock. */
	struct dir_key unlisted[UNLISTED_RING];
	uint32_t unlisted_seq;
	/* Renames of directories made from here, their reports not in yet (see struct own_move). */
	GQueue own_moves;     /* struct own_move*, oldest first; fs->lock */
	uint64_t own_move_id; /* the last one's; fs->lock */

	/* The barrier (see "Barrier"), under sync_lock. */
	GMutex sync_lock;
	GList *sync_waiters;  /* struct sync_waiter*: barriers not answered yet */
	bool sync_closed;     /* qtfs_fs_stop() answered them all: answer at once */
	uint64_t seq_done;   /* the last WATCH reply the notifier is done with */
	unsigned seq_epoch;  /* the watch_epoch of seq_done's subscription */
	uint64_t sweep_next; /* the last sweep asked for by a barrier */
	uint64_t sweep_done; /* the last one the notifier finished */
};

/*
 * A POSIX lock owner (a process) that took locks on node @ino, and the
 * open file they went through.  Every later lock call of the owner on the
 * node goes through the same file, so that its locks live in one server
 * session (one host open file description, see server.c "File locks"),
 * and its close (FLUSH) tells that session to drop them.  Holds a
 * reference on @fh.
 */
struct lk_owner {
	fuse_ino_t ino;
	uint64_t owner;
	struct fh *fh;
};

/* Bytes of a pseudo file the host sent with its OPEN (QTFS_PREFETCH_*). */
struct prefetched {
	uint8_t *data; /* NULL: none */
	size_t len;
	bool all; /* the whole file */
};

struct fh {
	int refs; /* atomic: the kernel's file + calls borrowing it */
	GMutex lock;
	GMutex reopen_lock; /* held across a reopen's call, never by the loop thread */
	unsigned slot;
	uint64_t gen;
	uint64_t sh; /* the server's handle */
	int flags;
	fuse_ino_t ino;
	bool dir;
	bool pseudo;
	bool stream; /* relayed FIFO: calls have no deadline */
	bool relay;  /* a relayed FIFO's */
	bool relay_closing; /* its RELEASE is counted in fs->relay_closing */
	int wb_err; /* -errno of a write answered before the host's, for the next write, fsync or flush; lock */
	struct fuse_pollhandle *ph; /* the kernel's latest poll wait; protected by lock */
	uint32_t poll_want;	    /* events the kernel's waits want, since its last wake-up; lock */
	uint32_t poll_armed;	    /* events of the POLL wait outstanding on the server, or 0; lock */
	unsigned poll_gen;	    /* which POLL wait is the outstanding one; lock */
	uint32_t poll_seen;	    /* POLLPRI/POLLERR the wait took: see poll_woke(); lock */
	bool flocked;		    /* holds a flock on the host; fs->lk_lock */
	pid_t flock_pid;	    /* the process that took it; fs->lk_lock */
	unsigned lk_routes;	    /* fs->lk_owners entries routed through it; fs->lk_lock */
	/* The start of a pseudo file as read at open (see read_prefetched()); lock. */
	struct prefetched pre;
	size_t pre_pos; /* where the next sequential read starts */
	/* A directory (see "Listings kept across opens"); lock. */
	struct listing *listing; /* answers its READDIRs, or NULL */
	struct listing *reading; /* being filled by its READDIRs from offset 0 on, or NULL */
	guint reading_last;	 /* where the entries of the last READDIR begin in it */
};

/* ---- node table --------------------------------------------------------- */

static guint key_hash(gconstpointer p)
{
	const struct node *n = p;

	return g_int64_hash(&n->ino) ^ (guint)(n->dev * 0x9E3779B97F4A7C15ull >> 32);
}

/* The generation is not part of the key: one node per live host inode number (see node_learn_locked()). */
static gboolean key_equal(gconstpointer a, gconstpointer b)
{
	const struct node *x = a, *y = b;

	return x->dev == y->dev && x->ino == y->ino;
}

static guint name_hash(gconstpointer p)
{
	const struct node *n = p;

	return g_str_hash(n->name) ^ (guint)(n->parent->id * 0x9E3779B97F4A7C15ull >> 32);
}

static gboolean name_equal(gconstpointer a, gconstpointer b)
{
	const struct node *x = a, *y = b;

	return x->parent == y->parent && !strcmp(x->name, y->name);
}

static void node_free(struct qtfs_fs *fs, struct node *n);
static void listed_drop_locked(struct qtfs_fs *fs, struct node *d);

/* Drop @n's name (and its reference on its parent).  fs->lock held. */
static void node_unname(struct qtfs_fs *fs, struct node *n)
{
	struct node *p = n->parent;

	if (!p)
		return;
	p->names_gen++;
	g_hash_table_remove(fs->by_name, n);
	n->parent = NULL;
	g_clear_pointer(&n->name, g_free);
	p->children--;
	if (p->nlookup == 0 && p->children == 0 && p != fs->root)
		node_free(fs, p);
}

static void listing_unref(struct listing *l);

/* @n's memory, once it is in no table. */
static void node_destroy(struct node *n)
{
	listing_unref(n->listing);
	g_slist_free_full(n->aliases, g_free);
	g_free(n->name);
	g_list_free(n->fhs);
	g_list_free(n->dirfhs);
	g_free(n->post);
	if (n->names)
		g_hash_table_destroy(n->names);
	g_free(n);
}

static void listing_drop_locked(struct qtfs_fs *fs, struct node *n);
static void unwatch_note_locked(struct qtfs_fs *fs, const struct node *n);

static void node_free(struct qtfs_fs *fs, struct node *n)
{
	unwatch_note_locked(fs, n);
	node_unname(fs, n);
	g_hash_table_remove(fs->by_key, n);
	g_hash_table_remove(fs->by_id, &n->id);
	listed_drop_locked(fs, n);
	listing_drop_locked(fs, n);
	node_destroy(n);
}

/* Is @n @d or one of @d's ancestors?  fs->lock held. */
static bool node_above(const struct node *n, const struct node *d)
{
	for (; d; d = d->parent)
		if (d == n)
			return true;
	return false;
}

/* The node named @name in @parent, or NULL.  fs->lock held. */
static struct node *node_child_locked(struct qtfs_fs *fs, struct node *parent, const char *name)
{
	struct node probe = {.parent = parent, .name = (char *)name};

	return g_hash_table_lookup(fs->by_name, &probe);
}

/*
 * Give @n the name @name in @parent, displacing whoever had it.  Not
 * beneath itself: the host can show a directory there (a bind mount of
 * it inside itself), and its node would then be its own ancestor, which
 * every walk up the names (node_path_locked()) would follow forever.  It
 * keeps its name instead; the kernel, which holds one name per directory
 * too, answers such a lookup with ELOOP itself.  fs->lock held.
 */
static void node_name(struct qtfs_fs *fs, struct node *n, struct node *parent, const char *name)
{
	struct node *old;

	if (n->parent == parent && n->name && !strcmp(n->name, name))
		return;
	if (n->type == S_IFDIR && node_above(n, parent))
		return;
	old = node_child_locked(fs, parent, name);
	if (old && old != n)
		node_unname(fs, old);
	parent->children++; /* before unnaming, which may free the old parent */
	node_unname(fs, n);
	parent->names_gen++;
	n->parent = parent;
	n->name = g_strdup(name);
	g_hash_table_add(fs->by_name, n);
}

static struct node *node_by_id(struct qtfs_fs *fs, fuse_ino_t id)
{
	return g_hash_table_lookup(fs->by_id, &id);
}

/*
 * The kernel holds at most this many names of one file that are not its
 * node's current name, as far as the sweeps are concerned; past it the
 * oldest is dropped from the kernel's cache at once instead.
 */
#define ALIASES_MAX 64

static void inval_push_expire(struct qtfs_fs *fs, fuse_ino_t parent, const char *name);

/* Is (@parent, @name) in @n's aliases?  Removes it if so. */
static bool alias_take(struct node *n, fuse_ino_t parent, const char *name)
{
	for (GSList *l = n->aliases; l; l = l->next) {
		struct alias *al = l->data;

		if (al->parent == parent && !strcmp(al->name, name)) {
			n->aliases = g_slist_delete_link(n->aliases, l);
			g_free(al);
			return true;
		}
	}
	return false;
}

/*
 * @n, a file, is about to be renamed here by a lookup under another name:
 * its current name stays cached in the kernel too (a hard link; or a name
 * renamed away on the host, which its report will drop), so remember it for
 * the sweeps.  Only where names are cached for long (fs->can_expire).
 * fs->lock held.
 */
static void alias_note(struct qtfs_fs *fs, struct node *n, fuse_ino_t parent, const char *name)
{
	size_t len = strlen(name);
	struct alias *al;

	if (n->type == S_IFDIR || !fs->can_expire)
		return;
	alias_take(n, parent, name);
	if (g_slist_length(n->aliases) >= ALIASES_MAX) {
		GSList *last = g_slist_last(n->aliases);

		al = last->data;
		inval_push_expire(fs, al->parent, al->name);
		n->aliases = g_slist_delete_link(n->aliases, last);
		g_free(al);
	}
	al = g_malloc(sizeof(*al) + len + 1);
	al->parent = parent;
	memcpy(al->name, name, len + 1);
	n->aliases = g_slist_prepend(n->aliases, al);
}

static void alias_keep(struct qtfs_fs *fs, struct node *n)
{
	alias_note(fs, n, n->parent->id, n->name);
}

/*
 * The node for (dev, ino), created if new, with one more lookup, named
 * @name in @parent.  With @keep, the answer may be older than names taken
 * in since (a lookup that went out before a change of names in @parent,
 * and the kernel's revalidation of a name does not wait for those): no
 * node's name changes then, and the node gets this name only if it has
 * none and nobody else has it.  fs->lock held.
 */
static struct node *node_learn_keep_locked(struct qtfs_fs *fs, struct node *parent,
					   const char *name, const struct qtfs_attr *a, bool keep)
{
	uint64_t dev = a->dev, ino = a->ino;
	uint32_t mode = a->mode;
	struct node probe = {.dev = dev, .ino = ino};
	struct node *n = g_hash_table_lookup(fs->by_key, &probe);

	if (n && (n->type != (mode & S_IFMT) || n->gen != a->gen)) {
		/*
		 * The host reused the inode number for another file: the old
		 * node keeps its id (the kernel may still hold it) but leaves
		 * the key table, so its name no longer leads to the new file.
		 */
		g_hash_table_remove(fs->by_key, n);
		n->dev = 0;
		n->ino = 0;
		n = NULL;
	}
	if (!n) {
		n = g_new0(struct node, 1);
		n->id = ++fs->next_id;
		n->dev = dev;
		n->ino = ino;
		n->gen = a->gen;
		n->type = mode & S_IFMT;
		g_hash_table_insert(fs->by_id, &n->id, n);
		g_hash_table_add(fs->by_key, n);
	}
	n->pseudo = a->flags & QTFS_AF_PSEUDO;
	n->relay = a->flags & QTFS_AF_RELAY;
	n->nlookup++;
	if (parent && name && n != fs->root && keep) {
		if (!n->parent && !node_child_locked(fs, parent, name))
			node_name(fs, n, parent, name);
		else if (n->parent && (n->parent != parent || strcmp(n->name, name)))
			alias_note(fs, n, parent->id, name); /* the kernel holds it by that name too */
	} else if (parent && name && n != fs->root) {
		if (n->parent && (n->parent != parent || strcmp(n->name, name)))
			alias_keep(fs, n);
		alias_take(n, parent->id, name);
		node_name(fs, n, parent, name);
	}
	return n;
}

static struct node *node_learn_locked(struct qtfs_fs *fs, struct node *parent, const char *name,
				      const struct qtfs_attr *a)
{
	return node_learn_keep_locked(fs, parent, name, a, false);
}

/* The path of @n relative to the mount root, or NULL if its name is unknown.  fs->lock held. */
static char *node_path_locked(struct qtfs_fs *fs, struct node *n, const char *child)
{
	GPtrArray *parts = g_ptr_array_new();
	GString *s = g_string_new(NULL);

	if (child)
		g_ptr_array_add(parts, (gpointer)child);
	for (; n != fs->root; n = n->parent) {
		if (!n->parent) {
			g_ptr_array_free(parts, TRUE);
			g_string_free(s, TRUE);
			return NULL;
		}
		g_ptr_array_add(parts, n->name);
	}
	for (guint i = parts->len; i > 0; i--) {
		if (s->len)
			g_string_append_c(s, '/');
		g_string_append(s, g_ptr_array_index(parts, i - 1));
	}
	g_ptr_array_free(parts, TRUE);
	return g_string_free(s, FALSE);
}

/* Path of node @id (plus "/child" when given).  NULL: stale. */
static char *path_of(struct qtfs_fs *fs, fuse_ino_t id, const char *child)
{
	struct node *n;
	char *p = NULL;

	g_mutex_lock(&fs->lock);
	n = node_by_id(fs, id);
	if (n)
		p = node_path_locked(fs, n, child);
	g_mutex_unlock(&fs->lock);
	return p;
}

/* ---- FIFO relay ------------------------------------------------------------ */

static bool relay_path(const struct qtfs_fs *fs, const char *path)
{
	if (!fs->relay || !path)
		return false;
	for (char **p = fs->relay; *p; p++) {
		size_t n = strlen(*p);

		if (!strcmp(*p, "*") || n == 0)
			return true;
		if (!strncmp(path, *p, n) && (path[n] == '\0' || path[n] == '/'))
			return true;
	}
	return false;
}

static bool node_is_relay(struct qtfs_fs *fs, fuse_ino_t ino)
{
	struct node *n;
	bool relay = false;

	g_mutex_lock(&fs->lock);
	n = node_by_id(fs, ino);
	if (n)
		relay = n->relay;
	g_mutex_unlock(&fs->lock);
	return relay;
}

/* Show a host FIFO at @path (or of a node known to be relayed) as a relay. */
static void fix_attr(const struct qtfs_fs *fs, const char *path, bool known_relay, struct qtfs_attr *a)
{
	if (!S_ISFIFO(a->mode) || !(known_relay || relay_path(fs, path)))
		return;
	a->mode = S_IFREG | (a->mode & 07777);
	a->flags |= QTFS_AF_RELAY | QTFS_AF_PSEUDO;
	a->size = 0;
}

/* ---- replies -------------------------------------------------------------- */

/*
 * Answer @req with the error @err (positive), which is the host's errno
 * unchanged but for two.  ENOSYS from a FUSE daemon tells the kernel that
 * the operation is not implemented, and it never sends that operation on
 * this mount again: OPEN (every open file then has no handle), FLUSH (a
 * close then drops no POSIX lock), LOCK (locks then stay local), the
 * xattr calls, FSYNC (fsync then succeeds without asking), ACCESS, CREATE,
 * POLL, FALLOCATE, LSEEK, COPY_FILE_RANGE, RENAME with flags.  A host
 * call's ENOSYS, or a server that does not know a request, concerns that
 * one call: EOPNOTSUPP says so.  And EINTR tells the program that a
 * signal of its own cut the call short: the host ends a call with it only
 * when the client passed on the kernel's INTERRUPT, so one for a request
 * nobody interrupted comes from a broken server, and is EIO.
 */
static int reply_err(fuse_req_t req, int err)
{
	if (err == ENOSYS)
		err = EOPNOTSUPP;
	else if (err == EINTR && !fuse_req_interrupted(req))
		err = EIO;
	return fuse_reply_err(req, err);
}

static double attr_timeout(const struct qtfs_fs *fs, bool pseudo)
{
	return pseudo ? 0.0 : fs->o.attr_timeout;
}

static void to_stat(const struct qtfs_attr *a, struct stat *st)
{
	qtfs_attr_to_stat(a, st);
	/* Different host file systems may share inode numbers; the kernel keys on node ids. */
	st->st_dev = 0;
	/*
	 * The preferred I/O size, which the kernel also makes the inode's
	 * block size (its power of two, up to 2 GiB from a broken server's
	 * 4 GiB, and programs size their buffers by it): at most one
	 * request's worth, more is no better through this mount.
	 */
	st->st_blksize = MIN(st->st_blksize, (blksize_t)QTFS_IO_MAX);
}

static unsigned watch_epoch(struct qtfs_fs *fs)
{
	return (unsigned)g_atomic_int_get(&fs->watch_epoch);
}

/*
 * What a call's QTFS_AF_WATCHED and QTFS_AF_LISTED are checked against:
 * trust_epoch() before the call goes out, trusted() when its answer is
 * taken in.  Names missed (watch_missed()) and UNWATCH calls (see
 * "Forgotten directories") move it on.
 */
static unsigned trust_epoch(struct qtfs_fs *fs)
{
	return (unsigned)g_atomic_int_get(&fs->trust_epoch);
}

/* Nothing missed and no UNWATCH on its way since @epoch (busy first: see unwatch_done()). */
static bool trusted(struct qtfs_fs *fs, unsigned epoch)
{
	return !g_atomic_int_get(&fs->unwatch_busy) && epoch == trust_epoch(fs);
}

/*
 * How long the kernel may keep a name: watch_timeout where the host
 * watches its directory for us (QTFS_AF_WATCHED), the kernel can expire
 * names, the subscription is running, and nothing was missed since the call went out (@epoch, from
 * trust_epoch() before the call); entry_timeout elsewhere; never on
 * pseudo file systems.
 */
static double entry_timeout_of(struct qtfs_fs *fs, const struct qtfs_attr *a, unsigned epoch)
{
	if (a->flags & QTFS_AF_PSEUDO)
		return 0.0;
	if ((a->flags & QTFS_AF_WATCHED) && fs->can_expire && g_atomic_int_get(&fs->watch_on)) {
		/* Before the epoch is read: watch_missed() reads it after moving the epoch. */
		g_atomic_int_set(&fs->watch_long, 1);
		if (trusted(fs, epoch))
			return MAX(fs->o.watch_timeout, fs->o.entry_timeout);
	}
	return fs->o.entry_timeout;
}

/* A regular file with set-id bits in @a, which the kernel is to have (write_kills_setid()). */
static bool attr_setid(const struct qtfs_attr *a)
{
	return S_ISREG(a->mode) && (a->mode & (S_ISUID | S_ISGID));
}

static void fill_entry(struct qtfs_fs *fs, struct node *n, const struct qtfs_attr *a,
		       unsigned epoch, struct fuse_entry_param *e)
{
	bool pseudo = a->flags & QTFS_AF_PSEUDO;

	n->setid = attr_setid(a);
	memset(e, 0, sizeof(*e));
	e->ino = n->id;
	e->generation = a->gen;
	to_stat(a, &e->attr);
	e->attr_timeout = attr_timeout(fs, pseudo);
	e->entry_timeout = entry_timeout_of(fs, a, epoch);
}

/*
 * The kernel did not take the lookup reference an entry reply gave it
 * (the request was interrupted): give it back.
 */
static void node_unlearn(struct qtfs_fs *fs, struct node *n)
{
	g_mutex_lock(&fs->lock);
	if (--n->nlookup == 0 && n->children == 0 && n != fs->root)
		node_free(fs, n);
	g_mutex_unlock(&fs->lock);
}

struct list_mark;
static void listed_start_locked(struct qtfs_fs *fs, struct node *n, const struct qtfs_attr *a,
				unsigned epoch, const struct list_mark *lmark);

/*
 * Learn the node named @name in @parent from @a and answer the kernel with
 * it.  @epoch: trust_epoch() before the call that found it; @lmark,
 * for a MKDIR, list_mark_get() before it (else NULL); @names_gen, for a
 * LOOKUP, @parent's names_gen before it (else NULL: the kernel held the
 * directory's lock across the call).
 */
static void reply_entry_at(fuse_req_t req, struct qtfs_fs *fs, fuse_ino_t parent, const char *name,
			   const struct qtfs_attr *a, unsigned epoch, const struct list_mark *lmark,
			   const unsigned *names_gen)
{
	struct fuse_entry_param e;
	struct node *n, *p;

	g_mutex_lock(&fs->lock);
	p = node_by_id(fs, parent);
	n = node_learn_keep_locked(fs, p, name, a, names_gen && p && p->names_gen != *names_gen);
	if (n == fs->root) {
		/*
		 * The mount's root beneath itself (bind-mounted inside itself
		 * on the host).  The kernel fails a lookup answered with the
		 * root with EIO; a directory that would be its own ancestor is
		 * ELOOP everywhere else (node_name()).
		 */
		n->nlookup--;
		g_mutex_unlock(&fs->lock);
		reply_err(req, ELOOP);
		return;
	}
	fill_entry(fs, n, a, epoch, &e);
	/* Before the kernel has it: a create in it must find the list. */
	listed_start_locked(fs, n, a, epoch, lmark);
	g_mutex_unlock(&fs->lock);
	if (fuse_reply_entry(req, &e) != 0)
		node_unlearn(fs, n);
}

static void reply_entry_of(fuse_req_t req, struct qtfs_fs *fs, fuse_ino_t parent, const char *name,
			   const struct qtfs_attr *a, unsigned epoch, const struct list_mark *lmark)
{
	reply_entry_at(req, fs, parent, name, a, epoch, lmark, NULL);
}

static void reply_entry(fuse_req_t req, struct qtfs_fs *fs, fuse_ino_t parent, const char *name,
			const struct qtfs_attr *a, unsigned epoch)
{
	reply_entry_of(req, fs, parent, name, a, epoch, NULL);
}

/*
 * May attributes of file type @mode (as the host sent them, or @shown as
 * the kernel is to see them) go to the kernel for node @ino?  The kernel
 * takes a changed file type for a broken inode and fails everything on it
 * with EIO from then on (the mount itself, for the root): a name that now
 * names a file of another type is a new node, found by the next lookup,
 * and a GETATTR or SETATTR of the old one gets ESTALE instead.
 */
static bool attr_type_ok(struct qtfs_fs *fs, fuse_ino_t ino, uint32_t mode, uint32_t shown)
{
	struct node *n;
	bool ok;

	g_mutex_lock(&fs->lock);
	n = node_by_id(fs, ino);
	ok = !n || !n->type || n->type == (mode & S_IFMT) || n->type == (shown & S_IFMT);
	g_mutex_unlock(&fs->lock);
	return ok;
}

/* @a, the host's attributes of node @ino at @path, as the kernel is to see them; false if they may not go. */
static bool attr_for_kernel(struct qtfs_fs *fs, fuse_ino_t ino, const char *path, struct qtfs_attr *a)
{
	uint32_t mode = a->mode;

	fix_attr(fs, path, node_is_relay(fs, ino), a);
	return attr_type_ok(fs, ino, mode, a->mode);
}

/* The kernel is about to be told @a for node @ino: note what write_kills_setid() needs. */
static void attr_told(struct qtfs_fs *fs, fuse_ino_t ino, const struct qtfs_attr *a)
{
	struct node *n;

	g_mutex_lock(&fs->lock);
	if ((n = node_by_id(fs, ino)))
		n->setid = attr_setid(a);
	g_mutex_unlock(&fs->lock);
}

/* The attributes @a of node @ino, for the kernel's GETATTR or SETATTR @req. */
static void reply_attr(fuse_req_t req, struct qtfs_fs *fs, fuse_ino_t ino,
		       const struct qtfs_attr *a)
{
	struct stat st;

	attr_told(fs, ino, a);
	to_stat(a, &st);
	fuse_reply_attr(req, &st, attr_timeout(fs, a->flags & QTFS_AF_PSEUDO));
}

/* ---- calls ---------------------------------------------------------------- */

static struct qtfs_fs *FS(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/*
 * A call that may be sent again on another connection if its own breaks
 * (a query, or a change the host makes the same twice); changes of names
 * go through call_change() instead.
 */
static int call(struct qtfs_fs *fs, struct qt_msg *m, struct qt_msg **rep)
{
	return qtfs_client_call(fs->cl, m, QTFS_REPEAT, rep);
}

/* A reply that is one attribute record.  0, or -EIO when it is malformed. */
static int rd_attr_reply(const struct qt_msg *rep, struct qtfs_attr *a)
{
	struct qt_rd r;

	qt_rd_init_msg(&r, rep);
	return qtfs_rd_attr(&r, a) < 0 || qt_rd_end(&r) < 0 ? -EIO : 0;
}

/* A call with an empty reply. */
static int call_void(struct qtfs_fs *fs, struct qt_msg *m)
{
	g_autoptr(qt_msg) rep = NULL;

	return call(fs, m, &rep);
}

/* A directory's attributes after a change, as a reply ends with them (see the top). */
struct dir_attr {
	bool have;
	struct qtfs_attr a;
};

/* The next of a reply's directory records; none from a server that sends none.  0 or -EIO. */
static int rd_dir_attr(struct qt_rd *r, struct dir_attr *d)
{
	uint8_t have = 0;

	d->have = false;
	if (r->left == 0 && r->err == 0)
		return 0;
	if (qt_rd_u8(r, &have) < 0 || have > 1 || (have && qtfs_rd_attr(r, &d->a) < 0))
		return -EIO;
	d->have = have;
	return 0;
}

/* Keep @d for the next GETATTR of directory @ino, if it is still that directory. */
static void post_attr_keep(struct qtfs_fs *fs, fuse_ino_t ino, const struct dir_attr *d)
{
	struct node *n;

	if (!d->have || fs->o.attr_timeout <= 0 || (d->a.flags & QTFS_AF_PSEUDO) ||
	    !S_ISDIR(d->a.mode))
		return;
	g_mutex_lock(&fs->lock);
	n = node_by_id(fs, ino);
	if (n && n->dev == d->a.dev && n->ino == d->a.ino) {
		if (!n->post)
			n->post = g_new(struct post_attr, 1);
		n->post->a = d->a;
		n->post->at_us = g_get_monotonic_time();
	}
	g_mutex_unlock(&fs->lock);
}

/*
 * Forget the attributes kept for node @n: they are older than what the
 * kernel now has (a SETATTR) or than the directory itself (a change the
 * host reported).  fs->lock held.
 */
static void post_attr_drop_locked(struct node *n)
{
	g_clear_pointer(&n->post, g_free);
}

/* Take @ino's kept attributes if they are younger than attr_timeout; *@valid: for how long still. */
static bool post_attr_take(struct qtfs_fs *fs, fuse_ino_t ino, struct qtfs_attr *a, double *valid)
{
	struct node *n;
	bool ok = false;

	g_mutex_lock(&fs->lock);
	n = node_by_id(fs, ino);
	if (n && n->post) {
		double age = (double)(g_get_monotonic_time() - n->post->at_us) / 1e6;

		if (age < fs->o.attr_timeout) {
			*a = n->post->a;
			*valid = fs->o.attr_timeout - age;
			ok = true;
		}
		g_clear_pointer(&n->post, g_free);
	}
	g_mutex_unlock(&fs->lock);
	return ok;
}

/* A reply that is @n directory records (UNLINK, RMDIR: one; RENAME: two).  0 or -EIO. */
static int rd_dirs_reply(const struct qt_msg *rep, struct dir_attr *d, unsigned n)
{
	struct qt_rd r;

	qt_rd_init_msg(&r, rep);
	for (unsigned i = 0; i < n; i++)
		if (rd_dir_attr(&r, &d[i]) < 0)
			return -EIO;
	return qt_rd_end(&r) < 0 ? -EIO : 0;
}

/* A reply of an attribute record, then the parent's record.  0 or -EIO. */
static int rd_entry_reply(const struct qt_msg *rep, struct qtfs_attr *a, struct dir_attr *d)
{
	struct qt_rd r;

	qt_rd_init_msg(&r, rep);
	return qtfs_rd_attr(&r, a) < 0 || rd_dir_attr(&r, d) < 0 || qt_rd_end(&r) < 0 ? -EIO : 0;
}

/*
 * Lookup, getattr by path, unlink and rmdir do not wait for their reply:
 * they run on the client's loop thread (session.c), send their call and
 * return, and the loop thread answers the kernel when the reply comes
 * (qtfs_client_call_async_any()).  No thread is parked per call in
 * flight, and none has to be woken for the reply.  What the answer needs
 * is kept here until then.
 */
struct pending {
	fuse_req_t req;
	unsigned epoch; /* trust_epoch() when the call went out */
	fuse_ino_t ino; /* lookup, unlink, rmdir: the parent; getattr: the node */
	uint16_t op;	/* unlink, rmdir: QTFS_UNLINK or QTFS_RMDIR */
	unsigned names_gen; /* lookup: the parent's when the call went out */
	uint64_t instance; /* unlink, rmdir: the server's it went out to (qtfs_client_call_async_change()) */
	gint64 until;	/* unlink, rmdir lost (remove_lost()): the deadline of settling it */
	struct wb_snap *wb; /* lookup: the files with writes on their way when it went out */
	char *path;	/* the host path the call named */
	char name[];	/* lookup, unlink, rmdir: the name in the parent */
};

static struct pending *pending_new(fuse_req_t req, fuse_ino_t ino, char *path, const char *name)
{
	size_t len = name ? strlen(name) + 1 : 1;
	struct pending *p = g_malloc(sizeof(*p) + len);

	p->req = req;
	p->epoch = trust_epoch(FS(req));
	p->ino = ino;
	p->op = 0;
	p->names_gen = 0;
	p->instance = 0;
	p->until = 0;
	p->wb = NULL;
	p->path = path;
	memcpy(p->name, name ? name : "", len);
	return p;
}

static void pending_free(struct pending *p)
{
	g_free(p->wb);
	g_free(p->path);
	g_free(p);
}

/* call() without waiting: @done(@p, ...) runs on the loop thread. */
static void call_async(struct qtfs_fs *fs, struct qt_msg *m, qtfs_done_fn done, struct pending *p)
{
	qtfs_client_call_async_any(fs->cl, m, QTFS_REPEAT, done, p);
}

/* The attributes of an asynchronous reply, or -errno. */
static int async_attr(int err, struct qt_msg *rep, struct qtfs_attr *a)
{
	if (err == 0)
		err = rd_attr_reply(rep, a);
	qt_msg_free(rep);
	return err;
}

/*
 * An asynchronous call on an open file's connection may find that
 * connection replaced (-ESTALE).  Reopening the file by path is a
 * synchronous call, which the loop thread must not make, so such a
 * completion runs the operation again, synchronously, on this small pool:
 * @redo(@p, true).  Once qtfs_fs_stop() has drained the pool, @redo(@p,
 * false) must fail the operation instead.
 */
typedef void (*redo_fn)(void *p, bool run);

struct slow_job {
	redo_fn redo;
	void *p;
};

static void slow_run(gpointer data, gpointer user)
{
	struct slow_job *j = data;

	(void)user;
	j->redo(j->p, true);
	g_free(j);
}

static void slow_push(struct qtfs_fs *fs, redo_fn redo, void *p)
{
	struct slow_job *j = g_new(struct slow_job, 1);

	j->redo = redo;
	j->p = p;
	g_mutex_lock(&fs->slow_lock);
	if (fs->slow) {
		g_thread_pool_push(fs->slow, j, NULL);
		j = NULL;
	}
	g_mutex_unlock(&fs->slow_lock);
	if (j) {
		redo(p, false);
		g_free(j);
	}
}

/*
 * @fn(@p, true) for work that waits for the host: here, or on the slow
 * pool when called on the loop thread (session.c), which must not wait.
 */
static void run_may_wait(struct qtfs_fs *fs, redo_fn fn, void *p)
{
	if (qt_loop_in_thread(qtfs_client_loop(fs->cl)))
		slow_push(fs, fn, p);
	else
		fn(p, true);
}

static struct qt_msg *req_path(uint16_t op, const char *path)
{
	struct qt_msg *m = qt_msg_new(op, 0, 0);

	qt_msg_put_str(m, path);
	return m;
}

/* ---- changes whose answer was lost ---------------------------------------- */

/*
 * A change of names (mknod, mkdir, symlink, link, rename, unlink, rmdir;
 * create below) whose connection breaks before its answer comes may or
 * may not have been made: the request may not have reached the host, or
 * the answer may not have come back (qtfs-server killed, or the link
 * lost, after the change).  EIO either way would leave the kernel's names
 * wrong in the second case, and an overlayfs with its upper layer on the
 * mount (containerd's snapshots) then answers ESTALE for that name for as
 * long as it keeps it.  So once a connection is back the client looks at
 * the host: a change found made is answered as made (without the
 * directory attributes its answer carries); one found not made is sent
 * again, and anything else is EIO; all within the call's deadline.  But a
 * live server may have had the first request queued or running when the
 * link went, and carry it out after the look: the change is then made
 * twice.  That is harmless for a change whose second making fails without
 * changing anything (mknod, mkdir, symlink, link: EEXIST; a create with
 * O_EXCL, or without O_TRUNC, which then opens the file), and those are
 * sent again to any server.  The others (a rename or an unlink made twice
 * would move or remove what the caller put at the name since, an exchange
 * would swap back, a create with O_TRUNC would empty what was written
 * since) are sent again only to a server that was restarted meanwhile
 * (another instance in the MOUNT reply: the process that had the request
 * is gone and cannot carry it out any more); else they are EIO.  An error
 * answer to a change sent again is looked at the same way as a loss.
 *
 * Made means: a rename, that the old name is gone and the new one holds
 * the file the old one held (both swapped, for RENAME_EXCHANGE); an unlink
 * or rmdir, that the name no longer holds the file it held; a link, that
 * the new name holds the file; a mknod, mkdir or symlink, that the name
 * holds a file of that type (a device with that number, a symlink with a
 * target that long).  The files are the nodes' host identities (dev, ino,
 * generation), known since the kernel looked the names up.  What the look
 * cannot tell apart is the same change made by another process on the
 * host at that moment (a directory of the same name): it takes that for
 * our own.
 */
enum settled { CH_MADE, CH_NOT_MADE, CH_UNKNOWN };

struct host_id {
	bool known;
	uint64_t dev, ino, gen;
};

struct change {
	uint16_t op;
	const char *path;     /* the name changed (rename, link: the old one, the file's) */
	const char *to;	      /* rename, link: the new name */
	struct host_id a, b;  /* what path (link: the file) and, for RENAME_EXCHANGE, to held */
	bool exchange;
	bool twice_ok;	      /* made twice, the second fails and changes nothing (see above) */
	uint64_t instance;    /* the server's it was last sent to (qtfs_client_call_change()) */
	uint32_t type;	      /* mknod, mkdir, symlink: S_IFMT of the new file */
	uint64_t rdev;	      /* mknod of a device */
	uint64_t target_len;  /* symlink */
	struct qtfs_attr made; /* mknod, mkdir, symlink, link: the new name's attributes, once made */
};

/* At most this many sends of one change (the first and two more). */
#define CHANGE_SENDS 3

static struct host_id node_host_id(const struct node *n)
{
	return n ? (struct host_id){.known = true, .dev = n->dev, .ino = n->ino, .gen = n->gen}
		 : (struct host_id){.known = false};
}

/* What the node at @ino holds on the host, as far as the node table knows. */
static struct host_id host_id_of(struct qtfs_fs *fs, fuse_ino_t ino)
{
	struct host_id id;

	g_mutex_lock(&fs->lock);
	id = node_host_id(node_by_id(fs, ino));
	g_mutex_unlock(&fs->lock);
	return id;
}

static bool holds(const struct qtfs_attr *a, const struct host_id *id)
{
	return id->known && a->dev == id->dev && a->ino == id->ino && a->gen == id->gen;
}

/* What RENAME_WHITEOUT leaves at the old name: a character device 0:0. */
static bool is_whiteout(const struct qtfs_attr *a)
{
	return S_ISCHR(a->mode) && a->rdev == 0;
}

/* The host's attributes of @path now, into @a: 0, -ENOENT, another -errno. */
static int look(struct qtfs_fs *fs, const char *path, gint64 until, struct qtfs_attr *a)
{
	g_autoptr(qt_msg) rep = NULL;
	int err = qtfs_client_call_until(fs->cl, req_path(QTFS_LOOKUP, path), QTFS_REPEAT, until, &rep);

	return err < 0 ? err : rd_attr_reply(rep, a);
}

static enum settled change_settled(struct qtfs_fs *fs, struct change *ch, gint64 until)
{
	struct qtfs_attr a, b;
	int ea, eb;

	switch (ch->op) {
	case QTFS_RENAME:
		ea = look(fs, ch->path, until, &a);
		eb = look(fs, ch->to, until, &b);
		if ((ea < 0 && ea != -ENOENT) || (eb < 0 && eb != -ENOENT))
			return CH_UNKNOWN;
		if (ch->exchange) {
			if (!ch->a.known || !ch->b.known || ea < 0 || eb < 0)
				return CH_UNKNOWN;
			return holds(&a, &ch->b) && holds(&b, &ch->a)	? CH_MADE
			       : holds(&a, &ch->a) && holds(&b, &ch->b) ? CH_NOT_MADE
									: CH_UNKNOWN;
		}
		/* (With RENAME_WHITEOUT the old name holds a whiteout once made.) */
		if (ch->a.known)
			return eb == 0 && holds(&b, &ch->a) && !(ea == 0 && holds(&a, &ch->a)) ? CH_MADE
			       : ea == 0 && holds(&a, &ch->a)				     ? CH_NOT_MADE
											     : CH_UNKNOWN;
		/* What the old name held is not known (another name of a hard link): by the names. */
		return ea == 0 && !is_whiteout(&a) ? CH_NOT_MADE : eb == 0 ? CH_MADE : CH_UNKNOWN;
	case QTFS_UNLINK:
	case QTFS_RMDIR:
		ea = look(fs, ch->path, until, &a);
		if (ea < 0)
			return ea == -ENOENT ? CH_MADE : CH_UNKNOWN;
		/* Not known: by the name (sent again, it removes what is there now). */
		return !ch->a.known || holds(&a, &ch->a) ? CH_NOT_MADE : CH_MADE;
	case QTFS_LINK:
		eb = look(fs, ch->to, until, &ch->made);
		if (eb < 0)
			return eb == -ENOENT ? CH_NOT_MADE : CH_UNKNOWN;
		/* Another file there: sent again, the host says EEXIST. */
		return holds(&ch->made, &ch->a) ? CH_MADE : CH_NOT_MADE;
	default: /* mknod, mkdir, symlink */
		ea = look(fs, ch->path, until, &ch->made);
		if (ea < 0)
			return ea == -ENOENT ? CH_NOT_MADE : CH_UNKNOWN;
		a = ch->made;
		if ((a.mode & S_IFMT) != ch->type || ((S_ISCHR(a.mode) || S_ISBLK(a.mode)) && a.rdev != ch->rdev) ||
		    (S_ISLNK(a.mode) && (uint64_t)a.size != ch->target_len))
			return CH_NOT_MADE;
		return CH_MADE;
	}
}

/*
 * Is the server another process than instance @instance (0: not known)?
 * @instance is that of the server the last send went out to: not the one
 * known when the call began (the server may be restarted while a call
 * waits for a connection, and the call go to the new one), nor the first
 * send's (one sent again to a restarted server and lost again may still
 * be carried out by that one).
 */
static bool restarted(struct qtfs_fs *fs, uint64_t instance)
{
	uint64_t now = qtfs_client_instance(fs->cl);

	return instance && now && now != instance;
}

/*
 * Settle change @ch, whose call ended with @err, as above: look at the
 * host and send @m (a copy of the call; taken) again while it is found not
 * made.  0 with *@rep the reply, or NULL when a look found it made; -errno.
 */
static int change_settle(struct qtfs_fs *fs, struct change *ch, struct qt_msg *m, int err, gint64 until,
			 struct qt_msg **rep)
{
	bool again = false;

	for (unsigned sends = 1;; sends++) {
		enum settled st;

		if (err == 0 || err == -ETIMEDOUT || (err != -QTFS_ELOST && !again))
			break;
		st = change_settled(fs, ch, until);
		if (st == CH_MADE) {
			qt_info("%s \"%s\": the connection went before the answer; found made on the host",
				qtfs_op_name(ch->op), ch->path);
			err = 0;
			break;
		}
		/* The same server may still carry the first out: not sent again (see above). */
		if (err == -QTFS_ELOST && st == CH_NOT_MADE && !ch->twice_ok &&
		    !restarted(fs, ch->instance)) {
			qt_notice("%s \"%s\": the connection went before the answer and the host does "
				  "not show it made, but the server that had it may still make it: "
				  "EIO", qtfs_op_name(ch->op), ch->path);
			err = -EIO;
			break;
		}
		if (err == -QTFS_ELOST && st == CH_NOT_MADE && sends < CHANGE_SENDS &&
		    g_get_monotonic_time() < until) {
			qt_info("%s \"%s\": the connection went before the answer; not made on the host, "
				"sent again", qtfs_op_name(ch->op), ch->path);
			/* Lost again, it is the server this one went to that may still have it. */
			err = qtfs_client_call_change(fs->cl, qt_msg_dup(m), until, rep, &ch->instance);
			again = true;
			continue;
		}
		if (err == -QTFS_ELOST) {
			qt_notice("%s \"%s\": the connection went before the answer, and the host does not "
				  "show whether it was made: EIO", qtfs_op_name(ch->op), ch->path);
			err = -EIO;
		}
		break;
	}
	qt_msg_free(m);
	return err;
}

/* Send change @m (taken) and settle it as above. */
static int call_change(struct qtfs_fs *fs, struct qt_msg *m, struct change *ch, struct qt_msg **rep)
{
	gint64 until = g_get_monotonic_time() + (gint64)qtfs_client_timeout_ms(fs->cl) * 1000;
	int err;

	*rep = NULL;
	err = qtfs_client_call_change(fs->cl, qt_msg_dup(m), until, rep, &ch->instance);
	return change_settle(fs, ch, m, err, until, rep);
}

/* ---- listings ---------------------------------------------------------------- */

/* An entry of a listing: what a READDIR reply carries of it. */
struct listing_ent {
	uint64_t ino;	  /* d_ino */
	uint64_t next;	  /* the host's offset of the entry after it (d_off) */
	const char *name; /* in the listing's names */
	uint8_t type;	  /* d_type */
};

/*
 * The names of a directory as read through one open of it, from offset 0
 * to the end (see "Listings kept across opens").  Immutable once complete;
 * the node and the open directories answered from it hold references.
 */
struct listing {
	int refs;	     /* atomic */
	uint64_t dev, ino, gen; /* the directory */
	struct data_ver ver; /* its attributes at that open */
	GArray *ents;	     /* struct listing_ent */
	GStringChunk *names;
	GHashTable *by_next; /* complete: &ent.next -> 1 + the index of the entry after it */
	struct node *owner;  /* the node holding it, or NULL; fs->lock */
	GList lru;	     /* in fs->listings while a node holds it; fs->lock */
	bool keep;	     /* kept to answer later opens (listing_wanted()) */
	/*
	 * Read for a list of the directory's names too ("listed
	 * directories"): the host watches it for new names since the READDIR
	 * from offset 0, which went out at list_epoch, trust_epoch (in
	 * @watch_epoch) and the node's made_gen below.
	 */
	bool list;
	unsigned list_epoch, watch_epoch, made_gen;
};

static void listing_unref(struct listing *l)
{
	if (!l || !g_atomic_int_dec_and_test(&l->refs))
		return;
	if (l->by_next)
		g_hash_table_destroy(l->by_next);
	g_array_free(l->ents, TRUE);
	g_string_chunk_free(l->names);
	g_free(l);
}

/* @n's listing goes.  fs->lock held. */
static void listing_drop_locked(struct qtfs_fs *fs, struct node *n)
{
	struct listing *l = g_steal_pointer(&n->listing);

	if (!l)
		return;
	g_queue_unlink(&fs->listings, &l->lru);
	fs->listing_names -= l->ents->len;
	l->owner = NULL;
	listing_unref(l);
}

/* ---- handles ---------------------------------------------------------------- */

static struct fh *fh_of(struct fuse_file_info *fi)
{
	return (struct fh *)(uintptr_t)fi->fh;
}

/* Open @path on some connection; fills slot, gen, handle and the file's attributes. */
/*
 * How much of a pseudo file an OPEN asks the host to send along (see
 * "prefetch" in server.c): enough for /proc/meminfo, /proc/PID/status and
 * the cgroup statistics files, which are what a management plane reads
 * over and over, while a large file (/proc/PID/maps of a big process)
 * is not read twice for nothing.
 */
#define PREFETCH_WANT (16u << 10)

/* Read the prefetch section of an OPEN reply into @pre (NULL: skip it). */
static int rd_prefetch(struct qt_rd *r, struct prefetched *pre)
{
	const uint8_t *p;
	size_t n;
	uint32_t state;

	if (qt_rd_u32(r, &state) < 0)
		return -EIO;
	if (state == QTFS_PREFETCH_NONE)
		return 0;
	if (state > QTFS_PREFETCH_ALL || qt_rd_bytes(r, PREFETCH_WANT, &p, &n) < 0)
		return -EIO;
	if (pre) {
		pre->data = g_memdup2(p, n);
		pre->len = n;
		pre->all = state == QTFS_PREFETCH_ALL;
	}
	return 0;
}

/*
 * The reply to OPEN, OPENDIR or CREATE: the handle and attributes, then
 * for OPEN (@is_open) the prefetch section, kept in @pre if not NULL.
 */
static int rd_handle_reply(const struct qt_msg *rep, uint64_t *sh, struct qtfs_attr *a,
			   bool is_open, struct prefetched *pre, struct dir_attr *d)
{
	struct qt_rd r;

	qt_rd_init_msg(&r, rep);
	return qt_rd_u64(&r, sh) < 0 || qtfs_rd_attr(&r, a) < 0 ||
			       (is_open && rd_prefetch(&r, pre) < 0) || (d && rd_dir_attr(&r, d) < 0) ||
			       qt_rd_end(&r) < 0
		       ? -EIO
		       : 0;
}

/* OPEN of @path; @prefetch: ask for the file's first bytes (see rd_prefetch()). */
static struct qt_msg *req_open(const char *path, int flags, bool prefetch)
{
	struct qt_msg *m = req_path(QTFS_OPEN, path);

	qt_msg_put_u32(m, (uint32_t)flags);
	qt_msg_put_u32(m, prefetch ? PREFETCH_WANT : 0);
	return m;
}

/*
 * OPEN or OPENDIR @path on some connection.  @pre: for OPEN, where the
 * start of a pseudo file goes when the host sends it (NULL: not wanted).
 */
static int open_remote(struct qtfs_fs *fs, const char *path, int flags, bool dir, bool stream,
		       unsigned *slot, uint64_t *gen, uint64_t *sh, struct qtfs_attr *a,
		       struct prefetched *pre)
{
	gint64 until = g_get_monotonic_time() + (gint64)qtfs_client_timeout_ms(fs->cl) * 1000;

	for (int attempt = 0; attempt < 3; attempt++) {
		g_autoptr(qt_msg) rep = NULL;
		struct qt_msg *m = dir ? req_path(QTFS_OPENDIR, path) : req_open(path, flags, pre != NULL);
		int err;

		/*
		 * Again after a lost connection: on another one, or that one
		 * once it is back.  Its slot may look ready for a moment after
		 * the connection went (the loop thread has yet to take in its
		 * end), and three quick tries there ended in EIO.
		 */
		err = attempt ? qtfs_client_pick_other(fs->cl, until, slot, gen)
			      : qtfs_client_pick(fs->cl, slot, gen);
		if (err < 0) {
			qt_msg_free(m);
			return err;
		}
		err = qtfs_client_call_on(fs->cl, *slot, *gen, m, stream ? QTFS_NO_DEADLINE : 0, &rep);
		if (err == -ESTALE)
			continue;
		if (err < 0)
			return err;
		return rd_handle_reply(rep, sh, a, !dir, pre, NULL);
	}
	return -EIO;
}

static struct fh *fh_new(fuse_ino_t ino, int flags, bool dir, unsigned slot, uint64_t gen,
			 uint64_t sh, bool pseudo)
{
	struct fh *h = g_new0(struct fh, 1);

	h->refs = 1;
	g_mutex_init(&h->lock);
	g_mutex_init(&h->reopen_lock);
	h->ino = ino;
	h->flags = flags;
	h->dir = dir;
	h->slot = slot;
	h->gen = gen;
	h->sh = sh;
	h->pseudo = pseudo;
	return h;
}

static void fh_unref(struct fh *h)
{
	if (!g_atomic_int_dec_and_test(&h->refs))
		return;
	listing_unref(h->listing);
	listing_unref(h->reading);
	g_free(h->pre.data);
	g_mutex_clear(&h->lock);
	g_mutex_clear(&h->reopen_lock);
	g_free(h);
}

/* Record @h as open on its node (the kernel now holds it). */
static void fh_attach(struct qtfs_fs *fs, struct fh *h)
{
	struct node *n;

	g_mutex_lock(&fs->lock);
	n = node_by_id(fs, h->ino);
	if (n && h->dir)
		n->dirfhs = g_list_prepend(n->dirfhs, h);
	else if (n)
		n->fhs = g_list_prepend(n->fhs, h);
	g_mutex_unlock(&fs->lock);
}

static void fh_detach(struct qtfs_fs *fs, struct fh *h)
{
	struct node *n;

	g_mutex_lock(&fs->lock);
	n = node_by_id(fs, h->ino);
	if (n && h->dir)
		n->dirfhs = g_list_remove(n->dirfhs, h);
	else if (n)
		n->fhs = g_list_remove(n->fhs, h);
	g_mutex_unlock(&fs->lock);
}

/*
 * The kernel is done with @h (released, or never took it because its open
 * reply failed): close the server's handle, fire and forget, drop any poll
 * wait, and drop the kernel's reference.
 */
static struct qt_msg *build_release(uint64_t sh)
{
	struct qt_msg *m = qt_msg_new(QTFS_RELEASE, 0, 0);

	qt_msg_put_u64(m, sh);
	return m;
}

/*
 * A relayed FIFO's RELEASE on its way.  The host closes the FIFO on its
 * pool, and a later OPEN of it may go on another connection or reach
 * another of the pool's threads first: it would meet the reader or writer
 * closed here still open on the host and not wait for the real one (a
 * write open went on at once, its bytes into a pipe whose only reader was
 * about to close: lost, or EPIPE).  So an OPEN of a relayed FIFO waits
 * until the host has closed it for every close before (relay_open_wait()).
 * Counted on the loop thread as the RELEASE is read, before the OPEN after
 * it is.
 */
static void relay_closing_add(struct qtfs_fs *fs, struct fh *h)
{
	guint64 key = h->ino;
	guint n;

	if (!h->relay || h->relay_closing)
		return;
	h->relay_closing = true;
	g_mutex_lock(&fs->relay_lock);
	n = GPOINTER_TO_UINT(g_hash_table_lookup(fs->relay_closing, &key));
	g_hash_table_insert(fs->relay_closing, g_memdup2(&key, sizeof(key)),
			    GUINT_TO_POINTER(n + 1));
	g_mutex_unlock(&fs->relay_lock);
}

static void relay_closed(struct qtfs_fs *fs, fuse_ino_t ino)
{
	guint64 key = ino;
	guint left;

	g_mutex_lock(&fs->relay_lock);
	left = GPOINTER_TO_UINT(g_hash_table_lookup(fs->relay_closing, &key));
	if (left > 1)
		g_hash_table_insert(fs->relay_closing, g_memdup2(&key, sizeof(key)),
				    GUINT_TO_POINTER(left - 1));
	else
		g_hash_table_remove(fs->relay_closing, &key);
	g_cond_broadcast(&fs->relay_cond);
	g_mutex_unlock(&fs->relay_lock);
}

struct relay_release {
	struct qtfs_fs *fs;
	fuse_ino_t ino;
};

static void relay_release_done(void *arg, int err, struct qt_msg *rep)
{
	struct relay_release *r = arg;

	(void)err;
	qt_msg_free(rep);
	relay_closed(r->fs, r->ino);
	g_free(r);
}

/* Wait (on a blocker thread) until the host closed relayed FIFO @ino for every close before. */
static int relay_open_wait(struct qtfs_fs *fs, fuse_req_t req, fuse_ino_t ino)
{
	guint64 key = ino;
	int err = 0;

	g_mutex_lock(&fs->relay_lock);
	while (g_hash_table_contains(fs->relay_closing, &key)) {
		if (fuse_req_interrupted(req)) {
			err = -EINTR;
			break;
		}
		g_cond_wait_until(&fs->relay_cond, &fs->relay_lock,
				  g_get_monotonic_time() + 50 * G_TIME_SPAN_MILLISECOND);
	}
	g_mutex_unlock(&fs->relay_lock);
	return err;
}

static void fh_close_wait(struct qtfs_fs *fs, struct fh *h, bool wait)
{
	struct qt_msg *m;
	unsigned slot;
	uint64_t gen;

	relay_closing_add(fs, h);
	fh_detach(fs, h);
	g_mutex_lock(&h->lock);
	m = build_release(h->sh);
	slot = h->slot;
	gen = h->gen;
	if (h->ph) {
		fuse_pollhandle_destroy(h->ph);
		h->ph = NULL;
	}
	g_mutex_unlock(&h->lock);
	if (wait) {
		g_autoptr(qt_msg) rep = NULL;

		qtfs_client_call_on(fs->cl, slot, gen, m, 0, &rep);
		if (h->relay_closing)
			relay_closed(fs, h->ino);
	} else if (h->relay_closing) {
		struct relay_release *r = g_new(struct relay_release, 1);

		*r = (struct relay_release){.fs = fs, .ino = h->ino};
		qtfs_client_call_cb(fs->cl, slot, gen, m, qtfs_client_timeout_ms(fs->cl),
				    relay_release_done, r);
	} else {
		qtfs_client_call_async(fs->cl, slot, gen, m);
	}
	fh_unref(h);
}

static void fh_close(struct qtfs_fs *fs, struct fh *h)
{
	fh_close_wait(fs, h, false);
}

/*
 * Some open handle of node @ino (a reference), a directory's for a
 * directory, for requests the kernel sends without one (see attr_fh()).
 * NULL when none is open.
 */
static struct fh *node_fh(struct qtfs_fs *fs, fuse_ino_t ino)
{
	struct fh *h = NULL;
	struct node *n;

	g_mutex_lock(&fs->lock);
	n = node_by_id(fs, ino);
	/* Not a relayed FIFO's if there is another: calls on it wait behind its blocking ones. */
	for (GList *l = !n ? NULL : n->type == S_IFDIR ? n->dirfhs : n->fhs; l; l = l->next) {
		h = l->data;
		if (!h->stream)
			break;
	}
	if (h)
		g_atomic_int_inc(&h->refs);
	g_mutex_unlock(&fs->lock);
	return h;
}

/*
 * The handle a GETATTR or SETATTR of @ino goes through, or NULL for its
 * path (@path, NULL if it has none left): the kernel's when it names one
 * (@fi), else one the file is open by here.  An open file is the node
 * wherever the host has moved it since: by path, an fstat() or fchmod()
 * of a file that the host renamed, unlinked or replaced meanwhile would
 * fail with ENOENT or reach the other file.  A relayed FIFO's handle only
 * when there is no path (see node_fh()).  A reference, unless @fi's.
 */
static struct fh *attr_fh(struct qtfs_fs *fs, fuse_ino_t ino, struct fuse_file_info *fi, const char *path)
{
	struct fh *h;

	if (fi && fi->fh)
		return fh_of(fi);
	h = node_fh(fs, ino);
	if (h && h->stream && path)
		g_clear_pointer(&h, fh_unref);
	return h;
}

/*
 * Is the host file of attributes @a the one node @ino stands for?  Not
 * asked of pseudo files: procfs numbers an inode afresh each time it is
 * made, so the same file can come back under another number.
 */
static bool node_is(struct qtfs_fs *fs, fuse_ino_t ino, const struct qtfs_attr *a)
{
	struct node *n;
	bool same;

	g_mutex_lock(&fs->lock);
	n = node_by_id(fs, ino);
	same = n && (n->pseudo || (n->dev == a->dev && n->ino == a->ino && n->gen == a->gen));
	g_mutex_unlock(&fs->lock);
	return same;
}

/*
 * An OPEN or OPENDIR of node @ino by its path ended with @err and, if 0,
 * handle @sh on slot @slot at @gen of the host file of attributes @a.  The
 * kernel opened a name it holds, so "no such file" there, or another file
 * at it (renamed over on the host, its report still on its way; or a
 * change of names whose reply came before an older lookup's), means that
 * name is stale: -ESTALE (the handle closed), and the kernel looks the
 * name up again and retries the open once (LOOKUP_REVAL), rather than have
 * node @ino read and write another file.
 */
static int opened_node(struct qtfs_fs *fs, fuse_ino_t ino, int err, unsigned slot, uint64_t gen,
		       uint64_t sh, const struct qtfs_attr *a)
{
	if (err == -ENOENT)
		return -ESTALE;
	if (err < 0 || node_is(fs, ino, a))
		return err;
	qtfs_client_call_async(fs->cl, slot, gen, build_release(sh));
	return -ESTALE;
}

/* The connection of @h is gone: open the file again by path (see the top). */
static int fh_reopen(struct qtfs_fs *fs, struct fh *h, uint64_t stale_gen, unsigned stale_slot)
{
	g_autofree char *path = NULL;
	struct qtfs_attr a;
	unsigned slot;
	uint64_t gen, sh;
	bool done;
	int err, rc;

	g_mutex_lock(&h->reopen_lock);
	g_mutex_lock(&h->lock);
	done = h->gen != stale_gen || h->slot != stale_slot;
	g_mutex_unlock(&h->lock);
	if (done) {
		g_mutex_unlock(&h->reopen_lock);
		return 0; /* another thread did it */
	}
	path = path_of(fs, h->ino, NULL);
	if (!path) {
		g_mutex_unlock(&h->reopen_lock);
		return -ESTALE;
	}
	err = open_remote(fs, path, h->flags & ~(O_CREAT | O_EXCL | O_TRUNC), h->dir, h->stream, &slot,
			  &gen, &sh, &a, NULL);
	/* Another file at the name now (closed again): its writes must not land there. */
	rc = opened_node(fs, h->ino, err, slot, gen, sh, &a);
	if (rc == 0) {
		g_mutex_lock(&h->lock);
		h->slot = slot;
		h->gen = gen;
		h->sh = sh;
		g_mutex_unlock(&h->lock);
		qt_info("reopened \"%s\" after reconnecting", path);
	} else if (err == 0) {
		qt_notice("cannot reopen \"%s\" after reconnecting: another file has its name now", path);
	} else {
		qt_notice("cannot reopen \"%s\" after reconnecting: %s", path, g_strerror(-err));
	}
	g_mutex_unlock(&h->reopen_lock);
	return rc;
}

typedef struct qt_msg *(*build_fn)(uint64_t sh, void *ctx);

/* A call on @h's connection, reopening the file once the connection was replaced. */
static int call_fh(struct qtfs_fs *fs, struct fh *h, build_fn build, void *ctx, struct qt_msg **rep)
{
	for (int attempt = 0; attempt < 3; attempt++) {
		unsigned slot;
		uint64_t gen, sh;
		int err;

		g_mutex_lock(&h->lock);
		slot = h->slot;
		gen = h->gen;
		sh = h->sh;
		g_mutex_unlock(&h->lock);
		err = qtfs_client_call_on(fs->cl, slot, gen, build(sh, ctx),
					  h->stream ? QTFS_NO_DEADLINE : 0, rep);
		if (err != -ESTALE)
			return err;
		if ((err = fh_reopen(fs, h, gen, slot)) < 0)
			return err;
	}
	return -ESTALE;
}

struct io_ctx {
	uint64_t off;
	size_t size;
	const void *data;
	uint32_t wflags, gid;
	bool reply_tail; /* read: answered on the loop thread, the bytes may come in a pipe */
};

struct readdir_ctx {
	uint64_t off;
	uint32_t size;
	bool plus;
	bool list; /* QTFS_RD_LIST: see do_readdir() */
};

/*
 * A call on an open file answered from the loop thread, like struct
 * pending for path calls, with the client's deadline.  Reads of relayed
 * FIFOs are not made this way: they wait without a deadline and can be
 * interrupted (intr_begin()).
 */
struct fh_pending {
	struct qtfs_fs *fs;
	fuse_req_t req;	  /* NULL: a write answered already (see "Write-behind") */
	struct fh *h; /* a reference */
	fuse_ino_t ino;
	char *path;	  /* getattr: the node's path or NULL */
	struct io_ctx c;  /* read, write */
	uint8_t *rest;	  /* read: prefetched bytes before the host's (read_prefetched()) */
	size_t rest_len;
	void *wbuf;	  /* write: the request buffer c.data lies in, lent by the session */
	void *wdata;	  /* write: else a copy of the bytes (c.data) */
	struct wb_write *wb; /* write: its place in the node's writes */
	/* readdir: the request, and the listing its entries go on (see do_readdir()) */
	struct readdir_ctx rd;
	struct listing *reading;
	guint reading_last;
	unsigned list_epoch, made_gen; /* readdir with list: when it went out */
	struct wb_snap *wbs; /* readdirplus: the files with writes on their way when it went out */
	unsigned epoch;
	build_fn build;	  /* the request, from the handle's current server handle */
	void *arg;	  /* what build takes: &c when NULL */
	void (*answer)(struct fh_pending *p, int err, struct qt_msg *rep); /* frees p */
};

static void fh_pending_free(struct fh_pending *p)
{
	fh_unref(p->h);
	listing_unref(p->reading);
	g_free(p->wbs);
	g_free(p->path);
	g_free(p->wdata);
	g_free(p->rest);
	g_free(p);
}

static void fh_redo(void *arg, bool run)
{
	struct fh_pending *p = arg;
	struct qt_msg *rep = NULL;
	int err;

	p->c.reply_tail = false; /* not on the loop thread: see op_read() */
	err = run ? call_fh(p->fs, p->h, p->build, p->arg ? p->arg : &p->c, &rep) : -EIO;

	p->answer(p, err, rep);
}

static void fh_done(void *arg, int err, struct qt_msg *rep)
{
	struct fh_pending *p = arg;

	if (err == -ESTALE) {
		qt_msg_free(rep);
		slow_push(p->fs, fh_redo, p);
		return;
	}
	p->answer(p, err, rep);
}

/* Takes @p (and its reference on p->h). */
static void call_fh_async(struct qtfs_fs *fs, struct fh_pending *p)
{
	unsigned slot;
	uint64_t gen, sh;

	g_mutex_lock(&p->h->lock);
	slot = p->h->slot;
	gen = p->h->gen;
	sh = p->h->sh;
	g_mutex_unlock(&p->h->lock);
	qtfs_client_call_cb(fs->cl, slot, gen, p->build(sh, p->arg ? p->arg : &p->c),
			    qtfs_client_timeout_ms(fs->cl), fh_done, p);
}

/* ---- write-behind ------------------------------------------------------------ */

/*
 * Write-behind.  A write of a regular file waits for the host's reply: a
 * round trip, where a local write(2) only copies into the page cache.  So
 * a write is answered at once, its bytes copied, and goes to the host
 * behind (as sshfs and NFS do), while no more than fs->o.write_behind
 * bytes and WB_EARLY_MAX writes are on their way in all; past that, the
 * kernel waits for the host's reply as before.  The host then works on
 * one write while the program makes the next (1 MiB writes 1.7x faster
 * here, 4 KiB ones 2.5x).  An error the host gives for such a write
 * comes with the next write, fsync or flush (close) of the file it went
 * through, and in the log.
 *
 * What must not reach the host before those writes are in:
 *  - that file's later writes, where the order matters: the server runs
 *    the writes of a connection side by side, so a write that overlaps
 *    one on its way, or appends (O_APPEND: the host puts it at its end of
 *    the file), waits for those before it to be done before it goes
 *    (struct wb_node); so does every write after one that waits.
 *  - the calls that read the file or its attributes (a GETATTR or a
 *    lookup would bring the host's size from before the writes, and the
 *    kernel would cut its cached pages to it), or change it otherwise:
 *    READ, GETATTR, OPEN (an O_TRUNC; the file's cached pages), FLUSH
 *    (close: the error), RELEASE, SETATTR (truncation), FSYNC, locks
 *    (another holder reads after the unlock), FALLOCATE, LSEEK
 *    (SEEK_DATA), COPY_FILE_RANGE and LINK wait until the file's writes
 *    before them are done.  The calls made on the loop thread are held
 *    as waiters (wb_hold()), those of FUSE workers block (wb_wait()).
 *    LOOKUP and READDIRPLUS may bring any file's attributes, and which
 *    file's is known only from the answer: they go at once, with the
 *    files that had writes on their way then (struct wb_snap), and a
 *    lookup that finds one of those is asked again once that file's
 *    writes are done; a READDIRPLUS entry of one goes without attributes
 *    (the kernel looks the name up by itself).  A CREATE goes at once
 *    with O_EXCL (a new file: none of those); one without it that finds
 *    the name taken then (a file the kernel did not know, which it may
 *    truncate) goes as asked once every write before it is done.  A call sent
 *    after the answer to a write is the kernel's to order: its attributes
 *    do not replace those the write left (the kernel's attr_version).
 * O_APPEND writes (the host puts them at its end of the file, and a host
 * process appending in turn must find them there), writes of pseudo
 * files, O_DIRECT and O_SYNC/O_DSYNC files and the kernel's write-back of
 * shared mappings are answered with the host's reply.
 */
/*
 * Writes answered early on their way at most, whatever their size: a
 * connection takes 128 calls on the wire and 512 waiting for room
 * (lib/conn.h), and says EAGAIN past that; the other calls need room too.
 */
#define WB_EARLY_MAX 256u

struct wb_write {
	struct fh_pending *p; /* the call */
	uint64_t seq;
	uint64_t off, end;
	size_t bytes; /* counted in fs->wb_bytes: answered before the host's reply */
	bool append;  /* O_APPEND: where it lands depends on every write before it */
	bool sent, done;
};

struct wb_waiter {
	uint64_t seq; /* runs once every write up to this one (of the node, or all) is done */
	void (*fn)(void *arg);
	void *arg;
};

/*
 * A node with writes on their way; fs->wb_lock.  Its writes in @writes
 * are also in fs->wb_all, which frees them: a write leaves its node's
 * queue before (or as) it leaves that one.
 */
struct wb_node {
	fuse_ino_t ino; /* the key */
	GQueue writes;	/* struct wb_write*, oldest first; done ones leave from the head */
	GList *unsent;	/* the first in @writes not sent yet; every later one waits too */
	GQueue waiters; /* struct wb_waiter*, oldest first */
	unsigned sent;	/* sent and not done */
	bool append;	/* one of those appends */
	uint64_t lo, hi; /* the range those cover */
};

static void wb_node_free(gpointer p)
{
	struct wb_node *n = p;

	g_queue_clear(&n->writes);
	g_queue_clear_full(&n->waiters, g_free);
	g_free(n);
}

/* Does node @ino have writes on their way? */
static bool wb_busy(struct qtfs_fs *fs, fuse_ino_t ino)
{
	bool busy;

	if (!g_atomic_int_get(&fs->wb_count))
		return false;
	g_mutex_lock(&fs->wb_lock);
	busy = g_hash_table_contains(fs->wb_nodes, &ino);
	g_mutex_unlock(&fs->wb_lock);
	return busy;
}

/*
 * The files with writes on their way when a LOOKUP or READDIRPLUS went
 * out (at most WB_SNAP_MAX; past that such calls wait for every write,
 * wb_hold()).  An answer that names one of them may carry the host's
 * attributes from before those writes (see "Write-behind").
 */
#define WB_SNAP_MAX 16u

struct wb_snap {
	unsigned n;
	fuse_ino_t ino[WB_SNAP_MAX];
};

/*
 * The files with writes on their way now into *@out (NULL if none).  False
 * if there are more than WB_SNAP_MAX.
 */
static bool wb_snap_take(struct qtfs_fs *fs, struct wb_snap **out)
{
	struct wb_snap *s = NULL;
	GHashTableIter it;
	gpointer k;
	bool fits = true;

	*out = NULL;
	if (!g_atomic_int_get(&fs->wb_count))
		return true;
	g_mutex_lock(&fs->wb_lock);
	if (g_hash_table_size(fs->wb_nodes) > WB_SNAP_MAX) {
		fits = false;
	} else if (g_hash_table_size(fs->wb_nodes)) {
		s = g_new0(struct wb_snap, 1);
		g_hash_table_iter_init(&it, fs->wb_nodes);
		while (g_hash_table_iter_next(&it, &k, NULL))
			s->ino[s->n++] = *(const fuse_ino_t *)k;
	}
	g_mutex_unlock(&fs->wb_lock);
	*out = s;
	return fits;
}

/*
 * Is the host file @a one of @s's (NULL: none)?  Its node id into *@ino
 * then (unless NULL); with @take it leaves @s.  fs->lock held.
 */
static bool wb_snap_hit_locked(struct qtfs_fs *fs, struct wb_snap *s, const struct qtfs_attr *a,
			       bool take, fuse_ino_t *ino)
{
	struct node probe = {.dev = a->dev, .ino = a->ino};
	struct node *n;

	if (!s || !(n = g_hash_table_lookup(fs->by_key, &probe)))
		return false;
	for (unsigned i = 0; i < s->n; i++) {
		if (s->ino[i] != n->id)
			continue;
		if (take)
			s->ino[i] = s->ino[--s->n];
		if (ino)
			*ino = n->id;
		return true;
	}
	return false;
}

/* The oldest write not done in @q (done ones have left from its head), or NULL. */
static struct wb_write *wb_oldest(GQueue *q)
{
	return g_queue_peek_head(q);
}

/*
 * If writes are on their way (node @ino's; 0: any), run @fn(@arg) on the
 * loop thread once those are done, not those that come after, and say
 * true; else false, and the caller goes on.
 */
static bool wb_after(struct qtfs_fs *fs, fuse_ino_t ino, void (*fn)(void *arg), void *arg)
{
	struct wb_node *n = NULL;
	struct wb_waiter *w;
	GQueue *q;

	if (!g_atomic_int_get(&fs->wb_count))
		return false;
	g_mutex_lock(&fs->wb_lock);
	if (ino)
		n = g_hash_table_lookup(fs->wb_nodes, &ino);
	q = ino ? (n ? &n->writes : NULL) : &fs->wb_all;
	if (q && !g_queue_is_empty(q)) {
		w = g_new(struct wb_waiter, 1);
		*w = (struct wb_waiter){.seq = ((struct wb_write *)g_queue_peek_tail(q))->seq, .fn = fn,
					.arg = arg};
		g_queue_push_tail(n ? &n->waiters : &fs->wb_waiters, w);
	} else {
		q = NULL;
	}
	g_mutex_unlock(&fs->wb_lock);
	return q != NULL;
}

/* Wait until node @ino's writes on their way now are done.  Not on the loop thread. */
static void wb_wait(struct qtfs_fs *fs, fuse_ino_t ino)
{
	struct wb_write *w;
	struct wb_node *n;
	uint64_t seq;

	if (!g_atomic_int_get(&fs->wb_count))
		return;
	assert(!qt_loop_in_thread(qtfs_client_loop(fs->cl)));
	g_mutex_lock(&fs->wb_lock);
	n = g_hash_table_lookup(fs->wb_nodes, &ino);
	if (n) {
		seq = ((struct wb_write *)g_queue_peek_tail(&n->writes))->seq;
		while ((n = g_hash_table_lookup(fs->wb_nodes, &ino)) && (w = wb_oldest(&n->writes)) &&
		       w->seq <= seq)
			g_cond_wait(&fs->wb_cond, &fs->wb_lock);
	}
	g_mutex_unlock(&fs->wb_lock);
}

/* Every write on its way is done (or given up): the client is stopping. */
static void wb_wait_all(struct qtfs_fs *fs)
{
	g_mutex_lock(&fs->wb_lock);
	while (!g_queue_is_empty(&fs->wb_all))
		g_cond_wait(&fs->wb_cond, &fs->wb_lock);
	g_mutex_unlock(&fs->wb_lock);
}

/* May @w go now beside the writes of @n on their way (none waiting before it)? */
static bool wb_fits_locked(const struct wb_node *n, const struct wb_write *w)
{
	return n->sent == 0 || (!w->append && !n->append && (w->off >= n->hi || w->end <= n->lo));
}

static void wb_mark_sent_locked(struct wb_node *n, struct wb_write *w)
{
	n->lo = n->sent ? MIN(n->lo, w->off) : w->off;
	n->hi = n->sent ? MAX(n->hi, w->end) : w->end;
	n->append = (n->sent && n->append) || w->append;
	n->sent++;
	w->sent = true;
}

/* Reserve room for a write of @size bytes answered early. */
static bool wb_reserve(struct qtfs_fs *fs, size_t size)
{
	bool ok;

	g_mutex_lock(&fs->wb_lock);
	ok = fs->wb_bytes + size <= fs->o.write_behind && fs->wb_early < WB_EARLY_MAX;
	if (ok) {
		fs->wb_bytes += size;
		fs->wb_early++;
	}
	g_mutex_unlock(&fs->wb_lock);
	return ok;
}

/* Put write @w (its call ready) among node @ino's: true if it may go now. */
static bool wb_add(struct qtfs_fs *fs, fuse_ino_t ino, struct wb_write *w)
{
	struct wb_node *n;

	g_mutex_lock(&fs->wb_lock);
	n = g_hash_table_lookup(fs->wb_nodes, &ino);
	if (!n) {
		n = g_new0(struct wb_node, 1);
		n->ino = ino;
		g_hash_table_insert(fs->wb_nodes, &n->ino, n);
	}
	w->seq = ++fs->wb_seq;
	g_queue_push_tail(&n->writes, w);
	g_queue_push_tail(&fs->wb_all, w);
	g_atomic_int_inc(&fs->wb_count);
	if (!n->unsent && wb_fits_locked(n, w))
		wb_mark_sent_locked(n, w);
	else if (!n->unsent)
		n->unsent = g_queue_peek_tail_link(&n->writes);
	g_mutex_unlock(&fs->wb_lock);
	return w->sent;
}

/* The waiters of @q whose writes are all done (@writes: the ones they wait for), onto *@run. */
static void wb_ready_locked(GQueue *q, GQueue *writes, GSList **run)
{
	struct wb_waiter *wt;
	struct wb_write *w;

	while ((wt = g_queue_peek_head(q)) && (!(w = wb_oldest(writes)) || w->seq > wt->seq))
		*run = g_slist_prepend(*run, g_queue_pop_head(q));
}

/*
 * Write @w of node @ino is done: done ones leave, those that waited for it
 * go, and so do the waiters it held back.
 */
static void wb_done(struct qtfs_fs *fs, fuse_ino_t ino, struct wb_write *w)
{
	GSList *go = NULL, *run = NULL;
	struct wb_write *h;
	struct wb_node *n;

	g_mutex_lock(&fs->wb_lock);
	n = g_hash_table_lookup(fs->wb_nodes, &ino);
	assert(n && w->sent && !w->done);
	w->done = true;
	n->sent--;
	fs->wb_bytes -= w->bytes;
	fs->wb_early -= w->bytes != 0;
	while ((h = g_queue_peek_head(&n->writes)) && h->done)
		g_queue_pop_head(&n->writes);
	/* Those held back go once those sent before them are done, in order, as many as fit. */
	while (n->unsent && wb_fits_locked(n, n->unsent->data)) {
		h = n->unsent->data;
		wb_mark_sent_locked(n, h);
		go = g_slist_prepend(go, h->p);
		n->unsent = n->unsent->next;
	}
	wb_ready_locked(&n->waiters, &n->writes, &run);
	if (g_queue_is_empty(&n->writes))
		g_hash_table_remove(fs->wb_nodes, &ino);
	while ((h = g_queue_peek_head(&fs->wb_all)) && h->done) {
		g_free(g_queue_pop_head(&fs->wb_all));
		g_atomic_int_dec_and_test(&fs->wb_count);
	}
	wb_ready_locked(&fs->wb_waiters, &fs->wb_all, &run);
	g_cond_broadcast(&fs->wb_cond);
	g_mutex_unlock(&fs->wb_lock);
	go = g_slist_reverse(go);
	for (GSList *l = go; l; l = l->next)
		call_fh_async(fs, l->data);
	g_slist_free(go);
	run = g_slist_reverse(run);
	for (GSList *l = run; l; l = l->next) {
		struct wb_waiter *wt = l->data;

		if (qt_loop_in_thread(qtfs_client_loop(fs->cl)))
			wt->fn(wt->arg);
		else
			qt_loop_post(qtfs_client_loop(fs->cl), wt->fn, wt->arg);
		g_free(wt);
	}
	g_slist_free(run);
}

/* The error of a write answered before the host's reply, for the next call on @h; 0 if none. */
static int wb_take_err(struct fh *h)
{
	int err;

	g_mutex_lock(&h->lock);
	err = h->wb_err;
	h->wb_err = 0;
	g_mutex_unlock(&h->lock);
	return err;
}

/*
 * A call of the kernel's on the loop thread held back until the writes
 * before it are done (wb_hold()).
 */
struct wb_later {
	int op; /* FUSE_READ, _GETATTR, _OPEN, _FLUSH, _RELEASE; _LOOKUP, _CREATE, _READDIRPLUS */
	fuse_req_t req;
	fuse_ino_t ino; /* _LOOKUP, _CREATE: the directory */
	struct fuse_file_info fi;
	bool has_fi;
	size_t size; /* _READ, _READDIRPLUS */
	off_t off;   /* _READ, _READDIRPLUS */
	mode_t mode; /* _CREATE */
	char name[]; /* _LOOKUP, _CREATE */
};

static void do_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
static void do_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
static void do_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
static void do_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
static void release_fh(fuse_req_t req, struct fuse_file_info *fi);
static void do_lookup(fuse_req_t req, fuse_ino_t parent, const char *name, struct wb_snap *wb);
static void do_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi, bool probe);
static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi, bool plus, struct wb_snap *wb);

static void wb_later_run(void *arg)
{
	struct wb_later *l = arg;
	struct fuse_file_info *fi = l->has_fi ? &l->fi : NULL;

	switch (l->op) {
	case FUSE_READ:
		do_read(l->req, l->ino, l->size, l->off, fi);
		break;
	case FUSE_GETATTR:
		do_getattr(l->req, l->ino, fi);
		break;
	case FUSE_OPEN:
		do_open(l->req, l->ino, fi);
		break;
	case FUSE_FLUSH:
		do_flush(l->req, l->ino, fi);
		break;
	case FUSE_RELEASE:
		release_fh(l->req, fi);
		break;
	case FUSE_LOOKUP:
		do_lookup(l->req, l->ino, l->name, NULL);
		break;
	case FUSE_CREATE:
		do_create(l->req, l->ino, l->name, l->mode, fi, false);
		break;
	case FUSE_READDIRPLUS:
		do_readdir(l->req, l->ino, l->size, l->off, fi, true, NULL);
		break;
	default:
		g_assert_not_reached();
	}
	g_free(l);
}

/*
 * Hold call @op of the kernel's (its arguments after it) until the writes
 * on their way now are done, if there are any: node @ino's, or for
 * LOOKUP, CREATE and READDIRPLUS every file's (LOOKUP and READDIRPLUS
 * only when more files than a struct wb_snap holds have writes on their
 * way).  True if held.
 */
static bool wb_hold(struct qtfs_fs *fs, int op, fuse_req_t req, fuse_ino_t ino,
		    const struct fuse_file_info *fi, size_t size, off_t off, mode_t mode,
		    const char *name)
{
	bool all = op == FUSE_LOOKUP || op == FUSE_CREATE || op == FUSE_READDIRPLUS;
	size_t len = name ? strlen(name) + 1 : 0;
	struct wb_later *l;

	if (!g_atomic_int_get(&fs->wb_count) || (!all && !wb_busy(fs, ino)))
		return false;
	l = g_malloc0(sizeof(*l) + len);
	*l = (struct wb_later){.op = op, .req = req, .ino = ino, .has_fi = fi != NULL, .size = size,
			       .off = off, .mode = mode};
	if (fi)
		l->fi = *fi;
	if (name)
		memcpy(l->name, name, len);
	if (wb_after(fs, all ? 0 : ino, wb_later_run, l))
		return true;
	g_free(l);
	return false;
}

/* ---- file locks -------------------------------------------------------------- */

static guint lk_hash(gconstpointer p)
{
	const struct lk_owner *o = p;

	return g_int64_hash(&o->owner) ^ (guint)o->ino;
}

static gboolean lk_equal(gconstpointer a, gconstpointer b)
{
	const struct lk_owner *x = a, *y = b;

	return x->ino == y->ino && x->owner == y->owner;
}

/* (fs->lk_lock held) */
static void lk_free(gpointer p)
{
	struct lk_owner *o = p;

	o->fh->lk_routes--;
	fh_unref(o->fh);
	g_free(o);
}

/* The file @owner's lock calls on @ino go through: its first one's, else @fh.  A reference. */
static struct fh *lk_route(struct qtfs_fs *fs, fuse_ino_t ino, uint64_t owner, struct fh *fh)
{
	struct lk_owner key = {.ino = ino, .owner = owner}, *o;
	struct fh *h;

	g_mutex_lock(&fs->lk_lock);
	o = g_hash_table_lookup(fs->lk_owners, &key);
	h = o ? o->fh : fh;
	g_atomic_int_inc(&h->refs);
	g_mutex_unlock(&fs->lk_lock);
	return h;
}

static void lk_record(struct qtfs_fs *fs, fuse_ino_t ino, uint64_t owner, struct fh *fh)
{
	struct lk_owner key = {.ino = ino, .owner = owner}, *o;

	g_mutex_lock(&fs->lk_lock);
	if (!g_hash_table_contains(fs->lk_owners, &key)) {
		o = g_new(struct lk_owner, 1);
		*o = key;
		o->fh = fh;
		g_atomic_int_inc(&fh->refs);
		fh->lk_routes++;
		g_hash_table_add(fs->lk_owners, o);
	}
	g_mutex_unlock(&fs->lk_lock);
}

/* Forget @owner's locks on @ino: the file they went through (a reference), or NULL. */
static struct fh *lk_take(struct qtfs_fs *fs, fuse_ino_t ino, uint64_t owner)
{
	struct lk_owner key = {.ino = ino, .owner = owner}, *o = NULL;
	struct fh *h = NULL;

	g_mutex_lock(&fs->lk_lock);
	if (g_hash_table_steal_extended(fs->lk_owners, &key, (gpointer *)&o, NULL)) {
		h = o->fh;
		h->lk_routes--;
		g_free(o);
	}
	g_mutex_unlock(&fs->lk_lock);
	return h;
}

/*
 * Open file description locks (F_OFD_SETLK) belong to the open file: the
 * kernel sends them with the file as their owner and drops them locally
 * when the file's last reference goes, but tells the file system of that
 * only by the file's RELEASE (a FLUSH names the closing process's owner,
 * never the file).  A process's POSIX locks are dropped at its FLUSH,
 * which comes at its close of any file it locked through, before that
 * file's last close: so the owners still routed through @h at its RELEASE
 * are its own OFD locks.  Forget them: their owners (0 terminated), or
 * NULL when there are none.  fs->lk_lock held.
 */
static uint64_t *lk_take_fh_locked(struct qtfs_fs *fs, struct fh *h)
{
	g_autoptr(GArray) owners = g_array_new(TRUE, FALSE, sizeof(uint64_t));
	GHashTableIter it;
	gpointer k;

	g_hash_table_iter_init(&it, fs->lk_owners);
	while (h->lk_routes && g_hash_table_iter_next(&it, &k, NULL)) {
		struct lk_owner *o = k;

		if (o->fh != h)
			continue;
		g_array_append_val(owners, o->owner);
		g_hash_table_iter_remove(&it); /* lk_free(): its reference to @h, not the last */
	}
	return owners->len ? (uint64_t *)(void *)g_array_free(g_steal_pointer(&owners), FALSE) : NULL;
}

struct lk_ctx {
	uint64_t owner, start, len;
	uint32_t type, flags, pid;
};

static struct qt_msg *build_lk(uint16_t op, uint64_t sh, const struct lk_ctx *c)
{
	struct qt_msg *m = qt_msg_new(op, 0, 0);

	qt_msg_put_u64(m, sh);
	qt_msg_put_u64(m, c->owner);
	qt_msg_put_u32(m, c->type);
	qt_msg_put_u64(m, c->start);
	qt_msg_put_u64(m, c->len);
	if (op == QTFS_SETLK) {
		qt_msg_put_u32(m, c->flags);
		qt_msg_put_u32(m, c->pid);
	}
	return m;
}

static struct qt_msg *build_setlk(uint64_t sh, void *arg)
{
	return build_lk(QTFS_SETLK, sh, arg);
}

static struct qt_msg *build_getlk(uint64_t sh, void *arg)
{
	return build_lk(QTFS_GETLK, sh, arg);
}

/*
 * Set a lock on the host.  The server never waits: for a blocking request
 * (F_SETLKW, flock without LOCK_NB) we try again, 1 ms after a conflict
 * and doubling to 50 ms, until the lock is ours or the caller is
 * interrupted by a signal (EINTR, as a local wait would end).
 */
static int setlk_wait(fuse_req_t req, struct fh *h, struct lk_ctx *c, bool sleep)
{
	gulong delay = 1000;

	for (;;) {
		g_autoptr(qt_msg) rep = NULL;
		int err = call_fh(FS(req), h, build_setlk, c, &rep);

		/*
		 * The host never waits for a lock (waiting is this loop), so it
		 * has no EINTR to give; and the kernel makes an EINTR to a lock
		 * request a restart, which, with no signal to restart it,
		 * reaches the program as errno 512.
		 */
		if (err == -EINTR)
			return -EIO;
		if (err != -EAGAIN || !sleep)
			return err;
		if (fuse_req_interrupted(req))
			return -EINTR;
		g_usleep(delay);
		delay = MIN(delay * 2, 50000);
	}
}

/* How many RELEASEs carrying an unlock are done: see lk_released_since(). */
static uint64_t lk_release_gen(struct qtfs_fs *fs)
{
	uint64_t gen;

	g_mutex_lock(&fs->lk_lock);
	gen = fs->lk_release_gen;
	g_mutex_unlock(&fs->lk_lock);
	return gen;
}

/*
 * A lock request met a conflict that may be a lock whose holder has just
 * closed the file: the kernel sends the RELEASE that drops a flock or an
 * OFD lock after close(2) returned, so a local lock would not see it any
 * more while the host still does.  Wait (at most 1 s) for RELEASEs on
 * their way (op_release()) and, when @gone, for one more (a holder that
 * is gone, whose RELEASE the kernel has yet to send); whether one was
 * done since @gen0, when the request is worth asking again.
 */
static bool lk_released_since(struct qtfs_fs *fs, uint64_t gen0, bool gone)
{
	gint64 until = g_get_monotonic_time() + G_USEC_PER_SEC;
	bool again;

	g_mutex_lock(&fs->lk_lock);
	while ((fs->lk_releasing || (gone && fs->lk_release_gen == gen0)) &&
	       g_cond_wait_until(&fs->lk_cond, &fs->lk_lock, until))
		;
	again = fs->lk_release_gen != gen0;
	g_mutex_unlock(&fs->lk_lock);
	return again;
}

/* A POSIX lock request of the kernel's, for the wire. */
static struct lk_ctx lk_ctx_of(const struct fuse_file_info *fi, const struct flock *l)
{
	return (struct lk_ctx){
		.owner = fi->lock_owner,
		.type = (uint32_t)l->l_type,
		.start = (uint64_t)MAX(l->l_start, 0),
		.len = l->l_len > 0 ? (uint64_t)l->l_len : 0,
		.pid = l->l_pid > 0 ? (uint32_t)l->l_pid : 0,
	};
}

/*
 * A lock just taken (POSIX, OFD or flock): a coherency point, as on NFS.
 * Programs that share a file between machines (SQLite's rollback journal,
 * a lock file around a read-modify-write) take a lock and then read what
 * the last holder wrote, and the DPU's kernel keeps a file's pages and
 * attributes until attr_timeout shows another mtime: a host process's
 * write just before it gave up the lock was not seen here for up to that
 * long.  So the pages and attributes the DPU holds of the file go before
 * the lock call returns, and what the holder reads next comes from the
 * host.  (A FUSE worker thread: the kernel may write dirty pages of a
 * shared mapping back first, which the loop thread serves.)
 */
static void lk_taken(struct qtfs_fs *fs, fuse_ino_t ino, const struct fh *h)
{
	if (fs->session && !h->dir && !h->pseudo && !h->stream)
		fuse_lowlevel_notify_inval_inode(fs->session, ino, 0, 0);
}

static void op_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock,
		     int sleep)
{
	struct qtfs_fs *fs = FS(req);
	struct fh *h = lk_route(fs, ino, fi->lock_owner, fh_of(fi));
	struct lk_ctx c = lk_ctx_of(fi, lock);
	uint64_t gen0 = lk_release_gen(fs);
	int err;

	/* Another holder reads what was written before the unlock (see "Write-behind"). */
	wb_wait(fs, ino);
	err = setlk_wait(req, h, &c, sleep);

	/* An OFD lock just closed on the DPU may be what it met (lk_released_since()). */
	if (err == -EAGAIN && lk_released_since(fs, gen0, false))
		err = setlk_wait(req, h, &c, false);
	if (err == 0 && lock->l_type != F_UNLCK) {
		lk_record(fs, ino, fi->lock_owner, h);
		lk_taken(fs, ino, h);
	}
	fh_unref(h);
	reply_err(req, -err);
}

static void op_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock)
{
	struct qtfs_fs *fs = FS(req);
	struct fh *h = lk_route(fs, ino, fi->lock_owner, fh_of(fi));
	struct lk_ctx c = lk_ctx_of(fi, lock);
	g_autoptr(qt_msg) rep = NULL;
	uint32_t type = 0, pid = 0;
	uint64_t start = 0, len = 0;
	struct qt_rd r;
	int err;

	wb_wait(fs, ino);
	err = call_fh(fs, h, build_getlk, &c, &rep);

	fh_unref(h);
	if (err == 0) {
		qt_rd_init_msg(&r, rep);
		qt_rd_u32(&r, &type);
		qt_rd_u64(&r, &start);
		qt_rd_u64(&r, &len);
		qt_rd_u32(&r, &pid);
		if (qt_rd_end(&r) < 0 || (type != F_RDLCK && type != F_WRLCK && type != F_UNLCK) ||
		    start > INT64_MAX || len > INT64_MAX)
			err = -EIO;
	}
	if (err < 0) {
		reply_err(req, -err);
		return;
	}
	lock->l_type = (short)type;
	lock->l_whence = SEEK_SET;
	lock->l_start = (off_t)start;
	lock->l_len = (off_t)len;
	lock->l_pid = (pid_t)pid; /* ours, or 0 for a host process (the kernel maps it) */
	fuse_reply_lock(req, lock);
}

/* Process @pid has exited (reaped, or a zombie whose files are closed). */
static bool pid_gone(pid_t pid)
{
	g_autofree char *path = NULL, *stat = NULL;
	const char *p;

	if (pid <= 0)
		return false;
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return true;
	path = g_strdup_printf("/proc/%d/stat", (int)pid);
	if (!g_file_get_contents(path, &stat, NULL, NULL))
		return true;
	p = strrchr(stat, ')');
	return p && p[1] == ' ' && p[2] == 'Z';
}

/*
 * Another open file of node @ino holds a flock taken by a process that is
 * gone.  The holders are collected under the locks, their processes looked
 * up in /proc after.
 */
static bool flock_holder_gone(struct qtfs_fs *fs, fuse_ino_t ino, const struct fh *self)
{
	g_autoptr(GArray) pids = g_array_new(FALSE, FALSE, sizeof(pid_t));
	struct node *n;

	g_mutex_lock(&fs->lock);
	n = node_by_id(fs, ino);
	g_mutex_lock(&fs->lk_lock);
	for (GList *l = n ? n->fhs : NULL; l; l = l->next) {
		const struct fh *o = l->data;

		if (o != self && o->flocked)
			g_array_append_val(pids, o->flock_pid);
	}
	g_mutex_unlock(&fs->lk_lock);
	g_mutex_unlock(&fs->lock);
	for (guint i = 0; i < pids->len; i++)
		if (pid_gone(g_array_index(pids, pid_t, i)))
			return true;
	return false;
}

static void op_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
	struct lk_ctx c = {
		.type = (op & LOCK_UN) ? F_UNLCK : (op & LOCK_SH) ? F_RDLCK : F_WRLCK,
		.flags = QTFS_LK_FLOCK,
	};

	struct qtfs_fs *fs = FS(req);
	struct fh *h = fh_of(fi);
	/* Releases done from here on may be what a conflict below was about. */
	uint64_t gen0 = lk_release_gen(fs);
	int err;

	wb_wait(fs, ino);
	err = setlk_wait(req, h, &c, !(op & LOCK_NB));

	/*
	 * A conflict may be a flock whose holder has just closed the file
	 * (lk_released_since()), or exited: its last fput can be deferred to
	 * a kernel worker, so wait for the RELEASE of a flock whose holder
	 * process is gone too, then ask again once one was done since the
	 * first attempt (also one that finished between that attempt's answer
	 * and this check).  A holder that is alive is a real conflict: EAGAIN
	 * at once.
	 */
	if (err == -EAGAIN && lk_released_since(fs, gen0, flock_holder_gone(fs, ino, h)))
		err = setlk_wait(req, h, &c, false);
	if (err == 0) {
		g_mutex_lock(&fs->lk_lock);
		h->flocked = c.type != F_UNLCK;
		h->flock_pid = fuse_req_ctx(req)->pid;
		g_mutex_unlock(&fs->lk_lock);
		if (c.type != F_UNLCK)
			lk_taken(fs, ino, h);
	}
	reply_err(req, -err);
}

/* ---- proc mode -------------------------------------------------------------- */

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* The comm of local process @pid, or NULL. */
static char *local_comm(const char *pid)
{
	g_autofree char *path = g_strdup_printf("/proc/%s/comm", pid);
	char *text = NULL;

	if (!g_file_get_contents(path, &text, NULL, NULL))
		return NULL;
	g_strchomp(text);
	return text;
}

static long local_tgid(pid_t tid)
{
	g_autofree char *path = g_strdup_printf("/proc/%d/status", (int)tid);
	g_autofree char *text = NULL;
	const char *p;

	if (!g_file_get_contents(path, &text, NULL, NULL))
		return tid;
	p = strstr(text, "\nTgid:");
	return p ? strtol(p + 6, NULL, 10) : tid;
}

/* A made-up symlink node in the root (proc mode). */
static void reply_synth(fuse_req_t req, struct qtfs_fs *fs, const char *name, uint64_t key)
{
	struct qtfs_attr a = {
		.dev = SYNTH_DEV,
		.ino = key,
		.mode = S_IFLNK | 0777,
		.nlink = 1,
		.flags = QTFS_AF_PSEUDO,
		.size = 64,
		.blksize = 4096,
	};

	reply_entry(req, fs, FUSE_ROOT_ID, name, &a, trust_epoch(fs));
}

static bool proc_lookup(fuse_req_t req, struct qtfs_fs *fs, const char *name)
{
	g_autofree char *comm = NULL;

	if (!strcmp(name, "self")) {
		reply_synth(req, fs, name, SYNTH_SELF);
		return true;
	}
	if (!strcmp(name, "thread-self")) {
		reply_synth(req, fs, name, SYNTH_THREAD_SELF);
		return true;
	}
	if (!all_digits(name) || strlen(name) > 10 || !(comm = local_comm(name)))
		return false;
	if (!g_strv_contains((const gchar *const *)fs->local_comms, comm))
		return false;
	reply_synth(req, fs, name, SYNTH_PID_BASE + g_ascii_strtoull(name, NULL, 10));
	return true;
}

static char *synth_target(fuse_req_t req, struct qtfs_fs *fs, uint64_t key)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	if (key == SYNTH_SELF)
		return g_strdup_printf("%s/%ld", fs->local_proc, local_tgid(ctx->pid));
	if (key == SYNTH_THREAD_SELF)
		return g_strdup_printf("%s/%ld/task/%d", fs->local_proc, local_tgid(ctx->pid),
				       (int)ctx->pid);
	return g_strdup_printf("%s/%" G_GUINT64_FORMAT, fs->local_proc, key - SYNTH_PID_BASE);
}

/* ---- name caching --------------------------------------------------------------- */

/*
 * With a subscription (QTFS_MNT_WATCH, granted with QTFS_MF_WATCH), the
 * host watches the directories we look names up in and a WATCH call that
 * is always outstanding brings back every name deleted, renamed away or
 * renamed over there (server.c, "Name caching").  Names it covers
 * (QTFS_AF_WATCHED) are then cached for watch_timeout instead of
 * entry_timeout, and each reported name is dropped from the kernel's
 * cache by a notification.
 *
 * The notifications come from a thread of their own: the kernel takes the
 * directory's lock for one, and that lock may be held by a request waiting
 * for a reply that only the loop thread can deliver.  That same lock is
 * what orders a notification after a lookup answered just before it.  A
 * reported name is only expired, never invalidated (unhashed): the next
 * use asks the host again, and the kernel keeps the entry where the name
 * still leads to the same node.  An invalidation would detach the mounts
 * made on the DPU beneath a directory (or over a file), and would drop
 * the entries an overlay file system on the mount holds for its upper
 * layer: the reports of the DPU's own changes come a few milliseconds
 * after them, and an overlay that finds another entry than its own
 * fails the rename with ESTALE (test-qtfs-cache).
 *
 * When names may have been missed (a new subscription after a restart of
 * the server, an overflow of the events queued for us, a WATCH that failed
 * and may have taken names with it), every cached name is expired, and watch_epoch moves on so that the answers to calls
 * made before that are cached for entry_timeout only.  A second pass a
 * second later catches the names whose answers were still being taken in
 * by the kernel during the first.  Expiring needs a kernel with
 * FUSE_CAP_EXPIRE_ONLY (6.2 or later); without it (fs->can_expire false)
 * the subscription runs for the lists and the moves of directories, names
 * are cached for entry_timeout only, and nothing is expired.
 */
enum inval_kind {
	INVAL_NAME,	  /* expire @name in the directory (@dev, @ino, @gen) */
	INVAL_EXPIRE,	  /* expire @name in the directory of node id @parent */
	INVAL_ALL,	  /* expire every cached name */
	INVAL_SEQ_DONE,	  /* the names of WATCH reply @mark are done with (see "Barrier") */
	INVAL_SWEEP_DONE, /* the barrier's sweep @mark is done (queued after an INVAL_ALL) */
	INVAL_KICK,	  /* look at the waiting barriers (see "Barrier") */
	/*
	 * the directory (@self_*) moved from @name + @from_off in the directory
	 * (@from_*) to @name in the directory (@dev, @ino, @gen): watch_moved()
	 */
	INVAL_MOVE,
};

struct inval {
	enum inval_kind kind;
	uint64_t mark;	    /* INVAL_SEQ_DONE, INVAL_SWEEP_DONE */
	unsigned epoch;	    /* INVAL_SEQ_DONE: the watch_epoch when it was pushed */
	uint64_t dev, ino, gen; /* the directory */
	uint64_t self_dev, self_ino, self_gen; /* INVAL_MOVE: the directory moved */
	uint64_t from_dev, from_ino, from_gen; /* INVAL_MOVE: its old parent */
	size_t from_off;    /* INVAL_MOVE: where its old name is in @name */
	fuse_ino_t parent;  /* INVAL_EXPIRE: the directory */
	size_t len;
	char name[];
};

static struct inval inval_stop;

static void watch_moved(struct qtfs_fs *fs, const struct inval *v);

/* How often the notifier looks at the barriers' deadlines while some wait. */
#define SYNC_TICK_US (100 * 1000)
static void sync_kick(struct qtfs_fs *fs);

static void inval_push_name(struct qtfs_fs *fs, uint64_t dev, uint64_t ino, uint64_t gen,
			    const char *name, size_t len)
{
	struct inval *v = g_malloc(sizeof(*v) + len + 1);

	*v = (struct inval){.kind = INVAL_NAME, .dev = dev, .ino = ino, .gen = gen, .len = len};
	memcpy(v->name, name, len);
	v->name[len] = '\0';
	g_async_queue_push(fs->invals, v);
}

/* Anything but a name: see enum inval_kind. */
static void inval_push_kind(struct qtfs_fs *fs, enum inval_kind kind, uint64_t mark)
{
	struct inval *v = g_new0(struct inval, 1);

	v->kind = kind;
	v->mark = mark;
	g_async_queue_push(fs->invals, v);
}

/* The move of a WATCH name with QTFS_WN_MOVED. */
static void inval_push_move(struct qtfs_fs *fs, const struct qtfs_watch_name *n)
{
	struct inval *v = g_malloc0(sizeof(*v) + n->to_len + 1 + n->len + 1);

	*v = (struct inval){.kind = INVAL_MOVE, .dev = n->to_dev, .ino = n->to_ino, .gen = n->to_gen,
			    .self_dev = n->self_dev, .self_ino = n->self_ino, .self_gen = n->self_gen,
			    .from_dev = n->dev, .from_ino = n->ino, .from_gen = n->gen,
			    .from_off = n->to_len + 1, .len = n->to_len};
	memcpy(v->name, n->to_name, n->to_len);
	memcpy(v->name + v->from_off, n->name, n->len);
	g_async_queue_push(fs->invals, v);
}

static void inval_push_expire(struct qtfs_fs *fs, fuse_ino_t parent, const char *name)
{
	size_t len = strlen(name);
	struct inval *v = g_malloc0(sizeof(*v) + len + 1);

	v->kind = INVAL_EXPIRE;
	v->parent = parent;
	v->len = len;
	memcpy(v->name, name, len + 1);
	g_async_queue_push(fs->invals, v);
}

static void inval_push_seq_done(struct qtfs_fs *fs, uint64_t seq, unsigned epoch)
{
	struct inval *v = g_new0(struct inval, 1);

	v->kind = INVAL_SEQ_DONE;
	v->mark = seq;
	v->epoch = epoch;
	g_async_queue_push(fs->invals, v);
}

/* The directory node of host identity (@dev, @ino, @gen), or NULL.  fs->lock held. */
static struct node *dir_node_locked(struct qtfs_fs *fs, uint64_t dev, uint64_t ino, uint64_t gen)
{
	struct node probe = {.dev = dev, .ino = ino};
	struct node *n = g_hash_table_lookup(fs->by_key, &probe);

	return n && n->gen == gen && n->type == S_IFDIR ? n : NULL;
}

/* Expire @name in the directory @parent, where the kernel can; notifier thread. */
static void expire_name(struct qtfs_fs *fs, fuse_ino_t parent, const char *name, size_t len)
{
	/* -ENOENT: the kernel has no such name cached. */
	if (fs->can_expire)
		fuse_lowlevel_notify_expire_entry(fs->se, parent, name, len, FUSE_LL_EXPIRE_ONLY);
}

struct cached_name {
	fuse_ino_t parent;
	char *name;
};

static void expire_all(struct qtfs_fs *fs)
{
	g_autoptr(GArray) names = g_array_new(FALSE, FALSE, sizeof(struct cached_name));
	GHashTableIter it;
	gpointer v;

	g_mutex_lock(&fs->lock);
	g_hash_table_iter_init(&it, fs->by_name);
	while (fs->can_expire && g_hash_table_iter_next(&it, &v, NULL)) {
		const struct node *n = v;
		struct cached_name c = {.parent = n->parent->id, .name = g_strdup(n->name)};

		g_array_append_val(names, c);
	}
	g_hash_table_iter_init(&it, fs->by_id);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct node *n = v;

		post_attr_drop_locked(n);
		for (GSList *l = n->aliases; fs->can_expire && l; l = l->next) {
			const struct alias *al = l->data;
			struct cached_name c = {.parent = al->parent, .name = g_strdup(al->name)};

			g_array_append_val(names, c);
		}
	}
	g_mutex_unlock(&fs->lock);
	for (guint i = 0; i < names->len; i++) {
		struct cached_name *c = &g_array_index(names, struct cached_name, i);

		expire_name(fs, c->parent, c->name, strlen(c->name));
		g_free(c->name);
	}
}

static gpointer notifier_main(gpointer arg)
{
	struct qtfs_fs *fs = arg;
	struct inval *v;

	for (;;) {
		/* While barriers wait, wake up now and then for their deadlines. */
		v = g_atomic_int_get(&fs->sync_count)
			    ? g_async_queue_timeout_pop(fs->invals, SYNC_TICK_US)
			    : g_async_queue_pop(fs->invals);
		if (v == &inval_stop)
			break;
		if (!v) {
			sync_kick(fs);
			continue;
		}
		if (v->kind == INVAL_SEQ_DONE || v->kind == INVAL_SWEEP_DONE) {
			g_mutex_lock(&fs->sync_lock);
			if (v->kind == INVAL_SEQ_DONE) {
				fs->seq_done = v->mark;
				fs->seq_epoch = v->epoch;
			} else {
				fs->sweep_done = v->mark;
			}
			g_mutex_unlock(&fs->sync_lock);
			sync_kick(fs);
		} else if (v->kind == INVAL_KICK) {
			sync_kick(fs);
		} else if (v->kind == INVAL_MOVE) {
			watch_moved(fs, v);
		} else if (v->kind == INVAL_ALL) {
			expire_all(fs);
		} else if (v->kind == INVAL_EXPIRE) {
			expire_name(fs, v->parent, v->name, v->len);
		} else {
			struct node *n;
			fuse_ino_t parent = 0;

			g_mutex_lock(&fs->lock);
			n = dir_node_locked(fs, v->dev, v->ino, v->gen);
			if (n) {
				parent = n->id;
				/* The kernel drops the directory's attributes with the name. */
				post_attr_drop_locked(n);
			}
			g_mutex_unlock(&fs->lock);
			if (parent)
				expire_name(fs, parent, v->name, v->len);
		}
		g_free(v);
	}
	return NULL;
}

/* ---- listed directories ---------------------------------------------------- */

/*
 * A directory made here (MKDIR) is, where the host watches it for us, also
 * watched for new names, and its reply says so if it was still empty then
 * (QTFS_AF_LISTED).  So is a directory the host made, from the READDIR
 * that begins a listing of it (QTFS_RD_LIST, see list_wanted()): when that
 * listing is read to its end, its names are all of the directory's but
 * those the host reports as new from then on, and those made from here
 * meanwhile; so the list starts with the listing's names only if no
 * report named the directory while it was read and nothing was made in
 * it from here (node->made_gen: a name made between two READDIRs, whose
 * report is still on its way, would be missing).  The kernel orders the
 * rest: a change of a directory's names holds its lock, which each
 * READDIR takes too, so one sent before the listing began was answered
 * before it.  From then on the names in it are: the ones made from
 * here, each noted before its request goes out, and the ones the WATCH
 * replies report.  node->names holds all of them, and maybe some that are
 * gone (a superset is safe); a LOOKUP of any other name there is answered
 * ENOENT at once, without a round trip.  Filling a new directory so
 * saves a round trip per file: the kernel looks every new name up before
 * it makes it.  The answer is not cached by the kernel (a negative entry with
 * no timeout), so every lookup checks the list again.
 *
 * A name made on the host shows up here when its report arrives, a few
 * milliseconds later; WATCH_SYNC is the barrier for whoever needs it
 * sooner (rexec before it returns, see "Barrier").  The lists go when
 * names may have been missed (watch_missed()) and when one grows past
 * LISTED_MAX names, or past the listed_names= option's count of names in
 * all lists (memory is bounded whatever the server reports): then no list
 * starts until some go.  A MKDIR reply starts one only if no report taken
 * in while it was on its way named the new directory: the host may have
 * made a name in it at once, and its report overtaken the reply (under
 * load it does).  The directories of the last UNLISTED_RING reports that
 * found no list are kept for that check; a MKDIR that saw more of them
 * go by, or every list dropped (list_epoch), starts none.
 */
#define LISTED_MAX 65536

static unsigned list_epoch(struct qtfs_fs *fs)
{
	return (unsigned)g_atomic_int_get(&fs->list_epoch);
}

/* Where the reports stood when a MKDIR went out. */
struct list_mark {
	unsigned epoch;
	uint32_t seq;
};

static void list_mark_get(struct qtfs_fs *fs, struct list_mark *m)
{
	g_mutex_lock(&fs->lock);
	m->epoch = list_epoch(fs);
	m->seq = fs->unlisted_seq;
	g_mutex_unlock(&fs->lock);
}

/* A report for a directory that has no list here.  fs->lock held. */
static void unlisted_note_locked(struct qtfs_fs *fs, uint64_t dev, uint64_t ino, uint64_t gen)
{
	fs->unlisted[fs->unlisted_seq % UNLISTED_RING] =
		(struct dir_key){.dev = dev, .ino = ino, .gen = gen};
	fs->unlisted_seq++;
}

/* Since @m, no list was dropped and no report named @n.  fs->lock held. */
static bool list_mark_clear_locked(struct qtfs_fs *fs, const struct list_mark *m, const struct node *n)
{
	uint32_t seen = fs->unlisted_seq - m->seq;

	if (m->epoch != list_epoch(fs) || seen > UNLISTED_RING)
		return false;
	for (uint32_t i = 0; i < seen; i++) {
		if (key_eq(&fs->unlisted[(m->seq + i) % UNLISTED_RING], n->dev, n->ino, n->gen))
			return false;
	}
	return true;
}

/* fs->lock held. */
static void listed_start_locked(struct qtfs_fs *fs, struct node *n, const struct qtfs_attr *a,
				unsigned epoch, const struct list_mark *lmark)
{
	if (!lmark || !(a->flags & QTFS_AF_LISTED) || !(a->flags & QTFS_AF_WATCHED) ||
	    n->type != S_IFDIR || n->names || !g_atomic_int_get(&fs->watch_on) ||
	    !trusted(fs, epoch) || !list_mark_clear_locked(fs, lmark, n) ||
	    fs->listed_total >= fs->o.listed_names)
		return;
	n->names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
}

/* @d's list goes.  fs->lock held. */
static void listed_drop_locked(struct qtfs_fs *fs, struct node *d)
{
	if (!d->names)
		return;
	fs->listed_total -= g_hash_table_size(d->names);
	g_clear_pointer(&d->names, g_hash_table_destroy);
}

/* @name may exist in @d from now on.  fs->lock held. */
static void listed_add_locked(struct qtfs_fs *fs, struct node *d, const char *name, size_t len)
{
	if (!d)
		return;
	if (!d->names) {
		d->made_gen++; /* a listing being read for a list may miss it */
		return;
	}
	if (g_hash_table_size(d->names) >= LISTED_MAX || fs->listed_total >= fs->o.listed_names) {
		listed_drop_locked(fs, d);
		return;
	}
	if (g_hash_table_add(d->names, g_strndup(name, len)))
		fs->listed_total++;
}

/* A name about to be made in @parent from here. */
static void listed_note(struct qtfs_fs *fs, fuse_ino_t parent, const char *name)
{
	g_mutex_lock(&fs->lock);
	listed_add_locked(fs, node_by_id(fs, parent), name, strlen(name));
	g_mutex_unlock(&fs->lock);
}

/* Is @name known not to be in @parent? */
static bool listed_absent(struct qtfs_fs *fs, fuse_ino_t parent, const char *name)
{
	struct node *p;
	bool absent;

	g_mutex_lock(&fs->lock);
	p = node_by_id(fs, parent);
	absent = p && p->names && !g_hash_table_contains(p->names, name);
	g_mutex_unlock(&fs->lock);
	return absent;
}

/* Names may have been missed: no list is complete any more.  fs->lock held. */
static void listed_drop_all_locked(struct qtfs_fs *fs)
{
	GHashTableIter it;
	gpointer v;

	g_atomic_int_inc(&fs->list_epoch);
	g_hash_table_iter_init(&it, fs->by_id);
	while (g_hash_table_iter_next(&it, NULL, &v))
		listed_drop_locked(fs, v);
}

/* The names of a WATCH reply into the lists of their directories.  Loop thread. */
static void listed_take(struct qtfs_fs *fs, const GArray *names)
{
	g_mutex_lock(&fs->lock);
	for (guint i = 0; i < names->len; i++) {
		const struct qtfs_watch_name *w = &g_array_index(names, struct qtfs_watch_name, i);
		struct node *d = dir_node_locked(fs, w->dev, w->ino, w->gen);

		if (d && d->names) {
			listed_add_locked(fs, d, w->name, w->len);
		} else {
			/* perhaps a MKDIR's, its reply not taken in yet, or a listing's */
			if (d)
				d->made_gen++;
			unlisted_note_locked(fs, w->dev, w->ino, w->gen);
		}
	}
	g_mutex_unlock(&fs->lock);
}

/* ---- barrier ---------------------------------------------------------------- */

/*
 * A getxattr of QTFS_SYNC_XATTR on any file of the mount returns once
 * every change the host made before it is known to this mount's kernel
 * and lists: the server takes in its pending inotify events, sends this
 * client's at once, and answers WATCH_SYNC with the number of the WATCH
 * reply that carries the last of them; the notifier marks each reply done
 * after its names (INVAL_SEQ_DONE).  rexec asks every fuse-qtfs mount for it
 * before it returns, so that what a command run on the host made or
 * removed is seen on the DPU right after.
 *
 * Without a running subscription (the server unreachable, a WATCH that
 * failed, names missed while the barrier waited), the barrier expires
 * every cached name and drops every list instead, and waits for that: the
 * next lookups ask the host.  A barrier that waits past SYNC_WAIT_US
 * fails with ETIMEDOUT.  Without a subscription (watch_timeout=0) names
 * are cached for entry_timeout only, and the barrier does nothing; on a
 * kernel that cannot expire names (before 6.2) they are cached for
 * entry_timeout too, and the barrier brings the lists and the host's
 * moves of directories up to date, but not the names the kernel holds.
 */
#define SYNC_WAIT_US (5 * G_USEC_PER_SEC)

static void expire_all_push(struct qtfs_fs *fs);

/*
 * A barrier is answered asynchronously: it holds no worker thread while
 * it waits for the notifier, which may itself wait for a directory lock
 * that a request still queued for a worker holds.  Its getxattr sends
 * WATCH_SYNC and returns; the reply, the notifier (as it finishes WATCH
 * replies and sweeps, and every SYNC_TICK_US for the deadlines) and
 * watch_missed() move it on through sync_kick().
 */
struct sync_waiter {
	struct qtfs_fs *fs;
	fuse_req_t req;
	size_t size;	/* the getxattr's: 0 asks for the value's length */
	bool sweep;	/* waits for sweep @want, else for WATCH reply @want of @epoch */
	uint64_t want;
	unsigned epoch;
	gint64 until;	/* deadline, g_get_monotonic_time() */
	bool asking;	/* WATCH_SYNC not answered yet: nothing to wait for but the deadline */
	bool done;	/* answered, or about to be (out of the list); sync_lock */
	int err;	/* the answer, once done */
	int refs;	/* atomic: the list (until answered), the WATCH_SYNC call */
};

static void sync_unref(struct sync_waiter *w)
{
	if (g_atomic_int_dec_and_test(&w->refs))
		g_free(w);
}

/* Answer @w, taken out of the list (or never in it). */
static void sync_answer(struct sync_waiter *w)
{
	if (w->err)
		reply_err(w->req, w->err);
	else if (w->size)
		fuse_reply_buf(w->req, "", 0);
	else
		fuse_reply_xattr(w->req, 0);
	sync_unref(w);
}

/* Answer @done's waiters, out of sync_lock. */
static void sync_answer_all(GList *done)
{
	g_list_free_full(done, (GDestroyNotify)sync_answer);
}

/* Into the waiting list, or answered at once after qtfs_fs_stop().  sync_lock held. */
static void sync_wait_locked(struct qtfs_fs *fs, struct sync_waiter *w, GList **done)
{
	if (fs->sync_closed) {
		w->err = EIO;
		w->done = true;
		*done = g_list_prepend(*done, w);
		return;
	}
	fs->sync_waiters = g_list_prepend(fs->sync_waiters, w);
	g_atomic_int_inc(&fs->sync_count);
}

/* Have the notifier expire every cached name; the sweep's ticket.  sync_lock held. */
static uint64_t sweep_push_locked(struct qtfs_fs *fs)
{
	uint64_t ticket = ++fs->sweep_next;

	expire_all_push(fs);
	inval_push_kind(fs, INVAL_SWEEP_DONE, ticket);
	return ticket;
}

/*
 * @w sweeps instead: every cached name expired, every list dropped
 * (reports may be pending), and the notifier done with that.
 */
static void sync_sweep(struct qtfs_fs *fs, struct sync_waiter *w)
{
	GList *done = NULL;

	g_mutex_lock(&fs->lock);
	listed_drop_all_locked(fs);
	g_mutex_unlock(&fs->lock);
	g_mutex_lock(&fs->sync_lock);
	w->sweep = true;
	if (!fs->sync_closed)
		w->want = sweep_push_locked(fs);
	sync_wait_locked(fs, w, &done);
	g_mutex_unlock(&fs->sync_lock);
	sync_answer_all(done);
}

/*
 * Answer the waiters whose reply or sweep the notifier is done with, or
 * whose deadline passed.  One that waits for a reply of an epoch gone by
 * (names may have been missed) sweeps instead: watch_missed() dropped the
 * lists already.  Reply numbers start again with each subscription, so
 * the last one done counts only if its epoch is the waiter's.
 */
static void sync_kick(struct qtfs_fs *fs)
{
	gint64 now = g_get_monotonic_time();
	unsigned epoch = watch_epoch(fs);
	GList *done = NULL, *next;
	uint64_t ticket = 0;

	g_mutex_lock(&fs->sync_lock);
	for (GList *l = fs->sync_waiters; l; l = next) {
		struct sync_waiter *w = l->data;
		bool reached = w->asking  ? false
			       : w->sweep ? fs->sweep_done >= w->want
					  : fs->seq_epoch == w->epoch && fs->seq_done >= w->want;

		next = l->next;
		if (!reached && now >= w->until) {
			w->err = ETIMEDOUT;
			reached = true;
		} else if (!reached && !w->asking && !w->sweep && w->epoch != epoch) {
			if (!ticket)
				ticket = sweep_push_locked(fs);
			w->sweep = true;
			w->want = ticket;
		}
		if (reached) {
			fs->sync_waiters = g_list_delete_link(fs->sync_waiters, l);
			g_atomic_int_add(&fs->sync_count, -1);
			w->done = true;
			done = g_list_prepend(done, w);
		}
	}
	g_mutex_unlock(&fs->sync_lock);
	sync_answer_all(done);
}

/*
 * WATCH_SYNC answered (loop thread): @w, listed since the call went out
 * unless answered meanwhile (deadline, interrupt, stop), now waits for
 * the reply it names, or sweeps if the call failed.
 */
static void sync_asked(void *arg, int err, struct qt_msg *rep)
{
	struct sync_waiter *w = arg;
	struct qtfs_fs *fs = w->fs;
	uint64_t seq = 0;
	struct qt_rd r;

	if (err == 0) {
		qt_rd_init_msg(&r, rep);
		if (qt_rd_u64(&r, &seq) < 0 || qt_rd_end(&r) < 0)
			err = -EIO;
	}
	qt_msg_free(rep);
	if (err < 0) {
		/* Reports may be pending: no list may answer from before them. */
		g_mutex_lock(&fs->lock);
		listed_drop_all_locked(fs);
		g_mutex_unlock(&fs->lock);
	}
	g_mutex_lock(&fs->sync_lock);
	if (!w->done) {
		if (err < 0) {
			w->sweep = true;
			w->want = fs->sync_closed ? 0 : sweep_push_locked(fs);
		} else {
			w->want = seq;
		}
		w->asking = false;
		if (!fs->sync_closed)
			inval_push_kind(fs, INVAL_KICK, 0); /* it may be done already */
	}
	g_mutex_unlock(&fs->sync_lock);
	sync_unref(w);
}

/*
 * The caller of a waiting barrier got a signal (rexec gave up on it and
 * exits, for one): answer EINTR at once, as a local getxattr would.  Looked
 * up by @req: the waiter may be answered, and gone, meanwhile.
 */
static void sync_interrupted(fuse_req_t req, void *arg)
{
	struct qtfs_fs *fs = arg;
	struct sync_waiter *w = NULL;

	g_mutex_lock(&fs->sync_lock);
	for (GList *l = fs->sync_waiters; l; l = l->next) {
		if (((struct sync_waiter *)l->data)->req == req) {
			w = l->data;
			fs->sync_waiters = g_list_delete_link(fs->sync_waiters, l);
			g_atomic_int_add(&fs->sync_count, -1);
			w->done = true;
			break;
		}
	}
	g_mutex_unlock(&fs->sync_lock);
	if (w) {
		w->err = EINTR;
		sync_answer(w);
	}
}

/* The barrier for @req, a getxattr of QTFS_SYNC_XATTR with @size. */
static void watch_sync(fuse_req_t req, struct qtfs_fs *fs, size_t size)
{
	struct sync_waiter *w;

	GList *done = NULL;

	w = g_new0(struct sync_waiter, 1);
	w->fs = fs;
	w->req = req;
	w->size = size;
	w->until = g_get_monotonic_time() + SYNC_WAIT_US;
	w->refs = 1;
	if (!fs->se) {
		sync_answer(w); /* nothing is cached for longer than entry_timeout */
		return;
	}
	w->epoch = watch_epoch(fs);
	fuse_req_interrupt_func(req, sync_interrupted, fs);
	if (!g_atomic_int_get(&fs->watch_on)) {
		sync_sweep(fs, w);
		return;
	}
	/* Listed while it asks, so that its deadline and an interrupt hold from now on. */
	w->asking = true;
	w->refs = 2;
	g_mutex_lock(&fs->sync_lock);
	sync_wait_locked(fs, w, &done);
	g_mutex_unlock(&fs->sync_lock);
	sync_answer_all(done);
	qtfs_client_call_async_any(fs->cl, qt_msg_new(QTFS_WATCH_SYNC, 0, 0), QTFS_REPEAT, sync_asked, w);
}

static void watch_arm(void *arg);

/* Have the notifier expire every cached name. */
static void expire_all_push(struct qtfs_fs *fs)
{
	inval_push_kind(fs, INVAL_ALL, 0);
}

static void expire_again(void *arg)
{
	struct qtfs_fs *fs = arg;

	if (!g_atomic_int_get(&fs->watch_stop))
		expire_all_push(fs);
}

/*
 * Names may have been missed: expire them all (see above), unless none was
 * cached for long (a first subscription, or nothing since the last time).
 * Loop thread.
 */
static void watch_missed(struct qtfs_fs *fs)
{
	g_mutex_lock(&fs->lock);
	listed_drop_all_locked(fs);
	g_mutex_unlock(&fs->lock);
	g_atomic_int_inc(&fs->watch_epoch);
	g_atomic_int_inc(&fs->trust_epoch);
	/* A barrier waiting for a reply of the old epoch sweeps instead. */
	inval_push_kind(fs, INVAL_KICK, 0);
	if (!g_atomic_int_compare_and_exchange(&fs->watch_long, 1, 0))
		return;
	expire_all_push(fs);
	qt_timer_add(qtfs_client_loop(fs->cl), 1000, expire_again, fs);
}

/*
 * A rename of a directory made from here.  The host reports it too
 * (QTFS_WN_MOVED), a moment after its reply, and the client has moved the
 * node at the reply already: the report must not move it again.  Applied
 * after a second rename from here (A to B, then back to A: the report of
 * the first finds the node where that one took it from), it would put the
 * node at B until the second's report came, and every name below it
 * would be looked up in the wrong place (ENOENT); applied before the
 * reply, the reply would no longer find the node where it was.  So the
 * client notes the rename before it sends it (own_move_add_locked()), and
 * the report of it finds the note and is dropped (own_move_take_locked()),
 * whenever it comes.  A rename that failed takes its note back
 * (own_move_drop_locked()); a note whose report never comes (a directory
 * the server does not watch, a report lost with the others when the
 * server's queue overflowed) goes after OWN_MOVE_TTL_US.  Not when reports
 * were missed (watch_missed()): a rename sent just before the client hears
 * of that is reported after it, and its note must still be there.
 */
struct own_move {
	uint64_t id;
	gint64 at_us;
	struct dir_key self, from, to;
	char *from_name, *to_name;
};

#define OWN_MOVE_TTL_US (10 * G_USEC_PER_SEC)
#define OWN_MOVES_MAX 1024

static void own_move_free(struct own_move *m)
{
	g_free(m->from_name);
	g_free(m->to_name);
	g_free(m);
}

/* Drop the notes past their time, and the oldest beyond OWN_MOVES_MAX.  fs->lock held. */
static void own_moves_prune_locked(struct qtfs_fs *fs)
{
	gint64 now = g_get_monotonic_time();
	struct own_move *m;

	while ((m = g_queue_peek_head(&fs->own_moves)) &&
	       (now - m->at_us > OWN_MOVE_TTL_US || fs->own_moves.length > OWN_MOVES_MAX))
		own_move_free(g_queue_pop_head(&fs->own_moves));
}

static void own_moves_clear_locked(struct qtfs_fs *fs)
{
	struct own_move *m;

	while ((m = g_queue_pop_head(&fs->own_moves)))
		own_move_free(m);
}

/*
 * Note that the directory @n is about to be renamed from @from_name in
 * @from to @to_name in @to; returns the note's id for
 * own_move_drop_locked(), 0 when @n is not a directory.  fs->lock held.
 */
static uint64_t own_move_add_locked(struct qtfs_fs *fs, const struct node *n, const struct node *from,
				    const char *from_name, const struct node *to, const char *to_name)
{
	struct own_move *m;

	if (!n || n->type != S_IFDIR)
		return 0;
	own_moves_prune_locked(fs);
	m = g_new0(struct own_move, 1);
	*m = (struct own_move){.id = ++fs->own_move_id, .at_us = g_get_monotonic_time(),
			       .self = node_key(n), .from = node_key(from), .to = node_key(to),
			       .from_name = g_strdup(from_name), .to_name = g_strdup(to_name)};
	g_queue_push_tail(&fs->own_moves, m);
	return m->id;
}

/* Take back the note @id (the rename failed).  fs->lock held. */
static void own_move_drop_locked(struct qtfs_fs *fs, uint64_t id)
{
	for (GList *l = fs->own_moves.head; id && l; l = l->next) {
		struct own_move *m = l->data;

		if (m->id == id) {
			g_queue_delete_link(&fs->own_moves, l);
			own_move_free(m);
			return;
		}
	}
}

/* Is the report @v one of a rename from here?  Then its note goes.  fs->lock held. */
static bool own_move_take_locked(struct qtfs_fs *fs, const struct inval *v)
{
	own_moves_prune_locked(fs);
	for (GList *l = fs->own_moves.head; l; l = l->next) {
		struct own_move *m = l->data;

		if (key_eq(&m->self, v->self_dev, v->self_ino, v->self_gen) &&
		    key_eq(&m->from, v->from_dev, v->from_ino, v->from_gen) &&
		    key_eq(&m->to, v->dev, v->ino, v->gen) && !strcmp(m->from_name, v->name + v->from_off) &&
		    !strcmp(m->to_name, v->name)) {
			g_queue_delete_link(&fs->own_moves, l);
			own_move_free(m);
			return true;
		}
	}
	return false;
}

/*
 * A directory the host moved (QTFS_WN_MOVED, an INVAL_MOVE): its node goes
 * to its new place, where the client knows the new parent, so that names
 * looked up relative to it (a DPU process's working directory in it)
 * reach the host's.  The notifier does it, after it has expired the
 * kernel's names the same report dropped (the directory's old one among
 * them): while the kernel still held a name that nests the directories
 * the old way, a lookup through the new place could otherwise be refused
 * by the kernel (ELOOP).  A walk through the new name finds the same
 * node.  Reports come in order, so a later move moves it on.  Only from
 * where the node is: a report is older than what the client did since (a
 * rename of the directory from here, whose own report follows it), and
 * applied after that it would put the node back where it was before.
 * Where the node is elsewhere, the client knows better, or nothing it can
 * trust: it keeps its place.
 */
static void watch_moved(struct qtfs_fs *fs, const struct inval *v)
{
	struct node probe = {.dev = v->self_dev, .ino = v->self_ino};
	struct node *n, *to, *from;

	g_mutex_lock(&fs->lock);
	if (own_move_take_locked(fs, v)) {
		g_mutex_unlock(&fs->lock);
		qt_debug("report of our own move of directory %" G_GUINT64_FORMAT " (\"%s\" to \"%s\") dropped",
			 v->self_ino, v->name + v->from_off, v->name);
		return;
	}
	n = g_hash_table_lookup(fs->by_key, &probe);
	to = dir_node_locked(fs, v->dev, v->ino, v->gen);
	from = dir_node_locked(fs, v->from_dev, v->from_ino, v->from_gen);
	/* Where the new parent has a path itself: else the node keeps the one it had. */
	for (struct node *p = to; p && p != fs->root; p = p->parent)
		if (!p->parent)
			to = NULL;
	if (n && (!from || n->parent != from || g_strcmp0(n->name, v->name + v->from_off)))
		n = NULL;
	if (n && to && n != fs->root && n->type == S_IFDIR && n->gen == v->self_gen) {
		node_name(fs, n, to, v->name);
		g_atomic_int_inc(&fs->moves);
		qt_debug("directory %" G_GUINT64_FORMAT " moved by a report, \"%s\" to \"%s\"", v->self_ino,
			 v->name + v->from_off, v->name);
	}
	g_mutex_unlock(&fs->lock);
}

/* A WATCH reply: queue its names for the notifier.  0, or -EIO if malformed. */
static int watch_take_reply(struct qtfs_fs *fs, const struct qt_msg *rep)
{
	g_autoptr(GArray) names = g_array_new(FALSE, FALSE, sizeof(struct qtfs_watch_name));
	uint32_t flags = 0;
	uint64_t seq = 0;

	if (qtfs_watch_reply_read(rep, &flags, &seq, names) < 0)
		return -EIO;
	if (flags & QTFS_WF_OVERFLOW)
		qt_debug("the host's reports overflowed: cached names expire");
	if (flags & (QTFS_WF_START | QTFS_WF_OVERFLOW))
		watch_missed(fs);
	listed_take(fs, names);
	for (guint i = 0; i < names->len; i++) {
		const struct qtfs_watch_name *n = &g_array_index(names, struct qtfs_watch_name, i);

		/* A new name makes nothing the kernel holds wrong. */
		if (!n->is_new)
			inval_push_name(fs, n->dev, n->ino, n->gen, n->name, n->len);
		if (n->moved)
			inval_push_move(fs, n);
	}
	inval_push_seq_done(fs, seq, watch_epoch(fs));
	return 0;
}

static void watch_done(void *arg, int err, struct qt_msg *rep)
{
	struct qtfs_fs *fs = arg;

	if (err == 0)
		err = watch_take_reply(fs, rep);
	qt_msg_free(rep);
	if (g_atomic_int_get(&fs->watch_stop))
		return;
	if (err < 0) {
		/*
		 * The reply may have been lost with its names (or was garbage):
		 * expire what was cached for long, and cache briefly until a
		 * WATCH gets through again.
		 */
		if (g_atomic_int_get(&fs->watch_on))
			qt_notice("name watch: %s; names are cached for entry_timeout until it is back",
				g_strerror(-err));
		g_atomic_int_set(&fs->watch_on, 0);
		watch_missed(fs);
		qt_timer_add(qtfs_client_loop(fs->cl), 1000, watch_arm, fs);
		return;
	}
	g_atomic_int_set(&fs->watch_on, 1);
	watch_arm(fs);
}

/* Send the next WATCH (from any thread: the call goes through the loop). */
static void watch_arm(void *arg)
{
	struct qtfs_fs *fs = arg;
	struct qt_msg *m;
	uint64_t hold;

	if (g_atomic_int_get(&fs->watch_stop))
		return;
	/*
	 * Held by the server up to @hold; the call's deadline is the usual one
	 * on top of that (a reply that misses it costs a sweep of every name
	 * cached).  Not repeated on another connection by the client: a reply
	 * lost with its connection took names with it, and watch_done() must
	 * hear of it.
	 */
	hold = MIN(25000, qtfs_client_timeout_ms(fs->cl) / 2);
	m = qt_msg_new(QTFS_WATCH, 0, 0);
	qt_msg_put_u32(m, (uint32_t)hold);
	qtfs_client_call_async_held(fs->cl, m, QTFS_ONCE, hold, watch_done, fs);
}

/* ---- forgotten directories ----------------------------------------------- */

/*
 * The host watches each directory the client looked a name up in, for as
 * long as the client is connected: a client that walks a large tree over
 * months (image layers unpacked and removed, a program scanning its state
 * directories) would hold a watch on every directory it ever looked in,
 * up to the server's client_watches, and cache names nowhere new after
 * that.  When the kernel forgets a directory (its node goes, and with it
 * everything the kernel held beneath it) the client tells the server,
 * which takes it out of this client's watches (QTFS_UNWATCH), batched
 * over UNWATCH_DELAY_MS.
 *
 * An UNWATCH may overtake a call that has the server watch the same
 * directory again (the kernel looked it up anew and a name in it, on
 * another connection), and undo the watch that call's answer says it
 * has.  So no directory with a node is sent, checked under fs->lock
 * when the batch goes; the batch counts as on its way from then on
 * (unwatch_busy, trust_epoch moved on); and no answer to a call that
 * went out before the UNWATCH's answer came, or came in while one was
 * on its way, is trusted with QTFS_AF_WATCHED or QTFS_AF_LISTED: its
 * names are cached for entry_timeout, and it starts no list.
 */
#define UNWATCH_DELAY_MS 100

static void unwatch_flush(void *arg);

/* Loop thread: flush what is noted in a while. */
static void unwatch_later(void *arg)
{
	struct qtfs_fs *fs = arg;

	qt_timer_add(qtfs_client_loop(fs->cl), UNWATCH_DELAY_MS, unwatch_flush, fs);
}

/*
 * @n, about to go: a directory the server may watch for us.  Not one
 * without a name any more: mostly removed, and the host's watch went
 * with it.  Nor one on a pseudo file system mounted inside the export
 * (procfs, sysfs, cgroupfs), which the server never watches: each UNWATCH
 * on its way keeps the answers of the calls meanwhile from being trusted.
 * fs->lock held.
 */
static void unwatch_note_locked(struct qtfs_fs *fs, const struct node *n)
{
	struct dir_key k = node_key(n);

	if (!fs->o.unwatch || !fs->se || n->type != S_IFDIR || n == fs->root || !n->parent ||
	    n->pseudo || g_atomic_int_get(&fs->watch_stop))
		return;
	if (!fs->unwatch_keys)
		fs->unwatch_keys = g_array_new(FALSE, FALSE, sizeof(struct dir_key));
	g_array_append_val(fs->unwatch_keys, k);
	if (!fs->unwatch_due) {
		fs->unwatch_due = true;
		qt_loop_post(qtfs_client_loop(fs->cl), unwatch_later, fs);
	}
}

static void unwatch_done(void *arg, int err, struct qt_msg *rep)
{
	struct qtfs_fs *fs = arg;

	(void)err; /* a failed one leaves watches the server drops with the subscription */
	qt_msg_free(rep);
	/* The epoch before the count: trusted() reads the count first. */
	g_atomic_int_inc(&fs->trust_epoch);
	g_atomic_int_add(&fs->unwatch_busy, -1);
}

/* Loop thread: send the directories noted, those with no node again, in batches. */
static void unwatch_flush(void *arg)
{
	struct qtfs_fs *fs = arg;
	g_autoptr(GArray) keys = NULL;
	GPtrArray *batches = g_ptr_array_new();
	struct qt_msg *m = NULL;
	uint32_t count = 0;

	g_mutex_lock(&fs->lock);
	keys = g_steal_pointer(&fs->unwatch_keys);
	fs->unwatch_due = false;
	for (guint i = 0; keys && !g_atomic_int_get(&fs->watch_stop) && i < keys->len; i++) {
		const struct dir_key *k = &g_array_index(keys, struct dir_key, i);

		if (dir_node_locked(fs, k->dev, k->ino, k->gen))
			continue;
		if (!m) {
			m = qt_msg_new(QTFS_UNWATCH, 0, 0);
			qt_msg_put_u32(m, 0); /* the count, set below */
		}
		qt_msg_put_u64(m, k->dev);
		qt_msg_put_u64(m, k->ino);
		qt_msg_put_u64(m, k->gen);
		fs->unwatched++;
		if (++count == QTFS_UNWATCH_MAX) {
			qt_msg_patch_u32(m, 0, count);
			g_ptr_array_add(batches, g_steal_pointer(&m));
			count = 0;
		}
	}
	if (m) {
		qt_msg_patch_u32(m, 0, count);
		g_ptr_array_add(batches, g_steal_pointer(&m));
	}
	/* On their way from here: no call going out from now on is trusted until they are back. */
	g_atomic_int_add(&fs->unwatch_busy, (int)batches->len);
	if (batches->len)
		g_atomic_int_inc(&fs->trust_epoch);
	g_mutex_unlock(&fs->lock);
	for (guint i = 0; i < batches->len; i++)
		qtfs_client_call_async_any(fs->cl, batches->pdata[i], QTFS_REPEAT, unwatch_done, fs);
	g_ptr_array_free(batches, TRUE);
}

void qtfs_fs_set_session(struct qtfs_fs *fs, struct fuse_session *se)
{
	fs->session = se;
	if (fs->o.watch_timeout > 0)
		fs->se = se;
}

/* ---- operations ------------------------------------------------------------- */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct qtfs_fs *fs = userdata;

	conn->max_write = QTFS_IO_MAX;
	conn->max_read = fs->o.max_read;
	conn->max_readahead = fs->o.readahead;
	/* Readahead and async direct I/O may keep this many requests in flight. */
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	conn->want |= conn->capable & (FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO |
				       FUSE_CAP_AUTO_INVAL_DATA | FUSE_CAP_PARALLEL_DIROPS |
				       FUSE_CAP_ASYNC_READ | FUSE_CAP_ATOMIC_O_TRUNC);
	/* READ replies from a pipe go to the kernel by splice (reply_read()). */
	conn->want |= conn->capable & FUSE_CAP_SPLICE_WRITE;
	/* Data changes on the host: no writeback cache. */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/* The host's ACLs take part in the kernel's permission checks (see "ACLs"). */
	conn->want |= conn->capable & FUSE_CAP_POSIX_ACL;
	if (fs->o.umask)
		conn->want |= conn->capable & FUSE_CAP_DONT_MASK;
	/*
	 * Without expire-only (before 6.2) names are cached for entry_timeout
	 * only, but the subscription still runs: its reports keep the lists
	 * and the node tree (the host's moves of directories) right, and the
	 * barrier waits for them.  FUSE_QTFS_NO_EXPIRE_ONLY makes a newer
	 * kernel look like that, for the tests.
	 */
	fs->can_expire = fs->se && (conn->capable & FUSE_CAP_EXPIRE_ONLY) &&
			 !g_getenv("FUSE_QTFS_NO_EXPIRE_ONLY");
	if (fs->se && !fs->can_expire)
		qt_notice("this kernel cannot expire cached names (FUSE's expire-only notification, "
			  "Linux 6.2): names are cached for entry_timeout only");
	if (fs->se && !fs->notifier) {
		/* The notifier must leave the termination signals to the main thread. */
		sigset_t all, old;

		fs->invals = g_async_queue_new();
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		fs->notifier = g_thread_new("qtfs-inval", notifier_main, fs);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		watch_arm(fs);
	}
}

/* A lookup asked again once the writes it met are done (lookup_done()). */
static void lookup_again(void *arg)
{
	struct pending *p = arg;

	do_lookup(p->req, p->ino, p->name, g_steal_pointer(&p->wb));
	pending_free(p);
}

static void lookup_done(void *arg, int err, struct qt_msg *rep)
{
	struct pending *p = arg;
	struct qtfs_fs *fs = FS(p->req);
	struct qtfs_attr a;
	fuse_ino_t busy = 0;
	bool hit = false;

	err = async_attr(err, rep, &a);
	if (err < 0) {
		reply_err(p->req, -err);
		pending_free(p);
		return;
	}
	if (p->wb) {
		g_mutex_lock(&fs->lock);
		hit = wb_snap_hit_locked(fs, p->wb, &a, true, &busy);
		g_mutex_unlock(&fs->lock);
	}
	if (hit) {
		/*
		 * A file with writes on their way when the lookup went out: the
		 * host may have sent its size from before them (see
		 * "Write-behind").  Ask again once they are done.
		 */
		if (!wb_after(fs, busy, lookup_again, p))
			lookup_again(p);
		return;
	}
	fix_attr(fs, p->path, false, &a);
	reply_entry_at(p->req, fs, p->ino, p->name, &a, p->epoch, NULL, &p->names_gen);
	pending_free(p);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct qtfs_fs *fs = FS(req);
	struct wb_snap *wb;

	if (fs->o.proc && parent == FUSE_ROOT_ID && proc_lookup(req, fs, name))
		return;
	if (listed_absent(fs, parent, name)) {
		reply_err(req, ENOENT);
		return;
	}
	/* Writes on their way: the answer is checked against them (lookup_done()). */
	if (!wb_snap_take(fs, &wb) && wb_hold(fs, FUSE_LOOKUP, req, parent, NULL, 0, 0, 0, name))
		return;
	do_lookup(req, parent, name, wb);
}

/* Send a LOOKUP; @wb: the files with writes on their way when the kernel sent it (owned). */
static void do_lookup(fuse_req_t req, fuse_ino_t parent, const char *name, struct wb_snap *wb)
{
	struct qtfs_fs *fs = FS(req);
	g_autofree char *path = NULL;
	unsigned names_gen = 0;
	struct pending *p;
	struct node *d;
	struct qt_msg *m;

	g_mutex_lock(&fs->lock);
	if ((d = node_by_id(fs, parent))) {
		path = node_path_locked(fs, d, name);
		names_gen = d->names_gen;
	}
	g_mutex_unlock(&fs->lock);
	if (!path) {
		g_free(wb);
		reply_err(req, ESTALE);
		return;
	}
	m = req_path(QTFS_LOOKUP, path);
	p = pending_new(req, parent, g_steal_pointer(&path), name);
	p->names_gen = names_gen;
	p->wb = wb;
	call_async(fs, m, lookup_done, p);
}

static void forget_one(struct qtfs_fs *fs, fuse_ino_t ino, uint64_t nlookup)
{
	struct node *n = node_by_id(fs, ino);

	if (!n || n == fs->root)
		return;
	n->nlookup = nlookup > n->nlookup ? 0 : n->nlookup - nlookup;
	if (n->nlookup == 0 && n->children == 0)
		node_free(fs, n);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct qtfs_fs *fs = FS(req);

	g_mutex_lock(&fs->lock);
	forget_one(fs, ino, nlookup);
	g_mutex_unlock(&fs->lock);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct qtfs_fs *fs = FS(req);

	g_mutex_lock(&fs->lock);
	for (size_t i = 0; i < count; i++)
		forget_one(fs, forgets[i].ino, forgets[i].nlookup);
	g_mutex_unlock(&fs->lock);
	fuse_reply_none(req);
}

/* Synthetic node of proc mode?  Fills its key. */
static bool is_synth(struct qtfs_fs *fs, fuse_ino_t ino, uint64_t *key)
{
	struct node *n;
	bool synth = false;

	if (!fs->o.proc)
		return false;
	g_mutex_lock(&fs->lock);
	n = node_by_id(fs, ino);
	if (n && n->dev == SYNTH_DEV) {
		synth = true;
		*key = n->ino;
	}
	g_mutex_unlock(&fs->lock);
	return synth;
}

static struct qt_msg *build_getattr(uint64_t sh, void *ctx)
{
	struct qt_msg *m = req_path(QTFS_GETATTR, "");

	qt_msg_put_u64(m, sh);
	return m;
}

/* Answer a GETATTR of @ino (at @path, or NULL) from its reply (freed here) or error. */
static void answer_getattr(fuse_req_t req, fuse_ino_t ino, const char *path, int err,
			   struct qt_msg *rep)
{
	struct qtfs_fs *fs = FS(req);
	struct qtfs_attr a;

	err = async_attr(err, rep, &a);
	if (err < 0) {
		reply_err(req, -err);
		return;
	}
	/*
	 * Another file at the node's name (renamed over on the host, its
	 * report not in yet): its attributes are not the node's.  ESTALE, and
	 * the kernel looks the name up again (stat(2) retries once).
	 */
	if (!node_is(fs, ino, &a) || !attr_for_kernel(fs, ino, path, &a))
		reply_err(req, ESTALE);
	else
		reply_attr(req, fs, ino, &a);
}

static void getattr_done(void *arg, int err, struct qt_msg *rep)
{
	struct pending *p = arg;

	answer_getattr(p->req, p->ino, p->path, err, rep);
	pending_free(p);
}

static void getattr_fh_answer(struct fh_pending *p, int err, struct qt_msg *rep)
{
	answer_getattr(p->req, p->ino, p->path, err, rep);
	fh_pending_free(p);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (!wb_hold(FS(req), FUSE_GETATTR, req, ino, fi, 0, 0, 0, NULL))
		do_getattr(req, ino, fi);
}

static void do_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct qtfs_fs *fs = FS(req);
	g_autofree char *path = NULL;
	struct qtfs_attr post;
	struct fh_pending *p;
	struct fh *h;
	double valid;
	uint64_t key;

	if (is_synth(fs, ino, &key)) {
		struct stat st = {.st_mode = S_IFLNK | 0777, .st_nlink = 1, .st_ino = key, .st_size = 64};

		fuse_reply_attr(req, &st, 0);
		return;
	}
	if (post_attr_take(fs, ino, &post, &valid) && attr_type_ok(fs, ino, post.mode, post.mode)) {
		struct stat st;

		attr_told(fs, ino, &post);
		to_stat(&post, &st);
		fuse_reply_attr(req, &st, valid);
		return;
	}
	path = path_of(fs, ino, NULL);
	h = attr_fh(fs, ino, fi, path);
	if (!h && path) {
		struct qt_msg *m = req_path(QTFS_GETATTR, path);

		qt_msg_put_u64(m, 0);
		call_async(fs, m, getattr_done, pending_new(req, ino, g_steal_pointer(&path), NULL));
		return;
	}
	if (!h) {
		reply_err(req, ESTALE);
		return;
	}
	if (fi && fi->fh)
		g_atomic_int_inc(&h->refs);
	p = g_new0(struct fh_pending, 1);
	*p = (struct fh_pending){.fs = fs, .req = req, .h = h, .ino = ino, .path = g_steal_pointer(&path),
				 .build = build_getattr, .answer = getattr_fh_answer};
	call_fh_async(fs, p);
}

struct setattr_ctx {
	const char *path;
	const struct stat *st;
	int valid;
};

static struct qt_msg *build_setattr(uint64_t sh, void *arg)
{
	struct setattr_ctx *c = arg;
	struct qt_msg *m = req_path(QTFS_SETATTR, c->path);

	qt_msg_put_u64(m, sh);
	qt_msg_put_u32(m, (uint32_t)c->valid & QTFS_SA_KNOWN);
	qt_msg_put_u32(m, c->st->st_mode);
	qt_msg_put_u32(m, c->st->st_uid);
	qt_msg_put_u32(m, c->st->st_gid);
	qt_msg_put_i64(m, c->st->st_size);
	qt_msg_put_i64(m, c->st->st_atim.tv_sec);
	qt_msg_put_u32(m, (uint32_t)c->st->st_atim.tv_nsec);
	qt_msg_put_i64(m, c->st->st_mtim.tv_sec);
	qt_msg_put_u32(m, (uint32_t)c->st->st_mtim.tv_nsec);
	return m;
}

/*
 * SETATTR @c of @ino (its kernel file @fi or NULL, its host @path or NULL),
 * through an open file where there is one (attr_fh()), else by path: into
 * *@a the attributes after.
 */
static int setattr_call(struct qtfs_fs *fs, fuse_ino_t ino, struct fuse_file_info *fi, const char *path,
			struct setattr_ctx *c, struct qtfs_attr *a)
{
	g_autoptr(qt_msg) rep = NULL;
	struct fh *h = attr_fh(fs, ino, fi, path);
	int err;

	if (h) {
		err = call_fh(fs, h, build_setattr, c, &rep);
		if (!(fi && fi->fh))
			fh_unref(h);
	} else {
		err = path ? call(fs, build_setattr(0, c), &rep) : -ESTALE;
	}
	return err == 0 ? rd_attr_reply(rep, a) : err;
}

/*
 * A truncation (or an O_TRUNC open) by an unprivileged caller drops the
 * file's set-user-ID bit, and set-group-ID where its group may execute or
 * the caller is not in it (its primary group counts, as on the server:
 * kill_priv()), as a local one would; the host's, made as root, keeps
 * them.  Must @req's truncation of a regular file now of attributes @a, and
 * what mode does that leave (*@mode)?
 */
static bool truncation_drops_setid(fuse_req_t req, const struct qtfs_attr *a, uint32_t *mode)
{
	uint32_t m = a->mode & 07777;

	if (!S_ISREG(a->mode) || !(m & (S_ISUID | S_ISGID)))
		return false;
	m &= ~(uint32_t)S_ISUID;
	if ((m & S_IXGRP) || a->gid != fuse_req_ctx(req)->gid)
		m &= ~(uint32_t)S_ISGID;
	*mode = m;
	return m != (a->mode & 07777);
}

/*
 * After a truncation by a caller without CAP_FSETID (the kernel says so
 * with FATTR_KILL_SUIDGID and leaves it to the file system, since we ask
 * for FUSE_HANDLE_KILLPRIV_V2: session.c), change the file's mode where
 * truncation_drops_setid() says.  *@a: the attributes after the
 * truncation, then after that.
 */
static int setattr_kill_priv(fuse_req_t req, struct qtfs_fs *fs, fuse_ino_t ino,
			     struct fuse_file_info *fi, const char *path, struct qtfs_attr *a)
{
	struct stat st = {0};
	struct setattr_ctx c = {.path = path ? path : "", .st = &st, .valid = FUSE_SET_ATTR_MODE};
	uint32_t m;

	if (!truncation_drops_setid(req, a, &m))
		return 0;
	st.st_mode = m;
	return setattr_call(fs, ino, fi, path, &c, a);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct qtfs_fs *fs = FS(req);
	g_autofree char *path = path_of(fs, ino, NULL);
	struct setattr_ctx c = {.path = path ? path : "", .st = attr, .valid = to_set};
	struct qtfs_attr a;
	struct node *n;
	int err;

	/* A truncation after the writes before it; and attributes with them. */
	wb_wait(fs, ino);
	err = setattr_call(fs, ino, fi, path, &c, &a);

	if (err == 0 && (to_set & FATTR_KILL_SUIDGID) && (to_set & FUSE_SET_ATTR_SIZE))
		err = setattr_kill_priv(req, fs, ino, fi, path, &a);
	if (err < 0) {
		reply_err(req, -err);
		return;
	}
	if (!attr_for_kernel(fs, ino, path, &a)) {
		reply_err(req, ESTALE);
		return;
	}
	g_mutex_lock(&fs->lock);
	if ((n = node_by_id(fs, ino)))
		post_attr_drop_locked(n);
	g_mutex_unlock(&fs->lock);
	reply_attr(req, fs, ino, &a);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct qtfs_fs *fs = FS(req);
	g_autofree char *path = NULL, *target = NULL;
	g_autoptr(qt_msg) rep = NULL;
	struct qt_rd r;
	uint64_t key;
	int err;

	if (is_synth(fs, ino, &key)) {
		target = synth_target(req, fs, key);
		fuse_reply_readlink(req, target);
		return;
	}
	path = path_of(fs, ino, NULL);
	if (!path) {
		reply_err(req, ESTALE);
		return;
	}
	err = call(fs, req_path(QTFS_READLINK, path), &rep);
	if (err == 0) {
		qt_rd_init_msg(&r, rep);
		if (qt_rd_strdup(&r, QTFS_READLINK_MAX, &target) < 0 || qt_rd_end(&r) < 0)
			err = -EIO;
	}
	if (err < 0)
		reply_err(req, -err);
	else
		fuse_reply_readlink(req, target);
}

static void put_caller(struct qt_msg *m, fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	qt_msg_put_u32(m, ctx->uid);
	qt_msg_put_u32(m, ctx->gid);
	/* (libfuse: the umask of a MKNOD, MKDIR or CREATE, else 0) */
	if (FS(req)->o.umask)
		qt_msg_put_u32(m, ctx->umask & 0777);
}

/* Shared by mknod, mkdir, symlink, link: send change @m for the new name and answer with its entry. */
static void make_node(fuse_req_t req, fuse_ino_t parent, const char *name, const char *path,
		      struct qt_msg *m, struct change *ch)
{
	struct qtfs_fs *fs = FS(req);
	g_autoptr(qt_msg) rep = NULL;
	unsigned epoch = trust_epoch(fs);
	bool is_mkdir = qt_msg_type(m) == QTFS_MKDIR; /* @m goes with the call */
	struct list_mark lmark;
	struct dir_attr d;
	struct qtfs_attr a;
	int err;

	listed_note(fs, parent, name);
	list_mark_get(fs, &lmark);
	ch->twice_ok = true; /* a second making fails with EEXIST */
	err = call_change(fs, m, ch, &rep);

	if (err == 0 && rep) {
		err = rd_entry_reply(rep, &a, &d);
	} else if (err == 0) {
		/* Found made after the connection went: what the host shows. */
		a = ch->made;
		d.have = false;
	}
	if (err < 0) {
		reply_err(req, -err);
		return;
	}
	post_attr_keep(fs, parent, &d);
	/* A new FIFO to be relayed: not cached, so the next lookup finds the relay. */
	if (S_ISFIFO(a.mode) && relay_path(fs, path))
		a.flags |= QTFS_AF_PSEUDO;
	reply_entry_of(req, fs, parent, name, &a, epoch, is_mkdir ? &lmark : NULL);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	g_autofree char *path = path_of(FS(req), parent, name);
	struct change ch = {.op = QTFS_MKNOD, .path = path, .type = mode & S_IFMT, .rdev = rdev};
	struct qt_msg *m;

	if (!path) {
		reply_err(req, ESTALE);
		return;
	}
	m = req_path(QTFS_MKNOD, path);
	qt_msg_put_u32(m, mode);
	qt_msg_put_u64(m, rdev);
	put_caller(m, req);
	make_node(req, parent, name, path, m, &ch);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	g_autofree char *path = path_of(FS(req), parent, name);
	struct change ch = {.op = QTFS_MKDIR, .path = path, .type = S_IFDIR};
	struct qt_msg *m;

	if (!path) {
		reply_err(req, ESTALE);
		return;
	}
	m = req_path(QTFS_MKDIR, path);
	qt_msg_put_u32(m, mode);
	put_caller(m, req);
	make_node(req, parent, name, path, m, &ch);
}

static void op_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name)
{
	g_autofree char *path = path_of(FS(req), parent, name);
	struct change ch = {.op = QTFS_SYMLINK, .path = path, .type = S_IFLNK, .target_len = strlen(target)};
	struct qt_msg *m;

	if (!path) {
		reply_err(req, ESTALE);
		return;
	}
	m = req_path(QTFS_SYMLINK, path);
	qt_msg_put_str(m, target);
	put_caller(m, req);
	make_node(req, parent, name, path, m, &ch);
}

/* The name @name in @parent is gone: forget it (the node lives on while looked up). */
static void forget_name(struct qtfs_fs *fs, fuse_ino_t parent, const char *name)
{
	struct node *p, *n;

	g_mutex_lock(&fs->lock);
	p = node_by_id(fs, parent);
	if (p) {
		n = node_child_locked(fs, p, name);
		if (n) {
			node_unname(fs, n);
			if (n->nlookup == 0 && n->children == 0)
				node_free(fs, n);
		}
	}
	g_mutex_unlock(&fs->lock);
}

static void remove_lost(void *arg, bool run);

static void remove_done(void *arg, int err, struct qt_msg *rep)
{
	struct pending *p = arg;
	struct dir_attr d;

	if (err == -QTFS_ELOST) {
		/*
		 * Made or not?  The look waits for the host: not on the loop
		 * thread.  Its deadline runs from now, not from when the pool
		 * gets to it (many lost at once wait their turn).
		 */
		p->until = g_get_monotonic_time() + (gint64)qtfs_client_timeout_ms(FS(p->req)->cl) * 1000;
		slow_push(FS(p->req), remove_lost, p);
		return;
	}
	if (err == 0) {
		/* The name is gone on the host even if the rest is malformed. */
		forget_name(FS(p->req), p->ino, p->name);
		if (rep && (err = rd_dirs_reply(rep, &d, 1)) == 0)
			post_attr_keep(FS(p->req), p->ino, &d);
	}
	qt_msg_free(rep);
	reply_err(p->req, -err);
	pending_free(p);
}

/* The host's identity of the file the node table has at @name in @parent. */
static struct host_id name_host_id(struct qtfs_fs *fs, fuse_ino_t parent, const char *name)
{
	struct host_id id = {.known = false};
	struct node *p;

	g_mutex_lock(&fs->lock);
	p = node_by_id(fs, parent);
	if (p)
		id = node_host_id(node_child_locked(fs, p, name));
	g_mutex_unlock(&fs->lock);
	return id;
}

/* An unlink or rmdir whose connection went before its answer, on the slow pool: settle it. */
static void remove_lost(void *arg, bool run)
{
	struct pending *p = arg;
	struct qtfs_fs *fs = FS(p->req);
	struct change ch = {.op = p->op, .path = p->path, .a = name_host_id(fs, p->ino, p->name),
			    .instance = p->instance};
	struct qt_msg *rep = NULL;
	int err = -EIO;

	if (run)
		err = change_settle(fs, &ch, req_path(p->op, p->path), -QTFS_ELOST, p->until, &rep);
	remove_done(p, err, rep);
}

static void remove_name(fuse_req_t req, fuse_ino_t parent, const char *name, uint16_t op)
{
	struct qtfs_fs *fs = FS(req);
	char *path = path_of(fs, parent, name);
	struct pending *p;

	if (!path) {
		reply_err(req, ESTALE);
		return;
	}
	p = pending_new(req, parent, path, name);
	p->op = op;
	qtfs_client_call_async_change(fs->cl, req_path(op, path), &p->instance, remove_done, p);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, QTFS_UNLINK);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, QTFS_RMDIR);
}

/*
 * A RENAME's nodes: both directories (@p, @np; false when either is not
 * known) and what the old name and the new one hold (@a, @b; NULL for
 * none).  fs->lock held.
 */
static bool rename_nodes_locked(struct qtfs_fs *fs, fuse_ino_t parent, const char *name,
				fuse_ino_t newparent, const char *newname, struct node **p,
				struct node **np, struct node **a, struct node **b)
{
	*p = node_by_id(fs, parent);
	*np = node_by_id(fs, newparent);
	if (!*p || !*np)
		return false;
	*a = node_child_locked(fs, *p, name);
	*b = node_child_locked(fs, *np, newname);
	return true;
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct qtfs_fs *fs = FS(req);
	g_autofree char *from = path_of(fs, parent, name);
	g_autofree char *to = path_of(fs, newparent, newname);
	g_autoptr(qt_msg) rep = NULL;
	struct change ch = {.op = QTFS_RENAME, .path = from, .to = to,
			    .exchange = flags & RENAME_EXCHANGE};
	uint64_t noted[2] = {0, 0};
	struct node *p, *np, *a, *b;
	struct qt_msg *m;
	bool bad = false;
	int err;

	if (!from || !to) {
		reply_err(req, ESTALE);
		return;
	}
	m = req_path(QTFS_RENAME, from);
	qt_msg_put_str(m, to);
	qt_msg_put_u32(m, flags);
	listed_note(fs, newparent, newname);
	g_mutex_lock(&fs->lock);
	if (rename_nodes_locked(fs, parent, name, newparent, newname, &p, &np, &a, &b)) {
		/* What both names hold, should the answer be lost (call_change()). */
		ch.a = node_host_id(a);
		ch.b = node_host_id(b);
		/* The host's report of a directory's move must not move it again (struct own_move). */
		if (fs->se) {
			noted[0] = own_move_add_locked(fs, a, p, name, np, newname);
			if (flags & RENAME_EXCHANGE)
				noted[1] = own_move_add_locked(fs, b, np, newname, p, name);
		}
	}
	g_mutex_unlock(&fs->lock);
	err = call_change(fs, m, &ch, &rep);
	if (err < 0 && (noted[0] || noted[1])) {
		g_mutex_lock(&fs->lock);
		own_move_drop_locked(fs, noted[0]);
		own_move_drop_locked(fs, noted[1]);
		g_mutex_unlock(&fs->lock);
	}
	if (err == 0) {
		struct dir_attr d[2];

		/* Renamed all the same if the rest is malformed: the names below must follow. */
		bad = rep && rd_dirs_reply(rep, d, 2) < 0;
		if (rep && !bad) {
			post_attr_keep(fs, parent, &d[0]);
			post_attr_keep(fs, newparent, &d[1]);
		}

		g_mutex_lock(&fs->lock);
		if (rename_nodes_locked(fs, parent, name, newparent, newname, &p, &np, &a, &b)) {
			if (flags & RENAME_EXCHANGE) {
				if (a)
					node_unname(fs, a);
				if (b)
					node_unname(fs, b);
				if (a)
					node_name(fs, a, np, newname);
				if (b)
					node_name(fs, b, p, name);
			} else if (a) {
				node_name(fs, a, np, newname);
			} else if (b) {
				node_unname(fs, b);
			}
			/* Unnamed nodes nobody looks up any more can go. */
			if (a && !a->parent && a->nlookup == 0 && a->children == 0)
				node_free(fs, a);
			if (b && b != a && !b->parent && b->nlookup == 0 && b->children == 0)
				node_free(fs, b);
		}
		g_mutex_unlock(&fs->lock);
	}
	reply_err(req, bad ? EIO : -err);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct qtfs_fs *fs = FS(req);
	g_autofree char *from = path_of(fs, ino, NULL);
	g_autofree char *to = path_of(fs, newparent, newname);
	struct change ch = {.op = QTFS_LINK, .path = from, .to = to, .a = host_id_of(fs, ino)};
	struct qt_msg *m;

	/* Its reply has the file's attributes. */
	wb_wait(fs, ino);
	if (!from || !to) {
		reply_err(req, ESTALE);
		return;
	}
	m = req_path(QTFS_LINK, from);
	qt_msg_put_str(m, to);
	make_node(req, newparent, newname, to, m, &ch);
}

/*
 * A DPU process blocked in the open, read or write of a relayed FIFO that
 * gets a signal: the kernel sends INTERRUPT for its request, and the host
 * ends the blocked system call with EINTR ("Interrupts" in server.c), so
 * the process runs its handler as it would on a local FIFO.
 * intr_begin() / intr_end() bracket the call; intr_end() comes before the
 * reply (the request is gone after it), and after it no interrupt runs.
 */
static void on_interrupt(fuse_req_t req, void *data)
{
	qt_call_interrupt(data);
}

static struct qt_call_ctl *intr_begin(fuse_req_t req)
{
	struct qt_call_ctl *ctl = qt_call_ctl_new(QTFS_INTERRUPT);

	qtfs_client_set_interrupt(ctl);
	fuse_req_interrupt_func(req, on_interrupt, ctl);
	return ctl;
}

static void intr_end(fuse_req_t req, struct qt_call_ctl *ctl)
{
	if (!ctl)
		return;
	fuse_req_interrupt_func(req, NULL, NULL);
	qtfs_client_set_interrupt(NULL);
	qt_call_ctl_unref(ctl);
}

/*
 * Pages kept across opens.  The kernel drops a file's cached pages at each
 * open unless the reply says keep_cache: close-to-open consistency, as NFS
 * gives, since the host may have changed the file meanwhile.  But a file
 * read again unchanged (a binary run again, a configuration file, a
 * container image's layer) then crosses the link again.  So each open
 * notes the host's mtime, ctime and size of the file (every open reply
 * carries them), and the next open keeps the pages when they are still the
 * same, and when the host said the file had not changed for a while then
 * (QTFS_AF_SETTLED): a change within the same tick of a coarse clock as
 * the one before can leave mtime, ctime and size alone, but not a change
 * after the clock has moved on.  The pages in the cache were all read
 * after that earlier open, from the data those attributes describe; a
 * change made from here updates them and is a change of ctime on the host
 * too (the next open drops them, needlessly but safely).  Pseudo files,
 * relayed FIFOs and files on network file systems (never SETTLED) never
 * keep pages; -o auto_cache=0 keeps none.
 */
static bool ver_same(const struct data_ver *v, const struct qtfs_attr *a)
{
	return v->size == a->size && v->mtime_sec == a->mtime_sec && v->mtime_nsec == a->mtime_nsec &&
	       v->ctime_sec == a->ctime_sec && v->ctime_nsec == a->ctime_nsec;
}

static struct data_ver data_ver_of(const struct qtfs_attr *a)
{
	return (struct data_ver){
		.size = a->size,
		.mtime_sec = a->mtime_sec,
		.ctime_sec = a->ctime_sec,
		.mtime_nsec = a->mtime_nsec,
		.ctime_nsec = a->ctime_nsec,
		.settled = (a->flags & QTFS_AF_SETTLED) != 0,
		.opened = true,
	};
}

/*
 * May this open of @ino, of host attributes @a, keep its cached pages?  Notes
 * @a.  *@changed (if not NULL): the host's size, mtime or ctime are not those
 * of the last open, or there was none (false for a file whose pages are
 * never kept: not a regular file, a pseudo file or a relayed FIFO).
 */
static bool open_keeps_cache(struct qtfs_fs *fs, fuse_ino_t ino, const struct qtfs_attr *a,
			     bool *changed)
{
	struct node *n;
	bool keep = false, same = false;

	if (changed)
		*changed = false;
	if (!S_ISREG(a->mode) || (a->flags & (QTFS_AF_PSEUDO | QTFS_AF_RELAY)))
		return false;
	g_mutex_lock(&fs->lock);
	n = node_by_id(fs, ino);
	if (n && n->dev == a->dev && n->ino == a->ino && n->gen == a->gen) {
		same = n->ver.opened && ver_same(&n->ver, a);
		keep = fs->o.auto_cache && n->ver.settled && same;
		n->ver = data_ver_of(a);
	}
	g_mutex_unlock(&fs->lock);
	if (changed)
		*changed = !same;
	return keep;
}

/*
 * The kernel's attributes of @ino go, so that its next stat (or read past
 * the end it knows) asks the host.  Only the attributes: no page lock is
 * taken, so the notification is safe while the kernel waits for the
 * OPEN or WRITE being answered.
 *
 * An open uses it for close-to-open of the attributes too.  The kernel
 * bounds every read of its page cache by the size it holds, and an open
 * does not refresh that: it keeps the attributes a lookup, a stat or a
 * listing brought for attr_timeout.  A file the host rewrote after a stat
 * on the DPU and before an open there was read up to its old size (a
 * longer file cut short, its new bytes up to the old length) although the
 * open dropped the pages.  So when the open's reply shows the host's file
 * changed since the last open (or this is the first), the kernel's
 * attributes are dropped before it has the open file.  A write that drops
 * set-id bits uses it too (write_kills_setid()).
 */
static void drop_kernel_attr(struct qtfs_fs *fs, fuse_ino_t ino)
{
	if (fs->session)
		fuse_lowlevel_notify_inval_inode(fs->session, ino, -1, 0);
}

static void set_open_flags(struct fuse_file_info *fi, bool pseudo, bool keep)
{
	fi->keep_cache = keep;
	/* Pseudo files' sizes mean nothing: every read goes to the host. */
	fi->direct_io = pseudo;
}

/* The kernel's new open file: the handle @slot/@gen/@sh of @ino, answered to @req. */
static void finish_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, bool relay,
			unsigned slot, uint64_t gen, uint64_t sh, const struct qtfs_attr *a,
			struct prefetched *pre)
{
	struct qtfs_fs *fs = FS(req);
	struct fh *h = fh_new(ino, fi->flags, false, slot, gen, sh, relay || (a->flags & QTFS_AF_PSEUDO));

	/* Only direct-I/O files may answer reads from it (no page cache). */
	if (h->pseudo && !relay)
		h->pre = *pre;
	else
		g_free(pre->data);
	/* A relayed FIFO, or a pseudo file whose reads wait for events (QTFS_AF_STREAM). */
	h->stream = relay || (a->flags & QTFS_AF_STREAM);
	h->relay = relay;
	fi->fh = (uintptr_t)h;
	if (!h->pseudo) {
		bool changed;

		set_open_flags(fi, false, open_keeps_cache(fs, ino, a, &changed));
		if (changed)
			drop_kernel_attr(fs, ino);
	} else {
		set_open_flags(fi, true, false);
	}
	if (h->stream)
		fi->nonseekable = 1;
	fh_attach(fs, h);
	if (fuse_reply_open(req, fi) != 0)
		fh_close(fs, h);
}

/*
 * Must @req's open with @flags of a file now of attributes @a drop its
 * set-id bits (truncation_drops_setid()), and to what mode (*@mode)?  An
 * OPEN does not say who opens (a CREATE does, and the server drops them
 * there), so the client does it after an O_TRUNC open by a caller other
 * than root.
 */
static bool open_kills_priv(fuse_req_t req, int flags, const struct qtfs_attr *a, uint32_t *mode)
{
	return (flags & O_TRUNC) && fuse_req_ctx(req)->uid != 0 && truncation_drops_setid(req, a, mode);
}

/* Drop them (synchronously) through the new handle; *@a: the attributes after. */
static void open_kill_priv(struct qtfs_fs *fs, const char *path, unsigned slot, uint64_t gen,
			   uint64_t sh, uint32_t mode, struct qtfs_attr *a)
{
	struct stat st = {.st_mode = mode};
	struct setattr_ctx c = {.path = path, .st = &st, .valid = FUSE_SET_ATTR_MODE};
	g_autoptr(qt_msg) rep = NULL;
	struct qtfs_attr after;
	int err = qtfs_client_call_on(fs->cl, slot, gen, build_setattr(sh, &c), 0, &rep);

	if (err == 0)
		err = rd_attr_reply(rep, &after);
	if (err == 0)
		*a = after;
	else
		qt_notice("cannot drop the set-id bits of \"%s\" truncated by an unprivileged open: %s", path,
			  g_strerror(-err));
}

static void open_sync(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, const char *path)
{
	struct qtfs_fs *fs = FS(req);
	bool relay = node_is_relay(fs, ino);
	/* Prefetched bytes land here first: the fh needs the reply's attributes. */
	struct prefetched pre = {0};
	struct qt_call_ctl *ctl;
	struct qtfs_attr a;
	unsigned slot;
	uint64_t gen, sh;
	uint32_t mode;
	int err;

	if (relay && (err = relay_open_wait(fs, req, ino)) < 0) {
		reply_err(req, -err);
		return;
	}
	ctl = relay ? intr_begin(req) : NULL;
	err = open_remote(fs, path, fi->flags, false, relay, &slot, &gen, &sh, &a,
			  relay || (fi->flags & O_ACCMODE) != O_RDONLY ? NULL : &pre);
	intr_end(req, ctl);
	err = opened_node(fs, ino, err, slot, gen, sh, &a);
	if (err < 0) {
		g_free(pre.data);
		reply_err(req, -err);
		return;
	}
	if (!relay && open_kills_priv(req, fi->flags, &a, &mode))
		open_kill_priv(fs, path, slot, gen, sh, mode, &a);
	finish_open(req, ino, fi, relay, slot, gen, sh, &a, &pre);
}

/*
 * An OPEN answered from the loop thread (see struct pending).  libfuse's
 * file info lives on the worker's stack, so the answer uses a copy.  A
 * connection replaced before the reply: the open is redone synchronously
 * (open_remote() picks another), on the slow pool.
 */
struct open_pending {
	fuse_req_t req;
	fuse_ino_t ino;
	struct fuse_file_info fi;
	char *path;
	unsigned slot;
	uint64_t gen;
	bool dir; /* an OPENDIR */
};

static void opendir_sync(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, const char *path);
static void finish_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, unsigned slot,
			   uint64_t gen, uint64_t sh, const struct qtfs_attr *a);

static void open_pending_free(struct open_pending *p)
{
	g_free(p->path);
	g_free(p);
}

/* An open that must drop set-id bits (open_kills_priv()), on the slow pool: the loop cannot wait. */
struct open_kill {
	struct open_pending *p;
	uint64_t sh;
	uint32_t mode;
	struct qtfs_attr a;
	struct prefetched pre;
};

static void open_kill_run(void *arg, bool run)
{
	struct open_kill *k = arg;
	struct open_pending *p = k->p;

	if (run)
		open_kill_priv(FS(p->req), p->path, p->slot, p->gen, k->sh, k->mode, &k->a);
	/* The open was made either way: the kernel gets its handle. */
	finish_open(p->req, p->ino, &p->fi, false, p->slot, p->gen, k->sh, &k->a, &k->pre);
	open_pending_free(p);
	g_free(k);
}

static void open_redo(void *arg, bool run)
{
	struct open_pending *p = arg;

	if (run && p->dir)
		opendir_sync(p->req, p->ino, &p->fi, p->path);
	else if (run)
		open_sync(p->req, p->ino, &p->fi, p->path);
	else
		reply_err(p->req, EIO);
	open_pending_free(p);
}

static void open_done(void *arg, int err, struct qt_msg *rep)
{
	struct open_pending *p = arg;
	struct prefetched pre = {0};
	bool want = (p->fi.flags & O_ACCMODE) == O_RDONLY;
	struct qtfs_attr a;
	uint32_t mode;
	uint64_t sh;

	if (err == -ESTALE) {
		qt_msg_free(rep);
		slow_push(FS(p->req), open_redo, p);
		return;
	}
	if (err == 0)
		err = rd_handle_reply(rep, &sh, &a, !p->dir, want && !p->dir ? &pre : NULL, NULL);
	qt_msg_free(rep);
	err = opened_node(FS(p->req), p->ino, err, p->slot, p->gen, sh, &a);
	if (err < 0) {
		g_free(pre.data);
		reply_err(p->req, -err);
	} else if (p->dir) {
		finish_opendir(p->req, p->ino, &p->fi, p->slot, p->gen, sh, &a);
	} else if (open_kills_priv(p->req, p->fi.flags, &a, &mode)) {
		struct open_kill *k = g_new(struct open_kill, 1);

		*k = (struct open_kill){.p = p, .sh = sh, .mode = mode, .a = a, .pre = pre};
		slow_push(FS(p->req), open_kill_run, k);
		return;
	} else {
		finish_open(p->req, p->ino, &p->fi, false, p->slot, p->gen, sh, &a, &pre);
	}
	open_pending_free(p);
}

/* OPEN (@dir false) or OPENDIR of @ino, at @path, from the loop thread: see struct open_pending. */
static void open_async(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, char *path, bool dir)
{
	struct qtfs_fs *fs = FS(req);
	struct open_pending *p;
	struct qt_msg *m;
	unsigned slot = 0;
	uint64_t gen = 0;
	int err;

	err = qtfs_client_pick(fs->cl, &slot, &gen);
	if (err < 0 && err != -EAGAIN) {
		g_free(path);
		reply_err(req, -err);
		return;
	}
	p = g_new0(struct open_pending, 1);
	*p = (struct open_pending){.req = req, .ino = ino, .fi = *fi, .path = path, .slot = slot,
				   .gen = gen, .dir = dir};
	/* On the loop thread with no connection ready: wait for one elsewhere. */
	if (err == -EAGAIN) {
		slow_push(fs, open_redo, p);
		return;
	}
	m = dir ? req_path(QTFS_OPENDIR, p->path) : req_open(p->path, fi->flags, (fi->flags & O_ACCMODE) == O_RDONLY);
	qtfs_client_call_cb(fs->cl, slot, gen, m, qtfs_client_timeout_ms(fs->cl), open_done, p);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (!wb_hold(FS(req), FUSE_OPEN, req, ino, fi, 0, 0, 0, NULL))
		do_open(req, ino, fi);
}

static void do_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct qtfs_fs *fs = FS(req);
	g_autofree char *path = path_of(fs, ino, NULL);

	if (!path) {
		reply_err(req, ESTALE);
		return;
	}
	/* A relayed FIFO's open waits without a deadline and can be interrupted. */
	if (node_is_relay(fs, ino)) {
		open_sync(req, ino, fi, path);
		return;
	}
	open_async(req, ino, fi, g_steal_pointer(&path), false);
}

/*
 * A CREATE answered from the loop thread (see struct open_pending).  Not
 * repeated on another connection: after a lost connection nobody knows
 * whether the file was made, so that is EIO.
 */
struct create_pending {
	fuse_req_t req;
	unsigned epoch; /* trust_epoch() before the call */
	fuse_ino_t parent;
	struct fuse_file_info fi;
	unsigned slot;
	uint64_t gen;
	struct qt_msg *m; /* until sent */
	/* To send it again when its connection goes before the answer (create_lost()): */
	uint32_t flags;	  /* the open flags sent: fi.flags, less O_EXCL once found made */
	uint32_t mode;
	unsigned sends;
	gint64 until;	  /* the deadline of sending it later or again (create_later(), create_lost()) */
	int err;	  /* why create_lost() runs: -ESTALE, or -EEXIST for O_EXCL sent again */
	uint64_t instance; /* the server's it was last sent to (qtfs_client_slot_instance()) */
	bool probe;	  /* O_EXCL added to a create without it (op_create()) */
	char name[];
};

static struct qt_msg *build_create(fuse_req_t req, const char *path, uint32_t flags, uint32_t mode)
{
	struct qt_msg *m = req_path(QTFS_CREATE, path);

	qt_msg_put_u32(m, flags);
	qt_msg_put_u32(m, mode);
	put_caller(m, req);
	return m;
}

static void create_lost(void *arg, bool run);

/*
 * The timeout of a CREATE sent later or again: what is left of its
 * deadline @until (ms, at least 1), not a whole timeout of its own, which
 * would end it as late as the wait for a connection plus that.
 */
static uint64_t create_ms_left(gint64 until)
{
	gint64 left = (until - g_get_monotonic_time()) / 1000;

	return (uint64_t)MAX(left, 1);
}

static void create_done(void *arg, int err, struct qt_msg *rep)
{
	struct create_pending *cp = arg;
	struct qtfs_fs *fs = FS(cp->req);
	struct fuse_entry_param e;
	struct dir_attr d;
	struct qtfs_attr a;
	struct node *n, *p;
	struct fh *h;
	uint64_t sh;

	/*
	 * Sent with O_EXCL added beside writes on their way, and the name was
	 * taken after all (or the answer lost, and with it whether the file
	 * was made: if so, it is new, and the create as asked opens it): as
	 * asked, once the writes before it are done.
	 */
	if (cp->probe && (err == -EEXIST || err == -ESTALE)) {
		qt_msg_free(rep);
		qt_debug("CREATE \"%s\": the name is taken, sent again once the writes before it are "
			 "done", cp->name);
		if (!wb_hold(fs, FUSE_CREATE, cp->req, cp->parent, &cp->fi, 0, 0, (mode_t)cp->mode,
			     cp->name))
			do_create(cp->req, cp->parent, cp->name, (mode_t)cp->mode, &cp->fi, false);
		g_free(cp);
		return;
	}
	/*
	 * Its connection went before the answer (or before it was sent):
	 * send it again (see "changes whose answer was lost"), as is the
	 * answer EEXIST to an O_EXCL create sent again, which the first one
	 * may have made after all.  Without O_EXCL, a create found made only
	 * opens the file.  Not on the loop thread: that waits for the host.
	 */
	if ((err == -ESTALE || (err == -EEXIST && cp->sends > 1 && (cp->flags & O_EXCL))) &&
	    cp->sends < CHANGE_SENDS) {
		cp->err = err;
		/* From the first loss (as for remove_done()). */
		if (!cp->until)
			cp->until = g_get_monotonic_time() + (gint64)qtfs_client_timeout_ms(fs->cl) * 1000;
		slow_push(fs, create_lost, cp);
		return;
	}
	if (err == -ESTALE)
		err = -EIO;
	else if (err == 0)
		err = rd_handle_reply(rep, &sh, &a, false, NULL, &d);
	qt_msg_free(rep);
	if (err < 0) {
		reply_err(cp->req, -err);
		g_free(cp);
		return;
	}
	post_attr_keep(fs, cp->parent, &d);
	g_mutex_lock(&fs->lock);
	p = node_by_id(fs, cp->parent);
	n = node_learn_locked(fs, p, cp->name, &a);
	fill_entry(fs, n, &a, cp->epoch, &e);
	g_mutex_unlock(&fs->lock);
	h = fh_new(n->id, cp->fi.flags, false, cp->slot, cp->gen, sh, a.flags & QTFS_AF_PSEUDO);
	cp->fi.fh = (uintptr_t)h;
	/* A new file: nothing cached, but its attributes are noted. */
	open_keeps_cache(fs, n->id, &a, NULL);
	set_open_flags(&cp->fi, h->pseudo, false);
	fh_attach(fs, h);
	if (fuse_reply_create(cp->req, &e, &cp->fi) != 0) {
		fh_close(fs, h);
		node_unlearn(fs, n);
	}
	g_free(cp);
}

/*
 * A CREATE whose connection went before its answer (cp->err -ESTALE), or an
 * O_EXCL one sent again that found its name taken (-EEXIST), on the slow
 * pool.  A look at the host tells made, not made or neither.  Made: a
 * regular file at the name (with O_EXCL or O_TRUNC, an empty one), which
 * the kernel had found none at before it sent the CREATE: opened, the
 * CREATE sent again without O_EXCL and O_TRUNC.  Not made: nothing there
 * (or, with O_TRUNC, a regular file with data), sent again as it was;
 * but one with O_TRUNC (and without O_EXCL) only to a
 * restarted server ("changes whose answer was lost": the first one, still
 * carried out by the server that had it, would empty what was written
 * since).  Neither: EIO (-EEXIST stands for an O_EXCL one sent again).
 */
static void create_lost(void *arg, bool run)
{
	struct create_pending *cp = arg;
	struct qtfs_fs *fs = FS(cp->req);
	g_autofree char *path = run ? path_of(fs, cp->parent, cp->name) : NULL;
	const char *why = "the host does not show whether it was made";
	struct qtfs_attr a;
	int err = -EIO;

	if (path) {
		bool excl = cp->flags & O_EXCL, trunc = cp->flags & O_TRUNC;
		bool other, not_made;

		err = look(fs, path, cp->until, &a);
		/*
		 * With O_TRUNC, the file this create leaves is empty: one with
		 * data was put there by another (on the host, after the
		 * kernel's lookup), and opening it without O_TRUNC would keep
		 * that data under what the caller writes.  Not made.
		 */
		other = err == 0 && S_ISREG(a.mode) && a.size > 0 && trunc && !excl;
		not_made = err == -ENOENT || other;
		if (err == 0 && S_ISREG(a.mode) && !other && (!excl || a.size == 0)) {
			qt_info("CREATE \"%s\": the connection went before the answer; found made on "
				"the host, opened", path);
			/* Ours: opened (a first one still to come opens it, or fails with EEXIST). */
			cp->flags &= ~(uint32_t)(O_EXCL | O_TRUNC);
		} else if (err == 0 && !other) {
			err = excl && cp->err == -EEXIST ? -EEXIST : -EIO;
		} else if (not_made && !excl && trunc && !restarted(fs, cp->instance)) {
			err = -EIO;
			why = "the server that had it may still make it, emptying what is written since";
		} else if (not_made) {
			qt_info("CREATE \"%s\": the connection went before the answer; not made on "
				"the host, sent again", path);
			err = 0;
		}
	}
	if (err == 0 && g_get_monotonic_time() >= cp->until)
		err = -ETIMEDOUT;
	if (err == 0)
		err = qtfs_client_pick_other(fs->cl, cp->until, &cp->slot, &cp->gen);
	if (err < 0) {
		if (err == -EIO && run)
			qt_notice("CREATE \"%s\": the connection went before the answer, and %s: EIO",
				  path ? path : cp->name, why);
		reply_err(cp->req, -err);
		g_free(cp);
		return;
	}
	cp->sends++;
	cp->instance = qtfs_client_slot_instance(fs->cl, cp->slot, cp->gen);
	qtfs_client_call_cb(fs->cl, cp->slot, cp->gen, build_create(cp->req, path, cp->flags, cp->mode),
			    create_ms_left(cp->until), create_done, cp);
}

/* A CREATE that found no connection ready, on the slow pool: wait for one, then send. */
static void create_later(void *arg, bool run)
{
	struct create_pending *cp = arg;
	struct qtfs_fs *fs = FS(cp->req);
	struct qt_msg *m = g_steal_pointer(&cp->m);
	int err;

	cp->slot = G_MAXUINT; /* none to skip */
	err = run ? qtfs_client_pick_other(fs->cl, cp->until, &cp->slot, &cp->gen) : -EIO;

	if (err < 0) {
		qt_msg_free(m);
		reply_err(cp->req, -err);
		g_free(cp);
		return;
	}
	/* The server may have been restarted while it waited: this is the one that has it. */
	cp->instance = qtfs_client_slot_instance(fs->cl, cp->slot, cp->gen);
	qtfs_client_call_cb(fs->cl, cp->slot, cp->gen, m, create_ms_left(cp->until), create_done, cp);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	/*
	 * An O_EXCL create makes a new file, which has no writes on their way:
	 * it need not wait for any.  Another may open an existing file that
	 * has (a name the kernel did not know) and truncate it (O_TRUNC):
	 * with writes on their way it goes at once with O_EXCL added, and
	 * only if that finds the name taken, as asked once the writes before
	 * it are done (create_done()).
	 */
	do_create(req, parent, name, mode, fi,
		  !(fi->flags & O_EXCL) && g_atomic_int_get(&FS(req)->wb_count) > 0);
}

/* Send a CREATE; @probe: with O_EXCL added (op_create()). */
static void do_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi, bool probe)
{
	struct qtfs_fs *fs = FS(req);
	g_autofree char *path = path_of(fs, parent, name);
	struct create_pending *cp;
	struct qt_msg *m;
	size_t len = strlen(name) + 1;
	unsigned slot = 0;
	uint64_t gen = 0;
	uint32_t flags;
	int err;

	if (!path) {
		reply_err(req, ESTALE);
		return;
	}
	err = qtfs_client_pick(fs->cl, &slot, &gen);
	if (err < 0 && err != -EAGAIN) {
		reply_err(req, -err);
		return;
	}
	flags = (uint32_t)fi->flags | (probe ? O_EXCL : 0);
	m = build_create(req, path, flags, mode);
	listed_note(fs, parent, name);
	cp = g_malloc(sizeof(*cp) + len);
	*cp = (struct create_pending){.req = req, .epoch = trust_epoch(fs), .parent = parent,
				      .fi = *fi, .slot = slot, .gen = gen, .flags = flags,
				      .mode = mode,
				      .sends = 1, .probe = probe};
	memcpy(cp->name, name, len);
	/* On the loop thread with no connection ready: wait for one elsewhere. */
	if (err == -EAGAIN) {
		cp->m = m;
		/* From now, not from when the pool gets to it. */
		cp->until = g_get_monotonic_time() + (gint64)qtfs_client_timeout_ms(fs->cl) * 1000;
		slow_push(fs, create_later, cp);
		return;
	}
	cp->instance = qtfs_client_slot_instance(fs->cl, slot, gen);
	qtfs_client_call_cb(fs->cl, slot, gen, m, qtfs_client_timeout_ms(fs->cl), create_done, cp);
}

static struct qt_msg *build_read(uint64_t sh, void *arg)
{
	struct io_ctx *c = arg;
	struct qt_msg *m = qt_msg_new(QTFS_READ, 0, 0);

	qt_msg_put_u64(m, sh);
	qt_msg_put_u64(m, c->off);
	qt_msg_put_u32(m, (uint32_t)c->size);
	/* A large answer may come into a pipe and go on to the kernel by splice (reply_read()). */
	m->reply_tail_ok = c->reply_tail && c->size >= QT_CONN_TAIL_MIN;
	return m;
}

/*
 * Answer a READ from the bytes the host sent with the OPEN, when they hold
 * the whole answer (the range lies inside them, or they are the whole
 * file) and the read continues one sequential pass from offset 0.  A read
 * of that pass that goes past them takes the rest of them into *@rest
 * (*@rest_len bytes; the caller reads on from the host, whose descriptor
 * stands at their end: see put_prefetch() in server.c), so that the pass
 * stays one pass on the host, as a local reader's would: a seq_file read
 * again from an offset inside it starts over, with the content as it is
 * then (a line cut in two, or nothing at all once its process is gone).
 * Any other read drops them, so that a reader that goes back (lseek to 0
 * and read again, as monitors of cgroup and PSI files do) gets the host's
 * current content and never a mix of two generations; so does the read
 * that finds the end.
 */
static bool read_prefetched(fuse_req_t req, struct fh *h, size_t size, off_t off, uint8_t **rest,
			    size_t *rest_len)
{
	g_autofree uint8_t *done = NULL;
	bool answered = false;

	g_mutex_lock(&h->lock);
	if (h->pre.data) {
		size_t len = h->pre.len, o = (size_t)off;

		if (off >= 0 && o == h->pre_pos && (h->pre.all || size <= len - o)) {
			size_t n = MIN(size, len - o);

			fuse_reply_buf(req, (const char *)h->pre.data + o, n);
			answered = true;
			h->pre_pos += n;
			if (n == 0)
				done = g_steal_pointer(&h->pre.data);
		} else {
			if (off >= 0 && o == h->pre_pos && o < len) {
				*rest = g_memdup2(h->pre.data + o, len - o);
				*rest_len = len - o;
			}
			done = g_steal_pointer(&h->pre.data);
		}
	}
	g_mutex_unlock(&h->lock);
	return answered;
}

/*
 * Answer a READ of @size bytes from its reply (freed here) or error, after
 * the @pre_len bytes @pre (the rest of the prefetched start of the file,
 * see read_prefetched(); NULL when none): with them, an error or the end
 * of the file is a short read, and the error comes again with the next
 * one, as a local seq_file answers.  More bytes than asked is no answer
 * a host gives, and the kernel would refuse the reply (and fail the read
 * with EIO): EIO here, without that.
 */
static void reply_read(fuse_req_t req, size_t size, int err, struct qt_msg *rep,
		       const uint8_t *pre, size_t pre_len)
{
	const uint8_t *d = NULL;
	struct qt_rd r;
	size_t n = 0;

	if (err == 0 && rep->tail && rep->tail_len > size)
		err = -EIO;
	if (err == 0 && rep->tail) {
		/*
		 * The bytes are in a pipe, spliced there from the socket: they
		 * go on to the kernel by splice too (libfuse's, when it can
		 * have a pipe of the size; else it reads them and writes),
		 * so that the DPU copies them once, into the page cache.
		 * (Never after prefetched bytes: those reads want no pipe.)
		 */
		struct fuse_bufvec bv = FUSE_BUFVEC_INIT(rep->tail_len);

		bv.buf[0].flags = FUSE_BUF_IS_FD;
		bv.buf[0].fd = qt_pipe_rfd(rep->tail);
		fuse_reply_data(req, &bv, 0);
		qt_msg_free(rep);
		return;
	}
	if (err == 0) {
		qt_rd_init_msg(&r, rep);
		if (qt_rd_bytes(&r, size, &d, &n) < 0 || qt_rd_end(&r) < 0)
			err = -EIO;
	}
	if (pre) {
		struct iovec iov[2] = {
			{.iov_base = (void *)pre, .iov_len = pre_len},
			{.iov_base = (void *)d, .iov_len = err < 0 ? 0 : n},
		};

		fuse_reply_iov(req, iov, 2);
	} else if (err < 0) {
		reply_err(req, -err);
	} else {
		fuse_reply_buf(req, (const char *)d, n);
	}
	qt_msg_free(rep);
}

static void read_answer(struct fh_pending *p, int err, struct qt_msg *rep)
{
	reply_read(p->req, p->c.size, err, rep, p->rest, p->rest_len);
	fh_pending_free(p);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	if (!wb_hold(FS(req), FUSE_READ, req, ino, fi, size, off, 0, NULL))
		do_read(req, ino, size, off, fi);
}

static void do_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct io_ctx c = {.off = (uint64_t)off, .size = MIN(size, QTFS_IO_MAX)};
	struct qt_msg *rep = NULL;
	struct qt_call_ctl *ctl;
	g_autofree uint8_t *rest = NULL;
	size_t rest_len = 0;
	int err;

	if (fh_of(fi)->pseudo && read_prefetched(req, fh_of(fi), size, off, &rest, &rest_len))
		return;
	/* The read goes on from the end of the prefetched bytes (all < c.size of them). */
	c.off += rest_len;
	c.size -= MIN(rest_len, c.size);
	if (!fh_of(fi)->stream) {
		struct fh_pending *fp = g_new0(struct fh_pending, 1);

		/*
		 * Answered on the loop thread, whose libfuse pipe is the one
		 * a reply from a pipe takes; a FUSE worker would need one
		 * of its own (1 MiB each, against the user's pipe quota).
		 */
		c.reply_tail = !rest;
		g_atomic_int_inc(&fh_of(fi)->refs);
		*fp = (struct fh_pending){.fs = FS(req), .req = req, .h = fh_of(fi), .ino = ino, .c = c,
					  .rest = g_steal_pointer(&rest), .rest_len = rest_len,
					  .build = build_read, .answer = read_answer};
		call_fh_async(FS(req), fp);
		return;
	}
	/* A stream: no deadline, and a signal to the reader interrupts it. */
	ctl = intr_begin(req);
	err = call_fh(FS(req), fh_of(fi), build_read, &c, &rep);
	intr_end(req, ctl);
	reply_read(req, c.size, err, rep, rest, rest_len);
}

static struct qt_msg *build_write(uint64_t sh, void *arg)
{
	struct io_ctx *c = arg;
	struct qt_msg *m = qt_msg_new(QTFS_WRITE, 0, 0);

	qt_msg_put_u64(m, sh);
	qt_msg_put_u64(m, c->off);
	qt_msg_put_u32(m, c->wflags);
	qt_msg_put_u32(m, c->gid);
	qt_msg_put_bytes(m, c->data, c->size);
	return m;
}

/* The bytes a WRITE's reply (freed here) says were written into *@n, or -errno. */
static int write_result(int err, struct qt_msg *rep, uint32_t *n)
{
	struct qt_rd r;

	if (err == 0) {
		qt_rd_init_msg(&r, rep);
		if (qt_rd_u32(&r, n) < 0 || qt_rd_end(&r) < 0)
			err = -EIO;
	}
	qt_msg_free(rep);
	return err;
}

static void reply_write(fuse_req_t req, int err, struct qt_msg *rep)
{
	uint32_t n = 0;

	err = write_result(err, rep, &n);
	if (err < 0)
		reply_err(req, -err);
	else
		fuse_reply_write(req, n);
}

/* A write answered before the host's reply failed with @err: for the next call on its file. */
static void wb_failed(struct fh_pending *p, int err)
{
	g_autofree char *path = NULL;
	bool first;

	g_mutex_lock(&p->h->lock);
	first = p->h->wb_err == 0;
	if (first)
		p->h->wb_err = err;
	g_mutex_unlock(&p->h->lock);
	if (!first)
		return;
	path = path_of(p->fs, p->ino, NULL);
	qt_notice("a write of %zu bytes at %" G_GUINT64_FORMAT " to \"%s\", answered before the host's reply, "
		  "failed there: %s; the next write, fsync or close of the file returns the error",
		  p->c.size, p->c.off, path ? path : "(gone)", g_strerror(-err));
}

/* A write sent from the loop thread is done (on any thread; see "Write-behind"). */
static void write_answer(struct fh_pending *p, int err, struct qt_msg *rep)
{
	struct qtfs_fs *fs = p->fs;
	uint32_t n = 0;

	if (p->req) {
		reply_write(p->req, err, rep);
	} else {
		err = write_result(err, rep, &n);
		/* Short, for a regular file: the host's file system is full. */
		if (err == 0 && n < p->c.size)
			err = -ENOSPC;
		if (err < 0)
			wb_failed(p, err);
	}
	if (p->wbuf)
		fs->give_back(fs->give_back_arg, p->wbuf);
	wb_done(fs, p->ino, p->wb);
	fh_pending_free(p);
}

/*
 * May a write through @fi of @size bytes be answered before the host's
 * reply?  If so, its room (wb_reserve()) is taken.
 */
static bool wb_may_answer(struct qtfs_fs *fs, struct fuse_file_info *fi, size_t size)
{
	return fs->o.write_behind && !fi->writepage && !fh_of(fi)->pseudo &&
	       !(fi->flags & (O_APPEND | O_DSYNC | O_DIRECT)) && wb_reserve(fs, size);
}

/*
 * A write by a caller other than root drops the file's set-id bits on the
 * host (QTFS_WR_KILL_PRIV), as a local write would; but the DPU's kernel
 * leaves that to the file system (FUSE_HANDLE_KILLPRIV_V2) and keeps the
 * mode it holds, which after a write it refreshes for a stat of the size
 * or times, not for one of the mode alone: `stat -c %A` (statx for
 * STATX_MODE) showed the bits gone on the host until attr_timeout passed.
 * So when the kernel was last told that node @ino has such bits, its
 * attributes go (drop_kernel_attr()), before the write is answered and
 * once the write is among the file's writes (a GETATTR waits for those).
 */
static void write_kills_setid(struct qtfs_fs *fs, fuse_ino_t ino)
{
	struct node *n;
	bool had;

	g_mutex_lock(&fs->lock);
	n = node_by_id(fs, ino);
	had = n && n->setid;
	if (had)
		n->setid = false;
	g_mutex_unlock(&fs->lock);
	if (had)
		drop_kernel_attr(fs, ino);
}

/*
 * A write into a relayed FIFO that no one reads any more: the host says
 * EPIPE.  A local pipe would also send the writer SIGPIPE (which kills
 * `yes >fifo` quietly, where EPIPE alone makes it complain and exit 1);
 * FUSE has no way to say so, so the signal goes from here, before the
 * answer: the writer waits in the kernel for it, so its pid is still its
 * own.  kill() aims at the writer's process, not its thread as the pipe
 * does.  Nothing for a writer in a pid namespace hidden from us (pid 0).
 */
static void write_sigpipe(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	if (ctx->pid > 0 && kill(ctx->pid, SIGPIPE) < 0)
		qt_debug("SIGPIPE to pid %d: %s", (int)ctx->pid, g_strerror(errno));
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct io_ctx c = {
		.off = (uint64_t)off,
		.size = MIN(size, QTFS_IO_MAX),
		.data = buf,
		/* fi->flags are the file's flags now: O_APPEND set by fcntl(F_SETFL) too. */
		.wflags = (ctx->uid ? QTFS_WR_KILL_PRIV : 0) | ((fi->flags & O_APPEND) ? QTFS_WR_APPEND : 0),
		.gid = ctx->gid,
	};
	struct qtfs_fs *fs = FS(req);
	struct qt_msg *rep = NULL;
	struct qt_call_ctl *ctl;
	int err;

	if (qt_loop_in_thread(qtfs_client_loop(fs->cl))) {
		/*
		 * Sent from the loop thread (qtfs_fs_where(): QTFS_RUN_LOOP_LEND)
		 * in its place among the file's writes (see "Write-behind").
		 * Answered at once, its bytes copied; or when the reply comes,
		 * the bytes left in the request's buffer, which the session
		 * lent, until then (a redo after a reconnection sends them
		 * again).
		 */
		struct fh_pending *fp;
		struct wb_write *w;
		bool early;

		if ((err = wb_take_err(fh_of(fi))) < 0) {
			reply_err(req, -err);
			return;
		}
		assert(fs->lent);
		early = wb_may_answer(fs, fi, c.size);
		fp = g_new0(struct fh_pending, 1);
		w = g_new0(struct wb_write, 1);
		g_atomic_int_inc(&fh_of(fi)->refs);
		*fp = (struct fh_pending){.fs = fs, .req = req, .h = fh_of(fi), .ino = ino, .c = c, .wb = w,
					  .build = build_write, .answer = write_answer};
		*w = (struct wb_write){.p = fp, .off = c.off, .end = c.off + c.size,
				       .append = (fi->flags & O_APPEND) != 0};
		if (early) {
			fp->req = NULL;
			fp->wdata = g_memdup2(buf, c.size);
			fp->c.data = fp->wdata;
			w->bytes = c.size;
		} else {
			fp->wbuf = g_steal_pointer(&fs->lent);
		}
		/* Before the kernel's answer: what it sends after must find the write. */
		if (wb_add(fs, ino, w))
			call_fh_async(fs, fp);
		if (c.wflags & QTFS_WR_KILL_PRIV)
			write_kills_setid(fs, ino);
		if (early)
			fuse_reply_write(req, c.size);
		return;
	}
	ctl = fh_of(fi)->stream ? intr_begin(req) : NULL;
	err = call_fh(fs, fh_of(fi), build_write, &c, &rep);
	intr_end(req, ctl);
	if (c.wflags & QTFS_WR_KILL_PRIV)
		write_kills_setid(fs, ino);
	if (err == -EPIPE && fh_of(fi)->stream)
		write_sigpipe(req);
	reply_write(req, err, rep);
}

struct flush_unlock {
	fuse_req_t req;
	struct fh *h; /* the owner's reference */
	uint64_t owner;
	int err; /* the answer */
};

/* Drop every lock of @owner's on the host (its description there goes), through @h. */
static void lk_release_owner(struct qtfs_fs *fs, struct fh *h, uint64_t owner)
{
	struct lk_ctx c = {.owner = owner, .type = F_UNLCK, .flags = QTFS_LK_RELEASE_OWNER};
	g_autoptr(qt_msg) rep = NULL;

	call_fh(fs, h, build_setlk, &c, &rep);
}

/* Drop the closing owner's POSIX locks on the host, then answer the FLUSH. */
static void flush_unlock(void *arg, bool run)
{
	struct flush_unlock *f = arg;

	if (run)
		lk_release_owner(FS(f->req), f->h, f->owner);
	fh_unref(f->h);
	reply_err(f->req, -f->err);
	g_free(f);
}

/* A close: once the file's writes on their way are done (see "Write-behind"). */
static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (!wb_hold(FS(req), FUSE_FLUSH, req, ino, fi, 0, 0, 0, NULL))
		do_flush(req, ino, fi);
}

static void do_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct qtfs_fs *fs = FS(req);
	/* The error of a write answered before the host's reply, for close(2). */
	int err = wb_take_err(fh_of(fi));
	/* A close drops the closing process's POSIX locks on the file. */
	struct fh *h = lk_take(fs, ino, fi->lock_owner);
	struct flush_unlock *f;

	if (!h) {
		reply_err(req, -err);
		return;
	}
	f = g_new(struct flush_unlock, 1);
	*f = (struct flush_unlock){.req = req, .h = h, .owner = fi->lock_owner, .err = err};
	run_may_wait(fs, flush_unlock, f);
}

static void release_fh(fuse_req_t req, struct fuse_file_info *fi)
{
	fh_close(FS(req), fh_of(fi));
	reply_err(req, 0);
}

struct release_unlock {
	fuse_req_t req;
	struct fh *h;
	uint64_t *ofd_owners; /* lk_take_fh_locked(), or NULL */
};

/*
 * The last close of a file with a flock or OFD locks (lk_take_fh_locked()):
 * the kernel unlocks them only through this RELEASE, which it sends after
 * close(2) returned.  Drop the OFD locks' owners on the host, wait for
 * the host's close (which drops the flock), and tell the lock requests
 * that met a conflict meanwhile (lk_released_since()).
 */
static void release_unlock(void *arg, bool run)
{
	struct release_unlock *r = arg;
	struct qtfs_fs *fs = FS(r->req);

	reply_err(r->req, 0);
	for (uint64_t *o = r->ofd_owners; run && o && *o; o++)
		lk_release_owner(fs, r->h, *o);
	fh_close_wait(fs, r->h, run);
	g_mutex_lock(&fs->lk_lock);
	fs->lk_releasing--;
	fs->lk_release_gen++;
	g_cond_broadcast(&fs->lk_cond);
	g_mutex_unlock(&fs->lk_lock);
	g_free(r->ofd_owners);
	g_free(r);
}

/* release_unlock() once the file's writes before it are done (wb_after(), on the loop thread). */
static void release_unlock_after(void *arg)
{
	struct release_unlock *r = arg;

	slow_push(FS(r->req), release_unlock, r);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct qtfs_fs *fs = FS(req);
	struct release_unlock *r;
	uint64_t *ofd;

	/* Counted at once, as are unlocks: an OPEN after this one must know to wait. */
	relay_closing_add(fs, fh_of(fi));
	/* Counted at once: a lock request after this one must know to wait. */
	g_mutex_lock(&fs->lk_lock);
	ofd = lk_take_fh_locked(fs, fh_of(fi));
	if (fi->flock_release || ofd)
		fs->lk_releasing++;
	g_mutex_unlock(&fs->lk_lock);
	if (!fi->flock_release && !ofd) {
		if (!wb_hold(fs, FUSE_RELEASE, req, ino, fi, 0, 0, 0, NULL))
			release_fh(req, fi);
		return;
	}
	r = g_new(struct release_unlock, 1);
	*r = (struct release_unlock){.req = req, .h = fh_of(fi), .ofd_owners = ofd};
	/* After the file's writes on their way, without holding a thread meanwhile. */
	if (!wb_after(fs, ino, release_unlock_after, r))
		run_may_wait(fs, release_unlock, r);
}

static struct qt_msg *build_fsync(uint64_t sh, void *arg)
{
	struct qt_msg *m = qt_msg_new(QTFS_FSYNC, 0, 0);

	qt_msg_put_u64(m, sh);
	qt_msg_put_u32(m, (uint32_t)GPOINTER_TO_INT(arg));
	return m;
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	g_autoptr(qt_msg) rep = NULL;
	int err, wb_err;

	wb_wait(FS(req), ino);
	/* A write answered before the host's reply failed: fsync(2) says so, as a local one would. */
	wb_err = wb_take_err(fh_of(fi));
	err = call_fh(FS(req), fh_of(fi), build_fsync, GINT_TO_POINTER(datasync), &rep);
	reply_err(req, -(wb_err ? wb_err : err));
}

/*
 * Listings kept across opens.  A listing of a directory costs a READDIR
 * round trip per 32-128 KiB of names, and the host's getdents: a
 * directory listed again and again (a management plane polls its state
 * directories) crosses the link every time.  So the names an open read
 * from offset 0 to the end are kept on the node, with the directory's
 * host attributes in the OPENDIR reply that began it, and a later OPENDIR
 * whose reply has the same mtime, ctime and size answers its plain
 * READDIRs from them, when those attributes said the directory had not
 * changed for a while (QTFS_AF_SETTLED): every change of a directory's
 * names is a change of its ctime on the host, and a change after the
 * clock moved on from the last one gets another ctime (as for "Pages kept
 * across opens").  All of the names were read after that OPENDIR, so they
 * are the directory's as of then or later; which holds whatever else
 * lists the directory meanwhile, since nothing but the open that read
 * them adds to them.
 *
 * Only plain READDIRs are answered so: a READDIRPLUS brings the entries'
 * attributes, which the listing does not keep, and still goes to the host
 * (with the kernel's default, the first READDIR of a listing is a
 * READDIRPLUS, the rest plain unless names of the directory were looked
 * up since).  The offsets are the host's, so the two mix within one open
 * directory, and seekdir() works as on the host.  Pseudo file systems
 * (whose directories change without a ctime, as /proc), network file
 * systems (never SETTLED) and listings of more than LISTING_MAX names are
 * never kept; the dir_cache= option bounds the names kept in all, the
 * least recently used listings going first.
 */
#define LISTING_MAX 65536

/* Is a listing of the directory of host attributes @a worth reading into? */
static bool listing_wanted(const struct qtfs_fs *fs, const struct qtfs_attr *a)
{
	return fs->o.dir_cache && S_ISDIR(a->mode) && (a->flags & QTFS_AF_SETTLED) &&
	       !(a->flags & QTFS_AF_PSEUDO);
}

/* The listing that may answer an open of @ino, of host attributes @a (a reference), or NULL. */
static struct listing *listing_for_open(struct qtfs_fs *fs, fuse_ino_t ino, const struct qtfs_attr *a)
{
	struct listing *l = NULL;
	struct node *n;

	g_mutex_lock(&fs->lock);
	n = node_by_id(fs, ino);
	if (n && n->listing) {
		l = n->listing;
		if (l->dev == a->dev && l->ino == a->ino && l->gen == a->gen && ver_same(&l->ver, a)) {
			g_queue_unlink(&fs->listings, &l->lru);
			g_queue_push_tail_link(&fs->listings, &l->lru);
			g_atomic_int_inc(&l->refs);
		} else {
			listing_drop_locked(fs, n);
			l = NULL;
		}
	}
	g_mutex_unlock(&fs->lock);
	return l;
}

static struct listing *listing_new(const struct qtfs_attr *a)
{
	struct listing *l = g_new0(struct listing, 1);

	l->refs = 1;
	l->dev = a->dev;
	l->ino = a->ino;
	l->gen = a->gen;
	l->ver = data_ver_of(a);
	l->ents = g_array_new(FALSE, FALSE, sizeof(struct listing_ent));
	l->names = g_string_chunk_new(4096);
	l->lru.data = l;
	return l;
}

/*
 * Does a READDIR from @off go on with the listing @l being read, whose
 * last READDIR's entries begin at index @last?  Where the caller's buffer
 * filled, the kernel keeps what it did not pass on of a reply and asks
 * again from the last entry it did: the entries after that one go.  From
 * offset 0, all go (rewinddir()).
 */
static bool listing_goes_on(struct listing *l, guint last, uint64_t off)
{
	if (off == 0) {
		g_array_set_size(l->ents, 0);
		return true;
	}
	/* From the offset the last READDIR began at, on. */
	for (guint i = l->ents->len, lo = last ? last - 1 : 0; i-- > lo;) {
		if (g_array_index(l->ents, struct listing_ent, i).next == off) {
			g_array_set_size(l->ents, i + 1);
			return true;
		}
	}
	return false;
}

static bool listing_add(struct listing *l, uint64_t ino, uint64_t next, uint8_t type, const char *name)
{
	struct listing_ent e = {.ino = ino, .next = next, .type = type};

	if (l->ents->len >= LISTING_MAX)
		return false;
	e.name = g_string_chunk_insert(l->names, name);
	g_array_append_val(l->ents, e);
	return true;
}

/*
 * @l, complete, becomes the listing of node @ino, in place of any other
 * (the latest read is the one most likely to be asked for).  Takes @l's
 * reference.
 */
static void listing_install(struct qtfs_fs *fs, fuse_ino_t ino, struct listing *l)
{
	struct node *n;

	l->by_next = g_hash_table_new(g_int64_hash, g_int64_equal);
	for (guint i = 0; i < l->ents->len; i++) {
		struct listing_ent *e = &g_array_index(l->ents, struct listing_ent, i);

		/* Offsets that do not tell one place from another: not to be answered from. */
		if (e->next == 0 || !g_hash_table_insert(l->by_next, &e->next, GUINT_TO_POINTER(i + 2))) {
			listing_unref(l);
			return;
		}
	}
	g_mutex_lock(&fs->lock);
	n = node_by_id(fs, ino);
	if (!n || n->dev != l->dev || n->ino != l->ino || n->gen != l->gen ||
	    l->ents->len > fs->o.dir_cache) {
		g_mutex_unlock(&fs->lock);
		listing_unref(l);
		return;
	}
	listing_drop_locked(fs, n);
	while (fs->listing_names + l->ents->len > fs->o.dir_cache)
		listing_drop_locked(fs, ((struct listing *)fs->listings.head->data)->owner);
	n->listing = l;
	l->owner = n;
	g_queue_push_tail_link(&fs->listings, &l->lru);
	fs->listing_names += l->ents->len;
	g_mutex_unlock(&fs->lock);
}

/* Where in @l a READDIR from @off begins: 1 + the index, or 0 if @off is none of its offsets. */
static guint listing_find(const struct listing *l, uint64_t off)
{
	return off == 0 ? 1 : GPOINTER_TO_UINT(g_hash_table_lookup(l->by_next, &off));
}

/*
 * Answer a plain READDIR of @size bytes from @off from @l.  False, with
 * nothing answered, if @off is none of its offsets.
 */
static bool reply_listing(fuse_req_t req, const struct listing *l, off_t off, size_t size)
{
	g_autofree char *buf = NULL;
	size_t used = 0;
	guint i = listing_find(l, (uint64_t)off);

	if (i-- == 0)
		return false;
	buf = g_malloc(size);
	for (; i < l->ents->len; i++) {
		const struct listing_ent *e = &g_array_index(l->ents, struct listing_ent, i);
		struct stat st = {.st_ino = e->ino, .st_mode = (mode_t)e->type << 12};
		size_t need = fuse_add_direntry(req, buf + used, size - used, e->name, &st, (off_t)e->next);

		if (need > size - used)
			break;
		used += need;
	}
	fuse_reply_buf(req, buf, used);
	return true;
}

/* The kernel's new open directory: the handle @slot/@gen/@sh of @ino, of host attributes @a. */
static void finish_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, unsigned slot,
			   uint64_t gen, uint64_t sh, const struct qtfs_attr *a)
{
	struct qtfs_fs *fs = FS(req);
	struct fh *h = fh_new(ino, O_RDONLY | O_DIRECTORY, true, slot, gen, sh, a->flags & QTFS_AF_PSEUDO);

	h->listing = listing_for_open(fs, ino, a);
	if (!h->listing && listing_wanted(fs, a)) {
		h->reading = listing_new(a);
		h->reading->keep = true;
	}
	fi->fh = (uintptr_t)h;
	/* Not the kernel's cache of listings: see "Listings kept across opens". */
	fi->cache_readdir = 0;
	fi->keep_cache = 0;
	fh_attach(fs, h);
	if (fuse_reply_open(req, fi) != 0)
		fh_close(fs, h);
}

static void opendir_sync(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, const char *path)
{
	struct qtfs_attr a;
	unsigned slot;
	uint64_t gen, sh;
	int err = open_remote(FS(req), path, O_RDONLY | O_DIRECTORY, true, false, &slot, &gen, &sh, &a, NULL);

	err = opened_node(FS(req), ino, err, slot, gen, sh, &a);
	if (err < 0)
		reply_err(req, -err);
	else
		finish_opendir(req, ino, fi, slot, gen, sh, &a);
}

/* On the loop thread (qtfs_fs_where()). */
static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char *path = path_of(FS(req), ino, NULL);

	if (!path) {
		reply_err(req, ESTALE);
		return;
	}
	open_async(req, ino, fi, path, true);
}

static struct qt_msg *build_readdir(uint64_t sh, void *arg)
{
	struct readdir_ctx *c = arg;
	struct qt_msg *m = qt_msg_new(QTFS_READDIR, 0, 0);

	qt_msg_put_u64(m, sh);
	qt_msg_put_u64(m, c->off);
	qt_msg_put_u32(m, c->size);
	qt_msg_put_u32(m, (c->plus ? QTFS_RD_PLUS : 0) | (c->list ? QTFS_RD_LIST : 0));
	return m;
}

/*
 * @l, read to its end, is every name of the directory @ino since its
 * READDIR from offset 0, from which on the host reports each new one:
 * the directory's list, if no report named it and nothing was made in it
 * from here meanwhile (either might have come after the read that should
 * have seen it), nor any list dropped.
 */
static void listed_from_listing(struct qtfs_fs *fs, fuse_ino_t ino, const struct listing *l)
{
	struct node *n;

	g_mutex_lock(&fs->lock);
	n = node_by_id(fs, ino);
	if (n && n->type == S_IFDIR && !n->names && g_atomic_int_get(&fs->watch_on) &&
	    trusted(fs, l->watch_epoch) && l->list_epoch == list_epoch(fs) &&
	    l->made_gen == n->made_gen && l->ents->len <= LISTED_MAX &&
	    fs->listed_total + l->ents->len <= fs->o.listed_names) {
		n->names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
		for (guint i = 0; i < l->ents->len; i++) {
			const char *name = g_array_index(l->ents, struct listing_ent, i).name;

			if (strcmp(name, ".") && strcmp(name, "..") && g_hash_table_add(n->names, g_strdup(name)))
				fs->listed_total++;
		}
	}
	g_mutex_unlock(&fs->lock);
}

/* A READDIR's reply, on the loop thread (or the slow pool's, after a lost connection). */
static void readdir_answer(struct fh_pending *p, int err, struct qt_msg *rep)
{
	fuse_req_t req = p->req;
	struct qtfs_fs *fs = FS(req);
	const struct readdir_ctx *c = &p->rd;
	g_autofree char *buf = NULL;
	g_autoptr(GArray) learned = g_array_new(FALSE, FALSE, sizeof(fuse_ino_t));
	size_t used = 0;
	uint32_t count, lflags = 0;
	struct qt_rd r;

	if (err < 0) {
		reply_err(req, -err);
		goto out;
	}
	buf = g_malloc(c->size);
	qt_rd_init_msg(&r, rep);
	if ((c->list && qt_rd_u32(&r, &lflags) < 0) || qt_rd_u32(&r, &count) < 0) {
		reply_err(req, EIO);
		goto out;
	}
	if (c->list && p->reading) {
		/* From here on, every name that appears there is reported. */
		p->reading->list = lflags & QTFS_AF_LISTED;
		p->reading->list_epoch = p->list_epoch;
		p->reading->watch_epoch = p->epoch;
		p->reading->made_gen = p->made_gen;
		if (!p->reading->list && !p->reading->keep)
			g_clear_pointer(&p->reading, listing_unref);
	}
	for (uint32_t i = 0; i < count; i++) {
		uint64_t d_ino, next;
		uint8_t type, has_attr = 0;
		const uint8_t *nm;
		size_t nl, need;
		struct qtfs_attr a;
		char name[QTFS_NAME_MAX + 1];
		struct stat st = {0};

		qt_rd_u64(&r, &d_ino);
		qt_rd_u64(&r, &next);
		qt_rd_u8(&r, &type);
		qt_rd_bytes(&r, QTFS_NAME_MAX, &nm, &nl);
		if (c->plus && qt_rd_u8(&r, &has_attr) == 0 && has_attr)
			qtfs_rd_attr(&r, &a);
		if (r.err || nl == 0 || memchr(nm, '\0', nl) || memchr(nm, '/', nl)) {
			reply_err(req, EIO);
			goto out;
		}
		memcpy(name, nm, nl);
		name[nl] = '\0';
		st.st_ino = d_ino;
		st.st_mode = (mode_t)type << 12;
		if (!c->plus) {
			need = fuse_add_direntry(req, buf + used, c->size - used, name, &st, (off_t)next);
			if (need > c->size - used)
				break;
			used += need;
			if (p->reading && !listing_add(p->reading, d_ino, next, type, name))
				g_clear_pointer(&p->reading, listing_unref);
			continue;
		}
		need = fuse_add_direntry_plus(req, NULL, 0, name, NULL, 0);
		if (need > c->size - used)
			break;
		if (p->reading && !listing_add(p->reading, d_ino, next, type, name))
			g_clear_pointer(&p->reading, listing_unref);
		{
			struct fuse_entry_param e = {.attr = st};

			if (has_attr && S_ISFIFO(a.mode) && fs->relay) {
				g_autofree char *cp = path_of(fs, p->ino, name);

				fix_attr(fs, cp, false, &a);
			}
			if (has_attr && !(fs->o.proc && p->ino == FUSE_ROOT_ID &&
					  (!strcmp(name, "self") || !strcmp(name, "thread-self") ||
					   all_digits(name)))) {
				struct node *n, *dir;

				g_mutex_lock(&fs->lock);
				/*
				 * A file with writes on their way when the call went
				 * out: its attributes may be from before them (see
				 * "Write-behind").  The entry goes without (node id 0),
				 * and the kernel asks for the file by itself.
				 */
				if (!wb_snap_hit_locked(fs, p->wbs, &a, false, NULL)) {
					dir = node_by_id(fs, p->ino);
					n = node_learn_locked(fs, dir, name, &a);
					fill_entry(fs, n, &a, p->epoch, &e);
					g_array_append_val(learned, n->id);
				}
				g_mutex_unlock(&fs->lock);
			}
			used += fuse_add_direntry_plus(req, buf + used, c->size - used, name, &e, (off_t)next);
		}
	}
	/*
	 * Before the reply: the caller's next getdents() may send the next
	 * READDIR as soon as it is written.  Should the kernel not take this
	 * one, it asks again from the same offset, which listing_goes_on()
	 * takes back to.
	 */
	if (p->reading && count == 0) {
		/* The end: every name from offset 0 on is in it. */
		struct listing *l = g_steal_pointer(&p->reading);

		if (l->list)
			listed_from_listing(fs, p->h->ino, l);
		if (l->keep)
			listing_install(fs, p->h->ino, l);
		else
			listing_unref(l);
	} else if (p->reading) {
		g_mutex_lock(&p->h->lock);
		if (!p->h->reading) {
			p->h->reading = g_steal_pointer(&p->reading);
			p->h->reading_last = p->reading_last;
		}
		g_mutex_unlock(&p->h->lock);
	}
	if (fuse_reply_buf(req, buf, used) != 0) {
		/* The kernel took none of the entries: give their lookups back. */
		g_mutex_lock(&fs->lock);
		for (guint i = 0; i < learned->len; i++)
			forget_one(fs, g_array_index(learned, fuse_ino_t, i), 1);
		g_mutex_unlock(&fs->lock);
	}
out:
	qt_msg_free(rep);
	fh_pending_free(p);
}

/*
 * A listing from offset 0 of a directory without a list, read from the
 * host: worth a list of its names once read to the end?  Notes in @p
 * where the reports stand as it goes out.
 */
static bool list_wanted(struct qtfs_fs *fs, struct fh_pending *p)
{
	struct node *n;
	bool want = false;

	/* With a listing kept, the rest is answered here: this one would not end. */
	if (!fs->o.list_dirs || p->h->pseudo || p->h->listing || !g_atomic_int_get(&fs->watch_on))
		return false;
	g_mutex_lock(&fs->lock);
	n = node_by_id(fs, p->ino);
	if (n && n->type == S_IFDIR && !n->names && fs->listed_total < fs->o.listed_names) {
		want = true;
		p->list_epoch = list_epoch(fs);
		p->made_gen = n->made_gen;
	}
	g_mutex_unlock(&fs->lock);
	return want;
}

/*
 * READDIR and READDIRPLUS, on the loop thread (qtfs_fs_where()): a plain
 * one from a listing kept when it can, else from the host, the reply
 * taken in by readdir_answer().
 */
static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi, bool plus, struct wb_snap *wb)
{
	struct qtfs_fs *fs = FS(req);
	struct fh *h = fh_of(fi);
	struct fh_pending *p;
	guint last;

	/* h->listing is set before the kernel has the open directory, and stays. */
	if (!plus && h->listing && reply_listing(req, h->listing, off, MIN(size, QTFS_IO_MAX)))
		return;
	p = g_new0(struct fh_pending, 1);
	g_atomic_int_inc(&h->refs);
	*p = (struct fh_pending){.fs = fs, .req = req, .h = h, .ino = ino, .build = build_readdir,
				 .answer = readdir_answer, .epoch = trust_epoch(fs), .wbs = wb,
				 .rd = {.off = (uint64_t)off, .size = (uint32_t)MIN(size, QTFS_IO_MAX), .plus = plus}};
	p->arg = &p->rd;
	g_mutex_lock(&h->lock);
	p->reading = g_steal_pointer(&h->reading);
	last = h->reading_last;
	g_mutex_unlock(&h->lock);
	/* Only a READDIR that goes on from where the last one ended adds to a listing. */
	if (p->reading && !listing_goes_on(p->reading, last, p->rd.off))
		g_clear_pointer(&p->reading, listing_unref);
	if (off == 0 && list_wanted(fs, p)) {
		p->rd.list = true;
		if (!p->reading)
			p->reading = listing_new(&(struct qtfs_attr){0});
	}
	if (p->reading)
		p->reading_last = p->reading->ents->len;
	call_fh_async(fs, p);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, false, NULL);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	struct wb_snap *wb;

	/* Writes on their way: the answer is checked against them (readdir_answer()). */
	if (!wb_snap_take(FS(req), &wb) &&
	    wb_hold(FS(req), FUSE_READDIRPLUS, req, ino, fi, size, off, 0, NULL))
		return;
	do_readdir(req, ino, size, off, fi, true, wb);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	release_fh(req, fi);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	op_fsync(req, ino, datasync, fi);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct qtfs_fs *fs = FS(req);
	g_autoptr(qt_msg) rep = NULL;
	uint64_t v[11];
	struct statvfs sv = {0};
	struct qt_rd r;
	int err = call(fs, req_path(QTFS_STATFS, ""), &rep);

	if (err == 0) {
		qt_rd_init_msg(&r, rep);
		for (int i = 0; i < 11; i++)
			qt_rd_u64(&r, &v[i]);
		if (qt_rd_end(&r) < 0)
			err = -EIO;
	}
	if (err < 0) {
		reply_err(req, -err);
		return;
	}
	sv.f_bsize = v[0];
	sv.f_frsize = v[1];
	sv.f_blocks = v[2];
	sv.f_bfree = v[3];
	sv.f_bavail = v[4];
	sv.f_files = v[5];
	sv.f_ffree = v[6];
	sv.f_favail = v[7];
	sv.f_fsid = v[8];
	sv.f_flag = v[9];
	sv.f_namemax = v[10];
	fuse_reply_statfs(req, &sv);
}

static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct qtfs_fs *fs = FS(req);
	g_autofree char *path = path_of(fs, ino, NULL);
	struct qt_msg *m;

	if (!path) {
		reply_err(req, ESTALE);
		return;
	}
	m = req_path(QTFS_ACCESS, path);
	qt_msg_put_u32(m, (uint32_t)mask);
	reply_err(req, -call_void(fs, m));
}

/*
 * File capabilities before a write.  The kernel asks before every write(2)
 * to a file whether it has file capabilities to drop (GETXATTR
 * security.capability): a local file system marks an inode that has none
 * (S_NOSEC) and is not asked again, FUSE only where the file system drops
 * them itself (FUSE_HANDLE_KILLPRIV_V2, session.c), and then only until it
 * refreshes the file's attributes; before that, each write was two round
 * trips to the host.  An answer of "none" is kept attr_timeout
 * seconds per regular file, as its attributes are (never for pseudo
 * files); a SETXATTR or REMOVEXATTR of the file from here ends it at once.
 * A capability set on the host meanwhile is seen after attr_timeout, as a
 * chmod there is, and is dropped by the write all the same: the host's own
 * kernel drops file capabilities at every write, the server's included.
 */
#define XATTR_CAPS "security.capability"

/*
 * ACLs.  The kernel checks permissions itself (default_permissions) and,
 * with FUSE_CAP_POSIX_ACL, against the host's POSIX ACLs too: it asks for
 * a node's access ACL (GETXATTR system.posix_acl_access) when a caller is
 * neither its owner nor served by the mode's "other" bits alone, and keeps
 * it until it next refreshes the node's attributes.  Without that, the
 * mode's group bits (an ACL's mask) stood for every ACL entry: a named
 * user was refused what the host grants, and the owning group got what
 * its entry withholds.  The kernel takes an EOPNOTSUPP there for an error,
 * not for "no ACL", and refuses the access: a file system on the host
 * without ACLs answers ENODATA here instead, and pseudo files (procfs,
 * sysfs, cgroupfs have no ACLs) are answered here at once.  New files: the
 * kernel leaves the umask to us (FUSE_CAP_DONT_MASK, with QTFS_MF_UMASK)
 * and the server applies it only where the parent has no default ACL.
 */
#define XATTR_ACL_ACCESS "system.posix_acl_access"
#define XATTR_ACL_DEFAULT "system.posix_acl_default"

/*
 * How many xattr changes of @ino went out; whether it is known to have no
 * capabilities; whether it is a pseudo file.
 */
static unsigned xattr_gen(struct qtfs_fs *fs, fuse_ino_t ino, bool *nocaps, bool *pseudo)
{
	struct node *n;
	unsigned gen = 0;

	g_mutex_lock(&fs->lock);
	n = node_by_id(fs, ino);
	if (n) {
		gen = n->xattr_gen;
		*nocaps = n->nocaps_until && g_get_monotonic_time() < n->nocaps_until;
		*pseudo = n->pseudo;
	}
	g_mutex_unlock(&fs->lock);
	return gen;
}

/* The host said @ino has no capabilities, and nothing changed its xattrs since @gen. */
static void nocaps_note(struct qtfs_fs *fs, fuse_ino_t ino, unsigned gen)
{
	struct node *n;

	if (fs->o.attr_timeout <= 0)
		return;
	g_mutex_lock(&fs->lock);
	n = node_by_id(fs, ino);
	if (n && n->type == S_IFREG && !n->pseudo && !n->relay && n->xattr_gen == gen)
		n->nocaps_until = g_get_monotonic_time() + (gint64)(fs->o.attr_timeout * G_USEC_PER_SEC);
	g_mutex_unlock(&fs->lock);
}

/* A SETXATTR or REMOVEXATTR of @ino goes out, or came back. */
static void xattr_changing(struct qtfs_fs *fs, fuse_ino_t ino)
{
	struct node *n;

	g_mutex_lock(&fs->lock);
	n = node_by_id(fs, ino);
	if (n) {
		n->xattr_gen++;
		n->nocaps_until = 0;
	}
	g_mutex_unlock(&fs->lock);
}

/* One of the four extended attribute requests, for build_xattr(). */
struct xattr_ctx {
	uint16_t type;
	const char *path; /* NULL: none left */
	const char *name; /* not for LISTXATTR */
	const void *value; /* SETXATTR */
	size_t vsize;
	uint32_t size;	/* GETXATTR, LISTXATTR: the caller's buffer */
	uint32_t flags; /* SETXATTR */
	bool fh;	/* the server takes a handle after the path */
	bool acl;	/* GETXATTR of a POSIX ACL (see "ACLs") */
};

static struct qt_msg *build_xattr(uint64_t sh, void *arg)
{
	const struct xattr_ctx *c = arg;
	struct qt_msg *m = req_path(c->type, c->path ? c->path : "");

	if (c->fh)
		qt_msg_put_u64(m, sh);
	if (c->type != QTFS_LISTXATTR)
		qt_msg_put_str(m, c->name);
	if (c->type == QTFS_SETXATTR) {
		qt_msg_put_bytes(m, c->value, c->vsize);
		qt_msg_put_u32(m, c->flags);
	} else if (c->type != QTFS_REMOVEXATTR) {
		qt_msg_put_u32(m, c->size);
	}
	return m;
}

/*
 * An extended attribute request of node @ino: through a handle it is open
 * by (attr_fh(): the kernel names none for these) where the server takes
 * one, so that an fgetxattr() or fsetxattr() reaches the open file
 * wherever the host has moved it; else by path.
 */
static int xattr_call(struct qtfs_fs *fs, fuse_ino_t ino, struct xattr_ctx *c, struct qt_msg **rep)
{
	struct fh *h = fs->o.xattr_fh ? attr_fh(fs, ino, NULL, c->path) : NULL;
	int err;

	c->fh = fs->o.xattr_fh;
	if (h) {
		err = call_fh(fs, h, build_xattr, c, rep);
		fh_unref(h);
		return err;
	}
	return c->path ? call(fs, build_xattr(0, c), rep) : -ESTALE;
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	struct qtfs_fs *fs = FS(req);
	g_autofree char *path = path_of(fs, ino, NULL);
	struct xattr_ctx c = {.type = QTFS_SETXATTR, .path = path, .name = name, .value = value,
			      .vsize = size, .flags = (uint32_t)flags};
	g_autoptr(qt_msg) rep = NULL;
	int err;

	if (size > QTFS_XATTR_SIZE_MAX) {
		reply_err(req, E2BIG);
		return;
	}
	xattr_changing(fs, ino);
	err = xattr_call(fs, ino, &c, &rep);
	/* Again: a GETXATTR that crossed this one may have read the old value. */
	xattr_changing(fs, ino);
	reply_err(req, -err);
}

/* getxattr and listxattr answer alike: a size probe, or the bytes.  Returns the error. */
static int reply_xattr(fuse_req_t req, struct qtfs_fs *fs, fuse_ino_t ino, struct xattr_ctx *c, size_t size)
{
	g_autoptr(qt_msg) rep = NULL;
	const uint8_t *p;
	uint32_t n;
	size_t len;
	struct qt_rd r;
	int err = xattr_call(fs, ino, c, &rep);

	if (err == -EOPNOTSUPP && c->acl)
		err = -ENODATA;
	if (err == 0) {
		qt_rd_init_msg(&r, rep);
		qt_rd_u32(&r, &n);
		qt_rd_bytes(&r, QTFS_XATTR_SIZE_MAX, &p, &len);
		if (qt_rd_end(&r) < 0)
			err = -EIO;
	}
	if (err < 0)
		reply_err(req, -err);
	else if (size == 0)
		fuse_reply_xattr(req, n);
	else if (len > size)
		reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, (const char *)p, len);
	return err;
}

struct getxattr_later {
	fuse_req_t req;
	fuse_ino_t ino;
	size_t size;
	char name[];
};

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);

static void getxattr_later(void *arg, bool run)
{
	struct getxattr_later *x = arg;

	if (run)
		op_getxattr(x->req, x->ino, x->name, x->size);
	else
		reply_err(x->req, EIO);
	g_free(x);
}

/*
 * A GETXATTR of security.capability for a file known to have none, from
 * the kernel's request buffer (fuse_getxattr_in, then the name): answered
 * by the loop thread, a thread hand-off less before each write.
 */
static bool getxattr_caps_known(struct qtfs_fs *fs, fuse_ino_t ino, const uint8_t *arg, size_t alen)
{
	size_t off = sizeof(struct fuse_getxattr_in);
	bool nocaps = false, pseudo = false;

	if (alen < off + sizeof(XATTR_CAPS) || memcmp(arg + off, XATTR_CAPS, sizeof(XATTR_CAPS)) != 0)
		return false;
	xattr_gen(fs, ino, &nocaps, &pseudo);
	return nocaps;
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct qtfs_fs *fs = FS(req);
	g_autofree char *path = path_of(fs, ino, NULL);
	struct xattr_ctx c = {.type = QTFS_GETXATTR, .path = path, .name = name,
			      .size = (uint32_t)MIN(size, QTFS_XATTR_SIZE_MAX)};
	bool caps, nocaps = false, pseudo = false;
	unsigned gen;

	if (!strcmp(name, QTFS_SYNC_XATTR) || !strcmp(name, QTFS_SYNC_XATTR_TRUSTED)) {
		watch_sync(req, fs, size);
		return;
	}
	caps = !strcmp(name, XATTR_CAPS);
	c.acl = !strcmp(name, XATTR_ACL_ACCESS) || !strcmp(name, XATTR_ACL_DEFAULT);
	gen = xattr_gen(fs, ino, &nocaps, &pseudo);
	if ((caps && nocaps) || (c.acl && pseudo)) {
		reply_err(req, ENODATA);
		return;
	}
	/* Sent to the loop thread for that answer (qtfs_fs_where), which has just lapsed. */
	if (qt_loop_in_thread(qtfs_client_loop(fs->cl))) {
		size_t len = strlen(name) + 1;
		struct getxattr_later *x = g_malloc(sizeof(*x) + len);

		*x = (struct getxattr_later){.req = req, .ino = ino, .size = size};
		memcpy(x->name, name, len);
		slow_push(fs, getxattr_later, x);
		return;
	}
	if (reply_xattr(req, fs, ino, &c, size) == -ENODATA && caps)
		nocaps_note(fs, ino, gen);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct qtfs_fs *fs = FS(req);
	g_autofree char *path = path_of(fs, ino, NULL);
	struct xattr_ctx c = {.type = QTFS_LISTXATTR, .path = path, .size = (uint32_t)MIN(size, QTFS_XATTR_SIZE_MAX)};

	reply_xattr(req, fs, ino, &c, size);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct qtfs_fs *fs = FS(req);
	g_autofree char *path = path_of(fs, ino, NULL);
	struct xattr_ctx c = {.type = QTFS_REMOVEXATTR, .path = path, .name = name};
	g_autoptr(qt_msg) rep = NULL;
	int err;

	xattr_changing(fs, ino);
	err = xattr_call(fs, ino, &c, &rep);
	xattr_changing(fs, ino);
	reply_err(req, -err);
}

struct falloc_ctx {
	int mode;
	off_t off, len;
};

static struct qt_msg *build_fallocate(uint64_t sh, void *arg)
{
	struct falloc_ctx *c = arg;
	struct qt_msg *m = qt_msg_new(QTFS_FALLOCATE, 0, 0);

	qt_msg_put_u64(m, sh);
	qt_msg_put_u32(m, (uint32_t)c->mode);
	qt_msg_put_u64(m, (uint64_t)c->off);
	qt_msg_put_u64(m, (uint64_t)c->len);
	return m;
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
			 struct fuse_file_info *fi)
{
	struct falloc_ctx c = {.mode = mode, .off = offset, .len = length};
	g_autoptr(qt_msg) rep = NULL;

	wb_wait(FS(req), ino);
	reply_err(req, -call_fh(FS(req), fh_of(fi), build_fallocate, &c, &rep));
}

struct lseek_ctx {
	off_t off;
	int whence;
};

static struct qt_msg *build_lseek(uint64_t sh, void *arg)
{
	struct lseek_ctx *c = arg;
	struct qt_msg *m = qt_msg_new(QTFS_LSEEK, 0, 0);

	qt_msg_put_u64(m, sh);
	qt_msg_put_i64(m, c->off);
	qt_msg_put_u32(m, (uint32_t)c->whence);
	return m;
}

static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	struct lseek_ctx c = {.off = off, .whence = whence};
	g_autoptr(qt_msg) rep = NULL;
	int64_t res = 0;
	struct qt_rd r;
	int err;

	wb_wait(FS(req), ino);
	err = call_fh(FS(req), fh_of(fi), build_lseek, &c, &rep);

	if (err == 0) {
		qt_rd_init_msg(&r, rep);
		if (qt_rd_i64(&r, &res) < 0 || qt_rd_end(&r) < 0)
			err = -EIO;
	}
	if (err < 0)
		reply_err(req, -err);
	else
		fuse_reply_lseek(req, (off_t)res);
}

static void op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			       struct fuse_file_info *fi_out, size_t len, int flags)
{
	struct qtfs_fs *fs = FS(req);
	struct fh *a = fh_of(fi_in), *b = fh_of(fi_out);
	g_autoptr(qt_msg) rep = NULL;
	struct qt_msg *m;
	uint64_t n = 0;
	struct qt_rd r;
	unsigned slot, bslot;
	uint64_t gen, bgen, ash, bsh;
	int err;

	wb_wait(fs, ino_in);
	wb_wait(fs, ino_out);
	/* One lock at a time: the two may be the same file, or locked the other way round. */
	g_mutex_lock(&a->lock);
	slot = a->slot;
	gen = a->gen;
	ash = a->sh;
	g_mutex_unlock(&a->lock);
	g_mutex_lock(&b->lock);
	bslot = b->slot;
	bgen = b->gen;
	bsh = b->sh;
	g_mutex_unlock(&b->lock);
	if (slot != bslot || gen != bgen) {
		err = -EXDEV;
	} else {
		m = qt_msg_new(QTFS_COPY_RANGE, 0, 0);
		qt_msg_put_u64(m, ash);
		qt_msg_put_u64(m, (uint64_t)off_in);
		qt_msg_put_u64(m, bsh);
		qt_msg_put_u64(m, (uint64_t)off_out);
		qt_msg_put_u64(m, len);
		qt_msg_put_u32(m, (uint32_t)flags);
		err = qtfs_client_call_on(fs->cl, slot, gen, m, 0, &rep);
	}
	if (err == 0) {
		qt_rd_init_msg(&r, rep);
		/* More than asked is no count a host gives. */
		if (qt_rd_u64(&r, &n) < 0 || qt_rd_end(&r) < 0 || n > len)
			err = -EIO;
	}
	/*
	 * Handles on different connections (conns=N) or a replaced
	 * connection: EXDEV makes the kernel fall back to copying the data
	 * through the page cache.
	 */
	if (err == -ESTALE)
		err = -EXDEV;
	if (err < 0)
		reply_err(req, -err);
	else
		fuse_reply_write(req, (size_t)n);
}

/*
 * poll.  Plain files are always ready.  For relayed FIFOs and pseudo files
 * (cgroup.events, memory.events, PSI files) the server polls the host
 * descriptor: once without waiting to answer the kernel, and, when the
 * kernel wants to be woken, in a long wait (one per open file at a time,
 * re-armed while nothing happens) whose end is passed on with
 * fuse_lowlevel_notify_poll().  The notification is sent from the loop
 * thread, never from inside a request, and the kernel then polls again.
 * The wait asks for what every waiting poll of the file asked for: when a
 * poll wants an event the outstanding wait does not, a wait for all of
 * them takes its place (the one before ends unheeded).
 */
#define POLL_WAIT_MS 25000

struct poll_wait {
	struct qtfs_fs *fs;
	struct fh *h; /* a reference */
	unsigned gen; /* h->poll_gen when armed */
};

static void poll_arm(struct qtfs_fs *fs, struct fh *h);

static void poll_woke(void *arg, int err, struct qt_msg *reply)
{
	struct poll_wait *pw = arg;
	struct fh *h = pw->h;
	struct fuse_pollhandle *ph = NULL;
	uint32_t revents = 0;
	struct qt_rd r;
	bool current;

	if (err == 0) {
		qt_rd_init_msg(&r, reply);
		if (qt_rd_u32(&r, &revents) < 0 || qt_rd_end(&r) < 0)
			err = -EIO;
		qt_msg_free(reply);
	}
	g_mutex_lock(&h->lock);
	/* The outstanding wait, or one that a wait for more events replaced? */
	current = pw->gen == h->poll_gen;
	if (current)
		h->poll_armed = 0;
	/*
	 * Some pseudo files report a change to the first poll that looks
	 * and not after it: /proc/PID/mountinfo and /proc/PID/mounts (a
	 * mount or unmount), PSI triggers.  The kernel's poll that this
	 * wake-up brings would find nothing on the host: it gets them from
	 * here.  Only those bits, only on pseudo files that are not
	 * streams: a FIFO's readiness is the host's as it is now.
	 */
	if (err == 0 && !h->stream)
		h->poll_seen |= revents & (POLLPRI | POLLERR);
	if (err == 0 && revents == 0 && h->ph) {
		/* Nothing yet: keep waiting as long as the kernel does. */
		if (current)
			poll_arm(pw->fs, h);
	} else {
		ph = h->ph;
		h->ph = NULL;
		h->poll_want = 0; /* the kernel's polls after the wake-up ask again */
	}
	g_mutex_unlock(&h->lock);
	if (ph) {
		fuse_lowlevel_notify_poll(ph);
		fuse_pollhandle_destroy(ph);
	}
	fh_unref(h);
	g_free(pw);
}

/* Wait on the server for the events in h->poll_want.  h->lock held. */
static void poll_arm(struct qtfs_fs *fs, struct fh *h)
{
	struct poll_wait *pw = g_new0(struct poll_wait, 1);
	struct qt_msg *m = qt_msg_new(QTFS_POLL, 0, 0);

	qt_msg_put_u64(m, h->sh);
	qt_msg_put_u32(m, h->poll_want);
	qt_msg_put_u32(m, POLL_WAIT_MS);
	pw->fs = fs;
	pw->h = h;
	pw->gen = ++h->poll_gen;
	g_atomic_int_inc(&h->refs);
	h->poll_armed = h->poll_want;
	qtfs_client_call_cb(fs->cl, h->slot, h->gen, m, POLL_WAIT_MS + qtfs_client_timeout_ms(fs->cl),
			    poll_woke, pw);
}

struct poll_ctx {
	uint32_t events;
};

static struct qt_msg *build_poll(uint64_t sh, void *arg)
{
	struct poll_ctx *c = arg;
	struct qt_msg *m = qt_msg_new(QTFS_POLL, 0, 0);

	qt_msg_put_u64(m, sh);
	qt_msg_put_u32(m, c->events);
	qt_msg_put_u32(m, 0);
	return m;
}

static void op_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct fuse_pollhandle *ph)
{
	struct qtfs_fs *fs = FS(req);
	struct fh *h = fh_of(fi);
	struct poll_ctx c = {.events = fi->poll_events ? fi->poll_events : (POLLIN | POLLOUT)};
	g_autoptr(qt_msg) rep = NULL;
	uint32_t revents = 0;
	struct qt_rd r;
	int err;

	if (!h->stream && !h->pseudo) {
		if (ph)
			fuse_pollhandle_destroy(ph);
		fuse_reply_poll(req, POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM);
		return;
	}
	/* The readiness check itself must not block: a short deadline whatever the file. */
	err = call_fh(fs, h, build_poll, &c, &rep);
	if (err == 0) {
		qt_rd_init_msg(&r, rep);
		if (qt_rd_u32(&r, &revents) < 0 || qt_rd_end(&r) < 0)
			err = -EIO;
	}
	if (err < 0) {
		if (ph)
			fuse_pollhandle_destroy(ph);
		reply_err(req, -err);
		return;
	}
	g_mutex_lock(&h->lock);
	revents |= h->poll_seen;
	h->poll_seen = 0;
	if (ph) {
		if (revents & (c.events | POLLERR | POLLHUP | POLLNVAL)) {
			fuse_pollhandle_destroy(ph);
		} else {
			if (h->ph)
				fuse_pollhandle_destroy(h->ph);
			h->ph = ph;
			h->poll_want |= c.events;
			if (h->poll_want & ~h->poll_armed)
				poll_arm(fs, h);
		}
	}
	g_mutex_unlock(&h->lock);
	fuse_reply_poll(req, revents);
}

const struct fuse_lowlevel_ops qtfs_fs_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.getlk = op_getlk,
	.setlk = op_setlk,
	.flock = op_flock,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.access = op_access,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.fallocate = op_fallocate,
	.lseek = op_lseek,
	.copy_file_range = op_copy_file_range,
	.poll = op_poll,
};

struct qtfs_fs *qtfs_fs_new(const struct qtfs_fs_opts *o, struct qtfs_client *cl,
			    const struct qtfs_attr *root)
{
	static const char *const default_comms[] = {"kubelet", "containerd", "dockerd", "isulad",
						    "libvirtd", "rexec", NULL};
	struct qtfs_fs *fs = g_new0(struct qtfs_fs, 1);

	fs->o = *o;
	fs->cl = cl;
	fs->local_proc = g_strdup(o->local_proc ? o->local_proc : "/local_proc");
	fs->local_comms = g_strdupv((char **)(o->local_comms ? o->local_comms : default_comms));
	if (o->fifo_relay) {
		GPtrArray *v = g_ptr_array_new();

		for (const char *const *p = o->fifo_relay; *p; p++) {
			const char *s = *p;
			size_t n;

			while (*s == '/')
				s++;
			n = strlen(s);
			while (n > 0 && s[n - 1] == '/')
				n--;
			g_ptr_array_add(v, g_strndup(s, n));
		}
		g_ptr_array_add(v, NULL);
		fs->relay = (GStrv)g_ptr_array_free(v, FALSE);
	}
	fs->o.fifo_relay = NULL;
	fs->o.local_proc = fs->local_proc;
	g_mutex_init(&fs->lock);
	g_mutex_init(&fs->sync_lock);
	g_mutex_init(&fs->slow_lock);
	{
		/* Its threads must leave the termination signals to the main thread. */
		sigset_t all, old;

		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		fs->slow = g_thread_pool_new(slow_run, NULL, 8, FALSE, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	g_mutex_init(&fs->lk_lock);
	g_cond_init(&fs->lk_cond);
	g_mutex_init(&fs->relay_lock);
	g_cond_init(&fs->relay_cond);
	fs->relay_closing = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
	g_mutex_init(&fs->wb_lock);
	g_cond_init(&fs->wb_cond);
	fs->wb_nodes = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, wb_node_free);
	fs->lk_owners = g_hash_table_new_full(lk_hash, lk_equal, lk_free, NULL);
	fs->by_id = g_hash_table_new(g_int64_hash, g_int64_equal);
	fs->by_key = g_hash_table_new(key_hash, key_equal);
	fs->by_name = g_hash_table_new(name_hash, name_equal);
	fs->root = g_new0(struct node, 1);
	fs->root->id = FUSE_ROOT_ID;
	fs->root->dev = root->dev;
	fs->root->ino = root->ino;
	fs->root->gen = root->gen;
	fs->root->type = S_IFDIR;
	fs->root->pseudo = root->flags & QTFS_AF_PSEUDO;
	fs->root->nlookup = 1;
	fs->next_id = FUSE_ROOT_ID;
	g_hash_table_insert(fs->by_id, &fs->root->id, fs->root);
	g_hash_table_add(fs->by_key, fs->root);
	fs->root_attr = *root;
	return fs;
}

void qtfs_fs_set_lender(struct qtfs_fs *fs, void (*give_back)(void *arg, void *buf), void *arg)
{
	fs->give_back = give_back;
	fs->give_back_arg = arg;
}

void *qtfs_fs_lend(struct qtfs_fs *fs, void *buf)
{
	void *was = fs->lent;

	fs->lent = buf;
	return was;
}

enum qtfs_run qtfs_fs_where(struct qtfs_fs *fs, const void *buf, size_t len)
{
	struct fuse_in_header in;
	const uint8_t *arg = (const uint8_t *)buf + sizeof(in);
	size_t alen;
	uint64_t fh;

	if (len < sizeof(in))
		return QTFS_RUN_WORKER;
	memcpy(&in, buf, sizeof(in));
	alen = len - sizeof(in);
	switch (in.opcode) {
	case FUSE_LOOKUP:
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
	case FUSE_GETATTR:
	case FUSE_UNLINK:
	case FUSE_RMDIR:
	case FUSE_CREATE:
	case FUSE_FLUSH:
	case FUSE_INTERRUPT:
		return QTFS_RUN_LOOP;
	case FUSE_OPEN:
		/* A relayed FIFO's open waits as long as the FIFO does. */
		return node_is_relay(fs, in.nodeid) ? QTFS_RUN_BLOCKER : QTFS_RUN_LOOP;
	case FUSE_SETLKW:
		return QTFS_RUN_BLOCKER;
	case FUSE_GETXATTR:
		return getxattr_caps_known(fs, in.nodeid, arg, alen) ? QTFS_RUN_LOOP : QTFS_RUN_WORKER;
	case FUSE_READ:
	case FUSE_WRITE:
		/* fh comes first in both fuse_read_in and fuse_write_in. */
		if (alen < sizeof(fh))
			return QTFS_RUN_WORKER;
		memcpy(&fh, arg, sizeof(fh));
		if (fh && ((const struct fh *)(uintptr_t)fh)->stream)
			return QTFS_RUN_BLOCKER;
		/* A write of a regular file too, its bytes left in the request's buffer (op_write). */
		if (in.opcode == FUSE_WRITE)
			return fh && alen >= sizeof(struct fuse_write_in) ? QTFS_RUN_LOOP_LEND : QTFS_RUN_WORKER;
		/* A read of a regular file waits for nothing but its reply. */
		return in.opcode == FUSE_READ && fh && alen >= sizeof(struct fuse_read_in) ? QTFS_RUN_LOOP
											   : QTFS_RUN_WORKER;
	case FUSE_OPENDIR:
	case FUSE_RELEASEDIR:
		return QTFS_RUN_LOOP;
	case FUSE_READDIR:
	case FUSE_READDIRPLUS:
		return QTFS_RUN_LOOP;
	case FUSE_RELEASE: {
		struct fuse_release_in r;

		if (alen < sizeof(r))
			return QTFS_RUN_WORKER;
		memcpy(&r, arg, sizeof(r));
		/* The last close of a flock waits for the host's close (op_release). */
		return (r.release_flags & FUSE_RELEASE_FLOCK_UNLOCK) ? QTFS_RUN_WORKER : QTFS_RUN_LOOP;
	}
	default:
		return QTFS_RUN_WORKER;
	}
}

void qtfs_fs_log_state(struct qtfs_fs *fs)
{
	guint nodes, named = 0, files = 0, dirs = 0, aliases = 0, listings, moves, owners, wb_nodes;
	uint64_t unwatched;
	size_t listing_names, listed_names;
	int syncs;
	uint64_t lookups = 0;
	GHashTableIter it;
	gpointer v;

	g_mutex_lock(&fs->lock);
	nodes = g_hash_table_size(fs->by_id);
	g_hash_table_iter_init(&it, fs->by_id);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		const struct node *n = v;

		named += n->parent != NULL;
		lookups += n->nlookup;
		files += g_list_length(n->fhs);
		dirs += g_list_length(n->dirfhs);
		aliases += g_slist_length(n->aliases);
	}
	listings = fs->listings.length;
	listing_names = fs->listing_names;
	listed_names = fs->listed_total;
	/* Notes past their time are dead, dropped only at the next rename or report. */
	own_moves_prune_locked(fs);
	moves = fs->own_moves.length;
	unwatched = fs->unwatched;
	g_mutex_unlock(&fs->lock);
	g_mutex_lock(&fs->lk_lock);
	owners = g_hash_table_size(fs->lk_owners);
	g_mutex_unlock(&fs->lk_lock);
	g_mutex_lock(&fs->wb_lock);
	wb_nodes = g_hash_table_size(fs->wb_nodes);
	g_mutex_unlock(&fs->wb_lock);
	syncs = g_atomic_int_get(&fs->sync_count);
	qt_notice("state: %u nodes (%u named, %u other names, %" G_GUINT64_FORMAT
		  " lookups by the kernel), %u open files, %u open directories, %u listings kept (%zu "
		  "names), %zu names of directories listed, %u directories moved as the host reported; "
		  "%u lock owners, %u files with writes on their way, %u own moves, %d barriers "
		  "waiting; %" G_GUINT64_FORMAT " forgotten directories unwatched so far",
		  nodes, named, aliases, lookups, files, dirs, listings, listing_names, listed_names,
		  (guint)g_atomic_int_get(&fs->moves), owners, wb_nodes, moves, syncs, unwatched);
}

void qtfs_fs_stopping(struct qtfs_fs *fs)
{
	if (!fs)
		return;
	/* The writes answered before the host's reply go first, while calls still go out. */
	wb_wait_all(fs);
	g_atomic_int_set(&fs->watch_stop, 1);
}

void qtfs_fs_stop(struct qtfs_fs *fs)
{
	GThreadPool *pool;
	GList *done;

	if (!fs)
		return;
	g_atomic_int_set(&fs->watch_stop, 1);
	if (fs->notifier) {
		g_async_queue_push_front(fs->invals, &inval_stop);
		g_thread_join(g_steal_pointer(&fs->notifier));
	}
	/* The barriers still waiting: the notifier that would move them on is gone. */
	g_mutex_lock(&fs->sync_lock);
	fs->sync_closed = true;
	for (GList *l = fs->sync_waiters; l; l = l->next) {
		((struct sync_waiter *)l->data)->err = EIO;
		((struct sync_waiter *)l->data)->done = true;
	}
	done = g_steal_pointer(&fs->sync_waiters);
	g_atomic_int_set(&fs->sync_count, 0);
	g_mutex_unlock(&fs->sync_lock);
	sync_answer_all(done);
	g_mutex_lock(&fs->slow_lock);
	pool = g_steal_pointer(&fs->slow);
	g_mutex_unlock(&fs->slow_lock);
	if (pool)
		g_thread_pool_free(pool, FALSE, TRUE);
}

void qtfs_fs_free(struct qtfs_fs *fs)
{
	GHashTableIter it;
	gpointer v;

	if (!fs)
		return;
	qtfs_fs_stop(fs);
	if (fs->invals) {
		struct inval *left;

		while ((left = g_async_queue_try_pop(fs->invals)))
			if (left != &inval_stop)
				g_free(left);
		g_async_queue_unref(fs->invals);
	}
	g_mutex_clear(&fs->slow_lock);
	g_hash_table_iter_init(&it, fs->by_id);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct node *n = v;

		/* Files still open when the session ended: the kernel's references. */
		g_list_free_full(g_steal_pointer(&n->fhs), (GDestroyNotify)fh_unref);
		g_list_free_full(g_steal_pointer(&n->dirfhs), (GDestroyNotify)fh_unref);
		node_destroy(n);
	}
	own_moves_clear_locked(fs);
	if (fs->unwatch_keys)
		g_array_free(fs->unwatch_keys, TRUE);
	g_hash_table_destroy(fs->by_id);
	g_hash_table_destroy(fs->by_key);
	g_hash_table_destroy(fs->by_name);
	g_hash_table_destroy(fs->lk_owners);
	g_mutex_clear(&fs->lk_lock);
	g_cond_clear(&fs->lk_cond);
	g_hash_table_destroy(fs->relay_closing);
	g_mutex_clear(&fs->relay_lock);
	g_cond_clear(&fs->relay_cond);
	g_hash_table_destroy(fs->wb_nodes);
	g_mutex_clear(&fs->wb_lock);
	g_cond_clear(&fs->wb_cond);
	g_mutex_clear(&fs->lock);
	g_mutex_clear(&fs->sync_lock);
	g_free(fs->local_proc);
	g_strfreev(fs->local_comms);
	g_strfreev(fs->relay);
	g_free(fs);
}
