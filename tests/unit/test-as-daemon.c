// SPDX-License-Identifier: Apache-2.0
/*
 * The daemon's own flags (autoscale/daemon.c): CA's defaults for leader
 * election, the status ConfigMap and /healthz, and the parsing of each
 * flag type, with bad values refused.  Also the state the loop carries
 * between RunOnce calls when an IncreaseSize fails.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <string.h>

#include "autoscaler.h"
#include "cluster-json.h"
#include "daemon.h"

START_TEST(defaults)
{
	struct as_daemon_args a;

	as_daemon_args_init(&a);
	ck_assert_str_eq(a.address, ":8085");
	ck_assert(a.leader_elect);
	ck_assert_int_eq(a.lease_duration, 15000);
	ck_assert_int_eq(a.renew_deadline, 10000);
	ck_assert_int_eq(a.retry_period, 2000);
	ck_assert_str_eq(a.lease_name, "cluster-autoscaler");
	ck_assert_str_eq(a.lease_namespace, "kube-system");
	ck_assert_str_eq(a.status_config_map_name, "cluster-autoscaler-status");
	ck_assert(a.write_status_configmap);
	ck_assert_int_eq(a.max_inactivity, 600000);
	ck_assert_int_eq(a.max_failing_time, 900000);
	ck_assert_int_eq(a.max_pod_eviction_time, 120000);
	ck_assert(!a.dry_run);
	ck_assert(!a.in_cluster);
	ck_assert_ptr_null(a.kubeconfig);
	as_daemon_args_clear(&a);
}
END_TEST

START_TEST(parsing)
{
	struct as_daemon_args a;
	g_autofree char *m1 = NULL, *m2 = NULL, *m3 = NULL, *m4 = NULL;
	bool any_bool = false;

	as_daemon_args_init(&a);
	ck_assert_int_eq(as_daemon_set(&a, "kubeconfig", "/k", &m1), 0);
	ck_assert_str_eq(a.kubeconfig, "/k");
	ck_assert_int_eq(as_daemon_set(&a, "kubeconfig", "/k2", &m1), 0);
	ck_assert_str_eq(a.kubeconfig, "/k2");
	ck_assert_int_eq(as_daemon_set(&a, "dry-run", NULL, &m1), 0);
	ck_assert(a.dry_run);
	ck_assert_int_eq(as_daemon_set(&a, "leader-elect", "false", &m1), 0);
	ck_assert(!a.leader_elect);
	ck_assert_int_eq(as_daemon_set(&a, "leader-elect-lease-duration", "1m30s", &m1), 0);
	ck_assert_int_eq(a.lease_duration, 90000);
	ck_assert_int_eq(as_daemon_set(&a, "max-bulk-soft-taint-count", "3", &m1), 0);
	ck_assert_int_eq(a.max_bulk_soft_taint_count, 3);
	ck_assert_int_eq(as_daemon_set(&a, "dry-run", "maybe", &m1), -EINVAL);
	ck_assert(strstr(m1, "dry-run"));
	ck_assert_int_eq(as_daemon_set(&a, "max-inactivity", "10minutes", &m2), -EINVAL);
	ck_assert_int_eq(as_daemon_set(&a, "v", "-1", &m3), -EINVAL);
	ck_assert_int_eq(as_daemon_set(&a, "address", NULL, &m4), -EINVAL);
	ck_assert_int_eq(as_daemon_set(&a, "scan-interval", "1s", &m4), -ENOENT);
	/* The table and the bool query agree with the parser. */
	for (unsigned i = 0; as_daemon_flag_name(i); i++)
		any_bool = any_bool || as_daemon_flag_is_bool(as_daemon_flag_name(i));
	ck_assert(any_bool);
	ck_assert(as_daemon_flag_is_bool("in-cluster"));
	ck_assert(!as_daemon_flag_is_bool("kubeconfig"));
	as_daemon_args_clear(&a);
	ck_assert_ptr_null(a.kubeconfig);
}
END_TEST

/*
 * Two loops as the daemon runs them: the first decides a scale-up of group
 * "big" that IncreaseSize refuses (the daemon backs the group off); in the
 * second, a minute later, node n1 (empty, unneeded for an hour) goes.  A
 * refused scale-up must not hold scale-down for --scale-down-delay-after-add.
 */
