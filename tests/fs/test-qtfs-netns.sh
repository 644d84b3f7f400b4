#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Two hosts: qtfs-server in one network namespace ("host"), fuse-qtfs in
# another ("dpu"), joined by a veth pair, as on a machine and its DPU.
# Only the network is split (nsenter --net), so the mount is visible to the
# test.  The client must not reach the server except over the veth link.

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"

if ! command -v ip >/dev/null || ! command -v nsenter >/dev/null; then
	echo "FAIL: ip (iproute2) and nsenter (util-linux) are needed" >&2
	exit 1
fi
nh=qtfs-h-$$
nd=qtfs-d-$$
cleanup_ns() {
	qtfs_cleanup
	ip netns del "$nh" 2>/dev/null
	ip netns del "$nd" 2>/dev/null
}
trap cleanup_ns EXIT
netns_pair "$nh" "$nd" "qh$$" "qd$$" 10.251.0.1/24 10.251.0.2/24 || exit 1

mkdir -p "$T/exp" "$T/native"
SERVER_WRAP="nsenter --net=/run/netns/$nh"
CLIENT_WRAP="nsenter --net=/run/netns/$nd"
start_server "$T/server.log" --listen tcp://10.251.0.1:6000 --export "$T/exp" --key-file "$KEY" || exit 1
check "the server is not reachable from outside the two namespaces" \
	sh -c '! timeout 3 "$1" --key-file "$2" tcp://10.251.0.1:6000:/ "$3" -o timeout=1 2>/dev/null' sh \
	"$FUSE_QTFS" "$KEY" "$T/native"
check "mount across the veth link" mount_qtfs "tcp://10.251.0.1:6000:$T/exp" "$T/mnt" \
	--key-file "$KEY" -o conns=2
check "the client's connections come from the dpu namespace" grep -q "10.251.0.2" "$T/server.log"
check "fsdiff across hosts" "$FSDIFF" --no-lock-pid "$T/native" "$T/mnt"
check "fsx 20000 ops across hosts" "$FSX" -N 20000 "$T/mnt"
head -c 8000000 /dev/urandom >"$T/big"
cp "$T/big" "$T/mnt/big"
check "8 MB written across hosts arrives intact" cmp -s "$T/big" "$T/exp/big"
check "and reads back intact" cmp -s "$T/big" "$T/mnt/big"
check "unmount" umount_qtfs "$T/mnt"
finish
