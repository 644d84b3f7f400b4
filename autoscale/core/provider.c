// SPDX-License-Identifier: Apache-2.0
/*
 * The in-memory cloud provider (provider.h): node groups held in memory,
 * sizes checked the way a real provider checks them (IncreaseSize beyond
 * max, DeleteNodes below min or of a node not in the group are -EINVAL),
 * so tests of the actuation path fail where a real cloud would.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "autoscaler.h"
#include "provider.h"

struct mem_group {
	struct as_node_group_if base;
	struct as_node_group *g; /* owned copy */
	int n_new;
	int64_t now;
};

struct mem_provider {
	struct as_cloud_provider base;
	GPtrArray *groups; /* struct mem_group * */
};

void as_instances_free(struct as_instance *v, guint n)
{
	for (guint i = 0; i < n; i++)
		g_free(v[i].id);
	g_free(v);
}

static struct mem_group *MG(struct as_node_group_if *g)
{
	return (struct mem_group *)g;
}

static const char *g_id(struct as_node_group_if *g)
{
	return MG(g)->g->id;
}

static int g_min(struct as_node_group_if *g)
{
	return MG(g)->g->min_size;
}

static int g_max(struct as_node_group_if *g)
{
	return MG(g)->g->max_size;
}

static int g_target(struct as_node_group_if *g, int *out)
{
	*out = MG(g)->g->target_size;
	return 0;
}

static void add_instance(struct as_node_group *g, char *id, int64_t since)
{
	g->instances = g_renew(struct as_instance, g->instances, g->n_instances + 1);
	g->instances[g->n_instances++] =
		(struct as_instance){id, AS_INSTANCE_CREATING, AS_ERROR_NONE, since};
}

static int g_increase(struct as_node_group_if *gi, int delta)
{
	struct mem_group *m = MG(gi);

	if (delta <= 0 || m->g->target_size + delta > m->g->max_size)
		return -EINVAL;
	for (int i = 0; i < delta; i++)
		add_instance(m->g, g_strdup_printf("%s-new-%d", m->g->id, m->n_new++), m->now);
	m->g->target_size += delta;
	return 0;
}

static int find_instance(const struct as_node_group *g, const char *id)
{
	for (guint i = 0; i < g->n_instances; i++)
		if (strcmp(g->instances[i].id, id) == 0)
			return (int)i;
	return -1;
}

static int find_node(const struct as_node_group *g, const struct as_node *n)
{
	int k = n->provider_id[0] ? find_instance(g, n->provider_id) : -1;

	return k >= 0 ? k : find_instance(g, n->name);
}

static int g_delete(struct as_node_group_if *gi, const struct as_node *const *nodes, guint n)
{
	struct as_node_group *g = MG(gi)->g;

	if (g->target_size - (int)n < g->min_size)
		return -EINVAL;
	for (guint i = 0; i < n; i++)
		if (find_node(g, nodes[i]) < 0)
			return -ENOENT;
	for (guint i = 0; i < n; i++) {
		int k = find_node(g, nodes[i]);

		g_free(g->instances[k].id);
		memmove(&g->instances[k], &g->instances[k + 1],
			(g->n_instances - (guint)k - 1) * sizeof(g->instances[0]));
		g->n_instances--;
	}
	g->target_size -= (int)n;
	return 0;
}

static int g_decrease(struct as_node_group_if *gi, int delta)
{
	struct as_node_group *g = MG(gi)->g;
	int creating = 0;

	for (guint i = 0; i < g->n_instances; i++)
		creating += g->instances[i].state == AS_INSTANCE_CREATING;
	if (delta >= 0 || -delta > creating)
		return -EINVAL;
	g->target_size += delta;
	return 0;
}

static int g_nodes(struct as_node_group_if *gi, struct as_instance **out, guint *n)
{
	struct as_node_group *g = MG(gi)->g;
	struct as_instance *v = g_new0(struct as_instance, g->n_instances ? g->n_instances : 1);

	for (guint i = 0; i < g->n_instances; i++) {
		v[i] = g->instances[i];
		v[i].id = g_strdup(g->instances[i].id);
	}
	*out = v;
	*n = g->n_instances;
	return 0;
}

static int g_template(struct as_node_group_if *gi, const struct as_node **out)
{
	if (!MG(gi)->g->template_node)
		return -ENOENT;
	*out = MG(gi)->g->template_node;
	return 0;
}