START_TEST(failed_scale_up_no_cooldown)
{
	static const char snap[] =
		"{\"now\": \"2024-05-01T12:00:00Z\","
		" \"nodes\": [{\"metadata\": {\"name\": \"n1\"}, \"spec\": {\"providerID\": \"p://n1\"},"
		"  \"status\": {\"capacity\": {\"cpu\": \"4\", \"memory\": \"8Gi\"},"
		"   \"conditions\": [{\"type\": \"Ready\", \"status\": \"True\"}]}}],"
		" \"pods\": [{\"metadata\": {\"name\": \"p\", \"namespace\": \"d\", \"ownerReferences\":"
		"   [{\"kind\": \"ReplicaSet\", \"name\": \"r\", \"controller\": true}]},"
		"  \"spec\": {\"containers\": [{\"resources\": {\"requests\": {\"cpu\": \"8\"}}}]},"
		"  \"status\": {\"phase\": \"Pending\", \"conditions\": [{\"type\": \"PodScheduled\","
		"   \"status\": \"False\", \"reason\": \"Unschedulable\"}]}}],"
		" \"node_groups\": [{\"id\": \"g\", \"min_size\": 0, \"max_size\": 5, \"nodes\": [\"p://n1\"]},"
		"  {\"id\": \"big\", \"min_size\": 0, \"max_size\": 5,"
		"   \"template\": {\"status\": {\"capacity\": {\"cpu\": \"16\", \"memory\": \"32Gi\"}}}}],"
		" \"unneeded_since\": {\"n1\": \"2024-05-01T11:00:00Z\"}}";
	g_autoptr(as_cluster) c = NULL;
	g_autoptr(as_decision) d1 = NULL, d2 = NULL;
	g_autofree char *msg = NULL;
	struct as_options o;
	struct as_node_group *big;
	int64_t now, kept;

	as_options_init(&o);
	ck_assert_msg(as_cluster_from_json(snap, strlen(snap), &c, &now, &msg) == 0, "%s", msg);
	ck_assert_int_eq(as_run_once(c, &o, now, NULL, &d1, &msg), 0);
	ck_assert_str_eq(d1->scale_up_group, "big");
	ck_assert_int_eq(d1->last_scale_up, now);

	/* IncreaseSize refused: the daemon backs "big" off and carries the rest. */
	kept = as_daemon_kept_last_scale_up(AS_TIME_NEVER, d1, true);
	ck_assert_int_eq(kept, AS_TIME_NEVER);
	as_cluster_carry_state(c, d1);
	c->last_scale_up = kept;
	big = c->groups->pdata[1];
	big->target_size = 0;
	big->scale_up_time = AS_TIME_NEVER;
	as_group_backoff(&o, now, &big->backoff_duration, &big->backoff_until, &big->last_failure);

	ck_assert_int_eq(as_run_once(c, &o, now + 60000, NULL, &d2, &msg), 0);
	ck_assert_str_eq(d2->scale_down_status, "ok");
	ck_assert_uint_eq(d2->scale_down_nodes->len, 1);
	ck_assert_str_eq(d2->scale_down_nodes->pdata[0], "n1");

	/* A dry run acts on nothing: the decision's time stands, as before. */
	ck_assert_int_eq(as_daemon_kept_last_scale_up(AS_TIME_NEVER, d1, false), now);
	/* Without a scale-up in the decision, what RunOnce carried. */
	ck_assert_int_eq(as_daemon_kept_last_scale_up(now, d2, true), d2->last_scale_up);
	as_options_clear(&o);
}
END_TEST

/*
 * The status ConfigMap stays under the API server's 1 MiB with 5,000 node
 * groups of long names (about 1.8 MB in full); with few, every group shows.
 */
START_TEST(status_text_capped)
{
	g_autoptr(as_cluster) c = as_cluster_new();
	g_autoptr(as_decision) d = NULL;
	g_autofree char *msg = NULL, *big = NULL, *small = NULL;
	g_autofree char *pad = g_strnfill(200, 'x');
	struct as_options o;
	int64_t now = 1714564800000;

	as_options_init(&o);
	for (int i = 0; i < 5000; i++) {
		struct as_node_group *g = as_node_group_new();

		g->id = g_strdup_printf("pool-%s-%04d", pad, i);
		g->max_size = 10;
		g_ptr_array_add(c->groups, g);
	}
	ck_assert_int_eq(as_run_once(c, &o, now, NULL, &d, &msg), 0);
	big = as_daemon_status_text(c, d, 0, now, AS_DAEMON_STATUS_MAX);
	ck_assert_uint_le(strlen(big), AS_DAEMON_STATUS_MAX);
	ck_assert_uint_gt(strlen(big), AS_DAEMON_STATUS_MAX - 1024);
	ck_assert_ptr_nonnull(strstr(big, "pool-"));
	ck_assert_ptr_nonnull(strstr(big, " more node groups not shown"));
	ck_assert(g_str_has_suffix(big, "\n"));

	g_ptr_array_set_size(c->groups, 3);
	g_clear_pointer(&d, as_decision_free);
	ck_assert_int_eq(as_run_once(c, &o, now, NULL, &d, &msg), 0);
	small = as_daemon_status_text(c, d, 0, now, AS_DAEMON_STATUS_MAX);
	ck_assert_ptr_nonnull(strstr(small, "-0002\n"));
	ck_assert_ptr_null(strstr(small, "not shown"));
	as_options_clear(&o);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("as-daemon");
	TCase *tc = tcase_create("flags");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, defaults);
	tcase_add_test(tc, parsing);
	tcase_add_test(tc, failed_scale_up_no_cooldown);
	tcase_add_test(tc, status_text_capped);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
