/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The simulator's cluster configuration: the bare-metal pool (machine
 * types and counts), how machines boot and how long that takes, the node
 * groups per workload class that draw machines from the pool (pooled: one
 * shared pool; dedicated: each group owns a fixed subset), the scheduler's
 * scoring, the class of each trace record and the autoscaler's options
 * under Cluster Autoscaler's flag names.  Read from a GKeyFile (INI)
 * documented key by key in docs/sim-cluster.md.  Every error is one line
 * naming the file, the section and the key.
 *
 * Ownership: a SimCluster owns everything it points to; sim_cluster_free().
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include "options.h"

typedef enum {
	SIM_CLS_CONTAINER = 0,
	SIM_CLS_VM,
	SIM_CLS_BAREMETAL,
	SIM_N_CLS,
} SimClass;

const char *sim_class_name(SimClass c);

typedef enum {
	SIM_DIST_FIXED,   /* a */
	SIM_DIST_UNIFORM, /* between a and b */
	SIM_DIST_NORMAL,  /* mean a, standard deviation b, never below 0 */
} SimDistKind;

typedef struct {
	SimDistKind kind;
	int64_t a_ms, b_ms;
} SimDist;

/* "fixed 90s", "uniform 1m 2m", "normal 15m 3m", or a bare time (fixed). */
int sim_dist_parse(const char *s, SimDist *out);

typedef struct {
	char *id;
	int64_t cpu_milli;
	int64_t memory_bytes;
	int64_t gpus;
	char *gpu_model; /* "" when none */
	int64_t count;
	double cost_per_hour;
} SimMachineTypeCfg;

typedef struct {
	char *id;
	SimDist delay;
} SimBootWay;

typedef struct {
	char *id;
	SimClass cls;
	int min, max;
	guint *types; /* indices into machine_types */
	guint n_types;
	/* dedicated: machines of each of types[] the group owns */
	int64_t *owned;
	guint boot; /* index into boot_ways */
} SimGroupCfg;

typedef struct {
	char *path;
	char *name;
	bool dedicated;
	GArray *machine_types; /* SimMachineTypeCfg */
	GArray *boot_ways;     /* SimBootWay */
	GArray *groups;        /* SimGroupCfg, in file order */
	SimDist deprovision;
	double failure_rate;  /* probability that one provisioning fails */
	bool most_allocated;  /* scheduler scoring; default least-allocated */
	int sample_percent;   /* 0: score every feasible node */
	int64_t sample_interval_ms;
	struct as_options as;
	GHashTable *class_map; /* trace class (owned) -> SimClass + 1 */
	int default_class;     /* SimClass, or -1: an unmapped class is an error */
} SimCluster;

/*
 * Read @path.  @nodes_override (NULL: none) is an openb node list that
 * replaces the config's `nodes` key (the --nodes flag).  Returns 0, or
 * -EINVAL / -errno with *@err a one-line "FILE: [section] key: problem".
 */
int sim_cluster_load(const char *path, const char *nodes_override, SimCluster **out, char **err);
void sim_cluster_free(SimCluster *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimCluster, sim_cluster_free)

/* The class of a trace record's class string: 0 and *out, or -ENOENT. */
int sim_cluster_map_class(const SimCluster *c, const char *cls, SimClass *out);
