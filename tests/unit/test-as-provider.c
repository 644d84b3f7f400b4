// SPDX-License-Identifier: Apache-2.0
/*
 * The cloud-provider interface (autoscale/core/provider.h) through its
 * in-memory implementation: size checks a real provider makes, and
 * several RunOnce loops in a row with each decision carried out through
 * the provider and its state fed into the next loop, the way the daemon
 * and the simulator will drive the core.  The decision's own idea of each
 * group's target must agree with the provider's after every loop.
 */
#include "config.h"

#include <check.h>
#include <errno.h>

#include "as-build.h"
#include "provider.h"

#define MIN_MS (60 * 1000LL)
#define T0 (1714564800000LL)

START_TEST(mem_provider_checks)
{
	g_autoptr(as_cluster) c = as_cluster_new();
	struct as_node *t = b_node("t", 4000, 8192, 110);
	struct as_node_group *g = b_group(c, "g", 1, 3, t);
	struct as_node *n1 = b_add(c, g, b_node("n1", 4000, 8192, 110));
	struct as_node *stranger = b_node("x", 1, 1, 1);
	struct as_cloud_provider *p;
	struct as_node_group_if **gs, *gi, *found;
	struct as_instance *inst;
	const struct as_node *tn, *one[] = {n1};
	guint n;
	int target;
	double price;
	bool has;

	g->price = 0;
	p = as_mem_provider_new(c, T0);
	ck_assert_str_eq(p->ops->name(p), "memory");
	ck_assert_uint_eq(p->ops->node_groups(p, &gs), 1);
	gi = gs[0];
	ck_assert_str_eq(gi->ops->id(gi), "g");
	ck_assert_int_eq(gi->ops->min_size(gi), 1);
	ck_assert_int_eq(gi->ops->max_size(gi), 3);
	ck_assert_int_eq(gi->ops->target_size(gi, &target), 0);
	ck_assert_int_eq(target, 1);
	ck_assert_int_eq(gi->ops->template_node_info(gi, &tn), 0);
	ck_assert_int_eq(tn->allocatable.cpu, 4000);
	ck_assert_int_eq(p->ops->node_price(p, gi, &price), -ENOTSUP);
	ck_assert_int_eq(p->ops->node_group_for_node(p, n1, &found), 0);
	ck_assert_ptr_eq(found, gi);
	ck_assert_int_eq(p->ops->has_instance(p, stranger, &has), 0);
	ck_assert(!has);

	ck_assert_int_eq(gi->ops->increase_size(gi, 3), -EINVAL); /* 1 + 3 > max 3 */
	ck_assert_int_eq(gi->ops->increase_size(gi, 0), -EINVAL);
	ck_assert_int_eq(gi->ops->increase_size(gi, 2), 0);
	ck_assert_int_eq(gi->ops->nodes(gi, &inst, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(inst[2].id, "g-new-1");
	ck_assert_int_eq(inst[2].state, AS_INSTANCE_CREATING);
	ck_assert_int_eq(inst[2].since, T0);
	as_instances_free(inst, n);
	ck_assert_int_eq(gi->ops->decrease_target_size(gi, -3), -EINVAL); /* only 2 creating */
	ck_assert_int_eq(gi->ops->decrease_target_size(gi, 1), -EINVAL);
	ck_assert_int_eq(gi->ops->decrease_target_size(gi, -1), 0);
	const struct as_node *stranger1[] = {stranger};
	ck_assert_int_eq(gi->ops->delete_nodes(gi, stranger1, 1), -ENOENT);
	ck_assert_int_eq(gi->ops->delete_nodes(gi, one, 1), 0);
	ck_assert_int_eq(gi->ops->target_size(gi, &target), 0);
	ck_assert_int_eq(target, 1);
	ck_assert_int_eq(gi->ops->delete_nodes(gi, one, 1), -EINVAL); /* min size 1 */
	p->ops->cleanup(p);
	as_node_free(stranger);
	as_node_free(t);
}
END_TEST

/* One loop: decide, carry out, check the provider agrees, feed the state back. */
static struct as_decision *loop(struct as_cluster *c, struct as_options *o, int64_t now)
{
	struct as_decision *d = b_run(c, o, now);
	struct as_cloud_provider *p = as_mem_provider_new(c, now);
	g_autofree char *msg = NULL;

	ck_assert_msg(as_decision_apply(d, c, p, &msg) == 0, "apply: %s", msg);
	for (guint g = 0; g < d->groups->len; g++) {
		const struct as_group_state *gs = &g_array_index(d->groups, struct as_group_state, g);
		struct as_node_group_if *gi = as_mem_provider_group(p, gs->id);
		int target;

		ck_assert_int_eq(gi->ops->target_size(gi, &target), 0);
		ck_assert_msg(target == gs->target_size, "group %s: provider %d, decision %d", gs->id,
			      target, gs->target_size);
	}
	as_mem_provider_export(p, c);
	as_cluster_carry_state(c, d);
	p->ops->cleanup(p);
	return d;
}

static void register_nodes(struct as_cluster *c, const char *group)
{
	struct as_node_group *g = NULL;

	for (guint i = 0; i < c->groups->len; i++)
		if (strcmp(((struct as_node_group *)c->groups->pdata[i])->id, group) == 0)
			g = c->groups->pdata[i];
	for (guint k = 0; k < g->n_instances; k++) {
		struct as_node *n = as_node_copy(g->template_node, g->instances[k].id);

		g_free(n->provider_id);
		n->provider_id = g_strdup(g->instances[k].id);
		n->creation_time = T0;
		g_ptr_array_add(c->nodes, n);
	}
}

START_TEST(loops_up_then_down)
{
	g_autoptr(as_cluster) c = as_cluster_new();
	struct as_options o;
	struct as_node *t = b_node("t", 4000, 8192, 110);
	struct as_decision *d;

	as_options_init(&o);
	b_group(c, "g", 0, 10, t);
	for (int i = 0; i < 3; i++) {
		g_autofree char *name = g_strdup_printf("job-%d", i);

		b_add_pod(c, b_pod(name, 3000, 1024, NULL));
	}
	/* loop 1: three new nodes */
	d = loop(c, &o, T0);
	ck_assert_int_eq(d->scale_up_delta, 3);
	as_decision_free(d);
	/* loop 2, a minute later: the nodes are on their way, nothing more is asked */
	d = loop(c, &o, T0 + MIN_MS);
	ck_assert_ptr_null(d->scale_up_group);
	ck_assert_int_eq(d->upcoming, 3);
	ck_assert_str_eq(kvs_get(&d->schedulable, "default/job-0"), "upcoming:g");
	as_decision_free(d);
	/* they register and the pods run there */
	register_nodes(c, "g");
	for (guint k = 0; k < c->pods->len; k++) {
		struct as_pod *p = c->pods->pdata[k];

		p->unschedulable = false;
		p->node_name = g_strdup(((struct as_node *)c->nodes->pdata[k])->name);
	}
	d = loop(c, &o, T0 + 2 * MIN_MS);
	ck_assert_int_eq(d->ready, 3);
	ck_assert_int_eq(d->upcoming, 0);
	ck_assert_int_eq(g_array_index(d->groups, struct as_group_state, 0).scale_up_time, AS_TIME_NEVER);
	ck_assert_uint_eq(d->unneeded->len, 0);
	as_decision_free(d);
	/* the jobs finish: the nodes are empty, unneeded from now */
	g_ptr_array_set_size(c->pods, 0);
	d = loop(c, &o, T0 + 5 * MIN_MS);
	ck_assert_uint_eq(d->unneeded->len, 3);
	ck_assert_uint_eq(d->scale_down_nodes->len, 0);
	as_decision_free(d);
	/* exactly 10 minutes later they are not unneeded long enough yet (CA's Before) */
	d = loop(c, &o, T0 + 15 * MIN_MS);
	ck_assert_uint_eq(d->scale_down_nodes->len, 0);
	as_decision_free(d);
	/* a loop later they go, all three at once (empty) */
	d = loop(c, &o, T0 + 15 * MIN_MS + 10000);
	ck_assert_uint_eq(d->scale_down_nodes->len, 3);
	ck_assert_int_eq(g_array_index(d->groups, struct as_group_state, 0).target_size, 0);
	ck_assert_int_eq(((struct as_node_group *)c->groups->pdata[0])->n_instances, 0);
	as_decision_free(d);
	as_node_free(t);
	as_options_clear(&o);
}
END_TEST

START_TEST(loops_nodes_never_come)
{
	g_autoptr(as_cluster) c = as_cluster_new();
	struct as_options o;
	struct as_node *t = b_node("t", 4000, 8192, 110);
	struct as_decision *d;
	const struct as_group_state *gs;

	as_options_init(&o);
	b_group(c, "g", 0, 10, t);
	b_group(c, "h", 0, 10, t)->price = 9; /* the fallback */
	b_add_pod(c, b_pod("job", 3000, 1024, NULL));
	o.expanders[0] = AS_EXPANDER_PRICE;
	d = loop(c, &o, T0);
	ck_assert_str_eq(d->scale_up_group, "g"); /* no price: costs what its pods cost */
	as_decision_free(d);
	d = loop(c, &o, T0 + 10 * MIN_MS);
	ck_assert_ptr_null(d->scale_up_group);
	as_decision_free(d);
	/* 16 minutes: the instance never registered; it is deleted, g backs off, h is asked */
	d = loop(c, &o, T0 + 16 * MIN_MS);
	gs = &g_array_index(d->groups, struct as_group_state, 0);
	ck_assert_uint_eq(d->delete_instances->len, 1);
	ck_assert_int_eq(gs->backoff_until, T0 + 21 * MIN_MS);
	ck_assert_str_eq(d->scale_up_group, "h");
	as_decision_free(d);
	as_node_free(t);
	as_options_clear(&o);
}
END_TEST

START_TEST(loops_balanced)
{
	g_autoptr(as_cluster) c = as_cluster_new();
	struct as_options o;
	struct as_node *t = b_node("t", 4000, 8192, 110);
	struct as_decision *d;

	as_options_init(&o);
	o.balance_similar_node_groups = true;
	b_group(c, "east", 0, 10, t);
	b_group(c, "west", 0, 10, t);
	for (int i = 0; i < 4; i++) {
		g_autofree char *name = g_strdup_printf("job-%d", i);

		b_add_pod(c, b_pod(name, 3000, 1024, NULL));
	}
	d = loop(c, &o, T0); /* checks each provider target against the decision */
	ck_assert_int_eq(d->scale_up_delta, 4);
	ck_assert_uint_eq(d->scale_up_split->len, 2);
	ck_assert_int_eq(((struct as_node_group *)c->groups->pdata[0])->target_size, 2);
	ck_assert_int_eq(((struct as_node_group *)c->groups->pdata[1])->target_size, 2);
	as_decision_free(d);
	as_node_free(t);
	as_options_clear(&o);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("as-provider");
	TCase *tc = tcase_create("provider");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, mem_provider_checks);
	tcase_add_test(tc, loops_up_then_down);
	tcase_add_test(tc, loops_nodes_never_come);
	tcase_add_test(tc, loops_balanced);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
