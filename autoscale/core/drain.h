/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Drain rules: what happens to a pod when its node is scaled down.  The
 * rules are Cluster Autoscaler's, checked in its order, and the first one
 * that matches decides:
 *
 *   1. mirror pod (kubernetes.io/config.mirror)        -> ignored
 *   2. long-terminating (deleted more than grace+30s ago) -> ignored
 *   3. DaemonSet pod                                   -> drained, not moved
 *   4. safe-to-evict: "true"                           -> moved
 *   5. terminal (Succeeded/Failed)                     -> drained, not moved
 *   6. no ReplicaSet/ReplicationController/Job/StatefulSet controller
 *                                                      -> blocks: NotReplicated
 *   7. kube-system without a matching PDB (--skip-nodes-with-system-pods)
 *                                                      -> blocks: UnmovableKubeSystemPod
 *   8. safe-to-evict: "false"                          -> blocks: NotSafeToEvictAnnotation
 *   9. hostPath or disk emptyDir volume not named in safe-to-evict-local-volumes
 *      (--skip-nodes-with-local-storage)               -> blocks: LocalStorageRequested
 *  10. a matching PDB with no disruption left          -> blocks: NotEnoughPdb
 *  otherwise                                           -> moved
 */
#pragma once

#include "model.h"
#include "options.h"

enum as_drain_kind {
	AS_DRAIN_IGNORE,
	AS_DRAIN_DELETE, /* evicted but not re-placed */
	AS_DRAIN_MOVE, /* evicted and must fit elsewhere */
	AS_DRAIN_BLOCK,
};

enum as_block_reason {
	AS_BLOCK_NONE,
	AS_BLOCK_NOT_REPLICATED,
	AS_BLOCK_KUBE_SYSTEM,
	AS_BLOCK_NOT_SAFE_TO_EVICT,
	AS_BLOCK_LOCAL_STORAGE,
	AS_BLOCK_PDB,
};

struct as_drain {
	enum as_drain_kind kind;
	enum as_block_reason reason;
	int rule; /* 1..10 as above, 0 for the default */
};

/* CA's name of @r: "NotReplicated", "NotEnoughPdb", ... */
const char *as_block_reason_name(enum as_block_reason r);

/*
 * Classify @p.  @pdbs are the cluster's PDBs; @remaining, when not NULL,
 * gives for each PDB (same index) the disruptions still allowed in this
 * loop, instead of its disruptions_allowed.
 */
struct as_drain as_drain_check(const struct as_pod *p, const struct as_options *o,
			       const GPtrArray *pdbs, const int32_t *remaining, int64_t now);

/* Does @pdb select @p (same namespace, selector matches its labels)? */
bool as_pdb_matches(const struct as_pdb *pdb, const struct as_pod *p);
bool as_pod_is_daemonset(const struct as_pod *p);
bool as_pod_is_mirror(const struct as_pod *p);

/*
 * Was @p deleted more than its grace period + 30 s before @now?  CA's
 * drain.IsPodLongTerminating: such a pod is ignored by the drain (rule 2)
 * and left out of its node's utilization.
 */
bool as_pod_is_long_terminating(const struct as_pod *p, int64_t now);
