// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target for what BareMetalManager reads from a peer over HTTP: the
 * JSON parser and its limits, the field getters and the id syntax
 * (bm/json.c), the checks of bm-api's request bodies (bm/request.c) and
 * what the store makes of a body that passed them (bm/store.c), and the
 * autoscaler's bare-metal provider reading bm-api's answers
 * (autoscale/provider-yusur.c), and the handler API as bm-handler reads
 * the controller's requests and bm-controller the handler's answers
 * (bm/handler-proto.c).
 *
 * Input layout: the first byte chooses the part, (byte - '0') mod 7, so
 * seeds start with a digit; the rest is what that part reads:
 *   0  json      one document for bm_json_parse()
 *   1  getters   one document; bm_json_str/int/labels() on each of its
 *                fields and one it lacks, with several bounds, and
 *                bm_id_valid() on every string and key
 *   2  request   one request body through every bm_req_*() check
 *   3  store     one request body on a fresh database: enrolled
 *                (bm_machine_enroll), created as a pool when bm_req_pool()
 *                passes it, and as an instance when bm_req_instance() does
 *   4  provider  the body of GET /v1/pools, optionally a NUL byte and the
 *                body of GET /v1/instances (as_yusur_provider_update)
 *   5  handler   METHOD '\n' PATH '\n' BODY: a request to bm-handler (its
 *                body, route, the fields its action takes, PUT /v1/fake,
 *                the exec driver's request), BODY also as the exec
 *                driver's command's output
 *   6  answer    STATUS '\n' BODY: a handler's answer to bm-controller
 *
 * Besides "no crash, no leak" (the sanitizers'), each part checks
 * properties and aborts when one fails:
 *  - a document that is JSON (RFC 8259, checked by an independent
 *    recognizer below) within the documented limits (at most
 *    BM_JSON_MAX_DEPTH nested arrays or objects, no \u0000, numbers that
 *    are finite doubles, no key given twice in an object) is accepted,
 *    but for a bare null (no object to hand back); a deeper one is refused
 *    with -E2BIG; one refused for a repeated key has one (the text has
 *    more members than json-c's tree of it); a refusal has a message and
 *    leaves *out alone;
 *  - what was accepted (json-c's leniencies included: an integer's leading
 *    zeros, raw control characters in a string) has valid UTF-8 strings
 *    without NUL, finite numbers and the depth the recognizer measured,
 *    re-serialises (bm_json_dump) to JSON that parses to an equal object
 *    and dumps to the same text, and still parses when wrapped in arrays
 *    up to the depth limit, one more giving -E2BIG;
 *  - a getter that succeeds returns a value within its bounds and length
 *    (and the field's own value), one that fails sets a message naming the
 *    field, -ENOENT only for an optional field that is absent; a field
 *    within the bounds is always taken;
 *  - bm_id_valid() agrees with the syntax docs/bm.md states;
 *  - each bm_req_*() check passes exactly the bodies that meet the rules
 *    of docs/bm.md, hands back the body's own values, and names a field of
 *    its request when it refuses;
 *  - the store takes what the checks passed: the machine, pool or instance
 *    read back has the fields of the request and serialises to JSON (the
 *    api's answer), a handler URL it enrolled can be called (a path
 *    appended stays a path), the ids it derives for the instance's disk
 *    and NICs are ids the handler accepts, and the lifecycle's invariants
 *    hold (bm_store_check);
 *  - the provider's node groups have distinct ids and 0 <= min <= max, a
 *    price that is finite and positive when there is one, a template node
 *    labelled with its pool, and instances whose providerIDs are distinct,
 *    parse back to the group and lead back to it; an answer listing an
 *    instance id or a pool (of a name that is an id) twice is refused;
 *  - bm-handler takes as a body exactly the JSON objects bm_json_parse()
 *    takes (or nothing); a route it takes spells its path back
 *    ([/h/HOST]/v1/RES[/ID], HOST and ID ids), with a method and an id
 *    that fit the action (power's from the body's state), and a refused
 *    one is a 400 only for a bad host or power state; the fake driver's
 *    fields are the body's, volume_create refused exactly without an
 *    integer size_gb; PUT /v1/fake takes delay_ms and boot_ms exactly
 *    within their limits, a fail rate within 0..1 and one fault per
 *    action; the exec driver's request keeps the body's fields but for
 *    the handler's action, host and id; the exec output is the JSON its
 *    text is, and its error the output's "error";
 *  - bm-controller maps a handler's status as bm_http_status_errno()
 *    does, with the answer's message (or "no message") in its error, and
 *    reads "booted" as json-c reads a boolean;
 *  - every refusal leaves the outputs alone and says why.
 *
 * Built two ways: with replay.c as a plain program that runs the corpus in
 * `make check`, and with clang -fsanitize=fuzzer by `make fuzz`.
 */
#include "config.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "handler-proto.h"
#include "httpd.h"
#include "json.h"
#include "provider-yusur.h"
#include "request.h"
#include "store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- an independent JSON recognizer (RFC 8259) ---- */

/* Deeper than this the recognizer gives up (and claims nothing). */
#define REF_MAX_DEPTH 64

struct ref {
	const char *p, *end;
	unsigned depth, max_depth;
	bool nul; /* a string has \u0000 */
	bool nonfinite; /* a number is no finite double */
	bool top_null; /* the text is null */
	bool gave_up;
	unsigned members; /* of every object, a key given twice counted twice */
};

static bool ref_more(const struct ref *r)
{
	return r->p < r->end;
}

static void ref_ws(struct ref *r)
{
	while (ref_more(r) && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
		r->p++;
}

static bool ref_literal(struct ref *r, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(r->end - r->p) < n || memcmp(r->p, lit, n) != 0)
		return false;
	r->p += n;
	return true;
}

static bool ref_digits(struct ref *r)
{
	const char *start = r->p;

	while (ref_more(r) && g_ascii_isdigit(*r->p))
		r->p++;
	return r->p > start;
}

static bool ref_number(struct ref *r)
{
	const char *start = r->p;
	g_autofree char *text = NULL;

	if (ref_more(r) && *r->p == '-')
		r->p++;
	if (ref_more(r) && *r->p == '0')
		r->p++;
	else if (!ref_more(r) || *r->p < '1' || *r->p > '9' || !ref_digits(r))
		return false;
	if (ref_more(r) && *r->p == '.') {
		r->p++;
		if (!ref_digits(r))
			return false;
	}
	if (ref_more(r) && (*r->p == 'e' || *r->p == 'E')) {
		r->p++;
		if (ref_more(r) && (*r->p == '+' || *r->p == '-'))
			r->p++;
		if (!ref_digits(r))
			return false;
	}
	text = g_strndup(start, (gsize)(r->p - start));
	if (!isfinite(g_ascii_strtod(text, NULL)))
		r->nonfinite = true;
	return true;
}

static bool ref_string(struct ref *r)
{
	if (!ref_more(r) || *r->p != '"')
		return false;
	r->p++;
	while (ref_more(r)) {
		unsigned char c = (unsigned char)*r->p++;

		if (c == '"')
			return true;
		if (c < 0x20)
			return false;
		if (c != '\\')
			continue;
		if (!ref_more(r))
			return false;
		c = (unsigned char)*r->p++;
		if (c == 'u') {
			if (r->end - r->p < 4)
				return false;
			for (int i = 0; i < 4; i++)
				if (!g_ascii_isxdigit(r->p[i]))
					return false;
			r->nul |= memcmp(r->p, "0000", 4) == 0;
			r->p += 4;
		} else if (c == '\0' || !strchr("\"\\/bfnrt", c)) {
			return false;
		}
	}
	return false;
}

static bool ref_value(struct ref *r)
{
	char close;

	ref_ws(r);
	if (!ref_more(r))
		return false;
	switch (*r->p) {
	case '"':
		return ref_string(r);
	case 't':
		return ref_literal(r, "true");
	case 'f':
		return ref_literal(r, "false");
	case 'n':
		return ref_literal(r, "null");
	case '[':
	case '{':
		break;
	default:
		return ref_number(r);
	}
	close = *r->p == '{' ? '}' : ']';
	r->p++;
	r->depth++;
	r->max_depth = MAX(r->max_depth, r->depth);
	if (r->depth > REF_MAX_DEPTH) {
		r->gave_up = true;
		return false;
	}
	ref_ws(r);
	if (ref_more(r) && *r->p == close) {
		r->p++;
		r->depth--;
		return true;
	}
	for (;;) {
		if (close == '}') {
			ref_ws(r);
			if (!ref_string(r))
				return false;
			r->members++;
			ref_ws(r);
			if (!ref_more(r) || *r->p++ != ':')
				return false;
		}
		if (!ref_value(r))
			return false;
		ref_ws(r);
		if (!ref_more(r))
			return false;
		if (*r->p == ',') {
			r->p++;
			continue;
		}
		if (*r->p++ != close)
			return false;
		r->depth--;
		return true;
	}
}

/* Whether @buf is one JSON text; *r says what it holds (when it is). */
static bool ref_json(const char *buf, size_t len, struct ref *r)
{
	*r = (struct ref){.p = buf, .end = buf + len};
	ref_ws(r);
	r->top_null = ref_more(r) && *r->p == 'n';
	if (!g_utf8_validate_len(buf, len, NULL) || !ref_value(r))
		return false;
	ref_ws(r);
	return !ref_more(r);
}

/* docs/bm.md: [A-Za-z0-9][A-Za-z0-9._-]*, at most 64 bytes. */
static bool ref_id(const char *s)
{
	static const char alnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	static const char idchars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-";
	size_t n = strlen(s);

	return n >= 1 && n <= 64 && strchr(alnum, s[0]) && strspn(s, idchars) == n;
}

/* ---- helpers ---- */

/* The value of @name in @o, NULL when absent, JSON null or @o is no object. */
static json_object *member(json_object *o, const char *name)
{
	json_object *v = NULL;

	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, name, &v))
		return NULL;
	return v;
}

static bool is_str(json_object *v)
{
	return v && json_object_is_type(v, json_type_string);
}

/* A string without NUL of at most @max bytes. */
static bool str_ok(json_object *v, size_t max)
{
	return is_str(v) && (size_t)json_object_get_string_len(v) <= max &&
	       strlen(json_object_get_string(v)) == (size_t)json_object_get_string_len(v);
}

/* An integer within [min, max] (a uint64 above INT64_MAX is in no range here). */
static bool int_ok(json_object *v, int64_t min, int64_t max)
{
	int64_t n;

	if (!v || !json_object_is_type(v, json_type_int) ||
	    json_object_get_uint64(v) > (uint64_t)INT64_MAX)
		return false;
	n = json_object_get_int64(v);
	return n >= min && n <= max;
}

/* An int field, when int_ok() holds for it. */
static int64_t int_of(json_object *v)
{
	return json_object_get_int64(v);
}

/* docs/bm.md: at most 64, names up to 63 bytes without '=' or ',', values up to 255 without ','. */
static bool labels_ok(json_object *v)
{
	int n = 0;

	if (!v || !json_object_is_type(v, json_type_object))
		return false;
	json_object_object_foreach(v, k, val)
	{
		if (++n > 64 || !*k || strlen(k) > 63 || strpbrk(k, "=,") || !str_ok(val, 255) ||
		    strchr(json_object_get_string(val), ','))
			return false;
	}
	return true;
}

/* A printable ASCII image reference without spaces, at most 1024 bytes. */
static bool image_ok(json_object *v)
{
	const char *s;

	if (!str_ok(v, 1024) || !*(s = json_object_get_string(v)))
		return false;
	for (; *s; s++)
		if (*s <= ' ' || *s > '~')
			return false;
	return true;
}

static bool mac_ok(const char *s)
{
	if (strlen(s) != 17)
		return false;
	for (int i = 0; i < 17; i++)
		if (i % 3 == 2 ? s[i] != ':' : !strchr("0123456789abcdefABCDEF", s[i]))
			return false;
	return true;
}

static bool str_in(const char *s, const char *const *set)
{
	for (; *set; set++)
		if (strcmp(s, *set) == 0)
			return true;
	return false;
}

/* A refusal names a field: "... field 'F' ..." with F one of @fields. */
static bool names_field(const char *msg, const char *const *fields)
{
	for (; msg && *fields; fields++) {
		g_autofree char *quoted = g_strdup_printf("field '%s'", *fields);

		if (strstr(msg, quoted))
			return true;
	}
	return false;
}

static bool same_str(json_object *a, const char *b)
{
	return is_str(a) && strcmp(json_object_get_string(a), b) == 0;
}

/* @v equals @want, or @want is absent and @v equals @def. */
static bool equal_or(json_object *v, json_object *want, json_object *def)
{
	return json_object_equal(v, want ? want : def);
}

/* ---- part 0: the parser ---- */

/*
 * Checks what a parsed document holds and returns its depth (arrays and
 * objects on the longest path).
 */
static unsigned check_tree(json_object *o)
{
	unsigned d = 0, e;

	switch (json_object_get_type(o)) {
	case json_type_object: {
		json_object_object_foreach(o, k, v)
		{
			CHECK(g_utf8_validate(k, -1, NULL));
			e = check_tree(v);
			d = MAX(d, e);
		}
		return d + 1;
	}
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(o); i++) {
			e = check_tree(json_object_array_get_idx(o, i));
			d = MAX(d, e);
		}
		return d + 1;
	case json_type_string:
		CHECK(strlen(json_object_get_string(o)) == (size_t)json_object_get_string_len(o));
		CHECK(g_utf8_validate(json_object_get_string(o), json_object_get_string_len(o), NULL));
		return 0;
	case json_type_double:
		CHECK(isfinite(json_object_get_double(o)));
		return 0;
	default:
		return 0;
	}
}

/* Members of every object in the tree. */
static unsigned tree_members(json_object *o)
{
	unsigned n = 0;

	if (json_object_is_type(o, json_type_object)) {
		json_object_object_foreach(o, k, v)
		{
			(void)k;
			n += 1 + tree_members(v);
		}
	} else if (json_object_is_type(o, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(o); i++)
			n += tree_members(json_object_array_get_idx(o, i));
	}
	return n;
}

/* bm_json_parse() of @text wrapped in @n arrays. */
static int parse_wrapped(const char *text, unsigned n)
{
	g_autoptr(GString) s = g_string_new(NULL);
	g_autoptr(json_object) o = NULL;
	g_autofree char *msg = NULL;
	int rc;

	for (unsigned i = 0; i < n; i++)
		g_string_append_c(s, '[');
	g_string_append(s, text);
	for (unsigned i = 0; i < n; i++)
		g_string_append_c(s, ']');
	rc = bm_json_parse(s->str, s->len, &o, &msg);
	CHECK(rc == 0 ? o && !msg : !o && msg);
	return rc;
}

/*
 * Whether the JSON text @doc (ref_json() said so, *r its members) gives a
 * key twice in one object: json-c keeps one value per key, so its tree then
 * has fewer members than the text.
 */
static bool repeats_a_key(const char *doc, size_t len, const struct ref *r)
{
	struct json_tokener *tok = json_tokener_new_ex(REF_MAX_DEPTH + 1);
	json_object *o;
	bool dup;

	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, doc, (int)len);
	if (!o && json_tokener_get_error(tok) == json_tokener_continue)
		o = json_tokener_parse_ex(tok, "", 1);
	dup = o && r->members > tree_members(o);
	json_object_put(o);
	json_tokener_free(tok);
	return dup;
}

