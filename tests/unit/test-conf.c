// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for configuration files (lib/conf.c): loading from memory and
 * from disk, optional and required files, and every typed getter with its
 * default, its valid spellings and its invalid ones.  Error messages are part
 * of the interface (a user acts on them), so the tests check that each one
 * names the file, the "[group]", the key and the quoted offending value.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"

#define NAME "test.conf"

static struct qt_conf *load(const char *data)
{
	struct qt_conf *c = NULL;
	g_autofree char *msg = NULL;

	ck_assert_msg(qt_conf_load_data(NAME, data, &c, &msg) == 0, "load: %s", msg ? msg : "");
	ck_assert_ptr_nonnull(c);
	return c;
}

/* The message names the file, the group, the key and (when given) the quoted value. */
static void ck_msg_names(const char *msg, const char *file, const char *group, const char *key,
			 const char *value)
{
	g_autofree char *g = g_strdup_printf("[%s]", group);
	g_autofree char *v = value ? g_strdup_printf("\"%s\"", value) : NULL;

	ck_assert_ptr_nonnull(msg);
	ck_assert_msg(strstr(msg, file), "no file name in: %s", msg);
	ck_assert_msg(strstr(msg, g), "no %s in: %s", g, msg);
	ck_assert_msg(strstr(msg, key), "no key %s in: %s", key, msg);
	if (v)
		ck_assert_msg(strstr(msg, v), "no %s in: %s", v, msg);
	ck_assert_msg(!strchr(msg, '\n'), "message is not one line: %s", msg);
}

/* A private temp dir with one file in it; removed by tmpfile_done(). */
struct tmpfile {
	char *dir;
	char *path;
};

static void tmpfile_make(struct tmpfile *t, const char *contents)
{
	g_autoptr(GError) err = NULL;

	t->dir = g_dir_make_tmp("test-conf-XXXXXX", &err);
	ck_assert_msg(t->dir, "mkdtemp: %s", err ? err->message : "");
	t->path = g_build_filename(t->dir, "server.conf", NULL);
	if (contents)
		ck_assert(g_file_set_contents(t->path, contents, -1, NULL));
}

static void tmpfile_done(struct tmpfile *t)
{
	g_unlink(t->path);
	g_rmdir(t->dir);
	g_free(t->path);
	g_free(t->dir);
}

/* ---- loading ----------------------------------------------------------- */

START_TEST(test_load_data)
{
	g_autoptr(qt_conf) c = load("# comment\n[server]\nport = 7000\n\n[client]\nname=a\n");

	ck_assert_str_eq(qt_conf_path(c), NAME);
	ck_assert(qt_conf_has(c, "server", "port"));
	ck_assert(qt_conf_has(c, "client", "name"));
	ck_assert(!qt_conf_has(c, "server", "name"));
	ck_assert(!qt_conf_has(c, "nosuch", "port"));
}
END_TEST

START_TEST(test_load_data_empty)
{
	g_autoptr(qt_conf) c = load("");

	ck_assert(!qt_conf_has(c, "server", "port"));
}
END_TEST

START_TEST(test_load_data_bad_syntax)
{
	static const char *const bad[] = {
		"port = 7000\n",          /* key outside any group */
		"[server\nport = 1\n",    /* unterminated group */
		"[server]\njust words\n", /* no '=' */
	};

	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		struct qt_conf *c = NULL;
		g_autofree char *msg = NULL;

		ck_assert_int_eq(qt_conf_load_data(NAME, bad[i], &c, &msg), -EINVAL);
		ck_assert_ptr_null(c);
		ck_assert_ptr_nonnull(msg);
		ck_assert_msg(g_str_has_prefix(msg, NAME ": "), "message: %s", msg);
	}
}
END_TEST

START_TEST(test_load_file)
{
	struct tmpfile t;
	g_autoptr(qt_conf) c = NULL;
	g_autofree char *msg = NULL;
	int64_t port = 0;

	tmpfile_make(&t, "[server]\nport = 7001\n");
	ck_assert_int_eq(qt_conf_load(t.path, false, &c, &msg), 0);
	ck_assert_ptr_null(msg);
	ck_assert_str_eq(qt_conf_path(c), t.path);
	ck_assert_int_eq(qt_conf_get_int(c, "server", "port", 1, 1, 65535, &port, &msg), 0);
	ck_assert_int_eq(port, 7001);
	/* Optional changes nothing when the file is there. */
	qt_conf_free(g_steal_pointer(&c));
	ck_assert_int_eq(qt_conf_load(t.path, true, &c, &msg), 0);
	ck_assert(qt_conf_has(c, "server", "port"));
	tmpfile_done(&t);
}
END_TEST

