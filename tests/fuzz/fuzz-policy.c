// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target for the host's two policies on what the DPU may touch:
 * qtfs-server's path whitelist (fuse-qtfs/whitelist.c: the file, and the
 * decision for each operation and path) and rexecd's environment policies
 * (rexecd_env_filter).  A wrong answer here is an escape, not a crash, so
 * each answer is compared with a model written from the documentation
 * (docs/qtfs-whitelist.md, docs/rexec.md), not from the code.
 *
 * Input layout: the first byte picks the part.
 *   even: the rest up to the first NUL is a whitelist file; after it come
 *         queries: a byte choosing the operation (any value: unknown ones
 *         must be denied), then a path up to the next NUL.
 *   odd:  the rest is split at NULs: the allow list (entries separated by
 *         ','; also the fixed environment), then the environment the client
 *         sent (entries separated by '\n'; those without '=' or starting
 *         with it are left out, as rexec's decoder refuses them).
 *
 * Checked, besides "no crash, no leak":
 *   - a whitelist that loads answers every query as the model does: a path
 *     that is not absolute, is PATH_MAX bytes or more, or has a "." or
 *     ".." component is denied for every operation; an operation without
 *     a section is allowed; one with a section is allowed exactly when an
 *     entry, its slashes collapsed, is "/", the path, or the path's prefix
 *     ending on a component boundary; an unknown operation is denied;
 *   - a whitelist that does not load says why in one line naming the file;
 *   - pass keeps the sent environment in order but for LD_* and glibc's
 *     unsafe variables (never an LD_* one); allowlist keeps, in order,
 *     exactly the entries whose name is listed (or matches a "PREFIX*"
 *     entry); fixed is the fixed list whatever was sent.
 *
 * Built two ways: with replay.c as a plain program that runs the corpus in
 * `make check`, and with clang -fsanitize=fuzzer by `make fuzz`.
 */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "rexecd.h"
#include "whitelist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NAME "fuzz-whitelist"

/* ---- the whitelist model ---- */

/* Slashes collapsed, none at the end but for "/" itself. */
static char *collapse(const char *e)
{
	GString *s = g_string_new(NULL);

	for (const char *p = e; *p; p++)
		if (*p != '/' || s->len == 0 || s->str[s->len - 1] != '/')
			g_string_append_c(s, *p);
	if (s->len > 1 && s->str[s->len - 1] == '/')
		g_string_truncate(s, s->len - 1);
	return g_string_free(s, FALSE);
}

static bool path_ok(const char *path)
{
	g_auto(GStrv) parts = NULL;

	if (path[0] != '/' || strlen(path) >= PATH_MAX)
		return false;
	parts = g_strsplit(path, "/", -1);
	for (char **p = parts; *p; p++)
		if (strcmp(*p, ".") == 0 || strcmp(*p, "..") == 0)
			return false;
	return true;
}

static bool model_allows(GKeyFile *kf, enum qtfs_wl_op op, const char *path)
{
	const char *sec = qtfs_wl_op_name(op);
	g_auto(GStrv) items = NULL;

	if ((unsigned)op >= QTFS_WL_N_OPS || !path_ok(path))
		return false;
	if (!g_key_file_has_group(kf, sec))
		return true;
	items = g_key_file_get_string_list(kf, sec, "Path", NULL, NULL);
	for (char **it = items; it && *it; it++) {
		g_autofree char *e = collapse(g_strstrip(*it));
		size_t n = strlen(e);

		if (n == 0)
			continue;
		if (strcmp(e, "/") == 0 || strcmp(e, path) == 0 ||
		    (strncmp(e, path, n) == 0 && path[n] == '/'))
			return true;
	}
	return false;
}

static void fuzz_whitelist(const char *text, const char *q, const char *end)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	struct qtfs_wl *wl = NULL;
	char *msg = NULL;

	if (qtfs_wl_load_data(NAME, text, &wl, &msg) < 0) {
		CHECK(wl == NULL && msg && g_str_has_prefix(msg, NAME ": "));
		CHECK(!strchr(msg, '\n'));
		g_free(msg);
		return;
	}
	CHECK(msg == NULL);
	/* What loaded, GLib's own parser reads the same way. */
	CHECK(g_key_file_load_from_data(kf, text, strlen(text), G_KEY_FILE_KEEP_TRANSLATIONS, NULL));
	while (q < end) {
		enum qtfs_wl_op op = (enum qtfs_wl_op)((uint8_t)*q % (QTFS_WL_N_OPS + 2));
		const char *path = q + 1;
		bool got, want;

		if (path >= end)
			break;
		got = qtfs_wl_check(wl, op, path);
		want = model_allows(kf, op, path);
		if (got != want) {
			fprintf(stderr, "fuzz-policy: %s \"%s\": the whitelist says %s, the model %s\n",
				qtfs_wl_op_name(op), path, got ? "yes" : "no", want ? "yes" : "no");
			abort();
		}
		CHECK(qtfs_wl_check(NULL, op, path));
		q = path + strlen(path) + 1;
	}
	qtfs_wl_free(wl);
}

