#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# The README's demo: set the machine up and build (setup-debian.sh), then
# show fuse-qtfs at work between two "hosts" on this machine: qtfs-server
# in a network namespace playing the host, fuse-qtfs in another playing the
# DPU, joined by a veth pair, with a pre-shared key.  The DPU side mounts a
# host directory and the host's /proc, reads and writes through them, and
# talks to a host process through a relayed FIFO.  Everything it starts is
# stopped and removed at the end.  Needs root.
#
# Usage: sh scripts/demo.sh [CONFIGURE-ARG]...

set -eu

cd "$(dirname "$0")/.."
sh scripts/setup-debian.sh "$@"

top=$(pwd)
T=$(mktemp -d /tmp/qtfs-demo.XXXXXX)
nh=demo-host-$$
nd=demo-dpu-$$
server_pid=
cleanup() {
	for m in "$T/dpu/data" "$T/dpu/proc"; do
		mountpoint -q "$m" 2>/dev/null && fusermount3 -u "$m"
	done
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
	ip netns del "$nh" 2>/dev/null || true
	ip netns del "$nd" 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

say() {
	printf '\n\033[1m== %s\033[0m\n' "$*"
}
run() {
	printf '$ %s\n' "$*"
	"$@"
}

say "two hosts: network namespaces $nh (host, 10.250.0.1) and $nd (DPU, 10.250.0.2)"
ip netns add "$nh"
ip netns add "$nd"
ip link add "dh$$" type veth peer name "dd$$"
ip link set "dh$$" netns "$nh"
ip link set "dd$$" netns "$nd"
ip -n "$nh" addr add 10.250.0.1/24 dev "dh$$"
ip -n "$nd" addr add 10.250.0.2/24 dev "dd$$"
ip -n "$nh" link set "dh$$" up
ip -n "$nd" link set "dd$$" up
ip -n "$nh" link set lo up
ip -n "$nd" link set lo up

mkdir -p "$T/host/data/fifos" "$T/dpu/data" "$T/dpu/proc"
echo "hello from the host" >"$T/host/data/greeting"
(umask 077 && head -c 32 /dev/urandom | base64 >"$T/psk")
: >"$T/server.conf"

say "host: qtfs-server exports $T/host/data and /proc over tcp with a pre-shared key"
nsenter --net="/run/netns/$nh" "$top/fuse-qtfs/qtfs-server" --config "$T/server.conf" \
	--listen tcp://10.250.0.1:6000 --key-file "$T/psk" \
	--export "$T/host/data" --export /proc:ro -v >"$T/server.log" 2>&1 &
server_pid=$!
sleep 0.5
sed 's/^/    /' "$T/server.log"

say "DPU: mount them with fuse-qtfs"
run nsenter --net="/run/netns/$nd" "$top/fuse-qtfs/fuse-qtfs" --key-file "$T/psk" \
	-o conns=2,fifo_relay=fifos "tcp://10.250.0.1:6000:$T/host/data" "$T/dpu/data"
run nsenter --net="/run/netns/$nd" "$top/fuse-qtfs/fuse-qtfs" --key-file "$T/psk" \
	"tcp://10.250.0.1:6000:/proc" "$T/dpu/proc"
run grep fuse-qtfs /proc/mounts

say "DPU reads a host file and writes one back"
run cat "$T/dpu/data/greeting"
echo "written on the DPU at $(date +%T)" >"$T/dpu/data/from-dpu"
run cat "$T/host/data/from-dpu"
run ls -l "$T/dpu/data"

say "DPU reads the host's /proc (size 0 on procfs, read with direct I/O)"
run head -n 3 "$T/dpu/proc/meminfo"
run sh -c "grep -c . '$T/dpu/proc/self/status' >/dev/null && echo '/proc/self/status readable'"
printf '$ echo x > %s/dpu/proc/sys/vm/drop_caches   (read-only export)\n' "$T"
echo x >"$T/dpu/proc/sys/vm/drop_caches" 2>&1 || true

say "a FIFO made on the DPU connects a DPU writer with a host reader"
run mkfifo "$T/dpu/data/fifos/stdout"
cat "$T/host/data/fifos/stdout" >"$T/fifo.out" &
reader=$!
sleep 0.2
echo "container output, through the host FIFO" >"$T/dpu/data/fifos/stdout"
wait "$reader"
run cat "$T/fifo.out"

say "the server's view"
sed 's/^/    /' "$T/server.log" | tail -n 6

say "unmount"
run fusermount3 -u "$T/dpu/data"
run fusermount3 -u "$T/dpu/proc"

say "the other programs are not implemented yet (README, Status); their command lines:"
for p in rexecd/rexecd rexec/rexec chroot-setup/chroot-setup autoscale/autoscale \
	bm/bm-api bm/bm-controller bm/bm-handler bm/bmctl sim/sim; do
	printf '    %s\n' "$("./$p" --help | head -n 1)"
done
echo
echo "Demo done.  The test suite: sh scripts/setup-debian.sh && make check"
