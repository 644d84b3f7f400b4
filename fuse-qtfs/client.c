// SPDX-License-Identifier: Apache-2.0
/*
 * The connection pool of fuse-qtfs (see client.h).
 *
 * Each slot is one connection to the server and moves through:
 *
 *   DOWN --dialer thread--> DIALING --transport open--> HANDSHAKE --auth ok, MOUNT sent-->
 *   MOUNTING --MOUNT ok--> READY --connection lost--> DOWN (after a backoff)
 *
 * Any failure on the way also leads back to DOWN; the dialer waits
 * 100 ms, 200 ms, ... up to 5 s between attempts and keeps trying until
 * the client is freed.  slot->gen counts the times the slot became READY:
 * a handle opened on generation g is valid only while the slot is READY at
 * generation g.
 *
 * Invariants: slot->conn is non-NULL exactly in HANDSHAKE, MOUNTING and
 * READY; callers only ever see READY slots.  cl->lock protects every slot's
 * state, gen and conn and the pool-wide error message; the loop thread
 * writes them, FUSE threads and dialers read them and wait on cl->cond.
 */
#include "config.h"

#include "client.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "log.h"
#include "loop.h"

enum slot_state {
	SLOT_DOWN,
	SLOT_DIALING,
	SLOT_HANDSHAKE,
	SLOT_MOUNTING,
	SLOT_READY,
};

struct slot {
	struct qtfs_client *cl;
	unsigned index;
	enum slot_state state; /* protected by cl->lock */
	uint64_t gen;	       /* protected by cl->lock */
	struct qt_conn *conn;  /* protected by cl->lock; a reference */
	uint64_t instance;     /* the server's, from this connection's MOUNT (0: unknown); cl->lock */
	GThread *dialer;
	unsigned failures; /* consecutive; dialer only */
};

struct qtfs_client {
	struct qtfs_client_opts o;
	char *remote_path;
	struct qt_loop *loop;
	GThread *loop_thread;
	struct slot *slots;
	unsigned n_slots;
	unsigned next; /* round robin; protected by lock */

	GMutex lock;
	GCond cond;
	bool stopping;
	bool shut; /* qtfs_client_shutdown() ran; main thread only */
	unsigned any_waiting; /* loop thread: async calls waiting for a ready connection */
	gint64 stop_by;	      /* monotonic us: stop_loop() waits no longer for closes */
	/* The first MOUNT's outcome, for qtfs_client_new. */
	bool first_done;
	int first_err;
	char *first_msg;
	struct qtfs_attr root;
	uint32_t mflags;
	uint64_t id; /* QTFS_MNT_WATCH: one for all the connections */
	uint64_t instance; /* the server's, from the last MOUNT (0: unknown); lock */
};

uint64_t qtfs_client_timeout_ms(const struct qtfs_client *cl)
{
	return cl->o.timeout_ms;
}

uint64_t qtfs_client_instance(struct qtfs_client *cl)
{
	uint64_t v;

	g_mutex_lock(&cl->lock);
	v = cl->instance;
	g_mutex_unlock(&cl->lock);
	return v;
}

/* An asynchronous call waiting for a ready connection looks again this often. */
#define RETRY_MS 20

/* ---- loop thread: connection callbacks ----------------------------------- */

static void first_result(struct qtfs_client *cl, int err, const char *msg)
{
	/* Called with cl->lock held. */
	if (cl->first_done)
		return;
	cl->first_done = true;
	cl->first_err = err;
	cl->first_msg = g_strdup(msg);
	g_cond_broadcast(&cl->cond);
}

