// SPDX-License-Identifier: Apache-2.0
/*
 * rexec's exec session: connect to rexecd, send EXEC, then relay stdin,
 * stdout, stderr, signals and window sizes until EXIT.
 *
 * Threads: the event loop owns the connection.  Our stdio descriptors are
 * inherited and shared with the shell that started us, so they are never
 * made non-blocking (that would change them under the shell's feet, and
 * leave them changed if we are killed): a thread reads stdin, and one
 * thread per output writes stdout and stderr, all with plain blocking
 * calls.  One that somebody else made non-blocking answers EAGAIN: that
 * is waited out with poll(), never taken for the end of the stream.
 * Threads hand their results to the loop with qt_loop_post() on pointers
 * that need no allocation (acknowledged byte counts in atomics, stdin
 * frames in a queue); the loop feeds the writers through queues.
 *
 * Ordering: rexecd sends every output's EOF before EXIT, and the writers
 * finish their queues before we exit, so nothing the command printed is
 * lost; on a broken connection we still write out what arrived.
 *
 * Signals after the loop stopped: writing the last output (to a reader
 * that does not read) and the fuse-qtfs barrier can take long, with the
 * signals still blocked.  A thread of its own (tail_guard_main) then reads
 * the signalfd until we exit: SIGINT, SIGTERM, SIGHUP or SIGQUIT end us at
 * once, killed by that signal (rexec_die_of_signal), the terminal
 * restored, as they would end a local command stuck on a write.  The same
 * holds while the loop runs: a terminating signal that comes while stdout
 * or stderr has been blocked on a write for WRITE_STUCK_MS (a reader that
 * does not read) is still forwarded, then ends us.  Waiting for EXIT there could take for ever:
 * rexecd sends it only after every output byte, and no byte goes.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chan.h"
#include "client.h"
#include "conf.h"
#include "conn.h"
#include "log.h"
#include "tty.h"

struct client;

struct out_item {
	struct qt_msg *m; /* NULL: the end of the stream */
	const uint8_t *p;
	size_t len;
};

struct writer {
	struct client *cl;
	int fd;
	uint8_t stream;
	GAsyncQueue *q;	  /* struct out_item* */
	GThread *thread;
	gint acked;	  /* bytes written, not yet acknowledged; atomic */
	gint failed;	  /* the fd refused a write; atomic */
	bool close_sent;  /* loop thread */
	size_t unacked;	  /* loop thread: bytes received, not yet reported written (the window) */
	int64_t write_since; /* monotonic µs a write(2) began, 0 between writes; __atomic */
};

/* A write blocked this long counts as stuck (see the top). */
#define WRITE_STUCK_MS 500

struct client {
	const struct rexec_client_args *a;
	struct qt_loop *loop;
	struct qt_conn *conn;
	struct writer out[2];
	int rc;
	bool running; /* EXEC answered OK */
	bool done;

	/* stdin: in_credit and in_stop protected by lock */
	GMutex lock;
	GCond cond;
	uint32_t in_credit;
	bool in_stop;
	GThread *in_thread;
	GAsyncQueue *in_q; /* struct qt_msg*, from the stdin thread to the loop */
	int wake[2];	   /* written to stop the stdin thread's poll() */

	bool raw;
	struct termios saved;
	int sfd;
	struct qt_watch *sigw;
};

static const int fwd_signals[] = {SIGINT,  SIGTERM,  SIGHUP,  SIGQUIT, SIGUSR1,
				  SIGUSR2, SIGWINCH, SIGCONT, SIGTSTP};

/* ---- descriptors for --pass-fds --------------------------------------- */

