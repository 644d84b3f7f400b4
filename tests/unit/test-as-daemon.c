// SPDX-License-Identifier: Apache-2.0
/*
 * The daemon's own flags (autoscale/daemon.c): CA's defaults for leader
 * election, the status ConfigMap and /healthz, and the parsing of each
 * flag type, with bad values refused.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <string.h>

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

int main(void)
{
	Suite *s = suite_create("as-daemon");
	TCase *tc = tcase_create("flags");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, defaults);
	tcase_add_test(tc, parsing);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
