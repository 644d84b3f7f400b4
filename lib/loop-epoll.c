// SPDX-License-Identifier: Apache-2.0
/*
 * epoll backend of the event loop: level-triggered readiness, read(2) into
 * one shared buffer, writev(2) straight from the send queues (splice(2)
 * for a frame's pipe tail, and from the input while a divert lasts).  Used when
 * io_uring is unavailable and forced in tests so both backends stay
 * honest.
 *
 * Each epoll registration points at a small tagged struct so one event
 * array can carry streams (read side and write side separately, because a
 * stdio stream has two fds), watches, listeners and the wake-up eventfd.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "loop-private.h"

#define EPOLL_BATCH 128
#define READS_PER_WAKE 8

enum tag_kind {
	TAG_WAKE,
	TAG_WATCH,
	TAG_LISTENER,
	TAG_STREAM_R,
	TAG_STREAM_W,
};

struct tag {
	enum tag_kind kind;
	void *obj;
};

/* Per-stream backend data: tags must be stable while registered. */
struct ep_stream {
	struct tag rtag, wtag;
};

struct ep_loop {
	int epfd;
	int wakefd;
	struct tag waketag;
	uint8_t *buf; /* QT_READ_CHUNK, shared by all reads */
	GHashTable *tags; /* object -> struct ep_stream* or struct tag* */
};

static struct ep_loop *EP(struct qt_loop *l) { return l->be_data; }

static int ep_init(struct qt_loop *l)
{
	struct ep_loop *e = g_new0(struct ep_loop, 1);
	struct epoll_event ev = {.events = EPOLLIN};
	int r;

	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	e->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (e->epfd < 0 || e->wakefd < 0) {
		r = -errno;
		goto fail;
	}
	e->waketag.kind = TAG_WAKE;
	ev.data.ptr = &e->waketag;
	if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->wakefd, &ev) < 0) {
		r = -errno;
		goto fail;
	}
	e->buf = g_malloc(QT_READ_CHUNK);
	e->tags = g_hash_table_new_full(NULL, NULL, NULL, g_free);
	l->be_data = e;
	return 0;
fail:
	if (e->epfd >= 0)
		close(e->epfd);
	if (e->wakefd >= 0)
		close(e->wakefd);
	g_free(e);
	return r;
}

static void ep_fini(struct qt_loop *l)
{
	struct ep_loop *e = EP(l);

	close(e->epfd);
	close(e->wakefd);
	g_free(e->buf);
	g_hash_table_destroy(e->tags);
	g_free(e);
}

