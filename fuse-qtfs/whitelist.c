// SPDX-License-Identifier: Apache-2.0
/*
 * The qtfs-server path whitelist (see whitelist.h, docs/qtfs-whitelist.md).
 * Loading turns the key file into, per operation, a sorted list of
 * normalized subtree roots with every root that another one already covers
 * dropped, so a check is at most 64 prefix comparisons and never allocates.
 * All the care goes into the two inputs nobody vets for us: the file, which
 * a user writes and which must fail loudly on anything it does not say
 * plainly, and the checked path, which comes off the network and must fail
 * closed on anything that is not a plain absolute path.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "whitelist.h"

#define WL_KEY "Path"
/* Longest piece of file text quoted in a message, so that messages stay one readable line. */
#define WL_QUOTE_MAX 96
#define WL_MESSAGE_MAX 256

/* The root of an allowed subtree: absolute, no "." or ".." or empty
 * components, no trailing slash (except "/" itself). */
struct wl_entry {
	char *path;
	size_t len;
};

struct wl_rule {
	bool present; /* the file has the section: the operation is restricted */
	size_t n;
	/* Sorted by strcmp; no entry lies below another.  n == 0 with present denies all. */
	struct wl_entry *entries;
};

struct qtfs_wl {
	struct wl_rule rules[QTFS_WL_N_OPS];
};

static const char *const op_names[QTFS_WL_N_OPS] = {
	[QTFS_WL_OPEN] = "Open",
	[QTFS_WL_WRITE] = "Write",
	[QTFS_WL_READ] = "Read",
	[QTFS_WL_READDIR] = "Readdir",
	[QTFS_WL_MKDIR] = "Mkdir",
	[QTFS_WL_RMDIR] = "Rmdir",
	[QTFS_WL_CREATE] = "Create",
	[QTFS_WL_UNLINK] = "Unlink",
	[QTFS_WL_RENAME] = "Rename",
	[QTFS_WL_SETATTR] = "Setattr",
	[QTFS_WL_SETXATTR] = "Setxattr",
	[QTFS_WL_MOUNT] = "Mount",
	[QTFS_WL_KILL] = "Kill",
	[QTFS_WL_UDSCONNECT] = "Udsconnect",
};

const char *qtfs_wl_op_name(enum qtfs_wl_op op)
{
	if ((unsigned)op >= QTFS_WL_N_OPS)
		return "unknown";
	return op_names[op];
}

void qtfs_wl_free(struct qtfs_wl *wl)
{
	if (!wl)
		return;
	for (size_t i = 0; i < QTFS_WL_N_OPS; i++) {
		for (size_t j = 0; j < wl->rules[i].n; j++)
			g_free(wl->rules[i].entries[j].path);
		g_free(wl->rules[i].entries);
	}
	g_free(wl);
}

/* ---- messages ----------------------------------------------------------- */

/*
 * Text taken from the file, made fit to quote: cut to WL_QUOTE_MAX bytes,
 * control characters, quotes and backslashes escaped C-style, UTF-8 kept
 * readable and invalid UTF-8 replaced.
 */
static char *wl_escape(const char *s)
{
	char keep[129];
	g_autofree char *cut = g_strndup(s, WL_QUOTE_MAX);
	g_autofree char *esc = NULL;
	g_autofree char *valid = NULL;

	for (size_t i = 0; i < 128; i++)
		keep[i] = (char)(0x80 + i);
	keep[128] = '\0';
	esc = g_strescape(cut, keep);
	valid = g_utf8_make_valid(esc, -1);
	if (strlen(s) > WL_QUOTE_MAX)
		return g_strconcat(valid, "...", NULL);
	return g_steal_pointer(&valid);
}

