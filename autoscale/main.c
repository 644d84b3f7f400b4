// SPDX-License-Identifier: Apache-2.0
/*
 * autoscale: a Kubernetes Cluster Autoscaler for a shared bare-metal pool.
 * "autoscale once" runs one decision of the autoscaler core on a snapshot
 * file and prints it as JSON; "autoscale run" is the live daemon that
 * watches a cluster and grows or shrinks its node groups through the
 * bare-metal (yusur) cloud provider.  Flag names and defaults are Cluster
 * Autoscaler's, so users who know CA need nothing new.
 *
 * "once" reads the snapshot (cluster-json.c), applies the options file and
 * then the command-line flags on top, runs the core once and prints the
 * decision.  "run" hands its flags to the daemon (daemon.c).
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "autoscaler.h"
#include "cli.h"
#include "cluster-json.h"
#include "daemon.h"
#include "log.h"
#include "options.h"
#include "units.h"

#define SHORT_OPTS "hV"

enum { OPT_SNAPSHOT = 256, OPT_OPTIONS, OPT_NOW, OPT_DAEMON, OPT_CORE };


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
	      "                         (docs/autoscale-snapshot.md)\n"
	      "  --options FILE         autoscaler options as a JSON object of FLAG names\n"
	      "                         to values; FLAGs on the command line win\n"
	      "                         (default: none)\n"
	      "  --now RFC3339          time of the decision (default: the snapshot's\n"
	      "                         \"now\", else the current time)\n"
	      "\n"
	      "run: watch a cluster and scale its node groups.\n"
	      "  --kubeconfig FILE      cluster credentials (default: $KUBECONFIG,\n"
	      "                         else ~/.kube/config)\n"
	      "  --in-cluster[=BOOL]    use the pod's service account (default false)\n"
	      "  --cloud-provider NAME  yusur, the bare-metal pool (default: none)\n"
	      "  --cloud-config FILE    provider configuration (default: none)\n"
	      "  --dry-run[=BOOL]       decide and log, change nothing (default false)\n"
	      "  --address ADDR         /metrics and /healthz (default :8085)\n"
	      "  --leader-elect[=BOOL]  take a Lease before acting (default true)\n"
	      "  --leader-elect-lease-duration D, --leader-elect-renew-deadline D,\n"
	      "  --leader-elect-retry-period D (defaults 15s, 10s, 2s)\n"
	      "  --leader-elect-resource-name NAME (default cluster-autoscaler)\n"
	      "  --leader-elect-resource-namespace NS (default kube-system)\n"
	      "  --namespace NS         status ConfigMap's namespace (default kube-system)\n"
	      "  --write-status-configmap[=BOOL] (default true)\n"
	      "  --status-config-map-name NAME (default cluster-autoscaler-status)\n"
	      "  --max-inactivity D, --max-failing-time D  /healthz limits (default 10m, 15m)\n"
	      "  --max-pod-eviction-time D  give up refused evictions (default 2m)\n"
	      "  --node-deletion-delay-timeout D  wait for evicted pods (default 2m)\n"
	      "  --cordon-node-before-terminating[=BOOL] (default true)\n"
	      "  --max-bulk-soft-taint-count N (default 10)\n"
	      "  --daemonset-eviction-for-occupied-nodes[=BOOL] (default true)\n"
	      "  --daemonset-eviction-for-empty-nodes[=BOOL] (default false)\n"
	      "  --v N                  0 notices, 1 decisions, 4 debug (default 1)\n"
	      "\n"
	      "FLAGs: Cluster Autoscaler's names and defaults; durations like 10s, 10m, 3h.\n"
	      "  --scan-interval D                     loop period (default 10s)\n"
	      "  --expander NAME[,NAME]...             random, most-pods, least-nodes,\n"
	      "                                        least-waste, price, priority\n"
	      "                                        (default least-waste)\n"
	      "  --max-nodes-total N                   0 = no limit (default 0)\n"
	      "  --cores-total MIN:MAX                 (default 0:320000)\n"
	      "  --memory-total MIN:MAX                in GiB (default 0:6400000)\n"
	      "  --gpu-total TYPE:MIN:MAX              all types summed (default: none)\n"
	      "  --max-nodes-per-scaleup N             (default 1000)\n"
	      "  --max-nodegroup-binpacking-duration D (default 10s)\n"
	      "  --balance-similar-node-groups[=BOOL]  spread a scale-up over similar groups\n"
	      "                                        (default false)\n"
	      "  --expendable-pods-priority-cutoff N   (default -10)\n"
	      "  --new-pod-scale-up-delay D            pods younger wait (default 0s)\n"
	      "  --max-node-provision-time D           (default 15m)\n"
	      "  --max-node-startup-time D             (default 15m)\n"
	      "  --ok-total-unready-count N            (default 3)\n"
	      "  --max-total-unready-percentage P      (default 45)\n"
	      "  --initial-node-group-backoff-duration D (default 5m)\n"
	      "  --max-node-group-backoff-duration D   (default 30m)\n"
	      "  --node-group-backoff-reset-timeout D  (default 3h)\n"
	      "  --scale-down-enabled[=BOOL]           (default true)\n"
	      "  --scale-down-utilization-threshold F  (default 0.5)\n"
	      "  --scale-down-gpu-utilization-threshold F (default 0.5)\n"
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
	      "  --ignore-daemonsets-utilization[=BOOL] (default false)\n"
	      "  --ignore-mirror-pods-utilization[=BOOL] (default false)\n"
	      "  --seed N                              random expander seed (default 0)\n"
	      "  --priorities P:RE[,RE];...            priority expander rules (default: none)\n"
	      "\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
	      "Configuration: no default file; see --options and --cloud-config.\n"
	      "Exit status: 0 success, 1 failure, 2 usage error.\n"
	      "See autoscale(1) and docs/autoscale.md for run's other flags.\n",
	      stdout);
}

static struct option *build_long_opts(void)
{
	GArray *a = g_array_new(TRUE, TRUE, sizeof(struct option));
	struct option o;

#define ADD(n, has, v)                                                         \
	do {                                                                   \
		o = (struct option){(n), (has), NULL, (v)};                    \
		g_array_append_val(a, o);                                      \
	} while (0)
	ADD("snapshot", required_argument, OPT_SNAPSHOT);
	ADD("options", required_argument, OPT_OPTIONS);
	ADD("now", required_argument, OPT_NOW);
	/* Flags of "run"; "once" accepts and ignores them, so scripts can share flags. */
	for (guint i = 0; as_daemon_flag_name(i); i++) {
		const char *n = as_daemon_flag_name(i);

		ADD(n, as_daemon_flag_is_bool(n) ? optional_argument : required_argument,
		    OPT_DAEMON);
	}
	for (guint i = 0; as_options_name(i); i++) {
		const char *n = as_options_name(i);

		/* Booleans take Go's form, --flag or --flag=false, as CA's do. */
		ADD(n, as_options_is_bool(n) ? optional_argument : required_argument, OPT_CORE);
	}
	ADD("help", no_argument, 'h');
	ADD("version", no_argument, 'V');
