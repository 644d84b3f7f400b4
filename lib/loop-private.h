/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What loop.c shares with its backends (loop-uring.c, loop-epoll.c).  Not
 * for use outside lib/loop*.c.
 *
 * Division of labour: loop.c owns timers, posted callbacks, deferred
 * callbacks, the send queue of each stream and object lifetimes; a backend
 * owns the kernel interface: how to wait, how to read, write, accept and
 * poll, and how to cancel what it started.
 *
 * Lifetime rule for streams, watches and listeners: "removing" one marks it
 * dead and asks the backend to cancel its operations; the memory is freed
 * by the backend once no operation of it is in flight (io_uring) or at once
 * (epoll), always from the loop's own iteration, never inside a user's call.
 */
#pragma once

#include <sys/uio.h>
#include <sys/socket.h>

#include "loop.h"

#define QT_STREAM_IOV_MAX 64
#define QT_READ_CHUNK (64 * 1024)

struct qt_timer {
	struct qt_loop *loop;
	uint64_t due;	 /* monotonic ms */
	uint64_t seq;	 /* ties broken by insertion order */
	size_t heap_idx; /* position in loop->timers */
	qt_timer_fn fn;
	void *arg;
};

struct qt_watch {
	struct qt_loop *loop;
	int fd;
	uint32_t events;
	qt_watch_fn fn;
	void *arg;
	bool dead;
	/* backend state */
	uint32_t armed_events; /* io_uring: mask of the poll in flight, 0 if none */
	bool armed;
	uint32_t registered; /* epoll: events registered */
	GList link; /* in loop->watches */
};

struct qt_listener {
	struct qt_loop *loop;
	int fd;
	qt_accept_fn fn;
	void *arg;
	bool dead;
	bool armed; /* io_uring: multishot accept in flight */
	struct qt_timer *retry; /* after EMFILE/ENFILE */
	bool registered; /* epoll: in the interest list */
	GList link; /* in loop->listeners */
};

struct qt_stream {
	struct qt_loop *loop;
	int rfd, wfd;
	bool is_socket;
	const struct qt_stream_ops *ops;
	void *arg;

	bool reading;	/* the owner wants data */
	bool eof;	/* input ended or failed; no more reads */
	bool dead;	/* closed by the owner */
	bool closed_cb; /* ops->closed has been scheduled */

	/* send queue: qt_msg frames, the head partly sent up to head_off */
	GQueue sendq;
	size_t head_off;
	size_t queued;
	unsigned bulk;	     /* frames in sendq of QT_STREAM_BULK bytes or more */
	unsigned iov_frames; /* of sendq's head, those the last qt__stream_fill_iov() took */
	bool small_first;    /* qt_stream_set_small_first() */
	bool write_pending; /* on loop->flush list */
	bool write_failed;
	struct qt_timer *lazy_timer; /* lazy frames wait in sendq (qt_stream_send_lazy) */

	/* a divert in progress (qt_stream_divert): dv_left > 0 */
	int dv_fd;
	size_t dv_left;
	qt_stream_divert_fn dv_done;
	void *dv_arg;
	bool dv_polling; /* io_uring: a poll for input in flight */
	bool bounded;	 /* qt_stream_bound_reads() */

	/* io_uring backend */
	bool recv_armed;
	bool recv_multishot; /* the receive armed is a multishot one */
	bool send_armed;
	bool send_polling; /* the send in flight is a poll for room (a pipe tail is next) */
	bool cancel_sent;
	unsigned ops_inflight;
	struct msghdr msg;
	struct iovec iov[QT_STREAM_IOV_MAX];
	uint8_t *rbuf; /* for non-socket reads, QT_READ_CHUNK bytes */

	/* epoll backend */
	uint32_t reg_r, reg_w; /* registered interest */

	GList flush_link; /* in loop->flush */
	GList all_link;	  /* in loop->streams */
};

