/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The BareMetalManager database: machines, pools, instances, disks, NICs,
 * operations and their step history, idempotency keys and the controller
 * lease, in one SQLite file shared by bm-api and bm-controller (WAL, foreign
 * keys, busy timeout, schema version in PRAGMA user_version).
 *
 * Every function that changes more than one row runs one transaction
 * (BEGIN IMMEDIATE, so two writers serialise on the database lock rather
 * than failing at commit).  Reads return json-c objects in the API's shape.
 *
 * A struct bm_store is one connection: use it from one thread at a time
 * (bm-api guards it with a mutex; bm-controller opens one per worker).
 * Returns follow CONVENTIONS.md: >= 0 or -errno; *out written only on
 * success.  The errno values the API maps to HTTP: -ENOENT (404), -EEXIST
 * and -EBUSY (409; *state says the current state when there is one),
 * -ENOSPC (409, no free machine), -EINVAL (400), -ESTALE (controller lost
 * its lease or the row moved), -EAGAIN (the database stayed locked by
 * another writer past the busy timeout: 503), anything else 500.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "json.h"
#include "lifecycle.h"

#define BM_SCHEMA_VERSION 3

struct bm_store;

int bm_store_open(const char *path, struct bm_store **out, char **msg);
/* Open and migrate only up to schema @version (for the migration tests). */
int bm_store_open_version(const char *path, int version, struct bm_store **out, char **msg);
void bm_store_close(struct bm_store *st);
typedef struct bm_store bm_store;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(bm_store, bm_store_close)
/* Map an SQLite result code to -errno. */
int bm_sqlite_errno(int rc);
/* The schema version recorded in the database. */
int bm_store_schema_version(struct bm_store *st);
/* Debug: run every invariant of lifecycle.c over every row; 0 or -EPROTO with *why. */
int bm_store_check(struct bm_store *st, char **why);

/* ---- machines (api) ---- */

/* Enroll from a validated request object (see bm-api for the fields). */
int bm_machine_enroll(struct bm_store *st, json_object *req, json_object **out, char **msg);
int bm_machine_get(struct bm_store *st, const char *id, json_object **out);
/*
 * Page of machines ordered by id, after @after (NULL for the first page),
 * filtered by @state (NULL: any) and @labels (NULL or an object whose
 * pairs must all match).  *next is the id to pass as @after, or NULL.
 */
int bm_machine_list(struct bm_store *st, const char *state, json_object *labels,
		    const char *after, int limit, json_object **out, char **next);
/* -EBUSY and *state when the machine is in use. */
int bm_machine_delete(struct bm_store *st, const char *id, char **state);
/*
 * Into maintenance (@on; an operation still verifying fails as superseded)
 * or out of it: back to enrolling under a new enroll operation, the
 * machine's "operation", whose id is *@op (written only when ending it;
 * @op may be NULL with @on).  -EBUSY and *state when the state does not
 * allow it.
 */
int bm_machine_maintenance(struct bm_store *st, const char *id, bool on, const char *reason,
			   int64_t *op, char **state);
/* error -> deprovisioning (with an instance) or enrolling; returns the operation id. */
int bm_machine_recover(struct bm_store *st, const char *id, int64_t *op, char **state);
/* target "on", "off", "reboot", for active machines; returns the operation id. */
int bm_machine_power(struct bm_store *st, const char *id, const char *target, int64_t *op,
		     char **state);
int bm_machine_history(struct bm_store *st, const char *id, json_object **out);

/* ---- hot-plug (api) ---- */

int bm_disk_list(struct bm_store *st, const char *machine, json_object **out);
/* @bus: "virtio-blk" or "nvme" (validated by the caller), NULL for virtio-blk. */
int bm_disk_add(struct bm_store *st, const char *machine, int64_t size_gb, const char *image,
		const char *bus, json_object **out, int64_t *op, char **state);
int bm_disk_remove(struct bm_store *st, const char *machine, const char *disk, int64_t *op,
		   char **state);
int bm_nic_list(struct bm_store *st, const char *machine, json_object **out);
int bm_nic_add(struct bm_store *st, const char *machine, const char *network, const char *mac,
	       json_object **out, int64_t *op, char **state);
int bm_nic_remove(struct bm_store *st, const char *machine, const char *nic, int64_t *op,
		  char **state);

/* ---- pools (api) ---- */

