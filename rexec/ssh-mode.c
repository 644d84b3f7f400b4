// SPDX-License-Identifier: Apache-2.0
/*
 * rexec --ssh: run the command through a plain sshd (lib/ssh.h) for hosts
 * without rexecd, with the same command line and exit statuses as the
 * rexecd client as far as SSH allows.
 *
 * SSH runs a command as one string through the user's login shell, so the
 * argv is sent as a POSIX-sh-quoted string and arrives byte-exact whatever
 * it contains (the login shell must be a POSIX sh, bash, zsh or similar):
 *
 *   cd -- 'DIR' || exit 124; exec env -- 'NAME=VALUE'... 'argv0' 'arg1'... 2>&1
 *
 * The environment goes through env(1), not SSH "env" requests, which sshd
 * drops unless its AcceptEnv lists the name.  A -C directory that cannot
 * be entered gives REXEC_EXIT_SETUP as with rexecd, and the shell's 126 and
 * 127 match REXEC_EXIT_NOPERM and REXEC_EXIT_NOTFOUND.
 *
 * Threads (all with the stop signals blocked, which only the signalfd takes):
 *   - the bridge thread of lib/ssh.c owns the SSH session;
 *   - the input thread copies our stdin to the bridge's wfd with blocking
 *     reads and writes (inherited descriptors are never made non-blocking:
 *     other processes share them) and closes wfd at EOF, so the remote
 *     command reads EOF.  It polls stdin with an eventfd, which is how it is
 *     told to finish: read(0) itself is never interrupted;
 *   - the main thread copies rfd to our stdout and handles the signals.
 *
 * Main-thread phases:
 *   RELAY: poll rfd + signalfd.  SIGWINCH resizes the pty; SIGINT, SIGTERM,
 *     SIGHUP or SIGQUIT frees the channel (sshd then hangs up on the
 *     command: SIGHUP on a pty, EOF and broken pipes otherwise; signals are
 *     not forwarded in --ssh mode) and returns REXEC_STATUS_SIGNAL + N:
 *     rexec then dies of that signal, like a killed child.
 *     EOF on rfd, or our stdout gone (EPIPE: rfd is closed, which closes the
 *     channel as ssh(1) does), goes to WAITING.
 *   WAITING: the remote output ended but the channel may stay open (a
 *     command that closed its stdout and stderr and runs on).  A waiter
 *     thread blocks in qt_ssh_chan_wait() and posts an eventfd; the main
 *     thread polls that and the signalfd.  ssh.h forbids freeing a channel
 *     while another thread waits on it, so a stop signal here ends the
 *     process with rexec_die_of_signal(N) after restoring the terminal:
 *     the kernel closes the TCP connection and sshd hangs up on the
 *     command just the same.
 *   DONE: the waiter returned; stop and join the input thread, free the
 *     channel and return the remote status (REXEC_STATUS_SIGNAL + N for a
 *     signal), REXEC_STATUS_SIGNAL + SIGPIPE when our stdout went away
 *     first, or REXEC_EXIT_CONN with one line on stderr when the
 *     connection failed.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "ssh-mode.h"
#include "ssh.h"
#include "tty.h"

#define RELAY_BUF (64u * 1024) /* one pipe's worth, the most the bridge holds anyway */

struct relay {
	struct qt_ssh_chan *ch; /* owned */
	bool pty;
	bool raw;		/* stdin's terminal is in raw mode; saved holds the old settings */
	struct termios saved;
	int rfd;		/* remote output; -1 once closed */
	int wfd;		/* remote input; the input thread's once it runs, which closes it */
	int sigfd;
	int stop;		/* eventfd: the input thread is to finish */
	int done;		/* eventfd: the waiter saw the channel end */
	GThread *input;
	GThread *waiter;
	bool stdout_gone;	/* we closed rfd because our stdout failed */
	bool stopped;		/* by a stop signal */
	/* written by the waiter before it posts done, read after joining it */
	int wait_r;
	int exit_code;
	char *exit_signal;	/* owned; the signal's name when one ended the command */
	char *errmsg;		/* owned; why the connection failed */
};

static void close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

static void post(int efd)
{
	uint64_t one = 1;

	(void)!write(efd, &one, sizeof(one));
}