struct rexec_fileref *rexec_scan_fds(uint32_t *n)
{
	GArray *a = g_array_new(FALSE, TRUE, sizeof(struct rexec_fileref));
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	while (d && (e = readdir(d))) {
		struct rexec_fileref f = {0};
		int64_t fd;

		if (qt_parse_int(e->d_name, 3, INT32_MAX, &fd) < 0 || fd == dirfd(d))
			continue;
		if (rexec_fileref_from_fd((int)fd, &f) < 0) {
			qt_debug("--pass-fds: fd %d is not a regular file with a path; not passed",
				 (int)fd);
			continue;
		}
		if (g_str_has_suffix(f.path, " (deleted)")) {
			qt_debug("--pass-fds: fd %d (%s) is deleted; not passed", (int)fd, f.path);
			rexec_fileref_clear(&f);
			continue;
		}
		g_array_append_val(a, f);
		if (a->len == REXEC_MAX_FDS)
			break;
	}
	if (d)
		closedir(d);
	*n = a->len;
	return (struct rexec_fileref *)(void *)g_array_free(a, a->len == 0);
}

/* ---- output writers ------------------------------------------------------ */

static void send_msg(struct client *cl, struct qt_msg *m)
{
	if (m && cl->conn)
		qt_conn_send(cl->conn, m);
	else
		qt_msg_free(m);
}

/* On the loop: pass on what a writer reported. */
static void writer_report(void *arg)
{
	struct writer *w = arg;
	gint n = g_atomic_int_exchange(&w->acked, 0);

	if (n > 0) {
		w->unacked -= MIN((size_t)n, w->unacked);
		send_msg(w->cl, rexec_ack_encode(w->stream, (uint32_t)n));
	}
	if (g_atomic_int_get(&w->failed) && !w->close_sent) {
		w->close_sent = true;
		send_msg(w->cl, rexec_stream_encode(REXEC_MSG_CLOSE, w->stream));
	}
}

static gpointer writer_main(gpointer arg)
{
	struct writer *w = arg;
	struct out_item *it;

	while ((it = g_async_queue_pop(w->q))) {
		size_t off = 0;

		if (!it->m) {
			g_free(it);
			break;
		}
		while (off < it->len && !g_atomic_int_get(&w->failed)) {
			ssize_t n;

			__atomic_store_n(&w->write_since, g_get_monotonic_time(), __ATOMIC_RELAXED);
			n = write(w->fd, it->p + off, it->len - off);
			__atomic_store_n(&w->write_since, 0, __ATOMIC_RELAXED);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN) {
				/*
				 * Someone else made the shared descriptor non-blocking
				 * (see the top): wait until it takes more, still
				 * counted as blocked on the write.
				 */
				struct pollfd pf = {.fd = w->fd, .events = POLLOUT};

				__atomic_store_n(&w->write_since, g_get_monotonic_time(),
						 __ATOMIC_RELAXED);
				if (poll(&pf, 1, -1) < 0 && errno != EINTR) {
					__atomic_store_n(&w->write_since, 0, __ATOMIC_RELAXED);
					qt_debug("waiting for fd %d: %s", w->fd, g_strerror(errno));
					g_atomic_int_set(&w->failed, 1);
					break;
				}
				__atomic_store_n(&w->write_since, 0, __ATOMIC_RELAXED);
				continue;
			}
			if (n <= 0) {
				/* Like a pipe's reader going away: tell rexecd to stop the output. */
				qt_debug("writing fd %d: %s", w->fd, g_strerror(errno));
				g_atomic_int_set(&w->failed, 1);
				break;
			}
			off += (size_t)n;
		}
		g_atomic_int_add(&w->acked, (gint)it->len);
		qt_loop_post(w->cl->loop, writer_report, w);
		qt_msg_free(it->m);
		g_free(it);
	}
	return NULL;
}

/* Is an output blocked on a write for WRITE_STUCK_MS or more? */
static bool writers_stuck(struct client *cl)
{
	gint64 now = g_get_monotonic_time();

	for (int i = 0; i < 2; i++) {
		int64_t since = __atomic_load_n(&cl->out[i].write_since, __ATOMIC_RELAXED);

		if (cl->out[i].thread && since && now - since >= WRITE_STUCK_MS * 1000)
			return true;
	}
	return false;
}

