// SPDX-License-Identifier: Apache-2.0
/*
 * bmctl: the command-line client of bm-api.  Operators use it to enroll
 * machines from an inventory file, look at machines and operations, and
 * provision or deprovision by hand what the autoscaler otherwise does by
 * itself; output is a table for people or JSON for scripts.
 *
 * Only the command line exists so far; the commands are issue 8.  Options
 * are parsed but not acted on.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "log.h"

#define ISSUE 8
#define SHORT_OPTS "hVo:"

enum { OPT_ACCEPTED = 256 };

static const struct option long_opts[] = {
	{"api", required_argument, NULL, OPT_ACCEPTED},
	{"token-file", required_argument, NULL, OPT_ACCEPTED},
	{"output", required_argument, NULL, 'o'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static const char *const commands[] = {
	"enroll", "list", "get", "provision", "deprovision",
	"attach-disk", "detach-disk", "attach-nic", "detach-nic", "watch",
};

static void usage(void)
{
	printf("Usage: %s [OPTION]... COMMAND [ARG]...\n", qt_cli_prog());
	fputs("Manage bare-metal machines through bm-api.\n"
	      "\n"
	      "Commands:\n"
	      "  enroll FILE        enroll the machines of a JSON or CSV inventory\n"
	      "  list               list machines\n"
	      "  get ID             show one machine\n"
	      "  provision POOL     make a free machine of POOL an instance\n"
	      "  deprovision ID     return an instance's machine to its pool\n"
	      "  attach-disk ID, detach-disk ID, attach-nic ID, detach-nic ID\n"
	      "                     hot-plug a cloud disk or NIC of an active machine\n"
	      "  watch [OPERATION]  follow operations until they finish\n"
	      "\n"
	      "Options:\n"
	      "  --api URL          bm-api to talk to (default $BMCTL_API, else\n"
	      "                     http://127.0.0.1:8700)\n"
	      "  --token-file FILE  bearer token (default $BMCTL_TOKEN_FILE, else\n"
	      "                     /etc/bm/token)\n"
	      "  -o, --output FMT   table or json (default table)\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
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
	/* "+": a command's own arguments are not parsed here. */
	while ((c = getopt_long(argc, argv, "+:" SHORT_OPTS, long_opts, NULL)) != -1) {
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

	return qt_cli_fail("not implemented yet (see issue %d)", ISSUE);
}
