#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Two hosts: qtfs-server in one network namespace ("host"), fuse-qtfs in
# another ("dpu"), joined by a veth pair, as on a machine and its DPU.
# Only the network is split (nsenter --net), so the mount is visible to the
# test.  The client must not reach the server except over the veth link.
# A DPU that goes silent (its link cut) must be dropped by the server
# after peer_timeout, its locks released, and the client must come back
# with the link.

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"

if ! command -v ip >/dev/null || ! command -v nsenter >/dev/null; then
	echo "FAIL: ip (iproute2) and nsenter (util-linux) are needed" >&2
	exit 1
fi
nh=qtfs-h-$$
nd=qtfs-d-$$
# Run by the cleanup trap once the daemons are gone (it exits after).
cleanup_more() {
	ip netns del "$nh" 2>/dev/null
	ip netns del "$nd" 2>/dev/null
}
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
# Across a link (not this host) the server splices large reads into TCP.
check "large reads across hosts" big_reads "$T/exp" "$T/mnt"
check "... spliced, not copied, by the server" sh -c '! grep -q "large reads are copied" "$1"' sh "$T/server.log"
check "unmount" umount_qtfs "$T/mnt"

# A DPU that loses power or its link sends nothing more, not even a reset.
# Without a bound on its silence the server would keep its session, and the
# host files it locked stay locked, for hours (the kernel's keepalive).
printf '[server]\npeer_timeout=3\n' >"$T/pt.conf"
start_server "$T/server2.log" --config "$T/pt.conf" --listen tcp://10.251.0.1:6001 \
	--export "$T/exp" --key-file "$KEY" || exit 1
check "mount with peer_timeout=3" mount_qtfs "tcp://10.251.0.1:6001:$T/exp" "$T/mnt" \
	--key-file "$KEY" -o peer_timeout=3
sessions() { grep -c "session .* started\|mounted" "$T/server2.log"; }
n0=$(sessions)
sleep 7
# reaches N: a file made through the mount shows on the host (no cache answers that).
reaches() { touch "$T/mnt/reach$1" 2>/dev/null && [ -e "$T/exp/reach$1" ]; }
check "an idle mount outlives peer_timeout on a live link" reaches 1
check "... without the server giving up on it" sh -c "! grep -q 'no answer from the peer' '$T/server2.log'"
check "... or a new session" [ "$(sessions)" = "$n0" ]
: >"$T/exp/lk"
# The shell becomes the sleep, which keeps the locked descriptor: killing it unlocks.
sh -c 'exec 9<"$1" && flock 9 && exec sleep 1000' sh "$T/mnt/lk" >/dev/null 2>&1 &
holder=$!
QTFS_PIDS="$QTFS_PIDS $holder"
check "a DPU process holds a flock through the mount" \
	wait_until 5 sh -c "! flock -n '$T/exp/lk' true"
ip -n "$nd" link set "qd$$" down
check "link cut: the server drops the silent client and its flock goes" \
	wait_until 15 flock -n "$T/exp/lk" true
# Why: its keepalives unanswered, or, when the kernel has given up on the
# peer's neighbour entry meanwhile, no route to it (seen once in a CI run).
check "... and says why" grep -q -e "no answer from the peer's host for 3 s" -e "No route to host" \
	"$T/server2.log"
ip -n "$nd" link set "qd$$" up
check "the link is back: the mount answers again" wait_until 40 reaches 2
kill "$holder" 2>/dev/null
check "unmount after the outage" umount_qtfs "$T/mnt"
finish