static void mount_done(struct qt_conn *c, int err, struct qt_msg *reply, void *arg)
{
	struct slot *s = arg;
	struct qtfs_client *cl = s->cl;
	struct qtfs_attr root;
	uint64_t instance = 0;
	uint32_t flags = 0;
	struct qt_rd r;

	if (err == 0) {
		qt_rd_init_msg(&r, reply);
		qt_rd_u32(&r, &flags);
		err = qtfs_rd_attr(&r, &root);
		if (err == 0 && (flags & QTFS_MF_INSTANCE))
			err = qt_rd_u64(&r, &instance);
		if (err == 0)
			err = qt_rd_end(&r);
		qt_msg_free(reply);
	}
	g_mutex_lock(&cl->lock);
	if (s->conn != c) {
		g_mutex_unlock(&cl->lock);
		return;
	}
	if (err < 0) {
		g_autofree char *m = NULL;

		if (err == -EPERM)
			m = g_strdup_printf("%s is not inside an export of the server", cl->remote_path);
		else if (err == -EACCES)
			m = g_strdup_printf("the server refused access to %s (this client's unix uid, "
					    "or the whitelist; its log says which)",
					    cl->remote_path);
		else
			m = g_strdup_printf("cannot mount %s: %s", cl->remote_path, g_strerror(-err));
		first_result(cl, err, m);
		g_mutex_unlock(&cl->lock);
		qt_notice("%s", m);
		qt_conn_close(c, err, "MOUNT refused");
		return;
	}
	s->state = SLOT_READY;
	s->gen++;
	s->failures = 0;
	if (cl->instance && cl->instance != instance)
		qt_info("connection %u: the server was restarted (another instance)", s->index);
	cl->instance = instance;
	s->instance = instance;
	if (!cl->first_done) {
		cl->root = root;
		cl->mflags = flags;
	}
	first_result(cl, 0, NULL);
	g_cond_broadcast(&cl->cond);
	g_mutex_unlock(&cl->lock);
	qt_info("connection %u ready (generation %" G_GUINT64_FORMAT ")", s->index, s->gen);
}

static void conn_ready(struct qt_conn *c, void *user)
{
	struct slot *s = user;
	struct qtfs_client *cl = s->cl;
	struct qt_msg *m = qt_msg_new(QTFS_MOUNT, 0, 0);
	const uint32_t watch =
		QTFS_MNT_WATCH | QTFS_MNT_WATCH_MOVES | QTFS_MNT_LIST_DIRS | QTFS_MNT_UNWATCH;
	int err;

	qt_msg_put_str(m, cl->remote_path);
	qt_msg_put_u32(m, QTFS_MNT_DIR_ATTRS | QTFS_MNT_PIPE_READS | QTFS_MNT_XATTR_FH | QTFS_MNT_UMASK |
			      QTFS_MNT_WRITE_MODE | QTFS_MNT_INSTANCE | (cl->o.watch ? watch : 0));
	if (cl->o.watch)
		qt_msg_put_u64(m, cl->id);
	g_mutex_lock(&cl->lock);
	s->state = SLOT_MOUNTING;
	g_mutex_unlock(&cl->lock);
	err = qt_conn_call(c, m, cl->o.timeout_ms, mount_done, s);
	if (err < 0)
		qt_conn_close(c, err, "cannot send MOUNT");
}

static void conn_request(struct qt_conn *c, struct qt_msg *m, void *user)
{
	/* The server does not call us (yet): refuse politely. */
	if (qt_msg_id(m))
		qt_conn_reply(c, qt_msg_new_error(m, ENOSYS));
	qt_msg_free(m);
}

static void conn_closed(struct qt_conn *c, int err, const char *reason, void *user)
{
	struct slot *s = user;
	struct qtfs_client *cl = s->cl;
	bool was_ready;

	g_mutex_lock(&cl->lock);
	was_ready = s->state == SLOT_READY;
	if (s->conn == c) {
		s->conn = NULL;
		s->state = SLOT_DOWN;
		qt_conn_unref(c);
	}
	if (!cl->first_done && err) {
		g_autofree char *m = g_strdup_printf("connection refused by the server: %s", reason);

		first_result(cl, err == -ECONNREFUSED ? -EACCES : err, m);
	}
	g_cond_broadcast(&cl->cond);
	g_mutex_unlock(&cl->lock);
	if (was_ready && !cl->stopping)
		qt_warn("connection %u lost: %s; reconnecting", s->index, reason ? reason : "closed");
	else
		qt_debug("connection %u closed: %s", s->index, reason ? reason : "");
}

static const struct qt_conn_ops client_conn_ops = {
	.ready = conn_ready,
	.request = conn_request,
	.closed = conn_closed,
};

