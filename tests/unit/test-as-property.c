// SPDX-License-Identifier: Apache-2.0
/*
 * Property tests of RunOnce over seeded random clusters (groups with
 * templates, labelled and tainted nodes, pods of every drain-rule kind,
 * PDBs, pending pods with selectors and tolerations).  Whatever the
 * cluster, the decision must be safe:
 *   - no removed node holds a pod that a drain rule blocks, and PDB budgets
 *     hold over all removed nodes together;
 *   - every pod that must move has a destination that is not removed, and
 *     no destination ends up over capacity or against a predicate
 *     (counting its pods, pending pods placed on it and moved pods);
 *   - groups stay within [min, max], max-nodes-total holds;
 *   - a scale-up's pods really fit the new nodes they were assigned to;
 *   - every pending pod is accounted for (helped, placed, or a reason), and
 *     every node is removed or has a reason;
 *   - the same seed gives the same decision.
 */
#include "config.h"

#include <check.h>

#include "as-build.h"
#include "cluster-json.h"
#include "drain.h"
#include "predicates.h"

#define NOW (1000LL * 3600 * 1000)
#define SEEDS 300

static const char *const zones[] = {"a", "b", "c"};

static struct as_node *rand_template(GRand *r, int g)
{
	static const int64_t cpus[] = {2000, 4000, 8000, 16000};
	g_autofree char *name = g_strdup_printf("tmpl-%d", g);
	struct as_node *t = b_node(name, cpus[g_rand_int_range(r, 0, 4)],
				   1024 * g_rand_int_range(r, 2, 33), g_rand_int_range(r, 4, 30));

	as_kvs_add(&t->labels, "zone", zones[g_rand_int_range(r, 0, 3)]);
	if (g_rand_int_range(r, 0, 4) == 0) {
		b_taint(t, "dedicated", "batch", AS_EFFECT_NO_SCHEDULE);
	}
	if (g_rand_int_range(r, 0, 5) == 0)
		t->capacity.gpu = t->allocatable.gpu = g_rand_int_range(r, 1, 5);
	return t;
}

static void rand_pod_attrs(GRand *r, struct as_pod *p, struct as_cluster *c)
{
	int k = g_rand_int_range(r, 0, 20);

	if (k == 0)
		g_clear_pointer(&p->owner_kind, g_free);
	else if (k == 1) {
		g_free(p->ns);
		p->ns = g_strdup("kube-system");
		as_pod_set_key(p);
	} else if (k == 2)
		as_kvs_add(&p->annotations, AS_ANN_SAFE_TO_EVICT, "false");
	else if (k == 3)
		b_volume(p, "data", AS_VOLUME_HOST_PATH);
	else if (k == 4)
		as_kvs_add(&p->annotations, AS_ANN_SAFE_TO_EVICT, "true");
	else if (k == 5) {
		g_free(p->owner_kind);
		p->owner_kind = g_strdup("DaemonSet");
	}
	if (g_rand_int_range(r, 0, 3) == 0)
		as_kvs_add(&p->labels, "app", g_rand_boolean(r) ? "web" : "db");
	if (g_rand_int_range(r, 0, 6) == 0)
		as_kvs_add(&p->node_selector, "zone", zones[g_rand_int_range(r, 0, 3)]);
	if (g_rand_int_range(r, 0, 4) == 0)
		b_tol(p, "dedicated", "batch", false, AS_EFFECT_NO_SCHEDULE);
	p->priority = g_rand_int_range(r, -20, 100);
	(void)c;
}

static struct as_cluster *rand_cluster(guint32 seed, struct as_options *o)
{
	g_autoptr(GRand) r = g_rand_new_with_seed(seed);
	struct as_cluster *c = as_cluster_new();
	int ng = g_rand_int_range(r, 1, 5), nn = g_rand_int_range(r, 0, 30);
	int np = g_rand_int_range(r, 0, 25);

