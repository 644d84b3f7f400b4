// SPDX-License-Identifier: Apache-2.0
/*
 * Scheduling side of the autoscaler core: predicates (resources,
 * nodeSelector, node affinity operators, taints and tolerations,
 * unschedulable, and as a DaemonSet sees them), the snapshot's
 * fork/revert, the binpacking estimator's FFD order, stop rule, caps and
 * DaemonSet room, and every expander including least-waste's
 * exact score and ties.
 */
#include "config.h"

#include <check.h>
#include <math.h>

#include "as-build.h"
#include "estimator.h"
#include "expander.h"
#include "options.h"
#include "predicates.h"
#include "snapshot.h"

START_TEST(resources)
{
	g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func((GDestroyNotify)as_pod_free);
	struct as_node *n = b_node("n", 2000, 4096, 3);
	struct as_pod *p = b_pod("p", 1000, 1024, NULL);
	struct as_resources used = {0, 0, 0, 0};

	g_ptr_array_add(keep, p);
	ck_assert_int_eq(as_pod_fits_resources(p, &n->allocatable, &used), AS_FIT_OK);
	used.cpu = 1001;
	ck_assert_int_eq(as_pod_fits_resources(p, &n->allocatable, &used), AS_FIT_CPU);
	used.cpu = 1000;
	ck_assert_int_eq(as_pod_fits_resources(p, &n->allocatable, &used), AS_FIT_OK);
	used.mem = 3073 * MIB;
	ck_assert_int_eq(as_pod_fits_resources(p, &n->allocatable, &used), AS_FIT_MEMORY);
	used.mem = 0;
	used.pods = 3;
	ck_assert_int_eq(as_pod_fits_resources(p, &n->allocatable, &used), AS_FIT_PODS);
	used.pods = 0;
	p->requests.gpu = 1;
	ck_assert_int_eq(as_pod_fits_resources(p, &n->allocatable, &used), AS_FIT_GPU);
	n->allocatable.gpu = 1;
	ck_assert_int_eq(as_pod_fits_resources(p, &n->allocatable, &used), AS_FIT_OK);
	ck_assert_str_eq(as_fit_reason(AS_FIT_MEMORY), "insufficient memory");
	as_node_free(n);
}
END_TEST

static void affinity(struct as_pod *p, const char *key, enum as_selector_op op, const char *v1,
		     const char *v2)
{
	struct as_selector_term *t;
	const char *vals[] = {v1, v2, NULL};

	p->affinity = g_renew(struct as_selector_term, p->affinity, p->n_affinity + 1);
	t = &p->affinity[p->n_affinity++];
	t->exprs = g_new0(struct as_match_expr, 1);
	t->n_exprs = 1;
	t->exprs[0].key = g_strdup(key);
	t->exprs[0].op = op;
	t->exprs[0].values = g_strdupv((char **)vals);
}

static enum as_fit match1(struct as_node *n, const char *key, enum as_selector_op op,
			  const char *v1, const char *v2)
{
	struct as_pod *p = b_pod("p", 1, 1, NULL);
	enum as_fit f;

	affinity(p, key, op, v1, v2);
	f = as_pod_matches_node(p, n);
	as_pod_free(p);
	return f;
}

