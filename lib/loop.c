// SPDX-License-Identifier: Apache-2.0
/*
 * The backend-independent half of the event loop (see loop.h and
 * loop-private.h): backend choice, timers, callbacks posted from other
 * threads, stream send queues and object lifetimes.
 *
 * One iteration:
 *   1. wait for I/O (not at all if work is already pending), dispatching it
 *   2. fire due timers
 *   3. run callbacks posted by other threads
 *   4. flush the send queues of streams that gained data
 *   5. call ops->closed for streams the backend released, free the dead
 * Step 4 comes after every source of new frames, so all frames queued in
 * one iteration leave in as few system calls as the backend can manage.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "loop-private.h"

struct post {
	void (*fn)(void *);
	void *arg;
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int qt_loop_backend_parse(const char *s, enum qt_loop_backend *out)
{
	if (!s || !*s || g_ascii_strcasecmp(s, "auto") == 0)
		*out = QT_LOOP_AUTO;
	else if (g_ascii_strcasecmp(s, "io_uring") == 0 || g_ascii_strcasecmp(s, "uring") == 0)
		*out = QT_LOOP_URING;
	else if (g_ascii_strcasecmp(s, "epoll") == 0)
		*out = QT_LOOP_EPOLL;
	else
		return -EINVAL;
	return 0;
}

static int loop_init_backend(struct qt_loop *l, enum qt_loop_backend kind)
{
	l->be = kind == QT_LOOP_URING ? &qt__uring_backend : &qt__epoll_backend;
	l->kind = kind;
	return l->be->init(l);
}

/*
 * Frames of a few hundred KiB to a few MiB are allocated and freed at a
 * high rate.  With glibc's defaults each one is a fresh mmap (or a heap
 * trimmed and regrown), so every page is faulted in and zeroed again: the
 * transport benchmark ran 15x slower for it.  Keeping such blocks in the
 * heap makes them reusable.  The trim threshold is twice what one client's
 * burst of reads keeps in flight (64 background READs of 1 MiB, the FUSE
 * mount's limit), so that the end of a burst does not hand the memory
 * back just before the next one needs it.  Environment settings
 * (MALLOC_*_) still win.
 */
static void tune_malloc_once(void)
{
	static gsize done;

	if (g_once_init_enter(&done)) {
		if (!g_getenv("MALLOC_MMAP_THRESHOLD_"))
			mallopt(M_MMAP_THRESHOLD, 16 * 1024 * 1024);
		if (!g_getenv("MALLOC_TRIM_THRESHOLD_"))
			mallopt(M_TRIM_THRESHOLD, 128 * 1024 * 1024);
		g_once_init_leave(&done, 1);
	}
}

int qt_loop_new(enum qt_loop_backend backend, struct qt_loop **out)
{
	struct qt_loop *l = g_new0(struct qt_loop, 1);
	const char *env = g_getenv("QT_LOOP_BACKEND");
	int r;

	tune_malloc_once();
	if (backend == QT_LOOP_AUTO && env && qt_loop_backend_parse(env, &backend) < 0)
		qt_debug("loop: ignoring QT_LOOP_BACKEND=\"%s\" (use auto, io_uring or epoll)", env);
	g_mutex_init(&l->post_lock);
	g_queue_init(&l->posted);
	g_queue_init(&l->flush);
	g_queue_init(&l->streams);
	g_queue_init(&l->watches);
	g_queue_init(&l->listeners);
	l->timers = g_ptr_array_new();
	l->deferred_close = g_ptr_array_new();
	l->graveyard = g_ptr_array_new();
	l->now_ms = mono_ms();

	if (backend == QT_LOOP_EPOLL) {
		r = loop_init_backend(l, QT_LOOP_EPOLL);
	} else {
		r = loop_init_backend(l, QT_LOOP_URING);
		if (r < 0 && backend == QT_LOOP_AUTO) {
			/* Once per process at most: the servers make one loop. */
			qt_info("loop: io_uring unavailable (%s; it needs Linux 5.19 or later), "
				"using epoll", g_strerror(-r));
			r = loop_init_backend(l, QT_LOOP_EPOLL);
		}
	}
	if (r < 0) {
		l->be = NULL;
		qt_loop_free(l);
		return r;
	}
	*out = l;
	return 0;
}

