// SPDX-License-Identifier: Apache-2.0
/*
 * Value syntaxes of the autoscaler core (autoscale/core/units.c) and its
 * options table (options.c): quantities exactly as Kubernetes computes
 * them, Go durations as CA's flags take them, CA's defaults, and clear
 * errors for unknown names and out-of-range values.
 */
#include "config.h"

#include <check.h>
#include <errno.h>

#include "options.h"
#include "units.h"

static int64_t q(const char *s, int milli)
{
	int64_t v = -12345;

	ck_assert_msg(as_quantity_parse(s, milli, &v) == 0, "\"%s\" refused", s);
	return v;
}

START_TEST(quantity_cpu)
{
	ck_assert_int_eq(q("500m", 3), 500);
	ck_assert_int_eq(q("2", 3), 2000);
	ck_assert_int_eq(q("0.1", 3), 100);
	ck_assert_int_eq(q("1.5", 3), 1500);
	ck_assert_int_eq(q("100u", 3), 1); /* rounds up like MilliValue() */
	ck_assert_int_eq(q("1n", 3), 1);
	ck_assert_int_eq(q("0", 3), 0);
	ck_assert_int_eq(q("2k", 3), 2000000);
	ck_assert_int_eq(q("1e3", 3), 1000000);
	ck_assert_int_eq(q("+1", 3), 1000);
}
END_TEST

START_TEST(quantity_memory)
{
	ck_assert_int_eq(q("1Gi", 0), 1073741824);
	ck_assert_int_eq(q("512Mi", 0), 536870912);
	ck_assert_int_eq(q("1e9", 0), 1000000000);
	ck_assert_int_eq(q("1G", 0), 1000000000);
	ck_assert_int_eq(q("1.5Gi", 0), 1610612736);
	ck_assert_int_eq(q("129M", 0), 129000000);
	ck_assert_int_eq(q("123Ki", 0), 125952);
	ck_assert_int_eq(q("1E", 0), 1000000000000000000LL);
	ck_assert_int_eq(q("0.5", 0), 1); /* Value() rounds up */
	ck_assert_int_eq(q("1e-3", 3), 1);
	ck_assert_int_eq(q("12E-1", 0), 2);
}
END_TEST

START_TEST(quantity_bad)
{
	int64_t v = 7;
	const char *bad[] = {"", "m", "1x", "1 Gi", "1Gib", "1.2.3", "e3", "1e", "1ee3", "Gi", "--1",
			     "1KiB", "0x10"};

	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
		ck_assert_msg(as_quantity_parse(bad[i], 0, &v) == -EINVAL, "\"%s\" accepted", bad[i]);
	ck_assert_int_eq(as_quantity_parse("10Ei", 0, &v), -ERANGE);
	ck_assert_int_eq(as_quantity_parse("1e400", 0, &v), -ERANGE);
	ck_assert_int_eq(as_quantity_parse("99999999999999999999999", 0, &v), -ERANGE);
	ck_assert_int_eq(v, 7); /* untouched on error */
	ck_assert_int_eq(q("-1", 0), -1);
}
END_TEST

static int64_t dur(const char *s)
{
	int64_t v = -1;

	ck_assert_msg(as_duration_parse(s, &v) == 0, "\"%s\" refused", s);
	return v;
}

START_TEST(durations)
{
	ck_assert_int_eq(dur("10m"), 600000);
	ck_assert_int_eq(dur("1h30m"), 5400000);
	ck_assert_int_eq(dur("90s"), 90000);
	ck_assert_int_eq(dur("0"), 0);
	ck_assert_int_eq(dur("0s"), 0);
	ck_assert_int_eq(dur("1.5s"), 1500);
	ck_assert_int_eq(dur("300ms"), 300);
	ck_assert_int_eq(dur("1m0.5s"), 60500);
	ck_assert_int_eq(dur("2h45m10s"), 9910000);
	ck_assert_int_eq(dur("1500us"), 1);
	ck_assert_int_eq(dur("\xc2\xb5s"[0] ? "2000\xc2\xb5s" : "0"), 2);
}
END_TEST

START_TEST(durations_bad)
{
	int64_t v = 5;
	const char *bad[] = {"", "10", "m", "10x", "1h 30m", "h1", ".s", "1.5", "10M", "1d"};

	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
		ck_assert_msg(as_duration_parse(bad[i], &v) == -EINVAL, "\"%s\" accepted", bad[i]);
	ck_assert_int_eq(as_duration_parse("-1s", &v), -ERANGE);
	ck_assert_int_eq(as_duration_parse("9999999999999h", &v), -ERANGE);
	ck_assert_int_eq(v, 5);
}
END_TEST

