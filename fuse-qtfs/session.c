// SPDX-License-Identifier: Apache-2.0
/*
 * Running the FUSE session from the client's event loop.
 *
 * With libfuse's own multi-threaded loop, worker threads read /dev/fuse,
 * and each request then went kernel -> FUSE worker -> client loop thread
 * (which sends it) -> server -> client loop thread -> kernel: a thread
 * wake-up more per request than the work needs.  Here the loop thread
 * reads /dev/fuse itself, through a watch on the session's descriptor
 * (made non-blocking), and runs at once the requests that never wait
 * (qtfs_fs_where() says QTFS_RUN_LOOP: lookup, getattr, open, create, read, write,
 * unlink, rmdir, flush, release, forget, interrupt, opendir, readdir, readdirplus,
 * releasedir, and the check for file capabilities before a write when its
 * answer is known), whose operations
 * only send their call; the loop answers the kernel when the reply comes.  Every
 * other request goes to a pool of worker threads, each running it to the
 * end as libfuse's loop would, synchronous calls included.  Those that may
 * wait without end (QTFS_RUN_BLOCKER: a relayed FIFO's open, read or
 * write, a lock waiting for its holder; a container runtime keeps one
 * FIFO read per container stream) go to a second, much larger pool: were
 * they in the first, its threads would all end up waiting there, and
 * every other request that needs a worker with them, for good.
 *
 * Buffers: one request per read, into a buffer big enough for the
 * largest (1 MiB of WRITE data and the headers, as libfuse sizes its own).
 * A request run on the loop leaves its buffer for the next read; one sent
 * to a worker takes it along, and a spare one takes its place, as for a
 * WRITE run on the loop, whose bytes are sent from its buffer
 * (QTFS_RUN_LOOP_LEND: the buffer comes back once the write is answered).
 *
 * Ending: the kernel says ENODEV once the file system is unmounted
 * (fusermount3 -u, umount); the loop thread then tells the main thread
 * through an eventfd.  The termination signals arrive on the main thread
 * through a signalfd (as does SIGUSR1, which only logs the state).
 * Either way fuse-qtfs.c then stops reading
 * (qtfs_session_stop_reading), fails the client's calls
 * (qtfs_client_shutdown), lets the workers finish (qtfs_session_drain),
 * and only then stops the loop and destroys the session.
 */
#include "config.h"

#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "log.h"

/* Requests run per wake-up before the loop looks at its sockets again. */
#define BATCH 32
/* Spare request buffers kept for the workers' requests. */
#define SPARES 8
/* Threads for the requests that may wait without end (QTFS_RUN_BLOCKER). */
#define MAX_BLOCKERS 4096

struct qtfs_session {
	struct fuse_session *se;
	struct qt_loop *loop;
	struct qtfs_fs *fs;
	int fd;	     /* /dev/fuse */
	int end_fd;  /* eventfd: the loop thread saw the unmount */
	int sig_fd;  /* signalfd of the termination signals */
	size_t bufsize;
	uint8_t *buf; /* the loop thread's read buffer */
	struct qt_watch *watch; /* loop thread */
	GThreadPool *workers;
	GThreadPool *blockers; /* for QTFS_RUN_BLOCKER requests */
	GAsyncQueue *spares; /* free buffers */

	GMutex lock;
	GCond cond;
	bool stopped; /* reading stopped (lock) */
};

/*
 * Writes to /dev/fuse go through our hands (fuse_session_custom_io()) for
 * one purpose: answering the kernel's INIT with FUSE_HANDLE_KILLPRIV_V2
 * when it offers it, which libfuse 3.14 does not know.  With it the file
 * system, not the kernel, drops set-id bits and file capabilities on a
 * write, truncation or chown.  The host's kernel drops file capabilities
 * at the server's own write and truncation, and set-id bits at its chown;
 * the set-id bits of an unprivileged caller's write the server drops
 * (QTFS_WR_KILL_PRIV), and those of its truncation the client, after it
 * (fs.c, setattr_kill_priv(); an O_TRUNC open: open_kills_priv()).  In
 * return the kernel marks a file with neither (S_NOSEC) until it next
 * refreshes its attributes, and stops asking before every write(2) whether
 * the file has capabilities to drop (a GETXATTR each).  One session per
 * process: the hook's state is the process's.
 */
