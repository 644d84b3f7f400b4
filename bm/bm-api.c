// SPDX-License-Identifier: Apache-2.0
/*
 * bm-api: the REST service of BareMetalManager.  It keeps the inventory of
 * bare-metal machines, their pools (node groups) and instances in one
 * database, and is what the autoscaler's bare-metal provider and bmctl call
 * to turn a free machine into a Kubernetes worker and back.  The actual
 * hardware work is done by bm-controller through the DPUs' bm-handlers.
 *
 * Only the command line exists so far; the service is issue 8.  Options are
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
	{"listen", required_argument, NULL, OPT_ACCEPTED},
	{"db", required_argument, NULL, OPT_ACCEPTED},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static void usage(void)
{
	printf("Usage: %s [OPTION]...\n", qt_cli_prog());
	fputs("Serve the BareMetalManager REST API (/v1/machines, /v1/pools, /v1/instances).\n"
	      "\n"
	      "  --config FILE      configuration file (default /etc/bm/bm.conf)\n"
	      "  --listen HOST:PORT address to serve on (default 127.0.0.1:8700)\n"
	      "  --db PATH          SQLite database (default /var/lib/bm/bm.db)\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
	      "Clients authenticate with a bearer token from the token file named in the\n"
	      "configuration; /healthz and /metrics need none.\n"
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