START_TEST(selectors)
{
	struct as_node *n = b_node("n", 1000, 1024, 10);
	struct as_pod *p = b_pod("p", 1, 1, NULL);

	as_kvs_add(&n->labels, "zone", "a");
	as_kvs_add(&n->labels, "cores", "16");
	as_kvs_add(&p->node_selector, "zone", "a");
	ck_assert_int_eq(as_pod_matches_node(p, n), AS_FIT_OK);
	as_kvs_add(&p->node_selector, "disk", "ssd");
	ck_assert_int_eq(as_pod_matches_node(p, n), AS_FIT_NODE_SELECTOR);

	ck_assert_int_eq(match1(n, "zone", AS_OP_IN, "b", "a"), AS_FIT_OK);
	ck_assert_int_eq(match1(n, "zone", AS_OP_IN, "b", NULL), AS_FIT_AFFINITY);
	ck_assert_int_eq(match1(n, "zone", AS_OP_NOT_IN, "b", NULL), AS_FIT_OK);
	ck_assert_int_eq(match1(n, "zone", AS_OP_NOT_IN, "a", NULL), AS_FIT_AFFINITY);
	ck_assert_int_eq(match1(n, "absent", AS_OP_NOT_IN, "a", NULL), AS_FIT_OK);
	ck_assert_int_eq(match1(n, "zone", AS_OP_EXISTS, NULL, NULL), AS_FIT_OK);
	ck_assert_int_eq(match1(n, "absent", AS_OP_EXISTS, NULL, NULL), AS_FIT_AFFINITY);
	ck_assert_int_eq(match1(n, "absent", AS_OP_DOES_NOT_EXIST, NULL, NULL), AS_FIT_OK);
	ck_assert_int_eq(match1(n, "zone", AS_OP_DOES_NOT_EXIST, NULL, NULL), AS_FIT_AFFINITY);
	ck_assert_int_eq(match1(n, "cores", AS_OP_GT, "8", NULL), AS_FIT_OK);
	ck_assert_int_eq(match1(n, "cores", AS_OP_GT, "16", NULL), AS_FIT_AFFINITY);
	ck_assert_int_eq(match1(n, "cores", AS_OP_LT, "32", NULL), AS_FIT_OK);
	ck_assert_int_eq(match1(n, "cores", AS_OP_LT, "16", NULL), AS_FIT_AFFINITY);
	ck_assert_int_eq(match1(n, "zone", AS_OP_GT, "1", NULL), AS_FIT_AFFINITY); /* not a number */
	ck_assert_int_eq(match1(n, "cores", AS_OP_GT, "1", "2"), AS_FIT_AFFINITY); /* two values */

	/* Terms are ORed. */
	struct as_pod *q = b_pod("q", 1, 1, NULL);
	affinity(q, "zone", AS_OP_IN, "b", NULL);
	ck_assert_int_eq(as_pod_matches_node(q, n), AS_FIT_AFFINITY);
	affinity(q, "cores", AS_OP_EXISTS, NULL, NULL);
	ck_assert_int_eq(as_pod_matches_node(q, n), AS_FIT_OK);
	as_pod_free(q);
	as_pod_free(p);
	as_node_free(n);
}
END_TEST

START_TEST(taints)
{
	struct as_node *n = b_node("n", 1000, 1024, 10);
	struct as_pod *p = b_pod("p", 1, 1, NULL);

	b_taint(n, "gpu", "yes", AS_EFFECT_NO_SCHEDULE);
	ck_assert_int_eq(as_pod_matches_node(p, n), AS_FIT_TAINT);
	b_tol(p, "gpu", "no", false, AS_EFFECT_NO_SCHEDULE); /* Equal, wrong value */
	ck_assert_int_eq(as_pod_matches_node(p, n), AS_FIT_TAINT);
	b_tol(p, "gpu", "yes", false, AS_EFFECT_NO_EXECUTE); /* wrong effect */
	ck_assert_int_eq(as_pod_matches_node(p, n), AS_FIT_TAINT);
	b_tol(p, "gpu", "yes", false, AS_EFFECT_ANY); /* empty effect matches all */
	ck_assert_int_eq(as_pod_matches_node(p, n), AS_FIT_OK);

	b_taint(n, "dedicated", "db", AS_EFFECT_NO_EXECUTE);
	ck_assert_int_eq(as_pod_matches_node(p, n), AS_FIT_TAINT);
	b_tol(p, "dedicated", NULL, true, AS_EFFECT_NO_EXECUTE); /* Exists: any value */
	ck_assert_int_eq(as_pod_matches_node(p, n), AS_FIT_OK);

	b_taint(n, "soft", "x", AS_EFFECT_PREFER_NO_SCHEDULE); /* never filters */
	ck_assert_int_eq(as_pod_matches_node(p, n), AS_FIT_OK);

	struct as_pod *q = b_pod("q", 1, 1, NULL);
	b_tol(q, "", NULL, true, AS_EFFECT_ANY); /* empty key + Exists: everything */
	ck_assert_int_eq(as_pod_matches_node(q, n), AS_FIT_OK);
	n->unschedulable = true;
	ck_assert_int_eq(as_pod_matches_node(q, n), AS_FIT_OK); /* tolerates unschedulable too */
	ck_assert_int_eq(as_pod_matches_node(p, n), AS_FIT_UNSCHEDULABLE);
	as_pod_free(q);
	as_pod_free(p);
	as_node_free(n);
}
END_TEST

