// SPDX-License-Identifier: Apache-2.0
/*
 * The bare-metal machine lifecycle.  This file owns the state machine; the
 * store keeps one row per machine with (state, step, attempts, next_at),
 * bm-api moves machines between stable states on request, and bm-controller
 * performs the steps of the transient ones by calling the machine's
 * bm-handler.  Written out here, as SQLite's pager.c does, so that the code
 * in the other files can be checked against one description.
 *
 * STATES
 *
 *   enrolling        recorded by POST /v1/machines; the controller checks
 *                    that the handler answers and powers the host off
 *                    (step verify).
 *   available        free, powered off, no disks or NICs attached.
 *   queued           claimed by an instance (POST /v1/instances) and waiting
 *                    for a provisioning slot: at most max_provisioning
 *                    machines are in "provisioning" at once.
 *   provisioning     steps create_disk -> attach_disk -> attach_nics ->
 *                    set_boot -> power_on.
 *   booting          step wait_boot: the host runs from its cloud disk and
 *                    the handler reports it booted (the node joined), or the
 *                    boot timeout passes.
 *   active           in use by its instance; data disks and NICs can be
 *                    hot-plugged, power can be switched.
 *   deprovisioning   steps power_off -> detach_nics -> detach_disks ->
 *                    delete_disks, then back to available.
 *   error            a step failed max_retries times, or booting timed out;
 *                    last_error says why, error_count counts.  The instance
 *                    (if any) stays attached to the machine until someone
 *                    deprovisions it or asks to recover.
 *   maintenance      taken out of service by an operator; the controller
 *                    leaves it alone.
 *
 * TRANSITIONS (anything else is refused, by bm_transition_allowed())
 *
 *   enrolling      -> available        verify done               (controller)
 *   enrolling      -> error            verify failed             (controller)
 *   available      -> queued           provision                 (api)
 *   queued         -> provisioning     a slot is free            (controller)
 *   queued         -> deprovisioning   deprovision before start  (api)
 *   provisioning   -> booting          power_on done             (controller)
 *   provisioning   -> error            a step gave up            (controller)
 *   booting        -> active           handler reports booted    (controller)
 *   booting        -> error            boot timeout              (controller)
 *   booting        -> deprovisioning   deprovision               (api)
 *   active         -> deprovisioning   deprovision               (api)
 *   deprovisioning -> available        delete_disks done         (controller)
 *   deprovisioning -> error            a step gave up            (controller)
 *   error          -> deprovisioning   deprovision / recover     (api)
 *   error          -> enrolling        recover without instance  (api)
 *   enrolling, available, error -> maintenance   (api; not with an instance)
 *   maintenance    -> enrolling        end of maintenance        (api; a new
 *                                      enroll operation: the machine's last
 *                                      one finished, and stays as it did)
 *
 * STEPS AND CRASHES
 *
 * A step is: read the row, call the handler, then in one transaction write
 * the next (state, step) together with what the call did (a disk row marked
 * attached, a NIC row deleted) and a history record.  Each handler call is
 * idempotent and names its object by an id the database already holds
 * (volume and disk ids are the disk row's id, NIC ids the NIC row's id, all
 * written before the first call), so a controller killed between the call
 * and the write replays the call and gets the same answer: no second
 * attach, and no volume the database does not know about.  deprovisioning
 * detaches and deletes whatever rows the machine has, whatever their state,
 * which is also how a failed provisioning is cleaned up.
 *
 * A failed call increments attempts and sets next_at to now + base *
 * 2^attempts (capped, with +-25% jitter) and sets last_error; after
 * max_retries failures in a row the machine goes to error (wait_boot's
 * successful polls reset attempts: the boot deadline, not isolated
 * glitches, ends a slow boot).  The step succeeding (or a wait_boot poll
 * answering) clears last_error: it names what the machine is stuck on,
 * never an error it got past.
 * Calls have a timeout, so no step waits forever; booting has its own
 * deadline.
 *
 * Writes by the controller are conditional on (state, step, operation)
 * being what it read and on the controller lease being held by the writer
 * (store.c), so an api request that moved the machine meanwhile, or a
 * second controller, makes the write a no-op instead of a lost update.
 *
 * INVARIANTS (bm_machine_check(), run by the store in debug builds and by
 * the unit test)
 *
 *   1. step is one of the steps of state (or none for stable states).
 *   2. queued, provisioning, booting and active machines have an instance;
 *      enrolling and available ones do not.
 *   3. an available machine has no disk or NIC rows (checked by the store,
 *      which sees the rows).
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "lifecycle.h"

static const char *const state_names[BM_N_STATES] = {
	[BM_ENROLLING] = "enrolling",
	[BM_AVAILABLE] = "available",
	[BM_QUEUED] = "queued",
	[BM_PROVISIONING] = "provisioning",
	[BM_BOOTING] = "booting",
	[BM_ACTIVE] = "active",
	[BM_DEPROVISIONING] = "deprovisioning",
	[BM_ERROR] = "error",
	[BM_MAINTENANCE] = "maintenance",
};

static const char *const step_names[BM_N_STEPS] = {
	[BM_STEP_NONE] = "",
	[BM_STEP_VERIFY] = "verify",
	[BM_STEP_CREATE_DISK] = "create_disk",
	[BM_STEP_ATTACH_DISK] = "attach_disk",
	[BM_STEP_ATTACH_NICS] = "attach_nics",
	[BM_STEP_SET_BOOT] = "set_boot",
	[BM_STEP_POWER_ON] = "power_on",
	[BM_STEP_WAIT_BOOT] = "wait_boot",
	[BM_STEP_POWER_OFF] = "power_off",
	[BM_STEP_DETACH_NICS] = "detach_nics",
	[BM_STEP_DETACH_DISKS] = "detach_disks",
	[BM_STEP_DELETE_DISKS] = "delete_disks",
};

/* Steps of each transient state, terminated by BM_STEP_NONE. */
static const enum bm_step enrolling_steps[] = {BM_STEP_VERIFY, BM_STEP_NONE};
static const enum bm_step provisioning_steps[] = {
	BM_STEP_CREATE_DISK, BM_STEP_ATTACH_DISK, BM_STEP_ATTACH_NICS,
	BM_STEP_SET_BOOT, BM_STEP_POWER_ON, BM_STEP_NONE,
};
static const enum bm_step booting_steps[] = {BM_STEP_WAIT_BOOT, BM_STEP_NONE};
static const enum bm_step deprovisioning_steps[] = {
	BM_STEP_POWER_OFF, BM_STEP_DETACH_NICS, BM_STEP_DETACH_DISKS,
	BM_STEP_DELETE_DISKS, BM_STEP_NONE,
};

