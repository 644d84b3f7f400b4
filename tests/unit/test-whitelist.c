// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for the qtfs-server path whitelist (fuse-qtfs/whitelist.c).
 * Loading: good files in every shape a user writes them, and every load
 * error, whose one-line message must name the file, the section and the
 * quoted value.  Checking: component boundaries, "/", empty and absent
 * sections, and hostile paths, which must never be allowed.  Two seeded
 * random loops finish: 100k byte strings through qtfs_wl_check, compared
 * with a deliberately naive reference matcher, and 2k generated key files
 * through qtfs_wl_load_data; under --enable-sanitizers they also show that
 * no input crashes or leaks.  Set WL_TEST_SEED to replay another seed.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "whitelist.h"

#define NAME "/etc/qtfs/whitelist"

static struct qtfs_wl *load(const char *data)
{
	struct qtfs_wl *wl = NULL;
	g_autofree char *msg = NULL;

	ck_assert_msg(qtfs_wl_load_data(NAME, data, &wl, &msg) == 0, "load: %s", msg ? msg : "");
	ck_assert_ptr_nonnull(wl);
	ck_assert_ptr_null(msg);
	return wl;
}

/* Loading @data fails with -EINVAL, leaves the output alone, and returns the message. */
static char *load_fails(const char *data)
{
	struct qtfs_wl *sentinel = (struct qtfs_wl *)&sentinel;
	struct qtfs_wl *wl = sentinel;
	char *msg = NULL;

	ck_assert_int_eq(qtfs_wl_load_data(NAME, data, &wl, &msg), -EINVAL);
	ck_assert_ptr_eq(wl, sentinel);
	ck_assert_ptr_nonnull(msg);
	ck_assert_msg(!strchr(msg, '\n'), "message is not one line: %s", msg);
	ck_assert_msg(g_utf8_validate(msg, -1, NULL), "message is not UTF-8: %s", msg);
	return msg;
}

/* The message names the file, the [section] and (when given) the key and the quoted value. */
static void ck_msg_names(const char *msg, const char *section, const char *key, const char *value)
{
	g_autofree char *s = g_strdup_printf("[%s]", section);
	g_autofree char *v = value ? g_strdup_printf("\"%s\"", value) : NULL;

	ck_assert_msg(g_str_has_prefix(msg, NAME ": "), "file not named first: %s", msg);
	ck_assert_msg(strstr(msg, s), "no %s in: %s", s, msg);
	if (key)
		ck_assert_msg(strstr(msg, key), "no key %s in: %s", key, msg);
	if (v)
		ck_assert_msg(strstr(msg, v), "no %s in: %s", v, msg);
}

static const char *const all_sections[QTFS_WL_N_OPS] = {
	"Open",	  "Write",   "Read",	"Readdir",  "Mkdir", "Rmdir", "Create",
	"Unlink", "Rename", "Setattr", "Setxattr", "Mount", "Kill",  "Udsconnect",
};

/* ---- loading good files ------------------------------------------------ */

START_TEST(test_op_names)
{
	for (int op = 0; op < QTFS_WL_N_OPS; op++)
		ck_assert_str_eq(qtfs_wl_op_name((enum qtfs_wl_op)op), all_sections[op]);
	ck_assert_str_eq(qtfs_wl_op_name(QTFS_WL_N_OPS), "unknown");
	ck_assert_str_eq(qtfs_wl_op_name((enum qtfs_wl_op)-1), "unknown");
}
END_TEST

/* Each section restricts its own operation and no other. */
START_TEST(test_load_each_section)
{
	for (int op = 0; op < QTFS_WL_N_OPS; op++) {
		g_autofree char *text = g_strdup_printf("[%s]\nPath=/only\n", all_sections[op]);
		g_autoptr(qtfs_wl) wl = load(text);

		for (int other = 0; other < QTFS_WL_N_OPS; other++) {
			ck_assert(qtfs_wl_restricts(wl, (enum qtfs_wl_op)other) == (other == op));
			ck_assert(qtfs_wl_check(wl, (enum qtfs_wl_op)other, "/only/x"));
			ck_assert(qtfs_wl_check(wl, (enum qtfs_wl_op)other, "/elsewhere") ==
				  (other != op));
		}
	}
}
END_TEST

START_TEST(test_load_all_sections)
{
	g_autoptr(GString) text = g_string_new("# the whole set\n\n");
	g_autoptr(qtfs_wl) wl = NULL;

	for (int op = 0; op < QTFS_WL_N_OPS; op++)
		g_string_append_printf(text, "[%s]\n# entries\nPath = /common ; /%s\n\n",
				       all_sections[op], all_sections[op]);
	wl = load(text->str);
	for (int op = 0; op < QTFS_WL_N_OPS; op++) {
		g_autofree char *own = g_strdup_printf("/%s/file", all_sections[op]);
		g_autofree char *next =
			g_strdup_printf("/%s/file", all_sections[(op + 1) % QTFS_WL_N_OPS]);

		ck_assert(qtfs_wl_restricts(wl, (enum qtfs_wl_op)op));
		ck_assert(qtfs_wl_check(wl, (enum qtfs_wl_op)op, "/common"));
		ck_assert(qtfs_wl_check(wl, (enum qtfs_wl_op)op, own));
		ck_assert(!qtfs_wl_check(wl, (enum qtfs_wl_op)op, next));
		ck_assert(!qtfs_wl_check(wl, (enum qtfs_wl_op)op, "/"));
	}
}
END_TEST

