// SPDX-License-Identifier: Apache-2.0
/*
 * sim_trace_load on one trace: how long reading and sorting every record
 * into memory takes, which is what the engine will do before a run.
 * Prints "N pods in S s"; bench-sim-trace.sh runs it under /usr/bin/time
 * for the peak memory.  Built by `make bench-sim`, never by make check.
 */
#include "config.h"

#include <stdio.h>

#include "trace.h"

int main(int argc, char **argv)
{
	g_autoptr(SimTrace) t = NULL;
	g_autofree char *err = NULL;
	gint64 t0;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: bench-sim-load TRACE\n");
		return 2;
	}
	t0 = g_get_monotonic_time();
	rc = sim_trace_load(argv[1], NULL, &t, &err);
	if (rc < 0) {
		fprintf(stderr, "bench-sim-load: %s\n", err ? err : g_strerror(-rc));
		return 1;
	}
	printf("%zu pods in %.2f s\n", t->n_pods,
	       (double)(g_get_monotonic_time() - t0) / G_USEC_PER_SEC);
	return 0;
}