static void writers_finish(struct client *cl)
{
	for (int i = 0; i < 2; i++) {
		struct writer *w = &cl->out[i];

		if (!w->thread)
			continue;
		g_async_queue_push(w->q, g_new0(struct out_item, 1));
		g_thread_join(w->thread);
		w->thread = NULL;
	}
}

/* ---- stdin --------------------------------------------------------------- */

static void stdin_report(void *arg)
{
	struct client *cl = arg;
	struct qt_msg *m;

	while ((m = g_async_queue_try_pop(cl->in_q)))
		send_msg(cl, m);
}

static gpointer stdin_main(gpointer arg)
{
	struct client *cl = arg;

	for (;;) {
		uint32_t want;
		struct qt_msg *m;
		uint8_t *p;
		ssize_t n;

		g_mutex_lock(&cl->lock);
		while (cl->in_credit == 0 && !cl->in_stop)
			g_cond_wait(&cl->cond, &cl->lock);
		want = MIN(cl->in_credit, REXEC_CHUNK);
		g_mutex_unlock(&cl->lock);
		if (cl->in_stop)
			break;
		/*
		 * poll() first, so that stopping does not wait for input that may
		 * never come; read() then returns what is there without blocking.
		 */
		{
			struct pollfd pf[2] = {{.fd = STDIN_FILENO, .events = POLLIN},
					       {.fd = cl->wake[0], .events = POLLIN}};

			if (poll(pf, 2, -1) < 0 && errno == EINTR)
				continue;
			if (pf[1].revents)
				break;
		}
		m = rexec_data_begin(REXEC_STDIN, NULL, 0);
		p = qt_msg_reserve(m, want);
		do
			n = read(STDIN_FILENO, p, want);
		while (n < 0 && errno == EINTR);
		if (n < 0 && errno == EAGAIN) {
			/* Non-blocking, made so by someone else, and drained meanwhile: poll again. */
			qt_msg_free(m);
			continue;
		}
		if (n <= 0) {
			qt_msg_free(m);
			if (n < 0)
				qt_debug("reading stdin: %s", g_strerror(errno));
			m = rexec_stream_encode(REXEC_MSG_EOF, REXEC_STDIN);
		} else {
			qt_msg_truncate(m, qt_msg_payload_len(m) - (want - (size_t)n));
			if (qt_msg_finish(m) < 0) {
				qt_msg_free(m);
				m = NULL;
			}
			g_mutex_lock(&cl->lock);
			cl->in_credit -= (uint32_t)n;
			g_mutex_unlock(&cl->lock);
		}
		if (m)
			g_async_queue_push(cl->in_q, m);
		qt_loop_post(cl->loop, stdin_report, cl);
		if (n <= 0)
			break;
	}
	return NULL;
}

static void stdin_credit(struct client *cl, uint32_t n, bool stop)
{
	g_mutex_lock(&cl->lock);
	cl->in_credit = MIN(cl->in_credit + n, REXEC_WINDOW);
	if (stop && !cl->in_stop && cl->wake[1] >= 0) {
		char b = 1;

		if (write(cl->wake[1], &b, 1) < 0)
			qt_debug("waking the stdin thread: %s", g_strerror(errno));
	}
	cl->in_stop = cl->in_stop || stop;
	g_cond_signal(&cl->cond);
	g_mutex_unlock(&cl->lock);
}

/* ---- after the loop stopped ------------------------------------------------- */

/*
 * What the guard needs, set once before it starts and never freed: it
 * runs until the process exits, and exits the process itself.
 */
static struct {
	int sfd;
	bool raw;
	struct termios saved;
} tail_guard;