static struct {
	gint offered;  /* the kernel's INIT offered it (atomic: set by the loop thread) */
	gint answered; /* INIT is answered (atomic: set by a worker thread) */
} init_v2;

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	(void)userdata;
	if (!g_atomic_int_get(&init_v2.answered) && count >= 2 &&
	    iov[0].iov_len == sizeof(struct fuse_out_header) &&
	    ((const struct fuse_out_header *)iov[0].iov_base)->unique != 0) {
		const struct fuse_out_header *h = iov[0].iov_base;

		/*
		 * The first reply there (not a notification, unique 0) is
		 * INIT's: the kernel sends nothing else before it is answered.
		 */
		g_atomic_int_set(&init_v2.answered, 1);
		if (g_atomic_int_get(&init_v2.offered) && h->error == 0 &&
		    iov[1].iov_len >= offsetof(struct fuse_init_out, flags) + sizeof(uint32_t)) {
			struct fuse_init_out *o = iov[1].iov_base;

			o->flags |= FUSE_HANDLE_KILLPRIV_V2;
		}
	}
	return writev(fd, iov, count);
}

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
	(void)userdata;
	return read(fd, buf, len);
}

static ssize_t io_splice(int fdin, off_t *offin, int fdout, off_t *offout, size_t len, unsigned flags,
			 void *userdata)
{
	(void)userdata;
	return splice(fdin, offin, fdout, offout, len, flags);
}

static const struct fuse_custom_io io = {
	.writev = io_writev,
	.read = io_read,
	.splice_receive = io_splice,
	.splice_send = io_splice,
};

/* The kernel's INIT request @buf (@len bytes): does it offer FUSE_HANDLE_KILLPRIV_V2? */
static void init_seen(const uint8_t *buf, size_t len)
{
	struct fuse_in_header in;
	struct fuse_init_in init;

	if (len < sizeof(in) + offsetof(struct fuse_init_in, flags) + sizeof(init.flags))
		return;
	memcpy(&in, buf, sizeof(in));
	if (in.opcode != FUSE_INIT)
		return;
	memcpy(&init.flags, buf + sizeof(in) + offsetof(struct fuse_init_in, flags), sizeof(init.flags));
	g_atomic_int_set(&init_v2.offered, (init.flags & FUSE_HANDLE_KILLPRIV_V2) != 0);
}

struct work {
	struct qtfs_session *s;
	uint8_t *buf;
	size_t len;
};

static uint8_t *buf_get(struct qtfs_session *s)
{
	uint8_t *b = g_async_queue_try_pop(s->spares);

	return b ? b : g_malloc(s->bufsize);
}

static void buf_put(struct qtfs_session *s, uint8_t *b)
{
	if (g_async_queue_length(s->spares) < SPARES)
		g_async_queue_push(s->spares, b);
	else
		g_free(b);
}

static void process(struct qtfs_session *s, uint8_t *buf, size_t len)
{
	struct fuse_buf fb = {.mem = buf, .size = len};

	fuse_session_process_buf(s->se, &fb);
}

/* A buffer lent to a request run on the loop is back (any thread). */
static void given_back(void *arg, void *buf)
{
	buf_put(arg, buf);
}

static void work_run(gpointer data, gpointer user)
{
	struct work *w = data;

	(void)user;
	process(w->s, w->buf, w->len);
	buf_put(w->s, w->buf);
	g_free(w);
}

static void ended(struct qtfs_session *s, int err)
{
	uint64_t one = 1;

	if (err)
		qt_notice("reading FUSE requests: %s", g_strerror(err));
	qt_watch_remove(s->watch);
	s->watch = NULL;
	if (write(s->end_fd, &one, sizeof(one)) < 0) {
		/* an eventfd write only fails on overflow: it is set already */
	}
}

/* The loop thread: /dev/fuse has requests. */
static void readable(struct qt_watch *wt, int fd, uint32_t revents, void *arg)
{
	struct qtfs_session *s = arg;

	(void)wt;
	(void)revents;
	for (int i = 0; i < BATCH; i++) {
		ssize_t n = read(fd, s->buf, s->bufsize);

		if (n < 0) {
			if (errno == EINTR || errno == ENOENT) /* ENOENT: interrupted before we read it */
				continue;
			if (errno != EAGAIN)
				ended(s, errno == ENODEV ? 0 : errno);
			return;
		}
		if (n == 0) {
			ended(s, 0);
			return;
		}
		enum qtfs_run where = qtfs_fs_where(s->fs, s->buf, (size_t)n);

		if (!g_atomic_int_get(&init_v2.answered))
			init_seen(s->buf, (size_t)n);

		if (where == QTFS_RUN_LOOP) {
			process(s, s->buf, (size_t)n);
		} else if (where == QTFS_RUN_LOOP_LEND) {
			uint8_t *b = s->buf;

			s->buf = buf_get(s);
			qtfs_fs_lend(s->fs, b);
			process(s, b, (size_t)n);
			if ((b = qtfs_fs_lend(s->fs, NULL)))
				buf_put(s, b); /* not kept */
		} else {
			struct work *w = g_new(struct work, 1);

			*w = (struct work){.s = s, .buf = s->buf, .len = (size_t)n};
			s->buf = buf_get(s);
			g_thread_pool_push(where == QTFS_RUN_BLOCKER ? s->blockers : s->workers, w, NULL);
		}
	}
}