static void fuzz_json(const char *doc, size_t len)
{
	json_object *o = NULL, *again = NULL;
	g_autofree char *dump = NULL, *dump2 = NULL;
	char *msg = NULL;
	struct ref r, rd;
	bool valid = ref_json(doc, len, &r);
	bool allowed = valid && r.max_depth <= BM_JSON_MAX_DEPTH && !r.nul && !r.nonfinite;
	unsigned depth;
	int rc = bm_json_parse(doc, len, &o, &msg);

	if (rc < 0) {
		/* A key given twice is refused, also when its first value was too deep. */
		bool dup = strstr(msg, "\" is given twice") != NULL;

		CHECK(rc == -EBADMSG || rc == -E2BIG);
		CHECK(!o && msg && *msg);
		CHECK(!dup || rc == -EBADMSG);
		if (dup && valid)
			CHECK(repeats_a_key(doc, len, &r));
		/* A top-level null is the one JSON text refused within the limits (no object). */
		CHECK(!allowed || r.top_null || dup);
		if (valid && r.max_depth > BM_JSON_MAX_DEPTH)
			CHECK(rc == -E2BIG || dup);
		g_free(msg);
		return;
	}
	CHECK(o && !msg);
	depth = check_tree(o);
	CHECK(depth <= BM_JSON_MAX_DEPTH);
	/* No key given twice: the tree holds every member of the text. */
	if (valid)
		CHECK(r.members == tree_members(o) && allowed && r.max_depth == depth);

	dump = bm_json_dump(o);
	CHECK(ref_json(dump, strlen(dump), &rd));
	CHECK(!rd.nul && !rd.nonfinite && rd.max_depth == depth);
	CHECK(bm_json_parse(dump, strlen(dump), &again, &msg) == 0);
	CHECK(json_object_equal(o, again));
	dump2 = bm_json_dump(again);
	CHECK(strcmp(dump, dump2) == 0);
	CHECK(parse_wrapped(dump, BM_JSON_MAX_DEPTH - depth) == 0);
	CHECK(parse_wrapped(dump, BM_JSON_MAX_DEPTH - depth + 1) == -E2BIG);
	json_object_put(again);
	json_object_put(o);
}

