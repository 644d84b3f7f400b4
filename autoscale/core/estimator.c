// SPDX-License-Identifier: Apache-2.0
/*
 * Binpacking estimator (estimator.h).  New nodes are all the same template,
 * so each is just its used resources; first fit keeps an index of the
 * first node with room for any pod at all, since nodes before it are full
 * and would be scanned in vain by every later pod.
 */
#include "config.h"

#include <stdlib.h>

#include "estimator.h"
#include "predicates.h"

void as_estimate_clear(struct as_estimate *e)
{
	if (e->pods)
		g_ptr_array_unref(e->pods);
	if (e->pod_node)
		g_array_unref(e->pod_node);
	e->pods = NULL;
	e->pod_node = NULL;
	e->nodes = 0;
	e->capped = false;
}

double as_estimate_score(const struct as_pod *p, const struct as_node *tmpl)
{
	double s = 0;

	if (tmpl->allocatable.cpu > 0)
		s += (double)p->requests.cpu / (double)tmpl->allocatable.cpu;
	if (tmpl->allocatable.mem > 0)
		s += (double)p->requests.mem / (double)tmpl->allocatable.mem;
	return s;
}

struct item {
	const struct as_pod *pod;
	double score;
	guint order;
};

static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

void as_estimate_run(const struct as_node *tmpl, const struct as_resources *base,
		     const struct as_pod *const *pods, guint n_pods, int max_nodes, as_clock_fn clock,
		     void *clock_data, int64_t time_limit_ms, struct as_estimate *out)
{
	static const struct as_resources none;
	const struct as_resources *fresh = base ? base : &none;
	g_autofree struct item *items = g_new(struct item, n_pods ? n_pods : 1);
	GArray *bins = g_array_new(FALSE, TRUE, sizeof(struct as_resources));
	int64_t start = clock ? clock(clock_data) : 0;
	guint first_open = 0;

	out->nodes = 0;
	out->capped = false;
	out->pods = g_ptr_array_new();
	out->pod_node = g_array_new(FALSE, FALSE, sizeof(int));
	for (guint i = 0; i < n_pods; i++) {
		items[i].pod = pods[i];
		items[i].score = as_estimate_score(pods[i], tmpl);
		items[i].order = i;
	}
	qsort(items, n_pods, sizeof(*items), cmp_item);

	for (guint i = 0; i < n_pods; i++) {
		const struct as_pod *p = items[i].pod;
		int placed = -1;

		if (clock && (i & 63) == 63 && clock(clock_data) - start > time_limit_ms) {
			out->capped = true;
			break;
		}
		if (as_pod_matches_node(p, tmpl) != AS_FIT_OK ||
		    as_pod_fits_resources(p, &tmpl->allocatable, fresh) != AS_FIT_OK)
			continue;
		for (guint b = first_open; b < bins->len; b++) {
			struct as_resources *u = &g_array_index(bins, struct as_resources, b);

			if (as_pod_fits_resources(p, &tmpl->allocatable, u) == AS_FIT_OK) {
				placed = (int)b;
				break;
			}
		}
		if (placed < 0) {
			if ((int)bins->len >= max_nodes) {
				out->capped = true;
				break;
			}
			g_array_append_vals(bins, fresh, 1);
			placed = (int)bins->len - 1;
		}
		struct as_resources *u = &g_array_index(bins, struct as_resources, placed);
		u->cpu += p->requests.cpu;
		u->mem += p->requests.mem;
		u->gpu += p->requests.gpu;
		u->pods += p->requests.pods;
		g_ptr_array_add(out->pods, (gpointer)p);
		g_array_append_val(out->pod_node, placed);
		/* A node with no pod slot or no cpu left takes no more pods. */
		while (first_open < bins->len) {
			struct as_resources *f = &g_array_index(bins, struct as_resources, first_open);

			if (f->pods < tmpl->allocatable.pods)
				break;
			first_open++;
		}
	}
	out->nodes = (int)bins->len;
	g_array_free(bins, TRUE);
}
