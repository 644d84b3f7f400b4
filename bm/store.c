// SPDX-License-Identifier: Apache-2.0
/*
 * The BareMetalManager database (store.h), over SQLite.  The database is the
 * one source of truth shared by bm-api and bm-controller, as Ironic's is:
 * bm-api records what is wanted (an instance, a disk to plug, a power
 * target), bm-controller records what was done, step by step, under the
 * state machine of lifecycle.c.
 *
 * Why these settings: WAL so readers (GET, the controller's scan) never
 * wait for a writer; a busy timeout so two processes writing at once queue
 * instead of failing; BEGIN IMMEDIATE for every read-modify-write so the
 * write lock is taken before the read (the "last free machine" race cannot
 * happen: the second transaction starts after the first committed);
 * foreign keys so a disk cannot outlive its machine's row.  The schema
 * version lives in PRAGMA user_version and migrations run in order, each in
 * its own transaction.
 *
 * Controller writes are fenced: each checks, in its transaction, that the
 * machine is still in the (state, step, operation) the controller read and
 * that the writer still holds the lease, so a slow controller that lost its
 * lease cannot overwrite the newer one's progress.
 *
 * Operations and last_error, as in Ironic: an operation that finished is
 * never written again (every write to one checks it is open), and work
 * that follows gets an operation of its own.  last_error (of a machine,
 * disk or NIC) is the error of its current or last operation: a failed
 * attempt sets it, the step or call succeeding clears it, and a new
 * operation starts without one.
 *
 * An operation is pending until the controller begins its first step or
 * handler call (bm_step_begin, bm_op_begin, promotion from queued): then
 * running, with started_at; then succeeded or failed, with finished_at.
 * One superseded or cancelled while pending finishes without starting and
 * keeps started_at 0, as a time not (yet) reached is 0 everywhere here
 * (finished_at of an open operation, next_at, deleted_at).  Invariants
 * (bm_store_check): pending has neither time, running only started_at,
 * succeeded both, failed finished_at.
 */
#include "config.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <string.h>

#include "store.h"

struct bm_store {
	sqlite3 *db;
};

#define BUSY_TIMEOUT_MS 10000
#define MAX_DATA_DISKS 16
#define MAX_NICS 8
#define IDEM_TTL_MS (24 * 3600 * 1000LL)
/*
 * A key still in progress after this long belongs to a bm-api that died
 * in the request (a request holds the database at most the 10 s busy
 * timeout per transaction): the key is free again.
 */
#define IDEM_PENDING_TTL_MS (60 * 1000LL)

/* Migrations: element i takes the schema from version i to i + 1. */
static const char *const migrations[] = {
	"CREATE TABLE machines ("
	"  id TEXT PRIMARY KEY,"
	"  model TEXT NOT NULL DEFAULT '',"
	"  cpu INTEGER NOT NULL DEFAULT 0,"
	"  memory_mb INTEGER NOT NULL DEFAULT 0,"
	"  gpus INTEGER NOT NULL DEFAULT 0,"
	"  labels TEXT NOT NULL DEFAULT '{}',"
	"  handler TEXT NOT NULL,"
	"  state TEXT NOT NULL,"
	"  step TEXT NOT NULL DEFAULT '',"
	"  attempts INTEGER NOT NULL DEFAULT 0,"
	"  next_at INTEGER NOT NULL DEFAULT 0,"
	"  step_started_at INTEGER NOT NULL DEFAULT 0,"
	"  state_since INTEGER NOT NULL,"
	"  instance_id TEXT,"
	"  power TEXT NOT NULL DEFAULT 'unknown',"
	"  power_target TEXT NOT NULL DEFAULT '',"
	"  power_op INTEGER NOT NULL DEFAULT 0,"
	"  op_id INTEGER NOT NULL DEFAULT 0,"
	"  last_error TEXT NOT NULL DEFAULT '',"
	"  error_count INTEGER NOT NULL DEFAULT 0,"
	"  maintenance_reason TEXT NOT NULL DEFAULT '',"
	"  created_at INTEGER NOT NULL);"
	"CREATE INDEX machines_state ON machines(state, next_at);"
	"CREATE TABLE pools ("
	"  name TEXT PRIMARY KEY,"
	"  model TEXT,"
	"  cpu INTEGER,"
	"  labels TEXT NOT NULL DEFAULT '{}',"
	"  template TEXT NOT NULL DEFAULT '{}',"
	"  created_at INTEGER NOT NULL);"
	"CREATE TABLE instances ("
	"  id TEXT PRIMARY KEY,"
	"  pool TEXT REFERENCES pools(name) ON DELETE SET NULL,"
	"  machine_id TEXT REFERENCES machines(id) ON DELETE SET NULL,"
	"  image TEXT NOT NULL,"
	"  disk_gb INTEGER NOT NULL,"
	"  networks TEXT NOT NULL DEFAULT '[]',"
	"  user_data TEXT NOT NULL DEFAULT '',"
	"  state TEXT NOT NULL,"
	"  created_at INTEGER NOT NULL,"
	"  deleted_at INTEGER NOT NULL DEFAULT 0);"
	"CREATE TABLE disks ("
	"  id TEXT PRIMARY KEY,"
	"  machine_id TEXT NOT NULL REFERENCES machines(id) ON DELETE CASCADE,"
	"  role TEXT NOT NULL,"
	"  image TEXT NOT NULL DEFAULT '',"
	"  size_gb INTEGER NOT NULL,"
	"  state TEXT NOT NULL,"
	"  attempts INTEGER NOT NULL DEFAULT 0,"
	"  next_at INTEGER NOT NULL DEFAULT 0,"
	"  last_error TEXT NOT NULL DEFAULT '',"
	"  op_id INTEGER NOT NULL DEFAULT 0,"
	"  created_at INTEGER NOT NULL);"
	"CREATE INDEX disks_machine ON disks(machine_id);"
	"CREATE TABLE nics ("
	"  id TEXT PRIMARY KEY,"
	"  machine_id TEXT NOT NULL REFERENCES machines(id) ON DELETE CASCADE,"
	"  network TEXT NOT NULL,"
	"  mac TEXT NOT NULL DEFAULT '',"
	"  state TEXT NOT NULL,"
	"  attempts INTEGER NOT NULL DEFAULT 0,"
	"  next_at INTEGER NOT NULL DEFAULT 0,"
	"  last_error TEXT NOT NULL DEFAULT '',"
	"  op_id INTEGER NOT NULL DEFAULT 0,"
	"  created_at INTEGER NOT NULL);"
	"CREATE INDEX nics_machine ON nics(machine_id);"
	"CREATE TABLE operations ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  type TEXT NOT NULL,"
	"  machine_id TEXT REFERENCES machines(id) ON DELETE CASCADE,"
	"  instance_id TEXT,"
	"  target TEXT NOT NULL DEFAULT '',"
	"  state TEXT NOT NULL DEFAULT 'pending',"
	"  error TEXT NOT NULL DEFAULT '',"
	"  created_at INTEGER NOT NULL,"
	"  started_at INTEGER NOT NULL DEFAULT 0,"
	"  finished_at INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX operations_machine ON operations(machine_id, id);"
	"CREATE TABLE history ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  machine_id TEXT NOT NULL REFERENCES machines(id) ON DELETE CASCADE,"
	"  op_id INTEGER NOT NULL,"
	"  state TEXT NOT NULL,"
	"  step TEXT NOT NULL,"
	"  result TEXT NOT NULL,"
	"  error TEXT NOT NULL DEFAULT '',"
	"  attempt INTEGER NOT NULL,"
	"  started_at INTEGER NOT NULL,"
	"  finished_at INTEGER NOT NULL);"
	"CREATE INDEX history_machine ON history(machine_id, id);"
	"CREATE TABLE idempotency ("
	"  key TEXT PRIMARY KEY,"
	"  method TEXT NOT NULL,"
	"  path TEXT NOT NULL,"
	"  hash TEXT NOT NULL,"
	"  status INTEGER NOT NULL DEFAULT 0,"
	"  body TEXT NOT NULL DEFAULT '',"
	"  created_at INTEGER NOT NULL);"
	"CREATE TABLE leases ("
	"  name TEXT PRIMARY KEY,"
	"  holder TEXT NOT NULL,"
	"  expires_at INTEGER NOT NULL);",
	/* 2: the emulated device a disk appears as on the host's PCIe bus. */
	"ALTER TABLE disks ADD COLUMN bus TEXT NOT NULL DEFAULT 'virtio-blk';",
	/*
	 * 3: retention (bm_store_purge).  Indexes for the age of what is
	 * purged; the rows purged so far, for /metrics; and the histogram of
	 * succeeded operations already purged, so that the counters of
	 * bm_operation_duration_seconds never go down.
	 */
	"CREATE INDEX history_finished ON history(finished_at);"
	"CREATE INDEX operations_finished ON operations(finished_at) WHERE finished_at > 0;"
	"CREATE INDEX instances_deleted ON instances(deleted_at) WHERE state = 'deleted';"
	"CREATE TABLE purged ("
	"  what TEXT PRIMARY KEY,"
	"  rows INTEGER NOT NULL);"
	"CREATE TABLE purged_ops ("
	"  type TEXT PRIMARY KEY,"
	"  n INTEGER NOT NULL,"
	"  sum_ms INTEGER NOT NULL,"
	"  le1 INTEGER NOT NULL, le5 INTEGER NOT NULL, le30 INTEGER NOT NULL,"
	"  le60 INTEGER NOT NULL, le300 INTEGER NOT NULL, le900 INTEGER NOT NULL,"
	"  le1800 INTEGER NOT NULL);",
};
G_STATIC_ASSERT(G_N_ELEMENTS(migrations) == BM_SCHEMA_VERSION);

int bm_sqlite_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_ROW:
	case SQLITE_DONE:
		return 0;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		/* Not -EBUSY: that is a row in the wrong state (409); this one passes. */
		return -EAGAIN;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_READONLY:
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_CONSTRAINT:
		return -EEXIST;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_TOOBIG:
		return -E2BIG;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return -EUCLEAN;
	default:
		return -EIO;
	}
}

/*
 * The errno for a failed sqlite3_step() of @s (not yet finalized), logged
 * with SQLite's own message: a constraint is an answer (a duplicate id),
 * anything else is the database failing under us and worth a line.
 */
static int step_errno(sqlite3_stmt *s, int rc)
{
	if ((rc & 0xff) != SQLITE_CONSTRAINT)
		g_warning("bm store: %s (in \"%.80s\")", sqlite3_errmsg(sqlite3_db_handle(s)),
			  sqlite3_sql(s));
	return bm_sqlite_errno(rc);
}

/* Bind @fmt ('s' string or NULL, 'i' int64_t, 'd' int) to @s from 1. */
static int bind_v(sqlite3_stmt *s, const char *fmt, va_list ap)
{
	int rc = SQLITE_OK;

	for (int i = 0; fmt && fmt[i] && rc == SQLITE_OK; i++) {
		switch (fmt[i]) {
		case 's': {
			const char *v = va_arg(ap, const char *);

			rc = v ? sqlite3_bind_text(s, i + 1, v, -1, SQLITE_TRANSIENT)
			       : sqlite3_bind_null(s, i + 1);
			break;
		}
		case 'i':
			rc = sqlite3_bind_int64(s, i + 1, va_arg(ap, int64_t));
			break;
		case 'd':
			rc = sqlite3_bind_int(s, i + 1, va_arg(ap, int));
			break;
		default:
			g_assert_not_reached();
		}
	}
	return bm_sqlite_errno(rc);
}

/* Prepare @sql and bind the arguments @fmt describes; 0 and *@out, or -errno. */
static int prep_v(struct bm_store *st, sqlite3_stmt **out, const char *sql, const char *fmt,
		  va_list ap)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);

	if (rc != SQLITE_OK) {
		g_debug("bm store: prepare \"%s\": %s", sql, sqlite3_errmsg(st->db));
		return bm_sqlite_errno(rc);
	}
	rc = bind_v(s, fmt, ap);
	if (rc < 0) {
		sqlite3_finalize(s);
		return rc;
	}
	*out = s;
	return 0;
}

