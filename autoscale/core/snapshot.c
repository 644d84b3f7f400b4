// SPDX-License-Identifier: Apache-2.0
/*
 * The simulation snapshot (snapshot.h): an array of nodes with their used
 * resources and an undo log.  Forking costs one array append and reverting
 * costs one step per change made since, so a scale-down can simulate
 * thousands of node removals without copying the cluster.
 *
 * Fit searches go through a max tree: a complete binary tree over the
 * nodes whose leaves hold each node's free resources (allocatable minus
 * used; every field INT64_MIN for a removed node or an empty leaf) and
 * whose inner entries hold the fieldwise maximum of their children.  A
 * subtree whose maximum cannot hold a pod's requests holds no node that
 * fits, so a search skips it and still returns the first fitting node in
 * scan order, the same node as a scan of every node.  Most searches in a
 * busy cluster fail on resources (a pending pod waiting for a scale-up, a
 * candidate whose pods have nowhere to go), and those now cost a few tree
 * steps instead of a predicate check per node.
 * Invariant: when the tree is built and not stale, each leaf equals its
 * node's free resources and each inner entry the maximum of its children.
 * There is no tree before the first search (building a snapshot costs one
 * pass then, not a path per placed pod); after it, a change updates its
 * leaf's path to the root, and a node past the last leaf marks the tree
 * stale for the next search to rebuild.  Debug builds check every search
 * against a scan of every node.
 */
#include "config.h"

#include "snapshot.h"
#include "units.h"

enum undo_kind { UNDO_ADD_NODE, UNDO_USED, UNDO_REMOVE_NODE };

struct undo {
	enum undo_kind kind;
	guint idx;
	struct as_resources used; /* UNDO_USED: the node's before (exact where the sum saturated) */
};

struct mark {
	guint undo_len;
};

struct as_snapshot {
	GArray *nodes; /* struct as_snap_node */
	GArray *undo; /* struct undo */
	GArray *marks; /* struct mark */
	/* The max tree: tree[1] the root, tree[leaves + i] node i's free resources. */
	struct as_resources *tree;
	guint leaves; /* a power of two; 0 before the first search */
	bool stale;
};

static const struct as_resources no_room = {INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN};

static struct as_resources leaf_of(const struct as_snapshot *s, guint idx)
{
	const struct as_snap_node *n;
	struct as_resources f;

	if (idx >= s->nodes->len)
		return no_room;
	n = &g_array_index(s->nodes, struct as_snap_node, idx);
	if (n->removed)
		return no_room;
	f.cpu = n->alloc.cpu - n->used.cpu;
	f.mem = n->alloc.mem - n->used.mem;
	f.gpu = n->alloc.gpu - n->used.gpu;
	f.pods = n->alloc.pods - n->used.pods;
	return f;
}

/* Recompute entry @t from its children; false when it did not change. */
static bool max_of_children(struct as_snapshot *s, guint t)
{
	const struct as_resources *a = &s->tree[2 * t], *b = &s->tree[2 * t + 1];
	struct as_resources *m = &s->tree[t];
	struct as_resources v = {MAX(a->cpu, b->cpu), MAX(a->mem, b->mem), MAX(a->gpu, b->gpu),
				 MAX(a->pods, b->pods)};

	if (v.cpu == m->cpu && v.mem == m->mem && v.gpu == m->gpu && v.pods == m->pods)
		return false;
	*m = v;
	return true;
}

static void tree_rebuild(struct as_snapshot *s)
{
	guint leaves = 1;

	while (leaves < s->nodes->len)
		leaves *= 2;
	if (leaves > s->leaves) {
		g_free(s->tree);
		s->tree = g_new(struct as_resources, 2 * leaves);
	}
	s->leaves = leaves;
	for (guint i = 0; i < leaves; i++)
		s->tree[leaves + i] = leaf_of(s, i);
	for (guint t = leaves - 1; t >= 1; t--)
		(void)max_of_children(s, t);
	s->stale = false;
}

static void tree_update_path(struct as_snapshot *s, guint idx)
{
	if (idx >= s->leaves) {
		s->stale = true;
		return;
	}
	s->tree[s->leaves + idx] = leaf_of(s, idx);
	/* An entry that did not change leaves every entry above it as it was. */
	for (guint t = (s->leaves + idx) / 2; t >= 1 && max_of_children(s, t); t /= 2)
		;
}

/*
 * Node @idx changed: bring its path to the root up to date (most of the
 * time only a step or two: a node that was not its subtree's maximum
 * changes nothing above it).  Nothing to do before the tree is built.
 */
static inline void tree_update(struct as_snapshot *s, guint idx)
{
	if (s->leaves != 0 && !s->stale)
		tree_update_path(s, idx);
}

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
	g_free(s->tree);
	g_free(s);
}

static void log_undo_entry(struct as_snapshot *s, enum undo_kind kind, guint idx,
			   const struct as_resources *used)
{
	struct undo u = {kind, idx, {0, 0, 0, 0}};

	if (used)
		u.used = *used;
	g_array_append_val(s->undo, u);
}

static inline void log_undo(struct as_snapshot *s, enum undo_kind kind, guint idx,
			    const struct as_resources *used)
{
	/* Outside any fork nothing can be reverted: keep no log. */
	if (s->marks->len > 0)
		log_undo_entry(s, kind, idx, used);
}