static void stream_free(struct qt_stream *s)
{
	struct qt_msg *m;

	while ((m = g_queue_pop_head(&s->sendq)))
		qt_msg_free(m);
	g_free(s->rbuf);
	g_free(s);
}

void qt_loop_free(struct qt_loop *l)
{
	GList *it;
	struct post *p;

	if (!l)
		return;
	/* The backend goes first, so no kernel operation still points into our objects. */
	if (l->be)
		l->be->fini(l);
	while ((it = g_queue_pop_head_link(&l->streams))) {
		struct qt_stream *s = it->data;

		if (s->rfd >= 0)
			close(s->rfd);
		if (s->wfd >= 0 && s->wfd != s->rfd)
			close(s->wfd);
		stream_free(s);
	}
	while ((it = g_queue_pop_head_link(&l->listeners))) {
		struct qt_listener *ls = it->data;

		if (ls->fd >= 0)
			close(ls->fd);
		g_free(ls);
	}
	while ((it = g_queue_pop_head_link(&l->watches)))
		g_free(it->data);
	for (guint i = 0; i < l->graveyard->len; i++)
		g_free(g_ptr_array_index(l->graveyard, i));
	for (guint i = 0; i < l->timers->len; i++)
		g_free(g_ptr_array_index(l->timers, i));
	while ((p = g_queue_pop_head(&l->posted)))
		g_free(p);
	g_ptr_array_free(l->timers, TRUE);
	g_ptr_array_free(l->deferred_close, TRUE);
	g_ptr_array_free(l->graveyard, TRUE);
	g_mutex_clear(&l->post_lock);
	g_free(l);
}

enum qt_loop_backend qt_loop_backend(const struct qt_loop *l) { return l->kind; }
const char *qt_loop_backend_name(const struct qt_loop *l) { return l->be->name; }

uint64_t qt_loop_now_ms(struct qt_loop *l)
{
	return l->now_ms;
}

bool qt_loop_in_thread(const struct qt_loop *l)
{
	return l->thread == g_thread_self();
}

/* ---- timers: a binary min-heap on (due, seq) ----------------------------- */

static bool timer_before(const struct qt_timer *a, const struct qt_timer *b)
{
	return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static void heap_set(GPtrArray *h, size_t i, struct qt_timer *t)
{
	h->pdata[i] = t;
	t->heap_idx = i;
}

static void heap_up(GPtrArray *h, size_t i)
{
	struct qt_timer *t = h->pdata[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;
		struct qt_timer *p = h->pdata[parent];

		if (!timer_before(t, p))
			break;
		heap_set(h, i, p);
		i = parent;
	}
	heap_set(h, i, t);
}

static void heap_down(GPtrArray *h, size_t i)
{
	struct qt_timer *t = h->pdata[i];
	size_t n = h->len;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && timer_before(h->pdata[c + 1], h->pdata[c]))
			c++;
		if (!timer_before(h->pdata[c], t))
			break;
		heap_set(h, i, h->pdata[c]);
		i = c;
	}
	heap_set(h, i, t);
}

static void heap_remove(GPtrArray *h, size_t i)
{
	struct qt_timer *last = g_ptr_array_steal_index(h, h->len - 1);

	if (i < h->len) {
		heap_set(h, i, last);
		heap_up(h, i);
		heap_down(h, last->heap_idx);
	}
}

struct qt_timer *qt_timer_add(struct qt_loop *l, uint64_t ms, qt_timer_fn fn, void *arg)
{
	struct qt_timer *t = g_new0(struct qt_timer, 1);

