// SPDX-License-Identifier: Apache-2.0
/*
 * Synthetic workload generator (see gen.h).
 *
 * Arrivals are a non-homogeneous Poisson process sampled by thinning:
 * candidates come at the peak rate and each is kept with probability
 * rate(t) / peak rate.  Arrival times accumulate as integer microseconds
 * (each gap is rounded once), never as a running floating-point sum.
 *
 * Byte-for-byte identical output on every machine needs more than a fixed
 * PRNG: libm's log, exp and cos may differ in the last bit between
 * implementations, so this file computes them itself from +, -, *, / and
 * sqrt, which IEEE 754 rounds exactly, plus floor/frexp/ldexp, which are
 * exact.  The file is compiled with -ffp-contract=off so that no compiler
 * fuses a multiply and an add into an FMA on one machine and not another.
 * (32-bit x87 builds, with their excess precision, are not covered.)
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "gen.h"

#define DAY_MS INT64_C(86400000)
#define DAY_US (DAY_MS * 1000)
#define HOUR_MS INT64_C(3600000)

static const double LN2 = 0.69314718055994530942;
static const double PI = 3.14159265358979323846;

/* ---- PRNG -------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

void sim_rng_seed(SimRng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t sim_rng_next(SimRng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

/* Uniform in (0, 1]: never 0, so its log is finite. */
static double rng_unit(SimRng *r)
{
	return (double)((sim_rng_next(r) >> 11) + 1) * (1.0 / 9007199254740992.0);
}

/* Uniform integer in [0, n), n > 0, without modulo bias. */
static uint64_t rng_below(SimRng *r, uint64_t n)
{
	uint64_t limit = UINT64_MAX - UINT64_MAX % n;
	uint64_t x;

	do
		x = sim_rng_next(r);
	while (x >= limit);
	return x % n;
}

/* ---- portable math ----------------------------------------------------- */

/* ln x for x > 0: x = m 2^e with m in [sqrt(1/2), sqrt(2)), then atanh series. */
static double gen_log(double x)
{
	int e;
	double m = frexp(x, &e), s, z, sum = 0.0;

	if (m < 0.70710678118654752440) {
		m *= 2.0;
		e--;
	}
	s = (m - 1.0) / (m + 1.0);
	z = s * s;
	/* 2 s (1 + z/3 + z^2/5 + ...); |s| < 0.172, so 11 terms reach 1e-19. */
	for (int k = 21; k >= 1; k -= 2)
		sum = sum * z + 1.0 / k;
	return (double)e * LN2 + 2.0 * s * sum;
}

/* e^x: x = k ln2 + r with |r| <= ln2/2, Taylor for e^r, then 2^k exactly. */
static double gen_exp(double x)
{
	double k, r, sum = 1.0;

	if (x > 700.0)
		x = 700.0;
	if (x < -700.0)
		x = -700.0;
	k = floor(x / LN2 + 0.5);
	r = x - k * LN2;
	for (int i = 17; i >= 1; i--)
		sum = 1.0 + sum * r / i;
	return ldexp(sum, (int)k);
}

/* cos x: reduce to [-pi, pi], fold to [-pi/2, pi/2], Taylor to x^22. */
static double gen_cos(double x)
{
	double z, sum = 1.0, sign = 1.0;

	x = x - 2.0 * PI * floor(x / (2.0 * PI) + 0.5);
	if (x < 0)
		x = -x;
	if (x > PI / 2) {
		x = PI - x;
		sign = -1.0;
	}
	z = x * x;
	for (int n = 22; n >= 2; n -= 2)
		sum = 1.0 - sum * z / (double)(n * (n - 1));
	return sign * sum;
}

/* ---- configuration ----------------------------------------------------- */

