/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The local side of rexec's terminal handling and exit codes, shared by
 * the rexecd client and --ssh mode.
 */
#pragma once

#include <stdbool.h>
#include <termios.h>

#include <glib.h>

/* rexec's own exit codes; every other status is the remote command's. */
enum {
	REXEC_EXIT_SETUP = 124,	   /* the host could not set the command up (cwd, pty, fds, busy) */
	REXEC_EXIT_USAGE = 125,	   /* bad command line or configuration */
	REXEC_EXIT_NOPERM = 126,   /* not in the whitelist, or not executable */
	REXEC_EXIT_NOTFOUND = 127, /* not found on the host */
	REXEC_EXIT_CONN = 255,	   /* connection, authentication or protocol failure */
};

/*
 * A status rexec_client_run() and --ssh return for a command that a signal
 * ended: REXEC_STATUS_SIGNAL + N for signal N (a local number).  main()
 * then ends rexec by that signal (rexec_die_of_signal()), so its parent
 * sees what it would see of a local child: WIFSIGNALED, not an exit code
 * of 128+N.  A shell's $? is 128+N either way, but a shell waiting for a
 * child that ^C killed stops its script only if the child died of SIGINT
 * (bash's "wait and cooperative exit"), and Python, Go and the like tell a
 * death by a signal from an exit code.
 */
#define REXEC_STATUS_SIGNAL 256

/*
 * End the process as if signal @sig had killed it: from any thread, with
 * the signal unblocked here and its default action back.  No core file
 * is made (the command's, if any, is on the host).  A signal that cannot
 * end a process (a stop, one ignored by default) gives _exit(128 + @sig),
 * at most 255.  Call it with the terminal restored.
 */
void rexec_die_of_signal(int sig) G_GNUC_NORETURN;

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
/*
 * Are our stdout and stderr one output (2>&1, one terminal), where the
 * order between what goes to each is kept?  The command then gets one
 * pipe for both, as it would here: two, relayed as two streams, would
 * mix that order up.  The same pipe, socket or terminal, or the same open
 * regular file (one offset; two opens of a file overwrite each other).
 */
bool rexec_stdio_one_output(void);
/* @fd's window size, or 80 x 24 when it is not a terminal. */
void rexec_tty_size(int fd, unsigned *cols, unsigned *rows);
