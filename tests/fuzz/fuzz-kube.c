// SPDX-License-Identifier: Apache-2.0
/*
 * Fuzz target for what the autoscaler daemon reads from the Kubernetes API
 * server: the watch stream parser (autoscale/kube.c) and, for every object
 * a watch event carries, the cache's key, the converters to the core's
 * model (autoscale/cluster-json.c), the Lease rule and the taint helpers;
 * and the answers to list requests (a page of a list, or a Status).  The
 * documents the autoscaler reads whole (a snapshot, an options file, a
 * kubeconfig) go through their parsers too.
 *
 * Input layout: the first byte is a control byte, the rest is the stream.
 *   bits 0-5  chunk size - 1 (the stream is fed in chunks of 1..64 bytes)
 *   bit 6     a watch line cap (max_line) of 256 bytes instead of
 *             AS_KUBE_MAX_WATCH_LINE
 *   bit 7     also hand the whole stream, as one document, to
 *             as_cluster_from_json, as_options_from_json and
 *             as_kube_config_parse, and, parsed as JSON (NULL, an empty
 *             body, when it does not parse), to as_kube_list_page as the
 *             answer to a list of nodes and of pods with HTTP 200, and of
 *             pods with the status list_statuses[bits 0-2]
 * The stream is newline-delimited JSON watch events, {"type": "ADDED",
 * "object": {...}}, as the API server sends them.
 *
 * Besides "no crash, no leak" (the sanitizers' job; a GLib critical aborts
 * too), the target checks properties that a wrong parser could violate
 * without crashing, and aborts if one fails:
 *   - every callback has a type among the five the API sends and an
 *     object, or neither and an error message;
 *   - each line gives exactly the callbacks a line-by-line model of the
 *     stream expects: one "longer than" error for a line over max_line
 *     (terminated or not; its ending, "\n" or "\r\n", not counted), one
 *     callback for every other complete line that is not blank, none for
 *     an unterminated tail; and the parser never holds more than max_line
 *     bytes, but for a '\r' after them that may begin the line's ending;
 *   - the stream fed in one call gives the same callbacks, objects byte
 *     for byte, as fed in chunks;
 *   - a converter that succeeds returns an object within the model's
 *     documented limits (names set, a pod's and a PDB's namespace not
 *     empty, quantities not negative, a pod's key "ns/name" and its pods
 *     request 1, enums in range, a PDB's selector
 *     operators the four a label selector has ...); one that fails sets a
 *     message and leaves its output alone;
 *   - a Lease held by someone else is never takeable when first seen, is
 *     always takeable a day later (the longest duration taken), and one
 *     free or ours is takeable at once;
 *   - adding a taint that is not there succeeds once, removing it succeeds
 *     once, and a Node that converted before still converts after each,
 *     with one taint more or fewer;
 *   - an object's cache key, for every kind, is "namespace/name", or, for
 *     a Node, "name" without a namespace or with an empty one; none
 *     without a name, nor for a namespaced kind without a namespace or
 *     with an empty one;
 *   - a list page is taken exactly when the answer is a 200 with an
 *     "items" array and a "metadata" object; then the table holds what it
 *     held plus every item that has a key, under that key (the last item
 *     of a key given twice), and nothing else, the resourceVersion is the
 *     page's, and the continue token the page's when it is a non-empty
 *     string, else NULL; a page refused leaves the table and the outputs
 *     alone and says "PATH: not a list", or, for another status,
 *     "PATH: HTTP N" and the Status's message, with
 *     as_kube_status_errno() of N (-EBADMSG for another 2xx); the
 *     message is UTF-8 without control characters, cut to
 *     AS_KUBE_MAX_STATUS_MESSAGE bytes and "...", and unchanged when it
 *     is all that already;
 *   - a snapshot, options file or kubeconfig that parses gives values
 *     within their documented limits (a kubeconfig: a server URL with a
 *     host, a certificate with its key, absolute file names; options: one
 *     JSON object, nothing after it); one that fails sets a message and
 *     changes nothing (options: all or nothing).
 *
 * Built two ways: with replay.c as a plain program that runs the corpus in
 * `make check`, and with clang -fsanitize=fuzzer by `make fuzz`.
 */
#include "config.h"