START_TEST(test_load_file_errors_name_path)
{
	struct tmpfile t;
	g_autoptr(qt_conf) c = NULL;
	g_autofree char *msg = NULL;
	int64_t port = 0;

	/* A bad value in a real file: the message names that file. */
	tmpfile_make(&t, "[server]\nport = seven\n");
	ck_assert_int_eq(qt_conf_load(t.path, false, &c, &msg), 0);
	ck_assert_int_eq(qt_conf_get_int(c, "server", "port", 1, 1, 65535, &port, &msg), -EINVAL);
	ck_msg_names(msg, t.path, "server", "port", "seven");
	ck_assert_msg(g_str_has_prefix(msg, t.path), "message: %s", msg);
	g_clear_pointer(&msg, g_free);
	qt_conf_free(g_steal_pointer(&c));

	/* A syntax error in a real file. */
	ck_assert(g_file_set_contents(t.path, "[server\n", -1, NULL));
	ck_assert_int_eq(qt_conf_load(t.path, true, &c, &msg), -EINVAL);
	ck_assert_ptr_null(c);
	ck_assert_msg(g_str_has_prefix(msg, t.path), "message: %s", msg);
	tmpfile_done(&t);
}
END_TEST

START_TEST(test_load_missing_optional)
{
	struct tmpfile t;
	g_autoptr(qt_conf) c = NULL;
	g_autofree char *msg = NULL;
	g_autofree char *s = NULL;
	int64_t n = 0;

	tmpfile_make(&t, NULL);
	ck_assert_int_eq(qt_conf_load(t.path, true, &c, &msg), 0);
	ck_assert_ptr_null(msg);
	ck_assert_ptr_nonnull(c);
	ck_assert_str_eq(qt_conf_path(c), t.path);
	ck_assert(!qt_conf_has(c, "server", "port"));
	ck_assert_int_eq(qt_conf_get_int(c, "server", "port", 42, 0, 100, &n, &msg), 0);
	ck_assert_int_eq(n, 42);
	ck_assert_int_eq(qt_conf_get_string(c, "server", "name", "dflt", &s, &msg), 0);
	ck_assert_str_eq(s, "dflt");
	tmpfile_done(&t);
}
END_TEST

START_TEST(test_load_missing_required)
{
	struct tmpfile t;
	struct qt_conf *c = NULL;
	g_autofree char *msg = NULL;

	tmpfile_make(&t, NULL);
	ck_assert_int_eq(qt_conf_load(t.path, false, &c, &msg), -ENOENT);
	ck_assert_ptr_null(c);
	ck_assert_ptr_nonnull(msg);
	ck_assert_msg(strstr(msg, t.path), "path not named: %s", msg);
	ck_assert_msg(!strchr(msg, '\n'), "message is not one line: %s", msg);
	tmpfile_done(&t);
}
END_TEST

START_TEST(test_load_directory)
{
	/* A directory where a file should be is an error even when optional. */
	struct tmpfile t;
	struct qt_conf *c = NULL;
	g_autofree char *msg = NULL;

	tmpfile_make(&t, NULL);
	ck_assert_int_lt(qt_conf_load(t.dir, true, &c, &msg), 0);
	ck_assert_ptr_null(c);
	ck_assert_msg(msg && strstr(msg, t.dir), "path not named: %s", msg ? msg : "(null)");
	tmpfile_done(&t);
}
END_TEST

START_TEST(test_load_unreadable)
{
	struct tmpfile t;
	struct qt_conf *c = NULL;
	g_autofree char *msg = NULL;

	if (geteuid() == 0)
		return; /* root reads mode-000 files; nothing to test */
	tmpfile_make(&t, "[a]\nb=1\n");
	ck_assert_int_eq(g_chmod(t.path, 0), 0);
	ck_assert_int_eq(qt_conf_load(t.path, true, &c, &msg), -EACCES);
	ck_assert_ptr_null(c);
	ck_assert_msg(strstr(msg, t.path), "path not named: %s", msg);
	tmpfile_done(&t);
}
END_TEST

/* ---- strings ----------------------------------------------------------- */

