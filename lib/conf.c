// SPDX-License-Identifier: Apache-2.0
/*
 * Typed access to GKeyFile configuration (see conf.h).  Values are parsed
 * with our own strict parsers rather than GKeyFile's, so "10x" is an error
 * and not 10, and so messages can quote the offending text.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "conf.h"

struct qt_conf {
	GKeyFile *kf;
	char *path;
};

static int conf_new(const char *path, struct qt_conf **out)
{
	struct qt_conf *c = g_new0(struct qt_conf, 1);

	c->kf = g_key_file_new();
	c->path = g_strdup(path);
	*out = c;
	return 0;
}

void qt_conf_free(struct qt_conf *c)
{
	if (!c)
		return;
	g_key_file_free(c->kf);
	g_free(c->path);
	g_free(c);
}

int qt_conf_load(const char *path, bool optional, struct qt_conf **out, char **msg)
{
	g_autoptr(qt_conf) c = NULL;
	g_autoptr(GError) err = NULL;

	conf_new(path, &c);
	if (!g_key_file_load_from_file(c->kf, path, G_KEY_FILE_NONE, &err)) {
		if (optional && g_error_matches(err, G_FILE_ERROR, G_FILE_ERROR_NOENT)) {
			*out = g_steal_pointer(&c);
			return 0;
		}
		*msg = g_strdup_printf("%s: %s", path, err->message);
		if (err->domain == G_FILE_ERROR && err->code == G_FILE_ERROR_NOENT)
			return -ENOENT;
		if (err->domain == G_FILE_ERROR && err->code == G_FILE_ERROR_ACCES)
			return -EACCES;
		return -EINVAL;
	}
	*out = g_steal_pointer(&c);
	return 0;
}

int qt_conf_load_data(const char *name, const char *data, struct qt_conf **out, char **msg)
{
	g_autoptr(qt_conf) c = NULL;
	g_autoptr(GError) err = NULL;

	conf_new(name, &c);
	if (!g_key_file_load_from_data(c->kf, data, (gsize)-1, G_KEY_FILE_NONE, &err)) {
		*msg = g_strdup_printf("%s: %s", name, err->message);
		return -EINVAL;
	}
	*out = g_steal_pointer(&c);
	return 0;
}

const char *qt_conf_path(const struct qt_conf *c)
{
	return c->path;
}

bool qt_conf_has(const struct qt_conf *c, const char *group, const char *key)
{
	return g_key_file_has_key(c->kf, group, key, NULL);
}

/* The raw value with surrounding whitespace removed, or NULL when absent. */
static char *conf_raw(const struct qt_conf *c, const char *group, const char *key)
{
	char *v = g_key_file_get_value(c->kf, group, key, NULL);

	return v ? g_strstrip(v) : NULL;
}

static int conf_bad(const struct qt_conf *c, const char *group, const char *key, char **msg,
		    const char *value, const char *what)
{
	*msg = g_strdup_printf("%s: [%s] %s: \"%s\" %s", c->path, group, key, value, what);
	return -EINVAL;
}

int qt_conf_get_string(const struct qt_conf *c, const char *group, const char *key,
		       const char *def, char **out, char **msg)
{
	g_autoptr(GError) err = NULL;
	char *v;

	if (!qt_conf_has(c, group, key)) {
		*out = g_strdup(def);
		return 0;
	}
	/* GKeyFile returns a string *and* sets the error on a bad escape: check the error. */
	v = g_key_file_get_string(c->kf, group, key, &err);
	if (err) {
		g_autofree char *raw = conf_raw(c, group, key);

		g_free(v);
		return conf_bad(c, group, key, msg, raw, "is not a valid string (bad escape sequence)");
	}
	*out = g_strstrip(v);
	return 0;
}