/* A GLib message that may quote a line of the file: one line, valid UTF-8, bounded. */
static char *wl_oneline(const char *s)
{
	g_autofree char *cut = g_strndup(s, WL_MESSAGE_MAX);
	char *valid = g_utf8_make_valid(cut, -1);

	for (char *p = valid; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return valid;
}

static int G_GNUC_PRINTF(2, 3) wl_fail(char **msg, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	*msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int wl_bad_entry(char **msg, const char *name, enum qtfs_wl_op op, const char *value,
			const char *why)
{
	g_autofree char *v = wl_escape(value);

	return wl_fail(msg, "%s: [%s] " WL_KEY ": \"%s\" %s", name, op_names[op], v, why);
}

/* ---- loading ------------------------------------------------------------ */

static int wl_op_from_name(const char *name)
{
	for (int i = 0; i < QTFS_WL_N_OPS; i++)
		if (strcmp(name, op_names[i]) == 0)
			return i;
	return -1;
}

static int wl_unknown_section(char **msg, const char *name, const char *group)
{
	g_autofree char *g = wl_escape(group);
	g_autoptr(GString) known = g_string_new(NULL);

	/* Key-file names are case-sensitive; say so when that is the mistake. */
	for (int i = 0; i < QTFS_WL_N_OPS; i++)
		if (g_ascii_strcasecmp(group, op_names[i]) == 0)
			return wl_fail(msg, "%s: [%s]: unknown section (names are case-sensitive: [%s])",
				       name, g, op_names[i]);
	for (int i = 0; i < QTFS_WL_N_OPS; i++)
		g_string_append_printf(known, "%s%s", i ? ", " : "", op_names[i]);
	return wl_fail(msg, "%s: [%s]: unknown section (known: %s)", name, g, known->str);
}

/*
 * Bring an entry (whitespace already stripped) to its normal form in *@out,
 * or return why it is invalid.  Redundant slashes are harmless and dropped;
 * "." and ".." are refused rather than resolved, because an entry that does
 * not say plainly which subtree it opens is more likely a mistake than intent.
 */
static const char *wl_normalize(const char *raw, char **out)
{
	g_autoptr(GString) norm = NULL;
	const char *p = raw;

	if (raw[0] != '/')
		return "is not an absolute path";
	if (strlen(raw) >= PATH_MAX)
		return "is too long (PATH_MAX is " G_STRINGIFY(PATH_MAX) " bytes)";
	for (const char *c = raw; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return "contains a control character";

	norm = g_string_sized_new(strlen(raw));
	while (*p) {
		size_t n;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (n == 0)
			break;
		if (n == 1 && p[0] == '.')
			return "has a \".\" component";
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return "has a \"..\" component";
		g_string_append_c(norm, '/');
		g_string_append_len(norm, p, (gssize)n);
		p += n;
	}
	if (norm->len == 0)
		g_string_append_c(norm, '/');
	*out = g_string_free(g_steal_pointer(&norm), FALSE);
	return NULL;
}

/* Does @e cover @path (@len bytes, absolute)?  Only on a component boundary. */
static bool wl_covers(const struct wl_entry *e, const char *path, size_t len)
{
	if (e->len == 1)
		return true; /* "/" */
	return len >= e->len && memcmp(path, e->path, e->len) == 0 &&
	       (len == e->len || path[e->len] == '/');
}

static int wl_cmp_str(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Sort @paths and keep only those no other one covers.  A covering entry is a
 * proper prefix of what it covers and so sorts first: comparing each path with
 * the entries kept so far is enough.
 */
static void wl_rule_fill(struct wl_rule *rule, GPtrArray *paths)
{
	g_ptr_array_sort(paths, wl_cmp_str);
	rule->entries = g_new0(struct wl_entry, paths->len ? paths->len : 1);
	for (guint i = 0; i < paths->len; i++) {
		const char *p = g_ptr_array_index(paths, i);
		size_t len = strlen(p);
		bool covered = false;

		for (size_t j = 0; j < rule->n && !covered; j++)
			covered = wl_covers(&rule->entries[j], p, len);
		if (covered)
			continue;
		rule->entries[rule->n].path = g_strdup(p);
		rule->entries[rule->n].len = len;
		rule->n++;
	}
}

/*
 * Escapes a key-file list may hold.  Checked here rather than left to GLib,
 * whose parser sets its error twice on a value such as "\q...\" (a warning
 * on stderr, and the first reason lost).
 */
static bool wl_escapes_ok(const char *raw)
{
	for (const char *p = raw; *p; p++) {
		if (*p != '\\')
			continue;
		p++;
		if (*p == '\0' || !strchr("sntr\\;", *p))
			return false;
	}
	return true;
}

static int wl_parse_section(GKeyFile *kf, const char *name, enum qtfs_wl_op op,
			    struct wl_rule *rule, char **msg)
{
	const char *sec = op_names[op];
	g_auto(GStrv) keys = g_key_file_get_keys(kf, sec, NULL, NULL);
	g_auto(GStrv) items = NULL;
	g_autofree char *raw = NULL;
	g_autoptr(GPtrArray) paths = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GError) err = NULL;
	size_t count = 0;

	for (char **k = keys; k && *k; k++) {
		if (strcmp(*k, WL_KEY) != 0) {
			g_autofree char *key = wl_escape(*k);

			return wl_fail(msg, "%s: [%s] %s: unknown key (only " WL_KEY " is known)",
				       name, sec, key);
		}
	}
	/* A section without Path is an empty list: it restricts, and allows nothing. */
	rule->present = true;
	if (!g_key_file_has_key(kf, sec, WL_KEY, NULL))
		return 0;
	raw = g_key_file_get_value(kf, sec, WL_KEY, NULL);
	if (!raw || !wl_escapes_ok(raw))
		return wl_bad_entry(msg, name, op, raw ? raw : "", "has a bad escape sequence");
	items = g_key_file_get_string_list(kf, sec, WL_KEY, NULL, &err);
	if (err)
		return wl_bad_entry(msg, name, op, raw, "is not a valid list (not UTF-8)");
	if (!items)
		return 0; /* "Path=" */

	/* Empty items ("/a;;/b;") are separators a user typed twice, not entries. */
	for (char **it = items; *it; it++)
		count += *g_strstrip(*it) != '\0';
	if (count > QTFS_WL_MAX_ENTRIES)
		return wl_fail(msg, "%s: [%s] " WL_KEY ": %zu entries, at most %d are allowed", name,
			       sec, count, QTFS_WL_MAX_ENTRIES);

	for (char **it = items; *it; it++) {
		char *norm = NULL;
		const char *why;

		if (**it == '\0')
			continue;
		why = wl_normalize(*it, &norm);
		if (why)
			return wl_bad_entry(msg, name, op, *it, why);
		g_ptr_array_add(paths, norm);
	}
	wl_rule_fill(rule, paths);
	return 0;
}

static int wl_parse(const char *name, const char *data, size_t len, struct qtfs_wl **out,
		    char **msg)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	g_autoptr(GError) err = NULL;
	g_autoptr(qtfs_wl) wl = g_new0(struct qtfs_wl, 1);
	g_auto(GStrv) groups = NULL;

	/* Keep "Path[en]=" keys, which GKeyFile otherwise hides, so they are reported as unknown. */
	if (!g_key_file_load_from_data(kf, data, len, G_KEY_FILE_KEEP_TRANSLATIONS, &err)) {
		g_autofree char *why = wl_oneline(err->message);

		return wl_fail(msg, "%s: %s", name, why);
	}
	groups = g_key_file_get_groups(kf, NULL);
	for (char **g = groups; *g; g++) {
		int op = wl_op_from_name(*g);
		int r;

		if (op < 0)
			return wl_unknown_section(msg, name, *g);
		/* GKeyFile merges a repeated section; parse it once. */
		if (wl->rules[op].present)
			continue;
		r = wl_parse_section(kf, name, (enum qtfs_wl_op)op, &wl->rules[op], msg);
		if (r < 0)
			return r;
	}
	*out = g_steal_pointer(&wl);
	return 0;
}

int qtfs_wl_load_data(const char *name, const char *data, struct qtfs_wl **out, char **msg)
{
	if (!data)
		return wl_fail(msg, "%s: no whitelist text", name);
	return wl_parse(name, data, strlen(data), out, msg);
}

static int wl_too_big(char **msg, const char *path)
{
	*msg = g_strdup_printf("%s: larger than %u bytes; a whitelist never needs that much", path,
			       QTFS_WL_MAX_FILE_SIZE);
	return -EFBIG;
}

/* Read all of @path, which must be a regular file of at most QTFS_WL_MAX_FILE_SIZE bytes. */
static int wl_read_file(const char *path, char **data, size_t *len, char **msg)
{
	g_autofree char *buf = NULL;
	size_t cap, used = 0;
	struct stat st;
	int fd, r = 0;

	/* O_NONBLOCK: a FIFO put there by mistake is refused below rather than waited on. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		*msg = g_strdup_printf("%s: cannot open: %s", path, g_strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		*msg = g_strdup_printf("%s: cannot stat: %s", path, g_strerror(-r));
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode)) {
		r = wl_fail(msg, "%s: is not a regular file", path);
		goto cleanup;
	}
	if (st.st_size > QTFS_WL_MAX_FILE_SIZE) {
		r = wl_too_big(msg, path);
		goto cleanup;
	}

	/* The size is a hint only: the file may change while we read it. */
	cap = (size_t)st.st_size + 1;
	buf = g_malloc(cap);
	for (;;) {
		ssize_t n;

		if (used == cap) {
			if (cap > QTFS_WL_MAX_FILE_SIZE) {
				r = wl_too_big(msg, path);
				goto cleanup;
			}
			cap *= 2;
			buf = g_realloc(buf, cap);
		}
		n = read(fd, buf + used, cap - used);
		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			*msg = g_strdup_printf("%s: cannot read: %s", path, g_strerror(-r));
			goto cleanup;
		}
		used += (size_t)n;
	}
	if (used > QTFS_WL_MAX_FILE_SIZE) {
		r = wl_too_big(msg, path);
		goto cleanup;
	}
	*data = g_steal_pointer(&buf);
	*len = used;
cleanup:
	close(fd);
	return r;
}

int qtfs_wl_load(const char *path, struct qtfs_wl **out, char **msg)
{
	g_autofree char *data = NULL;
	const char *nul;
	size_t len = 0;
	int r;

	r = wl_read_file(path, &data, &len, msg);
	if (r < 0)
		return r;
	/* GKeyFile would silently cut a line at a NUL; a path cut short is a different path. */
	nul = memchr(data, '\0', len);
	if (nul) {
		size_t line = 1;

		for (const char *p = data; p < nul; p++)
			line += *p == '\n';
		return wl_fail(msg, "%s: line %zu: contains a NUL byte", path, line);
	}
	return wl_parse(path, data, len, out, msg);
}

/* ---- checking ----------------------------------------------------------- */

/*
 * Is @path a plain absolute path shorter than PATH_MAX without "." or ".."
 * components?  Doubled and trailing slashes pass: they do not change which
 * subtree a path names, and at worst make a covered path look uncovered.
 */
static bool wl_path_ok(const char *path, size_t *len)
{
	size_t n;

	if (!path || path[0] != '/')
		return false;
	n = strnlen(path, PATH_MAX);
	if (n >= PATH_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		const char *c = path + i + 1;

		if (path[i] != '/' || c[0] != '.')
			continue;
		if (c[1] == '\0' || c[1] == '/')
			return false;
		if (c[1] == '.' && (c[2] == '\0' || c[2] == '/'))
			return false;
	}
	*len = n;
	return true;
}

bool qtfs_wl_check(const struct qtfs_wl *wl, enum qtfs_wl_op op, const char *path)
{
	const struct wl_rule *rule;
	size_t len;

	if (!wl)
		return true;
	if ((unsigned)op >= QTFS_WL_N_OPS || !wl_path_ok(path, &len))
		return false;
	rule = &wl->rules[op];
	if (!rule->present)
		return true;
	for (size_t i = 0; i < rule->n; i++)
		if (wl_covers(&rule->entries[i], path, len))
			return true;
	return false;
}

bool qtfs_wl_restricts(const struct qtfs_wl *wl, enum qtfs_wl_op op)
{
	if (!wl)
		return false;
	if ((unsigned)op >= QTFS_WL_N_OPS)
		return true;
	return wl->rules[op].present;
}