START_TEST(test_load_multiple_entries)
{
	g_autoptr(qtfs_wl) wl = load("[Open]\nPath=/a;/b/c; /d ;;/e;\n");

	ck_assert(qtfs_wl_check(wl, QTFS_WL_OPEN, "/a"));
	ck_assert(qtfs_wl_check(wl, QTFS_WL_OPEN, "/a/x/y"));
	ck_assert(qtfs_wl_check(wl, QTFS_WL_OPEN, "/b/c/z"));
	ck_assert(qtfs_wl_check(wl, QTFS_WL_OPEN, "/d"));
	ck_assert(qtfs_wl_check(wl, QTFS_WL_OPEN, "/e/1"));
	ck_assert(!qtfs_wl_check(wl, QTFS_WL_OPEN, "/b"));
	ck_assert(!qtfs_wl_check(wl, QTFS_WL_OPEN, "/b/d"));
	ck_assert(!qtfs_wl_check(wl, QTFS_WL_OPEN, "/f"));
	ck_assert(!qtfs_wl_check(wl, QTFS_WL_OPEN, "/ d"));
}
END_TEST

/* "/var/lib/", "//var///lib//" and "/var/lib" are one entry. */
START_TEST(test_load_normalizes)
{
	static const char *const spellings[] = {"/var/lib/", "//var///lib//", "/var/lib///",
						"/var//lib"};

	for (size_t i = 0; i < G_N_ELEMENTS(spellings); i++) {
		g_autofree char *text = g_strdup_printf("[Read]\nPath=%s\n", spellings[i]);
		g_autoptr(qtfs_wl) wl = load(text);

		ck_assert_msg(qtfs_wl_check(wl, QTFS_WL_READ, "/var/lib"), "%s", spellings[i]);
		ck_assert(qtfs_wl_check(wl, QTFS_WL_READ, "/var/lib/x"));
		ck_assert(!qtfs_wl_check(wl, QTFS_WL_READ, "/var/libx"));
		ck_assert(!qtfs_wl_check(wl, QTFS_WL_READ, "/var"));
	}
}
END_TEST

/* "/var" covers "/var/lib", but "/var-x" sorts between them and must survive. */
START_TEST(test_load_covered_entries)
{
	g_autoptr(qtfs_wl) wl = load("[Open]\nPath=/var/lib;/var-x;/var;/var/lib/docker;/var.d\n");

	ck_assert(qtfs_wl_check(wl, QTFS_WL_OPEN, "/var/lib/docker/x"));
	ck_assert(qtfs_wl_check(wl, QTFS_WL_OPEN, "/var/tmp"));
	ck_assert(qtfs_wl_check(wl, QTFS_WL_OPEN, "/var-x/y"));
	ck_assert(qtfs_wl_check(wl, QTFS_WL_OPEN, "/var.d"));
	ck_assert(!qtfs_wl_check(wl, QTFS_WL_OPEN, "/var-y"));
	ck_assert(!qtfs_wl_check(wl, QTFS_WL_OPEN, "/varx"));
}
END_TEST

START_TEST(test_load_root_entry)
{
	static const char *const texts[] = {"[Open]\nPath=/\n", "[Open]\nPath=///\n",
					    "[Open]\nPath=/a;/;/b\n"};

	for (size_t i = 0; i < G_N_ELEMENTS(texts); i++) {
		g_autoptr(qtfs_wl) wl = load(texts[i]);

		ck_assert(qtfs_wl_check(wl, QTFS_WL_OPEN, "/"));
		ck_assert(qtfs_wl_check(wl, QTFS_WL_OPEN, "/etc/shadow"));
		ck_assert(qtfs_wl_check(wl, QTFS_WL_OPEN, "/a b/\xff"));
		/* "/" covers every path, not every string. */
		ck_assert(!qtfs_wl_check(wl, QTFS_WL_OPEN, "etc"));
		ck_assert(!qtfs_wl_check(wl, QTFS_WL_OPEN, "/etc/../x"));
	}
}
END_TEST

START_TEST(test_load_empty_section_denies)
{
	static const char *const texts[] = {"[Rmdir]\nPath=\n", "[Rmdir]\n", "[Rmdir]\nPath= ;; \n",
					    "[Rmdir]\n# no Path key\n[Open]\nPath=/\n"};

	for (size_t i = 0; i < G_N_ELEMENTS(texts); i++) {
		g_autoptr(qtfs_wl) wl = load(texts[i]);

		ck_assert(qtfs_wl_restricts(wl, QTFS_WL_RMDIR));
		ck_assert(!qtfs_wl_check(wl, QTFS_WL_RMDIR, "/"));
		ck_assert(!qtfs_wl_check(wl, QTFS_WL_RMDIR, "/tmp/x"));
		ck_assert(qtfs_wl_check(wl, QTFS_WL_MKDIR, "/tmp/x"));
	}
}
END_TEST

