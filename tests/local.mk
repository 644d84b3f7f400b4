# tests/: Check unit tests (tests/unit) and integration scripts; the fuzz
# targets are in tests/fuzz/local.mk.  Scripts exit 77 to skip, only where
# the machine truly cannot run them.

UNIT_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(URING_CFLAGS)
UNIT_LDADD = $(QT_LIBS) $(CHECK_LIBS)

UNIT_TESTS = tests/unit/test-wire tests/unit/test-conf tests/unit/test-auth \
	tests/unit/test-endpoint tests/unit/test-loop tests/unit/test-log tests/unit/test-cli \
	tests/unit/test-mountinfo tests/unit/test-json-str
check_PROGRAMS += $(UNIT_TESTS)
tests_unit_test_wire_SOURCES = tests/unit/test-wire.c
tests_unit_test_wire_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_wire_LDADD = $(UNIT_LDADD)
tests_unit_test_conf_SOURCES = tests/unit/test-conf.c
tests_unit_test_conf_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_conf_LDADD = $(UNIT_LDADD)

tests_unit_test_endpoint_SOURCES = tests/unit/test-endpoint.c
tests_unit_test_endpoint_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_endpoint_LDADD = $(UNIT_LDADD)
tests_unit_test_log_SOURCES = tests/unit/test-log.c
tests_unit_test_log_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_log_LDADD = $(UNIT_LDADD)
tests_unit_test_auth_SOURCES = tests/unit/test-auth.c
tests_unit_test_auth_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_auth_LDADD = $(UNIT_LDADD)
tests_unit_test_loop_SOURCES = tests/unit/test-loop.c
tests_unit_test_loop_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_loop_LDADD = $(UNIT_LDADD)
tests_unit_test_cli_SOURCES = tests/unit/test-cli.c
tests_unit_test_cli_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_cli_LDADD = $(UNIT_LDADD)
tests_unit_test_mountinfo_SOURCES = tests/unit/test-mountinfo.c
tests_unit_test_mountinfo_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_mountinfo_LDADD = $(UNIT_LDADD)
tests_unit_test_json_str_SOURCES = tests/unit/test-json-str.c
tests_unit_test_json_str_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_json_str_LDADD = $(UNIT_LDADD)

# chroot-setup's profile parser and step plan.
UNIT_TESTS += tests/unit/test-cs-profile
tests_unit_test_cs_profile_SOURCES = tests/unit/test-cs-profile.c
tests_unit_test_cs_profile_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/chroot-setup \
	-DCS_PROFILE_DIR='"$(abs_top_srcdir)/chroot-setup/profiles"'
tests_unit_test_cs_profile_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_cs_profile_LDADD = chroot-setup/libcsprofile.a $(UNIT_LDADD)

TESTS += $(UNIT_TESTS) tests/cli/test-help.sh tests/cli/test-units.sh

EXTRA_DIST += tests/clean-sshd.sh tests/cli-env.sh tests/sshd-env.sh tests/check-env.sh \
	tests/deadline.sh tests/detach-fuse.sh
EXTRA_DIST += tests/cli/test-help.sh tests/cli/test-units.sh


# Benchmarks: built and run by `make bench`, never by `make check`.
EXTRA_PROGRAMS = tests/bench/bench-transport tests/bench/fuse-null
tests_bench_bench_transport_SOURCES = tests/bench/bench-transport.c
tests_bench_bench_transport_CFLAGS = $(AM_CFLAGS) $(URING_CFLAGS)
tests_bench_bench_transport_LDADD = $(QT_LIBS)
# A FUSE file system that does no work: the ceiling bench-qtfs measures beside fuse-qtfs.
tests_bench_fuse_null_SOURCES = tests/bench/fuse-null.c
tests_bench_fuse_null_CFLAGS = $(AM_CFLAGS) $(URING_CFLAGS)
tests_bench_fuse_null_LDADD = $(URING_LIBS) $(GLIB_LIBS)
CLEANFILES += $(EXTRA_PROGRAMS)

BENCH_SECONDS = 2
bench: tests/bench/bench-transport
	./tests/bench/bench-transport $(BENCH_SECONDS)

# fuse-qtfs against native, sshfs and raw TCP (root; starts its own sshd).
EXTRA_DIST += tests/bench/bench-qtfs.sh
BENCH_QTFS_MIB = 1024
bench-qtfs: fuse-qtfs/qtfs-server fuse-qtfs/fuse-qtfs tests/bench/fuse-null
	top_builddir=$(abs_top_builddir) sh $(top_srcdir)/tests/bench/bench-qtfs.sh $(BENCH_QTFS_MIB)
.PHONY: bench-qtfs

# rexec against a local fork+exec, ssh and raw TCP (root; starts its own sshd).
EXTRA_DIST += tests/bench/bench-rexec.sh
BENCH_REXEC_MIB = 1024
BENCH_REXEC_RUNS = 300
bench-rexec: rexecd/rexecd rexec/rexec rexec/rexec-ssh
	top_builddir=$(abs_top_builddir) sh $(top_srcdir)/tests/bench/bench-rexec.sh \
		$(BENCH_REXEC_MIB) $(BENCH_REXEC_RUNS)
.PHONY: bench-rexec

# chroot-setup up/down/status/exec against a real qtfs-server, rexecd and
# fuse-qtfs, in a private mount namespace (root and /dev/fuse).
# test-cs-safety: the safety rules, with local mounts only (root).
TESTS += tests/cs/test-cs-env.sh tests/cs/test-cs-e2e.sh tests/cs/test-cs-safety.sh
EXTRA_DIST += tests/cs/test-cs-env.sh tests/cs/test-cs-e2e.sh tests/cs/test-cs-safety.sh
