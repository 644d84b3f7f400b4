// SPDX-License-Identifier: Apache-2.0
/*
 * chroot-setup: builds, checks and tears down the offload environment on the
 * DPU from a profile: a chroot whose /proc, /sys, runtime directories and
 * helper binaries come from the host through fuse-qtfs mounts, rexec shims
 * and unix-socket forwards.  It replaces the long hand-written shell scripts
 * users of the original qtfs keep, with one transactional tool.
 *
 * Only the command line exists so far; the commands are issue 5.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "log.h"

#define ISSUE 5
#define SHORT_OPTS "hV"

enum { OPT_ACCEPTED = 256 };

static const struct option long_opts[] = {
	{"json", no_argument, NULL, OPT_ACCEPTED},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static const char *const commands[] = {"up", "down", "status", "exec", "check"};

static void usage(void)
{
	printf("Usage: %s [OPTION]... COMMAND PROFILE\n"
	       "       %s exec PROFILE -- CMD [ARG]...\n",
	       qt_cli_prog(), qt_cli_prog());
	fputs("Set up the DPU offload environment described by PROFILE.\n"
	      "\n"
	      "Commands:\n"
	      "  up PROFILE         mount, bind and start everything; undo it all on failure\n"
	      "  down PROFILE       undo 'up' in reverse order; safe to repeat\n"
	      "  status PROFILE     show what is set up and whether it is live\n"
	      "  exec PROFILE -- CMD [ARG]...\n"
	      "                     run CMD inside the environment with its variables\n"
	      "  check PROFILE      validate the profile without changing anything\n"
	      "\n"
	      "Options:\n"
	      "  --json             status as JSON (default: a table)\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
	      "PROFILE is a file path, or a name looked up in /etc/chroot-setup/profiles/.\n"
	      "State is kept in /run/chroot-setup/NAME/.\n"
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
	const char *cmd;
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
	if (optind == argc)
		return qt_cli_usage_error("missing COMMAND");
	cmd = argv[optind++];
	if (!is_command(cmd))
		return qt_cli_usage_error("unknown command '%s'", cmd);
	if (optind == argc)
		return qt_cli_usage_error("%s: missing PROFILE", cmd);
	optind++;
	if (strcmp(cmd, "exec") == 0 && optind == argc)
		return qt_cli_usage_error("exec: missing CMD");
	if (strcmp(cmd, "exec") != 0 && optind < argc)
		return qt_cli_usage_error("unexpected argument '%s'", argv[optind]);

	return qt_cli_fail("not implemented yet (see issue %d)", ISSUE);
}
