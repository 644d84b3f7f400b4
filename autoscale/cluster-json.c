// SPDX-License-Identifier: Apache-2.0
/*
 * Snapshot JSON reader and decision JSON writer (cluster-json.h), with
 * json-c.  The reader walks the document keeping the JSON path of where it
 * is ("pods[12].spec.containers[0]"), so that every error names the exact
 * place and what is wrong with it.  It follows the API's defaulting where
 * the core depends on it: allocatable defaults to capacity, a missing
 * namespace is "default", container requests default to their limits, a
 * pod requests max(sum of containers, largest init container) plus its
 * overhead.
 */
#include "config.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <string.h>

#include "cluster-json.h"
#include "units.h"

struct jp {
	GString *path;
	char *err;
};

static int jp_fail(struct jp *j, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static int jp_fail(struct jp *j, const char *fmt, ...)
{
	va_list ap;
	g_autofree char *m = NULL;

	va_start(ap, fmt);
	m = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	if (!j->err)
		j->err = j->path->len ? g_strdup_printf("%s: %s", j->path->str, m) : g_steal_pointer(&m);
	return -EINVAL;
}

static gsize jp_key(struct jp *j, const char *key)
{
	gsize old = j->path->len;

	if (old)
		g_string_append_c(j->path, '.');
	g_string_append(j->path, key);
	return old;
}

static gsize jp_idx(struct jp *j, size_t i)
{
	gsize old = j->path->len;

	g_string_append_printf(j->path, "[%zu]", i);
	return old;
}

static void jp_pop(struct jp *j, gsize len)
{
	g_string_truncate(j->path, len);
}

static const char *type_name(json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_null:
		return "null";
	case json_type_boolean:
		return "a boolean";
	case json_type_double:
	case json_type_int:
		return "a number";
	case json_type_object:
		return "an object";
	case json_type_array:
		return "an array";
	case json_type_string:
		return "a string";
	}
	return "?";
}

/* Member @key of @obj with type @want; absent or null -> *out NULL.  Path is left pushed on error. */
static int member(struct jp *j, json_object *obj, const char *key, json_type want, json_object **out)
{
	json_object *v = NULL;

	*out = NULL;
	if (!obj || !json_object_object_get_ex(obj, key, &v) || json_object_get_type(v) == json_type_null)
		return 0;
	if (json_object_get_type(v) != want &&
	    !(want == json_type_double && json_object_get_type(v) == json_type_int)) {
		gsize old = jp_key(j, key);
		static const char *const want_names[] = {
			[json_type_null] = "null",	  [json_type_boolean] = "a boolean",
			[json_type_double] = "a number",  [json_type_int] = "an integer",
			[json_type_object] = "an object", [json_type_array] = "an array",
			[json_type_string] = "a string",
		};
		int r = jp_fail(j, "expected %s, got %s", want_names[want], type_name(v));

		jp_pop(j, old);
		return r;
	}
	*out = v;
	return 0;
}

static int get_string(struct jp *j, json_object *obj, const char *key, char **out)
{
	json_object *v;
	int r = member(j, obj, key, json_type_string, &v);

	if (r == 0 && v) {
		g_free(*out);
		*out = g_strdup(json_object_get_string(v));
	}
	return r;
}

static int get_bool(struct jp *j, json_object *obj, const char *key, bool *out)
{
	json_object *v;
	int r = member(j, obj, key, json_type_boolean, &v);

	if (r == 0 && v)
		*out = json_object_get_boolean(v);
	return r;
}

static int get_int(struct jp *j, json_object *obj, const char *key, int64_t min, int64_t max,
		   int64_t *out)
{
	json_object *v;
	int r = member(j, obj, key, json_type_int, &v);
	int64_t x;

	if (r < 0 || !v)
		return r;
	errno = 0;
	x = json_object_get_int64(v);
	if (errno || x < min || x > max) {
		gsize old = jp_key(j, key);

		r = jp_fail(j, "%s is out of range [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]",
			    json_object_to_json_string(v), min, max);
		jp_pop(j, old);
		return r;
	}
	*out = x;
	return 0;
}

static int get_time(struct jp *j, json_object *obj, const char *key, int64_t *out)
{
	json_object *v;
	int r = member(j, obj, key, json_type_string, &v);

	if (r < 0 || !v)
		return r;
	if (as_time_parse(json_object_get_string(v), out) < 0) {
		gsize old = jp_key(j, key);

		r = jp_fail(j, "\"%s\" is not an RFC 3339 time", json_object_get_string(v));
		jp_pop(j, old);
	}
	return r;
}

/* String map (labels, annotations, nodeSelector). */
static int get_map(struct jp *j, json_object *obj, const char *key, struct as_kvs *out)
{
	json_object *m;
	int r = member(j, obj, key, json_type_object, &m);

	if (r < 0 || !m)
		return r;
	json_object_object_foreach(m, k, v)
	{
		if (json_object_get_type(v) != json_type_string) {
			gsize old = jp_key(j, key);

			jp_key(j, k);
			r = jp_fail(j, "expected a string, got %s", type_name(v));
			jp_pop(j, old);
			return r;
		}
		as_kvs_add(out, k, json_object_get_string(v));
	}
	return 0;
}

static int quantity(struct jp *j, json_object *v, int milli, int64_t *out)
{
	const char *s;
	char buf[64];
	int r;

	if (json_object_get_type(v) == json_type_int) {
		g_snprintf(buf, sizeof(buf), "%" G_GINT64_FORMAT, json_object_get_int64(v));
		s = buf;
	} else if (json_object_get_type(v) == json_type_double) {
		g_snprintf(buf, sizeof(buf), "%.17g", json_object_get_double(v));
		s = buf;
	} else if (json_object_get_type(v) == json_type_string) {
		s = json_object_get_string(v);
	} else {
		return jp_fail(j, "expected a quantity, got %s", type_name(v));
	}
	r = as_quantity_parse(s, milli, out);
	if (r == -ERANGE)
		return jp_fail(j, "\"%s\" is too large", s);
	if (r < 0)
		return jp_fail(j, "\"%s\" is not a Kubernetes quantity", s);
	if (*out < 0)
		return jp_fail(j, "\"%s\" is negative", s);
	return 0;
}