START_TEST(daemonset_matches)
{
	struct as_node *n = b_node("n", 1000, 1024, 10);
	struct as_pod *p = b_pod("p", 1, 1, NULL);

	as_kvs_add(&n->labels, "zone", "a");
	/* A term with no expressions: what a matchFields-only term (metadata.name) leaves. */
	p->affinity = g_new0(struct as_selector_term, 1);
	p->n_affinity = 1;
	ck_assert_int_eq(as_pod_matches_node(p, n), AS_FIT_AFFINITY);
	ck_assert_int_eq(as_daemonset_matches_node(p, n), AS_FIT_OK);
	/* Expressions beside it still count. */
	affinity(p, "zone", AS_OP_IN, "b", NULL);
	ck_assert_int_eq(as_daemonset_matches_node(p, n), AS_FIT_OK); /* terms ORed */
	/* The expression alone decides (the empty term had nothing to free). */
	p->affinity[0] = p->affinity[1];
	p->n_affinity = 1;
	ck_assert_int_eq(as_daemonset_matches_node(p, n), AS_FIT_AFFINITY);
	as_kvs_set(&n->labels, "zone", "b");
	ck_assert_int_eq(as_daemonset_matches_node(p, n), AS_FIT_OK);
	as_kvs_add(&p->node_selector, "disk", "ssd");
	ck_assert_int_eq(as_daemonset_matches_node(p, n), AS_FIT_NODE_SELECTOR);
	as_kvs_add(&n->labels, "disk", "ssd");
	ck_assert_int_eq(as_daemonset_matches_node(p, n), AS_FIT_OK);
	/* Taints filter; spec.unschedulable does not (DaemonSet pods tolerate it). */
	n->unschedulable = true;
	ck_assert_int_eq(as_pod_matches_node(p, n), AS_FIT_UNSCHEDULABLE);
	ck_assert_int_eq(as_daemonset_matches_node(p, n), AS_FIT_OK);
	b_taint(n, "dedicated", "batch", AS_EFFECT_NO_SCHEDULE);
	ck_assert_int_eq(as_daemonset_matches_node(p, n), AS_FIT_TAINT);
	b_tol(p, "dedicated", NULL, true, AS_EFFECT_ANY);
	ck_assert_int_eq(as_daemonset_matches_node(p, n), AS_FIT_OK);
	as_pod_free(p);
	as_node_free(n);
}
END_TEST

