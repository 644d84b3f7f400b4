/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The simulator's event queue: a pure priority queue of timed events with
 * no I/O, no clock and no globals, so a run is a function of its inputs.
 * Events come out ordered by (time, sequence number), where the sequence
 * number is assigned by the queue at push time; see eventq.c for the rule
 * and why it makes a run deterministic.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <glib.h>

typedef struct {
	int64_t time;  /* simulated ms */
	uint64_t seq;  /* assigned by sim_eventq_push, increasing */
	uint32_t kind; /* the engine's event type; opaque here */
	uint64_t arg;  /* the engine's payload (an index, an id); opaque here */
	void *ptr;     /* the engine's payload; borrowed, never freed by the queue */
} SimEvent;

typedef struct _SimEventQ SimEventQ;

/* An empty queue whose clock starts at 0; never NULL. */
SimEventQ *sim_eventq_new(void);
void sim_eventq_free(SimEventQ *q);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimEventQ, sim_eventq_free)

/*
 * Schedule an event at @time.  Returns 0 and, if @seq is not NULL, the
 * event's sequence number; -ERANGE if @time is before the time of the last
 * popped event (the past cannot be changed), -ENOMEM past
 * SIM_EVENTQ_MAX events.
 */
int sim_eventq_push(SimEventQ *q, int64_t time, uint32_t kind, uint64_t arg, void *ptr,
		    uint64_t *seq);
/* Remove the first event into @ev: true, or false when the queue is empty. */
bool sim_eventq_pop(SimEventQ *q, SimEvent *ev);
/* The first event without removing it (NULL when empty); valid until the next push/pop. */
const SimEvent *sim_eventq_peek(const SimEventQ *q);
size_t sim_eventq_len(const SimEventQ *q);
/* The time of the last popped event (0 before the first pop). */
int64_t sim_eventq_now(const SimEventQ *q);
/* Debug check of the heap invariant; O(n).  True when it holds. */
bool sim_eventq_check(const SimEventQ *q);

#define SIM_EVENTQ_MAX ((size_t)1 << 30)
