/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RunOnce: one Cluster Autoscaler loop over a cluster model, as a pure
 * function of (cluster, options, now).  It never changes the cluster; it
 * returns a decision that says what to do (scale a group up, delete nodes,
 * evict pods, delete long-unregistered instances, back a group off) and
 * why every pending pod is not helped and every candidate node not
 * removed, plus the state to carry into the next loop (unneeded_since,
 * last scale-up/down times, group backoffs).
 *
 * Reasons are one string each, starting with a CA-style word where CA has
 * one ("NotUnneededLongEnough", "NoPlaceToMovePods: default/web-1",
 * "BlockedByPod: kube-system/dns NotReplicated", "no group fits:
 * insufficient memory in all 3 groups").
 */
#pragma once

#include "estimator.h"
#include "model.h"
#include "options.h"

struct as_unneeded {
	char *node;
	int64_t since;
};

struct as_group_delta {
	char *id;
	int delta;
};

struct as_group_state {
	char *id;
	int target_size; /* after this decision */
	int64_t scale_up_time;
	int64_t backoff_until;
	int64_t backoff_duration;
	int64_t last_failure;
	int decrease_target; /* > 0: call DecreaseTargetSize(-n) (a failed scale-up) */
};

/* A decision owns everything it points to; as_decision_free() frees it all. */
struct as_decision {
	const char *status; /* "ok" or "ClusterUnhealthy"; static */
	const char *scale_down_status; /* "ok", "ScaleDownDisabled", "ScaleDownInCooldown"...; static */
	/* scale-up; group NULL when none */
	char *scale_up_group; /* the expander's choice */
	int scale_up_delta; /* all new nodes, over every group of the split */
	GPtrArray *scale_up_pods; /* char * pod keys */
	/*
	 * With --balance-similar-node-groups, how the delta is spread over the
	 * chosen group and the groups similar to it (struct as_group_delta);
	 * empty when it all goes to scale_up_group.
	 */
	GArray *scale_up_split;
	GPtrArray *scale_down_nodes; /* char * node names */
	GPtrArray *evict_pods; /* char * pod keys */
	/* int64_t per evict_pods entry: min(pod grace, --max-graceful-termination-sec) */
	GArray *evict_grace_s;
	struct as_kvs moves; /* pod key -> destination node (or "new:GROUP:N") */
	struct as_kvs schedulable; /* pending pod key -> existing or upcoming node it fits */
	struct as_kvs unhelped; /* pod key -> reason */
	struct as_kvs unremovable; /* node -> reason */
	GArray *unneeded; /* struct as_unneeded, the state for the next loop */
	GPtrArray *delete_instances; /* char * long-unregistered instance ids */
	GArray *groups; /* struct as_group_state, one per group, in cluster order */
	struct as_kvs expander_options; /* group -> "N nodes, M pods" that were considered */
	int64_t last_scale_up;
	int64_t last_scale_down_delete;
	/* counts, for status and metrics */
	int ready, unready, not_started, unregistered, long_unregistered, upcoming;
	/*
	 * Nodes with the ToBeDeleted taint or whose instance is gone
	 * (as_node.instance_gone): in none of ready, unready, not_started.
	 */
	int deleted;
};

void as_decision_free(struct as_decision *d);
typedef struct as_decision as_decision;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(as_decision, as_decision_free)

/* What RunOnce may use beyond its inputs: a clock for the binpacking time limit. */
struct as_run_env {
	as_clock_fn clock; /* NULL: no time limit, fully deterministic */
	void *clock_data;
	/*
	 * Leave unremovable_nodes empty: no reason string for each node kept.
	 * For callers that never read them (the simulator, thousands of nodes
	 * every loop); every other part of the decision is the same.
	 */
	bool no_node_reasons;
	/*
	 * The random expander's and the final tie-break's generator, kept by
	 * the caller across loops (`autoscale run`); NULL: a new one seeded
	 * with --seed in every loop, so that a decision depends on its inputs
	 * only (`autoscale once`, the simulator).
	 */
	GRand *rand;
};

/*
 * One loop.  Returns 0 and *@out, or -EINVAL when the cluster is
 * inconsistent (a node in two groups, a negative size), with *@msg.
 */
int as_run_once(const struct as_cluster *c, const struct as_options *o, int64_t now,
		const struct as_run_env *env, struct as_decision **out, char **msg);

/*
 * Check the decision's invariants (autoscaler.c): 0, or -EINVAL with *@msg.
 * as_run_once() runs it on every decision unless built with NDEBUG.
 */
int as_decision_check(const struct as_cluster *c, const struct as_decision *d, char **msg);

/*
 * Feed the state in @d (unneeded_since, last scale-up/down times, each
 * group's target, scale-up time and backoff) into @c for the next loop.
 * Groups are matched by position, as in the decision.
 */
void as_cluster_carry_state(struct as_cluster *c, const struct as_decision *d);

/*
 * --balance-similar-node-groups: may new nodes of @b stand in for new nodes
 * of @a?  Same capacity, allocatable at least @a's, same taints, same
 * labels apart from zone, region and hostname labels.
 */
bool as_templates_similar(const struct as_node *a, const struct as_node *b);

/*
 * A failed scale-up of a group at @now: the next backoff (initial, or
 * double the last one up to the maximum unless the last failure is older
 * than the reset timeout; while still backed off, the same duration again
 * from @now, as CA's exponential_backoff.go).  Updates the three fields
 * in place.
 */
void as_group_backoff(const struct as_options *o, int64_t now, int64_t *duration,
		      int64_t *until, int64_t *last_failure);

/*
 * The gracePeriodSeconds of @p's Eviction: its own, capped by
 * --max-graceful-termination-sec when that is above 0, as CA's evictPod
 * caps it.  0 is no cap: an Eviction with grace 0 would take the pod out
 * of the API at once, its containers still running.
 */
int64_t as_eviction_grace_s(const struct as_options *o, const struct as_pod *p);

/* Is @n Ready as CA counts it (Ready, no pressure that matters, no not-ready taint, schedulable)? */
bool as_node_is_ready(const struct as_node *n);