START_TEST(test_load_absent_section_allows)
{
	g_autoptr(qtfs_wl) wl = load("[Open]\nPath=/a\n");
	g_autoptr(qtfs_wl) empty = load("");
	g_autoptr(qtfs_wl) comments = load("# nothing\n\n  # at all\n");

	ck_assert(!qtfs_wl_restricts(wl, QTFS_WL_WRITE));
	ck_assert(qtfs_wl_check(wl, QTFS_WL_WRITE, "/anything/at/all"));
	ck_assert(qtfs_wl_check(wl, QTFS_WL_WRITE, "/"));
	for (int op = 0; op < QTFS_WL_N_OPS; op++) {
		ck_assert(!qtfs_wl_restricts(empty, (enum qtfs_wl_op)op));
		ck_assert(!qtfs_wl_restricts(comments, (enum qtfs_wl_op)op));
		ck_assert(qtfs_wl_check(empty, (enum qtfs_wl_op)op, "/x"));
	}
}
END_TEST

START_TEST(test_null_whitelist)
{
	qtfs_wl_free(NULL);
	ck_assert(!qtfs_wl_restricts(NULL, QTFS_WL_OPEN));
	ck_assert(qtfs_wl_check(NULL, QTFS_WL_OPEN, "/etc/shadow"));
	ck_assert(qtfs_wl_check(NULL, QTFS_WL_RMDIR, "/"));
}
END_TEST

/* Escapes of the key-file syntax: "\;" is a ';' inside a path. */
START_TEST(test_load_escapes)
{
	g_autoptr(qtfs_wl) wl = load("[Open]\nPath=/a\\;b;/c\\\\d\n");

	ck_assert(qtfs_wl_check(wl, QTFS_WL_OPEN, "/a;b/x"));
	ck_assert(qtfs_wl_check(wl, QTFS_WL_OPEN, "/c\\d"));
	ck_assert(!qtfs_wl_check(wl, QTFS_WL_OPEN, "/a"));
	ck_assert(!qtfs_wl_check(wl, QTFS_WL_OPEN, "/b"));
}
END_TEST

/* Exactly 64 entries and an entry of PATH_MAX - 1 bytes are within the limits. */
START_TEST(test_load_limits_ok)
{
	g_autoptr(GString) text = g_string_new("[Open]\nPath=");
	g_autoptr(GString) longest = g_string_new("/");
	g_autoptr(qtfs_wl) wl = NULL;
	g_autofree char *text2 = NULL;

	for (int i = 0; i < QTFS_WL_MAX_ENTRIES; i++)
		g_string_append_printf(text, "/e%d;", i);
	wl = load(text->str);
	ck_assert(qtfs_wl_check(wl, QTFS_WL_OPEN, "/e0/x"));
	ck_assert(qtfs_wl_check(wl, QTFS_WL_OPEN, "/e63"));
	ck_assert(!qtfs_wl_check(wl, QTFS_WL_OPEN, "/e64"));
	g_clear_pointer(&wl, qtfs_wl_free);

	while (longest->len < PATH_MAX - 1)
		g_string_append_c(longest, 'l');
	text2 = g_strdup_printf("[Open]\nPath=%s\n", longest->str);
	wl = load(text2);
	ck_assert(qtfs_wl_check(wl, QTFS_WL_OPEN, longest->str));
}
END_TEST

/* ---- load errors --------------------------------------------------------- */

struct bad_entry {
	const char *section;
	const char *value; /* as written in the file */
	const char *quoted; /* as the message quotes it */
	const char *why;
};

START_TEST(test_load_bad_entries)
{
	static const struct bad_entry cases[] = {
		{"Open", "var/lib", "var/lib", "is not an absolute path"},
		{"Write", "./x", "./x", "is not an absolute path"},
		{"Read", "~/x", "~/x", "is not an absolute path"},
		{"Readdir", "/a/../b", "/a/../b", "\"..\" component"},
		{"Mkdir", "/..", "/..", "\"..\" component"},
		{"Rmdir", "/a/..", "/a/..", "\"..\" component"},
		{"Create", "/a/./b", "/a/./b", "\".\" component"},
		{"Unlink", "/a/.", "/a/.", "\".\" component"},
		{"Rename", "/.", "/.", "\".\" component"},
		{"Setattr", "/a\\tb", "/a\\tb", "control character"},
		{"Setxattr", "/a\\nb", "/a\\nb", "control character"},
		{"Mount", "/ok;rel", "rel", "is not an absolute path"},
		{"Kill", "/a\\qb", "/a\\\\qb", "bad escape"},
		{"Udsconnect", "/a/\"q\"", "/a/\\\"q\\\"", NULL}, /* valid: quotes are bytes */
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		const struct bad_entry *c = &cases[i];
		g_autofree char *text = g_strdup_printf("[Open]\nPath=/fine\n[%s]\nPath=%s\n",
							c->section, c->value);
		g_autofree char *msg = NULL;

		if (!c->why) {
			g_autoptr(qtfs_wl) wl = load(text);

			ck_assert(qtfs_wl_check(wl, QTFS_WL_UDSCONNECT, "/a/\"q\"/x"));
			continue;
		}
		msg = load_fails(text);
		ck_msg_names(msg, c->section, "Path", c->quoted);
		ck_assert_msg(strstr(msg, c->why), "no \"%s\" in: %s", c->why, msg);
	}
}
END_TEST

