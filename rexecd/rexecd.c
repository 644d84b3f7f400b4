// SPDX-License-Identifier: Apache-2.0
/*
 * rexecd sessions.  A connection carries one session: an exec or a
 * unix-socket forward.
 *
 * Exec session states:
 *   IDLE --EXEC ok--> SPAWNING --exec succeeded--> RUNNING --child exited-->
 *   DRAINING --every output at EOF (or empty and idle drain_ms)--> DONE (EXIT sent)
 *   SPAWNING --setup or exec failed--> FAILED (error reply; the child is reaped)
 *   any state before DONE --connection lost--> ORPHANED: SIGTERM to the
 *   process group, SIGKILL kill_grace_ms later, freed once reaped.
 * The process group: its id is the child's pid, and every signal to it
 * goes by that number (kill(-pid)).  Once the child is reaped and the rest
 * of its group is gone, the number is free for the kernel to hand to a new
 * process, which may start a group of its own (another session's child
 * does): a late signal would then hit a stranger.  So the child's exit is
 * learnt with WNOWAIT and it stays a zombie, holding the number, for as
 * long as the session may signal the group: until EXIT is sent, the
 * command failed to start, or the SIGKILL timer is over.  Only then is it
 * reaped (release()).
 * Invariants: the child is reaped exactly once, through its pidfd, never
 * while the state is SPAWNING, RUNNING or DRAINING or the SIGKILL timer
 * is pending; the session is freed only once it is reaped and its
 * connection is gone (and the SIGKILL timer, if any, fired or was
 * cancelled); EXIT is sent at most once, after the EOF of every output
 * stream, so the client has all output before it learns the status.
 *
 * The child is vforked and set up with async-signal-safe system calls only
 * (it shares our memory until it execs), and reports a failed chdir, open
 * or execve through a close-on-exec pipe, which the loop reads once the
 * vfork returns.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "chan.h"
#include "conf.h"
#include "endpoint.h"
#include "log.h"
#include "proto.h"
#include "rexecd.h"

#define REXECD_PIPE_SIZE (1024 * 1024)
#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

enum { TAG_D = 0x52584431, TAG_SESS = 0x52585331 };

enum state {
	S_IDLE,
	S_SPAWNING,
	S_RUNNING,
	S_DRAINING,
	S_DONE,
	S_FAILED,
	S_FORWARD,
};

struct rexecd {
	uint32_t tag;
	struct qt_loop *loop;
	struct rexecd_opts o;
	GArray *unix_uids;
	GList *sessions; /* struct sess* */
	unsigned n_active;
};

struct sess {
	uint32_t tag;
	struct rexecd *d;
	GList *link;
	struct qt_conn *conn; /* NULL once the connection is gone */
	enum state st;
	bool refused;	/* unix peer not in unix_uids */
	bool counted;	/* holds one of max_sessions */
	char *peer;
	char *argv0, *path;
	uint64_t start_ms;

	struct qt_msg *req; /* the EXEC being answered while SPAWNING */
	pid_t pid;
	int pidfd, errfd;
	struct qt_watch *pidw, *errw;
	bool exited;	/* status known; the child is a zombie until reaped */
	bool reaped;	/* the zombie is gone: no signal to -pid any more */
	siginfo_t status;

	bool pty;
	struct rexec_chan *in, *out[2]; /* pty: in == out[0] */
	struct qt_timer *kill_timer, *drain_timer;
	uint64_t drain_seen[2];
};

/* What a failing child writes on the status pipe before _exit(127). */
struct child_err {
	int stage;
	int err;
};
enum { STAGE_PTY = 1, STAGE_FD, STAGE_CWD, STAGE_EXEC };

static void sess_maybe_free(struct sess *s);
static void chans_free(struct sess *s);
static void release(struct sess *s);

/* ---- helpers shared with main.c and the tests ------------------------- */

int rexecd_whitelist_load(const char *path, GHashTable **out, char **msg)
{
	g_autofree char *data = NULL;
	GError *gerr = NULL;
	GHashTable *set;
	char **lines;
	int n = 0;

	if (!g_file_get_contents(path, &data, NULL, &gerr)) {
		int err = gerr->code == G_FILE_ERROR_NOENT ? -ENOENT : -EACCES;

		*msg = g_strdup_printf("cannot read whitelist %s: %s", path, gerr->message);
		g_error_free(gerr);
		return err;
	}
	set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	lines = g_strsplit(data, "\n", -1);
	for (char **l = lines; *l; l++) {
		char *s = g_strstrip(*l);

		n++;
		if (!*s || *s == '#')
			continue;
		if (*s != '/') {
			*msg = g_strdup_printf("%s:%d: \"%s\" is not an absolute path", path, n, s);
			g_strfreev(lines);
			g_hash_table_unref(set);
			return -EINVAL;
		}
		g_hash_table_add(set, g_canonicalize_filename(s, "/"));
		{
			/* /bin/sh also allows /usr/bin/sh on a merged-/usr host: same file. */
			char *real = realpath(s, NULL);

			if (real)
				g_hash_table_add(set, g_strdup(real));
			free(real);
		}
	}
	g_strfreev(lines);
	*out = set;
	return 0;
}

static bool env_name_allowed(char *const *allow, const char *var)
{
	size_t nlen = (size_t)(strchr(var, '=') - var);

	for (; allow && *allow; allow++) {
		size_t al = strlen(*allow);

		if (al && (*allow)[al - 1] == '*') {
			if (nlen >= al - 1 && strncmp(var, *allow, al - 1) == 0)
				return true;
		} else if (al == nlen && strncmp(var, *allow, nlen) == 0) {
			return true;
		}
	}
	return false;
}

/*
 * Variables glibc itself acts on by loading code, or reading or writing
 * files, as the process: it ignores them in set-user-ID programs, and
 * pass drops them with LD_* (GCONV_PATH names a directory of modules
 * iconv() loads, for one).
 */