#include <glib.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster-json.h"
#include "fuzz.h"
#include "kube.h"
#include "model.h"
#include "options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SMALL_MAX_LINE 256
#define FUZZ_ID "fuzz-autoscaler"
#define DAY_MS (86400 * 1000LL)
#define OVERSIZE_PREFIX "watch event longer than "

/* ---- the model's limits ---- */

static void check_kvs(const struct as_kvs *kvs)
{
	for (guint i = 0; i < kvs->n; i++)
		CHECK(kvs->v[i].key && kvs->v[i].value);
}

static void check_resources(const struct as_resources *r)
{
	CHECK(r->cpu >= 0 && r->mem >= 0 && r->gpu >= 0 && r->pods >= 0);
}

static void check_exprs(const struct as_match_expr *e, guint n, bool node_ops)
{
	for (guint i = 0; i < n; i++) {
		CHECK(e[i].key && e[i].values);
		CHECK(e[i].op <= (node_ops ? AS_OP_LT : AS_OP_DOES_NOT_EXIST));
	}
}

static void check_node(const struct as_node *n)
{
	CHECK(n->name && *n->name);
	CHECK(n->provider_id);
	check_resources(&n->capacity);
	check_resources(&n->allocatable);
	check_kvs(&n->labels);
	check_kvs(&n->annotations);
	CHECK(n->n_taints == 0 || n->taints);
	for (guint i = 0; i < n->n_taints; i++) {
		CHECK(n->taints[i].key && n->taints[i].value);
		CHECK(n->taints[i].effect >= AS_EFFECT_NO_SCHEDULE &&
		      n->taints[i].effect <= AS_EFFECT_NO_EXECUTE);
	}
}

static void check_pod(const struct as_pod *p)
{
	g_autofree char *key = NULL;

	CHECK(p->name && *p->name && p->ns && *p->ns && p->key);
	key = g_strdup_printf("%s/%s", p->ns, p->name);
	CHECK(strcmp(p->key, key) == 0);
	CHECK(!p->node_name || *p->node_name);
	check_resources(&p->requests);
	CHECK(p->requests.pods == 1);
	CHECK(!p->requests_overflow || p->requests.cpu == INT64_MAX ||
	      p->requests.mem == INT64_MAX || p->requests.gpu == INT64_MAX);
	CHECK(p->phase <= AS_PHASE_UNKNOWN);
	CHECK(p->grace_period_s >= 0 && p->grace_period_s <= G_MAXINT32);
	CHECK(!p->owner_kind == !p->owner_name);
	check_kvs(&p->labels);
	check_kvs(&p->annotations);
	check_kvs(&p->node_selector);
	for (guint i = 0; i < p->n_tolerations; i++) {
		CHECK(p->tolerations[i].key);
		CHECK(p->tolerations[i].effect <= AS_EFFECT_NO_EXECUTE);
	}
	for (guint i = 0; i < p->n_affinity; i++)
		check_exprs(p->affinity[i].exprs, p->affinity[i].n_exprs, true);
	for (guint i = 0; i < p->n_volumes; i++) {
		CHECK(p->volumes[i].name);
		CHECK(p->volumes[i].kind <= AS_VOLUME_HOST_PATH);
	}
}

static void check_pdb(const struct as_pdb *p)
{
	CHECK(p->name && p->ns && *p->ns);
	CHECK(p->disruptions_allowed >= 0);
	check_kvs(&p->match_labels);
	check_exprs(p->exprs, p->n_exprs, false);
	CHECK(p->has_selector || (p->match_labels.n == 0 && p->n_exprs == 0));
}

static void check_group(const struct as_node_group *g)
{
	CHECK(g->id && *g->id);
	CHECK(g->min_size >= 0 && g->min_size <= g->max_size && g->max_size <= 1000000);
	CHECK(g->target_size >= 0);
	CHECK(g->n_instances == 0 || g->instances);
	for (guint i = 0; i < g->n_instances; i++) {
		CHECK(g->instances[i].id);
		CHECK(g->instances[i].state <= AS_INSTANCE_DELETING);
		CHECK(g->instances[i].error <= AS_ERROR_OTHER);
	}
	if (g->template_node)
		check_node(g->template_node);
}

/* ---- converters of one object ---- */

