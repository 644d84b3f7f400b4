/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuse-qtfs's side of the wire: a pool of N connections to one qtfs-server
 * (the conns= mount option), each driven by one event-loop thread, with
 * MOUNT done on every connection, reconnection with backoff, and a deadline
 * on every call so that a dead server never hangs a caller.
 *
 * Synchronous calls are made from FUSE worker threads and block until the
 * reply, the deadline or the loss of the connection; asynchronous ones,
 * from the loop thread itself too (session.c), end in a callback on the
 * loop thread.  Open file handles live on the
 * server connection that opened them: such calls name their slot and the
 * slot's generation, and get -ESTALE once that connection has been
 * replaced, so the caller can reopen the file by path.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "auth.h"
#include "proto.h"
#include "conn.h"
#include "wire.h"

/*
 * Opens a transport: fills *rfd and *wfd (the same socket, or a pair for
 * SSH) or returns -errno with a one-line *msg.  Runs on a dialer thread,
 * may block.
 */
typedef int (*qtfs_dial_fn)(void *arg, int *rfd, int *wfd, char **msg);

struct qtfs_client_opts {
	qtfs_dial_fn dial;
	void *dial_arg;
	const char *remote_path;     /* absolute host path to MOUNT */
	const struct qt_psk *psk;    /* NULL: insecure mode; borrowed */
	unsigned conns;		     /* 0: 1 */
	uint64_t timeout_ms;	     /* per call; 0: 30 s */
	uint64_t connect_timeout_ms; /* first connection; 0: timeout_ms */
	int peer_timeout_s;	     /* see struct qt_conn_opts */
	bool watch;		     /* MOUNT with QTFS_MNT_WATCH (see fs.c "Name caching") */
	unsigned poll_us;	     /* the loop's busy polling: qt_loop_set_poll() */
};

/* The default poll_us (fuse-qtfs -o poll_us=): see docs/fuse-qtfs.md "Busy polling". */
#define QTFS_POLL_US_DEFAULT 50

struct qtfs_client;

/*
 * Connect every slot and MOUNT.  Returns once the first connection is
 * mounted (the others follow in the background), with the root's
 * attributes and the MOUNT flags; or -errno and a one-line *msg saying
 * what the server refused or why it could not be reached.
 */
int qtfs_client_new(const struct qtfs_client_opts *o, struct qtfs_client **out,
		    struct qtfs_attr *root, uint32_t *mflags, char **msg);
/*
 * Fail every call and close the connections, but keep the loop running,
 * so that the calls in flight end now and their answers still go out.
 */
void qtfs_client_shutdown(struct qtfs_client *cl);
/* Shut down (if not yet), stop the loop thread and free. */
void qtfs_client_free(struct qtfs_client *cl);
/* The client's event loop (qt_loop_in_thread(): whether the caller runs on it). */
struct qt_loop *qtfs_client_loop(const struct qtfs_client *cl);

/* What a call does when its connection breaks before the answer comes. */
enum qtfs_retry {
	QTFS_ONCE,	/* fails with -EIO: it cannot be repeated safely */
	QTFS_REPEAT,	/* is sent again on another connection: it is idempotent */
	QTFS_ASK,	/* fails with -QTFS_ELOST: the caller finds out whether it was done */
};
/* Not an errno (those end at 4095): the connection went with the call (QTFS_ASK). */
#define QTFS_ELOST 0x10000

/*
 * A call on any ready connection.  Takes @req.  On success *@reply is the
 * reply (owned by the caller).  Errors: the host's -errno, -ETIMEDOUT past
 * the deadline, and when the connection broke under the call as @retry says.
 */
int qtfs_client_call(struct qtfs_client *cl, struct qt_msg *req, enum qtfs_retry retry,
		     struct qt_msg **reply);
/* The same with a deadline of @until_us (g_get_monotonic_time()) instead of the default. */
int qtfs_client_call_until(struct qtfs_client *cl, struct qt_msg *req, enum qtfs_retry retry,
			   gint64 until_us, struct qt_msg **reply);

/* A completion, run on the client's loop thread; it owns @reply (NULL on error). */
typedef void (*qtfs_done_fn)(void *arg, int err, struct qt_msg *reply);

/*
 * qtfs_client_call() without blocking the caller: the same errors and
 * retries, reported to @done(@arg, ...) on the loop thread, which must
 * not block.  Takes @req.  The FUSE operations on the hot path (lookup,
 * getattr, unlink, rmdir; open, create and read go through
 * qtfs_client_call_cb()) run on the loop thread and answer the kernel
 * from @done, so no thread waits for the reply.
 */
