/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Autoscaler options under Cluster Autoscaler's flag names, with CA's
 * defaults.  One table (options.c) maps each flag name to its field, type
 * and range, so the command line, the options file and the documentation
 * cannot drift apart: as_options_set("scale-down-unneeded-time", "10m")
 * is what both call.
 *
 * Additions of ours, not CA flags: "seed" (the random expander's and the
 * tie-breaker's seed; decisions are deterministic for a seed) and
 * "priorities" (the priority expander's configuration, which CA reads from
 * the cluster-autoscaler-priority-expander ConfigMap; here a string
 * "PRIO:REGEX[,REGEX...];PRIO:..." such as "10:^small-;50:^big-,^huge-").
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#define AS_MAX_EXPANDERS 6

enum as_expander {
	AS_EXPANDER_RANDOM,
	AS_EXPANDER_MOST_PODS,
	AS_EXPANDER_LEAST_NODES,
	AS_EXPANDER_LEAST_WASTE,
	AS_EXPANDER_PRICE,
	AS_EXPANDER_PRIORITY,
};

struct as_priority_rule {
	int64_t priority;
	GRegex *regex;
};

struct as_options {
	int64_t scan_interval; /* ms */
	enum as_expander expanders[AS_MAX_EXPANDERS];
	guint n_expanders;
	int64_t max_nodes_total; /* 0 = no limit */
	int64_t cores_min, cores_max; /* cores */
	int64_t memory_min, memory_max; /* GiB */
	int64_t gpu_min, gpu_max; /* all GPU types together */
	int64_t max_nodes_per_scaleup;
	int64_t max_nodegroup_binpacking_duration; /* ms */
	bool balance_similar_node_groups;
	int64_t expendable_pods_priority_cutoff;
	int64_t new_pod_scale_up_delay; /* ms */
	int64_t max_node_provision_time;
	int64_t max_node_startup_time;
	int64_t ok_total_unready_count;
	double max_total_unready_percentage;
	int64_t initial_node_group_backoff_duration;
	int64_t max_node_group_backoff_duration;
	int64_t node_group_backoff_reset_timeout;
	bool scale_down_enabled;
	double scale_down_utilization_threshold;
	double scale_down_gpu_utilization_threshold;
	int64_t scale_down_unneeded_time;
	int64_t scale_down_unready_time;
	int64_t scale_down_delay_after_add;
	int64_t scale_down_delay_after_delete;
	int64_t scale_down_delay_after_failure;
	int64_t max_scale_down_parallelism;
	int64_t max_drain_parallelism;
	int64_t max_graceful_termination_sec;
	bool skip_nodes_with_system_pods;
	bool skip_nodes_with_local_storage;
	bool ignore_daemonsets_utilization;
	bool ignore_mirror_pods_utilization;
	uint64_t seed;
	bool seed_set; /* --seed was given: `autoscale run` seeds from the clock otherwise */
	struct as_priority_rule *priorities; /* owned */
	guint n_priorities;
};

/* Fill @o with CA's defaults. */
void as_options_init(struct as_options *o);
/* Free what @o owns (the priority regexes); @o may be reused after init. */
void as_options_clear(struct as_options *o);

/*
 * Set the option called @name (a CA flag name without "--") from its text
 * form @value; booleans take true/false/1/0 and NULL as true (a bare
 * --flag).  Returns 0, or -ENOENT for an unknown name and -EINVAL for a bad
 * or out-of-range value, with *msg a g_malloc'd one-line message naming
 * the option and the value.
 */
int as_options_set(struct as_options *o, const char *name, const char *value, char **msg);

/* Whether @name is an option as_options_set() knows. */
bool as_options_known(const char *name);
/* Whether @name is a boolean option (takes an optional =VALUE on the command line). */
bool as_options_is_bool(const char *name);
/* The @i-th option name, NULL past the last one. */
const char *as_options_name(guint i);

const char *as_expander_name(enum as_expander e);
