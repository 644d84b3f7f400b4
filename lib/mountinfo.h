/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The mount table of a process, as /proc/PID/mountinfo gives it (proc(5)):
 *
 *   36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
 *
 * one line per mount: its id, its parent's id, the device, the root of the
 * mount within its file system, the mount point, the mount's options, any
 * number of optional fields (shared:N, master:N...), a "-", the file
 * system's type, the source and the super block's options.  The kernel
 * writes a space, tab, newline or backslash in the paths, the type and
 * the source as \ooo (octal); the parser undoes that.  Lines listed later
 * were mounted later: of two mounts on one point the later one is on top.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <sys/types.h>

struct qt_mount {
	unsigned id, parent;
	dev_t dev;
	char *root;	   /* within the file system, unescaped */
	char *mount_point; /* unescaped */
	char *options;	   /* the mount's: "rw,nosuid,relatime" */
	char *fstype;	   /* "ext4", "fuse.fuse-qtfs"; unescaped */
	char *source;	   /* "/dev/sda1", "tmpfs"; unescaped */
	char *super_options;
};

/*
 * The mounts of mountinfo text @text, in its order, as struct qt_mount
 * (the array frees them).  A line that is not one (too few fields, no
 * "-", a number that does not parse) is left out; one without super
 * block options has them "".
 */
GPtrArray *qt_mountinfo_parse(const char *text);

/* The mounts of this process's mount namespace; NULL if /proc cannot be read. */
GPtrArray *qt_mountinfo_read(void);

/* The topmost mount on @mount_point (as it appears unescaped) in @mounts, or NULL. */
const struct qt_mount *qt_mountinfo_at(GPtrArray *mounts, const char *mount_point);

/* The first mount of device @dev in @mounts, or NULL. */
const struct qt_mount *qt_mountinfo_of_dev(GPtrArray *mounts, dev_t dev);