/* A converter's failure: a message, and its output untouched. */
static void check_failed(int r, const void *out, const void *sentinel, const char *msg)
{
	CHECK(r == -EINVAL);
	CHECK(out == sentinel);
	CHECK(msg && *msg);
}

static struct as_node *convert_node(json_object *o)
{
	static char sentinel;
	struct as_node *n = (void *)&sentinel;
	g_autofree char *msg = NULL;
	int r = as_node_from_json(o, &n, &msg);

	if (r < 0) {
		check_failed(r, n, &sentinel, msg);
		return NULL;
	}
	CHECK(r == 0 && !msg);
	check_node(n);
	return n;
}

static void convert_pod_pdb(json_object *o)
{
	static char sentinel;
	struct as_pod *pod = (void *)&sentinel;
	struct as_pdb *pdb = (void *)&sentinel;
	g_autofree char *m1 = NULL, *m2 = NULL;
	int r;

	r = as_pod_from_json(o, &pod, &m1);
	if (r < 0) {
		check_failed(r, pod, &sentinel, m1);
	} else {
		check_pod(pod);
		as_pod_free(pod);
	}
	r = as_pdb_from_json(o, &pdb, &m2);
	if (r < 0) {
		check_failed(r, pdb, &sentinel, m2);
	} else {
		check_pdb(pdb);
		as_pdb_free(pdb);
	}
}

static guint count_taints(const struct as_node *n, const char *key)
{
	guint k = 0;

	for (guint i = 0; i < n->n_taints; i++)
		k += strcmp(n->taints[i].key, key) == 0;
	return k;
}

/*
 * The taint helpers on a copy of @o, as the daemon changes a Node it GETs:
 * @before is @o converted (NULL when it did not convert).
 */
static void check_taints(json_object *o, const struct as_node *before)
{
	static const char key[] = AS_TAINT_TO_BE_DELETED;
	json_object *copy = NULL;
	struct as_node *n;
	bool removed;
	guint had;

	CHECK(json_object_deep_copy(o, &copy, NULL) == 0);
	had = before ? count_taints(before, key) : 0;
	removed = as_kube_node_remove_taint(copy, key);
	CHECK(!before || removed == (had > 0));
	CHECK(!as_kube_node_remove_taint(copy, key));
	if (before) {
		n = convert_node(copy);
		CHECK(n && n->n_taints == before->n_taints - had && count_taints(n, key) == 0);
		as_node_free(n);
	}
	CHECK(as_kube_node_add_taint(copy, key, "1700000000", "NoSchedule"));
	CHECK(!as_kube_node_add_taint(copy, key, "1700000001", "NoExecute"));
	if (before) {
		n = convert_node(copy);
		CHECK(n && n->n_taints == before->n_taints - had + 1);
		CHECK(strcmp(n->taints[n->n_taints - 1].key, key) == 0);
		CHECK(strcmp(n->taints[n->n_taints - 1].value, "1700000000") == 0);
		CHECK(n->taints[n->n_taints - 1].effect == AS_EFFECT_NO_SCHEDULE);
		as_node_free(n);
	}
	CHECK(as_kube_node_remove_taint(copy, key));
	CHECK(!as_kube_node_remove_taint(copy, key));
	json_object_put(copy);
}

static void check_lease(json_object *o)
{
	struct as_kube_lease_seen seen = {NULL, 0};
	const int64_t t0 = 5 * DAY_MS;
	json_object *spec = as_json_member(o, "spec");
	const char *holder;
	bool free_or_ours;

	if (spec && !json_object_is_type(spec, json_type_object))
		spec = NULL;
	holder = as_json_string(spec, "holderIdentity");
	free_or_ours = !holder || !*holder || strcmp(holder, FUZZ_ID) == 0;
	CHECK(as_kube_lease_takeable(o, FUZZ_ID, &seen, t0) == free_or_ours);
	CHECK(seen.record && seen.at_ms == t0);
	/* Every duration is at least a second... */
	CHECK(as_kube_lease_takeable(o, FUZZ_ID, &seen, t0 + 1000) == free_or_ours);
	/* ...and at most a day; the record, unchanged, is still dated t0. */
	CHECK(as_kube_lease_takeable(o, FUZZ_ID, &seen, t0 + DAY_MS + 1));
	CHECK(seen.at_ms == t0);
	as_kube_lease_seen_clear(&seen);
	CHECK(!seen.record);
}

