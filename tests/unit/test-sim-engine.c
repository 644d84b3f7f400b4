// SPDX-License-Identifier: Apache-2.0
/*
 * The simulation engine (sim/engine.c) on tiny scenarios whose pending
 * times, node counts and machine-hours are computed by hand in the
 * comments, plus the rules that must hold on any run: conservation of
 * pods, provisioning delays honoured, dedicated pools never lending a
 * machine, bare-metal pods taking a whole machine, and skipping idle
 * loops never changing a result.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "engine.h"

#define S INT64_C(1000) /* ms */
#define EPS 1e-6

static char *tmpdir;

/* Write @text to a config file and load it. */
static SimCluster *load(const char *text)
{
	g_autofree char *path = g_build_filename(tmpdir, "c.ini", NULL);
	g_autofree char *err = NULL;
	SimCluster *c = NULL;
	int rc;

	ck_assert(g_file_set_contents(path, text, -1, NULL));
	rc = sim_cluster_load(path, NULL, &c, &err);
	ck_assert_msg(rc == 0, "load: %s", err);
	return c;
}

static char *load_error(const char *text)
{
	g_autofree char *path = g_build_filename(tmpdir, "bad.ini", NULL);
	char *err = NULL;
	SimCluster *c = NULL;

	ck_assert(g_file_set_contents(path, text, -1, NULL));
	ck_assert_int_lt(sim_cluster_load(path, NULL, &c, &err), 0);
	ck_assert_ptr_null(c);
	ck_assert_ptr_nonnull(err);
	return err;
}

static SimPod pod(const char *cls, int64_t arrival_s, int64_t duration_s, int64_t cpu_milli,
		  int64_t mem_gib)
{
	return (SimPod){.id = "p", .cls = cls, .arrival_ms = arrival_s * S,
			.duration_ms = duration_s < 0 ? SIM_FOREVER : duration_s * S,
			.cpu_milli = cpu_milli, .memory_bytes = mem_gib << 30};
}

static void run(const SimCluster *c, SimPod *pods, size_t n, int64_t until_s, bool full,
		uint64_t seed, SimResult *r)
{
	SimTrace t = {.pods = pods, .n_pods = n};
	SimRunConfig cfg = {.cluster = c, .trace = &t, .seed = seed,
			    .until_ms = until_s < 0 ? -1 : until_s * S, .full_loops = full, .check = true,
			    .trace_path = "t", .format_name = "native", .cluster_path = "c"};
	g_autofree char *err = NULL;
	int rc = sim_engine_run(&cfg, NULL, r, &err);

	ck_assert_msg(rc == 0, "run: %s", err);
}

static void check_conservation(const SimResult *r)
{
	ck_assert_uint_eq(r->total, r->finished + r->running_at_end + r->pending_at_end);
	ck_assert_uint_eq(r->scheduled + r->never_scheduled, r->total);
	ck_assert_uint_le(r->never_scheduled, r->pending_at_end);
	ck_assert_uint_le(r->finished + r->running_at_end, r->scheduled);
}

#define ONE_GROUP                                                                                \
	"[cluster]\nname = tiny\ndeprovision_delay = fixed 30s\n"                                \
	"[boot slow]\ndelay = fixed 60s\n"                                                       \
	"[machine m4]\ncpu = 4\nmemory = 16Gi\ncount = 3\ncost_per_hour = 2\n"                 \
	"[group g]\nclass = container\nmachine_types = m4\nboot = slow\nmin = 0\nmax = 3\n"     \
	"[autoscaler]\nscan-interval = 10s\nscale-down-unneeded-time = 1m\n"                    \
	"scale-down-delay-after-add = 0s\n"

/*
 * One 2-core pod arrives at 5 s and runs 100 s; no node at first.
 *   t=10  loop: the pod is pending -> scale up by 1; machine taken at 10
 *   t=70  node ready (boot fixed 60 s), the pod binds: pending 70-5 = 65 s
 *   t=170 the pod ends; the loop at 170 finds the node empty: unneeded since 170
 *   t=230 unneeded for 60 s, not more than scale-down-unneeded-time: kept
 *   t=240 unneeded for 70 s: deleted
 *   t=270 the machine is back in the pool (deprovision 30 s)
 * Until 400 s: machine held 10..270 = 260 s = 0.0722222 h, cost 2/h ->
 * 0.144444; the node counted (provisioning + ready) 10..240 = 230 s, mean
 * 230/400 = 0.575; one scale-up, one scale-down; 41 loops (0, 10, ..., 400).
 */
