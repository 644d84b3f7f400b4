// SPDX-License-Identifier: Apache-2.0
/*
 * RunOnce (autoscale/core/autoscaler.c) on small clusters built in C: each
 * drain rule flipped on its own, the scale-down timers, cooldowns, min
 * sizes and parallelism, and on the scale-up side the limits, backoff,
 * upcoming nodes, expendable pods and the health check.  Each test starts
 * from a base cluster where the outcome is known and changes one thing.
 */
#include "config.h"

#include <check.h>

#include "as-build.h"
#include "cluster-json.h"
#include "drain.h"

#define MIN_MS (60 * 1000LL)
#define NOW (1000 * 60 * MIN_MS)

/* @n nodes bad0.. of 1 cpu in @g (NULL: none), registered and not Ready. */
static void add_unready(struct as_cluster *c, struct as_node_group *g, int n)
{
	for (int i = 0; i < n; i++) {
		g_autofree char *name = g_strdup_printf("bad%d", i);

		b_add(c, g, b_node(name, 1000, 1024, 110))->ready = false;
	}
}

/*
 * Scale-down base: n1 (group g, min 0) runs "victim" (500m), unneeded for
 * an hour; n2 (not autoscaled) runs a 1-cpu filler and has room for it.
 * Expected: n1 is removed and victim moves to n2.
 */
struct sd {
	struct as_cluster *c;
	struct as_options o;
	struct as_node *n1, *n2;
	struct as_node_group *g;
	struct as_pod *victim;
};

static void sd_init(struct sd *s)
{
	s->c = as_cluster_new();
	as_options_init(&s->o);
	s->g = b_group(s->c, "g", 0, 10, NULL);
	s->n1 = b_add(s->c, s->g, b_node("n1", 4000, 8192, 110));
	s->n2 = b_add(s->c, NULL, b_node("n2", 4000, 8192, 110));
	s->victim = b_add_pod(s->c, b_pod("victim", 500, 512, "n1"));
	b_add_pod(s->c, b_pod("filler", 1000, 1024, "n2"));
	as_cluster_set_unneeded_since(s->c, "n1", NOW - 60 * MIN_MS);
}

static void sd_free(struct sd *s)
{
	as_cluster_free(s->c);
	as_options_clear(&s->o);
}

/* Run; return n1's reason, or NULL when n1 is removed. */
static char *sd_run(struct sd *s, struct as_decision **out)
{
	struct as_decision *d = b_run(s->c, &s->o, NOW);
	const char *why = kvs_get(&d->unremovable, "n1");
	char *r = why ? g_strdup(why) : NULL;

	if (!why)
		ck_assert_msg(strv_has(d->scale_down_nodes, "n1"), "n1 neither removed nor explained");
	else
		ck_assert(!strv_has(d->scale_down_nodes, "n1"));
	if (out)
		*out = d;
	else
		as_decision_free(d);
	return r;
}

static void expect_removed(struct sd *s)
{
	g_autofree char *why = sd_run(s, NULL);

	ck_assert_msg(!why, "n1 not removed: %s", why);
}

static void expect_reason(struct sd *s, const char *want)
{
	g_autofree char *why = sd_run(s, NULL);

	ck_assert_msg(why, "n1 removed, expected \"%s\"", want);
	ck_assert_msg(strcmp(why, want) == 0, "n1: \"%s\", expected \"%s\"", why, want);
}

START_TEST(base_removes)
{
	struct sd s;
	struct as_decision *d;
	g_autofree char *why = NULL;

	sd_init(&s);
	why = sd_run(&s, &d);
	ck_assert_ptr_null(why);
	ck_assert_uint_eq(d->scale_down_nodes->len, 1);
	ck_assert(strv_has(d->evict_pods, "default/victim"));
	ck_assert_str_eq(kvs_get(&d->moves, "default/victim"), "n2");
	ck_assert_int_eq(g_array_index(d->evict_grace_s, int64_t, 0), 30);
	ck_assert_str_eq(kvs_get(&d->unremovable, "n2"), "NotAutoscaled");
	ck_assert_int_eq(d->last_scale_down_delete, NOW);
	as_decision_free(d);
	sd_free(&s);
}
END_TEST

static void set_owner(struct as_pod *p, const char *kind)
{
	g_free(p->owner_kind);
	p->owner_kind = g_strdup(kind);
}

START_TEST(eviction_grace_capped)
{
	struct sd s;
	struct as_decision *d;
	g_autofree char *why = NULL;

	sd_init(&s);
	s.victim->grace_period_s = 3600;
	why = sd_run(&s, &d);
	ck_assert_ptr_null(why);
	ck_assert_int_eq(g_array_index(d->evict_grace_s, int64_t, 0), 600);
	as_decision_free(d);
	/* 0 is no cap (CA caps only above 0): never a grace of 0, a forced deletion */
	s.o.max_graceful_termination_sec = 0;
	g_free(why);
	why = sd_run(&s, &d);
	ck_assert_ptr_null(why);
	ck_assert_int_eq(g_array_index(d->evict_grace_s, int64_t, 0), 3600);
	as_decision_free(d);
	sd_free(&s);
}
END_TEST

START_TEST(rule1_mirror)
{
	struct sd s;
	struct as_decision *d;
	g_autofree char *why = NULL;

	sd_init(&s);
	set_owner(s.victim, NULL); /* would block as NotReplicated, but mirror comes first */
	g_clear_pointer(&s.victim->owner_kind, g_free);
	as_kvs_add(&s.victim->annotations, AS_ANN_MIRROR, "x");
	why = sd_run(&s, &d);
	ck_assert_ptr_null(why);
	ck_assert(!strv_has(d->evict_pods, "default/victim"));
	as_decision_free(d);
	sd_free(&s);
}
END_TEST

START_TEST(rule2_long_terminating)
{
	struct sd s;

	sd_init(&s);
	g_clear_pointer(&s.victim->owner_kind, g_free);
	s.victim->deletion_time = NOW - 59 * 1000; /* grace 30 s + 30 s not yet over */
	expect_reason(&s, "BlockedByPod: default/victim NotReplicated");
	s.victim->deletion_time = NOW - 61 * 1000;
	expect_removed(&s);
	sd_free(&s);
}
END_TEST

START_TEST(rule3_daemonset)
{
	struct sd s;
	struct as_decision *d;
	g_autofree char *why = NULL;

	sd_init(&s);
	set_owner(s.victim, "DaemonSet");
	why = sd_run(&s, &d);
	ck_assert_ptr_null(why);
	ck_assert(strv_has(d->evict_pods, "default/victim"));
	ck_assert_ptr_null(kvs_get(&d->moves, "default/victim"));
	as_decision_free(d);
	sd_free(&s);
}
END_TEST

START_TEST(rule4_safe_to_evict_true)
{
	struct sd s;

	sd_init(&s);
	g_clear_pointer(&s.victim->owner_kind, g_free);
	expect_reason(&s, "BlockedByPod: default/victim NotReplicated");
	as_kvs_add(&s.victim->annotations, AS_ANN_SAFE_TO_EVICT, "true");
	expect_removed(&s);
	/* also beats kube-system and local storage, which come later */
	g_free(s.victim->ns);
	s.victim->ns = g_strdup("kube-system");
	b_volume(s.victim, "data", AS_VOLUME_HOST_PATH);
	expect_removed(&s);
	sd_free(&s);
}
END_TEST

START_TEST(rule5_terminal)
{
	struct sd s;
	struct as_decision *d;
	g_autofree char *why = NULL;

	sd_init(&s);
	g_clear_pointer(&s.victim->owner_kind, g_free);
	s.victim->phase = AS_PHASE_SUCCEEDED;
	why = sd_run(&s, &d);
	ck_assert_ptr_null(why);
	ck_assert_ptr_null(kvs_get(&d->moves, "default/victim"));
	as_decision_free(d);
	sd_free(&s);
}
END_TEST