/* ---- part 1: the getters and ids ---- */

#define SENTINEL "sentinel"

static void check_str(json_object *o, const char *name, bool required, size_t max)
{
	json_object *v = member(o, name);
	const char *fields[] = {name, NULL};
	const char *s = SENTINEL;
	char *msg = NULL;
	int rc = bm_json_str(o, name, required, max, &s, &msg);

	if (rc == 0) {
		CHECK(!msg && is_str(v) && s == json_object_get_string(v));
		CHECK(strlen(s) <= max && strlen(s) == (size_t)json_object_get_string_len(v));
	} else if (rc == -ENOENT) {
		CHECK(!required && !v && !msg && strcmp(s, SENTINEL) == 0);
	} else {
		CHECK(rc == -EINVAL && names_field(msg, fields) && strcmp(s, SENTINEL) == 0);
		CHECK(!str_ok(v, max));
		CHECK(v || required);
		g_free(msg);
	}
	if (str_ok(v, max))
		CHECK(rc == 0);
}

static void check_int(json_object *o, const char *name, bool required, int64_t min, int64_t max)
{
	json_object *v = member(o, name);
	const char *fields[] = {name, NULL};
	int64_t n = 42;
	char *msg = NULL;
	int rc = bm_json_int(o, name, required, min, max, &n, &msg);

	if (rc == 0) {
		CHECK(!msg && v && json_object_is_type(v, json_type_int));
		CHECK(n >= min && n <= max);
		CHECK(n == json_object_get_int64(v));
	} else if (rc == -ENOENT) {
		CHECK(!required && !v && !msg && n == 42);
	} else {
		CHECK(rc == -EINVAL && names_field(msg, fields) && n == 42);
		CHECK(!int_ok(v, min, max));
		CHECK(v || required);
		g_free(msg);
	}
	if (int_ok(v, min, max))
		CHECK(rc == 0);
}

static void check_labels(json_object *o, const char *name, bool required)
{
	json_object *v = member(o, name), *out = NULL;
	const char *fields[] = {name, NULL};
	char *msg = NULL;
	int rc = bm_json_labels(o, name, required, &out, &msg);

	if (rc == 0) {
		CHECK(!msg && out == v && labels_ok(v));
	} else if (rc == -ENOENT) {
		CHECK(!required && !v && !msg && !out);
	} else {
		CHECK(rc == -EINVAL && names_field(msg, fields) && !out);
		CHECK(!labels_ok(v));
		CHECK(v || required);
		g_free(msg);
	}
	if (labels_ok(v))
		CHECK(rc == 0);
}

static void check_ids(json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_object: {
		json_object_object_foreach(o, k, v)
		{
			CHECK(bm_id_valid(k) == ref_id(k));
			check_ids(v);
		}
		break;
	}
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(o); i++)
			check_ids(json_object_array_get_idx(o, i));
		break;
	case json_type_string:
		CHECK(bm_id_valid(json_object_get_string(o)) == ref_id(json_object_get_string(o)));
		break;
	default:
		break;
	}
}

static void fuzz_getters(const char *doc, size_t len)
{
	static const size_t limits[] = {0, 1, 16, BM_ID_MAX, 1024, SIZE_MAX};
	static const int64_t bounds[][2] = {
		{0, 0}, {1, 65536}, {0, 1 << 20}, {-5, 5}, {INT64_MIN, INT64_MAX},
	};
	g_autoptr(json_object) o = NULL;
	g_autoptr(GPtrArray) names = g_ptr_array_new();
	g_autofree char *raw = g_strndup(doc, len);
	g_autofree char *msg = NULL;

	/* Up to its first NUL, the input itself as an id. */
	CHECK(bm_id_valid(raw) == ref_id(raw));
	if (bm_json_parse(doc, len, &o, &msg) < 0)
		return;
	check_ids(o);
	if (json_object_is_type(o, json_type_object)) {
		json_object_object_foreach(o, k, v)
		{
			(void)v;
			g_ptr_array_add(names, k);
		}
	}
	g_ptr_array_add(names, (char *)"no such field");
	for (guint i = 0; i < names->len; i++) {
		const char *name = names->pdata[i];

		for (int req = 0; req <= 1; req++) {
			for (size_t k = 0; k < G_N_ELEMENTS(limits); k++)
				check_str(o, name, req, limits[k]);
			for (size_t k = 0; k < G_N_ELEMENTS(bounds); k++)
				check_int(o, name, req, bounds[k][0], bounds[k][1]);
			check_labels(o, name, req);
		}
	}
}

/* ---- part 2: the request bodies ---- */

static const char *const buses[] = {"virtio-blk", "nvme", NULL};

static void check_power(json_object *body)
{
	static const char *const fields[] = {"target", NULL};
	static const char *const targets[] = {"on", "off", "reboot", NULL};
	json_object *t = member(body, "target");
	bool want = str_ok(t, 16) && str_in(json_object_get_string(t), targets);
	const char *target = SENTINEL;
	char *msg = NULL;
	int rc = bm_req_power(body, &target, &msg);

	CHECK((rc == 0) == want);
	if (rc == 0) {
		CHECK(!msg && target == json_object_get_string(t));
	} else {
		CHECK(rc == -EINVAL && names_field(msg, fields) && strcmp(target, SENTINEL) == 0);
		g_free(msg);
	}
}

