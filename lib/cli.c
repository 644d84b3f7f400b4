// SPDX-License-Identifier: Apache-2.0
/*
 * Shared command-line helpers (see cli.h): the one place that decides how
 * programs name themselves and report bad usage.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "log.h"

static const char *cli_prog = PACKAGE_NAME;

bool qt_cli_stdio_open(void)
{
	/* Once is enough: rexec calls it first, then qt_cli_init() (twice as a shim). */
	static bool done;

	if (done)
		return true;
	for (int fd = 0; fd < 3; fd++) {
		int n;

		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/* The lowest free number: @fd, since those below it are open. */
		n = open("/dev/null", O_RDWR);
		if (n < 0)
			return false;
		if (n != fd) {
			int e = dup2(n, fd);

			close(n);
			if (e < 0)
				return false;
		}
	}
	done = true;
	return true;
}

void qt_cli_init(const char *argv0)
{
	const char *slash;

	(void)qt_cli_stdio_open();
	if (!argv0 || !*argv0)
		return;
	slash = strrchr(argv0, '/');
	cli_prog = slash ? slash + 1 : argv0;
}

const char *qt_cli_prog(void)
{
	return cli_prog;
}

void qt_cli_print_version(void)
{
	printf("%s (%s) %s\n", cli_prog, PACKAGE_NAME, PACKAGE_VERSION);
}

int qt_cli_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", cli_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help' for more information.\n", cli_prog);
	return QT_EXIT_USAGE;
}

int qt_cli_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", cli_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return QT_EXIT_FAILURE;
}

int qt_cli_option_error(int c, char *const argv[], const char *shortopts)
{
	/* getopt_long left the offending word at argv[optind - 1] and the letter in optopt. */
	const char *arg = optind > 0 ? argv[optind - 1] : "";
	bool is_long = g_str_has_prefix(arg, "--");

	if (c == ':' && !is_long)
		return qt_cli_usage_error("option '-%c' requires an argument", optopt);
	if (c == ':')
		return qt_cli_usage_error("option '%s' requires an argument", arg);
	if (optopt > 0 && optopt < 128 && (optopt == ':' || !strchr(shortopts, optopt)))
		return qt_cli_usage_error("unknown option '-%c'", optopt);
	if (optopt)
		return qt_cli_usage_error("option '%s' takes no argument", arg);
	return qt_cli_usage_error("unknown option '%s'", arg);
}

int qt_cli_std_option(int c, char *const argv[], const char *shortopts, void (*usage)(void))
{
	switch (c) {
	case 'h':
		usage();
		return QT_EXIT_OK;
	case 'V':
		qt_cli_print_version();
		return QT_EXIT_OK;
	default:
		return qt_cli_option_error(c, argv, shortopts);
	}
}

int qt_cli_set_log_level(const char *level, int verbose)
{
	enum qt_log_level lvl;

	if (level) {
		if (qt_log_level_parse(level, &lvl) < 0)
			return qt_cli_usage_error("unknown log level \"%s\"", level);
		qt_log_set_level(lvl);
	}
	if (verbose)
		qt_log_verbose(verbose);
	return 0;
}

bool qt_cli_raise_nofile(struct rlimit *saved)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return false;
	if (saved)
		*saved = rl;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	return true;
}

static void term_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
}

void qt_cli_block_term_signals(void)
{
	sigset_t set;

	term_signals(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
}

void qt_cli_unblock_term_signals(void)
{
	sigset_t set;

	term_signals(&set);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

int qt_cli_wait_term_signal(int64_t timeout_ms)
{
	/* Another signal's handler interrupts the wait: it goes on until the same deadline. */
	gint64 deadline = g_get_monotonic_time() + timeout_ms * 1000;
	sigset_t set;
	int sig;

	term_signals(&set);
	for (;;) {
		gint64 left = MAX(deadline - g_get_monotonic_time(), 0);
		struct timespec ts = {.tv_sec = left / G_USEC_PER_SEC, .tv_nsec = left % G_USEC_PER_SEC * 1000};

		sig = timeout_ms < 0 ? sigwaitinfo(&set, NULL) : sigtimedwait(&set, NULL, &ts);
		if (sig >= 0 || errno != EINTR)
			break;
	}
	return sig < 0 ? 0 : sig;
}