static void start_on_loop(void *arg)
{
	struct qtfs_session *s = arg;

	s->watch = qt_watch_add(s->loop, s->fd, QT_EV_IN, readable, s);
	if (!s->watch)
		ended(s, ENOMEM);
}

void qtfs_session_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGUSR1);
}

int qtfs_session_start(struct fuse_session *se, struct qt_loop *loop, struct qtfs_fs *fs,
		       unsigned max_workers, struct qtfs_session **out)
{
	struct qtfs_session *s;
	sigset_t term;
	int fl, err;

	qtfs_session_signals(&term);
	s = g_new0(struct qtfs_session, 1);
	s->se = se;
	s->loop = loop;
	s->fs = fs;
	s->fd = fuse_session_fd(se);
	s->end_fd = eventfd(0, EFD_CLOEXEC);
	s->sig_fd = signalfd(-1, &term, SFD_CLOEXEC);
	g_mutex_init(&s->lock);
	g_cond_init(&s->cond);
	s->spares = g_async_queue_new();
	/* As libfuse sizes its own: the largest WRITE (256 pages) and the headers. */
	s->bufsize = 256 * (size_t)sysconf(_SC_PAGESIZE) + 4096;
	s->buf = g_malloc(s->bufsize);
	if (s->end_fd < 0 || s->sig_fd < 0 || (fl = fcntl(s->fd, F_GETFL)) < 0 ||
	    fcntl(s->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		err = -errno;
		qtfs_session_free(s);
		return err;
	}
	qtfs_fs_set_lender(fs, given_back, s);
	if ((err = fuse_session_custom_io(se, &io, s->fd)) < 0) {
		qtfs_session_free(s);
		return err;
	}
	s->workers = g_thread_pool_new(work_run, NULL, (gint)max_workers, FALSE, NULL);
	s->blockers = g_thread_pool_new(work_run, NULL, MAX_BLOCKERS, FALSE, NULL);
	qt_loop_post(loop, start_on_loop, s);
	*out = s;
	return 0;
}

int qtfs_session_wait(struct qtfs_session *s)
{
	struct pollfd p[2] = {{.fd = s->end_fd, .events = POLLIN}, {.fd = s->sig_fd, .events = POLLIN}};

	for (;;) {
		struct signalfd_siginfo si;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			qt_err("waiting for the session: %s", g_strerror(errno));
			return SIGTERM;
		}
		if (p[0].revents)
			return 0;
		if ((p[1].revents & POLLIN) && read(s->sig_fd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo != SIGUSR1)
				return (int)si.ssi_signo;
			qtfs_fs_log_state(s->fs);
		}
	}
}

static void stop_on_loop(void *arg)
{
	struct qtfs_session *s = arg;

	qt_watch_remove(s->watch);
	s->watch = NULL;
	g_mutex_lock(&s->lock);
	s->stopped = true;
	g_cond_broadcast(&s->cond);
	g_mutex_unlock(&s->lock);
}

void qtfs_session_stop_reading(struct qtfs_session *s)
{
	qt_loop_post(s->loop, stop_on_loop, s);
	g_mutex_lock(&s->lock);
	while (!s->stopped)
		g_cond_wait(&s->cond, &s->lock);
	g_mutex_unlock(&s->lock);
}

void qtfs_session_drain(struct qtfs_session *s)
{
	if (s->workers)
		g_thread_pool_free(g_steal_pointer(&s->workers), FALSE, TRUE);
	if (s->blockers)
		g_thread_pool_free(g_steal_pointer(&s->blockers), FALSE, TRUE);
}

void qtfs_session_free(struct qtfs_session *s)
{
	uint8_t *b;

	if (!s)
		return;
	qtfs_session_drain(s);
	if (s->end_fd >= 0)
		close(s->end_fd);
	if (s->sig_fd >= 0)
		close(s->sig_fd);
	while ((b = g_async_queue_try_pop(s->spares)))
		g_free(b);
	g_async_queue_unref(s->spares);
	g_free(s->buf);
	g_mutex_clear(&s->lock);
	g_cond_clear(&s->cond);
	g_free(s);
}
