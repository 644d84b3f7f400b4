/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Framed, authenticated, pipelined connections over a qt_stream, and a small
 * server that accepts them.  Both fuse-qtfs and rexec speak through this.
 *
 * A connection is symmetric: either side may issue calls (requests with a
 * non-zero id, answered by a reply carrying the same id) and one-way
 * messages (id 0).  Many calls may be in flight; replies are matched by id
 * in any order.
 *
 * States:
 *   HANDSHAKE --auth ok--> READY --qt_conn_close / EOF / error--> CLOSING
 *   HANDSHAKE --auth failed / deadline--> CLOSING
 *   CLOSING --queued frames flushed (or 1 s linger), stream closed--> CLOSED
 * Invariants: ops->ready at most once, before any ops->request; every call
 * gets exactly one final callback (reply, error reply, timeout or close),
 * never from inside qt_conn_call(); ops->closed is the last callback.
 *
 * Flow control (per connection):
 *   - at most max_inflight of our calls are on the wire; more wait in a
 *     queue (up to 4x max_inflight, then qt_conn_call says -EAGAIN);
 *     calls without a deadline count apart, up to max_parked on the wire,
 *     and wait in a queue of their own: many of them waiting for room
 *     never hold the others;
 *   - a call also waits while max_queued bytes wait to be written (each
 *     frame counted QT_STREAM_FRAME_COST more, for its memory); with
 *     small_first, calls under QT_STREAM_BULK bytes do not (only for a
 *     place on the wire, in a queue of their own) and go ahead of larger
 *     frames not yet begun (qt_stream_set_small_first);
 *   - at most max_inflight of the peer's requests are being served; beyond
 *     that, and whenever more than max_queued bytes wait to be written, we
 *     stop reading the socket, so TCP pushes back on the peer;
 *   - except while our own calls wait for replies: then we read on (their
 *     replies are what lets the peer read again when it pushes back the
 *     same way), keeping up to max_queued bytes of the peer's requests
 *     for later.
 *
 * Threading: loop thread only, except qt_conn_ref(), qt_conn_unref() and
 * qt_conn_call_sync(), which is for other threads only.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "auth.h"
#include "endpoint.h"
#include "loop.h"
#include "wire.h"

#define QT_CONN_DEFAULT_MAX_INFLIGHT 128
#define QT_CONN_DEFAULT_MAX_QUEUED (8u * 1024 * 1024)
#define QT_CONN_DEFAULT_HANDSHAKE_MS 10000
#define QT_CONN_DEFAULT_PEER_TIMEOUT_S 30

enum qt_conn_role {
	QT_CONN_CLIENT,
	QT_CONN_SERVER,
};

struct qt_conn_opts {
	enum qt_conn_role role;
	const struct qt_psk *psk;      /* NULL: insecure mode; borrowed */
	struct qt_nonce_cache *nonces; /* server: replay cache, optional; borrowed */
	const char *name;	       /* client: our name in HELLO */
	uint32_t max_payload;	       /* 0: QT_WIRE_DEFAULT_MAX_PAYLOAD */
	unsigned max_inflight;	       /* 0: QT_CONN_DEFAULT_MAX_INFLIGHT */
	size_t max_queued;	       /* 0: QT_CONN_DEFAULT_MAX_QUEUED */
	unsigned handshake_ms;	       /* 0: QT_CONN_DEFAULT_HANDSHAKE_MS */
	/*
	 * TCP only: a peer whose host stops answering (power lost, link cut)
	 * ends the connection with -ETIMEDOUT after about this many seconds
	 * (qt_socket_set_peer_timeout).  0: QT_CONN_DEFAULT_PEER_TIMEOUT_S;
	 * < 0: the kernel's defaults (hours).
	 */
	int peer_timeout_s;
	/* Requests parked at most at once (qt_conn_park); 0: 32 x max_inflight. */
	unsigned max_parked;
	/*
	 * Small frames (calls, replies) may go ahead of large ones queued
	 * before them (qt_stream_set_small_first): for a protocol whose
	 * requests the peer serves side by side anyway.
	 */
	bool small_first;
};

struct qt_conn;

