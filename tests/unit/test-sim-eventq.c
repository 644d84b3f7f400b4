// SPDX-License-Identifier: Apache-2.0
/*
 * The simulator's event queue (sim/eventq.c): pops come out in (time,
 * sequence) order checked against a sort of the same pushes, equal times
 * come out first-in first-out, the past cannot be scheduled, two queues
 * fed the same pushes pop the same sequence, and a few million events
 * go through in well under a second (a generous bound, not a benchmark).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "eventq.h"

/*
 * check's ck_assert records a mark point (a write to a pipe) each time, too
 * slow for millions of operations: the hot loops test with this instead.
 */
#define FAST_ASSERT(cond)                                                   \
	do {                                                                \
		if (!(cond))                                                \
			ck_abort_msg("%s:%d: %s", __FILE__, __LINE__, #cond); \
	} while (0)

/* A tiny deterministic generator for the test's own inputs. */
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

START_TEST(test_order_matches_sort)
{
	g_autoptr(SimEventQ) q = sim_eventq_new();
	const size_t n = 20000;
	g_autofree SimEvent *want = g_new(SimEvent, n);
	uint64_t s = 42;
	SimEvent ev;

	for (size_t i = 0; i < n; i++) {
		/* Few distinct times so that ties are common. */
		int64_t t = (int64_t)(lcg(&s) % 500);
		uint64_t seq;

		FAST_ASSERT(sim_eventq_push(q, t, 7, i, NULL, &seq) == 0);
		FAST_ASSERT(seq == i);
		want[i] = (SimEvent){.time = t, .seq = seq, .kind = 7, .arg = i};
	}
	ck_assert(sim_eventq_check(q));
	qsort(want, n, sizeof(*want), cmp_ev);
	for (size_t i = 0; i < n; i++) {
		FAST_ASSERT(sim_eventq_pop(q, &ev));
		FAST_ASSERT(ev.time == want[i].time && ev.seq == want[i].seq &&
			    ev.arg == want[i].arg);
		if (i % 997 == 0)
			FAST_ASSERT(sim_eventq_check(q));
	}
	ck_assert(!sim_eventq_pop(q, &ev));
	ck_assert_uint_eq(sim_eventq_len(q), 0);
}
END_TEST

START_TEST(test_ties_fifo_and_past)
{
	g_autoptr(SimEventQ) q = sim_eventq_new();
	int tag[5];
	SimEvent ev;

	/* Pushed while popping, at the current time: after those already queued. */
	ck_assert_int_eq(sim_eventq_push(q, 10, 1, 0, &tag[0], NULL), 0);
	ck_assert_int_eq(sim_eventq_push(q, 10, 1, 1, &tag[1], NULL), 0);
	ck_assert_int_eq(sim_eventq_push(q, 5, 2, 2, &tag[2], NULL), 0);
	ck_assert_ptr_eq(sim_eventq_peek(q)->ptr, &tag[2]);
	ck_assert(sim_eventq_pop(q, &ev));
	ck_assert_int_eq(ev.time, 5);
	ck_assert_int_eq(sim_eventq_now(q), 5);
	ck_assert(sim_eventq_pop(q, &ev));
	ck_assert_ptr_eq(ev.ptr, &tag[0]);
	ck_assert_int_eq(sim_eventq_push(q, 10, 1, 3, &tag[3], NULL), 0);
	ck_assert(sim_eventq_pop(q, &ev));
	ck_assert_ptr_eq(ev.ptr, &tag[1]);
	ck_assert(sim_eventq_pop(q, &ev));
	ck_assert_ptr_eq(ev.ptr, &tag[3]);
	/* The past is refused and leaves the queue as it was. */
	ck_assert_int_eq(sim_eventq_push(q, 9, 1, 4, &tag[4], NULL), -ERANGE);
	ck_assert_uint_eq(sim_eventq_len(q), 0);
	ck_assert_ptr_null(sim_eventq_peek(q));
	ck_assert(sim_eventq_check(q));
}
END_TEST

/* Run a little simulation in which popped events schedule more; hash the pops. */
static uint64_t churn(uint64_t seed, size_t n)
{
	g_autoptr(SimEventQ) q = sim_eventq_new();
	uint64_t h = 1469598103934665603ULL, s = seed;
	SimEvent ev;
	size_t pushed = 0;

	for (int i = 0; i < 100; i++, pushed++)
		FAST_ASSERT(sim_eventq_push(q, (int64_t)(lcg(&s) % 100), 0, pushed, NULL, NULL) == 0);
	while (sim_eventq_pop(q, &ev)) {
		h = (h ^ (uint64_t)ev.time) * 1099511628211ULL;
		h = (h ^ ev.arg) * 1099511628211ULL;
		for (int k = 0; k < 2 && pushed < n; k++, pushed++)
			FAST_ASSERT(sim_eventq_push(q, ev.time + (int64_t)(lcg(&s) % 50), 0,
						    pushed, NULL, NULL) == 0);
	}
	return h;
}

START_TEST(test_deterministic)
{
	ck_assert_uint_eq(churn(7, 100000), churn(7, 100000));
	ck_assert_uint_ne(churn(7, 100000), churn(8, 100000));
}
END_TEST

START_TEST(test_millions)
{
	g_autoptr(SimEventQ) q = sim_eventq_new();
	const size_t n = 2000000;
	uint64_t s = 1;
	int64_t last_t = -1;
	uint64_t last_seq = 0;
	gint64 t0 = g_get_monotonic_time();
	SimEvent ev;

	for (size_t i = 0; i < n; i++)
		FAST_ASSERT(sim_eventq_push(q, (int64_t)(lcg(&s) % 1000000000), 0, i, NULL, NULL) ==
			    0);
	for (size_t i = 0; i < n; i++) {
		FAST_ASSERT(sim_eventq_pop(q, &ev));
		FAST_ASSERT(ev.time > last_t || (ev.time == last_t && ev.seq > last_seq));
		last_t = ev.time;
		last_seq = ev.seq;
	}
	/* Generous: a few hundred ms normally, even with the sanitizers. */
	ck_assert_int_lt(g_get_monotonic_time() - t0, 20 * G_USEC_PER_SEC);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sim-eventq");
	TCase *t = tcase_create("eventq");
	SRunner *sr;
	int failed;

	tcase_set_timeout(t, 60);
	tcase_add_test(t, test_order_matches_sort);
	tcase_add_test(t, test_ties_fifo_and_past);
	tcase_add_test(t, test_deterministic);
	tcase_add_test(t, test_millions);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