START_TEST(snapshot_fork_revert)
{
	struct as_node *a = b_node("a", 1000, 1024, 10), *b = b_node("b", 1000, 1024, 10);
	struct as_pod *p = b_pod("p", 600, 100, NULL);
	g_autoptr(as_snapshot) s = as_snapshot_new();

	as_snapshot_add_node(s, a, -1, false);
	as_snapshot_add_node(s, b, -1, false);
	as_snapshot_place(s, 0, p);
	ck_assert_int_eq(as_snapshot_find_fit(s, p, 0, -1), 1);
	as_snapshot_fork(s);
	as_snapshot_place(s, 1, p);
	as_snapshot_remove_node(s, 0);
	ck_assert_int_eq(as_snapshot_find_fit(s, p, 0, -1), -1);
	as_snapshot_fork(s);
	as_snapshot_add_node(s, a, -1, true);
	ck_assert_int_eq(as_snapshot_find_fit(s, p, 0, -1), 2);
	as_snapshot_revert(s);
	ck_assert_int_eq(as_snapshot_n_nodes(s), 2);
	as_snapshot_revert(s);
	ck_assert_int_eq(as_snapshot_node(s, 1)->used.cpu, 0);
	ck_assert(!as_snapshot_node(s, 0)->removed);
	ck_assert_int_eq(as_snapshot_node(s, 0)->used.cpu, 600);
	/* commit keeps the changes; an outer fork can still undo them */
	as_snapshot_fork(s);
	as_snapshot_fork(s);
	as_snapshot_place(s, 1, p);
	as_snapshot_commit(s);
	ck_assert_int_eq(as_snapshot_node(s, 1)->used.cpu, 600);
	as_snapshot_revert(s);
	ck_assert_int_eq(as_snapshot_node(s, 1)->used.cpu, 0);
	ck_assert_int_eq(as_snapshot_depth(s), 0);
	/* hint and exclude */
	ck_assert_int_eq(as_snapshot_find_fit(s, p, 1, -1), 1);
	ck_assert_int_eq(as_snapshot_find_fit(s, p, 0, 1), -1);
	/*
	 * Below a limit: with node 1 full and an empty upcoming node 2, a
	 * search from hint 1 finds node 2 first; below limit 2 it wraps around
	 * to node 0 instead (the scale-down simulation's real nodes).
	 */
	as_snapshot_place(s, 1, p);
	as_snapshot_unplace(s, 0, p);
	as_snapshot_add_node(s, a, -1, true);
	ck_assert_int_eq(as_snapshot_find_fit(s, p, 1, -1), 2);
	ck_assert_int_eq(as_snapshot_find_fit_below(s, p, 1, -1, 2), 0);
	ck_assert_int_eq(as_snapshot_find_fit_below(s, p, 1, 0, 2), -1);
	/* a hint past the end starts at 0; a limit past the end is the end */
	ck_assert_int_eq(as_snapshot_find_fit_below(s, p, 5, 0, 99), 2);
	as_pod_free(p);
	as_node_free(a);
	as_node_free(b);
}
END_TEST

/* --- estimator ---------------------------------------------------------- */

static GPtrArray *pods_of(const int64_t (*spec)[2], guint n)
{
	GPtrArray *a = g_ptr_array_new_with_free_func((GDestroyNotify)as_pod_free);

	for (guint i = 0; i < n; i++) {
		g_autofree char *name = g_strdup_printf("p%u", i);

		g_ptr_array_add(a, b_pod(name, spec[i][0], spec[i][1], NULL));
	}
	return a;
}

START_TEST(estimator_ffd)
{
	/* 4 cpu, 4 GiB nodes; sizes in input order 1, 3, 2, 2, 3, 1 (cpu, mem scaled alike). */
	struct as_node *t = b_node("t", 4000, 4096, 110);
	const int64_t spec[][2] = {{1000, 1024}, {3000, 3072}, {2000, 2048},
				   {2000, 2048}, {3000, 3072}, {1000, 1024}};
	g_autoptr(GPtrArray) pods = pods_of(spec, 6);
	struct as_estimate e = {0};

	as_estimate_run(t, NULL, (const struct as_pod *const *)pods->pdata, pods->len,
			100, NULL, NULL, 0, &e);
	/* FFD: 3,3,2,2,1,1 -> [3,1] [3,1] [2,2] = 3 nodes; first-fit in input order would need 4 */
	ck_assert_int_eq(e.nodes, 3);
	ck_assert_int_eq(e.pods->len, 6);
	ck_assert_str_eq(((struct as_pod *)e.pods->pdata[0])->name, "p1"); /* biggest first, stable */
	ck_assert_str_eq(((struct as_pod *)e.pods->pdata[1])->name, "p4");
	ck_assert_str_eq(((struct as_pod *)e.pods->pdata[2])->name, "p2");
	ck_assert_str_eq(((struct as_pod *)e.pods->pdata[4])->name, "p0");
	ck_assert_int_eq(g_array_index(e.pod_node, int, 4), 0); /* p0 joins the first node */
	ck_assert_int_eq(g_array_index(e.pod_node, int, 5), 1);
	ck_assert(!e.capped);
	ck_assert(fabs(as_estimate_score(pods->pdata[1], t) - 1.5) < 1e-12);
	as_estimate_clear(&e);
	as_node_free(t);
}
END_TEST