/* Append @s to @cmd in single quotes, ' written as '\'' (quotes cannot be escaped inside). */
static void sh_quote(GString *cmd, const char *s)
{
	g_string_append_c(cmd, '\'');
	for (; *s; s++) {
		if (*s == '\'')
			g_string_append(cmd, "'\\''");
		else
			g_string_append_c(cmd, *s);
	}
	g_string_append_c(cmd, '\'');
}

static char *build_command(const struct rexec_ssh_args *a)
{
	GString *cmd = g_string_new(NULL);

	if (a->cwd) {
		g_string_append(cmd, "cd -- ");
		sh_quote(cmd, a->cwd);
		g_string_append_printf(cmd, " || exit %d; ", REXEC_EXIT_SETUP);
	}
	g_string_append(cmd, "exec");
	if (a->env && a->env[0]) {
		g_string_append(cmd, " env --");
		for (char *const *e = a->env; *e; e++) {
			g_string_append_c(cmd, ' ');
			sh_quote(cmd, *e);
		}
	}
	for (char *const *v = a->argv; *v; v++) {
		g_string_append_c(cmd, ' ');
		sh_quote(cmd, *v);
	}
	/* One channel for both, in the order written, as here (tty.h). */
	if (a->one_output)
		g_string_append(cmd, " 2>&1");
	return g_string_free(cmd, FALSE);
}

/*
 * Write all of @p to @fd, blocking.  A descriptor someone else made
 * non-blocking (EAGAIN) is waited for with poll rather than changed.
 */