static int prep(struct bm_store *st, sqlite3_stmt **out, const char *sql, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = prep_v(st, out, sql, fmt, ap);
	va_end(ap);
	return rc;
}

/* Run a statement to completion; returns the number of rows changed. */
static int exec(struct bm_store *st, const char *sql, const char *fmt, ...)
{
	sqlite3_stmt *s = NULL;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = prep_v(st, &s, sql, fmt, ap);
	va_end(ap);
	if (rc < 0)
		return rc;
	do
		rc = sqlite3_step(s);
	while (rc == SQLITE_ROW);
	rc = rc == SQLITE_DONE ? sqlite3_changes(st->db) : step_errno(s, rc);
	sqlite3_finalize(s);
	return rc;
}

static bool is_json_column(const char *name)
{
	return strcmp(name, "labels") == 0 || strcmp(name, "template") == 0 ||
	       strcmp(name, "networks") == 0;
}

static json_object *row_json(sqlite3_stmt *s)
{
	json_object *o = json_object_new_object();
	int n = sqlite3_column_count(s);

	for (int i = 0; i < n; i++) {
		const char *name = sqlite3_column_name(s, i);
		json_object *v = NULL;

		switch (sqlite3_column_type(s, i)) {
		case SQLITE_INTEGER:
			v = json_object_new_int64(sqlite3_column_int64(s, i));
			break;
		case SQLITE_NULL:
			break;
		default: {
			const char *t = (const char *)sqlite3_column_text(s, i);

			if (is_json_column(name)) {
				char *msg = NULL;

				if (bm_json_parse(t, strlen(t), &v, &msg) < 0)
					g_free(msg);
			} else {
				v = json_object_new_string(t);
			}
		}
		}
		json_object_object_add(o, name, v);
	}
	return o;
}

/* All rows as a JSON array. */
static int query_array(struct bm_store *st, json_object **out, const char *sql, const char *fmt,
		       ...)
{
	sqlite3_stmt *s = NULL;
	json_object *arr;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = prep_v(st, &s, sql, fmt, ap);
	va_end(ap);
	if (rc < 0)
		return rc;
	arr = json_object_new_array();
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		json_object_array_add(arr, row_json(s));
	rc = rc == SQLITE_DONE ? 0 : step_errno(s, rc);
	sqlite3_finalize(s);
	if (rc < 0) {
		json_object_put(arr);
		return rc;
	}
	*out = arr;
	return 0;
}

/*
 * Step @s (prepared by prep_v()) to its first row: 0 there, -ENOENT
 * without one, else -errno.  The caller reads the row, then finalizes.
 */
static int first_row(sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);

	return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : step_errno(s, rc);
}

/* The first row as an object; -ENOENT without one. */
static int query_one(struct bm_store *st, json_object **out, const char *sql, const char *fmt, ...)
{
	sqlite3_stmt *s = NULL;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = prep_v(st, &s, sql, fmt, ap);
	va_end(ap);
	if (rc < 0)
		return rc;
	if ((rc = first_row(s)) == 0)
		*out = row_json(s);
	sqlite3_finalize(s);
	return rc;
}

