// SPDX-License-Identifier: Apache-2.0
/*
 * Framed connections: handshake, call/reply matching, flow control and
 * orderly close, on top of a loop stream (see conn.h for the states and
 * invariants).  Also the accept side: qt_server.
 */
#include "config.h"

#include <errno.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "conn.h"
#include "log.h"

#define LINGER_MS 1000
#define HANDSHAKE_MAX_PAYLOAD 1024
/* What a backlogged message costs beyond its frame: the struct and the queue link, about. */
#define BACKLOG_MSG_COST 256

enum call_lane {
	LANE_SMALL, /* small_first: a small frame; needs no room in the queued bytes */
	LANE_CALL,
	LANE_LONG,
	LANES,
};

enum conn_state {
	CONN_HANDSHAKE,
	CONN_READY,
	CONN_CLOSING,
	CONN_CLOSED,
};

struct call {
	struct qt_conn *conn;
	uint64_t id;
	uint64_t timeout_ms;
	qt_reply_fn cb;
	void *arg;
	struct qt_timer *timer;
	struct qt_msg *req; /* while waiting for a slot; NULL once sent */
	GList link;	    /* in conn->waitq[lane] while waiting */
	unsigned lane;	    /* call_lane() */
	bool lazy;	    /* sent with qt_stream_send_lazy() */
	bool reply_tail;    /* its reply may come into a pipe (reply_tail_ok) */
};

/* A reply whose bytes go into a pipe ("Replies into pipes" in conn.h). */
struct sink {
	bool active;
	uint8_t head[QT_WIRE_HDR_SIZE + 4]; /* the frame's header, then the u32 length */
	size_t head_have;
	size_t data_len;      /* the bytes after the u32 */
	size_t data_left;     /* of those, not yet in the pipe (or in buf) */
	struct qt_pipe *pipe; /* NULL once copying */
	uint8_t *buf;	      /* copying (the pipe filled): the whole frame */
};

struct qt_conn {
	gint refs; /* atomic */
	struct qt_loop *loop;
	struct qt_stream *stream;
	struct qt_server *server; /* when accepted by one */
	enum conn_state state;
	const struct qt_conn_ops *ops;
	void *user;
	char *peer;

	struct qt_conn_opts o;
	struct qt_frame_asm fasm;
	struct sink sink;
	unsigned tail_calls; /* calls on the wire whose reply may come into a pipe */
	struct qt_auth *auth; /* during HANDSHAKE */
	char *peer_name;
	struct qt_timer *handshake_timer;
	struct qt_timer *linger_timer;
	/*
	 * Client, PSK mode: RESPONSE is sent, so the server has proven itself
	 * and our calls may follow at once; the server reads them only after
	 * checking RESPONSE (docs/protocol.md, "Handshake").  Saves the wait
	 * for AUTH_OK, half a round trip, on every short-lived connection.
	 */
	bool early_calls;

	/* our calls */
	uint64_t next_id;
	GHashTable *pending; /* id -> struct call*, on the wire */
	unsigned pending_long; /* of those, calls without a deadline (call_is_long) */
	/*
	 * struct call*, not yet sent, each in the order made (call_lane()):
	 * [LANE_CALL] those with a deadline, [LANE_LONG] those without
	 * (call_is_long), [LANE_SMALL] small ones with a deadline when
	 * small_first.  Apart, so that one kind waiting for room does not
	 * hold the other.
	 */
	GQueue waitq[LANES];

	/* the peer's requests */
	GHashTable *serving; /* ids being served */
	GHashTable *parked;  /* those of them parked (qt_conn_park): keys shared with serving */
	GQueue backlog;	     /* struct qt_msg*, parsed but not yet dispatched */
	size_t backlog_bytes; /* their size, with BACKLOG_MSG_COST each */
	bool draining;
	unsigned in_request; /* inside ops->request */

	int close_err;
	char *close_reason;
	unsigned peer_timeout_s; /* as set on the socket; 0: none */
};

static void conn_update_reading(struct qt_conn *c);
static void pending_remove(struct qt_conn *c, struct call *k);
static void conn_issue_waiting(struct qt_conn *c);
static void server_conn_closed(struct qt_server *srv, struct qt_conn *c);
static void sink_clear(struct qt_conn *c);

/* ---- lifetime ---------------------------------------------------------- */

struct qt_conn *qt_conn_ref(struct qt_conn *c)
{
	g_atomic_int_inc(&c->refs);
	return c;
}

static void conn_free(struct qt_conn *c)
{
	struct qt_msg *m;

	qt_frame_asm_clear(&c->fasm);
	sink_clear(c);
	qt_auth_free(c->auth);
	g_hash_table_destroy(c->pending);
	g_hash_table_destroy(c->parked);
	g_hash_table_destroy(c->serving);
	while ((m = g_queue_pop_head(&c->backlog)))
		qt_msg_free(m);
	g_free(c->peer);
	g_free(c->peer_name);
	g_free(c->close_reason);
	g_free(c);
}

void qt_conn_unref(struct qt_conn *c)
{
	if (c && g_atomic_int_dec_and_test(&c->refs))
		conn_free(c);
}

bool qt_conn_is_ready(const struct qt_conn *c) { return c->state == CONN_READY; }
const char *qt_conn_peer(const struct qt_conn *c) { return c->peer; }
const char *qt_conn_peer_name(const struct qt_conn *c) { return c->peer_name ? c->peer_name : ""; }
int qt_conn_fd(const struct qt_conn *c) { return c->stream ? qt_stream_fd(c->stream) : -1; }
void *qt_conn_user(const struct qt_conn *c) { return c->user; }
void qt_conn_set_user(struct qt_conn *c, void *user) { c->user = user; }
unsigned qt_conn_calls_inflight(const struct qt_conn *c) { return g_hash_table_size(c->pending); }
unsigned qt_conn_requests_inflight(const struct qt_conn *c) { return g_hash_table_size(c->serving); }
size_t qt_conn_queued(const struct qt_conn *c) { return c->stream ? qt_stream_queued(c->stream) : 0; }

bool qt_conn_reading(const struct qt_conn *c)
{
	return c->stream && qt_stream_reading(c->stream);
}

/* ---- calls ------------------------------------------------------------- */