	t->loop = l;
	t->due = mono_ms() + ms;
	t->seq = l->timer_seq++;
	t->fn = fn;
	t->arg = arg;
	g_ptr_array_add(l->timers, t);
	heap_up(l->timers, l->timers->len - 1);
	return t;
}

void qt_timer_cancel(struct qt_timer *t)
{
	if (!t)
		return;
	heap_remove(t->loop->timers, t->heap_idx);
	g_free(t);
}

static void run_timers(struct qt_loop *l)
{
	/* Only timers due now; ones added by callbacks wait for the next iteration. */
	uint64_t now = l->now_ms;
	unsigned budget = l->timers->len;

	while (l->timers->len && budget--) {
		struct qt_timer *t = l->timers->pdata[0];

		if (t->due > now)
			break;
		heap_remove(l->timers, 0);
		t->fn(t->arg);
		g_free(t);
	}
}

static int next_timeout(struct qt_loop *l, int timeout_ms)
{
	if (l->posted.length || l->flush.length || l->deferred_close->len)
		return 0;
	if (l->timers->len) {
		struct qt_timer *t = l->timers->pdata[0];
		uint64_t now = mono_ms();
		int64_t d = t->due > now ? (int64_t)(t->due - now) : 0;

		if (timeout_ms < 0 || d < timeout_ms)
			timeout_ms = (int)MIN(d, G_MAXINT);
	}
	return timeout_ms;
}

/* ---- posting ----------------------------------------------------------- */

void qt_loop_post(struct qt_loop *l, void (*fn)(void *arg), void *arg)
{
	struct post *p = g_new(struct post, 1);
	bool wake;

	p->fn = fn;
	p->arg = arg;
	g_mutex_lock(&l->post_lock);
	g_queue_push_tail(&l->posted, p);
	wake = !l->post_wake_pending;
	l->post_wake_pending = true;
	g_mutex_unlock(&l->post_lock);
	if (wake)
		l->be->wake(l);
}

void qt__loop_run_posted(struct qt_loop *l)
{
	GQueue batch = G_QUEUE_INIT;
	struct post *p;

	g_mutex_lock(&l->post_lock);
	batch = l->posted;
	g_queue_init(&l->posted);
	l->post_wake_pending = false;
	g_mutex_unlock(&l->post_lock);
	while ((p = g_queue_pop_head(&batch))) {
		p->fn(p->arg);
		g_free(p);
	}
}

void qt_loop_stop(struct qt_loop *l)
{
	g_atomic_int_set(&l->stop, 1);
	l->be->wake(l);
}

/* ---- iteration --------------------------------------------------------- */

static void flush_streams(struct qt_loop *l)
{
	GList *it;

	while ((it = g_queue_pop_head_link(&l->flush))) {
		struct qt_stream *s = it->data;

		s->write_pending = false;
		if (!s->dead && s->sendq.length)
			l->be->stream_flush(s);
	}
}

static void finish_closed(struct qt_loop *l)
{
	while (l->deferred_close->len) {
		struct qt_stream *s = g_ptr_array_steal_index(l->deferred_close, 0);

		g_queue_unlink(&l->streams, &s->all_link);
		if (s->ops->closed)
			s->ops->closed(s, s->arg);
		stream_free(s);
	}
	for (guint i = 0; i < l->graveyard->len; i++)
		g_free(g_ptr_array_index(l->graveyard, i));
	g_ptr_array_set_size(l->graveyard, 0);
}

void qt_loop_flush(struct qt_loop *l)
{
	flush_streams(l);
	if (l->be->submit)
		l->be->submit(l);
}

void qt_loop_set_poll(struct qt_loop *l, unsigned us)
{
	l->poll_us = MIN(us, QT_LOOP_POLL_MAX_US);
}

/*
 * The backend's wait for events, with busy polling first (see
 * qt_loop_set_poll()) when the last wait found some: looks that do not
 * sleep, until one finds events, the poll time is over, or @timeout_ms
 * (the next timer) is.
 */
