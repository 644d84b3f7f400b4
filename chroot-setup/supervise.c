// SPDX-License-Identifier: Apache-2.0
/*
 * The supervisor process behind services and forwards (see supervise.h
 * for its states).  It waits for signals synchronously (SIGCHLD, SIGTERM,
 * SIGINT, SIGHUP blocked, then sigtimedwait), so there is no handler and
 * no race between "the program exited" and "we were told to stop".  The
 * program runs in a process group of its own, which is what a stop signals.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#include "supervise.h"

#define DELAY_MIN_MS 200
#define DELAY_MAX_MS 30000
#define STABLE_RUN_S 10

static void note(const struct cs_supervise *sv, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

/* One line in the log, after whatever the program wrote. */
static void note(const struct cs_supervise *sv, const char *fmt, ...)
{
	g_autoptr(GDateTime) now = g_date_time_new_now_local();
	g_autofree char *ts = g_date_time_format(now, "%F %T"), *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s chroot-setup[%d]: %s: %s\n", ts, (int)getpid(), sv->name, msg);
	fflush(stderr);
}

static void set_status(const struct cs_supervise *sv, const char *state, long num, unsigned starts)
{
	/* running and stopping: the program's start time too, for down if we are gone. */
	bool has_pid = !strcmp(state, "running") || !strcmp(state, "stopping");
	g_autofree char *text =
		has_pid ? g_strdup_printf("%s %ld %u %llu\n", state, num, starts,
					  cs_proc_start_time((pid_t)num))
			: g_strdup_printf("%s %ld %u\n", state, num, starts);

	g_autoptr(GError) err = NULL;

	/* g_file_set_contents writes a temporary file and renames it over. */
	if (!g_file_set_contents(sv->status, text, -1, &err))
		note(sv, "cannot write the status file (%s): %s", state, err->message);
}

/* Exit code, or 128 + signal, as shells report it. */
static int status_code(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * Start the program: 0 and *pid, or -errno from exec (or from enter()),
 * carried back over a close-on-exec pipe that exec closes on success.
 */
static int start(const struct cs_supervise *sv, pid_t *pid)
{
	int ep[2], err = 0;
	pid_t child;
	ssize_t n;

	if (pipe2(ep, O_CLOEXEC) < 0)
		return -errno;
	child = fork();
	if (child < 0) {
		err = -errno;
		close(ep[0]);
		close(ep[1]);
		return err;
	}
	if (child == 0) {
		sigset_t all;

		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		setpgid(0, 0);
		close(ep[0]);
		if (sv->enter && (err = sv->enter(sv->data)) < 0) {
			err = -err;
		} else {
			execvp(sv->argv[0], sv->argv);
			err = errno;
		}
		if (write(ep[1], &err, sizeof(err)) < 0)
			_exit(127);
		_exit(127);
	}
	close(ep[1]);
	do
		n = read(ep[0], &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	close(ep[0]);
	if (n == (ssize_t)sizeof(err)) {
		waitpid(child, NULL, 0);
		return -err;
	}
	*pid = child;
	return 0;
}

/* What the supervisor waits for: its program's end, and being told to stop. */
static void stop_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGCHLD);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
}

/* Wait up to @ms for one of @set (forever when @ms < 0); the signal, or 0 on timeout. */
static int wait_signal(const sigset_t *set, long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	int sig;

	do
		sig = ms < 0 ? sigwaitinfo(set, NULL) : sigtimedwait(set, NULL, &ts);
	while (sig < 0 && errno == EINTR);
	return sig < 0 ? 0 : sig;
}

/* Reap @pid if it has exited: true and *status. */
static bool reaped(pid_t pid, int *status)
{
	pid_t r;

	/* Reap whatever else ended too (nothing else should be our child). */
	while ((r = waitpid(-1, status, WNOHANG)) > 0)
		if (r == pid)
			return true;
	return false;
}

static G_GNUC_NORETURN void stop_and_exit(const struct cs_supervise *sv, const sigset_t *set,
					  pid_t pid, unsigned starts)
{
	gint64 deadline = g_get_monotonic_time() + (gint64)sv->stop_timeout * G_USEC_PER_SEC;
	int status = 0;

	if (pid > 0) {
		set_status(sv, "stopping", pid, starts);
		note(sv, "stopping pid %d (SIGTERM)", (int)pid);
		kill(-pid, SIGTERM);
		while (!reaped(pid, &status)) {
			gint64 left = deadline - g_get_monotonic_time();

			if (left <= 0) {
				note(sv, "pid %d still there after %u s: SIGKILL", (int)pid,
				     sv->stop_timeout);
				kill(-pid, SIGKILL);
				waitpid(pid, &status, 0);
				break;
			}
			wait_signal(set, left / 1000 + 1);
		}
		note(sv, "stopped (status %d)", status_code(status));
		kill(-pid, SIGKILL); /* whatever it left in its group */
	}
	unlink(sv->status);
	_exit(0);
}