START_TEST(estimator_caps_and_stop)
{
	struct as_node *t = b_node("t", 4000, 4096, 2);
	const int64_t spec[][2] = {{1000, 100}, {1000, 100}, {1000, 100}, {1000, 100},
				   {1000, 100}, {9000, 100}};
	g_autoptr(GPtrArray) pods = pods_of(spec, 6);
	struct as_estimate e = {0};

	/* pod count 2 per node: 5 small pods need 3 nodes; the 9-cpu pod never fits: skipped */
	as_estimate_run(t, NULL, (const struct as_pod *const *)pods->pdata, pods->len,
			100, NULL, NULL, 0, &e);
	ck_assert_int_eq(e.nodes, 3);
	ck_assert_int_eq(e.pods->len, 5);
	ck_assert(!e.capped);
	as_estimate_clear(&e);
	/* capped at 2 nodes: 4 pods placed, the estimate says so */
	as_estimate_run(t, NULL, (const struct as_pod *const *)pods->pdata, pods->len,
			2, NULL, NULL, 0, &e);
	ck_assert_int_eq(e.nodes, 2);
	ck_assert_int_eq(e.pods->len, 4);
	ck_assert(e.capped);
	as_estimate_clear(&e);
	/* a node selector the template lacks: nothing */
	for (guint i = 0; i < pods->len; i++)
		as_kvs_add(&((struct as_pod *)pods->pdata[i])->node_selector, "pool", "x");
	as_estimate_run(t, NULL, (const struct as_pod *const *)pods->pdata, pods->len,
			100, NULL, NULL, 0, &e);
	ck_assert_int_eq(e.nodes, 0);
	as_estimate_clear(&e);
	as_node_free(t);
}
END_TEST

START_TEST(estimator_base)
{
	/* 4 cpu, 3 pod slots; each new node already runs a 1-cpu, 1 GiB DaemonSet pod. */
	struct as_node *t = b_node("t", 4000, 4096, 3);
	const struct as_resources ds = {1000, 1024 * MIB, 0, 1};
	const int64_t spec[][2] = {{2000, 100}, {2000, 100}, {4000, 100}, {1000, 100}};
	g_autoptr(GPtrArray) pods = pods_of(spec, 4);
	struct as_estimate e = {0};

	/* Empty nodes: [4] [2,2] [1]; with the DaemonSet: the 4-cpu pod fits none, [2,1] [2] */
	as_estimate_run(t, NULL, (const struct as_pod *const *)pods->pdata, pods->len,
			100, NULL, NULL, 0, &e);
	ck_assert_int_eq(e.nodes, 3);
	ck_assert_int_eq(e.pods->len, 4);
	as_estimate_clear(&e);
	as_estimate_run(t, &ds, (const struct as_pod *const *)pods->pdata, pods->len,
			100, NULL, NULL, 0, &e);
	ck_assert_int_eq(e.nodes, 2);
	ck_assert_int_eq(e.pods->len, 3);
	ck_assert_int_eq(g_array_index(e.pod_node, int, 0), 0);
	ck_assert_int_eq(g_array_index(e.pod_node, int, 1), 1);
	ck_assert_int_eq(g_array_index(e.pod_node, int, 2), 0);
	as_estimate_clear(&e);
	/* The DaemonSet pods count against the pod slots too: one slot left per node. */
	const struct as_resources two = {0, 0, 0, 2};
	as_estimate_run(t, &two, (const struct as_pod *const *)pods->pdata, pods->len,
			100, NULL, NULL, 0, &e);
	ck_assert_int_eq(e.nodes, 4);
	as_estimate_clear(&e);
	as_node_free(t);
}
END_TEST

static int64_t fake_clock(void *data)
{
	int64_t *t = data;

	return *t += 1000; /* a second per call */
}

START_TEST(estimator_time_cap)
{
	struct as_node *t = b_node("t", 1000, 1024, 110);
	g_autoptr(GPtrArray) pods = g_ptr_array_new_with_free_func((GDestroyNotify)as_pod_free);
	struct as_estimate e = {0};
	int64_t now = 0;

	for (int i = 0; i < 500; i++)
		g_ptr_array_add(pods, b_pod("p", 1000, 1, NULL));
	as_estimate_run(t, NULL, (const struct as_pod *const *)pods->pdata, pods->len,
			1000, fake_clock, &now, 1500, &e);
	ck_assert(e.capped);
	ck_assert_int_eq(e.nodes, 127); /* checked every 64 pods: stops at the second check */
	as_estimate_clear(&e);
	as_node_free(t);
}
END_TEST

