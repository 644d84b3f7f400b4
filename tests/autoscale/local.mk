# SPDX-License-Identifier: Apache-2.0
#
# tests/autoscale/ and the autoscaler's unit tests (issue 6): Check tests of
# the core (autoscale/core/) and its JSON reader, scenario fixtures for
# `autoscale once`, its command line, and the benchmark.

AS_UNIT_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/autoscale/core -I$(top_srcdir)/autoscale \
	$(JSONC_CFLAGS)
AS_UNIT_LDADD = $(ASJSON_LIBS) $(ASCORE_LIBS) $(UNIT_LDADD)

# A list of our own, so that this file needs nothing from tests/local.mk at
# automake time and can be included anywhere.
AS_UNIT_TESTS = tests/unit/test-as-units tests/unit/test-as-sched tests/unit/test-as-loop \
	tests/unit/test-as-property tests/unit/test-as-json tests/unit/test-as-provider
check_PROGRAMS += $(AS_UNIT_TESTS)
TESTS += $(AS_UNIT_TESTS)

tests_unit_test_as_units_SOURCES = tests/unit/test-as-units.c
tests_unit_test_as_units_CPPFLAGS = $(AS_UNIT_CPPFLAGS)
tests_unit_test_as_units_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_as_units_LDADD = $(AS_UNIT_LDADD)

tests_unit_test_as_sched_SOURCES = tests/unit/test-as-sched.c tests/unit/as-build.h
tests_unit_test_as_sched_CPPFLAGS = $(AS_UNIT_CPPFLAGS)
tests_unit_test_as_sched_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_as_sched_LDADD = $(AS_UNIT_LDADD)

tests_unit_test_as_loop_SOURCES = tests/unit/test-as-loop.c tests/unit/as-build.h
tests_unit_test_as_loop_CPPFLAGS = $(AS_UNIT_CPPFLAGS)
tests_unit_test_as_loop_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_as_loop_LDADD = $(AS_UNIT_LDADD)

tests_unit_test_as_property_SOURCES = tests/unit/test-as-property.c tests/unit/as-build.h
tests_unit_test_as_property_CPPFLAGS = $(AS_UNIT_CPPFLAGS)
tests_unit_test_as_property_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_as_property_LDADD = $(AS_UNIT_LDADD)

tests_unit_test_as_json_SOURCES = tests/unit/test-as-json.c
tests_unit_test_as_json_CPPFLAGS = $(AS_UNIT_CPPFLAGS)
tests_unit_test_as_json_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_as_json_LDADD = $(AS_UNIT_LDADD)

tests_unit_test_as_provider_SOURCES = tests/unit/test-as-provider.c tests/unit/as-build.h
tests_unit_test_as_provider_CPPFLAGS = $(AS_UNIT_CPPFLAGS)
tests_unit_test_as_provider_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_as_provider_LDADD = $(AS_UNIT_LDADD)

# The daemon's Kubernetes client and yusur provider (autoscale/libasd.a).
AS_DAEMON_UNIT_TESTS = tests/unit/test-as-kube tests/unit/test-as-yusur tests/unit/test-as-daemon
check_PROGRAMS += $(AS_DAEMON_UNIT_TESTS)
TESTS += $(AS_DAEMON_UNIT_TESTS)

tests_unit_test_as_kube_SOURCES = tests/unit/test-as-kube.c
tests_unit_test_as_kube_CPPFLAGS = $(ASD_CPPFLAGS)
tests_unit_test_as_kube_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_as_kube_LDADD = $(ASD_LIBS) $(CHECK_LIBS)

tests_unit_test_as_yusur_SOURCES = tests/unit/test-as-yusur.c
tests_unit_test_as_yusur_CPPFLAGS = $(ASD_CPPFLAGS)
tests_unit_test_as_yusur_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_as_yusur_LDADD = $(ASD_LIBS) $(CHECK_LIBS)

tests_unit_test_as_daemon_SOURCES = tests/unit/test-as-daemon.c
tests_unit_test_as_daemon_CPPFLAGS = $(ASD_CPPFLAGS)
tests_unit_test_as_daemon_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_as_daemon_LDADD = $(ASD_LIBS) $(CHECK_LIBS)

# `autoscale once` on scenario fixtures (snapshot -> expected decision) and
# its command line.
TESTS += tests/autoscale/test-scenarios.sh tests/autoscale/test-once-cli.sh
EXTRA_DIST += tests/autoscale/test-scenarios.sh tests/autoscale/test-once-cli.sh \
	tests/autoscale/check-decision.py tests/autoscale/scenarios

# `autoscale run` end to end: fake API server + bm-api + bm-controller +
# fake bm-handlers whose power-on registers a Node (register-node.py).
TESTS += tests/autoscale/test-daemon-e2e.py
EXTRA_DIST += tests/autoscale/test-daemon-e2e.py tests/autoscale/register-node.py

# `autoscale run`'s scale-down when evictions, pods, bm-api or the Node
# object misbehave: fake API server + a stand-in bm-api.
TESTS += tests/autoscale/test-daemon-drain.py
EXTRA_DIST += tests/autoscale/test-daemon-drain.py tests/autoscale/daemonenv.py

# `autoscale run` deleting the Nodes of instances gone from bm-api, as the
# cloud node lifecycle controller: fake API server + a stand-in bm-api.
TESTS += tests/autoscale/test-daemon-gone.py
EXTRA_DIST += tests/autoscale/test-daemon-gone.py

# `autoscale run`'s initial list in pages of 2: continue tokens that expire.
TESTS += tests/autoscale/test-daemon-list.py
EXTRA_DIST += tests/autoscale/test-daemon-list.py

# The autoscaler core on 1,000 and 5,000-node synthetic clusters; the script
# compiles its own -O2 copy of the core, so any configuration works, then
# runs the build tree's `autoscale once` on a 5,000-node snapshot.
EXTRA_DIST += tests/bench/bench-autoscale.sh tests/bench/bench-autoscale.c
bench-autoscale: autoscale/autoscale
	top_srcdir=$(abs_top_srcdir) top_builddir=$(abs_top_builddir) CC='$(CC)' \
		sh $(top_srcdir)/tests/bench/bench-autoscale.sh
.PHONY: bench-autoscale

# `autoscale run` at 5,000 nodes and 150,000 pods against an in-script fake
# API server and bm-api: initial list, loop times, a rollout's pod events,
# memory and the status ConfigMap (docs/benchmarks.md).  The build tree's
# program: configure without --enable-sanitizers for figures.
# BENCH_LIVE_ARGS: e.g. "--nodes 1000 --events 20000".
EXTRA_DIST += tests/bench/bench-autoscale-live.py
bench-autoscale-live: autoscale/autoscale
	top_builddir=$(abs_top_builddir) python3 $(top_srcdir)/tests/bench/bench-autoscale-live.py \
		$(BENCH_LIVE_ARGS)
.PHONY: bench-autoscale-live