START_TEST(test_get_string)
{
	g_autoptr(qt_conf) c = load("[g]\nplain = hello world \nesc = tab\\there\nempty =\n"
				    "bad = a\\qb\n");
	char *s = NULL;
	char *msg = NULL;

	ck_assert_int_eq(qt_conf_get_string(c, "g", "plain", "x", &s, &msg), 0);
	ck_assert_str_eq(s, "hello world");
	g_free(s);
	ck_assert_int_eq(qt_conf_get_string(c, "g", "esc", "x", &s, &msg), 0);
	ck_assert_str_eq(s, "tab\there");
	g_free(s);
	ck_assert_int_eq(qt_conf_get_string(c, "g", "empty", "x", &s, &msg), 0);
	ck_assert_str_eq(s, "");
	g_free(s);
	/* Absent: the default, copied; NULL default gives NULL. */
	ck_assert_int_eq(qt_conf_get_string(c, "g", "absent", "dflt", &s, &msg), 0);
	ck_assert_str_eq(s, "dflt");
	g_free(s);
	s = (char *)"untouched";
	ck_assert_int_eq(qt_conf_get_string(c, "g", "absent", NULL, &s, &msg), 0);
	ck_assert_ptr_null(s);
	ck_assert_int_eq(qt_conf_get_string(c, "nogroup", "plain", "d", &s, &msg), 0);
	ck_assert_str_eq(s, "d");
	g_free(s);
	ck_assert_ptr_null(msg);

	/* An invalid escape sequence is a bad value, not a string with a backslash. */
	s = (char *)"untouched";
	ck_assert_int_eq(qt_conf_get_string(c, "g", "bad", "x", &s, &msg), -EINVAL);
	ck_assert_str_eq(s, "untouched");
	ck_msg_names(msg, NAME, "g", "bad", "a\\qb");
	g_free(msg);
}
END_TEST

/* ---- booleans ---------------------------------------------------------- */

START_TEST(test_get_bool)
{
	static const struct {
		const char *text;
		bool value;
	} ok[] = {
		{"true", true}, {"TRUE", true}, {"yes", true}, {"Yes", true}, {"on", true}, {"1", true},
		{"false", false}, {"False", false}, {"no", false}, {"NO", false}, {"off", false}, {"0", false},
		{"  on  ", true},
	};
	static const char *const bad[] = {"maybe", "2", "tru", "yess", "", "true false", "-1"};

	for (size_t i = 0; i < G_N_ELEMENTS(ok); i++) {
		g_autofree char *data = g_strdup_printf("[g]\nk=%s\n", ok[i].text);
		g_autoptr(qt_conf) c = load(data);
		char *msg = NULL;
		bool b = !ok[i].value;

		ck_assert_msg(qt_conf_get_bool(c, "g", "k", !ok[i].value, &b, &msg) == 0, "%s", ok[i].text);
		ck_assert_msg(b == ok[i].value, "%s", ok[i].text);
		ck_assert_ptr_null(msg);
	}
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autofree char *data = g_strdup_printf("[g]\nflag=%s\n", bad[i]);
		g_autoptr(qt_conf) c = load(data);
		g_autofree char *msg = NULL;
		bool b = true;

		ck_assert_msg(qt_conf_get_bool(c, "g", "flag", false, &b, &msg) == -EINVAL, "%s", bad[i]);
		ck_assert(b); /* untouched */
		ck_msg_names(msg, NAME, "g", "flag", bad[i]);
	}
	{
		g_autoptr(qt_conf) c = load("[g]\n");
		bool b = false;
		char *msg = NULL;

		ck_assert_int_eq(qt_conf_get_bool(c, "g", "k", true, &b, &msg), 0);
		ck_assert(b);
		ck_assert_int_eq(qt_conf_get_bool(c, "g", "k", false, &b, &msg), 0);
		ck_assert(!b);
		ck_assert_int_eq(qt_conf_get_bool(c, "other", "k", true, &b, &msg), 0);
		ck_assert(b);
	}
}
END_TEST

/* ---- integers ---------------------------------------------------------- */

