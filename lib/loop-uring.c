// SPDX-License-Identifier: Apache-2.0
/*
 * io_uring backend of the event loop (liburing 2.3, kernel 5.19+; 6.0+ for
 * multishot recv).
 *
 *   accept   one multishot accept per listener
 *   recv     one multishot recv per socket stream, buffers picked by the
 *            kernel from a provided-buffer ring shared by the loop (a
 *            single-shot one, re-armed after each, on a stream whose
 *            reads are bounded); pipes (stdio) use a plain read into the
 *            stream's own buffer
 *   divert   (qt_stream_divert) the receive is cancelled, then the loop
 *            thread splices into the pipe itself, with a POLLIN poll in
 *            flight instead while the input is empty
 *   send     one sendmsg/writev in flight per stream, carrying up to
 *            QT_STREAM_IOV_MAX queued frames; a frame's pipe tail is
 *            spliced by the loop thread, with a POLLOUT poll in flight
 *            instead while the socket is full
 *   watch    a single-shot poll, re-armed after each callback, which gives
 *            level-triggered behaviour
 *   wake     a read on an eventfd, re-armed after each completion
 *   fops     file system calls for the loop's owner (qt_fop_*()), one
 *            small record each, completed through its callback
 *
 * user_data is the object's pointer with the operation kind in its low
 * three bits (objects come from g_malloc and are at least 8-aligned);
 * 0 marks completions nobody waits for (cancellations).
 *
 * Lifetime: an object with operations in flight is only marked dead; the
 * last completion frees it (via loop.c's deferred lists).  If the kernel
 * lacks multishot for an opcode (-EINVAL), the loop switches to
 * single-shot operations for good.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "loop-private.h"

#define UR_ENTRIES 256
#define UR_CQ_ENTRIES 4096
#define UR_BGID 7
#define UR_NBUFS 64
#define UR_BUFSZ (64 * 1024)

enum ur_kind {
	K_WAKE = 1,
	K_WATCH = 2,
	K_ACCEPT = 3,
	K_RECV = 4,
	K_SEND = 5,
	K_FOP = 6,
	K_DIVERT = 7, /* a stream's poll for input to splice (qt_stream_divert) */
};

/* A file operation in flight (qt_fop_*()). */
struct ur_fop {
	qt_fop_fn fn;
	void *arg;
	GList link; /* in ur_loop.fops */
};

struct ur_loop {
	struct io_uring ring;
	struct io_uring_buf_ring *br;
	size_t br_size;
	uint8_t *bufs;
	int wakefd;
	uint64_t wakeval;
	bool multishot_recv;
	bool multishot_accept;
	GQueue fops; /* struct ur_fop in flight */
};

static struct ur_loop *UR(struct qt_loop *l) { return l->be_data; }

static uint64_t ud(void *obj, enum ur_kind k)
{
	return (uint64_t)(uintptr_t)obj | (uint64_t)k;
}

static struct io_uring_sqe *get_sqe(struct qt_loop *l)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&UR(l)->ring);

	while (!sqe) {
		/* The SQ is full: hand what we have to the kernel and try again. */
		io_uring_submit(&UR(l)->ring);
		sqe = io_uring_get_sqe(&UR(l)->ring);
	}
	return sqe;
}

static void cancel_ud(struct qt_loop *l, uint64_t data)
{
	struct io_uring_sqe *sqe = get_sqe(l);

	io_uring_prep_cancel64(sqe, data, 0);
	io_uring_sqe_set_data64(sqe, 0);
}

static void arm_wake(struct qt_loop *l)
{
	struct ur_loop *u = UR(l);
	struct io_uring_sqe *sqe = get_sqe(l);

	io_uring_prep_read(sqe, u->wakefd, &u->wakeval, sizeof(u->wakeval), 0);
	io_uring_sqe_set_data64(sqe, ud(u, K_WAKE));
}