START_TEST(rule6_not_replicated)
{
	struct sd s;
	const char *ok[] = {"ReplicaSet", "ReplicationController", "Job", "StatefulSet"};

	sd_init(&s);
	for (size_t i = 0; i < G_N_ELEMENTS(ok); i++) {
		set_owner(s.victim, ok[i]);
		expect_removed(&s);
	}
	set_owner(s.victim, "MyCustomController");
	expect_reason(&s, "BlockedByPod: default/victim NotReplicated");
	g_clear_pointer(&s.victim->owner_kind, g_free);
	expect_reason(&s, "BlockedByPod: default/victim NotReplicated");
	sd_free(&s);
}
END_TEST

static struct as_pdb *add_pdb(struct as_cluster *c, const char *ns, const char *app, int allowed)
{
	struct as_pdb *p = as_pdb_new();

	p->ns = g_strdup(ns);
	p->name = g_strdup("pdb");
	p->has_selector = true;
	as_kvs_add(&p->match_labels, "app", app);
	p->disruptions_allowed = allowed;
	g_ptr_array_add(c->pdbs, p);
	return p;
}

START_TEST(rule7_kube_system)
{
	struct sd s;

	sd_init(&s);
	g_free(s.victim->ns);
	s.victim->ns = g_strdup("kube-system");
	as_pod_set_key(s.victim);
	as_kvs_add(&s.victim->labels, "app", "dns");
	expect_reason(&s, "BlockedByPod: kube-system/victim UnmovableKubeSystemPod");
	s.o.skip_nodes_with_system_pods = false;
	expect_removed(&s);
	s.o.skip_nodes_with_system_pods = true;
	add_pdb(s.c, "default", "dns", 1); /* other namespace: does not count */
	expect_reason(&s, "BlockedByPod: kube-system/victim UnmovableKubeSystemPod");
	add_pdb(s.c, "kube-system", "dns", 1);
	expect_removed(&s);
	sd_free(&s);
}
END_TEST

START_TEST(rule8_safe_to_evict_false)
{
	struct sd s;

	sd_init(&s);
	as_kvs_add(&s.victim->annotations, AS_ANN_SAFE_TO_EVICT, "false");
	expect_reason(&s, "BlockedByPod: default/victim NotSafeToEvictAnnotation");
	sd_free(&s);
}
END_TEST

START_TEST(rule9_local_storage)
{
	struct sd s;

	sd_init(&s);
	b_volume(s.victim, "cache", AS_VOLUME_EMPTY_DIR_MEMORY);
	b_volume(s.victim, "config", AS_VOLUME_OTHER);
	expect_removed(&s);
	b_volume(s.victim, "scratch", AS_VOLUME_EMPTY_DIR);
	expect_reason(&s, "BlockedByPod: default/victim LocalStorageRequested");
	as_kvs_add(&s.victim->annotations, AS_ANN_SAFE_TO_EVICT_LOCAL_VOLUMES, "scratch");
	expect_removed(&s);
	b_volume(s.victim, "host", AS_VOLUME_HOST_PATH);
	expect_reason(&s, "BlockedByPod: default/victim LocalStorageRequested");
	s.o.skip_nodes_with_local_storage = false;
	expect_removed(&s);
	sd_free(&s);
}
END_TEST

START_TEST(rule10_pdb)
{
	struct sd s;
	struct as_pdb *p;

	sd_init(&s);
	as_kvs_add(&s.victim->labels, "app", "web");
	p = add_pdb(s.c, "default", "web", 0);
	expect_reason(&s, "BlockedByPod: default/victim NotEnoughPdb");
	p->disruptions_allowed = 1;
	expect_removed(&s);
	/* a PDB that selects other pods does not matter */
	p->disruptions_allowed = 0;
	g_free(p->match_labels.v[0].value);
	p->match_labels.v[0].value = g_strdup("db");
	expect_removed(&s);
	sd_free(&s);
}
END_TEST

START_TEST(drain_order_direct)
{
	/* kube-system + safe-to-evict false + hostPath + PDB 0: rule 7 reports first */
	struct as_options o;
	struct as_pod *p = b_pod("x", 1, 1, "n");
	g_autoptr(GPtrArray) pdbs = g_ptr_array_new_with_free_func((GDestroyNotify)as_pdb_free);
	struct as_cluster *c = as_cluster_new();
	struct as_drain d;

	as_options_init(&o);
	g_free(p->ns);
	p->ns = g_strdup("kube-system");
	as_kvs_add(&p->annotations, AS_ANN_SAFE_TO_EVICT, "false");
	b_volume(p, "h", AS_VOLUME_HOST_PATH);
	d = as_drain_check(p, &o, pdbs, NULL, NOW);
	ck_assert_int_eq(d.rule, 7);
	o.skip_nodes_with_system_pods = false;
	d = as_drain_check(p, &o, pdbs, NULL, NOW);
	ck_assert_int_eq(d.rule, 8);
	as_kvs_clear(&p->annotations);
	d = as_drain_check(p, &o, pdbs, NULL, NOW);
	ck_assert_int_eq(d.rule, 9);
	ck_assert_str_eq(as_block_reason_name(d.reason), "LocalStorageRequested");
	o.skip_nodes_with_local_storage = false;
	as_kvs_add(&p->labels, "app", "a");
	g_ptr_array_add(pdbs, add_pdb(c, "kube-system", "a", 0));
	g_ptr_array_steal_index(c->pdbs, 0);
	d = as_drain_check(p, &o, pdbs, NULL, NOW);
	ck_assert_int_eq(d.rule, 10);
	int32_t left[] = {1};
	d = as_drain_check(p, &o, pdbs, left, NOW);
	ck_assert_int_eq(d.kind, AS_DRAIN_MOVE);
	as_pod_free(p);
	as_cluster_free(c);
	as_options_clear(&o);
}
END_TEST

START_TEST(pdb_budget_across_nodes)
{
	/* Two removable nodes whose pods share a PDB allowing one disruption. */
	struct sd s;
	struct as_node *n3;
	struct as_pod *v2;
	struct as_decision *d;

	sd_init(&s);
	n3 = b_add(s.c, s.g, b_node("n3", 4000, 8192, 110));
	v2 = b_add_pod(s.c, b_pod("victim2", 500, 512, "n3"));
	as_kvs_add(&s.victim->labels, "app", "web");
	as_kvs_add(&v2->labels, "app", "web");
	as_cluster_set_unneeded_since(s.c, "n3", NOW - 60 * MIN_MS);
	add_pdb(s.c, "default", "web", 1);
	s.o.max_drain_parallelism = 5;
	d = b_run(s.c, &s.o, NOW);
	ck_assert_uint_eq(d->scale_down_nodes->len, 1);
	ck_assert_str_eq(kvs_get(&d->unremovable, "n3"), "BlockedByPod: default/victim2 NotEnoughPdb");
	as_decision_free(d);
	(void)n3;
	sd_free(&s);
}
END_TEST

START_TEST(expendable_pods_go_with_the_node)
{
	struct sd s;
	struct as_decision *d;
	g_autofree char *why = NULL;

	sd_init(&s);
	g_clear_pointer(&s.victim->owner_kind, g_free); /* would block as NotReplicated */
	s.victim->requests.cpu = 3500; /* and has nowhere to go */
	s.o.scale_down_utilization_threshold = 0.9;
	expect_reason(&s, "BlockedByPod: default/victim NotReplicated");
	s.victim->priority = -11; /* below the cutoff -10 */
	why = sd_run(&s, &d);
	ck_assert_ptr_null(why);
	ck_assert(!strv_has(d->evict_pods, "default/victim"));
	ck_assert_ptr_null(kvs_get(&d->moves, "default/victim"));
	as_decision_free(d);
	sd_free(&s);
}
END_TEST

START_TEST(scale_down_disabled_annotation)
{
	struct sd s;

	sd_init(&s);
	as_kvs_add(&s.n1->annotations, AS_ANN_SCALE_DOWN_DISABLED, "false");
	expect_removed(&s);
	as_kvs_clear(&s.n1->annotations);
	as_kvs_add(&s.n1->annotations, AS_ANN_SCALE_DOWN_DISABLED, "true");
	expect_reason(&s, "ScaleDownDisabledAnnotation");
	sd_free(&s);
}
END_TEST