START_TEST(test_get_int)
{
	g_autoptr(qt_conf) c = load("[g]\n"
				    "a = 42\n"
				    "neg = -7\n"
				    "lo = 10\n"
				    "hi = 20\n"
				    "below = 9\n"
				    "above = 21\n"
				    "zero = 0\n"
				    "max64 = 9223372036854775807\n"
				    "min64 = -9223372036854775808\n"
				    "over64 = 9223372036854775808\n"
				    "under64 = -9223372036854775809\n"
				    "junk = 10x\n"
				    "hex = 0x10\n"
				    "frac = 1.5\n"
				    "empty =\n"
				    "words = ten\n"
				    "inner = 1 0\n");
	static const char *const bad[] = {"junk", "hex", "frac", "empty", "words", "inner"};
	int64_t v = 0;
	char *msg = NULL;

	ck_assert_int_eq(qt_conf_get_int(c, "g", "a", 0, 0, 100, &v, &msg), 0);
	ck_assert_int_eq(v, 42);
	ck_assert_int_eq(qt_conf_get_int(c, "g", "neg", 0, -10, 10, &v, &msg), 0);
	ck_assert_int_eq(v, -7);
	ck_assert_int_eq(qt_conf_get_int(c, "g", "zero", 5, 0, 10, &v, &msg), 0);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(qt_conf_get_int(c, "g", "absent", 5, 0, 10, &v, &msg), 0);
	ck_assert_int_eq(v, 5);
	ck_assert_int_eq(qt_conf_get_int(c, "nogroup", "a", -3, -5, 10, &v, &msg), 0);
	ck_assert_int_eq(v, -3);

	/* Range limits are inclusive. */
	ck_assert_int_eq(qt_conf_get_int(c, "g", "lo", 0, 10, 20, &v, &msg), 0);
	ck_assert_int_eq(v, 10);
	ck_assert_int_eq(qt_conf_get_int(c, "g", "hi", 0, 10, 20, &v, &msg), 0);
	ck_assert_int_eq(v, 20);
	ck_assert_ptr_null(msg);
	v = 1234;
	ck_assert_int_eq(qt_conf_get_int(c, "g", "below", 0, 10, 20, &v, &msg), -EINVAL);
	ck_assert_int_eq(v, 1234);
	ck_msg_names(msg, NAME, "g", "below", "9");
	ck_assert_msg(strstr(msg, "[10, 20]"), "range not stated: %s", msg);
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(qt_conf_get_int(c, "g", "above", 0, 10, 20, &v, &msg), -EINVAL);
	ck_assert_int_eq(v, 1234);
	ck_msg_names(msg, NAME, "g", "above", "21");
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(qt_conf_get_int(c, "g", "neg", 0, 0, 10, &v, &msg), -EINVAL);
	g_clear_pointer(&msg, g_free);

	/* The edges of int64. */
	ck_assert_int_eq(qt_conf_get_int(c, "g", "max64", 0, INT64_MIN, INT64_MAX, &v, &msg), 0);
	ck_assert_int_eq(v, INT64_MAX);
	ck_assert_int_eq(qt_conf_get_int(c, "g", "min64", 0, INT64_MIN, INT64_MAX, &v, &msg), 0);
	ck_assert_int_eq(v, INT64_MIN);
	v = 1234;
	ck_assert_int_eq(qt_conf_get_int(c, "g", "over64", 0, INT64_MIN, INT64_MAX, &v, &msg), -EINVAL);
	ck_msg_names(msg, NAME, "g", "over64", "9223372036854775808");
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(qt_conf_get_int(c, "g", "under64", 0, INT64_MIN, INT64_MAX, &v, &msg), -EINVAL);
	ck_msg_names(msg, NAME, "g", "under64", "-9223372036854775809");
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(v, 1234);

	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		ck_assert_msg(qt_conf_get_int(c, "g", bad[i], 0, INT64_MIN, INT64_MAX, &v, &msg) == -EINVAL,
			      "%s", bad[i]);
		ck_assert_int_eq(v, 1234);
		ck_assert_ptr_nonnull(msg);
		ck_assert(qt_conf_has(c, "g", bad[i]));
		g_free(msg);
		msg = NULL;
	}
	ck_assert_int_eq(qt_conf_get_int(c, "g", "junk", 0, 0, 100, &v, &msg), -EINVAL);
	ck_msg_names(msg, NAME, "g", "junk", "10x");
	g_free(msg);
	msg = NULL;
	ck_assert_int_eq(qt_conf_get_int(c, "g", "empty", 0, 0, 100, &v, &msg), -EINVAL);
	ck_msg_names(msg, NAME, "g", "empty", "");
	g_free(msg);
}
END_TEST

START_TEST(test_parse_int)
{
	int64_t v = 99;

	ck_assert_int_eq(qt_parse_int("17", 0, 100, &v), 0);
	ck_assert_int_eq(v, 17);
	v = 99;
	ck_assert_int_eq(qt_parse_int(NULL, 0, 100, &v), -EINVAL);
	ck_assert_int_eq(qt_parse_int("", 0, 100, &v), -EINVAL);
	ck_assert_int_eq(qt_parse_int(" 1", 0, 100, &v), -EINVAL);
	ck_assert_int_eq(qt_parse_int("101", 0, 100, &v), -EINVAL);
	ck_assert_int_eq(qt_parse_int("-1", 0, 100, &v), -EINVAL);
	ck_assert_int_eq(v, 99);
}
END_TEST

/* ---- doubles ----------------------------------------------------------- */

