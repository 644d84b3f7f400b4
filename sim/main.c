// SPDX-License-Identifier: Apache-2.0
/*
 * sim: a discrete-event capacity simulator.  It replays a pod trace against
 * a cluster configuration (bare-metal pool, node groups, scheduler) driven
 * by the same autoscaler core as the live autoscale daemon, and reports
 * pending times, node counts, machine-hours and cost, so capacity planners
 * can compare a pooled bare-metal setup with dedicated pools.
 *
 * Only the command line exists so far; the commands are issue 7.  Options
 * are parsed but not acted on.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "log.h"

#define ISSUE 7
#define SHORT_OPTS "hVo:"

enum { OPT_ACCEPTED = 256 };

static const struct option long_opts[] = {
	{"trace", required_argument, NULL, OPT_ACCEPTED},
	{"format", required_argument, NULL, OPT_ACCEPTED},
	{"cluster", required_argument, NULL, OPT_ACCEPTED},
	{"nodes", required_argument, NULL, OPT_ACCEPTED},
	{"out", required_argument, NULL, OPT_ACCEPTED},
	{"seed", required_argument, NULL, OPT_ACCEPTED},
	{"until", required_argument, NULL, OPT_ACCEPTED},
	{"skip-bad", no_argument, NULL, OPT_ACCEPTED},
	{"quiet", no_argument, NULL, OPT_ACCEPTED},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static const char *const commands[] = {"run", "compare", "convert", "gen"};

static void usage(void)
{
	const char *prog = qt_cli_prog();

	printf("Usage: %s run --trace FILE --cluster FILE [OPTION]...\n"
	       "       %s compare --trace FILE --cluster A --cluster B [...] --out DIR\n"
	       "       %s convert --trace FILE --format F -o OUT\n"
	       "       %s gen [OPTION]... -o OUT\n",
	       prog, prog, prog, prog);
	fputs("Replay a pod trace against a cluster and its autoscaler.\n"
	      "\n"
	      "Commands:\n"
	      "  run                simulate one cluster configuration\n"
	      "  compare            one trace, several configurations, one report\n"
	      "  convert            rewrite a trace in the native format\n"
	      "  gen                write a synthetic trace\n"
	      "\n"
	      "Options:\n"
	      "  --trace FILE       input trace, may be gzip-compressed\n"
	      "  --format F         trace format: native, alibaba2023, alibaba2018,\n"
	      "                     google2011 (default native)\n"
	      "  --cluster FILE     cluster configuration; repeatable for compare\n"
	      "  --nodes FILE       Alibaba 2023 node list to use as the pool (default: none)\n"
	      "  --out DIR          where summary.json, timeseries.csv and report.html go\n"
	      "                     (default: the current directory)\n"
	      "  -o OUT             output file for convert and gen\n"
	      "  --seed N           random seed; same seed, same output (default 1)\n"
	      "  --until T          stop at simulated time T (default: end of the trace)\n"
	      "  --skip-bad         skip and count malformed records (default: stop)\n"
	      "  --quiet            no progress line on stderr (default: shown on a tty)\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
	      "Configuration: the --cluster files; no default file.\n"
	      "Exit status: 0 success, 1 failure, 2 usage error.\n",
	      stdout);
	printf("Status: placeholder, only --help and --version work (see issue %d).\n", ISSUE);
}

static gboolean is_command(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(commands); i++) {
		if (strcmp(name, commands[i]) == 0)
			return TRUE;
	}
	return FALSE;
}

int main(int argc, char **argv)
{
	int c;

	qt_cli_init(argv[0]);
	qt_log_init(qt_cli_prog());
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":" SHORT_OPTS, long_opts, NULL)) != -1) {
		switch (c) {
		case 'o':
		case OPT_ACCEPTED:
			break;
		default:
			return qt_cli_std_option(c, argv, SHORT_OPTS, usage);
		}
	}
	if (optind == argc)
		return qt_cli_usage_error("missing COMMAND");
	if (!is_command(argv[optind]))
		return qt_cli_usage_error("unknown command '%s'", argv[optind]);
	if (optind + 1 < argc)
		return qt_cli_usage_error("unexpected argument '%s'", argv[optind + 1]);

	return qt_cli_fail("not implemented yet (see issue %d)", ISSUE);
}