START_TEST(no_place_to_move)
{
	struct sd s;

	sd_init(&s);
	s.victim->requests.cpu = 3500; /* n2 has 3000m free */
	s.o.scale_down_utilization_threshold = 0.9;
	expect_reason(&s, "NoPlaceToMovePods: default/victim");
	s.victim->requests.cpu = 3000;
	expect_removed(&s);
	/* a node selector only n1 satisfies */
	as_kvs_add(&s.n1->labels, "disk", "ssd");
	as_kvs_add(&s.victim->node_selector, "disk", "ssd");
	expect_reason(&s, "NoPlaceToMovePods: default/victim");
	sd_free(&s);
}
END_TEST

START_TEST(utilization_threshold)
{
	struct sd s;

	sd_init(&s);
	s.victim->requests.cpu = 1999; /* below 0.5: underutilized */
	expect_removed(&s);
	s.victim->requests.cpu = 2000; /* exactly 0.5: not (CA: utilization >= threshold keeps it) */
	expect_reason(&s, "NotUnderutilized: utilization 0.500 not below threshold 0.5");
	s.victim->requests.cpu = 100;
	s.victim->requests.mem = 5000 * MIB; /* memory decides: max of the two */
	expect_reason(&s, "NotUnderutilized: utilization 0.610 not below threshold 0.5");
	sd_free(&s);
}
END_TEST

/*
 * A pod deleted more than its grace period + 30 s ago (CA's
 * drain.IsPodLongTerminating) is left out of its node's utilization, as
 * CA's utilization.CalculateUtilizationOfResource does.
 */
START_TEST(utilization_without_long_terminating)
{
	struct sd s;
	struct as_pod *stuck;

	sd_init(&s);
	stuck = b_add_pod(s.c, b_pod("stuck", 3000, 1024, "n1"));
	stuck->deletion_time = NOW - 59 * 1000; /* grace 30 s + 30 s not yet over */
	expect_reason(&s, "NotUnderutilized: utilization 0.875 not below threshold 0.5");
	stuck->deletion_time = NOW - 61 * 1000; /* 0.125: the victim alone */
	expect_removed(&s);
	stuck->grace_period_s = 600;
	expect_reason(&s, "NotUnderutilized: utilization 0.875 not below threshold 0.5");
	/* the same when the sum is taken pod by pod */
	stuck->grace_period_s = 30;
	s.o.ignore_daemonsets_utilization = true;
	expect_removed(&s);
	sd_free(&s);
}
END_TEST

/*
 * With --ignore-daemonsets-utilization, a DaemonSet pod's requests leave
 * the node's allocatable as well as the sum (CA's
 * CalculateUtilizationOfResource): 1700 of 4000 - 1000, not of 4000.
 */
START_TEST(utilization_without_daemonsets)
{
	struct sd s;
	struct as_pod *ds;

	sd_init(&s);
	ds = b_add_pod(s.c, b_pod("ds", 1000, 256, "n1"));
	set_owner(ds, "DaemonSet");
	b_add_pod(s.c, b_pod("app", 1200, 256, "n1"));
	s.o.ignore_daemonsets_utilization = true;
	expect_reason(&s, "NotUnderutilized: utilization 0.567 not below threshold 0.5");
	/* counted, it is 0.675 of the whole node */
	s.o.ignore_daemonsets_utilization = false;
	expect_reason(&s, "NotUnderutilized: utilization 0.675 not below threshold 0.5");
	/* the same for mirror pods, and the node empty of anything else is 0 */
	sd_free(&s);
	sd_init(&s);
	ds = b_add_pod(s.c, b_pod("static", 4000, 256, "n1"));
	as_kvs_set(&ds->annotations, AS_ANN_MIRROR, "x");
	g_ptr_array_remove(s.c->pods, s.victim);
	s.o.ignore_mirror_pods_utilization = true;
	expect_removed(&s);
	sd_free(&s);
}
END_TEST

START_TEST(unneeded_timer)
{
	struct sd s;
	struct as_decision *d;
	g_autofree char *w1 = NULL, *w2 = NULL, *w3 = NULL;

	sd_init(&s);
	g_hash_table_remove_all(s.c->unneeded_since);
	w1 = sd_run(&s, &d);
	ck_assert_str_eq(w1, "NotUnneededLongEnough");
	ck_assert_uint_eq(d->unneeded->len, 1);
	ck_assert_int_eq(g_array_index(d->unneeded, struct as_unneeded, 0).since, NOW);
	as_decision_free(d);
	/* 9m59s later still not long enough, and the start time is kept */
	as_cluster_set_unneeded_since(s.c, "n1", NOW - 10 * MIN_MS + 1000);
	w2 = sd_run(&s, &d);
	ck_assert_str_eq(w2, "NotUnneededLongEnough");
	ck_assert_int_eq(g_array_index(d->unneeded, struct as_unneeded, 0).since, NOW - 10 * MIN_MS + 1000);
	as_decision_free(d);
	/*
	 * Exactly 10m is not yet enough: CA removes a node only once
	 * since + scale-down-unneeded-time is before now (strictly).
	 */
	as_cluster_set_unneeded_since(s.c, "n1", NOW - 10 * MIN_MS);
	expect_reason(&s, "NotUnneededLongEnough");
	as_cluster_set_unneeded_since(s.c, "n1", NOW - 10 * MIN_MS - 1);
	expect_removed(&s);
	/* with an unneeded time of 0 a node goes in the loop that finds it unneeded (CA 1.3x) */
	g_hash_table_remove_all(s.c->unneeded_since);
	s.o.scale_down_unneeded_time = 0;
	expect_removed(&s);
	s.o.scale_down_unneeded_time = 10 * MIN_MS;
	as_cluster_set_unneeded_since(s.c, "n1", NOW - 10 * MIN_MS - 1);
	/* the node becomes busy: the timer resets (dropped from the output) */
	s.victim->requests.cpu = 3000;
	w3 = sd_run(&s, &d);
	ck_assert_ptr_nonnull(w3);
	ck_assert_uint_eq(d->unneeded->len, 0);
	as_decision_free(d);
	/* a custom unneeded time */
	s.victim->requests.cpu = 500;
	s.o.scale_down_unneeded_time = 2 * 3600 * 1000;
	expect_reason(&s, "NotUnneededLongEnough");
	sd_free(&s);
}
END_TEST

/*
 * A ClusterUnhealthy loop decides nothing and, as CA's
 * scaleDownPlanner.CleanUpUnneededNodes(), forgets the unneeded nodes:
 * a node is removed only after being seen unneeded continuously, and in
 * an unhealthy loop nobody looked.
 */
START_TEST(unhealthy_resets_unneeded_timers)
{
	struct sd s;
	struct as_decision *d;

	sd_init(&s);
	add_unready(s.c, NULL, 4);
	d = b_run(s.c, &s.o, NOW);
	ck_assert_str_eq(d->status, "ClusterUnhealthy");
	ck_assert_uint_eq(d->scale_down_nodes->len, 0);
	ck_assert_uint_eq(d->unneeded->len, 0);
	as_cluster_carry_state(s.c, d);
	as_decision_free(d);
	/* healthy again 10 s later: n1's timer starts over */
	for (int i = 0; i < 4; i++)
		((struct as_node *)s.c->nodes->pdata[2 + i])->ready = true;
	d = b_run(s.c, &s.o, NOW + 10000);
	ck_assert_str_eq(d->status, "ok");
	ck_assert_str_eq(kvs_get(&d->unremovable, "n1"), "NotUnneededLongEnough");
	ck_assert_uint_eq(d->unneeded->len, 1);
	ck_assert_int_eq(g_array_index(d->unneeded, struct as_unneeded, 0).since, NOW + 10000);
	as_decision_free(d);
	sd_free(&s);
}
END_TEST