START_TEST(test_load_example_message)
{
	g_autofree char *msg = load_fails("[Open]\nPath=var/lib\n");

	ck_assert_str_eq(msg, NAME ": [Open] Path: \"var/lib\" is not an absolute path");
}
END_TEST

START_TEST(test_load_too_long)
{
	g_autoptr(GString) entry = g_string_new("/");
	g_autofree char *text = NULL;
	g_autofree char *msg = NULL;

	while (entry->len < PATH_MAX)
		g_string_append_c(entry, 'x');
	text = g_strdup_printf("[Create]\nPath=%s\n", entry->str);
	msg = load_fails(text);
	/* The value is quoted cut short so the line stays readable. */
	ck_msg_names(msg, "Create", "Path", NULL);
	ck_assert_msg(strstr(msg, "\"/xxxxxxxx"), "value not quoted: %s", msg);
	ck_assert_msg(strstr(msg, "...\""), "value not marked as cut: %s", msg);
	ck_assert_msg(strstr(msg, "too long"), "no reason: %s", msg);
	ck_assert_uint_lt(strlen(msg), 300);
}
END_TEST

START_TEST(test_load_too_many)
{
	g_autoptr(GString) text = g_string_new("[Unlink]\nPath=");
	g_autofree char *msg = NULL;

	for (int i = 0; i <= QTFS_WL_MAX_ENTRIES; i++)
		g_string_append_printf(text, "/e%d;", i);
	msg = load_fails(text->str);
	ck_msg_names(msg, "Unlink", "Path", NULL);
	ck_assert_msg(strstr(msg, "65 entries"), "count not given: %s", msg);
	ck_assert_msg(strstr(msg, "64"), "limit not given: %s", msg);
}
END_TEST

START_TEST(test_load_unknown_section)
{
	g_autofree char *msg = load_fails("[Open]\nPath=/a\n[Chmod]\nPath=/b\n");
	g_autofree char *msg2 = load_fails("[open]\nPath=/a\n");

	ck_msg_names(msg, "Chmod", NULL, NULL);
	ck_assert_msg(strstr(msg, "unknown section"), "%s", msg);
	ck_assert_msg(strstr(msg, "Setxattr"), "known sections not listed: %s", msg);
	ck_msg_names(msg2, "open", NULL, NULL);
	ck_assert_msg(strstr(msg2, "[Open]"), "no case hint: %s", msg2);
}
END_TEST

START_TEST(test_load_unknown_key)
{
	static const char *const keys[] = {"Paths", "path", "Path[en]", "Exclude"};

	for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
		g_autofree char *text = g_strdup_printf("[Setattr]\nPath=/a\n%s=/b\n", keys[i]);
		g_autofree char *msg = load_fails(text);

		ck_msg_names(msg, "Setattr", keys[i], NULL);
		ck_assert_msg(strstr(msg, "unknown key"), "%s", msg);
	}
}
END_TEST

START_TEST(test_load_bad_syntax)
{
	static const char *const texts[] = {
		"Path=/a\n",		 /* no section */
		"[Open\nPath=/a\n",	 /* unterminated section */
		"[Open]\nnot a key\n",	 /* not key=value */
		"[Open]\nPath=/a\xff\n", /* not UTF-8 */
	};

	for (size_t i = 0; i < G_N_ELEMENTS(texts); i++) {
		g_autofree char *msg = load_fails(texts[i]);

		ck_assert_msg(g_str_has_prefix(msg, NAME ": "), "file not named: %s", msg);
	}
}
END_TEST

/* A NULL text is refused, not dereferenced. */
START_TEST(test_load_null_data)
{
	g_autofree char *msg = load_fails(NULL);

	ck_assert_msg(g_str_has_prefix(msg, NAME ": "), "%s", msg);
}
END_TEST

/* ---- loading from disk ------------------------------------------------- */

struct tmpfile {
	char *dir;
	char *path;
};

static void tmpfile_make(struct tmpfile *t, const char *contents, gssize len)
{
	g_autoptr(GError) err = NULL;

	t->dir = g_dir_make_tmp("test-whitelist-XXXXXX", &err);
	ck_assert_msg(t->dir, "mkdtemp: %s", err ? err->message : "");
	t->path = g_build_filename(t->dir, "whitelist", NULL);
	if (contents)
		ck_assert(g_file_set_contents(t->path, contents, len, NULL));
}

static void tmpfile_done(struct tmpfile *t)
{
	g_unlink(t->path);
	g_rmdir(t->dir);
	g_free(t->path);
	g_free(t->dir);
}