/* ---- dialers ------------------------------------------------------------- */

struct adopt {
	struct slot *s;
	int rfd, wfd;
};

static void close_pair(int rfd, int wfd)
{
	close(rfd);
	if (wfd != rfd)
		close(wfd);
}

/* Loop thread: turn freshly opened transport fds into the slot's connection. */
static void adopt_fds(void *arg)
{
	struct adopt *a = arg;
	struct slot *s = a->s;
	struct qtfs_client *cl = s->cl;
	int rfd = a->rfd, wfd = a->wfd;
	struct qt_conn_opts co = {
		.role = QT_CONN_CLIENT,
		.psk = cl->o.psk,
		.name = "fuse-qtfs",
		.handshake_ms = (unsigned)MIN(cl->o.timeout_ms, 60000),
		.peer_timeout_s = cl->o.peer_timeout_s,
		/*
		 * The server serves a connection's calls side by side, so their order
		 * on the wire is not relied on (fs.c, "Write-behind"): a lookup need
		 * not wait behind megabytes of writes queued before it.
		 */
		.small_first = true,
	};
	struct qt_conn *c = NULL;
	int err;

	g_free(a);
	g_mutex_lock(&cl->lock);
	if (cl->stopping) {
		s->state = SLOT_DOWN;
		g_cond_broadcast(&cl->cond);
		g_mutex_unlock(&cl->lock);
		close_pair(rfd, wfd);
		return;
	}
	g_mutex_unlock(&cl->lock);
	err = qt_conn_new(cl->loop, rfd, wfd, &co, &client_conn_ops, s, &c);
	g_mutex_lock(&cl->lock);
	if (err < 0) {
		s->state = SLOT_DOWN;
	} else {
		s->conn = qt_conn_ref(c);
		s->state = SLOT_HANDSHAKE;
	}
	g_cond_broadcast(&cl->cond);
	g_mutex_unlock(&cl->lock);
}

static gpointer dialer_main(gpointer data)
{
	struct slot *s = data;
	struct qtfs_client *cl = s->cl;

	g_mutex_lock(&cl->lock);
	while (!cl->stopping) {
		g_autofree char *msg = NULL;
		struct adopt *a;
		int rfd = -1, wfd = -1, err;

		if (s->state != SLOT_DOWN) {
			g_cond_wait(&cl->cond, &cl->lock);
			continue;
		}
		if (s->failures) {
			unsigned shift = MIN(s->failures - 1, 6u);
			gint64 until = g_get_monotonic_time() + (gint64)MIN(100u << shift, 5000u) * 1000;

			while (!cl->stopping && g_cond_wait_until(&cl->cond, &cl->lock, until))
				;
			if (cl->stopping)
				break;
		}
		s->state = SLOT_DIALING;
		s->failures++;
		g_mutex_unlock(&cl->lock);
		err = cl->o.dial(cl->o.dial_arg, &rfd, &wfd, &msg);
		g_mutex_lock(&cl->lock);
		if (err < 0) {
			s->state = SLOT_DOWN;
			first_result(cl, err, msg);
			qt_debug("connection %u: %s", s->index, msg ? msg : g_strerror(-err));
			continue;
		}
		a = g_new(struct adopt, 1);
		*a = (struct adopt){.s = s, .rfd = rfd, .wfd = wfd};
		qt_loop_post(cl->loop, adopt_fds, a);
	}
	g_mutex_unlock(&cl->lock);
	return NULL;
}

static gpointer loop_main(gpointer data)
{
	struct qtfs_client *cl = data;
	int err = qt_loop_run(cl->loop);

	if (err < 0)
		qt_err("event loop failed: %s", g_strerror(-err));
	return NULL;
}

/* ---- public -------------------------------------------------------------- */

int qtfs_client_new(const struct qtfs_client_opts *o, struct qtfs_client **out,
		    struct qtfs_attr *root, uint32_t *mflags, char **msg)
{
	struct qtfs_client *cl = g_new0(struct qtfs_client, 1);
	gint64 until;
	int err;