static const SimGenShape default_shapes[] = {
	{SIM_CLASS_CONTAINER, 250, INT64_C(512) << 20, 0, 4},
	{SIM_CLASS_CONTAINER, 500, INT64_C(1) << 30, 0, 4},
	{SIM_CLASS_CONTAINER, 1000, INT64_C(2) << 30, 0, 3},
	{SIM_CLASS_CONTAINER, 2000, INT64_C(4) << 30, 0, 2},
	{SIM_CLASS_CONTAINER, 4000, INT64_C(8) << 30, 0, 1},
	{SIM_CLASS_VM, 2000, INT64_C(4) << 30, 0, 3},
	{SIM_CLASS_VM, 4000, INT64_C(16) << 30, 0, 3},
	{SIM_CLASS_VM, 8000, INT64_C(32) << 30, 0, 2},
	{SIM_CLASS_VM, 16000, INT64_C(64) << 30, 0, 1},
	{SIM_CLASS_BAREMETAL, 64000, INT64_C(256) << 30, 0, 3},
	{SIM_CLASS_BAREMETAL, 96000, INT64_C(384) << 30, 0, 2},
	{SIM_CLASS_BAREMETAL, 96000, INT64_C(768) << 30, 8000, 1},
};

const SimGenShape *sim_gen_default_shapes(size_t *n)
{
	*n = G_N_ELEMENTS(default_shapes);
	return default_shapes;
}

void sim_gen_config_init(SimGenConfig *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->seed = 1;
	cfg->pods = 1000;
	cfg->rate_per_hour = 600.0;
	cfg->amplitude = 0.5;
	cfg->peak_ms = 14 * HOUR_MS;
	cfg->runtime_dist = SIM_GEN_LOGNORMAL;
	cfg->runtime_mean_ms = HOUR_MS;
	cfg->runtime_sigma = 1.0;
	cfg->runtime_max_ms = 7 * DAY_MS;
	cfg->mix_class[0] = SIM_CLASS_CONTAINER;
	cfg->mix_weight[0] = 70;
	cfg->mix_class[1] = SIM_CLASS_VM;
	cfg->mix_weight[1] = 20;
	cfg->mix_class[2] = SIM_CLASS_BAREMETAL;
	cfg->mix_weight[2] = 10;
	cfg->n_mix = 3;
}

int sim_gen_parse_mix(char *s, SimGenConfig *cfg, char **errmsg)
{
	const char *names[SIM_GEN_MAX_CLASSES];
	uint32_t weights[SIM_GEN_MAX_CLASSES];
	size_t n = 0;
	char *p = s;

	while (*p) {
		char *comma = strchr(p, ',');
		char *eq;
		guint64 w;
		char *end;

		if (comma)
			*comma = '\0';
		eq = strchr(p, '=');
		if (n == SIM_GEN_MAX_CLASSES) {
			*errmsg = g_strdup_printf("mix: more than %d classes", SIM_GEN_MAX_CLASSES);
			return -EINVAL;
		}
		if (!eq || eq == p) {
			*errmsg = g_strdup_printf("mix: \"%s\" is not CLASS=WEIGHT", p);
			return -EINVAL;
		}
		*eq = '\0';
		errno = 0;
		w = g_ascii_strtoull(eq + 1, &end, 10);
		if (errno || end == eq + 1 || *end || w > 1000000 || eq[1] == '-') {
			*errmsg = g_strdup_printf("mix: weight \"%s\" of %s is not an integer 0..1000000",
						  eq + 1, p);
			return -EINVAL;
		}
		names[n] = p;
		weights[n] = (uint32_t)w;
		n++;
		if (!comma)
			break;
		p = comma + 1;
	}
	if (n == 0) {
		*errmsg = g_strdup("mix: empty");
		return -EINVAL;
	}
	/* Only now: cfg is left alone on failure. */
	memcpy(cfg->mix_class, names, n * sizeof(names[0]));
	memcpy(cfg->mix_weight, weights, n * sizeof(weights[0]));
	cfg->n_mix = n;
	return 0;
}