static void *tail_guard_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd pf = {.fd = tail_guard.sfd, .events = POLLIN};
		struct signalfd_siginfo si;
		int sig;

		if (poll(&pf, 1, -1) < 0 && errno != EINTR)
			return NULL;
		if (read(tail_guard.sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
			continue;
		sig = (int)si.ssi_signo;
		if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT) {
			/* The command is over; what is left is ours, and the user wants it ended. */
			if (tail_guard.raw)
				rexec_tty_restore(STDIN_FILENO, &tail_guard.saved);
			rexec_die_of_signal(sig);
		}
		/* The rest (TSTP, CONT, USR1, WINCH...) has nobody to go to any more. */
	}
}

/*
 * Take over the signalfd @sfd (it is never closed) for the rest of our
 * life.  False if no thread could be started: the signals then stay
 * blocked until we exit, as before.
 */
static bool tail_guard_start(int sfd, bool raw, const struct termios *saved)
{
	pthread_t t;

	tail_guard.sfd = sfd;
	tail_guard.raw = raw;
	if (raw)
		tail_guard.saved = *saved;
	if (pthread_create(&t, NULL, tail_guard_main, NULL) != 0)
		return false;
	pthread_detach(t);
	return true;
}

/* ---- the session ---------------------------------------------------------- */

/*
 * One line of ours for stderr, "rexec: " and @fmt.  While our terminal is
 * raw (-t) a bare "\n" would not bring the cursor back to the start of
 * the line, and the next prompt would begin mid-line: where stderr is that
 * terminal, the line ends with "\r\n".
 */
static void G_GNUC_PRINTF(2, 3) say(const struct client *cl, const char *fmt, ...)
{
	g_autofree char *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	fprintf(stderr, "rexec: %s%s", msg, cl->raw && isatty(STDERR_FILENO) ? "\r\n" : "\n");
	fflush(stderr);
}

static void finish(struct client *cl, int rc)
{
	if (cl->done)
		return;
	cl->done = true;
	cl->rc = rc;
	qt_loop_stop(cl->loop);
}

static int result_exit_code(uint8_t result)
{
	switch (result) {
	case REXEC_R_NOT_FOUND:
		return REXEC_EXIT_NOTFOUND;
	case REXEC_R_DENIED:
	case REXEC_R_NOT_EXEC:
		return REXEC_EXIT_NOPERM;
	case REXEC_R_SETUP:
	case REXEC_R_BUSY:
		return REXEC_EXIT_SETUP;
	default:
		return REXEC_EXIT_CONN;
	}
}

static void send_resize(struct client *cl)
{
	unsigned cols, rows;

	rexec_tty_size(isatty(STDIN_FILENO) ? STDIN_FILENO : STDOUT_FILENO, &cols, &rows);
	send_msg(cl, rexec_resize_encode((uint16_t)cols, (uint16_t)rows));
}

static void on_signal(struct qt_watch *wt, int fd, uint32_t revents, void *arg)
{
	struct client *cl = arg;
	struct signalfd_siginfo si;

	(void)wt;
	(void)revents;
	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		int sig = (int)si.ssi_signo;

		if (sig == SIGWINCH) {
			if (cl->a->req->flags & REXEC_EXEC_PTY)
				send_resize(cl);
			continue;
		}
		if (!cl->running) {
			/*
			 * Nothing runs yet: a signal that would end a local command
			 * ends us (closing the connection cancels anything rexecd
			 * started meanwhile).
			 */
			if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT)
				finish(cl, REXEC_STATUS_SIGNAL + sig);
			continue;
		}
		send_msg(cl, rexec_signal_encode(rexec_signal_name(sig)));
		if ((sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT) &&
		    writers_stuck(cl)) {
			/*
			 * Nobody reads our output, so EXIT would never come (see
			 * the top).  The signal is on its way; when the connection
			 * goes, rexecd ends the rest of the group.  The writer
			 * threads stay blocked: _exit(), not finish().
			 */
			qt_loop_flush(cl->loop);
			if (cl->raw)
				rexec_tty_restore(STDIN_FILENO, &cl->saved);
			rexec_die_of_signal(sig);
		}
		if (sig == SIGTSTP) {
			/*
			 * Stop the remote group, then ourselves, so the local
			 * shell's job control works; the TSTP above goes into
			 * the socket first (a stopped process sends nothing).
			 */
			if (cl->raw)
				rexec_tty_restore(STDIN_FILENO, &cl->saved);
			qt_loop_flush(cl->loop);
			raise(SIGSTOP);
		} else if (sig == SIGCONT && cl->raw) {
			/* From the settings saved at the start: the current ones may be raw already. */
			rexec_tty_make_raw(STDIN_FILENO, &cl->saved);
		}
	}
}