START_TEST(test_get_double)
{
	g_autoptr(qt_conf) c = load("[g]\nhalf = 0.5\nexp = 1e3\nneg = -2.25\nint = 3\n"
				    "nan = nan\ninf = inf\nword = abc\njunk = 1.5x\nbig = 1e999\n"
				    "empty =\n");
	static const char *const bad[] = {"nan", "inf", "word", "junk", "big", "empty"};
	double d = 0;
	char *msg = NULL;

	ck_assert_int_eq(qt_conf_get_double(c, "g", "half", 0, 0, 1, &d, &msg), 0);
	ck_assert_double_eq(d, 0.5);
	ck_assert_int_eq(qt_conf_get_double(c, "g", "exp", 0, 0, 1e6, &d, &msg), 0);
	ck_assert_double_eq(d, 1000.0);
	ck_assert_int_eq(qt_conf_get_double(c, "g", "neg", 0, -10, 10, &d, &msg), 0);
	ck_assert_double_eq(d, -2.25);
	ck_assert_int_eq(qt_conf_get_double(c, "g", "int", 0, 3, 3, &d, &msg), 0);
	ck_assert_double_eq(d, 3.0);
	ck_assert_int_eq(qt_conf_get_double(c, "g", "absent", 0.25, 0, 1, &d, &msg), 0);
	ck_assert_double_eq(d, 0.25);
	ck_assert_ptr_null(msg);

	d = 7.0;
	ck_assert_int_eq(qt_conf_get_double(c, "g", "exp", 0, 0, 999.5, &d, &msg), -EINVAL);
	ck_assert_double_eq(d, 7.0);
	ck_msg_names(msg, NAME, "g", "exp", "1e3");
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(qt_conf_get_double(c, "g", "neg", 0, 0, 1, &d, &msg), -EINVAL);
	g_clear_pointer(&msg, g_free);
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		ck_assert_msg(qt_conf_get_double(c, "g", bad[i], 0, -INFINITY, INFINITY, &d, &msg) == -EINVAL,
			      "%s", bad[i]);
		ck_assert_double_eq(d, 7.0);
		ck_assert_ptr_nonnull(msg);
		ck_assert_msg(strstr(msg, bad[i]), "%s", msg);
		g_clear_pointer(&msg, g_free);
	}
	ck_assert_int_eq(qt_conf_get_double(c, "g", "junk", 0, 0, 10, &d, &msg), -EINVAL);
	ck_msg_names(msg, NAME, "g", "junk", "1.5x");
	g_free(msg);
}
END_TEST

/* ---- sizes ------------------------------------------------------------- */

START_TEST(test_parse_size)
{
	static const struct {
		const char *text;
		uint64_t value;
	} ok[] = {
		{"0", 0},
		{"4096", 4096},
		{"512B", 512},
		{"64K", 64ull << 10},
		{"64k", 64ull << 10},
		{"1KB", 1024},
		{"1KiB", 1024},
		{"4M", 4ull << 20},
		{"4 MiB", 4ull << 20},
		{"2mb", 2ull << 20},
		{"1G", 1ull << 30},
		{"3GB", 3ull << 30},
		{"1GiB", 1ull << 30},
		{"18446744073709551615", UINT64_MAX},
		/* The largest multiple of 1 GiB that fits. */
		{"17179869183G", UINT64_MAX - (1ull << 30) + 1},
		{"17592186044415M", UINT64_MAX - (1ull << 20) + 1},
		{"18014398509481983K", UINT64_MAX - 1023},
	};
	static const char *const bad[] = {
		"", "K", "-1", "+1", "1.5M", "1T", "1KK", "0x10", "1 2", "ten", "1Gi",
		"18446744073709551616",  /* 2^64 */
		"17179869184G",          /* 2^34 GiB = 2^64 */
		"17592186044416M",       /* 2^44 MiB = 2^64 */
		"18014398509481984K",    /* 2^54 KiB = 2^64 */
		"99999999999999999999999G",
	};
	uint64_t v;

	for (size_t i = 0; i < G_N_ELEMENTS(ok); i++) {
		v = 12345;
		ck_assert_msg(qt_parse_size(ok[i].text, &v) == 0, "%s", ok[i].text);
		ck_assert_msg(v == ok[i].value, "%s gave %" G_GUINT64_FORMAT, ok[i].text, v);
	}
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		v = 12345;
		ck_assert_msg(qt_parse_size(bad[i], &v) == -EINVAL, "%s", bad[i]);
		ck_assert_uint_eq(v, 12345);
	}
	ck_assert_int_eq(qt_parse_size(NULL, &v), -EINVAL);
}
END_TEST

