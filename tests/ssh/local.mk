# SPDX-License-Identifier: Apache-2.0
#
# tests/ssh/: the SSH transport (lib/ssh.h) against a real sshd started by
# the test on a free loopback port: ssh-cat is a small client of the API and
# test-ssh.sh drives it.  The target parser and known_hosts matching have
# Check unit tests (tests/unit/test-ssh).

check_PROGRAMS += tests/ssh/ssh-cat
tests_ssh_ssh_cat_SOURCES = tests/ssh/ssh-cat.c
tests_ssh_ssh_cat_LDADD = $(QT_SSH_LIBS) $(QT_LIBS)

# In the one list of unit tests (tests/local.mk), which builds and runs them.
UNIT_TESTS += tests/unit/test-ssh
tests_unit_test_ssh_SOURCES = tests/unit/test-ssh.c
tests_unit_test_ssh_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_ssh_LDADD = $(QT_SSH_LIBS) $(UNIT_LDADD)

TESTS += tests/ssh/test-ssh.sh
EXTRA_DIST += tests/ssh/test-ssh.sh
