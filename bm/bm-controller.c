// SPDX-License-Identifier: Apache-2.0
/*
 * bm-controller: the reconciler of BareMetalManager.  It drives each
 * machine recorded by bm-api through the lifecycle written at the top of
 * lifecycle.c by calling the bm-handler on the machine's DPU, one
 * idempotent step at a time, so that it can be killed at any moment and
 * resume where it was.
 *
 * The loop is level-triggered: every poll interval it reads which machines
 * have work due (a transient state whose next_at has come, or an active
 * machine with a power request or disks/NICs to plug) and hands each to a
 * worker thread; the worker runs steps while more are due at once.  Nothing
 * is remembered between rounds but the database, so a restart, a missed
 * wake-up or an api change made meanwhile all come out the same.
 *
 * Only the holder of the "controller" lease (store.c) works; others wait
 * and take over when it expires.  A restarted controller with the same --id
 * takes its own lease back at once, as an Ironic conductor clears its own
 * stale locks.  Every write is fenced by the lease and by the (state, step,
 * operation) the worker read, so a slow worker cannot undo newer progress.
 *
 * The leader also purges what the retention limits let go (history beyond
 * the newest entries of a machine, finished operations and deleted
 * instances past their age), every purge_interval, one small batch of
 * each kind per round until nothing is left, so that the purge never holds
 * the database's write lock long and machine work goes on between batches.
 *
 * Concurrency: the main thread owns its store connection; each worker
 * thread opens its own (thread-private) connection and HTTP client.
 * c->busy (the machines being worked on) is protected by c->lock.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "conf.h"
#include "handler-proto.h"
#include "httpd.h"
#include "log.h"
#include "store.h"

#define SHORT_OPTS "hVv"
#define DEFAULT_CONFIG "/etc/bm/bm-controller.conf"
#define DEFAULT_DB "/var/lib/bm/bm.db"
#define MAX_STEPS_PER_TURN 32
#define DAY_MS (24 * 3600 * 1000ULL)

enum { OPT_CONFIG = 256, OPT_DB, OPT_ID, OPT_CHECK };

static const struct option long_opts[] = {
	{"config", required_argument, NULL, OPT_CONFIG},
	{"db", required_argument, NULL, OPT_DB},
	{"id", required_argument, NULL, OPT_ID},
	{"check-invariants", no_argument, NULL, OPT_CHECK},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

struct ctl {
	char *db;
	char *id; /* lease holder name */
	int64_t workers;
	int64_t max_provisioning;
	int64_t max_retries;
	uint64_t retry_base_ms;
	uint64_t retry_max_ms;
	uint64_t step_timeout_ms;
	uint64_t boot_timeout_ms;
	uint64_t boot_poll_ms;
	uint64_t lease_ttl_ms;
	uint64_t poll_ms;
	bool check;
	/* Retention (main thread only): purge_interval 0 turns it off. */
	struct bm_purge_limits purge;
	uint64_t purge_interval_ms;
	int64_t purge_at; /* next pass; a pass with more to do goes on next round */
	struct bm_purge_counts purged; /* by the pass going on */

	GMutex lock; /* protects busy */
	GHashTable *busy; /* machine ids handed to a worker */
	GAsyncQueue *queue; /* machine ids for the workers; "" tells one to exit */
	GThread **threads; /* joined at exit, so no thread outlives main() */
	gint invariant_broken; /* atomic */
};

/* Why the main loop ends: the signal, or SIGABRT for a broken invariant; atomic. */
static gint stop;

static void close_store(gpointer p)
{
	bm_store_close(p);
}

static void close_client(gpointer p)
{
	bm_client_free(p);
}

/*
 * Per worker thread: its database connection and HTTP client (static: GLib
 * never frees a GPrivate).
 */
static GPrivate st_key = G_PRIVATE_INIT(close_store);
static GPrivate client_key = G_PRIVATE_INIT(close_client);