static const char *const unsafe_env[] = {
	"GCONV_PATH", "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES", "LOCALDOMAIN", "LOCPATH",
	"MALLOC_TRACE", "NIS_PATH", "NLSPATH", "RESOLV_HOST_CONF", "RES_OPTIONS", "TZDIR",
};

static bool env_unsafe(const char *var)
{
	if (g_str_has_prefix(var, "LD_"))
		return true;
	for (size_t i = 0; i < G_N_ELEMENTS(unsafe_env); i++) {
		size_t n = strlen(unsafe_env[i]);

		if (!strncmp(var, unsafe_env[i], n) && var[n] == '=')
			return true;
	}
	return false;
}

char **rexecd_env_filter(enum rexecd_env_policy p, char *const *allow, char *const *fixed,
			 char *const *sent)
{
	GPtrArray *v = g_ptr_array_new();

	if (p == REXECD_ENV_FIXED) {
		for (; fixed && *fixed; fixed++)
			g_ptr_array_add(v, g_strdup(*fixed));
	} else {
		/*
		 * pass keeps everything but the dynamic loader's variables
		 * (LD_PRELOAD would run the client's code in any whitelisted
		 * binary) and glibc's other unsafe ones; an allowlist may
		 * still name them.
		 */
		for (; sent && *sent; sent++)
			if (p == REXECD_ENV_PASS ? !env_unsafe(*sent) : env_name_allowed(allow, *sent))
				g_ptr_array_add(v, g_strdup(*sent));
	}
	g_ptr_array_add(v, NULL);
	return (char **)g_ptr_array_free(v, FALSE);
}

static const char *env_get(char *const *env, const char *name)
{
	size_t n = strlen(name);

	for (; env && *env; env++)
		if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
			return *env + n + 1;
	return NULL;
}

/* ---- sessions ---------------------------------------------------------- */

static void send_exit(struct sess *s)
{
	struct rexec_exit e = {0};
	const siginfo_t *si = &s->status;
	uint64_t ms = qt_loop_now_ms(s->d->loop) - s->start_ms;
	g_autofree char *st = NULL;

	if (si->si_code == CLD_EXITED) {
		e.code = (uint32_t)si->si_status & 0xff;
		st = g_strdup_printf("exit %d", si->si_status);
	} else {
		e.signaled = true;
		e.core = si->si_code == CLD_DUMPED;
		e.code = (uint32_t)si->si_status;
		e.signame = (char *)rexec_signal_name(si->si_status);
		st = g_strdup_printf("signal %s%s", e.signame ? e.signame : "?", e.core ? " (core dumped)" : "");
	}
	qt_notice("exec peer=%s argv0=\"%s\" path=%s pid=%d status=\"%s\" duration=%" G_GUINT64_FORMAT "ms",
		  s->peer, s->argv0, s->path, (int)s->pid, st, ms);
	s->st = S_DONE;
	if (s->conn) {
		struct qt_msg *m = rexec_exit_encode(&e);

		if (m)
			qt_conn_send(s->conn, m);
	}
	e.signame = NULL;
	/* No signal goes to the group after EXIT: the number may go. */
	release(s);
}

static bool outputs_open(struct sess *s)
{
	for (int i = 0; i < 2; i++)
		if (s->out[i] && rexec_chan_out_open(s->out[i]))
			return true;
	return false;
}

static void check_done(struct sess *s)
{
	if (s->st == S_DRAINING && !outputs_open(s)) {
		if (s->drain_timer) {
			qt_timer_cancel(s->drain_timer);
			s->drain_timer = NULL;
		}
		send_exit(s);
	}
}

/*
 * After the child exited, something else (a daemon it started) may still
 * hold its stdout.  An output counts as ended once its pipe is empty and
 * nothing was read from it for drain_ms, so the client gets its exit
 * status.  The empty pipe is what keeps the command's own output whole:
 * all it wrote before it exited is in the pipe until we read it, however
 * long the client takes to give credit (an ACK and this timer may come in
 * the same turn of the loop, before the read they allow).  Only a silent
 * holder of an empty pipe is cut.
 */
static void drain_tick(void *arg)
{
	struct sess *s = arg;

	s->drain_timer = NULL;
	for (int i = 0; i < 2; i++) {
		struct rexec_chan *ch = s->out[i];

		if (!ch || !rexec_chan_out_open(ch))
			continue;
		if (rexec_chan_out_bytes(ch) == s->drain_seen[i] && rexec_chan_out_pending(ch) == 0)
			rexec_chan_force_eof(ch);
		else
			s->drain_seen[i] = rexec_chan_out_bytes(ch);
	}
	if (outputs_open(s))
		s->drain_timer = qt_timer_add(s->d->loop, s->d->o.drain_ms, drain_tick, s);
	check_done(s);
}

/*
 * A forward is over once both directions ended and every byte either way
 * was written out: close the connection (the client does the same on its
 * side), so that the session's descriptors and its max_sessions slot go.
 */
static void forward_check_done(struct sess *s)
{
	if (s->st == S_FORWARD && s->conn && s->in && rexec_chan_finished(s->in))
		qt_conn_close(s->conn, 0, "forward done");
}