static void start_stdin(void *arg)
{
	struct client *cl = arg;

	if (!cl->done && !cl->in_thread)
		cl->in_thread = g_thread_new("rexec-stdin", stdin_main, cl);
}

static void on_exec_reply(struct qt_conn *c, int err, struct qt_msg *reply, void *arg)
{
	struct client *cl = arg;
	struct rexec_result_msg r = {0};

	if (err) {
		/* The connection failed (a wrong key...): conn_closed says why. */
		if (!qt_conn_is_ready(c))
			return;
		if (!cl->done)
			say(cl, "%s refused the request: %s", cl->a->ep->uri, g_strerror(-err));
		finish(cl, REXEC_EXIT_CONN);
		return;
	}
	if (rexec_result_decode(reply, &r) < 0) {
		qt_msg_free(reply);
		say(cl, "%s: malformed answer to EXEC", cl->a->ep->uri);
		finish(cl, REXEC_EXIT_CONN);
		return;
	}
	qt_msg_free(reply);
	if (r.result == REXEC_R_BAD_REQUEST && r.err == EBADMSG && cl->a->old_rexecd &&
	    (cl->a->req->flags & REXEC_EXEC_ONE_OUTPUT)) {
		*cl->a->old_rexecd = true;
		rexec_result_clear(&r);
		finish(cl, REXEC_EXIT_CONN);
		return;
	}
	if (r.result != REXEC_R_OK) {
		say(cl, "%s", r.message);
		rexec_result_clear(&r);
		finish(cl, result_exit_code(r.result));
		return;
	}
	rexec_result_clear(&r);
	cl->running = true;
	cl->in_credit = REXEC_WINDOW;
	/*
	 * On the next loop turn: a quick command's EXIT often comes in the
	 * same read as this answer, and then no thread is started at all.
	 */
	qt_loop_post(cl->loop, start_stdin, cl);
}

/*
 * Issued as soon as the connection exists: it leaves right after our half
 * of the handshake (lib/conn.c), so the EXEC does not wait for AUTH_OK.
 */
static void send_exec(struct client *cl)
{
	struct qt_msg *m = rexec_exec_encode(cl->a->req, 0);
	int err;

	if (!m) {
		say(cl, "the command line and environment are too large to send");
		finish(cl, REXEC_EXIT_USAGE);
		return;
	}
	if ((err = qt_conn_call(cl->conn, m, 0, on_exec_reply, cl)) < 0) {
		say(cl, "cannot send the request: %s", g_strerror(-err));
		finish(cl, REXEC_EXIT_CONN);
	}
}

static void push_output(struct client *cl, struct qt_msg *m, uint8_t stream, const uint8_t *p,
			size_t len)
{
	struct writer *w = &cl->out[stream - 1];
	struct out_item *it;

	/* Started on the first output: most commands write to one stream or none. */
	if (!w->thread)
		w->thread = g_thread_new(stream == REXEC_STDOUT ? "rexec-stdout" : "rexec-stderr",
					 writer_main, w);
	it = g_new0(struct out_item, 1);
	it->m = m;
	it->p = p;
	it->len = len;
	g_async_queue_push(w->q, it);
}