static void check_maintenance(json_object *body)
{
	static const char *const fields[] = {"reason", NULL};
	json_object *r = member(body, "reason");
	bool want = !r || str_ok(r, 1024);
	const char *reason = SENTINEL;
	char *msg = NULL;
	int rc = bm_req_maintenance(body, &reason, &msg);

	CHECK((rc == 0) == want);
	if (rc == 0) {
		CHECK(!msg && (r ? reason == json_object_get_string(r) : strcmp(reason, "") == 0));
	} else {
		CHECK(rc == -EINVAL && names_field(msg, fields) && strcmp(reason, SENTINEL) == 0);
		g_free(msg);
	}
}

static void check_disk(json_object *body)
{
	static const char *const fields[] = {"size_gb", "image", "bus", NULL};
	json_object *size = member(body, "size_gb"), *image = member(body, "image");
	json_object *bus = member(body, "bus");
	bool want = int_ok(size, 1, 65536) &&
		    (!image ||
		     (str_ok(image, 1024) && (!*json_object_get_string(image) || image_ok(image)))) &&
		    (!bus || (str_ok(bus, 16) && str_in(json_object_get_string(bus), buses)));
	const char *img = SENTINEL, *b = SENTINEL;
	int64_t n = 0;
	char *msg = NULL;
	int rc = bm_req_disk(body, &n, &img, &b, &msg);

	CHECK((rc == 0) == want);
	if (rc == 0) {
		CHECK(!msg && n == int_of(size));
		CHECK(image ? img == json_object_get_string(image) : strcmp(img, "") == 0);
		CHECK(bus ? b == json_object_get_string(bus) : b == NULL);
	} else {
		CHECK(rc == -EINVAL && names_field(msg, fields));
		CHECK(n == 0 && strcmp(img, SENTINEL) == 0 && strcmp(b, SENTINEL) == 0);
		g_free(msg);
	}
}

static void check_nic(json_object *body)
{
	static const char *const fields[] = {"network", "mac", NULL};
	json_object *net = member(body, "network"), *mac = member(body, "mac");
	bool want = str_ok(net, BM_ID_MAX) && ref_id(json_object_get_string(net)) &&
		    (!mac || (str_ok(mac, 17) && (!*json_object_get_string(mac) ||
						  mac_ok(json_object_get_string(mac)))));
	const char *n = SENTINEL, *m = SENTINEL;
	char *msg = NULL;
	int rc = bm_req_nic(body, &n, &m, &msg);

	CHECK((rc == 0) == want);
	if (rc == 0) {
		CHECK(!msg && n == json_object_get_string(net));
		CHECK(mac ? m == json_object_get_string(mac) : strcmp(m, "") == 0);
	} else {
		CHECK(rc == -EINVAL && names_field(msg, fields));
		CHECK(strcmp(n, SENTINEL) == 0 && strcmp(m, SENTINEL) == 0);
		g_free(msg);
	}
}

/* A Kubernetes quantity without a minus sign (docs/bm.md, a pool's template). */
static bool quantity_ok(json_object *v)
{
	static GRegex *re;

	/* \z, not $: $ also matches before a final newline or carriage return. */
	if (!re)
		re = g_regex_new("^\\+?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)"
				 "([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?\\z",
				 G_REGEX_OPTIMIZE, 0, NULL);
	if (json_object_is_type(v, json_type_int))
		return json_object_get_int64(v) >= 0;
	return str_ok(v, 64) && g_regex_match(re, json_object_get_string(v), 0, NULL);
}

/* docs/bm.md's rules for the numbers of a pool's template the autoscaler reads. */
static bool template_ok(json_object *t)
{
	static const char *const quantities[] = {"cpu", "memory", "pods", "gpu"};
	json_object *price = member(t, "price");

	for (size_t i = 0; i < G_N_ELEMENTS(quantities); i++)
		if (member(t, quantities[i]) && !quantity_ok(member(t, quantities[i])))
			return false;
	if ((member(t, "min_size") && !int_ok(member(t, "min_size"), 0, INT64_MAX)) ||
	    (member(t, "max_size") && !int_ok(member(t, "max_size"), 0, INT64_MAX)))
		return false;
	if (member(t, "min_size") && member(t, "max_size") &&
	    json_object_get_int64(member(t, "max_size")) < json_object_get_int64(member(t, "min_size")))
		return false;
	return !price || ((json_object_is_type(price, json_type_int) ||
			   json_object_is_type(price, json_type_double)) &&
			  json_object_get_double(price) >= 0);
}

/* docs/bm.md's rules for POST /v1/pools. */
static bool pool_ok(json_object *body)
{
	json_object *name = member(body, "name"), *match = member(body, "match");
	json_object *tmpl = member(body, "template");

	if (!str_ok(name, BM_ID_MAX) || !ref_id(json_object_get_string(name)))
		return false;
	if (match && (!json_object_is_type(match, json_type_object) ||
		      (member(match, "model") && !str_ok(member(match, "model"), 128)) ||
		      (member(match, "cpu") && !int_ok(member(match, "cpu"), 0, 1 << 20)) ||
		      (member(match, "labels") && !labels_ok(member(match, "labels")))))
		return false;
	return !tmpl || (json_object_is_type(tmpl, json_type_object) && template_ok(tmpl));
}

static void check_pool(json_object *body)
{
	static const char *const fields[] = {"name",	 "match",    "model",	 "cpu",	  "labels",
					     "template", "memory",   "pods",	 "gpu",	  "min_size",
					     "max_size", "price",    NULL};
	const char *name = SENTINEL;
	char *msg = NULL;
	int rc = bm_req_pool(body, &name, &msg);

	CHECK((rc == 0) == pool_ok(body));
	if (rc == 0) {
		json_object *tmpl = member(body, "template");
		struct as_node *node = NULL;

		CHECK(!msg && name == json_object_get_string(member(body, "name")));
		/* What the autoscaler makes of a template bm-api took has no negative capacity. */
		if (tmpl && as_yusur_template_node(name, tmpl, &node, &msg) == 0)
			CHECK(node->capacity.cpu >= 0 && node->capacity.mem >= 0 &&
			      node->capacity.pods >= 0 && node->capacity.gpu >= 0);
		as_node_free(node);
		g_clear_pointer(&msg, g_free);
	} else {
		CHECK(rc == -EINVAL && names_field(msg, fields) && strcmp(name, SENTINEL) == 0);
		g_free(msg);
	}
}

/* docs/bm.md's rules for POST /v1/instances. */
static bool instance_ok(json_object *body)
{
	json_object *bus = member(body, "disk_bus"), *id = member(body, "id");
	json_object *nets = member(body, "networks"), *ud = member(body, "user_data");

	if (!str_ok(member(body, "pool"), BM_ID_MAX) || !image_ok(member(body, "image")) ||
	    !int_ok(member(body, "disk_gb"), 1, 65536) || (ud && !str_ok(ud, 65536)) ||
	    (bus && !(str_ok(bus, 16) && str_in(json_object_get_string(bus), buses))) ||
	    (id && !(str_ok(id, BM_INSTANCE_ID_MAX) && ref_id(json_object_get_string(id)))))
		return false;
	if (!nets)
		return true;
	if (!json_object_is_type(nets, json_type_array) ||
	    json_object_array_length(nets) > BM_REQ_MAX_NETWORKS)
		return false;
	for (size_t i = 0; i < json_object_array_length(nets); i++) {
		json_object *n = json_object_array_get_idx(nets, i);

		if (!str_ok(n, BM_ID_MAX) || !ref_id(json_object_get_string(n)))
			return false;
	}
	return true;
}