static int loop_wait(struct qt_loop *l, int timeout_ms)
{
	uint64_t seen = l->events;
	int r;

	if (l->poll_us && l->busy && timeout_ms != 0) {
		gint64 start = g_get_monotonic_time(), spent;
		gint64 limit = timeout_ms < 0 ? l->poll_us : MIN(l->poll_us, (gint64)timeout_ms * 1000);

		do {
			r = l->be->wait(l, 0);
			spent = g_get_monotonic_time() - start;
			if (r < 0 || l->events != seen)
				goto out;
		} while (spent < limit);
		if (timeout_ms > 0)
			timeout_ms = (int)MAX(0, timeout_ms - spent / 1000);
	}
	r = l->be->wait(l, timeout_ms);
out:
	l->busy = l->events != seen;
	return r;
}

int qt_loop_run_once(struct qt_loop *l, int timeout_ms)
{
	int r;

	flush_streams(l);
	r = loop_wait(l, next_timeout(l, timeout_ms));
	l->now_ms = mono_ms();
	run_timers(l);
	qt__loop_run_posted(l);
	flush_streams(l);
	finish_closed(l);
	return r;
}

int qt_loop_run(struct qt_loop *l)
{
	int r = 0;

	l->thread = g_thread_self();
	while (!g_atomic_int_get(&l->stop)) {
		r = qt_loop_run_once(l, -1);
		if (r < 0 && r != -EINTR)
			break;
		r = 0;
	}
	g_atomic_int_set(&l->stop, 0);
	l->thread = NULL;
	return r;
}

/* ---- watches ----------------------------------------------------------- */

struct qt_watch *qt_watch_add(struct qt_loop *l, int fd, uint32_t events, qt_watch_fn fn, void *arg)
{
	struct qt_watch *w = g_new0(struct qt_watch, 1);

	w->loop = l;
	w->fd = fd;
	w->events = events;
	w->fn = fn;
	w->arg = arg;
	w->link.data = w;
	g_queue_push_tail_link(&l->watches, &w->link);
	l->be->watch_update(w);
	return w;
}

void qt_watch_set_events(struct qt_watch *w, uint32_t events)
{
	if (w->dead || w->events == events)
		return;
	w->events = events;
	w->loop->be->watch_update(w);
}

void qt_watch_remove(struct qt_watch *w)
{
	if (!w || w->dead)
		return;
	w->dead = true;
	w->loop->be->watch_remove(w);
}

void qt__watch_fire(struct qt_watch *w, uint32_t revents)
{
	if (!w->dead && revents)
		w->fn(w, w->fd, revents, w->arg);
}

void qt__watch_free(struct qt_watch *w)
{
	g_queue_unlink(&w->loop->watches, &w->link);
	g_ptr_array_add(w->loop->graveyard, w);
}

/* ---- listeners --------------------------------------------------------- */

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0 && !(fl & O_NONBLOCK))
		(void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}


struct qt_listener *qt_listener_add(struct qt_loop *l, int fd, qt_accept_fn fn, void *arg)
{
	struct qt_listener *ls = g_new0(struct qt_listener, 1);

	set_nonblock(fd);
	ls->loop = l;
	ls->fd = fd;
	ls->fn = fn;
	ls->arg = arg;
	ls->link.data = ls;
	g_queue_push_tail_link(&l->listeners, &ls->link);
	l->be->listener_start(ls);
	return ls;
}

void qt_listener_remove(struct qt_listener *ls)
{
	if (!ls || ls->dead)
		return;
	ls->dead = true;
	g_clear_pointer(&ls->retry, qt_timer_cancel);
	ls->loop->be->listener_remove(ls);
}

void qt__listener_free(struct qt_listener *ls)
{
	if (ls->fd >= 0)
		close(ls->fd);
	ls->fd = -1;
	g_queue_unlink(&ls->loop->listeners, &ls->link);
	g_ptr_array_add(ls->loop->graveyard, ls);
}

