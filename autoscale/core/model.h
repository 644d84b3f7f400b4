/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The autoscaler core's model of a cluster: nodes, pods, PodDisruptionBudgets
 * and node groups, reduced to what Cluster Autoscaler's decisions read.  The
 * core is pure (no I/O, no globals, no clock), so everything it needs,
 * including the time and the state carried from the previous loop, is in
 * these structures; the JSON reader (autoscale/cluster-json.c) and the future
 * daemon fill them in.
 *
 * Units: cpu in millicores, memory in bytes, gpu and pods as counts, times in
 * milliseconds since the Unix epoch (AS_TIME_NEVER when absent), durations in
 * milliseconds.
 *
 * Ownership: a struct as_cluster owns every node, pod, PDB and group in its
 * arrays and every string they point to; as_cluster_free() frees them all.
 * Arrays of key/value pairs own their strings.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#define AS_TIME_NEVER INT64_MIN

struct as_resources {
	int64_t cpu; /* millicores */
	int64_t mem; /* bytes */
	int64_t gpu;
	int64_t pods;
};

struct as_kv {
	char *key;
	char *value;
};

struct as_kvs {
	struct as_kv *v;
	guint n;
};

enum as_taint_effect {
	AS_EFFECT_ANY = 0, /* only in tolerations: an empty effect */
	AS_EFFECT_NO_SCHEDULE,
	AS_EFFECT_PREFER_NO_SCHEDULE,
	AS_EFFECT_NO_EXECUTE,
};

struct as_taint {
	char *key;
	char *value;
	enum as_taint_effect effect;
};

struct as_toleration {
	char *key; /* "" with exists matches every key */
	char *value;
	bool exists; /* operator Exists; otherwise Equal */
	enum as_taint_effect effect;
};

enum as_selector_op {
	AS_OP_IN,
	AS_OP_NOT_IN,
	AS_OP_EXISTS,
	AS_OP_DOES_NOT_EXIST,
	AS_OP_GT,
	AS_OP_LT,
};

struct as_match_expr {
	char *key;
	enum as_selector_op op;
	char **values; /* NULL-terminated, may be empty */
};

/* Terms of a required node affinity: ORed; expressions in a term: ANDed. */
struct as_selector_term {
	struct as_match_expr *exprs;
	guint n_exprs;
};

struct as_node {
	char *name;
	char *provider_id; /* "" when absent */
	struct as_resources capacity;
	struct as_resources allocatable;
	struct as_kvs labels;
	struct as_kvs annotations;
	struct as_taint *taints;
	guint n_taints;
	bool ready; /* condition Ready=True */
	bool disk_pressure;
	bool memory_pressure;
	bool pid_pressure;
	bool network_unavailable;
	bool unschedulable; /* spec.unschedulable */
	/*
	 * Its cloud provider checked and found no instance behind it (CA's
	 * CloudProvider.HasInstance false): the cluster state counts it
	 * Deleted.  False when the provider could not tell, or it is not the
	 * provider's node.
	 */
	bool instance_gone;
	int64_t creation_time;
};

enum as_pod_phase {
	AS_PHASE_PENDING,
	AS_PHASE_RUNNING,
	AS_PHASE_SUCCEEDED,
	AS_PHASE_FAILED,
	AS_PHASE_UNKNOWN,
};

enum as_volume_kind {
	AS_VOLUME_OTHER,
	AS_VOLUME_EMPTY_DIR, /* on disk */
	AS_VOLUME_EMPTY_DIR_MEMORY,
	AS_VOLUME_HOST_PATH,
};

struct as_volume {
	char *name;
	enum as_volume_kind kind;
};

struct as_pod {
	/*
	 * First the fields RunOnce reads for every pod in every loop, within
	 * one 64-byte cache line: a loop walks thousands of pods scattered
	 * over the heap, and each line more it touches is a cache miss more.
	 */
	char *node_name; /* NULL when not scheduled */
	struct as_resources requests; /* pods is always 1 */
	enum as_pod_phase phase;
	bool unschedulable; /* PodScheduled=False, reason Unschedulable */
	/*
	 * A sum of requests went past INT64_MAX: requests hold INT64_MAX
	 * there, and the pod fits no node (it never triggers a scale-up).
	 */
	bool requests_overflow;
	int32_t priority;
	int64_t deletion_time;
	char *ns;
	char *name;
	char *key; /* "ns/name", the name used in decisions */
	char *owner_kind; /* controller owner reference; NULL when none */
	char *owner_name;
	struct as_kvs labels;
	struct as_kvs annotations;
	struct as_kvs node_selector;
	struct as_selector_term *affinity; /* required node affinity */
	guint n_affinity;
	struct as_toleration *tolerations;
	guint n_tolerations;
	struct as_volume *volumes;
	guint n_volumes;
	int64_t creation_time;
	int64_t grace_period_s; /* terminationGracePeriodSeconds, default 30 */
};