static void check_instance(json_object *body)
{
	static const char *const fields[] = {"pool",	  "image", "disk_gb",  "user_data",
					     "disk_bus", "id",	   "networks", NULL};
	const char *pool = SENTINEL;
	char *msg = NULL;
	int rc = bm_req_instance(body, &pool, &msg);

	CHECK((rc == 0) == instance_ok(body));
	if (rc == 0) {
		CHECK(!msg && pool == json_object_get_string(member(body, "pool")));
	} else {
		CHECK(rc == -EINVAL && names_field(msg, fields) && strcmp(pool, SENTINEL) == 0);
		g_free(msg);
	}
}

static void fuzz_request(const char *doc, size_t len)
{
	g_autoptr(json_object) body = NULL;
	g_autofree char *msg = NULL;

	/* bm-api answers 400 to anything else before it looks at a field. */
	if (bm_json_parse(doc, len, &body, &msg) < 0 || !json_object_is_type(body, json_type_object))
		return;
	check_power(body);
	check_maintenance(body);
	check_disk(body);
	check_nic(body);
	check_pool(body);
	check_instance(body);
}

/* ---- part 3: the store ---- */

/* A directory of this process's own for the database, made on first use. */
static char *db_dir;
static const char *const db_files[] = {"bm.db", "bm.db-wal", "bm.db-shm"};

static void db_remove(void)
{
	for (size_t i = 0; i < G_N_ELEMENTS(db_files); i++) {
		g_autofree char *path = g_build_filename(db_dir, db_files[i], NULL);

		g_unlink(path);
	}
}

static void db_cleanup(void)
{
	db_remove();
	g_rmdir(db_dir);
	g_clear_pointer(&db_dir, g_free);
}

static struct bm_store *fresh_store(void)
{
	g_autofree char *path = NULL, *msg = NULL;
	struct bm_store *st = NULL;

	if (!db_dir) {
		db_dir = g_dir_make_tmp("fuzz-bm-XXXXXX", NULL);
		CHECK(db_dir);
		atexit(db_cleanup);
	}
	db_remove();
	path = g_build_filename(db_dir, db_files[0], NULL);
	CHECK(bm_store_open(path, &st, &msg) == 0);
	return st;
}

/*
 * The controller calls BASE + "/v1/..." (trailing '/' of BASE dropped): for
 * every handler URL enrolled that must still be an http(s) URL with a host
 * whose path ends in the handler's path, no query or fragment taking it;
 * the host, %-escapes decoded, an IP address or a name of DNS-like labels.
 */
static void check_handler_url(const char *base)
{
	g_autofree char *scheme = NULL, *host = NULL, *path = NULL, *query = NULL, *frag = NULL;
	g_autofree char *url = NULL;
	size_t n = strlen(base);

	while (n > 0 && base[n - 1] == '/')
		n--;
	url = g_strdup_printf("%.*s/v1/status", (int)n, base);
	CHECK(g_uri_split(url, G_URI_FLAGS_ENCODED | G_URI_FLAGS_PARSE_RELAXED, &scheme, NULL, &host,
			  NULL, &path, &query, &frag, NULL));
	CHECK(strcmp(scheme, "http") == 0 || strcmp(scheme, "https") == 0);
	CHECK(host && *host && !query && !frag && g_str_has_suffix(path, "/v1/status"));
	{
		g_autofree char *plain = g_uri_unescape_string(host, NULL);

		CHECK(plain && (g_hostname_is_ip_address(plain) ||
				(strlen(plain) <= 253 &&
				 g_regex_match_simple("^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
						      "(\\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*"
						      "\\.?\\z",
						      plain, 0, 0))));
	}
}

/* What bm-api would answer with @out (bm_http_json) is JSON. */
static void check_answer(json_object *out)
{
	g_autofree char *text = bm_json_dump(out);
	struct ref r;

	CHECK(ref_json(text, strlen(text), &r));
}

static void store_enroll(struct bm_store *st, json_object *body)
{
	static const char *const fields[] = {"id", "handler", "model", "cpu", "memory_mb", "gpus",
					     "labels", NULL};
	g_autoptr(json_object) out = NULL, again = NULL, empty = json_object_new_object();
	g_autoptr(json_object) zero = json_object_new_int64(0), blank = json_object_new_string("");
	char *msg = NULL;
	int rc = bm_machine_enroll(st, body, &out, &msg);

	if (rc < 0) {
		CHECK(rc == -EINVAL && names_field(msg, fields) && !out);
		g_free(msg);
		return;
	}
	CHECK(!msg);
	check_answer(out);
	CHECK(ref_id(json_object_get_string(member(body, "id"))));
	check_handler_url(json_object_get_string(member(body, "handler")));
	CHECK(json_object_equal(member(out, "id"), member(body, "id")));
	CHECK(json_object_equal(member(out, "handler"), member(body, "handler")));
	CHECK(equal_or(member(out, "model"), member(body, "model"), blank));
	CHECK(equal_or(member(out, "cpu"), member(body, "cpu"), zero));
	CHECK(equal_or(member(out, "memory_mb"), member(body, "memory_mb"), zero));
	CHECK(equal_or(member(out, "gpus"), member(body, "gpus"), zero));
	CHECK(equal_or(member(out, "labels"), member(body, "labels"), empty));
	CHECK(same_str(member(out, "state"), "enrolling"));
	CHECK(bm_machine_get(st, json_object_get_string(member(body, "id")), &again) == 0);
	CHECK(json_object_equal(out, again));
}

static void store_pool(struct bm_store *st, json_object *body)
{
	g_autoptr(json_object) out = NULL, empty = json_object_new_object();
	json_object *match = member(body, "match"), *got;
	const char *name = NULL;
	char *msg = NULL;

	if (bm_req_pool(body, &name, &msg) < 0) {
		g_free(msg);
		return;
	}
	CHECK(bm_pool_create(st, body, &out) == 0);
	check_answer(out);
	got = member(out, "match");
	CHECK(same_str(member(out, "name"), name));
	CHECK(json_object_equal(member(got, "model"), member(match, "model")));
	CHECK(json_object_equal(member(got, "cpu"), member(match, "cpu")));
	CHECK(equal_or(member(got, "labels"), member(match, "labels"), empty));
	CHECK(equal_or(member(out, "template"), member(body, "template"), empty));
	CHECK(int_ok(member(out, "free"), 0, INT64_MAX) && int_ok(member(out, "in_use"), 0, 0));
}

#define FUZZ_MACHINE "fuzz.m0"
#define FUZZ_HOLDER "fuzz"

/* Enroll FUZZ_MACHINE and take it to available, as the controller would; false if taken. */
static bool available_machine(struct bm_store *st)
{
	static const char req[] = "{\"id\": \"" FUZZ_MACHINE "\", \"handler\": \"http://dpu:8701\"}";
	g_autoptr(json_object) body = NULL, out = NULL;
	g_autoptr(bm_machine_row) m = NULL;
	g_autofree char *msg = NULL;

	CHECK(bm_json_parse(req, strlen(req), &body, &msg) == 0);
	if (bm_machine_enroll(st, body, &out, &msg) < 0)
		return false; /* the body enrolled a machine of that name */
	CHECK(bm_lease_acquire(st, FUZZ_HOLDER, 600000) == 0);
	CHECK(bm_machine_load(st, FUZZ_MACHINE, &m) == 0);
	CHECK(m->state == BM_ENROLLING && m->step == BM_STEP_VERIFY);
	CHECK(bm_step_begin(st, FUZZ_HOLDER, m) == 0);
	CHECK(bm_step_done(st, FUZZ_HOLDER, m, NULL, NULL, 1) == 0);
	return true;
}