START_TEST(test_load_file)
{
	struct tmpfile t;
	g_autoptr(qtfs_wl) wl = NULL;
	g_autofree char *msg = NULL;

	tmpfile_make(&t, "[Open]\nPath=/var/lib/\n[Rmdir]\nPath=\n", -1);
	ck_assert_int_eq(qtfs_wl_load(t.path, &wl, &msg), 0);
	ck_assert_ptr_null(msg);
	ck_assert(qtfs_wl_check(wl, QTFS_WL_OPEN, "/var/lib/x"));
	ck_assert(!qtfs_wl_check(wl, QTFS_WL_OPEN, "/var/libx"));
	ck_assert(!qtfs_wl_check(wl, QTFS_WL_RMDIR, "/var/lib/x"));
	ck_assert(qtfs_wl_check(wl, QTFS_WL_WRITE, "/etc"));
	tmpfile_done(&t);
}
END_TEST

START_TEST(test_load_file_errors)
{
	struct tmpfile t;
	struct qtfs_wl *wl = NULL;
	char *msg = NULL;

	/* Missing */
	tmpfile_make(&t, NULL, 0);
	ck_assert_int_eq(qtfs_wl_load(t.path, &wl, &msg), -ENOENT);
	ck_assert_ptr_null(wl);
	ck_assert_msg(g_str_has_prefix(msg, t.path), "path not named: %s", msg);
	g_clear_pointer(&msg, g_free);

	/* A directory */
	ck_assert_int_eq(qtfs_wl_load(t.dir, &wl, &msg), -EINVAL);
	ck_assert_ptr_null(wl);
	ck_assert_msg(strstr(msg, "not a regular file"), "%s", msg);
	g_clear_pointer(&msg, g_free);

	/* A FIFO is refused at once, not waited on for a writer. */
	ck_assert_int_eq(mkfifo(t.path, 0600), 0);
	ck_assert_int_eq(qtfs_wl_load(t.path, &wl, &msg), -EINVAL);
	ck_assert_ptr_null(wl);
	ck_assert_msg(strstr(msg, "not a regular file"), "%s", msg);
	g_clear_pointer(&msg, g_free);
	ck_assert_int_eq(g_unlink(t.path), 0);

	/* Content errors name the path as the file. */
	ck_assert(g_file_set_contents(t.path, "[Open]\nPath=rel\n", -1, NULL));
	ck_assert_int_eq(qtfs_wl_load(t.path, &wl, &msg), -EINVAL);
	ck_assert_ptr_null(wl);
	ck_assert_msg(g_str_has_prefix(msg, t.path) && strstr(msg, "[Open] Path: \"rel\""), "%s",
		      msg);
	g_clear_pointer(&msg, g_free);

	/* A NUL byte would cut "/var/lib\0x" to "/var/lib" in GKeyFile. */
	ck_assert(g_file_set_contents(t.path, "[Open]\nPath=/var/lib\0x\n", 23, NULL));
	ck_assert_int_eq(qtfs_wl_load(t.path, &wl, &msg), -EINVAL);
	ck_assert_ptr_null(wl);
	ck_assert_msg(g_str_has_prefix(msg, t.path) && strstr(msg, "line 2") &&
			      strstr(msg, "NUL"),
		      "%s", msg);
	g_clear_pointer(&msg, g_free);

	tmpfile_done(&t);
}
END_TEST

START_TEST(test_load_file_too_big)
{
	struct tmpfile t;
	struct qtfs_wl *wl = NULL;
	g_autofree char *msg = NULL;
	size_t size = QTFS_WL_MAX_FILE_SIZE + 1;
	g_autofree char *big = g_malloc(size);

	/* Valid content throughout: only the size is wrong. */
	memset(big, '#', size);
	big[0] = '\n';
	tmpfile_make(&t, big, (gssize)size);
	ck_assert_int_eq(qtfs_wl_load(t.path, &wl, &msg), -EFBIG);
	ck_assert_ptr_null(wl);
	ck_assert_msg(g_str_has_prefix(msg, t.path), "%s", msg);
	tmpfile_done(&t);
}
END_TEST

START_TEST(test_load_file_unreadable)
{
	struct tmpfile t;
	struct qtfs_wl *wl = NULL;
	g_autofree char *msg = NULL;

	if (geteuid() == 0)
		return; /* root reads mode-000 files; nothing to test */
	tmpfile_make(&t, "[Open]\nPath=/\n", -1);
	ck_assert_int_eq(g_chmod(t.path, 0), 0);
	ck_assert_int_eq(qtfs_wl_load(t.path, &wl, &msg), -EACCES);
	ck_assert_ptr_null(wl);
	ck_assert_msg(g_str_has_prefix(msg, t.path), "%s", msg);
	tmpfile_done(&t);
}
END_TEST

/* ---- checking ------------------------------------------------------------ */