/* First column of the first row: text into *out (may be NULL), or -ENOENT. */
static int query_text(struct bm_store *st, char **out, const char *sql, const char *fmt, ...)
{
	sqlite3_stmt *s = NULL;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = prep_v(st, &s, sql, fmt, ap);
	va_end(ap);
	if (rc < 0)
		return rc;
	if ((rc = first_row(s)) == 0)
		*out = g_strdup((const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	return rc;
}

static int query_int(struct bm_store *st, int64_t *out, const char *sql, const char *fmt, ...)
{
	sqlite3_stmt *s = NULL;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = prep_v(st, &s, sql, fmt, ap);
	va_end(ap);
	if (rc < 0)
		return rc;
	if ((rc = first_row(s)) == 0)
		*out = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return rc;
}

/* -EAGAIN when another writer held the database past the busy timeout. */
static int begin(struct bm_store *st)
{
	int rc = exec(st, "BEGIN IMMEDIATE", NULL);

	return rc < 0 ? rc : 0;
}

/* Commit when @rc >= 0, else roll back; returns 0, @rc or the commit error. */
static int end(struct bm_store *st, int rc)
{
	if (rc >= 0) {
		int c = exec(st, "COMMIT", NULL);

		if (c >= 0)
			return 0;
		rc = c;
	}
	exec(st, "ROLLBACK", NULL);
	return rc;
}

/* Run the migrations that take the database to @target (at most BM_SCHEMA_VERSION). */
static int migrate(struct bm_store *st, int64_t target, char **msg)
{
	int64_t v = 0;
	int rc = query_int(st, &v, "PRAGMA user_version", NULL);

	if (rc < 0) {
		*msg = g_strdup_printf("reading the schema version: %s", sqlite3_errmsg(st->db));
		return rc;
	}
	if (v > (int64_t)G_N_ELEMENTS(migrations)) {
		*msg = g_strdup_printf("database schema version %" G_GINT64_FORMAT
				       " is newer than this program's (%d)", v, BM_SCHEMA_VERSION);
		return -EPROTO;
	}
	while (v < target) {
		g_autofree char *setv = NULL;
		char *err = NULL;

		rc = begin(st);
		if (rc < 0)
			break;
		/* Another process may have migrated while we waited for the lock. */
		rc = query_int(st, &v, "PRAGMA user_version", NULL);
		if (rc < 0 || v >= target) {
			end(st, rc);
			break;
		}
		setv = g_strdup_printf("PRAGMA user_version = %" G_GINT64_FORMAT, v + 1);
		if (sqlite3_exec(st->db, migrations[v], NULL, NULL, &err) != SQLITE_OK ||
		    sqlite3_exec(st->db, setv, NULL, NULL, &err) != SQLITE_OK) {
			*msg = g_strdup_printf("migration to schema version %" G_GINT64_FORMAT
					       ": %s", v + 1, err ? err : "failed");
			sqlite3_free(err);
			return end(st, -EIO);
		}
		rc = end(st, 0);
		if (rc < 0)
			break;
		v++;
	}
	if (rc < 0 && !*msg)
		*msg = g_strdup_printf("migrating the schema: %s", g_strerror(-rc));
	return rc;
}

int bm_store_open(const char *path, struct bm_store **out, char **msg)
{
	return bm_store_open_version(path, BM_SCHEMA_VERSION, out, msg);
}

int bm_store_open_version(const char *path, int version, struct bm_store **out, char **msg)
{
	g_autoptr(bm_store) st = g_new0(struct bm_store, 1);
	int64_t fk = 0;
	g_autofree char *mode = NULL;
	int rc;

	rc = sqlite3_open_v2(path, &st->db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		*msg = g_strdup_printf("cannot open database \"%s\": %s", path,
				       st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
		return (rc & 0xff) == SQLITE_CANTOPEN ? -ENOENT : bm_sqlite_errno(rc);
	}
	sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS);
	if (query_text(st, &mode, "PRAGMA journal_mode = WAL", NULL) < 0 ||
	    g_ascii_strcasecmp(mode, "wal") != 0) {
		*msg = g_strdup_printf("database \"%s\": cannot switch to WAL mode", path);
		return -EIO;
	}
	exec(st, "PRAGMA synchronous = NORMAL", NULL);
	exec(st, "PRAGMA foreign_keys = ON", NULL);
	if (query_int(st, &fk, "PRAGMA foreign_keys", NULL) < 0 || fk != 1) {
		*msg = g_strdup_printf("database \"%s\": foreign keys unsupported", path);
		return -ENOTSUP;
	}
	rc = migrate(st, MIN(version, BM_SCHEMA_VERSION), msg);
	if (rc < 0) {
		g_autofree char *m = *msg;

		*msg = g_strdup_printf("database \"%s\": %s", path, m);
		return rc;
	}
	*out = g_steal_pointer(&st);
	return 0;
}

void bm_store_close(struct bm_store *st)
{
	if (!st)
		return;
	sqlite3_close_v2(st->db);
	g_free(st);
}

int bm_store_schema_version(struct bm_store *st)
{
	int64_t v = 0;
	int rc = query_int(st, &v, "PRAGMA user_version", NULL);

	return rc < 0 ? rc : (int)v;
}

/* The operations' times against their state (the top of this file). */
static int check_operations(struct bm_store *st, char **why)
{
	sqlite3_stmt *s = NULL;
	int rc = prep(st, &s,
		      "SELECT id, state, started_at, finished_at FROM operations WHERE NOT ("
		      " (state = 'pending' AND started_at = 0 AND finished_at = 0) OR"
		      " (state = 'running' AND started_at > 0 AND finished_at = 0) OR"
		      " (state = 'succeeded' AND started_at > 0 AND finished_at > 0) OR"
		      " (state = 'failed' AND finished_at > 0)) LIMIT 1",
		      NULL);

	if (rc < 0)
		return rc;
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*why = g_strdup_printf("operation %" G_GINT64_FORMAT ": %s with started_at %"
				       G_GINT64_FORMAT " and finished_at %" G_GINT64_FORMAT,
				       (int64_t)sqlite3_column_int64(s, 0),
				       (const char *)sqlite3_column_text(s, 1),
				       (int64_t)sqlite3_column_int64(s, 2),
				       (int64_t)sqlite3_column_int64(s, 3));
		sqlite3_finalize(s);
		return -EPROTO;
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : bm_sqlite_errno(rc);
}

int bm_store_check(struct bm_store *st, char **why)
{
	sqlite3_stmt *s = NULL;
	int rc = prep(st, &s,
		      "SELECT id, state, step, instance_id IS NOT NULL,"
		      " (SELECT count(*) FROM disks d WHERE d.machine_id = m.id) +"
		      " (SELECT count(*) FROM nics n WHERE n.machine_id = m.id)"
		      " FROM machines m",
		      NULL);

	if (rc < 0)
		return rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *id = (const char *)sqlite3_column_text(s, 0);
		enum bm_state state;
		enum bm_step step;
		const char *w = NULL;

		if (bm_state_parse((const char *)sqlite3_column_text(s, 1), &state) < 0 ||
		    bm_step_parse((const char *)sqlite3_column_text(s, 2), &step) < 0) {
			*why = g_strdup_printf("machine \"%s\": unknown state or step", id);
			sqlite3_finalize(s);
			return -EPROTO;
		}
		if (bm_machine_check(state, step, sqlite3_column_int(s, 3), &w) < 0) {
			*why = g_strdup_printf("machine \"%s\" (%s/%s): %s", id,
					       bm_state_name(state), bm_step_name(step), w);
			sqlite3_finalize(s);
			return -EPROTO;
		}
		if (state == BM_AVAILABLE && sqlite3_column_int(s, 4) > 0) {
			*why = g_strdup_printf("machine \"%s\": available with disks or NICs", id);
			sqlite3_finalize(s);
			return -EPROTO;
		}
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return bm_sqlite_errno(rc);
	return check_operations(st, why);
}

/* ---- operations ---- */

static int op_new(struct bm_store *st, const char *type, const char *machine,
		  const char *instance, const char *target, int64_t *id)
{
	int rc = exec(st,
		      "INSERT INTO operations(type, machine_id, instance_id, target, created_at)"
		      " VALUES(?, ?, ?, ?, ?)",
		      "ssssi", type, machine, instance, target ? target : "", bm_now_ms());

	if (rc < 0)
		return rc;
	*id = sqlite3_last_insert_rowid(st->db);
	return 0;
}

/*
 * Every caller finishes an operation whose step or call was carried out;
 * started_at is filled in only for one begun by a controller from before
 * bm_op_begin (a power or hot-plug request then stayed pending until done).
 */
static int op_finish(struct bm_store *st, int64_t id, const char *error)
{
	if (id <= 0)
		return 0;
	return exec(st,
		    "UPDATE operations SET state = ?, error = ?, finished_at = ?,"
		    " started_at = CASE started_at WHEN 0 THEN ?4 ELSE started_at END"
		    " WHERE id = ? AND finished_at = 0",
		    "ssiii", error ? "failed" : "succeeded", error ? error : "", bm_now_ms(),
		    bm_now_ms(), id);
}

#define OP_COLUMNS                                                                 \
	"id, type, machine_id, instance_id, target, state, error, created_at, started_at," \
	" finished_at, '/v1/operations/' || id AS url"

int bm_op_get(struct bm_store *st, int64_t id, json_object **out)
{
	return query_one(st, out, "SELECT " OP_COLUMNS " FROM operations WHERE id = ?", "i", id);
}

int bm_op_list(struct bm_store *st, const char *machine, int64_t after, int limit,
	       json_object **out)
{
	return query_array(st, out,
			   "SELECT " OP_COLUMNS " FROM operations WHERE id > ?"
			   " AND (?2 IS NULL OR machine_id = ?2) ORDER BY id LIMIT ?",
			   "isd", after, machine, limit);
}

/* ---- machines ---- */

#define MACHINE_COLUMNS                                                                  \
	"id, model, cpu, memory_mb, gpus, labels, handler, state, step, attempts, next_at," \
	" state_since, instance_id, power, last_error, error_count, maintenance_reason,"   \
	" op_id AS operation, created_at"

/* The machine's state name into *state (when @state is not NULL). */
static int machine_state(struct bm_store *st, const char *id, char **state, enum bm_state *out)
{
	g_autofree char *s = NULL;
	int rc = query_text(st, &s, "SELECT state FROM machines WHERE id = ?", "s", id);

	if (rc < 0)
		return rc;
	if (bm_state_parse(s, out) < 0)
		return -EPROTO;
	if (state)
		*state = g_steal_pointer(&s);
	return 0;
}

/*
 * http[s]://HOST[:PORT][/PATH], HOST not empty, nothing but printable ASCII
 * without spaces.  The controller calls the URL with "/v1/..." appended,
 * so what follows the host must be a port and a path: a query or fragment
 * ("http://h/?", "http://h#x") would swallow the path of every call, and a
 * port that is no number makes every call fail.  GUri splits it, as
 * lenient about %-escapes as curl is; the host must then be an IP address
 * or a host name (labels of letters, digits, '-' and '_', each 1 to 63
 * bytes, not starting or ending with '-'; a trailing dot allowed), which
 * GUri's relaxed parsing alone is not ("http://)/" has the host ")").
 */
static bool host_valid(const char *host)
{
	g_autofree char *plain = g_uri_unescape_string(host, NULL);
	g_auto(GStrv) labels = NULL;
	guint n;

	if (!plain || !*plain)
		return false;
	if (g_hostname_is_ip_address(plain))
		return true;
	if (strlen(plain) > 253)
		return false;
	labels = g_strsplit(plain, ".", -1);
	n = g_strv_length(labels);
	for (guint i = 0; i < n; i++) {
		const char *l = labels[i];
		size_t len = strlen(l);

		/* The empty label after a trailing dot. */
		if (len == 0 && i == n - 1 && i > 0)
			continue;
		if (len == 0 || len > 63 || l[0] == '-' || l[len - 1] == '-')
			return false;
		for (const char *c = l; *c; c++)
			if (!g_ascii_isalnum(*c) && *c != '-' && *c != '_')
				return false;
	}
	return true;
}

static bool handler_valid(const char *url)
{
	g_autofree char *host = NULL, *query = NULL, *fragment = NULL;

	if (!g_str_has_prefix(url, "http://") && !g_str_has_prefix(url, "https://"))
		return false;
	for (const char *p = url; *p; p++)
		if (!g_ascii_isgraph(*p))
			return false;
	if (!g_uri_split(url, G_URI_FLAGS_ENCODED | G_URI_FLAGS_PARSE_RELAXED, NULL, NULL, &host,
			 NULL, NULL, &query, &fragment, NULL))
		return false;
	return host && host_valid(host) && !query && !fragment;
}

/*
 * Within a transaction: is @handler no other machine's than @id's?  A
 * handler is one host's power, disks and boot: two machines on one would
 * be two instances provisioning, rebooting and wiping the same host.  Two
 * URLs that differ only by trailing slashes are the same.  0, or -EEXIST
 * with *@msg naming the machine that has it.
 */
static int handler_free(struct bm_store *st, const char *id, const char *handler, char **msg)
{
	sqlite3_stmt *s = NULL;
	int rc = prep(st, &s,
		      "SELECT id FROM machines WHERE rtrim(handler, '/') = rtrim(?, '/')"
		      " AND id <> ? LIMIT 1",
		      "ss", handler, id);

	if (rc < 0)
		return rc;
	rc = first_row(s);
	if (rc == 0) {
		*msg = g_strdup_printf("handler %s is machine \"%s\"'s already", handler,
				       (const char *)sqlite3_column_text(s, 0));
		rc = -EEXIST;
	} else if (rc == -ENOENT) {
		rc = 0;
	}
	sqlite3_finalize(s);
	return rc;
}

int bm_machine_enroll(struct bm_store *st, json_object *req, json_object **out, char **msg)
{
	const char *id = NULL, *model = "", *handler = NULL;
	int64_t cpu = 0, mem = 0, gpus = 0, now = bm_now_ms(), op = 0;
	json_object *labels = NULL;
	g_autofree char *labels_s = NULL;
	int rc;

	if (bm_json_str(req, "id", true, BM_ID_MAX, &id, msg) < 0 ||
	    bm_json_str(req, "handler", true, 1024, &handler, msg) < 0)
		return -EINVAL;
	if (!bm_id_valid(id)) {
		*msg = g_strdup("field 'id' must match [A-Za-z0-9][A-Za-z0-9._-]* (at most 64)");
		return -EINVAL;
	}
	if (!handler_valid(handler)) {
		*msg = g_strdup("field 'handler' must be an http:// or https:// URL with a host"
				 " name or IP address, an optional port and path, and no query or"
				 " fragment");
		return -EINVAL;
	}
	if (bm_json_str(req, "model", false, 128, &model, msg) == -EINVAL ||
	    bm_json_int(req, "cpu", false, 0, 1 << 20, &cpu, msg) == -EINVAL ||
	    bm_json_int(req, "memory_mb", false, 0, INT64_C(1) << 40, &mem, msg) == -EINVAL ||
	    bm_json_int(req, "gpus", false, 0, 1024, &gpus, msg) == -EINVAL ||
	    bm_json_labels(req, "labels", false, &labels, msg) == -EINVAL)
		return -EINVAL;
	labels_s = labels ? bm_json_dump(labels) : g_strdup("{}");

	rc = begin(st);
	if (rc < 0)
		return rc;
	rc = handler_free(st, id, handler, msg);
	if (rc >= 0) {
		rc = exec(st,
			  "INSERT INTO machines(id, model, cpu, memory_mb, gpus, labels, handler,"
			  " state, step, state_since, created_at) VALUES(?, ?, ?, ?, ?, ?, ?,"
			  " 'enrolling', 'verify', ?, ?8)",
			  "ssiiissi", id, model, cpu, mem, gpus, labels_s, handler, now);
		if (rc == -EEXIST)
			*msg = g_strdup_printf("machine \"%s\" already exists", id);
	}
	if (rc >= 0)
		rc = op_new(st, "enroll", id, NULL, NULL, &op);
	if (rc >= 0)
		rc = exec(st, "UPDATE machines SET op_id = ? WHERE id = ?", "is", op, id);
	rc = end(st, rc);
	if (rc < 0)
		return rc;
	return bm_machine_get(st, id, out);
}

int bm_machine_get(struct bm_store *st, const char *id, json_object **out)
{
	return query_one(st, out, "SELECT " MACHINE_COLUMNS " FROM machines WHERE id = ?", "s",
			 id);
}

static bool labels_match(json_object *have, json_object *want)
{
	if (!want)
		return true;
	json_object_object_foreach(want, k, v)
	{
		json_object *h = NULL;

		if (!have || !json_object_object_get_ex(have, k, &h) ||
		    !json_object_is_type(h, json_type_string) ||
		    strcmp(json_object_get_string(h), json_object_get_string(v)) != 0)
			return false;
	}
	return true;
}

int bm_machine_list(struct bm_store *st, const char *state, json_object *labels,
		    const char *after, int limit, json_object **out, char **next)
{
	sqlite3_stmt *s = NULL;
	g_autoptr(json_object) arr = json_object_new_array();
	const char *last = NULL;
	bool more = false;
	int rc = prep(st, &s,
		      "SELECT " MACHINE_COLUMNS " FROM machines WHERE id > ?"
		      " AND (?2 IS NULL OR state = ?2) ORDER BY id",
		      "ss", after ? after : "", state);

	if (rc < 0)
		return rc;
	/* Label filters run here, not in SQL: labels are a JSON object per row. */
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		json_object *m = row_json(s);
		json_object *ml = NULL;

		json_object_object_get_ex(m, "labels", &ml);
		if (!labels_match(ml, labels)) {
			json_object_put(m);
			continue;
		}
		if ((int)json_object_array_length(arr) == limit) {
			json_object_put(m);
			more = true;
			break;
		}
		json_object_array_add(arr, m);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return bm_sqlite_errno(rc);
	if (more) {
		json_object *l = json_object_array_get_idx(arr, json_object_array_length(arr) - 1);
		json_object *idv = NULL;

		json_object_object_get_ex(l, "id", &idv);
		last = json_object_get_string(idv);
	}
	*next = g_strdup(last);
	*out = g_steal_pointer(&arr);
	return 0;
}

int bm_machine_delete(struct bm_store *st, const char *id, char **state)
{
	enum bm_state s;
	int64_t has_instance = 0;
	int rc = begin(st);

	if (rc < 0)
		return rc;
	rc = machine_state(st, id, state, &s);
	if (rc >= 0)
		rc = query_int(st, &has_instance,
			       "SELECT instance_id IS NOT NULL FROM machines WHERE id = ?", "s", id);
	if (rc >= 0 && (bm_state_in_use(s) || has_instance))
		rc = -EBUSY;
	if (rc >= 0)
		rc = exec(st, "DELETE FROM machines WHERE id = ?", "s", id);
	return end(st, rc);
}

/* Within a transaction: take @id, in a state that allows it, into maintenance. */
static int maintenance_start(struct bm_store *st, const char *id, const char *reason)
{
	/*
	 * An enroll or recover still verifying will not be carried out: its
	 * operation ends now, like any request overtaken by another.
	 */
	int rc = exec(st,
		      "UPDATE operations SET state = 'failed', error = 'superseded by maintenance',"
		      " finished_at = ? WHERE id = (SELECT op_id FROM machines WHERE id = ?)"
		      " AND finished_at = 0",
		      "is", bm_now_ms(), id);

	if (rc >= 0)
		rc = exec(st,
			  "UPDATE machines SET state = 'maintenance', step = '',"
			  " maintenance_reason = ?, state_since = ?, attempts = 0"
			  " WHERE id = ?",
			  "sis", reason ? reason : "", bm_now_ms(), id);
	return rc;
}

int bm_machine_maintenance(struct bm_store *st, const char *id, bool on, const char *reason,
			   int64_t *op, char **state)
{
	enum bm_state s;
	int64_t has_instance = 0, o = 0;
	int rc = begin(st);

	if (rc < 0)
		return rc;
	rc = machine_state(st, id, state, &s);
	if (rc >= 0 && on)
		rc = query_int(st, &has_instance,
			       "SELECT instance_id IS NOT NULL FROM machines WHERE id = ?", "s", id);
	if (rc >= 0 && on) {
		/* A machine in error with an instance must be deprovisioned or recovered first. */
		if (has_instance)
			rc = -EBUSY;
		else if (s == BM_MAINTENANCE)
			rc = exec(st, "UPDATE machines SET maintenance_reason = ? WHERE id = ?",
				  "ss", reason ? reason : "", id);
		else if (!bm_transition_allowed(s, BM_MAINTENANCE))
			rc = -EBUSY;
		else
			rc = maintenance_start(st, id, reason);
	} else if (rc >= 0) {
		/*
		 * The verify that follows is work of its own, under an enroll
		 * operation of its own: the machine's operation is finished
		 * (or failed when maintenance began), and must stay as it
		 * finished; and a worker's outcome for a verify from before
		 * the maintenance must be fenced off, which the new op_id does.
		 */
		if (s != BM_MAINTENANCE)
			rc = -EBUSY;
		if (rc >= 0)
			rc = op_new(st, "enroll", id, NULL, NULL, &o);
		if (rc >= 0)
			rc = exec(st,
				  "UPDATE machines SET state = 'enrolling', step = 'verify',"
				  " maintenance_reason = '', state_since = ?, attempts = 0,"
				  " next_at = 0, step_started_at = 0, op_id = ?, last_error = ''"
				  " WHERE id = ?",
				  "iis", bm_now_ms(), o, id);
	}
	rc = end(st, rc);
	if (rc >= 0 && !on)
		*op = o;
	return rc;
}

/* Within a transaction: start deprovisioning @id with a new operation. */
static int start_deprovision(struct bm_store *st, const char *id, const char *instance,
			     const char *type, int64_t *op)
{
	/*
	 * Every request still open on the machine ends here: the machine's
	 * operation, a power request and each disk or NIC being (un)plugged.
	 * Deprovisioning powers off and removes every row, so none of them
	 * will be carried out, and a client waiting on one must hear so.
	 */
	int rc = exec(st,
		      "UPDATE operations SET state = 'failed', error = 'superseded by ' || ?1,"
		      " finished_at = ?2 WHERE finished_at = 0 AND id IN ("
		      "  SELECT op_id FROM machines WHERE id = ?3"
		      "  UNION SELECT power_op FROM machines WHERE id = ?3"
		      "  UNION SELECT op_id FROM disks WHERE machine_id = ?3"
		      "  UNION SELECT op_id FROM nics WHERE machine_id = ?3)",
		      "sis", type, bm_now_ms(), id);

	if (rc >= 0)
		rc = op_new(st, type, id, instance, NULL, op);
	if (rc >= 0)
		rc = exec(st,
			  "UPDATE machines SET state = 'deprovisioning', step = 'power_off',"
			  " attempts = 0, next_at = 0, step_started_at = 0, state_since = ?,"
			  " op_id = ?, power_target = '', power_op = 0, last_error = ''"
			  " WHERE id = ?",
			  "iis", bm_now_ms(), *op, id);
	if (rc >= 0 && instance)
		rc = exec(st, "UPDATE instances SET state = 'deprovisioning' WHERE id = ?", "s",
			  instance);
	return rc;
}

int bm_machine_recover(struct bm_store *st, const char *id, int64_t *op, char **state)
{
	enum bm_state s;
	g_autofree char *instance = NULL;
	int64_t o = 0;
	int rc = begin(st);

	if (rc < 0)
		return rc;
	rc = machine_state(st, id, state, &s);
	if (rc >= 0 && s != BM_ERROR)
		rc = -EBUSY;
	if (rc >= 0)
		rc = query_text(st, &instance, "SELECT instance_id FROM machines WHERE id = ?",
				"s", id);
	if (rc >= 0 && instance) {
		rc = start_deprovision(st, id, instance, "recover", &o);
	} else if (rc >= 0) {
		rc = op_new(st, "recover", id, NULL, NULL, &o);
		if (rc >= 0)
			rc = exec(st,
				  "UPDATE machines SET state = 'enrolling', step = 'verify',"
				  " attempts = 0, next_at = 0, state_since = ?, op_id = ?,"
				  " last_error = '' WHERE id = ?",
				  "iis", bm_now_ms(), o, id);
	}
	rc = end(st, rc);
	if (rc >= 0)
		*op = o;
	return rc;
}

int bm_machine_power(struct bm_store *st, const char *id, const char *target, int64_t *op,
		     char **state)
{
	enum bm_state s;
	int64_t o = 0;
	int rc = begin(st);

	if (rc < 0)
		return rc;
	rc = machine_state(st, id, state, &s);
	if (rc >= 0 && s != BM_ACTIVE)
		rc = -EBUSY;
	if (rc >= 0)
		rc = op_new(st, "power", id, NULL, target, &o);
	if (rc >= 0) {
		/* A newer request replaces a pending one, whose operation is superseded. */
		rc = exec(st,
			  "UPDATE operations SET state = 'failed', error = 'superseded',"
			  " finished_at = ? WHERE id = (SELECT power_op FROM machines WHERE id = ?)"
			  " AND finished_at = 0",
			  "is", bm_now_ms(), id);
	}
	if (rc >= 0) {
		rc = exec(st,
			  "UPDATE machines SET power_target = ?, power_op = ?, attempts = 0,"
			  " next_at = 0, last_error = '' WHERE id = ?",
			  "sis", target, o, id);
	}
	rc = end(st, rc);
	if (rc >= 0)
		*op = o;
	return rc;
}

/* The rows of @sql (one parameter: the machine id) for machine @id, which must exist. */
static int machine_rows(struct bm_store *st, const char *id, const char *sql, json_object **out)
{
	enum bm_state s;
	int rc = machine_state(st, id, NULL, &s);

	return rc < 0 ? rc : query_array(st, out, sql, "s", id);
}

int bm_machine_history(struct bm_store *st, const char *id, json_object **out)
{
	return machine_rows(st, id,
			    "SELECT op_id AS operation, state, step, result, error, attempt,"
			    " started_at, finished_at FROM history WHERE machine_id = ?"
			    " ORDER BY id",
			    out);
}

/* ---- hot-plug ---- */

int bm_disk_list(struct bm_store *st, const char *machine, json_object **out)
{
	return machine_rows(st, machine,
			    "SELECT id, role, image, size_gb, bus, state, attempts, last_error,"
			    " op_id AS operation FROM disks WHERE machine_id = ? ORDER BY created_at, id",
			    out);
}

int bm_nic_list(struct bm_store *st, const char *machine, json_object **out)
{
	return machine_rows(st, machine,
			    "SELECT id, network, mac, state, attempts, last_error,"
			    " op_id AS operation FROM nics WHERE machine_id = ? ORDER BY created_at, id",
			    out);
}

static char *new_id(const char *prefix)
{
	return g_strdup_printf("%s%08x", prefix, g_random_int());
}

/* For disks @a is the image and @b the bus; for NICs the network and the MAC. */
static int plug_add(struct bm_store *st, const char *table, const char *machine,
		    const char *a, const char *b, int64_t size_gb, json_object **out,
		    int64_t *op, char **state)
{
	bool disk = strcmp(table, "disks") == 0;
	/*
	 * MACHINE-d12345678: the machine's id cut so that the whole is an id
	 * (BM_ID_MAX bytes), which the handler checks; the random part and the
	 * table's key keep it unique.
	 */
	g_autofree char *prefix = g_strdup_printf("%.*s-%s", BM_ID_MAX - 10, machine,
						  disk ? "d" : "n");
	g_autofree char *id = new_id(prefix);
	g_autofree char *sql = NULL;
	enum bm_state s;
	int64_t count = 0, o = 0;
	int rc = begin(st);

	if (rc < 0)
		return rc;
	rc = machine_state(st, machine, state, &s);
	if (rc >= 0 && s != BM_ACTIVE)
		rc = -EBUSY;
	if (rc >= 0)
		rc = query_int(st, &count,
			       disk ? "SELECT count(*) FROM disks WHERE machine_id = ? AND role = 'data'"
				    : "SELECT count(*) FROM nics WHERE machine_id = ?",
			       "s", machine);
	if (rc >= 0 && count >= (disk ? MAX_DATA_DISKS : MAX_NICS))
		rc = -EMLINK;
	if (rc >= 0)
		rc = op_new(st, disk ? "attach_disk" : "attach_nic", machine, NULL, id, &o);
	if (rc >= 0 && disk)
		rc = exec(st,
			  "INSERT INTO disks(id, machine_id, role, image, size_gb, state, op_id,"
			  " created_at, bus) VALUES(?, ?, 'data', ?, ?, 'attaching', ?, ?, ?)",
			  "sssiiis", id, machine, a ? a : "", size_gb, o, bm_now_ms(),
			  b ? b : "virtio-blk");
	else if (rc >= 0)
		rc = exec(st,
			  "INSERT INTO nics(id, machine_id, network, mac, state, op_id, created_at)"
			  " VALUES(?, ?, ?, ?, 'attaching', ?, ?)",
			  "ssssii", id, machine, a, b ? b : "", o, bm_now_ms());
	rc = end(st, rc);
	if (rc < 0)
		return rc;
	*op = o;
	sql = g_strdup_printf("SELECT * FROM %s WHERE id = ?", table);
	return query_one(st, out, sql, "s", id);
}

int bm_disk_add(struct bm_store *st, const char *machine, int64_t size_gb, const char *image,
		const char *bus, json_object **out, int64_t *op, char **state)
{
	return plug_add(st, "disks", machine, image, bus, size_gb, out, op, state);
}

int bm_nic_add(struct bm_store *st, const char *machine, const char *network, const char *mac,
	       json_object **out, int64_t *op, char **state)
{
	return plug_add(st, "nics", machine, network, mac, 0, out, op, state);
}

static int plug_remove(struct bm_store *st, bool disk, const char *machine, const char *id,
		       int64_t *op, char **state)
{
	enum bm_state s;
	g_autofree char *rstate = NULL;
	int64_t o = 0;
	int rc = begin(st);

	if (rc < 0)
		return rc;
	rc = machine_state(st, machine, state, &s);
	if (rc >= 0)
		rc = query_text(st, &rstate,
				disk ? "SELECT state FROM disks WHERE id = ? AND machine_id = ?"
				       " AND role = 'data'"
				     : "SELECT state FROM nics WHERE id = ? AND machine_id = ?",
				"ss", id, machine);
	if (rc >= 0 && s != BM_ACTIVE)
		rc = -EBUSY;
	if (rc >= 0 && strcmp(rstate, "detaching") == 0) {
		/* Already on its way out: the same operation answers again. */
		rc = query_int(st, &o,
			       disk ? "SELECT op_id FROM disks WHERE id = ?"
				    : "SELECT op_id FROM nics WHERE id = ?",
			       "s", id);
	} else if (rc >= 0) {
		/*
		 * An attach still under way is not carried out any more: its
		 * operation fails now rather than waiting for ever (the row's
		 * op_id is about to name the detach).  The controller's result
		 * for the attach, if one is in flight, is fenced off in plug_done().
		 */
		rc = exec(st,
			  disk ? "UPDATE operations SET state = 'failed', error = 'superseded by detach',"
				 " finished_at = ? WHERE id = (SELECT op_id FROM disks WHERE id = ?)"
				 " AND finished_at = 0"
			       : "UPDATE operations SET state = 'failed', error = 'superseded by detach',"
				 " finished_at = ? WHERE id = (SELECT op_id FROM nics WHERE id = ?)"
				 " AND finished_at = 0",
			  "is", bm_now_ms(), id);
		if (rc >= 0)
			rc = op_new(st, disk ? "detach_disk" : "detach_nic", machine, NULL, id, &o);
		if (rc >= 0)
			rc = exec(st,
				  disk ? "UPDATE disks SET state = 'detaching', attempts = 0,"
					 " next_at = 0, op_id = ?, last_error = '' WHERE id = ?"
				       : "UPDATE nics SET state = 'detaching', attempts = 0,"
					 " next_at = 0, op_id = ?, last_error = '' WHERE id = ?",
				  "is", o, id);
	}
	rc = end(st, rc);
	if (rc >= 0)
		*op = o;
	return rc;
}

int bm_disk_remove(struct bm_store *st, const char *machine, const char *disk, int64_t *op,
		   char **state)
{
	return plug_remove(st, true, machine, disk, op, state);
}

int bm_nic_remove(struct bm_store *st, const char *machine, const char *nic, int64_t *op,
		  char **state)
{
	return plug_remove(st, false, machine, nic, op, state);
}

/* ---- pools ---- */

struct pool_rule {
	char *model; /* NULL: any */
	int64_t cpu; /* -1: any */
	json_object *labels; /* owned */
};

static void pool_rule_clear(struct pool_rule *r)
{
	g_free(r->model);
	json_object_put(r->labels);
}

static int pool_rule_load(struct bm_store *st, const char *name, struct pool_rule *r)
{
	g_autoptr(json_object) p = NULL;
	json_object *v = NULL;
	int rc = query_one(st, &p, "SELECT model, cpu, labels FROM pools WHERE name = ?", "s",
			   name);

	if (rc < 0)
		return rc;
	memset(r, 0, sizeof(*r));
	r->cpu = -1;
	if (json_object_object_get_ex(p, "model", &v) && v)
		r->model = g_strdup(json_object_get_string(v));
	if (json_object_object_get_ex(p, "cpu", &v) && v)
		r->cpu = json_object_get_int64(v);
	if (json_object_object_get_ex(p, "labels", &v) && v)
		r->labels = json_object_get(v);
	return 0;
}

static bool pool_rule_match(const struct pool_rule *r, json_object *m)
{
	json_object *v = NULL;

	if (r->model && (!json_object_object_get_ex(m, "model", &v) ||
			 strcmp(json_object_get_string(v), r->model) != 0))
		return false;
	if (r->cpu >= 0 &&
	    (!json_object_object_get_ex(m, "cpu", &v) || json_object_get_int64(v) != r->cpu))
		return false;
	json_object_object_get_ex(m, "labels", &v);
	return labels_match(v, r->labels);
}

int bm_pool_create(struct bm_store *st, json_object *req, json_object **out)
{
	const char *name = NULL, *model = NULL;
	json_object *match = NULL, *labels = NULL, *tmpl = NULL;
	g_autofree char *labels_s = NULL, *tmpl_s = NULL;
	int64_t cpu = -1;
	char *msg = NULL;
	int rc;

	/* The api validated the request; this only extracts. */
	bm_json_str(req, "name", true, BM_ID_MAX, &name, &msg);
	json_object_object_get_ex(req, "match", &match);
	json_object_object_get_ex(req, "template", &tmpl);
	if (match) {
		bm_json_str(match, "model", false, 128, &model, &msg);
		bm_json_int(match, "cpu", false, 0, 1 << 20, &cpu, &msg);
		bm_json_labels(match, "labels", false, &labels, &msg);
	}
	g_free(msg);
	if (!name)
		return -EINVAL;
	labels_s = labels ? bm_json_dump(labels) : g_strdup("{}");
	tmpl_s = tmpl ? bm_json_dump(tmpl) : g_strdup("{}");
	rc = exec(st,
		  "INSERT INTO pools(name, model, cpu, labels, template, created_at)"
		  " VALUES(?, ?, CASE WHEN ?3 < 0 THEN NULL ELSE ?3 END, ?, ?, ?)",
		  "ssissi", name, model, cpu, labels_s, tmpl_s, bm_now_ms());
	if (rc < 0)
		return rc;
	return bm_pool_get(st, name, out);
}

/* Free and in-use counts of the machines matching @name's rule. */
static int pool_counts(struct bm_store *st, const char *name, int64_t *free_n, int64_t *used_n)
{
	struct pool_rule r;
	g_autoptr(json_object) ms = NULL;
	int rc = pool_rule_load(st, name, &r);

	if (rc < 0)
		return rc;
	rc = query_array(st, &ms,
			 "SELECT m.model, m.cpu, m.labels, m.state, i.pool FROM machines m"
			 " LEFT JOIN instances i ON i.id = m.instance_id",
			 NULL);
	*free_n = *used_n = 0;
	for (size_t i = 0; rc >= 0 && i < json_object_array_length(ms); i++) {
		json_object *m = json_object_array_get_idx(ms, i), *v = NULL, *p = NULL;

		json_object_object_get_ex(m, "state", &v);
		json_object_object_get_ex(m, "pool", &p);
		if (p && strcmp(json_object_get_string(p), name) == 0)
			(*used_n)++;
		else if (strcmp(json_object_get_string(v), "available") == 0 &&
			 pool_rule_match(&r, m))
			(*free_n)++;
	}
	pool_rule_clear(&r);
	return rc;
}

int bm_pool_get(struct bm_store *st, const char *name, json_object **out)
{
	g_autoptr(json_object) p = NULL;
	json_object *match, *v = NULL;
	int64_t free_n = 0, used_n = 0;
	int rc = query_one(st, &p, "SELECT name, model, cpu, labels, template FROM pools WHERE name = ?",
			   "s", name);

	if (rc < 0)
		return rc;
	rc = pool_counts(st, name, &free_n, &used_n);
	if (rc < 0)
		return rc;
	/* Reshape to the request's form: {name, match: {model, cpu, labels}, template}. */
	match = json_object_new_object();
	if (json_object_object_get_ex(p, "model", &v) && v)
		json_object_object_add(match, "model", json_object_get(v));
	if (json_object_object_get_ex(p, "cpu", &v) && v)
		json_object_object_add(match, "cpu", json_object_get(v));
	if (json_object_object_get_ex(p, "labels", &v))
		json_object_object_add(match, "labels", json_object_get(v));
	json_object_object_del(p, "model");
	json_object_object_del(p, "cpu");
	json_object_object_del(p, "labels");
	json_object_object_add(p, "match", match);
	json_object_object_add(p, "free", json_object_new_int64(free_n));
	json_object_object_add(p, "in_use", json_object_new_int64(used_n));
	*out = g_steal_pointer(&p);
	return 0;
}

int bm_pool_list(struct bm_store *st, json_object **out)
{
	g_autoptr(json_object) names = NULL;
	g_autoptr(json_object) arr = json_object_new_array();
	int rc = query_array(st, &names, "SELECT name FROM pools ORDER BY name", NULL);

	for (size_t i = 0; rc >= 0 && i < json_object_array_length(names); i++) {
		json_object *n = NULL, *p = NULL;

		json_object_object_get_ex(json_object_array_get_idx(names, i), "name", &n);
		rc = bm_pool_get(st, json_object_get_string(n), &p);
		if (rc >= 0)
			json_object_array_add(arr, p);
	}
	if (rc < 0)
		return rc;
	*out = g_steal_pointer(&arr);
	return 0;
}

int bm_pool_delete(struct bm_store *st, const char *name)
{
	int64_t n = 0;
	int rc = begin(st);

	if (rc < 0)
		return rc;
	rc = query_int(st, &n, "SELECT count(*) FROM pools WHERE name = ?", "s", name);
	if (rc >= 0 && n == 0)
		rc = -ENOENT;
	if (rc >= 0)
		rc = query_int(st, &n,
			       "SELECT count(*) FROM instances WHERE pool = ? AND state != 'deleted'",
			       "s", name);
	if (rc >= 0 && n > 0)
		rc = -EBUSY;
	if (rc >= 0)
		rc = exec(st, "DELETE FROM pools WHERE name = ?", "s", name);
	return end(st, rc);
}

/* ---- instances ---- */

#define INSTANCE_COLUMNS                                                                 \
	"i.id, i.pool, i.machine_id AS machine, i.image, i.disk_gb, i.networks, i.state," \
	" i.created_at, i.deleted_at, m.state AS machine_state, m.last_error"

int bm_instance_create(struct bm_store *st, json_object *req, json_object **out, int64_t *op)
{
	const char *pool = NULL, *image = NULL, *user_data = "", *given = NULL, *bus = "virtio-blk";
	int64_t disk_gb = 0, o = 0, now = bm_now_ms();
	json_object *networks = NULL;
	g_autofree char *id = NULL, *networks_s = NULL, *boot = NULL;
	g_autofree char *machine = NULL;
	sqlite3_stmt *s = NULL;
	struct pool_rule r;
	char *msg = NULL;
	int rc;

	bm_json_str(req, "pool", true, BM_ID_MAX, &pool, &msg);
	bm_json_str(req, "image", true, 1024, &image, &msg);
	bm_json_int(req, "disk_gb", true, 1, 65536, &disk_gb, &msg);
	bm_json_str(req, "user_data", false, 65536, &user_data, &msg);
	bm_json_str(req, "id", false, BM_ID_MAX, &given, &msg);
	bm_json_str(req, "disk_bus", false, 16, &bus, &msg);
	json_object_object_get_ex(req, "networks", &networks);
	g_free(msg);
	if (!pool || !image)
		return -EINVAL;
	id = given ? g_strdup(given) : new_id("i-");
	networks_s = networks ? bm_json_dump(networks) : g_strdup("[]");

	rc = begin(st);
	if (rc < 0)
		return rc;
	rc = pool_rule_load(st, pool, &r);
	if (rc < 0)
		return end(st, rc);
	/*
	 * Under the write lock: no other transaction can claim between this
	 * read and the update.  Model and cpu narrow the scan in SQL, labels
	 * are checked here, and the first match ends it.
	 */
	rc = prep(st, &s,
		  "SELECT id, model, cpu, labels FROM machines WHERE state = 'available'"
		  " AND (?1 IS NULL OR model = ?1) AND (?2 < 0 OR cpu = ?2) ORDER BY id",
		  "si", r.model, r.cpu);
	while (rc >= 0 && !machine) {
		g_autoptr(json_object) m = NULL;
		int src = sqlite3_step(s);

		if (src != SQLITE_ROW) {
			rc = src == SQLITE_DONE ? 0 : step_errno(s, src);
			break;
		}
		m = row_json(s);
		if (pool_rule_match(&r, m))
			machine = g_strdup((const char *)sqlite3_column_text(s, 0));
	}
	sqlite3_finalize(s);
	pool_rule_clear(&r);
	if (rc >= 0 && !machine)
		rc = -ENOSPC;
	if (rc >= 0)
		rc = exec(st,
			  "INSERT INTO instances(id, pool, machine_id, image, disk_gb, networks,"
			  " user_data, state, created_at) VALUES(?, ?, ?, ?, ?, ?, ?,"
			  " 'provisioning', ?)",
			  "ssssissi", id, pool, machine, image, disk_gb, networks_s, user_data, now);
	if (rc >= 0)
		rc = op_new(st, "provision", machine, id, NULL, &o);
	if (rc >= 0)
		rc = exec(st,
			  "UPDATE machines SET state = 'queued', step = '', instance_id = ?,"
			  " attempts = 0, next_at = 0, state_since = ?, op_id = ?, last_error = ''"
			  " WHERE id = ? AND state = 'available'",
			  "siis", id, now, o, machine);
	if (rc == 0)
		rc = -ENOSPC;
	boot = g_strdup_printf("%s-boot", id);
	if (rc >= 0)
		rc = exec(st,
			  "INSERT INTO disks(id, machine_id, role, image, size_gb, state, op_id,"
			  " created_at, bus) VALUES(?, ?, 'boot', ?, ?, 'attaching', ?, ?, ?)",
			  "sssiiis", boot, machine, image, disk_gb, o, now, bus);
	for (size_t i = 0; rc >= 0 && networks && i < json_object_array_length(networks); i++) {
		g_autofree char *nic = g_strdup_printf("%s-nic%zu", id, i);

		rc = exec(st,
			  "INSERT INTO nics(id, machine_id, network, state, op_id, created_at)"
			  " VALUES(?, ?, ?, 'attaching', ?, ?)",
			  "sssii", nic, machine,
			  json_object_get_string(json_object_array_get_idx(networks, i)), o, now);
	}
	rc = end(st, rc);
	if (rc < 0)
		return rc;
	*op = o;
	/* Committed: a failing read-back must not pass for a missing pool. */
	rc = bm_instance_get(st, id, out);
	if (rc == -ENOENT) {
		g_warning("bm store: instance %s was committed but cannot be read back", id);
		rc = -EIO;
	}
	return rc;
}

int bm_instance_get(struct bm_store *st, const char *id, json_object **out)
{
	return query_one(st, out,
			 "SELECT " INSTANCE_COLUMNS " FROM instances i"
			 " LEFT JOIN machines m ON m.id = i.machine_id AND m.instance_id = i.id"
			 " WHERE i.id = ?",
			 "s", id);
}

int bm_instance_list(struct bm_store *st, json_object **out)
{
	return query_array(st, out,
			   "SELECT " INSTANCE_COLUMNS " FROM instances i"
			   " LEFT JOIN machines m ON m.id = i.machine_id AND m.instance_id = i.id"
			   " WHERE i.state != 'deleted' ORDER BY i.created_at, i.id",
			   NULL);
}

int bm_instance_delete(struct bm_store *st, const char *id, int64_t *op, char **state)
{
	g_autofree char *istate = NULL, *machine = NULL;
	enum bm_state s = BM_AVAILABLE;
	int64_t o = 0;
	int rc = begin(st);

	if (rc < 0)
		return rc;
	rc = query_text(st, &istate, "SELECT state FROM instances WHERE id = ?", "s", id);
	if (rc >= 0)
		rc = query_text(st, &machine,
				"SELECT id FROM machines WHERE instance_id = ?", "s", id);
	if (rc == -ENOENT && istate) {
		/* Deleted already: the machine is free again. */
		*state = g_steal_pointer(&istate);
		return end(st, -EBUSY);
	}
	if (rc >= 0)
		rc = machine_state(st, machine, state, &s);
	if (rc >= 0 && s == BM_DEPROVISIONING) {
		rc = query_int(st, &o, "SELECT op_id FROM machines WHERE id = ?", "s", machine);
	} else if (rc >= 0) {
		if (!bm_transition_allowed(s, BM_DEPROVISIONING))
			rc = -EBUSY;
		else
			rc = start_deprovision(st, machine, id, "deprovision", &o);
	}
	rc = end(st, rc);
	if (rc >= 0)
		*op = o;
	return rc;
}

/* ---- idempotency ---- */

int bm_idem_begin(struct bm_store *st, const char *key, const char *method, const char *path,
		  const char *hash, int *status, char **body)
{
	g_autoptr(json_object) row = NULL;
	json_object *v = NULL;
	int rc = begin(st);

	if (rc < 0)
		return rc;
	exec(st, "DELETE FROM idempotency WHERE created_at < ? OR (status = 0 AND created_at < ?)",
	     "ii", bm_now_ms() - IDEM_TTL_MS, bm_now_ms() - IDEM_PENDING_TTL_MS);
	rc = exec(st,
		  "INSERT OR IGNORE INTO idempotency(key, method, path, hash, created_at)"
		  " VALUES(?, ?, ?, ?, ?)",
		  "ssssi", key, method, path, hash, bm_now_ms());
	if (rc == 1)
		return end(st, 0);
	if (rc >= 0)
		rc = query_one(st, &row,
			       "SELECT method, path, hash, status, body FROM idempotency WHERE key = ?",
			       "s", key);
	rc = end(st, rc);
	if (rc < 0)
		return rc;
	json_object_object_get_ex(row, "method", &v);
	if (strcmp(json_object_get_string(v), method) != 0)
		return -EEXIST;
	json_object_object_get_ex(row, "path", &v);
	if (strcmp(json_object_get_string(v), path) != 0)
		return -EEXIST;
	json_object_object_get_ex(row, "hash", &v);
	if (strcmp(json_object_get_string(v), hash) != 0)
		return -EEXIST;
	json_object_object_get_ex(row, "status", &v);
	if (json_object_get_int(v) == 0)
		return -EBUSY;
	*status = json_object_get_int(v);
	json_object_object_get_ex(row, "body", &v);
	*body = g_strdup(json_object_get_string(v));
	return 1;
}

int bm_idem_finish(struct bm_store *st, const char *key, int status, const char *body)
{
	int rc = exec(st, "UPDATE idempotency SET status = ?, body = ? WHERE key = ?", "dss",
		      status, body, key);

	return rc < 0 ? rc : 0;
}

int bm_idem_forget(struct bm_store *st, const char *key)
{
	int rc = exec(st, "DELETE FROM idempotency WHERE key = ?", "s", key);

	return rc < 0 ? rc : 0;
}

/* ---- retention ---- */

/* Within a transaction: add @n to the rows of kind @what purged so far. */
static int purged_add(struct bm_store *st, const char *what, int64_t n)
{
	if (n <= 0)
		return 0;
	return exec(st,
		    "INSERT INTO purged(what, rows) VALUES(?, ?)"
		    " ON CONFLICT(what) DO UPDATE SET rows = rows + excluded.rows",
		    "si", what, n);
}

/*
 * One transaction: run @del (whose parameters @fmt, ... end with the batch
 * size) and count what it removed under @what.  The number removed, or -errno.
 */
static int purge_batch(struct bm_store *st, const char *what, const char *del, const char *fmt,
		       ...)
{
	sqlite3_stmt *s = NULL;
	va_list ap;
	int rc = begin(st), n = 0;

	if (rc < 0)
		return rc;
	va_start(ap, fmt);
	rc = prep_v(st, &s, del, fmt, ap);
	va_end(ap);
	if (rc >= 0) {
		rc = sqlite3_step(s);
		rc = rc == SQLITE_DONE ? (n = sqlite3_changes(st->db)) : step_errno(s, rc);
		sqlite3_finalize(s);
	}
	if (rc >= 0)
		rc = purged_add(st, what, n);
	rc = end(st, rc);
	return rc < 0 ? rc : n;
}

/*
 * The operations one batch removes are chosen once, into a temporary
 * table, so that the histogram of the succeeded ones is folded into
 * purged_ops from exactly the rows deleted.  An operation something still
 * names stays: a client may still poll it (bmctl --wait, the machine's
 * "operation"), and the controller's fencing compares against it.
 */
static int purge_operations(struct bm_store *st, int64_t before, int64_t batch)
{
	int rc = begin(st), n = 0;

	if (rc >= 0)
		rc = exec(st, "CREATE TEMP TABLE IF NOT EXISTS purge_ids(id INTEGER PRIMARY KEY)",
			  NULL);
	if (rc >= 0)
		rc = exec(st, "DELETE FROM temp.purge_ids", NULL);
	if (rc >= 0)
		rc = exec(st,
			  "INSERT INTO temp.purge_ids SELECT id FROM operations"
			  " WHERE finished_at > 0 AND finished_at < ? AND id NOT IN ("
			  "  SELECT op_id FROM machines UNION SELECT power_op FROM machines"
			  "  UNION SELECT op_id FROM disks UNION SELECT op_id FROM nics)"
			  " ORDER BY finished_at LIMIT ?",
			  "ii", before, batch);
	if (rc > 0)
		rc = exec(st,
			  "INSERT INTO purged_ops(type, n, sum_ms, le1, le5, le30, le60, le300,"
			  " le900, le1800) SELECT type, count(*), sum(d), sum(d <= 1000),"
			  " sum(d <= 5000), sum(d <= 30000), sum(d <= 60000), sum(d <= 300000),"
			  " sum(d <= 900000), sum(d <= 1800000) FROM (SELECT type,"
			  " finished_at - created_at AS d FROM operations WHERE state = 'succeeded'"
			  " AND id IN temp.purge_ids) WHERE true GROUP BY type"
			  " ON CONFLICT(type) DO UPDATE SET n = n + excluded.n,"
			  " sum_ms = sum_ms + excluded.sum_ms, le1 = le1 + excluded.le1,"
			  " le5 = le5 + excluded.le5, le30 = le30 + excluded.le30,"
			  " le60 = le60 + excluded.le60, le300 = le300 + excluded.le300,"
			  " le900 = le900 + excluded.le900, le1800 = le1800 + excluded.le1800",
			  NULL);
	if (rc >= 0)
		rc = n = exec(st, "DELETE FROM operations WHERE id IN temp.purge_ids", NULL);
	if (rc >= 0)
		rc = purged_add(st, "operations", n);
	rc = end(st, rc);
	return rc < 0 ? rc : n;
}

/* A purge step's rows into @count; @more when a whole batch went (more may be left). */
static int tally(int rc, int64_t batch, int64_t *count, bool *more)
{
	if (rc >= 0) {
		*count += rc;
		*more |= rc == batch;
	}
	return rc;
}

int bm_store_purge(struct bm_store *st, const struct bm_purge_limits *lim, int64_t now,
		   struct bm_purge_counts *counts)
{
	int64_t batch = MAX(lim->batch, 1);
	bool more = false;
	int rc = 0;

	if (lim->history_max_entries > 0) {
		/*
		 * Beyond the newest N rows of each machine.  The cut-off is
		 * computed once per machine (the LIMIT keeps the subquery from
		 * being flattened into the join, which would run it per row).
		 */
		rc = tally(purge_batch(st, "history",
				       "DELETE FROM history WHERE id IN (SELECT h.id FROM"
				       " (SELECT m.id AS mid, (SELECT x.id FROM history x"
				       "   WHERE x.machine_id = m.id ORDER BY x.id DESC LIMIT 1 OFFSET ?)"
				       "   AS cut FROM machines m LIMIT -1) c"
				       " JOIN history h ON h.machine_id = c.mid AND h.id < c.cut"
				       " LIMIT ?)",
				       "ii", lim->history_max_entries - 1, batch), batch,
			   &counts->history, &more);
	}
	if (rc >= 0 && lim->history_max_age_ms > 0) {
		/* The rows of the operation that brought the machine where it is stay. */
		rc = tally(purge_batch(st, "history",
				       "DELETE FROM history WHERE id IN (SELECT h.id FROM history h"
				       " JOIN machines m ON m.id = h.machine_id WHERE h.finished_at < ?"
				       " AND h.op_id != m.op_id"
				       " ORDER BY h.finished_at LIMIT ?)",
				       "ii", now - lim->history_max_age_ms, batch), batch,
			   &counts->history, &more);
	}
	if (rc >= 0 && lim->operation_max_age_ms > 0) {
		rc = tally(purge_operations(st, now - lim->operation_max_age_ms, batch), batch,
			   &counts->operations, &more);
	}
	if (rc >= 0 && lim->instance_max_age_ms > 0) {
		/* A tombstone answers 409 "deleted" until then, and 404 after. */
		rc = tally(purge_batch(st, "instances",
				       "DELETE FROM instances WHERE id IN (SELECT i.id FROM instances i"
				       " WHERE i.state = 'deleted' AND i.deleted_at < ?"
				       " AND NOT EXISTS (SELECT 1 FROM machines m"
				       "  WHERE m.instance_id = i.id)"
				       " ORDER BY i.deleted_at LIMIT ?)",
				       "ii", now - lim->instance_max_age_ms, batch), batch,
			   &counts->instances, &more);
	}
	if (rc >= 0) {
		/* Expired keys go when a request brings one too; not all requests do. */
		rc = tally(purge_batch(st, "idempotency",
				       "DELETE FROM idempotency WHERE key IN (SELECT key FROM idempotency"
				       " WHERE created_at < ? OR (status = 0 AND created_at < ?)"
				       " LIMIT ?)",
				       "iii", now - IDEM_TTL_MS, now - IDEM_PENDING_TTL_MS, batch), batch,
			   &counts->idempotency, &more);
	}
	return rc < 0 ? rc : more;
}

/* ---- metrics ---- */

/* bm_purged_rows_total: every kind, 0 until the first purge of it. */
static int purged_metrics(struct bm_store *st, GString *out)
{
	static const char *const kinds[] = {"history", "operations", "instances", "idempotency"};
	int64_t rows[G_N_ELEMENTS(kinds)] = {0};
	sqlite3_stmt *s = NULL;
	int rc = prep(st, &s, "SELECT what, rows FROM purged", NULL);

	if (rc < 0)
		return rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		for (unsigned i = 0; i < G_N_ELEMENTS(kinds); i++)
			if (strcmp((const char *)sqlite3_column_text(s, 0), kinds[i]) == 0)
				rows[i] = sqlite3_column_int64(s, 1);
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return bm_sqlite_errno(rc);
	g_string_append(out, "# HELP bm_purged_rows_total Rows removed by the retention purge"
			     " (bm-controller).\n"
			     "# TYPE bm_purged_rows_total counter\n");
	for (unsigned i = 0; i < G_N_ELEMENTS(kinds); i++)
		g_string_append_printf(out, "bm_purged_rows_total{table=\"%s\"} %" G_GINT64_FORMAT
				       "\n", kinds[i], rows[i]);
	return 0;
}

int bm_store_metrics(struct bm_store *st, GString *out)
{
	static const int buckets[] = {1, 5, 30, 60, 300, 900, 1800};
	int64_t counts[BM_N_STATES] = {0};
	sqlite3_stmt *s = NULL;
	int rc = prep(st, &s, "SELECT state, count(*) FROM machines GROUP BY state", NULL);

	if (rc < 0)
		return rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		enum bm_state state;

		if (bm_state_parse((const char *)sqlite3_column_text(s, 0), &state) == 0)
			counts[state] = sqlite3_column_int64(s, 1);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return bm_sqlite_errno(rc);
	g_string_append(out, "# HELP bm_machines Machines by lifecycle state.\n"
			     "# TYPE bm_machines gauge\n");
	for (unsigned i = 0; i < BM_N_STATES; i++)
		g_string_append_printf(out, "bm_machines{state=\"%s\"} %" G_GINT64_FORMAT "\n",
				       bm_state_name(i), counts[i]);

	/* The operations purged are counted in purged_ops: a histogram never goes down. */
	rc = prep(st, &s,
		  "SELECT type, sum(n), sum(t), sum(b1), sum(b5), sum(b30), sum(b60), sum(b300),"
		  " sum(b900), sum(b1800) FROM ("
		  " SELECT type, count(*) AS n, sum(d) AS t, sum(d <= 1000) AS b1,"
		  "  sum(d <= 5000) AS b5, sum(d <= 30000) AS b30, sum(d <= 60000) AS b60,"
		  "  sum(d <= 300000) AS b300, sum(d <= 900000) AS b900,"
		  "  sum(d <= 1800000) AS b1800"
		  "  FROM (SELECT type, finished_at - created_at AS d FROM operations"
		  "   WHERE finished_at > 0 AND state = 'succeeded') GROUP BY type"
		  " UNION ALL SELECT type, n, sum_ms, le1, le5, le30, le60, le300, le900, le1800"
		  "  FROM purged_ops)"
		  " GROUP BY type ORDER BY type",
		  NULL);
	if (rc < 0)
		return rc;
	g_string_append(out, "# HELP bm_operation_duration_seconds Time from request to completion"
			     " of succeeded operations.\n"
			     "# TYPE bm_operation_duration_seconds histogram\n");
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *type = (const char *)sqlite3_column_text(s, 0);
		gint64 n = sqlite3_column_int64(s, 1);

		for (unsigned i = 0; i < G_N_ELEMENTS(buckets); i++)
			g_string_append_printf(out,
					       "bm_operation_duration_seconds_bucket{type=\"%s\",le=\"%d\"}"
					       " %" G_GINT64_FORMAT "\n",
					       type, buckets[i], (gint64)sqlite3_column_int64(s, 3 + i));
		g_string_append_printf(out,
				       "bm_operation_duration_seconds_bucket{type=\"%s\",le=\"+Inf\"}"
				       " %" G_GINT64_FORMAT "\n"
				       "bm_operation_duration_seconds_sum{type=\"%s\"} %.3f\n"
				       "bm_operation_duration_seconds_count{type=\"%s\"} %" G_GINT64_FORMAT
				       "\n",
				       type, n, type, (double)sqlite3_column_int64(s, 2) / 1000.0, type, n);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return bm_sqlite_errno(rc);
	return purged_metrics(st, out);
}

/* ---- controller ---- */

int bm_lease_acquire(struct bm_store *st, const char *holder, int64_t ttl_ms)
{
	int64_t now = bm_now_ms();
	int rc = exec(st,
		      "INSERT INTO leases(name, holder, expires_at) VALUES('controller', ?, ?)"
		      " ON CONFLICT(name) DO UPDATE SET holder = excluded.holder,"
		      " expires_at = excluded.expires_at"
		      " WHERE leases.holder = excluded.holder OR leases.expires_at < ?",
		      "sii", holder, now + ttl_ms, now);

	if (rc < 0)
		return rc;
	return rc == 1 ? 0 : -EBUSY;
}

int bm_lease_release(struct bm_store *st, const char *holder)
{
	int rc = exec(st, "DELETE FROM leases WHERE name = 'controller' AND holder = ?", "s",
		      holder);

	return rc < 0 ? rc : 0;
}

/* Within a transaction: -ESTALE unless @holder holds the lease (NULL: no check). */
static int lease_held(struct bm_store *st, const char *holder)
{
	int64_t n = 0;
	int rc;

	if (!holder)
		return 0;
	rc = query_int(st, &n,
		       "SELECT count(*) FROM leases WHERE name = 'controller' AND holder = ?"
		       " AND expires_at >= ?",
		       "si", holder, bm_now_ms());
	if (rc < 0)
		return rc;
	return n == 1 ? 0 : -ESTALE;
}

int bm_store_promote_queued(struct bm_store *st, const char *holder, int cap)
{
	g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
	sqlite3_stmt *s = NULL;
	int64_t now = bm_now_ms();
	int rc = begin(st);

	if (rc < 0)
		return rc;
	rc = lease_held(st, holder);
	/*
	 * Only a machine whose provision operation is still pending starts:
	 * one that finished (cancelled, failed) is never written again, let
	 * alone run, and a machine queued under it must not block the queue.
	 */
	if (rc >= 0)
		rc = prep(st, &s,
			  "SELECT m.id FROM machines m JOIN operations o ON o.id = m.op_id"
			  " WHERE m.state = 'queued' AND o.state = 'pending' AND o.finished_at = 0"
			  " ORDER BY m.state_since, m.id LIMIT max(0, ?1 - (SELECT count(*) FROM"
			  " machines WHERE state = 'provisioning'))",
			  "d", cap);
	if (rc >= 0) {
		while ((rc = sqlite3_step(s)) == SQLITE_ROW)
			g_ptr_array_add(ids, g_strdup((const char *)sqlite3_column_text(s, 0)));
		rc = rc == SQLITE_DONE ? 0 : step_errno(s, rc);
		sqlite3_finalize(s);
	}
	for (guint i = 0; rc >= 0 && i < ids->len; i++) {
		const char *id = g_ptr_array_index(ids, i);

		rc = exec(st,
			  "UPDATE operations SET state = 'running', started_at = ?1"
			  " WHERE id = (SELECT op_id FROM machines WHERE id = ?2)",
			  "is", now, id);
		if (rc >= 0)
			rc = exec(st,
				  "UPDATE machines SET state = 'provisioning',"
				  " step = 'create_disk', attempts = 0, next_at = 0,"
				  " step_started_at = 0, state_since = ?1 WHERE id = ?2",
				  "is", now, id);
	}
	return end(st, rc);
}

int bm_store_due(struct bm_store *st, int64_t now, char ***out)
{
	sqlite3_stmt *s = NULL;
	GPtrArray *ids;
	int rc = prep(st, &s,
		      "SELECT id FROM machines WHERE"
		      " (state IN ('enrolling', 'provisioning', 'booting', 'deprovisioning')"
		      "  AND next_at <= ?1)"
		      " OR (state = 'active' AND ((power_target != '' AND next_at <= ?1)"
		      "  OR EXISTS (SELECT 1 FROM disks d WHERE d.machine_id = machines.id"
		      "   AND d.state IN ('attaching', 'detaching') AND d.next_at <= ?1)"
		      "  OR EXISTS (SELECT 1 FROM nics n WHERE n.machine_id = machines.id"
		      "   AND n.state IN ('attaching', 'detaching') AND n.next_at <= ?1)))"
		      " ORDER BY next_at, id",
		      "i", now);

	if (rc < 0)
		return rc;
	ids = g_ptr_array_new();
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		g_ptr_array_add(ids, g_strdup((const char *)sqlite3_column_text(s, 0)));
	sqlite3_finalize(s);
	g_ptr_array_add(ids, NULL);
	if (rc != SQLITE_DONE) {
		g_strfreev((char **)g_ptr_array_free(ids, FALSE));
		return bm_sqlite_errno(rc);
	}
	*out = (char **)g_ptr_array_free(ids, FALSE);
	return 0;
}

static void disk_row_free(gpointer p)
{
	struct bm_disk_row *d = p;

	g_free(d->id);
	g_free(d->role);
	g_free(d->image);
	g_free(d->state);
	g_free(d->bus);
	g_free(d);
}

static void nic_row_free(gpointer p)
{
	struct bm_nic_row *n = p;

	g_free(n->id);
	g_free(n->network);
	g_free(n->mac);
	g_free(n->state);
	g_free(n);
}

void bm_machine_row_free(struct bm_machine_row *m)
{
	if (!m)
		return;
	g_free(m->id);
	g_free(m->handler);
	g_free(m->instance);
	g_free(m->power_target);
	g_free(m->user_data);
	if (m->disks)
		g_ptr_array_unref(m->disks);
	if (m->nics)
		g_ptr_array_unref(m->nics);
	g_free(m);
}

static char *col_dup(sqlite3_stmt *s, int i)
{
	return g_strdup((const char *)sqlite3_column_text(s, i));
}

int bm_machine_load(struct bm_store *st, const char *id, struct bm_machine_row **out)
{
	g_autoptr(bm_machine_row) m = g_new0(struct bm_machine_row, 1);
	sqlite3_stmt *s = NULL;
	int rc;

	/* One read transaction, so the machine and its rows are one snapshot. */
	rc = exec(st, "BEGIN", NULL);
	if (rc < 0)
		return rc;
	rc = prep(st, &s,
		  "SELECT id, handler, state, step, attempts, next_at, step_started_at,"
		  " state_since, instance_id, power_target, power_op, op_id,"
		  " (SELECT user_data FROM instances i WHERE i.id = m.instance_id)"
		  " FROM machines m WHERE id = ?",
		  "s", id);
	if (rc < 0)
		goto cleanup;
	rc = sqlite3_step(s);
	if (rc != SQLITE_ROW) {
		rc = rc == SQLITE_DONE ? -ENOENT : bm_sqlite_errno(rc);
		goto cleanup;
	}
	m->id = col_dup(s, 0);
	m->handler = col_dup(s, 1);
	if (bm_state_parse((const char *)sqlite3_column_text(s, 2), &m->state) < 0 ||
	    bm_step_parse((const char *)sqlite3_column_text(s, 3), &m->step) < 0) {
		rc = -EPROTO;
		goto cleanup;
	}
	m->attempts = sqlite3_column_int64(s, 4);
	m->next_at = sqlite3_column_int64(s, 5);
	m->step_started_at = sqlite3_column_int64(s, 6);
	m->state_since = sqlite3_column_int64(s, 7);
	m->instance = col_dup(s, 8);
	m->power_target = col_dup(s, 9);
	m->power_op = sqlite3_column_int64(s, 10);
	m->op = sqlite3_column_int64(s, 11);
	m->user_data = col_dup(s, 12);
	sqlite3_finalize(s);
	s = NULL;

	m->disks = g_ptr_array_new_with_free_func(disk_row_free);
	rc = prep(st, &s,
		  "SELECT id, role, image, size_gb, state, attempts, op_id, next_at, bus FROM disks"
		  " WHERE machine_id = ? ORDER BY role = 'data', created_at, id",
		  "s", id);
	if (rc < 0)
		goto cleanup;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct bm_disk_row *d = g_new0(struct bm_disk_row, 1);

		d->id = col_dup(s, 0);
		d->role = col_dup(s, 1);
		d->image = col_dup(s, 2);
		d->size_gb = sqlite3_column_int64(s, 3);
		d->state = col_dup(s, 4);
		d->attempts = sqlite3_column_int64(s, 5);
		d->op = sqlite3_column_int64(s, 6);
		d->next_at = sqlite3_column_int64(s, 7);
		d->bus = col_dup(s, 8);
		g_ptr_array_add(m->disks, d);
	}
	sqlite3_finalize(s);
	s = NULL;
	if (rc != SQLITE_DONE) {
		rc = bm_sqlite_errno(rc);
		goto cleanup;
	}

	m->nics = g_ptr_array_new_with_free_func(nic_row_free);
	rc = prep(st, &s,
		  "SELECT id, network, mac, state, attempts, op_id, next_at FROM nics"
		  " WHERE machine_id = ?"
		  " ORDER BY created_at, id",
		  "s", id);
	if (rc < 0)
		goto cleanup;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct bm_nic_row *n = g_new0(struct bm_nic_row, 1);

		n->id = col_dup(s, 0);
		n->network = col_dup(s, 1);
		n->mac = col_dup(s, 2);
		n->state = col_dup(s, 3);
		n->attempts = sqlite3_column_int64(s, 4);
		n->op = sqlite3_column_int64(s, 5);
		n->next_at = sqlite3_column_int64(s, 6);
		g_ptr_array_add(m->nics, n);
	}
	rc = rc == SQLITE_DONE ? 0 : bm_sqlite_errno(rc);

cleanup:
	sqlite3_finalize(s);
	exec(st, "COMMIT", NULL);
	if (rc < 0)
		return rc;
	*out = g_steal_pointer(&m);
	return 0;
}