int sim_parse_duration_ms(const char *s, int64_t *out)
{
	static const struct {
		const char *suffix;
		int64_t ms;
	} units[] = {
		{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", HOUR_MS}, {"d", DAY_MS}, {"", 1000},
	};
	guint64 v;
	char *end;

	errno = 0;
	if (!g_ascii_isdigit(*s))
		return -EINVAL;
	v = g_ascii_strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	for (size_t i = 0; i < G_N_ELEMENTS(units); i++) {
		if (strcmp(end, units[i].suffix) == 0) {
			if (v > (guint64)(SIM_TRACE_MAX_TIME_MS / units[i].ms))
				return -ERANGE;
			*out = (int64_t)v * units[i].ms;
			return 0;
		}
	}
	return -EINVAL;
}

/* ---- generator --------------------------------------------------------- */

struct _SimGen {
	SimGenConfig cfg;
	SimRng rng;
	uint64_t mix_total;
	/* Per mix class: shapes of that class and their total weight. */
	GArray *class_shapes[SIM_GEN_MAX_CLASSES]; /* of const SimGenShape * */
	uint64_t class_weight[SIM_GEN_MAX_CLASSES];
	double peak_per_us; /* candidate rate: rate * (1 + amplitude), per us */
	double mu;          /* lognormal location */
	int64_t t_us;
	uint64_t made;
	char id[32];
};

void sim_gen_free(SimGen *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < SIM_GEN_MAX_CLASSES; i++) {
		if (g->class_shapes[i])
			g_array_free(g->class_shapes[i], TRUE);
	}
	g_free(g);
}

int sim_gen_new(const SimGenConfig *cfg, SimGen **out, char **errmsg)
{
	g_autoptr(SimGen) g = g_new0(SimGen, 1);
	const SimGenShape *shapes = cfg->shapes;
	size_t n_shapes = cfg->n_shapes;

#define GEN_FAIL(...)                                        \
	do {                                                 \
		*errmsg = g_strdup_printf(__VA_ARGS__);      \
		return -EINVAL;                              \
	} while (0)
	if (cfg->pods == 0 && cfg->span_ms <= 0)
		GEN_FAIL("give a number of pods or a duration");
	if (cfg->pods > UINT64_C(1000000000))
		GEN_FAIL("at most 1000000000 pods");
	if (cfg->span_ms < 0 || cfg->span_ms > SIM_TRACE_MAX_TIME_MS)
		GEN_FAIL("duration out of range");
	if (!(cfg->rate_per_hour > 0.0 && cfg->rate_per_hour <= 1e9))
		GEN_FAIL("rate must be more than 0 and at most 1e9 pods per hour");
	if (!(cfg->amplitude >= 0.0 && cfg->amplitude <= 1.0))
		GEN_FAIL("amplitude must be between 0 and 1");
	if (cfg->peak_ms < 0 || cfg->peak_ms >= DAY_MS)
		GEN_FAIL("peak time must be within a day");
	if (cfg->runtime_mean_ms <= 0 || cfg->runtime_mean_ms > SIM_TRACE_MAX_TIME_MS)
		GEN_FAIL("mean run time out of range");
	if (!(cfg->runtime_sigma >= 0.0 && cfg->runtime_sigma <= 5.0))
		GEN_FAIL("sigma must be between 0 and 5");
	if (cfg->runtime_max_ms < 0 || cfg->runtime_max_ms > SIM_TRACE_MAX_TIME_MS)
		GEN_FAIL("run time cap out of range");
	if (cfg->n_mix == 0 || cfg->n_mix > SIM_GEN_MAX_CLASSES)
		GEN_FAIL("the class mix is empty");
	if (!shapes)
		shapes = sim_gen_default_shapes(&n_shapes);
	if (n_shapes == 0 || n_shapes > SIM_GEN_MAX_SHAPES)
		GEN_FAIL("between 1 and %d shapes", SIM_GEN_MAX_SHAPES);
	g->cfg = *cfg;
	for (size_t c = 0; c < cfg->n_mix; c++) {
		g->mix_total += cfg->mix_weight[c];
		g->class_shapes[c] = g_array_new(FALSE, FALSE, sizeof(const SimGenShape *));
		for (size_t i = 0; i < n_shapes; i++) {
			const SimGenShape *sh = &shapes[i];

			if (strcmp(sh->cls, cfg->mix_class[c]) != 0 || sh->weight == 0)
				continue;
			g_array_append_val(g->class_shapes[c], sh);
			g->class_weight[c] += sh->weight;
		}
		if (cfg->mix_weight[c] > 0 && g->class_weight[c] == 0)
			GEN_FAIL("no shape for class \"%s\"", cfg->mix_class[c]);
	}
	if (g->mix_total == 0)
		GEN_FAIL("the class mix has no weight");
#undef GEN_FAIL
	sim_rng_seed(&g->rng, cfg->seed);
	g->peak_per_us = cfg->rate_per_hour * (1.0 + cfg->amplitude) / 3.6e9;
	/* Lognormal with mean M: mu = ln M - sigma^2 / 2. */
	g->mu = gen_log((double)cfg->runtime_mean_ms) - cfg->runtime_sigma * cfg->runtime_sigma / 2.0;
	*out = g_steal_pointer(&g);
	return 0;
}

