/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The barrier of fuse-qtfs mounts (docs/fuse-qtfs.md, "Name caching"): a
 * mount caches names for long and learns of the host's changes a few
 * milliseconds after they are made.  A getxattr of QTFS_SYNC_XATTR on any
 * file of the mount returns once every change the host made before it is
 * visible through the mount.  rexec asks every mount for it before it
 * returns, so that what a command run on the host made or removed is seen
 * on the DPU right after.
 */
#pragma once

#define QTFS_SYNC_XATTR "user.qtfs.sync"
/*
 * The same barrier for a caller with CAP_SYS_ADMIN: the kernel checks no
 * permission on the file for a trusted.* name, which for user.* may need
 * the file's attributes from the host first, and a mount whose server is
 * gone then holds the call for its deadline.  Older clients pass it to
 * the host, where it is ENODATA.
 */
#define QTFS_SYNC_XATTR_TRUSTED "trusted.qtfs.sync"

/*
 * The barrier on every fuse-qtfs mount of this process's mount namespace
 * (from /proc/self/mountinfo), all at once, waiting @timeout_ms at most in
 * all: a mount whose server is gone must not hold the caller.  Returns how
 * many mounts answered; one that did not is logged at debug level.
 */
int qt_qtfs_sync_all(unsigned timeout_ms);

/* The barrier on the mounts at @paths (NULL-terminated), as qt_qtfs_sync_all(). */
int qt_qtfs_sync(char *const *paths, unsigned timeout_ms);

/* The mount points of fuse-qtfs in mountinfo text @text (a NULL-terminated array). */
char **qt_qtfs_mounts(const char *text);