static void usage(void)
{
	printf("Usage: %s [OPTION]...\n", qt_cli_prog());
	fputs("Drive bare-metal machines through their lifecycle.\n"
	      "\n"
	      "  --config FILE      configuration file (default " DEFAULT_CONFIG ")\n"
	      "  --db PATH          SQLite database shared with bm-api\n"
	      "                     (default " DEFAULT_DB ")\n"
	      "  --id NAME          name in the controller lease (default: the host name)\n"
	      "  --check-invariants check the lifecycle invariants every round; exit on a\n"
	      "                     violation (for tests)\n"
	      "  -v, --verbose      log more (repeat for debug)\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
	      "Exit status: 0 success, 1 failure, 2 usage error.\n",
	      stdout);
}

/* ---- handler calls ---- */

/*
 * One call to the machine's handler.  0 on a 2xx answer (with *out when
 * wanted), else -errno and *err naming what failed.
 */
static int call(struct ctl *c, struct bm_client *cl, const char *base, const char *method,
		const char *path, json_object *body, json_object **out, char **err)
{
	g_autofree char *url = NULL;
	g_autofree char *msg = NULL;
	g_autoptr(json_object) res = NULL;
	size_t n = strlen(base);
	long status = 0;
	int rc;

	while (n > 0 && base[n - 1] == '/')
		n--;
	url = g_strdup_printf("%.*s%s", (int)n, base, path);
	rc = bm_client_call(cl, method, url, body, (long)c->step_timeout_ms, &status, &res, &msg);
	if (rc < 0) {
		*err = g_steal_pointer(&msg);
		return rc;
	}
	rc = bm_handler_answer(method, path, status, res, err);
	if (rc < 0)
		return rc;
	if (out)
		*out = g_steal_pointer(&res);
	return 0;
}

static json_object *obj1(const char *k, json_object *v)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, k, v);
	return o;
}

static int power(struct ctl *c, struct bm_client *cl, const char *base, bool on, char **err)
{
	g_autoptr(json_object) b = obj1("state", json_object_new_string(on ? "on" : "off"));

	return call(c, cl, base, "PUT", "/v1/power", b, NULL, err);
}

/* Create @d's volume; a boot volume also carries the instance's user-data (config drive). */
static int volume_create(struct ctl *c, struct bm_client *cl, const char *base,
			 const struct bm_disk_row *d, const char *user_data, char **err)
{
	g_autofree char *path = g_strdup_printf("/v1/volumes/%s", d->id);
	g_autoptr(json_object) b = obj1("size_gb", json_object_new_int64(d->size_gb));

	json_object_object_add(b, "image", json_object_new_string(d->image));
	if (user_data && strcmp(d->role, "boot") == 0)
		json_object_object_add(b, "user_data", json_object_new_string(user_data));
	return call(c, cl, base, "PUT", path, b, NULL, err);
}

static int disk_attach(struct ctl *c, struct bm_client *cl, const char *base,
		       const struct bm_disk_row *d, char **err)
{
	g_autofree char *path = g_strdup_printf("/v1/disks/%s", d->id);
	g_autoptr(json_object) b = obj1("volume", json_object_new_string(d->id));

	json_object_object_add(b, "bus", json_object_new_string(d->bus));
	return call(c, cl, base, "PUT", path, b, NULL, err);
}

static int del(struct ctl *c, struct bm_client *cl, const char *base, const char *what,
	       const char *id, char **err)
{
	g_autofree char *path = g_strdup_printf("/v1/%s/%s", what, id);

	return call(c, cl, base, "DELETE", path, NULL, NULL, err);
}

static int nic_attach(struct ctl *c, struct bm_client *cl, const char *base,
		      const struct bm_nic_row *n, char **err)
{
	g_autofree char *path = g_strdup_printf("/v1/nics/%s", n->id);
	g_autoptr(json_object) b = obj1("network", json_object_new_string(n->network));

	json_object_object_add(b, "mac", json_object_new_string(n->mac));
	return call(c, cl, base, "PUT", path, b, NULL, err);
}

