// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of BareMetalManager's pure lifecycle (lifecycle.c), JSON input
 * limits (json.c) and the SQLite store (store.c) on a temporary database:
 * schema versioning, the claim of the last free machine by two connections
 * racing in two threads, idempotency keys, the controller lease and its
 * fencing, a full provision/deprovision walk with the invariant check
 * after every write, the room an instance id leaves for the ids of its
 * disk and NICs (with bm-api's check of the body, request.c), and the
 * retention purge (what goes, what must stay, freed pages reused).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <string.h>

#include "json.h"
#include "lifecycle.h"
#include "request.h"
#include "store.h"

static char *tmpdir;
static char *dbpath;

static void setup(void)
{
	tmpdir = g_dir_make_tmp("test-bm-store.XXXXXX", NULL);
	ck_assert_ptr_nonnull(tmpdir);
	dbpath = g_build_filename(tmpdir, "bm.db", NULL);
}

static void teardown(void)
{
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", tmpdir);

	ck_assert_int_eq(system(cmd), 0);
	g_free(dbpath);
	g_free(tmpdir);
}

static struct bm_store *open_db(void)
{
	struct bm_store *st = NULL;
	g_autofree char *msg = NULL;

	ck_assert_msg(bm_store_open(dbpath, &st, &msg) == 0, "%s", msg);
	return st;
}

static json_object *parse(const char *s)
{
	json_object *o = NULL;
	g_autofree char *msg = NULL;

	ck_assert_msg(bm_json_parse(s, strlen(s), &o, &msg) == 0, "%s: %s", s, msg);
	return o;
}

static void enroll(struct bm_store *st, const char *id, const char *model)
{
	g_autofree char *req = g_strdup_printf(
		"{\"id\": \"%s\", \"model\": \"%s\", \"cpu\": 8, \"handler\": \"http://h/%s\"}", id,
		model, id);
	g_autoptr(json_object) r = parse(req);
	g_autoptr(json_object) out = NULL;
	g_autofree char *msg = NULL;

	ck_assert_msg(bm_machine_enroll(st, r, &out, &msg) == 0, "%s", msg);
}

static void assert_invariants(struct bm_store *st)
{
	g_autofree char *why = NULL;

	ck_assert_msg(bm_store_check(st, &why) == 0, "%s", why);
}

/*
 * Run every step of @id, as a controller would, until its state is stable
 * or is @stop (BM_N_STATES: none).
 */
static void drive_until(struct bm_store *st, const char *id, const char *holder,
			enum bm_state stop)
{
	for (int i = 0; i < 32; i++) {
		g_autoptr(bm_machine_row) m = NULL;
		const char *disks = NULL, *nics = NULL;

		ck_assert_int_eq(bm_machine_load(st, id, &m), 0);
		if (m->step == BM_STEP_NONE || m->state == stop)
			return;
		ck_assert_int_eq(bm_step_begin(st, holder, m), 0);
		if (m->step == BM_STEP_ATTACH_DISK)
			disks = "attached";
		if (m->step == BM_STEP_DETACH_NICS)
			nics = "";
		if (m->step == BM_STEP_DELETE_DISKS)
			disks = "";
		ck_assert_int_eq(bm_step_done(st, holder, m, disks, nics, 1), 0);
		assert_invariants(st);
	}
	ck_abort_msg("machine %s did not settle", id);
}

static void drive(struct bm_store *st, const char *id, const char *holder)
{
	drive_until(st, id, holder, BM_N_STATES);
}

/* Field @key of machine @id, or of instance @id with @instance; "" if NULL. */
static char *field(struct bm_store *st, const char *id, bool instance, const char *key)
{
	g_autoptr(json_object) o = NULL;
	json_object *v;

	ck_assert_int_eq(instance ? bm_instance_get(st, id, &o) : bm_machine_get(st, id, &o), 0);
	v = json_object_object_get(o, key);
	return g_strdup(v ? json_object_get_string(v) : "");
}

/* Assert that field @key of machine (or instance) @id is @want. */
#define assert_field(st, id, instance, key, want)                         \
	do {                                                              \
		g_autofree char *got_ = field(st, id, instance, key);     \
		ck_assert_str_eq(got_, want);                             \
	} while (0)

START_TEST(test_lifecycle_table)
{
	enum bm_state s;
	enum bm_step step;
	const char *why = NULL;

	for (unsigned i = 0; i < BM_N_STATES; i++) {
		ck_assert_int_eq(bm_state_parse(bm_state_name(i), &s), 0);
		ck_assert_int_eq(s, i);
		/* Every transient state's last step leads to an allowed state. */
		if (bm_state_first_step(i) != BM_STEP_NONE)
			ck_assert(bm_transition_allowed(i, bm_state_next(i)));
	}
	ck_assert_int_eq(bm_state_parse("bogus", &s), -EINVAL);
	ck_assert_int_eq(bm_step_parse("power_on", &step), 0);
	ck_assert_int_eq(step, BM_STEP_POWER_ON);
	ck_assert(bm_transition_allowed(BM_AVAILABLE, BM_QUEUED));
	ck_assert(!bm_transition_allowed(BM_AVAILABLE, BM_ACTIVE));
	ck_assert(!bm_transition_allowed(BM_ACTIVE, BM_AVAILABLE));
	ck_assert(!bm_transition_allowed(BM_PROVISIONING, BM_DEPROVISIONING));
	ck_assert(!bm_transition_allowed(BM_N_STATES, BM_ACTIVE));
	/* The provisioning steps, in the order. */
	step = bm_state_first_step(BM_PROVISIONING);
	ck_assert_int_eq(step, BM_STEP_CREATE_DISK);
	step = bm_step_next(BM_PROVISIONING, step);
	ck_assert_int_eq(step, BM_STEP_ATTACH_DISK);
	step = bm_step_next(BM_PROVISIONING, step);
	ck_assert_int_eq(step, BM_STEP_ATTACH_NICS);
	step = bm_step_next(BM_PROVISIONING, step);
	ck_assert_int_eq(step, BM_STEP_SET_BOOT);
	step = bm_step_next(BM_PROVISIONING, step);
	ck_assert_int_eq(step, BM_STEP_POWER_ON);
	ck_assert_int_eq(bm_step_next(BM_PROVISIONING, step), BM_STEP_NONE);
	/* Invariants. */
	ck_assert_int_eq(bm_machine_check(BM_ACTIVE, BM_STEP_NONE, true, &why), 0);
	ck_assert_int_eq(bm_machine_check(BM_ACTIVE, BM_STEP_NONE, false, &why), -EPROTO);
	ck_assert_int_eq(bm_machine_check(BM_AVAILABLE, BM_STEP_NONE, true, &why), -EPROTO);
	ck_assert_int_eq(bm_machine_check(BM_PROVISIONING, BM_STEP_POWER_OFF, true, &why), -EPROTO);
	ck_assert_int_eq(bm_machine_check(BM_DEPROVISIONING, BM_STEP_POWER_OFF, true, &why), 0);
}
END_TEST

/* bm_json_parse() of a whole C string. */
static int parse_len(const char *s, json_object **o, char **msg)
{
	return bm_json_parse(s, strlen(s), o, msg);
}

/* @s made @open x @n, then @inner, then @close x @n. */
static void nest(GString *s, int n, const char *open, const char *inner, const char *close)
{
	g_string_truncate(s, 0);
	for (int i = 0; i < n; i++)
		g_string_append(s, open);
	g_string_append(s, inner);
	for (int i = 0; i < n; i++)
		g_string_append(s, close);
}

/* bm_json_parse() of @text: its -errno, *@msg set on failure. */
static int parse_text(const char *text, char **msg)
{
	json_object *o = NULL;
	int rc = bm_json_parse(text, strlen(text), &o, msg);

	json_object_put(o);
	return rc;
}

START_TEST(test_json_repeated_key)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{"{\"a\":1,\"a\":2}", "bad JSON: key \"a\" is given twice"},
		{"{\"name\":\"p\",\"match\":{\"cpu\":1,\"cpu\":-1}}",
		 "bad JSON: key \"cpu\" is given twice"},
		/* As json-c stores keys: escapes decoded. */
		{"{\"id\":\"x\", \"i\\u0064\" : \"y\"}", "bad JSON: key \"id\" is given twice"},
		{"[{\"t\":{\"k\":[{\"z\":1,\"z\":1}]}}]", "bad JSON: key \"z\" is given twice"},
		/* The first value gone deeper than the limit: refused all the same. */
		{"{\"a\":[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]],\"a\":1}", "bad JSON: key \"a\" is given twice"},
	};
	static const char *const good[] = {
		"{\"a\":{\"b\":1},\"c\":{\"b\":1}}",
		"[{\"a\":1},{\"a\":1}]",
		"{\"x\":\"a\",\"a\":\"x\",\"y\":[\"a\",\"a\"]}",
		"{\"a\\\"\":1,\"a\":2}",
		"{\"A\":1,\"a\":2}",
	};
	char *msg = NULL;

	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		ck_assert_msg(parse_text(bad[i].text, &msg) == -EBADMSG, "%s taken", bad[i].text);
		ck_assert_str_eq(msg, bad[i].msg);
		g_clear_pointer(&msg, g_free);
	}
	for (size_t i = 0; i < G_N_ELEMENTS(good); i++) {
		ck_assert_msg(parse_text(good[i], &msg) == 0, "%s: %s", good[i], msg);
	}
}
END_TEST

