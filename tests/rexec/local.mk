# SPDX-License-Identifier: Apache-2.0
#
# tests/rexec/: rexec and rexecd.  The codecs (rexec/proto.c) and rexecd's
# pure helpers (whitelist file, forward_allow, environment policies) have a
# Check unit test, which links rexecd/rexecd.c itself; the integration
# scripts start their own rexecd (tests/rexec/rexec-env.sh) and run the
# real client against it, with python3 helpers for a terminal (ptyrun.py),
# a hostile raw client (rexec-raw.py), unix-socket peers (unix-peer.py) and
# a parent with a non-blocking pipe (nonblock-pipe.py) and a rexecd that
# sends past the stream credit (greedy-rexecd.py); the last two read and
# write frames with rexec_frames.py.
# They need root (other users, namespaces) and exit 77 without it.

# In the one list of unit tests (tests/local.mk), which builds and runs them.
UNIT_TESTS += tests/unit/test-rexec-proto
tests_unit_test_rexec_proto_SOURCES = tests/unit/test-rexec-proto.c rexecd/rexecd.c rexecd/rexecd.h
tests_unit_test_rexec_proto_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/rexec -I$(top_srcdir)/rexecd
tests_unit_test_rexec_proto_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_rexec_proto_LDADD = rexec/librexecproto.a $(UNIT_LDADD)

REXEC_TESTS = \
	tests/rexec/test-rexec-basic.sh \
	tests/rexec/test-rexec-signals.sh \
	tests/rexec/test-rexec-pidreuse.sh \
	tests/rexec/test-rexec-security.sh \
	tests/rexec/test-rexec-shim.sh \
	tests/rexec/test-rexec-forward.sh \
	tests/rexec/test-rexec-netns.sh \
	tests/rexec/test-rexec-ssh.sh \
	tests/rexec/test-rexec-vsock.sh
TESTS += $(REXEC_TESTS)
EXTRA_DIST += tests/rexec/rexec-env.sh tests/rexec/ptyrun.py tests/rexec/rexec-raw.py \
	tests/rexec/unix-peer.py tests/rexec/nonblock-pipe.py tests/rexec/greedy-rexecd.py \
	tests/rexec/old-rexecd.py tests/rexec/rexec_frames.py $(REXEC_TESTS)