START_TEST(duration_format)
{
	const struct {
		int64_t ms;
		const char *s;
	} t[] = {{0, "0s"}, {600000, "10m0s"}, {5400000, "1h30m0s"}, {1500, "1.5s"}, {300, "300ms"}};

	for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
		g_autofree char *s = as_duration_format(t[i].ms);

		ck_assert_str_eq(s, t[i].s);
		ck_assert_int_eq(dur(s), t[i].ms);
	}
}
END_TEST

START_TEST(times)
{
	int64_t t;
	g_autofree char *s = NULL, *s2 = NULL;

	ck_assert_int_eq(as_time_parse("2024-05-01T12:00:00Z", &t), 0);
	ck_assert_int_eq(t, 1714564800000LL);
	ck_assert_int_eq(as_time_parse("2024-05-01T14:00:00+02:00", &t), 0);
	ck_assert_int_eq(t, 1714564800000LL);
	ck_assert_int_eq(as_time_parse("2024-05-01T12:00:00.250Z", &t), 0);
	ck_assert_int_eq(t, 1714564800250LL);
	s = as_time_format(t);
	ck_assert_str_eq(s, "2024-05-01T12:00:00.250Z");
	s2 = as_time_format(1714564800000LL);
	ck_assert_str_eq(s2, "2024-05-01T12:00:00Z");
	ck_assert_int_eq(as_time_parse("2024-05-01", &t), -EINVAL);
	ck_assert_int_eq(as_time_parse("yesterday at noon!!", &t), -EINVAL);
	ck_assert_int_eq(as_time_parse("2024-13-01T12:00:00Z", &t), -EINVAL);
}
END_TEST

START_TEST(option_defaults)
{
	struct as_options o;

	as_options_init(&o);
	ck_assert_int_eq(o.scan_interval, 10000);
	ck_assert_int_eq(o.n_expanders, 1);
	ck_assert_int_eq(o.expanders[0], AS_EXPANDER_LEAST_WASTE);
	ck_assert_int_eq(o.max_nodes_total, 0);
	ck_assert_int_eq(o.cores_max, 320000);
	ck_assert_int_eq(o.memory_max, 6400000);
	ck_assert_int_eq(o.max_nodes_per_scaleup, 1000);
	ck_assert_int_eq(o.max_nodegroup_binpacking_duration, 10000);
	ck_assert_int_eq(o.expendable_pods_priority_cutoff, -10);
	ck_assert_int_eq(o.max_node_provision_time, 900000);
	ck_assert_int_eq(o.ok_total_unready_count, 3);
	ck_assert(o.max_total_unready_percentage == 45);
	ck_assert(o.scale_down_utilization_threshold == 0.5);
	ck_assert_int_eq(o.scale_down_unneeded_time, 600000);
	ck_assert_int_eq(o.scale_down_unready_time, 1200000);
	ck_assert_int_eq(o.scale_down_delay_after_add, 600000);
	ck_assert_int_eq(o.scale_down_delay_after_delete, 0);
	ck_assert_int_eq(o.scale_down_delay_after_failure, 180000);
	ck_assert_int_eq(o.max_scale_down_parallelism, 10);
	ck_assert_int_eq(o.max_drain_parallelism, 1);
	ck_assert_int_eq(o.max_graceful_termination_sec, 600);
	ck_assert(o.skip_nodes_with_system_pods && o.skip_nodes_with_local_storage);
	ck_assert(o.scale_down_enabled && !o.balance_similar_node_groups);
	ck_assert_int_eq(o.initial_node_group_backoff_duration, 300000);
	ck_assert_int_eq(o.max_node_group_backoff_duration, 1800000);
	ck_assert_int_eq(o.node_group_backoff_reset_timeout, 10800000);
	as_options_clear(&o);
}
END_TEST

static void set_ok(struct as_options *o, const char *name, const char *value)
{
	g_autofree char *msg = NULL;

	ck_assert_msg(as_options_set(o, name, value, &msg) == 0, "%s=%s: %s", name, value, msg);
}