START_TEST(unready_time)
{
	struct sd s;

	sd_init(&s);
	s.n1->ready = false; /* created at 0: long past startup time */
	as_cluster_set_unneeded_since(s.c, "n1", NOW - 15 * MIN_MS);
	expect_reason(&s, "NotUnreadyLongEnough");
	as_cluster_set_unneeded_since(s.c, "n1", NOW - 20 * MIN_MS);
	expect_reason(&s, "NotUnreadyLongEnough"); /* exactly 20m: not yet, as in CA */
	as_cluster_set_unneeded_since(s.c, "n1", NOW - 20 * MIN_MS - 1);
	expect_removed(&s);
	sd_free(&s);
}
END_TEST

START_TEST(cooldowns)
{
	struct sd s;

	sd_init(&s);
	s.c->last_scale_up = NOW - 9 * MIN_MS;
	expect_reason(&s, "ScaleDownInCooldown: scale-down-delay-after-add");
	s.c->last_scale_up = NOW - 10 * MIN_MS;
	expect_removed(&s);
	s.o.scale_down_delay_after_delete = 5 * MIN_MS;
	s.c->last_scale_down_delete = NOW - 4 * MIN_MS;
	expect_reason(&s, "ScaleDownInCooldown: scale-down-delay-after-delete");
	s.c->last_scale_down_delete = NOW - 5 * MIN_MS;
	expect_removed(&s);
	s.c->last_scale_down_failure = NOW - 2 * MIN_MS;
	expect_reason(&s, "ScaleDownInCooldown: scale-down-delay-after-failure");
	s.c->last_scale_down_failure = NOW - 3 * MIN_MS;
	expect_removed(&s);
	s.o.scale_down_enabled = false;
	{
		struct as_decision *d = b_run(s.c, &s.o, NOW);

		ck_assert_uint_eq(d->scale_down_nodes->len, 0);
		ck_assert_str_eq(d->scale_down_status, "ScaleDownDisabled");
		as_decision_free(d);
	}
	sd_free(&s);
}
END_TEST

START_TEST(cooldown_after_scale_up_in_same_loop)
{
	struct sd s;
	struct as_node *t = b_node("t", 4000, 8192, 110);

	sd_init(&s);
	s.g->template_node = as_node_copy(t, "t");
	b_add_pod(s.c, b_pod("pending", 3900, 100, NULL));
	expect_reason(&s, "ScaleDownInCooldown: scaled up in this loop");
	as_node_free(t);
	sd_free(&s);
}
END_TEST

START_TEST(min_size)
{
	struct sd s;

	sd_init(&s);
	s.g->min_size = 1;
	expect_reason(&s, "NodeGroupMinSizeReached: g at min size 1");
	sd_free(&s);
}
END_TEST

START_TEST(cores_min)
{
	struct sd s;

	sd_init(&s);
	s.o.cores_min = 5; /* 8 cores in the cluster, removing n1 leaves 4 */
	expect_reason(&s, "MinimalResourceLimitExceeded");
	s.o.cores_min = 4;
	expect_removed(&s);
	sd_free(&s);
}
END_TEST

/*
 * --gpu-total's MIN holds in scale-down as --cores-total's does (CA keeps
 * every resource limit, GPUs too); a node without GPUs takes none away.
 */
START_TEST(gpu_min)
{
	struct sd s;

	sd_init(&s);
	s.n1->capacity.gpu = s.n1->allocatable.gpu = 1;
	s.n2->capacity.gpu = s.n2->allocatable.gpu = 1;
	s.o.gpu_min = 2; /* 2 GPUs in the cluster, removing n1 leaves 1 */
	expect_reason(&s, "MinimalResourceLimitExceeded");
	s.o.gpu_min = 1;
	expect_removed(&s);
	/* below the minimum already, but n1 has no GPU: its removal changes nothing */
	s.n1->capacity.gpu = s.n1->allocatable.gpu = 0;
	s.o.gpu_min = 5;
	expect_removed(&s);
	sd_free(&s);
}
END_TEST

START_TEST(parallelism_and_empty_first)
{
	struct as_cluster *c = as_cluster_new();
	struct as_options o;
	struct as_node_group *g = b_group(c, "g", 0, 10, NULL);
	struct as_decision *d;

	as_options_init(&o);
	/* busy0/busy1 have a pod each; e0..e2 are empty; big has room for all */
	b_add(c, g, b_node("busy0", 4000, 8192, 110));
	b_add(c, g, b_node("busy1", 4000, 8192, 110));
	for (int i = 0; i < 3; i++) {
		g_autofree char *n = g_strdup_printf("e%d", i);

		b_add(c, g, b_node(n, 4000, 8192, 110));
	}
	b_add(c, NULL, b_node("big", 64000, 65536, 110));
	b_add_pod(c, b_pod("p0", 100, 100, "busy0"));
	b_add_pod(c, b_pod("p1", 100, 100, "busy1"));
	b_add_pod(c, b_pod("anchor", 40000, 100, "big"));
	for (guint i = 0; i < c->nodes->len; i++)
		as_cluster_set_unneeded_since(c, ((struct as_node *)c->nodes->pdata[i])->name, 0);
	d = b_run(c, &o, NOW);
	/* all three empty nodes, then one drained node (max-drain-parallelism 1) */
	ck_assert_uint_eq(d->scale_down_nodes->len, 4);
	ck_assert_str_eq(d->scale_down_nodes->pdata[0], "e0");
	ck_assert_str_eq(d->scale_down_nodes->pdata[3], "busy0");
	ck_assert_str_eq(kvs_get(&d->unremovable, "busy1"), "MaxDrainParallelismReached");
	as_decision_free(d);
	o.max_scale_down_parallelism = 2;
	d = b_run(c, &o, NOW);
	ck_assert_uint_eq(d->scale_down_nodes->len, 2);
	ck_assert_str_eq(kvs_get(&d->unremovable, "e2"), "MaxScaleDownParallelismReached");
	ck_assert_str_eq(kvs_get(&d->unremovable, "busy0"), "MaxScaleDownParallelismReached");
	as_decision_free(d);
	/* min size 3 of 5: two go */
	o.max_scale_down_parallelism = 10;
	g->min_size = 3;
	d = b_run(c, &o, NOW);
	ck_assert_uint_eq(d->scale_down_nodes->len, 2);
	ck_assert_str_eq(kvs_get(&d->unremovable, "e2"), "NodeGroupMinSizeReached: g at min size 3");
	as_decision_free(d);
	as_options_clear(&o);
	as_cluster_free(c);
}
END_TEST

/* --- scale-up ------------------------------------------------------------ */

/* Group g (template 4 cpu / 8 GiB, max 10), no nodes, three 3-cpu pending pods. */
struct su {
	struct as_cluster *c;
	struct as_options o;
	struct as_node_group *g;
	struct as_node *t;
};

static void su_init(struct su *s, int n_pods)
{
	s->c = as_cluster_new();
	as_options_init(&s->o);
	s->t = b_node("t", 4000, 8192, 110);
	s->g = b_group(s->c, "g", 0, 10, s->t);
	for (int i = 0; i < n_pods; i++) {
		g_autofree char *n = g_strdup_printf("p%d", i);

		b_add_pod(s->c, b_pod(n, 3000, 1024, NULL));
	}
}

static void su_free(struct su *s)
{
	as_node_free(s->t);
	as_cluster_free(s->c);
	as_options_clear(&s->o);
}

static int su_delta(struct su *s, struct as_decision **out)
{
	struct as_decision *d = b_run(s->c, &s->o, NOW);
	int delta = d->scale_up_group ? d->scale_up_delta : 0;

	if (out)
		*out = d;
	else
		as_decision_free(d);
	return delta;
}

START_TEST(scale_up_base)
{
	struct su s;
	struct as_decision *d;

	su_init(&s, 3);
	ck_assert_int_eq(su_delta(&s, &d), 3);
	ck_assert_str_eq(d->scale_up_group, "g");
	ck_assert_uint_eq(d->scale_up_pods->len, 3);
	ck_assert_uint_eq(d->unhelped.n, 0);
	ck_assert_int_eq(d->last_scale_up, NOW);
	ck_assert_int_eq(g_array_index(d->groups, struct as_group_state, 0).target_size, 3);
	ck_assert_int_eq(g_array_index(d->groups, struct as_group_state, 0).scale_up_time, NOW);
	as_decision_free(d);
	su_free(&s);
}
END_TEST