/* --- expanders ---------------------------------------------------------- */

struct opts_fixture {
	struct as_node_group g[3];
	struct as_node *t[3];
	GPtrArray *pods;
	struct as_scale_option o[3];
};

static void fixture(struct opts_fixture *f)
{
	/* a: 2 x (4 cpu, 8 GiB) for 3 pods; b: 1 x (8 cpu, 16 GiB) for 3 pods; c: 1 x (4, 8) for 2 */
	static const char *ids[] = {"small-a", "big-b", "small-c"};
	const int64_t cpu[] = {4000, 8000, 4000}, mem[] = {8192, 16384, 8192};
	const int nodes[] = {2, 1, 1};
	const guint np[] = {3, 3, 2};

	memset(f, 0, sizeof(*f));
	f->pods = g_ptr_array_new_with_free_func((GDestroyNotify)as_pod_free);
	for (int i = 0; i < 3; i++)
		g_ptr_array_add(f->pods, b_pod("p", 2000, 4096, NULL));
	for (int i = 0; i < 3; i++) {
		f->t[i] = b_node(ids[i], cpu[i], mem[i], 110);
		f->g[i].id = (char *)ids[i];
		f->g[i].template_node = f->t[i];
		f->o[i] = (struct as_scale_option){&f->g[i], nodes[i],
						   (const struct as_pod *const *)f->pods->pdata, np[i]};
	}
}

static void fixture_free(struct opts_fixture *f)
{
	for (int i = 0; i < 3; i++)
		as_node_free(f->t[i]);
	g_ptr_array_unref(f->pods);
}

static guint choose(const char *expander, struct opts_fixture *f, guint n, const char *prio)
{
	struct as_options o;
	g_autofree char *msg = NULL;
	g_autoptr(GRand) r = g_rand_new_with_seed(1);
	guint k;

	as_options_init(&o);
	ck_assert_int_eq(as_options_set(&o, "expander", expander, &msg), 0);
	if (prio)
		ck_assert_int_eq(as_options_set(&o, "priorities", prio, &msg), 0);
	k = as_expander_choose(&o, f->o, n, 10, r);
	as_options_clear(&o);
	return k;
}

START_TEST(least_waste_score)
{
	struct opts_fixture f;

	fixture(&f);
	/* a: cpu (8-6)/8 = .25, mem (16-12)/16 = .25 -> .5; b: (8-6)/8 + (16-12)/16 = .5;
	 * c: (4-4)/4 + (8-8)/8 = 0 */
	ck_assert(as_expander_waste_score(&f.o[0]) == 0.5);
	ck_assert(as_expander_waste_score(&f.o[1]) == 0.5);
	ck_assert(as_expander_waste_score(&f.o[2]) == 0.0);
	ck_assert_int_eq(choose("least-waste", &f, 3, NULL), 2);
	/* a and b tie exactly: the chain's next filter decides */
	ck_assert_int_eq(choose("least-waste,least-nodes", &f, 2, NULL), 1);
	/* a tie left at the end goes to random: both are reachable over seeds */
	{
		struct as_options o;
		bool seen[2] = {false, false};

		as_options_init(&o);
		for (guint32 seed = 0; seed < 64; seed++) {
			g_autoptr(GRand) r = g_rand_new_with_seed(seed);

			seen[as_expander_choose(&o, f.o, 2, 10, r)] = true;
		}
		ck_assert(seen[0] && seen[1]);
		as_options_clear(&o);
	}
	fixture_free(&f);
}
END_TEST

START_TEST(most_pods_least_nodes)
{
	struct opts_fixture f;

	fixture(&f);
	/* most-pods: a and b tie at 3, c has 2 */
	ck_assert_int_ne(choose("most-pods", &f, 3, NULL), 2);
	ck_assert_int_eq(choose("most-pods,least-nodes", &f, 3, NULL), 1);
	/* least-nodes: b and c tie at 1; then most-pods picks b */
	ck_assert_int_eq(choose("least-nodes,most-pods", &f, 3, NULL), 1);
	ck_assert_int_eq(choose("least-nodes,least-waste", &f, 3, NULL), 2);
	fixture_free(&f);
}
END_TEST

