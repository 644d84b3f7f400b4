// SPDX-License-Identifier: Apache-2.0
/*
 * Pipes for sending file data without copying it (see "Pipes" in loop.h).
 * The pool is process-wide and locked: a pipe is filled where the file is
 * read (a worker, or io_uring's own worker for qt_fop_splice()) and
 * emptied on the loop thread that sends the frame.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "log.h"
#include "loop-private.h"

/*
 * Pipes kept for reuse.  Every pipe of a user counts against that user's
 * fs.pipe-user-pages-soft (16384 pages by default, all processes
 * together), and a pipe here holds 256 of them.
 */
#define POOL_MAX 16
/*
 * Pipes in existence, in use or idle: past this many qt_pipe_get() says
 * no (the caller copies) rather than spend two descriptors and 1 MiB of
 * pipe slots on every read in flight.
 */
#define PIPES_MAX 64
#define REFUSED_US (1000 * 1000) /* after a refusal, the time before trying again */

static GMutex pool_lock;
static GPtrArray *pool;	 /* idle, empty pipes (pool_lock) */
static unsigned pipes;	 /* in existence (pool_lock) */
static gint64 refused_until; /* monotonic us: copy until then (pool_lock) */
static gint refusal_logged;   /* atomic */

static void pipe_gone(void)
{
	g_mutex_lock(&pool_lock);
	pipes--;
	g_mutex_unlock(&pool_lock);
}

static void pipe_close(struct qt_pipe *p)
{
	close(p->rfd);
	close(p->wfd);
	g_free(p);
	pipe_gone();
}

struct qt_pipe *qt_pipe_get(void)
{
	struct qt_pipe *p = NULL;
	gint64 now = g_get_monotonic_time();
	bool refused;
	int fds[2];

	g_mutex_lock(&pool_lock);
	if (pool && pool->len)
		p = g_ptr_array_steal_index_fast(pool, pool->len - 1);
	refused = now < refused_until || pipes >= PIPES_MAX;
	if (!p && !refused)
		pipes++; /* this one, made below */
	g_mutex_unlock(&pool_lock);
	if (p || refused)
		return p;
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0) {
		pipe_gone();
		return NULL;
	}
	/* Refused (EPERM past the user's pipe quota): copy for a while. */
	if (fcntl(fds[1], F_SETPIPE_SZ, QT_PIPE_DATA_MAX) < (int)QT_PIPE_DATA_MAX) {
		int err = errno;

		if (g_atomic_int_compare_and_exchange(&refusal_logged, 0, 1))
			qt_info("pipes of %u KiB refused (%s): file data is copied, not spliced",
				QT_PIPE_DATA_MAX >> 10, g_strerror(err));
		g_mutex_lock(&pool_lock);
		refused_until = now + REFUSED_US;
		pipes--; /* as pipe_gone(), in the same hold of the lock */
		g_mutex_unlock(&pool_lock);
		close(fds[0]);
		close(fds[1]);
		return NULL;
	}
	p = g_new(struct qt_pipe, 1);
	p->rfd = fds[0];
	p->wfd = fds[1];
	return p;
}

void qt_pipe_put(struct qt_pipe *p)
{
	int n = -1;

	if (!p)
		return;
	/* A frame dropped unsent leaves bytes behind: such a pipe is closed. */
	if (ioctl(p->rfd, FIONREAD, &n) == 0 && n == 0) {
		g_mutex_lock(&pool_lock);
		if (!pool)
			pool = g_ptr_array_new();
		if (pool->len < POOL_MAX) {
			g_ptr_array_add(pool, p);
			p = NULL;
		}
		g_mutex_unlock(&pool_lock);
	}
	if (p)
		pipe_close(p);
}

ssize_t qt_pipe_fill(struct qt_pipe *p, int fd, uint64_t off, size_t len)
{
	loff_t o = (loff_t)off;
	ssize_t n;

	do
		n = splice(fd, &o, p->wfd, NULL, MIN(len, QT_PIPE_DATA_MAX), 0);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

size_t qt_pipe_write_some(int wfd, const void *p, size_t n)
{
	size_t in = 0;

	while (in < n) {
		ssize_t w = write(wfd, (const uint8_t *)p + in, n - in);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		in += (size_t)w;
	}
	return in;
}

int qt_pipe_rfd(const struct qt_pipe *p)
{
	return p->rfd;
}

int qt_pipe_wfd(const struct qt_pipe *p)
{
	return p->wfd;
}

void qt_msg_set_pipe_tail(struct qt_msg *m, struct qt_pipe *p, size_t len)
{
	g_assert(!m->tail);
	m->tail = p;
	m->tail_len = len;
	m->tail_free = qt_pipe_put;
}
