// SPDX-License-Identifier: Apache-2.0
/*
 * The simulation snapshot (snapshot.h): an array of nodes with their used
 * resources and an undo log.  Forking costs one array append and reverting
 * costs one step per change made since, so a scale-down can simulate
 * thousands of node removals without copying the cluster.
 */
#include "config.h"

#include "snapshot.h"

enum undo_kind { UNDO_ADD_NODE, UNDO_USED, UNDO_REMOVE_NODE };

struct undo {
	enum undo_kind kind;
	guint idx;
	struct as_resources delta;
};

struct mark {
	guint undo_len;
};

struct as_snapshot {
	GArray *nodes; /* struct as_snap_node */
	GArray *undo; /* struct undo */
	GArray *marks; /* struct mark */
};

struct as_snapshot *as_snapshot_new(void)
{
	struct as_snapshot *s = g_new0(struct as_snapshot, 1);

	s->nodes = g_array_new(FALSE, TRUE, sizeof(struct as_snap_node));
	s->undo = g_array_new(FALSE, FALSE, sizeof(struct undo));
	s->marks = g_array_new(FALSE, FALSE, sizeof(struct mark));
	return s;
}

void as_snapshot_free(struct as_snapshot *s)
{
	if (!s)
		return;
	g_array_free(s->nodes, TRUE);
	g_array_free(s->undo, TRUE);
	g_array_free(s->marks, TRUE);
	g_free(s);
}

static void log_undo(struct as_snapshot *s, enum undo_kind kind, guint idx,
		     const struct as_resources *delta)
{
	struct undo u = {kind, idx, {0, 0, 0, 0}};

	/* Outside any fork nothing can be reverted: keep no log. */
	if (s->marks->len == 0)
		return;
	if (delta)
		u.delta = *delta;
	g_array_append_val(s->undo, u);
}

guint as_snapshot_add_node(struct as_snapshot *s, const struct as_node *n, int group, bool upcoming)
{
	struct as_snap_node sn = {n, {0, 0, 0, 0}, n->allocatable, group, false, upcoming};

	g_array_append_val(s->nodes, sn);
	log_undo(s, UNDO_ADD_NODE, s->nodes->len - 1, NULL);
	return s->nodes->len - 1;
}

guint as_snapshot_n_nodes(const struct as_snapshot *s)
{
	return s->nodes->len;
}

const struct as_snap_node *as_snapshot_node(const struct as_snapshot *s, guint idx)
{
	return &g_array_index(s->nodes, struct as_snap_node, idx);
}

static void add_used(struct as_snapshot *s, guint idx, const struct as_resources *d, int sign)
{
	struct as_snap_node *n = &g_array_index(s->nodes, struct as_snap_node, idx);
	struct as_resources delta = {sign * d->cpu, sign * d->mem, sign * d->gpu, sign * d->pods};

	n->used.cpu += delta.cpu;
	n->used.mem += delta.mem;
	n->used.gpu += delta.gpu;
	n->used.pods += delta.pods;
	log_undo(s, UNDO_USED, idx, &delta);
}

void as_snapshot_place(struct as_snapshot *s, guint idx, const struct as_pod *p)
{
	add_used(s, idx, &p->requests, 1);
}

void as_snapshot_unplace(struct as_snapshot *s, guint idx, const struct as_pod *p)
{
	add_used(s, idx, &p->requests, -1);
}

void as_snapshot_remove_node(struct as_snapshot *s, guint idx)
{
	struct as_snap_node *n = &g_array_index(s->nodes, struct as_snap_node, idx);

	if (n->removed)
		return;
	n->removed = true;
	log_undo(s, UNDO_REMOVE_NODE, idx, NULL);
}

void as_snapshot_fork(struct as_snapshot *s)
{
	struct mark m = {s->undo->len};

	g_array_append_val(s->marks, m);
}

void as_snapshot_revert(struct as_snapshot *s)
{
	struct mark m;

	g_return_if_fail(s->marks->len > 0);
	m = g_array_index(s->marks, struct mark, s->marks->len - 1);
	g_array_set_size(s->marks, s->marks->len - 1);
	while (s->undo->len > m.undo_len) {
		struct undo *u = &g_array_index(s->undo, struct undo, s->undo->len - 1);
		struct as_snap_node *n = &g_array_index(s->nodes, struct as_snap_node, u->idx);

		switch (u->kind) {
		case UNDO_ADD_NODE:
			g_array_set_size(s->nodes, u->idx);
			break;
		case UNDO_USED:
			n->used.cpu -= u->delta.cpu;
			n->used.mem -= u->delta.mem;
			n->used.gpu -= u->delta.gpu;
			n->used.pods -= u->delta.pods;
			break;
		case UNDO_REMOVE_NODE:
			n->removed = false;
			break;
		}
		g_array_set_size(s->undo, s->undo->len - 1);
	}
}

void as_snapshot_commit(struct as_snapshot *s)
{
	g_return_if_fail(s->marks->len > 0);
	g_array_set_size(s->marks, s->marks->len - 1);
	if (s->marks->len == 0)
		g_array_set_size(s->undo, 0);
}

guint as_snapshot_depth(const struct as_snapshot *s)
{
	return s->marks->len;
}

enum as_fit as_snapshot_fits(const struct as_snapshot *s, const struct as_pod *p, guint idx)
{
	const struct as_snap_node *n = as_snapshot_node(s, idx);
	enum as_fit f;

	if (n->removed)
		return AS_FIT_UNSCHEDULABLE;
	/* Resources first: they are the cheap test that fails most often. */
	f = as_pod_fits_resources(p, &n->alloc, &n->used);
	if (f != AS_FIT_OK)
		return f;
	return as_pod_matches_node(p, n->node);
}

int as_snapshot_find_fit(const struct as_snapshot *s, const struct as_pod *p, guint hint, int exclude)
{
	return as_snapshot_find_fit_below(s, p, hint, exclude, s->nodes->len);
}

int as_snapshot_find_fit_below(const struct as_snapshot *s, const struct as_pod *p, guint hint,
			       int exclude, guint limit)
{
	guint n = MIN(limit, s->nodes->len);

	if (n == 0)
		return -1;
	if (hint >= n)
		hint = 0;
	for (guint k = 0; k < n; k++) {
		guint i = hint + k < n ? hint + k : hint + k - n;

		if ((int)i == exclude)
			continue;
		if (as_snapshot_fits(s, p, i) == AS_FIT_OK)
			return (int)i;
	}
	return -1;
}