START_TEST(test_get_size)
{
	g_autoptr(qt_conf) c = load("[g]\nbuf = 64K\nbig = 2G\nbad = lots\nover = 17179869184G\n"
				    "exact = 1M\n");
	uint64_t v = 0;
	char *msg = NULL;

	ck_assert_int_eq(qt_conf_get_size(c, "g", "buf", 0, UINT64_MAX, &v, &msg), 0);
	ck_assert_uint_eq(v, 65536);
	ck_assert_int_eq(qt_conf_get_size(c, "g", "absent", 4096, UINT64_MAX, &v, &msg), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(qt_conf_get_size(c, "g", "exact", 0, 1u << 20, &v, &msg), 0);
	ck_assert_uint_eq(v, 1u << 20);
	ck_assert_ptr_null(msg);

	v = 777;
	ck_assert_int_eq(qt_conf_get_size(c, "g", "bad", 0, UINT64_MAX, &v, &msg), -EINVAL);
	ck_assert_uint_eq(v, 777);
	ck_msg_names(msg, NAME, "g", "bad", "lots");
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(qt_conf_get_size(c, "g", "over", 0, UINT64_MAX, &v, &msg), -EINVAL);
	ck_assert_uint_eq(v, 777);
	ck_msg_names(msg, NAME, "g", "over", "17179869184G");
	g_clear_pointer(&msg, g_free);
	/* Over the caller's maximum: the message says what the maximum is. */
	ck_assert_int_eq(qt_conf_get_size(c, "g", "big", 0, 1ull << 30, &v, &msg), -EINVAL);
	ck_assert_uint_eq(v, 777);
	ck_msg_names(msg, NAME, "g", "big", "2G");
	ck_assert_msg(strstr(msg, "1073741824"), "maximum not stated: %s", msg);
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(qt_conf_get_size(c, "g", "exact", 0, (1u << 20) - 1, &v, &msg), -EINVAL);
	g_free(msg);
}
END_TEST

/* ---- durations --------------------------------------------------------- */

START_TEST(test_parse_duration)
{
	static const struct {
		const char *text;
		uint64_t ms;
	} ok[] = {
		{"0", 0},
		{"30", 30000},
		{"30s", 30000},
		{"500ms", 500},
		{"0ms", 0},
		{"5m", 300000},
		{"2min", 120000},
		{"1h", 3600000},
		{"90d", 7776000000ull},
		{"0d", 0},
		{"213503982334d", 18446744073657600000ull}, /* the most days that fit */
		{"10 s", 10000},
		{"18446744073709551615ms", UINT64_MAX},
		{"18446744073709551s", 18446744073709551000ull},
	};
	static const char *const bad[] = {
		"", "s", "ms", "-1", "1.5s", "1D", "1S", "1H", "1 h m", "10sec", "1hr", "d", "1dd",
		"1day", "1.5d", "1d12h",
		"18446744073709552s",   /* over UINT64_MAX ms */
		"18446744073709551615", /* bare seconds, times 1000 overflows */
		"5124095576030432h",
		"213503982335d",
		"18446744073709551615d",
	};
	uint64_t v;

	for (size_t i = 0; i < G_N_ELEMENTS(ok); i++) {
		v = 12345;
		ck_assert_msg(qt_parse_duration_ms(ok[i].text, &v) == 0, "%s", ok[i].text);
		ck_assert_msg(v == ok[i].ms, "%s gave %" G_GUINT64_FORMAT, ok[i].text, v);
	}
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		v = 12345;
		ck_assert_msg(qt_parse_duration_ms(bad[i], &v) == -EINVAL, "%s", bad[i]);
		ck_assert_uint_eq(v, 12345);
	}
	ck_assert_int_eq(qt_parse_duration_ms(NULL, &v), -EINVAL);
}
END_TEST

START_TEST(test_get_duration)
{
	g_autoptr(qt_conf) c = load("[g]\ntimeout = 10\nping = 250ms\nidle = 5m\nlong = 2h\n"
				    "keep = 30d\nbad = 10 minutes\n");
	uint64_t v = 0;
	char *msg = NULL;

	ck_assert_int_eq(qt_conf_get_duration_ms(c, "g", "timeout", 0, &v, &msg), 0);
	ck_assert_uint_eq(v, 10000);
	ck_assert_int_eq(qt_conf_get_duration_ms(c, "g", "ping", 0, &v, &msg), 0);
	ck_assert_uint_eq(v, 250);
	ck_assert_int_eq(qt_conf_get_duration_ms(c, "g", "idle", 0, &v, &msg), 0);
	ck_assert_uint_eq(v, 300000);
	ck_assert_int_eq(qt_conf_get_duration_ms(c, "g", "long", 0, &v, &msg), 0);
	ck_assert_uint_eq(v, 7200000);
	ck_assert_int_eq(qt_conf_get_duration_ms(c, "g", "keep", 0, &v, &msg), 0);
	ck_assert_uint_eq(v, 30 * 86400000ull);
	ck_assert_int_eq(qt_conf_get_duration_ms(c, "g", "absent", 1500, &v, &msg), 0);
	ck_assert_uint_eq(v, 1500);
	ck_assert_ptr_null(msg);
	v = 9;
	ck_assert_int_eq(qt_conf_get_duration_ms(c, "g", "bad", 0, &v, &msg), -EINVAL);
	ck_assert_uint_eq(v, 9);
	ck_msg_names(msg, NAME, "g", "bad", "10 minutes");
	g_free(msg);
}
END_TEST