static void on_chan(struct rexec_chan *ch, enum rexec_chan_event ev, int err, void *user)
{
	struct sess *s = user;

	switch (ev) {
	case REXEC_CHAN_EV_READ_EOF:
		if (err)
			qt_debug("session %d: output read failed: %s", (int)s->pid, g_strerror(-err));
		check_done(s);
		forward_check_done(s);
		break;
	case REXEC_CHAN_EV_WRITE_ERR:
		if (s->st == S_FORWARD && s->conn) {
			/* A passed file is not allowed or cannot be opened, or the host socket is gone. */
			const char *bad = rexec_chan_bad_ref(ch);
			g_autofree char *esc = bad ? g_strescape(bad, NULL) : NULL;

			if (esc && rexec_chan_bad_ref_denied(ch))
				qt_warn("forward peer=%s: passing %s is not allowed (pass_fds_allow); "
					"closing the connection", s->peer, esc);
			else if (esc)
				qt_warn("forward peer=%s: cannot re-open passed file %s: %s; closing the "
					"connection", s->peer, esc, g_strerror(-err));
			else
				qt_info("forward peer=%s to %s: %s; closing the connection", s->peer,
					s->argv0 + strlen("forward:"), g_strerror(-err));
			qt_conn_close(s->conn, err, "cannot write to the host socket");
			break;
		}
		/* The command closed its stdin: the client stops sending it. */
		qt_debug("session %d: stdin write failed: %s", (int)s->pid, g_strerror(-err));
		break;
	case REXEC_CHAN_EV_IN_DONE:
		forward_check_done(s);
		break;
	case REXEC_CHAN_EV_REFUSED:
		if (s->st == S_FORWARD && s->conn) {
			qt_warn("forward peer=%s: refusing a descriptor that is not a regular file; "
				"closing the connection", s->peer);
			qt_conn_close(s->conn, -EOPNOTSUPP, "descriptor kind cannot be forwarded");
		}
		break;
	}
}

/*
 * The child exited: take its status, but leave it a zombie (WNOWAIT), so
 * that its pid, the id of its process group, stays taken (see the top).
 */
static void child_exited(struct sess *s)
{
	siginfo_t si = {0};

	if (s->exited)
		return;
	if (waitid((idtype_t)P_PIDFD, (id_t)s->pidfd, &si, WEXITED | WNOHANG | WNOWAIT) < 0 ||
	    si.si_pid == 0)
		return;
	s->exited = true;
	s->status = si;
	/* The pidfd stays readable while the zombie is there. */
	qt_watch_remove(s->pidw);
	s->pidw = NULL;
}

/* Whether the session may still signal the process group (see the top). */
static bool group_in_use(const struct sess *s)
{
	return s->st == S_SPAWNING || s->st == S_RUNNING || s->st == S_DRAINING || s->kill_timer;
}

/* The session is done with the process group: reap the child. */
static void release(struct sess *s)
{
	siginfo_t si = {0};

	if (!s->exited || s->reaped)
		return;
	/* It has exited: this does not wait. */
	if (waitid((idtype_t)P_PIDFD, (id_t)s->pidfd, &si, WEXITED) < 0)
		qt_debug("session %d: waitid: %s", (int)s->pid, g_strerror(errno));
	s->reaped = true;
	close(s->pidfd);
	s->pidfd = -1;
}

/*
 * Whether a process other than the child itself is in its process group.
 * kill(-pid, 0) cannot tell once the child has exited: the zombie we keep
 * is in the group too.  Called when a command whose client is gone exits,
 * and when the grace period ends.
 */
static bool group_has_others(const struct sess *s)
{
	DIR *d;
	struct dirent *e;
	bool found = false;

	if (!s->exited)
		return true;
	if (kill(-s->pid, 0) < 0 && errno == ESRCH)
		return false;
	d = opendir("/proc");
	if (!d)
		return true; /* cannot tell: assume the worst, and SIGKILL at the end of the grace */
	while (!found && (e = readdir(d))) {
		char path[64], buf[512];
		const char *rp;
		int64_t pid;
		ssize_t n;
		int fd, pgrp = 0;

		if (qt_parse_int(e->d_name, 1, INT32_MAX, &pid) < 0 || pid == s->pid)
			continue;
		g_snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		/* "pid (comm) state ppid pgrp ...": comm may hold anything, even ")". */
		rp = strrchr(buf, ')');
		if (rp && sscanf(rp + 1, " %*c %*d %d", &pgrp) == 1 && pgrp == (int)s->pid)
			found = true;
	}
	closedir(d);
	return found;
}

static void reply_result(struct sess *s, uint8_t result, int err, const char *fmt, ...)
	G_GNUC_PRINTF(4, 5);

static void reply_result(struct sess *s, uint8_t result, int err, const char *fmt, ...)
{
	struct rexec_result_msg r = {.result = result, .err = (uint32_t)err};
	g_autofree char *msg = NULL;
	struct qt_msg *m;
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		msg = g_strdup_vprintf(fmt, ap);
		va_end(ap);
	}
	r.message = msg;
	if (result == REXEC_R_OK)
		r.pid = (uint32_t)s->pid;
	else {
		/* A refused session is over: another request on it gets EBUSY. */
		if (s->st == S_IDLE)
			s->st = S_FAILED;
		g_autofree char *esc = g_strescape(msg ? msg : "", NULL);

		qt_notice("deny peer=%s cmd=\"%s\": %s", s->peer, s->argv0 ? s->argv0 : "", esc);
	}
	if (s->req && s->conn && (m = rexec_result_encode(s->req, qt_msg_type(s->req), &r)))
		qt_conn_reply(s->conn, m);
	g_clear_pointer(&s->req, qt_msg_free);
}

/* The status pipe said something, or closed: the exec happened or failed. */
static void spawn_settle(struct sess *s)
{
	struct child_err ce;
	ssize_t n = read(s->errfd, &ce, sizeof(ce));

	if (n < 0 && errno == EAGAIN)
		return;
	qt_watch_remove(s->errw);
	s->errw = NULL;
	close(s->errfd);
	s->errfd = -1;
	if (n == (ssize_t)sizeof(ce)) {
		uint8_t res = REXEC_R_SETUP;
		const char *what = "cannot start it";

		switch (ce.stage) {
		case STAGE_PTY:
			what = "cannot attach the pty";
			break;
		case STAGE_FD:
			what = "cannot re-open a passed file";
			break;
		case STAGE_CWD:
			what = "cannot enter the working directory";
			break;
		case STAGE_EXEC:
			res = ce.err == ENOENT ? REXEC_R_NOT_FOUND : REXEC_R_NOT_EXEC;
			what = "cannot execute it";
			break;
		}
		s->st = S_FAILED;
		chans_free(s);
		reply_result(s, res, ce.err, "%s: %s: %s", s->path, what, g_strerror(ce.err));
		return;
	}
	s->st = S_RUNNING;
	qt_info("exec peer=%s argv0=\"%s\" path=%s pid=%d started", s->peer, s->argv0, s->path,
		(int)s->pid);
	reply_result(s, REXEC_R_OK, 0, NULL);
}