static void call_finish(struct call *k, int err, struct qt_msg *reply)
{
	qt_timer_cancel(k->timer);
	k->timer = NULL;
	qt_msg_free(k->req);
	k->cb(k->conn, err, reply, k->arg);
	g_free(k);
}

/*
 * A call without a deadline may wait without end (a FIFO, a stream, a
 * held command): the peer parks such requests (qt_conn_park), so they
 * count against max_parked, not max_inflight, and many of them waiting
 * leave room for the others.
 */
static bool call_is_long(const struct call *k)
{
	return k->timeout_ms == 0;
}

/*
 * Which waiting queue @k goes in.  With small_first, a small call with a
 * deadline needs no room in the bytes queued on the stream, only a place
 * among the calls on the wire: it does not wait behind large calls held
 * back by the bytes before them (max_inflight of them at most, each under
 * QT_STREAM_BULK, can be queued beyond max_queued).
 */
static unsigned call_lane(const struct qt_conn *c, uint64_t timeout_ms, const struct qt_msg *req)
{
	if (timeout_ms == 0)
		return LANE_LONG;
	if (c->o.small_first && !qt_frame_is_bulk(req))
		return LANE_SMALL;
	return LANE_CALL;
}

static void call_timeout(void *arg)
{
	struct call *k = arg;
	struct qt_conn *c = k->conn;

	k->timer = NULL;
	if (k->req) {
		g_queue_unlink(&c->waitq[k->lane], &k->link);
	} else {
		/* A late reply for this id is dropped when it arrives. */
		pending_remove(c, k);
	}
	call_finish(k, -ETIMEDOUT, NULL);
	conn_issue_waiting(c);
}

static bool can_send_call(const struct qt_conn *c, unsigned lane)
{
	unsigned n = g_hash_table_size(c->pending);

	return (c->state == CONN_READY || (c->state == CONN_HANDSHAKE && c->early_calls)) &&
	       (lane == LANE_LONG ? c->pending_long < c->o.max_parked
				  : n - c->pending_long < c->o.max_inflight) &&
	       (lane == LANE_SMALL || qt_stream_queued_cost(c->stream) < c->o.max_queued);
}

static void pending_remove(struct qt_conn *c, struct call *k)
{
	if (!g_hash_table_remove(c->pending, &k->id))
		return;
	if (call_is_long(k))
		c->pending_long--;
	if (k->reply_tail)
		c->tail_calls--;
}

static void call_put_on_wire(struct qt_conn *c, struct call *k)
{
	struct qt_msg *req = g_steal_pointer(&k->req);

	g_hash_table_insert(c->pending, &k->id, k);
	if (call_is_long(k))
		c->pending_long++;
	if (k->reply_tail)
		c->tail_calls++;
	if (k->lazy)
		qt_stream_send_lazy(c->stream, req);
	else
		qt_stream_send(c->stream, req);
	/* Its reply must get in even if the peer's requests are held back (conn_update_reading). */
	if (c->state == CONN_READY && !qt_stream_reading(c->stream))
		conn_update_reading(c);
}

static void conn_issue_waiting(struct qt_conn *c)
{
	for (unsigned lane = 0; lane < LANES; lane++)
		while (c->waitq[lane].length && can_send_call(c, lane))
			call_put_on_wire(c, g_queue_pop_head_link(&c->waitq[lane])->data);
}

static int conn_call(struct qt_conn *c, struct qt_msg *req, uint64_t timeout_ms, bool lazy,
		     qt_reply_fn cb, void *arg)
{
	GQueue *waitq;
	struct call *k;
	unsigned lane;

	if (c->state >= CONN_CLOSING) {
		qt_msg_free(req);
		return -ENOTCONN;
	}
	if (++c->next_id == 0)
		c->next_id = 1;
	qt_msg_set_id(req, c->next_id);
	qt_msg_set_flags(req, qt_msg_flags(req) & ~(QT_FLAG_REPLY | QT_FLAG_ERROR | QT_FLAG_MORE));
	if (qt_msg_finish(req) < 0 || qt_msg_payload_len(req) > c->o.max_payload) {
		qt_msg_free(req);
		return -EMSGSIZE;
	}
	lane = call_lane(c, timeout_ms, req);
	waitq = &c->waitq[lane];
	if (waitq->length >= 4u * c->o.max_inflight && !can_send_call(c, lane)) {
		qt_msg_free(req);
		return -EAGAIN;
	}
	k = g_new0(struct call, 1);
	k->conn = c;
	k->id = c->next_id;
	k->timeout_ms = timeout_ms;
	k->cb = cb;
	k->arg = arg;
	k->req = req;
	k->lazy = lazy;
	k->lane = lane;
	k->reply_tail = req->reply_tail_ok;
	if (k->reply_tail)
		qt_stream_bound_reads(c->stream); /* see qt_stream_bound_reads() */
	k->link.data = k;
	if (timeout_ms)
		k->timer = qt_timer_add(c->loop, timeout_ms, call_timeout, k);
	if (can_send_call(c, lane) && !waitq->length)
		call_put_on_wire(c, k);
	else
		g_queue_push_tail_link(waitq, &k->link);
	return 0;
}

int qt_conn_call(struct qt_conn *c, struct qt_msg *req, uint64_t timeout_ms, qt_reply_fn cb,
		 void *arg)
{
	return conn_call(c, req, timeout_ms, false, cb, arg);
}

int qt_conn_call_lazy(struct qt_conn *c, struct qt_msg *req, uint64_t timeout_ms, qt_reply_fn cb,
		      void *arg)
{
	return conn_call(c, req, timeout_ms, true, cb, arg);
}

/* Fail every call, sent or waiting, with @err. */
static void fail_calls(struct qt_conn *c, int err)
{
	GHashTableIter it;
	gpointer v;
	GList *l;
	GPtrArray *all = g_ptr_array_new();

	g_hash_table_iter_init(&it, c->pending);
	while (g_hash_table_iter_next(&it, NULL, &v))
		g_ptr_array_add(all, v);
	g_hash_table_remove_all(c->pending);
	c->pending_long = 0;
	c->tail_calls = 0;
	for (unsigned lane = 0; lane < LANES; lane++)
		while ((l = g_queue_pop_head_link(&c->waitq[lane])))
			g_ptr_array_add(all, l->data);
	for (guint i = 0; i < all->len; i++)
		call_finish(g_ptr_array_index(all, i), err, NULL);
	g_ptr_array_free(all, TRUE);
}

