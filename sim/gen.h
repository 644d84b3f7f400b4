/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Synthetic workloads for the simulator: pods arriving as a Poisson
 * process whose rate follows a daily cycle, each of a class drawn from a
 * mix, a shape (cpu, memory, gpu) drawn from a weighted table per class,
 * and a run time drawn from an exponential or lognormal distribution with
 * a cap.  Everything comes from one seeded PRNG written here (xoshiro256**)
 * and from arithmetic that IEEE 754 fixes exactly (see gen.c), so the
 * same configuration and seed give the same trace, byte for byte, on every
 * machine.
 */
#pragma once

#include <stdint.h>

#include <glib.h>

#include "trace.h"

typedef enum {
	SIM_GEN_EXP,
	SIM_GEN_LOGNORMAL,
} SimGenDist;

/* One shape of the table: drawn with probability weight / sum of weights. */
typedef struct {
	const char *cls; /* borrowed */
	int64_t cpu_milli;
	int64_t memory_bytes;
	int64_t gpu_milli;
	uint32_t weight;
} SimGenShape;

enum { SIM_GEN_MAX_CLASSES = 16, SIM_GEN_MAX_SHAPES = 64 };

typedef struct {
	uint64_t seed;
	/* Stop after @pods pods, or at arrival time @span_ms, whichever is
	 * first; at least one must be set (non-zero). */
	uint64_t pods;
	int64_t span_ms;
	/* Mean arrivals per hour, and the daily cycle: the rate at time of day
	 * t is rate * (1 + amplitude * cos(2 pi (t - peak_ms) / 1 day)). */
	double rate_per_hour;
	double amplitude; /* 0 (flat) .. 1 */
	int64_t peak_ms;  /* time of day of the peak, 0 .. 1 day */
	/* Run times: mean, distribution, lognormal sigma, cap (0: none). */
	SimGenDist runtime_dist;
	int64_t runtime_mean_ms;
	double runtime_sigma;
	int64_t runtime_max_ms;
	/* Class mix: names (borrowed) and integer weights. */
	const char *mix_class[SIM_GEN_MAX_CLASSES];
	uint32_t mix_weight[SIM_GEN_MAX_CLASSES];
	size_t n_mix;
	/* Shapes; NULL uses the built-in table (sim_gen_default_shapes). */
	const SimGenShape *shapes;
	size_t n_shapes;
} SimGenConfig;

/* Defaults: seed 1, 1000 pods, 600 pods/h with amplitude 0.5 peaking at
 * 14:00, lognormal run times of mean 1 h, sigma 1, capped at 7 days, mix
 * container 70 / vm 20 / baremetal 10. */
void sim_gen_config_init(SimGenConfig *cfg);
/* The built-in shape table. */
const SimGenShape *sim_gen_default_shapes(size_t *n);

/* "container=70,vm=20,baremetal=10" into cfg's mix (names point into @s,
 * which must outlive cfg); -EINVAL with a message in *errmsg. */
int sim_gen_parse_mix(char *s, SimGenConfig *cfg, char **errmsg);
/* "90", "500ms", "45s", "30m", "12h", "30d" (a bare number is seconds) into ms. */
int sim_parse_duration_ms(const char *s, int64_t *out);

typedef struct _SimGen SimGen;

/* Check @cfg (copied; borrowed strings must outlive the generator). */
int sim_gen_new(const SimGenConfig *cfg, SimGen **out, char **errmsg);
/* The next pod, in arrival order: 1, or 0 at the end.  Strings borrowed
 * until the next call. */
int sim_gen_next(SimGen *g, SimPod *pod);
void sim_gen_free(SimGen *g);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimGen, sim_gen_free)

/* The PRNG, exposed for tests: xoshiro256** seeded through splitmix64. */
typedef struct {
	uint64_t s[4];
} SimRng;
void sim_rng_seed(SimRng *r, uint64_t seed);
uint64_t sim_rng_next(SimRng *r);