void qtfs_client_call_async_any(struct qtfs_client *cl, struct qt_msg *req, enum qtfs_retry retry,
				qtfs_done_fn done, void *arg);
/*
 * The same for a request the server holds on purpose for up to @hold_ms
 * (WATCH): its deadline is that much later, so that a slow answer is not
 * taken for a lost one.
 */
void qtfs_client_call_async_held(struct qtfs_client *cl, struct qt_msg *req, enum qtfs_retry retry,
				 uint64_t hold_ms, qtfs_done_fn done, void *arg);

/*
 * Pick a ready slot for a new handle: its index and generation.  Waits up
 * to the deadline, except on the loop thread, which gets -EAGAIN at once.
 */
int qtfs_client_pick(struct qtfs_client *cl, unsigned *slot, uint64_t *gen);
/*
 * The same with a deadline of @until (g_get_monotonic_time()), and not slot
 * *@slot at generation *@gen (a connection a call was just lost on, which
 * may look ready a moment longer; none: *@slot G_MAXUINT).  Not on the loop thread.
 */
int qtfs_client_pick_other(struct qtfs_client *cl, gint64 until, unsigned *slot, uint64_t *gen);
/* For qtfs_client_call_on: no deadline (a relayed FIFO may block for as long as it likes). */
#define QTFS_NO_DEADLINE UINT64_MAX

/*
 * A call on slot @slot, generation @gen (a handle's connection), with a
 * deadline of @timeout_ms (0: the client's default; QTFS_NO_DEADLINE: none,
 * the call still ends if the connection does).  -ESTALE when that
 * connection is gone and a new one replaced it.
 */
int qtfs_client_call_on(struct qtfs_client *cl, unsigned slot, uint64_t gen, struct qt_msg *req,
			uint64_t timeout_ms, struct qt_msg **reply);
/*
 * While @ctl is set on the calling thread, the calls this thread makes with
 * QTFS_NO_DEADLINE can be interrupted through it (qt_call_interrupt(); the
 * server then ends the request with EINTR).  NULL clears it.
 */
void qtfs_client_set_interrupt(struct qt_call_ctl *ctl);
/*
 * Fire-and-forget call on a slot (RELEASE): errors are ignored.  The frame
 * may wait a moment for the next one to that host to go out with it
 * (qt_stream_send_lazy()), so that the host's loop wakes once for both.
 */
void qtfs_client_call_async(struct qtfs_client *cl, unsigned slot, uint64_t gen, struct qt_msg *req);

/*
 * Start a call on slot @slot, gen @gen, with no deadline beyond
 * @timeout_ms, and run @done(@arg, err, reply) from the loop thread when it
 * ends (POLL waits, and reads and getattrs by handle).  The reply is owned
 * by @done.  -ESTALE when that connection is gone, as for
 * qtfs_client_call_on().
 */
void qtfs_client_call_cb(struct qtfs_client *cl, unsigned slot, uint64_t gen, struct qt_msg *req,
			 uint64_t timeout_ms, qtfs_done_fn done, void *arg);

uint64_t qtfs_client_timeout_ms(const struct qtfs_client *cl);
/*
 * The server process's instance from the last MOUNT (QTFS_MNT_INSTANCE), 0
 * from a server that does not say.  Another one than that of the server a
 * lost call went out to: the server was restarted, and the call can no
 * longer be carried out.
 */
uint64_t qtfs_client_instance(struct qtfs_client *cl);
/*
 * The instance of the server slot @slot's connection at generation @gen
 * goes to (a CREATE's, qtfs_client_call_cb()); 0 when not known, or when
 * the slot is no longer at @gen (a call there is not sent: -ESTALE).
 */
uint64_t qtfs_client_slot_instance(struct qtfs_client *cl, unsigned slot, uint64_t gen);
/*
 * qtfs_client_call_until() with QTFS_ASK for a change, and into *@sent_to
 * the instance of the server it went out to (0: not known, or not sent).
 * Not the one qtfs_client_instance() says before the call: while a call
 * waits for a connection, the server may be restarted, and the call go to
 * the new one, which can still carry it out after a loss.
 */
int qtfs_client_call_change(struct qtfs_client *cl, struct qt_msg *req, gint64 until,
			    struct qt_msg **reply, uint64_t *sent_to);
/*
 * qtfs_client_call_async_any() with QTFS_ASK for a change, *@sent_to as
 * for qtfs_client_call_change(), written on the loop thread before @done runs.
 */
void qtfs_client_call_async_change(struct qtfs_client *cl, struct qt_msg *req, uint64_t *sent_to,
				   qtfs_done_fn done, void *arg);
