// SPDX-License-Identifier: Apache-2.0
/*
 * The synthetic workload generator (sim/gen.c): the PRNG matches the
 * published xoshiro256** / splitmix64 outputs, the same seed gives the
 * same bytes (and pinned bytes, so a machine whose arithmetic differs
 * fails here), and over a large sample the arrival count, the daily cycle,
 * the class mix and the mean run time are within tolerance of what was
 * configured, computed by hand from the formulas in gen.h.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gen.h"

#define PINNED_3                                                                                 \
	"{\"id\":\"pod-0000000\",\"class\":\"vm\",\"arrival_ms\":5072,\"duration_ms\":1316450,"           \
	"\"cpu_milli\":4000,\"memory_bytes\":17179869184}\n"                                          \
	"{\"id\":\"pod-0000001\",\"class\":\"container\",\"arrival_ms\":30086,\"duration_ms\":1219521,"    \
	"\"cpu_milli\":250,\"memory_bytes\":536870912}\n"                                             \
	"{\"id\":\"pod-0000002\",\"class\":\"container\",\"arrival_ms\":33707,\"duration_ms\":4630889,"    \
	"\"cpu_milli\":1000,\"memory_bytes\":2147483648}\n"
#define PINNED_100K_SHA256 "e85762ad0ca04203ad702964e16d030f67dec5ae9241d50715c74c9f7894e3b2"

#define HOUR_MS INT64_C(3600000)
#define DAY_MS (24 * HOUR_MS)

/* All of a generator's output as native JSON lines. */
static char *generate(const SimGenConfig *cfg, size_t *n_pods)
{
	g_autoptr(SimGen) g = NULL;
	g_autofree char *err = NULL;
	char *buf = NULL;
	size_t len = 0, n = 0;
	FILE *f = open_memstream(&buf, &len);
	SimPod p;

	ck_assert_int_eq(sim_gen_new(cfg, &g, &err), 0);
	while (sim_gen_next(g, &p) > 0) {
		ck_assert_int_eq(sim_trace_write_pod(f, SIM_OUT_JSONL, &p), 0);
		n++;
	}
	fclose(f);
	if (n_pods)
		*n_pods = n;
	return buf;
}

START_TEST(test_rng_reference)
{
	SimRng r;
	uint64_t x;

	/*
	 * splitmix64 from 0 starts e220a8397b1dcdaf (its reference output), so
	 * the seeding is the standard one; xoshiro256** from state {1,2,3,4}
	 * starts 11520, 0, 1509978240, 1215971899390074240.
	 */
	sim_rng_seed(&r, 0);
	ck_assert_uint_eq(r.s[0], UINT64_C(0xe220a8397b1dcdaf));
	r.s[0] = 1;
	r.s[1] = 2;
	r.s[2] = 3;
	r.s[3] = 4;
	ck_assert_uint_eq(sim_rng_next(&r), 11520);
	ck_assert_uint_eq(sim_rng_next(&r), 0);
	ck_assert_uint_eq(sim_rng_next(&r), 1509978240);
	x = sim_rng_next(&r);
	ck_assert_uint_eq(x, UINT64_C(1215971899390074240));
}
END_TEST

START_TEST(test_same_seed_same_bytes)
{
	SimGenConfig cfg;
	g_autofree char *a = NULL, *b = NULL, *c = NULL;
	size_t n;

	sim_gen_config_init(&cfg);
	cfg.pods = 5000;
	a = generate(&cfg, &n);
	ck_assert_uint_eq(n, 5000);
	b = generate(&cfg, NULL);
	ck_assert_str_eq(a, b);
	cfg.seed = 2;
	c = generate(&cfg, NULL);
	ck_assert_str_ne(a, c);
}
END_TEST

START_TEST(test_pinned_bytes)
{
	/*
	 * The first records of the default configuration.  They were produced
	 * once and pinned: if another machine or compiler gives other bytes,
	 * the "same seed, same trace everywhere" promise is broken there.
	 */
	SimGenConfig cfg;
	g_autofree char *out = NULL;
	g_autofree char *sum = NULL;

	sim_gen_config_init(&cfg);
	cfg.pods = 3;
	out = generate(&cfg, NULL);
	ck_assert_str_eq(out, PINNED_3);
	cfg.pods = 100000;
	g_free(out);
	out = generate(&cfg, NULL);
	sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, out, -1);
	ck_assert_str_eq(sum, PINNED_100K_SHA256);
}
END_TEST

