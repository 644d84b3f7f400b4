// SPDX-License-Identifier: Apache-2.0
/*
 * autoscale: a Kubernetes Cluster Autoscaler for a shared bare-metal pool.
 * "autoscale once" runs one decision of the autoscaler core on a snapshot
 * file and prints it as JSON; "autoscale run" is the live daemon that
 * watches a cluster and grows or shrinks its node groups through the
 * bare-metal (yusur) cloud provider.  Flag names and defaults are Cluster
 * Autoscaler's, so users who know CA need nothing new.
 *
 * Only the command line exists so far: "once" is issue 6, "run" issue 9.
 * Flags are parsed but not acted on.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "log.h"

#define SHORT_OPTS "hV"

enum { OPT_ACCEPTED = 256 };

#define OPT_VALUE(name) {name, required_argument, NULL, OPT_ACCEPTED}
/* Booleans take Go's form, --flag or --flag=false, as CA's do. */
#define OPT_BOOL(name) {name, optional_argument, NULL, OPT_ACCEPTED}

static const struct option long_opts[] = {
	OPT_VALUE("snapshot"), OPT_VALUE("options"), OPT_VALUE("now"),
	OPT_VALUE("kubeconfig"), OPT_BOOL("in-cluster"), OPT_VALUE("cloud-provider"),
	OPT_VALUE("cloud-config"), OPT_BOOL("dry-run"), OPT_VALUE("address"),
	OPT_BOOL("leader-elect"),
	OPT_VALUE("scan-interval"), OPT_VALUE("expander"), OPT_VALUE("max-nodes-total"),
	OPT_VALUE("cores-total"), OPT_VALUE("memory-total"), OPT_VALUE("gpu-total"),
	OPT_VALUE("max-nodes-per-scaleup"), OPT_VALUE("max-nodegroup-binpacking-duration"),
	OPT_BOOL("balance-similar-node-groups"), OPT_VALUE("expendable-pods-priority-cutoff"),
	OPT_VALUE("max-node-provision-time"), OPT_VALUE("max-node-startup-time"),
	OPT_VALUE("ok-total-unready-count"), OPT_VALUE("max-total-unready-percentage"),
	OPT_BOOL("scale-down-enabled"), OPT_VALUE("scale-down-utilization-threshold"),
	OPT_VALUE("scale-down-unneeded-time"), OPT_VALUE("scale-down-unready-time"),
	OPT_VALUE("scale-down-delay-after-add"), OPT_VALUE("scale-down-delay-after-delete"),
	OPT_VALUE("scale-down-delay-after-failure"), OPT_VALUE("max-scale-down-parallelism"),
	OPT_VALUE("max-drain-parallelism"), OPT_VALUE("max-graceful-termination-sec"),
	OPT_BOOL("skip-nodes-with-system-pods"), OPT_BOOL("skip-nodes-with-local-storage"),
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

static const struct {
	const char *name;
	int issue;
} commands[] = {{"once", 6}, {"run", 9}};

static void usage(void)
{
	printf("Usage: %s once --snapshot FILE [--options FILE] [--now RFC3339]\n"
	       "                 [FLAG]...\n"
	       "       %s run (--kubeconfig FILE | --in-cluster) --cloud-provider=yusur\n"
	       "                 --cloud-config FILE [FLAG]...\n",
	       qt_cli_prog(), qt_cli_prog());
	fputs("Cluster Autoscaler for a shared bare-metal pool.\n"
	      "\n"
	      "once: print the decision for one snapshot as JSON.\n"
	      "  --snapshot FILE        nodes, pods, pdbs and node_groups as JSON\n"
	      "  --options FILE         autoscaler options, FLAGs win (default: none)\n"
	      "  --now RFC3339          time of the decision (default: now)\n"
	      "\n"
	      "run: watch a cluster and scale its node groups.\n"
	      "  --kubeconfig FILE      cluster credentials (default: none)\n"
	      "  --in-cluster           use the pod's service account (default off)\n"
	      "  --cloud-provider NAME  yusur, the bare-metal pool (default: none)\n"
	      "  --cloud-config FILE    provider configuration (default: none)\n"
	      "  --dry-run              decide and log, change nothing (default off)\n"
	      "  --address ADDR         /metrics and /healthz (default :8085)\n"
	      "  --leader-elect[=BOOL]  take a Lease before acting (default true)\n"
	      "\n"
	      "FLAGs: Cluster Autoscaler's names and defaults; durations like 10s, 10m, 3h.\n"
	      "  --scan-interval D                     loop period (default 10s)\n"
	      "  --expander NAME[,NAME]...             random, most-pods, least-nodes,\n"
	      "                                        least-waste, price, priority\n"
	      "                                        (default least-waste)\n"
	      "  --max-nodes-total N                   0 = no limit (default 0)\n"
	      "  --cores-total MIN:MAX                 (default 0:320000)\n"
	      "  --memory-total MIN:MAX                in GiB (default 0:6400000)\n"
	      "  --gpu-total TYPE:MIN:MAX              repeatable (default: none)\n"
	      "  --max-nodes-per-scaleup N             (default 1000)\n"
	      "  --max-nodegroup-binpacking-duration D (default 10s)\n"
	      "  --balance-similar-node-groups[=BOOL]  (default false)\n"
	      "  --expendable-pods-priority-cutoff N   (default -10)\n"
	      "  --max-node-provision-time D           (default 15m)\n"
	      "  --max-node-startup-time D             (default 15m)\n"
	      "  --ok-total-unready-count N            (default 3)\n"
	      "  --max-total-unready-percentage P      (default 45)\n"
	      "  --scale-down-enabled[=BOOL]           (default true)\n"
	      "  --scale-down-utilization-threshold F  (default 0.5)\n"
	      "  --scale-down-unneeded-time D          (default 10m)\n"
	      "  --scale-down-unready-time D           (default 20m)\n"
	      "  --scale-down-delay-after-add D        (default 10m)\n"
	      "  --scale-down-delay-after-delete D     (default 0s)\n"
	      "  --scale-down-delay-after-failure D    (default 3m)\n"
	      "  --max-scale-down-parallelism N        (default 10)\n"
	      "  --max-drain-parallelism N             (default 1)\n"
	      "  --max-graceful-termination-sec N      (default 600)\n"
	      "  --skip-nodes-with-system-pods[=BOOL]  (default true)\n"
	      "  --skip-nodes-with-local-storage[=BOOL] (default true)\n"
	      "\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
	      "Configuration: no default file; see --options and --cloud-config.\n"
	      "Exit status: 0 success, 1 failure, 2 usage error.\n"
	      "Status: placeholder, only --help and --version work (see issues 6 and 9).\n",
	      stdout);
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
		return qt_cli_usage_error("missing COMMAND (once or run)");
	cmd = argv[optind];
	if (optind + 1 < argc)
		return qt_cli_usage_error("unexpected argument '%s'", argv[optind + 1]);
	for (size_t i = 0; i < G_N_ELEMENTS(commands); i++) {
		if (strcmp(cmd, commands[i].name) == 0)
			return qt_cli_fail("not implemented yet (see issue %d)", commands[i].issue);
	}
	return qt_cli_usage_error("unknown command '%s'", cmd);
}
