/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The event loop: one thread, never blocking, with two interchangeable
 * backends behind this interface (as Redis's ae.c sits over ae_epoll.c):
 *
 *   io_uring  multishot accept, multishot recv into a provided-buffer ring,
 *             sendmsg/writev with many frames per submission
 *   epoll     level-triggered readiness, read/writev
 *
 * QT_LOOP_AUTO picks io_uring and falls back to epoll when the kernel refuses
 * it (ENOSYS, EPERM from seccomp or kernel.io_uring_disabled, or a missing
 * feature).  The environment variable QT_LOOP_BACKEND=epoll|io_uring
 * overrides AUTO, for tests and for users on odd kernels.
 *
 * Threading: every function here must be called from the loop's thread,
 * except qt_loop_post(), qt_loop_stop() and qt_loop_wake(), which any
 * thread may call.  Before qt_loop_run() starts, the creating thread counts
 * as the loop thread.
 *
 * Objects:
 *   qt_timer     one-shot timer, monotonic milliseconds
 *   qt_watch     readiness of a foreign fd (pidfd, pty, signalfd...),
 *                level-triggered, re-armed after every callback
 *   qt_listener  accepts connections on a listening socket
 *   qt_stream    a byte stream (socket, or a read fd + write fd pair) with a
 *                queue of outgoing frames and a data callback; conn.c builds
 *                framed connections on it
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

enum qt_loop_backend {
	QT_LOOP_AUTO,
	QT_LOOP_URING,
	QT_LOOP_EPOLL,
};

struct qt_loop;
struct qt_timer;
struct qt_watch;
struct qt_listener;
struct qt_stream;

/*
 * 0 and *out, or -errno (with AUTO, only if neither backend works).  The
 * first call also tunes glibc malloc to keep frame-sized blocks in the heap
 * (see loop.c); MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ override it.
 */
int qt_loop_new(enum qt_loop_backend backend, struct qt_loop **out);
/* Closes every remaining stream, listener and watch without callbacks. */
void qt_loop_free(struct qt_loop *l);
typedef struct qt_loop qt_loop; /* for g_autoptr() */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(qt_loop, qt_loop_free)
/* Parse "auto", "io_uring" (or "uring"), "epoll".  0 or -EINVAL. */
int qt_loop_backend_parse(const char *s, enum qt_loop_backend *out);
enum qt_loop_backend qt_loop_backend(const struct qt_loop *l);
const char *qt_loop_backend_name(const struct qt_loop *l);

/* Run until qt_loop_stop().  0, or -errno if the backend failed. */
int qt_loop_run(struct qt_loop *l);
/* Run one iteration, waiting at most @timeout_ms (-1: until something happens). */
int qt_loop_run_once(struct qt_loop *l, int timeout_ms);
/*
 * Busy polling: after an iteration that had events, look for the next
 * ones without sleeping for up to @us microseconds (0, the default: go to
 * sleep at once).  A sleeping thread must be woken, which in a virtual
 * machine means waking a halted virtual CPU through the hypervisor, and
 * that can cost more than the event's own work (a FUSE request answered
 * from a cache, say); polling keeps the thread on its CPU while events
 * come close together, for at most @us of CPU time after the last of
 * them, and none while there are none.  Timers still run on time.  At
 * most QT_LOOP_POLL_MAX_US.  Before qt_loop_run(), or on the loop thread.
 */
#define QT_LOOP_POLL_MAX_US 10000
void qt_loop_set_poll(struct qt_loop *l, unsigned us);
/*
 * Loop thread: start sending what the streams have queued now, rather
 * than at the end of this turn of the loop (before the process stops
 * itself, for one).  What does not fit in the socket is sent later.
 */
void qt_loop_flush(struct qt_loop *l);
void qt_loop_stop(struct qt_loop *l);
/* Run @fn(@arg) on the loop thread soon.  Thread-safe; never fails. */
void qt_loop_post(struct qt_loop *l, void (*fn)(void *arg), void *arg);
/* True on the thread inside qt_loop_run(). */
bool qt_loop_in_thread(const struct qt_loop *l);
/* Monotonic time in ms, cached per iteration. */
uint64_t qt_loop_now_ms(struct qt_loop *l);

/* ---- timers ------------------------------------------------------------ */
typedef void (*qt_timer_fn)(void *arg);
/* Fire @fn once after @ms.  The handle is valid until it fires or is cancelled. */
struct qt_timer *qt_timer_add(struct qt_loop *l, uint64_t ms, qt_timer_fn fn, void *arg);
/* Cancel a pending timer; NULL is accepted.  Never call it after the timer fired. */
void qt_timer_cancel(struct qt_timer *t);

/* ---- fd watches -------------------------------------------------------- */
enum {
	QT_EV_IN = 0x1,
	QT_EV_OUT = 0x4,
	QT_EV_ERR = 0x8,
	QT_EV_HUP = 0x10,
};
typedef void (*qt_watch_fn)(struct qt_watch *w, int fd, uint32_t revents, void *arg);
/* Watch @fd for @events (QT_EV_IN/OUT).  The fd stays the caller's. */
struct qt_watch *qt_watch_add(struct qt_loop *l, int fd, uint32_t events, qt_watch_fn fn, void *arg);
void qt_watch_set_events(struct qt_watch *w, uint32_t events);
/* Stop watching; the callback is not called again.  NULL is accepted. */
void qt_watch_remove(struct qt_watch *w);

/* ---- listeners --------------------------------------------------------- */
/* @fd is a new non-blocking close-on-exec connected socket, owned by the callee. */
typedef void (*qt_accept_fn)(void *arg, int fd);
/* Takes ownership of the listening socket @fd. */
struct qt_listener *qt_listener_add(struct qt_loop *l, int fd, qt_accept_fn fn, void *arg);
/* Stop accepting and close the socket.  NULL is accepted. */
void qt_listener_remove(struct qt_listener *ls);

/* ---- file operations on the ring ---------------------------------------- */
/*
 * System calls on files run by the kernel for the loop, io_uring backend
 * only.  Each function returns -EOPNOTSUPP on the epoll backend (the caller
 * then uses a thread of its own), else 0 and, later, calls @fn on the loop
 * thread with what the system call returns (-errno on failure).  The kernel
 * completes at once what cannot block (a read from the page cache, a path
 * walk in the dentry cache) and runs the rest on its own workers, so the
 * loop thread never waits for a disk.  Buffers, strings and structs passed
 * in must stay valid until @fn runs; @fn is not called for operations still
 * in flight when the loop is freed.  Loop thread only.
 */
struct open_how;
struct statx;
typedef void (*qt_fop_fn)(void *arg, int res);
/* Whether the qt_fop_*() calls work on @l. */
bool qt_loop_has_fops(const struct qt_loop *l);
int qt_fop_read(struct qt_loop *l, int fd, void *buf, unsigned len, uint64_t off, qt_fop_fn fn,
		void *arg);
int qt_fop_write(struct qt_loop *l, int fd, const void *buf, unsigned len, uint64_t off,
		 qt_fop_fn fn, void *arg);
int qt_fop_fsync(struct qt_loop *l, int fd, bool datasync, qt_fop_fn fn, void *arg);
int qt_fop_fallocate(struct qt_loop *l, int fd, int mode, uint64_t off, uint64_t len, qt_fop_fn fn,
		     void *arg);
int qt_fop_close(struct qt_loop *l, int fd, qt_fop_fn fn, void *arg);
int qt_fop_openat2(struct qt_loop *l, int dirfd, const char *path, struct open_how *how,
		   qt_fop_fn fn, void *arg);
int qt_fop_statx(struct qt_loop *l, int dirfd, const char *path, int flags, unsigned mask,
		 struct statx *out, qt_fop_fn fn, void *arg);
int qt_fop_unlinkat(struct qt_loop *l, int dirfd, const char *name, int flags, qt_fop_fn fn,
		    void *arg);
int qt_fop_mkdirat(struct qt_loop *l, int dirfd, const char *name, unsigned mode, qt_fop_fn fn,
		   void *arg);
int qt_fop_renameat(struct qt_loop *l, int olddirfd, const char *oldname, int newdirfd,
		    const char *newname, unsigned flags, qt_fop_fn fn, void *arg);
int qt_fop_linkat(struct qt_loop *l, int olddirfd, const char *oldname, int newdirfd,
		  const char *newname, int flags, qt_fop_fn fn, void *arg);
int qt_fop_symlinkat(struct qt_loop *l, const char *target, int dirfd, const char *name,
		     qt_fop_fn fn, void *arg);

/*
 * Pipes: file data sent without copying it.  A pipe filled from a file
 * holds references to the file's page-cache pages, not copies; attached to
 * a frame as its tail (qt_msg_set_pipe_tail()), those pages go to the
 * socket by splice(2), and the kernel copies them once, into the peer's
 * buffer.  A read() and a send() would copy them twice.
 *
 * Pipes come from a process-wide pool (any thread), at most 64 at a time
 * in use or idle (two descriptors and up to 1 MiB of page references
 * each); past that qt_pipe_get() returns NULL.  A pipe has a slot
 * per page, whole or not: it takes QT_PIPE_DATA_MAX bytes from a
 * page-aligned file offset, a page less from any other.  qt_pipe_get()
 * returns NULL when the system refuses a pipe that size (a user past
 * fs.pipe-user-pages-soft, or a bigger QT_PIPE_DATA_MAX than
 * fs.pipe-max-size without CAP_SYS_RESOURCE), and the caller copies.  A
 * program that sends tails must ignore SIGPIPE.
 */
#define QT_PIPE_DATA_MAX (1u << 20)
struct qt_pipe;
struct qt_pipe *qt_pipe_get(void);
/* Back to the pool if it is empty, else closed. */
void qt_pipe_put(struct qt_pipe *p);
/*
 * Move up to @len bytes (at most what @p has room for: see above) of the
 * regular file @fd at @off into @p: the count, 0 at the end of the file,
 * or -errno.  Blocks while the file's pages are read from disk: not for
 * the loop thread (qt_fop_splice() is).
 */
ssize_t qt_pipe_fill(struct qt_pipe *p, int fd, uint64_t off, size_t len);
/*
 * Write up to @n bytes into the non-blocking pipe @wfd: the count that
 * went in, less than @n when the pipe filled (or failed).
 */
size_t qt_pipe_write_some(int wfd, const void *p, size_t n);
/* The read and write ends of @p (non-blocking). */
int qt_pipe_rfd(const struct qt_pipe *p);
int qt_pipe_wfd(const struct qt_pipe *p);
/* What @p holds: the tail of @m from now on (@m owns @p). */
void qt_msg_set_pipe_tail(struct qt_msg *m, struct qt_pipe *p, size_t len);
/* qt_pipe_fill() as a file operation (see qt_fop_read()). */
int qt_fop_splice(struct qt_loop *l, int fd, uint64_t off, struct qt_pipe *p, unsigned len,
		  qt_fop_fn fn, void *arg);

/* ---- streams ----------------------------------------------------------- */
struct qt_stream_ops {
	/* Bytes arrived.  The buffer is only valid during the call. */
	void (*data)(struct qt_stream *s, const uint8_t *p, size_t n, void *arg);
	/* End of input (@err 0) or a read/write error (-errno); reading stopped. */
	void (*eof)(struct qt_stream *s, int err, void *arg);
	/* Some queued bytes were written; qt_stream_queued() is smaller now. */
	void (*sent)(struct qt_stream *s, void *arg);
	/* The stream is closed and its fds are closed; free what refers to it.  Last call. */
	void (*closed)(struct qt_stream *s, void *arg);
};

/*
 * A stream over @rfd/@wfd (the same fd for a socket), both owned by the
 * stream from now on and made non-blocking.  Reading starts paused.
 */
struct qt_stream *qt_stream_new(struct qt_loop *l, int rfd, int wfd,
				const struct qt_stream_ops *ops, void *arg);
void qt_stream_set_reading(struct qt_stream *s, bool on);
/* Queue a finished frame for sending (its pipe tail too); takes ownership. */
void qt_stream_send(struct qt_stream *s, struct qt_msg *m);
/*
 * Frames go out in the order queued; with @on, a frame of fewer than
 * QT_STREAM_BULK bytes goes ahead of the larger ones queued before it that
 * have not begun to go out (small ones keep their order among themselves,
 * large ones theirs); a send then carries one large frame at most, so
 * that a small frame waits for one at most.  For a protocol whose peer
 * does not depend on the order of a large frame and a later small one
 * (fuse-qtfs: a lookup need not wait behind megabytes of writes); off by
 * default.
 */
#define QT_STREAM_BULK (16u * 1024)
void qt_stream_set_small_first(struct qt_stream *s, bool on);
/* Is @m, with its pipe tail, a large frame in that sense (QT_STREAM_BULK bytes or more)? */
bool qt_frame_is_bulk(const struct qt_msg *m);
/*
 * Queue a frame that nobody waits for (a close, or the answer to one):
 * it goes out with the next frame queued on @s, or with a send already in
 * flight, or after QT_STREAM_LAZY_MS, whichever comes first, so that it
 * costs the peer no wake-up of its own.  Frames keep their order (but
 * see qt_stream_set_small_first()).
 */
#define QT_STREAM_LAZY_MS 2
void qt_stream_send_lazy(struct qt_stream *s, struct qt_msg *m);
/* Bytes queued and not yet written. */
size_t qt_stream_queued(const struct qt_stream *s);
/*
 * What the frames queued on @s hold in memory, about: their bytes not yet
 * written and QT_STREAM_FRAME_COST for each frame (its struct and its
 * buffer's allocation).  Many tiny frames (acknowledgements, a few bytes
 * each on the wire) count for what they take: a peer that sends a small
 * request per answer it never reads fills our memory ten times faster than
 * the bytes say.  The measure flow control holds against a limit (lib/conn's
 * max_queued).
 */
#define QT_STREAM_FRAME_COST 512
size_t qt_stream_queued_cost(const struct qt_stream *s);
bool qt_stream_reading(const struct qt_stream *s);
/*
 * Close: stop reading, drop unsent data, close both fds, then call
 * ops->closed once (never from inside this call).
 */
void qt_stream_close(struct qt_stream *s);
int qt_stream_fd(const struct qt_stream *s);
struct qt_loop *qt_stream_loop(const struct qt_stream *s);

/*
 * Received bytes into a pipe (the receiving side of the pipes above): the
 * next @n bytes of @s's input go into the pipe whose (non-blocking) write
 * end is @pipe_wfd, not to ops->data.  Spliced from the socket or pipe
 * the stream reads, so that the kernel moves references to its buffers and
 * copies nothing; bytes the stream had already taken in are written.
 * A divert goes on while the owner is not reading (it is the rest of
 * something begun).  @done runs once, on the loop thread: with 0 when all
 * @n bytes are in the pipe, or with the count that did not go in because
 * the pipe filled first (a pipe slot per buffer fragment, however small),
 * which then arrives through ops->data as usual.  Call it from ops->data
 * or ops->... of @s, or anywhere on the loop thread; never while a divert
 * is in progress.  Nothing runs if the stream ends or is closed first.
 */
typedef void (*qt_stream_divert_fn)(struct qt_stream *s, size_t left, void *arg);
void qt_stream_divert(struct qt_stream *s, int pipe_wfd, size_t n, qt_stream_divert_fn done,
		      void *arg);
/*
 * Take input one buffer (64 KiB) at a time, the next only once the owner
 * has seen the last: for a stream that diverts.  io_uring's multishot
 * receive takes in whatever arrives, megabytes ahead of the owner, all of
 * it then copied into a divert's pipe.  Costs a submission per buffer.
 */
void qt_stream_bound_reads(struct qt_stream *s);