static G_GNUC_NORETURN void supervise(const struct cs_supervise *sv, int report)
{
	sigset_t set;
	pid_t pid = 0;
	unsigned starts = 0;
	long delay = DELAY_MIN_MS;
	gint64 started = 0;
	int err, status = 0, sig;

	stop_signals(&set);
	for (;;) {
		if ((err = start(sv, &pid)) < 0) {
			note(sv, "cannot start %s: %s", sv->argv[0], g_strerror(-err));
			if (report >= 0) {
				if (write(report, &err, sizeof(err)) < 0)
					_exit(1);
				unlink(sv->status);
				_exit(1);
			}
			pid = 0;
		} else {
			starts++;
			started = g_get_monotonic_time();
			set_status(sv, "running", pid, starts);
			note(sv, "started %s as pid %d", sv->argv[0], (int)pid);
		}
		if (report >= 0) {
			err = 0;
			if (write(report, &err, sizeof(err)) < 0)
				_exit(1);
			close(report);
			report = -1;
		}
		/* Wait for the program to end, or for a stop. */
		while (pid > 0) {
			sig = wait_signal(&set, -1);
			if (sig != SIGCHLD)
				stop_and_exit(sv, &set, pid, starts);
			if (reaped(pid, &status))
				break;
		}
		if (pid > 0) {
			int code = status_code(status);
			bool again = sv->restart == CS_RESTART_ALWAYS ||
				     (sv->restart == CS_RESTART_ON_FAILURE && code != 0);

			if (g_get_monotonic_time() - started >= STABLE_RUN_S * G_USEC_PER_SEC)
				delay = DELAY_MIN_MS;
			kill(-pid, SIGKILL); /* what it left behind in its group */
			pid = 0;
			if (!again) {
				note(sv, "exited with status %d; not restarted (restart=%s)", code,
				     sv->restart == CS_RESTART_NO ? "no" : "on-failure");
				set_status(sv, "exited", code, starts);
				for (;;) {
					sig = wait_signal(&set, -1);
					if (sig != SIGCHLD)
						stop_and_exit(sv, &set, 0, starts);
					reaped(0, &status);
				}
			}
			note(sv, "exited with status %d; restarting in %ld ms", code, delay);
		} else {
			note(sv, "restarting in %ld ms", delay);
		}
		set_status(sv, "waiting", (delay + 999) / 1000, starts);
		for (gint64 until = g_get_monotonic_time() + delay * 1000;;) {
			gint64 left = until - g_get_monotonic_time();

			if (left <= 0)
				break;
			sig = wait_signal(&set, left / 1000 + 1);
			if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP)
				stop_and_exit(sv, &set, 0, starts);
			reaped(0, &status);
		}
		delay = MIN(delay * 2, DELAY_MAX_MS);
	}
}

