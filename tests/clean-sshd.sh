#!/bin/sh
# SPDX-License-Identifier: MIT
#
# clean-sshd.sh SSHD [ARG]...: exec SSHD in a private mount namespace in
# which the invoking user's shell start-up files read as empty.
#
# sshd runs every command through the user's login shell, and Debian's bash
# reads ~/.bashrc even for "bash -c CMD" when started by sshd.  A noisy
# ~/.bashrc (a pyenv hook that prints an error, a banner, "stty" calls) then
# lands in the test's captured output and the tests would be measuring the
# machine rather than our code.  The files are masked with a bind mount of
# /dev/null that only this sshd and its children see; the machine is not
# touched.  The process id is the one of the shell that runs this script, so
# callers can keep "$!" as sshd's pid.
#
# The namespace starts as a copy of every mount of the machine, FUSE mounts
# of other tests running at the same time included, and a copy holds its
# file system alive: unmounted where it was made, it would not end (nor
# its daemon) until this sshd does, and a command run through this sshd
# would see it (rexec's barrier visits every fuse-qtfs mount it sees).  So
# FUSE mounts are detached here first; sshd needs none of them.
set -e
home=$(getent passwd "$(id -u)" | cut -d: -f6)
exec unshare --mount --propagation private sh -ec '
home=$1
shift
# Mount points, deepest first, of types fuse and fuse.* (not fusectl);
# one whose name findmnt had to escape (a space) stays.
findmnt -rn -o FSTYPE,TARGET | awk "\$1 == \"fuse\" || \$1 ~ /^fuse\\./ { print \$2 }" | sort -r |
	while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done
for f in .bashrc .bash_profile .bash_login .profile .zshenv .zshrc .kshrc .cshrc .tcshrc; do
	if [ -f "$home/$f" ]; then
		mount --bind /dev/null "$home/$f"
	fi
done
exec "$@"' clean-sshd "$home" "$@"
