/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The simulator's engine: replays a trace (trace.h) against a cluster
 * configuration (cluster.h) in simulated time, with a kube-scheduler-like
 * scheduler, the autoscaler core's RunOnce every scan interval driving a
 * bare-metal pool through the core's cloud-provider interface, and writes
 * summary.json and timeseries.csv (docs/sim-output.md is the contract).
 * A run is a function of (trace, cluster, seed, until): the same inputs
 * give the same bytes, apart from the "run" line of summary.json (wall
 * time and how many loops were skipped).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "trace.h"

typedef struct {
	const SimCluster *cluster;
	const SimTrace *trace;
	uint64_t seed;
	int64_t until_ms; /* < 0: the end of the trace */
	/* Run every autoscaler loop in full (tests of the skipping rule). */
	bool full_loops;
	/* Check the engine's invariants after every step (tests; O(pods + machines) each). */
	bool check;
	/* For summary.json only. */
	const char *trace_path;
	const char *format_name;
	const char *cluster_path;
	/* Called now and then when not NULL (progress on a terminal). */
	void (*progress)(void *data, int64_t now_ms, int64_t end_ms, uint64_t events);
	void *progress_data;
} SimRunConfig;

typedef struct {
	char *id; /* NULL for overall */
	double machine_hours, cost;
	double cpu_alloc_mean, cpu_alloc_p95, mem_alloc_mean, mem_alloc_p95;
	int64_t nodes_peak;
	double nodes_mean;
	int64_t scale_ups, scale_downs;
} SimGroupStats;

typedef struct {
	int64_t sim_end_ms;
	uint64_t total, scheduled, finished, running_at_end, pending_at_end, never_scheduled,
		skipped_bad, evicted;
	double pending_p50, pending_p90, pending_p99, pending_max, pending_mean; /* seconds */
	double pending_min;
	SimGroupStats overall;
	SimGroupStats *groups; /* one per cluster group, in config order */
	guint n_groups;
	int64_t scale_ups, scale_downs;
	int64_t machines_total, machines_used_peak;
	uint64_t events, loops, loops_full;
	double wall_seconds;
	int64_t sample_interval_ms; /* the one used: sim_engine_sample_interval() */
	/* Checks the tests read: the most machines of another group's subset a
	 * dedicated group ever held (must stay 0). */
	int64_t borrowed;
} SimResult;

void sim_result_clear(SimResult *r);

/*
 * At most this many timeseries.csv rows, and rows x columns, so that any
 * run's file stays well within what the report reads (report.h: 48 Mi
 * cells, 512 MiB at up to 30 bytes a cell).
 */
#define SIM_MAX_SAMPLE_ROWS INT64_C(1000000)
#define SIM_MAX_SAMPLE_CELLS INT64_C(16 * 1024 * 1024)

/*
 * The sample interval a run of @cl up to @end_ms uses: the configured one,
 * or its least multiple that keeps the rows within the limits above.
 */
int64_t sim_engine_sample_interval(const SimCluster *cl, int64_t end_ms);

/*
 * Run the simulation; with @out_dir (not NULL) write summary.json and
 * timeseries.csv there.  Returns 0 and fills @res, or -errno with *@err.
 */
int sim_engine_run(const SimRunConfig *cfg, const char *out_dir, SimResult *res, char **err);
