/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scheduling predicates: may this pod run on this node?  The subset of the
 * kube-scheduler's filters that Cluster Autoscaler's simulations depend on:
 * spec.unschedulable, nodeSelector, required node affinity (matchExpressions
 * on labels), taints with NoSchedule/NoExecute against tolerations, and
 * resources (cpu, memory, nvidia.com/gpu, pod count) against allocatable.
 * Each answer is the first failing filter, in that order, so that reasons
 * ("insufficient memory") can be reported and compared.
 */
#pragma once

#include <stdbool.h>

#include "model.h"

enum as_fit {
	AS_FIT_OK = 0,
	AS_FIT_UNSCHEDULABLE,
	AS_FIT_NODE_SELECTOR,
	AS_FIT_AFFINITY,
	AS_FIT_TAINT,
	AS_FIT_PODS,
	AS_FIT_CPU,
	AS_FIT_MEMORY,
	AS_FIT_GPU,
	AS_FIT_N_REASONS,
};

/* "insufficient cpu", "untolerated taint", ...; static strings. */
const char *as_fit_reason(enum as_fit f);

/* Every filter but resources. */
enum as_fit as_pod_matches_node(const struct as_pod *p, const struct as_node *n);
/*
 * Would the DaemonSet that @p (one of its pods) belongs to run a pod on
 * @n?  nodeSelector, required node affinity and taints as above, except
 * that a term with no matchExpressions matches (the DaemonSet controller
 * pins each pod to its node with a matchFields term, which is not kept)
 * and spec.unschedulable does not filter (its pods tolerate it).
 */
enum as_fit as_daemonset_matches_node(const struct as_pod *p, const struct as_node *n);
/* Resources only: @used is what the node's pods already request. */
enum as_fit as_pod_fits_resources(const struct as_pod *p, const struct as_resources *alloc,
				  const struct as_resources *used);
/* Both, on an otherwise empty node. */
enum as_fit as_pod_fits_empty_node(const struct as_pod *p, const struct as_node *n);

bool as_toleration_tolerates(const struct as_toleration *t, const struct as_taint *taint);
bool as_pod_tolerates(const struct as_pod *p, const struct as_taint *taint);