int qt_conf_get_bool(const struct qt_conf *c, const char *group, const char *key, bool def,
		     bool *out, char **msg)
{
	g_autofree char *v = conf_raw(c, group, key);
	static const char *const yes[] = {"true", "yes", "on", "1"};
	static const char *const no[] = {"false", "no", "off", "0"};

	if (!v) {
		*out = def;
		return 0;
	}
	for (size_t i = 0; i < G_N_ELEMENTS(yes); i++) {
		if (g_ascii_strcasecmp(v, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (g_ascii_strcasecmp(v, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return conf_bad(c, group, key, msg, v, "is not a boolean (true/false)");
}

int qt_parse_int(const char *s, int64_t min, int64_t max, int64_t *out)
{
	gint64 v;

	if (!s || !g_ascii_string_to_signed(s, 10, min, max, &v, NULL))
		return -EINVAL;
	*out = v;
	return 0;
}

int qt_conf_get_int(const struct qt_conf *c, const char *group, const char *key, int64_t def,
		    int64_t min, int64_t max, int64_t *out, char **msg)
{
	g_autofree char *v = conf_raw(c, group, key);
	g_autofree char *what = NULL;
	int64_t n;

	if (!v) {
		*out = def;
		return 0;
	}
	if (qt_parse_int(v, min, max, &n) < 0) {
		what = g_strdup_printf("is not an integer in [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]",
				       min, max);
		return conf_bad(c, group, key, msg, v, what);
	}
	*out = n;
	return 0;
}

int qt_conf_get_double(const struct qt_conf *c, const char *group, const char *key, double def,
		       double min, double max, double *out, char **msg)
{
	g_autofree char *v = conf_raw(c, group, key);
	g_autofree char *what = NULL;
	char *end = NULL;
	double d;

	if (!v) {
		*out = def;
		return 0;
	}
	errno = 0;
	d = g_ascii_strtod(v, &end);
	if (!*v || errno || *end || !isfinite(d) || d < min || d > max) {
		what = g_strdup_printf("is not a number in [%g, %g]", min, max);
		return conf_bad(c, group, key, msg, v, what);
	}
	*out = d;
	return 0;
}

/* Split "123suffix" into the number and the suffix; the number must be non-empty. */
static int split_number(const char *s, uint64_t *num, const char **suffix)
{
	const char *p = s;
	guint64 v;
	g_autofree char *digits = NULL;

	while (g_ascii_isdigit(*p))
		p++;
	if (p == s)
		return -EINVAL;
	digits = g_strndup(s, (gsize)(p - s));
	if (!g_ascii_string_to_unsigned(digits, 10, 0, G_MAXUINT64, &v, NULL))
		return -EINVAL;
	while (*p == ' ')
		p++;
	*num = v;
	*suffix = p;
	return 0;
}

int qt_parse_size(const char *s, uint64_t *out)
{
	static const struct {
		const char *suffix;
		uint64_t mult;
	} units[] = {
		{"", 1},	{"B", 1},	  {"K", 1ull << 10}, {"KB", 1ull << 10}, {"KiB", 1ull << 10},
		{"M", 1ull << 20}, {"MB", 1ull << 20}, {"MiB", 1ull << 20}, {"G", 1ull << 30}, {"GB", 1ull << 30},
		{"GiB", 1ull << 30},
	};
	const char *suffix;
	uint64_t n;

	if (!s || split_number(s, &n, &suffix) < 0)
		return -EINVAL;
	for (size_t i = 0; i < G_N_ELEMENTS(units); i++) {
		if (g_ascii_strcasecmp(suffix, units[i].suffix) == 0) {
			if (n > UINT64_MAX / units[i].mult)
				return -EINVAL;
			*out = n * units[i].mult;
			return 0;
		}
	}
	return -EINVAL;
}

int qt_parse_duration_ms(const char *s, uint64_t *out)
{
	static const struct {
		const char *suffix;
		uint64_t mult;
	} units[] = {
		{"", 1000}, {"s", 1000}, {"ms", 1}, {"m", 60000}, {"min", 60000}, {"h", 3600000},
		{"d", 86400000},
	};
	const char *suffix;
	uint64_t n;

	if (!s || split_number(s, &n, &suffix) < 0)
		return -EINVAL;
	for (size_t i = 0; i < G_N_ELEMENTS(units); i++) {
		if (strcmp(suffix, units[i].suffix) == 0) {
			if (n > UINT64_MAX / units[i].mult)
				return -EINVAL;
			*out = n * units[i].mult;
			return 0;
		}
	}
	return -EINVAL;
}

int qt_conf_get_size(const struct qt_conf *c, const char *group, const char *key, uint64_t def,
		     uint64_t max, uint64_t *out, char **msg)
{
	g_autofree char *v = conf_raw(c, group, key);
	g_autofree char *what = NULL;
	uint64_t n;

	if (!v) {
		*out = def;
		return 0;
	}
	if (qt_parse_size(v, &n) < 0)
		return conf_bad(c, group, key, msg, v, "is not a size (e.g. 4096, 64K, 4M, 1G)");
	if (n > max) {
		what = g_strdup_printf("exceeds the maximum of %" G_GUINT64_FORMAT " bytes", max);
		return conf_bad(c, group, key, msg, v, what);
	}
	*out = n;
	return 0;
}

int qt_conf_get_duration_ms(const struct qt_conf *c, const char *group, const char *key,
			    uint64_t def_ms, uint64_t *out, char **msg)
{
	g_autofree char *v = conf_raw(c, group, key);
	uint64_t n;

	if (!v) {
		*out = def_ms;
		return 0;
	}
	if (qt_parse_duration_ms(v, &n) < 0)
		return conf_bad(c, group, key, msg, v,
				"is not a duration (e.g. 30, 30s, 500ms, 5m, 1h, 7d)");
	*out = n;
	return 0;
}

int qt_conf_get_strv(const struct qt_conf *c, const char *group, const char *key, char ***out,
		     char **msg)
{
	g_autoptr(GError) err = NULL;
	g_auto(GStrv) v = NULL;
	GPtrArray *keep;

	if (!qt_conf_has(c, group, key)) {
		*out = g_new0(char *, 1);
		return 0;
	}
	v = g_key_file_get_string_list(c->kf, group, key, NULL, &err);
	if (!v) {
		/* An empty value is an empty list, not an error. */
		g_autofree char *raw = conf_raw(c, group, key);

		if (raw && !*raw) {
			*out = g_new0(char *, 1);
			return 0;
		}
		return conf_bad(c, group, key, msg, raw, "is not a valid list (bad escape sequence)");
	}
	keep = g_ptr_array_new();
	for (char **p = v; *p; p++) {
		g_strstrip(*p);
		if (**p)
			g_ptr_array_add(keep, g_strdup(*p));
	}
	g_ptr_array_add(keep, NULL);
	*out = (char **)g_ptr_array_free(keep, FALSE);
	return 0;
}

int qt_conf_get_uids(const struct qt_conf *c, const char *group, const char *key, GArray **out,
		     char **msg)
{
	g_auto(GStrv) v = NULL;
	g_autoptr(GArray) uids = g_array_new(FALSE, FALSE, sizeof(uint32_t));

	if (qt_conf_get_strv(c, group, key, &v, msg) < 0)
		return -EINVAL;
	for (char **p = v; *p; p++) {
		int64_t n;
		uint32_t u;

		/* (uid_t)-1 is "no uid" to the kernel's calls, never a peer's. */
		if (qt_parse_int(*p, 0, UINT32_MAX - 1, &n) < 0)
			return conf_bad(c, group, key, msg, *p, "is not a uid");
		u = (uint32_t)n;
		g_array_append_val(uids, u);
	}
	*out = g_steal_pointer(&uids);
	return 0;
}

int qt_conf_check_keys(const struct qt_conf *c, const char *group, const char *const *known,
		       char **msg)
{
	g_auto(GStrv) keys = g_key_file_get_keys(c->kf, group, NULL, NULL);

	for (char **k = keys; k && *k; k++) {
		bool ok = false;

		for (const char *const *n = known; *n; n++)
			ok = ok || strcmp(*k, *n) == 0;
		if (!ok) {
			*msg = g_strdup_printf("%s: [%s] %s: unknown key", c->path, group, *k);
			return -EINVAL;
		}
	}
	return 0;
}