static char *set_err(struct as_options *o, const char *name, const char *value, int err)
{
	char *msg = NULL;

	ck_assert_int_eq(as_options_set(o, name, value, &msg), err);
	ck_assert_ptr_nonnull(msg);
	return msg;
}

START_TEST(option_set)
{
	struct as_options o;

	as_options_init(&o);
	set_ok(&o, "scale-down-unneeded-time", "1h30m");
	ck_assert_int_eq(o.scale_down_unneeded_time, 5400000);
	set_ok(&o, "expander", "least-waste,random");
	ck_assert_int_eq(o.n_expanders, 2);
	ck_assert_int_eq(o.expanders[1], AS_EXPANDER_RANDOM);
	set_ok(&o, "cores-total", "8:64");
	ck_assert_int_eq(o.cores_min, 8);
	ck_assert_int_eq(o.cores_max, 64);
	set_ok(&o, "gpu-total", "nvidia.com/gpu:0:4");
	ck_assert_int_eq(o.gpu_max, 4);
	set_ok(&o, "skip-nodes-with-system-pods", "false");
	ck_assert(!o.skip_nodes_with_system_pods);
	set_ok(&o, "skip-nodes-with-system-pods", NULL);
	ck_assert(o.skip_nodes_with_system_pods);
	set_ok(&o, "scale-down-utilization-threshold", "0.75");
	ck_assert(o.scale_down_utilization_threshold == 0.75);
	set_ok(&o, "priorities", "10:^small-;50:^big-,^huge-");
	ck_assert_int_eq(o.n_priorities, 3);
	ck_assert_int_eq(o.priorities[2].priority, 50);
	set_ok(&o, "seed", "18446744073709551615");
	set_ok(&o, "expendable-pods-priority-cutoff", "-100");
	ck_assert_int_eq(o.expendable_pods_priority_cutoff, -100);
	as_options_clear(&o);
}
END_TEST

START_TEST(option_errors)
{
	struct as_options o;
	g_autofree char *m1 = NULL, *m2 = NULL, *m3 = NULL, *m4 = NULL, *m5 = NULL, *m6 = NULL,
			*m7 = NULL, *m8 = NULL, *m9 = NULL, *m10 = NULL;

	as_options_init(&o);
	m1 = set_err(&o, "scale-down-unneeded-tme", "10m", -ENOENT);
	ck_assert_str_eq(m1, "unknown option \"scale-down-unneeded-tme\"");
	m2 = set_err(&o, "scale-down-unneeded-time", "10 minutes", -EINVAL);
	ck_assert_ptr_nonnull(strstr(m2, "\"10 minutes\""));
	ck_assert_ptr_nonnull(strstr(m2, "scale-down-unneeded-time"));
	m3 = set_err(&o, "scale-down-utilization-threshold", "1.5", -EINVAL);
	ck_assert_ptr_nonnull(strstr(m3, "[0, 1]"));
	m4 = set_err(&o, "expander", "least-waste,cheapest", -EINVAL);
	m5 = set_err(&o, "max-scale-down-parallelism", "0", -EINVAL);
	m6 = set_err(&o, "cores-total", "64:8", -EINVAL);
	m7 = set_err(&o, "skip-nodes-with-local-storage", "yes", -EINVAL);
	m8 = set_err(&o, "priorities", "10:[", -EINVAL);
	m9 = set_err(&o, "max-nodes-total", "-1", -EINVAL);
	m10 = set_err(&o, "scale-down-delay-after-add", "-5m", -EINVAL);
	/* A failed set leaves the old value. */
	ck_assert_int_eq(o.n_expanders, 1);
	ck_assert_int_eq(o.max_scale_down_parallelism, 10);
	ck_assert_int_eq(o.cores_max, 320000);
	ck_assert(as_options_known("max-drain-parallelism"));
	ck_assert(!as_options_known("max_drain_parallelism"));
	ck_assert(as_options_is_bool("scale-down-enabled"));
	as_options_clear(&o);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("as-units");
	TCase *tc = tcase_create("units");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, quantity_cpu);
	tcase_add_test(tc, quantity_memory);
	tcase_add_test(tc, quantity_bad);
	tcase_add_test(tc, durations);
	tcase_add_test(tc, durations_bad);
	tcase_add_test(tc, duration_format);
	tcase_add_test(tc, times);
	tcase_add_test(tc, option_defaults);
	tcase_add_test(tc, option_set);
	tcase_add_test(tc, option_errors);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