START_TEST(test_json_limits)
{
	g_autoptr(GString) deep = g_string_new(NULL);
	json_object *o = NULL;
	char *msg = NULL;
	const char *str = NULL;
	int64_t n = 0;

	/* A document of null is refused saying so, not "bad JSON: success" (fuzz-bm's helper). */
	ck_assert_int_eq(bm_json_parse(" null ", 6, &o, &msg), -EBADMSG);
	ck_assert_str_eq(msg, "bad JSON: the document is null");
	g_clear_pointer(&msg, g_free);
	nest(deep, 100, "[", "", "]");
	ck_assert_int_eq(bm_json_parse(deep->str, deep->len, &o, &msg), -E2BIG);
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(bm_json_parse("{} x", 4, &o, &msg), -EBADMSG);
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(bm_json_parse("{\"a\":", 5, &o, &msg), -EBADMSG);
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(bm_json_parse("42", 2, &o, &msg), 0);
	json_object_put(o);
	/* Depth BM_JSON_MAX_DEPTH is the number of nested objects allowed. */
	nest(deep, BM_JSON_MAX_DEPTH, "{\"a\":", "1", "}");
	ck_assert_int_eq(bm_json_parse(deep->str, deep->len, &o, &msg), 0);
	json_object_put(o);
	g_string_prepend(deep, "[");
	g_string_append(deep, "]");
	ck_assert_int_eq(bm_json_parse(deep->str, deep->len, &o, &msg), -E2BIG);
	g_clear_pointer(&msg, g_free);
	/* One level too deep also when the innermost array or object is empty (fuzz-bm). */
	nest(deep, BM_JSON_MAX_DEPTH, "[", "", "]");
	ck_assert_int_eq(bm_json_parse(deep->str, deep->len, &o, &msg), 0);
	json_object_put(o);
	g_string_prepend(deep, "[");
	g_string_append(deep, "]");
	ck_assert_int_eq(bm_json_parse(deep->str, deep->len, &o, &msg), -E2BIG);
	g_clear_pointer(&msg, g_free);
	nest(deep, BM_JSON_MAX_DEPTH, "{\"a\":", "{}", "}");
	ck_assert_int_eq(bm_json_parse(deep->str, deep->len, &o, &msg), -E2BIG);
	ck_assert_ptr_nonnull(strstr(msg, "deep"));
	g_clear_pointer(&msg, g_free);
	/* Not UTF-8, a NUL byte, a \u0000 in a value or a key (json-c cut the key). */
	ck_assert_int_eq(parse_len("{\"m\":\"\xff\xfe\"}", &o, &msg), -EBADMSG);
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(bm_json_parse("{}\0", 3, &o, &msg), -EBADMSG);
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(parse_len("{\"k\":\"a\\u0000,b\"}", &o, &msg), -EBADMSG);
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(parse_len("{\"k\\u0000x\":\"v\"}", &o, &msg), -EBADMSG);
	g_clear_pointer(&msg, g_free);
	/*
	 * Numbers json-c takes but JSON has not, or that are no finite double:
	 * their text would be echoed back as it came (fuzz-bm).
	 */
	{
		static const char *const bad[] = {"[NaN]", "{\"p\": Infinity}", "-Infinity", "1.",
						  "[1.e5]", "-.5", "01.5", "[07e6]", "1e400",
						  "{\"p\": -2e308}"};
		static const char *const good[] = {"1.5", "-0.0", "1E+2", "1e-400", "00", "-01",
						   "[0.1, {\"a\": [1.25e3]}]", "\"NaN\""};

		for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
			ck_assert_msg(parse_len(bad[i], &o, &msg) == -EBADMSG, "%s", bad[i]);
			ck_assert_ptr_nonnull(strstr(msg, "number"));
			g_clear_pointer(&msg, g_free);
		}
		/* Leading zeros of an integer are not echoed: it is printed from its value. */
		for (size_t i = 0; i < G_N_ELEMENTS(good); i++)
			json_object_put(parse(good[i]));
	}
	/* An escaped backslash before "u0000" is text, and UTF-8 is fine. */
	o = parse("{\"k\":\"a\\\\u0000\", \"\\u00e9\": \"\xc3\xa9\"}");
	ck_assert_str_eq(json_object_get_string(json_object_object_get(o, "k")), "a\\u0000");
	json_object_put(o);
	o = parse("{\"s\": \"abc\", \"n\": 5, \"f\": 1.5}");
	ck_assert_int_eq(bm_json_str(o, "s", true, 2, &str, &msg), -EINVAL);
	ck_assert_ptr_nonnull(strstr(msg, "'s'"));
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(bm_json_str(o, "s", true, 3, &str, &msg), 0);
	ck_assert_str_eq(str, "abc");
	ck_assert_int_eq(bm_json_str(o, "zz", false, 3, &str, &msg), -ENOENT);
	ck_assert_int_eq(bm_json_str(o, "zz", true, 3, &str, &msg), -EINVAL);
	ck_assert_str_eq(msg, "missing field 'zz'");
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(bm_json_int(o, "n", true, 0, 4, &n, &msg), -EINVAL);
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(bm_json_int(o, "f", true, 0, 4, &n, &msg), -EINVAL);
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(bm_json_int(o, "n", true, 0, 5, &n, &msg), 0);
	ck_assert_int_eq(n, 5);
	json_object_put(o);
	ck_assert(bm_id_valid("m-1.a_b"));
	ck_assert(!bm_id_valid(""));
	ck_assert(!bm_id_valid("-x"));
	ck_assert(!bm_id_valid("a/b"));
	ck_assert(!bm_id_valid("a b"));
}
END_TEST

START_TEST(test_schema_version)
{
	g_autoptr(bm_store) st = open_db();
	g_autoptr(bm_store) again = NULL;

	ck_assert_int_eq(bm_store_schema_version(st), BM_SCHEMA_VERSION);
	/* Reopening does not migrate twice. */
	again = open_db();
	ck_assert_int_eq(bm_store_schema_version(again), BM_SCHEMA_VERSION);
}
END_TEST

START_TEST(test_migration_keeps_rows)
{
	g_autoptr(json_object) pool = parse("{\"name\": \"p\"}");
	g_autoptr(json_object) out = NULL, disks = NULL;
	struct bm_store *old = NULL, *st = NULL;
	g_autofree char *msg = NULL;
	sqlite3 *db = NULL;

	/* A version 1 database with a machine, a pool and a disk row... */
	ck_assert_msg(bm_store_open_version(dbpath, 1, &old, &msg) == 0, "%s", msg);
	ck_assert_int_eq(bm_store_schema_version(old), 1);
	enroll(old, "m1", "a");
	ck_assert_int_eq(bm_pool_create(old, pool, &out), 0);
	bm_store_close(old);
	ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db,
				      "INSERT INTO disks(id, machine_id, role, size_gb, state, created_at)"
				      " VALUES('d1', 'm1', 'data', 1, 'attached', 0)",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	/* ... is migrated on open: rows kept, the new column filled with its default. */
	st = open_db();
	ck_assert_int_eq(bm_store_schema_version(st), BM_SCHEMA_VERSION);
	g_clear_pointer(&out, json_object_put);
	ck_assert_int_eq(bm_machine_get(st, "m1", &out), 0);
	g_clear_pointer(&out, json_object_put);
	ck_assert_int_eq(bm_pool_get(st, "p", &out), 0);
	ck_assert_int_eq(bm_disk_list(st, "m1", &disks), 0);
	ck_assert_int_eq(json_object_array_length(disks), 1);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(
				 json_object_array_get_idx(disks, 0), "bus")),
			 "virtio-blk");
	bm_store_close(st);
}
END_TEST

START_TEST(test_newer_schema_refused)
{
	g_autoptr(bm_store) st = open_db();
	struct bm_store *other = NULL;
	g_autofree char *msg = NULL;
	g_autofree char *cmd = g_strdup_printf("sqlite3 '%s' 'PRAGMA user_version = 99' 2>/dev/null",
					       dbpath);

	if (system(cmd) != 0)
		return; /* no sqlite3 shell: nothing to check with */
	ck_assert_int_eq(bm_store_open(dbpath, &other, &msg), -EPROTO);
	ck_assert_ptr_nonnull(strstr(msg, "newer"));
}
END_TEST

/*
 * "Cannot open" means "no such database" only when opening one; a
 * statement that meets it later (a journal or temporary file it could not
 * make) is the database failing, and must not pass for a missing row:
 * the API answers a missing row with 404.
 */
START_TEST(test_cantopen_mapping)
{
	g_autofree char *nodir = g_build_filename(tmpdir, "none", "bm.db", NULL);
	struct bm_store *st = NULL;
	g_autofree char *msg = NULL;

	ck_assert_int_eq(bm_sqlite_errno(SQLITE_CANTOPEN), -EIO);
	ck_assert_int_eq(bm_sqlite_errno(SQLITE_CANTOPEN_ISDIR), -EIO);
	ck_assert_int_eq(bm_sqlite_errno(SQLITE_CONSTRAINT_PRIMARYKEY), -EEXIST);
	/* Busy is not -EBUSY, which the API answers as a state conflict (409). */
	ck_assert_int_eq(bm_sqlite_errno(SQLITE_BUSY_SNAPSHOT), -EAGAIN);
	ck_assert_int_eq(bm_sqlite_errno(SQLITE_BUSY), -EAGAIN);
	ck_assert_int_eq(bm_store_open(nodir, &st, &msg), -ENOENT);
	ck_assert_ptr_null(st);
	ck_assert_ptr_nonnull(strstr(msg, nodir));
}
END_TEST

START_TEST(test_enroll_and_delete)
{
	g_autoptr(bm_store) st = open_db();
	g_autoptr(json_object) bad = parse("{\"id\": \"x\", \"handler\": \"http://h\", \"cpu\": -1}");
	g_autoptr(json_object) out = NULL;
	g_autofree char *msg = NULL, *state = NULL;

	ck_assert_int_eq(bm_machine_enroll(st, bad, &out, &msg), -EINVAL);
	ck_assert_ptr_nonnull(strstr(msg, "'cpu'"));
	g_clear_pointer(&msg, g_free);
	/*
	 * The controller appends "/v1/..." to the handler URL: a query or a
	 * fragment would take that path, a port must be a number (fuzz-bm).
	 */
	{
		static const char *const handlers[] = {"http://h/?", "http://h:8701/x?y=1", "http://h#f",
						       "http://dpu-1:8templ701", "http://h:99999",
						       "http://[::1", "http://u@/x", "ftp://h", "http://",
						       "http://)/", "http://-h/", "http://a..b", "http://h%20x",
						       "http://.", "http://[nothost]:1"};
		static const char *const fine[] = {"http://h:8701/h/a%zz", "https://[::1]:8701",
						   "http://u@h", "http://h:/", "http://dpu-1.rack_2.example.",
						   "http://10.0.0.7:8701", "http://%64pu"};

		for (size_t i = 0; i < G_N_ELEMENTS(handlers); i++) {
			g_autofree char *req = g_strdup_printf("{\"id\": \"x\", \"handler\": \"%s\"}",
							       handlers[i]);
			g_autoptr(json_object) r = parse(req);

			ck_assert_msg(bm_machine_enroll(st, r, &out, &msg) == -EINVAL, "%s", handlers[i]);
			ck_assert_ptr_nonnull(strstr(msg, "'handler'"));
			g_clear_pointer(&msg, g_free);
		}
		for (size_t i = 0; i < G_N_ELEMENTS(fine); i++) {
			g_autofree char *req = g_strdup_printf("{\"id\": \"f%zu\", \"handler\": \"%s\"}",
							       i, fine[i]);
			g_autoptr(json_object) r = parse(req);

			ck_assert_msg(bm_machine_enroll(st, r, &out, &msg) == 0, "%s: %s", fine[i], msg);
			g_clear_pointer(&out, json_object_put);
		}
	}
	enroll(st, "m1", "a");
	ck_assert_int_eq(bm_machine_get(st, "m1", &out), 0);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(out, "state")), "enrolling");
	ck_assert_int_eq(bm_machine_get(st, "m2", &out), -ENOENT);
	ck_assert_int_eq(bm_machine_delete(st, "m1", &state), 0);
	ck_assert_int_eq(bm_machine_delete(st, "m1", &state), -ENOENT);
	assert_invariants(st);
}
END_TEST