static const struct bm_disk_row *boot_disk(const struct bm_machine_row *m)
{
	for (unsigned i = 0; i < m->disks->len; i++) {
		const struct bm_disk_row *d = g_ptr_array_index(m->disks, i);

		if (strcmp(d->role, "boot") == 0)
			return d;
	}
	return NULL;
}

/* ---- steps ---- */

enum outcome { DONE, WAIT, FAILED };

/*
 * Perform the current step of @m.  DONE: the step is complete, *disk_state
 * / *nic_state say what the rows became.  WAIT: not yet (booting).  FAILED:
 * *err says why, *give_up when retrying cannot help.
 */
static enum outcome do_step(struct ctl *c, struct bm_client *cl, const struct bm_machine_row *m,
			    const char **disk_state, const char **nic_state, char **err,
			    bool *give_up)
{
	const struct bm_disk_row *boot = boot_disk(m);
	const char *base = m->handler;
	int rc = 0;

	switch (m->step) {
	case BM_STEP_VERIFY:
		rc = call(c, cl, base, "GET", "/v1/status", NULL, NULL, err);
		if (rc >= 0)
			rc = power(c, cl, base, false, err);
		break;
	case BM_STEP_CREATE_DISK:
		if (!boot) {
			*err = g_strdup("no boot disk recorded");
			*give_up = true;
			return FAILED;
		}
		rc = volume_create(c, cl, base, boot, m->user_data, err);
		break;
	case BM_STEP_ATTACH_DISK:
		if (!boot) {
			*err = g_strdup("no boot disk recorded");
			*give_up = true;
			return FAILED;
		}
		rc = disk_attach(c, cl, base, boot, err);
		if (rc >= 0)
			*disk_state = "attached";
		break;
	case BM_STEP_ATTACH_NICS:
		for (unsigned i = 0; rc >= 0 && i < m->nics->len; i++)
			rc = nic_attach(c, cl, base, g_ptr_array_index(m->nics, i), err);
		if (rc >= 0)
			*nic_state = "attached";
		break;
	case BM_STEP_SET_BOOT: {
		g_autoptr(json_object) b = obj1("device", json_object_new_string(boot ? boot->id : "none"));

		rc = call(c, cl, base, "PUT", "/v1/boot", b, NULL, err);
		break;
	}
	case BM_STEP_POWER_ON:
		rc = power(c, cl, base, true, err);
		break;
	case BM_STEP_WAIT_BOOT: {
		g_autoptr(json_object) st = NULL;

		rc = call(c, cl, base, "GET", "/v1/status", NULL, &st, err);
		if (rc < 0)
			break;
		if (bm_handler_booted(st))
			return DONE;
		if (bm_now_ms() - m->state_since > (int64_t)c->boot_timeout_ms) {
			*err = g_strdup_printf("not booted after %" G_GUINT64_FORMAT " ms",
					       c->boot_timeout_ms);
			*give_up = true;
			return FAILED;
		}
		return WAIT;
	}
	case BM_STEP_POWER_OFF:
		rc = power(c, cl, base, false, err);
		break;
	case BM_STEP_DETACH_NICS:
		for (unsigned i = 0; rc >= 0 && i < m->nics->len; i++)
			rc = del(c, cl, base, "nics", ((struct bm_nic_row *)g_ptr_array_index(m->nics, i))->id,
				 err);
		if (rc >= 0)
			*nic_state = "";
		break;
	case BM_STEP_DETACH_DISKS:
		for (unsigned i = 0; rc >= 0 && i < m->disks->len; i++)
			rc = del(c, cl, base, "disks",
				 ((struct bm_disk_row *)g_ptr_array_index(m->disks, i))->id, err);
		if (rc >= 0)
			*disk_state = "detached";
		break;
	case BM_STEP_DELETE_DISKS:
		for (unsigned i = 0; rc >= 0 && i < m->disks->len; i++)
			rc = del(c, cl, base, "volumes",
				 ((struct bm_disk_row *)g_ptr_array_index(m->disks, i))->id, err);
		if (rc >= 0)
			*disk_state = "";
		break;
	default:
		*err = g_strdup_printf("no step to run in state %s", bm_state_name(m->state));
		*give_up = true;
		return FAILED;
	}
	return rc < 0 ? FAILED : DONE;
}