/* ---- the cache's key, list pages ---- */

/* A member of @o when it is of @type, else NULL. */
static json_object *typed(json_object *o, const char *key, json_type type)
{
	json_object *v = NULL;

	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, type))
		return NULL;
	return v;
}

/* The key the cache of @kind must file @o under, as kube.h says, or NULL. */
static char *model_key(enum as_kube_kind kind, json_object *o)
{
	json_object *meta = typed(o, "metadata", json_type_object);
	json_object *name = typed(meta, "name", json_type_string);
	json_object *ns = typed(meta, "namespace", json_type_string);

	bool has_ns = ns && json_object_get_string_len(ns) > 0;

	if (!name || json_object_get_string_len(name) == 0)
		return NULL;
	if (kind == AS_KUBE_NODES)
		return g_strdup(json_object_get_string(name));
	if (!has_ns)
		return NULL;
	return g_strdup_printf("%s/%s", json_object_get_string(ns), json_object_get_string(name));
}

static void check_key(json_object *o)
{
	for (int kind = 0; kind < AS_KUBE_N_KINDS; kind++) {
		g_autofree char *key = as_kube_obj_key((enum as_kube_kind)kind, o);
		g_autofree char *want = model_key((enum as_kube_kind)kind, o);

		CHECK(!key == !want);
		CHECK(!key || strcmp(key, want) == 0);
	}
}

static void put_json(gpointer o)
{
	json_object_put(o);
}

/* The statuses a list answer is also tried with (bit 7 of the control byte). */
static const long list_statuses[] = {404, 410, 500, 204, 429, 403, 201, 418};
#define LIST_PATH "/api/v1/pods?limit=500"
#define SENTINEL_KEY "kept/from-an-earlier-page"

static bool has_cntrl(const char *s)
{
	for (const char *p = s; *p; p = g_utf8_next_char(p))
		if (g_unichar_iscntrl(g_utf8_get_char(p)))
			return true;
	return false;
}

/*
 * "PATH: HTTP N", and ": " and the Status's message @m when it has one:
 * UTF-8 without control characters, at most AS_KUBE_MAX_STATUS_MESSAGE
 * bytes and "...", and the message itself when it is all that already.
 */
static void check_status_message(const char *msg, long status, json_object *m)
{
	g_autofree char *head = g_strdup_printf(LIST_PATH ": HTTP %ld", status);
	const char *text, *tail;
	size_t len;

	CHECK(g_str_has_prefix(msg, head));
	tail = msg + strlen(head);
	if (!m) {
		CHECK(!*tail);
		return;
	}
	CHECK(g_str_has_prefix(tail, ": "));
	tail += 2;
	CHECK(g_utf8_validate(tail, -1, NULL) && !has_cntrl(tail));
	CHECK(strlen(tail) <= AS_KUBE_MAX_STATUS_MESSAGE + 3);
	text = json_object_get_string(m);
	len = (size_t)json_object_get_string_len(m);
	if (strlen(text) == len && len <= AS_KUBE_MAX_STATUS_MESSAGE &&
	    g_utf8_validate(text, -1, NULL) && !has_cntrl(text))
		CHECK(strcmp(tail, text) == 0);
}