/* ---- the environment ---- */

static bool name_listed(char *const *allow, const char *var)
{
	size_t n = (size_t)(strchr(var, '=') - var);

	for (; *allow; allow++) {
		size_t al = strlen(*allow);

		if ((al && (*allow)[al - 1] == '*' && n >= al - 1 && !strncmp(var, *allow, al - 1)) ||
		    (al == n && !strncmp(var, *allow, n)))
			return true;
	}
	return false;
}

/* Is @sub @v with some entries left out, in order?  Those left out are counted. */
static bool subsequence(char *const *sub, char *const *v, bool (*may_drop)(const char *))
{
	for (; *v; v++) {
		if (*sub && strcmp(*sub, *v) == 0)
			sub++;
		else if (!may_drop(*v))
			return false;
	}
	return *sub == NULL;
}

static bool any(const char *var)
{
	(void)var;
	return true;
}

static void fuzz_env(const char *p, const char *end)
{
	const char *sep = memchr(p, '\0', (size_t)(end - p));
	g_autofree char *allow_s = g_strndup(p, sep ? (size_t)(sep - p) : (size_t)(end - p));
	g_autofree char *sent_s = sep ? g_strndup(sep + 1, (size_t)(end - sep - 1)) : g_strdup("");
	g_auto(GStrv) allow = g_strsplit(allow_s, ",", -1);
	g_auto(GStrv) lines = g_strsplit(sent_s, "\n", -1);
	g_autoptr(GPtrArray) sent = g_ptr_array_new();
	g_auto(GStrv) pass = NULL, listed = NULL, fixed = NULL;

	for (char **l = lines; *l; l++)
		if (**l != '=' && strchr(*l, '='))
			g_ptr_array_add(sent, *l);
	g_ptr_array_add(sent, NULL);

	pass = rexecd_env_filter(REXECD_ENV_PASS, allow, allow, (char *const *)sent->pdata);
	CHECK(subsequence(pass, (char *const *)sent->pdata, any));
	for (char **e = pass; *e; e++)
		CHECK(!g_str_has_prefix(*e, "LD_"));

	listed = rexecd_env_filter(REXECD_ENV_ALLOWLIST, allow, allow, (char *const *)sent->pdata);
	CHECK(subsequence(listed, (char *const *)sent->pdata, any));
	{
		/* Exactly the listed ones: walk both again, the model deciding. */
		char **l = listed;

		for (char **s = (char **)sent->pdata; *s; s++) {
			if (name_listed(allow, *s)) {
				CHECK(*l && strcmp(*l, *s) == 0);
				l++;
			}
		}
		CHECK(*l == NULL);
	}

	fixed = rexecd_env_filter(REXECD_ENV_FIXED, allow, allow, (char *const *)sent->pdata);
	CHECK(g_strv_equal((const char *const *)fixed, (const char *const *)allow));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autofree char *buf = NULL;
	const char *end, *text_end;

	if (size < 1)
		return 0;
	/* A copy with a NUL after it, so that every field ends. */
	buf = g_malloc(size + 1);
	memcpy(buf, data, size);
	buf[size] = '\0';
	end = buf + size;
	if (data[0] & 1) {
		fuzz_env(buf + 1, end);
		return 0;
	}
	text_end = buf + 1 + strlen(buf + 1);
	fuzz_whitelist(buf + 1, text_end + 1, end);
	return 0;
}
