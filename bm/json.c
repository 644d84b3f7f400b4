// SPDX-License-Identifier: Apache-2.0
/*
 * JSON helpers (json.h): strict parsing of network input with a depth
 * limit, field getters whose errors name the field, id syntax and the
 * clock.  Kept apart from the programs so the store, the api, the handler
 * and the unit tests share one notion of what a valid request field is.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "json-keys.h"
#include "json.h"

int bm_json_errno(int tokener_error)
{
	switch ((enum json_tokener_error)tokener_error) {
	case json_tokener_success:
		return 0;
	case json_tokener_continue:
		return -EAGAIN;
	case json_tokener_error_depth:
		return -E2BIG;
	default:
		return -EBADMSG;
	}
}

/*
 * Whether a string of the (valid) document @buf has a \u0000 escape: json-c
 * keeps such a value whole but cuts a key at the NUL ("k\u0000x" becomes
 * "k"), and every C string the value reaches later is cut too.  Outside
 * strings a backslash is not valid JSON, so each one starts an escape.
 */
static bool has_nul_escape(const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (buf[i] != '\\')
			continue;
		if (i + 5 < len && buf[i + 1] == 'u' && memcmp(buf + i + 2, "0000", 4) == 0)
			return true;
		i++;
	}
	return false;
}

/* A number as JSON writes it: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool number_syntax(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		while (g_ascii_isdigit(*s))
			s++;
	else
		return false;
	if (*s == '.') {
		if (!g_ascii_isdigit(*++s))
			return false;
		while (g_ascii_isdigit(*s))
			s++;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!g_ascii_isdigit(*s))
			return false;
		while (g_ascii_isdigit(*s))
			s++;
	}
	return *s == '\0';
}

/*
 * One walk of a parsed document: its depth (arrays and objects on its
 * longest path), and in *@bad the text of its first number that is not a
 * finite JSON number (left alone when there is none).
 *
 * The depth: json-c counts a level only when a value goes into it, so an
 * empty array or object one level deeper than its limit passes (17 nested
 * arrays, the innermost empty): the limit is checked again on the result.
 *
 * The numbers: json-c's strict mode still takes NaN, Infinity and
 * -Infinity, and numbers such as "1.", "-.5" or "01.5"; it keeps a
 * double's text and prints it back as it came, so each would be stored (a
 * pool's template) and echoed to clients as something that is not JSON.
 * A number too large for a double (1e400) is infinite and would reach the
 * arithmetic of whoever reads it (the autoscaler's price of a pool).
 * Integers are printed from their value: only doubles are looked at.
 *
 * The recursion is bounded by json-c's depth limit.
 */
static unsigned json_walk(json_object *o, const char **bad)
{
	unsigned d = 0, e;

	switch (json_object_get_type(o)) {
	case json_type_double: {
		/* For a double, the text it was parsed from. */
		const char *text = json_object_get_string(o);

		if (!*bad && !(number_syntax(text) && isfinite(json_object_get_double(o))))
			*bad = text;
		return 0;
	}
	case json_type_object: {
		json_object_object_foreach(o, k, v)
		{
			(void)k;
			e = json_walk(v, bad);
			d = MAX(d, e);
		}
		return d + 1;
	}
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(o); i++) {
			e = json_walk(json_object_array_get_idx(o, i), bad);
			d = MAX(d, e);
		}
		return d + 1;
	default:
		return 0;
	}
}

