/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Snapshot files (docs/autoscale-snapshot.md) to the core's cluster model,
 * and decisions back to JSON.  Nodes, pods and PDBs are Kubernetes' own JSON
 * as `kubectl get -o json` prints them (an items array or the whole List);
 * node_groups, unneeded_since and the last scale-up/down times are ours.
 * Both directions work on memory buffers; reading files is main.c's job.
 * Unknown fields are ignored, as Kubernetes clients ignore them.
 */
#pragma once

#include "autoscaler.h"
#include "model.h"
#include "options.h"

/*
 * Parse a snapshot.  Returns 0 and *@out (and *@now, AS_TIME_NEVER when the
 * snapshot has no "now"), or -EINVAL with *@msg naming the JSON path and the
 * problem, e.g. "pods[12].spec.containers[0].resources.requests.cpu: \"2x\"
 * is not a Kubernetes quantity".
 */
int as_cluster_from_json(const char *buf, size_t len, struct as_cluster **out, int64_t *now,
			 char **msg);

/*
 * Apply an options file: a JSON object of CA flag names to values (strings,
 * numbers or booleans), e.g. {"expander": "least-waste",
 * "scale-down-unneeded-time": "10m"}.  0 or -EINVAL with *@msg; all or
 * nothing: on error @o is unchanged.
 */
int as_options_from_json(struct as_options *o, const char *buf, size_t len, char **msg);

struct json_object;

/*
 * One Kubernetes Node, Pod or PodDisruptionBudget object (as the API
 * returns it) to the model, for the daemon's cache.  0 and *@out (owned by
 * the caller), or -EINVAL with *@msg naming the field.
 */
int as_node_from_json(struct json_object *o, struct as_node **out, char **msg);
int as_pod_from_json(struct json_object *o, struct as_pod **out, char **msg);
int as_pdb_from_json(struct json_object *o, struct as_pdb **out, char **msg);

/* Member @key of object @o (borrowed), NULL when @o is not an object or has none. */
struct json_object *as_json_member(struct json_object *o, const char *key);
/* The same when it is a string, else NULL. */
const char *as_json_string(struct json_object *o, const char *key);

/* The decision as pretty-printed JSON (g_malloc'd, ends with a newline). */
char *as_decision_to_json(const struct as_decision *d);