/* {cpu, memory, pods, nvidia.com/gpu}: the keys present overwrite @res. */
static int resource_list(struct jp *j, json_object *obj, const char *key, struct as_resources *res,
			 bool *present)
{
	json_object *m;
	int r = member(j, obj, key, json_type_object, &m);
	gsize old;

	if (present)
		*present = m != NULL;
	if (r < 0 || !m)
		return r;
	old = jp_key(j, key);
	json_object_object_foreach(m, k, v)
	{
		int64_t *dst = NULL;
		int milli = 0;
		gsize o2;

		if (strcmp(k, "cpu") == 0) {
			dst = &res->cpu;
			milli = 3;
		} else if (strcmp(k, "memory") == 0) {
			dst = &res->mem;
		} else if (strcmp(k, "pods") == 0) {
			dst = &res->pods;
		} else if (strcmp(k, "nvidia.com/gpu") == 0 || g_str_has_suffix(k, "/gpu")) {
			dst = &res->gpu;
		} else {
			continue; /* ephemeral-storage, hugepages, extended resources: not modelled */
		}
		o2 = jp_key(j, k);
		r = quantity(j, v, milli, dst);
		jp_pop(j, o2);
		if (r < 0)
			return r;
	}
	jp_pop(j, old);
	return 0;
}

static int items(struct jp *j, json_object *root, const char *key, json_object **out)
{
	json_object *v = NULL;

	*out = NULL;
	if (!json_object_object_get_ex(root, key, &v) || json_object_get_type(v) == json_type_null)
		return 0;
	if (json_object_get_type(v) == json_type_object) {
		/* A whole List object as kubectl prints it. */
		gsize old = jp_key(j, key);
		int r = member(j, v, "items", json_type_array, out);

		if (r == 0 && !*out)
			r = jp_fail(j, "expected an array or a List object with items");
		if (r == 0)
			jp_pop(j, old);
		return r;
	}
	return member(j, root, key, json_type_array, out);
}

static int taint_effect(struct jp *j, const char *s, bool allow_empty, enum as_taint_effect *out)
{
	if (allow_empty && (!s || !*s))
		*out = AS_EFFECT_ANY;
	else if (s && strcmp(s, "NoSchedule") == 0)
		*out = AS_EFFECT_NO_SCHEDULE;
	else if (s && strcmp(s, "PreferNoSchedule") == 0)
		*out = AS_EFFECT_PREFER_NO_SCHEDULE;
	else if (s && strcmp(s, "NoExecute") == 0)
		*out = AS_EFFECT_NO_EXECUTE;
	else
		return jp_fail(j, "\"%s\" is not NoSchedule, PreferNoSchedule or NoExecute",
			       s ? s : "");
	return 0;
}

/* @default_name: used when metadata.name is absent (templates); NULL = required. */
static int parse_node(struct jp *j, json_object *o, struct as_node *n, const char *default_name)
{
	json_object *meta, *spec, *status, *taints, *conds;
	bool has_alloc = false;
	int r;

	if (json_object_get_type(o) != json_type_object)
		return jp_fail(j, "expected a Node object, got %s", type_name(o));
	if ((r = member(j, o, "metadata", json_type_object, &meta)) < 0 ||
	    (r = member(j, o, "spec", json_type_object, &spec)) < 0 ||
	    (r = member(j, o, "status", json_type_object, &status)) < 0)
		return r;
	if (!meta && !default_name)
		return jp_fail(j, "missing metadata");
	if ((r = get_string(j, meta, "name", &n->name)) < 0)
		return r;
	if ((!n->name || !*n->name) && default_name) {
		g_free(n->name);
		n->name = g_strdup(default_name);
	}
	if (!n->name || !*n->name) {
		gsize old = jp_key(j, "metadata");

		r = jp_fail(j, "missing name");
		jp_pop(j, old);
		return r;
	}
	gsize old = jp_key(j, "metadata");
	if ((r = get_map(j, meta, "labels", &n->labels)) < 0 ||
	    (r = get_map(j, meta, "annotations", &n->annotations)) < 0 ||
	    (r = get_time(j, meta, "creationTimestamp", &n->creation_time)) < 0)
		return r;
	jp_pop(j, old);
	old = jp_key(j, "spec");
	if ((r = get_string(j, spec, "providerID", &n->provider_id)) < 0 ||
	    (r = get_bool(j, spec, "unschedulable", &n->unschedulable)) < 0 ||
	    (r = member(j, spec, "taints", json_type_array, &taints)) < 0)
		return r;
	if (taints) {
		gsize o2 = jp_key(j, "taints");
		size_t len = json_object_array_length(taints);

		n->taints = g_new0(struct as_taint, len ? len : 1);
		for (size_t i = 0; i < len; i++) {
			json_object *t = json_object_array_get_idx(taints, i);
			struct as_taint *dst = &n->taints[n->n_taints++];
			g_autofree char *effect = NULL;
			gsize o3 = jp_idx(j, i);

			if (json_object_get_type(t) != json_type_object)
				return jp_fail(j, "expected an object, got %s", type_name(t));
			if ((r = get_string(j, t, "key", &dst->key)) < 0 ||
			    (r = get_string(j, t, "value", &dst->value)) < 0 ||
			    (r = get_string(j, t, "effect", &effect)) < 0)
				return r;
			if (!dst->key)
				return jp_fail(j, "taint without a key");
			if (!dst->value)
				dst->value = g_strdup("");
			jp_key(j, "effect");
			if ((r = taint_effect(j, effect, false, &dst->effect)) < 0)
				return r;
			jp_pop(j, o3);
		}
		jp_pop(j, o2);
	}
	jp_pop(j, old);
	old = jp_key(j, "status");
	n->capacity.pods = 110;
	if ((r = resource_list(j, status, "capacity", &n->capacity, NULL)) < 0)
		return r;
	n->allocatable = n->capacity;
	if ((r = resource_list(j, status, "allocatable", &n->allocatable, &has_alloc)) < 0 ||
	    (r = member(j, status, "conditions", json_type_array, &conds)) < 0)
		return r;
	n->ready = conds == NULL; /* no conditions at all (a template): Ready */
	for (size_t i = 0; conds && i < json_object_array_length(conds); i++) {
		json_object *cnd = json_object_array_get_idx(conds, i);
		g_autofree char *type = NULL, *st = NULL;
		gsize o2 = jp_key(j, "conditions");

		jp_idx(j, i);
		if (json_object_get_type(cnd) != json_type_object)
			return jp_fail(j, "expected an object, got %s", type_name(cnd));
		if ((r = get_string(j, cnd, "type", &type)) < 0 || (r = get_string(j, cnd, "status", &st)) < 0)
			return r;
		jp_pop(j, o2);
		bool t = st && strcmp(st, "True") == 0;
		if (!type)
			continue;
		if (strcmp(type, "Ready") == 0)
			n->ready = t;
		else if (strcmp(type, "DiskPressure") == 0)
			n->disk_pressure = t;
		else if (strcmp(type, "MemoryPressure") == 0)
			n->memory_pressure = t;
		else if (strcmp(type, "PIDPressure") == 0)
			n->pid_pressure = t;
		else if (strcmp(type, "NetworkUnavailable") == 0)
			n->network_unavailable = t;
	}
	jp_pop(j, old);
	return 0;
}