#undef ADD
	return (struct option *)(void *)g_array_free(a, FALSE);
}

static int read_file(const char *path, char **buf, size_t *len, char **msg)
{
	g_autoptr(GError) err = NULL;
	gsize n;

	if (!g_file_get_contents(path, buf, &n, &err)) {
		*msg = g_strdup(err->message);
		return -EIO;
	}
	*len = n;
	return 0;
}

/* The options file and the FLAGs, in that order, onto @o; an exit status or -1. */
static int load_options(struct as_options *o, const char *file, GPtrArray *flags)
{
	g_autofree char *buf = NULL, *msg = NULL;
	size_t len;

	if (file && (read_file(file, &buf, &len, &msg) < 0 ||
		     as_options_from_json(o, buf, len, &msg) < 0))
		return qt_cli_fail("%s: %s", file, msg);
	for (guint i = 0; i < flags->len; i += 2)
		if (as_options_set(o, flags->pdata[i], flags->pdata[i + 1], &msg) < 0)
			return qt_cli_usage_error("%s", msg);
	return -1;
}

struct once_args {
	const char *snapshot;
	const char *options;
	const char *now;
	GPtrArray *flags; /* name, value (NULL for a bare boolean), name, value ... */
};

static int cmd_once(struct once_args *a)
{
	g_autofree char *buf = NULL, *msg = NULL, *out = NULL;
	g_autoptr(as_cluster) c = NULL;
	g_autoptr(as_decision) d = NULL;
	struct as_options o;
	size_t len;
	int64_t now = AS_TIME_NEVER, snap_now;
	int ret = QT_EXIT_OK;

	if (!a->snapshot)
		return qt_cli_usage_error("once: missing --snapshot FILE");
	if (a->now && as_time_parse(a->now, &now) < 0)
		return qt_cli_usage_error("--now: \"%s\" is not an RFC 3339 time", a->now);
	as_options_init(&o);
	ret = load_options(&o, a->options, a->flags);
	if (ret >= 0)
		goto cleanup;
	ret = QT_EXIT_OK;
	if (read_file(a->snapshot, &buf, &len, &msg) < 0 ||
	    as_cluster_from_json(buf, len, &c, &snap_now, &msg) < 0) {
		ret = qt_cli_fail("%s: %s", a->snapshot, msg);
		goto cleanup;
	}
	if (now == AS_TIME_NEVER)
		now = snap_now != AS_TIME_NEVER ? snap_now : g_get_real_time() / 1000;
	if (as_run_once(c, &o, now, NULL, &d, &msg) < 0) {
		ret = qt_cli_fail("%s: %s", a->snapshot, msg);
		goto cleanup;
	}
	out = as_decision_to_json(d);
	fputs(out, stdout);
	if (fflush(stdout) != 0)
		ret = qt_cli_fail("writing the decision: %s", g_strerror(errno));
cleanup:
	as_options_clear(&o);
	return ret;
}