static const struct as_node_group_ops mem_group_ops = {
	g_id, g_min, g_max, g_target, g_increase, g_delete, g_decrease, g_nodes, g_template,
};

static struct mem_provider *MP(struct as_cloud_provider *p)
{
	return (struct mem_provider *)p;
}

static const char *p_name(struct as_cloud_provider *p)
{
	return "memory";
}

static guint p_groups(struct as_cloud_provider *p, struct as_node_group_if ***out)
{
	*out = (struct as_node_group_if **)MP(p)->groups->pdata;
	return MP(p)->groups->len;
}

static int p_group_for_node(struct as_cloud_provider *p, const struct as_node *n,
			    struct as_node_group_if **out)
{
	GPtrArray *gs = MP(p)->groups;

	*out = NULL;
	for (guint i = 0; i < gs->len; i++) {
		struct mem_group *m = gs->pdata[i];

		if (find_node(m->g, n) >= 0) {
			*out = &m->base;
			return 0;
		}
	}
	return 0;
}

static int p_has_instance(struct as_cloud_provider *p, const struct as_node *n, bool *out)
{
	struct as_node_group_if *g;
	int r = p_group_for_node(p, n, &g);

	if (r == 0)
		*out = g != NULL;
	return r;
}

static int p_price(struct as_cloud_provider *p, struct as_node_group_if *g, double *out)
{
	if (MG(g)->g->price <= 0)
		return -ENOTSUP;
	*out = MG(g)->g->price;
	return 0;
}

static int p_refresh(struct as_cloud_provider *p)
{
	return 0;
}

static struct as_node_group *group_copy(const struct as_node_group *src)
{
	struct as_node_group *g = as_node_group_new();

	*g = *src;
	g->id = g_strdup(src->id);
	g->template_node = src->template_node ? as_node_copy(src->template_node, src->template_node->name)
					      : NULL;
	g->instances = g_new0(struct as_instance, src->n_instances ? src->n_instances : 1);
	for (guint i = 0; i < src->n_instances; i++) {
		g->instances[i] = src->instances[i];
		g->instances[i].id = g_strdup(src->instances[i].id);
	}
	return g;
}

static void mem_group_free(struct mem_group *m)
{
	as_node_group_free(m->g);
	g_free(m);
}

static void p_cleanup(struct as_cloud_provider *p)
{
	if (!p)
		return;
	g_ptr_array_unref(MP(p)->groups);
	g_free(p);
}

static const struct as_cloud_provider_ops mem_ops = {
	p_name, p_groups, p_group_for_node, p_has_instance, p_price, p_refresh, p_cleanup,
};

struct as_cloud_provider *as_mem_provider_new(const struct as_cluster *c, int64_t now)
{
	struct mem_provider *p = g_new0(struct mem_provider, 1);

	p->base.ops = &mem_ops;
	p->groups = g_ptr_array_new_with_free_func((GDestroyNotify)mem_group_free);
	for (guint i = 0; i < c->groups->len; i++) {
		struct mem_group *m = g_new0(struct mem_group, 1);

		m->base.ops = &mem_group_ops;
		m->g = group_copy(g_ptr_array_index(c->groups, i));
		m->now = now;
		g_ptr_array_add(p->groups, m);
	}
	return &p->base;
}

void as_mem_provider_export(struct as_cloud_provider *p, struct as_cluster *c)
{
	g_ptr_array_set_size(c->groups, 0);
	for (guint i = 0; i < MP(p)->groups->len; i++) {
		struct mem_group *m = MP(p)->groups->pdata[i];

		g_ptr_array_add(c->groups, group_copy(m->g));
	}
}

struct as_node_group_if *as_mem_provider_group(struct as_cloud_provider *p, const char *id)
{
	for (guint i = 0; i < MP(p)->groups->len; i++) {
		struct mem_group *m = MP(p)->groups->pdata[i];

		if (strcmp(m->g->id, id) == 0)
			return &m->base;
	}
	return NULL;
}

/* --- actuation ------------------------------------------------------------ */

static struct as_node_group_if *group_by_id(struct as_cloud_provider *p, const char *id)
{
	struct as_node_group_if **gs;
	guint n = p->ops->node_groups(p, &gs);

	for (guint i = 0; i < n; i++)
		if (strcmp(gs[i]->ops->id(gs[i]), id) == 0)
			return gs[i];
	return NULL;
}