	as_options_init(o);
	o->seed = seed;
	o->max_drain_parallelism = g_rand_int_range(r, 1, 4);
	o->max_scale_down_parallelism = g_rand_int_range(r, 1, 10);
	o->scale_down_utilization_threshold = g_rand_double_range(r, 0.2, 0.9);
	if (g_rand_int_range(r, 0, 4) == 0)
		o->max_nodes_total = g_rand_int_range(r, nn, nn + 5);
	o->expanders[0] = (enum as_expander)g_rand_int_range(r, 0, 5);
	o->balance_similar_node_groups = g_rand_boolean(r);
	for (int g = 0; g < ng; g++) {
		g_autofree char *id = g_strdup_printf("g%d", g);
		struct as_node *t = rand_template(r, g);

		/* half the groups share group 0's shape, in another zone: balancing material */
		if (g > 0 && g_rand_boolean(r)) {
			const struct as_node *t0 = ((struct as_node_group *)c->groups->pdata[0])->template_node;

			as_node_free(t);
			t = as_node_copy(t0, "shape-0");
			t->name[0] = 'S';
			g_free(t->labels.v[0].value);
			t->labels.v[0].value = g_strdup(zones[g_rand_int_range(r, 0, 3)]);
		}
		int mn = g_rand_int_range(r, 0, 3);

		b_group(c, id, mn, mn + g_rand_int_range(r, 0, 12), t);
		as_node_free(t);
	}
	for (int i = 0; i < nn; i++) {
		int g = g_rand_int_range(r, -1, ng);
		g_autofree char *name = g_strdup_printf("n%d", i);
		struct as_node *n;

		if (g >= 0) {
			struct as_node_group *grp = c->groups->pdata[g];

			if (grp->target_size >= grp->max_size)
				g = -1;
		}
		if (g >= 0) {
			n = as_node_copy(((struct as_node_group *)c->groups->pdata[g])->template_node, name);
			n->creation_time = 0;
			b_add(c, c->groups->pdata[g], n);
		} else {
			n = b_add(c, NULL, b_node(name, 4000, 8192, 20));
			as_kvs_add(&n->labels, "zone", zones[g_rand_int_range(r, 0, 3)]);
		}
		if (g_rand_int_range(r, 0, 15) == 0)
			n->ready = false;
		if (g_rand_int_range(r, 0, 15) == 0)
			as_kvs_add(&n->annotations, AS_ANN_SCALE_DOWN_DISABLED, "true");
		as_cluster_set_unneeded_since(c, name, g_rand_boolean(r) ? 0 : NOW - 60000);
		/* fill it up to a random level */
		struct as_resources used = {0, 0, 0, 0};
		int target = g_rand_int_range(r, 0, 100);
		for (int k = 0; k < 12; k++) {
			g_autofree char *pn = g_strdup_printf("n%d-p%d", i, k);
			struct as_pod *p = b_pod(pn, 100 * g_rand_int_range(r, 1, 20),
						 128 * g_rand_int_range(r, 1, 16), name);

			if (used.cpu + p->requests.cpu > n->allocatable.cpu * target / 100 ||
			    used.mem + p->requests.mem > n->allocatable.mem ||
			    used.pods + 1 > n->allocatable.pods) {
				as_pod_free(p);
				break;
			}
			used.cpu += p->requests.cpu;
			used.mem += p->requests.mem;
			used.pods++;
			rand_pod_attrs(r, p, c);
			b_add_pod(c, p);
		}
	}
	for (int i = 0; i < np; i++) {
		g_autofree char *pn = g_strdup_printf("pending-%d", i);
		struct as_pod *p = b_pod(pn, 250 * g_rand_int_range(r, 1, 24), 256 * g_rand_int_range(r, 1, 40),
					 NULL);

		rand_pod_attrs(r, p, c);
		if (g_rand_int_range(r, 0, 6) == 0)
			p->requests.gpu = 1;
		b_add_pod(c, p);
	}
	for (int i = 0; i < 2; i++) {
		struct as_pdb *pdb = as_pdb_new();

		pdb->ns = g_strdup(g_rand_boolean(r) ? "default" : "kube-system");
		pdb->name = g_strdup_printf("pdb%d", i);
		pdb->has_selector = true;
		as_kvs_add(&pdb->match_labels, "app", i ? "web" : "db");
		pdb->disruptions_allowed = g_rand_int_range(r, 0, 3);
		g_ptr_array_add(c->pdbs, pdb);
	}
	return c;
}

static struct as_node *find_node(struct as_cluster *c, const char *name)
{
	for (guint i = 0; i < c->nodes->len; i++)
		if (strcmp(((struct as_node *)c->nodes->pdata[i])->name, name) == 0)
			return c->nodes->pdata[i];
	return NULL;
}

static struct as_pod *find_pod(struct as_cluster *c, const char *key)
{
	for (guint i = 0; i < c->pods->len; i++)
		if (strcmp(((struct as_pod *)c->pods->pdata[i])->key, key) == 0)
			return c->pods->pdata[i];
	return NULL;
}

static int group_of(struct as_cluster *c, const char *node)
{
	for (guint g = 0; g < c->groups->len; g++) {
		struct as_node_group *grp = c->groups->pdata[g];

		for (guint k = 0; k < grp->n_instances; k++)
			if (strcmp(grp->instances[k].id, node) == 0)
				return (int)g;
	}
	return -1;
}

static void add_res(GHashTable *load, const char *node, const struct as_pod *p)
{
	struct as_resources *u = g_hash_table_lookup(load, node);

	if (!u) {
		u = g_new0(struct as_resources, 1);
		g_hash_table_insert(load, g_strdup(node), u);
	}
	u->cpu += p->requests.cpu;
	u->mem += p->requests.mem;
	u->gpu += p->requests.gpu;
	u->pods++;
}