static int string_array(struct jp *j, json_object *obj, const char *key, char ***out)
{
	json_object *a;
	int r = member(j, obj, key, json_type_array, &a);
	size_t len;

	if (r < 0)
		return r;
	len = a ? json_object_array_length(a) : 0;
	*out = g_new0(char *, len + 1);
	for (size_t i = 0; i < len; i++) {
		json_object *v = json_object_array_get_idx(a, i);

		if (json_object_get_type(v) != json_type_string) {
			gsize old = jp_key(j, key);

			jp_idx(j, i);
			r = jp_fail(j, "expected a string, got %s", type_name(v));
			jp_pop(j, old);
			return r;
		}
		(*out)[i] = g_strdup(json_object_get_string(v));
	}
	return 0;
}

static int match_exprs(struct jp *j, json_object *obj, const char *key, bool node_ops,
		       struct as_match_expr **out, guint *n_out)
{
	json_object *a;
	int r = member(j, obj, key, json_type_array, &a);
	size_t len;
	gsize old;

	if (r < 0 || !a)
		return r;
	len = json_object_array_length(a);
	old = jp_key(j, key);
	*out = g_new0(struct as_match_expr, len ? len : 1);
	for (size_t i = 0; i < len; i++) {
		json_object *e = json_object_array_get_idx(a, i);
		struct as_match_expr *x = &(*out)[(*n_out)++];
		g_autofree char *op = NULL;
		gsize o2 = jp_idx(j, i);

		if (json_object_get_type(e) != json_type_object)
			return jp_fail(j, "expected an object, got %s", type_name(e));
		if ((r = get_string(j, e, "key", &x->key)) < 0 || (r = get_string(j, e, "operator", &op)) < 0 ||
		    (r = string_array(j, e, "values", &x->values)) < 0)
			return r;
		if (!x->key)
			return jp_fail(j, "missing key");
		if (op && strcmp(op, "In") == 0)
			x->op = AS_OP_IN;
		else if (op && strcmp(op, "NotIn") == 0)
			x->op = AS_OP_NOT_IN;
		else if (op && strcmp(op, "Exists") == 0)
			x->op = AS_OP_EXISTS;
		else if (op && strcmp(op, "DoesNotExist") == 0)
			x->op = AS_OP_DOES_NOT_EXIST;
		else if (node_ops && op && strcmp(op, "Gt") == 0)
			x->op = AS_OP_GT;
		else if (node_ops && op && strcmp(op, "Lt") == 0)
			x->op = AS_OP_LT;
		else {
			jp_key(j, "operator");
			return jp_fail(j, "\"%s\" is not %s", op ? op : "",
				       node_ops ? "In, NotIn, Exists, DoesNotExist, Gt or Lt"
						: "In, NotIn, Exists or DoesNotExist");
		}
		jp_pop(j, o2);
	}
	jp_pop(j, old);
	return 0;
}

/*
 * Requests of one container list: sum (@init false) or max (@init true)
 * into @acc; *@overflow set when a sum went past INT64_MAX.
 */
static int containers(struct jp *j, json_object *spec, const char *key, bool init,
		      struct as_resources *acc, bool *overflow)
{
	json_object *a;
	int r = member(j, spec, key, json_type_array, &a);
	gsize old;

	if (r < 0 || !a)
		return r;
	old = jp_key(j, key);
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		json_object *c = json_object_array_get_idx(a, i), *res;
		struct as_resources lim = {0, 0, 0, 0}, req;
		gsize o2 = jp_idx(j, i), o3;

		if (json_object_get_type(c) != json_type_object)
			return jp_fail(j, "expected an object, got %s", type_name(c));
		if ((r = member(j, c, "resources", json_type_object, &res)) < 0)
			return r;
		o3 = jp_key(j, "resources");
		if ((r = resource_list(j, res, "limits", &lim, NULL)) < 0)
			return r;
		req = lim; /* requests default to limits */
		if ((r = resource_list(j, res, "requests", &req, NULL)) < 0)
			return r;
		jp_pop(j, o3);
		if (init) {
			acc->cpu = MAX(acc->cpu, req.cpu);
			acc->mem = MAX(acc->mem, req.mem);
			acc->gpu = MAX(acc->gpu, req.gpu);
		} else {
			*overflow |= as_add_saturating(&acc->cpu, req.cpu) |
				     as_add_saturating(&acc->mem, req.mem) |
				     as_add_saturating(&acc->gpu, req.gpu);
		}
		jp_pop(j, o2);
	}
	jp_pop(j, old);
	return 0;
}