static void on_errpipe(struct qt_watch *w, int fd, uint32_t revents, void *arg)
{
	(void)w;
	(void)fd;
	(void)revents;
	spawn_settle(arg);
}

static void on_pidfd(struct qt_watch *w, int fd, uint32_t revents, void *arg)
{
	struct sess *s = arg;

	(void)w;
	(void)fd;
	(void)revents;
	if (s->st == S_SPAWNING)
		spawn_settle(s);
	child_exited(s);
	if (!s->exited)
		return;
	if (s->kill_timer && !group_has_others(s)) {
		/* Orphaned and the whole group is gone already: nothing left to SIGKILL. */
		qt_timer_cancel(s->kill_timer);
		s->kill_timer = NULL;
	}
	if (s->st == S_RUNNING) {
		s->st = S_DRAINING;
		if (outputs_open(s)) {
			for (int i = 0; i < 2; i++)
				s->drain_seen[i] = s->out[i] ? rexec_chan_out_bytes(s->out[i]) : 0;
			s->drain_timer = qt_timer_add(s->d->loop, s->d->o.drain_ms, drain_tick, s);
		}
		check_done(s);
	}
	/* It did not start, or EXIT is out, or its client is gone and so is its group. */
	if (!group_in_use(s))
		release(s);
	sess_maybe_free(s);
}

/* ---- the child ---------------------------------------------------------- */

static void G_GNUC_NORETURN child_fail(int errfd, int stage)
{
	struct child_err ce = {.stage = stage, .err = errno};

	if (write(errfd, &ce, sizeof(ce)) < 0) {
		/* Nothing more to do: the parent sees EOF and a 127 exit. */
	}
	_exit(127);
}

/*
 * Every descriptor from 3 up close-on-exec, between fork() and execve():
 * those rexecd inherited (a service manager or a shell may leave some
 * open) and any a library opened without O_CLOEXEC.  CLOSE_RANGE_CLOEXEC
 * is Linux 5.11; before it (Linux 5.10 of Debian 11 and openEuler 22.03:
 * EINVAL), each descriptor /proc/self/fd lists, read with getdents64 into
 * the stack (opendir() would allocate).
 */
static void cloexec_from_3(void)
{
	/* struct linux_dirent64, which no libc header declares. */
	struct d64 {
		uint64_t ino;
		int64_t off;
		unsigned short reclen;
		unsigned char type;
		char name[];
	};
	char buf[4096] __attribute__((aligned(8)));
	long n;
	int d;

	if (syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) == 0)
		return;
	d = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d < 0)
		return;
	while ((n = syscall(SYS_getdents64, d, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n; off += ((const struct d64 *)(buf + off))->reclen) {
			const char *name = ((const struct d64 *)(buf + off))->name, *c = name;
			int fd = 0;

			for (; *c >= '0' && *c <= '9' && fd < 1 << 24; c++)
				fd = fd * 10 + (*c - '0');
			if (*c == '\0' && c != name && fd >= 3 && fd != d)
				fcntl(fd, F_SETFD, FD_CLOEXEC);
		}
	}
	close(d);
}

/*
 * Runs between fork() and execve(): async-signal-safe calls only.  Every
 * descriptor of rexecd is close-on-exec, and cloexec_from_3() makes sure
 * of it.
 */
static void G_GNUC_NORETURN child_run(const struct rexec_exec_req *r, const char *path,
				     char **envp, const char *slave, int fds[3], const int *passed,
				     int errfd, uint32_t max_target, const struct rlimit *nofile)
{
	sigset_t none;

	/*
	 * exec() resets handled signals by itself; ignored ones survive it, and
	 * SIGPIPE is the only one rexecd ignores.
	 */
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	if (slave) {
		int t = open(slave, O_RDWR);

		if (t < 0 || ioctl(t, TIOCSCTTY, 0) < 0)
			child_fail(errfd, STAGE_PTY);
		fds[0] = fds[1] = fds[2] = t;
	}
	for (int i = 0; i < 3; i++)
		if (dup2(fds[i], i) < 0)
			child_fail(errfd, STAGE_PTY);
	cloexec_from_3();
	if (r->n_fds) {
		/*
		 * The files rexecd opened (@passed, close-on-exec) go to the
		 * numbers the caller wants.  First everything moves above those
		 * numbers, so that no dup2() closes one not yet placed.  Our
		 * memory is the parent's: only this stack frame is written.
		 */
		int moved[REXEC_MAX_FDS];
		int e = fcntl(errfd, F_DUPFD_CLOEXEC, (int)max_target + 1);

		if (e >= 0)
			errfd = e;
		for (uint32_t i = 0; i < r->n_fds; i++)
			if ((moved[i] = fcntl(passed[i], F_DUPFD_CLOEXEC, (int)max_target + 1)) < 0)
				child_fail(errfd, STAGE_FD);
		for (uint32_t i = 0; i < r->n_fds; i++)
			if (dup2(moved[i], (int)r->fds[i].fd) < 0)
				child_fail(errfd, STAGE_FD);
	}
	umask((mode_t)r->umask);
	/* rexecd's own limit was raised for its sessions; the command gets the usual one. */
	if (nofile)
		setrlimit(RLIMIT_NOFILE, nofile);
	if (r->cwd[0] && chdir(r->cwd) < 0)
		child_fail(errfd, STAGE_CWD);
	execve(path, r->argv, envp);
	child_fail(errfd, STAGE_EXEC);
}

/*
 * vfork(): no page tables to copy, so a spawn costs the same however big
 * rexecd grows, and we are suspended only until the child execs or fails.
 * Signals stay blocked across it so that no handler can run in the child
 * on our memory.  A function of its own, so no local of the caller lives
 * across the vfork.  The pid, or -errno.
 */