void qt__listener_accepted(struct qt_listener *ls, int fd)
{
	if (ls->dead) {
		close(fd);
		return;
	}
	ls->fn(ls->arg, fd);
}

static void listener_retry(void *arg)
{
	struct qt_listener *ls = arg;

	ls->retry = NULL;
	if (!ls->dead)
		ls->loop->be->listener_start(ls);
}

bool qt__listener_error(struct qt_listener *ls, int err)
{
	if (err == -EAGAIN || err == -EINTR || err == -ECONNABORTED || err == -EPROTO)
		return true;
	/*
	 * Out of descriptors or memory: accepting again at once would spin.
	 * Pause for a moment; the backlog holds the waiting clients.
	 */
	qt_debug("loop: accept on fd %d failed: %s; pausing 100 ms", ls->fd, g_strerror(-err));
	if (!ls->retry && !ls->dead)
		ls->retry = qt_timer_add(ls->loop, 100, listener_retry, ls);
	return false;
}

/* ---- streams ----------------------------------------------------------- */

static bool fd_is_socket(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
}

struct qt_stream *qt_stream_new(struct qt_loop *l, int rfd, int wfd,
				const struct qt_stream_ops *ops, void *arg)
{
	struct qt_stream *s = g_new0(struct qt_stream, 1);

	s->loop = l;
	s->rfd = rfd;
	s->wfd = wfd;
	s->is_socket = rfd == wfd && fd_is_socket(rfd);
	s->ops = ops;
	s->arg = arg;
	g_queue_init(&s->sendq);
	s->flush_link.data = s;
	s->all_link.data = s;
	set_nonblock(rfd);
	if (wfd != rfd)
		set_nonblock(wfd);
	g_queue_push_tail_link(&l->streams, &s->all_link);
	l->be->stream_add(s);
	return s;
}

int qt_stream_fd(const struct qt_stream *s) { return s->rfd; }
struct qt_loop *qt_stream_loop(const struct qt_stream *s) { return s->loop; }
size_t qt_stream_queued(const struct qt_stream *s) { return s->queued; }

size_t qt_stream_queued_cost(const struct qt_stream *s)
{
	return s->queued + (size_t)s->sendq.length * QT_STREAM_FRAME_COST;
}
bool qt_stream_reading(const struct qt_stream *s) { return s->reading; }

void qt_stream_set_reading(struct qt_stream *s, bool on)
{
	if (s->dead || s->reading == on)
		return;
	s->reading = on;
	if (!s->eof)
		s->loop->be->stream_reading(s);
}

/* A frame's bytes on the wire: its own and its pipe tail's. */
static size_t frame_len(const struct qt_msg *m)
{
	return m->len + m->tail_len;
}

static void stream_want_flush(struct qt_stream *s)
{
	g_clear_pointer(&s->lazy_timer, qt_timer_cancel); /* the lazy frames go with this flush */
	if (!s->write_pending) {
		s->write_pending = true;
		g_queue_push_tail_link(&s->loop->flush, &s->flush_link);
	}
}

bool qt_frame_is_bulk(const struct qt_msg *m)
{
	return frame_len(m) >= QT_STREAM_BULK;
}

/*
 * With small_first, the first large frame (QT_STREAM_BULK) of @s's queue
 * that a smaller frame may still go ahead of, or NULL.  Not one the
 * backend has begun or handed to the kernel: the head once partly sent,
 * and every frame of a send in flight (io_uring's iovecs point into them,
 * and qt__stream_consumed() counts the bytes sent off the queue's head).
 */
static GList *stream_first_bulk(struct qt_stream *s)
{
	unsigned pinned = s->head_off ? 1 : 0;
	GList *it = s->sendq.head;

	if (s->send_armed)
		pinned = MAX(pinned, MAX(s->iov_frames, 1u));
	for (unsigned i = 0; it && i < pinned; i++)
		it = it->next;
	for (; it; it = it->next)
		if (qt_frame_is_bulk(it->data))
			return it;
	return NULL;
}