struct as_pdb {
	char *ns;
	char *name;
	/* selector; NULL match_labels and no expressions with has_selector = a null selector */
	bool has_selector;
	struct as_kvs match_labels;
	struct as_match_expr *exprs;
	guint n_exprs;
	int32_t disruptions_allowed;
};

enum as_instance_state {
	AS_INSTANCE_RUNNING,
	AS_INSTANCE_CREATING,
	AS_INSTANCE_DELETING,
};

enum as_instance_error {
	AS_ERROR_NONE,
	AS_ERROR_OUT_OF_RESOURCES,
	AS_ERROR_OTHER,
};

struct as_instance {
	char *id; /* matches a node's providerID; or a node name for members given by name */
	enum as_instance_state state;
	enum as_instance_error error;
	int64_t since; /* when the instance was requested; AS_TIME_NEVER if unknown */
};

struct as_node_group {
	char *id;
	int min_size;
	int max_size;
	int target_size;
	struct as_node *template_node; /* NULL: no template, never scaled up */
	struct as_instance *instances;
	guint n_instances;
	double price; /* per node per hour; 0 = unknown */
	/* State carried between loops. */
	int64_t scale_up_time; /* last IncreaseSize still in flight, or NEVER */
	int64_t backoff_until; /* NEVER when not backed off */
	int64_t backoff_duration; /* last backoff length, for doubling */
	int64_t last_failure; /* for the backoff reset timeout */
};

struct as_cluster {
	GPtrArray *nodes; /* struct as_node * */
	GPtrArray *pods; /* struct as_pod * */
	GPtrArray *pdbs; /* struct as_pdb * */
	GPtrArray *groups; /* struct as_node_group * */
	/* node name (owned) -> int64_t* first time seen unneeded (owned) */
	GHashTable *unneeded_since;
	int64_t last_scale_up;
	int64_t last_scale_down_delete;
	int64_t last_scale_down_failure;
};

struct as_cluster *as_cluster_new(void);
void as_cluster_free(struct as_cluster *c);
typedef struct as_cluster as_cluster;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(as_cluster, as_cluster_free)

struct as_node *as_node_new(void);
void as_node_free(struct as_node *n);
/* A deep copy, under a new name (owned by the copy). */
struct as_node *as_node_copy(const struct as_node *n, const char *name);
struct as_pod *as_pod_new(void);
void as_pod_free(struct as_pod *p);
struct as_pdb *as_pdb_new(void);
void as_pdb_free(struct as_pdb *p);
struct as_node_group *as_node_group_new(void);
void as_node_group_free(struct as_node_group *g);

void as_kvs_clear(struct as_kvs *kvs);
/* Append a copy of @key and @value. */
void as_kvs_add(struct as_kvs *kvs, const char *key, const char *value);
/* Replace the value of @key, or append it. */
void as_kvs_set(struct as_kvs *kvs, const char *key, const char *value);
/* The value for @key, or NULL. */
const char *as_kvs_get(const struct as_kvs *kvs, const char *key);
void as_match_exprs_free(struct as_match_expr *e, guint n);

/* Sets pod->key from ns and name. */
void as_pod_set_key(struct as_pod *p);
void as_cluster_set_unneeded_since(struct as_cluster *c, const char *node, int64_t t);

/* Does @sel (PDB selector semantics: In/NotIn/Exists/DoesNotExist) match @labels? */
bool as_label_selector_matches(bool has_selector, const struct as_kvs *match_labels,
			       const struct as_match_expr *exprs, guint n_exprs,
			       const struct as_kvs *labels);
bool as_match_expr_matches(const struct as_match_expr *e, const struct as_kvs *labels);

/* Well-known names. */
#define AS_ANN_SAFE_TO_EVICT "cluster-autoscaler.kubernetes.io/safe-to-evict"
#define AS_ANN_SAFE_TO_EVICT_LOCAL_VOLUMES "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"
#define AS_ANN_SCALE_DOWN_DISABLED "cluster-autoscaler.kubernetes.io/scale-down-disabled"
#define AS_ANN_MIRROR "kubernetes.io/config.mirror"
#define AS_TAINT_TO_BE_DELETED "ToBeDeletedByClusterAutoscaler"
