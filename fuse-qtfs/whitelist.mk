# SPDX-License-Identifier: Apache-2.0
#
# The qtfs-server path whitelist: a pure module (file in, decisions out) in
# a convenience library of its own, so qtfs-server links it and its unit
# test runs it without any of the server.  Kept out of local.mk so the
# module and the server can change independently.

noinst_LIBRARIES += fuse-qtfs/libqtfswl.a
fuse_qtfs_libqtfswl_a_SOURCES = fuse-qtfs/whitelist.c fuse-qtfs/whitelist.h
fuse_qtfs_libqtfswl_a_CPPFLAGS = $(AM_CPPFLAGS)

check_PROGRAMS += tests/unit/test-whitelist
TESTS += tests/unit/test-whitelist
tests_unit_test_whitelist_SOURCES = tests/unit/test-whitelist.c
tests_unit_test_whitelist_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/fuse-qtfs
tests_unit_test_whitelist_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_whitelist_LDADD = fuse-qtfs/libqtfswl.a $(QT_LIBS) $(CHECK_LIBS)

dist_doc_DATA += docs/qtfs-whitelist.md
