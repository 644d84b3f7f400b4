// SPDX-License-Identifier: Apache-2.0
/*
 * Scheduling predicates (predicates.h), following the kube-scheduler's
 * NodeUnschedulable, NodeAffinity, TaintToleration and NodeResourcesFit
 * filters.  PreferNoSchedule taints and preferred affinities do not filter
 * and are ignored; matchFields terms (metadata.name) are not supported and
 * never match.
 */
#include "config.h"

#include <string.h>

#include "predicates.h"

static const char *const reasons[] = {
	[AS_FIT_OK] = "fits",
	[AS_FIT_UNSCHEDULABLE] = "node is unschedulable",
	[AS_FIT_NODE_SELECTOR] = "node selector does not match",
	[AS_FIT_AFFINITY] = "node affinity does not match",
	[AS_FIT_TAINT] = "untolerated taint",
	[AS_FIT_PODS] = "too many pods",
	[AS_FIT_CPU] = "insufficient cpu",
	[AS_FIT_MEMORY] = "insufficient memory",
	[AS_FIT_GPU] = "insufficient gpu",
};

const char *as_fit_reason(enum as_fit f)
{
	return (size_t)f < G_N_ELEMENTS(reasons) ? reasons[f] : "?";
}

bool as_toleration_tolerates(const struct as_toleration *t, const struct as_taint *taint)
{
	if (t->effect != AS_EFFECT_ANY && t->effect != taint->effect)
		return false;
	/* An empty key with Exists tolerates every taint. */
	if (t->key[0] == '\0')
		return t->exists;
	if (strcmp(t->key, taint->key) != 0)
		return false;
	return t->exists || strcmp(t->value ? t->value : "", taint->value ? taint->value : "") == 0;
}

bool as_pod_tolerates(const struct as_pod *p, const struct as_taint *taint)
{
	for (guint i = 0; i < p->n_tolerations; i++)
		if (as_toleration_tolerates(&p->tolerations[i], taint))
			return true;
	return false;
}

/*
 * With @daemonset, @p stands for its DaemonSet: the DaemonSet controller
 * gives each pod a matchFields term on metadata.name for its own node
 * (which the model does not keep) and a toleration for unschedulable
 * nodes, so a term with no expression left matches and spec.unschedulable
 * does not filter.
 */
static enum as_fit matches_node(const struct as_pod *p, const struct as_node *n, bool daemonset)
{
	if (n->unschedulable && !daemonset) {
		const struct as_taint t = {(char *)"node.kubernetes.io/unschedulable", (char *)"",
					   AS_EFFECT_NO_SCHEDULE};

		if (!as_pod_tolerates(p, &t))
			return AS_FIT_UNSCHEDULABLE;
	}
	for (guint i = 0; i < p->node_selector.n; i++) {
		const char *v = as_kvs_get(&n->labels, p->node_selector.v[i].key);

		if (!v || strcmp(v, p->node_selector.v[i].value) != 0)
			return AS_FIT_NODE_SELECTOR;
	}
	if (p->n_affinity) {
		bool any = false;

		for (guint t = 0; t < p->n_affinity && !any; t++) {
			const struct as_selector_term *term = &p->affinity[t];
			/* An empty term matches nothing, but see matches_node() above. */
			bool all = term->n_exprs > 0 || daemonset;

			for (guint e = 0; e < term->n_exprs && all; e++)
				all = as_match_expr_matches(&term->exprs[e], &n->labels);
			any = all;
		}
		if (!any)
			return AS_FIT_AFFINITY;
	}
	for (guint i = 0; i < n->n_taints; i++) {
		const struct as_taint *t = &n->taints[i];

		if (t->effect == AS_EFFECT_PREFER_NO_SCHEDULE)
			continue;
		if (!as_pod_tolerates(p, t))
			return AS_FIT_TAINT;
	}
	return AS_FIT_OK;
}

enum as_fit as_pod_matches_node(const struct as_pod *p, const struct as_node *n)
{
	return matches_node(p, n, false);
}

enum as_fit as_daemonset_matches_node(const struct as_pod *p, const struct as_node *n)
{
	return matches_node(p, n, true);
}

enum as_fit as_pod_fits_resources(const struct as_pod *p, const struct as_resources *alloc,
				  const struct as_resources *used)
{
	if (used->pods + 1 > alloc->pods)
		return AS_FIT_PODS;
	if (p->requests.cpu > alloc->cpu - used->cpu)
		return AS_FIT_CPU;
	if (p->requests.mem > alloc->mem - used->mem)
		return AS_FIT_MEMORY;
	if (p->requests.gpu > alloc->gpu - used->gpu)
		return AS_FIT_GPU;
	return AS_FIT_OK;
}

enum as_fit as_pod_fits_empty_node(const struct as_pod *p, const struct as_node *n)
{
	static const struct as_resources none;
	enum as_fit f = as_pod_matches_node(p, n);

	return f != AS_FIT_OK ? f : as_pod_fits_resources(p, &n->allocatable, &none);
}
