// SPDX-License-Identifier: Apache-2.0
/*
 * The simulator's event queue (see eventq.h), a binary min-heap in one
 * array.
 *
 * Ordering rule.  Event a comes before event b when
 *
 *     a.time < b.time, or a.time == b.time and a.seq < b.seq,
 *
 * where seq is a 64-bit counter the queue gives each event as it is pushed
 * (0, 1, 2, ...; it never repeats within a queue).  So events at the same
 * simulated time come out in the order they were scheduled (FIFO), never
 * in an order that depends on the heap's layout, on pointer values or on a
 * hash: given the same pushes, the pops are the same, and a simulation run
 * twice with the same seed gives the same output byte for byte.
 *
 * Invariants: every element's key (time, seq) is >= its parent's (the heap
 * property, checked by sim_eventq_check()); every queued event's time is
 * >= now, the time of the last pop, because a push before now is refused.
 * Hence pops are non-decreasing in time, and strictly increasing in
 * (time, seq).  Cancelling is left to the engine (mark its own record
 * stale and ignore the event when it pops), which keeps this O(log n) per
 * push and pop with no index to maintain.
 */
#include "config.h"

#include <errno.h>

#include "eventq.h"

struct _SimEventQ {
	SimEvent *heap; /* heap[0] is the first event */
	size_t len, cap;
	uint64_t next_seq;
	int64_t now;
};

static inline bool before(const SimEvent *a, const SimEvent *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

SimEventQ *sim_eventq_new(void)
{
	return g_new0(SimEventQ, 1);
}

void sim_eventq_free(SimEventQ *q)
{
	if (!q)
		return;
	g_free(q->heap);
	g_free(q);
}

int sim_eventq_push(SimEventQ *q, int64_t time, uint32_t kind, uint64_t arg, void *ptr,
		    uint64_t *seq)
{
	SimEvent ev = {.time = time, .kind = kind, .arg = arg, .ptr = ptr};
	size_t i;

	if (time < q->now)
		return -ERANGE;
	if (q->len == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 64;

		if (q->len >= SIM_EVENTQ_MAX)
			return -ENOMEM;
		if (cap > SIM_EVENTQ_MAX)
			cap = SIM_EVENTQ_MAX;
		q->heap = g_renew(SimEvent, q->heap, cap);
		q->cap = cap;
	}
	ev.seq = q->next_seq++;
	/* Sift up: move parents down until ev's place is found. */
	for (i = q->len++; i > 0; ) {
		size_t parent = (i - 1) / 2;

		if (!before(&ev, &q->heap[parent]))
			break;
		q->heap[i] = q->heap[parent];
		i = parent;
	}
	q->heap[i] = ev;
	if (seq)
		*seq = ev.seq;
	return 0;
}

bool sim_eventq_pop(SimEventQ *q, SimEvent *ev)
{
	SimEvent last;
	size_t i = 0, n;

	if (q->len == 0)
		return false;
	*ev = q->heap[0];
	q->now = ev->time;
	n = --q->len;
	if (n == 0)
		return true;
	last = q->heap[n];
	/* Sift down the last element from the root. */
	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && before(&q->heap[c + 1], &q->heap[c]))
			c++;
		if (!before(&q->heap[c], &last))
			break;
		q->heap[i] = q->heap[c];
		i = c;
	}
	q->heap[i] = last;
	return true;
}

const SimEvent *sim_eventq_peek(const SimEventQ *q)
{
	return q->len ? &q->heap[0] : NULL;
}

size_t sim_eventq_len(const SimEventQ *q)
{
	return q->len;
}

int64_t sim_eventq_now(const SimEventQ *q)
{
	return q->now;
}

bool sim_eventq_check(const SimEventQ *q)
{
	for (size_t i = 1; i < q->len; i++) {
		if (before(&q->heap[i], &q->heap[(i - 1) / 2]))
			return false;
	}
	for (size_t i = 0; i < q->len; i++) {
		if (q->heap[i].time < q->now || q->heap[i].seq >= q->next_seq)
			return false;
	}
	return true;
}