	cl->o = *o;
	cl->remote_path = g_strdup(o->remote_path);
	cl->o.remote_path = cl->remote_path;
	/* Tells this mount from others of the same host, also after a reconnection. */
	cl->id = (uint64_t)g_random_int() << 32 | g_random_int();
	if (!cl->o.timeout_ms)
		cl->o.timeout_ms = 30000;
	if (!cl->o.connect_timeout_ms)
		cl->o.connect_timeout_ms = cl->o.timeout_ms;
	cl->n_slots = o->conns ? o->conns : 1;
	g_mutex_init(&cl->lock);
	g_cond_init(&cl->cond);
	if ((err = qt_loop_new(QT_LOOP_AUTO, &cl->loop)) < 0) {
		*msg = g_strdup_printf("cannot start the event loop: %s", g_strerror(-err));
		g_mutex_clear(&cl->lock);
		g_cond_clear(&cl->cond);
		g_free(cl->remote_path);
		g_free(cl);
		return err;
	}
	qt_loop_set_poll(cl->loop, o->poll_us);
	qt_info("event loop: %s, polling %u us before it sleeps", qt_loop_backend_name(cl->loop),
		o->poll_us);
	cl->slots = g_new0(struct slot, cl->n_slots);
	cl->loop_thread = g_thread_new("qtfs-loop", loop_main, cl);
	for (unsigned i = 0; i < cl->n_slots; i++) {
		cl->slots[i].cl = cl;
		cl->slots[i].index = i;
		cl->slots[i].dialer = g_thread_new("qtfs-dial", dialer_main, &cl->slots[i]);
	}

	until = g_get_monotonic_time() + (gint64)cl->o.connect_timeout_ms * 1000;
	g_mutex_lock(&cl->lock);
	while (!cl->first_done)
		if (!g_cond_wait_until(&cl->cond, &cl->lock, until))
			break;
	if (!cl->first_done) {
		err = -ETIMEDOUT;
		*msg = g_strdup("no answer from the server within the timeout");
	} else if (cl->first_err < 0) {
		err = cl->first_err;
		*msg = g_strdup(cl->first_msg ? cl->first_msg : g_strerror(-err));
	} else {
		err = 0;
		*root = cl->root;
		*mflags = cl->mflags;
	}
	g_mutex_unlock(&cl->lock);
	if (err < 0) {
		qtfs_client_free(cl);
		return err;
	}
	*out = cl;
	return 0;
}

static void close_all(void *arg)
{
	struct qtfs_client *cl = arg;

	g_mutex_lock(&cl->lock);
	for (unsigned i = 0; i < cl->n_slots; i++) {
		struct qt_conn *c = cl->slots[i].conn;

		if (c) {
			g_mutex_unlock(&cl->lock);
			qt_conn_close(c, 0, "unmounting");
			g_mutex_lock(&cl->lock);
		}
	}
	g_mutex_unlock(&cl->lock);
}

/*
 * Stop once no asynchronous call waits for a connection (with
 * cl->stopping set, each one ends, and answers its caller, at its next
 * look, within RETRY_MS) and the connections close_all() closed are
 * closed (conn_closed() has run: a connection holds itself until then),
 * or at cl->stop_by.
 */
static void stop_loop(void *arg)
{
	struct qtfs_client *cl = arg;
	bool open = false;

	g_mutex_lock(&cl->lock);
	for (unsigned i = 0; i < cl->n_slots; i++)
		open |= cl->slots[i].conn != NULL;
	g_mutex_unlock(&cl->lock);
	if (cl->any_waiting || (open && g_get_monotonic_time() < cl->stop_by))
		qt_timer_add(cl->loop, RETRY_MS, stop_loop, cl);
	else
		qt_loop_stop(cl->loop);
}

void qtfs_client_shutdown(struct qtfs_client *cl)
{
	if (!cl || cl->shut)
		return;
	cl->shut = true;
	g_mutex_lock(&cl->lock);
	cl->stopping = true;
	g_cond_broadcast(&cl->cond);
	g_mutex_unlock(&cl->lock);
	for (unsigned i = 0; i < cl->n_slots; i++)
		if (cl->slots[i].dialer)
			g_thread_join(cl->slots[i].dialer);
	qt_loop_post(cl->loop, close_all, cl);
	/* Give the closes a moment to flush. */
	g_usleep(20000);
}