static void ep_wake(struct qt_loop *l)
{
	uint64_t one = 1;

	if (write(EP(l)->wakefd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is saturated, so a wake-up is pending anyway. */
	}
}

/* Register, modify or remove @fd so that its interest becomes @want. */
static void ep_set(struct qt_loop *l, int fd, struct tag *tag, uint32_t *have, uint32_t want)
{
	struct epoll_event ev = {.events = want, .data.ptr = tag};
	int op;

	if (*have == want)
		return;
	if (!want)
		op = EPOLL_CTL_DEL;
	else if (!*have)
		op = EPOLL_CTL_ADD;
	else
		op = EPOLL_CTL_MOD;
	if (epoll_ctl(EP(l)->epfd, op, fd, &ev) < 0)
		qt_debug("loop(epoll): epoll_ctl(%d, fd %d) failed: %s", op, fd, g_strerror(errno));
	*have = want;
}

/* ---- watches ----------------------------------------------------------- */

static uint32_t to_epoll(uint32_t ev)
{
	return (ev & QT_EV_IN ? EPOLLIN : 0) | (ev & QT_EV_OUT ? EPOLLOUT : 0);
}

static uint32_t from_epoll(uint32_t ev)
{
	return (ev & EPOLLIN ? QT_EV_IN : 0) | (ev & EPOLLOUT ? QT_EV_OUT : 0) |
	       (ev & EPOLLERR ? QT_EV_ERR : 0) | (ev & (EPOLLHUP | EPOLLRDHUP) ? QT_EV_HUP : 0);
}

static struct tag *tag_for(struct qt_loop *l, void *obj, enum tag_kind kind)
{
	struct tag *t = g_hash_table_lookup(EP(l)->tags, obj);

	if (!t) {
		t = g_new0(struct tag, 1);
		t->kind = kind;
		t->obj = obj;
		g_hash_table_insert(EP(l)->tags, obj, t);
	}
	return t;
}

/*
 * Events already fetched in this batch may still point at the tag, so it
 * goes to the graveyard with the object instead of being freed now.
 */
static void tag_bury(struct qt_loop *l, void *obj)
{
	gpointer tag = g_hash_table_lookup(EP(l)->tags, obj);

	if (tag) {
		g_hash_table_steal(EP(l)->tags, obj);
		g_ptr_array_add(l->graveyard, tag);
	}
}

static void ep_watch_update(struct qt_watch *w)
{
	struct tag *t = tag_for(w->loop, w, TAG_WATCH);

	ep_set(w->loop, w->fd, t, &w->registered, to_epoll(w->events));
}

static void ep_watch_remove(struct qt_watch *w)
{
	ep_set(w->loop, w->fd, NULL, &w->registered, 0);
	tag_bury(w->loop, w);
	qt__watch_free(w);
}

/* ---- listeners --------------------------------------------------------- */

static void ep_listener_start(struct qt_listener *ls)
{
	struct tag *t = tag_for(ls->loop, ls, TAG_LISTENER);
	uint32_t have = ls->registered ? EPOLLIN : 0;

	ep_set(ls->loop, ls->fd, t, &have, EPOLLIN);
	ls->registered = true;
}

static void ep_listener_pause(struct qt_listener *ls)
{
	uint32_t have = ls->registered ? EPOLLIN : 0;

	ep_set(ls->loop, ls->fd, NULL, &have, 0);
	ls->registered = false;
}

static void ep_listener_remove(struct qt_listener *ls)
{
	ep_listener_pause(ls);
	tag_bury(ls->loop, ls);
	qt__listener_free(ls);
}

static void ep_accept(struct qt_listener *ls)
{
	for (int i = 0; i < 64 && !ls->dead; i++) {
		int fd = accept4(ls->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd >= 0) {
			qt__listener_accepted(ls, fd);
			continue;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		if (!qt__listener_error(ls, -errno)) {
			ep_listener_pause(ls);
			return;
		}
	}
}

/* ---- streams ----------------------------------------------------------- */

static struct ep_stream *ep_stream_of(struct qt_stream *s)
{
	return g_hash_table_lookup(EP(s->loop)->tags, s);
}

static void ep_stream_add(struct qt_stream *s)
{
	struct ep_stream *es = g_new0(struct ep_stream, 1);

	es->rtag.kind = TAG_STREAM_R;
	es->rtag.obj = s;
	es->wtag.kind = TAG_STREAM_W;
	es->wtag.obj = s;
	g_hash_table_insert(EP(s->loop)->tags, s, es);
}

/*
 * Interest for the stream's fds.  With one fd for both directions the two
 * masks are merged into one registration.
 */
static void ep_stream_update(struct qt_stream *s)
{
	struct ep_stream *es = ep_stream_of(s);
	bool want_r = (s->reading || s->dv_left) && !s->eof && !s->dead;
	bool want_w = s->sendq.length && !s->write_failed && !s->dead && s->send_armed;

	if (s->rfd == s->wfd) {
		uint32_t ev = (want_r ? EPOLLIN | EPOLLRDHUP : 0) | (want_w ? EPOLLOUT : 0);

		ep_set(s->loop, s->rfd, &es->rtag, &s->reg_r, ev);
	} else {
		ep_set(s->loop, s->rfd, &es->rtag, &s->reg_r, want_r ? EPOLLIN : 0);
		ep_set(s->loop, s->wfd, &es->wtag, &s->reg_w, want_w ? EPOLLOUT : 0);
	}
}

static void ep_stream_reading(struct qt_stream *s)
{
	ep_stream_update(s);
}

/* Input is watched as long as the divert lasts; the next event splices. */
static void ep_stream_divert(struct qt_stream *s)
{
	ep_stream_update(s);
}

/* Write until the queue is empty or the kernel pushes back. */
static void ep_stream_flush(struct qt_stream *s)
{
	while (s->sendq.length && !s->dead && !s->write_failed) {
		size_t left;
		bool more;
		int n, pfd;
		ssize_t w;

		if (qt__stream_tail(s, &pfd, &left)) {
			w = splice(pfd, NULL, s->wfd, NULL, left, SPLICE_F_NONBLOCK);
			if (w == 0) {
				errno = EPIPE;
				w = -1;
			}
		} else {
			n = qt__stream_fill_iov(s, &more);
			if (s->is_socket) {
				struct msghdr mh = {.msg_iov = s->iov, .msg_iovlen = (size_t)n};

				w = sendmsg(s->wfd, &mh,
					    MSG_NOSIGNAL | MSG_DONTWAIT | (more ? MSG_MORE : 0));
			} else {
				w = writev(s->wfd, s->iov, n);
			}
		}
		/* Written or not, none of it is in flight: only a partly sent head is pinned. */
		s->iov_frames = 0;
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			/* send_armed doubles as "waiting for EPOLLOUT" here. */
			s->send_armed = true;
			ep_stream_update(s);
			return;
		}
		if (w < 0) {
			int err = -errno;

			s->send_armed = false;
			ep_stream_update(s);
			qt__stream_eof(s, err);
			s->write_failed = true;
			return;
		}
		qt__stream_consumed(s, (size_t)w);
	}
	if (s->send_armed) {
		s->send_armed = false;
		ep_stream_update(s);
	}
}

static void ep_stream_read(struct qt_stream *s)
{
	uint8_t *buf = EP(s->loop)->buf;

	for (int i = 0; i < READS_PER_WAKE && !s->eof && !s->dead; i++) {
		ssize_t n;

		/* A divert splices (see qt_stream_divert); level-triggered input brings it back. */
		if (s->dv_left) {
			if (qt__stream_divert_splice(s) != QT_DIVERT_DONE)
				return;
			ep_stream_update(s); /* it may not be reading */
			continue;
		}
		if (!s->reading)
			break;
		n = read(s->rfd, buf, QT_READ_CHUNK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			int err = n < 0 ? -errno : 0;

			qt__stream_eof(s, err);
			if (!s->dead)
				ep_stream_update(s);
			return;
		}
		qt__stream_data(s, buf, (size_t)n);
		if ((size_t)n < QT_READ_CHUNK)
			return;
	}
}

static void ep_stream_close(struct qt_stream *s)
{
	struct ep_stream *es = ep_stream_of(s);

	ep_set(s->loop, s->rfd, &es->rtag, &s->reg_r, 0);
	if (s->wfd != s->rfd)
		ep_set(s->loop, s->wfd, &es->wtag, &s->reg_w, 0);
	s->send_armed = false;
	/* Frames still queued are dropped with the stream. */
	tag_bury(s->loop, s);
	qt__stream_release(s);
}

/* ---- waiting ----------------------------------------------------------- */

static void dispatch(struct qt_loop *l, struct epoll_event *ev)
{
	struct tag *t = ev->data.ptr;

	switch (t->kind) {
	case TAG_WAKE: {
		uint64_t v;

		if (read(EP(l)->wakefd, &v, sizeof(v)) < 0) {
			/* EAGAIN: someone else drained it. */
		}
		break;
	}
	case TAG_WATCH:
		qt__watch_fire(t->obj, from_epoll(ev->events));
		break;
	case TAG_LISTENER: {
		struct qt_listener *ls = t->obj;

		if (!ls->dead)
			ep_accept(ls);
		break;
	}
	case TAG_STREAM_R:
	case TAG_STREAM_W: {
		struct qt_stream *s = t->obj;

		if (s->dead)
			break;
		if ((ev->events & EPOLLOUT) && s->send_armed)
			ep_stream_flush(s);
		if (!s->dead && (ev->events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP | EPOLLERR)) &&
		    t->kind == TAG_STREAM_R)
			ep_stream_read(s);
		if (!s->dead && t->kind == TAG_STREAM_W && (ev->events & (EPOLLERR | EPOLLHUP))) {
			s->write_failed = true;
			qt__stream_eof(s, -EPIPE);
		}
		break;
	}
	}
}

static int ep_wait(struct qt_loop *l, int timeout_ms)
{
	struct epoll_event evs[EPOLL_BATCH];
	int n = epoll_wait(EP(l)->epfd, evs, EPOLL_BATCH, timeout_ms);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	/*
	 * An object removed by an earlier event in this batch is only marked
	 * dead; it and its tag live until the end of the iteration, so the
	 * pointers in later events stay valid.
	 */
	for (int i = 0; i < n; i++)
		dispatch(l, &evs[i]);
	l->events += (uint64_t)n;
	return 0;
}

const struct qt_backend_ops qt__epoll_backend = {
	.name = "epoll",
	.init = ep_init,
	.fini = ep_fini,
	.wait = ep_wait,
	.wake = ep_wake,
	.watch_update = ep_watch_update,
	.watch_remove = ep_watch_remove,
	.listener_start = ep_listener_start,
	.listener_remove = ep_listener_remove,
	.stream_add = ep_stream_add,
	.stream_reading = ep_stream_reading,
	.stream_divert = ep_stream_divert,
	.stream_flush = ep_stream_flush,
	.stream_close = ep_stream_close,
};