static int64_t backoff_at(struct ctl *c, int64_t attempts)
{
	uint64_t d = c->retry_base_ms;

	for (int64_t i = 0; i < attempts && d < c->retry_max_ms; i++)
		d *= 2;
	d = MIN(d, c->retry_max_ms);
	/* +-25% jitter, so machines that failed together do not retry together. */
	return bm_now_ms() + (int64_t)((double)d * g_random_double_range(0.75, 1.25));
}

/* Run one step of a machine in a transient state; true when another step is due now. */
static bool run_step(struct ctl *c, struct bm_store *st, struct bm_client *cl,
		     const struct bm_machine_row *m)
{
	const char *disk_state = NULL, *nic_state = NULL;
	g_autofree char *err = NULL;
	bool give_up = false;
	int64_t t0 = bm_now_ms();
	enum outcome o;
	int rc;

	rc = bm_step_begin(st, c->id, m);
	if (rc < 0) {
		qt_debug("machine \"%s\": step %s not begun: %s", m->id, bm_step_name(m->step),
			 g_strerror(-rc));
		return false;
	}
	o = do_step(c, cl, m, &disk_state, &nic_state, &err, &give_up);
	switch (o) {
	case DONE:
		rc = bm_step_done(st, c->id, m, disk_state, nic_state, bm_now_ms() - t0);
		if (rc >= 0)
			qt_info("machine \"%s\": %s/%s done", m->id, bm_state_name(m->state),
				bm_step_name(m->step));
		return rc >= 0;
	case WAIT:
		bm_step_wait(st, c->id, m, bm_now_ms() + (int64_t)c->boot_poll_ms);
		return false;
	case FAILED:
		if (m->attempts + 1 >= c->max_retries)
			give_up = true;
		rc = bm_step_failed(st, c->id, m, err, backoff_at(c, m->attempts), give_up,
				    bm_now_ms() - t0);
		if (rc >= 0 && give_up)
			qt_warn("machine \"%s\": %s/%s failed after %" G_GINT64_FORMAT
				" attempt(s), now in error: %s",
				m->id, bm_state_name(m->state), bm_step_name(m->step), m->attempts + 1,
				err);
		else if (rc >= 0)
			qt_info("machine \"%s\": %s/%s failed (attempt %" G_GINT64_FORMAT
				"), will retry: %s",
				m->id, bm_state_name(m->state), bm_step_name(m->step), m->attempts + 1,
				err);
		return false;
	}
	return false;
}

/*
 * Record that request @op of machine @id is being carried out (running,
 * started_at), as bm_step_begin does for a step; false: not now (the lease
 * is lost or the database refused), the next round tries again.
 */
static bool op_begun(struct ctl *c, struct bm_store *st, const char *id, int64_t op)
{
	int rc = bm_op_begin(st, c->id, op);

	if (rc < 0)
		qt_debug("machine \"%s\": operation %" G_GINT64_FORMAT " not begun: %s", id, op,
			 g_strerror(-rc));
	return rc >= 0;
}