/*
 * Within a transaction: -ESTALE unless the lease is held and the row is
 * still at (state, step) under the operation the worker read.
 */
static int fence(struct bm_store *st, const char *holder, const struct bm_machine_row *m)
{
	int64_t n = 0;
	int rc = lease_held(st, holder);

	if (rc < 0)
		return rc;
	/*
	 * The operation too: a machine deleted and enrolled again under its id
	 * while a worker verified it is in the same state and step, but under
	 * another enroll operation, and not the machine the worker looked at.
	 */
	rc = query_int(st, &n,
		       "SELECT count(*) FROM machines WHERE id = ? AND state = ? AND step = ?"
		       " AND op_id = ?",
		       "sssi", m->id, bm_state_name(m->state), bm_step_name(m->step), m->op);
	if (rc < 0)
		return rc;
	return n == 1 ? 0 : -ESTALE;
}

int bm_step_begin(struct bm_store *st, const char *holder, const struct bm_machine_row *m)
{
	int rc = begin(st);

	if (rc < 0)
		return rc;
	rc = fence(st, holder, m);
	if (rc >= 0)
		rc = exec(st,
			  "UPDATE machines SET step_started_at = ? WHERE id = ? AND step_started_at = 0",
			  "is", bm_now_ms(), m->id);
	if (rc >= 0)
		rc = exec(st,
			  "UPDATE operations SET state = 'running', started_at = ? WHERE id = ?"
			  " AND state = 'pending'",
			  "ii", bm_now_ms(), m->op);
	return end(st, rc);
}

