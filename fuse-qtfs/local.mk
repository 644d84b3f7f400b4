# SPDX-License-Identifier: Apache-2.0
#
# fuse-qtfs/: the shared file system.  qtfs-server runs on the host and
# exports directories; fuse-qtfs runs on the DPU and mounts them with FUSE.
# proto.c (the file-operation codecs) is shared by both and by the tests.

noinst_LIBRARIES += fuse-qtfs/libqtfsproto.a
fuse_qtfs_libqtfsproto_a_SOURCES = fuse-qtfs/proto.c fuse-qtfs/proto.h

sbin_PROGRAMS += fuse-qtfs/qtfs-server
fuse_qtfs_qtfs_server_SOURCES = fuse-qtfs/qtfs-server.c fuse-qtfs/server.c fuse-qtfs/server.h \
	fuse-qtfs/dirwatch.c fuse-qtfs/dirwatch.h
fuse_qtfs_qtfs_server_LDADD = fuse-qtfs/libqtfsproto.a fuse-qtfs/libqtfswl.a $(QT_LIBS)

bin_PROGRAMS += fuse-qtfs/fuse-qtfs
fuse_qtfs_fuse_qtfs_SOURCES = fuse-qtfs/fuse-qtfs.c fuse-qtfs/fs.c fuse-qtfs/fs.h \
	fuse-qtfs/session.c fuse-qtfs/session.h fuse-qtfs/client.c fuse-qtfs/client.h
fuse_qtfs_fuse_qtfs_CPPFLAGS = $(AM_CPPFLAGS) $(FUSE_CFLAGS)
fuse_qtfs_fuse_qtfs_LDADD = fuse-qtfs/libqtfsproto.a $(QT_SSH_LIBS) $(QT_LIBS) $(FUSE_LIBS)

check_PROGRAMS += tests/unit/test-qtfs-proto
TESTS += tests/unit/test-qtfs-proto
tests_unit_test_qtfs_proto_SOURCES = tests/unit/test-qtfs-proto.c
tests_unit_test_qtfs_proto_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/fuse-qtfs
tests_unit_test_qtfs_proto_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_unit_test_qtfs_proto_LDADD = fuse-qtfs/libqtfsproto.a $(QT_LIBS) $(CHECK_LIBS)
dist_man_MANS += man/fuse-qtfs.1 man/qtfs-server.8
