// SPDX-License-Identifier: Apache-2.0
/*
 * Constructors, destructors and small queries of the cluster model
 * (model.h).  Destructors accept NULL so that readers can free a half-built
 * object on any error path.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

void as_kvs_clear(struct as_kvs *kvs)
{
	for (guint i = 0; i < kvs->n; i++) {
		g_free(kvs->v[i].key);
		g_free(kvs->v[i].value);
	}
	g_free(kvs->v);
	kvs->v = NULL;
	kvs->n = 0;
}

void as_kvs_add(struct as_kvs *kvs, const char *key, const char *value)
{
	kvs->v = g_renew(struct as_kv, kvs->v, kvs->n + 1);
	kvs->v[kvs->n].key = g_strdup(key);
	kvs->v[kvs->n].value = g_strdup(value);
	kvs->n++;
}

void as_kvs_set(struct as_kvs *kvs, const char *key, const char *value)
{
	for (guint i = 0; i < kvs->n; i++) {
		if (strcmp(kvs->v[i].key, key) == 0) {
			g_free(kvs->v[i].value);
			kvs->v[i].value = g_strdup(value);
			return;
		}
	}
	as_kvs_add(kvs, key, value);
}

const char *as_kvs_get(const struct as_kvs *kvs, const char *key)
{
	for (guint i = 0; i < kvs->n; i++)
		if (strcmp(kvs->v[i].key, key) == 0)
			return kvs->v[i].value;
	return NULL;
}

static void kvs_copy(struct as_kvs *dst, const struct as_kvs *src)
{
	dst->v = NULL;
	dst->n = 0;
	for (guint i = 0; i < src->n; i++)
		as_kvs_add(dst, src->v[i].key, src->v[i].value);
}

void as_match_exprs_free(struct as_match_expr *e, guint n)
{
	for (guint i = 0; i < n; i++) {
		g_free(e[i].key);
		g_strfreev(e[i].values);
	}
	g_free(e);
}

struct as_node *as_node_new(void)
{
	struct as_node *n = g_new0(struct as_node, 1);

	n->provider_id = g_strdup("");
	n->ready = true;
	n->creation_time = AS_TIME_NEVER;
	return n;
}

void as_node_free(struct as_node *n)
{
	if (!n)
		return;
	g_free(n->name);
	g_free(n->provider_id);
	as_kvs_clear(&n->labels);
	as_kvs_clear(&n->annotations);
	for (guint i = 0; i < n->n_taints; i++) {
		g_free(n->taints[i].key);
		g_free(n->taints[i].value);
	}
	g_free(n->taints);
	g_free(n);
}

struct as_node *as_node_copy(const struct as_node *n, const char *name)
{
	struct as_node *c = g_new0(struct as_node, 1);

	*c = *n;
	c->name = g_strdup(name);
	c->provider_id = g_strdup("");
	c->instance_gone = false;
	kvs_copy(&c->labels, &n->labels);
	kvs_copy(&c->annotations, &n->annotations);
	c->taints = g_new0(struct as_taint, n->n_taints);
	for (guint i = 0; i < n->n_taints; i++) {
		c->taints[i].key = g_strdup(n->taints[i].key);
		c->taints[i].value = g_strdup(n->taints[i].value);
		c->taints[i].effect = n->taints[i].effect;
	}
	return c;
}

struct as_pod *as_pod_new(void)
{
	struct as_pod *p = g_new0(struct as_pod, 1);

	p->requests.pods = 1;
	p->phase = AS_PHASE_PENDING;
	p->creation_time = AS_TIME_NEVER;
	p->deletion_time = AS_TIME_NEVER;
	p->grace_period_s = 30;
	return p;
}

void as_pod_free(struct as_pod *p)
{
	if (!p)
		return;
	g_free(p->ns);
	g_free(p->name);
	g_free(p->key);
	g_free(p->owner_kind);
	g_free(p->owner_name);
	as_kvs_clear(&p->labels);
	as_kvs_clear(&p->annotations);
	as_kvs_clear(&p->node_selector);
	for (guint i = 0; i < p->n_affinity; i++)
		as_match_exprs_free(p->affinity[i].exprs, p->affinity[i].n_exprs);
	g_free(p->affinity);
	for (guint i = 0; i < p->n_tolerations; i++) {
		g_free(p->tolerations[i].key);
		g_free(p->tolerations[i].value);
	}
	g_free(p->tolerations);
	for (guint i = 0; i < p->n_volumes; i++)
		g_free(p->volumes[i].name);
	g_free(p->volumes);
	g_free(p->node_name);
	g_free(p);
}

void as_pod_set_key(struct as_pod *p)
{
	g_free(p->key);
	p->key = g_strdup_printf("%s/%s", p->ns ? p->ns : "", p->name ? p->name : "");
}

struct as_pdb *as_pdb_new(void)
{
	return g_new0(struct as_pdb, 1);
}

void as_pdb_free(struct as_pdb *p)
{
	if (!p)
		return;
	g_free(p->ns);
	g_free(p->name);
	as_kvs_clear(&p->match_labels);
	as_match_exprs_free(p->exprs, p->n_exprs);
	g_free(p);
}

struct as_node_group *as_node_group_new(void)
{
	struct as_node_group *g = g_new0(struct as_node_group, 1);

	g->scale_up_time = AS_TIME_NEVER;
	g->backoff_until = AS_TIME_NEVER;
	g->last_failure = AS_TIME_NEVER;
	return g;
}

void as_node_group_free(struct as_node_group *g)
{
	if (!g)
		return;
	g_free(g->id);
	as_node_free(g->template_node);
	for (guint i = 0; i < g->n_instances; i++)
		g_free(g->instances[i].id);
	g_free(g->instances);
	g_free(g);
}

struct as_cluster *as_cluster_new(void)
{
	struct as_cluster *c = g_new0(struct as_cluster, 1);

	c->nodes = g_ptr_array_new_with_free_func((GDestroyNotify)as_node_free);
	c->pods = g_ptr_array_new_with_free_func((GDestroyNotify)as_pod_free);
	c->pdbs = g_ptr_array_new_with_free_func((GDestroyNotify)as_pdb_free);
	c->groups = g_ptr_array_new_with_free_func((GDestroyNotify)as_node_group_free);
	c->unneeded_since = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	c->last_scale_up = AS_TIME_NEVER;
	c->last_scale_down_delete = AS_TIME_NEVER;
	c->last_scale_down_failure = AS_TIME_NEVER;
	return c;
}

void as_cluster_free(struct as_cluster *c)
{
	if (!c)
		return;
	g_ptr_array_unref(c->nodes);
	g_ptr_array_unref(c->pods);
	g_ptr_array_unref(c->pdbs);
	g_ptr_array_unref(c->groups);
	g_hash_table_unref(c->unneeded_since);
	g_free(c);
}

void as_cluster_set_unneeded_since(struct as_cluster *c, const char *node, int64_t t)
{
	int64_t *v = g_new(int64_t, 1);

	*v = t;
	g_hash_table_replace(c->unneeded_since, g_strdup(node), v);
}

static bool parse_i64(const char *s, int64_t *out)
{
	char *end;

	if (!s || !*s)
		return false;
	errno = 0;
	gint64 v = g_ascii_strtoll(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

bool as_match_expr_matches(const struct as_match_expr *e, const struct as_kvs *labels)
{
	const char *v = as_kvs_get(labels, e->key);
	int64_t lv, ev;

	switch (e->op) {
	case AS_OP_IN:
	case AS_OP_NOT_IN: {
		bool found = false;

		for (char **p = e->values; v && p && *p; p++)
			if (strcmp(*p, v) == 0)
				found = true;
		return e->op == AS_OP_IN ? found : !found;
	}
	case AS_OP_EXISTS:
		return v != NULL;
	case AS_OP_DOES_NOT_EXIST:
		return v == NULL;
	case AS_OP_GT:
	case AS_OP_LT:
		/* Kubernetes: exactly one value, both sides integers, else no match. */
		if (!v || !e->values || !e->values[0] || e->values[1])
			return false;
		if (!parse_i64(v, &lv) || !parse_i64(e->values[0], &ev))
			return false;
		return e->op == AS_OP_GT ? lv > ev : lv < ev;
	}
	return false;
}

bool as_label_selector_matches(bool has_selector, const struct as_kvs *match_labels,
			       const struct as_match_expr *exprs, guint n_exprs,
			       const struct as_kvs *labels)
{
	if (!has_selector)
		return false;
	for (guint i = 0; i < match_labels->n; i++) {
		const char *v = as_kvs_get(labels, match_labels->v[i].key);

		if (!v || strcmp(v, match_labels->v[i].value) != 0)
			return false;
	}
	for (guint i = 0; i < n_exprs; i++)
		if (!as_match_expr_matches(&exprs[i], labels))
			return false;
	return true;
}