struct racer {
	const char *pool;
	int rc;
	char *machine;
};

static gpointer race(gpointer p)
{
	struct racer *r = p;
	g_autoptr(bm_store) st = open_db();
	g_autofree char *req = g_strdup_printf("{\"pool\": \"%s\", \"image\": \"i\", \"disk_gb\": 1}",
					       r->pool);
	g_autoptr(json_object) body = parse(req);
	g_autoptr(json_object) out = NULL;
	int64_t op = 0;

	r->rc = bm_instance_create(st, body, &out, &op);
	if (r->rc == 0)
		r->machine = g_strdup(json_object_get_string(json_object_object_get(out, "machine")));
	return NULL;
}

START_TEST(test_last_free_machine)
{
	g_autoptr(bm_store) st = open_db();
	g_autoptr(json_object) pool = parse("{\"name\": \"p\", \"match\": {\"model\": \"a\"}}");
	g_autoptr(json_object) out = NULL;
	struct racer r[8];
	GThread *t[8];
	int won = 0, lost = 0;

	enroll(st, "m1", "a");
	enroll(st, "m2", "b"); /* does not match the pool */
	drive(st, "m1", NULL);
	drive(st, "m2", NULL);
	ck_assert_int_eq(bm_pool_create(st, pool, &out), 0);
	/* Eight connections in eight threads want the one machine of pool p. */
	for (int i = 0; i < 8; i++) {
		r[i] = (struct racer){.pool = "p"};
		t[i] = g_thread_new("racer", race, &r[i]);
	}
	for (int i = 0; i < 8; i++) {
		g_thread_join(t[i]);
		if (r[i].rc == 0) {
			won++;
			ck_assert_str_eq(r[i].machine, "m1");
		} else {
			ck_assert_int_eq(r[i].rc, -ENOSPC);
			lost++;
		}
		g_free(r[i].machine);
	}
	ck_assert_int_eq(won, 1);
	ck_assert_int_eq(lost, 7);
	assert_invariants(st);
}
END_TEST

START_TEST(test_walk_and_fencing)
{
	g_autoptr(bm_store) st = open_db();
	g_autoptr(json_object) pool = parse("{\"name\": \"p\"}");
	g_autoptr(json_object) req = parse("{\"pool\": \"p\", \"image\": \"i\", \"disk_gb\": 3,"
					   " \"networks\": [\"n1\", \"n2\"]}");
	g_autoptr(json_object) out = NULL, inst = NULL, m = NULL;
	g_autoptr(bm_machine_row) row = NULL;
	g_autofree char *state = NULL;
	const char *iid;
	int64_t op = 0;

	enroll(st, "m1", "a");
	ck_assert_int_eq(bm_lease_acquire(st, "c1", 10000), 0);
	ck_assert_int_eq(bm_lease_acquire(st, "c2", 10000), -EBUSY);
	drive(st, "m1", "c1");
	ck_assert_int_eq(bm_pool_create(st, pool, &out), 0);
	ck_assert_int_eq(bm_instance_create(st, req, &inst, &op), 0);
	iid = json_object_get_string(json_object_object_get(inst, "id"));
	assert_invariants(st);
	/* Queued waits for a slot: cap 0 keeps it, cap 1 lets it go. */
	ck_assert_int_eq(bm_store_promote_queued(st, "c1", 0), 0);
	ck_assert_int_eq(bm_machine_load(st, "m1", &row), 0);
	ck_assert_int_eq(row->state, BM_QUEUED);
	ck_assert_uint_eq(row->disks->len, 1);
	ck_assert_uint_eq(row->nics->len, 2);
	g_clear_pointer(&row, bm_machine_row_free);
	ck_assert_int_eq(bm_store_promote_queued(st, "c1", 1), 0);
	ck_assert_int_eq(bm_machine_load(st, "m1", &row), 0);
	ck_assert_int_eq(row->state, BM_PROVISIONING);
	g_clear_pointer(&row, bm_machine_row_free);
	/* A writer without the lease is fenced off. */
	ck_assert_int_eq(bm_machine_load(st, "m1", &row), 0);
	ck_assert_int_eq(bm_step_begin(st, "c2", row), -ESTALE);
	ck_assert_int_eq(bm_step_done(st, "c2", row, NULL, NULL, 1), -ESTALE);
	/* A writer that read an older (state, step) is fenced off too. */
	ck_assert_int_eq(bm_step_done(st, "c1", row, NULL, NULL, 1), 0);
	ck_assert_int_eq(bm_step_done(st, "c1", row, NULL, NULL, 1), -ESTALE);
	g_clear_pointer(&row, bm_machine_row_free);
	/* Deprovision is refused mid-provisioning, with the state. */
	ck_assert_int_eq(bm_machine_maintenance(st, "m1", true, "x", NULL, &state), -EBUSY);
	g_clear_pointer(&state, g_free);
	ck_assert_int_eq(bm_instance_delete(st, iid, &op, &state), -EBUSY);
	ck_assert_str_eq(state, "provisioning");
	g_clear_pointer(&state, g_free);
	drive(st, "m1", "c1");
	ck_assert_int_eq(bm_machine_get(st, "m1", &m), 0);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(m, "state")), "active");
	g_clear_pointer(&m, json_object_put);
	ck_assert_int_eq(bm_machine_delete(st, "m1", &state), -EBUSY);
	g_clear_pointer(&state, g_free);
	ck_assert_int_eq(bm_instance_delete(st, iid, &op, &state), 0);
	drive(st, "m1", "c1");
	ck_assert_int_eq(bm_machine_get(st, "m1", &m), 0);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(m, "state")), "available");
	ck_assert(json_object_object_get(m, "instance_id") == NULL);
	assert_invariants(st);
	g_clear_pointer(&out, json_object_put);
	ck_assert_int_eq(bm_op_get(st, op, &out), 0);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(out, "state")), "succeeded");
	/* The lease: released, another holder takes it. */
	ck_assert_int_eq(bm_lease_release(st, "c1"), 0);
	ck_assert_int_eq(bm_lease_acquire(st, "c2", 10000), 0);
}
END_TEST

/*
 * A machine deleted and enrolled again under its id while a worker
 * verifies it is in the same (state, step) as before, but not the same
 * machine: the old worker's outcome must not verify the new one.
 */
START_TEST(test_fence_reenrolled)
{
	g_autoptr(bm_store) st = open_db();
	g_autoptr(bm_machine_row) row = NULL;
	g_autoptr(json_object) m = NULL;
	g_autofree char *state = NULL;

	enroll(st, "m1", "a");
	ck_assert_int_eq(bm_lease_acquire(st, "c1", 10000), 0);
	ck_assert_int_eq(bm_machine_load(st, "m1", &row), 0);
	ck_assert_int_eq(row->state, BM_ENROLLING);
	ck_assert_int_eq(bm_step_begin(st, "c1", row), 0);
	ck_assert_int_eq(bm_machine_delete(st, "m1", &state), 0);
	enroll(st, "m1", "b");
	ck_assert_int_eq(bm_step_done(st, "c1", row, NULL, NULL, 1), -ESTALE);
	ck_assert_int_eq(bm_machine_get(st, "m1", &m), 0);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(m, "state")), "enrolling");
}
END_TEST

static char *op_text(struct bm_store *st, int64_t op)
{
	g_autoptr(json_object) o = NULL;

	ck_assert_int_eq(bm_op_get(st, op, &o), 0);
	return g_strdup(json_object_to_json_string(o));
}

static int64_t machine_op(struct bm_store *st, const char *id)
{
	g_autoptr(json_object) m = NULL;

	ck_assert_int_eq(bm_machine_get(st, id, &m), 0);
	return json_object_get_int64(json_object_object_get(m, "operation"));
}

/*
 * The verify after maintenance is its own enroll operation: the
 * machine's finished one stays exactly as it finished, and a worker's
 * outcome for the verify before the maintenance is fenced off.
 */