static int history_add(struct bm_store *st, const struct bm_machine_row *m, const char *result,
		       const char *error, int64_t step_ms)
{
	int64_t now = bm_now_ms();

	return exec(st,
		    "INSERT INTO history(machine_id, op_id, state, step, result, error, attempt,"
		    " started_at, finished_at) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)",
		    "sissssiii", m->id, m->op, bm_state_name(m->state), bm_step_name(m->step),
		    result, error ? error : "", m->attempts + 1, now - step_ms, now);
}

int bm_step_done(struct bm_store *st, const char *holder, const struct bm_machine_row *m,
		 const char *disk_state, const char *nic_state, int64_t step_ms)
{
	enum bm_step next = bm_step_next(m->state, m->step);
	int64_t now = bm_now_ms();
	int rc = begin(st);

	if (rc < 0)
		return rc;
	rc = fence(st, holder, m);
	if (rc >= 0)
		rc = history_add(st, m, "ok", NULL, step_ms);
	/*
	 * The step went through: the error of a failed attempt before it is
	 * over, and a machine (or its instance) that goes on must not show it.
	 */
	if (rc >= 0)
		rc = exec(st, "UPDATE machines SET last_error = '' WHERE id = ?", "s", m->id);
	if (rc >= 0 && disk_state && !*disk_state)
		rc = exec(st, "DELETE FROM disks WHERE machine_id = ?", "s", m->id);
	else if (rc >= 0 && disk_state)
		rc = exec(st,
			  "UPDATE disks SET state = ?, attempts = 0, last_error = ''"
			  " WHERE machine_id = ?",
			  "ss", disk_state, m->id);
	if (rc >= 0 && nic_state && !*nic_state)
		rc = exec(st, "DELETE FROM nics WHERE machine_id = ?", "s", m->id);
	else if (rc >= 0 && nic_state)
		rc = exec(st,
			  "UPDATE nics SET state = ?, attempts = 0, last_error = ''"
			  " WHERE machine_id = ?",
			  "ss", nic_state, m->id);
	if (rc >= 0 && (m->step == BM_STEP_POWER_ON || m->step == BM_STEP_POWER_OFF ||
			m->step == BM_STEP_VERIFY))
		rc = exec(st, "UPDATE machines SET power = ? WHERE id = ?", "ss",
			  m->step == BM_STEP_POWER_ON ? "on" : "off", m->id);
	if (rc >= 0 && next != BM_STEP_NONE) {
		rc = exec(st,
			  "UPDATE machines SET step = ?, attempts = 0, next_at = 0,"
			  " step_started_at = 0 WHERE id = ?",
			  "ss", bm_step_name(next), m->id);
	} else if (rc >= 0) {
		enum bm_state ns = bm_state_next(m->state);

		rc = exec(st,
			  "UPDATE machines SET state = ?, step = ?, attempts = 0, next_at = 0,"
			  " step_started_at = 0, state_since = ? WHERE id = ?",
			  "ssis", bm_state_name(ns), bm_step_name(bm_state_first_step(ns)), now,
			  m->id);
		if (rc >= 0 && ns == BM_ACTIVE) {
			rc = exec(st, "UPDATE instances SET state = 'active' WHERE id = ?", "s",
				  m->instance);
			if (rc >= 0)
				rc = op_finish(st, m->op, NULL);
		} else if (rc >= 0 && ns == BM_AVAILABLE) {
			if (m->instance)
				rc = exec(st,
					  "UPDATE instances SET state = 'deleted', deleted_at = ?"
					  " WHERE id = ?",
					  "is", now, m->instance);
			if (rc >= 0)
				rc = exec(st,
					  "UPDATE machines SET instance_id = NULL, power = 'off',"
					  " last_error = '' WHERE id = ?",
					  "s", m->id);
			if (rc >= 0)
				rc = op_finish(st, m->op, NULL);
		}
	}
	return end(st, rc);
}