START_TEST(random_is_seeded)
{
	struct opts_fixture f;
	struct as_options o;
	guint first;

	fixture(&f);
	as_options_init(&o);
	o.expanders[0] = AS_EXPANDER_RANDOM;
	for (int i = 0; i < 5; i++) {
		g_autoptr(GRand) r = g_rand_new_with_seed(42);
		guint k = as_expander_choose(&o, f.o, 3, 10, r);

		if (i == 0)
			first = k;
		ck_assert_uint_eq(k, first);
	}
	as_options_clear(&o);
	fixture_free(&f);
}
END_TEST

START_TEST(priority)
{
	struct opts_fixture f;

	fixture(&f);
	ck_assert_int_eq(choose("priority", &f, 3, "10:^small-;50:^big-"), 1);
	ck_assert_int_eq(choose("priority", &f, 3, "10:^big-;50:-c$"), 2);
	/* two groups share the top priority: the chain goes on */
	ck_assert_int_eq(choose("priority,least-waste", &f, 3, "50:^small-;10:.*"), 2);
	ck_assert_int_eq(choose("priority,least-nodes", &f, 3, "50:^small-;10:.*"), 2);
	/* the highest matching rule of a group counts */
	ck_assert_int_eq(choose("priority", &f, 3, "1:.*;60:^small-a$;50:^big"), 0);
	fixture_free(&f);
}
END_TEST

START_TEST(price)
{
	struct opts_fixture f;
	double sa, sb;

	fixture(&f);
	f.g[0].price = 1.0; /* 2 nodes: 2.0 */
	f.g[1].price = 1.5; /* 1 node: 1.5 */
	f.g[2].price = 0.2;
	sa = as_expander_price_score(&f.o[0], 10);
	sb = as_expander_price_score(&f.o[1], 10);
	ck_assert(sa > 0 && sb > 0);
	/* same pods, so the node price decides between a and b at equal fitness */
	f.t[1]->capacity.cpu = 4000;
	ck_assert(as_expander_price_score(&f.o[1], 10) < as_expander_price_score(&f.o[0], 10));
	ck_assert_int_eq(choose("price", &f, 2, NULL), 1);
	f.g[1].price = 3.0;
	ck_assert_int_eq(choose("price", &f, 2, NULL), 0);
	fixture_free(&f);
}
END_TEST

/* The fit search as it was before the snapshot's max tree: every node in scan order. */
static int scan_fit(struct as_snapshot *s, const struct as_pod *p, guint hint, int exclude,
		    guint limit)
{
	guint n = MIN(limit, as_snapshot_n_nodes(s));

	if (hint >= n)
		hint = 0;
	for (guint k = 0; k < n; k++) {
		guint i = (hint + k) % n;

		if ((int)i != exclude && as_snapshot_fits(s, p, i) == AS_FIT_OK)
			return (int)i;
	}
	return -1;
}

/*
 * Differential: random places, unplaces, removals, added nodes, forks,
 * reverts and commits, and after each step the search (max tree) must
 * return what a scan of every node returns, for pods of several sizes,
 * from every hint, with and without an excluded node and a limit.  Some
 * nodes carry a taint only some pods tolerate, so that resources can fit
 * where the predicates do not.
 */