static void check_list_page(json_object *page, long status, enum as_kube_kind kind)
{
	GHashTable *t = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, put_json);
	GHashTable *want = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	json_object *sentinel = json_object_new_object(), *items, *meta, *v;
	char *rv = (char *)"unset", *cont = (char *)"unset";
	g_autofree char *msg = NULL;
	bool is_list;
	int r;

	g_hash_table_replace(t, g_strdup(SENTINEL_KEY), sentinel);
	g_hash_table_replace(want, g_strdup(SENTINEL_KEY), sentinel);
	items = typed(page, "items", json_type_array);
	meta = typed(page, "metadata", json_type_object);
	is_list = status == 200 && items && meta;
	r = as_kube_list_page(kind, LIST_PATH, status, page, t, &rv, &cont, &msg);
	if (!is_list) {
		CHECK(r < 0 && msg);
		CHECK(strcmp(rv, "unset") == 0 && strcmp(cont, "unset") == 0);
		CHECK(g_hash_table_size(t) == 1 && g_hash_table_lookup(t, SENTINEL_KEY) == sentinel);
		if (status == 200) {
			CHECK(r == -EBADMSG);
			CHECK(strcmp(msg, LIST_PATH ": not a list") == 0);
		} else {
			int e = as_kube_status_errno(status);

			check_status_message(msg, status, typed(page, "message", json_type_string));
			CHECK(r == (e < 0 ? e : -EBADMSG));
		}
		goto cleanup;
	}
	CHECK(r == 0 && !msg);
	for (size_t i = 0; i < json_object_array_length(items); i++) {
		json_object *it = json_object_array_get_idx(items, i);
		char *key = model_key(kind, it);

		if (key)
			g_hash_table_replace(want, key, it);
	}
	/* Exactly the model's entries, each the very item (a new reference). */
	CHECK(g_hash_table_size(t) == g_hash_table_size(want));
	{
		GHashTableIter it;
		gpointer k, o;

		g_hash_table_iter_init(&it, want);
		while (g_hash_table_iter_next(&it, &k, &o)) {
			g_autofree char *key = o == sentinel ? NULL : as_kube_obj_key(kind, o);

			CHECK(g_hash_table_lookup(t, k) == o);
			CHECK(o == sentinel || (key && strcmp(key, k) == 0));
		}
	}
	v = typed(meta, "resourceVersion", json_type_string);
	CHECK(v ? rv && strcmp(rv, json_object_get_string(v)) == 0 : !rv);
	v = typed(meta, "continue", json_type_string);
	if (v && json_object_get_string_len(v) > 0)
		CHECK(cont && strcmp(cont, json_object_get_string(v)) == 0);
	else
		CHECK(!cont);
	g_free(rv);
	g_free(cont);
cleanup:
	g_hash_table_unref(want);
	g_hash_table_unref(t);
}

static void check_list_answers(const uint8_t *data, size_t size, uint8_t ctl)
{
	json_tokener *tok = json_tokener_new_ex(64);
	json_object *page = json_tokener_parse_ex(tok, (const char *)data,
						  (int)MIN(size, (size_t)G_MAXINT));

	if (json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != size) {
		json_object_put(page);
		page = NULL;
	}
	json_tokener_free(tok);
	check_list_page(page, 200, AS_KUBE_NODES);
	check_list_page(page, 200, AS_KUBE_PODS);
	check_list_page(page, list_statuses[ctl & 7], AS_KUBE_PODS);
	json_object_put(page);
}

/* ---- the watch stream ---- */

struct pass {
	GPtrArray *log; /* one string per callback: "TYPE\nOBJECT" or "!ERROR" */
	GString *shape; /* per callback: 'L' the oversize error, 'E' anything else */
	bool check; /* run the converters on each object */
};

static const char *const event_types[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

static void on_event(void *ud, const char *type, json_object *obj, const char *err)
{
	struct pass *ps = ud;
	bool known = false;

	if (!type) {
		CHECK(!obj && err && *err);
		g_ptr_array_add(ps->log, g_strconcat("!", err, NULL));
		g_string_append_c(ps->shape, g_str_has_prefix(err, OVERSIZE_PREFIX) ? 'L' : 'E');
		return;
	}
	CHECK(obj && !err);
	CHECK(json_object_is_type(obj, json_type_object));
	for (size_t i = 0; i < G_N_ELEMENTS(event_types); i++)
		known = known || strcmp(type, event_types[i]) == 0;
	CHECK(known);
	g_ptr_array_add(ps->log, g_strconcat(type, "\n",
					     json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN),
					     NULL));
	g_string_append_c(ps->shape, 'E');
	if (ps->check) {
		struct as_node *n = convert_node(obj);

		check_key(obj);
		convert_pod_pdb(obj);
		check_lease(obj);
		check_taints(obj, n);
		as_node_free(n);
	}
	json_object_put(obj); /* ours (kube.h) */
}

/* What the parser must call back for @data, per line (see struct pass). */
static GString *model_shape(const uint8_t *data, size_t size, size_t max_line)
{
	GString *s = g_string_new(NULL);

	while (size > 0) {
		const uint8_t *nl = memchr(data, '\n', size);
		size_t n = nl ? (size_t)(nl - data) : size, len = n;

		/* The limit is on the content: a last '\r' is the ending's (or may be). */
		if (n - (n > 0 && data[n - 1] == '\r') > max_line) {
			g_string_append_c(s, 'L');
		} else if (nl) {
			while (len > 0 && (data[len - 1] == '\r' || data[len - 1] == ' '))
				len--;
			if (len > 0)
				g_string_append_c(s, 'E');
		}
		if (!nl)
			break;
		data += n + 1;
		size -= n + 1;
	}
	return s;
}