START_TEST(test_tiny_hand_computed)
{
	g_autoptr(SimCluster) c = load(ONE_GROUP);
	SimPod pods[] = {pod("container", 5, 100, 2000, 4)};
	SimResult r;

	run(c, pods, 1, 400, false, 1, &r);
	check_conservation(&r);
	ck_assert_uint_eq(r.total, 1);
	ck_assert_uint_eq(r.finished, 1);
	ck_assert_double_eq_tol(r.pending_p50, 65, EPS);
	ck_assert_double_eq_tol(r.pending_max, 65, EPS);
	ck_assert_double_eq_tol(r.overall.machine_hours, 260.0 / 3600, EPS);
	ck_assert_double_eq_tol(r.groups[0].cost, 260.0 / 3600 * 2, EPS);
	ck_assert_double_eq_tol(r.groups[0].nodes_mean, 230.0 / 400, EPS);
	ck_assert_int_eq(r.groups[0].nodes_peak, 1);
	ck_assert_int_eq(r.scale_ups, 1);
	ck_assert_int_eq(r.scale_downs, 1);
	ck_assert_int_eq(r.groups[0].scale_ups, 1);
	ck_assert_int_eq(r.groups[0].scale_downs, 1);
	ck_assert_int_eq(r.machines_used_peak, 1);
	ck_assert_int_eq(r.machines_total, 3);
	/* Ready 70..240: CPU 2/4 for 100 s of 170, memory 4/16. */
	ck_assert_double_eq_tol(r.groups[0].cpu_alloc_mean, 50.0 / 170, EPS);
	ck_assert_double_eq_tol(r.groups[0].mem_alloc_mean, 25.0 / 170, EPS);
	ck_assert_double_eq_tol(r.groups[0].cpu_alloc_p95, 0.5, EPS);
	ck_assert_uint_eq(r.loops, 41);
	sim_result_clear(&r);
}
END_TEST

#define ONE_NODE                                                                                 \
	"[cluster]\nname = one\n"                                                                \
	"[machine m96]\ncpu = 96\nmemory = 768Gi\ncount = 4\ncost_per_hour = 1\n"               \
	"[group c]\nclass = container\nmachine_types = m96\nmin = 1\nmax = 1\n"                 \
	"[autoscaler]\nscan-interval = 10s\n"

/*
 * Allocation figures are time-weighted, not averages of the samples.  One
 * node of 96 cores and 768 GiB, ready from 0.
 *
 * One pod of 48 cores and 192 GiB from 0 to 100 s, until 100: CPU 0.5 and
 * memory 0.25 all the time, so means and p95 are 0.5 and 0.25 (the 11
 * samples at 0, 10, ..., 100 gave 0.4545: the one at 100, after the pod
 * ended, counted as a tenth of the time).
 *
 * Ten 48-core pods of 5 s at 1, 11, ..., 91 s, until 96: 0.5 for 50 s
 * and 0 for 46 s, mean 25/96 = 0.260417 (the samples at 0, 10, ..., 90 all
 * fall between pods and gave 0); 0 holds 46/96 = 48% of the time, so the
 * p95 is 0.5.
 *
 * 24 cores from 0 to 100 s and 72 more from 96 to 100 s, until 100: 0.25
 * for 96 s and 1 for 4 s, mean (24 + 4) / 100 = 0.28; 0.25 holds 96% of
 * the time, so the p95 is 0.25 (the samples gave 0.318 and 1).
 */