/* Power requests and hot-plug on an active machine. */
static void run_active(struct ctl *c, struct bm_store *st, struct bm_client *cl,
		       const struct bm_machine_row *m)
{
	if (*m->power_target && m->next_at <= bm_now_ms() &&
	    op_begun(c, st, m->id, m->power_op)) {
		g_autofree char *err = NULL;
		bool on = strcmp(m->power_target, "on") == 0, stale = false;
		int rc;

		if (strcmp(m->power_target, "reboot") == 0) {
			rc = power(c, cl, m->handler, false, &err);
			/*
			 * Recorded before the "on": a restart then replays only
			 * the "on" (a no-op if it was done), not a second power
			 * cycle.  Not recorded (superseded, lease lost): stop here.
			 */
			if (rc >= 0 && bm_machine_power_progress(st, c->id, m->id, m->power_op,
								  "off", "on") < 0)
				stale = true;
			else if (rc >= 0)
				rc = power(c, cl, m->handler, true, &err);
			on = true;
		} else {
			rc = power(c, cl, m->handler, on, &err);
		}
		if (stale) {
			/* The newer request, or the deprovisioning, is for the next round. */
		} else if (rc >= 0)
			bm_machine_set_power(st, c->id, m->id, m->power_op, on ? "on" : "off", NULL, 0);
		else if (m->attempts + 1 < c->max_retries)
			bm_machine_set_power(st, c->id, m->id, m->power_op, NULL, err,
					     backoff_at(c, m->attempts));
		else
			bm_machine_set_power(st, c->id, m->id, m->power_op, NULL, err, 0);
	}
	for (unsigned i = 0; i < m->disks->len; i++) {
		const struct bm_disk_row *d = g_ptr_array_index(m->disks, i);
		g_autofree char *err = NULL;
		bool attach = strcmp(d->state, "attaching") == 0;
		int rc;

		if ((!attach && strcmp(d->state, "detaching") != 0) || d->next_at > bm_now_ms() ||
		    !op_begun(c, st, m->id, d->op))
			continue;
		if (attach) {
			rc = volume_create(c, cl, m->handler, d, NULL, &err);
			if (rc >= 0)
				rc = disk_attach(c, cl, m->handler, d, &err);
		} else {
			rc = del(c, cl, m->handler, "disks", d->id, &err);
			if (rc >= 0)
				rc = del(c, cl, m->handler, "volumes", d->id, &err);
		}
		if (rc >= 0)
			bm_disk_done(st, c->id, d, attach ? "attached" : "", NULL, 0);
		else if (d->attempts + 1 >= c->max_retries)
			bm_disk_done(st, c->id, d, "error", err, 0);
		else
			bm_disk_done(st, c->id, d, NULL, err, backoff_at(c, d->attempts));
	}
	for (unsigned i = 0; i < m->nics->len; i++) {
		const struct bm_nic_row *n = g_ptr_array_index(m->nics, i);
		g_autofree char *err = NULL;
		bool attach = strcmp(n->state, "attaching") == 0;
		int rc;

		if ((!attach && strcmp(n->state, "detaching") != 0) || n->next_at > bm_now_ms() ||
		    !op_begun(c, st, m->id, n->op))
			continue;
		rc = attach ? nic_attach(c, cl, m->handler, n, &err)
			    : del(c, cl, m->handler, "nics", n->id, &err);
		if (rc >= 0)
			bm_nic_done(st, c->id, n, attach ? "attached" : "", NULL, 0);
		else if (n->attempts + 1 >= c->max_retries)
			bm_nic_done(st, c->id, n, "error", err, 0);
		else
			bm_nic_done(st, c->id, n, NULL, err, backoff_at(c, n->attempts));
	}
}