/* ---- string lists ------------------------------------------------------ */

static void ck_strv_eq(char **got, const char *const *want)
{
	size_t n = 0;

	ck_assert_ptr_nonnull(got);
	while (want[n])
		n++;
	ck_assert_uint_eq(g_strv_length(got), n);
	for (size_t i = 0; i < n; i++)
		ck_assert_str_eq(got[i], want[i]);
}

START_TEST(test_get_strv)
{
	g_autoptr(qt_conf) c = load("[g]\n"
				    "three = a;b;c\n"
				    "holes = a;;b; ;c;\n"
				    "spaced =  x ; y \n"
				    "one = solo\n"
				    "empty =\n"
				    "semis = ;;;\n"
				    "escaped = a\\;b;c\n"
				    "bad = x\\qy;z\n");
	static const char *const none[] = {NULL};
	char **v = NULL;
	char *msg = NULL;

	ck_assert_int_eq(qt_conf_get_strv(c, "g", "three", &v, &msg), 0);
	ck_strv_eq(v, (const char *const[]){"a", "b", "c", NULL});
	g_strfreev(v);
	/* Empty entries (and entries of only spaces) are dropped. */
	ck_assert_int_eq(qt_conf_get_strv(c, "g", "holes", &v, &msg), 0);
	ck_strv_eq(v, (const char *const[]){"a", "b", "c", NULL});
	g_strfreev(v);
	ck_assert_int_eq(qt_conf_get_strv(c, "g", "spaced", &v, &msg), 0);
	ck_strv_eq(v, (const char *const[]){"x", "y", NULL});
	g_strfreev(v);
	ck_assert_int_eq(qt_conf_get_strv(c, "g", "one", &v, &msg), 0);
	ck_strv_eq(v, (const char *const[]){"solo", NULL});
	g_strfreev(v);
	ck_assert_int_eq(qt_conf_get_strv(c, "g", "escaped", &v, &msg), 0);
	ck_strv_eq(v, (const char *const[]){"a;b", "c", NULL});
	g_strfreev(v);
	ck_assert_int_eq(qt_conf_get_strv(c, "g", "empty", &v, &msg), 0);
	ck_strv_eq(v, none);
	g_strfreev(v);
	ck_assert_int_eq(qt_conf_get_strv(c, "g", "semis", &v, &msg), 0);
	ck_strv_eq(v, none);
	g_strfreev(v);
	/* Absent: an empty vector, never NULL. */
	ck_assert_int_eq(qt_conf_get_strv(c, "g", "absent", &v, &msg), 0);
	ck_strv_eq(v, none);
	g_strfreev(v);
	ck_assert_int_eq(qt_conf_get_strv(c, "nogroup", "three", &v, &msg), 0);
	ck_strv_eq(v, none);
	g_strfreev(v);
	ck_assert_ptr_null(msg);

	v = (char **)none;
	ck_assert_int_eq(qt_conf_get_strv(c, "g", "bad", &v, &msg), -EINVAL);
	ck_assert_ptr_eq(v, (char **)none);
	ck_msg_names(msg, NAME, "g", "bad", "x\\qy;z");
	g_free(msg);
}
END_TEST