void qtfs_client_free(struct qtfs_client *cl)
{
	if (!cl)
		return;
	qtfs_client_shutdown(cl);
	/* A connection's close waits at most LINGER_MS (lib/conn.c) for its output to go. */
	cl->stop_by = g_get_monotonic_time() + 2 * G_USEC_PER_SEC;
	qt_loop_post(cl->loop, stop_loop, cl);
	g_thread_join(cl->loop_thread);
	for (unsigned i = 0; i < cl->n_slots; i++)
		if (cl->slots[i].conn)
			qt_conn_unref(cl->slots[i].conn);
	qt_loop_free(cl->loop);
	g_free(cl->slots);
	g_free(cl->first_msg);
	g_free(cl->remote_path);
	g_mutex_clear(&cl->lock);
	g_cond_clear(&cl->cond);
	g_free(cl);
}

static bool conn_lost(int err)
{
	return err == -ECONNABORTED || err == -ECONNRESET || err == -ENOTCONN || err == -EPIPE;
}

/*
 * Did a call on @c (NULL: none was to be had) fail because the connection
 * went?  The connection fails its calls with the errnos of conn_lost(),
 * but the server answers with some of them too: a write into a relayed
 * FIFO whose reader has gone is EPIPE, and must reach the writer as such,
 * not be taken for a lost connection and sent again after a reopen (which
 * would wait for the next reader).  A connection marks itself closing
 * before it fails its calls, so one still ready answered; the caller
 * reads that after the call's end, which the loop thread published.
 */
static bool call_lost(struct qt_conn *c, int err)
{
	return conn_lost(err) && !(c && qt_conn_is_ready(c));
}

/*
 * One connection: slot @index at generation @gen.  A call lost on it is
 * retried on another one: its slot looks ready until the loop thread has
 * seen it close.
 */
struct slot_id {
	unsigned index;
	uint64_t gen;
};

#define NO_SLOT ((struct slot_id){.index = UINT_MAX})

static struct slot_id slot_id_of(const struct slot *s)
{
	return (struct slot_id){.index = s->index, .gen = s->gen};
}

/* With cl->lock held: the next READY slot in turn but @skip, or NULL. */
static struct slot *next_ready_but(struct qtfs_client *cl, struct slot_id skip)
{
	for (unsigned k = 0; k < cl->n_slots; k++) {
		struct slot *s = &cl->slots[(cl->next + k) % cl->n_slots];

		if (s->state == SLOT_READY && !(s->index == skip.index && s->gen == skip.gen)) {
			cl->next = (s->index + 1) % cl->n_slots;
			return s;
		}
	}
	return NULL;
}

static struct slot *next_ready(struct qtfs_client *cl)
{
	return next_ready_but(cl, NO_SLOT);
}

/* With cl->lock held: a READY slot but @skip, waiting until @until (monotonic us). */
static struct slot *wait_ready_but(struct qtfs_client *cl, gint64 until, struct slot_id skip)
{
	struct slot *s;

	while (!(s = next_ready_but(cl, skip)))
		if (cl->stopping || !g_cond_wait_until(&cl->cond, &cl->lock, until))
			return NULL;
	return s;
}

static struct slot *wait_any_ready(struct qtfs_client *cl, gint64 until)
{
	return wait_ready_but(cl, until, NO_SLOT);
}

/* What a call lost with its connection ends with when it is not sent again. */
static int lost_err(enum qtfs_retry retry)
{
	return retry == QTFS_ASK ? -QTFS_ELOST : -EIO;
}

int qtfs_client_call(struct qtfs_client *cl, struct qt_msg *req, enum qtfs_retry retry,
		     struct qt_msg **reply)
{
	return qtfs_client_call_until(cl, req, retry,
				      g_get_monotonic_time() + (gint64)cl->o.timeout_ms * 1000, reply);
}