START_TEST(snapshot_search_matches_scan)
{
	g_autoptr(GPtrArray) nodes = g_ptr_array_new_with_free_func((GDestroyNotify)as_node_free);
	g_autoptr(GPtrArray) pods = g_ptr_array_new_with_free_func((GDestroyNotify)as_pod_free);
	g_autoptr(as_snapshot) s = as_snapshot_new();
	g_autoptr(GRand) rnd = g_rand_new_with_seed(7);
	guint found = 0, none = 0;

	for (guint i = 0; i < 40; i++) {
		g_autofree char *name = g_strdup_printf("n%u", i);
		struct as_node *n = b_node(name, 1000 * g_rand_int_range(rnd, 1, 9),
					   1024 * g_rand_int_range(rnd, 1, 9), g_rand_int_range(rnd, 1, 6));

		n->allocatable.gpu = n->capacity.gpu = g_rand_int_range(rnd, 0, 3);
		if (i % 7 == 3)
			b_taint(n, "dedicated", "x", AS_EFFECT_NO_SCHEDULE);
		g_ptr_array_add(nodes, n);
	}
	for (guint k = 0; k < 12; k++) {
		g_autofree char *name = g_strdup_printf("p%u", k);
		struct as_pod *p = b_pod(name, 250 * g_rand_int_range(rnd, 1, 17),
					 256 * g_rand_int_range(rnd, 1, 17), NULL);

		p->requests.gpu = k % 4 == 0 ? 1 : 0;
		if (k % 3 == 0)
			b_tol(p, "dedicated", "x", false, AS_EFFECT_NO_SCHEDULE);
		g_ptr_array_add(pods, p);
	}
	for (guint i = 0; i < 25; i++)
		as_snapshot_add_node(s, nodes->pdata[i], -1, false);
	for (guint step = 0; step < 3000; step++) {
		guint nn = as_snapshot_n_nodes(s);
		const struct as_pod *p = pods->pdata[g_rand_int_range(rnd, 0, (gint32)pods->len)];
		guint idx = (guint)g_rand_int_range(rnd, 0, (gint32)nn);
		int op = g_rand_int_range(rnd, 0, 100);

		if (op < 45) {
			int i = scan_fit(s, p, idx, -1, nn);

			if (i >= 0)
				as_snapshot_place(s, (guint)i, p);
		} else if (op < 70) {
			const struct as_resources *u = &as_snapshot_node(s, idx)->used;

			if (u->pods > 0 && u->cpu >= p->requests.cpu && u->mem >= p->requests.mem &&
			    u->gpu >= p->requests.gpu)
				as_snapshot_unplace(s, idx, p);
		} else if (op < 77) {
			as_snapshot_remove_node(s, idx);
		} else if (op < 82 && nn < nodes->len) {
			as_snapshot_add_node(s, nodes->pdata[nn], -1, true);
		} else if (op < 90 && as_snapshot_depth(s) < 4) {
			as_snapshot_fork(s);
		} else if (op < 96 && as_snapshot_depth(s) > 0) {
			as_snapshot_revert(s);
		} else if (as_snapshot_depth(s) > 0) {
			as_snapshot_commit(s);
		}
		nn = as_snapshot_n_nodes(s);
		for (guint k = 0; k < pods->len; k++) {
			const struct as_pod *q = pods->pdata[k];
			guint hint = (guint)g_rand_int_range(rnd, 0, (gint32)nn + 2);
			int ex = g_rand_int_range(rnd, -1, (gint32)nn);
			guint limit = (guint)g_rand_int_range(rnd, 0, (gint32)nn + 2);

			int want = scan_fit(s, q, hint, -1, nn);

			ck_assert_int_eq(as_snapshot_find_fit(s, q, hint, -1), want);
			ck_assert_int_eq(as_snapshot_find_fit(s, q, hint, ex), scan_fit(s, q, hint, ex, nn));
			ck_assert_int_eq(as_snapshot_find_fit_below(s, q, hint, ex, limit),
					 scan_fit(s, q, hint, ex, limit));
			if (want >= 0)
				found++;
			else
				none++;
		}
	}
	/* Both outcomes were exercised, not only one. */
	ck_assert_uint_gt(found, 3000);
	ck_assert_uint_gt(none, 3000);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("as-sched");
	TCase *tc = tcase_create("sched");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, resources);
	tcase_add_test(tc, selectors);
	tcase_add_test(tc, taints);
	tcase_add_test(tc, daemonset_matches);
	tcase_add_test(tc, snapshot_fork_revert);
	tcase_add_test(tc, snapshot_search_matches_scan);
	tcase_add_test(tc, estimator_ffd);
	tcase_add_test(tc, estimator_caps_and_stop);
	tcase_add_test(tc, estimator_base);
	tcase_add_test(tc, estimator_time_cap);
	tcase_add_test(tc, least_waste_score);
	tcase_add_test(tc, most_pods_least_nodes);
	tcase_add_test(tc, random_is_seeded);
	tcase_add_test(tc, priority);
	tcase_add_test(tc, price);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