static const enum bm_step *steps_of(enum bm_state s)
{
	switch (s) {
	case BM_ENROLLING:
		return enrolling_steps;
	case BM_PROVISIONING:
		return provisioning_steps;
	case BM_BOOTING:
		return booting_steps;
	case BM_DEPROVISIONING:
		return deprovisioning_steps;
	default:
		return NULL;
	}
}

/* allowed[from] is a bit mask of the states reachable from it. */
static const unsigned allowed[BM_N_STATES] = {
	[BM_ENROLLING] = 1u << BM_AVAILABLE | 1u << BM_ERROR | 1u << BM_MAINTENANCE,
	[BM_AVAILABLE] = 1u << BM_QUEUED | 1u << BM_MAINTENANCE,
	[BM_QUEUED] = 1u << BM_PROVISIONING | 1u << BM_DEPROVISIONING,
	[BM_PROVISIONING] = 1u << BM_BOOTING | 1u << BM_ERROR,
	[BM_BOOTING] = 1u << BM_ACTIVE | 1u << BM_ERROR | 1u << BM_DEPROVISIONING,
	[BM_ACTIVE] = 1u << BM_DEPROVISIONING,
	[BM_DEPROVISIONING] = 1u << BM_AVAILABLE | 1u << BM_ERROR,
	[BM_ERROR] = 1u << BM_DEPROVISIONING | 1u << BM_ENROLLING | 1u << BM_MAINTENANCE,
	[BM_MAINTENANCE] = 1u << BM_ENROLLING,
};

const char *bm_state_name(enum bm_state s)
{
	return (unsigned)s < BM_N_STATES ? state_names[s] : NULL;
}

const char *bm_step_name(enum bm_step s)
{
	return (unsigned)s < BM_N_STEPS ? step_names[s] : NULL;
}

int bm_state_parse(const char *name, enum bm_state *out)
{
	for (unsigned i = 0; i < BM_N_STATES; i++) {
		if (strcmp(name, state_names[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

int bm_step_parse(const char *name, enum bm_step *out)
{
	for (unsigned i = 0; i < BM_N_STEPS; i++) {
		if (strcmp(name, step_names[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

bool bm_transition_allowed(enum bm_state from, enum bm_state to)
{
	if ((unsigned)from >= BM_N_STATES || (unsigned)to >= BM_N_STATES)
		return false;
	return (allowed[from] >> to) & 1u;
}

enum bm_step bm_state_first_step(enum bm_state s)
{
	const enum bm_step *st = steps_of(s);

	return st ? st[0] : BM_STEP_NONE;
}

enum bm_step bm_step_next(enum bm_state s, enum bm_step step)
{
	const enum bm_step *st = steps_of(s);

	if (!st)
		return BM_STEP_NONE;
	for (; *st != BM_STEP_NONE; st++)
		if (*st == step)
			return st[1];
	return BM_STEP_NONE;
}

enum bm_state bm_state_next(enum bm_state s)
{
	switch (s) {
	case BM_ENROLLING:
		return BM_AVAILABLE;
	case BM_QUEUED:
		return BM_PROVISIONING;
	case BM_PROVISIONING:
		return BM_BOOTING;
	case BM_BOOTING:
		return BM_ACTIVE;
	case BM_DEPROVISIONING:
		return BM_AVAILABLE;
	default:
		return s;
	}
}

bool bm_state_in_use(enum bm_state s)
{
	return s == BM_QUEUED || s == BM_PROVISIONING || s == BM_BOOTING || s == BM_ACTIVE ||
	       s == BM_DEPROVISIONING;
}

int bm_machine_check(enum bm_state s, enum bm_step step, bool has_instance, const char **why)
{
	const enum bm_step *st = steps_of(s);
	bool found = false;

	if ((unsigned)s >= BM_N_STATES || (unsigned)step >= BM_N_STEPS) {
		*why = "state or step out of range";
		return -EPROTO;
	}
	if (!st) {
		found = step == BM_STEP_NONE;
	} else {
		for (; *st != BM_STEP_NONE; st++)
			found |= *st == step;
	}
	if (!found) {
		*why = "step does not belong to state";
		return -EPROTO;
	}
	if ((s == BM_QUEUED || s == BM_PROVISIONING || s == BM_BOOTING || s == BM_ACTIVE) &&
	    !has_instance) {
		*why = "machine in use without an instance";
		return -EPROTO;
	}
	if ((s == BM_ENROLLING || s == BM_AVAILABLE) && has_instance) {
		*why = "free machine with an instance";
		return -EPROTO;
	}
	return 0;
}