static int cmd_run(struct as_daemon_args *d, const char *options, GPtrArray *flags)
{
	struct as_options o;
	int ret;

	if (d->in_cluster && d->kubeconfig)
		return qt_cli_usage_error("run: --kubeconfig and --in-cluster exclude each other");
	if (!d->cloud_provider)
		return qt_cli_usage_error("run: missing --cloud-provider=yusur");
	if (!d->cloud_config)
		return qt_cli_usage_error("run: missing --cloud-config FILE");
	as_options_init(&o);
	ret = load_options(&o, options, flags);
	if (ret < 0)
		ret = as_daemon_run(d, &o);
	as_options_clear(&o);
	return ret;
}

int main(int argc, char **argv)
{
	g_autofree struct option *long_opts = build_long_opts();
	g_autoptr(GPtrArray) flags = g_ptr_array_new();
	struct once_args a = {NULL, NULL, NULL, flags};
	struct as_daemon_args d;
	g_autofree char *msg = NULL;
	const char *cmd;
	int c, idx, ret;

	qt_cli_init(argv[0]);
	qt_log_init(qt_cli_prog());
	opterr = 0;
	as_daemon_args_init(&d);
	while ((c = getopt_long(argc, argv, ":" SHORT_OPTS, long_opts, &idx)) != -1) {
		switch (c) {
		case OPT_SNAPSHOT:
			a.snapshot = optarg;
			break;
		case OPT_OPTIONS:
			a.options = optarg;
			break;
		case OPT_NOW:
			a.now = optarg;
			break;
		case OPT_DAEMON:
			if (as_daemon_set(&d, long_opts[idx].name, optarg, &msg) < 0) {
				as_daemon_args_clear(&d);
				return qt_cli_usage_error("%s", msg);
			}
			break;
		case OPT_CORE:
			g_ptr_array_add(flags, (gpointer)long_opts[idx].name);
			g_ptr_array_add(flags, optarg);
			break;
		default:
			as_daemon_args_clear(&d);
			return qt_cli_std_option(c, argv, SHORT_OPTS, usage);
		}
	}
	if (optind == argc)
		ret = qt_cli_usage_error("missing COMMAND (once or run)");
	else if (optind + 1 < argc)
		ret = qt_cli_usage_error("unexpected argument '%s'", argv[optind + 1]);
	else if (strcmp((cmd = argv[optind]), "once") == 0)
		ret = cmd_once(&a);
	else if (strcmp(cmd, "run") == 0)
		ret = cmd_run(&d, a.options, flags);
	else
		ret = qt_cli_usage_error("unknown command '%s'", cmd);
	as_daemon_args_clear(&d);
	return ret;
}
