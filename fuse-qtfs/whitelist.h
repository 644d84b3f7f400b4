/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The qtfs-server path whitelist: which host paths each file operation may
 * touch.  The file is the one openEuler qtfs reads from /etc/qtfs/whitelist,
 * a GLib key file with one section per operation and a ';'-separated list of
 * absolute host paths in its Path key:
 *
 *     [Open]
 *     Path=/var/lib/docker;/run/containerd
 *     [Rmdir]
 *     Path=
 *
 * An absent section leaves its operation unrestricted; a present section
 * allows only paths at or below one of its entries, on a component boundary
 * (/var/lib covers /var/lib/x, not /var/libx); a present section with no
 * entries denies the operation.  Users write this file, so the full format,
 * every error and an example are in docs/qtfs-whitelist.md.
 *
 * Loading validates everything (unknown sections and keys, relative paths,
 * "." and ".." components, over-long or too many entries) and fails with
 * -EINVAL and one line naming the file, the section, the key and the value.
 * A loaded whitelist is immutable, so any number of threads may call
 * qtfs_wl_check() on it concurrently without a lock.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>

/* Operations, one per section.  The order is part of no format; names are. */
enum qtfs_wl_op {
	QTFS_WL_OPEN,
	QTFS_WL_WRITE,
	QTFS_WL_READ,
	QTFS_WL_READDIR,
	QTFS_WL_MKDIR,
	QTFS_WL_RMDIR,
	QTFS_WL_CREATE,
	QTFS_WL_UNLINK,
	QTFS_WL_RENAME,
	QTFS_WL_SETATTR,
	QTFS_WL_SETXATTR,
	/* Kept for rexec and udsproxy; qtfs-server itself does not check them. */
	QTFS_WL_MOUNT,
	QTFS_WL_KILL,
	QTFS_WL_UDSCONNECT,
	QTFS_WL_N_OPS
};

/* At most this many entries in one section's Path, as in openEuler qtfs. */
#define QTFS_WL_MAX_ENTRIES 64
/* Larger whitelist files are refused; every section full of PATH_MAX entries fits. */
#define QTFS_WL_MAX_FILE_SIZE (4u << 20)

struct qtfs_wl;

/*
 * Load the whitelist file at @path.  On success returns 0 and sets *@out to a
 * whitelist the caller owns (free with qtfs_wl_free()).  On failure returns
 * -errno (-ENOENT, -EACCES, -EFBIG, -EINVAL for any content error, ...),
 * sets *@msg to a g_malloc'd one-line message starting with @path, and leaves
 * *@out untouched.
 */
int qtfs_wl_load(const char *path, struct qtfs_wl **out, char **msg);
/* The same from the NUL-terminated text @data; @name stands for the file in messages. */
int qtfs_wl_load_data(const char *name, const char *data, struct qtfs_wl **out, char **msg);
void qtfs_wl_free(struct qtfs_wl *wl);
typedef struct qtfs_wl qtfs_wl; /* for g_autoptr() */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(qtfs_wl, qtfs_wl_free)

/*
 * May @op act on the host path @path?  @path must be absolute and is expected
 * to be resolved already (no symlinks are followed here).
 *
 * @wl NULL means no whitelist is configured: everything is allowed.  With a
 * whitelist, a path that is NULL, not absolute, at least PATH_MAX bytes long
 * or that has a "." or ".." component is denied for every operation, even an
 * unrestricted one: such a path reaching this point means resolution went
 * wrong, and failing closed is the only safe answer.  An unknown @op is
 * denied too.  Otherwise an unrestricted @op is allowed and a restricted one
 * is allowed when an entry of its section covers @path.
 */
bool qtfs_wl_check(const struct qtfs_wl *wl, enum qtfs_wl_op op, const char *path);

/* Does the file have a section for @op?  False for a NULL @wl, true for an unknown @op. */
bool qtfs_wl_restricts(const struct qtfs_wl *wl, enum qtfs_wl_op op);

/* The section name of @op ("Open", "Udsconnect", ...); "unknown" for an unknown @op. */
const char *qtfs_wl_op_name(enum qtfs_wl_op op);