/* Next arrival in us by thinning; false past the span. */
static bool next_arrival(SimGen *g)
{
	const SimGenConfig *c = &g->cfg;

	for (;;) {
		double gap = -gen_log(rng_unit(&g->rng)) / g->peak_per_us;
		int64_t tod_ms;
		double keep;

		if (gap > 1e15)
			return false;
		g->t_us += (int64_t)floor(gap + 0.5);
		if (c->span_ms > 0 && g->t_us >= c->span_ms * 1000)
			return false;
		if (g->t_us / 1000 > SIM_TRACE_MAX_TIME_MS)
			return false;
		if (c->amplitude == 0.0)
			return true;
		/* Acceptance: (1 + a cos(2 pi (tod - peak) / day)) / (1 + a). */
		tod_ms = ((g->t_us / 1000) % DAY_MS - c->peak_ms + DAY_MS) % DAY_MS;
		keep = (1.0 + c->amplitude * gen_cos(2.0 * PI * (double)tod_ms / (double)DAY_MS)) /
		       (1.0 + c->amplitude);
		if (rng_unit(&g->rng) <= keep)
			return true;
	}
}

static int64_t runtime(SimGen *g)
{
	const SimGenConfig *c = &g->cfg;
	double v;
	int64_t ms;

	if (c->runtime_dist == SIM_GEN_EXP) {
		v = -gen_log(rng_unit(&g->rng)) * (double)c->runtime_mean_ms;
	} else {
		/* Box-Muller: one standard normal from two uniforms. */
		double u1 = rng_unit(&g->rng), u2 = rng_unit(&g->rng);
		double z = sqrt(-2.0 * gen_log(u1)) * gen_cos(2.0 * PI * u2);

		v = gen_exp(g->mu + c->runtime_sigma * z);
	}
	if (v > (double)SIM_TRACE_MAX_TIME_MS)
		v = (double)SIM_TRACE_MAX_TIME_MS;
	ms = (int64_t)floor(v + 0.5);
	if (c->runtime_max_ms > 0 && ms > c->runtime_max_ms)
		ms = c->runtime_max_ms;
	return ms;
}

int sim_gen_next(SimGen *g, SimPod *pod)
{
	const SimGenShape *sh;
	uint64_t pick;
	size_t c;
	guint i;

	if (g->cfg.pods > 0 && g->made >= g->cfg.pods)
		return 0;
	if (!next_arrival(g))
		return 0;
	/* Class, then a shape of that class, then the run time: fixed draw order. */
	pick = rng_below(&g->rng, g->mix_total);
	for (c = 0; pick >= g->cfg.mix_weight[c]; c++)
		pick -= g->cfg.mix_weight[c];
	pick = rng_below(&g->rng, g->class_weight[c]);
	for (i = 0;; i++) {
		sh = g_array_index(g->class_shapes[c], const SimGenShape *, i);
		if (pick < sh->weight)
			break;
		pick -= sh->weight;
	}
	memset(pod, 0, sizeof(*pod));
	g_snprintf(g->id, sizeof(g->id), "pod-%07" PRIu64, g->made);
	pod->id = g->id;
	pod->cls = g->cfg.mix_class[c];
	pod->arrival_ms = g->t_us / 1000;
	pod->duration_ms = runtime(g);
	pod->cpu_milli = sh->cpu_milli;
	pod->memory_bytes = sh->memory_bytes;
	pod->gpu_milli = sh->gpu_milli;
	g->made++;
	return 1;
}