START_TEST(test_maintenance_reverify_op)
{
	g_autoptr(bm_store) st = open_db();
	g_autoptr(bm_machine_row) row = NULL;
	g_autoptr(json_object) hist = NULL, o = NULL;
	g_autofree char *state = NULL, *before = NULL, *after = NULL, *want = NULL;
	int64_t first, again, op;

	enroll(st, "m1", "a");
	ck_assert_int_eq(bm_lease_acquire(st, "c1", 10000), 0);
	first = machine_op(st, "m1");
	drive(st, "m1", "c1");
	before = op_text(st, first);
	ck_assert_int_eq(bm_machine_maintenance(st, "m1", true, "fan", NULL, &state), 0);
	g_clear_pointer(&state, g_free);
	ck_assert_int_eq(bm_machine_maintenance(st, "m1", false, NULL, &again, &state), 0);
	g_clear_pointer(&state, g_free);
	/* The operation returned (bm-api's 202) is the machine's new one. */
	ck_assert_int_eq(again, machine_op(st, "m1"));
	ck_assert_int_gt(again, first);
	ck_assert_int_eq(bm_op_get(st, again, &o), 0);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(o, "type")), "enroll");
	ck_assert_str_eq(json_object_get_string(json_object_object_get(o, "state")), "pending");
	g_clear_pointer(&o, json_object_put);
	ck_assert_int_eq(bm_machine_load(st, "m1", &row), 0);
	ck_assert_int_eq(bm_step_begin(st, "c1", row), 0);
	ck_assert_int_eq(bm_step_done(st, "c1", row, NULL, NULL, 1), 0);
	g_clear_pointer(&row, bm_machine_row_free);
	assert_field(st, "m1", false, "state", "available");
	after = op_text(st, first);
	ck_assert_str_eq(after, before);
	ck_assert_int_eq(bm_op_get(st, again, &o), 0);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(o, "state")), "succeeded");
	g_clear_pointer(&o, json_object_put);
	/* The history puts the verify under the operation it belongs to. */
	ck_assert_int_eq(bm_machine_history(st, "m1", &hist), 0);
	o = json_object_get(json_object_array_get_idx(hist, json_object_array_length(hist) - 1));
	ck_assert_int_eq(json_object_get_int64(json_object_object_get(o, "operation")), again);
	g_clear_pointer(&o, json_object_put);

	/* Maintenance on and off while a worker verifies: its outcome is stale. */
	enroll(st, "m2", "a");
	op = machine_op(st, "m2");
	ck_assert_int_eq(bm_machine_load(st, "m2", &row), 0);
	ck_assert_int_eq(bm_step_begin(st, "c1", row), 0);
	ck_assert_int_eq(bm_machine_maintenance(st, "m2", true, "fan", NULL, &state), 0);
	g_clear_pointer(&state, g_free);
	ck_assert_int_eq(bm_machine_maintenance(st, "m2", false, NULL, &again, &state), 0);
	ck_assert_int_ne(again, op);
	want = op_text(st, op);
	ck_assert_int_eq(bm_step_done(st, "c1", row, NULL, NULL, 1), -ESTALE);
	ck_assert_int_eq(bm_step_failed(st, "c1", row, "x", 0, true, 1), -ESTALE);
	assert_field(st, "m2", false, "state", "enrolling");
	g_clear_pointer(&after, g_free);
	after = op_text(st, op);
	ck_assert_str_eq(after, want);
	ck_assert_int_eq(bm_op_get(st, op, &o), 0);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(o, "state")), "failed");
	assert_invariants(st);
}
END_TEST

START_TEST(test_give_up_to_error)
{
	g_autoptr(bm_store) st = open_db();
	g_autoptr(bm_machine_row) row = NULL;
	g_autoptr(json_object) m = NULL;
	g_autofree char *state = NULL;
	int64_t op = 0;

	enroll(st, "m1", "a");
	ck_assert_int_eq(bm_machine_load(st, "m1", &row), 0);
	ck_assert_int_eq(bm_step_failed(st, NULL, row, "no answer", bm_now_ms() + 1000, false, 1), 0);
	g_clear_pointer(&row, bm_machine_row_free);
	ck_assert_int_eq(bm_machine_load(st, "m1", &row), 0);
	ck_assert_int_eq(row->attempts, 1);
	ck_assert_int_gt(row->next_at, bm_now_ms());
	ck_assert_int_eq(bm_step_failed(st, NULL, row, "no answer", 0, true, 1), 0);
	ck_assert_int_eq(bm_machine_get(st, "m1", &m), 0);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(m, "state")), "error");
	ck_assert_str_eq(json_object_get_string(json_object_object_get(m, "last_error")),
			 "verify: no answer");
	ck_assert_int_eq(json_object_get_int(json_object_object_get(m, "error_count")), 1);
	assert_invariants(st);
	ck_assert_int_eq(bm_machine_recover(st, "m1", &op, &state), 0);
	g_clear_pointer(&m, json_object_put);
	ck_assert_int_eq(bm_machine_get(st, "m1", &m), 0);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(m, "state")), "enrolling");
}
END_TEST

/*
 * A failed attempt's error lasts until the step succeeds on a retry (or,
 * booting, until a status poll answers): a machine that goes on, and its
 * instance, must not show it, as Ironic clears last_error when the
 * operation goes through.
 */
START_TEST(test_retry_clears_last_error)
{
	g_autoptr(bm_store) st = open_db();
	g_autoptr(json_object) pool = parse("{\"name\": \"p\"}");
	g_autoptr(json_object) req = parse("{\"pool\": \"p\", \"image\": \"i\","
					   " \"disk_gb\": 1, \"id\": \"i1\"}");
	g_autoptr(json_object) out = NULL, inst = NULL;
	g_autoptr(bm_machine_row) row = NULL;
	int64_t op = 0;

	enroll(st, "m1", "a");
	/* verify fails once, then succeeds. */
	ck_assert_int_eq(bm_machine_load(st, "m1", &row), 0);
	ck_assert_int_eq(bm_step_failed(st, NULL, row, "no answer", 0, false, 1), 0);
	assert_field(st, "m1", false, "last_error", "no answer");
	g_clear_pointer(&row, bm_machine_row_free);
	ck_assert_int_eq(bm_machine_load(st, "m1", &row), 0);
	ck_assert_int_eq(bm_step_begin(st, NULL, row), 0);
	ck_assert_int_eq(bm_step_done(st, NULL, row, NULL, NULL, 1), 0);
	g_clear_pointer(&row, bm_machine_row_free);
	assert_field(st, "m1", false, "state", "available");
	assert_field(st, "m1", false, "last_error", "");

	/* A provisioning step fails once, then succeeds: not the last one. */
	ck_assert_int_eq(bm_pool_create(st, pool, &out), 0);
	ck_assert_int_eq(bm_instance_create(st, req, &inst, &op), 0);
	ck_assert_int_eq(bm_store_promote_queued(st, NULL, 1), 0);
	ck_assert_int_eq(bm_machine_load(st, "m1", &row), 0);
	ck_assert_int_eq(row->step, BM_STEP_CREATE_DISK);
	ck_assert_int_eq(bm_step_failed(st, NULL, row, "disk full", 0, false, 1), 0);
	assert_field(st, "m1", false, "last_error", "disk full");
	assert_field(st, "i1", true, "last_error", "disk full");
	g_clear_pointer(&row, bm_machine_row_free);
	ck_assert_int_eq(bm_machine_load(st, "m1", &row), 0);
	ck_assert_int_eq(bm_step_done(st, NULL, row, NULL, NULL, 1), 0);
	g_clear_pointer(&row, bm_machine_row_free);
	assert_field(st, "m1", false, "step", "attach_disk");
	assert_field(st, "m1", false, "last_error", "");
	assert_field(st, "i1", true, "last_error", "");

	/* Booting: a failed status poll, then one that answers "not yet". */
	drive_until(st, "m1", NULL, BM_BOOTING);
	ck_assert_int_eq(bm_machine_load(st, "m1", &row), 0);
	ck_assert_int_eq(row->state, BM_BOOTING);
	ck_assert_int_eq(bm_step_failed(st, NULL, row, "no status", 0, false, 1), 0);
	assert_field(st, "i1", true, "last_error", "no status");
	g_clear_pointer(&row, bm_machine_row_free);
	ck_assert_int_eq(bm_machine_load(st, "m1", &row), 0);
	ck_assert_int_eq(bm_step_wait(st, NULL, row, 0), 0);
	assert_field(st, "m1", false, "last_error", "");
	assert_field(st, "i1", true, "last_error", "");
	drive(st, "m1", NULL);
	assert_field(st, "i1", true, "state", "active");
	assert_field(st, "i1", true, "last_error", "");
	assert_invariants(st);
}
END_TEST

/*
 * A power request retried, then carried out: the retry's error is not the
 * active machine's any more.  One that fails for good leaves its cause.
 */
START_TEST(test_power_retry_clears_last_error)
{
	g_autoptr(bm_store) st = open_db();
	g_autoptr(json_object) pool = parse("{\"name\": \"p\"}");
	g_autoptr(json_object) req = parse("{\"pool\": \"p\", \"image\": \"i\","
					   " \"disk_gb\": 1, \"id\": \"i1\"}");
	g_autoptr(json_object) out = NULL, inst = NULL, o = NULL;
	g_autofree char *state = NULL;
	int64_t op = 0;

	enroll(st, "m1", "a");
	drive(st, "m1", NULL);
	ck_assert_int_eq(bm_pool_create(st, pool, &out), 0);
	ck_assert_int_eq(bm_instance_create(st, req, &inst, &op), 0);
	ck_assert_int_eq(bm_store_promote_queued(st, NULL, 1), 0);
	drive(st, "m1", NULL);
	assert_field(st, "m1", false, "state", "active");

	ck_assert_int_eq(bm_machine_power(st, "m1", "off", &op, &state), 0);
	ck_assert_int_eq(bm_machine_set_power(st, NULL, "m1", op, NULL, "no answer",
					      bm_now_ms() + 1000), 0);
	assert_field(st, "i1", true, "last_error", "no answer");
	ck_assert_int_eq(bm_machine_set_power(st, NULL, "m1", op, "off", NULL, 0), 0);
	ck_assert_int_eq(bm_op_get(st, op, &o), 0);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(o, "state")), "succeeded");
	g_clear_pointer(&o, json_object_put);
	assert_field(st, "m1", false, "power", "off");
	assert_field(st, "m1", false, "last_error", "");
	assert_field(st, "i1", true, "last_error", "");

	g_clear_pointer(&state, g_free);
	ck_assert_int_eq(bm_machine_power(st, "m1", "on", &op, &state), 0);
	ck_assert_int_eq(bm_machine_set_power(st, NULL, "m1", op, NULL, "refused", 0), 0);
	ck_assert_int_eq(bm_op_get(st, op, &o), 0);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(o, "state")), "failed");
	assert_field(st, "m1", false, "state", "active");
	assert_field(st, "m1", false, "last_error", "refused");
}
END_TEST

static char *provision(struct bm_store *st, const char *inst);
static int64_t sql(const char *q);

/* Field @key of operation @op: an integer (a time), or its state with @key "state". */
static int64_t op_time(struct bm_store *st, int64_t op, const char *key)
{
	g_autoptr(json_object) o = NULL;
	json_object *v;

	ck_assert_int_eq(bm_op_get(st, op, &o), 0);
	v = json_object_object_get(o, key);
	ck_assert_msg(json_object_is_type(v, json_type_int), "operation %" G_GINT64_FORMAT
		      ": %s is not a number", op, key);
	return json_object_get_int64(v);
}