/* Queue @m on @s; false if @s can send no more (@m is freed). */
static bool stream_enqueue(struct qt_stream *s, struct qt_msg *m)
{
	GList *bulk;

	if (s->dead || s->write_failed) {
		qt_msg_free(m);
		return false;
	}
	if (!qt_frame_is_bulk(m) && s->small_first && s->bulk && (bulk = stream_first_bulk(s)))
		g_queue_insert_before(&s->sendq, bulk, m);
	else
		g_queue_push_tail(&s->sendq, m);
	if (qt_frame_is_bulk(m))
		s->bulk++;
	s->queued += frame_len(m);
	return true;
}

void qt_stream_set_small_first(struct qt_stream *s, bool on)
{
	s->small_first = on;
}

void qt_stream_send(struct qt_stream *s, struct qt_msg *m)
{
	if (stream_enqueue(s, m))
		stream_want_flush(s);
}

static void lazy_due(void *arg)
{
	struct qt_stream *s = arg;

	s->lazy_timer = NULL;
	stream_want_flush(s);
}

void qt_stream_send_lazy(struct qt_stream *s, struct qt_msg *m)
{
	if (!stream_enqueue(s, m))
		return;
	/*
	 * A flush already due, or a send in flight (whose completion sends
	 * what follows in the queue), takes it along; otherwise the timer.
	 */
	if (!s->write_pending && !s->send_armed && !s->lazy_timer)
		s->lazy_timer = qt_timer_add(s->loop, QT_STREAM_LAZY_MS, lazy_due, s);
}

void qt_stream_close(struct qt_stream *s)
{
	struct qt_msg *m;

	if (s->dead)
		return;
	s->dead = true;
	s->reading = false;
	g_clear_pointer(&s->lazy_timer, qt_timer_cancel);
	if (s->write_pending) {
		g_queue_unlink(&s->loop->flush, &s->flush_link);
		s->write_pending = false;
	}
	/* io_uring may still be sending the head frame: keep it until the send completes. */
	while (s->sendq.length > (s->send_armed ? 1u : 0u)) {
		m = g_queue_pop_tail(&s->sendq);
		s->queued -= frame_len(m);
		s->bulk -= qt_frame_is_bulk(m);
		qt_msg_free(m);
	}
	s->loop->be->stream_close(s);
}

int qt__stream_fill_iov(struct qt_stream *s, bool *more)
{
	int n = 0;
	size_t off = s->head_off;

	*more = false;
	for (GList *it = s->sendq.head; it && n < QT_STREAM_IOV_MAX; it = it->next) {
		struct qt_msg *m = it->data;

		if (off >= m->len) /* the head frame's tail is next */
			break;
		s->iov[n].iov_base = m->data + off;
		s->iov[n].iov_len = m->len - off;
		off = 0;
		n++;
		if (m->tail_len) {
			*more = true;
			break;
		}
		/*
		 * With small_first, one large frame per send: a small frame
		 * queued while it is in flight goes next, not behind every
		 * large frame queued (io_uring's iovecs pin them all, see
		 * stream_first_bulk()).
		 */
		if (s->small_first && qt_frame_is_bulk(m))
			break;
	}
	s->iov_frames = (unsigned)n;
	return n;
}

bool qt__stream_tail(const struct qt_stream *s, int *pipe_fd, size_t *left)
{
	const struct qt_msg *m = g_queue_peek_head((GQueue *)&s->sendq);

	if (!m || s->head_off < m->len)
		return false;
	*pipe_fd = m->tail->rfd;
	*left = frame_len(m) - s->head_off;
	return true;
}

void qt__stream_consumed(struct qt_stream *s, size_t n)
{
	s->queued -= n;
	while (n) {
		struct qt_msg *m = g_queue_peek_head(&s->sendq);
		size_t left = frame_len(m) - s->head_off;

		if (n < left) {
			s->head_off += n;
			break;
		}
		n -= left;
		s->head_off = 0;
		m = g_queue_pop_head(&s->sendq);
		s->bulk -= qt_frame_is_bulk(m);
		if (s->iov_frames)
			s->iov_frames--;
		qt_msg_free(m);
	}
	if (!s->dead && s->ops->sent)
		s->ops->sent(s, s->arg);
}

