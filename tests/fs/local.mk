# SPDX-License-Identifier: Apache-2.0
#
# tests/fs/: file-system behaviour tests that know nothing of fuse-qtfs and
# only take directory paths.  fsdiff runs POSIX scenarios on two directories
# and compares the transcripts; fsx is a seeded random-operation stress test
# against an in-memory model.  The mount integration test runs them against
# a fuse-qtfs mount and the directory it exports; here test-native.sh only
# checks that they pass on the native file system, so a failure there is a
# bug in the tests themselves.

check_PROGRAMS += tests/fs/fsdiff tests/fs/fsx
tests_fs_fsdiff_SOURCES = tests/fs/fsdiff.c
tests_fs_fsdiff_LDADD = $(QT_LIBS)
tests_fs_fsx_SOURCES = tests/fs/fsx.c
tests_fs_fsx_LDADD = $(QT_LIBS)

TESTS += tests/fs/test-native.sh
EXTRA_DIST += tests/fs/test-native.sh

# qtfs-raw: a hostile fuse-qtfs client that sends crafted requests (path
# escapes, garbage payloads, bogus handles) and reports how each was refused.
check_PROGRAMS += tests/fs/qtfs-raw
tests_fs_qtfs_raw_SOURCES = tests/fs/qtfs-raw.c
tests_fs_qtfs_raw_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/fuse-qtfs
tests_fs_qtfs_raw_LDADD = fuse-qtfs/libqtfsproto.a $(QT_LIBS)

# qtfs-mitm: a hostile server made of a real one: passes fuse-qtfs's
# requests on and mangles some of the replies (test-qtfs-hostile.sh), or
# some of the requests (test-qtfs-hostile-client.sh), or breaks the
# connection at changes of names (test-qtfs-lost.sh).
check_PROGRAMS += tests/fs/qtfs-mitm
tests_fs_qtfs_mitm_SOURCES = tests/fs/qtfs-mitm.c
tests_fs_qtfs_mitm_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/fuse-qtfs
tests_fs_qtfs_mitm_LDADD = $(QT_LIBS)

# fuse-qtfs integration tests: real mounts, real sockets, network
# namespaces; they source qtfs-env.sh and skip (77) only without root or
# /dev/fuse (test-qtfs-vsock.sh also without vsock loopback: make
# check-vm runs it).  test-qtfs-security.sh runs qtfs-raw's attacks over unix and
# tcp, then keys, whitelist, read-only exports, MOUNT checks, the unix uid
# check and the handle and connection limits through real mounts.
QTFS_TESTS = tests/fs/test-qtfs-posix.sh tests/fs/test-qtfs-pseudo.sh \
	tests/fs/test-qtfs-recover.sh tests/fs/test-qtfs-netns.sh \
	tests/fs/test-qtfs-security.sh tests/fs/test-qtfs-ssh.sh tests/fs/test-qtfs-locks.sh \
	tests/fs/test-qtfs-cache.sh tests/fs/test-qtfs-pagecache.sh tests/fs/test-qtfs-dircache.sh tests/fs/test-qtfs-listed.sh \
	tests/fs/test-qtfs-hostile.sh tests/fs/test-qtfs-hostile-client.sh tests/fs/test-qtfs-churn.sh \
	tests/fs/test-qtfs-acl.sh tests/fs/test-qtfs-containerd.sh tests/fs/test-qtfs-lost.sh \
	tests/fs/test-qtfs-writebehind.sh tests/fs/test-qtfs-vsock.sh \
	tests/fs/test-qtfs-tools.sh tests/fs/test-qtfs-fifo.sh tests/fs/test-qtfs-soak.sh \
	tests/fs/test-qtfs-unwatch.sh
TESTS += $(QTFS_TESTS)
EXTRA_DIST += tests/fs/qtfs-env.sh tests/fs/locks.py tests/fs/interrupt.py tests/fs/uring_workers.py \
	tests/fs/hostile-env.sh tests/fs/hostile-workload.py tests/fs/churn.py tests/fs/oci-image.py \
	tests/fs/fifo_edges.py tests/fs/proc_pass.py tests/fs/soak.py \
	$(QTFS_TESTS)
