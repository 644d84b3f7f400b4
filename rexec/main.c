// SPDX-License-Identifier: Apache-2.0
/*
 * rexec: the DPU half of rexec.  It runs a command on the host (through
 * rexecd, or through a plain sshd with --ssh) as if it ran here: argv,
 * environment, cwd, stdio, signals and exit status are carried across, so a
 * management plane offloaded to the DPU can start host binaries unchanged.
 * Symlinked under another name (runc -> rexec) it runs that command.
 *
 * Only the command line exists so far; running is issue 4.  Option parsing
 * stops at the first operand, because everything after it belongs to the
 * remote command.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "log.h"

#define ISSUE 4
#define SHORT_OPTS "hVH:tTe:EC:i:"

enum { OPT_ACCEPTED = 256 };

static const struct option long_opts[] = {
	{"key-file", required_argument, NULL, OPT_ACCEPTED},
	{"ssh", required_argument, NULL, OPT_ACCEPTED},
	{"pass-fds", no_argument, NULL, OPT_ACCEPTED},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static void usage(void)
{
	const char *prog = qt_cli_prog();

	printf("Usage: %s [OPTION]... [--] CMD [ARG]...\n"
	       "       %s --ssh DEST [-i IDENTITY] [OPTION]... [--] CMD [ARG]...\n"
	       "       %s shim install DIR NAME...\n"
	       "       %s forward-unix LOCAL_SOCKET REMOTE_SOCKET\n",
	       prog, prog, prog, prog);
	fputs("Run CMD on the host as if it ran here.\n"
	      "\n"
	      "  -H URI             rexecd to use: tcp://HOST:PORT, unix:/PATH or\n"
	      "                     vsock://CID:PORT (default $REXEC_HOST, then the config)\n"
	      "  --key-file FILE    pre-shared key (default $REXEC_KEY_FILE, then the config)\n"
	      "  -t                 run CMD on a pty (default: pipes)\n"
	      "  -T                 use pipes, not a pty (the default; overrides -t)\n"
	      "  -e NAME=VALUE      set a variable in CMD's environment; repeatable\n"
	      "  -E                 forward the whole local environment (default: none)\n"
	      "  -C DIR             working directory on the host (default: the current one)\n"
	      "  --pass-fds         re-open regular files open at fds >= 3 on the host\n"
	      "                     (default off; the paths must be shared with fuse-qtfs)\n"
	      "  --ssh DEST         go through the sshd at DEST, [USER@]HOST[:PORT], instead\n"
	      "                     of rexecd (default off)\n"
	      "  -i IDENTITY        SSH private key for --ssh (default: the keys in ~/.ssh)\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
	      "Invoked under another name (a symlink runc -> rexec), runs that command on\n"
	      "the host with the same argv, environment and cwd.  'shim install' creates\n"
	      "such symlinks; 'forward-unix' relays connections on a local unix socket to\n"
	      "a unix socket on the host.\n"
	      "\n"
	      "Configuration: /etc/rexec/client.conf.\n"
	      "Exit status: CMD's exit status, or 128+N if it was killed by signal N;\n"
	      "126 not permitted or not executable on the host, 127 not found on the host,\n"
	      "255 connection or protocol failure, 1 other failure, 2 usage error.\n",
	      stdout);
	printf("Status: placeholder, only --help and --version work (see issue %d).\n", ISSUE);
}

int main(int argc, char **argv)
{
	int c;

	qt_cli_init(argv[0]);
	qt_log_init(qt_cli_prog());
	opterr = 0;
	/* "+": stop at CMD, whose own options are not ours. */
	while ((c = getopt_long(argc, argv, "+:" SHORT_OPTS, long_opts, NULL)) != -1) {
		switch (c) {
		case 'H':
		case 't':
		case 'T':
		case 'e':
		case 'E':
		case 'C':
		case 'i':
		case OPT_ACCEPTED:
			break;
		default:
			return qt_cli_std_option(c, argv, SHORT_OPTS, usage);
		}
	}
	if (optind == argc)
		return qt_cli_usage_error("missing CMD");

	return qt_cli_fail("not implemented yet (see issue %d)", ISSUE);
}
