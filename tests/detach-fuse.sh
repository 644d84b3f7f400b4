#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# detach-fuse.sh PARENT-MNT-NS: in a mount namespace just made private
# (unshare -m), detach every FUSE mount (types fuse and fuse.*) it
# inherited.  PARENT-MNT-NS is `readlink /proc/self/ns/mnt` of the
# namespace it was made from; if this is still that one, nothing is done.
#
# A new mount namespace starts as a copy of every mount of the machine,
# the FUSE mounts of other tests running at the same time included, and
# a copy holds its file system alive: unmounted where it was made, it
# would not end (nor its daemon) until this namespace does, and the
# processes here would see it (rexec's barrier visits every fuse-qtfs
# mount it sees).  Only private mounts are detached: an unmount of a
# shared one would reach its peers.  A mount point findmnt had to escape
# (a space) is left.

parent=${1:?usage: detach-fuse.sh PARENT-MNT-NS}
[ "$(readlink /proc/self/ns/mnt)" != "$parent" ] || exit 0
findmnt -rn -o FSTYPE,PROPAGATION,TARGET |
	awk '($1 == "fuse" || $1 ~ /^fuse\./) && $2 == "private" { print $3 }' | sort -r |
	while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done
exit 0