START_TEST(limits)
{
	struct su s;
	struct as_decision *d;

	su_init(&s, 3);
	s.o.max_nodes_per_scaleup = 2;
	ck_assert_int_eq(su_delta(&s, &d), 2);
	ck_assert_str_eq(kvs_get(&d->unhelped, "default/p2"),
			 "no group fits: g: scale-up capped by max-nodes-per-scaleup (2 nodes)");
	as_decision_free(d);
	s.o.max_nodes_per_scaleup = 1000;
	s.o.cores_max = 9; /* 4-core nodes: two fit under 9 */
	ck_assert_int_eq(su_delta(&s, NULL), 2);
	s.o.cores_max = 3;
	ck_assert_int_eq(su_delta(&s, &d), 0);
	ck_assert_str_eq(kvs_get(&d->unhelped, "default/p0"), "no group fits: g: cores-total max 3 reached");
	as_decision_free(d);
	s.o.cores_max = 320000;
	s.o.memory_max = 16; /* 8 GiB nodes */
	ck_assert_int_eq(su_delta(&s, NULL), 2);
	s.o.memory_max = 6400000;
	s.g->max_size = 1;
	ck_assert_int_eq(su_delta(&s, NULL), 1);
	s.g->max_size = 0;
	ck_assert_int_eq(su_delta(&s, &d), 0);
	ck_assert_str_eq(kvs_get(&d->unhelped, "default/p0"), "no group fits: g: max size 0 reached");
	as_decision_free(d);
	su_free(&s);
}
END_TEST

START_TEST(max_nodes_total)
{
	struct su s;
	struct as_decision *d;

	su_init(&s, 3);
	b_add(s.c, NULL, b_node("x1", 1000, 1024, 110));
	b_add(s.c, NULL, b_node("x2", 1000, 1024, 110));
	s.o.max_nodes_total = 3;
	ck_assert_int_eq(su_delta(&s, NULL), 1);
	s.o.max_nodes_total = 2;
	ck_assert_int_eq(su_delta(&s, &d), 0);
	ck_assert_str_eq(kvs_get(&d->unhelped, "default/p1"), "max-nodes-total 2 reached");
	as_decision_free(d);
	su_free(&s);
}
END_TEST

START_TEST(upcoming_nodes)
{
	struct su s;
	struct as_decision *d;

	su_init(&s, 1);
	s.g->target_size = 1; /* requested a minute ago, not registered yet */
	s.g->scale_up_time = NOW - MIN_MS;
	ck_assert_int_eq(su_delta(&s, &d), 0);
	ck_assert_int_eq(d->upcoming, 1);
	ck_assert_str_eq(kvs_get(&d->schedulable, "default/p0"), "upcoming:g");
	as_decision_free(d);
	su_free(&s);
}
END_TEST

START_TEST(backoff)
{
	struct su s;
	struct as_decision *d;
	const struct as_group_state *gs;

	su_init(&s, 1);
	/* 2 nodes requested 20 minutes ago, none came: back off 5m, give the 2 back */
	s.g->target_size = 2;
	s.g->scale_up_time = NOW - 20 * MIN_MS;
	ck_assert_int_eq(su_delta(&s, &d), 0);
	gs = &g_array_index(d->groups, struct as_group_state, 0);
	ck_assert_int_eq(gs->decrease_target, 2);
	ck_assert_int_eq(gs->target_size, 0);
	ck_assert_int_eq(gs->backoff_until, NOW + 5 * MIN_MS);
	ck_assert_str_eq(kvs_get(&d->unhelped, "default/p0"),
			 "no group fits: g: backed off after a failed scale-up");
	as_decision_free(d);
	/* the next loop, still backed off */
	s.g->target_size = 0;
	s.g->scale_up_time = AS_TIME_NEVER;
	s.g->backoff_until = NOW + 4 * MIN_MS;
	s.g->backoff_duration = 5 * MIN_MS;
	s.g->last_failure = NOW - MIN_MS;
	ck_assert_int_eq(su_delta(&s, NULL), 0);
	/* backoff over: scale up again */
	s.g->backoff_until = NOW - 1;
	ck_assert_int_eq(su_delta(&s, NULL), 1);
	/* a second failure soon after doubles the backoff */
	s.g->target_size = 1;
	s.g->scale_up_time = NOW - 16 * MIN_MS;
	su_delta(&s, &d);
	ck_assert_int_eq(g_array_index(d->groups, struct as_group_state, 0).backoff_duration, 10 * MIN_MS);
	as_decision_free(d);
	/* ... up to the max */
	s.g->backoff_duration = 20 * MIN_MS;
	su_delta(&s, &d);
	ck_assert_int_eq(g_array_index(d->groups, struct as_group_state, 0).backoff_duration, 30 * MIN_MS);
	as_decision_free(d);
	/* after the reset timeout it starts over */
	s.g->last_failure = NOW - 4 * 60 * MIN_MS;
	su_delta(&s, &d);
	ck_assert_int_eq(g_array_index(d->groups, struct as_group_state, 0).backoff_duration, 5 * MIN_MS);
	as_decision_free(d);
	su_free(&s);
}
END_TEST

/*
 * CA's exponentialBackoff.Backoff (utils/backoff/exponential_backoff.go):
 * a failure while the group is still backed off (several scale-ups
 * failing at once) keeps the duration, restarted from now; only one after
 * the backoff is over doubles it.
 */
START_TEST(backoff_while_backed_off_keeps_duration)
{
	struct su s;
	struct as_decision *d;
	const struct as_group_state *gs;
	struct as_options o;
	int64_t dur = 10 * MIN_MS, until = NOW + 2 * MIN_MS, last = NOW - 8 * MIN_MS;

	/* a scale-up asked for before the backoff times out while it lasts */
	su_init(&s, 1);
	s.g->target_size = 1;
	s.g->scale_up_time = NOW - 16 * MIN_MS;
	s.g->backoff_duration = 10 * MIN_MS;
	s.g->backoff_until = NOW + 2 * MIN_MS;
	s.g->last_failure = NOW - 8 * MIN_MS;
	ck_assert_int_eq(su_delta(&s, &d), 0);
	gs = &g_array_index(d->groups, struct as_group_state, 0);
	ck_assert_int_eq(gs->backoff_duration, 10 * MIN_MS);
	ck_assert_int_eq(gs->backoff_until, NOW + 10 * MIN_MS);
	ck_assert_int_eq(gs->last_failure, NOW);
	as_decision_free(d);
	su_free(&s);

	as_options_init(&o);
	as_group_backoff(&o, NOW, &dur, &until, &last);
	ck_assert_int_eq(dur, 10 * MIN_MS);
	ck_assert_int_eq(until, NOW + 10 * MIN_MS);
	/* at the very end of the backoff it still holds (CA: until not before now) */
	as_group_backoff(&o, NOW + 10 * MIN_MS, &dur, &until, &last);
	ck_assert_int_eq(dur, 10 * MIN_MS);
	/* after it, the next failure doubles */
	as_group_backoff(&o, NOW + 21 * MIN_MS, &dur, &until, &last);
	ck_assert_int_eq(dur, 20 * MIN_MS);
	ck_assert_int_eq(until, NOW + 41 * MIN_MS);
	/*
	 * A failure exactly the reset timeout (3h) after the last still
	 * doubles: CA forgets a group's backoff only once last failure +
	 * reset timeout is before now (RemoveStaleBackoffData).
	 */
	as_group_backoff(&o, NOW + 21 * MIN_MS + 3 * 60 * MIN_MS, &dur, &until, &last);
	ck_assert_int_eq(dur, 30 * MIN_MS); /* 40m, capped at the 30m max */
	as_group_backoff(&o, NOW + 21 * MIN_MS + 6 * 60 * MIN_MS + 1, &dur, &until, &last);
	ck_assert_int_eq(dur, 5 * MIN_MS);
	as_options_clear(&o);
}
END_TEST