static void handle_reply(struct qt_conn *c, struct qt_msg *m)
{
	uint64_t id = qt_msg_id(m);
	uint8_t flags = qt_msg_flags(m);
	struct call *k = g_hash_table_lookup(c->pending, &id);

	if (!k) {
		qt_debug("conn %s: dropping reply to unknown or expired call %" G_GUINT64_FORMAT, c->peer, id);
		qt_msg_free(m);
		return;
	}
	if (flags & QT_FLAG_ERROR) {
		struct qt_rd r;
		uint32_t e = EIO;

		/*
		 * A userspace errno, or EPROTO: from 512 on the numbers are the
		 * kernel's own (ERESTARTSYS...), which no system call returns,
		 * and which the kernel refuses in a FUSE reply (the request
		 * would then never be answered).
		 */
		qt_rd_init_msg(&r, m);
		if (qt_rd_u32(&r, &e) < 0 || e == 0 || e >= 512)
			e = EPROTO;
		qt_msg_free(m);
		pending_remove(c, k);
		call_finish(k, -(int)e, NULL);
		conn_issue_waiting(c);
		return;
	}
	if (flags & QT_FLAG_MORE) {
		/* A stream of replies: the deadline restarts with each part. */
		if (k->timer) {
			qt_timer_cancel(k->timer);
			k->timer = qt_timer_add(c->loop, k->timeout_ms, call_timeout, k);
		}
		k->cb(c, 0, m, k->arg);
		return;
	}
	pending_remove(c, k);
	call_finish(k, 0, m);
	conn_issue_waiting(c);
}

/* ---- sync calls from other threads ------------------------------------- */

/*
 * A one-shot completion between the loop thread and one waiting thread:
 * a futex word going PENDING -> SLEEPING (the waiter is about to sleep) ->
 * DONE.  Cheaper than a mutex and a condition: the loop thread makes a
 * wake-up system call only when the waiter really sleeps, and the waiter
 * never contends for a lock the loop still holds.  The word may live on
 * the waiter's stack: once it reads DONE it may return, and a late
 * FUTEX_WAKE on the reused address at worst wakes another waiter early,
 * which then re-reads its own word and sleeps again.
 */
enum { DONE_PENDING, DONE_SLEEPING, DONE_DONE };

static void done_wait(int *word)
{
	int v = DONE_PENDING;

	if (!__atomic_compare_exchange_n(word, &v, DONE_SLEEPING, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_ACQUIRE))
		return; /* already DONE */
	while (__atomic_load_n(word, __ATOMIC_ACQUIRE) != DONE_DONE)
		syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, DONE_SLEEPING, NULL, NULL, 0);
}