static char *op_state(struct bm_store *st, int64_t op)
{
	g_autoptr(json_object) o = NULL;

	ck_assert_int_eq(bm_op_get(st, op, &o), 0);
	return g_strdup(json_object_get_string(json_object_object_get(o, "state")));
}

#define assert_op(st, op, want_state, started, finished)                           \
	do {                                                                       \
		g_autofree char *s_ = op_state(st, op);                            \
		ck_assert_str_eq(s_, want_state);                                  \
		ck_assert_msg((op_time(st, op, "started_at") > 0) == (started),    \
			      "operation %" G_GINT64_FORMAT " started_at", (op));  \
		ck_assert_msg((op_time(st, op, "finished_at") > 0) == (finished),  \
			      "operation %" G_GINT64_FORMAT " finished_at", (op)); \
	} while (0)

/*
 * started_at is 0 until the controller begins the operation and stays 0
 * for one that ends before it began (docs/bm.md, "Operations"): a queued
 * provision deprovisioned, a power request superseded while pending.  A
 * power or hot-plug request begun and then superseded started, and says
 * so; bm_op_begin leaves an operation already running or finished alone.
 */
START_TEST(test_op_started_at)
{
	g_autoptr(bm_store) st = open_db();
	g_autoptr(json_object) pool = parse("{\"name\": \"p\"}");
	g_autoptr(json_object) req = parse("{\"pool\": \"p\", \"image\": \"i\","
					   " \"disk_gb\": 1, \"id\": \"i1\"}");
	g_autoptr(json_object) out = NULL, inst = NULL;
	g_autofree char *state = NULL, *machine = NULL;
	int64_t prov = 0, deprov = 0, p1 = 0, p2 = 0, p3 = 0, started;

	enroll(st, "m1", "a");
	drive(st, "m1", NULL);
	ck_assert_int_eq(bm_pool_create(st, pool, &out), 0);
	ck_assert_int_eq(bm_instance_create(st, req, &inst, &prov), 0);
	assert_field(st, "m1", false, "state", "queued");
	assert_op(st, prov, "pending", false, false);
	ck_assert_int_eq(bm_instance_delete(st, "i1", &deprov, &state), 0);
	assert_op(st, prov, "failed", false, true);
	assert_invariants(st);
	drive(st, "m1", NULL);
	assert_op(st, deprov, "succeeded", true, true);

	g_clear_pointer(&state, g_free);
	machine = provision(st, "i2");
	ck_assert_str_eq(machine, "m1");
	ck_assert_int_eq(bm_machine_power(st, "m1", "off", &p1, &state), 0);
	g_clear_pointer(&state, g_free);
	ck_assert_int_eq(bm_machine_power(st, "m1", "on", &p2, &state), 0);
	g_clear_pointer(&state, g_free);
	assert_op(st, p1, "failed", false, true);
	assert_op(st, p2, "pending", false, false);
	ck_assert_int_eq(bm_lease_acquire(st, "c1", 10000), 0);
	ck_assert_int_eq(bm_op_begin(st, "c2", p2), -ESTALE);
	assert_op(st, p2, "pending", false, false);
	ck_assert_int_eq(bm_op_begin(st, "c1", p2), 0);
	assert_op(st, p2, "running", true, false);
	assert_invariants(st);
	started = op_time(st, p2, "started_at");
	/* A retry begins it again: the first attempt's time stays. */
	g_usleep(2000);
	ck_assert_int_eq(bm_op_begin(st, "c1", p2), 0);
	ck_assert_int_eq(op_time(st, p2, "started_at"), started);
	ck_assert_int_eq(bm_machine_power(st, "m1", "reboot", &p3, &state), 0);
	assert_op(st, p2, "failed", true, true);
	ck_assert_int_eq(op_time(st, p2, "started_at"), started);
	ck_assert_int_eq(bm_op_begin(st, "c1", p2), 0);
	assert_op(st, p2, "failed", true, true);
	ck_assert_int_eq(bm_op_begin(st, "c1", p3), 0);
	ck_assert_int_eq(bm_machine_set_power(st, "c1", "m1", p3, "on", NULL, 0), 0);
	assert_op(st, p3, "succeeded", true, true);
	ck_assert_int_le(op_time(st, p3, "started_at"), op_time(st, p3, "finished_at"));
	assert_invariants(st);
}
END_TEST

/*
 * Promotion starts only a machine whose provision operation is still
 * pending.  No path queues a machine under a finished one today, so the
 * operation is finished behind the store's back: it must stay as it
 * finished (never run again), and its machine must not hold up the queue.
 */
START_TEST(test_promote_only_open)
{
	g_autoptr(bm_store) st = open_db();
	g_autoptr(json_object) pool = parse("{\"name\": \"p\"}");
	g_autoptr(json_object) r1 = parse("{\"pool\": \"p\", \"image\": \"i\","
					  " \"disk_gb\": 1, \"id\": \"i1\"}");
	g_autoptr(json_object) r2 = parse("{\"pool\": \"p\", \"image\": \"i\","
					  " \"disk_gb\": 1, \"id\": \"i2\"}");
	g_autoptr(json_object) out = NULL, i1 = NULL, i2 = NULL;
	g_autofree char *q = NULL, *before = NULL, *after = NULL;
	int64_t op1 = 0, op2 = 0;

	enroll(st, "m1", "a");
	enroll(st, "m2", "a");
	drive(st, "m1", NULL);
	drive(st, "m2", NULL);
	ck_assert_int_eq(bm_pool_create(st, pool, &out), 0);
	ck_assert_int_eq(bm_instance_create(st, r1, &i1, &op1), 0);
	ck_assert_int_eq(bm_instance_create(st, r2, &i2, &op2), 0);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(i1, "machine")), "m1");
	/* m1 first in the queue, whatever the clock did between the two. */
	sql("UPDATE machines SET state_since = state_since - 1000 WHERE id = 'm1'");
	q = g_strdup_printf("UPDATE operations SET state = 'failed', error = 'cancelled',"
			    " finished_at = %" G_GINT64_FORMAT " WHERE id = %" G_GINT64_FORMAT,
			    bm_now_ms(), op1);
	sql(q);
	before = op_text(st, op1);
	ck_assert_int_eq(bm_store_promote_queued(st, NULL, 1), 0);
	after = op_text(st, op1);
	ck_assert_str_eq(after, before);
	assert_field(st, "m1", false, "state", "queued");
	assert_field(st, "m2", false, "state", "provisioning");
	assert_op(st, op2, "running", true, false);
	/* Nor with a slot free. */
	ck_assert_int_eq(bm_store_promote_queued(st, NULL, 2), 0);
	assert_field(st, "m1", false, "state", "queued");
	g_clear_pointer(&after, g_free);
	after = op_text(st, op1);
	ck_assert_str_eq(after, before);
	assert_invariants(st);
}
END_TEST

/*
 * A new operation starts without the last one's error (Ironic's
 * last_error): recover, the end of maintenance, deprovisioning, a power
 * request, the detach of a disk whose attach failed.
 */
START_TEST(test_new_op_clears_last_error)
{
	g_autoptr(bm_store) st = open_db();
	g_autoptr(json_object) pool = parse("{\"name\": \"p\"}");
	g_autoptr(json_object) req = parse("{\"pool\": \"p\", \"image\": \"i\","
					   " \"disk_gb\": 1, \"id\": \"i1\"}");
	g_autoptr(json_object) req2 = parse("{\"pool\": \"p\", \"image\": \"i\","
					    " \"disk_gb\": 1, \"id\": \"i2\"}");
	g_autoptr(json_object) out = NULL, inst = NULL, disk = NULL, disks = NULL;
	g_autoptr(bm_machine_row) row = NULL;
	g_autofree char *state = NULL, *did = NULL;
	int64_t op = 0;

	/* recover, and the end of maintenance, of a machine whose verify gave up */
	for (int i = 0; i < 2; i++) {
		enroll(st, i ? "m2" : "m1", "a");
		ck_assert_int_eq(bm_machine_load(st, i ? "m2" : "m1", &row), 0);
		ck_assert_int_eq(bm_step_failed(st, NULL, row, "no answer", 0, true, 1), 0);
		g_clear_pointer(&row, bm_machine_row_free);
		assert_field(st, i ? "m2" : "m1", false, "last_error", "verify: no answer");
	}
	ck_assert_int_eq(bm_machine_recover(st, "m1", &op, &state), 0);
	g_clear_pointer(&state, g_free);
	assert_field(st, "m1", false, "last_error", "");
	ck_assert_int_eq(bm_machine_maintenance(st, "m2", true, "fan", NULL, &state), 0);
	g_clear_pointer(&state, g_free);
	assert_field(st, "m2", false, "last_error", "verify: no answer");
	ck_assert_int_eq(bm_machine_maintenance(st, "m2", false, NULL, &op, &state), 0);
	g_clear_pointer(&state, g_free);
	assert_field(st, "m2", false, "last_error", "");
	ck_assert_int_eq(bm_machine_delete(st, "m2", &state), 0);
	g_clear_pointer(&state, g_free);

	/* deprovisioning a machine whose provisioning gave up */
	drive(st, "m1", NULL);
	ck_assert_int_eq(bm_pool_create(st, pool, &out), 0);
	ck_assert_int_eq(bm_instance_create(st, req, &inst, &op), 0);
	ck_assert_int_eq(bm_store_promote_queued(st, NULL, 1), 0);
	ck_assert_int_eq(bm_machine_load(st, "m1", &row), 0);
	ck_assert_int_eq(bm_step_failed(st, NULL, row, "disk full", 0, true, 1), 0);
	g_clear_pointer(&row, bm_machine_row_free);
	assert_field(st, "i1", true, "last_error", "create_disk: disk full");
	ck_assert_int_eq(bm_instance_delete(st, "i1", &op, &state), 0);
	g_clear_pointer(&state, g_free);
	assert_field(st, "i1", true, "last_error", "");
	drive(st, "m1", NULL);

	/* a power request after one that failed; a detach after a failed attach */
	g_clear_pointer(&inst, json_object_put);
	ck_assert_int_eq(bm_instance_create(st, req2, &inst, &op), 0);
	ck_assert_int_eq(bm_store_promote_queued(st, NULL, 1), 0);
	drive(st, "m1", NULL);
	assert_field(st, "m1", false, "state", "active");
	ck_assert_int_eq(bm_machine_power(st, "m1", "off", &op, &state), 0);
	g_clear_pointer(&state, g_free);
	ck_assert_int_eq(bm_machine_set_power(st, NULL, "m1", op, NULL, "refused", 0), 0);
	assert_field(st, "m1", false, "last_error", "refused");
	ck_assert_int_eq(bm_machine_power(st, "m1", "off", &op, &state), 0);
	g_clear_pointer(&state, g_free);
	assert_field(st, "m1", false, "last_error", "");

	ck_assert_int_eq(bm_disk_add(st, "m1", 2, NULL, NULL, &disk, &op, &state), 0);
	g_clear_pointer(&state, g_free);
	did = g_strdup(json_object_get_string(json_object_object_get(disk, "id")));
	ck_assert_int_eq(bm_machine_load(st, "m1", &row), 0);
	for (unsigned i = 0; i < row->disks->len; i++) {
		struct bm_disk_row *d = g_ptr_array_index(row->disks, i);

		if (strcmp(d->id, did) == 0)
			ck_assert_int_eq(bm_disk_done(st, NULL, d, "error", "no room", 0), 0);
	}
	ck_assert_int_eq(bm_disk_remove(st, "m1", did, &op, &state), 0);
	ck_assert_int_eq(bm_disk_list(st, "m1", &disks), 0);
	for (size_t i = 0; i < json_object_array_length(disks); i++) {
		json_object *d = json_object_array_get_idx(disks, i);

		if (strcmp(json_object_get_string(json_object_object_get(d, "id")), did) == 0) {
			ck_assert_str_eq(json_object_get_string(json_object_object_get(d, "state")),
					 "detaching");
			ck_assert_str_eq(json_object_get_string(json_object_object_get(d,
						"last_error")), "");
		}
	}
}
END_TEST