START_TEST(never_registered_backs_off)
{
	struct su s;
	struct as_decision *d;
	const struct as_group_state *gs;

	/* 2 instances asked for 16 minutes ago never registered: both are deleted, and the
	 * failed scale-up backs the group off (the deletions alone must not hide it) */
	su_init(&s, 1);
	s.g->min_size = 1;
	s.g->target_size = 2;
	s.g->scale_up_time = NOW - 16 * MIN_MS;
	s.g->instances = g_new0(struct as_instance, 2);
	s.g->instances[0] = (struct as_instance){g_strdup("i0"), AS_INSTANCE_CREATING, AS_ERROR_NONE,
						 NOW - 16 * MIN_MS};
	s.g->instances[1] = (struct as_instance){g_strdup("i1"), AS_INSTANCE_CREATING, AS_ERROR_NONE,
						 NOW - 16 * MIN_MS};
	s.g->n_instances = 2;
	ck_assert_int_eq(su_delta(&s, &d), 0);
	gs = &g_array_index(d->groups, struct as_group_state, 0);
	ck_assert_int_eq(d->long_unregistered, 2);
	ck_assert_uint_eq(d->delete_instances->len, 1); /* not below min size 1 */
	ck_assert_int_eq(gs->backoff_until, NOW + 5 * MIN_MS);
	ck_assert_int_eq(gs->target_size, 1);
	ck_assert_int_eq(gs->decrease_target, 0);
	as_decision_free(d);
	su_free(&s);
}
END_TEST

START_TEST(creation_errors_back_off_at_once)
{
	struct su s;
	struct as_decision *d;
	const struct as_group_state *gs;

	/* a minute into a scale-up of 2, the provider reports one instance out of resources */
	su_init(&s, 1);
	s.g->target_size = 2;
	s.g->scale_up_time = NOW - MIN_MS;
	s.g->instances = g_new0(struct as_instance, 2);
	s.g->instances[0] = (struct as_instance){g_strdup("i0"), AS_INSTANCE_CREATING,
						 AS_ERROR_OUT_OF_RESOURCES, NOW - MIN_MS};
	s.g->instances[1] = (struct as_instance){g_strdup("i1"), AS_INSTANCE_CREATING, AS_ERROR_NONE,
						 NOW - MIN_MS};
	s.g->n_instances = 2;
	ck_assert_int_eq(su_delta(&s, &d), 0);
	gs = &g_array_index(d->groups, struct as_group_state, 0);
	ck_assert(strv_has(d->delete_instances, "i0"));
	ck_assert_uint_eq(d->delete_instances->len, 1);
	ck_assert_int_eq(gs->backoff_until, NOW + 5 * MIN_MS);
	/* i1 may still come: it stays upcoming and takes the pending pod */
	ck_assert_int_eq(gs->decrease_target, 0);
	ck_assert_int_eq(gs->target_size, 1);
	ck_assert_int_eq(d->upcoming, 1);
	ck_assert_str_eq(kvs_get(&d->schedulable, "default/p0"), "upcoming:g");
	as_decision_free(d);
	su_free(&s);
}
END_TEST

/*
 * An instance the provider failed to create backs its group off once, in
 * the scale-up that asked for it (CA: only instances not seen before, and
 * only while the group is scaling up).  At min size it is not deleted and
 * stays listed loop after loop; that must not back the group off again
 * each time, doubling up to 30m and never letting it scale up.
 */
START_TEST(creation_error_seen_again_no_new_backoff)
{
	struct su s;
	struct as_decision *d;
	const struct as_group_state *gs;

	su_init(&s, 1);
	s.g->min_size = 1;
	s.g->target_size = 1;
	s.g->instances = g_new0(struct as_instance, 1);
	s.g->instances[0] = (struct as_instance){g_strdup("i0"), AS_INSTANCE_CREATING,
						 AS_ERROR_OUT_OF_RESOURCES, NOW - 6 * MIN_MS};
	s.g->n_instances = 1;
	/* backed off 6 minutes ago for it, the scale-up is over */
	s.g->scale_up_time = AS_TIME_NEVER;
	s.g->backoff_duration = 5 * MIN_MS;
	s.g->backoff_until = NOW - MIN_MS;
	s.g->last_failure = NOW - 6 * MIN_MS;
	ck_assert_int_eq(su_delta(&s, &d), 1);
	gs = &g_array_index(d->groups, struct as_group_state, 0);
	ck_assert_uint_eq(d->delete_instances->len, 0); /* min size 1 */
	ck_assert_int_eq(gs->backoff_until, NOW - MIN_MS);
	ck_assert_int_eq(gs->backoff_duration, 5 * MIN_MS);
	ck_assert_int_eq(gs->target_size, 2);
	as_decision_free(d);
	/* still within that backoff: it is neither lengthened nor doubled */
	s.g->backoff_until = NOW + 4 * MIN_MS;
	s.g->last_failure = NOW - MIN_MS;
	ck_assert_int_eq(su_delta(&s, &d), 0);
	gs = &g_array_index(d->groups, struct as_group_state, 0);
	ck_assert_int_eq(gs->backoff_until, NOW + 4 * MIN_MS);
	ck_assert_int_eq(gs->backoff_duration, 5 * MIN_MS);
	as_decision_free(d);
	su_free(&s);
}
END_TEST

START_TEST(expendable_and_daemonset)
{
	struct su s;
	struct as_decision *d;

	su_init(&s, 2);
	((struct as_pod *)s.c->pods->pdata[0])->priority = -11;
	set_owner(s.c->pods->pdata[1], "DaemonSet");
	/* Its DaemonSet runs on new nodes too: 1 of the template's 4 cpu, p0's 3 still fit. */
	((struct as_pod *)s.c->pods->pdata[1])->requests.cpu = 1000;
	ck_assert_int_eq(su_delta(&s, &d), 0);
	ck_assert_ptr_nonnull(strstr(kvs_get(&d->unhelped, "default/p0"), "expendable"));
	ck_assert_ptr_nonnull(strstr(kvs_get(&d->unhelped, "default/p1"), "DaemonSet"));
	as_decision_free(d);
	((struct as_pod *)s.c->pods->pdata[0])->priority = -10; /* at the cutoff: not expendable */
	ck_assert_int_eq(su_delta(&s, NULL), 1);
	su_free(&s);
}
END_TEST

START_TEST(new_pod_scale_up_delay)
{
	struct su s;
	struct as_decision *d;

	su_init(&s, 1);
	((struct as_pod *)s.c->pods->pdata[0])->creation_time = NOW - 20 * 1000;
	ck_assert_int_eq(su_delta(&s, NULL), 1); /* default 0s */
	s.o.new_pod_scale_up_delay = 30 * 1000;
	ck_assert_int_eq(su_delta(&s, &d), 0);
	ck_assert_str_eq(kvs_get(&d->unhelped, "default/p0"), "too new: younger than new-pod-scale-up-delay");
	as_decision_free(d);
	((struct as_pod *)s.c->pods->pdata[0])->creation_time = NOW - 30 * 1000;
	ck_assert_int_eq(su_delta(&s, NULL), 1);
	su_free(&s);
}
END_TEST

START_TEST(no_group_fits_all)
{
	struct su s;
	struct as_decision *d;

	su_init(&s, 1);
	b_group(s.c, "g2", 0, 10, s.t);
	b_group(s.c, "g3", 0, 10, s.t);
	((struct as_pod *)s.c->pods->pdata[0])->requests.mem = 9000 * MIB;
	ck_assert_int_eq(su_delta(&s, &d), 0);
	ck_assert_str_eq(kvs_get(&d->unhelped, "default/p0"),
			 "no group fits: insufficient memory in all 3 groups");
	as_decision_free(d);
	su_free(&s);
}
END_TEST

START_TEST(filter_out_schedulable_by_priority)
{
	struct su s;
	struct as_decision *d;
	struct as_pod *lo, *hi;

	su_init(&s, 0);
	b_add(s.c, NULL, b_node("x", 4000, 8192, 110));
	lo = b_add_pod(s.c, b_pod("lo", 3000, 100, NULL));
	hi = b_add_pod(s.c, b_pod("hi", 3000, 100, NULL));
	hi->priority = 100;
	ck_assert_int_eq(su_delta(&s, &d), 1);
	ck_assert_str_eq(kvs_get(&d->schedulable, "default/hi"), "x");
	ck_assert_str_eq(d->scale_up_pods->pdata[0], "default/lo");
	as_decision_free(d);
	(void)lo;
	su_free(&s);
}
END_TEST