int bm_step_failed(struct bm_store *st, const char *holder, const struct bm_machine_row *m,
		   const char *error, int64_t next_at, bool give_up, int64_t step_ms)
{
	int rc = begin(st);

	if (rc < 0)
		return rc;
	rc = fence(st, holder, m);
	if (rc >= 0)
		rc = history_add(st, m, give_up ? "gave_up" : "failed", error, step_ms);
	if (rc >= 0 && !give_up) {
		rc = exec(st,
			  "UPDATE machines SET attempts = attempts + 1, next_at = ?, last_error = ?"
			  " WHERE id = ?",
			  "iss", next_at, error, m->id);
	} else if (rc >= 0) {
		g_autofree char *e = g_strdup_printf("%s: %s", bm_step_name(m->step), error);

		rc = exec(st,
			  "UPDATE machines SET state = 'error', step = '', attempts = 0, next_at = 0,"
			  " step_started_at = 0, state_since = ?, last_error = ?,"
			  " error_count = error_count + 1 WHERE id = ?",
			  "iss", bm_now_ms(), e, m->id);
		if (rc >= 0 && m->instance)
			rc = exec(st, "UPDATE instances SET state = 'failed' WHERE id = ?", "s",
				  m->instance);
		if (rc >= 0)
			rc = op_finish(st, m->op, e);
	}
	return end(st, rc);
}

