// SPDX-License-Identifier: Apache-2.0
/*
 * Drain rules (drain.h).  Kept in one function in CA's order so that the
 * order is visible at a glance: moving a rule changes decisions (a
 * kube-system pod with safe-to-evict "true" is movable because rule 4 comes
 * before rule 7).
 */
#include "config.h"

#include <string.h>

#include "drain.h"

static const char *const names[] = {
	[AS_BLOCK_NONE] = "NoReason",
	[AS_BLOCK_NOT_REPLICATED] = "NotReplicated",
	[AS_BLOCK_KUBE_SYSTEM] = "UnmovableKubeSystemPod",
	[AS_BLOCK_NOT_SAFE_TO_EVICT] = "NotSafeToEvictAnnotation",
	[AS_BLOCK_LOCAL_STORAGE] = "LocalStorageRequested",
	[AS_BLOCK_PDB] = "NotEnoughPdb",
};

const char *as_block_reason_name(enum as_block_reason r)
{
	return (size_t)r < G_N_ELEMENTS(names) ? names[r] : "?";
}

bool as_pdb_matches(const struct as_pdb *pdb, const struct as_pod *p)
{
	if (strcmp(pdb->ns, p->ns) != 0)
		return false;
	return as_label_selector_matches(pdb->has_selector, &pdb->match_labels, pdb->exprs,
					 pdb->n_exprs, &p->labels);
}

bool as_pod_is_daemonset(const struct as_pod *p)
{
	return p->owner_kind && strcmp(p->owner_kind, "DaemonSet") == 0;
}

bool as_pod_is_mirror(const struct as_pod *p)
{
	return as_kvs_get(&p->annotations, AS_ANN_MIRROR) != NULL;
}

static bool replicated(const struct as_pod *p)
{
	static const char *const kinds[] = {"ReplicaSet", "ReplicationController", "Job",
					    "StatefulSet"};

	if (!p->owner_kind)
		return false;
	for (size_t i = 0; i < G_N_ELEMENTS(kinds); i++)
		if (strcmp(p->owner_kind, kinds[i]) == 0)
			return true;
	return false;
}

static bool listed(const char *list, const char *name)
{
	g_auto(GStrv) parts = list ? g_strsplit(list, ",", -1) : NULL;

	for (char **q = parts; q && *q; q++)
		if (strcmp(g_strstrip(*q), name) == 0)
			return true;
	return false;
}

static bool local_storage(const struct as_pod *p)
{
	const char *ok = as_kvs_get(&p->annotations, AS_ANN_SAFE_TO_EVICT_LOCAL_VOLUMES);

	for (guint i = 0; i < p->n_volumes; i++) {
		const struct as_volume *v = &p->volumes[i];

		if (v->kind != AS_VOLUME_HOST_PATH && v->kind != AS_VOLUME_EMPTY_DIR)
			continue;
		if (!listed(ok, v->name))
			return true;
	}
	return false;
}

bool as_pod_is_long_terminating(const struct as_pod *p, int64_t now)
{
	return p->deletion_time != AS_TIME_NEVER &&
	       now > p->deletion_time + (p->grace_period_s + 30) * 1000;
}

struct as_drain as_drain_check(const struct as_pod *p, const struct as_options *o,
			       const GPtrArray *pdbs, const int32_t *remaining, int64_t now)
{
	const char *ste = as_kvs_get(&p->annotations, AS_ANN_SAFE_TO_EVICT);
	bool has_pdb = false, pdb_blocks = false;

	if (as_pod_is_mirror(p))
		return (struct as_drain){AS_DRAIN_IGNORE, AS_BLOCK_NONE, 1};
	if (as_pod_is_long_terminating(p, now))
		return (struct as_drain){AS_DRAIN_IGNORE, AS_BLOCK_NONE, 2};
	if (as_pod_is_daemonset(p))
		return (struct as_drain){AS_DRAIN_DELETE, AS_BLOCK_NONE, 3};
	if (ste && strcmp(ste, "true") == 0)
		return (struct as_drain){AS_DRAIN_MOVE, AS_BLOCK_NONE, 4};
	if (p->phase == AS_PHASE_SUCCEEDED || p->phase == AS_PHASE_FAILED)
		return (struct as_drain){AS_DRAIN_DELETE, AS_BLOCK_NONE, 5};
	if (!replicated(p))
		return (struct as_drain){AS_DRAIN_BLOCK, AS_BLOCK_NOT_REPLICATED, 6};
	for (guint i = 0; pdbs && i < pdbs->len; i++) {
		const struct as_pdb *pdb = g_ptr_array_index((GPtrArray *)pdbs, i);

		if (!as_pdb_matches(pdb, p))
			continue;
		has_pdb = true;
		if ((remaining ? remaining[i] : pdb->disruptions_allowed) < 1)
			pdb_blocks = true;
	}
	if (o->skip_nodes_with_system_pods && strcmp(p->ns, "kube-system") == 0 && !has_pdb)
		return (struct as_drain){AS_DRAIN_BLOCK, AS_BLOCK_KUBE_SYSTEM, 7};
	if (ste && strcmp(ste, "false") == 0)
		return (struct as_drain){AS_DRAIN_BLOCK, AS_BLOCK_NOT_SAFE_TO_EVICT, 8};
	if (o->skip_nodes_with_local_storage && local_storage(p))
		return (struct as_drain){AS_DRAIN_BLOCK, AS_BLOCK_LOCAL_STORAGE, 9};
	if (pdb_blocks)
		return (struct as_drain){AS_DRAIN_BLOCK, AS_BLOCK_PDB, 10};
	return (struct as_drain){AS_DRAIN_MOVE, AS_BLOCK_NONE, 0};
}