START_TEST(unhealthy_and_unregistered)
{
	struct su s;
	struct as_decision *d;

	su_init(&s, 1);
	add_unready(s.c, s.g, 4);
	b_add(s.c, s.g, b_node("good", 1000, 1024, 110));
	ck_assert_int_eq(su_delta(&s, &d), 0);
	ck_assert_str_eq(d->status, "ClusterUnhealthy");
	as_decision_free(d);
	s.o.ok_total_unready_count = 4; /* 4 unready is fine now */
	ck_assert_int_eq(su_delta(&s, &d), 1);
	ck_assert_str_eq(d->status, "ok");
	as_decision_free(d);
	/* an instance that never registered: deleted after max-node-provision-time */
	s.g->instances = g_renew(struct as_instance, s.g->instances, s.g->n_instances + 1);
	s.g->instances[s.g->n_instances++] = (struct as_instance){
		g_strdup("bm://lost"), AS_INSTANCE_CREATING, AS_ERROR_NONE, NOW - 16 * MIN_MS};
	su_delta(&s, &d);
	ck_assert_int_eq(d->long_unregistered, 1);
	ck_assert(strv_has(d->delete_instances, "bm://lost"));
	as_decision_free(d);
	su_free(&s);
}
END_TEST

/*
 * Nodes whose instance the provider found gone (an operator deleted the
 * machine, the Node stayed) are Deleted in CA's cluster state
 * (getCloudProviderDeletedNodes, clusterstate.go), not Unready: four of
 * them NotReady for an hour beside one good node leave the cluster
 * healthy, and still count among all the nodes.  Ready ones still count
 * for max-nodes-total, which CA takes from the Ready nodes it lists.
 */
START_TEST(instance_gone_counted_deleted)
{
	struct su s;
	struct as_decision *d;

	su_init(&s, 1);
	for (int i = 0; i < 4; i++) {
		g_autofree char *n = g_strdup_printf("gone%d", i);
		struct as_node *x = b_add(s.c, NULL, b_node(n, 1000, 1024, 110));

		x->ready = false;
		x->instance_gone = true;
	}
	b_add(s.c, s.g, b_node("good", 1000, 1024, 110));
	ck_assert_int_eq(su_delta(&s, &d), 1);
	ck_assert_str_eq(d->status, "ok");
	ck_assert_int_eq(d->unready, 0);
	ck_assert_int_eq(d->deleted, 4);
	ck_assert_int_eq(d->ready, 1);
	as_decision_free(d);
	/* the same nodes with their instances there: 4 of 5 unready */
	for (int i = 0; i < 4; i++)
		((struct as_node *)s.c->nodes->pdata[i])->instance_gone = false;
	ck_assert_int_eq(su_delta(&s, &d), 0);
	ck_assert_str_eq(d->status, "ClusterUnhealthy");
	as_decision_free(d);
	/* Ready but gone: out of d->ready, yet max-nodes-total 2 is reached */
	for (int i = 0; i < 4; i++) {
		((struct as_node *)s.c->nodes->pdata[i])->instance_gone = true;
		((struct as_node *)s.c->nodes->pdata[i])->ready = i == 0;
	}
	s.o.max_nodes_total = 2;
	ck_assert_int_eq(su_delta(&s, &d), 0);
	ck_assert_int_eq(d->ready, 1);
	ck_assert_int_eq(d->deleted, 4);
	ck_assert_str_eq(kvs_get(&d->unhelped, "default/p0"), "max-nodes-total 2 reached");
	as_decision_free(d);
	su_free(&s);
}
END_TEST

/*
 * CA's health check takes the unready count against every node of the
 * cluster (len(csr.nodes)), those still starting too: 4 unready of 10
 * nodes, 5 of them not started yet, is 40% and healthy.
 */
START_TEST(unhealthy_percentage_of_all_nodes)
{
	struct su s;
	struct as_decision *d;

	su_init(&s, 1);
	add_unready(s.c, s.g, 4);
	b_add(s.c, s.g, b_node("good", 1000, 1024, 110));
	for (int i = 0; i < 5; i++) {
		g_autofree char *n = g_strdup_printf("new%d", i);
		struct as_node *x = b_add(s.c, s.g, b_node(n, 1000, 1024, 110));

		x->ready = false;
		x->creation_time = NOW - MIN_MS; /* within max-node-startup-time */
	}
	d = b_run(s.c, &s.o, NOW);
	ck_assert_int_eq(d->unready, 4);
	ck_assert_int_eq(d->not_started, 5);
	ck_assert_str_eq(d->status, "ok");
	as_decision_free(d);
	/* a fifth unready node: 5 of 11 is 45.5%, above 45% */
	b_add(s.c, s.g, b_node("bad4", 1000, 1024, 110))->ready = false;
	d = b_run(s.c, &s.o, NOW);
	ck_assert_str_eq(d->status, "ClusterUnhealthy");
	ck_assert_str_eq(kvs_get(&d->unhelped, "default/p0"),
			 "ClusterUnhealthy: 5 of 11 nodes unready (ok-total-unready-count 3, "
			 "max-total-unready-percentage 45)");
	as_decision_free(d);
	su_free(&s);
}
END_TEST

START_TEST(balance_similar)
{
	struct as_cluster *c = as_cluster_new();
	struct as_options o;
	struct as_node *t = b_node("t", 4000, 8192, 110);
	struct as_node_group *g[4];
	const char *zones[] = {"a", "b", "c"};
	struct as_decision *d;
	int sum = 0;

	as_options_init(&o);
	for (int i = 0; i < 3; i++) {
		g_autofree char *id = g_strdup_printf("pool-%s", zones[i]);

		as_kvs_clear(&t->labels);
		as_kvs_add(&t->labels, "topology.kubernetes.io/zone", zones[i]);
		as_kvs_add(&t->labels, "disk", "ssd");
		g[i] = b_group(c, id, 0, 10, t);
	}
	/* pool-a has 2 nodes, pool-c 1: 6 new nodes even them out at 3 each */
	for (int i = 0; i < 2; i++) {
		g_autofree char *n = g_strdup_printf("a%d", i);

		b_add(c, g[0], b_node(n, 100, 100, 1));
	}
	b_add(c, g[2], b_node("c0", 100, 100, 1));
	/* different labels: not similar */
	as_kvs_clear(&t->labels);
	as_kvs_add(&t->labels, "disk", "hdd");
	g[3] = b_group(c, "pool-hdd", 0, 10, t);
	for (int i = 0; i < 6; i++) {
		g_autofree char *n = g_strdup_printf("p%d", i);

		b_add_pod(c, b_pod(n, 3000, 1024, NULL));
	}
	d = b_run(c, &o, NOW);
	ck_assert_uint_eq(d->scale_up_split->len, 0); /* off by default */
	as_decision_free(d);
	o.balance_similar_node_groups = true;
	o.expanders[0] = AS_EXPANDER_RANDOM;
	for (guint32 seed = 0; seed < 8; seed++) {
		o.seed = seed;
		d = b_run(c, &o, NOW);
		ck_assert_int_eq(d->scale_up_delta, 6);
		if (strcmp(d->scale_up_group, "pool-hdd") != 0) {
			sum = 0;
			for (int i = 0; i < 3; i++)
				ck_assert_int_eq(g_array_index(d->groups, struct as_group_state, i).target_size, 3);
			ck_assert_int_eq(g_array_index(d->groups, struct as_group_state, 3).target_size, 0);
			for (guint k = 0; k < d->scale_up_split->len; k++)
				sum += g_array_index(d->scale_up_split, struct as_group_delta, k).delta;
			ck_assert_int_eq(sum, 6);
		} else {
			ck_assert_uint_eq(d->scale_up_split->len, 0);
		}
		as_decision_free(d);
	}
	/* pool-b capped at max 1: the rest goes to the others */
	g[1]->max_size = 1;
	o.expanders[0] = AS_EXPANDER_PRIORITY;
	{
		g_autofree char *msg = NULL;

		ck_assert_int_eq(as_options_set(&o, "priorities", "10:^pool-a", &msg), 0);
	}
	d = b_run(c, &o, NOW);
	ck_assert_str_eq(d->scale_up_group, "pool-a");
	ck_assert_int_eq(g_array_index(d->groups, struct as_group_state, 1).target_size, 1);
	ck_assert_int_eq(g_array_index(d->groups, struct as_group_state, 0).target_size +
				 g_array_index(d->groups, struct as_group_state, 2).target_size,
			 2 + 1 + 5);
	ck_assert_int_eq(g_array_index(d->groups, struct as_group_state, 0).target_size, 4);
	as_decision_free(d);
	ck_assert(!as_templates_similar(g[0]->template_node, g[3]->template_node));
	ck_assert(as_templates_similar(g[0]->template_node, g[2]->template_node));
	g[2]->template_node->allocatable.mem -= 1;
	ck_assert(!as_templates_similar(g[0]->template_node, g[2]->template_node));
	as_node_free(t);
	as_options_clear(&o);
	as_cluster_free(c);
}
END_TEST