static void store_instance(struct bm_store *st, json_object *body)
{
	g_autoptr(json_object) out = NULL, pool = NULL, pbody = NULL, empty = json_object_new_array();
	g_autoptr(bm_machine_row) m = NULL;
	json_object *nets = member(body, "networks"), *ud = member(body, "user_data");
	json_object *bus = member(body, "disk_bus");
	const char *pname = NULL;
	g_autofree char *why = NULL;
	char *msg = NULL;
	int64_t op = 0;

	if (bm_req_instance(body, &pname, &msg) < 0) {
		g_free(msg);
		return;
	}
	/* A pool of that name from store_pool() may match no machine: leave that case. */
	if (bm_pool_get(st, pname, &pool) == 0 || !available_machine(st))
		return;
	pbody = json_object_new_object();
	json_object_object_add(pbody, "name", json_object_new_string(pname));
	CHECK(bm_pool_create(st, pbody, &pool) == 0);
	CHECK(bm_instance_create(st, body, &out, &op) == 0);
	CHECK(op > 0);
	check_answer(out);
	if (member(body, "id"))
		CHECK(json_object_equal(member(out, "id"), member(body, "id")));
	CHECK(same_str(member(out, "pool"), pname));
	CHECK(same_str(member(out, "machine"), FUZZ_MACHINE));
	CHECK(json_object_equal(member(out, "image"), member(body, "image")));
	CHECK(json_object_equal(member(out, "disk_gb"), member(body, "disk_gb")));
	CHECK(equal_or(member(out, "networks"), nets, empty));

	CHECK(bm_machine_load(st, FUZZ_MACHINE, &m) == 0);
	CHECK(m->state == BM_QUEUED);
	CHECK(m->instance && strcmp(m->instance, json_object_get_string(member(out, "id"))) == 0);
	CHECK(strcmp(m->user_data, ud ? json_object_get_string(ud) : "") == 0);
	CHECK(m->disks->len == 1 && m->nics->len == (nets ? json_object_array_length(nets) : 0));
	for (guint i = 0; i < m->disks->len; i++) {
		const struct bm_disk_row *d = m->disks->pdata[i];

		CHECK(strcmp(d->role, "boot") == 0 && d->size_gb == int_of(member(body, "disk_gb")));
		CHECK(strcmp(d->image, json_object_get_string(member(body, "image"))) == 0);
		CHECK(strcmp(d->bus, bus ? json_object_get_string(bus) : "virtio-blk") == 0);
		/* The handler takes only ids in its paths (/v1/volumes/ID, /v1/disks/ID). */
		CHECK(ref_id(d->id));
	}
	for (guint i = 0; i < m->nics->len; i++) {
		const struct bm_nic_row *n = m->nics->pdata[i];

		CHECK(same_str(json_object_array_get_idx(nets, i), n->network));
		CHECK(ref_id(n->id)); /* /v1/nics/ID */
	}
	CHECK(bm_store_check(st, &why) == 0);
}

static void fuzz_store(const char *doc, size_t len)
{
	g_autoptr(json_object) body = NULL;
	g_autoptr(bm_store) st = NULL;
	g_autofree char *msg = NULL, *why = NULL;

	if (bm_json_parse(doc, len, &body, &msg) < 0 || !json_object_is_type(body, json_type_object))
		return;
	st = fresh_store();
	store_enroll(st, body);
	store_pool(st, body);
	store_instance(st, body);
	CHECK(bm_store_check(st, &why) == 0);
}

/* ---- part 4: the provider ---- */

static void check_group(struct as_cloud_provider *p, struct as_node_group_if *g)
{
	const char *id = g->ops->id(g);
	const struct as_node *tmpl = NULL;
	struct as_instance *insts = NULL;
	guint n = 0;
	int min = g->ops->min_size(g), max = g->ops->max_size(g), target = -1;
	double price = 0;

	CHECK(id && 0 <= min && min <= max);
	if (p->ops->node_price(p, g, &price) == 0)
		CHECK(isfinite(price) && price > 0);
	if (g->ops->template_node_info(g, &tmpl) == 0)
		CHECK(g_strcmp0(as_kvs_get(&tmpl->labels, AS_YUSUR_POOL_LABEL), id) == 0);
	CHECK(g->ops->target_size(g, &target) == 0);
	CHECK(g->ops->nodes(g, &insts, &n) == 0);
	CHECK(target >= 0 && (guint)target <= n);
	for (guint i = 0; i < n; i++) {
		g_autofree char *pool = NULL, *iid = NULL;
		struct as_node node = {.provider_id = insts[i].id};
		struct as_node_group_if *back = NULL;
		bool has = false;

		/* DeleteNodes and DecreaseTargetSize find the instance by its providerID. */
		CHECK(as_yusur_parse_provider_id(insts[i].id, &pool, &iid));
		CHECK(strcmp(pool, id) == 0);
		CHECK(p->ops->node_group_for_node(p, &node, &back) == 0 && back == g);
		CHECK(p->ops->has_instance(p, &node, &has) == 0 && has);
	}
	as_instances_free(insts, n);
}

static void fuzz_provider(const char *doc, size_t len)
{
	g_autoptr(as_yusur_config) cfg = g_new0(struct as_yusur_config, 1);
	g_autoptr(json_object) pools = NULL, insts = NULL;
	g_autoptr(GHashTable) ids = g_hash_table_new(g_str_hash, g_str_equal);
	g_autoptr(GHashTable) inst_ids = g_hash_table_new(g_str_hash, g_str_equal);
	g_autoptr(GHashTable) pool_names = g_hash_table_new(g_str_hash, g_str_equal);
	g_autoptr(GHashTable) provider_ids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	bool dup_id = false;
	struct as_node_group_if **groups = NULL;
	struct as_cloud_provider *p;
	const char *nul = memchr(doc, '\0', len);
	size_t pools_len = nul ? (size_t)(nul - doc) : len;
	g_autofree char *msg = NULL;
	json_object *items;
	guint n;
	int rc;

	/* The bodies as the bm client hands them over: parsed by bm_json_parse(). */
	if (bm_json_parse(doc, pools_len, &pools, &msg) < 0)
		return;
	if (nul && bm_json_parse(nul + 1, len - pools_len - 1, &insts, &msg) < 0)
		return;
	cfg->url = g_strdup("http://127.0.0.1:9");
	cfg->image = g_strdup("img");
	p = as_yusur_provider_new(g_steal_pointer(&cfg));
	rc = as_yusur_provider_update(p, pools, insts);
	items = member(pools, "items");
	/* bm-api's instance ids and pool names are unique: an answer listing one twice is refused. */
	for (size_t i = 0; json_object_is_type(member(insts, "items"), json_type_array) &&
			   i < json_object_array_length(member(insts, "items"));
	     i++) {
		json_object *id = member(json_object_array_get_idx(member(insts, "items"), i), "id");

		if (is_str(id) && !g_hash_table_add(inst_ids, (char *)json_object_get_string(id)))
			dup_id = true;
	}
	/* So are pool names; one that is no bm-api id is ignored, not counted. */
	for (size_t i = 0; json_object_is_type(items, json_type_array) &&
			   i < json_object_array_length(items);
	     i++) {
		json_object *name = member(json_object_array_get_idx(items, i), "name");

		if (is_str(name) && bm_id_valid(json_object_get_string(name)) &&
		    !g_hash_table_add(pool_names, (char *)json_object_get_string(name)))
			dup_id = true;
	}
	if (rc < 0) {
		CHECK(rc == -EBADMSG && as_yusur_last_error(p));
		CHECK(!json_object_is_type(items, json_type_array) || dup_id);
	} else {
		CHECK(rc == 0 && !as_yusur_last_error(p));
		CHECK(json_object_is_type(items, json_type_array) && !dup_id);
	}
	n = p->ops->node_groups(p, &groups);
	CHECK(rc < 0 ? n == 0 : n <= json_object_array_length(items));
	for (guint i = 0; i < n; i++) {
		struct as_instance *v = NULL;
		guint nv = 0;

		/* The core tells groups apart by id, and instances by providerID. */
		CHECK(g_hash_table_add(ids, (char *)groups[i]->ops->id(groups[i])));
		check_group(p, groups[i]);
		CHECK(groups[i]->ops->nodes(groups[i], &v, &nv) == 0);
		for (guint j = 0; j < nv; j++)
			CHECK(g_hash_table_add(provider_ids, g_strdup(v[j].id)));
		as_instances_free(v, nv);
	}
	p->ops->cleanup(p);
}