START_TEST(test_alloc_time_weighted)
{
	g_autoptr(SimCluster) c = load(ONE_NODE);
	SimPod half[] = {pod("container", 0, 100, 48000, 192)};
	SimPod shorts[10], burst[] = {pod("container", 0, 100, 24000, 0),
				      pod("container", 96, 4, 72000, 0)};
	SimResult r;

	run(c, half, 1, 100, false, 1, &r);
	ck_assert_double_eq_tol(r.groups[0].cpu_alloc_mean, 0.5, EPS);
	ck_assert_double_eq_tol(r.groups[0].cpu_alloc_p95, 0.5, EPS);
	ck_assert_double_eq_tol(r.groups[0].mem_alloc_mean, 0.25, EPS);
	ck_assert_double_eq_tol(r.groups[0].mem_alloc_p95, 0.25, EPS);
	ck_assert_double_eq_tol(r.overall.cpu_alloc_mean, 0.5, EPS);
	ck_assert_double_eq_tol(r.overall.mem_alloc_mean, 0.25, EPS);
	sim_result_clear(&r);

	for (int i = 0; i < 10; i++)
		shorts[i] = pod("container", 1 + 10 * i, 5, 48000, 0);
	run(c, shorts, 10, 96, false, 1, &r);
	ck_assert_double_eq_tol(r.groups[0].cpu_alloc_mean, 25.0 / 96, EPS);
	ck_assert_double_eq_tol(r.groups[0].cpu_alloc_p95, 0.5, EPS);
	ck_assert_double_eq_tol(r.overall.cpu_alloc_mean, 25.0 / 96, EPS);
	ck_assert_double_eq_tol(r.overall.cpu_alloc_p95, 0.5, EPS);
	ck_assert_double_eq_tol(r.groups[0].mem_alloc_mean, 0, EPS);
	sim_result_clear(&r);

	run(c, burst, 2, 100, false, 1, &r);
	ck_assert_double_eq_tol(r.groups[0].cpu_alloc_mean, 0.28, EPS);
	ck_assert_double_eq_tol(r.groups[0].cpu_alloc_p95, 0.25, EPS);
	sim_result_clear(&r);
}
END_TEST

/*
 * Three 3-core pods at 0 s on 4-core machines: one per node, so the loop
 * at 0 asks for 3 nodes; they are ready at 60 s, every pod waited 60 s.
 * A fourth pod at 1 s that fits nowhere else: the pool has only 3
 * machines, so it stays pending (never scheduled) until the end.
 */
START_TEST(test_pool_exhausted)
{
	g_autoptr(SimCluster) c = load(ONE_GROUP);
	SimPod pods[] = {pod("container", 0, 1000, 3000, 1), pod("container", 0, 1000, 3000, 1),
			 pod("container", 0, 1000, 3000, 1), pod("container", 1, 1000, 3000, 1)};
	SimResult r;

	run(c, pods, 4, 500, false, 1, &r);
	check_conservation(&r);
	ck_assert_uint_eq(r.running_at_end, 3);
	ck_assert_uint_eq(r.pending_at_end, 1);
	ck_assert_uint_eq(r.never_scheduled, 1);
	ck_assert_int_eq(r.groups[0].nodes_peak, 3);
	ck_assert_int_eq(r.machines_used_peak, 3);
	/* waits 60, 60, 60 and 500-1 = 499: max 499, p50 60 */
	ck_assert_double_eq_tol(r.pending_p50, 60, EPS);
	ck_assert_double_eq_tol(r.pending_max, 499, EPS);
	sim_result_clear(&r);
}
END_TEST

/*
 * Provisioning delay uniform 100..200 s.  Pods 1000 s apart, each alone
 * on a fresh node (the previous node is unneeded 10 s after its pod ends
 * and gone long before the next pod): each pod arrives on a loop tick, so
 * its wait is exactly one draw of the delay, in [100, 200].
 */
START_TEST(test_provisioning_delay_honoured)
{
	g_autoptr(SimCluster) c = load(
		"[cluster]\n[boot b]\ndelay = uniform 100s 200s\n"
		"[machine m]\ncpu = 4\nmemory = 16Gi\ncount = 50\n"
		"[group g]\nclass = container\nmachine_types = m\nboot = b\nmax = 50\n"
		"[autoscaler]\nscan-interval = 10s\nscale-down-unneeded-time = 10s\n"
		"scale-down-delay-after-add = 0s\n");
	SimPod pods[20];
	SimResult r;

	for (int i = 0; i < 20; i++)
		pods[i] = pod("container", 1000 * i, 50, 3000, 1);
	for (uint64_t seed = 1; seed <= 3; seed++) {
		run(c, pods, 20, 21000, false, seed, &r);
		check_conservation(&r);
		ck_assert_uint_eq(r.finished, 20);
		ck_assert_double_ge(r.pending_min + EPS, 100);
		ck_assert_double_le(r.pending_max, 200 + EPS);
		/* 20 draws of a uniform: not all the same */
		ck_assert_double_lt(r.pending_min, r.pending_max);
		ck_assert_int_eq(r.scale_ups, 20);
		sim_result_clear(&r);
	}
}
END_TEST