START_TEST(test_get_uids)
{
	g_autoptr(qt_conf) c = load("[g]\n"
				    "two = 0; 1000 ;\n"
				    "top = 4294967294\n"
				    "empty =\n"
				    "minus1 = 0;-1\n"
				    "nouid = 4294967295\n"
				    "name = root\n"
				    "bad = x\\qy\n");
	static const char *const bad[] = {"minus1", "nouid", "name", "bad"};
	static const char *const shown[] = {"-1", "4294967295", "root", "x\\qy"};
	GArray *v = NULL, *keep;
	char *msg = NULL;

	ck_assert_int_eq(qt_conf_get_uids(c, "g", "two", &v, &msg), 0);
	ck_assert_uint_eq(v->len, 2);
	ck_assert_uint_eq(g_array_index(v, uint32_t, 0), 0);
	ck_assert_uint_eq(g_array_index(v, uint32_t, 1), 1000);
	g_array_unref(v);
	ck_assert_int_eq(qt_conf_get_uids(c, "g", "top", &v, &msg), 0);
	ck_assert_uint_eq(v->len, 1);
	ck_assert_uint_eq(g_array_index(v, uint32_t, 0), 4294967294u);
	g_array_unref(v);
	ck_assert_int_eq(qt_conf_get_uids(c, "g", "empty", &v, &msg), 0);
	ck_assert_uint_eq(v->len, 0);
	g_array_unref(v);
	/* Absent: an empty array, never NULL. */
	ck_assert_int_eq(qt_conf_get_uids(c, "g", "absent", &v, &msg), 0);
	ck_assert_uint_eq(v->len, 0);
	g_array_unref(v);
	ck_assert_ptr_null(msg);

	/* (uid_t)-1 is no one's uid; a name is not looked up.  Nothing is written on error. */
	keep = v = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		ck_assert_int_eq(qt_conf_get_uids(c, "g", bad[i], &v, &msg), -EINVAL);
		ck_assert_ptr_eq(v, keep);
		ck_msg_names(msg, NAME, "g", bad[i], shown[i]);
		g_clear_pointer(&msg, g_free);
	}
	g_array_unref(keep);
}
END_TEST

/* ---- unknown keys ------------------------------------------------------ */

START_TEST(test_check_keys)
{
	g_autoptr(qt_conf) c = load("[server]\nport = 1\nlisten = ::\n[client]\nprot = 2\n");
	static const char *const known[] = {"port", "listen", "max_conns", NULL};
	static const char *const client_known[] = {"port", NULL};
	static const char *const nothing[] = {NULL};
	char *msg = NULL;

	ck_assert_int_eq(qt_conf_check_keys(c, "server", known, &msg), 0);
	ck_assert_ptr_null(msg);
	/* A group that is not there has no unknown keys. */
	ck_assert_int_eq(qt_conf_check_keys(c, "absent", nothing, &msg), 0);
	ck_assert_ptr_null(msg);

	/* A typo is caught, and the message names it. */
	ck_assert_int_eq(qt_conf_check_keys(c, "client", client_known, &msg), -EINVAL);
	ck_msg_names(msg, NAME, "client", "prot", NULL);
	ck_assert_msg(strstr(msg, "unknown"), "%s", msg);
	g_clear_pointer(&msg, g_free);

	ck_assert_int_eq(qt_conf_check_keys(c, "server", nothing, &msg), -EINVAL);
	ck_msg_names(msg, NAME, "server", "port", NULL);
	g_clear_pointer(&msg, g_free);

	/* Matching is exact: no prefixes, no case folding. */
	{
		g_autoptr(qt_conf) c2 = load("[s]\nPort = 1\n");

		ck_assert_int_eq(qt_conf_check_keys(c2, "s", client_known, &msg), -EINVAL);
		ck_msg_names(msg, NAME, "s", "Port", NULL);
		g_clear_pointer(&msg, g_free);
	}
	{
		g_autoptr(qt_conf) c3 = load("[s]\npor = 1\n");

		ck_assert_int_eq(qt_conf_check_keys(c3, "s", client_known, &msg), -EINVAL);
		g_clear_pointer(&msg, g_free);
	}
}
END_TEST

/* ---- driver ------------------------------------------------------------ */

static Suite *conf_suite(void)
{
	Suite *s = suite_create("conf");
	TCase *ld = tcase_create("load");
	TCase *get = tcase_create("getters");

	tcase_add_test(ld, test_load_data);
	tcase_add_test(ld, test_load_data_empty);
	tcase_add_test(ld, test_load_data_bad_syntax);
	tcase_add_test(ld, test_load_file);
	tcase_add_test(ld, test_load_file_errors_name_path);
	tcase_add_test(ld, test_load_missing_optional);
	tcase_add_test(ld, test_load_missing_required);
	tcase_add_test(ld, test_load_directory);
	tcase_add_test(ld, test_load_unreadable);
	suite_add_tcase(s, ld);

	tcase_add_test(get, test_get_string);
	tcase_add_test(get, test_get_bool);
	tcase_add_test(get, test_get_int);
	tcase_add_test(get, test_parse_int);
	tcase_add_test(get, test_get_double);
	tcase_add_test(get, test_parse_size);
	tcase_add_test(get, test_get_size);
	tcase_add_test(get, test_parse_duration);
	tcase_add_test(get, test_get_duration);
	tcase_add_test(get, test_get_strv);
	tcase_add_test(get, test_get_uids);
	tcase_add_test(get, test_check_keys);
	suite_add_tcase(s, get);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(conf_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