/* ---- part 5: bm-handler reading a request ---- */

/* The resource of a path that names @action (docs/bm.md's table). */
static const char *resource_of(const char *action)
{
	static const char *const map[][2] = {
		{"status", "status"},	      {"power_on", "power"},	  {"power_off", "power"},
		{"set_boot", "boot"},	      {"volume_create", "volumes"}, {"volume_delete", "volumes"},
		{"disk_attach", "disks"},     {"disk_detach", "disks"},	  {"nic_attach", "nics"},
		{"nic_detach", "nics"},
	};

	for (size_t i = 0; i < G_N_ELEMENTS(map); i++)
		if (strcmp(map[i][0], action) == 0)
			return map[i][1];
	return NULL;
}

/* The methods docs/bm.md gives @action (PUT also as POST). */
static bool method_fits(const char *method, const char *action)
{
	bool put = strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0;

	if (strcmp(action, "status") == 0)
		return strcmp(method, "GET") == 0;
	if (g_str_has_suffix(action, "_delete") || g_str_has_suffix(action, "_detach"))
		return strcmp(method, "DELETE") == 0;
	return put;
}

/* json-c's text of a field, "" when absent or null: what the fake driver takes. */
static const char *text_of(json_object *o, const char *k)
{
	json_object *v = member(o, k);

	return v ? json_object_get_string(v) : "";
}

static void check_route(const char *method, const char *path, json_object *body, bool fake)
{
	struct bm_handler_route r, sentinel;
	g_autofree char *want = NULL, *want_slash = NULL;
	const char *res, *rest;
	char *msg = NULL;
	int rc;

	memset(&sentinel, 0x5a, sizeof(sentinel));
	r = sentinel;
	rc = bm_handler_route(method, path, body, fake, &r, &msg);
	if (rc < 0) {
		CHECK(rc == -EINVAL || rc == -ENOENT);
		CHECK(msg && *msg && memcmp(&r, &sentinel, sizeof(r)) == 0);
		if (rc == -EINVAL)
			CHECK(strcmp(msg, "bad host name") == 0 ||
			      strstr(msg, "field 'state'") != NULL);
		g_free(msg);
		return;
	}
	CHECK(!msg);
	/* The route spells the path back: [/h/HOST]/v1/RES[/ID], and nothing else. */
	CHECK(strcmp(r.host, "default") == 0 || bm_id_valid(r.host));
	CHECK(!*r.id || bm_id_valid(r.id));
	switch (r.kind) {
	case BM_HANDLER_INVENTORY:
	case BM_HANDLER_FAKE:
		CHECK(fake && !r.action && !*r.id && strcmp(r.host, "default") == 0);
		res = r.kind == BM_HANDLER_FAKE ? "fake" : "inventory";
		break;
	default:
		CHECK(r.action && (res = resource_of(r.action)) != NULL);
		CHECK(method_fits(method, r.action));
		/* Status, power and boot are of the host; the others name an object. */
		CHECK(!*r.id == (strcmp(res, "status") == 0 || strcmp(res, "power") == 0 ||
				 strcmp(res, "boot") == 0));
		if (strcmp(res, "power") == 0)
			CHECK(strcmp(text_of(body, "state"), strcmp(r.action, "power_on") == 0 ? "on"
											     : "off") == 0);
		break;
	}
	/*
	 * What comes before the path's first '/' is not looked at (an HTTP
	 * request line's target always starts with one, but for "*" and the
	 * absolute form, which route nowhere).
	 */
	rest = strchr(path, '/');
	CHECK(rest);
	want = g_strdup_printf("%s%s/v1/%s%s%s", g_str_has_prefix(rest, "/h/") ? "/h/" : "",
			       g_str_has_prefix(rest, "/h/") ? r.host : "", res, *r.id ? "/" : "",
			       r.id);
	want_slash = g_strconcat(want, "/", NULL);
	CHECK(strcmp(rest, want) == 0 || (!*r.id && strcmp(rest, want_slash) == 0));
}

static void check_fields(const char *action, json_object *body)
{
	static const char *const keys[] = {"image", "user_data", "volume", "bus",
					   "network", "mac", "device"};
	struct bm_handler_fields f, sentinel = {.size_gb = 4242, .image = SENTINEL};
	json_object *size = member(body, "size_gb");
	bool has_size = size && json_object_is_type(size, json_type_int);
	char *msg = NULL;
	int rc;

	f = sentinel;
	rc = bm_handler_fields(action, body, &f, &msg);
	if (rc < 0) {
		CHECK(rc == -EINVAL && strcmp(action, "volume_create") == 0 && !has_size);
		CHECK(names_field(msg, (const char *const[]){"size_gb", NULL}));
		CHECK(f.size_gb == 4242 && strcmp(f.image, SENTINEL) == 0);
		g_free(msg);
		return;
	}
	CHECK(!msg && f.has_size == has_size && (strcmp(action, "volume_create") != 0 || has_size));
	CHECK(!has_size || f.size_gb == json_object_get_int64(size));
	{
		const char *got[] = {f.image, f.user_data, f.volume, f.bus, f.network, f.mac, f.device};

		for (size_t i = 0; i < G_N_ELEMENTS(keys); i++)
			CHECK(got[i] && strcmp(got[i], text_of(body, keys[i])) == 0);
	}
}

static void check_fake_tune(json_object *body)
{
	json_object *faults = member(body, "faults");
	struct bm_fake_tune t;

	bm_fake_tune_parse(body, &t);
	CHECK(t.has_delay == int_ok(member(body, "delay_ms"), 0, BM_FAKE_MAX_DELAY_MS));
	CHECK(!t.has_delay || t.delay_ms == int_of(member(body, "delay_ms")));
	CHECK(t.has_boot == int_ok(member(body, "boot_ms"), 0, BM_FAKE_MAX_BOOT_MS));
	CHECK(!t.has_boot || t.boot_ms == int_of(member(body, "boot_ms")));
	CHECK(t.has_fail_rate == (member(body, "fail_rate") != NULL));
	CHECK(!t.has_fail_rate || (t.fail_rate >= 0 && t.fail_rate <= 1));
	CHECK(!t.faults == !json_object_is_type(faults, json_type_object));
	if (t.faults) {
		CHECK(g_hash_table_size(t.faults) == (guint)json_object_object_length(faults));
		json_object_object_foreach(faults, action, spec)
		{
			struct bm_fault *f = g_hash_table_lookup(t.faults, action);

			CHECK(f && f->hang == (f->hang_ms > 0));
			(void)spec;
		}
	}
	bm_fake_tune_clear(&t);
	CHECK(!t.faults);
}