/*
 * A group's max holds over all its machine types.  Group g may use types
 * a (4 cores) and b (8 cores), max 1 node; boot 60 s, unneeded 1 m.
 *   t=0   p1 (3 cores, 100 s): scale up a (least waste)
 *   t=5   p2 (3 cores, 10 s) does not fit beside p1; the group is at its
 *         max, so no scale-up: it waits for p1
 *   t=60  a ready, p1 runs (waited 60 s); t=160 p1 ends, p2 runs (155 s)
 *   t=170 p2 ends; a unneeded from 170, deleted at 240 (unneeded for
 *         more than 1 m)
 *   t=250 p3 (7 cores, only b fits): scale up b, ready at 310 (60 s)
 * Two scale-ups.  Before, the core saw max 1 for a and for b, asked b for
 * a node at 10 past the group's max, was refused, and backed b off for
 * 5 minutes, so p3 waited past the backoff, and three scale-ups.
 */
START_TEST(test_group_max_over_types)
{
	g_autoptr(SimCluster) c = load(
		"[cluster]\ndeprovision_delay = fixed 0s\n[boot b]\ndelay = fixed 60s\n"
		"[machine a]\ncpu = 4\nmemory = 16Gi\ncount = 5\n"
		"[machine b]\ncpu = 8\nmemory = 32Gi\ncount = 5\n"
		"[group g]\nclass = container\nmachine_types = a, b\nboot = b\nmax = 1\n"
		"[autoscaler]\nscan-interval = 10s\nscale-down-unneeded-time = 1m\n"
		"scale-down-delay-after-add = 0s\n");
	SimPod pods[] = {pod("container", 0, 100, 3000, 1), pod("container", 5, 10, 3000, 1),
			 pod("container", 250, 100, 7000, 1)};
	SimResult r;

	for (int full = 0; full <= 1; full++) {
		run(c, pods, 3, 600, full, 1, &r);
		check_conservation(&r);
		ck_assert_uint_eq(r.finished, 3);
		ck_assert_double_eq_tol(r.pending_p50, 60, EPS);
		ck_assert_double_eq_tol(r.pending_max, 155, EPS);
		ck_assert_double_eq_tol(r.pending_mean, (60 + 155 + 60) / 3.0, EPS);
		ck_assert_int_eq(r.groups[0].nodes_peak, 1);
		ck_assert_int_eq(r.groups[0].scale_ups, 2);
		ck_assert_int_eq(r.scale_ups, 2);
		sim_result_clear(&r);
	}
}
END_TEST

/*
 * Scores are kube-scheduler's NodeResourcesFit integers, each resource
 * rounded down: least-allocated gives (capacity - requested) x 100 /
 * capacity.  Node x (3 cores, 3 GiB, empty) and node y (100 cores, 100
 * GiB, 32 and 32 GiB in use); a pod of 1 core and 1 GiB scores
 * 200/3 = 66 on x and 6700/100 = 67 on y, so it goes to y.  Before, the
 * score was 100 - requested x 100 / capacity, 67 on both, and the tie
 * went to x, the first node.
 */
START_TEST(test_least_allocated_rounding)
{
	g_autoptr(SimCluster) c = load(
		"[cluster]\n"
		"[machine x]\ncpu = 3\nmemory = 3Gi\ncount = 1\n"
		"[machine y]\ncpu = 100\nmemory = 100Gi\ncount = 1\n"
		"[group gx]\nclass = container\nmachine_types = x\nmin = 1\nmax = 1\n"
		"[group gy]\nclass = container\nmachine_types = y\nmin = 1\nmax = 1\n"
		"[autoscaler]\nscan-interval = 10s\n");
	SimPod pods[] = {pod("container", 0, 100, 32000, 32), pod("container", 1, 99, 1000, 1)};
	SimResult r;

	run(c, pods, 2, 100, false, 1, &r);
	ck_assert_uint_eq(r.finished, 2);
	/* x stays empty; y holds 32 cores from 0 and 33 from 1 to 100 */
	ck_assert_double_eq_tol(r.groups[0].cpu_alloc_mean, 0, EPS);
	ck_assert_double_eq_tol(r.groups[1].cpu_alloc_mean, (32 * 1 + 33 * 99) / 10000.0, EPS);
	sim_result_clear(&r);
}
END_TEST

