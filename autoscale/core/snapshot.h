/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cluster snapshot for simulations: the nodes the scheduler could use and
 * what their pods already request, with cheap fork/revert so that a
 * scale-down can try removing a node, re-place its pods, and undo it all.
 *
 * States and invariants:
 * - Every change (add node, add or remove a pod's requests, remove a node)
 *   appends one entry to an undo log.  fork() pushes a mark (the log length
 *   and the node count); revert() undoes entries back to the top mark and
 *   pops it; commit() pops the mark and keeps the changes (they stay in the
 *   log, so an outer fork can still revert them).
 * - A node's used resources are the sum of the requests placed on it (on
 *   an upcoming node, first those of its DaemonSet pods, as_snapshot_use())
 *   and never exceed what the placement checks allowed; removed nodes keep
 *   their numbers but are never chosen as destinations.
 * - Nodes are not owned: they point into the cluster or at group templates,
 *   which outlive the snapshot.
 * - Fit searches go through a tree of the nodes' free resources
 *   (snapshot.c) and return what a scan of every node from the hint
 *   would; debug builds check each search against that scan.
 */
#pragma once

#include <stdbool.h>

#include "model.h"
#include "predicates.h"

struct as_snap_node {
	const struct as_node *node;
	struct as_resources used;
	/*
	 * node->allocatable, kept here too: a fit search reads it for every
	 * node it passes, and one array is far kinder to the cache than a
	 * pointer to each node.
	 */
	struct as_resources alloc;
	int group; /* index in cluster->groups, -1 when not autoscaled */
	bool removed;
	bool upcoming; /* a template copy standing for a node not yet registered */
};

struct as_snapshot;

struct as_snapshot *as_snapshot_new(void);
void as_snapshot_free(struct as_snapshot *s);
typedef struct as_snapshot as_snapshot;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(as_snapshot, as_snapshot_free)

guint as_snapshot_add_node(struct as_snapshot *s, const struct as_node *n, int group, bool upcoming);
guint as_snapshot_n_nodes(const struct as_snapshot *s);
const struct as_snap_node *as_snapshot_node(const struct as_snapshot *s, guint idx);
/* Add (or take away) @p's requests on node @idx, without checks. */
void as_snapshot_place(struct as_snapshot *s, guint idx, const struct as_pod *p);
void as_snapshot_unplace(struct as_snapshot *s, guint idx, const struct as_pod *p);
/* Add @req to node @idx's used resources, without checks (pods not in the model). */
void as_snapshot_use(struct as_snapshot *s, guint idx, const struct as_resources *req);
void as_snapshot_remove_node(struct as_snapshot *s, guint idx);

void as_snapshot_fork(struct as_snapshot *s);
void as_snapshot_revert(struct as_snapshot *s);
void as_snapshot_commit(struct as_snapshot *s);
guint as_snapshot_depth(const struct as_snapshot *s);

/* Could @p run on node @idx as it is now?  Removed nodes never fit. */
enum as_fit as_snapshot_fits(const struct as_snapshot *s, const struct as_pod *p, guint idx);
/*
 * First node, scanning from @hint and wrapping around, where @p fits, that
 * is not @exclude (pass -1 for none); -1 when none.  Does not place it
 * (@s is not const: a search may rebuild the snapshot's search index).
 */
int as_snapshot_find_fit(struct as_snapshot *s, const struct as_pod *p, guint hint, int exclude);
/* The same among nodes [0, @limit) only (real nodes, without the upcoming ones after them). */
int as_snapshot_find_fit_below(struct as_snapshot *s, const struct as_pod *p, guint hint,
			       int exclude, guint limit);