static void conn_request(struct qt_conn *c, struct qt_msg *m, void *user)
{
	struct client *cl = user;
	uint8_t stream;
	uint32_t n;

	(void)c;
	switch (qt_msg_type(m)) {
	case REXEC_MSG_DATA: {
		struct rexec_fileref *refs;
		uint32_t n_refs;
		const uint8_t *p;
		size_t len;

		if (rexec_data_decode(m, &stream, &refs, &n_refs, &p, &len) < 0)
			break;
		for (uint32_t i = 0; i < n_refs; i++)
			rexec_fileref_clear(&refs[i]);
		g_free(refs);
		if (stream == REXEC_STDIN)
			break;
		/*
		 * rexecd may have REXEC_WINDOW bytes of a stream unacknowledged;
		 * one that sends more would have them all kept here, as fast
		 * as it sends and for as long as the reader is slow.
		 */
		if (cl->out[stream - 1].unacked + len > REXEC_WINDOW) {
			say(cl, "%s sent more %s than its credit; closing the connection", cl->a->ep->uri,
			    stream == REXEC_STDOUT ? "stdout" : "stderr");
			qt_conn_close(cl->conn, -EPROTO, "stream credit exceeded");
			finish(cl, REXEC_EXIT_CONN);
			break;
		}
		cl->out[stream - 1].unacked += len;
		push_output(cl, m, stream, p, len);
		return;
	}
	case REXEC_MSG_ACK:
		if (rexec_ack_decode(m, &stream, &n) == 0 && stream == REXEC_STDIN)
			stdin_credit(cl, n, false);
		break;
	case REXEC_MSG_CLOSE:
		/* The command closed its stdin: stop reading ours. */
		if (rexec_stream_decode(m, &stream) == 0 && stream == REXEC_STDIN)
			stdin_credit(cl, 0, true);
		break;
	case REXEC_MSG_EOF:
		break;
	case REXEC_MSG_EXIT: {
		struct rexec_exit e = {0};
		int rc;

		if (rexec_exit_decode(m, &e) < 0) {
			say(cl, "%s: malformed EXIT", cl->a->ep->uri);
			finish(cl, REXEC_EXIT_CONN);
			break;
		}
		if (!e.signaled) {
			rc = (int)e.code;
		} else {
			int sig = rexec_signal_number(e.signame);

			/* A signal without a name here: its number there, as an exit code. */
			if (sig > 0)
				rc = REXEC_STATUS_SIGNAL + sig;
			else
				rc = MIN(128 + (int)e.code, 255);
		}
		rexec_exit_clear(&e);
		finish(cl, rc);
		break;
	}
	default:
		qt_debug("unexpected message type 0x%04x", qt_msg_type(m));
		break;
	}
	qt_msg_free(m);
}

static void conn_closed(struct qt_conn *c, int err, const char *reason, void *user)
{
	struct client *cl = user;

	(void)c;
	cl->conn = NULL;
	if (!cl->done) {
		say(cl, "%s: %s", cl->a->ep->uri,
		    err ? reason : "connection closed before the command finished");
		finish(cl, REXEC_EXIT_CONN);
	}
}

static const struct qt_conn_ops client_ops = {
	.request = conn_request,
	.closed = conn_closed,
};

