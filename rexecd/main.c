// SPDX-License-Identifier: Apache-2.0
/*
 * rexecd: the host half of rexec.  It runs, on behalf of rexec clients on
 * the DPU, the binaries the container management plane must start on the
 * host (runtime shim, runc, kill, modprobe), with the caller's argv,
 * environment, cwd, stdio, signals and exit status carried across.  Only
 * whitelisted binaries run.
 *
 * Only the command line exists so far; serving is issue 4.  Options are
 * parsed but not acted on.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "log.h"

#define ISSUE 4
#define SHORT_OPTS "hV"

enum { OPT_ACCEPTED = 256 };

static const struct option long_opts[] = {
	{"config", required_argument, NULL, OPT_ACCEPTED},
	{"listen", required_argument, NULL, OPT_ACCEPTED},
	{"key-file", required_argument, NULL, OPT_ACCEPTED},
	{"whitelist", required_argument, NULL, OPT_ACCEPTED},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static void usage(void)
{
	printf("Usage: %s [OPTION]...\n", qt_cli_prog());
	fputs("Run whitelisted host binaries for rexec clients.\n"
	      "\n"
	      "  --config FILE      configuration file (default /etc/rexec/rexecd.conf)\n"
	      "  --listen URI       listen on tcp://HOST:PORT, unix:/PATH or vsock://CID:PORT;\n"
	      "                     repeatable (default: the config file's listen list)\n"
	      "  --key-file FILE    pre-shared key, required on tcp and vsock (default: none)\n"
	      "  --whitelist FILE   binaries allowed to run, one absolute path per line\n"
	      "                     (default /etc/rexec/whitelist; missing = deny all\n"
	      "                     unless the config says allow_all=true)\n"
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