struct qt_conn_ops {
	/* Authenticated; calls may flow now.  Optional. */
	void (*ready)(struct qt_conn *c, void *user);
	/*
	 * A request from the peer (qt_msg_id(m) != 0: answer it exactly once
	 * with qt_conn_reply()) or a one-way message (id 0).  Takes ownership.
	 */
	void (*request)(struct qt_conn *c, struct qt_msg *m, void *user);
	/*
	 * The connection is gone: @err is 0 after a clean close or end of
	 * stream, else -errno; @reason is a one-line explanation fit for a log
	 * line.  Last callback; the loop drops its reference afterwards.
	 */
	void (*closed)(struct qt_conn *c, int err, const char *reason, void *user);
};

/*
 * Reply callback.  @err is 0 with @reply (owned by the callee), or -errno
 * with @reply NULL: the peer's error reply, -ETIMEDOUT, or the reason the
 * connection went away (-ECONNRESET, -ECONNABORTED...).  A reply with
 * QT_FLAG_MORE is followed by further callbacks for the same call.
 */
typedef void (*qt_reply_fn)(struct qt_conn *c, int err, struct qt_msg *reply, void *arg);

/*
 * Start a connection on @rfd/@wfd (one socket: pass it twice).  The fds
 * belong to the connection from now on, even on failure.  The client sends
 * HELLO at once.  The returned pointer stays valid until ops->closed
 * returns, or longer with qt_conn_ref().
 */
int qt_conn_new(struct qt_loop *l, int rfd, int wfd, const struct qt_conn_opts *o,
		const struct qt_conn_ops *ops, void *user, struct qt_conn **out);
/*
 * Connect to @ep (blocking) and start a client connection.  @timeout_ms
 * bounds connecting and the handshake together: unless @o sets
 * handshake_ms, the handshake gets what the connect left of it.
 */
int qt_conn_connect(struct qt_loop *l, const struct qt_endpoint *ep, int timeout_ms,
		    const struct qt_conn_opts *o, const struct qt_conn_ops *ops, void *user,
		    struct qt_conn **out);

struct qt_conn *qt_conn_ref(struct qt_conn *c);
void qt_conn_unref(struct qt_conn *c);

/*
 * Issue a call.  Assigns the id, finishes @req and takes ownership of it
 * whatever the result.  Calls may be issued before READY: they wait, and
 * a PSK client sends them right after its RESPONSE, without waiting for
 * AUTH_OK.  @timeout_ms 0 means no deadline.  Returns 0 (the
 * callback will run later), -ENOTCONN when closing, -EAGAIN when the wait
 * queue is full, -EMSGSIZE when @req overflowed.
 */
int qt_conn_call(struct qt_conn *c, struct qt_msg *req, uint64_t timeout_ms, qt_reply_fn cb,
		 void *arg);
/*
 * Replies into pipes.  A call whose request has reply_tail_ok set (see
 * wire.h) may get its reply with the payload's bytes in a pipe: when the
 * reply is a plain one (no ERROR, no MORE) whose payload is a u32 length
 * n followed by exactly n bytes, QT_CONN_TAIL_MIN <= n <=
 * QT_PIPE_DATA_MAX, and a pipe is to be had (qt_pipe_get()), the n bytes
 * go from the socket into the pipe by splice (qt_stream_divert()): the
 * reply's data then holds the header and the u32 only, and its tail the n
 * bytes (tail->rfd, tail_len).  Whoever frees the reply gives the pipe
 * back, emptied or not.  A reply whose u32 is not the rest of the payload
 * ends the connection (EPROTO).  Any other reply comes as usual.
 */
#define QT_CONN_TAIL_MIN (64u * 1024)
/* qt_conn_call() for a call nobody waits for: sent as qt_stream_send_lazy() sends. */
int qt_conn_call_lazy(struct qt_conn *c, struct qt_msg *req, uint64_t timeout_ms, qt_reply_fn cb,
		      void *arg);
/*
 * From a thread other than the loop's: issue a call and wait for its
 * reply.  0 with *@reply, or -errno.  Streamed (MORE) replies are not
 * supported here and give -EPROTO.
 */
int qt_conn_call_sync(struct qt_conn *c, struct qt_msg *req, uint64_t timeout_ms,
		      struct qt_msg **reply);
/*
 * Interrupting a synchronous call: the caller creates a control, makes the
 * call with qt_conn_call_sync_ctl(), and any thread may then ask for an
 * interrupt with qt_call_interrupt().  While the call has not completed,
 * that sends the peer a one-way message of type @interrupt_type whose
 * payload is the call's id (u64): at once, or as soon as the call has an
 * id.  After completion it does nothing.  What the peer does with the
 * message (end the request early, with an error) is the protocol's business.
 */