/*
 * A data disk whose hot-plug failed keeps its error until deprovisioning
 * detaches it: the step that did so went through, and the row, now
 * "detached", must not show the attach's error.
 */
START_TEST(test_detach_step_clears_row_error)
{
	g_autoptr(bm_store) st = open_db();
	g_autoptr(json_object) pool = parse("{\"name\": \"p\"}");
	g_autoptr(json_object) req = parse("{\"pool\": \"p\", \"image\": \"i\","
					   " \"disk_gb\": 1, \"id\": \"i1\"}");
	g_autoptr(json_object) out = NULL, inst = NULL, disk = NULL, disks = NULL;
	g_autoptr(bm_machine_row) row = NULL;
	g_autofree char *state = NULL;
	const char *did;
	bool seen = false;
	int64_t op = 0;

	enroll(st, "m1", "a");
	drive(st, "m1", NULL);
	ck_assert_int_eq(bm_pool_create(st, pool, &out), 0);
	ck_assert_int_eq(bm_instance_create(st, req, &inst, &op), 0);
	ck_assert_int_eq(bm_store_promote_queued(st, NULL, 1), 0);
	drive(st, "m1", NULL);
	ck_assert_int_eq(bm_disk_add(st, "m1", 2, NULL, NULL, &disk, &op, &state), 0);
	g_clear_pointer(&state, g_free);
	did = json_object_get_string(json_object_object_get(disk, "id"));
	ck_assert_int_eq(bm_machine_load(st, "m1", &row), 0);
	for (unsigned j = 0; j < row->disks->len; j++) {
		struct bm_disk_row *d = g_ptr_array_index(row->disks, j);

		if (strcmp(d->id, did) == 0)
			ck_assert_int_eq(bm_disk_done(st, NULL, d, "error", "no room", 0), 0);
	}
	g_clear_pointer(&row, bm_machine_row_free);
	ck_assert_int_eq(bm_instance_delete(st, "i1", &op, &state), 0);
	/* Deprovisioning: power_off, detach_nics, then detach_disks. */
	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(bm_machine_load(st, "m1", &row), 0);
		ck_assert_int_eq(bm_step_done(st, NULL, row, k == 2 ? "detached" : NULL,
					      k == 1 ? "" : NULL, 1), 0);
		g_clear_pointer(&row, bm_machine_row_free);
	}
	assert_field(st, "m1", false, "step", "delete_disks");
	ck_assert_int_eq(bm_disk_list(st, "m1", &disks), 0);
	for (size_t i = 0; i < json_object_array_length(disks); i++) {
		json_object *d = json_object_array_get_idx(disks, i);

		if (strcmp(json_object_get_string(json_object_object_get(d, "id")), did) != 0)
			continue;
		seen = true;
		ck_assert_str_eq(json_object_get_string(json_object_object_get(d, "state")),
				 "detached");
		ck_assert_str_eq(json_object_get_string(json_object_object_get(d, "last_error")),
				 "");
	}
	ck_assert(seen);
}
END_TEST

START_TEST(test_error_with_instance)
{
	g_autoptr(bm_store) st = open_db();
	g_autoptr(json_object) pool = parse("{\"name\": \"p\"}");
	g_autoptr(json_object) req = parse("{\"pool\": \"p\", \"image\": \"i\", \"disk_gb\": 1}");
	g_autoptr(json_object) out = NULL, inst = NULL;
	g_autoptr(bm_machine_row) row = NULL;
	g_autofree char *state = NULL;
	int64_t op = 0;

	enroll(st, "m1", "a");
	drive(st, "m1", NULL);
	ck_assert_int_eq(bm_pool_create(st, pool, &out), 0);
	ck_assert_int_eq(bm_instance_create(st, req, &inst, &op), 0);
	ck_assert_int_eq(bm_store_promote_queued(st, NULL, 1), 0);
	ck_assert_int_eq(bm_machine_load(st, "m1", &row), 0);
	ck_assert_int_eq(bm_step_failed(st, NULL, row, "disk full", 0, true, 1), 0);
	assert_invariants(st);
	/* In error with an instance: no maintenance, no delete; recover deprovisions. */
	ck_assert_int_eq(bm_machine_maintenance(st, "m1", true, "x", NULL, &state), -EBUSY);
	g_clear_pointer(&state, g_free);
	ck_assert_int_eq(bm_machine_delete(st, "m1", &state), -EBUSY);
	g_clear_pointer(&state, g_free);
	ck_assert_int_eq(bm_machine_recover(st, "m1", &op, &state), 0);
	drive(st, "m1", NULL);
	g_clear_pointer(&out, json_object_put);
	ck_assert_int_eq(bm_machine_get(st, "m1", &out), 0);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(out, "state")), "available");
	assert_invariants(st);
}
END_TEST

/*
 * The longest instance id bm-api takes leaves room for the ids the store
 * derives from it (ID-boot, ID-nicN), which the handler must accept in its
 * paths; one byte more is refused (fuzz-bm).
 */
START_TEST(test_instance_id_room)
{
	g_autoptr(bm_store) st = open_db();
	g_autoptr(json_object) pool = parse("{\"name\": \"p\"}");
	g_autoptr(json_object) out = NULL, body = NULL, too_long = NULL;
	g_autoptr(bm_machine_row) m = NULL;
	g_autofree char *id = g_strnfill(BM_INSTANCE_ID_MAX, 'i');
	g_autofree char *req = g_strdup_printf("{\"pool\": \"p\", \"image\": \"img\", \"disk_gb\": 1,"
					       " \"networks\": [\"a\", \"b\", \"c\", \"d\", \"e\","
					       " \"f\", \"g\", \"h\"], \"id\": \"%s\"}", id);
	g_autofree char *req2 = g_strdup_printf("{\"pool\": \"p\", \"image\": \"img\", \"disk_gb\": 1,"
						" \"id\": \"%sj\"}", id);
	const char *name = NULL;
	char *msg = NULL;
	int64_t op = 0;

	body = parse(req);
	too_long = parse(req2);
	ck_assert_int_eq(bm_req_instance(too_long, &name, &msg), -EINVAL);
	ck_assert_ptr_nonnull(strstr(msg, "'id'"));
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(bm_req_instance(body, &name, &msg), 0);
	enroll(st, "m1", "a");
	drive(st, "m1", NULL);
	ck_assert_int_eq(bm_pool_create(st, pool, &out), 0);
	g_clear_pointer(&out, json_object_put);
	ck_assert_int_eq(bm_instance_create(st, body, &out, &op), 0);
	ck_assert_int_eq(bm_machine_load(st, "m1", &m), 0);
	ck_assert_uint_eq(m->disks->len, 1);
	ck_assert_uint_eq(m->nics->len, BM_REQ_MAX_NETWORKS);
	for (guint i = 0; i < m->disks->len; i++)
		ck_assert_msg(bm_id_valid(((struct bm_disk_row *)m->disks->pdata[i])->id), "disk %u", i);
	for (guint i = 0; i < m->nics->len; i++)
		ck_assert_msg(bm_id_valid(((struct bm_nic_row *)m->nics->pdata[i])->id), "nic %u", i);
}
END_TEST

/* Disks and NICs plugged into a machine of the longest id get ids the handler takes. */
START_TEST(test_plug_id_room)
{
	g_autoptr(bm_store) st = open_db();
	g_autoptr(json_object) pool = parse("{\"name\": \"p\"}");
	g_autoptr(json_object) req = parse("{\"pool\": \"p\", \"image\": \"i\", \"disk_gb\": 1}");
	g_autoptr(json_object) out = NULL;
	g_autofree char *mid = g_strnfill(BM_ID_MAX, 'm');
	g_autofree char *state = NULL;
	int64_t op = 0;
	const char *id;

	enroll(st, mid, "a");
	drive(st, mid, NULL);
	ck_assert_int_eq(bm_pool_create(st, pool, &out), 0);
	g_clear_pointer(&out, json_object_put);
	ck_assert_int_eq(bm_instance_create(st, req, &out, &op), 0);
	g_clear_pointer(&out, json_object_put);
	ck_assert_int_eq(bm_store_promote_queued(st, NULL, 1), 0);
	drive(st, mid, NULL);
	ck_assert_int_eq(bm_disk_add(st, mid, 1, NULL, NULL, &out, &op, &state), 0);
	id = json_object_get_string(json_object_object_get(out, "id"));
	ck_assert_msg(bm_id_valid(id), "disk id %s", id);
	ck_assert(g_str_has_prefix(id, mid + 10));
	g_clear_pointer(&out, json_object_put);
	g_clear_pointer(&state, g_free);
	ck_assert_int_eq(bm_nic_add(st, mid, "n", NULL, &out, &op, &state), 0);
	id = json_object_get_string(json_object_object_get(out, "id"));
	ck_assert_msg(bm_id_valid(id), "nic id %s", id);
	assert_invariants(st);
}
END_TEST

