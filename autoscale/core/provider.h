/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cloud provider interface: Cluster Autoscaler's CloudProvider and
 * NodeGroup as C vtables.  The live daemon implements it over the
 * bare-metal pool (bm-api), the simulator over its event queue; the core's
 * decisions are carried out through it.  as_mem_provider is the trivial
 * in-memory implementation that tests and `autoscale once` use.
 *
 * Every fallible method returns 0 or -errno.  Strings and nodes returned by
 * getters are owned by the provider and valid until its next refresh();
 * arrays returned through out-parameters are new and owned by the caller.
 */
#pragma once

#include "model.h"

struct as_node_group_if;

struct as_node_group_ops {
	const char *(*id)(struct as_node_group_if *g);
	int (*min_size)(struct as_node_group_if *g);
	int (*max_size)(struct as_node_group_if *g);
	int (*target_size)(struct as_node_group_if *g, int *out);
	int (*increase_size)(struct as_node_group_if *g, int delta);
	/* The target shrinks by their number; nodes match on providerID, else name. */
	int (*delete_nodes)(struct as_node_group_if *g, const struct as_node *const *nodes, guint n);
	/* @delta < 0: give back requested but not yet created instances. */
	int (*decrease_target_size)(struct as_node_group_if *g, int delta);
	/* New array of struct as_instance copies (free with as_instances_free). */
	int (*nodes)(struct as_node_group_if *g, struct as_instance **out, guint *n);
	/* The template node, owned by the group. */
	int (*template_node_info)(struct as_node_group_if *g, const struct as_node **out);
};

struct as_node_group_if {
	const struct as_node_group_ops *ops;
};

struct as_cloud_provider;

struct as_cloud_provider_ops {
	const char *(*name)(struct as_cloud_provider *p);
	/* Borrowed pointers, valid until refresh(). */
	guint (*node_groups)(struct as_cloud_provider *p, struct as_node_group_if ***out);
	/* 0 and *out (NULL when the node is not autoscaled), or -errno. */
	int (*node_group_for_node)(struct as_cloud_provider *p, const struct as_node *n,
				   struct as_node_group_if **out);
	int (*has_instance)(struct as_cloud_provider *p, const struct as_node *n, bool *out);
	/* Price of one node of @g for an hour; -ENOTSUP when the provider has no prices. */
	int (*node_price)(struct as_cloud_provider *p, struct as_node_group_if *g, double *out);
	int (*refresh)(struct as_cloud_provider *p);
	void (*cleanup)(struct as_cloud_provider *p); /* frees @p */
};

struct as_cloud_provider {
	const struct as_cloud_provider_ops *ops;
};

void as_instances_free(struct as_instance *v, guint n);

/*
 * In-memory provider over the node groups of @c (copied, so @c may be
 * freed).  increase_size adds Creating instances "ID-new-N" stamped @now;
 * delete_nodes removes instances and shrinks the target.
 */
struct as_cloud_provider *as_mem_provider_new(const struct as_cluster *c, int64_t now);
/* Write the provider's groups back as cluster groups (for the next loop's input). */
void as_mem_provider_export(struct as_cloud_provider *p, struct as_cluster *c);
/* The in-memory provider's group @id, for tests; NULL if none. */
struct as_node_group_if *as_mem_provider_group(struct as_cloud_provider *p, const char *id);

struct as_decision;

/*
 * Carry decision @d out through @p, in CA's order: delete long-unregistered
 * instances, give back failed scale-ups (DecreaseTargetSize), IncreaseSize
 * the chosen group, then DeleteNodes the removed nodes group by group.
 * (Tainting, draining and evicting before DeleteNodes are the daemon's
 * job.)  @c is the cluster @d was decided on.  Returns 0, or the first
 * failure's -errno with *@msg naming the call and the group.
 */
int as_decision_apply(const struct as_decision *d, const struct as_cluster *c,
		      struct as_cloud_provider *p, char **msg);
/*
 * Its first two steps only: delete long-unregistered and failed instances,
 * give back failed scale-ups.  The daemon runs these, then its own
 * scale-up (with backoff on refusal) and drain-then-delete scale-down.
 */
int as_decision_apply_cleanup(const struct as_decision *d, const struct as_cluster *c,
			      struct as_cloud_provider *p, char **msg);