int bm_step_wait(struct bm_store *st, const char *holder, const struct bm_machine_row *m,
		 int64_t next_at)
{
	int rc = begin(st);

	if (rc < 0)
		return rc;
	rc = fence(st, holder, m);
	/*
	 * The handler answered: a row of failed polls, if any, is over, so
	 * max_retries counts failures in a row, not glitches over a long boot
	 * (whose end the boot timeout decides), and so is its last_error.
	 */
	if (rc >= 0)
		rc = exec(st,
			  "UPDATE machines SET next_at = ?, attempts = 0, last_error = ''"
			  " WHERE id = ?",
			  "is", next_at, m->id);
	return end(st, rc);
}

int bm_op_begin(struct bm_store *st, const char *holder, int64_t op)
{
	int rc = begin(st);

	if (rc < 0)
		return rc;
	rc = lease_held(st, holder);
	if (rc >= 0)
		rc = exec(st,
			  "UPDATE operations SET state = 'running', started_at = ? WHERE id = ?"
			  " AND state = 'pending'",
			  "ii", bm_now_ms(), op);
	return end(st, rc);
}

int bm_machine_set_power(struct bm_store *st, const char *holder, const char *id, int64_t op,
			 const char *power, const char *error, int64_t retry_at)
{
	int64_t cur = 0;
	int rc = begin(st);

	if (rc < 0)
		return rc;
	rc = lease_held(st, holder);
	if (rc >= 0)
		rc = query_int(st, &cur, "SELECT power_op FROM machines WHERE id = ?", "s", id);
	/* What the handler saw is true whichever request asked for it. */
	if (rc >= 0 && power)
		rc = exec(st, "UPDATE machines SET power = ? WHERE id = ?", "ss", power, id);
	if (rc < 0 || cur != op) {
		/*
		 * A newer request (or a deprovisioning) replaced @op while it
		 * ran: @op was failed as superseded then, and the newer target
		 * stays for the next round.
		 */
	} else if (retry_at > 0) {
		rc = exec(st,
			  "UPDATE machines SET attempts = attempts + 1, next_at = ?, last_error = ?"
			  " WHERE id = ?",
			  "iss", retry_at, error ? error : "", id);
	} else {
		/*
		 * last_error is the request's outcome: a retry's error ends
		 * when the power call goes through, and a request that failed
		 * for good says why, retried or not.
		 */
		rc = op_finish(st, op, error);
		if (rc >= 0)
			rc = exec(st,
				  "UPDATE machines SET power_target = '', power_op = 0, attempts = 0,"
				  " next_at = 0, last_error = ? WHERE id = ? AND power_op = ?",
				  "ssi", error ? error : "", id, op);
	}
	return end(st, rc);
}