static int parse_pod(struct jp *j, json_object *o, struct as_pod *p)
{
	json_object *meta, *spec, *status, *a, *aff = NULL, *na = NULL, *req = NULL, *terms = NULL;
	struct as_resources sum = {0, 0, 0, 0}, init = {0, 0, 0, 0}, over = {0, 0, 0, 0};
	g_autofree char *phase = NULL;
	int64_t prio = 0, grace = 30;
	gsize old;
	int r;

	if (json_object_get_type(o) != json_type_object)
		return jp_fail(j, "expected a Pod object, got %s", type_name(o));
	if ((r = member(j, o, "metadata", json_type_object, &meta)) < 0 ||
	    (r = member(j, o, "spec", json_type_object, &spec)) < 0 ||
	    (r = member(j, o, "status", json_type_object, &status)) < 0)
		return r;
	if (!meta)
		return jp_fail(j, "missing metadata");
	old = jp_key(j, "metadata");
	if ((r = get_string(j, meta, "name", &p->name)) < 0 ||
	    (r = get_string(j, meta, "namespace", &p->ns)) < 0 ||
	    (r = get_map(j, meta, "labels", &p->labels)) < 0 ||
	    (r = get_map(j, meta, "annotations", &p->annotations)) < 0 ||
	    (r = get_time(j, meta, "creationTimestamp", &p->creation_time)) < 0 ||
	    (r = get_time(j, meta, "deletionTimestamp", &p->deletion_time)) < 0 ||
	    (r = member(j, meta, "ownerReferences", json_type_array, &a)) < 0)
		return r;
	if (!p->name || !*p->name)
		return jp_fail(j, "missing name");
	/* Absent is the default namespace; empty, the API never sends. */
	if (p->ns && !*p->ns)
		return jp_fail(j, "empty namespace");
	if (!p->ns)
		p->ns = g_strdup("default");
	for (size_t i = 0; a && i < json_object_array_length(a); i++) {
		json_object *ref = json_object_array_get_idx(a, i);
		bool ctl = false;
		g_autofree char *kind = NULL, *name = NULL;
		gsize o2 = jp_key(j, "ownerReferences");

		jp_idx(j, i);
		if (json_object_get_type(ref) != json_type_object)
			return jp_fail(j, "expected an object, got %s", type_name(ref));
		if ((r = get_bool(j, ref, "controller", &ctl)) < 0 || (r = get_string(j, ref, "kind", &kind)) < 0 ||
		    (r = get_string(j, ref, "name", &name)) < 0)
			return r;
		jp_pop(j, o2);
		/* A controller without a kind names nothing: the pod is as one without. */
		if (ctl && kind && !p->owner_kind) {
			p->owner_kind = g_steal_pointer(&kind);
			p->owner_name = name ? g_steal_pointer(&name) : g_strdup("");
		}
	}
	jp_pop(j, old);
	as_pod_set_key(p);

	old = jp_key(j, "spec");
	if ((r = get_string(j, spec, "nodeName", &p->node_name)) < 0 ||
	    (r = get_int(j, spec, "priority", G_MININT32, G_MAXINT32, &prio)) < 0 ||
	    (r = get_int(j, spec, "terminationGracePeriodSeconds", 0, G_MAXINT32, &grace)) < 0 ||
	    (r = get_map(j, spec, "nodeSelector", &p->node_selector)) < 0 ||
	    (r = containers(j, spec, "containers", false, &sum, &p->requests_overflow)) < 0 ||
	    (r = containers(j, spec, "initContainers", true, &init, &p->requests_overflow)) < 0 ||
	    (r = resource_list(j, spec, "overhead", &over, NULL)) < 0)
		return r;
	if (p->node_name && !*p->node_name)
		g_clear_pointer(&p->node_name, g_free);
	p->priority = (int32_t)prio;
	p->grace_period_s = grace;
	p->requests.cpu = MAX(sum.cpu, init.cpu);
	p->requests.mem = MAX(sum.mem, init.mem);
	p->requests.gpu = MAX(sum.gpu, init.gpu);
	p->requests_overflow |= as_add_saturating(&p->requests.cpu, over.cpu) |
				as_add_saturating(&p->requests.mem, over.mem) |
				as_add_saturating(&p->requests.gpu, over.gpu);
	p->requests.pods = 1;

	if ((r = member(j, spec, "tolerations", json_type_array, &a)) < 0)
		return r;
	if (a) {
		size_t len = json_object_array_length(a);
		gsize o2 = jp_key(j, "tolerations");

		p->tolerations = g_new0(struct as_toleration, len ? len : 1);
		for (size_t i = 0; i < len; i++) {
			json_object *t = json_object_array_get_idx(a, i);
			struct as_toleration *dst = &p->tolerations[p->n_tolerations++];
			g_autofree char *op = NULL, *effect = NULL;
			gsize o3 = jp_idx(j, i);

			if (json_object_get_type(t) != json_type_object)
				return jp_fail(j, "expected an object, got %s", type_name(t));
			if ((r = get_string(j, t, "key", &dst->key)) < 0 ||
			    (r = get_string(j, t, "value", &dst->value)) < 0 ||
			    (r = get_string(j, t, "operator", &op)) < 0 ||
			    (r = get_string(j, t, "effect", &effect)) < 0)
				return r;
			if (!dst->key)
				dst->key = g_strdup("");
			if (!op || strcmp(op, "Equal") == 0) {
				dst->exists = false;
			} else if (strcmp(op, "Exists") == 0) {
				dst->exists = true;
			} else {
				jp_key(j, "operator");
				return jp_fail(j, "\"%s\" is not Equal or Exists", op);
			}
			jp_key(j, "effect");
			if ((r = taint_effect(j, effect, true, &dst->effect)) < 0)
				return r;
			jp_pop(j, o3);
		}
		jp_pop(j, o2);
	}

	if ((r = member(j, spec, "affinity", json_type_object, &aff)) < 0)
		return r;
	if (aff) {
		gsize o2 = jp_key(j, "affinity");

		if ((r = member(j, aff, "nodeAffinity", json_type_object, &na)) < 0)
			return r;
		jp_key(j, "nodeAffinity");
		if ((r = member(j, na, "requiredDuringSchedulingIgnoredDuringExecution", json_type_object,
				&req)) < 0)
			return r;
		jp_key(j, "requiredDuringSchedulingIgnoredDuringExecution");
		if ((r = member(j, req, "nodeSelectorTerms", json_type_array, &terms)) < 0)
			return r;
		jp_key(j, "nodeSelectorTerms");
		if (terms) {
			size_t len = json_object_array_length(terms);

			p->affinity = g_new0(struct as_selector_term, len ? len : 1);
			for (size_t i = 0; i < len; i++) {
				json_object *t = json_object_array_get_idx(terms, i);
				struct as_selector_term *dst = &p->affinity[p->n_affinity++];
				gsize o3 = jp_idx(j, i);

				if (json_object_get_type(t) != json_type_object)
					return jp_fail(j, "expected an object, got %s", type_name(t));
				if ((r = match_exprs(j, t, "matchExpressions", true, &dst->exprs,
						     &dst->n_exprs)) < 0)
					return r;
				jp_pop(j, o3);
			}
		}
		jp_pop(j, o2);
	}

	if ((r = member(j, spec, "volumes", json_type_array, &a)) < 0)
		return r;
	if (a) {
		size_t len = json_object_array_length(a);
		gsize o2 = jp_key(j, "volumes");

		p->volumes = g_new0(struct as_volume, len ? len : 1);
		for (size_t i = 0; i < len; i++) {
			json_object *v = json_object_array_get_idx(a, i), *ed, *hp;
			struct as_volume *dst = &p->volumes[p->n_volumes++];
			g_autofree char *medium = NULL;
			gsize o3 = jp_idx(j, i);

			if (json_object_get_type(v) != json_type_object)
				return jp_fail(j, "expected an object, got %s", type_name(v));
			if ((r = get_string(j, v, "name", &dst->name)) < 0 ||
			    (r = member(j, v, "emptyDir", json_type_object, &ed)) < 0 ||
			    (r = member(j, v, "hostPath", json_type_object, &hp)) < 0)
				return r;
			if (!dst->name)
				dst->name = g_strdup("");
			if (ed) {
				jp_key(j, "emptyDir");
				if ((r = get_string(j, ed, "medium", &medium)) < 0)
					return r;
				dst->kind = medium && strcmp(medium, "Memory") == 0 ? AS_VOLUME_EMPTY_DIR_MEMORY
										    : AS_VOLUME_EMPTY_DIR;
			} else if (hp) {
				dst->kind = AS_VOLUME_HOST_PATH;
			}
			jp_pop(j, o3);
		}
		jp_pop(j, o2);
	}
	jp_pop(j, old);

	old = jp_key(j, "status");
	if ((r = get_string(j, status, "phase", &phase)) < 0 ||
	    (r = member(j, status, "conditions", json_type_array, &a)) < 0)
		return r;
	if (!phase || strcmp(phase, "Pending") == 0)
		p->phase = AS_PHASE_PENDING;
	else if (strcmp(phase, "Running") == 0)
		p->phase = AS_PHASE_RUNNING;
	else if (strcmp(phase, "Succeeded") == 0)
		p->phase = AS_PHASE_SUCCEEDED;
	else if (strcmp(phase, "Failed") == 0)
		p->phase = AS_PHASE_FAILED;
	else if (strcmp(phase, "Unknown") == 0)
		p->phase = AS_PHASE_UNKNOWN;
	else {
		jp_key(j, "phase");
		return jp_fail(j, "\"%s\" is not Pending, Running, Succeeded, Failed or Unknown", phase);
	}
	for (size_t i = 0; a && i < json_object_array_length(a); i++) {
		json_object *c = json_object_array_get_idx(a, i);
		g_autofree char *type = NULL, *st = NULL, *reason = NULL;
		gsize o2 = jp_key(j, "conditions");

		jp_idx(j, i);
		if (json_object_get_type(c) != json_type_object)
			return jp_fail(j, "expected an object, got %s", type_name(c));
		if ((r = get_string(j, c, "type", &type)) < 0 || (r = get_string(j, c, "status", &st)) < 0 ||
		    (r = get_string(j, c, "reason", &reason)) < 0)
			return r;
		jp_pop(j, o2);
		if (type && strcmp(type, "PodScheduled") == 0 && st && strcmp(st, "False") == 0 &&
		    reason && strcmp(reason, "Unschedulable") == 0)
			p->unschedulable = true;
	}
	jp_pop(j, old);
	return 0;
}

