/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Expanders: which node group grows when several could help.  --expander
 * takes one name or a comma list; a list is a chain of filters, each
 * keeping only its best options, and whatever tie remains at the end goes
 * to random (seeded, so the choice is reproducible).
 *
 *   random       any option
 *   most-pods    the most pods helped
 *   least-nodes  the fewest new nodes
 *   least-waste  lowest (cpu_avail - cpu_req)/cpu_avail + (mem_avail -
 *                mem_req)/mem_avail, avail = template capacity x nodes
 *   price        lowest unfitness-weighted node price / pod price (see
 *                expander.c and docs/autoscale-snapshot.md for the model)
 *   priority     highest priority among the rules whose regex matches the
 *                group id; groups no rule matches are dropped unless none
 *                match at all
 */
#pragma once

#include "model.h"
#include "options.h"

struct as_scale_option {
	const struct as_node_group *group;
	int nodes;
	const struct as_pod *const *pods; /* helped pods, not owned */
	guint n_pods;
};

/* least-waste's score of @o; exposed for tests. */
double as_expander_waste_score(const struct as_scale_option *o);
/* price's score of @o for a cluster of @cluster_nodes nodes; lower is better. */
double as_expander_price_score(const struct as_scale_option *o, guint cluster_nodes);

/*
 * Apply @o's expander chain to @opts (n >= 1) and return the index of the
 * chosen option.  @rand supplies the random choices (g_rand_new_with_seed).
 */
guint as_expander_choose(const struct as_options *o, const struct as_scale_option *opts, guint n,
			 guint cluster_nodes, GRand *rand);