static void feed(struct pass *ps, const uint8_t *data, size_t size, size_t chunk, size_t max_line)
{
	struct as_watch_parser p;

	as_watch_parser_init(&p, max_line);
	while (size > 0) {
		size_t n = MIN(chunk, size);

		as_watch_parser_feed(&p, (const char *)data, n, on_event, ps);
		/* An oversized line is refused, never buffered; a '\r' that may end it aside. */
		CHECK(p.line && (p.line->len <= max_line ||
				 (p.line->len == max_line + 1 && p.line->str[max_line] == '\r')));
		data += n;
		size -= n;
	}
	as_watch_parser_clear(&p);
	CHECK(!p.line);
}

/* ---- whole documents ---- */

static void check_cluster(const uint8_t *data, size_t size)
{
	static char sentinel;
	struct as_cluster *c = (void *)&sentinel;
	g_autofree char *msg = NULL;
	int64_t now = 42;
	int r = as_cluster_from_json((const char *)data, size, &c, &now, &msg);
	g_autoptr(GHashTable) seen = NULL;

	if (r < 0) {
		check_failed(r, c, &sentinel, msg);
		CHECK(now == 42);
		return;
	}
	CHECK(!msg);
	seen = g_hash_table_new(g_str_hash, g_str_equal);
	for (guint i = 0; i < c->nodes->len; i++) {
		const struct as_node *n = c->nodes->pdata[i];

		check_node(n);
		CHECK(g_hash_table_add(seen, n->name));
	}
	g_hash_table_remove_all(seen);
	for (guint i = 0; i < c->pods->len; i++) {
		const struct as_pod *p = c->pods->pdata[i];

		check_pod(p);
		CHECK(g_hash_table_add(seen, p->key));
	}
	for (guint i = 0; i < c->pdbs->len; i++)
		check_pdb(c->pdbs->pdata[i]);
	g_hash_table_remove_all(seen);
	for (guint i = 0; i < c->groups->len; i++) {
		const struct as_node_group *g = c->groups->pdata[i];

		check_group(g);
		CHECK(g_hash_table_add(seen, g->id));
	}
	as_cluster_free(c);
}

/* Is @data one JSON value and nothing after it but white space? */
static bool one_json_value(const uint8_t *data, size_t size)
{
	json_tokener *tok = json_tokener_new();
	json_object *o = json_tokener_parse_ex(tok, (const char *)data, (int)MIN(size, (size_t)G_MAXINT));
	bool ok = o && json_tokener_get_error(tok) == json_tokener_success &&
		  json_tokener_get_parse_end(tok) == size;

	json_object_put(o);
	json_tokener_free(tok);
	return ok;
}

static void check_options(const uint8_t *data, size_t size)
{
	struct as_options o, before;
	g_autofree char *msg = NULL;
	int r;

	as_options_init(&o);
	/* Something to keep on failure: a priority rule of our own. */
	CHECK(as_options_set(&o, "priorities", "7:^fuzz-", &msg) == 0);
	memcpy(&before, &o, sizeof(o));
	r = as_options_from_json(&o, (const char *)data, size, &msg);
	if (r < 0) {
		CHECK(r == -EINVAL && msg && *msg);
		CHECK(memcmp(&o, &before, sizeof(o)) == 0); /* all or nothing */
	} else {
		CHECK(r == 0 && !msg);
		/* As a snapshot: a second value after the first is an error, not ignored. */
		CHECK(one_json_value(data, size));
		/* The table's ranges: a value outside is an error, never clamped. */
		CHECK(o.scan_interval >= 1);
		CHECK(o.n_expanders >= 1 && o.n_expanders <= AS_MAX_EXPANDERS);
		for (guint i = 0; i < o.n_expanders; i++)
			CHECK(o.expanders[i] <= AS_EXPANDER_PRIORITY);
		CHECK(o.cores_min >= 0 && o.cores_min <= o.cores_max);
		CHECK(o.memory_min >= 0 && o.memory_min <= o.memory_max);
		CHECK(o.gpu_min >= 0 && o.gpu_min <= o.gpu_max);
		CHECK(o.max_nodes_per_scaleup >= 1 && o.max_scale_down_parallelism >= 1 &&
		      o.max_drain_parallelism >= 1);
		CHECK(o.scale_down_utilization_threshold >= 0 &&
		      o.scale_down_utilization_threshold <= 1);
		CHECK(o.scale_down_gpu_utilization_threshold >= 0 &&
		      o.scale_down_gpu_utilization_threshold <= 1);
		CHECK(o.max_total_unready_percentage >= 0 && o.max_total_unready_percentage <= 100);
		CHECK(o.scale_down_unneeded_time >= 0 && o.max_node_provision_time >= 0 &&
		      o.initial_node_group_backoff_duration >= 0);
		CHECK(o.n_priorities == 0 || o.priorities);
		for (guint i = 0; i < o.n_priorities; i++)
			CHECK(o.priorities[i].regex && o.priorities[i].priority >= G_MININT32 &&
			      o.priorities[i].priority <= G_MAXINT32);
	}
	as_options_clear(&o);
}