static void work_on(struct ctl *c, char *data)
{
	g_autofree char *id = data;
	struct bm_store *st = g_private_get(&st_key);
	struct bm_client *cl = g_private_get(&client_key);

	if (!st) {
		g_autofree char *msg = NULL;

		if (bm_store_open(c->db, &st, &msg) < 0) {
			qt_err("worker: %s", msg);
			goto out;
		}
		g_private_set(&st_key, st);
	}
	if (!cl) {
		cl = bm_client_new(NULL);
		g_private_set(&client_key, cl);
	}
	for (int i = 0; i < MAX_STEPS_PER_TURN && !g_atomic_int_get(&stop); i++) {
		g_autoptr(bm_machine_row) m = NULL;

		if (bm_machine_load(st, id, &m) < 0)
			break;
		if (m->state == BM_ACTIVE) {
			run_active(c, st, cl, m);
			break;
		}
		if (m->step == BM_STEP_NONE || m->next_at > bm_now_ms())
			break;
		if (!run_step(c, st, cl, m))
			break;
	}
out:
	g_mutex_lock(&c->lock);
	g_hash_table_remove(c->busy, id);
	g_mutex_unlock(&c->lock);
}

static gpointer worker(gpointer ud)
{
	struct ctl *c = ud;

	for (;;) {
		char *id = g_async_queue_pop(c->queue);

		if (!*id) {
			g_free(id);
			return NULL;
		}
		work_on(c, id);
	}
}

/* ---- main loop ---- */

/* One batch of the retention purge when one is due; the pass's totals logged at its end. */
static void purge_once(struct ctl *c, struct bm_store *st)
{
	int64_t now = bm_now_ms();
	struct bm_purge_counts *p = &c->purged;
	int rc;

	if (!c->purge_interval_ms || now < c->purge_at)
		return;
	rc = bm_store_purge(st, &c->purge, now, p);
	if (rc > 0)
		return;
	if (rc < 0)
		qt_warn("purging old rows: %s", g_strerror(-rc));
	if (p->history || p->operations || p->instances || p->idempotency)
		qt_info("purged %" G_GINT64_FORMAT " history rows, %" G_GINT64_FORMAT " operations,"
			" %" G_GINT64_FORMAT " deleted instances, %" G_GINT64_FORMAT
			" idempotency keys",
			p->history, p->operations, p->instances, p->idempotency);
	*p = (struct bm_purge_counts){0};
	c->purge_at = now + (int64_t)c->purge_interval_ms;
}

static void round_once(struct ctl *c, struct bm_store *st, bool *leader)
{
	g_auto(GStrv) due = NULL;
	int rc = bm_lease_acquire(st, c->id, (int64_t)c->lease_ttl_ms);

	if (rc < 0) {
		if (*leader || rc != -EBUSY)
			qt_notice("not the leader (%s), waiting", g_strerror(-rc));
		*leader = false;
		return;
	}
	if (!*leader)
		qt_notice("holding the controller lease as \"%s\"", c->id);
	*leader = true;
	if (c->check) {
		g_autofree char *why = NULL;

		if (bm_store_check(st, &why) == -EPROTO) {
			qt_err("invariant broken: %s", why);
			g_atomic_int_set(&c->invariant_broken, 1);
			g_atomic_int_set(&stop, SIGABRT);
			return;
		}
	}
	bm_store_promote_queued(st, c->id, (int)c->max_provisioning);
	purge_once(c, st);
	if (bm_store_due(st, bm_now_ms(), &due) < 0)
		return;
	for (unsigned i = 0; due[i]; i++) {
		bool fresh;

		g_mutex_lock(&c->lock);
		fresh = !g_hash_table_contains(c->busy, due[i]);
		if (fresh)
			g_hash_table_add(c->busy, g_strdup(due[i]));
		g_mutex_unlock(&c->lock);
		if (fresh)
			g_async_queue_push(c->queue, g_strdup(due[i]));
	}
}

