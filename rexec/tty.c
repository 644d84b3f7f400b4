// SPDX-License-Identifier: Apache-2.0
/*
 * Raw mode and window size of the local terminal, for rexec -t: the remote
 * pty does the line editing and signal characters, so ours must pass every
 * byte through untouched, and come back exactly as it was on every exit.
 */
#include "config.h"

#include <sys/ioctl.h>
#include <unistd.h>

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