/* ---- diverts ----------------------------------------------------------- */

void qt_stream_divert(struct qt_stream *s, int pipe_wfd, size_t n, qt_stream_divert_fn done,
		      void *arg)
{
	g_assert(!s->dv_left && n);
	if (s->dead || s->eof)
		return;
	s->dv_fd = pipe_wfd;
	s->dv_left = n;
	s->dv_done = done;
	s->dv_arg = arg;
	s->loop->be->stream_divert(s);
}

void qt_stream_bound_reads(struct qt_stream *s)
{
	if (s->bounded || s->dead)
		return;
	s->bounded = true;
	s->loop->be->stream_reading(s); /* the backend re-arms its receive if it must */
}

/* The divert is over (all in, or the pipe is full): tell its owner. */
static void divert_end(struct qt_stream *s)
{
	qt_stream_divert_fn done = s->dv_done;
	size_t left = s->dv_left;

	s->dv_left = 0;
	s->dv_done = NULL;
	done(s, left, s->dv_arg);
}

/* Is input waiting on @s's read side now? */
static bool input_ready(const struct qt_stream *s)
{
	struct pollfd pfd = {.fd = s->rfd, .events = POLLIN};

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
}

enum qt_divert_step qt__stream_divert_splice(struct qt_stream *s)
{
	while (s->dv_left && !s->dead && !s->eof) {
		ssize_t w = splice(s->rfd, NULL, s->dv_fd, NULL, s->dv_left, SPLICE_F_NONBLOCK);

		if (w > 0) {
			s->dv_left -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		/*
		 * Nothing moved: no input, or no room in the pipe.  Input
		 * waiting says which; the pipe full ends the divert.  So does
		 * a pair of descriptors splice cannot join (EINVAL): the rest
		 * comes as data.
		 */
		if (w < 0 && errno == EAGAIN && !input_ready(s))
			return QT_DIVERT_WAIT;
		if (w < 0 && errno != EAGAIN && errno != EINVAL) {
			qt__stream_eof(s, -errno);
			return QT_DIVERT_FAILED;
		}
		if (w == 0) {
			qt__stream_eof(s, 0);
			return QT_DIVERT_FAILED;
		}
		break;
	}
	if (s->dead || s->eof)
		return QT_DIVERT_FAILED;
	divert_end(s);
	return QT_DIVERT_DONE;
}

void qt__stream_data(struct qt_stream *s, const uint8_t *p, size_t n)
{
	if (s->dead || s->eof)
		return;
	/* Bytes the backend took in before the divert began: written into the pipe. */
	if (s->dv_left) {
		size_t want = MIN(n, s->dv_left), in = qt_pipe_write_some(s->dv_fd, p, want);

		s->dv_left -= in;
		p += in;
		n -= in;
		if (in < want || !s->dv_left)
			divert_end(s);
		if (!n || s->dead || s->eof)
			return;
		if (s->dv_left) { /* a new divert, begun by the owner just now */
			qt__stream_data(s, p, n);
			return;
		}
	}
	s->ops->data(s, p, n, s->arg);
}

void qt__stream_eof(struct qt_stream *s, int err)
{
	if (s->eof || s->dead)
		return;
	s->eof = true;
	if (err)
		s->write_failed = true;
	if (s->ops->eof)
		s->ops->eof(s, err, s->arg);
}

void qt__stream_release(struct qt_stream *s)
{
	if (s->closed_cb)
		return;
	s->closed_cb = true;
	if (s->rfd >= 0)
		close(s->rfd);
	if (s->wfd >= 0 && s->wfd != s->rfd)
		close(s->wfd);
	s->rfd = s->wfd = -1;
	g_ptr_array_add(s->loop->deferred_close, s);
}