#define TWO_GROUPS(MODE, OWN_A, OWN_B)                                                           \
	"[cluster]\nmode = " MODE "\n[boot fast]\ndelay = fixed 10s\n"                           \
	"[machine m]\ncpu = 4\nmemory = 16Gi\ncount = 4\n"                                      \
	"[group a]\nclass = container\nmachine_types = m\nboot = fast\nmax = 4\n" OWN_A           \
	"[group b]\nclass = vm\nmachine_types = m\nboot = fast\nmax = 4\n" OWN_B                  \
	"[autoscaler]\nscan-interval = 10s\n"

/*
 * Eight 3-core containers at once on 4-core machines, 4 machines in all.
 * Pooled: group a takes all 4 machines, 4 pods run, 4 wait.  Dedicated
 * with a owning 2 and b owning 2: a gets 2 nodes and never one of b's,
 * though b uses none.
 */
START_TEST(test_dedicated_never_lends)
{
	g_autoptr(SimCluster) pooled = load(TWO_GROUPS("pooled", "", ""));
	g_autoptr(SimCluster) ded = load(TWO_GROUPS("dedicated", "machines = 2\n", "machines = 2\n"));
	SimPod pods[8];
	SimResult r;

	for (int i = 0; i < 8; i++)
		pods[i] = pod("container", 0, 1000, 3000, 1);
	run(pooled, pods, 8, 300, false, 1, &r);
	check_conservation(&r);
	ck_assert_int_eq(r.groups[0].nodes_peak, 4);
	ck_assert_uint_eq(r.running_at_end, 4);
	sim_result_clear(&r);

	run(ded, pods, 8, 300, false, 1, &r);
	check_conservation(&r);
	ck_assert_int_eq(r.groups[0].nodes_peak, 2);
	ck_assert_int_eq(r.groups[1].nodes_peak, 0);
	ck_assert_uint_eq(r.running_at_end, 2);
	ck_assert_int_eq(r.borrowed, 0);
	sim_result_clear(&r);
}
END_TEST

/* Two 1-core bare-metal instances on 4-core machines: a whole machine each. */
START_TEST(test_baremetal_whole_machine)
{
	g_autoptr(SimCluster) c = load(
		"[cluster]\n[boot b]\ndelay = fixed 10s\n"
		"[machine m]\ncpu = 4\nmemory = 16Gi\ncount = 4\n"
		"[group bm]\nclass = baremetal\nmachine_types = m\nboot = b\nmax = 4\n"
		"[autoscaler]\nscan-interval = 10s\n");
	SimPod pods[] = {pod("baremetal", 0, -1, 1000, 1), pod("baremetal", 0, -1, 1000, 1)};
	SimResult r;

	run(c, pods, 2, 100, false, 1, &r);
	ck_assert_uint_eq(r.running_at_end, 2);
	ck_assert_int_eq(r.groups[0].nodes_peak, 2);
	/* 2 nodes from 0 to 100 s */
	ck_assert_double_eq_tol(r.groups[0].machine_hours, 200.0 / 3600, EPS);
	sim_result_clear(&r);
}
END_TEST

/* VM pods go only to VM groups' nodes; a container group never takes them. */
START_TEST(test_vm_needs_vm_worker)
{
	g_autoptr(SimCluster) c = load(
		"[cluster]\n[boot b]\ndelay = fixed 10s\n"
		"[machine m]\ncpu = 4\nmemory = 16Gi\ncount = 4\n"
		"[group ct]\nclass = container\nmachine_types = m\nboot = b\nmin = 1\nmax = 4\n"
		"[autoscaler]\nscan-interval = 10s\n");
	SimPod pods[] = {pod("vm", 0, 50, 1000, 1)};
	SimResult r;

	run(c, pods, 1, 100, false, 1, &r);
	ck_assert_uint_eq(r.never_scheduled, 1);
	ck_assert_int_eq(r.groups[0].nodes_peak, 1);
	sim_result_clear(&r);
}
END_TEST

