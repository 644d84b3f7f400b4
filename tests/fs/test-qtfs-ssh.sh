#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# fuse-qtfs over ssh://: a real OpenSSH sshd started here on loopback with
# generated keys; the client authenticates with its own key, checks the
# host key against a known_hosts file written here, and runs
# 'qtfs-server --stdio' on the "host" through an exec channel.  The mount
# must pass the differential suite, and a wrong host key must be refused.

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"

sshd=/usr/sbin/sshd
if [ ! -x "$sshd" ]; then
	echo "FAIL: $sshd not installed (scripts/setup-debian.sh installs openssh-server)" >&2
	exit 1
fi
unset SSH_AUTH_SOCK SSH_AGENT_PID
HOME=$T/home
export HOME
mkdir -p "$HOME"
ssh-keygen -q -t ed25519 -N '' -f "$T/host_key" || exit 1
ssh-keygen -q -t ed25519 -N '' -f "$T/id" || exit 1
ssh-keygen -q -t ed25519 -N '' -f "$T/other_host_key" || exit 1
cp "$T/id.pub" "$T/authorized_keys"

# A mount made before sshd starts: the test sshd's private mount
# namespace (clean-sshd.sh) must not hold it, or it would outlive its
# unmount, its client with it, until sshd ends.
mkdir -p "$T/early-exp"
start_server "$T/early-server.log" --listen "unix:$T/early.sock" --export "$T/early-exp" || exit 1
check "a mount made before sshd starts" mount_qtfs "unix:$T/early.sock:$T/early-exp" "$T/early"
early=$(pgrep -f "^$FUSE_QTFS .* $T/early\$")

. "$(dirname "$0")/../sshd-env.sh"
start_test_sshd "$T/sshd" "HostKey $T/host_key" "AuthorizedKeysFile $T/authorized_keys" || exit 1
QTFS_PIDS="$QTFS_PIDS $SSHD_PID"
check "... is not in sshd's mount namespace" \
	sh -c "! grep -q ' $T/early ' /proc/$SSHD_PID/mountinfo"
check "... and once unmounted, its client ends while sshd runs" umount_qtfs "$T/early"
check "... (its client was found)" [ -n "$early" ]
check "... (client gone; a zombie counts, see wait_gone)" wait_gone 100 "${early:-0}"
port=$SSHD_PORT
printf '[127.0.0.1]:%s %s\n' "$port" "$(cut -d' ' -f1,2 "$T/host_key.pub")" >"$T/known_hosts"
printf '[127.0.0.1]:%s %s\n' "$port" "$(cut -d' ' -f1,2 "$T/other_host_key.pub")" >"$T/bad_known_hosts"

mkdir -p "$T/exp" "$T/native"
: >"$T/empty.conf"
cmd="$QTFS_SERVER --stdio --config $T/empty.conf --export $T/exp"
src="ssh://$(id -un)@127.0.0.1:$port:$T/exp"

check "mount over ssh://" mount_qtfs "$src" "$T/mnt" --identity "$T/id" \
	-o "known_hosts=$T/known_hosts,server_cmd=$cmd,conns=2"
check "fsdiff over ssh" "$FSDIFF" --no-lock-pid "$T/native" "$T/mnt"
check "fsx 10000 ops over ssh" "$FSX" -N 10000 "$T/mnt"
head -c 5000000 /dev/urandom >"$T/big"
cp "$T/big" "$T/mnt/big"
check "5 MB through ssh arrives intact" cmp -s "$T/big" "$T/exp/big"
check "large reads over ssh" big_reads "$T/exp" "$T/mnt"
check "unmount" umount_qtfs "$T/mnt"

out=$("$FUSE_QTFS" --identity "$T/id" -o "known_hosts=$T/bad_known_hosts,server_cmd=$cmd,timeout=5" \
	"$src" "$T/mnt" 2>&1)
rc=$?
QTFS_MOUNTS="$QTFS_MOUNTS $T/mnt"
check "a wrong host key is refused (rc=$rc)" [ $rc -ne 0 ]
check "... with a message about the host key: $out" sh -c 'echo "$1" | grep -qi "host key"' sh "$out"
out=$("$FUSE_QTFS" --identity "$T/other_host_key" \
	-o "known_hosts=$T/known_hosts,server_cmd=$cmd,timeout=5" "$src" "$T/mnt" 2>&1)
rc=$?
check "a key sshd does not know is refused (rc=$rc): $out" [ $rc -ne 0 ]
finish