static int parse_pdb(struct jp *j, json_object *o, struct as_pdb *p)
{
	json_object *meta, *spec, *status, *sel;
	int64_t allowed = 0;
	gsize old;
	int r;

	if (json_object_get_type(o) != json_type_object)
		return jp_fail(j, "expected a PodDisruptionBudget object, got %s", type_name(o));
	if ((r = member(j, o, "metadata", json_type_object, &meta)) < 0 ||
	    (r = member(j, o, "spec", json_type_object, &spec)) < 0 ||
	    (r = member(j, o, "status", json_type_object, &status)) < 0)
		return r;
	old = jp_key(j, "metadata");
	if ((r = get_string(j, meta, "name", &p->name)) < 0 || (r = get_string(j, meta, "namespace", &p->ns)) < 0)
		return r;
	if (!p->name || !*p->name)
		return jp_fail(j, "missing name");
	if (p->ns && !*p->ns)
		return jp_fail(j, "empty namespace");
	jp_pop(j, old);
	if (!p->ns)
		p->ns = g_strdup("default");
	old = jp_key(j, "spec");
	if ((r = member(j, spec, "selector", json_type_object, &sel)) < 0)
		return r;
	if (sel) {
		p->has_selector = true;
		jp_key(j, "selector");
		if ((r = get_map(j, sel, "matchLabels", &p->match_labels)) < 0 ||
		    (r = match_exprs(j, sel, "matchExpressions", false, &p->exprs, &p->n_exprs)) < 0)
			return r;
	}
	jp_pop(j, old);
	old = jp_key(j, "status");
	if ((r = get_int(j, status, "disruptionsAllowed", 0, G_MAXINT32, &allowed)) < 0)
		return r;
	jp_pop(j, old);
	p->disruptions_allowed = (int32_t)allowed;
	return 0;
}