START_TEST(test_idempotency)
{
	g_autoptr(bm_store) st = open_db();
	g_autofree char *body = NULL;
	int status = 0;

	ck_assert_int_eq(bm_idem_begin(st, "k", "POST", "/v1/x", "h1", &status, &body), 0);
	ck_assert_int_eq(bm_idem_begin(st, "k", "POST", "/v1/x", "h1", &status, &body), -EBUSY);
	ck_assert_int_eq(bm_idem_finish(st, "k", 202, "{\"a\":1}"), 0);
	ck_assert_int_eq(bm_idem_begin(st, "k", "POST", "/v1/x", "h1", &status, &body), 1);
	ck_assert_int_eq(status, 202);
	ck_assert_str_eq(body, "{\"a\":1}");
	ck_assert_int_eq(bm_idem_begin(st, "k", "POST", "/v1/x", "h2", &status, &body), -EEXIST);
	ck_assert_int_eq(bm_idem_begin(st, "k", "DELETE", "/v1/x", "h1", &status, &body), -EEXIST);
	ck_assert_int_eq(bm_idem_forget(st, "k"), 0);
	ck_assert_int_eq(bm_idem_begin(st, "k", "POST", "/v1/x", "h2", &status, &body), 0);
	/* A key left in progress by a bm-api that died is free after a minute, not a day. */
	{
		sqlite3 *db = NULL;

		ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
		ck_assert_int_eq(sqlite3_exec(db, "UPDATE idempotency SET created_at ="
					      " created_at - 61000 WHERE key = 'k'", NULL, NULL, NULL),
				 SQLITE_OK);
		sqlite3_close(db);
	}
	ck_assert_int_eq(bm_idem_begin(st, "k", "POST", "/v1/x", "h3", &status, &body), 0);
	ck_assert_int_eq(bm_idem_begin(st, "k", "POST", "/v1/x", "h3", &status, &body), -EBUSY);
}
END_TEST

/* ---- retention ---- */

#define DAY_MS (24 * 3600 * 1000LL)

/* Run @q on the database behind the store's back (to age rows, or count them). */
static int64_t sql(const char *q)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	int64_t v = 0;
	int rc;

	ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	ck_assert_msg(sqlite3_prepare_v2(db, q, -1, &s, NULL) == SQLITE_OK, "%s: %s", q,
		      sqlite3_errmsg(db));
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	ck_assert_msg(rc == SQLITE_DONE, "%s: %s", q, sqlite3_errmsg(db));
	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

/* Purge with @lim until nothing is left; the counts of the whole pass. */
static struct bm_purge_counts purge_all(struct bm_store *st, const struct bm_purge_limits *lim)
{
	struct bm_purge_counts c = {0};
	int rc, rounds = 0;

	while ((rc = bm_store_purge(st, lim, bm_now_ms(), &c)) == 1)
		ck_assert_int_lt(++rounds, 100000);
	ck_assert_int_eq(rc, 0);
	return c;
}

/* @n history rows of operation @op for machine @id, finished @age_ms ago. */
static void add_history(const char *id, int64_t op, int n, int64_t age_ms)
{
	g_autofree char *q = g_strdup_printf(
		"WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < %d)"
		" INSERT INTO history(machine_id, op_id, state, step, result, attempt,"
		" started_at, finished_at) SELECT '%s', %" G_GINT64_FORMAT ", 'active', 'power_on',"
		" 'ok', i, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT " FROM k",
		n, id, op, bm_now_ms() - age_ms, bm_now_ms() - age_ms);

	sql(q);
}

/*
 * History: beyond the newest N rows of a machine, and past its age, rows
 * go in batches; the newest rows, and every row of the operation that
 * brought the machine where it is, stay.
 */
START_TEST(test_purge_history)
{
	g_autoptr(bm_store) st = open_db();
	struct bm_purge_limits cap = {.history_max_entries = 5, .batch = 3};
	struct bm_purge_limits age = {.history_max_age_ms = 7 * DAY_MS, .batch = 2};
	struct bm_purge_counts c;
	int64_t newest, cur, had;

	enroll(st, "m1", "a");
	enroll(st, "m2", "a");
	drive(st, "m1", NULL);
	cur = machine_op(st, "m1");
	ck_assert_int_gt(cur, 0);
	add_history("m1", 9999, 20, 0);
	add_history("m2", 9999, 4, 0);
	newest = sql("SELECT max(id) FROM history WHERE machine_id = 'm1'");
	had = sql("SELECT count(*) FROM history WHERE machine_id = 'm1'");
	ck_assert_int_gt(had, 20);
	c = purge_all(st, &cap);
	ck_assert_int_eq(c.history, had - 5);
	ck_assert_int_eq(sql("SELECT count(*) FROM history WHERE machine_id = 'm1'"), 5);
	ck_assert_int_eq(sql("SELECT min(id) FROM history WHERE machine_id = 'm1'"), newest - 4);
	ck_assert_int_eq(sql("SELECT count(*) FROM history WHERE machine_id = 'm2'"), 4);
	/* Nothing more to do: a second pass removes nothing. */
	c = purge_all(st, &cap);
	ck_assert_int_eq(c.history, 0);

	/* By age: old rows go, recent ones and the current operation's stay, however old. */
	sql("DELETE FROM history");
	add_history("m1", cur, 3, 400 * DAY_MS);
	add_history("m1", 9999, 7, 8 * DAY_MS);
	add_history("m1", 9998, 2, 6 * DAY_MS);
	add_history("m2", 9999, 1, 8 * DAY_MS);
	c = purge_all(st, &age);
	ck_assert_int_eq(c.history, 8);
	ck_assert_int_eq(sql("SELECT count(*) FROM history WHERE machine_id = 'm1' AND op_id = "
			     "(SELECT op_id FROM machines WHERE id = 'm1')"), 3);
	ck_assert_int_eq(sql("SELECT count(*) FROM history WHERE op_id = 9998"), 2);
	ck_assert_int_eq(sql("SELECT count(*) FROM history"), 5);
	ck_assert_int_eq(sql("SELECT rows FROM purged WHERE what = 'history'"), had - 5 + 8);
}
END_TEST

/* The count line of bm_operation_duration_seconds for @type in /metrics. */
static char *op_count_line(struct bm_store *st, const char *type)
{
	g_autoptr(GString) m = g_string_new(NULL);
	g_autofree char *key = g_strdup_printf("bm_operation_duration_seconds_count{type=\"%s\"} ",
					       type);
	const char *p;

	ck_assert_int_eq(bm_store_metrics(st, m), 0);
	p = strstr(m->str, key);
	ck_assert_ptr_nonnull(p);
	return g_strndup(p, strcspn(p, "\n"));
}

/*
 * Operations that finished before the age limit go; an open one, and
 * the one a machine still names as its operation, stay whatever their
 * age: a client may still poll them.  What /metrics
 * counted of the purged ones stays counted.
 */