static int write_full(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EAGAIN) {
			struct pollfd pfd = {.fd = fd, .events = POLLOUT};

			(void)poll(&pfd, 1, -1);
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* stdin -> wfd until EOF, a write error (the remote input closed) or r->stop. */
static gpointer input_main(gpointer arg)
{
	struct relay *r = arg;
	g_autofree char *buf = g_malloc(RELAY_BUF);

	for (;;) {
		struct pollfd p[2] = {
			{.fd = STDIN_FILENO, .events = POLLIN},
			{.fd = r->stop, .events = POLLIN},
		};
		ssize_t n;

		if (poll(p, G_N_ELEMENTS(p), -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		if (p[0].revents & POLLNVAL)
			break; /* no stdin at all: EOF */
		if (!p[0].revents)
			continue;
		n = read(STDIN_FILENO, buf, RELAY_BUF);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break; /* EOF, or EIO from a hung-up terminal: EOF for the remote too */
		/* EPIPE once the channel is done or stopped: nobody reads any more. */
		if (write_full(r->wfd, buf, (size_t)n) < 0)
			break;
	}
	close_fd(&r->wfd);
	return NULL;
}

static gpointer waiter_main(gpointer arg)
{
	struct relay *r = arg;

	r->wait_r = qt_ssh_chan_wait(r->ch, &r->exit_code, &r->exit_signal);
	post(r->done);
	return NULL;
}

static void local_size(unsigned *cols, unsigned *rows)
{
	rexec_tty_size(isatty(STDIN_FILENO) ? STDIN_FILENO : STDOUT_FILENO, cols, rows);
}

/* A signal from the signalfd: its number if it means stop, else 0 (resized, or nothing read). */
static int take_signal(struct relay *r)
{
	struct signalfd_siginfo si;
	unsigned cols, rows;

	if (read(r->sigfd, &si, sizeof(si)) != sizeof(si))
		return 0;
	if (si.ssi_signo != SIGWINCH)
		return (int)si.ssi_signo;
	if (r->pty) {
		local_size(&cols, &rows);
		(void)qt_ssh_chan_resize(r->ch, cols, rows);
	}
	return 0;
}

/* Read what the signalfd holds; the first stop signal in it, or 0. */
static int drain_signals(int sigfd)
{
	struct signalfd_siginfo si;
	int first = 0;

	while (read(sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo != SIGWINCH && !first)
			first = (int)si.ssi_signo;
	}
	return first;
}

/* Copy what rfd has to stdout; at its end or when stdout fails, close rfd. */
static void relay_output(struct relay *r, char *buf)
{
	ssize_t n = read(r->rfd, buf, RELAY_BUF);
	int w;

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		close_fd(&r->rfd);
		return;
	}
	w = write_full(STDOUT_FILENO, buf, (size_t)n);
	if (w < 0) {
		/* Closing rfd closes the channel, as ssh(1) does when its stdout goes away. */
		if (w != -EPIPE)
			fprintf(stderr, "rexec: writing the output: %s\n", g_strerror(-w));
		r->stdout_gone = true;
		close_fd(&r->rfd);
	}
}

/*
 * Run the phases described at the top.  Returns the exit status, having
 * freed the channel and joined every thread it started; on a stop signal
 * in WAITING it does not return.  A failure to report is left in r->errmsg.
 */
static int relay_run(struct relay *r)
{
	g_autofree char *buf = g_malloc(RELAY_BUF);
	bool waiting = false;
	int code, signo = 0;

	for (;;) {
		struct pollfd p[3] = {
			{.fd = r->rfd, .events = POLLIN},
			{.fd = r->sigfd, .events = POLLIN},
			{.fd = waiting ? r->done : -1, .events = POLLIN},
		};

		if (r->rfd < 0 && !waiting) {
			GError *gerr = NULL;

			r->waiter = g_thread_try_new("rexec-ssh-wait", waiter_main, r, &gerr);
			if (!r->waiter) {
				/* Without a waiter, wait here; stop signals then wait too. */
				g_error_free(gerr);
				waiter_main(r);
			}
			waiting = true;
			continue;
		}
		if (poll(p, G_N_ELEMENTS(p), -1) < 0) {
			if (errno == EINTR || errno == ENOMEM)
				continue;
			/* Cannot happen with these arguments; give up rather than spin. */
			r->errmsg = g_strdup_printf("poll: %s", g_strerror(errno));
			signo = -1;
			break;
		}
		if (p[2].revents & POLLIN)
			break;
		if (p[1].revents & POLLIN) {
			signo = take_signal(r);
			if (signo && waiting) {
				if (r->raw)
					rexec_tty_restore(STDIN_FILENO, &r->saved);
				rexec_die_of_signal(signo);
			}
			if (signo) {
				r->stopped = true;
				break;
			}
		}
		if (p[0].revents)
			relay_output(r, buf);
	}

	if (r->waiter)
		g_thread_join(g_steal_pointer(&r->waiter));
	if (signo < 0) {
		code = REXEC_EXIT_CONN;
	} else if (signo) {
		code = REXEC_STATUS_SIGNAL + signo;
	} else if (r->wait_r == -EPIPE && r->stdout_gone) {
		/* What a local command writing to a closed pipe gets. */
		code = REXEC_STATUS_SIGNAL + SIGPIPE;
	} else if (r->wait_r < 0) {
		r->errmsg = g_strdup(qt_ssh_chan_error(r->ch));
		code = REXEC_EXIT_CONN;
	} else if (r->exit_signal && qt_ssh_signal_number(r->exit_signal) > 0) {
		code = REXEC_STATUS_SIGNAL + qt_ssh_signal_number(r->exit_signal);
	} else {
		code = r->exit_code;
	}
	g_clear_pointer(&r->exit_signal, g_free);
	/* Stop before freeing: a write blocked on wfd gets EPIPE once the channel is freed. */
	post(r->stop);
	qt_ssh_chan_free(g_steal_pointer(&r->ch));
	g_thread_join(g_steal_pointer(&r->input));
	return code;
}

/*
 * The stop signals we watch, less those ignored when we started (nohup,
 * background jobs): a blocked signal is queued even when ignored, and we
 * must not start honouring what the user asked us to ignore.
 */
static void stop_signals(sigset_t *set)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

	sigemptyset(set);
	sigaddset(set, SIGWINCH);
	for (size_t i = 0; i < G_N_ELEMENTS(sigs); i++) {
		struct sigaction sa;

		if (sigaction(sigs[i], NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
			continue;
		sigaddset(set, sigs[i]);
	}
}

/* Relay between our stdio and the bridged channel; frees @ch and closes @rfd and @wfd. */
static int relay(struct qt_ssh_chan *ch, int rfd, int wfd, bool pty)
{
	struct relay r = {
		.ch = ch, .pty = pty, .rfd = rfd, .wfd = wfd, .sigfd = -1, .stop = -1, .done = -1,
	};
	struct sigaction ign = {.sa_handler = SIG_IGN}, old_pipe;
	sigset_t set, old_mask;
	GError *gerr = NULL;
	int code, signo;

	/* Before any thread of ours starts, so that they inherit the mask. */
	stop_signals(&set);
	pthread_sigmask(SIG_BLOCK, &set, &old_mask);
	/* EPIPE instead: ignored, not blocked, so that none stays pending. */
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, &old_pipe);

	r.sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	r.stop = eventfd(0, EFD_CLOEXEC);
	r.done = eventfd(0, EFD_CLOEXEC);
	if (r.sigfd < 0 || r.stop < 0 || r.done < 0) {
		fprintf(stderr, "rexec: cannot set up the relay: %s\n", g_strerror(errno));
		code = REXEC_EXIT_CONN;
		goto cleanup;
	}
	if (pty)
		r.raw = rexec_tty_raw(STDIN_FILENO, &r.saved);
	r.input = g_thread_try_new("rexec-ssh-input", input_main, &r, &gerr);
	if (!r.input) {
		fprintf(stderr, "rexec: cannot start the input thread: %s\n", gerr->message);
		g_error_free(gerr);
		code = REXEC_EXIT_CONN;
		goto cleanup;
	}
	code = relay_run(&r);
	/*
	 * Stop signals still queued would kill us once unblocked: the same
	 * signal twice (timeout(1) sends one to us and one to our process
	 * group), or one that came while the command ended.  Take them here:
	 * a stop asked for is a stop, reported as a death by that signal.
	 */
	signo = drain_signals(r.sigfd);
	if (signo && !r.stopped)
		code = REXEC_STATUS_SIGNAL + signo;
cleanup:
	qt_ssh_chan_free(r.ch); /* NULL unless setting up failed */
	close_fd(&r.rfd);
	close_fd(&r.wfd);
	if (r.raw)
		rexec_tty_restore(STDIN_FILENO, &r.saved);
	if (r.errmsg) /* after the restore: raw mode would break the line */
		fprintf(stderr, "rexec: %s\n", r.errmsg);
	g_free(r.errmsg);
	close_fd(&r.sigfd);
	close_fd(&r.stop);
	close_fd(&r.done);
	sigaction(SIGPIPE, &old_pipe, NULL);
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	return code;
}

static bool env_ok(char *const *env)
{
	for (; env && *env; env++) {
		const char *eq = strchr(*env, '=');

		/* env(1) would run a word without '=' as the command. */
		if (!eq || eq == *env) {
			fprintf(stderr, "rexec: environment entry \"%s\" is not NAME=VALUE\n",
				*env);
			return false;
		}
	}
	return true;
}

int rexec_ssh_run(const struct rexec_ssh_args *a)
{
	g_autoptr(qt_ssh_target) target = NULL;
	g_autoptr(qt_ssh) s = NULL;
	g_autofree char *msg = NULL, *command = NULL;
	struct qt_ssh_opts o = {0};
	struct qt_ssh_exec_opts eo = {0};
	struct qt_ssh_chan *ch = NULL;
	int r, rfd, wfd;

	if (!a->argv || !a->argv[0]) {
		fputs("rexec: no command to run\n", stderr);
		return REXEC_EXIT_USAGE;
	}
	if (!env_ok(a->env))
		return REXEC_EXIT_USAGE;
	r = qt_ssh_target_parse(a->dest, &target, &msg);
	if (r < 0) {
		fprintf(stderr, "rexec: %s\n", msg);
		return REXEC_EXIT_USAGE;
	}
	o.target = target;
	o.identity = a->identity;
	o.known_hosts = a->known_hosts;
	o.timeout_ms = a->timeout_ms;
	o.peer_timeout_s = a->peer_timeout_s;
	r = qt_ssh_open(&o, &s, &msg);
	if (r < 0) {
		fprintf(stderr, "rexec: %s\n", msg);
		return REXEC_EXIT_CONN;
	}

	command = build_command(a);
	eo.pty = a->pty;
	if (a->pty) {
		eo.term = getenv("TERM");
		if (eo.term && !*eo.term)
			eo.term = NULL; /* the library's default rather than an empty name */
		local_size(&eo.cols, &eo.rows);
	} else {
		eo.stderr_fd = STDERR_FILENO;
	}
	r = qt_ssh_exec(s, command, &eo, &ch, &msg);
	if (r < 0) {
		fprintf(stderr, "rexec: %s\n", msg);
		return REXEC_EXIT_CONN;
	}
	r = qt_ssh_chan_bridge(ch, &rfd, &wfd);
	if (r < 0) {
		fprintf(stderr, "rexec: cannot relay %s: %s\n", qt_ssh_uri(s), g_strerror(-r));
		qt_ssh_chan_free(ch);
		return REXEC_EXIT_CONN;
	}
	return relay(ch, rfd, wfd, a->pty);
}