static pid_t __attribute__((noinline))
spawn(const struct rexec_exec_req *r, const char *path, char **envp, const char *slave,
      int fds[3], const int *passed, int errfd, uint32_t max_target, const struct rlimit *nofile)
{
	sigset_t all, old;
	pid_t pid;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = vfork();
	if (pid == 0)
		child_run(r, path, envp, slave, fds, passed, errfd, max_target, nofile);
	err = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return pid < 0 ? -err : pid;
}

/* ---- exec --------------------------------------------------------------- */

/*
 * What to execute for @path, if it is listed (the list holds both forms
 * of each entry): @path itself, or else the file it resolves to, which is
 * then what runs, not @path.  Executing @path after finding its target
 * listed would run whatever a symlink on the way leads to by then, and
 * the client may be able to change it (a directory it writes through
 * fuse-qtfs, its own PATH).  NULL if not listed.
 */
static char *whitelisted(GHashTable *wl, const char *path)
{
	char *real;

	if (!wl)
		return NULL;
	if (g_hash_table_contains(wl, path))
		return g_strdup(path);
	real = realpath(path, NULL);
	if (real && g_hash_table_contains(wl, real))
		return real;
	free(real);
	return NULL;
}

/* Find @cmd as execvp() would, in @env's PATH; relative paths from @cwd. */
static int resolve(const char *cmd, const char *cwd, char *const *env, char **out)
{
	const char *pathvar;
	char **dirs;
	int err = -ENOENT;

	if (strchr(cmd, '/')) {
		*out = g_canonicalize_filename(cmd, cwd[0] ? cwd : "/");
		return 0;
	}
	pathvar = env_get(env, "PATH");
	dirs = g_strsplit(pathvar ? pathvar : DEFAULT_PATH, ":", -1);
	for (char **d = dirs; *d; d++) {
		g_autofree char *p = NULL;
		struct stat st;

		if (**d != '/')
			continue; /* a relative PATH entry means nothing to a daemon */
		p = g_build_filename(*d, cmd, NULL);
		if (stat(p, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (access(p, X_OK) == 0) {
			*out = g_canonicalize_filename(p, "/");
			g_strfreev(dirs);
			return 0;
		}
		err = -EACCES;
	}
	g_strfreev(dirs);
	return err;
}

static int open_pty(const struct rexec_exec_req *r, int *master, char *slave, size_t n)
{
	struct winsize ws = {.ws_col = r->cols ? r->cols : 80, .ws_row = r->rows ? r->rows : 24};
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);

	if (m < 0)
		return -errno;
	if (grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, slave, n) != 0 ||
	    ioctl(m, TIOCSWINSZ, &ws) < 0) {
		int err = -errno;

		close(m);
		return err;
	}
	*master = m;
	return 0;
}