static void done_set(int *word)
{
	if (__atomic_exchange_n(word, DONE_DONE, __ATOMIC_RELEASE) == DONE_SLEEPING)
		syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

struct sync_call {
	int done; /* done_wait() / done_set() */
	int err;
	bool streamed;
	struct qt_conn *conn;
	struct qt_msg *req;
	struct qt_msg *reply;
	uint64_t timeout_ms;
	struct qt_call_ctl *ctl; /* may be NULL */
};

/*
 * State of an interruptible call.  @requested and @loop are atomics any
 * thread may read; every other field is touched on the loop thread only
 * (qt_call_interrupt() posts there), so the call's id, its completion and
 * the interrupt need no lock between them.  A control may serve several
 * calls in turn (a caller that retries on another connection): an
 * interrupt asked for once applies to each of them.
 */
struct qt_call_ctl {
	gint refs; /* atomic: the caller, and each posted interrupt */
	uint16_t type;
	gint requested;	      /* atomic: qt_call_interrupt() was called */
	struct qt_loop *loop; /* atomic: set by the first call */
	struct qt_conn *conn; /* the current call's connection; a reference */
	uint64_t id;	      /* the current call's id, 0 before it is issued */
	bool done;	      /* the current call completed */
	bool sent;	      /* the peer was told about the current call */
};

struct qt_call_ctl *qt_call_ctl_new(uint16_t interrupt_type)
{
	struct qt_call_ctl *ctl = g_new0(struct qt_call_ctl, 1);

	ctl->refs = 1;
	ctl->type = interrupt_type;
	return ctl;
}

void qt_call_ctl_unref(struct qt_call_ctl *ctl)
{
	if (!ctl || !g_atomic_int_dec_and_test(&ctl->refs))
		return;
	if (ctl->conn)
		qt_conn_unref(ctl->conn);
	g_free(ctl);
}

/* Loop thread: tell the peer to interrupt call ctl->id. */
static void ctl_send(struct qt_call_ctl *ctl)
{
	struct qt_msg *m = qt_msg_new(ctl->type, 0, 0);

	ctl->sent = true;
	qt_msg_put_u64(m, ctl->id);
	qt_conn_send(ctl->conn, m);
}

static void ctl_interrupt_on_loop(void *arg)
{
	struct qt_call_ctl *ctl = arg;

	/* Before the id is known, sync_start() sees the flag and sends. */
	if (ctl->id && !ctl->done && !ctl->sent)
		ctl_send(ctl);
	qt_call_ctl_unref(ctl);
}

void qt_call_interrupt(struct qt_call_ctl *ctl)
{
	struct qt_loop *l;

	if (!ctl)
		return;
	g_atomic_int_set(&ctl->requested, 1);
	l = g_atomic_pointer_get(&ctl->loop);
	if (!l)
		return; /* no call yet: the flag is enough */
	g_atomic_int_inc(&ctl->refs);
	qt_loop_post(l, ctl_interrupt_on_loop, ctl);
}

static void sync_done(struct qt_conn *c, int err, struct qt_msg *reply, void *arg)
{
	struct sync_call *sc = arg;

	if (reply && (qt_msg_flags(reply) & QT_FLAG_MORE)) {
		sc->streamed = true;
		qt_msg_free(reply);
		return;
	}
	if (sc->streamed && err == 0) {
		qt_msg_free(reply);
		reply = NULL;
		err = -EPROTO;
	}
	if (sc->ctl)
		sc->ctl->done = true;
	sc->err = err;
	sc->reply = reply;
	done_set(&sc->done);
}

static void sync_start(void *arg)
{
	struct sync_call *sc = arg;
	int r = qt_conn_call(sc->conn, g_steal_pointer(&sc->req), sc->timeout_ms, sync_done, sc);

	if (r < 0) {
		sync_done(sc->conn, r, NULL, sc);
		return;
	}
	if (sc->ctl) {
		struct qt_call_ctl *ctl = sc->ctl;

		if (ctl->conn != sc->conn) {
			if (ctl->conn)
				qt_conn_unref(ctl->conn);
			ctl->conn = qt_conn_ref(sc->conn);
		}
		ctl->id = sc->conn->next_id;
		ctl->done = false;
		ctl->sent = false;
		if (g_atomic_int_get(&ctl->requested))
			ctl_send(ctl);
	}
}

int qt_conn_call_sync(struct qt_conn *c, struct qt_msg *req, uint64_t timeout_ms,
		      struct qt_msg **reply)
{
	return qt_conn_call_sync_ctl(c, req, timeout_ms, NULL, reply);
}

int qt_conn_call_sync_ctl(struct qt_conn *c, struct qt_msg *req, uint64_t timeout_ms,
			  struct qt_call_ctl *ctl, struct qt_msg **reply)
{
	struct sync_call sc = {.conn = c, .req = req, .timeout_ms = timeout_ms, .ctl = ctl};
	int err;

	/* Waiting on the loop's own thread would wait forever. */
	g_assert(!qt_loop_in_thread(c->loop));
	if (ctl)
		g_atomic_pointer_compare_and_exchange(&ctl->loop, NULL, c->loop);
	qt_conn_ref(c);
	qt_loop_post(c->loop, sync_start, &sc);
	done_wait(&sc.done);
	qt_conn_unref(c);
	err = sc.err;
	if (err == 0)
		*reply = sc.reply;
	return err;
}

/* ---- serving the peer's requests ----------------------------------------- */

static bool can_dispatch(const struct qt_conn *c)
{
	return c->state == CONN_READY &&
	       g_hash_table_size(c->serving) - g_hash_table_size(c->parked) < c->o.max_inflight &&
	       qt_stream_queued_cost(c->stream) < c->o.max_queued;
}

static void dispatch_request(struct qt_conn *c, struct qt_msg *m)
{
	uint64_t id = qt_msg_id(m);

	if (id) {
		uint64_t *key = g_new(uint64_t, 1);

		*key = id;
		g_hash_table_add(c->serving, key);
	}
	c->in_request++;
	c->ops->request(c, m, c->user);
	c->in_request--;
}

static void drain_backlog(struct qt_conn *c)
{
	/* A reply sent from inside a request callback must not recurse into here. */
	if (c->draining)
		return;
	c->draining = true;
	while (c->backlog.length && can_dispatch(c)) {
		struct qt_msg *m = g_queue_pop_head(&c->backlog);

		c->backlog_bytes -= m->len + BACKLOG_MSG_COST;
		dispatch_request(c, m);
	}
	c->draining = false;
	conn_update_reading(c);
}

static void conn_update_reading(struct qt_conn *c)
{
	bool on;

	if (c->state >= CONN_CLOSING)
		on = false;
	else if (c->state == CONN_HANDSHAKE)
		on = true;
	else
		/*
		 * While the peer's requests cannot be served (max_inflight of
		 * them are, or our replies are not leaving: max_queued bytes
		 * wait), stop reading, so that TCP pushes back on the peer.
		 * Except while our own calls wait for replies: a peer that
		 * stopped reading for the same reason waits for us to read its
		 * replies before it reads ours, and neither would read again.
		 * Then read on, keeping the requests that come meanwhile, up to
		 * max_queued bytes of them.
		 */
		on = (!c->backlog.length && can_dispatch(c)) ||
		     (g_hash_table_size(c->pending) && c->backlog_bytes < c->o.max_queued);
	qt_stream_set_reading(c->stream, on);
}

static int conn_reply(struct qt_conn *c, struct qt_msg *reply, bool lazy)
{
	uint64_t id = qt_msg_id(reply);
	uint8_t flags = qt_msg_flags(reply) | QT_FLAG_REPLY;

	if (c->state >= CONN_CLOSING) {
		qt_msg_free(reply);
		return -ENOTCONN;
	}
	if (!g_hash_table_contains(c->serving, &id)) {
		qt_debug("conn %s: reply to request %" G_GUINT64_FORMAT " that is not being served",
			 c->peer, id);
		qt_msg_free(reply);
		return -ENOENT;
	}
	qt_msg_set_flags(reply, flags);
	if (qt_msg_finish(reply) < 0) {
		/* The answer did not fit: tell the peer so rather than leave it waiting. */
		struct qt_msg *e = qt_msg_new(qt_msg_type(reply), QT_FLAG_REPLY | QT_FLAG_ERROR, id);

		qt_msg_free(reply);
		qt_msg_put_u32(e, EMSGSIZE);
		qt_msg_finish(e);
		reply = e;
		flags = QT_FLAG_REPLY | QT_FLAG_ERROR;
	}
	if (!(flags & QT_FLAG_MORE)) {
		g_hash_table_remove(c->parked, &id);
		g_hash_table_remove(c->serving, &id);
	}
	if (lazy)
		qt_stream_send_lazy(c->stream, reply);
	else
		qt_stream_send(c->stream, reply);
	drain_backlog(c);
	return 0;
}

int qt_conn_reply(struct qt_conn *c, struct qt_msg *reply)
{
	return conn_reply(c, reply, false);
}

int qt_conn_reply_lazy(struct qt_conn *c, struct qt_msg *reply)
{
	return conn_reply(c, reply, true);
}

int qt_conn_peer_timeout_opt(uint64_t ms)
{
	return ms ? (int)MIN((ms + 999) / 1000, 86400) : -1;
}

bool qt_conn_park(struct qt_conn *c, uint64_t id)
{
	gpointer key;

	if (c->state != CONN_READY || g_hash_table_size(c->parked) >= c->o.max_parked ||
	    !g_hash_table_lookup_extended(c->serving, &id, &key, NULL))
		return false;
	g_hash_table_add(c->parked, key);
	/* From inside a request, the dispatching caller drains (on_data, drain_backlog). */
	if (!c->in_request)
		drain_backlog(c);
	return true;
}

int qt_conn_send(struct qt_conn *c, struct qt_msg *m)
{
	if (c->state != CONN_READY) {
		qt_msg_free(m);
		return -ENOTCONN;
	}
	qt_msg_set_id(m, 0);
	if (qt_msg_finish(m) < 0) {
		qt_msg_free(m);
		return -EMSGSIZE;
	}
	qt_stream_send(c->stream, m);
	conn_update_reading(c);
	return 0;
}

/* ---- closing ----------------------------------------------------------- */

static void linger_expired(void *arg)
{
	struct qt_conn *c = arg;

	c->linger_timer = NULL;
	qt_stream_close(c->stream);
}

static void conn_begin_close(struct qt_conn *c, int err, const char *reason, bool flush)
{
	struct qt_msg *m;

	if (c->state >= CONN_CLOSING)
		return;
	c->state = CONN_CLOSING;
	c->close_err = err;
	c->close_reason = g_strdup(reason ? reason : (err ? g_strerror(-err) : "closed"));
	g_clear_pointer(&c->handshake_timer, qt_timer_cancel);
	qt_stream_set_reading(c->stream, false);
	while ((m = g_queue_pop_head(&c->backlog)))
		qt_msg_free(m);
	c->backlog_bytes = 0;
	fail_calls(c, err && err != -ECONNABORTED ? err : -ECONNABORTED);
	if (flush && qt_stream_queued(c->stream))
		c->linger_timer = qt_timer_add(c->loop, LINGER_MS, linger_expired, c);
	else
		qt_stream_close(c->stream);
}

void qt_conn_close(struct qt_conn *c, int err, const char *reason)
{
	conn_begin_close(c, err, reason, true);
}

/* ---- stream callbacks -------------------------------------------------- */

static void conn_ready(struct qt_conn *c)
{
	c->state = CONN_READY;
	c->fasm.max_payload = c->o.max_payload;
	g_free(c->peer_name);
	c->peer_name = g_strdup(qt_auth_peer_name(c->auth));
	g_clear_pointer(&c->auth, qt_auth_free);
	g_clear_pointer(&c->handshake_timer, qt_timer_cancel);
	if (c->ops->ready)
		c->ops->ready(c, c->user);
	if (c->state == CONN_READY)
		conn_issue_waiting(c);
}

static void handle_handshake(struct qt_conn *c, struct qt_msg *m)
{
	struct qt_msg *out = NULL;
	int r = qt_auth_step(c->auth, m, &out);

	qt_msg_free(m);
	if (out) {
		bool response = qt_msg_type(out) == QT_MSG_RESPONSE;

		qt_stream_send(c->stream, out);
		if (response && r == 0 && c->o.role == QT_CONN_CLIENT) {
			c->early_calls = true;
			conn_issue_waiting(c);
		}
	}
	if (r < 0) {
		g_autofree char *why = g_strdup_printf("authentication with %s failed: %s", c->peer,
						       qt_auth_reason(c->auth));

		conn_begin_close(c, r, why, true);
	} else if (r == 1) {
		conn_ready(c);
	}
}

static void handle_frame(struct qt_conn *c, struct qt_msg *m)
{
	if (c->state == CONN_HANDSHAKE) {
		handle_handshake(c, m);
		return;
	}
	if (qt_msg_flags(m) & QT_FLAG_REPLY) {
		handle_reply(c, m);
		return;
	}
	if (qt_msg_type(m) < QT_MSG_USER_MIN) {
		/* Control messages after the handshake: only PING is known; the rest is ignored. */
		if (qt_msg_type(m) == QT_MSG_PING && qt_msg_id(m)) {
			uint64_t *key;

			if (g_hash_table_contains(c->serving, &(uint64_t){qt_msg_id(m)})) {
				/* Its reply would take the request's id out of the in-flight set. */
				qt_msg_free(m);
				conn_begin_close(c, -EPROTO,
						 "peer reused the id of a request still being served", false);
				return;
			}
			key = g_new(uint64_t, 1);

			*key = qt_msg_id(m);
			g_hash_table_add(c->serving, key);
			qt_conn_reply(c, qt_msg_new_reply(m, QT_MSG_PING));
		}
		qt_msg_free(m);
		return;
	}
	if (qt_msg_id(m) && g_hash_table_contains(c->serving, &(uint64_t){qt_msg_id(m)})) {
		qt_msg_free(m);
		conn_begin_close(c, -EPROTO, "peer reused the id of a request still being served", false);
		return;
	}
	if (!c->backlog.length && can_dispatch(c)) {
		dispatch_request(c, m);
	} else {
		c->backlog_bytes += m->len + BACKLOG_MSG_COST;
		g_queue_push_tail(&c->backlog, m);
	}
}

/* ---- replies into pipes -------------------------------------------------- */

static void sink_clear(struct qt_conn *c)
{
	if (c->sink.pipe)
		qt_pipe_put(c->sink.pipe); /* closed, not pooled, unless empty */
	g_free(c->sink.buf);
	memset(&c->sink, 0, sizeof(c->sink));
}

/*
 * The header of a reply is in, its payload not begun: does it go into a
 * pipe?  If so the sink takes the payload from the assembler.
 */
static bool sink_start(struct qt_conn *c, const struct qt_frame_header *h)
{
	struct call *k;
	struct qt_pipe *p;

	if (c->state != CONN_READY ||
	    (h->flags & (QT_FLAG_REPLY | QT_FLAG_ERROR | QT_FLAG_MORE)) != QT_FLAG_REPLY ||
	    h->length < 4 + QT_CONN_TAIL_MIN || h->length > 4 + QT_PIPE_DATA_MAX)
		return false;
	k = g_hash_table_lookup(c->pending, &h->id);
	if (!k || !k->reply_tail || !(p = qt_pipe_get()))
		return false;
	memcpy(c->sink.head, c->fasm.hdr, QT_WIRE_HDR_SIZE);
	qt_frame_asm_take(&c->fasm);
	c->sink.active = true;
	c->sink.head_have = QT_WIRE_HDR_SIZE;
	c->sink.data_len = c->sink.data_left = h->length - 4;
	c->sink.pipe = p;
	return true;
}

/* The pipe filled first: the frame is assembled by copy, starting with what the pipe holds. */
static int sink_copy(struct qt_conn *c)
{
	struct sink *k = &c->sink;
	size_t in_pipe = k->data_len - k->data_left, got = 0;

	k->buf = g_malloc(sizeof(k->head) + k->data_len);
	memcpy(k->buf, k->head, sizeof(k->head));
	while (got < in_pipe) {
		ssize_t r = read(qt_pipe_rfd(k->pipe), k->buf + sizeof(k->head) + got, in_pipe - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -EIO;
		got += (size_t)r;
	}
	qt_pipe_put(g_steal_pointer(&k->pipe));
	return 0;
}

/* All of the payload is in: the reply goes to its call. */
static void sink_done(struct qt_conn *c)
{
	struct sink *k = &c->sink;
	struct qt_msg *m;

	if (k->buf) {
		m = qt_msg_adopt(g_steal_pointer(&k->buf), sizeof(k->head) + k->data_len);
	} else {
		m = qt_msg_adopt(g_memdup2(k->head, sizeof(k->head)), sizeof(k->head));
		qt_msg_set_pipe_tail(m, g_steal_pointer(&k->pipe), k->data_len);
	}
	sink_clear(c);
	handle_frame(c, m);
}

static void sink_failed(struct qt_conn *c, int err)
{
	g_autofree char *why = g_strdup_printf(
		"protocol error from %s: %s", c->peer,
		err == -EPROTO ? "a reply's length does not match its frame"
			       : "cannot take a reply out of its pipe");

	conn_begin_close(c, err, why, false);
}

static void sink_diverted(struct qt_stream *s, size_t left, void *arg)
{
	struct qt_conn *c = arg;

	(void)s;
	c->sink.data_left = left;
	if (c->state >= CONN_CLOSING)
		return;
	if (!left)
		sink_done(c);
	else if (sink_copy(c) < 0)
		sink_failed(c, -EIO);
	/* else the rest comes through on_data(). */
}

/* Payload bytes of the sink's frame: the count taken, or -errno (the connection must end). */
static ssize_t sink_feed(struct qt_conn *c, const uint8_t *p, size_t n)
{
	struct sink *k = &c->sink;
	size_t used = 0, want;

	if (k->head_have < sizeof(k->head)) {
		struct qt_rd r;
		uint32_t len = 0;

		used = MIN(n, sizeof(k->head) - k->head_have);
		memcpy(k->head + k->head_have, p, used);
		k->head_have += used;
		if (k->head_have < sizeof(k->head))
			return (ssize_t)used;
		qt_rd_init(&r, k->head + QT_WIRE_HDR_SIZE, 4);
		if (qt_rd_u32(&r, &len) < 0 || len != k->data_len)
			return -EPROTO;
	}
	want = MIN(n - used, k->data_left);
	if (k->buf) {
		memcpy(k->buf + sizeof(k->head) + (k->data_len - k->data_left), p + used, want);
		k->data_left -= want;
		used += want;
	} else {
		size_t in = qt_pipe_write_some(qt_pipe_wfd(k->pipe), p + used, want);

		k->data_left -= in;
		used += in;
		if (in < want)
			return sink_copy(c) < 0 ? -EIO : (ssize_t)used;
	}
	if (!k->data_left) {
		sink_done(c);
	} else if (!k->buf) {
		/* The chunk is used up: the rest goes from the socket into the pipe. */
		qt_stream_divert(c->stream, qt_pipe_wfd(k->pipe), k->data_left, sink_diverted, c);
	}
	return (ssize_t)used;
}

static void frame_error(struct qt_conn *c, ssize_t err)
{
	g_autofree char *why = g_strdup_printf("protocol error from %s: %s", c->peer,
					       err == -EMSGSIZE ? "frame too large"
					       : err == -EPROTONOSUPPORT ? "unsupported protocol version"
					       : "malformed frame header");

	conn_begin_close(c, (int)err, why, false);
}

static void on_data(struct qt_stream *s, const uint8_t *p, size_t n, void *arg)
{
	struct qt_conn *c = arg;

	while (n && c->state < CONN_CLOSING) {
		struct qt_msg *m = NULL;
		ssize_t used;

		if (c->sink.active) {
			if ((used = sink_feed(c, p, n)) < 0) {
				sink_failed(c, (int)used);
				return;
			}
			p += used;
			n -= (size_t)used;
			continue;
		}
		/* With a call on the wire whose reply may go into a pipe, a frame's header comes first. */
		if (c->tail_calls && qt_frame_asm_in_header(&c->fasm)) {
			struct qt_frame_header h;
			bool complete;

			used = qt_frame_asm_feed_header(&c->fasm, p, n, &h, &complete);
			if (used < 0) {
				frame_error(c, used);
				return;
			}
			p += used;
			n -= (size_t)used;
			if (complete && sink_start(c, &h))
				continue;
			if (!complete && !n)
				break;
		}
		used = qt_frame_asm_feed(&c->fasm, p, n, &m);
		if (used < 0) {
			frame_error(c, used);
			return;
		}
		p += used;
		n -= (size_t)used;
		if (m)
			handle_frame(c, m);
	}
	if (c->state < CONN_CLOSING)
		drain_backlog(c);
}

static void on_eof(struct qt_stream *s, int err, void *arg)
{
	struct qt_conn *c = arg;
	g_autofree char *why = NULL;
	bool mid_frame = !qt_frame_asm_idle(&c->fasm) || c->sink.active;

	if (c->state >= CONN_CLOSING) {
		/* Already closing: a failed write means there is nothing more to flush. */
		if (err && c->linger_timer) {
			g_clear_pointer(&c->linger_timer, qt_timer_cancel);
			qt_stream_close(c->stream);
		}
		return;
	}
	if (err == -ETIMEDOUT && c->peer_timeout_s)
		why = g_strdup_printf("connection to %s failed: no answer from the peer's host for %u s",
				      c->peer, c->peer_timeout_s);
	else if (err)
		why = g_strdup_printf("connection to %s failed: %s", c->peer, g_strerror(-err));
	else if (c->state == CONN_HANDSHAKE)
		why = g_strdup_printf("%s closed the connection during the handshake", c->peer);
	else if (mid_frame)
		why = g_strdup_printf("%s closed the connection in the middle of a frame", c->peer);
	else
		why = g_strdup_printf("%s closed the connection", c->peer);
	if (!err && c->state == CONN_HANDSHAKE)
		err = -ECONNRESET;
	else if (!err && mid_frame)
		err = -EPROTO;
	/* After a clean EOF the replies already queued may still reach the peer. */
	conn_begin_close(c, err, why, !err);
}

static void on_sent(struct qt_stream *s, void *arg)
{
	struct qt_conn *c = arg;

	if (c->state == CONN_CLOSING) {
		if (c->linger_timer && qt_stream_queued(s) == 0) {
			g_clear_pointer(&c->linger_timer, qt_timer_cancel);
			qt_stream_close(s);
		}
		return;
	}
	if (c->state == CONN_READY) {
		conn_issue_waiting(c);
		drain_backlog(c);
	}
}

static void on_closed(struct qt_stream *s, void *arg)
{
	struct qt_conn *c = arg;

	c->state = CONN_CLOSED;
	sink_clear(c); /* the stream is gone: nothing writes into its pipe any more */
	g_clear_pointer(&c->linger_timer, qt_timer_cancel);
	g_clear_pointer(&c->handshake_timer, qt_timer_cancel);
	c->stream = NULL;
	fail_calls(c, -ECONNABORTED);
	if (c->ops->closed)
		c->ops->closed(c, c->close_err, c->close_reason, c->user);
	if (c->server)
		server_conn_closed(c->server, c);
	qt_conn_unref(c);
}

static const struct qt_stream_ops conn_stream_ops = {
	.data = on_data,
	.eof = on_eof,
	.sent = on_sent,
	.closed = on_closed,
};

static void handshake_expired(void *arg)
{
	struct qt_conn *c = arg;
	g_autofree char *why = g_strdup_printf("authentication with %s timed out", c->peer);

	c->handshake_timer = NULL;
	conn_begin_close(c, -ETIMEDOUT, why, false);
}

static struct qt_conn *conn_create(struct qt_loop *l, int rfd, int wfd, const struct qt_conn_opts *o,
				   const struct qt_conn_ops *ops, void *user)
{
	struct qt_conn *c = g_new0(struct qt_conn, 1);

	c->refs = 1; /* the loop's, dropped after ops->closed */
	c->loop = l;
	c->ops = ops;
	c->user = user;
	c->o = *o;
	c->o.psk = o->psk;
	c->o.name = NULL;
	if (!c->o.max_payload)
		c->o.max_payload = QT_WIRE_DEFAULT_MAX_PAYLOAD;
	c->o.max_payload = MIN(c->o.max_payload, QT_WIRE_HARD_MAX_PAYLOAD);
	if (!c->o.max_inflight)
		c->o.max_inflight = QT_CONN_DEFAULT_MAX_INFLIGHT;
	if (!c->o.max_queued)
		c->o.max_queued = QT_CONN_DEFAULT_MAX_QUEUED;
	if (!c->o.max_parked)
		c->o.max_parked = 32 * c->o.max_inflight;
	if (!c->o.handshake_ms)
		c->o.handshake_ms = QT_CONN_DEFAULT_HANDSHAKE_MS;
	c->peer = rfd == wfd ? qt_socket_peer_name(rfd) : g_strdup("stdio");
	if (rfd == wfd && c->o.peer_timeout_s >= 0) {
		unsigned t = c->o.peer_timeout_s ? (unsigned)c->o.peer_timeout_s
						 : QT_CONN_DEFAULT_PEER_TIMEOUT_S;
		int r = qt_socket_set_peer_timeout(rfd, t);

		if (r < 0)
			qt_debug("conn %s: cannot bound the peer's silence: %s", c->peer, g_strerror(-r));
		else if (r > 0)
			c->peer_timeout_s = t;
	}
	/* Until the peer is authenticated it may not make us allocate more than this. */
	qt_frame_asm_init(&c->fasm, HANDSHAKE_MAX_PAYLOAD);
	c->pending = g_hash_table_new(g_int64_hash, g_int64_equal);
	c->serving = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
	c->parked = g_hash_table_new(g_int64_hash, g_int64_equal);
	for (unsigned lane = 0; lane < LANES; lane++)
		g_queue_init(&c->waitq[lane]);
	g_queue_init(&c->backlog);
	c->auth = qt_auth_new(o->role == QT_CONN_CLIENT ? QT_AUTH_CLIENT : QT_AUTH_SERVER, o->psk,
			      o->nonces, o->name);
	c->stream = qt_stream_new(l, rfd, wfd, &conn_stream_ops, c);
	qt_stream_set_small_first(c->stream, o->small_first);
	c->handshake_timer = qt_timer_add(l, c->o.handshake_ms, handshake_expired, c);
	return c;
}

int qt_conn_new(struct qt_loop *l, int rfd, int wfd, const struct qt_conn_opts *o,
		const struct qt_conn_ops *ops, void *user, struct qt_conn **out)
{
	struct qt_conn *c = conn_create(l, rfd, wfd, o, ops, user);

	if (o->role == QT_CONN_CLIENT) {
		struct qt_msg *hello = NULL;
		int r = qt_auth_start(c->auth, &hello);

		if (r < 0) {
			conn_begin_close(c, r, qt_auth_reason(c->auth), false);
			return r;
		}
		qt_stream_send(c->stream, hello);
	}
	qt_stream_set_reading(c->stream, true);
	*out = c;
	return 0;
}

int qt_conn_connect(struct qt_loop *l, const struct qt_endpoint *ep, int timeout_ms,
		    const struct qt_conn_opts *o, const struct qt_conn_ops *ops, void *user,
		    struct qt_conn **out)
{
	gint64 start = g_get_monotonic_time();
	struct qt_conn_opts co = *o;
	int fd, r;

	if (ep->kind == QT_EP_STDIO)
		return qt_conn_new(l, 0, 1, o, ops, user, out);
	r = qt_endpoint_connect(ep, timeout_ms, &fd);
	if (r < 0)
		return r;
	/* One deadline for connecting and authenticating: the handshake gets what is left. */
	if (!co.handshake_ms && timeout_ms > 0) {
		gint64 left = timeout_ms - (g_get_monotonic_time() - start) / 1000;

		co.handshake_ms = (unsigned)MAX(left, 1);
	}
	return qt_conn_new(l, fd, fd, &co, ops, user, out);
}

/* ---- server ------------------------------------------------------------ */

struct qt_server {
	struct qt_loop *loop;
	struct qt_conn_opts o;
	unsigned max_conns;
	const struct qt_conn_ops *ops;
	void *user;
	GPtrArray *listeners;
	GHashTable *conns; /* struct qt_conn* set */
	bool shutting_down;
};

struct qt_server *qt_server_new(struct qt_loop *l, const struct qt_conn_opts *o, unsigned max_conns,
				const struct qt_conn_ops *ops, void *user)
{
	struct qt_server *srv = g_new0(struct qt_server, 1);

	srv->loop = l;
	srv->o = *o;
	srv->o.role = QT_CONN_SERVER;
	srv->max_conns = max_conns;
	srv->ops = ops;
	srv->user = user;
	srv->listeners = g_ptr_array_new();
	srv->conns = g_hash_table_new(NULL, NULL);
	return srv;
}

static void server_refuse(struct qt_server *srv, int fd)
{
	struct qt_msg *m = qt_msg_new(QT_MSG_AUTH_FAIL, 0, 0);
	ssize_t w;

	qt_msg_put_u32(m, EBUSY);
	qt_msg_put_str(m, "server has too many connections");
	qt_msg_finish(m);
	/* Best effort on a fresh socket with an empty buffer; never block. */
	w = send(fd, m->data, m->len, MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)w;
	qt_msg_free(m);
	close(fd);
}

static int server_start_conn(struct qt_server *srv, int rfd, int wfd, struct qt_conn **out)
{
	struct qt_conn *c;
	int r = qt_conn_new(srv->loop, rfd, wfd, &srv->o, srv->ops, srv->user, &c);

	if (r < 0)
		return r;
	c->server = srv;
	g_hash_table_add(srv->conns, c);
	if (out)
		*out = c;
	return 0;
}

static void server_accept(void *arg, int fd)
{
	struct qt_server *srv = arg;

	if (srv->shutting_down || (srv->max_conns && g_hash_table_size(srv->conns) >= srv->max_conns)) {
		qt_debug("server: refusing a connection: %u connections already", g_hash_table_size(srv->conns));
		server_refuse(srv, fd);
		return;
	}
	qt_socket_tune(fd);
	server_start_conn(srv, fd, fd, NULL);
}

int qt_server_listen(struct qt_server *srv, const struct qt_endpoint *ep, char **msg)
{
	/* The kernel caps SOMAXCONN at net.core.somaxconn (4096 by default). */
	int fd, r = qt_endpoint_listen(ep, SOMAXCONN, &fd);

	if (r < 0) {
		*msg = g_strdup_printf("cannot listen on %s: %s", ep->uri, g_strerror(-r));
		return r;
	}
	qt_server_listen_fd(srv, fd);
	return 0;
}

int qt_server_listen_uris(struct qt_server *srv, const GPtrArray *uris, bool have_psk, char **msg,
			  bool *usage)
{
	*usage = false;
	for (guint i = 0; i < uris->len; i++) {
		g_autoptr(qt_endpoint) ep = NULL;
		int r;

		if (qt_endpoint_parse(g_ptr_array_index(uris, i), &ep, msg) < 0) {
			*usage = true;
			return -EINVAL;
		}
		if ((ep->kind == QT_EP_TCP || ep->kind == QT_EP_VSOCK) && !have_psk) {
			*msg = g_strdup_printf("refusing to listen on %s without a pre-shared key (--key-file)",
					       ep->uri);
			return -EPERM;
		}
		if ((r = qt_server_listen(srv, ep, msg)) < 0)
			return r;
		qt_notice("listening on %s", ep->uri);
	}
	return 0;
}

void qt_server_listen_fd(struct qt_server *srv, int fd)
{
	g_ptr_array_add(srv->listeners, qt_listener_add(srv->loop, fd, server_accept, srv));
}

int qt_server_adopt(struct qt_server *srv, int rfd, int wfd, struct qt_conn **out)
{
	return server_start_conn(srv, rfd, wfd, out);
}

unsigned qt_server_conn_count(const struct qt_server *srv)
{
	return g_hash_table_size(srv->conns);
}

static void server_conn_closed(struct qt_server *srv, struct qt_conn *c)
{
	g_hash_table_remove(srv->conns, c);
}

void qt_server_shutdown(struct qt_server *srv)
{
	GHashTableIter it;
	gpointer k;
	GPtrArray *all = g_ptr_array_new();

	srv->shutting_down = true;
	for (guint i = 0; i < srv->listeners->len; i++)
		qt_listener_remove(g_ptr_array_index(srv->listeners, i));
	g_ptr_array_set_size(srv->listeners, 0);
	g_hash_table_iter_init(&it, srv->conns);
	while (g_hash_table_iter_next(&it, &k, NULL))
		g_ptr_array_add(all, k);
	for (guint i = 0; i < all->len; i++)
		qt_conn_close(g_ptr_array_index(all, i), 0, "server shutting down");
	g_ptr_array_free(all, TRUE);
}

void qt_server_free(struct qt_server *srv)
{
	if (!srv)
		return;
	for (guint i = 0; i < srv->listeners->len; i++)
		qt_listener_remove(g_ptr_array_index(srv->listeners, i));
	g_ptr_array_free(srv->listeners, TRUE);
	/* Connections still open keep working but no longer count against us. */
	GHashTableIter it;
	gpointer k;

	g_hash_table_iter_init(&it, srv->conns);
	while (g_hash_table_iter_next(&it, &k, NULL))
		((struct qt_conn *)k)->server = NULL;
	g_hash_table_destroy(srv->conns);
	g_free(srv);
}