/* qtfs_client_call_until(), and into *@sent_to (if not NULL) the instance of the server it went to. */
static int call_until(struct qtfs_client *cl, struct qt_msg *req, enum qtfs_retry retry, gint64 until,
		      struct qt_msg **reply, uint64_t *sent_to)
{
	struct slot_id last = NO_SLOT; /* a retry goes elsewhere */
	struct qt_msg *spare;
	int err;

	/* The loop thread would wait for itself. */
	g_assert(!qt_loop_in_thread(cl->loop));
	spare = retry == QTFS_REPEAT ? qt_msg_dup(req) : NULL;

	for (;;) {
		struct qt_conn *c;
		struct slot *s;
		gint64 left;
		bool lost;

		g_mutex_lock(&cl->lock);
		s = wait_ready_but(cl, until, last);
		c = s ? qt_conn_ref(s->conn) : NULL;
		if (s)
			last = slot_id_of(s);
		if (s && sent_to)
			*sent_to = s->instance;
		g_mutex_unlock(&cl->lock);
		if (!c) {
			qt_msg_free(req);
			qt_msg_free(spare);
			return -ETIMEDOUT;
		}
		left = (until - g_get_monotonic_time()) / 1000;
		err = qt_conn_call_sync(c, req, (uint64_t)MAX(left, 1), reply);
		lost = call_lost(c, err);
		qt_conn_unref(c);
		if (!lost)
			break;
		if (!spare || g_get_monotonic_time() >= until) {
			err = lost_err(retry);
			break;
		}
		req = spare;
		spare = qt_msg_dup(req);
	}
	qt_msg_free(spare);
	return err;
}

int qtfs_client_call_until(struct qtfs_client *cl, struct qt_msg *req, enum qtfs_retry retry,
			   gint64 until, struct qt_msg **reply)
{
	return call_until(cl, req, retry, until, reply, NULL);
}

int qtfs_client_call_change(struct qtfs_client *cl, struct qt_msg *req, gint64 until,
			    struct qt_msg **reply, uint64_t *sent_to)
{
	*sent_to = 0;
	return call_until(cl, req, QTFS_ASK, until, reply, sent_to);
}

uint64_t qtfs_client_slot_instance(struct qtfs_client *cl, unsigned slot, uint64_t gen)
{
	struct slot *s = &cl->slots[slot % cl->n_slots];
	uint64_t v = 0;

	g_mutex_lock(&cl->lock);
	if (s->state == SLOT_READY && s->gen == gen)
		v = s->instance;
	g_mutex_unlock(&cl->lock);
	return v;
}

int qtfs_client_pick(struct qtfs_client *cl, unsigned *slot, uint64_t *gen)
{
	gint64 until = g_get_monotonic_time() + (gint64)cl->o.timeout_ms * 1000;
	bool loop = qt_loop_in_thread(cl->loop);
	struct slot *s;

	g_mutex_lock(&cl->lock);
	/* The loop thread does not wait: it is the one that readies connections. */
	s = loop ? next_ready(cl) : wait_any_ready(cl, until);
	if (s) {
		*slot = s->index;
		*gen = s->gen;
	}
	g_mutex_unlock(&cl->lock);
	return s ? 0 : loop ? -EAGAIN : -ETIMEDOUT;
}

int qtfs_client_pick_other(struct qtfs_client *cl, gint64 until, unsigned *slot, uint64_t *gen)
{
	struct slot_id skip = {.index = *slot, .gen = *gen};
	struct slot *s;

	g_assert(!qt_loop_in_thread(cl->loop));
	g_mutex_lock(&cl->lock);
	s = wait_ready_but(cl, until, skip);
	if (s) {
		*slot = s->index;
		*gen = s->gen;
	}
	g_mutex_unlock(&cl->lock);
	return s ? 0 : -ETIMEDOUT;
}

struct qt_loop *qtfs_client_loop(const struct qtfs_client *cl)
{
	return cl->loop;
}

static __thread struct qt_call_ctl *tl_interrupt;

void qtfs_client_set_interrupt(struct qt_call_ctl *ctl)
{
	tl_interrupt = ctl;
}