static void do_exec(struct sess *s, struct qt_msg *m)
{
	struct rexecd *d = s->d;
	struct rexec_exec_req r = {0};
	g_auto(GStrv) env = NULL;
	g_autofree char *path = NULL;
	char slave[64];
	int pipes[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
	int childfds[3], errp[2] = {-1, -1}, master = -1, err;
	int passed[REXEC_MAX_FDS];
	uint32_t n_passed = 0;
	uint32_t max_target = 0;
	struct stat st;
	pid_t pid;

	s->req = m;
	if (rexec_exec_decode(m, &r) < 0) {
		reply_result(s, REXEC_R_BAD_REQUEST, EBADMSG, "malformed EXEC request");
		return;
	}
	/* Only for log lines: escaped, so a client cannot forge lines with a newline. */
	g_free(s->argv0);
	s->argv0 = g_strescape(r.argv[0], NULL);
	s->start_ms = qt_loop_now_ms(d->loop);
	if (s->refused) {
		reply_result(s, REXEC_R_DENIED, EACCES, "this unix user may not use rexecd (unix_uids)");
		goto out;
	}
	if (d->n_active >= d->o.max_sessions) {
		reply_result(s, REXEC_R_BUSY, EAGAIN, "too many sessions (max_sessions=%u)",
			     d->o.max_sessions);
		goto out;
	}
	for (uint32_t i = 0; i < r.n_fds; i++) {
		if (r.fds[i].fd < 3) {
			reply_result(s, REXEC_R_BAD_REQUEST, EBADF, "cannot pass fd %u", r.fds[i].fd);
			goto out;
		}
		max_target = MAX(max_target, r.fds[i].fd);
	}
	env = rexecd_env_filter(d->o.env_policy, d->o.env_allow, d->o.env_fixed, r.env);
	if (!env_get(env, "PATH")) {
		guint n = g_strv_length(env);

		env = g_renew(char *, env, n + 2);
		env[n] = g_strdup("PATH=" DEFAULT_PATH);
		env[n + 1] = NULL;
	}
	if ((r.flags & REXEC_EXEC_PTY) && !env_get(env, "TERM") && r.term[0]) {
		guint n = g_strv_length(env);

		env = g_renew(char *, env, n + 2);
		env[n] = g_strdup_printf("TERM=%s", r.term);
		env[n + 1] = NULL;
	}
	errno = 0;
	if (r.cwd[0] && (stat(r.cwd, &st) < 0 || !S_ISDIR(st.st_mode))) {
		err = errno;
		if (err)
			reply_result(s, REXEC_R_SETUP, err, "working directory %s: %s on the host",
				     r.cwd, g_strerror(err));
		else
			reply_result(s, REXEC_R_SETUP, ENOTDIR,
				     "working directory %s: not a directory on the host", r.cwd);
		goto out;
	}
	if ((err = resolve(r.cmd, r.cwd, env, &path)) < 0) {
		reply_result(s, err == -ENOENT ? REXEC_R_NOT_FOUND : REXEC_R_NOT_EXEC, -err,
			     "%s: %s on the host", r.cmd,
			     err == -ENOENT ? "command not found" : "permission denied");
		goto out;
	}
	g_free(s->path);
	s->path = g_strescape(path, NULL);
	if (!d->o.allow_all) {
		char *listed = whitelisted(d->o.whitelist, path);

		if (!listed) {
			reply_result(s, REXEC_R_DENIED, EPERM, "%s is not in the host's rexec whitelist",
				     path);
			goto out;
		}
		g_free(path);
		path = listed;
	}

	/*
	 * Passed files are opened here, not in the child, so that the file
	 * actually opened is judged against pass_fds_allow (a symlink in an
	 * allowed directory cannot lead out of it).
	 */
	for (uint32_t i = 0; i < r.n_fds; i++) {
		bool denied;
		int fd = rexec_fileref_open(&r.fds[i], true, d->o.pass_fds_allow, &denied);

		if (fd < 0) {
			if (denied)
				reply_result(s, REXEC_R_DENIED, EPERM,
					     "fd %u: passing %s is not allowed on the host (pass_fds_allow)",
					     r.fds[i].fd, r.fds[i].path);
			else
				reply_result(s, REXEC_R_SETUP, -fd, "fd %u: cannot re-open passed file %s on the host: %s",
					     r.fds[i].fd, r.fds[i].path, g_strerror(-fd));
			goto out;
		}
		passed[n_passed++] = fd;
	}

	s->pty = r.flags & REXEC_EXEC_PTY;
	if (s->pty) {
		if ((err = open_pty(&r, &master, slave, sizeof(slave))) < 0) {
			reply_result(s, REXEC_R_SETUP, -err, "cannot allocate a pty: %s", g_strerror(-err));
			goto out;
		}
	} else {
		/* One output (2>&1 at the client): stderr is the stdout pipe, as it was there. */
		bool one_output = r.flags & REXEC_EXEC_ONE_OUTPUT;

		for (int i = 0; i < (one_output ? 2 : 3); i++) {
			if (pipe2(pipes[i], O_CLOEXEC) < 0) {
				err = errno;
				reply_result(s, REXEC_R_SETUP, err, "cannot create pipes: %s", g_strerror(err));
				goto out;
			}
		}
		/*
		 * Bigger pipes mean fewer, larger reads and frames for bulk
		 * output (best effort: pipe-max-size may be lower).
		 */
		for (int i = 0; i < (one_output ? 2 : 3); i++)
			fcntl(pipes[i][0], F_SETPIPE_SZ, REXECD_PIPE_SIZE);
		childfds[0] = pipes[0][0];
		childfds[1] = pipes[1][1];
		childfds[2] = one_output ? pipes[1][1] : pipes[2][1];
	}
	if (pipe2(errp, O_CLOEXEC) < 0) {
		err = errno;
		reply_result(s, REXEC_R_SETUP, err, "cannot create a pipe: %s", g_strerror(err));
		goto out;
	}
	pid = spawn(&r, path, env, s->pty ? slave : NULL, childfds, passed, errp[1], max_target,
		    s->d->o.child_nofile);
	err = -(int)pid;
	if (pid < 0) {
		reply_result(s, REXEC_R_SETUP, err, "cannot fork: %s", g_strerror(err));
		goto out;
	}

	s->pid = pid;
	s->pidfd = pidfd_open(pid, 0);
	if (s->pidfd < 0) {
		/* Cannot happen on a kernel with pidfds (5.3+); kill rather than leak. */
		qt_err("pidfd_open(%d): %s", (int)pid, g_strerror(errno));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		s->exited = s->reaped = true;
		reply_result(s, REXEC_R_SETUP, errno, "cannot watch the child");
		goto out;
	}
	d->n_active++;
	s->counted = true;
	s->st = S_SPAWNING;
	s->pidw = qt_watch_add(d->loop, s->pidfd, QT_EV_IN, on_pidfd, s);
	close(errp[1]);
	errp[1] = -1;
	s->errfd = errp[0];
	errp[0] = -1;
	fcntl(s->errfd, F_SETFL, O_NONBLOCK);
	if (s->pty) {
		s->out[0] = s->in = rexec_chan_new(d->loop, s->conn, master, REXEC_STDOUT, REXEC_STDIN,
						   REXEC_CHAN_PTY, on_chan, s);
		master = -1;
	} else {
		s->in = rexec_chan_new(d->loop, s->conn, pipes[0][1], -1, REXEC_STDIN, 0, on_chan, s);
		s->out[0] = rexec_chan_new(d->loop, s->conn, pipes[1][0], REXEC_STDOUT, -1, 0, on_chan, s);
		if (pipes[2][0] >= 0)
			s->out[1] = rexec_chan_new(d->loop, s->conn, pipes[2][0], REXEC_STDERR, -1,
						   0, on_chan, s);
		pipes[0][1] = pipes[1][0] = pipes[2][0] = -1;
	}
	/*
	 * vfork() returned, so the child has exec'd (the status pipe is at EOF)
	 * or failed (its error is in the pipe): settle now.  The watch is for
	 * the case a kernel returns early.
	 */
	spawn_settle(s);
	if (s->st == S_SPAWNING)
		s->errw = qt_watch_add(d->loop, s->errfd, QT_EV_IN, on_errpipe, s);
out:
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 2; j++)
			if (pipes[i][j] >= 0)
				close(pipes[i][j]);
	if (errp[0] >= 0)
		close(errp[0]);
	if (errp[1] >= 0)
		close(errp[1]);
	if (master >= 0)
		close(master);
	for (uint32_t i = 0; i < n_passed; i++)
		close(passed[i]);
	rexec_exec_req_clear(&r);
}

/* ---- forward ------------------------------------------------------------ */