START_TEST(test_statistics)
{
	/* 20 days at 2000 pods/h: 960000 expected arrivals. */
	SimGenConfig cfg;
	g_autoptr(SimGen) g = NULL;
	g_autofree char *err = NULL;
	uint64_t n = 0, near_peak = 0, near_trough = 0, cls[3] = {0};
	double sum_rt = 0;
	SimPod p;
	int64_t last = 0;
	double expect, ratio, want_ratio;

	sim_gen_config_init(&cfg);
	cfg.pods = 0;
	cfg.span_ms = 20 * DAY_MS;
	cfg.rate_per_hour = 2000;
	cfg.amplitude = 0.5;
	cfg.peak_ms = 15 * HOUR_MS;
	cfg.runtime_dist = SIM_GEN_EXP;
	cfg.runtime_mean_ms = 600000;
	cfg.runtime_max_ms = 0;
	ck_assert_int_eq(sim_gen_new(&cfg, &g, &err), 0);
	while (sim_gen_next(g, &p) > 0) {
		int64_t tod = p.arrival_ms % DAY_MS;

		if (p.arrival_ms < last)
			ck_abort_msg("arrivals out of order at %" PRId64, p.arrival_ms);
		last = p.arrival_ms;
		n++;
		if (tod >= 12 * HOUR_MS && tod < 18 * HOUR_MS)
			near_peak++;
		/* The trough is 03:00: 00:00-06:00. */
		if (tod < 6 * HOUR_MS)
			near_trough++;
		sum_rt += (double)p.duration_ms;
		cls[strcmp(p.cls, "container") == 0 ? 0 : strcmp(p.cls, "vm") == 0 ? 1 : 2]++;
	}
	expect = 2000.0 * 24 * 20;
	/* sd of a Poisson count is sqrt(960000) ~ 980: 1% is 10 sd. */
	ck_assert_msg(fabs((double)n - expect) < 0.01 * expect, "n %" PRIu64 " vs %g", n, expect);
	ck_assert_int_lt(last, 20 * DAY_MS);
	/*
	 * A 6 h window centred on the peak holds (pi/2 + a sqrt2) / (pi/2 - a
	 * sqrt2) times the arrivals of the window centred on the trough.
	 */
	ratio = (double)near_peak / (double)near_trough;
	want_ratio = (M_PI / 2 + 0.5 * M_SQRT2) / (M_PI / 2 - 0.5 * M_SQRT2);
	ck_assert_msg(fabs(ratio - want_ratio) < 0.03 * want_ratio, "ratio %g vs %g", ratio,
		      want_ratio);
	ck_assert_msg(fabs(sum_rt / (double)n - 600000) < 0.01 * 600000, "mean run time %g",
		      sum_rt / (double)n);
	ck_assert_msg(fabs((double)cls[0] / (double)n - 0.7) < 0.005, "containers %" PRIu64, cls[0]);
	ck_assert_msg(fabs((double)cls[1] / (double)n - 0.2) < 0.005, "vms %" PRIu64, cls[1]);
	ck_assert_msg(fabs((double)cls[2] / (double)n - 0.1) < 0.005, "bare metal %" PRIu64, cls[2]);
}
END_TEST