START_TEST(test_check_boundaries)
{
	g_autoptr(qtfs_wl) wl = load("[Open]\nPath=/var/lib\n");
	static const char *const allowed[] = {"/var/lib", "/var/lib/", "/var/lib/x", "/var/lib//x",
					      "/var/lib/x/y/z", "/var/lib/..x", "/var/lib/.x"};
	static const char *const denied[] = {"/var/libx", "/var/li", "/var", "/var/", "/",
					     "/var/lib2", "/var/lib.d", "/var/lib-x", "/VAR/LIB",
					     "/var//lib", "/x/var/lib"};

	for (size_t i = 0; i < G_N_ELEMENTS(allowed); i++)
		ck_assert_msg(qtfs_wl_check(wl, QTFS_WL_OPEN, allowed[i]), "%s", allowed[i]);
	for (size_t i = 0; i < G_N_ELEMENTS(denied); i++)
		ck_assert_msg(!qtfs_wl_check(wl, QTFS_WL_OPEN, denied[i]), "%s", denied[i]);
}
END_TEST

/*
 * Paths that are not plain absolute paths are denied by a restricted
 * section whatever it lists, and by an unrestricted one too once a
 * whitelist is loaded.
 */
START_TEST(test_check_hostile)
{
	g_autoptr(qtfs_wl) wl = load("[Open]\nPath=/var/lib\n[Read]\nPath=/\n");
	g_autoptr(GString) huge = g_string_new("/var/lib/");
	g_autoptr(GString) at_max = g_string_new("/var/lib/");
	static const char *const hostile[] = {
		"",
		"var/lib/x",
		"./var/lib",
		"..",
		"/..",
		"/var/lib/..",
		"/var/lib/../../etc/shadow",
		"/var/lib/x/../../../etc",
		"/var/lib/.",
		"/var/lib/./x",
		"/var/lib//..//x",
		"/a/../b",
		" /var/lib",
		"\xff/var/lib",
		"\n/var/lib",
	};
	static const enum qtfs_wl_op ops[] = {QTFS_WL_OPEN, QTFS_WL_READ, QTFS_WL_WRITE};

	while (huge->len < 64 * 1024)
		g_string_append(huge, "abcdefg/");
	while (at_max->len < PATH_MAX)
		g_string_append_c(at_max, 'm');

	for (size_t o = 0; o < G_N_ELEMENTS(ops); o++) {
		for (size_t i = 0; i < G_N_ELEMENTS(hostile); i++)
			ck_assert_msg(!qtfs_wl_check(wl, ops[o], hostile[i]), "%s allowed \"%s\"",
				      qtfs_wl_op_name(ops[o]), hostile[i]);
		ck_assert(!qtfs_wl_check(wl, ops[o], NULL));
		ck_assert(!qtfs_wl_check(wl, ops[o], huge->str));
		ck_assert(!qtfs_wl_check(wl, ops[o], at_max->str));
	}
	/* One byte shorter fits. */
	g_string_truncate(at_max, PATH_MAX - 1);
	ck_assert(qtfs_wl_check(wl, QTFS_WL_OPEN, at_max->str));

	/* Weird bytes that leave the subtree are denied... */
	ck_assert(!qtfs_wl_check(wl, QTFS_WL_OPEN, "/var/lib\xff"));
	ck_assert(!qtfs_wl_check(wl, QTFS_WL_OPEN, "/var/lib\n"));
	ck_assert(!qtfs_wl_check(wl, QTFS_WL_OPEN, "/var/lib\\x"));
	ck_assert(!qtfs_wl_check(wl, QTFS_WL_OPEN, "/var/li\0b/x"));
	ck_assert(!qtfs_wl_check(wl, QTFS_WL_OPEN, "/var/lib\x01/x"));
	/* ...and inside it they are just file names: Linux allows any byte but '/' and NUL. */
	ck_assert(qtfs_wl_check(wl, QTFS_WL_OPEN, "/var/lib/\xff\x01\n\x7f"));

	/* An unknown operation is denied; it restricts. */
	ck_assert(!qtfs_wl_check(wl, QTFS_WL_N_OPS, "/var/lib"));
	ck_assert(!qtfs_wl_check(wl, (enum qtfs_wl_op)-1, "/var/lib"));
	ck_assert(!qtfs_wl_check(wl, (enum qtfs_wl_op)1000, "/var/lib"));
	ck_assert(qtfs_wl_restricts(wl, QTFS_WL_N_OPS));
	ck_assert(qtfs_wl_restricts(wl, (enum qtfs_wl_op)-1));
}
END_TEST

/* ---- concurrency ------------------------------------------------------- */

struct worker {
	const struct qtfs_wl *wl;
	unsigned bad;
};

static gpointer check_worker(gpointer data)
{
	struct worker *w = data;

	for (int i = 0; i < 20000; i++) {
		w->bad += !qtfs_wl_check(w->wl, QTFS_WL_OPEN, "/srv/a/b");
		w->bad += qtfs_wl_check(w->wl, QTFS_WL_OPEN, "/srv2/a/b");
	}
	return NULL;
}

