// SPDX-License-Identifier: Apache-2.0
/*
 * The simulator's event queue under a simulation-like load: N events
 * pushed at random times, then a steady state where each pop pushes one
 * event a random delay later (the queue stays N long), then a drain.
 * Baseline in the same run: qsort(3) of the same N (time, seq) keys, the
 * cost of ordering them with no queue at all.  Prints operations per
 * second and the ratio.  Built by `make bench-sim`, never by make check.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "eventq.h"

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return *s >> 33;
}

static int cmp_ev(const void *a, const void *b)
{
	const SimEvent *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? (size_t)g_ascii_strtoull(argv[1], NULL, 10) : 1000000;
	g_autoptr(SimEventQ) q = sim_eventq_new();
	g_autofree SimEvent *keys = g_new(SimEvent, n);
	uint64_t s = 1, sum = 0;
	double tq, ts;
	gint64 t0;
	SimEvent ev;

	if (n == 0 || n > 100000000) {
		fprintf(stderr, "usage: bench-sim-eventq [N], 1 <= N <= 100000000\n");
		return 2;
	}
	t0 = g_get_monotonic_time();
	for (size_t i = 0; i < n; i++)
		sim_eventq_push(q, (int64_t)(lcg(&s) % 2592000000u), 0, i, NULL, NULL);
	for (size_t i = 0; i < n; i++) {
		sim_eventq_pop(q, &ev);
		sum += ev.arg;
		sim_eventq_push(q, ev.time + (int64_t)(lcg(&s) % 600000), 0, i, NULL, NULL);
	}
	while (sim_eventq_pop(q, &ev))
		sum += ev.arg;
	tq = (double)(g_get_monotonic_time() - t0) / G_USEC_PER_SEC;

	s = 1;
	t0 = g_get_monotonic_time();
	for (size_t i = 0; i < n; i++)
		keys[i] = (SimEvent){.time = (int64_t)(lcg(&s) % 2592000000u), .seq = i};
	qsort(keys, n, sizeof(*keys), cmp_ev);
	ts = (double)(g_get_monotonic_time() - t0) / G_USEC_PER_SEC;

	/* 2n pushes and 2n pops for the queue; n keys sorted for the baseline. */
	printf("eventq: %zu events queued, %zu push+pop pairs in %.3f s (%.1f M pairs/s)\n", n,
	       2 * n, tq, 2.0 * (double)n / tq / 1e6);
	printf("qsort baseline: %zu keys in %.3f s (%.1f M keys/s); eventq per pair / qsort per key: %.2fx\n",
	       n, ts, (double)n / ts / 1e6, (tq / (2.0 * (double)n)) / (ts / (double)n));
	return sum == 0 ? 1 : 0;
}
