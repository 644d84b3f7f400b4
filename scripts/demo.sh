#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# The README's demo: set the machine up and build (setup-debian.sh), then
# show fuse-qtfs at work between two "hosts" on this machine: qtfs-server
# in a network namespace playing the host, fuse-qtfs in another playing the
# DPU, joined by a veth pair, with a pre-shared key.  The DPU side mounts a
# host directory and the host's /proc, reads and writes through them, and
# talks to a host process through a relayed FIFO.  Then rexecd on the host
# runs whitelisted binaries for rexec on the DPU: exit codes, stdin, a
# signal, the whitelist, and a runc-style shim.  Everything it starts is
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
rexecd_pid=
cleanup() {
	[ -n "$rexecd_pid" ] && kill "$rexecd_pid" 2>/dev/null
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

say "host: rexecd runs whitelisted binaries for the DPU, over tcp with the same key"
printf '%s\n' /usr/bin/uname /usr/bin/sh /usr/bin/cat /usr/bin/sleep /usr/bin/printenv \
	>"$T/rexec-whitelist"
printf '[rexecd]\nkill_grace=2s\n' >"$T/rexecd.conf"
nsenter --net="/run/netns/$nh" "$top/rexecd/rexecd" --config "$T/rexecd.conf" \
	--listen tcp://10.250.0.1:6001 --key-file "$T/psk" --whitelist "$T/rexec-whitelist" \
	>"$T/rexecd.log" 2>&1 &
rexecd_pid=$!
sleep 0.3
sed 's/^/    /' "$T/rexecd.log"
dpu() { nsenter --net="/run/netns/$nd" "$@"; }
export REXEC_HOST=tcp://10.250.0.1:6001 REXEC_KEY_FILE="$T/psk"

say "DPU: rexec runs host binaries; argv, stdin, stdout, stderr and the exit status cross"
run dpu "$top/rexec/rexec" -C / uname -n
run dpu "$top/rexec/rexec" -C / -e WHO=dpu sh -c 'echo "hi from the host, $WHO"; echo "to stderr" >&2; exit 42' || echo "    (exit status $?)"
printf '$ echo piped | rexec cat\n'
echo "piped through the host" | dpu "$top/rexec/rexec" -C / cat

say "a signal to rexec reaches the host process group"
# nsenter execs rexec, so $! is rexec itself.
nsenter --net="/run/netns/$nd" "$top/rexec/rexec" -C / \
	sh -c 'trap "echo host shell got TERM; exit 3" TERM; sleep 30 & wait' &
rx=$!
sleep 0.5
run kill -TERM "$rx"
wait "$rx" || echo "    (exit status $?)"

say "the whitelist refuses anything else (126), unknown commands are 127"
run dpu "$top/rexec/rexec" -C / id || echo "    (exit status $?)"
run dpu "$top/rexec/rexec" -C / no-such-command || echo "    (exit status $?)"

say "a shim: printenv on the DPU is really the host's, with the caller's environment"
mkdir -p "$T/shims"
run "$top/rexec/rexec" shim install --target "$top/rexec/rexec" "$T/shims" printenv
run ls -l "$T/shims/printenv"
(cd / && DEMO_VAR="set on the DPU" dpu "$T/shims/printenv" DEMO_VAR)

say "rexecd's audit log"
sed 's/^/    /' "$T/rexecd.log" | grep -E 'exec |deny ' | tail -n 8

say "not implemented yet (README, Status); their command lines:"
for p in chroot-setup/chroot-setup autoscale/autoscale \
	bm/bm-api bm/bm-controller bm/bm-handler bm/bmctl sim/sim; do
	printf '    %s\n' "$("./$p" --help | head -n 1)"
done
echo
echo "Demo done.  The test suite: sh scripts/setup-debian.sh && make check"