START_TEST(test_purge_operations)
{
	g_autoptr(bm_store) st = open_db();
	g_autoptr(GString) m = g_string_new(NULL);
	g_autoptr(json_object) o = NULL;
	struct bm_purge_limits lim = {.operation_max_age_ms = 30 * DAY_MS, .batch = 2};
	g_autofree char *state = NULL, *before = NULL, *after = NULL, *q = NULL;
	int64_t enroll1, enroll2, enroll3, p1 = 0, p2 = 0, p3 = 0;
	struct bm_purge_counts c;

	enroll(st, "m1", "a");
	enroll1 = machine_op(st, "m1");
	drive(st, "m1", NULL);
	/* Back through maintenance: m1's operation is now a second enroll. */
	ck_assert_int_eq(bm_machine_maintenance(st, "m1", true, "x", NULL, &state), 0);
	g_clear_pointer(&state, g_free);
	ck_assert_int_eq(bm_machine_maintenance(st, "m1", false, NULL, &enroll2, &state), 0);
	g_clear_pointer(&state, g_free);
	ck_assert_int_eq(enroll2, machine_op(st, "m1"));
	drive(st, "m1", NULL);
	enroll(st, "m2", "a"); /* open, never driven */
	enroll3 = machine_op(st, "m2");
	ck_assert_int_ne(enroll1, enroll2);
	/* Power requests on an active machine: two carried out, one still open. */
	sql("UPDATE machines SET state = 'active', step = '', instance_id = 'i1'"
	    " WHERE id = 'm1'");
	ck_assert_int_eq(bm_machine_power(st, "m1", "on", &p1, &state), 0);
	g_clear_pointer(&state, g_free);
	ck_assert_int_eq(bm_machine_set_power(st, NULL, "m1", p1, "on", NULL, 0), 0);
	ck_assert_int_eq(bm_machine_power(st, "m1", "off", &p2, &state), 0);
	g_clear_pointer(&state, g_free);
	ck_assert_int_eq(bm_machine_set_power(st, NULL, "m1", p2, "off", NULL, 0), 0);
	ck_assert_int_eq(bm_machine_power(st, "m1", "on", &p3, &state), 0); /* open */
	g_clear_pointer(&state, g_free);
	before = op_count_line(st, "enroll");
	/* All old but p2, which finished recently. */
	sql("UPDATE operations SET created_at = created_at - 40 * 86400000,"
	    " finished_at = CASE finished_at WHEN 0 THEN 0 ELSE finished_at - 40 * 86400000 END");
	q = g_strdup_printf("UPDATE operations SET finished_at = %" G_GINT64_FORMAT
			    " WHERE id = %" G_GINT64_FORMAT, bm_now_ms(), p2);
	sql(q);
	c = purge_all(st, &lim);
	ck_assert_int_eq(c.operations, 2); /* enroll1, p1 */
	ck_assert_int_eq(bm_op_get(st, enroll1, &o), -ENOENT);
	ck_assert_int_eq(bm_op_get(st, p1, &o), -ENOENT);
	ck_assert_int_eq(bm_op_get(st, enroll2, &o), 0); /* m1's operation */
	g_clear_pointer(&o, json_object_put);
	ck_assert_int_eq(bm_op_get(st, enroll3, &o), 0); /* open */
	g_clear_pointer(&o, json_object_put);
	ck_assert_int_eq(bm_op_get(st, p2, &o), 0); /* recent */
	g_clear_pointer(&o, json_object_put);
	ck_assert_int_eq(bm_op_get(st, p3, &o), 0); /* m1's power request, open */
	g_clear_pointer(&o, json_object_put);
	/* The histogram is a counter: purging does not take from it. */
	after = op_count_line(st, "enroll");
	ck_assert_str_eq(after, before);
	ck_assert_int_eq(bm_store_metrics(st, m), 0);
	ck_assert_ptr_nonnull(strstr(m->str, "bm_purged_rows_total{table=\"operations\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(m->str, "bm_purged_rows_total{table=\"history\"} 0\n"));
}
END_TEST

/* Provision @inst on a free machine of pool "p" and drive it to active; its machine. */
static char *provision(struct bm_store *st, const char *inst)
{
	g_autofree char *req = g_strdup_printf(
		"{\"pool\": \"p\", \"image\": \"i\", \"disk_gb\": 1, \"id\": \"%s\"}", inst);
	g_autoptr(json_object) r = parse(req);
	g_autoptr(json_object) out = NULL;
	g_autofree char *machine = NULL;
	int64_t op = 0;

	ck_assert_int_eq(bm_instance_create(st, r, &out, &op), 0);
	machine = g_strdup(json_object_get_string(json_object_object_get(out, "machine")));
	ck_assert_int_ge(bm_store_promote_queued(st, NULL, 10), 0);
	drive(st, machine, NULL);
	return g_steal_pointer(&machine);
}

/*
 * A deleted instance stays (409 "deleted" to a second delete) for the
 * retention time, then goes (404, which the autoscaler takes as gone
 * too); one not deleted stays however old.
 */
START_TEST(test_purge_instances)
{
	g_autoptr(bm_store) st = open_db();
	g_autoptr(json_object) pool = parse("{\"name\": \"p\"}");
	g_autoptr(json_object) out = NULL;
	struct bm_purge_limits lim = {.instance_max_age_ms = 30 * DAY_MS, .batch = 1};
	const char *const ids[] = {"i-old", "i-recent", "i-live"};
	struct bm_purge_counts c;
	int64_t op = 0;

	enroll(st, "m1", "a");
	enroll(st, "m2", "a");
	enroll(st, "m3", "a");
	drive(st, "m1", NULL);
	drive(st, "m2", NULL);
	drive(st, "m3", NULL);
	ck_assert_int_eq(bm_pool_create(st, pool, &out), 0);
	for (unsigned i = 0; i < G_N_ELEMENTS(ids); i++) {
		g_autofree char *machine = provision(st, ids[i]);
		g_autofree char *state = NULL;

		if (i == 2)
			break;
		ck_assert_int_eq(bm_instance_delete(st, ids[i], &op, &state), 0);
		drive(st, machine, NULL);
	}
	sql("UPDATE instances SET created_at = created_at - 400 * 86400000");
	sql("UPDATE instances SET deleted_at = deleted_at - 40 * 86400000 WHERE id = 'i-old'");
	sql("UPDATE instances SET deleted_at = deleted_at - 20 * 86400000 WHERE id = 'i-recent'");
	c = purge_all(st, &lim);
	ck_assert_int_eq(c.instances, 1);
	for (unsigned i = 0; i < G_N_ELEMENTS(ids); i++) {
		g_autoptr(json_object) inst = NULL;
		g_autofree char *state = NULL;

		ck_assert_int_eq(bm_instance_get(st, ids[i], &inst), i == 0 ? -ENOENT : 0);
		if (i == 2)
			continue;
		ck_assert_int_eq(bm_instance_delete(st, ids[i], &op, &state),
				 i == 0 ? -ENOENT : -EBUSY);
		if (i == 1)
			ck_assert_str_eq(state, "deleted");
	}
	assert_invariants(st);
}
END_TEST

/* Size of the database file once the WAL is checkpointed into it. */
static int64_t db_size(void)
{
	GStatBuf sb;

	sql("PRAGMA wal_checkpoint(TRUNCATE)");
	ck_assert_int_eq(g_stat(dbpath, &sb), 0);
	return (int64_t)sb.st_size;
}

/*
 * The pages a purge frees are reused: a database that keeps getting and
 * losing the same amount of rows stops growing.
 */
START_TEST(test_purge_reuses_pages)
{
	g_autoptr(bm_store) st = open_db();
	struct bm_purge_limits cap = {.history_max_entries = 10, .batch = 1000};
	int64_t size[8];

	enroll(st, "m1", "a");
	for (unsigned i = 0; i < G_N_ELEMENTS(size); i++) {
		add_history("m1", 1, 20000, 0);
		size[i] = db_size();
		ck_assert_int_eq(purge_all(st, &cap).history, i ? 20000 : 20000 - 10);
	}
	/* After a round or two (the b-trees settle), the file holds what a round needs. */
	for (unsigned i = 3; i < G_N_ELEMENTS(size); i++)
		ck_assert_int_le(size[i], size[2]);
}
END_TEST

/* bm_req_pool() on @text: its -errno, and the message (g_malloc'd) in *@msg. */
static int pool_body(const char *text, char **msg)
{
	g_autoptr(json_object) body = NULL;
	const char *name = NULL;

	ck_assert_int_eq(bm_json_parse(text, strlen(text), &body, msg), 0);
	return bm_req_pool(body, &name, msg);
}

START_TEST(test_pool_template)
{
	static const char *const good[] = {
		"{\"name\":\"p\",\"template\":{\"cpu\":\"64\",\"memory\":\"256Gi\",\"gpu\":8,"
		"\"pods\":\"110\",\"min_size\":0,\"max_size\":4,\"price\":3.5}}",
		"{\"name\":\"p\",\"template\":{\"min_size\":2,\"max_size\":2}}",
		"{\"name\":\"p\",\"template\":{\"cpu\":\"500m\",\"memory\":\"1.5e9\",\"pods\":0}}",
		"{\"name\":\"p\",\"template\":{\"cpu\":\"+2\",\"memory\":\"1Ei\",\"gpu\":\"1E\"}}",
		"{\"name\":\"p\",\"template\":{\"cpu\":16,\"max_pods\":110,\"note\":-1}}",
	};
	static const struct {
		const char *body, *field;
	} bad[] = {
		{"{\"name\":\"p\",\"template\":{\"cpu\":-4,\"memory\":\"1Gi\"}}", "cpu"},
		{"{\"name\":\"p\",\"template\":{\"cpu\":4,\"memory\":\"-1Gi\"}}", "memory"},
		{"{\"name\":\"p\",\"template\":{\"pods\":\"-0\"}}", "pods"},
		{"{\"name\":\"p\",\"template\":{\"gpu\":-1}}", "gpu"},
		{"{\"name\":\"p\",\"template\":{\"cpu\":\"lots\"}}", "cpu"},
		{"{\"name\":\"p\",\"template\":{\"cpu\":1.5}}", "cpu"},
		{"{\"name\":\"p\",\"template\":{\"min_size\":-1}}", "min_size"},
		{"{\"name\":\"p\",\"template\":{\"max_size\":\"4\"}}", "max_size"},
		{"{\"name\":\"p\",\"template\":{\"price\":-0.5}}", "price"},
		{"{\"name\":\"p\",\"template\":{\"min_size\":3,\"max_size\":2}}", "max_size"},
	};
	char *msg = NULL;

	for (size_t i = 0; i < G_N_ELEMENTS(good); i++) {
		ck_assert_msg(pool_body(good[i], &msg) == 0, "%s: %s", good[i], msg);
		ck_assert_ptr_null(msg);
	}
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autofree char *want = g_strdup_printf("template: field '%s' must be", bad[i].field);

		ck_assert_msg(pool_body(bad[i].body, &msg) == -EINVAL, "%s taken", bad[i].body);
		ck_assert_msg(g_str_has_prefix(msg, want), "%s: %s", bad[i].body, msg);
		g_clear_pointer(&msg, g_free);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("bm-store");
	TCase *pure = tcase_create("pure");
	TCase *db = tcase_create("store");

	tcase_add_test(pure, test_lifecycle_table);
	tcase_add_test(pure, test_json_limits);
	tcase_add_test(pure, test_json_repeated_key);
	tcase_add_test(pure, test_pool_template);
	suite_add_tcase(s, pure);
	tcase_add_checked_fixture(db, setup, teardown);
	tcase_add_test(db, test_schema_version);
	tcase_add_test(db, test_migration_keeps_rows);
	tcase_add_test(db, test_newer_schema_refused);
	tcase_add_test(db, test_cantopen_mapping);
	tcase_add_test(db, test_enroll_and_delete);
	tcase_add_test(db, test_last_free_machine);
	tcase_add_test(db, test_walk_and_fencing);
	tcase_add_test(db, test_fence_reenrolled);
	tcase_add_test(db, test_maintenance_reverify_op);
	tcase_add_test(db, test_give_up_to_error);
	tcase_add_test(db, test_retry_clears_last_error);
	tcase_add_test(db, test_power_retry_clears_last_error);
	tcase_add_test(db, test_op_started_at);
	tcase_add_test(db, test_promote_only_open);
	tcase_add_test(db, test_new_op_clears_last_error);
	tcase_add_test(db, test_detach_step_clears_row_error);
	tcase_add_test(db, test_error_with_instance);
	tcase_add_test(db, test_idempotency);
	tcase_add_test(db, test_instance_id_room);
	tcase_add_test(db, test_plug_id_room);
	tcase_add_test(db, test_purge_history);
	tcase_add_test(db, test_purge_operations);
	tcase_add_test(db, test_purge_instances);
	tcase_add_test(db, test_purge_reuses_pages);
	suite_add_tcase(s, db);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
