// SPDX-License-Identifier: Apache-2.0
/*
 * fuse-qtfs: the DPU half of fuse-qtfs.  It mounts a directory exported by
 * qtfs-server on the host with FUSE, so that kubelet, containerd and friends
 * running on the DPU work on the host's files as if they were local.  The
 * argument order (SOURCE MOUNTPOINT, then -o) is the one mount(8) uses for
 * fuse.TYPE entries, so the same binary can serve /etc/fstab.
 *
 * Only the command line exists so far; mounting is issue 3.  Options are
 * parsed but not acted on.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "log.h"

#define ISSUE 3
#define SHORT_OPTS "hVfo:"

enum { OPT_ACCEPTED = 256 };

static const struct option long_opts[] = {
	{"key-file", required_argument, NULL, OPT_ACCEPTED},
	{"identity", required_argument, NULL, OPT_ACCEPTED},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static void usage(void)
{
	printf("Usage: %s [OPTION]... URI:REMOTE_PATH MOUNTPOINT\n", qt_cli_prog());
	fputs("Mount a directory exported by qtfs-server.\n"
	      "\n"
	      "URI is tcp://HOST:PORT, unix:/PATH, vsock://CID:PORT or\n"
	      "ssh://[USER@]HOST[:PORT] (which runs 'qtfs-server --stdio' on the host).\n"
	      "REMOTE_PATH must lie inside one of the server's exports.\n"
	      "\n"
	      "  -f                 stay in the foreground (default: daemonize)\n"
	      "  -o OPT[,OPT]...    mount options, repeatable (see below)\n"
	      "  --key-file FILE    pre-shared key for tcp and vsock (default: none)\n"
	      "  --identity FILE    SSH private key (default: the keys in ~/.ssh)\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
	      "Mount options, besides the generic FUSE ones:\n"
	      "  ro                 mount read-only (default off)\n"
	      "  proc               the source is the host's /proc: /proc/self and listed\n"
	      "                     management processes resolve locally (default off)\n"
	      "  local_proc=PATH    local procfs used by proc mode (default /local_proc)\n"
	      "  attr_timeout=SEC   attribute cache time (default 1; 0 on pseudo filesystems)\n"
	      "  entry_timeout=SEC  name cache time (default 1; 0 on pseudo filesystems)\n"
	      "  conns=N            parallel connections to the server (default 1)\n"
	      "  timeout=SEC        per-request deadline (default 30)\n"
	      "  allow_other        let other users access the mount (default off)\n"
	      "\n"
	      "Configuration: command line only; for /etc/fstab use the type fuse.fuse-qtfs.\n"
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
		case 'f':
		case 'o':
		case OPT_ACCEPTED:
			break;
		default:
			return qt_cli_std_option(c, argv, SHORT_OPTS, usage);
		}
	}
	if (argc - optind < 2)
		return qt_cli_usage_error("missing %s", optind < argc ? "MOUNTPOINT" : "URI:REMOTE_PATH");
	if (argc - optind > 2)
		return qt_cli_usage_error("unexpected argument '%s'", argv[optind + 2]);

	return qt_cli_fail("not implemented yet (see issue %d)", ISSUE);
}