/* A loaded whitelist is read-only: concurrent checks need no lock. */
START_TEST(test_check_concurrent)
{
	g_autoptr(qtfs_wl) wl = load("[Open]\nPath=/srv;/opt\n");
	struct worker w[4];
	GThread *t[4];

	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){.wl = wl};
		t[i] = g_thread_new("check", check_worker, &w[i]);
	}
	for (int i = 0; i < 4; i++) {
		g_thread_join(t[i]);
		ck_assert_uint_eq(w[i].bad, 0);
	}
}
END_TEST

/* ---- random inputs ----------------------------------------------------- */

static guint32 test_seed(void)
{
	const char *s = g_getenv("WL_TEST_SEED");
	guint64 v = 0;

	if (s && g_ascii_string_to_unsigned(s, 10, 0, G_MAXUINT32, &v, NULL))
		return (guint32)v;
	return 20240611;
}

/* Bytes biased towards the ones that matter to paths. */
static char random_path_byte(GRand *r)
{
	static const char common[] = "//////....aab-l";

	if (g_rand_int_range(r, 0, 4) == 0)
		return (char)g_rand_int_range(r, 0, 256);
	return common[g_rand_int_range(r, 0, (gint32)sizeof(common) - 1)];
}

/* The entries of the fuzz whitelist, in their normal form. */
static const char *const fuzz_entries[] = {"/a", "/a/b", "/ab", "/l/a-b", "/.a", "/b/..a"};

/*
 * The reference: the rules as the documentation states them, written the
 * slow obvious way (split into components, compare prefixes).
 */
static bool reference_check(const char *path)
{
	g_auto(GStrv) parts = NULL;

	if (path[0] != '/' || strlen(path) >= PATH_MAX)
		return false;
	parts = g_strsplit(path, "/", -1);
	for (char **p = parts; *p; p++)
		if (strcmp(*p, ".") == 0 || strcmp(*p, "..") == 0)
			return false;
	for (size_t i = 0; i < G_N_ELEMENTS(fuzz_entries); i++) {
		const char *e = fuzz_entries[i];
		size_t n = strlen(e);

		if (strncmp(path, e, n) == 0 && (path[n] == '\0' || path[n] == '/'))
			return true;
	}
	return false;
}

START_TEST(test_fuzz_check)
{
	g_autoptr(qtfs_wl) wl = load("[Open]\nPath=/a;/a/b/;//ab;/l/a-b;/.a;/b/..a\n");
	guint32 seed = test_seed();
	GRand *r = g_rand_new_with_seed(seed);
	char buf[600];
	unsigned allowed = 0;

	for (int i = 0; i < 100000; i++) {
		size_t len = (size_t)g_rand_int_range(r, 0, (gint32)sizeof(buf));
		size_t start = 0;
		bool got;

		/* Start half of them inside an entry, so that "allowed" gets exercised. */
		if (g_rand_boolean(r)) {
			const char *e = fuzz_entries[g_rand_int_range(
				r, 0, (gint32)G_N_ELEMENTS(fuzz_entries))];

			start = MIN(strlen(e), len);
			memcpy(buf, e, start);
		}
		for (size_t j = start; j < len; j++)
			buf[j] = random_path_byte(r);
		buf[len] = '\0';
		got = qtfs_wl_check(wl, QTFS_WL_OPEN, buf);
		ck_assert_msg(got == reference_check(buf), "seed %u, iteration %d: \"%s\" -> %d",
			      seed, i, g_strescape(buf, NULL), got);
		/* An unrestricted op only adds the validity rules. */
		if (got)
			ck_assert(qtfs_wl_check(wl, QTFS_WL_WRITE, buf));
		allowed += got;
	}
	/* The loop tested something both ways. */
	ck_assert_uint_gt(allowed, 1000);
	ck_assert_uint_lt(allowed, 99000);

	/* Long ones: most are over PATH_MAX. */
	for (int i = 0; i < 200; i++) {
		size_t len = (size_t)g_rand_int_range(r, PATH_MAX - 8, 3 * PATH_MAX);
		g_autofree char *big = g_malloc(len + 1);

		for (size_t j = 0; j < len; j++)
			big[j] = random_path_byte(r);
		big[0] = '/';
		big[len] = '\0';
		ck_assert(qtfs_wl_check(wl, QTFS_WL_OPEN, big) == reference_check(big));
	}
	g_rand_free(r);
}
END_TEST

/* One random line of a would-be whitelist file. */
static void random_line(GRand *r, GString *s)
{
	static const char *const sections[] = {"Open", "Rmdir", "Udsconnect", "open", "Chmod", "",
					       "Op en", "Open]", "Kill"};
	static const char *const keys[] = {"Path", "Path", "Path", "path", "Path[de]", "X", ""};
	static const char *const pieces[] = {"/", "/a", "a", "..", ".", ";", ";;", " ", "\\;",
					     "\\", "\\s", "\\t", "\\x", "//", "é", "\xff", "=",
					     "#", "[", "]"};
	int kind = g_rand_int_range(r, 0, 10);

	if (kind == 0) {
		g_string_append_printf(s, "[%s]",
				       sections[g_rand_int_range(r, 0, G_N_ELEMENTS(sections))]);
	} else if (kind == 1) {
		int n = g_rand_int_range(r, 0, 40);

		/* Raw bytes, NUL excluded: the text is a C string. */
		for (int i = 0; i < n; i++)
			g_string_append_c(s, (char)g_rand_int_range(r, 1, 256));
	} else if (kind == 2) {
		g_string_append(s, "# comment");
	} else {
		int n = g_rand_int_range(r, 0, kind == 9 ? 200 : 12);

		g_string_append_printf(s, "%s=", keys[g_rand_int_range(r, 0, G_N_ELEMENTS(keys))]);
		for (int i = 0; i < n; i++)
			g_string_append(s, pieces[g_rand_int_range(r, 0, G_N_ELEMENTS(pieces))]);
	}
	g_string_append_c(s, '\n');
}