int bm_pool_create(struct bm_store *st, json_object *req, json_object **out);
int bm_pool_get(struct bm_store *st, const char *name, json_object **out);
int bm_pool_list(struct bm_store *st, json_object **out);
int bm_pool_delete(struct bm_store *st, const char *name);

/* ---- instances (api) ---- */

/*
 * Claim a free machine of the pool and record the instance, its boot disk
 * and NICs, in one transaction: of two callers for the last machine one
 * gets -ENOSPC.  *out is the instance; *op the provision operation.
 */
int bm_instance_create(struct bm_store *st, json_object *req, json_object **out, int64_t *op);
int bm_instance_get(struct bm_store *st, const char *id, json_object **out);
int bm_instance_list(struct bm_store *st, json_object **out);
int bm_instance_delete(struct bm_store *st, const char *id, int64_t *op, char **state);

/* ---- operations ---- */

int bm_op_get(struct bm_store *st, int64_t id, json_object **out);
/* Operations with id > @after, oldest first, at most @limit, optionally of one machine. */
int bm_op_list(struct bm_store *st, const char *machine, int64_t after, int limit,
	       json_object **out);

/* ---- idempotency keys (api) ---- */

/*
 * Reserve @key for (@method, @path, @body_hash).  0: reserved, go ahead.
 * 1: done before, *status and *body (g_malloc'd) hold the first answer.
 * -EBUSY: in progress elsewhere; -EEXIST: key used for another request.
 */
int bm_idem_begin(struct bm_store *st, const char *key, const char *method, const char *path,
		  const char *body_hash, int *status, char **body);
int bm_idem_finish(struct bm_store *st, const char *key, int status, const char *body);
int bm_idem_forget(struct bm_store *st, const char *key);

/* ---- retention ---- */

/*
 * What bm_store_purge() removes; an age or count of 0 keeps everything of
 * its kind.  Never purged, whatever the limits: an open operation, one a
 * machine, disk or NIC still names as its own (the machine's current or
 * last one), the history rows of a machine's own operation, and an
 * instance that is not "deleted".
 */
struct bm_purge_limits {
	int64_t history_max_entries; /* history rows kept per machine, newest first */
	int64_t history_max_age_ms; /* history rows that finished longer ago go */
	int64_t operation_max_age_ms; /* operations that finished longer ago go */
	int64_t instance_max_age_ms; /* instances deleted longer ago go */
	int64_t batch; /* rows per transaction and kind, >= 1 */
};

/* Rows removed, by kind (added to by bm_store_purge()). */
struct bm_purge_counts {
	int64_t history;
	int64_t operations;
	int64_t instances;
	int64_t idempotency; /* expired keys (see bm_idem_begin()) */
};

/*
 * One batch of each kind, as of @now, each in a transaction of its own
 * (at most @lim->batch rows, so the write lock is held briefly), adding
 * what it removed to *@counts and to the totals /metrics reports.  1 when
 * a batch was full (call again for the rest), 0 when nothing is left.
 */
int bm_store_purge(struct bm_store *st, const struct bm_purge_limits *lim, int64_t now,
		   struct bm_purge_counts *counts);

/* ---- metrics ---- */

/*
 * Appends Prometheus text for machines by state, operation durations
 * (purged operations included) and rows purged.
 */
int bm_store_metrics(struct bm_store *st, GString *out);

/* ---- controller ---- */

/*
 * Take or renew the controller lease for @ttl_ms.  A holder with the same
 * name takes it back at once (a restarted controller), others wait until
 * it expires.  0 held, -EBUSY held by someone else.
 */
int bm_lease_acquire(struct bm_store *st, const char *holder, int64_t ttl_ms);
int bm_lease_release(struct bm_store *st, const char *holder);

/*
 * Move the oldest queued machines to provisioning while fewer than @cap
 * are, their provision operations to running.  A machine whose operation
 * is no longer pending (finished: cancelled or failed) is left queued.
 */
int bm_store_promote_queued(struct bm_store *st, const char *holder, int cap);
/*
 * Ids of machines with work due at @now: transient states whose next_at
 * has come, and active machines with a power request or disks/NICs to
 * (un)plug.  *out: NULL-terminated, g_strfreev.
 */
int bm_store_due(struct bm_store *st, int64_t now, char ***out);

struct bm_disk_row {
	char *id; /* also the volume id and the handler's disk id */
	char *role; /* "boot" or "data" */
	char *image;
	int64_t size_gb;
	char *bus; /* virtio-blk or nvme */
	char *state; /* attaching, attached, detaching, detached, error */
	int64_t attempts;
	int64_t next_at; /* hot-plug retries wait until then */
	int64_t op;
};