static int parse_group(struct jp *j, json_object *o, struct as_node_group *g)
{
	json_object *tmpl, *a;
	int64_t v;
	int r;

	if (json_object_get_type(o) != json_type_object)
		return jp_fail(j, "expected an object, got %s", type_name(o));
	if ((r = get_string(j, o, "id", &g->id)) < 0)
		return r;
	if (!g->id || !*g->id)
		return jp_fail(j, "missing id");
	v = 0;
	if ((r = get_int(j, o, "min_size", 0, 1000000, &v)) < 0)
		return r;
	g->min_size = (int)v;
	v = 0;
	if ((r = get_int(j, o, "max_size", 0, 1000000, &v)) < 0)
		return r;
	g->max_size = (int)v;
	if (g->max_size < g->min_size) {
		gsize old = jp_key(j, "max_size");

		r = jp_fail(j, "%d is below min_size %d", g->max_size, g->min_size);
		jp_pop(j, old);
		return r;
	}
	v = -1;
	if ((r = get_int(j, o, "target_size", 0, 1000000, &v)) < 0)
		return r;
	g->target_size = (int)v; /* -1: from the members, below */
	if ((r = member(j, o, "price", json_type_double, &a)) < 0)
		return r;
	if (a)
		g->price = json_object_get_double(a);
	if ((r = get_time(j, o, "scale_up_time", &g->scale_up_time)) < 0 ||
	    (r = get_time(j, o, "backoff_until", &g->backoff_until)) < 0 ||
	    (r = get_time(j, o, "last_failure", &g->last_failure)) < 0)
		return r;
	if ((r = member(j, o, "backoff_duration", json_type_string, &a)) < 0)
		return r;
	if (a && as_duration_parse(json_object_get_string(a), &g->backoff_duration) < 0) {
		gsize old = jp_key(j, "backoff_duration");

		r = jp_fail(j, "\"%s\" is not a duration", json_object_get_string(a));
		jp_pop(j, old);
		return r;
	}
	if ((r = member(j, o, "template", json_type_object, &tmpl)) < 0)
		return r;
	if (tmpl) {
		gsize old = jp_key(j, "template");

		g_autofree char *name = g_strdup_printf("%s-template", g->id);

		g->template_node = as_node_new();
		if ((r = parse_node(j, tmpl, g->template_node, name)) < 0)
			return r;
		jp_pop(j, old);
	}
	if ((r = member(j, o, "nodes", json_type_array, &a)) < 0)
		return r;
	for (size_t i = 0; a && i < json_object_array_length(a); i++) {
		json_object *nm = json_object_array_get_idx(a, i);

		if (json_object_get_type(nm) != json_type_string) {
			gsize old = jp_key(j, "nodes");

			jp_idx(j, i);
			r = jp_fail(j, "expected a node name, got %s", type_name(nm));
			jp_pop(j, old);
			return r;
		}
		g->instances = g_renew(struct as_instance, g->instances, g->n_instances + 1);
		g->instances[g->n_instances++] = (struct as_instance){
			g_strdup(json_object_get_string(nm)), AS_INSTANCE_RUNNING, AS_ERROR_NONE,
			AS_TIME_NEVER};
	}
	if ((r = member(j, o, "instances", json_type_array, &a)) < 0)
		return r;
	for (size_t i = 0; a && i < json_object_array_length(a); i++) {
		json_object *in = json_object_array_get_idx(a, i);
		struct as_instance x = {NULL, AS_INSTANCE_RUNNING, AS_ERROR_NONE, AS_TIME_NEVER};
		g_autofree char *state = NULL, *err = NULL;
		gsize old = jp_key(j, "instances");

		jp_idx(j, i);
		if (json_object_get_type(in) != json_type_object)
			return jp_fail(j, "expected an object, got %s", type_name(in));
		if ((r = get_string(j, in, "state", &state)) < 0 || (r = get_string(j, in, "error", &err)) < 0 ||
		    (r = get_time(j, in, "since", &x.since)) < 0 || (r = get_string(j, in, "id", &x.id)) < 0)
			return r;
		if (!x.id)
			return jp_fail(j, "missing id");
		if (!state || strcmp(state, "Running") == 0)
			x.state = AS_INSTANCE_RUNNING;
		else if (strcmp(state, "Creating") == 0)
			x.state = AS_INSTANCE_CREATING;
		else if (strcmp(state, "Deleting") == 0)
			x.state = AS_INSTANCE_DELETING;
		else {
			g_free(x.id);
			jp_key(j, "state");
			return jp_fail(j, "\"%s\" is not Running, Creating or Deleting", state);
		}
		if (!err || !*err)
			x.error = AS_ERROR_NONE;
		else if (strcmp(err, "OutOfResources") == 0)
			x.error = AS_ERROR_OUT_OF_RESOURCES;
		else
			x.error = AS_ERROR_OTHER;
		g->instances = g_renew(struct as_instance, g->instances, g->n_instances + 1);
		g->instances[g->n_instances++] = x;
		jp_pop(j, old);
	}
	if (g->target_size < 0)
		g->target_size = (int)g->n_instances;
	return 0;
}

typedef int (*parse_fn)(struct jp *j, json_object *o, void *obj);

static void *new_node(void) { return as_node_new(); }
static void *new_pod(void) { return as_pod_new(); }
static void *new_pdb(void) { return as_pdb_new(); }
static void *new_group(void) { return as_node_group_new(); }
static void free_node(void *p) { as_node_free(p); }
static void free_pod(void *p) { as_pod_free(p); }
static void free_pdb(void *p) { as_pdb_free(p); }
static void free_group(void *p) { as_node_group_free(p); }
static int parse_node_v(struct jp *j, json_object *o, void *p) { return parse_node(j, o, p, NULL); }
static int parse_pod_v(struct jp *j, json_object *o, void *p) { return parse_pod(j, o, p); }
static int parse_pdb_v(struct jp *j, json_object *o, void *p) { return parse_pdb(j, o, p); }
static int parse_group_v(struct jp *j, json_object *o, void *p) { return parse_group(j, o, p); }

static int parse_list(struct jp *j, json_object *root, const char *key, GPtrArray *dst,
		      void *(*make)(void), GDestroyNotify destroy, parse_fn fn)
{
	json_object *a;
	int r = items(j, root, key, &a);
	gsize old;

	if (r < 0 || !a)
		return r;
	old = jp_key(j, key);
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		void *obj = make();
		gsize o2 = jp_idx(j, i);

		r = fn(j, json_object_array_get_idx(a, i), obj);
		if (r < 0) {
			destroy(obj);
			return r;
		}
		g_ptr_array_add(dst, obj);
		jp_pop(j, o2);
	}
	jp_pop(j, old);
	return 0;
}

/* One object of a kind, outside any snapshot: the daemon's cache entries. */
static int parse_one(json_object *o, void *(*make)(void), GDestroyNotify destroy, parse_fn fn,
		     void **out, char **msg)
{
	struct jp j = {g_string_new(NULL), NULL};
	void *obj = make();
	int r;

	if (!o || json_object_get_type(o) != json_type_object)
		r = jp_fail(&j, "not a JSON object");
	else
		r = fn(&j, o, obj);
	if (r < 0) {
		*msg = g_steal_pointer(&j.err);
		destroy(obj);
	} else {
		*out = obj;
	}
	g_free(j.err);
	g_string_free(j.path, TRUE);
	return r;
}

int as_node_from_json(struct json_object *o, struct as_node **out, char **msg)
{
	return parse_one(o, new_node, free_node, parse_node_v, (void **)out, msg);
}

int as_pod_from_json(struct json_object *o, struct as_pod **out, char **msg)
{
	return parse_one(o, new_pod, free_pod, parse_pod_v, (void **)out, msg);
}

int as_pdb_from_json(struct json_object *o, struct as_pdb **out, char **msg)
{
	return parse_one(o, new_pdb, free_pdb, parse_pdb_v, (void **)out, msg);
}

struct json_object *as_json_member(struct json_object *o, const char *key)
{
	json_object *v = NULL;

	return o && json_object_is_type(o, json_type_object) &&
			       json_object_object_get_ex(o, key, &v)
		       ? v
		       : NULL;
}

