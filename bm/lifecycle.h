/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bare-metal lifecycle as data: machine states, the steps of the
 * transient states, and which transitions are allowed.  lifecycle.c holds
 * the description (states, transitions, invariants); this header is what
 * bm-api, bm-controller and the store use to name and check them.  Pure:
 * no I/O, no globals besides constant tables.
 */
#pragma once

#include <stdbool.h>

enum bm_state {
	BM_ENROLLING,
	BM_AVAILABLE,
	BM_QUEUED,
	BM_PROVISIONING,
	BM_BOOTING,
	BM_ACTIVE,
	BM_DEPROVISIONING,
	BM_ERROR,
	BM_MAINTENANCE,
	BM_N_STATES,
};

/* Steps, in order, of each transient state; "" for the others. */
enum bm_step {
	BM_STEP_NONE,
	/* enrolling */
	BM_STEP_VERIFY,
	/* provisioning */
	BM_STEP_CREATE_DISK,
	BM_STEP_ATTACH_DISK,
	BM_STEP_ATTACH_NICS,
	BM_STEP_SET_BOOT,
	BM_STEP_POWER_ON,
	/* booting */
	BM_STEP_WAIT_BOOT,
	/* deprovisioning */
	BM_STEP_POWER_OFF,
	BM_STEP_DETACH_NICS,
	BM_STEP_DETACH_DISKS,
	BM_STEP_DELETE_DISKS,
	BM_N_STEPS,
};

/* Names as stored in the database and shown by the API; NULL if out of range. */
const char *bm_state_name(enum bm_state s);
const char *bm_step_name(enum bm_step s);
/* 0 and *out, or -EINVAL for an unknown name. */
int bm_state_parse(const char *name, enum bm_state *out);
int bm_step_parse(const char *name, enum bm_step *out);

/* Whether @from -> @to is one of the transitions listed in lifecycle.c. */
bool bm_transition_allowed(enum bm_state from, enum bm_state to);
/* The first step of a state (BM_STEP_NONE for stable states). */
enum bm_step bm_state_first_step(enum bm_state s);
/*
 * The step after @step within state @s; BM_STEP_NONE when @step is the last
 * one, i.e. the machine moves on to bm_state_next(@s).
 */
enum bm_step bm_step_next(enum bm_state s, enum bm_step step);
/* Where a transient state leads once its last step is done. */
enum bm_state bm_state_next(enum bm_state s);
/* Whether the machine is "in use" (has or is getting an instance). */
bool bm_state_in_use(enum bm_state s);

/*
 * The debug invariant check over one machine row (see lifecycle.c):
 * 0 when it holds, else -EPROTO and *@why names the broken rule (static).
 */
int bm_machine_check(enum bm_state s, enum bm_step step, bool has_instance,
		     const char **why);
