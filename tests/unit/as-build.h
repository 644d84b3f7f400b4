/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small builders for the autoscaler core's unit tests: clusters written in
 * a few lines of C, so each test shows the one thing it varies.  Units as
 * in model.h: cpu in millicores, memory in MiB here (converted to bytes).
 */
#pragma once

#include <string.h>

#include "autoscaler.h"
#include "model.h"

#define MIB (1024LL * 1024)

static G_GNUC_UNUSED struct as_node *b_node(const char *name, int64_t cpu, int64_t mem_mib,
					    int64_t pods)
{
	struct as_node *n = as_node_new();

	n->name = g_strdup(name);
	n->capacity = (struct as_resources){cpu, mem_mib * MIB, 0, pods};
	n->allocatable = n->capacity;
	n->creation_time = 0;
	return n;
}

static G_GNUC_UNUSED struct as_pod *b_pod(const char *name, int64_t cpu, int64_t mem_mib,
					  const char *node)
{
	struct as_pod *p = as_pod_new();

	p->ns = g_strdup("default");
	p->name = g_strdup(name);
	as_pod_set_key(p);
	p->requests = (struct as_resources){cpu, mem_mib * MIB, 0, 1};
	p->owner_kind = g_strdup("ReplicaSet");
	p->owner_name = g_strdup("rs");
	if (node) {
		p->node_name = g_strdup(node);
		p->phase = AS_PHASE_RUNNING;
	} else {
		p->unschedulable = true;
	}
	return p;
}

static G_GNUC_UNUSED void b_taint(struct as_node *n, const char *key, const char *value,
				  enum as_taint_effect effect)
{
	n->taints = g_renew(struct as_taint, n->taints, n->n_taints + 1);
	n->taints[n->n_taints++] = (struct as_taint){g_strdup(key), g_strdup(value), effect};
}

static G_GNUC_UNUSED void b_tol(struct as_pod *p, const char *key, const char *value, bool exists,
				enum as_taint_effect effect)
{
	p->tolerations = g_renew(struct as_toleration, p->tolerations, p->n_tolerations + 1);
	p->tolerations[p->n_tolerations++] =
		(struct as_toleration){g_strdup(key), g_strdup(value), exists, effect};
}

static G_GNUC_UNUSED void b_volume(struct as_pod *p, const char *name, enum as_volume_kind kind)
{
	p->volumes = g_renew(struct as_volume, p->volumes, p->n_volumes + 1);
	p->volumes[p->n_volumes++] = (struct as_volume){g_strdup(name), kind};
}

/* A group whose template is a copy of @tmpl (which the caller keeps). */
static G_GNUC_UNUSED struct as_node_group *b_group(struct as_cluster *c, const char *id, int min,
						   int max, const struct as_node *tmpl)
{
	struct as_node_group *g = as_node_group_new();

	g->id = g_strdup(id);
	g->min_size = min;
	g->max_size = max;
	g->template_node = tmpl ? as_node_copy(tmpl, "template") : NULL;
	g_ptr_array_add(c->groups, g);
	return g;
}

/* Add node @n to the cluster and, with @g, to the group (target grows). */
static G_GNUC_UNUSED struct as_node *b_add(struct as_cluster *c, struct as_node_group *g,
					   struct as_node *n)
{
	g_ptr_array_add(c->nodes, n);
	if (g) {
		g->instances = g_renew(struct as_instance, g->instances, g->n_instances + 1);
		g->instances[g->n_instances++] = (struct as_instance){
			g_strdup(n->name), AS_INSTANCE_RUNNING, AS_ERROR_NONE, AS_TIME_NEVER};
		g->target_size++;
	}
	return n;
}

static G_GNUC_UNUSED struct as_pod *b_add_pod(struct as_cluster *c, struct as_pod *p)
{
	g_ptr_array_add(c->pods, p);
	return p;
}

static G_GNUC_UNUSED const char *kvs_get(const struct as_kvs *kvs, const char *key)
{
	return as_kvs_get(kvs, key);
}

static G_GNUC_UNUSED bool strv_has(GPtrArray *a, const char *s)
{
	for (guint i = 0; i < a->len; i++)
		if (strcmp(a->pdata[i], s) == 0)
			return true;
	return false;
}

static G_GNUC_UNUSED struct as_decision *b_run(const struct as_cluster *c, const struct as_options *o,
					       int64_t now)
{
	struct as_decision *d = NULL;
	g_autofree char *msg = NULL;

	if (as_run_once(c, o, now, NULL, &d, &msg) < 0)
		g_error("as_run_once: %s", msg);
	return d;
}