guint as_snapshot_add_node(struct as_snapshot *s, const struct as_node *n, int group, bool upcoming)
{
	struct as_snap_node sn = {n, {0, 0, 0, 0}, n->allocatable, group, false, upcoming};

	g_array_append_val(s->nodes, sn);
	log_undo(s, UNDO_ADD_NODE, s->nodes->len - 1, NULL);
	tree_update(s, s->nodes->len - 1);
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

/*
 * Add @delta to node @idx's used resources, saturating: the pods the
 * cluster bound to a node may ask for more than 2^63-1 between them, and
 * a sum wrapped to a negative would leave room on a full node.
 */
static inline void add_used(struct as_snapshot *s, guint idx, const struct as_resources *delta)
{
	struct as_snap_node *n = &g_array_index(s->nodes, struct as_snap_node, idx);

	log_undo(s, UNDO_USED, idx, &n->used);
	n->used.cpu = as_sat_add(n->used.cpu, delta->cpu);
	n->used.mem = as_sat_add(n->used.mem, delta->mem);
	n->used.gpu = as_sat_add(n->used.gpu, delta->gpu);
	n->used.pods = as_sat_add(n->used.pods, delta->pods);
	tree_update(s, idx);
}

void as_snapshot_place(struct as_snapshot *s, guint idx, const struct as_pod *p)
{
	add_used(s, idx, &p->requests);
}

void as_snapshot_use(struct as_snapshot *s, guint idx, const struct as_resources *req)
{
	add_used(s, idx, req);
}

void as_snapshot_unplace(struct as_snapshot *s, guint idx, const struct as_pod *p)
{
	const struct as_resources minus = {-p->requests.cpu, -p->requests.mem, -p->requests.gpu,
					   -p->requests.pods};

	add_used(s, idx, &minus);
}

void as_snapshot_remove_node(struct as_snapshot *s, guint idx)
{
	struct as_snap_node *n = &g_array_index(s->nodes, struct as_snap_node, idx);

	if (n->removed)
		return;
	n->removed = true;
	log_undo(s, UNDO_REMOVE_NODE, idx, NULL);
	tree_update(s, idx);
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
			/* Entries are undone newest first: u->idx is the last node. */
			g_array_set_size(s->nodes, u->idx);
			tree_update(s, u->idx);
			break;
		case UNDO_USED:
			n->used = u->used;
			break;
		case UNDO_REMOVE_NODE:
			n->removed = false;
			break;
		}
		if (u->kind != UNDO_ADD_NODE)
			tree_update(s, u->idx);
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

int as_snapshot_find_fit(struct as_snapshot *s, const struct as_pod *p, guint hint, int exclude)
{
	return as_snapshot_find_fit_below(s, p, hint, exclude, s->nodes->len);
}

/*
 * First node in [@lo, @hi) that @p fits, not @exclude, within subtree @t
 * which covers [@tlo, @thi); -1 when none.
 */
static int tree_search(const struct as_snapshot *s, const struct as_pod *p, guint t, guint tlo,
		       guint thi, guint lo, guint hi, int exclude)
{
	const struct as_resources *m = &s->tree[t];
	guint mid;
	int i;

	if (thi <= lo || hi <= tlo)
		return -1;
	/* The same tests as as_pod_fits_resources(), on the subtree's maximum. */
	if (m->pods < 1 || p->requests.cpu > m->cpu || p->requests.mem > m->mem ||
	    p->requests.gpu > m->gpu)
		return -1;
	if (t >= s->leaves) {
		i = (int)(t - s->leaves);
		return i != exclude && as_snapshot_fits(s, p, (guint)i) == AS_FIT_OK ? i : -1;
	}
	mid = tlo + (thi - tlo) / 2;
	i = tree_search(s, p, 2 * t, tlo, mid, lo, hi, exclude);
	return i >= 0 ? i : tree_search(s, p, 2 * t + 1, mid, thi, lo, hi, exclude);
}

#ifndef NDEBUG
/* What the tree must agree with: every node in scan order. */
static int scan_fit(const struct as_snapshot *s, const struct as_pod *p, guint hint, int exclude,
		    guint n)
{
	for (guint k = 0; k < n; k++) {
		guint i = hint + k < n ? hint + k : hint + k - n;

		if ((int)i == exclude)
			continue;
		if (as_snapshot_fits(s, p, i) == AS_FIT_OK)
			return (int)i;
	}
	return -1;
}
#endif

int as_snapshot_find_fit_below(struct as_snapshot *s, const struct as_pod *p, guint hint,
			       int exclude, guint limit)
{
	guint n = MIN(limit, s->nodes->len);
	int i;

	if (n == 0)
		return -1;
	if (hint >= n)
		hint = 0;
	if (s->stale || s->leaves < s->nodes->len || s->leaves == 0)
		tree_rebuild(s);
	/* From the hint to the end, then wrapping around from the start. */
	i = tree_search(s, p, 1, 0, s->leaves, hint, n, exclude);
	if (i < 0 && hint > 0)
		i = tree_search(s, p, 1, 0, s->leaves, 0, hint, exclude);
#ifndef NDEBUG
	g_assert_cmpint(i, ==, scan_fit(s, p, hint, exclude, n));
#endif
	return i;
}