static void check_path(const char *path)
{
	CHECK(!path || g_path_is_absolute(path));
}

static void check_kubeconfig(const uint8_t *data, size_t size)
{
	static char sentinel;
	struct as_kube_config *c = (void *)&sentinel;
	g_autofree char *msg = NULL;
	int r = as_kube_config_parse((const char *)data, size, "/fuzz/kube", NULL, &c, &msg);
	const char *host;

	if (r < 0) {
		CHECK(c == (void *)&sentinel);
		CHECK(msg && *msg);
		return;
	}
	CHECK(r == 0 && !msg);
	CHECK(c->server);
	host = g_str_has_prefix(c->server, "https://") ? c->server + 8
	       : g_str_has_prefix(c->server, "http://") ? c->server + 7
							: NULL;
	CHECK(host && *host && *host != '/'); /* a URL with a host */
	CHECK(!g_str_has_suffix(c->server, "/"));
	CHECK(!c->cert_file == !c->key_file);
	CHECK(!c->token || *c->token);
	/* Relative names are made relative to the kubeconfig's directory. */
	check_path(c->ca_file);
	check_path(c->cert_file);
	check_path(c->key_file);
	check_path(c->token_file);
	for (guint i = 0; i < c->temp_files->len; i++)
		CHECK(g_file_test(c->temp_files->pdata[i], G_FILE_TEST_IS_REGULAR));
	as_kube_config_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pass chunked = {g_ptr_array_new_with_free_func(g_free), g_string_new(NULL), true};
	struct pass whole = {g_ptr_array_new_with_free_func(g_free), g_string_new(NULL), false};
	GString *want;
	size_t chunk, max_line;
	uint8_t ctl;

	if (size == 0)
		return 0;
	/* A GLib critical is a precondition the parsers let hostile input break. */
	g_log_set_always_fatal(G_LOG_LEVEL_CRITICAL | G_LOG_FATAL_MASK);
	ctl = data[0];
	chunk = (size_t)(ctl & 0x3f) + 1;
	max_line = (ctl & 0x40) ? SMALL_MAX_LINE : AS_KUBE_MAX_WATCH_LINE;
	data++;
	size--;

	feed(&chunked, data, size, chunk, max_line);
	feed(&whole, data, size, SIZE_MAX, max_line);
	want = model_shape(data, size, max_line);
	CHECK(strcmp(chunked.shape->str, want->str) == 0);
	CHECK(strcmp(whole.shape->str, want->str) == 0);
	CHECK(chunked.log->len == whole.log->len);
	for (guint i = 0; i < chunked.log->len; i++)
		CHECK(strcmp(chunked.log->pdata[i], whole.log->pdata[i]) == 0);
	g_string_free(want, TRUE);
	g_ptr_array_unref(chunked.log);
	g_ptr_array_unref(whole.log);
	g_string_free(chunked.shape, TRUE);
	g_string_free(whole.shape, TRUE);

	if (ctl & 0x80) {
		check_cluster(data, size);
		check_options(data, size);
		check_kubeconfig(data, size);
		check_list_answers(data, size, ctl);
	}
	return 0;
}