static void check_seed(guint32 seed)
{
	struct as_options o;
	struct as_cluster *c = rand_cluster(seed, &o);
	struct as_decision *d = b_run(c, &o, NOW), *d2 = b_run(c, &o, NOW);
	g_autoptr(GHashTable) removed = g_hash_table_new(g_str_hash, g_str_equal);
	g_autoptr(GHashTable) load = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	g_autofree int *removed_in = g_new0(int, c->groups->len);
	g_autofree int *pdb_used = g_new0(int, c->pdbs->len);
	g_autofree char *j1 = as_decision_to_json(d), *j2 = as_decision_to_json(d2);
	guint pending = 0;

	ck_assert_msg(strcmp(j1, j2) == 0, "seed %u: not deterministic", seed);
	{
		g_autofree char *bad = NULL;

		ck_assert_msg(as_decision_check(c, d, &bad) == 0, "seed %u: %s", seed, bad);
	}
	for (guint i = 0; i < d->scale_down_nodes->len; i++) {
		const char *name = d->scale_down_nodes->pdata[i];
		int g = group_of(c, name);

		g_hash_table_add(removed, (gpointer)name);
		ck_assert_msg(g >= 0, "seed %u: removed %s is not autoscaled", seed, name);
		removed_in[g]++;
	}
	/* the load each surviving node ends with */
	for (guint k = 0; k < c->pods->len; k++) {
		struct as_pod *p = c->pods->pdata[k];
		const char *dest;

		if (p->node_name) {
			if (!g_hash_table_contains(removed, p->node_name)) {
				add_res(load, p->node_name, p);
				continue;
			}
			struct as_drain dr = as_drain_check(p, &o, c->pdbs, NULL, NOW);
			if (p->priority < o.expendable_pods_priority_cutoff)
				continue; /* expendable: goes with the node */
			ck_assert_msg(dr.kind != AS_DRAIN_BLOCK || dr.reason == AS_BLOCK_PDB,
				      "seed %u: %s removed with blocking pod %s (%s)", seed, p->node_name,
				      p->key, as_block_reason_name(dr.reason));
			if (dr.kind != AS_DRAIN_MOVE)
				continue;
			for (guint b = 0; b < c->pdbs->len; b++)
				if (as_pdb_matches(c->pdbs->pdata[b], p))
					pdb_used[b]++;
			dest = kvs_get(&d->moves, p->key);
			ck_assert_msg(dest, "seed %u: %s on removed %s has no destination", seed, p->key,
				      p->node_name);
			ck_assert_msg(!g_hash_table_contains(removed, dest), "seed %u: %s moved to removed %s",
				      seed, p->key, dest);
			ck_assert_int_eq(as_pod_matches_node(p, find_node(c, dest)), AS_FIT_OK);
			add_res(load, dest, p);
			continue;
		}
		if (!p->unschedulable)
			continue;
		pending++;
		dest = kvs_get(&d->schedulable, p->key);
		ck_assert_msg(dest || kvs_get(&d->unhelped, p->key), "seed %u: pending %s unaccounted",
			      seed, p->key);
		if (dest && !g_str_has_prefix(dest, "new:") && !g_str_has_prefix(dest, "upcoming:")) {
			ck_assert_msg(!g_hash_table_contains(removed, dest),
				      "seed %u: pending %s placed on removed %s", seed, p->key, dest);
			ck_assert_int_eq(as_pod_matches_node(p, find_node(c, dest)), AS_FIT_OK);
			add_res(load, dest, p);
		}
	}
	for (guint b = 0; b < c->pdbs->len; b++)
		ck_assert_msg(pdb_used[b] <= ((struct as_pdb *)c->pdbs->pdata[b])->disruptions_allowed,
			      "seed %u: PDB %u over budget", seed, b);
	{
		GHashTableIter it;
		gpointer k, v;

		g_hash_table_iter_init(&it, load);
		while (g_hash_table_iter_next(&it, &k, &v)) {
			struct as_node *n = find_node(c, k);
			struct as_resources *u = v;

			if (!as_node_is_ready(n))
				continue; /* pods already there on an unready node are not ours to judge */
			ck_assert_msg(u->cpu <= n->allocatable.cpu && u->mem <= n->allocatable.mem &&
					      u->pods <= n->allocatable.pods && u->gpu <= n->allocatable.gpu,
				      "seed %u: %s over capacity", seed, (char *)k);
		}
	}
	for (guint g = 0; g < c->groups->len; g++) {
		struct as_node_group *grp = c->groups->pdata[g];
		int target = g_array_index(d->groups, struct as_group_state, g).target_size;

		ck_assert_msg(target <= MAX(grp->max_size, grp->target_size), "seed %u: %s above max", seed,
			      grp->id);
		/* a group may start below min (nodes lost); it must not be taken there */
		ck_assert_msg(removed_in[g] == 0 || target >= grp->min_size, "seed %u: %s below min", seed,
			      grp->id);
	}
	if (o.max_nodes_total > 0 && d->scale_up_group)
		ck_assert_int_le((int64_t)c->nodes->len + d->scale_up_delta, o.max_nodes_total);
	if (d->scale_up_group) {
		/* "new:GROUP:K" -> what the pods placed there request */
		g_autoptr(GHashTable) bins = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
		int split = 0;

		for (guint k = 0; k < d->scale_up_pods->len; k++) {
			struct as_pod *p = find_pod(c, d->scale_up_pods->pdata[k]);
			const char *dest = kvs_get(&d->schedulable, p->key);
			g_auto(GStrv) parts = g_strsplit(dest, ":", 3);
			struct as_node_group *grp = NULL;
			struct as_resources *u;

			ck_assert_uint_eq(g_strv_length(parts), 3);
			ck_assert_str_eq(parts[0], "new");
			for (guint g = 0; g < c->groups->len; g++)
				if (strcmp(((struct as_node_group *)c->groups->pdata[g])->id, parts[1]) == 0)
					grp = c->groups->pdata[g];
			ck_assert_ptr_nonnull(grp);
			u = g_hash_table_lookup(bins, dest);
			if (!u) {
				u = g_new0(struct as_resources, 1);
				g_hash_table_insert(bins, g_strdup(dest), u);
			}
			ck_assert_msg(as_pod_fits_resources(p, &grp->template_node->allocatable, u) == AS_FIT_OK,
				      "seed %u: %s does not fit %s", seed, p->key, dest);
			ck_assert_int_eq(as_pod_matches_node(p, grp->template_node), AS_FIT_OK);
			u->cpu += p->requests.cpu;
			u->mem += p->requests.mem;
			u->gpu += p->requests.gpu;
			u->pods++;
		}
		/* every new node holds a pod */
		ck_assert_int_eq(g_hash_table_size(bins), d->scale_up_delta);
		for (guint i = 0; i < d->scale_up_split->len; i++)
			split += g_array_index(d->scale_up_split, struct as_group_delta, i).delta;
		ck_assert(d->scale_up_split->len == 0 || split == d->scale_up_delta);
	}
	for (guint i = 0; i < c->nodes->len; i++) {
		const char *name = ((struct as_node *)c->nodes->pdata[i])->name;

		ck_assert_msg(g_hash_table_contains(removed, name) || kvs_get(&d->unremovable, name),
			      "seed %u: node %s neither removed nor explained", seed, name);
	}
	(void)pending;
	/* Without node reasons (the simulator's way) the decision is the same otherwise. */
	{
		const struct as_run_env env = {.no_node_reasons = true};
		struct as_decision *d3 = NULL;
		g_autofree char *msg = NULL, *jd = NULL, *j3 = NULL;

		ck_assert_int_eq(as_run_once(c, &o, NOW, &env, &d3, &msg), 0);
		ck_assert_uint_eq(d3->unremovable.n, 0);
		as_kvs_clear(&d->unremovable);
		jd = as_decision_to_json(d);
		j3 = as_decision_to_json(d3);
		ck_assert_msg(strcmp(jd, j3) == 0, "seed %u: no_node_reasons changed the decision", seed);
		as_decision_free(d3);
	}
	as_decision_free(d);
	as_decision_free(d2);
	as_cluster_free(c);
	as_options_clear(&o);
}

START_TEST(random_clusters)
{
	for (guint32 seed = 1; seed <= SEEDS; seed++)
		check_seed(seed);
}
END_TEST

START_TEST(decisions_do_something)
{
	/* The properties are vacuous if nothing ever happens: count actions. */
	int ups = 0, downs = 0, moves = 0, splits = 0;

	for (guint32 seed = 1; seed <= SEEDS; seed++) {
		struct as_options o;
		struct as_cluster *c = rand_cluster(seed, &o);
		struct as_decision *d = b_run(c, &o, NOW);

		ups += d->scale_up_group != NULL;
		downs += d->scale_down_nodes->len > 0;
		moves += (int)d->moves.n;
		splits += d->scale_up_split->len > 1;
		as_decision_free(d);
		as_cluster_free(c);
		as_options_clear(&o);
	}
	ck_assert_msg(ups > SEEDS / 10 && downs > SEEDS / 10 && moves > SEEDS / 10 && splits > 0,
		      "ups %d downs %d moves %d balanced splits %d", ups, downs, moves, splits);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("as-property");
	TCase *tc = tcase_create("property");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, random_clusters);
	tcase_add_test(tc, decisions_do_something);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