const char *as_json_string(struct json_object *o, const char *key)
{
	json_object *v = as_json_member(o, key);

	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static int check_unique(struct jp *j, struct as_cluster *c)
{
	g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);

	for (guint i = 0; i < c->nodes->len; i++) {
		struct as_node *n = c->nodes->pdata[i];

		if (!g_hash_table_add(seen, n->name))
			return jp_fail(j, "nodes[%u]: duplicate node name \"%s\"", i, n->name);
	}
	g_hash_table_remove_all(seen);
	for (guint i = 0; i < c->pods->len; i++) {
		struct as_pod *p = c->pods->pdata[i];

		if (!g_hash_table_add(seen, p->key))
			return jp_fail(j, "pods[%u]: duplicate pod \"%s\"", i, p->key);
	}
	g_hash_table_remove_all(seen);
	for (guint i = 0; i < c->groups->len; i++) {
		struct as_node_group *g = c->groups->pdata[i];

		if (!g_hash_table_add(seen, g->id))
			return jp_fail(j, "node_groups[%u]: duplicate id \"%s\"", i, g->id);
	}
	return 0;
}

int as_cluster_from_json(const char *buf, size_t len, struct as_cluster **out, int64_t *now,
			 char **msg)
{
	g_autoptr(as_cluster) c = as_cluster_new();
	struct jp j = {g_string_new(NULL), NULL};
	json_tokener *tok = json_tokener_new();
	json_object *root, *un;
	int r = 0;

	int64_t snap_now = AS_TIME_NEVER;

	root = json_tokener_parse_ex(tok, buf, (int)MIN(len, (size_t)G_MAXINT));
	if (!root || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) < len) {
		size_t off = json_tokener_get_parse_end(tok), line = 1;
		enum json_tokener_error e = json_tokener_get_error(tok);

		for (size_t i = 0; i < off && i < len; i++)
			line += buf[i] == '\n';
		r = jp_fail(&j, "line %zu: %s", line,
			    e == json_tokener_success ? (root ? "trailing data after the JSON value"
							      : "empty document")
			    : e == json_tokener_continue ? "unexpected end of the document"
							 : json_tokener_error_desc(e));
		goto cleanup;
	}
	if (json_object_get_type(root) != json_type_object) {
		r = jp_fail(&j, "the snapshot must be a JSON object, not %s", type_name(root));
		goto cleanup;
	}
	if ((r = get_time(&j, root, "now", &snap_now)) < 0 ||
	    (r = get_time(&j, root, "last_scale_up", &c->last_scale_up)) < 0 ||
	    (r = get_time(&j, root, "last_scale_down_delete", &c->last_scale_down_delete)) < 0 ||
	    (r = get_time(&j, root, "last_scale_down_failure", &c->last_scale_down_failure)) < 0)
		goto cleanup;
	if ((r = parse_list(&j, root, "nodes", c->nodes, new_node, free_node, parse_node_v)) < 0 ||
	    (r = parse_list(&j, root, "pods", c->pods, new_pod, free_pod, parse_pod_v)) < 0 ||
	    (r = parse_list(&j, root, "pdbs", c->pdbs, new_pdb, free_pdb, parse_pdb_v)) < 0 ||
	    (r = parse_list(&j, root, "node_groups", c->groups, new_group, free_group,
			    parse_group_v)) < 0)
		goto cleanup;
	if ((r = member(&j, root, "unneeded_since", json_type_object, &un)) < 0)
		goto cleanup;
	if (un) {
		jp_key(&j, "unneeded_since");
		json_object_object_foreach(un, k, v)
		{
			int64_t t = AS_TIME_NEVER;

			if ((r = get_time(&j, un, k, &t)) < 0)
				goto cleanup;
			if (v && t != AS_TIME_NEVER)
				as_cluster_set_unneeded_since(c, k, t);
		}
		jp_pop(&j, 0);
	}
	if ((r = check_unique(&j, c)) < 0)
		goto cleanup;
	*out = g_steal_pointer(&c);
	*now = snap_now;
cleanup:
	if (r < 0)
		*msg = g_steal_pointer(&j.err);
	g_free(j.err);
	g_string_free(j.path, TRUE);
	json_tokener_free(tok);
	if (root)
		json_object_put(root);
	return r;
}

/* Apply every member of @root to @o; stops at the first error. */
static int apply_options(struct as_options *o, json_object *root, char **msg)
{
	int r = 0;

	json_object_object_foreach(root, k, v)
	{
		g_autofree char *text = NULL;
		json_type t = json_object_get_type(v);

		if (t == json_type_string)
			text = g_strdup(json_object_get_string(v));
		else if (t == json_type_boolean || t == json_type_int || t == json_type_double)
			text = g_strdup(json_object_to_json_string(v));
		else if (t == json_type_object && strcmp(k, "priorities") == 0) {
			/*
			 * {"10": ["re", ...], ...}, as in CA's ConfigMap, made the
			 * option's text PRIO:RE,RE;PRIO:...: so a priority is a
			 * number, a regex a string, and neither may hold the
			 * text's separators (the priority expander's option
			 * cannot carry a regex with ',' or ';').
			 */
			g_autoptr(GString) s = g_string_new(NULL);

			json_object_object_foreach(v, pk, pv)
			{
				gint64 prio;

				if (!g_ascii_string_to_signed(pk, 10, G_MININT32, G_MAXINT32, &prio, NULL)) {
					*msg = g_strdup_printf("option \"priorities\": \"%s\" is not a "
							       "priority (an integer)", pk);
					return -EINVAL;
				}
				if (json_object_get_type(pv) != json_type_array) {
					*msg = g_strdup_printf("option \"priorities\": \"%s\": expected "
							       "an array of regexes, got %s", pk,
							       type_name(pv));
					return -EINVAL;
				}
				g_string_append_printf(s, "%s%s:", s->len ? ";" : "", pk);
				for (size_t i = 0; i < json_object_array_length(pv); i++) {
					json_object *re = json_object_array_get_idx(pv, i);
					const char *rs = json_object_get_string(re);

					if (json_object_get_type(re) != json_type_string ||
					    strpbrk(rs, ",;")) {
						*msg = g_strdup_printf(
							"option \"priorities\": \"%s\": each regex "
							"must be a string without ',' or ';'", pk);
						return -EINVAL;
					}
					g_string_append_printf(s, "%s%s", i ? "," : "", rs);
				}
			}
			text = g_string_free(g_steal_pointer(&s), FALSE);
		} else {
			*msg = g_strdup_printf("option \"%s\": expected a string, number or boolean, got %s",
					       k, type_name(v));
			return -EINVAL;
		}
		r = as_options_set(o, k, text, msg);
		if (r < 0)
			return -EINVAL;
	}
	return r;
}