int bm_json_parse(const char *buf, size_t len, json_object **out, char **msg)
{
	struct json_tokener *tok;
	json_object *obj;
	enum json_tokener_error jerr;
	const char *bad = NULL;
	char *key = NULL;
	size_t end;

	if (len > INT32_MAX) {
		*msg = g_strdup("body too large");
		return -E2BIG;
	}
	/* Bytes that are not UTF-8 would be stored, and echoed back as invalid JSON. */
	if (!g_utf8_validate_len(buf, len, NULL)) {
		*msg = g_strdup("bad JSON: not UTF-8 (or a NUL byte)");
		return -EBADMSG;
	}
	/* json-c counts the levels below the top one: 16 nested objects need 17. */
	tok = json_tokener_new_ex(BM_JSON_MAX_DEPTH + 1);
	if (!tok) {
		*msg = g_strdup("out of memory");
		return -ENOMEM;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	obj = json_tokener_parse_ex(tok, buf, (int)len);
	jerr = json_tokener_get_error(tok);
	if (jerr == json_tokener_continue) {
		/* A complete document needs a final flush ("42" is only known at the end). */
		obj = json_tokener_parse_ex(tok, "", 1);
		jerr = json_tokener_get_error(tok);
		end = len;
	} else {
		end = json_tokener_get_parse_end(tok);
	}
	if (jerr != json_tokener_success || !obj) {
		/* A document of just null parses, to nothing: not a body anyone takes. */
		*msg = jerr == json_tokener_success ? g_strdup("bad JSON: the document is null")
						    : g_strdup_printf("bad JSON: %s",
								      json_tokener_error_desc(jerr));
		json_tokener_free(tok);
		json_object_put(obj);
		return jerr == json_tokener_success ? -EBADMSG : bm_json_errno(jerr);
	}
	for (; end < len; end++) {
		if (!g_ascii_isspace(buf[end])) {
			*msg = g_strdup("bad JSON: trailing data after the document");
			json_tokener_free(tok);
			json_object_put(obj);
			return -EBADMSG;
		}
	}
	json_tokener_free(tok);
	if (json_walk(obj, &bad) > BM_JSON_MAX_DEPTH) {
		*msg = g_strdup_printf("bad JSON: %s", json_tokener_error_desc(json_tokener_error_depth));
		json_object_put(obj);
		return -E2BIG;
	}
	if (bad) {
		*msg = g_strdup_printf("bad JSON: %.32s is not a finite JSON number", bad);
		json_object_put(obj);
		return -EBADMSG;
	}
	if (has_nul_escape(buf, len)) {
		*msg = g_strdup("bad JSON: a string contains \\u0000");
		json_object_put(obj);
		return -EBADMSG;
	}
	/*
	 * json-c keeps the last value of a key given twice: a check of the
	 * body would see one value and a reader of the stored text, or a
	 * proxy in front, the other.  Refused, naming the key (cut to 64
	 * characters: it is the peer's text).
	 */
	if (qt_json_repeated_key(buf, len, G_MAXUINT, &key)) {
		g_autofree char *shown = g_utf8_strlen(key, -1) > 64 ? g_utf8_substring(key, 0, 64)
								     : g_strdup(key);

		*msg = g_strdup_printf("bad JSON: key \"%s\" is given twice", shown);
		g_free(key);
		json_object_put(obj);
		return -EBADMSG;
	}
	*out = obj;
	return 0;
}

static json_object *field(json_object *obj, const char *name)
{
	json_object *v = NULL;

	if (!obj || !json_object_is_type(obj, json_type_object))
		return NULL;
	if (!json_object_object_get_ex(obj, name, &v))
		return NULL;
	return v;
}

int bm_json_str(json_object *obj, const char *name, bool required, size_t max_len,
		const char **out, char **msg)
{
	json_object *v = field(obj, name);

	if (!v || json_object_is_type(v, json_type_null)) {
		if (!required)
			return -ENOENT;
		*msg = g_strdup_printf("missing field '%s'", name);
		return -EINVAL;
	}
	if (!json_object_is_type(v, json_type_string)) {
		*msg = g_strdup_printf("field '%s' must be a string", name);
		return -EINVAL;
	}
	if ((size_t)json_object_get_string_len(v) > max_len) {
		*msg = g_strdup_printf("field '%s' is longer than %zu bytes", name, max_len);
		return -EINVAL;
	}
	if (strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v)) {
		*msg = g_strdup_printf("field '%s' contains a NUL byte", name);
		return -EINVAL;
	}
	*out = json_object_get_string(v);
	return 0;
}

int bm_json_int(json_object *obj, const char *name, bool required, int64_t min, int64_t max,
		int64_t *out, char **msg)
{
	json_object *v = field(obj, name);
	int64_t n;

	if (!v || json_object_is_type(v, json_type_null)) {
		if (!required)
			return -ENOENT;
		*msg = g_strdup_printf("missing field '%s'", name);
		return -EINVAL;
	}
	if (!json_object_is_type(v, json_type_int)) {
		*msg = g_strdup_printf("field '%s' must be an integer", name);
		return -EINVAL;
	}
	errno = 0;
	n = json_object_get_int64(v);
	if (errno != 0 || n < min || n > max) {
		*msg = g_strdup_printf("field '%s' must be between %" G_GINT64_FORMAT
				       " and %" G_GINT64_FORMAT, name, min, max);
		return -EINVAL;
	}
	*out = n;
	return 0;
}

int bm_json_labels(json_object *obj, const char *name, bool required, json_object **out,
		   char **msg)
{
	json_object *v = field(obj, name);
	int n = 0;

	if (!v || json_object_is_type(v, json_type_null)) {
		if (!required)
			return -ENOENT;
		*msg = g_strdup_printf("missing field '%s'", name);
		return -EINVAL;
	}
	if (!json_object_is_type(v, json_type_object)) {
		*msg = g_strdup_printf("field '%s' must be an object of strings", name);
		return -EINVAL;
	}
	json_object_object_foreach(v, key, val)
	{
		if (++n > 64) {
			*msg = g_strdup_printf("field '%s' has more than 64 labels", name);
			return -EINVAL;
		}
		if (strlen(key) == 0 || strlen(key) > 63 || strchr(key, '=') || strchr(key, ',')) {
			*msg = g_strdup_printf("field '%s': bad label name", name);
			return -EINVAL;
		}
		if (!json_object_is_type(val, json_type_string) ||
		    json_object_get_string_len(val) > 255 ||
		    strlen(json_object_get_string(val)) != (size_t)json_object_get_string_len(val) ||
		    strchr(json_object_get_string(val), ',')) {
			*msg = g_strdup_printf("field '%s': label '%s' must be a string of at most 255 bytes without ','",
					       name, key);
			return -EINVAL;
		}
	}
	*out = v;
	return 0;
}

const char *bm_json_text(json_object *obj, const char *key)
{
	json_object *v = json_object_object_get(obj, key);

	return v ? json_object_get_string(v) : "";
}

bool bm_id_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > BM_ID_MAX || !g_ascii_isalnum(s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!g_ascii_isalnum(s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
			return false;
	return true;
}

int64_t bm_now_ms(void)
{
	return g_get_real_time() / 1000;
}

char *bm_json_dump(json_object *obj)
{
	return g_strdup(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
							       JSON_C_TO_STRING_NOSLASHESCAPE));
}
