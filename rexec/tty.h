/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The local side of rexec's terminal handling and exit codes, shared by
 * the rexecd client and --ssh mode.
 */
#pragma once

#include <stdbool.h>
#include <termios.h>

/* rexec's own exit codes; every other status is the remote command's. */
enum {
	REXEC_EXIT_SETUP = 124,	   /* the host could not set the command up (cwd, pty, fds, busy) */
	REXEC_EXIT_USAGE = 125,	   /* bad command line or configuration */
	REXEC_EXIT_NOPERM = 126,   /* not in the whitelist, or not executable */
	REXEC_EXIT_NOTFOUND = 127, /* not found on the host */
	REXEC_EXIT_CONN = 255,	   /* connection, authentication or protocol failure */
};

/*
 * Put @fd's terminal in raw mode, remembering its settings in @saved.
 * Returns false (and changes nothing) when @fd is not a terminal.
 * rexec_tty_restore() puts the settings back; it is async-signal-safe and
 * may be called more than once.
 */
bool rexec_tty_raw(int fd, struct termios *saved);
/* Raw mode again, from the settings @orig that rexec_tty_raw() saved (after a stop). */
bool rexec_tty_make_raw(int fd, const struct termios *orig);
void rexec_tty_restore(int fd, const struct termios *saved);
/* @fd's window size, or 80 x 24 when it is not a terminal. */
void rexec_tty_size(int fd, unsigned *cols, unsigned *rows);