START_TEST(invariant_check_catches)
{
	struct sd s;
	struct as_decision *d;
	g_autofree char *m1 = NULL, *m2 = NULL;

	sd_init(&s);
	d = b_run(s.c, &s.o, NOW);
	ck_assert_int_eq(as_decision_check(s.c, d, &m1), 0);
	g_ptr_array_add(d->scale_down_nodes, g_strdup("n2")); /* never found unneeded */
	ck_assert_int_eq(as_decision_check(s.c, d, &m2), -EINVAL);
	ck_assert_str_eq(m2, "node \"n2\" deleted but not unneeded");
	as_decision_free(d);
	sd_free(&s);
}
END_TEST

START_TEST(inconsistent_cluster)
{
	struct su s;
	struct as_decision *d = NULL;
	g_autofree char *msg = NULL;

	su_init(&s, 0);
	s.g->min_size = 5;
	s.g->max_size = 2;
	ck_assert_int_eq(as_run_once(s.c, &s.o, NOW, NULL, &d, &msg), -EINVAL);
	ck_assert_ptr_null(d);
	ck_assert_ptr_nonnull(strstr(msg, "\"g\""));
	su_free(&s);
}
END_TEST

/*
 * --expander=random over four equal groups: a generator the caller keeps
 * across loops (`autoscale run`) picks different groups; without one
 * (`autoscale once`, the simulator) every loop picks what --seed says.
 */
START_TEST(random_expander_across_loops)
{
	GString *snap = g_string_new("{\"pods\": [{\"metadata\": {\"name\": \"p\", \"namespace\": \"d\","
				     " \"ownerReferences\": [{\"kind\": \"ReplicaSet\", \"name\": \"r\","
				     " \"controller\": true}]}, \"spec\": {\"containers\": [{\"resources\":"
				     " {\"requests\": {\"cpu\": \"1\"}}}]}, \"status\": {\"phase\": \"Pending\","
				     " \"conditions\": [{\"type\": \"PodScheduled\", \"status\": \"False\","
				     " \"reason\": \"Unschedulable\"}]}}], \"node_groups\": [");
	g_autoptr(as_cluster) c = NULL;
	g_autoptr(GHashTable) kept = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_autoptr(GHashTable) fresh = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_autofree char *msg = NULL;
	GRand *rnd = g_rand_new_with_seed(7);
	struct as_options o;
	int64_t now;

	for (int g = 0; g < 4; g++)
		g_string_append_printf(snap, "%s{\"id\": \"g%d\", \"min_size\": 0, \"max_size\": 10,"
				       " \"template\": {\"status\": {\"capacity\": {\"cpu\": \"4\"}}}}",
				       g ? ", " : "", g);
	g_string_append(snap, "]}");
	ck_assert_msg(as_cluster_from_json(snap->str, snap->len, &c, &now, &msg) == 0, "%s", msg);
	as_options_init(&o);
	ck_assert_int_eq(as_options_set(&o, "expander", "random", &msg), 0);
	for (int k = 0; k < 32; k++) {
		const struct as_run_env env = {.rand = rnd};
		g_autoptr(as_decision) d1 = NULL, d2 = NULL;

		ck_assert_int_eq(as_run_once(c, &o, 1000, &env, &d1, &msg), 0);
		ck_assert_int_eq(as_run_once(c, &o, 1000, NULL, &d2, &msg), 0);
		g_hash_table_add(kept, g_strdup(d1->scale_up_group));
		g_hash_table_add(fresh, g_strdup(d2->scale_up_group));
	}
	/* 32 loops on one group out of four: 4^-31 by chance. */
	ck_assert_uint_gt(g_hash_table_size(kept), 1);
	ck_assert_uint_eq(g_hash_table_size(fresh), 1);
	g_rand_free(rnd);
	g_string_free(snap, TRUE);
	as_options_clear(&o);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("as-loop");
	TCase *down = tcase_create("scale-down"), *up = tcase_create("scale-up");
	SRunner *sr;
	int failed;

	tcase_add_test(down, base_removes);
	tcase_add_test(down, eviction_grace_capped);
	tcase_add_test(down, rule1_mirror);
	tcase_add_test(down, rule2_long_terminating);
	tcase_add_test(down, utilization_without_long_terminating);
	tcase_add_test(down, rule3_daemonset);
	tcase_add_test(down, utilization_without_daemonsets);
	tcase_add_test(down, rule4_safe_to_evict_true);
	tcase_add_test(down, rule5_terminal);
	tcase_add_test(down, rule6_not_replicated);
	tcase_add_test(down, rule7_kube_system);
	tcase_add_test(down, rule8_safe_to_evict_false);
	tcase_add_test(down, rule9_local_storage);
	tcase_add_test(down, rule10_pdb);
	tcase_add_test(down, drain_order_direct);
	tcase_add_test(down, pdb_budget_across_nodes);
	tcase_add_test(down, expendable_pods_go_with_the_node);
	tcase_add_test(down, scale_down_disabled_annotation);
	tcase_add_test(down, no_place_to_move);
	tcase_add_test(down, utilization_threshold);
	tcase_add_test(down, unneeded_timer);
	tcase_add_test(down, unready_time);
	tcase_add_test(down, unhealthy_resets_unneeded_timers);
	tcase_add_test(down, cooldowns);
	tcase_add_test(down, cooldown_after_scale_up_in_same_loop);
	tcase_add_test(down, min_size);
	tcase_add_test(down, cores_min);
	tcase_add_test(down, gpu_min);
	tcase_add_test(down, parallelism_and_empty_first);
	tcase_add_test(up, scale_up_base);
	tcase_add_test(up, limits);
	tcase_add_test(up, max_nodes_total);
	tcase_add_test(up, upcoming_nodes);
	tcase_add_test(up, backoff);
	tcase_add_test(up, backoff_while_backed_off_keeps_duration);
	tcase_add_test(up, never_registered_backs_off);
	tcase_add_test(up, creation_errors_back_off_at_once);
	tcase_add_test(up, creation_error_seen_again_no_new_backoff);
	tcase_add_test(up, expendable_and_daemonset);
	tcase_add_test(up, new_pod_scale_up_delay);
	tcase_add_test(up, no_group_fits_all);
	tcase_add_test(up, filter_out_schedulable_by_priority);
	tcase_add_test(up, unhealthy_and_unregistered);
	tcase_add_test(up, unhealthy_percentage_of_all_nodes);
	tcase_add_test(up, instance_gone_counted_deleted);
	tcase_add_test(up, balance_similar);
	tcase_add_test(up, random_expander_across_loops);
	tcase_add_test(up, invariant_check_catches);
	tcase_add_test(up, inconsistent_cluster);
	suite_add_tcase(s, down);
	suite_add_tcase(s, up);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
