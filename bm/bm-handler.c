// SPDX-License-Identifier: Apache-2.0
/*
 * bm-handler: the per-DPU agent of BareMetalManager.  A small HTTP API for
 * what the DPU can do to its host: power on/off and status, cloud-disk
 * attach/detach, NIC attach/detach, boot device.  Every action is
 * idempotent.  The "fake" driver simulates the hardware for tests and demos;
 * the "exec" driver runs a configured command per action, which is where a
 * vendor DPU SDK plugs in.
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
	{"driver", required_argument, NULL, OPT_ACCEPTED},
	{"listen", required_argument, NULL, OPT_ACCEPTED},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static void usage(void)
{
	printf("Usage: %s --driver fake|exec [OPTION]...\n", qt_cli_prog());
	fputs("Serve the DPU's power, disk and NIC actions to bm-controller.\n"
	      "\n"
	      "  --driver NAME      fake (simulated hardware) or exec (a command per action,\n"
	      "                     JSON on stdin and stdout); required\n"
	      "  --listen ADDR      address to serve on (default 127.0.0.1:8701)\n"
	      "  --config FILE      driver configuration (default /etc/bm/handler.conf)\n"
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