int bm_machine_power_progress(struct bm_store *st, const char *holder, const char *id, int64_t op,
			      const char *power, const char *target)
{
	int rc = begin(st);

	if (rc < 0)
		return rc;
	rc = lease_held(st, holder);
	if (rc >= 0)
		rc = exec(st, "UPDATE machines SET power = ? WHERE id = ?", "ss", power, id);
	if (rc >= 0)
		rc = exec(st,
			  "UPDATE machines SET power_target = ? WHERE id = ? AND power_op = ?"
			  " AND state = 'active'",
			  "ssi", target, id, op);
	if (rc == 0)
		rc = -ESTALE;
	return end(st, rc);
}

/*
 * Fenced on the row's (state, op_id) the controller read: a detach that
 * replaced an attach in flight changed both, and the attach's outcome
 * must then neither set the row's state nor finish the detach's operation.
 */
static int plug_done(struct bm_store *st, const char *holder, const char *table, const char *id,
		     const char *was, int64_t op, const char *state, const char *error,
		     int64_t retry_at)
{
	g_autofree char *sel = g_strdup_printf("SELECT count(*) FROM %s WHERE id = ? AND state = ?"
					       " AND op_id = ?", table);
	g_autofree char *del = g_strdup_printf("DELETE FROM %s WHERE id = ?", table);
	g_autofree char *upd = g_strdup_printf("UPDATE %s SET state = ?, last_error = ?,"
					       " attempts = 0 WHERE id = ?", table);
	g_autofree char *retry = g_strdup_printf("UPDATE %s SET attempts = attempts + 1,"
						 " next_at = ?, last_error = ? WHERE id = ?", table);
	int64_t n = 0;
	int rc = begin(st);

	if (rc < 0)
		return rc;
	rc = lease_held(st, holder);
	if (rc >= 0)
		rc = query_int(st, &n, sel, "ssi", id, was, op);
	if (rc >= 0 && n != 1)
		rc = -ESTALE;
	if (rc >= 0 && retry_at > 0) {
		rc = exec(st, retry, "iss", retry_at, error ? error : "", id);
	} else if (rc >= 0) {
		rc = op_finish(st, op, error);
		if (rc >= 0 && !*state)
			rc = exec(st, del, "s", id);
		else if (rc >= 0)
			rc = exec(st, upd, "sss", state, error ? error : "", id);
	}
	return end(st, rc);
}

int bm_disk_done(struct bm_store *st, const char *holder, const struct bm_disk_row *d,
		 const char *state, const char *error, int64_t retry_at)
{
	return plug_done(st, holder, "disks", d->id, d->state, d->op, state, error, retry_at);
}

int bm_nic_done(struct bm_store *st, const char *holder, const struct bm_nic_row *n,
		const char *state, const char *error, int64_t retry_at)
{
	return plug_done(st, holder, "nics", n->id, n->state, n->op, state, error, retry_at);
}