pid_t cs_supervise_start(const struct cs_supervise *sv)
{
	int rp[2], err = 0;
	pid_t pid;
	ssize_t n;

	if (pipe2(rp, O_CLOEXEC) < 0)
		return -errno;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(rp[0]);
		close(rp[1]);
		return err;
	}
	if (pid == 0) {
		g_autofree char *title = g_strdup_printf("cs-%s", sv->name);
		int log, nul, rep, dir;
		sigset_t set;

		if (sv->record && (err = sv->record(sv->record_data)) < 0) {
			/* Not recorded, so never to be found and stopped: it stops here. */
			if (write(rp[1], &err, sizeof(err)) < 0)
				_exit(1);
			_exit(1);
		}
		log = open(sv->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
		close(rp[0]);
		setsid();
		prctl(PR_SET_NAME, title, 0, 0, 0);
		if (nul >= 0)
			dup2(nul, 0);
		if (log >= 0) {
			dup2(log, 1);
			dup2(log, 2);
		}
		/*
		 * Nothing of `up` (the journal, the terminal) stays open in here
		 * but the report pipe (3) and the program's directory (4, open
		 * across its exec).  Both go above 4 first: neither may land on
		 * the other's number before it moved.
		 */
		rep = fcntl(rp[1], F_DUPFD_CLOEXEC, 5);
		dir = sv->dir_fd > 0 ? fcntl(sv->dir_fd, F_DUPFD_CLOEXEC, 5) : -1;
		if (rep < 0 || dup2(rep, 3) < 0 || (sv->dir_fd > 0 && (dir < 0 || dup2(dir, 4) < 0)))
			_exit(1);
		close_range(dir >= 0 ? 5 : 4, ~0U, 0);
		fcntl(3, F_SETFD, FD_CLOEXEC);
		setvbuf(stderr, NULL, _IOLBF, 0);
		stop_signals(&set);
		sigprocmask(SIG_BLOCK, &set, NULL);
		signal(SIGPIPE, SIG_DFL);
		supervise(sv, 3);
	}
	close(rp[1]);
	do
		n = read(rp[0], &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	close(rp[0]);
	if (n != (ssize_t)sizeof(err)) {
		waitpid(pid, NULL, 0);
		return -EIO;
	}
	if (err < 0) {
		waitpid(pid, NULL, 0);
		return err;
	}
	return pid;
}

unsigned long long cs_proc_start_time(pid_t pid)
{
	/* 0 for a zombie too: it is gone, only not reaped (its parent may never reap it). */
	g_autofree char *file = g_strdup_printf("/proc/%d/stat", (int)pid), *data = NULL;
	g_auto(GStrv) f = NULL;
	const char *p;

	if (pid <= 0 || !g_file_get_contents(file, &data, NULL, NULL))
		return 0;
	/* The comm field may hold spaces and parentheses: fields start after the last ')'. */
	p = strrchr(data, ')');
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return 0;
	f = g_strsplit(p + 2, " ", 21);
	/* Field 22 of stat(5) is the 20th after the comm. */
	if (g_strv_length(f) < 20)
		return 0;
	return g_ascii_strtoull(f[19], NULL, 10);
}

int cs_supervise_stop_orphan(const char *status, unsigned stop_timeout)
{
	g_autofree char *state = NULL;
	unsigned long long pstart;
	unsigned starts;
	long num;
	pid_t pgid;
	gint64 deadline;

	if (!status || !cs_supervise_read_status_full(status, &state, &num, &starts, &pstart) ||
	    (strcmp(state, "running") != 0 && strcmp(state, "stopping") != 0) || num <= 0 ||
	    !pstart || cs_proc_start_time((pid_t)num) != pstart)
		return -ESRCH;
	pgid = (pid_t)num;
	kill(-pgid, SIGTERM);
	deadline = g_get_monotonic_time() + (gint64)stop_timeout * G_USEC_PER_SEC;
	while (cs_proc_start_time(pgid) == pstart && g_get_monotonic_time() < deadline)
		g_usleep(20 * 1000);
	/* The group outlives its leader while it has members: what it left behind too. */
	kill(-pgid, SIGKILL);
	return 0;
}

int cs_supervise_stop(pid_t pid, unsigned stop_timeout)
{
	gint64 deadline;

	if (pid <= 0 || kill(pid, SIGTERM) < 0)
		return -ESRCH;
	/* A supervisor is our child only when `up` stops it on a failure. */
	deadline = g_get_monotonic_time() + (gint64)(stop_timeout + 2) * G_USEC_PER_SEC;
	while (g_get_monotonic_time() < deadline) {
		if (waitpid(pid, NULL, WNOHANG) == pid || !cs_proc_start_time(pid))
			return 0;
		g_usleep(20 * 1000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, WNOHANG);
	return 0;
}

bool cs_supervise_read_status(const char *file, char **state, long *num, unsigned *starts)
{
	unsigned long long pstart;

	return cs_supervise_read_status_full(file, state, num, starts, &pstart);
}

bool cs_supervise_read_status_full(const char *file, char **state, long *num, unsigned *starts,
				   unsigned long long *pstart)
{
	g_autofree char *data = NULL;
	g_auto(GStrv) f = NULL;

	if (!g_file_get_contents(file, &data, NULL, NULL))
		return false;
	f = g_strsplit(g_strstrip(data), " ", 4);
	if (g_strv_length(f) != 3 && g_strv_length(f) != 4)
		return false;
	*pstart = f[3] ? g_ascii_strtoull(f[3], NULL, 10) : 0;
	*state = g_strdup(f[0]);
	*num = (long)g_ascii_strtoll(f[1], NULL, 10);
	*starts = (unsigned)g_ascii_strtoull(f[2], NULL, 10);
	return true;
}