int main(int argc, char **argv)
{
	static const char *const known[] = {
		"db", "id", "workers", "max_provisioning", "max_retries", "retry_base", "retry_max",
		"step_timeout", "boot_timeout", "boot_poll", "lease_ttl", "poll_interval",
		"history_max_entries", "history_max_age", "operation_max_age",
		"deleted_instance_max_age", "purge_interval", "purge_batch", NULL,
	};
	uint64_t history_age = 0, op_age = 0, instance_age = 0;
	const char *config = NULL, *db_opt = NULL, *id_opt = NULL;
	g_autofree char *msg = NULL;
	g_autoptr(qt_conf) conf = NULL;
	g_autoptr(bm_store) st = NULL;
	struct ctl c = {0};
	bool leader = false;
	int verbose = 0, ch, rc;

	/* Before any thread starts: see qt_cli_block_term_signals(). */
	qt_cli_block_term_signals();
	qt_cli_init(argv[0]);
	qt_log_init(qt_cli_prog());
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":" SHORT_OPTS, long_opts, NULL)) != -1) {
		switch (ch) {
		case OPT_CONFIG:
			config = optarg;
			break;
		case OPT_DB:
			db_opt = optarg;
			break;
		case OPT_ID:
			id_opt = optarg;
			break;
		case OPT_CHECK:
			c.check = true;
			break;
		case 'v':
			verbose++;
			break;
		default:
			return qt_cli_std_option(ch, argv, SHORT_OPTS, usage);
		}
	}
	if (optind < argc)
		return qt_cli_usage_error("unexpected argument '%s'", argv[optind]);
	qt_log_verbose(verbose);

	if (qt_conf_load(config ? config : DEFAULT_CONFIG, !config, &conf, &msg) < 0 ||
	    qt_conf_check_keys(conf, "controller", known, &msg) < 0 ||
	    qt_conf_get_string(conf, "controller", "db", DEFAULT_DB, &c.db, &msg) < 0 ||
	    qt_conf_get_string(conf, "controller", "id", g_get_host_name(), &c.id, &msg) < 0 ||
	    qt_conf_get_int(conf, "controller", "workers", 16, 1, 256, &c.workers, &msg) < 0 ||
	    qt_conf_get_int(conf, "controller", "max_provisioning", 20, 1, 100000,
			    &c.max_provisioning, &msg) < 0 ||
	    qt_conf_get_int(conf, "controller", "max_retries", 5, 1, 1000, &c.max_retries, &msg) < 0 ||
	    qt_conf_get_duration_ms(conf, "controller", "retry_base", 1000, &c.retry_base_ms, &msg) < 0 ||
	    qt_conf_get_duration_ms(conf, "controller", "retry_max", 300000, &c.retry_max_ms, &msg) < 0 ||
	    qt_conf_get_duration_ms(conf, "controller", "step_timeout", 60000, &c.step_timeout_ms,
				    &msg) < 0 ||
	    qt_conf_get_duration_ms(conf, "controller", "boot_timeout", 1800000, &c.boot_timeout_ms,
				    &msg) < 0 ||
	    qt_conf_get_duration_ms(conf, "controller", "boot_poll", 5000, &c.boot_poll_ms, &msg) < 0 ||
	    qt_conf_get_duration_ms(conf, "controller", "lease_ttl", 15000, &c.lease_ttl_ms, &msg) < 0 ||
	    qt_conf_get_duration_ms(conf, "controller", "poll_interval", 1000, &c.poll_ms,
				    &msg) < 0 ||
	    qt_conf_get_int(conf, "controller", "history_max_entries", 300, 0, INT32_MAX,
			    &c.purge.history_max_entries, &msg) < 0 ||
	    qt_conf_get_duration_ms(conf, "controller", "history_max_age", 90 * DAY_MS,
				    &history_age, &msg) < 0 ||
	    qt_conf_get_duration_ms(conf, "controller", "operation_max_age", 30 * DAY_MS, &op_age,
				    &msg) < 0 ||
	    qt_conf_get_duration_ms(conf, "controller", "deleted_instance_max_age", 30 * DAY_MS,
				    &instance_age, &msg) < 0 ||
	    qt_conf_get_duration_ms(conf, "controller", "purge_interval", 3600000,
				    &c.purge_interval_ms, &msg) < 0 ||
	    qt_conf_get_int(conf, "controller", "purge_batch", 1000, 1, 100000, &c.purge.batch,
			    &msg) < 0) {
		rc = qt_cli_fail("%s", msg);
		goto out;
	}
	/*
	 * A client may poll an operation until it sees it finished (bmctl
	 * --wait), the autoscaler tells a deleted instance by its tombstone,
	 * and an answer replayed for an Idempotency-Key (for 24 h) names its
	 * operation and instance: they must outlive that.
	 */
	if ((op_age && op_age < DAY_MS) || (instance_age && instance_age < DAY_MS)) {
		rc = qt_cli_fail("%s: operation_max_age and deleted_instance_max_age must be 0"
				 " (keep) or at least 24h",
				 qt_conf_path(conf));
		goto out;
	}
	if (MAX(history_age, MAX(op_age, instance_age)) > 100000 * DAY_MS) {
		rc = qt_cli_fail("%s: a max_age is at most 100000 days", qt_conf_path(conf));
		goto out;
	}
	c.purge.history_max_age_ms = (int64_t)history_age;
	c.purge.operation_max_age_ms = (int64_t)op_age;
	c.purge.instance_max_age_ms = (int64_t)instance_age;
	if (db_opt) {
		g_free(c.db);
		c.db = g_strdup(db_opt);
	}
	if (id_opt) {
		g_free(c.id);
		c.id = g_strdup(id_opt);
	}
	if (c.retry_base_ms == 0 || c.retry_max_ms < c.retry_base_ms || c.step_timeout_ms == 0 ||
	    c.lease_ttl_ms <= c.poll_ms || c.poll_ms == 0) {
		rc = qt_cli_fail("%s: need retry_base > 0, retry_max >= retry_base, step_timeout > 0"
				 " and lease_ttl > poll_interval > 0",
				 qt_conf_path(conf));
		goto out;
	}
	rc = bm_store_open(c.db, &st, &msg);
	if (rc < 0) {
		rc = qt_cli_fail("%s", msg);
		goto out;
	}

	g_mutex_init(&c.lock);
	c.busy = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	c.queue = g_async_queue_new();
	c.threads = g_new0(GThread *, (gsize)c.workers);
	for (int64_t i = 0; i < c.workers; i++)
		c.threads[i] = g_thread_new("worker", worker, &c);
	qt_notice("reconciling database \"%s\" as \"%s\" (%" G_GINT64_FORMAT " workers,"
		  " at most %" G_GINT64_FORMAT " provisioning)",
		  c.db, c.id, c.workers, c.max_provisioning);
	while (!g_atomic_int_get(&stop)) {
		int64_t t0 = bm_now_ms(), left;
		int sig;

		round_once(&c, st, &leader);
		left = (int64_t)c.poll_ms - (bm_now_ms() - t0);
		/* The pause between rounds is where a stop is taken. */
		if ((sig = qt_cli_wait_term_signal(MAX(left, 0))))
			g_atomic_int_compare_and_exchange(&stop, 0, sig);
	}
	/* Let the running steps finish their write, so the next round starts clean. */
	for (int64_t i = 0; i < c.workers; i++)
		g_async_queue_push_front(c.queue, g_strdup(""));
	for (int64_t i = 0; i < c.workers; i++)
		g_thread_join(c.threads[i]);
	g_free(c.threads);
	/* Ids still queued were never started. */
	for (char *id; (id = g_async_queue_try_pop(c.queue));)
		g_free(id);
	g_async_queue_unref(c.queue);
	if (leader)
		bm_lease_release(st, c.id);
	g_hash_table_unref(c.busy);
	g_mutex_clear(&c.lock);
	rc = g_atomic_int_get(&c.invariant_broken) ? QT_EXIT_FAILURE : QT_EXIT_OK;
out:
	/* A config refused may have set these before it was. */
	g_free(c.db);
	g_free(c.id);
	return rc;
}
