# SPDX-License-Identifier: Apache-2.0
#
# sim/: the discrete-event capacity simulator; it will link the autoscaler
# core from autoscale/core/.  libsimtrace holds what the engine builds on
# (the workload model and its trace readers, the event queue, the synthetic
# generator) so the unit tests and the engine link the same code.

noinst_LIBRARIES += sim/libsimtrace.a
sim_libsimtrace_a_SOURCES = \
	sim/trace.c sim/trace.h \
	sim/eventq.c sim/eventq.h \
	sim/gen.c sim/gen.h
# gen.c promises the same bytes on every machine: no fused multiply-add.
sim_libsimtrace_a_CFLAGS = $(AM_CFLAGS) -ffp-contract=off
sim_libsimtrace_a_CPPFLAGS = $(AM_CPPFLAGS) $(GIO_CFLAGS) $(JSONC_CFLAGS)
# lib/libqt.a for json-keys.c (the trace reader's repeated keys), which needs GLib alone.
SIM_LIBS = sim/libsimtrace.a lib/libqt.a $(GIO_LIBS) $(JSONC_LIBS) -lm

# The engine: cluster configuration, simulation, outputs.  It links the
# autoscaler core (autoscale/core/libascore.a), the code the live
# autoscaler runs.
noinst_LIBRARIES += sim/libsimengine.a
sim_libsimengine_a_SOURCES = \
	sim/cluster.c sim/cluster.h \
	sim/engine.c sim/engine.h
sim_libsimengine_a_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sim -I$(top_srcdir)/autoscale/core \
	$(GIO_CFLAGS)
SIM_ENGINE_LIBS = sim/libsimengine.a $(ASCORE_LIBS) $(SIM_LIBS)

bin_PROGRAMS += sim/sim
sim_sim_SOURCES = sim/main.c sim/report.c sim/report.h
sim_sim_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sim -I$(top_srcdir)/autoscale/core $(GIO_CFLAGS) \
	$(JSONC_CFLAGS)
sim_sim_LDADD = $(SIM_ENGINE_LIBS) $(QT_LIBS)

# Unit tests and their fixtures (tests/sim/).
SIM_FIXTURES = \
	tests/sim/native.jsonl tests/sim/native.jsonl.gz tests/sim/native.csv \
	tests/sim/openb_pod_list_tiny.csv tests/sim/openb_pod_list_tiny.csv.gz \
	tests/sim/openb_node_list_tiny.csv \
	tests/sim/batch_task.csv tests/sim/batch_task.csv.gz tests/sim/container_meta.csv \
	tests/sim/task_events.csv tests/sim/task_events.csv.gz
EXTRA_DIST += $(SIM_FIXTURES)

SIM_TEST_CPP = $(AM_CPPFLAGS) -I$(top_srcdir)/sim -DSIM_FIXTURE_DIR='"$(abs_top_srcdir)/tests/sim"'
SIM_TEST_LIBS = $(SIM_LIBS) $(QT_LIBS) $(CHECK_LIBS)
SIM_TEST_CC = $(AM_CFLAGS) $(CHECK_CFLAGS)

check_PROGRAMS += tests/unit/test-sim-trace
TESTS += tests/unit/test-sim-trace
tests_unit_test_sim_trace_SOURCES = tests/unit/test-sim-trace.c
tests_unit_test_sim_trace_CPPFLAGS = $(SIM_TEST_CPP)
tests_unit_test_sim_trace_CFLAGS = $(SIM_TEST_CC)
tests_unit_test_sim_trace_LDADD = $(SIM_TEST_LIBS)

check_PROGRAMS += tests/unit/test-sim-eventq
TESTS += tests/unit/test-sim-eventq
tests_unit_test_sim_eventq_SOURCES = tests/unit/test-sim-eventq.c
tests_unit_test_sim_eventq_CPPFLAGS = $(SIM_TEST_CPP)
tests_unit_test_sim_eventq_CFLAGS = $(SIM_TEST_CC)
tests_unit_test_sim_eventq_LDADD = $(SIM_TEST_LIBS)

check_PROGRAMS += tests/unit/test-sim-gen
TESTS += tests/unit/test-sim-gen
tests_unit_test_sim_gen_SOURCES = tests/unit/test-sim-gen.c
tests_unit_test_sim_gen_CPPFLAGS = $(SIM_TEST_CPP)
tests_unit_test_sim_gen_CFLAGS = $(SIM_TEST_CC)
tests_unit_test_sim_gen_LDADD = $(SIM_TEST_LIBS)