/* The exec driver's request carries the body and the handler's own action, host and id. */
static void check_exec_request(json_object *body, const struct bm_handler_route *r)
{
	g_autoptr(json_object) copy = NULL, back = NULL;
	g_autofree char *dump = NULL, *msg = NULL;

	CHECK(json_object_deep_copy(body, &copy, NULL) == 0);
	bm_handler_exec_request(copy, r->action, r->host, r->id);
	dump = bm_json_dump(copy);
	CHECK(bm_json_parse(dump, strlen(dump), &back, &msg) == 0);
	CHECK(same_str(member(back, "action"), r->action) && same_str(member(back, "host"), r->host));
	CHECK(*r->id ? same_str(member(back, "id"), r->id) : json_object_equal(member(back, "id"), member(body, "id")));
	json_object_object_foreach(body, k, v)
	{
		if (strcmp(k, "action") != 0 && strcmp(k, "host") != 0 && strcmp(k, "id") != 0)
			CHECK(json_object_equal(member(back, k), v));
	}
}

/* What the exec driver makes of @buf as its command's stdout. */
static void check_exec_output(const char *buf, size_t len)
{
	json_object *out = (json_object *)&out, *parsed = NULL;
	g_autofree char *msg = NULL, *msg2 = NULL;
	char *e;
	int rc = bm_handler_exec_output(buf, len, &out, &msg);
	bool json = len > 0 && bm_json_parse(buf, len, &parsed, &msg2) == 0;

	if (rc < 0) {
		CHECK(len > 0 && !json && out == (json_object *)&out && msg && *msg);
	} else {
		CHECK(!msg);
		CHECK(len == 0 ? json_object_is_type(out, json_type_object) &&
					 json_object_object_length(out) == 0
			       : json && json_object_equal(out, parsed));
		json_object_put(out);
	}
	e = bm_handler_exec_error(buf, len);
	CHECK(!e || (*e && json && strcmp(e, text_of(parsed, "error")) == 0));
	CHECK(e || !json || !*text_of(parsed, "error"));
	g_free(e);
	json_object_put(parsed);
}

/*
 * Input: METHOD '\n' PATH '\n' BODY.  The body as both drivers read it,
 * the route with and without the fake driver's paths, and what the route's
 * action takes of the body.
 */
static void fuzz_handler(const char *doc, size_t len)
{
	const char *nl1 = memchr(doc, '\n', len), *nl2, *body_text;
	g_autofree char *method = NULL, *path = NULL;
	json_object *body = (json_object *)&body;
	char *msg = NULL;
	size_t body_len;
	int rc;

	if (!nl1 || !(nl2 = memchr(nl1 + 1, '\n', len - (size_t)(nl1 + 1 - doc))))
		return;
	method = g_strndup(doc, (gsize)(nl1 - doc));
	path = g_strndup(nl1 + 1, (gsize)(nl2 - nl1 - 1));
	/* libmicrohttpd hands over C strings. */
	if (strlen(method) != (size_t)(nl1 - doc) || strlen(path) != (size_t)(nl2 - nl1 - 1))
		return;
	body_text = nl2 + 1;
	body_len = len - (size_t)(body_text - doc);
	check_exec_output(body_text, body_len);
	rc = bm_handler_body(body_text, body_len, &body, &msg);
	if (rc < 0) {
		json_object *o = NULL;
		char *m2 = NULL;

		CHECK(rc == -EBADMSG || rc == -E2BIG);
		CHECK(body == (json_object *)&body && msg && *msg && body_len > 0);
		/* Refused: not JSON, or JSON that is no object. */
		if (bm_json_parse(body_text, body_len, &o, &m2) == 0)
			CHECK(!json_object_is_type(o, json_type_object) &&
			      strcmp(msg, "body must be an object") == 0);
		json_object_put(o);
		g_free(m2);
		g_free(msg);
		return;
	}
	CHECK(!msg && json_object_is_type(body, json_type_object));
	check_route(method, path, body, false);
	check_route(method, path, body, true);
	{
		struct bm_handler_route r;

		if (bm_handler_route(method, path, body, true, &r, &msg) == 0) {
			if (r.kind == BM_HANDLER_ACTION) {
				check_fields(r.action, body);
				check_exec_request(body, &r);
			}
		} else {
			g_clear_pointer(&msg, g_free);
		}
	}
	check_fake_tune(body);
	json_object_put(body);
}

/* ---- part 6: bm-controller reading a handler's answer ---- */

/*
 * @got is @text made one log line (qt_log_text_append()): valid UTF-8
 * without control characters, at most BM_HANDLER_MAX_MESSAGE bytes and
 * "..." when cut; @text itself when it already was such a line.
 */
static void check_one_line(const char *got, const char *text)
{
	size_t n = strlen(got), tn = strlen(text);
	bool plain = tn <= BM_HANDLER_MAX_MESSAGE && g_utf8_validate(text, -1, NULL);

	CHECK(g_utf8_validate(got, -1, NULL));
	for (const char *p = got; *p; p = g_utf8_next_char(p))
		CHECK(!g_unichar_iscntrl(g_utf8_get_char(p)));
	for (const char *p = text; plain && *p; p = g_utf8_next_char(p))
		plain = !g_unichar_iscntrl(g_utf8_get_char(p));
	if (plain)
		CHECK(strcmp(got, text) == 0);
	CHECK(n <= BM_HANDLER_MAX_MESSAGE + 3);
	/* Past the limit only when cut. */
	if (n > BM_HANDLER_MAX_MESSAGE)
		CHECK(g_str_has_suffix(got, "..."));
}

/* "booted" as docs/bm.md gives it: a JSON boolean, and true. */
static bool booted_true(json_object *v)
{
	return json_object_get_type(v) == json_type_boolean && json_object_get_boolean(v);
}

/* Input: STATUS '\n' BODY (what bm_client_call hands over: parsed, NULL when empty). */
static void fuzz_answer(const char *doc, size_t len)
{
	const char *nl = memchr(doc, '\n', len);
	g_autofree char *st_text = NULL, *prefix = NULL;
	g_autoptr(json_object) res = NULL;
	json_object *m;
	char *err = NULL, *msg = NULL;
	long status;
	int rc;

	if (!nl)
		return;
	st_text = g_strndup(doc, (gsize)(nl - doc));
	status = (long)g_ascii_strtoll(st_text, NULL, 10);
	if ((size_t)(len - (size_t)(nl + 1 - doc)) > 0 &&
	    bm_json_parse(nl + 1, len - (size_t)(nl + 1 - doc), &res, &msg) < 0) {
		g_free(msg);
		return;
	}
	rc = bm_handler_answer("PUT", "/v1/disks/d", status, res, &err);
	CHECK(rc == bm_http_status_errno(status));
	if (rc == 0) {
		CHECK(status >= 200 && status < 300 && !err);
	} else {
		prefix = g_strdup_printf("PUT /v1/disks/d: HTTP %ld: ", status);
		m = member(res, "message");
		CHECK(err && g_str_has_prefix(err, prefix));
		check_one_line(err + strlen(prefix), m ? json_object_get_string(m) : "no message");
		g_free(err);
	}
	CHECK(bm_handler_booted(res) == booted_true(member(res, "booted")));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *doc = (const char *)data + 1;

	if (size == 0)
		return 0;
	switch ((uint8_t)(data[0] - '0') % 7) {
	case 0:
		fuzz_json(doc, size - 1);
		break;
	case 1:
		fuzz_getters(doc, size - 1);
		break;
	case 2:
		fuzz_request(doc, size - 1);
		break;
	case 3:
		fuzz_store(doc, size - 1);
		break;
	case 4:
		fuzz_provider(doc, size - 1);
		break;
	case 5:
		fuzz_handler(doc, size - 1);
		break;
	default:
		fuzz_answer(doc, size - 1);
		break;
	}
	return 0;
}