int qtfs_client_call_on(struct qtfs_client *cl, unsigned slot, uint64_t gen, struct qt_msg *req,
			uint64_t timeout_ms, struct qt_msg **reply)
{
	struct qt_call_ctl *ctl = timeout_ms == QTFS_NO_DEADLINE ? tl_interrupt : NULL;
	struct slot *s = &cl->slots[slot % cl->n_slots];
	struct qt_conn *c = NULL;
	bool lost;
	int err;

	g_mutex_lock(&cl->lock);
	if (s->state == SLOT_READY && s->gen == gen)
		c = qt_conn_ref(s->conn);
	g_mutex_unlock(&cl->lock);
	if (!c) {
		qt_msg_free(req);
		return -ESTALE;
	}
	if (timeout_ms == 0)
		timeout_ms = cl->o.timeout_ms;
	else if (timeout_ms == QTFS_NO_DEADLINE)
		timeout_ms = 0;
	err = qt_conn_call_sync_ctl(c, req, timeout_ms, ctl, reply);
	lost = call_lost(c, err);
	qt_conn_unref(c);
	return lost ? -ESTALE : err;
}

struct async_call {
	struct qtfs_client *cl;
	unsigned slot;
	uint64_t gen;
	struct qt_msg *req;
	uint64_t timeout_ms;
	bool lazy; /* nobody waits for it: see qtfs_client_call_async() */
	qtfs_done_fn done;
	void *arg;
};

static void async_done(struct qt_conn *c, int err, struct qt_msg *reply, void *arg)
{
	struct async_call *a = arg;

	/* As for qtfs_client_call_on(): the handle's connection is gone. */
	if (call_lost(c, err))
		err = -ESTALE;

	if (a->done)
		a->done(a->arg, err, reply);
	else
		qt_msg_free(reply);
	g_free(a);
}

static void async_start(void *arg)
{
	struct async_call *a = arg;
	struct qtfs_client *cl = a->cl;
	struct slot *s = &cl->slots[a->slot % cl->n_slots];
	struct qt_conn *c = NULL;
	int err;

	g_mutex_lock(&cl->lock);
	if (s->state == SLOT_READY && s->gen == a->gen)
		c = s->conn;
	g_mutex_unlock(&cl->lock);
	if (!c) {
		qt_msg_free(a->req);
		async_done(NULL, -ESTALE, NULL, a);
		return;
	}
	err = a->lazy ? qt_conn_call_lazy(c, g_steal_pointer(&a->req), a->timeout_ms, async_done, a)
		      : qt_conn_call(c, g_steal_pointer(&a->req), a->timeout_ms, async_done, a);
	if (err < 0)
		async_done(c, err, NULL, a);
}

static void call_on_slot(struct qtfs_client *cl, unsigned slot, uint64_t gen, struct qt_msg *req,
			 uint64_t timeout_ms, bool lazy, qtfs_done_fn done, void *arg)
{
	struct async_call *a = g_new0(struct async_call, 1);

	*a = (struct async_call){
		.cl = cl, .slot = slot, .gen = gen, .req = req, .timeout_ms = timeout_ms,
		.lazy = lazy, .done = done, .arg = arg,
	};
	if (qt_loop_in_thread(cl->loop))
		async_start(a);
	else
		qt_loop_post(cl->loop, async_start, a);
}

void qtfs_client_call_cb(struct qtfs_client *cl, unsigned slot, uint64_t gen, struct qt_msg *req,
			 uint64_t timeout_ms, qtfs_done_fn done, void *arg)
{
	call_on_slot(cl, slot, gen, req, timeout_ms, false, done, arg);
}

void qtfs_client_call_async(struct qtfs_client *cl, unsigned slot, uint64_t gen, struct qt_msg *req)
{
	call_on_slot(cl, slot, gen, req, cl->o.timeout_ms, true, NULL, NULL);
}

/*
 * An asynchronous qtfs_client_call(): the same choice of connection, retry
 * of idempotent calls on another connection and deadline, but driven by
 * the loop thread, which runs @done.  While no connection is ready it
 * looks again every RETRY_MS until the deadline (a synchronous caller
 * waits on cl->cond instead; the loop thread must not block).
 */
