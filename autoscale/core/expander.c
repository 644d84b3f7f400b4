// SPDX-License-Identifier: Apache-2.0
/*
 * Expanders (expander.h).  Each filter turns a list of candidate indexes
 * into the sublist of its best ones, ties kept, as Cluster Autoscaler's
 * filters do; the chain stops early when one candidate is left.
 *
 * The price expander follows CA's design (docs/proposals/pricing.md): score
 * = suppressed_unfitness x (node_price + stab) / (pod_price + stab), where
 * node_price is the group's price per node-hour times the node count,
 * pod_price charges each helped pod per cpu and per GiB at fixed rates,
 * stab is a stabilisation term, and unfitness is max(preferred/cpu,
 * cpu/preferred) against a preferred node size that doubles as the cluster
 * triples.  Groups with no price are treated as costing what their pods
 * cost.  The constants are ours and documented in
 * docs/autoscale-snapshot.md; CA takes prices from the cloud provider.
 */
#include "config.h"

#include <math.h>

#include "expander.h"

#define CPU_PRICE_PER_HOUR 0.033174 /* per core */
#define MEM_PRICE_PER_HOUR 0.004446 /* per GiB */
#define GIB (1024.0 * 1024.0 * 1024.0)

double as_expander_waste_score(const struct as_scale_option *o)
{
	const struct as_node *t = o->group->template_node;
	double avail_cpu = (double)t->capacity.cpu * o->nodes;
	double avail_mem = (double)t->capacity.mem * o->nodes;
	double req_cpu = 0, req_mem = 0, score = 0;

	for (guint i = 0; i < o->n_pods; i++) {
		req_cpu += (double)o->pods[i]->requests.cpu;
		req_mem += (double)o->pods[i]->requests.mem;
	}
	if (avail_cpu > 0)
		score += (avail_cpu - req_cpu) / avail_cpu;
	if (avail_mem > 0)
		score += (avail_mem - req_mem) / avail_mem;
	return score;
}

static double pod_price(const struct as_pod *p)
{
	return (double)p->requests.cpu / 1000.0 * CPU_PRICE_PER_HOUR +
	       (double)p->requests.mem / GIB * MEM_PRICE_PER_HOUR;
}

static double preferred_cpu(guint cluster_nodes)
{
	/* 1 core up to 2 nodes, doubling every time the cluster triples, up to 32. */
	double cpu = 1;
	guint limit = 2;

	while (cluster_nodes > limit && cpu < 32) {
		cpu *= 2;
		limit *= 3;
	}
	return cpu;
}

double as_expander_price_score(const struct as_scale_option *o, guint cluster_nodes)
{
	const struct as_node *t = o->group->template_node;
	double pods = 0, nodes, stab, unfit, cpu = (double)t->capacity.cpu / 1000.0;
	double pref = preferred_cpu(cluster_nodes);

	for (guint i = 0; i < o->n_pods; i++)
		pods += pod_price(o->pods[i]);
	nodes = o->group->price > 0 ? o->group->price * o->nodes : pods;
	stab = 0.1 * pref * CPU_PRICE_PER_HOUR;
	unfit = cpu > 0 ? fmax(pref / cpu, cpu / pref) : 1;
	unfit = (unfit - 1.0) * (1.0 - tanh((o->nodes - 1) / 15.0)) + 1.0;
	return unfit * (nodes + stab) / (pods + stab);
}

typedef double (*score_fn)(const struct as_scale_option *o, guint cluster_nodes,
			   const struct as_options *opt, bool *skip);

static double score_most_pods(const struct as_scale_option *o, guint c,
			      const struct as_options *opt, bool *skip)
{
	return -(double)o->n_pods;
}

static double score_least_nodes(const struct as_scale_option *o, guint c,
				 const struct as_options *opt, bool *skip)
{
	return (double)o->nodes;
}

static double score_waste(const struct as_scale_option *o, guint c,
			  const struct as_options *opt, bool *skip)
{
	return as_expander_waste_score(o);
}

static double score_price(const struct as_scale_option *o, guint c,
			  const struct as_options *opt, bool *skip)
{
	return as_expander_price_score(o, c);
}

static double score_priority(const struct as_scale_option *o, guint c,
			     const struct as_options *opt, bool *skip)
{
	bool found = false;
	int64_t best = 0;

	for (guint i = 0; i < opt->n_priorities; i++) {
		const struct as_priority_rule *r = &opt->priorities[i];

		if ((!found || r->priority > best) && g_regex_match(r->regex, o->group->id, 0, NULL)) {
			best = r->priority;
			found = true;
		}
	}
	*skip = !found;
	return -(double)best;
}

/* Keep in @idx (length *@n) the candidates with the lowest score. */
static void keep_best(const struct as_scale_option *opts, guint *idx, guint *n, score_fn fn,
		      guint cluster_nodes, const struct as_options *o)
{
	g_autofree double *score = g_new(double, *n);
	g_autofree bool *skip = g_new0(bool, *n);
	double best = INFINITY;
	guint k = 0;
	bool any = false;

	for (guint i = 0; i < *n; i++) {
		score[i] = fn(&opts[idx[i]], cluster_nodes, o, &skip[i]);
		if (!skip[i])
			any = true;
	}
	if (!any)
		return; /* nothing matched (priority): the filter keeps everyone */
	for (guint i = 0; i < *n; i++)
		if (!skip[i] && score[i] < best)
			best = score[i];
	for (guint i = 0; i < *n; i++)
		if (!skip[i] && score[i] == best)
			idx[k++] = idx[i];
	*n = k;
}

guint as_expander_choose(const struct as_options *o, const struct as_scale_option *opts, guint n,
			 guint cluster_nodes, GRand *rand)
{
	g_autofree guint *idx = g_new(guint, n);
	guint m = n;

	for (guint i = 0; i < n; i++)
		idx[i] = i;
	for (guint e = 0; e < o->n_expanders && m > 1; e++) {
		score_fn fn = NULL;

		switch (o->expanders[e]) {
		case AS_EXPANDER_RANDOM:
			break;
		case AS_EXPANDER_MOST_PODS:
			fn = score_most_pods;
			break;
		case AS_EXPANDER_LEAST_NODES:
			fn = score_least_nodes;
			break;
		case AS_EXPANDER_LEAST_WASTE:
			fn = score_waste;
			break;
		case AS_EXPANDER_PRICE:
			fn = score_price;
			break;
		case AS_EXPANDER_PRIORITY:
			fn = score_priority;
			break;
		}
		if (!fn)
			break; /* random: the final pick below */
		keep_best(opts, idx, &m, fn, cluster_nodes, o);
	}
	if (m == 1)
		return idx[0];
	return idx[g_rand_int_range(rand, 0, (gint32)m)];
}