static const struct as_node *node_by_name(const struct as_cluster *c, const char *name)
{
	for (guint i = 0; i < c->nodes->len; i++)
		if (strcmp(((struct as_node *)c->nodes->pdata[i])->name, name) == 0)
			return c->nodes->pdata[i];
	return NULL;
}

static int delete_unregistered(const struct as_decision *d, const struct as_cluster *c,
			       struct as_cloud_provider *p, char **msg)
{
	for (guint k = 0; k < d->delete_instances->len; k++) {
		const char *id = d->delete_instances->pdata[k];
		struct as_node_group_if *gi = NULL;
		/* An instance without a node: a stand-in node carrying its id. */
		struct as_node stand_in = {.name = (char *)id, .provider_id = (char *)id};
		const struct as_node *one[] = {&stand_in};
		int r;

		for (guint g = 0; g < c->groups->len && !gi; g++) {
			const struct as_node_group *grp = c->groups->pdata[g];

			for (guint i = 0; i < grp->n_instances; i++)
				if (strcmp(grp->instances[i].id, id) == 0)
					gi = group_by_id(p, grp->id);
		}
		if (!gi) {
			*msg = g_strdup_printf("instance \"%s\": no node group has it", id);
			return -ENOENT;
		}
		r = gi->ops->delete_nodes(gi, one, 1);
		if (r < 0) {
			*msg = g_strdup_printf("DeleteNodes(%s) on node group \"%s\": %s", id,
					       gi->ops->id(gi), g_strerror(-r));
			return r;
		}
	}
	return 0;
}

int as_decision_apply_cleanup(const struct as_decision *d, const struct as_cluster *c,
			      struct as_cloud_provider *p, char **msg)
{
	int r = delete_unregistered(d, c, p, msg);

	if (r < 0)
		return r;
	for (guint g = 0; g < d->groups->len; g++) {
		const struct as_group_state *gs = &g_array_index(d->groups, struct as_group_state, g);
		struct as_node_group_if *gi;

		if (gs->decrease_target <= 0)
			continue;
		gi = group_by_id(p, gs->id);
		r = gi ? gi->ops->decrease_target_size(gi, -gs->decrease_target) : -ENOENT;
		if (r < 0) {
			*msg = g_strdup_printf("DecreaseTargetSize(%d) on node group \"%s\": %s",
					       -gs->decrease_target, gs->id, g_strerror(-r));
			return r;
		}
	}
	return 0;
}

int as_decision_apply(const struct as_decision *d, const struct as_cluster *c,
		      struct as_cloud_provider *p, char **msg)
{
	int r = as_decision_apply_cleanup(d, c, p, msg);

	if (r < 0)
		return r;
	for (guint k = 0; d->scale_up_group && k < MAX(1, d->scale_up_split->len); k++) {
		const struct as_group_delta *gd =
			d->scale_up_split->len ? &g_array_index(d->scale_up_split, struct as_group_delta, k)
					       : NULL;
		const char *id = gd ? gd->id : d->scale_up_group;
		int delta = gd ? gd->delta : d->scale_up_delta;
		struct as_node_group_if *gi = group_by_id(p, id);

		r = gi ? gi->ops->increase_size(gi, delta) : -ENOENT;
		if (r < 0) {
			*msg = g_strdup_printf("IncreaseSize(%d) on node group \"%s\": %s", delta, id,
					       g_strerror(-r));
			return r;
		}
	}
	for (guint k = 0; k < d->scale_down_nodes->len; k++) {
		const struct as_node *n = node_by_name(c, d->scale_down_nodes->pdata[k]);
		struct as_node_group_if *gi = NULL;
		const struct as_node *one[1];

		if (n)
			r = p->ops->node_group_for_node(p, n, &gi);
		if (!n || r < 0 || !gi) {
			*msg = g_strdup_printf("node \"%s\": no node group has it",
					       (char *)d->scale_down_nodes->pdata[k]);
			return r < 0 ? r : -ENOENT;
		}
		/* One call per node keeps a refusal from sparing the others' errors. */
		one[0] = n;
		r = gi->ops->delete_nodes(gi, one, 1);
		if (r < 0) {
			*msg = g_strdup_printf("DeleteNodes(%s) on node group \"%s\": %s", n->name,
					       gi->ops->id(gi), g_strerror(-r));
			return r;
		}
	}
	return 0;
}