static void do_forward(struct sess *s, struct qt_msg *m)
{
	struct rexecd *d = s->d;
	g_autofree char *raw = NULL, *path = NULL;
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	char proc[64], real[REXEC_MAX_PATH];
	ssize_t n;
	int fd, pfd, err;

	s->req = m;
	if (rexec_forward_decode(m, &raw) < 0) {
		reply_result(s, REXEC_R_BAD_REQUEST, EBADMSG, "malformed FORWARD request");
		return;
	}
	path = g_canonicalize_filename(raw, "/");
	{
		g_autofree char *esc = g_strescape(path, NULL);

		g_free(s->argv0);
		s->argv0 = g_strdup_printf("forward:%s", esc);
	}
	if (s->refused) {
		reply_result(s, REXEC_R_DENIED, EACCES, "this unix user may not use rexecd (unix_uids)");
		return;
	}
	if (d->n_active >= d->o.max_sessions) {
		reply_result(s, REXEC_R_BUSY, EAGAIN, "too many sessions (max_sessions=%u)",
			     d->o.max_sessions);
		return;
	}
	/*
	 * The path's text must be allowed, and so must the socket file itself:
	 * pin it with an O_PATH descriptor, check where it really is, and
	 * connect through that descriptor, so that no symlink (or one swapped
	 * in meanwhile) can lead elsewhere.
	 */
	if (!rexec_path_under(d->o.forward_allow, path)) {
		reply_result(s, REXEC_R_DENIED, EPERM, "%s is not in the host's forward_allow list", path);
		return;
	}
	pfd = open(path, O_PATH | O_CLOEXEC);
	if (pfd < 0) {
		err = errno;
		reply_result(s, err == ENOENT ? REXEC_R_NOT_FOUND : REXEC_R_SETUP, err,
			     "%s on the host: %s", path, g_strerror(err));
		return;
	}
	g_snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	n = readlink(proc, real, sizeof(real) - 1);
	if (n > 0)
		real[n] = '\0';
	if (n <= 0 || !rexec_path_under(d->o.forward_allow, real)) {
		close(pfd);
		reply_result(s, REXEC_R_DENIED, EPERM, "%s is not in the host's forward_allow list",
			     n > 0 ? real : path);
		return;
	}
	memcpy(sun.sun_path, proc, strlen(proc) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		err = errno;
		if (fd >= 0)
			close(fd);
		close(pfd);
		reply_result(s, err == ENOENT ? REXEC_R_NOT_FOUND : REXEC_R_SETUP, err,
			     "cannot connect to %s on the host: %s", path, g_strerror(err));
		return;
	}
	close(pfd);
	s->st = S_FORWARD;
	d->n_active++;
	s->counted = true;
	s->out[0] = s->in = rexec_chan_new(d->loop, s->conn, fd, REXEC_DOWN, REXEC_UP,
					   REXEC_CHAN_SOCK, on_chan, s);
	rexec_chan_restrict_refs(s->in, d->o.pass_fds_allow);
	qt_info("forward peer=%s to %s", s->peer, s->argv0 + strlen("forward:"));
	reply_result(s, REXEC_R_OK, 0, NULL);
}

/* ---- connection callbacks ---------------------------------------------- */

static void chans_free(struct sess *s)
{
	if (s->in == s->out[0])
		s->out[0] = NULL;
	rexec_chan_free(s->in);
	rexec_chan_free(s->out[0]);
	rexec_chan_free(s->out[1]);
	s->in = s->out[0] = s->out[1] = NULL;
}

static void sess_maybe_free(struct sess *s)
{
	struct rexecd *d = s->d;

	if (s->conn || (s->pid && !s->exited) || s->kill_timer)
		return;
	release(s);
	chans_free(s);
	if (s->drain_timer)
		qt_timer_cancel(s->drain_timer);
	qt_watch_remove(s->pidw);
	if (s->pidfd >= 0)
		close(s->pidfd);
	qt_watch_remove(s->errw);
	if (s->errfd >= 0)
		close(s->errfd);
	if (s->counted)
		d->n_active--;
	d->sessions = g_list_delete_link(d->sessions, s->link);
	qt_msg_free(s->req);
	g_free(s->peer);
	g_free(s->argv0);
	g_free(s->path);
	s->tag = 0;
	g_free(s);
}

static void kill_timer_fired(void *arg)
{
	struct sess *s = arg;

	s->kill_timer = NULL;
	/* The zombie keeps the number ours until release(): this cannot reach a stranger. */
	if (group_has_others(s) && kill(-s->pid, SIGKILL) == 0)
		qt_notice("session %d: process group still alive after %" G_GUINT64_FORMAT
			  " ms: SIGKILL", (int)s->pid, s->d->o.kill_grace_ms);
	sess_maybe_free(s);
}

static void conn_ready(struct qt_conn *c, void *user)
{
	struct rexecd *d = user;
	struct sess *s = g_new0(struct sess, 1);
	uint32_t uid;

	s->tag = TAG_SESS;
	s->d = d;
	s->conn = c;
	s->pidfd = s->errfd = -1;
	s->peer = g_strdup(qt_conn_peer(c));
	if (qt_socket_peer_uid(qt_conn_fd(c), &uid) == 0) {
		bool ok = false;

		for (guint i = 0; i < d->unix_uids->len; i++)
			ok = ok || g_array_index(d->unix_uids, uint32_t, i) == uid;
		if (!ok) {
			qt_warn("peer %s: uid %u is not in unix_uids; refusing its requests", s->peer, uid);
			s->refused = true;
		}
	}
	d->sessions = g_list_prepend(d->sessions, s);
	s->link = d->sessions;
	qt_conn_set_user(c, s);
}