START_TEST(test_lognormal_and_cap)
{
	SimGenConfig cfg;
	g_autoptr(SimGen) g = NULL;
	g_autofree char *err = NULL;
	double sum = 0;
	uint64_t n = 0, capped = 0;
	int64_t max = 0;
	SimPod p;

	sim_gen_config_init(&cfg);
	cfg.pods = 400000;
	cfg.rate_per_hour = 1e6;
	cfg.runtime_mean_ms = HOUR_MS;
	cfg.runtime_sigma = 1.0;
	cfg.runtime_max_ms = 0;
	ck_assert_int_eq(sim_gen_new(&cfg, &g, &err), 0);
	while (sim_gen_next(g, &p) > 0) {
		sum += (double)p.duration_ms;
		n++;
	}
	/* Relative sd of the mean: sqrt(e^1 - 1) / sqrt(n) ~ 0.2%. */
	ck_assert_msg(fabs(sum / (double)n - HOUR_MS) < 0.02 * HOUR_MS, "mean %g", sum / (double)n);

	g_clear_pointer(&g, sim_gen_free);
	cfg.pods = 100000;
	cfg.runtime_max_ms = 2 * HOUR_MS;
	ck_assert_int_eq(sim_gen_new(&cfg, &g, &err), 0);
	while (sim_gen_next(g, &p) > 0) {
		if (p.duration_ms > max)
			max = p.duration_ms;
		capped += p.duration_ms == 2 * HOUR_MS;
	}
	ck_assert_int_eq(max, 2 * HOUR_MS);
	/*
	 * P(X > 2 mean) = P(Z > ln 2 + sigma/2) = P(Z > 1.193) = 0.1164 for
	 * sigma 1: 11640 of 100000, sd about 100.
	 */
	ck_assert_msg(capped > 11200 && capped < 12100, "capped %" PRIu64, capped);
}
END_TEST

START_TEST(test_config_errors)
{
	SimGenConfig cfg;
	g_autoptr(SimGen) g = NULL;
	g_autofree char *err = NULL;
	char mix[] = "vm=3,baremetal=1";
	char bad_mix[] = "vm=3,baremetal";
	char unknown[] = "gpu=1";
	int64_t ms;

	sim_gen_config_init(&cfg);
	ck_assert_int_eq(sim_gen_parse_mix(mix, &cfg, &err), 0);
	ck_assert_uint_eq(cfg.n_mix, 2);
	ck_assert_str_eq(cfg.mix_class[1], "baremetal");
	ck_assert_uint_eq(cfg.mix_weight[0], 3);
	ck_assert_int_eq(sim_gen_parse_mix(bad_mix, &cfg, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "\"baremetal\" is not CLASS=WEIGHT"));
	/* A failed parse leaves the configuration as it was. */
	ck_assert_uint_eq(cfg.n_mix, 2);
	ck_assert_str_eq(cfg.mix_class[0], "vm");
	ck_assert_uint_eq(cfg.mix_weight[1], 1);
	g_clear_pointer(&err, g_free);
	ck_assert_int_eq(sim_gen_parse_mix(unknown, &cfg, &err), 0);
	ck_assert_int_eq(sim_gen_new(&cfg, &g, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "no shape for class \"gpu\""));
	g_clear_pointer(&err, g_free);

	sim_gen_config_init(&cfg);
	cfg.amplitude = 1.5;
	ck_assert_int_eq(sim_gen_new(&cfg, &g, &err), -EINVAL);
	g_clear_pointer(&err, g_free);
	sim_gen_config_init(&cfg);
	cfg.pods = 0;
	ck_assert_int_eq(sim_gen_new(&cfg, &g, &err), -EINVAL);
	g_clear_pointer(&err, g_free);

	ck_assert_int_eq(sim_parse_duration_ms("30d", &ms), 0);
	ck_assert_int_eq(ms, 30 * DAY_MS);
	ck_assert_int_eq(sim_parse_duration_ms("90", &ms), 0);
	ck_assert_int_eq(ms, 90000);
	ck_assert_int_eq(sim_parse_duration_ms("250ms", &ms), 0);
	ck_assert_int_eq(ms, 250);
	ck_assert_int_eq(sim_parse_duration_ms("1w", &ms), -EINVAL);
	ck_assert_int_eq(sim_parse_duration_ms("-1h", &ms), -EINVAL);
	ck_assert_int_eq(sim_parse_duration_ms("99999999999999d", &ms), -ERANGE);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sim-gen");
	TCase *t = tcase_create("gen");
	SRunner *sr;
	int failed;

	tcase_set_timeout(t, 120);
	tcase_add_test(t, test_rng_reference);
	tcase_add_test(t, test_same_seed_same_bytes);
	tcase_add_test(t, test_pinned_bytes);
	tcase_add_test(t, test_statistics);
	tcase_add_test(t, test_lognormal_and_cap);
	tcase_add_test(t, test_config_errors);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
