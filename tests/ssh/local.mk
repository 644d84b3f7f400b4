# SPDX-License-Identifier: Apache-2.0
#
# tests/ssh/: the SSH transport (lib/ssh.h).  The target parser and
# known_hosts matching have Check unit tests (tests/unit/test-ssh).

# In the one list of unit tests (tests/local.mk), which builds and runs them.
UNIT_TESTS += tests/unit/test-ssh
tests_unit_test_ssh_SOURCES = tests/unit/test-ssh.c
tests_unit_test_ssh_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_ssh_LDADD = $(QT_SSH_LIBS) $(UNIT_LDADD)