struct qt_backend_ops {
	const char *name;
	int (*init)(struct qt_loop *l);
	void (*fini)(struct qt_loop *l);
	/* Wait up to @timeout_ms (-1 = forever) and dispatch completions/events. */
	int (*wait)(struct qt_loop *l, int timeout_ms);
	void (*wake)(struct qt_loop *l); /* thread-safe */
	void (*watch_update)(struct qt_watch *w);
	void (*watch_remove)(struct qt_watch *w);
	void (*listener_start)(struct qt_listener *ls);
	void (*listener_remove)(struct qt_listener *ls);
	void (*stream_add)(struct qt_stream *s);
	void (*stream_reading)(struct qt_stream *s); /* s->reading changed */
	/* A divert began: stop buffered reads and splice into s->dv_fd when input comes. */
	void (*stream_divert)(struct qt_stream *s);
	/* Write as much of the send queue as possible, or start doing so. */
	void (*stream_flush)(struct qt_stream *s);
	void (*stream_close)(struct qt_stream *s);
	/* Hand what stream_flush prepared to the kernel now (NULL: it already did). */
	void (*submit)(struct qt_loop *l);
};

struct qt_loop {
	const struct qt_backend_ops *be;
	enum qt_loop_backend kind;
	void *be_data;
	GThread *thread; /* set while running */
	unsigned poll_us; /* qt_loop_set_poll() */
	uint64_t events;  /* completions or events the backend has dispatched, ever */
	bool busy;	  /* the last wait found events: poll before sleeping */
	gint stop;	 /* atomic */
	uint64_t now_ms;

	GPtrArray *timers; /* binary min-heap of struct qt_timer* */
	uint64_t timer_seq;

	GMutex post_lock;
	GQueue posted; /* struct post*, protected by post_lock */
	bool post_wake_pending; /* protected by post_lock */

	GQueue flush; /* streams with data to write, via flush_link */
	GQueue streams; /* every stream not yet freed, via all_link */
	GQueue watches; /* via link */
	GQueue listeners; /* via link */
	GPtrArray *deferred_close; /* streams whose ops->closed is due */
	GPtrArray *graveyard; /* watches and listeners to free at the end of the iteration */
};

struct qt_pipe {
	int rfd, wfd; /* non-blocking */
};

/* loop.c helpers for backends */
void qt__loop_run_posted(struct qt_loop *l);
/*
 * Build s->iov from the send queue; returns the number of iovecs.  It stops
 * after the bytes of a frame with a pipe tail (*more then says the tail
 * follows: MSG_MORE), and returns 0 when the head frame's tail is next.
 */
int qt__stream_fill_iov(struct qt_stream *s, bool *more);
/* The head frame's tail is next: its pipe's read end and the bytes left. */
bool qt__stream_tail(const struct qt_stream *s, int *pipe_fd, size_t *left);
/* @n bytes of the queue were written: free finished frames and tell the owner. */
void qt__stream_consumed(struct qt_stream *s, size_t n);
/* Deliver received bytes to the owner (into the divert's pipe first, while one is in progress). */
void qt__stream_data(struct qt_stream *s, const uint8_t *p, size_t n);
/*
 * A divert's step for a backend: splice what input there is into the
 * pipe, without waiting.  Returns QT_DIVERT_DONE when the divert ended
 * (all in, or the pipe full: the owner was told), QT_DIVERT_WAIT when
 * the input is empty for now, or QT_DIVERT_FAILED when the stream ended
 * or failed (the owner was told through ops->eof).
 */
enum qt_divert_step { QT_DIVERT_DONE, QT_DIVERT_WAIT, QT_DIVERT_FAILED };
enum qt_divert_step qt__stream_divert_splice(struct qt_stream *s);
/* Input ended (0) or failed (-errno). */
void qt__stream_eof(struct qt_stream *s, int err);
/* The backend is done with the stream: close fds, schedule ops->closed. */
void qt__stream_release(struct qt_stream *s);
/* The backend is done with a removed listener / watch: free it after this iteration. */
void qt__listener_free(struct qt_listener *ls);
void qt__watch_free(struct qt_watch *w);
/* Accepted connection (ownership of @fd passes to the user). */
void qt__listener_accepted(struct qt_listener *ls, int fd);
/* Accept failed with @err: EMFILE-like errors pause accepting briefly. Returns true to keep going now. */
bool qt__listener_error(struct qt_listener *ls, int err);
void qt__watch_fire(struct qt_watch *w, uint32_t revents);

extern const struct qt_backend_ops qt__uring_backend;
extern const struct qt_backend_ops qt__epoll_backend;