int rexec_client_run(const struct rexec_client_args *a)
{
	struct client cl = {.a = a, .sfd = -1, .rc = REXEC_EXIT_CONN, .wake = {-1, -1}};
	struct qt_conn_opts co = {.role = QT_CONN_CLIENT, .psk = a->psk, .name = "rexec",
				  .peer_timeout_s = a->peer_timeout_s};
	g_autoptr(qt_loop) loop = NULL;
	struct qt_conn *conn = NULL;
	sigset_t mask;
	int err;

	signal(SIGPIPE, SIG_IGN);

	/*
	 * epoll unless told otherwise: one connection that lives a few
	 * milliseconds gains nothing from io_uring and pays for setting up its
	 * rings (about 0.15 ms per exec here).
	 */
	if ((err = qt_loop_new(g_getenv("QT_LOOP_BACKEND") ? QT_LOOP_AUTO : QT_LOOP_EPOLL, &loop)) < 0) {
		fprintf(stderr, "rexec: cannot start the event loop: %s\n", g_strerror(-err));
		return REXEC_EXIT_CONN;
	}
	cl.loop = loop;
	if ((err = qt_conn_connect(loop, a->ep, a->timeout_ms, &co, &client_ops, &cl, &conn)) < 0) {
		fprintf(stderr, "rexec: cannot connect to %s: %s\n", a->ep->uri, g_strerror(-err));
		return REXEC_EXIT_CONN;
	}
	cl.conn = qt_conn_ref(conn);
	/*
	 * Blocked from here on, before any thread starts, so only the loop's
	 * signalfd sees them; until here they act as usual (Ctrl-C during a
	 * slow connect ends us).
	 */
	sigemptyset(&mask);
	for (size_t i = 0; i < G_N_ELEMENTS(fwd_signals); i++) {
		struct sigaction sa;

		/* What we were started ignoring (a shell's background job: INT, QUIT) stays ignored. */
		if (sigaction(fwd_signals[i], NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
			continue;
		sigaddset(&mask, fwd_signals[i]);
	}
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	g_mutex_init(&cl.lock);
	g_cond_init(&cl.cond);
	cl.in_q = g_async_queue_new();
	if (pipe2(cl.wake, O_CLOEXEC) < 0) {
		fprintf(stderr, "rexec: pipe: %s\n", g_strerror(errno));
		qt_conn_close(conn, 0, "no pipe");
		qt_loop_run_once(loop, 0);
		qt_conn_unref(conn);
		return REXEC_EXIT_CONN;
	}
	for (int i = 0; i < 2; i++) {
		struct writer *w = &cl.out[i];

		w->cl = &cl;
		w->fd = i == 0 ? STDOUT_FILENO : STDERR_FILENO;
		w->stream = (uint8_t)(i == 0 ? REXEC_STDOUT : REXEC_STDERR);
		w->q = g_async_queue_new();
	}
	cl.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (cl.sfd >= 0)
		cl.sigw = qt_watch_add(loop, cl.sfd, QT_EV_IN, on_signal, &cl);
	if ((a->req->flags & REXEC_EXEC_PTY) && rexec_tty_raw(STDIN_FILENO, &cl.saved))
		cl.raw = true;
	send_exec(&cl);

	if ((err = qt_loop_run(loop)) < 0) {
		say(&cl, "event loop failed: %s", g_strerror(-err));
		cl.rc = REXEC_EXIT_CONN;
	}
	/* From here on the loop no longer reads signals: the guard does, until we exit. */
	qt_watch_remove(cl.sigw);
	cl.sigw = NULL;
	if (cl.sfd >= 0 && tail_guard_start(cl.sfd, cl.raw, &cl.saved))
		cl.sfd = -1;

	/* Write out everything that arrived, then say goodbye. */
	writers_finish(&cl);
	if (cl.raw)
		rexec_tty_restore(STDIN_FILENO, &cl.saved);
	stdin_credit(&cl, 0, true);
	if (cl.in_thread)
		g_thread_join(cl.in_thread);
	if (cl.conn)
		qt_conn_close(cl.conn, 0, "done");
	for (int i = 0; i < 100 && cl.conn; i++)
		qt_loop_run_once(loop, 10);
	/* Run what the threads posted last (their arguments live in cl). */
	qt_loop_run_once(loop, 0);
	{
		struct qt_msg *m;

		while ((m = g_async_queue_try_pop(cl.in_q)))
			qt_msg_free(m);
	}
	g_async_queue_unref(cl.in_q);
	qt_watch_remove(cl.sigw);
	if (cl.sfd >= 0)
		close(cl.sfd);
	close(cl.wake[0]);
	close(cl.wake[1]);
	qt_conn_unref(conn);
	for (int i = 0; i < 2; i++)
		g_async_queue_unref(cl.out[i].q);
	g_mutex_clear(&cl.lock);
	g_cond_clear(&cl.cond);
	return cl.rc;
}