struct any_call {
	struct qtfs_client *cl;
	struct qt_msg *req;
	struct qt_msg *spare; /* a copy to repeat an idempotent call */
	enum qtfs_retry retry;
	gint64 until;	      /* monotonic us */
	bool waiting;	      /* counted in cl->any_waiting */
	struct slot_id on;   /* the slot it went out on */
	struct slot_id lost; /* the slot it was just lost on (a retry skips it once) */
	uint64_t *sent_to;   /* if not NULL: the instance of the server it went out to */
	qtfs_done_fn done;
	void *arg;
};

static void any_finish(struct any_call *a, int err, struct qt_msg *reply)
{
	qt_msg_free(a->req);
	qt_msg_free(a->spare);
	a->done(a->arg, err, reply);
	g_free(a);
}

static void any_done(struct qt_conn *c, int err, struct qt_msg *reply, void *arg);

static void any_start(void *arg)
{
	struct any_call *a = arg;
	struct qtfs_client *cl = a->cl;
	struct qt_conn *c = NULL;
	gint64 now = g_get_monotonic_time();
	struct slot *s = NULL;
	bool stopping;
	int err;

	if (a->waiting) {
		a->waiting = false;
		cl->any_waiting--;
	}

	g_mutex_lock(&cl->lock);
	stopping = cl->stopping;
	if (!stopping && (s = next_ready_but(cl, a->lost))) {
		c = s->conn;
		a->on = slot_id_of(s);
		if (a->sent_to)
			*a->sent_to = s->instance;
	}
	g_mutex_unlock(&cl->lock);
	/* If it looks again, it is after RETRY_MS: the slots know by now. */
	a->lost = NO_SLOT;
	if (!c) {
		if (now >= a->until || stopping) {
			any_finish(a, -ETIMEDOUT, NULL);
		} else {
			a->waiting = true;
			cl->any_waiting++;
			qt_timer_add(cl->loop, RETRY_MS, any_start, a);
		}
		return;
	}
	err = qt_conn_call(c, g_steal_pointer(&a->req), (uint64_t)MAX((a->until - now) / 1000, 1),
			   any_done, a);
	if (err < 0)
		any_done(c, err, NULL, a);
}

static void any_done(struct qt_conn *c, int err, struct qt_msg *reply, void *arg)
{
	struct any_call *a = arg;

	if (call_lost(c, err)) {
		if (a->spare && g_get_monotonic_time() < a->until) {
			a->req = a->spare;
			a->spare = qt_msg_dup(a->req);
			a->lost = a->on;
			any_start(a);
			return;
		}
		err = lost_err(a->retry);
	}
	any_finish(a, err, reply);
}

void qtfs_client_call_async_any(struct qtfs_client *cl, struct qt_msg *req, enum qtfs_retry retry,
				qtfs_done_fn done, void *arg)
{
	qtfs_client_call_async_held(cl, req, retry, 0, done, arg);
}

static void call_any(struct qtfs_client *cl, struct qt_msg *req, enum qtfs_retry retry, uint64_t hold_ms,
		     uint64_t *sent_to, qtfs_done_fn done, void *arg)
{
	struct any_call *a = g_new0(struct any_call, 1);

	*a = (struct any_call){
		.cl = cl, .req = req, .spare = retry == QTFS_REPEAT ? qt_msg_dup(req) : NULL, .retry = retry,
		.until = g_get_monotonic_time() + (gint64)(cl->o.timeout_ms + hold_ms) * 1000,
		.lost = NO_SLOT, .sent_to = sent_to, .done = done, .arg = arg,
	};
	if (qt_loop_in_thread(cl->loop))
		any_start(a);
	else
		qt_loop_post(cl->loop, any_start, a);
}

void qtfs_client_call_async_held(struct qtfs_client *cl, struct qt_msg *req, enum qtfs_retry retry,
				 uint64_t hold_ms, qtfs_done_fn done, void *arg)
{
	call_any(cl, req, retry, hold_ms, NULL, done, arg);
}

void qtfs_client_call_async_change(struct qtfs_client *cl, struct qt_msg *req, uint64_t *sent_to,
				   qtfs_done_fn done, void *arg)
{
	*sent_to = 0;
	call_any(cl, req, QTFS_ASK, 0, sent_to, done, arg);
}