/* A busy random workload: skipping loops changes nothing but the loop count. */
START_TEST(test_skip_equivalence_and_conservation)
{
	g_autoptr(SimCluster) c = load(
		"[cluster]\nfailure_rate = 0.1\ndeprovision_delay = uniform 10s 90s\n"
		"[machine m]\ncpu = 8\nmemory = 32Gi\ncount = 12\ncost_per_hour = 1.5\n"
		"[machine b]\ncpu = 32\nmemory = 128Gi\ncount = 3\ncost_per_hour = 5\n"
		"[group c]\nclass = container\nmachine_types = m\nmax = 10\n"
		"[group v]\nclass = vm\nmachine_types = m,b\nmax = 6\n"
		"[group x]\nclass = baremetal\nmachine_types = b\nboot = image\nmax = 3\n"
		"[autoscaler]\nscan-interval = 10s\nscale-down-unneeded-time = 3m\n"
		"scale-down-delay-after-add = 2m\n");
	static const char *const cls[] = {"container", "container", "vm", "baremetal"};
	SimPod pods[300];
	SimResult a, b;
	uint64_t x = 12345;

	for (int i = 0; i < 300; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		pods[i] = pod(cls[(x >> 33) % 4], i * 40 + (int64_t)((x >> 20) % 40),
			      60 + (int64_t)((x >> 40) % 3000), 500 + (int64_t)((x >> 13) % 6) * 1000,
			      1 + (int64_t)((x >> 50) % 8));
	}
	run(c, pods, 300, 20000, false, 7, &a);
	run(c, pods, 300, 20000, true, 7, &b);
	check_conservation(&a);
	ck_assert_uint_lt(a.loops_full, b.loops_full);
	ck_assert_uint_eq(a.loops, b.loops);
	ck_assert_uint_eq(a.finished, b.finished);
	ck_assert_uint_eq(a.scheduled, b.scheduled);
	ck_assert_double_eq(a.pending_mean, b.pending_mean);
	ck_assert_double_eq(a.pending_max, b.pending_max);
	ck_assert_double_eq(a.overall.machine_hours, b.overall.machine_hours);
	ck_assert_double_eq(a.overall.cost, b.overall.cost);
	ck_assert_double_eq(a.overall.cpu_alloc_mean, b.overall.cpu_alloc_mean);
	ck_assert_double_eq(a.overall.mem_alloc_p95, b.overall.mem_alloc_p95);
	ck_assert_int_eq(a.scale_ups, b.scale_ups);
	ck_assert_int_eq(a.scale_downs, b.scale_downs);
	ck_assert_uint_eq(a.events, b.events);
	ck_assert_int_gt(a.scale_downs, 0);
	sim_result_clear(&a);
	sim_result_clear(&b);
}
END_TEST

/*
 * A run near the 10-year trace limit: timeseries.csv is written as the
 * run goes and its rows stay within SIM_MAX_SAMPLE_ROWS, the interval
 * raised to the least multiple of the configured one that fits.  Before,
 * every row was kept in memory (2 GB for this span at 10 s) and the file
 * was larger than the report reads.
 *   1,000,000 rows at 10 s cover 0 .. 9,999,990 s; 10,000,000 s needs 20 s.
 *   315,000,000 s: ceil(315e6 / (999,999 x 10)) = 32, so 320 s and
 *   315e6 / 320 + 1 = 984,376 rows.
 */