static int ur_init(struct qt_loop *l)
{
	struct ur_loop *u = g_new0(struct ur_loop, 1);
	struct io_uring_params p = {.flags = IORING_SETUP_CQSIZE | IORING_SETUP_COOP_TASKRUN,
				    .cq_entries = UR_CQ_ENTRIES};
	struct io_uring_buf_reg reg = {0};
	int r;

	u->wakefd = -1;
	r = io_uring_queue_init_params(UR_ENTRIES, &u->ring, &p);
	if (r == -EINVAL) {
		/* Pre-5.19 kernels lack COOP_TASKRUN; it is only an optimisation. */
		memset(&p, 0, sizeof(p));
		p.flags = IORING_SETUP_CQSIZE;
		p.cq_entries = UR_CQ_ENTRIES;
		r = io_uring_queue_init_params(UR_ENTRIES, &u->ring, &p);
	}
	if (r < 0) {
		g_free(u);
		return r;
	}
	if (!(p.features & IORING_FEAT_FAST_POLL) || !(p.features & IORING_FEAT_NODROP)) {
		r = -EOPNOTSUPP;
		goto fail_ring;
	}

	u->br_size = UR_NBUFS * sizeof(struct io_uring_buf);
	u->br = mmap(NULL, u->br_size, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
	if (u->br == MAP_FAILED) {
		r = -errno;
		u->br = NULL;
		goto fail_ring;
	}
	reg.ring_addr = (uint64_t)(uintptr_t)u->br;
	reg.ring_entries = UR_NBUFS;
	reg.bgid = UR_BGID;
	r = io_uring_register_buf_ring(&u->ring, &reg, 0);
	if (r < 0)
		goto fail_br;
	u->bufs = g_malloc((size_t)UR_NBUFS * UR_BUFSZ);
	io_uring_buf_ring_init(u->br);
	for (unsigned i = 0; i < UR_NBUFS; i++)
		io_uring_buf_ring_add(u->br, u->bufs + (size_t)i * UR_BUFSZ, UR_BUFSZ, (unsigned short)i,
				      io_uring_buf_ring_mask(UR_NBUFS), (int)i);
	io_uring_buf_ring_advance(u->br, UR_NBUFS);

	u->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (u->wakefd < 0) {
		r = -errno;
		goto fail_bufs;
	}
	u->multishot_recv = true;
	u->multishot_accept = true;
	l->be_data = u;
	arm_wake(l);
	return 0;

fail_bufs:
	g_free(u->bufs);
	io_uring_unregister_buf_ring(&u->ring, UR_BGID);
fail_br:
	munmap(u->br, u->br_size);
fail_ring:
	io_uring_queue_exit(&u->ring);
	g_free(u);
	return r;
}

static void ur_fini(struct qt_loop *l)
{
	struct ur_loop *u = UR(l);

	/* Tearing down the ring cancels every operation still in flight. */
	io_uring_queue_exit(&u->ring);
	while (u->fops.head) {
		struct ur_fop *f = u->fops.head->data;

		g_queue_unlink(&u->fops, &f->link);
		g_free(f);
	}
	munmap(u->br, u->br_size);
	g_free(u->bufs);
	close(u->wakefd);
	g_free(u);
}

static void ur_wake(struct qt_loop *l)
{
	uint64_t one = 1;

	if (write(UR(l)->wakefd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is saturated, so a wake-up is pending anyway. */
	}
}

/* ---- watches ----------------------------------------------------------- */

static unsigned to_poll(uint32_t ev)
{
	return (ev & QT_EV_IN ? POLLIN : 0) | (ev & QT_EV_OUT ? POLLOUT : 0);
}

static uint32_t from_poll(unsigned ev)
{
	return (ev & POLLIN ? QT_EV_IN : 0) | (ev & POLLOUT ? QT_EV_OUT : 0) |
	       (ev & POLLERR ? QT_EV_ERR : 0) | (ev & (POLLHUP | POLLRDHUP) ? QT_EV_HUP : 0);
}

static void watch_arm(struct qt_watch *w)
{
	struct io_uring_sqe *sqe;

	if (w->dead || w->armed || !w->events)
		return;
	sqe = get_sqe(w->loop);
	io_uring_prep_poll_add(sqe, w->fd, to_poll(w->events));
	io_uring_sqe_set_data64(sqe, ud(w, K_WATCH));
	w->armed = true;
	w->armed_events = w->events;
}

static void ur_watch_update(struct qt_watch *w)
{
	if (!w->armed) {
		watch_arm(w);
		return;
	}
	/* Re-armed with the new mask when the old poll completes. */
	if (w->armed_events != w->events) {
		struct io_uring_sqe *sqe = get_sqe(w->loop);

		io_uring_prep_poll_remove(sqe, ud(w, K_WATCH));
		io_uring_sqe_set_data64(sqe, 0);
	}
}

static void ur_watch_remove(struct qt_watch *w)
{
	if (w->armed) {
		struct io_uring_sqe *sqe = get_sqe(w->loop);

		io_uring_prep_poll_remove(sqe, ud(w, K_WATCH));
		io_uring_sqe_set_data64(sqe, 0);
		return;
	}
	qt__watch_free(w);
}

static void watch_cqe(struct qt_watch *w, int res)
{
	w->armed = false;
	if (w->dead) {
		/* Removed while the poll was in flight: this was its last completion. */
		qt__watch_free(w);
		return;
	}
	if (res > 0)
		qt__watch_fire(w, from_poll((unsigned)res));
	else if (res < 0 && res != -ECANCELED)
		qt__watch_fire(w, QT_EV_ERR);
	/* Removed inside the callback: with no poll armed, remove() freed it already. */
	if (!w->dead)
		watch_arm(w);
}

/* ---- listeners --------------------------------------------------------- */

static void ur_listener_start(struct qt_listener *ls)
{
	struct io_uring_sqe *sqe;

	if (ls->dead || ls->armed)
		return;
	sqe = get_sqe(ls->loop);
	if (UR(ls->loop)->multishot_accept)
		io_uring_prep_multishot_accept(sqe, ls->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	else
		io_uring_prep_accept(sqe, ls->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	io_uring_sqe_set_data64(sqe, ud(ls, K_ACCEPT));
	ls->armed = true;
}

static void ur_listener_remove(struct qt_listener *ls)
{
	if (ls->armed) {
		cancel_ud(ls->loop, ud(ls, K_ACCEPT));
		return;
	}
	qt__listener_free(ls);
}

static void accept_cqe(struct qt_listener *ls, int res, unsigned flags)
{
	bool more = flags & IORING_CQE_F_MORE;

	if (!more)
		ls->armed = false;
	if (ls->dead) {
		/* Removed while accepting: drop stragglers, free after the last completion. */
		if (res >= 0)
			close(res);
		if (!ls->armed)
			qt__listener_free(ls);
		return;
	}
	if (res >= 0) {
		qt__listener_accepted(ls, res);
	} else if (res == -EINVAL && UR(ls->loop)->multishot_accept && !more) {
		qt_debug("loop(io_uring): multishot accept unsupported, using single-shot");
		UR(ls->loop)->multishot_accept = false;
	} else if (res != -ECANCELED && !qt__listener_error(ls, res) && ls->armed) {
		cancel_ud(ls->loop, ud(ls, K_ACCEPT));
	}
	/* Removed inside the callback: remove() freed it or cancelled the accept. */
	if (ls->dead)
		return;
	if (!ls->armed && !ls->retry)
		ur_listener_start(ls);
}

/* ---- streams ----------------------------------------------------------- */

static void ur_stream_add(struct qt_stream *s)
{
	if (!s->is_socket)
		s->rbuf = g_malloc(QT_READ_CHUNK);
}

static void divert_step(struct qt_stream *s);
static void stream_maybe_release(struct qt_stream *s);

static void recv_arm(struct qt_stream *s)
{
	struct qt_loop *l = s->loop;
	struct io_uring_sqe *sqe;

	if (s->recv_armed || s->eof || s->dead)
		return;
	/* A divert splices once no receive is in flight (the one before it was cancelled). */
	if (s->dv_left) {
		if (!s->dv_polling)
			divert_step(s);
		return;
	}
	if (!s->reading)
		return;
	sqe = get_sqe(l);
	if (!s->is_socket) {
		io_uring_prep_read(sqe, s->rfd, s->rbuf, QT_READ_CHUNK, (uint64_t)-1);
	} else {
		s->recv_multishot = UR(l)->multishot_recv && !s->bounded;
		if (s->recv_multishot)
			io_uring_prep_recv_multishot(sqe, s->rfd, NULL, 0, 0);
		else
			io_uring_prep_recv(sqe, s->rfd, NULL, 0, 0);
		sqe->flags |= IOSQE_BUFFER_SELECT;
		sqe->buf_group = UR_BGID;
	}
	io_uring_sqe_set_data64(sqe, ud(s, K_RECV));
	s->recv_armed = true;
	s->cancel_sent = false;
	s->ops_inflight++;
}

/* End the receive in flight (its completion re-arms what is wanted then). */
static void recv_cancel(struct qt_stream *s)
{
	if (s->recv_armed && !s->cancel_sent) {
		cancel_ud(s->loop, ud(s, K_RECV));
		s->cancel_sent = true;
	}
}

static void ur_stream_reading(struct qt_stream *s)
{
	if (s->reading && !(s->bounded && s->recv_armed && s->recv_multishot))
		recv_arm(s);
	else
		recv_cancel(s); /* paused, or bounded now: re-armed single */
}

/*
 * A divert: the multishot receive is cancelled first (what it still
 * delivers goes into the pipe by copy, in qt__stream_data()); once it has
 * ended, the loop thread splices from the socket itself, without waiting,
 * and a poll for input stands in for it while the socket is empty.
 * io_uring's own splice would run on one of its kernel workers.
 */
static void divert_step(struct qt_stream *s)
{
	struct io_uring_sqe *sqe;

	if (qt__stream_divert_splice(s) != QT_DIVERT_WAIT) {
		recv_arm(s); /* the divert is over: back to receiving (if it still reads) */
		return;
	}
	sqe = get_sqe(s->loop);
	io_uring_prep_poll_add(sqe, s->rfd, POLLIN);
	io_uring_sqe_set_data64(sqe, ud(s, K_DIVERT));
	s->dv_polling = true;
	s->ops_inflight++;
}

static void ur_stream_divert(struct qt_stream *s)
{
	if (s->recv_armed)
		recv_cancel(s);
	else
		recv_arm(s);
}

static void divert_cqe(struct qt_stream *s, int res)
{
	(void)res; /* the splice finds out what the poll saw, errors included */
	s->dv_polling = false;
	s->ops_inflight--;
	if (s->dead) {
		stream_maybe_release(s);
		return;
	}
	recv_arm(s);
}

/*
 * The head frame's pipe tail: spliced by the loop thread itself, without
 * waiting (io_uring would hand every splice to a kernel worker, which on a
 * full socket retries without sleeping).  When the socket is full, a poll
 * for POLLOUT stands in for the send until there is room.  False: the
 * stream failed or was closed meanwhile.
 */
static bool splice_tail(struct qt_stream *s, int pfd, size_t left)
{
	struct io_uring_sqe *sqe;
	ssize_t w;

	do
		w = splice(pfd, NULL, s->wfd, NULL, left, SPLICE_F_NONBLOCK);
	while (w < 0 && errno == EINTR);
	if (w > 0) {
		qt__stream_consumed(s, (size_t)w);
		return !s->dead && !s->write_failed;
	}
	if (w < 0 && errno == EAGAIN) {
		sqe = get_sqe(s->loop);
		io_uring_prep_poll_add(sqe, s->wfd, POLLOUT);
		io_uring_sqe_set_data64(sqe, ud(s, K_SEND));
		s->send_armed = true;
		s->send_polling = true;
		s->ops_inflight++;
		return false;
	}
	s->write_failed = true;
	qt__stream_eof(s, w < 0 ? -errno : -EPIPE);
	return false;
}

static void ur_stream_flush(struct qt_stream *s)
{
	struct io_uring_sqe *sqe;
	size_t left;
	bool more;
	int n, pfd;

	for (;;) {
		if (s->send_armed || s->dead || s->write_failed || !s->sendq.length)
			return;
		if (!qt__stream_tail(s, &pfd, &left))
			break;
		if (!splice_tail(s, pfd, left))
			return;
	}
	n = qt__stream_fill_iov(s, &more);
	sqe = get_sqe(s->loop);
	if (s->is_socket) {
		memset(&s->msg, 0, sizeof(s->msg));
		s->msg.msg_iov = s->iov;
		s->msg.msg_iovlen = (size_t)n;
		io_uring_prep_sendmsg(sqe, s->wfd, &s->msg, MSG_NOSIGNAL | (more ? MSG_MORE : 0));
	} else {
		io_uring_prep_writev(sqe, s->wfd, s->iov, (unsigned)n, (uint64_t)-1);
	}
	io_uring_sqe_set_data64(sqe, ud(s, K_SEND));
	s->send_armed = true;
	s->ops_inflight++;
}

static void stream_maybe_release(struct qt_stream *s)
{
	if (s->dead && s->ops_inflight == 0)
		qt__stream_release(s);
}

static void ur_stream_close(struct qt_stream *s)
{
	struct io_uring_sqe *sqe;

	if (s->ops_inflight == 0) {
		qt__stream_release(s);
		return;
	}
	sqe = get_sqe(s->loop);
	io_uring_prep_cancel_fd(sqe, s->rfd, IORING_ASYNC_CANCEL_ALL);
	io_uring_sqe_set_data64(sqe, 0);
	if (s->wfd != s->rfd) {
		sqe = get_sqe(s->loop);
		io_uring_prep_cancel_fd(sqe, s->wfd, IORING_ASYNC_CANCEL_ALL);
		io_uring_sqe_set_data64(sqe, 0);
	}
}

static void recycle_buf(struct qt_loop *l, unsigned bid)
{
	struct ur_loop *u = UR(l);

	io_uring_buf_ring_add(u->br, u->bufs + (size_t)bid * UR_BUFSZ, UR_BUFSZ, (unsigned short)bid,
			      io_uring_buf_ring_mask(UR_NBUFS), 0);
	io_uring_buf_ring_advance(u->br, 1);
}

static void recv_cqe(struct qt_stream *s, int res, unsigned flags)
{
	struct qt_loop *l = s->loop;
	bool more = flags & IORING_CQE_F_MORE;

	if (!more) {
		s->recv_armed = false;
		s->ops_inflight--;
	}
	if (res > 0) {
		if (!s->is_socket) {
			qt__stream_data(s, s->rbuf, (size_t)res);
		} else if (flags & IORING_CQE_F_BUFFER) {
			unsigned bid = flags >> IORING_CQE_BUFFER_SHIFT;

			qt__stream_data(s, UR(l)->bufs + (size_t)bid * UR_BUFSZ, (size_t)res);
			recycle_buf(l, bid);
		}
	} else if (res == 0) {
		qt__stream_eof(s, 0);
	} else if (res == -ENOBUFS || res == -ECANCELED || res == -EINTR) {
		/* Out of buffers, or paused: re-armed below if still wanted. */
	} else if (res == -EINVAL && s->is_socket && UR(l)->multishot_recv) {
		qt_debug("loop(io_uring): multishot recv unsupported, using single-shot");
		UR(l)->multishot_recv = false;
	} else {
		qt__stream_eof(s, res);
	}
	if (s->dead) {
		stream_maybe_release(s);
		return;
	}
	recv_arm(s);
}

static void send_cqe(struct qt_stream *s, int res)
{
	bool polled = s->send_polling;

	s->send_armed = false;
	s->send_polling = false;
	s->ops_inflight--;
	if (s->dead) {
		struct qt_msg *m;

		while ((m = g_queue_pop_head(&s->sendq)))
			qt_msg_free(m);
		s->queued = 0;
		s->bulk = 0;
		stream_maybe_release(s);
		return;
	}
	if (res > 0 && polled) { /* room for the tail: a revents mask, not a count */
		ur_stream_flush(s);
	} else if (res > 0) {
		qt__stream_consumed(s, (size_t)res);
		if (!s->dead)
			ur_stream_flush(s);
	} else if (res == -EINTR || res == -EAGAIN) {
		ur_stream_flush(s);
	} else {
		s->write_failed = true;
		qt__stream_eof(s, res < 0 ? res : -EPIPE);
	}
	stream_maybe_release(s);
}

/* ---- file operations ---------------------------------------------------- */

bool qt_loop_has_fops(const struct qt_loop *l)
{
	return l->kind == QT_LOOP_URING;
}

/* An SQE for a new file operation completing into @fn(@arg), or NULL on epoll. */
static struct io_uring_sqe *fop_sqe(struct qt_loop *l, qt_fop_fn fn, void *arg, struct ur_fop **out)
{
	struct ur_fop *f;

	if (!qt_loop_has_fops(l))
		return NULL;
	f = g_new0(struct ur_fop, 1);
	f->fn = fn;
	f->arg = arg;
	f->link.data = f;
	g_queue_push_tail_link(&UR(l)->fops, &f->link);
	*out = f;
	return get_sqe(l);
}

/* Prepare the SQE with @prep (a liburing helper on sqe_), then tag it. */
#define FOP(l, fn, arg, prep)                                                \
	do {                                                                 \
		struct ur_fop *f_;                                           \
		struct io_uring_sqe *sqe_ = fop_sqe((l), (fn), (arg), &f_); \
		if (!sqe_)                                                   \
			return -EOPNOTSUPP;                                  \
		prep;                                                        \
		io_uring_sqe_set_data64(sqe_, ud(f_, K_FOP));                \
		return 0;                                                    \
	} while (0)

int qt_fop_read(struct qt_loop *l, int fd, void *buf, unsigned len, uint64_t off, qt_fop_fn fn,
		void *arg)
{
	FOP(l, fn, arg, io_uring_prep_read(sqe_, fd, buf, len, off));
}

int qt_fop_splice(struct qt_loop *l, int fd, uint64_t off, struct qt_pipe *p, unsigned len,
		  qt_fop_fn fn, void *arg)
{
	FOP(l, fn, arg,
	    io_uring_prep_splice(sqe_, fd, (int64_t)off, p->wfd, -1, MIN(len, QT_PIPE_DATA_MAX), 0));
}

int qt_fop_write(struct qt_loop *l, int fd, const void *buf, unsigned len, uint64_t off,
		 qt_fop_fn fn, void *arg)
{
	FOP(l, fn, arg, io_uring_prep_write(sqe_, fd, buf, len, off));
}

int qt_fop_fsync(struct qt_loop *l, int fd, bool datasync, qt_fop_fn fn, void *arg)
{
	FOP(l, fn, arg, io_uring_prep_fsync(sqe_, fd, datasync ? IORING_FSYNC_DATASYNC : 0));
}

int qt_fop_fallocate(struct qt_loop *l, int fd, int mode, uint64_t off, uint64_t len, qt_fop_fn fn,
		     void *arg)
{
	FOP(l, fn, arg, io_uring_prep_fallocate(sqe_, fd, mode, off, len));
}

int qt_fop_close(struct qt_loop *l, int fd, qt_fop_fn fn, void *arg)
{
	FOP(l, fn, arg, io_uring_prep_close(sqe_, fd));
}

int qt_fop_openat2(struct qt_loop *l, int dirfd, const char *path, struct open_how *how,
		   qt_fop_fn fn, void *arg)
{
	FOP(l, fn, arg, io_uring_prep_openat2(sqe_, dirfd, path, how));
}

int qt_fop_statx(struct qt_loop *l, int dirfd, const char *path, int flags, unsigned mask,
		 struct statx *out, qt_fop_fn fn, void *arg)
{
	FOP(l, fn, arg, io_uring_prep_statx(sqe_, dirfd, path, flags, mask, out));
}

int qt_fop_unlinkat(struct qt_loop *l, int dirfd, const char *name, int flags, qt_fop_fn fn,
		    void *arg)
{
	FOP(l, fn, arg, io_uring_prep_unlinkat(sqe_, dirfd, name, flags));
}

int qt_fop_mkdirat(struct qt_loop *l, int dirfd, const char *name, unsigned mode, qt_fop_fn fn,
		   void *arg)
{
	FOP(l, fn, arg, io_uring_prep_mkdirat(sqe_, dirfd, name, (mode_t)mode));
}

int qt_fop_renameat(struct qt_loop *l, int olddirfd, const char *oldname, int newdirfd,
		    const char *newname, unsigned flags, qt_fop_fn fn, void *arg)
{
	FOP(l, fn, arg, io_uring_prep_renameat(sqe_, olddirfd, oldname, newdirfd, newname, flags));
}

int qt_fop_linkat(struct qt_loop *l, int olddirfd, const char *oldname, int newdirfd,
		  const char *newname, int flags, qt_fop_fn fn, void *arg)
{
	FOP(l, fn, arg, io_uring_prep_linkat(sqe_, olddirfd, oldname, newdirfd, newname, flags));
}

int qt_fop_symlinkat(struct qt_loop *l, const char *target, int dirfd, const char *name,
		     qt_fop_fn fn, void *arg)
{
	FOP(l, fn, arg, io_uring_prep_symlinkat(sqe_, target, dirfd, name));
}

static void fop_cqe(struct qt_loop *l, struct ur_fop *f, int res)
{
	g_queue_unlink(&UR(l)->fops, &f->link);
	f->fn(f->arg, res);
	g_free(f);
}

/* ---- waiting ----------------------------------------------------------- */

static void dispatch(struct qt_loop *l, uint64_t data, int res, unsigned flags)
{
	void *obj = (void *)(uintptr_t)(data & ~(uint64_t)7);

	switch ((enum ur_kind)(data & 7)) {
	case K_WAKE:
		arm_wake(l);
		break;
	case K_WATCH:
		watch_cqe(obj, res);
		break;
	case K_ACCEPT:
		accept_cqe(obj, res, flags);
		break;
	case K_RECV:
		recv_cqe(obj, res, flags);
		break;
	case K_SEND:
		send_cqe(obj, res);
		break;
	case K_DIVERT:
		divert_cqe(obj, res);
		break;
	case K_FOP:
		fop_cqe(l, obj, res);
		break;
	default:
		break;
	}
}

static int ur_wait(struct qt_loop *l, int timeout_ms)
{
	struct io_uring *ring = &UR(l)->ring;
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
	int r;

	if (timeout_ms == 0) {
		/* Into the kernel even with nothing to submit: completions may be waiting there. */
		r = io_uring_submit_and_get_events(ring);
	} else {
		struct __kernel_timespec ts = {.tv_sec = timeout_ms / 1000,
					       .tv_nsec = (long long)(timeout_ms % 1000) * 1000000};

		r = io_uring_submit_and_wait_timeout(ring, &cqe, 1, timeout_ms < 0 ? NULL : &ts, NULL);
	}
	if (r < 0 && r != -ETIME && r != -EINTR && r != -EBUSY && r != -EAGAIN)
		return r;
	/* Completions may queue new submissions; those go out on the next wait. */
	io_uring_for_each_cqe(ring, head, cqe) {
		dispatch(l, cqe->user_data, cqe->res, cqe->flags);
		n++;
	}
	io_uring_cq_advance(ring, n);
	l->events += n;
	return 0;
}

static void ur_submit(struct qt_loop *l)
{
	io_uring_submit(&UR(l)->ring);
}

const struct qt_backend_ops qt__uring_backend = {
	.name = "io_uring",
	.init = ur_init,
	.fini = ur_fini,
	.wait = ur_wait,
	.wake = ur_wake,
	.watch_update = ur_watch_update,
	.watch_remove = ur_watch_remove,
	.listener_start = ur_listener_start,
	.listener_remove = ur_listener_remove,
	.stream_add = ur_stream_add,
	.stream_reading = ur_stream_reading,
	.stream_divert = ur_stream_divert,
	.stream_flush = ur_stream_flush,
	.stream_close = ur_stream_close,
	.submit = ur_submit,
};