struct qt_call_ctl;
struct qt_call_ctl *qt_call_ctl_new(uint16_t interrupt_type);
void qt_call_ctl_unref(struct qt_call_ctl *ctl);
int qt_conn_call_sync_ctl(struct qt_conn *c, struct qt_msg *req, uint64_t timeout_ms,
			  struct qt_call_ctl *ctl, struct qt_msg **reply);
/* Thread-safe; @ctl may be NULL (nothing happens). */
void qt_call_interrupt(struct qt_call_ctl *ctl);

/*
 * The peer's request @id, being served, may wait without end (a FIFO, a
 * lock): it stops counting against max_inflight until it is answered, so
 * that the peer's other requests are still read and served.  At most
 * max_parked at once.  False when it could not be (not being served, the
 * cap reached, closing): it then counts as before.
 */
bool qt_conn_park(struct qt_conn *c, uint64_t id);
/* Answer the peer's request @m with @reply (built with qt_msg_new_reply / _error).  Takes ownership. */
int qt_conn_reply(struct qt_conn *c, struct qt_msg *reply);
/* qt_conn_reply() for an answer nobody waits for: sent as qt_stream_send_lazy() sends. */
int qt_conn_reply_lazy(struct qt_conn *c, struct qt_msg *reply);
/* Send a one-way message (id 0).  Takes ownership.  -ENOTCONN before READY or when closing. */
int qt_conn_send(struct qt_conn *c, struct qt_msg *m);
/* Begin closing: fail outstanding calls with -ECONNABORTED, flush, close.  Idempotent. */
void qt_conn_close(struct qt_conn *c, int err, const char *reason);

/*
 * A program's peer_timeout setting, in ms with 0 for "the kernel's
 * defaults", as peer_timeout_s wants it: whole seconds rounded up, at
 * most a day, or -1.
 */
int qt_conn_peer_timeout_opt(uint64_t ms);

bool qt_conn_is_ready(const struct qt_conn *c);
/* Peer address for log lines ("127.0.0.1:4242", "unix(uid=0,pid=1)", "stdio"). */
const char *qt_conn_peer(const struct qt_conn *c);
/* The name the client sent in HELLO (server side), or "". */
const char *qt_conn_peer_name(const struct qt_conn *c);
int qt_conn_fd(const struct qt_conn *c);
void *qt_conn_user(const struct qt_conn *c);
void qt_conn_set_user(struct qt_conn *c, void *user);
/* Counters, for tests and status output. */
unsigned qt_conn_calls_inflight(const struct qt_conn *c);
unsigned qt_conn_requests_inflight(const struct qt_conn *c);
size_t qt_conn_queued(const struct qt_conn *c);
bool qt_conn_reading(const struct qt_conn *c);

/* ---- server ------------------------------------------------------------ */

struct qt_server;

/*
 * A server accepting connections with @o (role forced to SERVER) and
 * handing them @ops/@user.  Beyond @max_conns (0: unlimited) a new
 * connection is refused with an AUTH_FAIL saying so.
 */
struct qt_server *qt_server_new(struct qt_loop *l, const struct qt_conn_opts *o, unsigned max_conns,
				const struct qt_conn_ops *ops, void *user);
/* Listen on @ep.  0, or -errno with *msg naming the endpoint. */
int qt_server_listen(struct qt_server *srv, const struct qt_endpoint *ep, char **msg);
/*
 * Listen on each URI of @uris (char *), in order, with a notice "listening
 * on URI" for each.  A tcp or vsock URI is refused without a pre-shared
 * key (@have_psk false): other machines reach those, and only the key
 * tells a peer there from a stranger.  0; or -errno with *msg: -EINVAL
 * and *usage set for a URI that does not parse (the caller's usage
 * error), -EPERM for one that needs the key, or qt_server_listen()'s.
 */
int qt_server_listen_uris(struct qt_server *srv, const GPtrArray *uris, bool have_psk, char **msg,
			  bool *usage);
/* Serve connections accepted on an already-listening socket (owned from now on). */
void qt_server_listen_fd(struct qt_server *srv, int fd);
/* Serve one already-connected stream (e.g. stdio). */
int qt_server_adopt(struct qt_server *srv, int rfd, int wfd, struct qt_conn **out);
unsigned qt_server_conn_count(const struct qt_server *srv);
/* Stop listening and close every connection (their ops->closed still run). */
void qt_server_shutdown(struct qt_server *srv);
/* Free; call after qt_server_shutdown() once qt_server_conn_count() is 0. */
void qt_server_free(struct qt_server *srv);