START_TEST(test_long_run_sampling)
{
	g_autoptr(SimCluster) c = load("[cluster]\nsample_interval = 10s\n"
				       "[machine m]\ncpu = 4\nmemory = 16Gi\ncount = 1\n"
				       "[group g]\nclass = container\nmachine_types = m\nmin = 1\nmax = 1\n"
				       "[autoscaler]\nscan-interval = 1h\n");
	SimPod pods[] = {pod("container", 0, 1, 1000, 1), pod("container", 314999999, 1, 1000, 1)};
	SimTrace t = {.pods = pods, .n_pods = 2};
	SimRunConfig cfg = {.cluster = c, .trace = &t, .seed = 1, .until_ms = -1,
			    .trace_path = "t", .format_name = "native", .cluster_path = "c"};
	g_autofree char *dir = g_build_filename(tmpdir, "long", NULL);
	g_autofree char *csv = g_build_filename(dir, "timeseries.csv", NULL);
	g_autofree char *err = NULL;
	SimResult r;
	FILE *f;
	char line[256];
	uint64_t rows = 0;
	int64_t last = -1;

	ck_assert_int_eq(sim_engine_sample_interval(c, 9999990 * S), 10 * S);
	ck_assert_int_eq(sim_engine_sample_interval(c, 10000000 * S), 20 * S);
	ck_assert_int_eq(sim_engine_sample_interval(c, 315000000 * S), 320 * S);
	ck_assert_msg(sim_engine_run(&cfg, dir, &r, &err) == 0, "run: %s", err);
	ck_assert_int_eq(r.sim_end_ms, 315000000 * S);
	ck_assert_int_eq(r.sample_interval_ms, 320 * S);
	f = fopen(csv, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	ck_assert_str_eq(line, "t,pending,pool_free,cpu_alloc,mem_alloc,nodes_total,nodes.g\n");
	while (fgets(line, sizeof(line), f)) {
		int64_t ts = g_ascii_strtoll(line, NULL, 10);

		ck_assert_int_eq(ts, last < 0 ? 0 : last + 320);
		last = ts;
		rows++;
	}
	fclose(f);
	ck_assert_uint_eq(rows, 984376);
	ck_assert_int_eq(last, 315000000);
	sim_result_clear(&r);
	unlink(csv);
	g_free(csv);
	csv = g_build_filename(dir, "summary.json", NULL);
	unlink(csv);
	rmdir(dir);
}
END_TEST

/* Bad configurations: one line naming the file, the section and the key. */
/*
 * timeseries.csv ends with a row at sim_end even when it is not a multiple
 * of the interval: one 48-core pod from 0 to 25 s on the one node, rows
 * at 0, 10, 20 (the pod running) and 25 (it has ended), the final state
 * that the 10 s grid alone missed.  The row limit counts that row: 10 s
 * rows reach 9,999,990 s in 1,000,000 rows, so 9,999,995 s needs 20 s.
 */
START_TEST(test_sample_at_end)
{
	g_autoptr(SimCluster) c = load(ONE_NODE);
	SimPod pods[] = {pod("container", 0, 25, 48000, 192)};
	SimTrace t = {.pods = pods, .n_pods = 1};
	SimRunConfig cfg = {.cluster = c, .trace = &t, .seed = 1, .until_ms = -1, .check = true,
			    .trace_path = "t", .format_name = "native", .cluster_path = "c"};
	g_autofree char *dir = g_build_filename(tmpdir, "end", NULL);
	g_autofree char *csv = g_build_filename(dir, "timeseries.csv", NULL);
	g_autofree char *json = g_build_filename(dir, "summary.json", NULL);
	g_autofree char *err = NULL;
	g_autofree char *got = NULL;
	SimResult r;

	ck_assert_int_eq(sim_engine_sample_interval(c, 9999990 * S), 10 * S);
	ck_assert_int_eq(sim_engine_sample_interval(c, 9999995 * S), 20 * S);
	ck_assert_msg(sim_engine_run(&cfg, dir, &r, &err) == 0, "run: %s", err);
	ck_assert_int_eq(r.sim_end_ms, 25 * S);
	ck_assert(g_file_get_contents(csv, &got, NULL, NULL));
	ck_assert_str_eq(got, "t,pending,pool_free,cpu_alloc,mem_alloc,nodes_total,nodes.c\n"
			      "0,0,3,0.5,0.25,1,1\n"
			      "10,0,3,0.5,0.25,1,1\n"
			      "20,0,3,0.5,0.25,1,1\n"
			      "25,0,3,0,0,1,1\n");
	sim_result_clear(&r);
	unlink(csv);
	unlink(json);
	rmdir(dir);
}
END_TEST

START_TEST(test_bad_configs)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{"[cluster]\nmode = shared\n", "[cluster] mode: 'shared' is not pooled or dedicated"},
		{"[cluster]\n[machine m]\ncpu = lots\nmemory = 1Gi\n", "[machine m] cpu: 'lots' is not a quantity"},
		{"[cluster]\n[machine m]\ncpu = 4\n", "[machine m] memory: missing"},
		{"[cluster]\n[machine m]\ncpu = 4\nmemory = 1Gi\ncount = 2\n[group g]\nclass = gpu\n",
		 "[group g] class: 'gpu' is not container, vm or baremetal"},
		{"[cluster]\n[machine m]\ncpu = 4\nmemory = 1Gi\n[group g]\nclass = vm\nmachine_types = n\n",
		 "[group g] machine_types: no machine type 'n'"},
		{"[cluster]\n[machine m]\ncpu = 4\nmemory = 1Gi\n[group g]\nclass = vm\nmachine_types = m\nmin = 3\nmax = 2\n",
		 "[group g] max: 2 is below min 3"},
		{"[cluster]\n[machine m]\ncpu = 4\nmemory = 1Gi\n[group g]\nclass = vm\nmachine_types = m\n"
		 "[autoscaler]\nscale-down-utilization-threshold = 2\n",
		 "[autoscaler] scale-down-utilization-threshold:"},
		{"[cluster]\n[machine m]\ncpu = 4\nmemory = 1Gi\n[group g]\nclass = vm\nmachine_types = m\n"
		 "[autoscaler]\nno-such-flag = 1\n",
		 "[autoscaler] no-such-flag:"},
		{"[cluster]\nmode = dedicated\n[machine m]\ncpu = 4\nmemory = 1Gi\ncount = 1\n"
		 "[group g]\nclass = vm\nmachine_types = m\nmachines = 2\n",
		 "[machine m] count: 1 machines, but the groups own 2"},
		{"[cluster]\n[boot b]\ndelay = sometimes\n", "[boot b] delay: 'sometimes' is not a delay"},
		{"[cluster]\ncolour = blue\n", "[cluster] colour: unknown key"},
		{"[clusterr]\n", "[cluster]: missing section"},
		{"[cluster]\nnodes = /nonexistent/openb_node_list.csv\n", "[cluster] nodes:"},
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *err = load_error(cases[i].text);
		g_autofree char *want = g_strdup_printf("%s/bad.ini: %s", tmpdir, cases[i].want);

		ck_assert_msg(g_str_has_prefix(err, want), "case %zu: got \"%s\", want prefix \"%s\"", i,
			      err, want);
		ck_assert_msg(!strchr(err, '\n'), "case %zu: more than one line: %s", i, err);
	}
}
END_TEST