int as_options_from_json(struct as_options *o, const char *buf, size_t len, char **msg)
{
	json_tokener *tok = json_tokener_new();
	json_object *root = json_tokener_parse_ex(tok, buf, (int)MIN(len, (size_t)G_MAXINT));
	struct as_options scratch;
	int r;

	if (!root || json_tokener_get_error(tok) != json_tokener_success ||
	    json_object_get_type(root) != json_type_object) {
		*msg = g_strdup("not a JSON object of option names to values");
		r = -EINVAL;
		goto cleanup;
	}
	/* As in a snapshot: a second object after the first is a mistake, not ignored. */
	if (json_tokener_get_parse_end(tok) < len) {
		*msg = g_strdup("trailing data after the JSON object");
		r = -EINVAL;
		goto cleanup;
	}
	/* All or nothing: check every value on a scratch copy before touching @o. */
	as_options_init(&scratch);
	r = apply_options(&scratch, root, msg);
	as_options_clear(&scratch);
	if (r == 0)
		r = apply_options(o, root, msg);
cleanup:
	json_tokener_free(tok);
	if (root)
		json_object_put(root);
	return r;
}

/* --- decision ------------------------------------------------------------ */

static json_object *str_array(GPtrArray *a)
{
	json_object *arr = json_object_new_array();

	for (guint i = 0; i < a->len; i++)
		json_object_array_add(arr, json_object_new_string(a->pdata[i]));
	return arr;
}

static json_object *kvs_object(const struct as_kvs *kvs)
{
	json_object *obj = json_object_new_object();

	for (guint i = 0; i < kvs->n; i++)
		json_object_object_add(obj, kvs->v[i].key, json_object_new_string(kvs->v[i].value));
	return obj;
}

static json_object *time_or_null(int64_t t)
{
	g_autofree char *s = NULL;

	if (t == AS_TIME_NEVER)
		return NULL;
	s = as_time_format(t);
	return json_object_new_string(s);
}

char *as_decision_to_json(const struct as_decision *d)
{
	json_object *root = json_object_new_object(), *v;
	char *out;

	json_object_object_add(root, "status", json_object_new_string(d->status));
	if (d->scale_up_group) {
		v = json_object_new_object();
		json_object_object_add(v, "node_group", json_object_new_string(d->scale_up_group));
		json_object_object_add(v, "delta", json_object_new_int(d->scale_up_delta));
		json_object_object_add(v, "pods", str_array(d->scale_up_pods));
		if (d->scale_up_split->len) {
			json_object *split = json_object_new_array();

			for (guint i = 0; i < d->scale_up_split->len; i++) {
				const struct as_group_delta *gd =
					&g_array_index(d->scale_up_split, struct as_group_delta, i);
				json_object *e = json_object_new_object();

				json_object_object_add(e, "node_group", json_object_new_string(gd->id));
				json_object_object_add(e, "delta", json_object_new_int(gd->delta));
				json_object_array_add(split, e);
			}
			json_object_object_add(v, "balanced", split);
		}
		json_object_object_add(root, "scale_up", v);
	} else {
		json_object_object_add(root, "scale_up", NULL);
	}
	if (d->scale_down_nodes->len) {
		v = json_object_new_object();
		json_object_object_add(v, "nodes", str_array(d->scale_down_nodes));
		json_object_object_add(v, "evict_pods", str_array(d->evict_pods));
		{
			json_object *gr = json_object_new_object();

			for (guint i = 0; i < d->evict_pods->len; i++)
				json_object_object_add(
					gr, d->evict_pods->pdata[i],
					json_object_new_int64(g_array_index(d->evict_grace_s, int64_t, i)));
			json_object_object_add(v, "grace_seconds", gr);
		}
		json_object_object_add(v, "moves", kvs_object(&d->moves));
		json_object_object_add(root, "scale_down", v);
	} else {
		json_object_object_add(root, "scale_down", NULL);
	}
	json_object_object_add(root, "scale_down_status", json_object_new_string(d->scale_down_status));
	json_object_object_add(root, "unhelped_pods", kvs_object(&d->unhelped));
	json_object_object_add(root, "unremovable_nodes", kvs_object(&d->unremovable));
	json_object_object_add(root, "schedulable_pods", kvs_object(&d->schedulable));
	json_object_object_add(root, "expander_options", kvs_object(&d->expander_options));
	v = json_object_new_object();
	for (guint i = 0; i < d->unneeded->len; i++) {
		const struct as_unneeded *u = &g_array_index(d->unneeded, struct as_unneeded, i);

		json_object_object_add(v, u->node, time_or_null(u->since));
	}
	json_object_object_add(root, "unneeded_since", v);
	json_object_object_add(root, "delete_instances", str_array(d->delete_instances));
	v = json_object_new_array();
	for (guint i = 0; i < d->groups->len; i++) {
		const struct as_group_state *g = &g_array_index(d->groups, struct as_group_state, i);
		json_object *go = json_object_new_object();

		json_object_object_add(go, "id", json_object_new_string(g->id));
		json_object_object_add(go, "target_size", json_object_new_int(g->target_size));
		json_object_object_add(go, "decrease_target", json_object_new_int(g->decrease_target));
		json_object_object_add(go, "scale_up_time", time_or_null(g->scale_up_time));
		json_object_object_add(go, "backoff_until", time_or_null(g->backoff_until));
		if (g->backoff_duration > 0) {
			g_autofree char *dur = as_duration_format(g->backoff_duration);

			json_object_object_add(go, "backoff_duration", json_object_new_string(dur));
		}
		json_object_object_add(go, "last_failure", time_or_null(g->last_failure));
		json_object_array_add(v, go);
	}
	json_object_object_add(root, "node_groups", v);
	json_object_object_add(root, "last_scale_up", time_or_null(d->last_scale_up));
	json_object_object_add(root, "last_scale_down_delete", time_or_null(d->last_scale_down_delete));
	v = json_object_new_object();
	json_object_object_add(v, "ready", json_object_new_int(d->ready));
	json_object_object_add(v, "unready", json_object_new_int(d->unready));
	json_object_object_add(v, "not_started", json_object_new_int(d->not_started));
	json_object_object_add(v, "unregistered", json_object_new_int(d->unregistered));
	json_object_object_add(v, "long_unregistered", json_object_new_int(d->long_unregistered));
	json_object_object_add(v, "deleted", json_object_new_int(d->deleted));
	json_object_object_add(v, "upcoming", json_object_new_int(d->upcoming));
	json_object_object_add(root, "counts", v);
	out = g_strdup_printf("%s\n", json_object_to_json_string_ext(
					      root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
							    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(root);
	return out;
}
