# SPDX-License-Identifier: Apache-2.0
#
# tests/bm/: BareMetalManager.  A Check unit test of the lifecycle, JSON
# limits and the SQLite store (tests/unit/test-bm-store.c), and integration
# scripts that run bm-handler (fake driver), bm-api and bm-controller as
# real processes on loopback (tests/bm/bmenv.py starts and stops them).

UNIT_TESTS += tests/unit/test-bm-store
tests_unit_test_bm_store_SOURCES = tests/unit/test-bm-store.c
tests_unit_test_bm_store_CPPFLAGS = $(BM_CPPFLAGS) -I$(top_srcdir)/bm
tests_unit_test_bm_store_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_bm_store_LDADD = $(BM_LIBS) $(CHECK_LIBS)

# The handler API as bm-handler and bm-controller read it (bm/handler-proto.c).
UNIT_TESTS += tests/unit/test-bm-handler-proto
tests_unit_test_bm_handler_proto_SOURCES = tests/unit/test-bm-handler-proto.c
tests_unit_test_bm_handler_proto_CPPFLAGS = $(BM_CPPFLAGS) -I$(top_srcdir)/bm
tests_unit_test_bm_handler_proto_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_bm_handler_proto_LDADD = $(BM_LIBS) $(CHECK_LIBS)

BM_TESTS = \
	tests/bm/test-api.py \
	tests/bm/test-failures.py \
	tests/bm/test-concurrency.py \
	tests/bm/test-crash.py \
	tests/bm/test-races.py \
	tests/bm/test-exec.py \
	tests/bm/test-bmctl.py \
	tests/bm/test-lifecycle.py \
	tests/bm/test-retention.py
TESTS += $(BM_TESTS)
EXTRA_DIST += tests/bm/bmenv.py $(BM_TESTS)

# Benchmark (never in make check): bm-api throughput and latency, and the
# time to provision 500 machines with the fake driver (docs/benchmarks.md).
EXTRA_DIST += tests/bench/bench-bm.py
BENCH_BM_SECONDS = 5
BENCH_BM_CLIENTS = 8
BENCH_BM_MACHINES = 500
bench-bm: bm/bm-api bm/bm-controller bm/bm-handler
	top_builddir=$(abs_top_builddir) python3 $(top_srcdir)/tests/bench/bench-bm.py \
		$(BENCH_BM_SECONDS) $(BENCH_BM_CLIENTS) $(BENCH_BM_MACHINES)
.PHONY: bench-bm