START_TEST(test_dist_parse)
{
	SimDist d;

	ck_assert_int_eq(sim_dist_parse("90s", &d), 0);
	ck_assert_int_eq(d.kind, SIM_DIST_FIXED);
	ck_assert_int_eq(d.a_ms, 90000);
	ck_assert_int_eq(sim_dist_parse("uniform 1m 2m", &d), 0);
	ck_assert_int_eq(d.kind, SIM_DIST_UNIFORM);
	ck_assert_int_eq(d.b_ms, 120000);
	ck_assert_int_eq(sim_dist_parse("normal 15m 3m", &d), 0);
	ck_assert_int_eq(d.kind, SIM_DIST_NORMAL);
	ck_assert_int_eq(sim_dist_parse("uniform 2m 1m", &d), -EINVAL);
	ck_assert_int_eq(sim_dist_parse("poisson 1m", &d), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sim-engine");
	TCase *t = tcase_create("engine");
	SRunner *sr;
	int failed;

	tmpdir = g_dir_make_tmp("test-sim-engine.XXXXXX", NULL);
	if (!tmpdir) {
		perror("test-sim-engine: temporary directory");
		return 1;
	}
	tcase_set_timeout(t, 120);
	tcase_add_test(t, test_tiny_hand_computed);
	tcase_add_test(t, test_alloc_time_weighted);
	tcase_add_test(t, test_long_run_sampling);
	tcase_add_test(t, test_sample_at_end);
	tcase_add_test(t, test_pool_exhausted);
	tcase_add_test(t, test_provisioning_delay_honoured);
	tcase_add_test(t, test_group_max_over_types);
	tcase_add_test(t, test_least_allocated_rounding);
	tcase_add_test(t, test_dedicated_never_lends);
	tcase_add_test(t, test_baremetal_whole_machine);
	tcase_add_test(t, test_vm_needs_vm_worker);
	tcase_add_test(t, test_skip_equivalence_and_conservation);
	tcase_add_test(t, test_bad_configs);
	tcase_add_test(t, test_dist_parse);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	{
		g_autofree char *a = g_build_filename(tmpdir, "c.ini", NULL);
		g_autofree char *b = g_build_filename(tmpdir, "bad.ini", NULL);

		unlink(a);
		unlink(b);
		rmdir(tmpdir);
		g_free(tmpdir);
	}
	return failed ? 1 : 0;
}