static void one_way(struct sess *s, struct qt_msg *m)
{
	struct rexec_chan *chans[3] = {s->in, s->out[0] != s->in ? s->out[0] : NULL, s->out[1]};
	int r = rexec_chan_route(chans, 3, m, s->st == S_FORWARD);

	if (r < 0 && s->conn) {
		/* Files travel with EXEC (--pass-fds), never on a command's stdin. */
		qt_warn("peer %s: %s; closing the connection", s->peer,
			r == -EPROTO ? "sent more than its credit" : "file references on stdin");
		qt_conn_close(s->conn, -EPROTO, "stream protocol violated");
	}
	if (r == 0)
		forward_check_done(s); /* the last ACK may come after both EOFs */
	if (r != 1)
		return;
	switch (qt_msg_type(m)) {
	case REXEC_MSG_SIGNAL: {
		g_autofree char *name = NULL;
		int sig;

		if (rexec_signal_decode(m, &name) < 0 || (sig = rexec_signal_number(name)) < 0) {
			qt_debug("peer %s: bad SIGNAL", s->peer);
			break;
		}
		/*
		 * The command's group is orphaned (its parent, rexecd, is in
		 * another session), and the kernel drops SIGTSTP sent to an
		 * orphaned group that does not catch it: stop it for real.
		 */
		if (sig == SIGTSTP)
			sig = SIGSTOP;
		if ((s->st == S_RUNNING || s->st == S_SPAWNING || s->st == S_DRAINING) &&
		    kill(-s->pid, sig) < 0)
			qt_debug("session %d: kill(%s): %s", (int)s->pid, name, g_strerror(errno));
		break;
	}
	case REXEC_MSG_RESIZE: {
		uint16_t cols, rows;
		struct winsize ws = {0};

		if (rexec_resize_decode(m, &cols, &rows) == 0 && s->pty && s->in) {
			ws.ws_col = cols;
			ws.ws_row = rows;
			ioctl(rexec_chan_fd(s->in), TIOCSWINSZ, &ws);
		}
		break;
	}
	default:
		qt_debug("peer %s: unexpected message type 0x%04x", s->peer, qt_msg_type(m));
		break;
	}
	qt_msg_free(m);
}

static void conn_request(struct qt_conn *c, struct qt_msg *m, void *user)
{
	struct sess *s = user;
	uint16_t type = qt_msg_type(m);

	if (!user || s->tag != TAG_SESS) {
		qt_msg_free(m);
		return;
	}
	if (!qt_msg_id(m)) {
		one_way(s, m);
		return;
	}
	if (s->st != S_IDLE || (type != REXEC_MSG_EXEC && type != REXEC_MSG_FORWARD)) {
		struct qt_msg *r = qt_msg_new_error(m, s->st != S_IDLE ? EBUSY : ENOSYS);

		qt_msg_free(m);
		if (qt_msg_finish(r) == 0)
			qt_conn_reply(c, r);
		else
			qt_msg_free(r);
		return;
	}
	if (type == REXEC_MSG_EXEC)
		do_exec(s, m);
	else
		do_forward(s, m);
}

static void conn_closed(struct qt_conn *c, int err, const char *reason, void *user)
{
	struct sess *s = user;

	if (!user || s->tag != TAG_SESS) {
		/* The handshake failed (wrong key, refused mode, deadline). */
		qt_warn("peer %s: %s", qt_conn_peer(c), reason);
		return;
	}
	if (err)
		qt_info("peer %s: connection closed: %s", s->peer, reason);
	s->conn = NULL;
	chans_free(s);
	g_clear_pointer(&s->req, qt_msg_free);
	if (s->drain_timer) {
		qt_timer_cancel(s->drain_timer);
		s->drain_timer = NULL;
	}
	if (s->st == S_SPAWNING || s->st == S_RUNNING || s->st == S_DRAINING) {
		qt_notice("exec peer=%s argv0=\"%s\" pid=%d: client gone; SIGTERM to the process group",
			  s->peer, s->argv0, (int)s->pid);
		/*
		 * Once the command itself has exited, only the rest of its group
		 * can be left; if none is, there is nothing to wait for.
		 */
		kill(-s->pid, SIGTERM);
		if (group_has_others(s)) {
			/* A group stopped by a forwarded TSTP must run to take it. */
			kill(-s->pid, SIGCONT);
			s->kill_timer = qt_timer_add(s->d->loop, s->d->o.kill_grace_ms,
						     kill_timer_fired, s);
		}
		s->st = S_DONE;
	}
	sess_maybe_free(s);
}

const struct qt_conn_ops rexecd_conn_ops = {
	.ready = conn_ready,
	.request = conn_request,
	.closed = conn_closed,
};

/* ---- the service -------------------------------------------------------- */

int rexecd_new(struct qt_loop *l, const struct rexecd_opts *o, struct rexecd **out, char **msg)
{
	struct rexecd *d;
	uint32_t me = (uint32_t)geteuid(), root = 0;

	if (o->max_sessions == 0) {
		*msg = g_strdup("max_sessions must be at least 1");
		return -EINVAL;
	}
	d = g_new0(struct rexecd, 1);
	d->tag = TAG_D;
	d->loop = l;
	d->o = *o;
	if (!d->o.drain_ms)
		d->o.drain_ms = 200;
	d->unix_uids = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	if (o->n_unix_uids) {
		g_array_append_vals(d->unix_uids, o->unix_uids, o->n_unix_uids);
	} else {
		g_array_append_val(d->unix_uids, root);
		g_array_append_val(d->unix_uids, me);
	}
	*out = d;
	return 0;
}

unsigned rexecd_sessions(const struct rexecd *d)
{
	return g_list_length(d->sessions);
}

void rexecd_free(struct rexecd *d)
{
	if (!d)
		return;
	/* Sessions still waiting for a child: reap them now, blocking. */
	while (d->sessions) {
		struct sess *s = d->sessions->data;

		if (s->kill_timer) {
			/* Shutting down: what the grace period was for ends now. */
			qt_timer_cancel(s->kill_timer);
			s->kill_timer = NULL;
			kill(-s->pid, SIGKILL);
		}
		if (s->pid && !s->exited) {
			kill(-s->pid, SIGKILL);
			waitpid(s->pid, NULL, 0);
			s->exited = s->reaped = true;
		}
		s->conn = NULL;
		sess_maybe_free(s);
	}
	g_array_unref(d->unix_uids);
	g_free(d);
}
