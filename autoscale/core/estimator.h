/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Binpacking estimator: how many nodes built from a group's template would
 * the pending pods need?  Cluster Autoscaler's first-fit decreasing: pods
 * sorted by descending cpu/template_cpu + mem/template_mem (stable, so
 * equal pods keep their order), each placed on the first node added so far
 * where it fits, else on a new node.  Each new node starts with the
 * requests of the pods that will run on it anyway (its DaemonSet pods), as
 * CA's template NodeInfo holds them.  A pod that does not fit even on a
 * new node holding only those is skipped; when the cap on new nodes is
 * reached the estimate stops.  Only nodes holding a pending pod are
 * counted.
 */
#pragma once

#include "model.h"

/* Returns the current time in ms, for the binpacking time limit; may be NULL. */
typedef int64_t (*as_clock_fn)(void *data);

struct as_estimate {
	int nodes;
	GPtrArray *pods; /* const struct as_pod *, the pods placed, in placement order */
	GArray *pod_node; /* int, for each placed pod the index of its new node */
	bool capped; /* stopped by @max_nodes or the time limit */
};

void as_estimate_clear(struct as_estimate *e);

/*
 * Estimate for @pods (not modified) on @tmpl with at most @max_nodes new
 * nodes, each starting with @base used (NULL: empty).  With @clock, stop
 * once @time_limit_ms has passed since the start.  Fills *@out (clear it
 * with as_estimate_clear()).
 */
void as_estimate_run(const struct as_node *tmpl, const struct as_resources *base,
		     const struct as_pod *const *pods, guint n_pods, int max_nodes, as_clock_fn clock,
		     void *clock_data, int64_t time_limit_ms, struct as_estimate *out);

/* The FFD sort key of @p for @tmpl. */
double as_estimate_score(const struct as_pod *p, const struct as_node *tmpl);
