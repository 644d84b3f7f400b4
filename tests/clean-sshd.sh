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
# FUSE mounts it inherits are detached first (detach-fuse.sh); sshd needs
# none of them.
set -e
home=$(getent passwd "$(id -u)" | cut -d: -f6)
exec unshare --mount --propagation private sh -ec '
home=$1
sh "$2" "$3"
shift 3
for f in .bashrc .bash_profile .bash_login .profile .zshenv .zshrc .kshrc .cshrc .tcshrc; do
	if [ -f "$home/$f" ]; then
		mount --bind /dev/null "$home/$f"
	fi
done
exec "$@"' clean-sshd "$home" "$(dirname "$0")/detach-fuse.sh" "$(readlink /proc/self/ns/mnt)" "$@"