struct bm_nic_row {
	char *id;
	char *network;
	char *mac;
	char *state;
	int64_t attempts;
	int64_t next_at;
	int64_t op;
};

struct bm_machine_row {
	char *id;
	char *handler;
	enum bm_state state;
	enum bm_step step;
	int64_t attempts;
	int64_t next_at;
	int64_t step_started_at;
	int64_t state_since;
	char *instance; /* NULL when none */
	char *user_data; /* the instance's, NULL when none */
	char *power_target; /* "" when none */
	int64_t power_op;
	int64_t op;
	GPtrArray *disks; /* of struct bm_disk_row */
	GPtrArray *nics; /* of struct bm_nic_row */
};

void bm_machine_row_free(struct bm_machine_row *m);
typedef struct bm_machine_row bm_machine_row;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(bm_machine_row, bm_machine_row_free)
int bm_machine_load(struct bm_store *st, const char *id, struct bm_machine_row **out);

/*
 * The write before a step: records that the step started (first attempt)
 * and marks the operation running.  -ESTALE when the row moved or the
 * lease is lost.
 */
int bm_step_begin(struct bm_store *st, const char *holder, const struct bm_machine_row *m);
/*
 * The write after a successful step: move (state, step) to the next step,
 * or to the next state (finishing the operation), and record history.
 * last_error is cleared: a failed attempt's error is over once the step
 * succeeds.  @disk_state / @nic_state: when non-NULL, the new state of all the
 * machine's disk / NIC rows, their last_error cleared ("" deletes the rows).
 */
int bm_step_done(struct bm_store *st, const char *holder, const struct bm_machine_row *m,
		 const char *disk_state, const char *nic_state, int64_t step_ms);
/*
 * The write after a failed step: attempts+1 and retry at @next_at, or with
 * @give_up the machine goes to error (error_count+1, last_error, the
 * operation failed).
 */
int bm_step_failed(struct bm_store *st, const char *holder, const struct bm_machine_row *m,
		   const char *error, int64_t next_at, bool give_up, int64_t step_ms);
/*
 * Not done yet (booting): look again at @next_at.  The call succeeded, so
 * the count of failed attempts starts again from 0 and last_error is cleared.
 */
int bm_step_wait(struct bm_store *st, const char *holder, const struct bm_machine_row *m,
		 int64_t next_at);
/*
 * The write before the controller carries out the power or hot-plug
 * request @op (each attempt): a pending operation becomes running, with
 * started_at now; one already running or finished is left as it is.
 * -ESTALE when @holder lost the lease.
 */
int bm_op_begin(struct bm_store *st, const char *holder, int64_t op);
/*
 * Outcome of the power request @op (the machine's power_op when the
 * controller read it) on an active machine: @power is the state reached
 * (NULL: unknown), recorded in any case.  When a newer request replaced
 * @op meanwhile, nothing else changes: the newer one is for the next
 * round.  Otherwise, with @retry_at > 0 the request stays and is tried
 * again then (attempts + 1, last_error @error); without, it finishes, its
 * operation failing with @error when not NULL, and the machine's last_error
 * is @error, or cleared on success.
 */
int bm_machine_set_power(struct bm_store *st, const char *holder, const char *id, int64_t op,
			 const char *power, const char *error, int64_t retry_at);
/*
 * Half-way through the power request @op (a reboot whose "off" is done):
 * record @power and make @target what is left to do, so that a restart
 * carries out only that.  -ESTALE, changing nothing but @power, when a
 * newer request or a deprovisioning replaced @op meanwhile.
 */
int bm_machine_power_progress(struct bm_store *st, const char *holder, const char *id, int64_t op,
			      const char *power, const char *target);
/*
 * Hot-plug results for the row @d as the controller read it: the row goes
 * to @state ("" deletes it), its operation finishes with @error (NULL:
 * success).  With @retry_at > 0 the row keeps its state and waits
 * (attempts + 1).  -ESTALE, changing nothing, when the row's state or
 * operation changed since (a detach replaced an attach in flight).
 */
int bm_disk_done(struct bm_store *st, const char *holder, const struct bm_disk_row *d,
		 const char *state, const char *error, int64_t retry_at);
int bm_nic_done(struct bm_store *st, const char *holder, const struct bm_nic_row *n,
		const char *state, const char *error, int64_t retry_at);
