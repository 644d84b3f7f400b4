# SPDX-License-Identifier: Apache-2.0
#
# fuse-qtfs/: the shared file system.  qtfs-server runs on the host and
# exports directories; fuse-qtfs runs on the DPU and mounts them with FUSE.

sbin_PROGRAMS += fuse-qtfs/qtfs-server
fuse_qtfs_qtfs_server_SOURCES = fuse-qtfs/qtfs-server.c
fuse_qtfs_qtfs_server_LDADD = $(QT_LIBS)

bin_PROGRAMS += fuse-qtfs/fuse-qtfs
fuse_qtfs_fuse_qtfs_SOURCES = fuse-qtfs/fuse-qtfs.c
fuse_qtfs_fuse_qtfs_LDADD = $(QT_LIBS)
