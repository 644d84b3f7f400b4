/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Command-line conventions shared by every program: --help prints usage to
 * stdout and exits 0; --version prints "PROG (dpu-offload) VERSION"; a usage
 * error prints one line naming the problem plus a hint to stderr and exits 2
 * (QT_EXIT_USAGE); a runtime failure exits 1 (QT_EXIT_FAILURE).
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>

enum {
	QT_EXIT_OK = 0,
	QT_EXIT_FAILURE = 1,
	QT_EXIT_USAGE = 2,
};

/*
 * Program name for messages: basename of argv[0], set once by qt_cli_init(),
 * which also calls qt_cli_stdio_open(): call it first thing in main().
 */
void qt_cli_init(const char *argv0);
/*
 * Open /dev/null on each of fds 0, 1 and 2 that is closed.  A program
 * started with one closed (`2>&-`, a careless supervisor) would otherwise
 * get it back from its first open or socket, and write its log lines into
 * a client's connection or a command's output into its own event loop.
 * Not close-on-exec: they are the program's stdio, which its children
 * inherit.  False if one could not be opened; after a call that succeeded,
 * later ones do nothing (start-up only).
 */
bool qt_cli_stdio_open(void);
const char *qt_cli_prog(void);
void qt_cli_print_version(void);
/* Print "PROG: MESSAGE" and the --help hint to stderr; returns QT_EXIT_USAGE. */
int qt_cli_usage_error(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
/*
 * Report what getopt_long() rejected, for a parse done with opterr = 0 and
 * a leading ':' in the option string: @c is the ':' or '?' it returned,
 * @shortopts the short options without the ':'.  Returns QT_EXIT_USAGE.
 */
int qt_cli_option_error(int c, char *const argv[], const char *shortopts);
/*
 * The options every program shares, for the default branch of its getopt
 * switch: -h/--help ('h') calls @usage, -V/--version ('V') prints the
 * version, and both return QT_EXIT_OK; anything else is reported with
 * qt_cli_option_error() and returns QT_EXIT_USAGE.
 */
int qt_cli_std_option(int c, char *const argv[], const char *shortopts, void (*usage)(void));
/* Print "PROG: MESSAGE" to stderr; returns QT_EXIT_FAILURE. */
int qt_cli_fail(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
/*
 * For daemons, whose descriptors grow with their clients: make the soft
 * RLIMIT_NOFILE the hard one.  *@saved (may be NULL) gets the limit as it
 * was, for the children the daemon starts (programs using select() rely
 * on the usual soft limit of 1024).  Quiet: at worst the limit stays.
 * False if the limit could not even be read (*@saved is then untouched).
 */
bool qt_cli_raise_nofile(struct rlimit *saved);
/*
 * A daemon's log level: @level (NULL: leave it; else a name for
 * qt_log_level_parse), then @verbose steps more.  0, or QT_EXIT_USAGE
 * after saying that the name is unknown.
 */
int qt_cli_set_log_level(const char *level, int verbose);
/*
 * For daemons that stop on SIGINT or SIGTERM: block both in the calling
 * thread, first thing, before any other thread starts (threads inherit
 * the mask), and ignore SIGPIPE.  A stop asked for during start-up then
 * waits for qt_cli_wait_term_signal() instead of killing the process
 * before it can shut down cleanly, and no other thread takes it.
 */
void qt_cli_block_term_signals(void);
/*
 * Wait up to @timeout_ms (negative: for ever) for SIGINT or SIGTERM,
 * blocked by qt_cli_block_term_signals(): its number, or 0 when none came.
 */
int qt_cli_wait_term_signal(int64_t timeout_ms);
/* Unblock them again: in a child before it runs another program. */
void qt_cli_unblock_term_signals(void);
