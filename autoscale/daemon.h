/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `autoscale run`: the live Cluster Autoscaler.  Each --scan-interval it
 * takes a copy of the Kubernetes cache (kube.h) and the provider's node
 * groups, builds the core's model, runs the same RunOnce as `autoscale
 * once` and the simulator, and carries the decision out: IncreaseSize,
 * taint + cordon + evict + delete for scale-down, the soft
 * DeletionCandidate taints, events, the status ConfigMap and /metrics.
 *
 * The daemon's own flags (not autoscaler options) have a table here, as
 * the core's options have theirs; main.c builds getopt from both.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "options.h"

struct as_daemon_args {
	char *kubeconfig;
	bool in_cluster;
	char *cloud_provider;
	char *cloud_config;
	char *address; /* [HOST]:PORT */
	bool dry_run;
	bool leader_elect;
	int64_t lease_duration, renew_deadline, retry_period; /* ms */
	char *lease_name, *lease_namespace;
	char *ns; /* --namespace: where the status ConfigMap lives */
	bool write_status_configmap;
	char *status_config_map_name;
	int64_t max_inactivity, max_failing_time; /* ms, for /healthz */
	int64_t max_pod_eviction_time; /* ms */
	bool cordon_node_before_terminating;
	int64_t max_bulk_soft_taint_count;
	int64_t node_deletion_delay_timeout; /* ms: wait for pods to go after evictions */
	bool ds_eviction_occupied, ds_eviction_empty; /* --daemonset-eviction-for-*-nodes */
	int64_t v; /* --v: klog-style verbosity; >= 4 logs at debug level */
};

void as_daemon_args_init(struct as_daemon_args *a);
void as_daemon_args_clear(struct as_daemon_args *a);
/* Like as_options_set(): 0, -ENOENT for an unknown name, -EINVAL with *@msg. */
int as_daemon_set(struct as_daemon_args *a, const char *name, const char *value, char **msg);
const char *as_daemon_flag_name(unsigned i);
bool as_daemon_flag_is_bool(const char *name);

struct as_decision;
/*
 * The last scale-up time to carry into the next loop once decision @d is
 * taken, @prev the one carried so far.  A scale-up RunOnce decided counts
 * only once an IncreaseSize succeeded (CA sets lastScaleUpTime after a
 * successful scale-up, so a refused one does not put scale-down in
 * cooldown): with @acts (not --dry-run) it keeps @prev, and the loop sets
 * the time itself when an IncreaseSize succeeds.
 */
int64_t as_daemon_kept_last_scale_up(int64_t prev, const struct as_decision *d, bool acts);

struct as_cluster;
/*
 * The API server refuses a ConfigMap whose data passes 1 MiB (keys and
 * values together); the status is kept under it with room to spare.
 */
#define AS_DAEMON_STATUS_MAX (((size_t)1 << 20) - 4096)
/*
 * The status ConfigMap's text for cluster @c and decision @d at @now (ms),
 * @deleting nodes being deleted: cluster-wide lines, then one entry per
 * node group, as CA's.  Never longer than @max bytes (at least 1 KiB):
 * the node groups that would not fit are left out and counted in a last
 * line.  g_malloc'd.
 */
char *as_daemon_status_text(const struct as_cluster *c, const struct as_decision *d,
			    unsigned deleting, int64_t now, size_t max);

/* Run until SIGTERM/SIGINT or a lost Lease.  Returns the exit status. */
int as_daemon_run(const struct as_daemon_args *a, const struct as_options *o);