# The command line: convert and gen end to end.
TESTS += tests/sim/test-convert.sh tests/sim/test-run.sh tests/sim/test-output.sh
EXTRA_DIST += tests/sim/test-convert.sh tests/sim/test-run.sh tests/sim/test-output.sh
dist_man_MANS += man/sim.1
dist_doc_DATA += docs/sim-traces.md docs/sim-cluster.md docs/sim-output.md
EXTRA_DIST += sim/examples/README.md sim/examples/mixed-workload.jsonl \
	sim/examples/openb_pod_list_sample.csv sim/examples/openb_node_list_sample.csv \
	sim/examples/mixed-pooled.ini sim/examples/mixed-dedicated.ini sim/examples/openb.ini

# The trace layer benchmark: never part of make check.  bench-sim-load is
# compiled here rather than listed in EXTRA_PROGRAMS, which tests/local.mk
# owns.
EXTRA_DIST += tests/bench/bench-sim-trace.sh tests/bench/bench-sim-load.c \
	tests/bench/bench-sim-eventq.c
BENCH_SIM_PODS = 1000000
tests/bench/bench-sim-load: $(top_srcdir)/tests/bench/bench-sim-load.c sim/libsimtrace.a
	$(AM_V_CCLD)$(CC) $(DEFS) $(DEFAULT_INCLUDES) $(AM_CPPFLAGS) -I$(top_srcdir)/sim $(GIO_CFLAGS) \
		$(AM_CFLAGS) $(CFLAGS) $(AM_LDFLAGS) $(LDFLAGS) \
		$(top_srcdir)/tests/bench/bench-sim-load.c $(SIM_LIBS) -o $@
tests/bench/bench-sim-eventq: $(top_srcdir)/tests/bench/bench-sim-eventq.c sim/libsimtrace.a
	$(AM_V_CCLD)$(CC) $(DEFS) $(DEFAULT_INCLUDES) $(AM_CPPFLAGS) -I$(top_srcdir)/sim \
		$(AM_CFLAGS) $(CFLAGS) $(AM_LDFLAGS) $(LDFLAGS) \
		$(top_srcdir)/tests/bench/bench-sim-eventq.c $(SIM_LIBS) -o $@
CLEANFILES += tests/bench/bench-sim-load tests/bench/bench-sim-eventq
bench-sim: sim/sim tests/bench/bench-sim-load tests/bench/bench-sim-eventq
	./tests/bench/bench-sim-eventq $(BENCH_SIM_PODS)
	top_builddir=$(abs_top_builddir) sh $(top_srcdir)/tests/bench/bench-sim-trace.sh $(BENCH_SIM_PODS)
.PHONY: bench-sim

# The report renderer: fixture result directories, rendered and checked by
# a strict HTML parser, the JSON Schema, and malformed variants of each.
SIM_REPORT_FIXTURES = \
	tests/sim/report/single/summary.json tests/sim/report/single/timeseries.csv \
	tests/sim/report/compare/summary.json \
	tests/sim/report/compare/pooled/summary.json tests/sim/report/compare/pooled/timeseries.csv \
	tests/sim/report/compare/dedicated/summary.json \
	tests/sim/report/compare/dedicated/timeseries.csv \
	tests/sim/report/long/summary.json
TESTS += tests/sim/test-report.sh
EXTRA_DIST += tests/sim/test-report.sh tests/sim/check-report.py $(SIM_REPORT_FIXTURES)
dist_doc_DATA += docs/sim-summary.schema.json

# The engine benchmark (1M synthetic pods on 5,000 machines, an openb-sized
# trace); never part of make check.
EXTRA_DIST += tests/bench/bench-sim-run.sh tests/bench/sim-bench.ini
bench-sim-run: sim/sim
	top_srcdir=$(abs_top_srcdir) top_builddir=$(abs_top_builddir) \
		sh $(top_srcdir)/tests/bench/bench-sim-run.sh $(BENCH_SIM_PODS)
.PHONY: bench-sim-run

# The engine on hand-computed scenarios.
check_PROGRAMS += tests/unit/test-sim-engine
TESTS += tests/unit/test-sim-engine
tests_unit_test_sim_engine_SOURCES = tests/unit/test-sim-engine.c
tests_unit_test_sim_engine_CPPFLAGS = $(SIM_TEST_CPP) -I$(top_srcdir)/autoscale/core $(GIO_CFLAGS)
tests_unit_test_sim_engine_CFLAGS = $(SIM_TEST_CC)
tests_unit_test_sim_engine_LDADD = $(SIM_ENGINE_LIBS) $(QT_LIBS) $(CHECK_LIBS)