START_TEST(test_fuzz_load)
{
	guint32 seed = test_seed();
	GRand *r = g_rand_new_with_seed(seed);
	unsigned ok = 0;

	for (int i = 0; i < 2000; i++) {
		g_autoptr(GString) text = g_string_new(NULL);
		struct qtfs_wl *sentinel = (struct qtfs_wl *)&sentinel;
		struct qtfs_wl *wl = sentinel;
		g_autofree char *msg = NULL;
		int lines = g_rand_int_range(r, 0, 8);
		int rc;

		if (g_rand_int_range(r, 0, 3))
			g_string_append(text, "[Open]\n");
		for (int l = 0; l < lines; l++)
			random_line(r, text);
		rc = qtfs_wl_load_data(NAME, text->str, &wl, &msg);
		if (rc == 0) {
			ck_assert_ptr_nonnull(wl);
			ck_assert(wl != sentinel);
			ck_assert_ptr_null(msg);
			/* Whatever loaded still refuses what is never allowed. */
			for (int op = 0; op < QTFS_WL_N_OPS; op++) {
				ck_assert(!qtfs_wl_check(wl, (enum qtfs_wl_op)op, "/a/../b"));
				ck_assert(!qtfs_wl_check(wl, (enum qtfs_wl_op)op, "a"));
				qtfs_wl_check(wl, (enum qtfs_wl_op)op, "/a/b");
			}
			qtfs_wl_free(wl);
			ok++;
		} else {
			ck_assert_msg(rc == -EINVAL, "seed %u, text %d: rc %d", seed, i, rc);
			ck_assert_ptr_eq(wl, sentinel);
			ck_assert_ptr_nonnull(msg);
			ck_assert_msg(g_str_has_prefix(msg, NAME ": "), "%s", msg);
			ck_assert_msg(!strchr(msg, '\n') && !strchr(msg, '\r'),
				      "seed %u, text %d: not one line: %s", seed, i, msg);
			ck_assert_msg(g_utf8_validate(msg, -1, NULL), "not UTF-8: %s", msg);
		}
	}
	/* Both outcomes were reached often enough to mean something. */
	ck_assert_uint_gt(ok, 100);
	ck_assert_uint_lt(ok, 1900);
	g_rand_free(r);
}
END_TEST

/* ---- driver ------------------------------------------------------------ */

static Suite *whitelist_suite(void)
{
	Suite *s = suite_create("whitelist");
	TCase *good = tcase_create("load");
	TCase *bad = tcase_create("errors");
	TCase *file = tcase_create("file");
	TCase *check = tcase_create("check");
	TCase *fuzz = tcase_create("random");

	tcase_add_test(good, test_op_names);
	tcase_add_test(good, test_load_each_section);
	tcase_add_test(good, test_load_all_sections);
	tcase_add_test(good, test_load_multiple_entries);
	tcase_add_test(good, test_load_normalizes);
	tcase_add_test(good, test_load_covered_entries);
	tcase_add_test(good, test_load_root_entry);
	tcase_add_test(good, test_load_empty_section_denies);
	tcase_add_test(good, test_load_absent_section_allows);
	tcase_add_test(good, test_null_whitelist);
	tcase_add_test(good, test_load_escapes);
	tcase_add_test(good, test_load_limits_ok);
	suite_add_tcase(s, good);

	tcase_add_test(bad, test_load_bad_entries);
	tcase_add_test(bad, test_load_example_message);
	tcase_add_test(bad, test_load_too_long);
	tcase_add_test(bad, test_load_too_many);
	tcase_add_test(bad, test_load_unknown_section);
	tcase_add_test(bad, test_load_unknown_key);
	tcase_add_test(bad, test_load_bad_syntax);
	tcase_add_test(bad, test_load_null_data);
	suite_add_tcase(s, bad);

	tcase_add_test(file, test_load_file);
	tcase_add_test(file, test_load_file_errors);
	tcase_add_test(file, test_load_file_too_big);
	tcase_add_test(file, test_load_file_unreadable);
	suite_add_tcase(s, file);

	tcase_add_test(check, test_check_boundaries);
	tcase_add_test(check, test_check_hostile);
	tcase_add_test(check, test_check_concurrent);
	suite_add_tcase(s, check);

	tcase_add_test(fuzz, test_fuzz_check);
	tcase_add_test(fuzz, test_fuzz_load);
	suite_add_tcase(s, fuzz);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(whitelist_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
