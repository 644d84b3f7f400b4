// SPDX-License-Identifier: Apache-2.0
/*
 * Raw mode and window size of the local terminal, for rexec -t: the remote
 * pty does the line editing and signal characters, so ours must pass every
 * byte through untouched, and come back exactly as it was on every exit.
 * And how rexec ends when its command was killed by a signal.
 */
#include "config.h"

#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/kcmp.h>

#include "tty.h"

bool rexec_tty_raw(int fd, struct termios *saved)
{
	if (!isatty(fd) || tcgetattr(fd, saved) < 0)
		return false;
	return rexec_tty_make_raw(fd, saved);
}

bool rexec_tty_make_raw(int fd, const struct termios *orig)
{
	struct termios t = *orig;

	cfmakeraw(&t);
	/* Keep output post-processing off too: the remote pty already did it. */
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	return tcsetattr(fd, TCSADRAIN, &t) == 0;
}

void rexec_tty_restore(int fd, const struct termios *saved)
{
	tcsetattr(fd, TCSADRAIN, saved);
}

bool rexec_stdio_one_output(void)
{
	struct stat o, e;
	pid_t self = getpid();

	if (fstat(STDOUT_FILENO, &o) < 0 || fstat(STDERR_FILENO, &e) < 0 || o.st_dev != e.st_dev ||
	    o.st_ino != e.st_ino)
		return false;
	if (!S_ISREG(o.st_mode))
		return true;
	return syscall(SYS_kcmp, self, self, KCMP_FILE, STDOUT_FILENO, STDERR_FILENO) == 0;
}

void rexec_tty_size(int fd, unsigned *cols, unsigned *rows)
{
	struct winsize ws;

	if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row) {
		*cols = ws.ws_col;
		*rows = ws.ws_row;
	} else {
		*cols = 80;
		*rows = 24;
	}
}

void rexec_die_of_signal(int sig)
{
	struct sigaction sa = {.sa_handler = SIG_DFL};
	struct rlimit no_core = {0, 0};
	sigset_t set;

	/*
	 * Not dumpable: the kernel then makes no core at all, not even through
	 * a core_pattern pipe, which ignores RLIMIT_CORE.
	 */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	(void)setrlimit(RLIMIT_CORE, &no_core);
	sigemptyset(&sa.sa_mask);
	(void)sigaction(sig, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	(void)pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	/* To this thread, which has it unblocked: delivered before raise() returns. */
	(void)raise(sig);
	_exit(128 + sig > 255 ? 255 : 128 + sig);
}
