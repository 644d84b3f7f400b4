// SPDX-License-Identifier: Apache-2.0
/*
 * bm-controller: the reconciler of BareMetalManager.  It drives each
 * machine recorded by bm-api through its lifecycle (available ->
 * provisioning -> booting -> active -> deprovisioning -> available) by
 * calling the bm-handler on the machine's DPU, one idempotent step at a time,
 * so that it can be killed at any moment and resume where it was.
 *
 * Only the command line exists so far; the loop is issue 8.  Options are
 * parsed but not acted on.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "log.h"

#define ISSUE 8
#define SHORT_OPTS "hV"

enum { OPT_ACCEPTED = 256 };

static const struct option long_opts[] = {
	{"config", required_argument, NULL, OPT_ACCEPTED},
	{"db", required_argument, NULL, OPT_ACCEPTED},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static void usage(void)
{
	printf("Usage: %s [OPTION]...\n", qt_cli_prog());
	fputs("Drive bare-metal machines through their lifecycle.\n"
	      "\n"
	      "  --config FILE      configuration file (default /etc/bm/bm.conf)\n"
	      "  --db PATH          SQLite database shared with bm-api\n"
	      "                     (default /var/lib/bm/bm.db)\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
	      "Exit status: 0 success, 1 failure, 2 usage error.\n",
	      stdout);
	printf("Status: placeholder, only --help and --version work (see issue %d).\n", ISSUE);
}

int main(int argc, char **argv)
{
	int c;

	qt_cli_init(argv[0]);
	qt_log_init(qt_cli_prog());
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":" SHORT_OPTS, long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_ACCEPTED:
			break;
		default:
			return qt_cli_std_option(c, argv, SHORT_OPTS, usage);
		}
	}
	if (optind < argc)
		return qt_cli_usage_error("unexpected argument '%s'", argv[optind]);

	return qt_cli_fail("not implemented yet (see issue %d)", ISSUE);
}
