#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# The offload environment end to end, with two "hosts" on this machine:
# network namespace HOST runs qtfs-server and rexecd (and shares this
# script's mount namespace, so its files are the test's files); network
# namespace DPU, with a mount and a pid namespace of its own, runs
# `chroot-setup up` with a profile that mounts the host's /proc (proc
# mode), /sys and a shared directory, makes runc and kill shims, forwards
# a unix socket and starts a service.  From inside the DPU environment:
#   1. files cross the shared directory both ways;
#   2. a busybox OCI bundle built on the shared path is started on the
#      host with Debian's runc, through the chroot's runc shim;
#   3. the container's init is found in the host /proc through the
#      proc-mode mount, its status and cgroup files are read (the cgroup
#      through the /sys mount), and /proc/self is the caller's own process;
#   4. the container's stdout reaches the DPU through a fifo on the
#      shared path;
#   5. the kill shim stops the container and it is gone;
#   6. the unix-socket forward carries a request to a server on the host,
#      and the service writes to the host through the mount;
#   7. `down` leaves no mount, helper process or state.
# Then the failures: a bad remote path fails `up` and leaves nothing; a
# killed fuse-qtfs helper does not stop `down` from cleaning up.
#
# scripts/demo.sh runs this as the README's main demo, so it says what
# each step does.  Needs root, /dev/fuse, ip, runc and busybox (77 when
# missing; scripts/setup-debian.sh installs them).

set -u

top=$(cd "${top_builddir:-.}" && pwd)
if [ "$(id -u)" -ne 0 ] || [ ! -c /dev/fuse ]; then
	echo "SKIP: needs root and /dev/fuse"
	exit 77
fi
for t in ip nsenter unshare runc busybox python3; do
	if ! command -v $t >/dev/null; then
		echo "SKIP: needs $t (scripts/setup-debian.sh installs it)"
		exit 77
	fi
done
if [ -z "${CS_E2E_IN_NS:-}" ]; then
	CS_E2E_IN_NS=$(readlink /proc/self/ns/mnt) exec unshare -m --propagation private sh "$0" "$@"
fi
# Other tests' FUSE mounts must not live on in this namespace.
sh "$(dirname "$0")/../detach-fuse.sh" "$CS_E2E_IN_NS"

CS=$top/chroot-setup/chroot-setup
export FUSE_QTFS="$top/fuse-qtfs/fuse-qtfs" REXEC="$top/rexec/rexec"
T=$(mktemp -d /tmp/cs-e2e.XXXXXX)
chmod 755 "$T"
id=$$
net=$((id % 200 + 20))
nh=cse2e-h-$id
nd=cse2e-d-$id
H=10.252.$net.1
ctr=cse2e-$id
PIDS=
anchor=
failures=0

cleanup() {
	runc delete -f "$ctr" >/dev/null 2>&1
	[ -n "$anchor" ] && kill -KILL "$anchor" 2>/dev/null
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	ip netns del "$nh" 2>/dev/null
	ip netns del "$nd" 2>/dev/null
	for m in $(grep " $T/" /proc/self/mountinfo | cut -d' ' -f5 | sort -r); do
		umount -l "$m" 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

say() {
	printf '\n== %s\n' "$*"
}
# ok, fail, check (and netns_pair).
. "$(dirname "$0")/../check-env.sh"
# Sanitizer reports of the daemons on both "hosts" (the DPU's mount
# namespace sees this directory too; the chroot does not, see in_env).
sanitizer_to "$T/sanitizer"
# Run on the DPU: its network, mount and pid namespaces.
dpu() {
	nsenter -t "$anchor" -n -m -p -- "$@"
}
# Run inside the DPU's offload environment.
# Inside the chroot /proc is the host's (proc mode), where a sanitizer
# build's leak checker, which reads /proc/<its own pid>/task, finds the
# host's process of that number or none: leak checks stay outside.
in_env() {
	dpu env CHROOT_SETUP_STATE_DIR="$T/state" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		"$CS" exec "$T/e2e.conf" -- "$@"
}
dpu_mounts() {
	dpu grep -c " $T/dpu" /proc/self/mountinfo
}
# Live (not zombie) processes of the DPU's pid namespace whose command line matches.
dpu_procs() {
	for p in $(pgrep -f "$1"); do
		[ "$(readlink "/proc/$p/ns/pid")" = "$dpu_pidns" ] && echo "$p"
	done
}

say "two hosts: network namespaces $nh (host, $H) and $nd (DPU, with its own mount and pid namespaces)"
netns_pair "$nh" "$nd" "eh$id" "ed$id" "$H/24" "10.252.$net.2/24" || exit 1

mkdir -p "$T/shared" "$T/hostrun" "$T/keys" "$T/dpu/root" "$T/state"
(umask 077 && head -c 48 /dev/urandom | base64 >"$T/keys/psk")
: >"$T/empty.conf"
runc=$(command -v runc)
printf '%s\n/usr/bin/kill\n' "$runc" >"$T/whitelist"
printf '[rexecd]\nforward_allow=%s/hostrun\n' "$T" >"$T/rexecd.conf"

say "host: qtfs-server exports /proc, /sys and $T/shared; rexecd runs runc and kill; a server listens on $T/hostrun/api.sock"
nsenter --net="/run/netns/$nh" "$top/fuse-qtfs/qtfs-server" --config "$T/empty.conf" \
	--listen "tcp://$H:6000" --key-file "$T/keys/psk" \
	--export /proc --export /sys --export "$T/shared" >"$T/qtfs.log" 2>&1 &
PIDS="$PIDS $!"
nsenter --net="/run/netns/$nh" "$top/rexecd/rexecd" --config "$T/rexecd.conf" \
	--listen "tcp://$H:6001" --key-file "$T/keys/psk" --whitelist "$T/whitelist" \
	>"$T/rexecd.log" 2>&1 &
PIDS="$PIDS $!"
python3 - "$T/hostrun/api.sock" <<'PY' &
import os, socket, sys
# Renamed into place once listening: a connect between bind and listen is refused.
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1] + ".tmp"); s.listen(4)
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    c, _ = s.accept()
    req = c.recv(4096).decode()
    c.sendall(("pong from the host: " + req).encode())
    c.close()
PY
PIDS="$PIDS $!"
wait_until 10 test -S "$T/hostrun/api.sock"
wait_until 10 sh -c "nsenter --net=/run/netns/$nh ss -ltn | grep -q '$H:6000' &&
	nsenter --net=/run/netns/$nh ss -ltn | grep -q '$H:6001'"

say "DPU: its namespaces, then 'chroot-setup up' with the offload profile"
# Its pid 1 reaps orphans, as an init would (fuse-qtfs and the forwards
# are daemons whose parents exit).
nsenter --net="/run/netns/$nd" unshare -m -p -f --propagation private --mount-proc \
	python3 -c '
import os, time
while True:
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(0.5)
' >"$T/anchor.log" 2>&1 &
PIDS="$PIDS $!"
wait_until 10 sh -c "pgrep -P $! >/dev/null" || {
	echo "FAIL: cannot make the DPU's namespaces" >&2
	exit 1
}
anchor=$(pgrep -P $!)
dpu_pidns=$(readlink "/proc/$anchor/ns/pid")

B=$T/shared/bundle
cat >"$T/e2e.conf" <<EOF
[profile]
name=e2e
root=$T/dpu/root
qtfs_server=tcp://$H:6000
qtfs_key_file=$T/keys/psk
rexec_host=tcp://$H:6001
rexec_key_file=$T/keys/psk
rexec_binary=$top/rexec/rexec
env=PATH=/usr/local/bin:/usr/bin:/bin

[bind:/usr]
ro=true
[bind:/lib]
[bind:/lib64]
[bind:/bin]
[bind:/etc]
ro=true
[bind:$top]
ro=true
[bind:$T/keys]
ro=true
[mount:/dev]
type=devbind
[mount:/tmp]
type=tmpfs
[mount:/run]
type=tmpfs
[mount:/local_proc]
type=proc
[mount:/usr/local/bin]
type=tmpfs
[qtfs:/proc]
remote=/proc
proc=true
[qtfs:/sys]
remote=/sys
[qtfs:$T/shared]
options=fifo_relay=*
[shim:runc]
[shim:kill]
host=/usr/bin/kill
[forward:/run/api.sock]
remote=$T/hostrun/api.sock
[service:agent]
exec=/bin/sh -c 'while :; do date +%s >$T/shared/agent.new && mv $T/shared/agent.new $T/shared/agent.heartbeat; sleep 0.5; done'
ready=$T/shared/agent.heartbeat
restart=on-failure
EOF
check "check accepts the profile" dpu "$CS" check "$T/e2e.conf"
dpu env CHROOT_SETUP_STATE_DIR="$T/state" "$CS" up "$T/e2e.conf" >"$T/up.out" 2>&1
rc=$?
sed 's/^/    /' "$T/up.out"
check "up succeeds (exit $rc)" [ $rc -eq 0 ]
check "the DPU sees the fuse-qtfs mounts" sh -c "[ \$(nsenter -t $anchor -m -p grep -c ' $T/dpu/root.* fuse.fuse-qtfs ' /proc/self/mountinfo) -eq 3 ]"
check "... and the host's mount namespace does not" sh -c "! grep -q ' $T/dpu/root/' /proc/self/mountinfo"

say "1. files cross the shared directory both ways"
echo "written on the host" >"$T/shared/from-host"
got=$(in_env cat "$T/shared/from-host" 2>&1)
check "the DPU reads a host file (got: $got)" [ "$got" = "written on the host" ]
in_env sh -c "echo 'written on the DPU' >$T/shared/from-dpu"
check "the host reads a file written on the DPU" [ "$(cat "$T/shared/from-dpu" 2>/dev/null)" = "written on the DPU" ]

say "2. the DPU builds a busybox bundle on the shared path and starts it on the host through the runc shim"
in_env sh -c "set -e
	mkdir -p $B/rootfs/bin $B/rootfs/proc $B/rootfs/dev
	cp /bin/busybox $B/rootfs/bin/busybox
	for a in sh sleep echo cat; do ln -s busybox $B/rootfs/bin/\$a; done
	mkfifo $B/rootfs/out.fifo
	cd $B && runc spec" >"$T/bundle.out" 2>&1
check "the bundle is built ($(tr '\n' ' ' <"$T/bundle.out"))" \
	sh -c "[ -f '$B/config.json' ] && [ -p '$B/rootfs/out.fifo' ] && [ -x '$B/rootfs/bin/busybox' ]"
# The container writes to the fifo; a reader going away must not kill it.
in_env python3 -c "
import json, sys
c = json.load(open(sys.argv[1]))
c['process']['terminal'] = False
c['process']['args'] = ['sh', '-c', 'trap \"\" PIPE; exec </dev/null >/out.fifo 2>&1; echo container started; i=0; while :; do echo tick \$i; i=\$((i+1)); sleep 0.2; done']
json.dump(c, open(sys.argv[1], 'w'), indent=1)" "$B/config.json"
in_env runc run -d --bundle "$B" "$ctr" >"$T/run.out" 2>&1
rc=$?
check "runc run through the shim succeeds (exit $rc: $(tr '\n' ' ' <"$T/run.out"))" [ $rc -eq 0 ]
check "the host's runc has the container running" sh -c "runc state '$ctr' | grep -q '\"status\": \"running\"'"
check "... and rexecd ran it" grep -q "argv0=\"runc\"" "$T/rexecd.log"

# What a command run on the host makes is seen on the DPU the moment the
# shim returns (rexec waits for the mounts' barrier), even in a directory
# the DPU just made, whose names the DPU keeps.
# rexec finds the mounts in /proc/self/mountinfo, which proc mode shows
# from the DPU's own procfs.
n=$(in_env grep -c ' fuse.fuse-qtfs ' /proc/self/mountinfo 2>&1)
check "inside, /proc/self/mountinfo lists the three fuse-qtfs mounts (got: $n)" [ "$n" = 3 ]
out=$(in_env sh -c "mkdir $T/shared/spec2 && cd $T/shared/spec2 && runc spec && test -f config.json && echo seen" 2>&1)
check "runc spec through the shim in a new directory, then config.json at once ($out)" [ "$out" = seen ]

say "3. the DPU finds the container's init in the host /proc and reads its cgroup through /sys"
pid=$(in_env runc state "$ctr" | sed -n 's/.*"pid": \([0-9]*\),.*/\1/p')
check "runc state through the shim gives the init's pid ($pid)" sh -c "[ \"${pid:-0}\" -gt 0 ]"
pid=${pid:-0}
status=$(in_env cat "/proc/$pid/status" 2>&1)
check "the DPU reads /proc/$pid/status of the host" sh -c "echo '$status' | grep -q '^Pid:[[:space:]]*$pid\$'"
check "... which is the container's sh" sh -c "echo '$status' | grep -q '^Name:[[:space:]]*sh'"
# cgroup v2 at /sys/fs/cgroup, or v1 (hybrid) where the pids controller says where it is.
if [ -e /sys/fs/cgroup/cgroup.controllers ]; then
	cg=$(in_env cat "/proc/$pid/cgroup" 2>&1 | sed -n 's|^0::||p')
	cgdir=/sys/fs/cgroup$cg
else
	cg=$(in_env cat "/proc/$pid/cgroup" 2>&1 | sed -n 's|^[0-9]*:pids:||p')
	cgdir=/sys/fs/cgroup/pids$cg
fi
check "the DPU reads its cgroup ($cgdir)" [ -n "$cg" ]
procs=$(in_env cat "$cgdir/cgroup.procs" 2>&1)
check "... and finds it in the host's cgroup.procs through /sys (got: $(echo $procs))" sh -c "echo '$procs' | grep -qx '$pid'"
# The shell reads /proc/self/stat itself (a builtin); readlink is a child.
self=$(in_env sh -c 'read -r me rest </proc/self/stat; echo "$$ $me $(readlink /proc/self)"')
set -- $self x x x
check "/proc/self is the caller's own DPU process ($self)" \
	sh -c "[ '$1' = '$2' ] && echo '$3' | grep -qx '/local_proc/[0-9]*'"

say "4. the container's stdout reaches the DPU through the fifo"
# (The fifo shows as a regular file that cannot seek: head(1) would complain.)
out=$(in_env timeout 10 sh -c 'exec <"$1"; read -r a; read -r b; read -r c; echo "$a|$b|$c|"' - "$B/rootfs/out.fifo" 2>&1)
check "the DPU reads the container's first lines ($out)" [ "$out" = "container started|tick 0|tick 1|" ]

say "5. the kill shim stops the container"
in_env kill -KILL "$pid"
check "kill through the shim succeeds" [ $? -eq 0 ]
# Once killed, the init is a zombie until its parent reaps it: runc
# left it to pid 1, which on some machines reaps only every few seconds
# (or, under a subreaper, never).  The host's /proc keeps it until then,
# and so must the DPU's view: "ended" is gone or state Z.
dpu_sees_ended() {
	in_env sh -c '! test -e "/proc/$1" || grep -q "^[^ ]* ([^)]*) Z" "/proc/$1/stat"' - "$1"
}
check "the DPU sees $pid end (its /proc/$pid gone, or a zombie)" wait_until 5 dpu_sees_ended "$pid"
check "runc reports it stopped" sh -c "in_state=\$(runc state '$ctr'); echo \"\$in_state\" | grep -q '\"status\": \"stopped\"'"
in_env runc delete "$ctr"
check "runc delete through the shim removes it" sh -c "! runc state '$ctr' >/dev/null 2>&1"

say "6. the forward carries a request to the host; the service writes through the mount"
got=$(in_env python3 -c "
import socket
s = socket.socket(socket.AF_UNIX); s.connect('/run/api.sock'); s.sendall(b'GET /version')
print(s.recv(4096).decode())" 2>&1)
check "the request through /run/api.sock is answered by the host (got: $got)" [ "$got" = "pong from the host: GET /version" ]
beat1=$(cat "$T/shared/agent.heartbeat" 2>/dev/null)
sleep 1.2
beat2=$(cat "$T/shared/agent.heartbeat" 2>/dev/null)
check "the service's heartbeat reaches the host ($beat1, then $beat2)" sh -c "[ -n '$beat1' ] && [ '$beat2' -gt '$beat1' ]"
check "status is up and live" dpu env CHROOT_SETUP_STATE_DIR="$T/state" "$CS" status "$T/e2e.conf"

say "7. down leaves nothing behind"
dpu env CHROOT_SETUP_STATE_DIR="$T/state" "$CS" down "$T/e2e.conf" >"$T/down.out" 2>&1
rc=$?
sed 's/^/    /' "$T/down.out"
check "down succeeds (exit $rc)" [ $rc -eq 0 ]
check "no mount is left ($(dpu_mounts))" [ "$(dpu_mounts)" -eq 0 ]
# The fuse-qtfs of $T/shared holds its directory in /tmp until it exits.
check "... /tmp, under which a fuse-qtfs was mounted, not lazily ($(grep "root/tmp\$\|root/tmp " "$T/down.out"))" \
	grep -q "unmounted $T/dpu/root/tmp\$" "$T/down.out"
left_procs() {
	echo $(dpu_procs "[f]use-qtfs.*$T") $(dpu_procs "[f]orward-unix.*$T") $(dpu_procs "[a]gent.heartbeat")
}
# fuse-qtfs exits a moment after its unmount.
wait_until 5 sh -c "[ -z \"\$(pgrep -f '[f]use-qtfs.*$T')\" ]"
check "no fuse-qtfs, forward or service is left ($(left_procs))" [ -z "$(left_procs)" ]
check "no state is left" [ ! -e "$T/state/e2e" ]
check "no shim is left" [ ! -e "$T/dpu/root/usr/local/bin/runc" ]

say "failures: a bad remote path, a killed fuse-qtfs helper"
sed "s|^remote=/sys\$|remote=/no/such/export|" "$T/e2e.conf" >"$T/bad.conf"
dpu env CHROOT_SETUP_STATE_DIR="$T/state" "$CS" up "$T/bad.conf" >"$T/bad.out" 2>&1
rc=$?
check "up with a bad remote path fails (exit $rc) naming the step" \
	sh -c "[ $rc -ne 0 ] && grep -q '\\[qtfs:/sys\\]' '$T/bad.out'"
check "... and leaves nothing mounted ($(dpu_mounts)) and no state" \
	sh -c "[ $(dpu_mounts) -eq 0 ] && [ ! -e '$T/state/e2e' ]"
dpu env CHROOT_SETUP_STATE_DIR="$T/state" "$CS" up "$T/e2e.conf" >/dev/null 2>&1
check "up again" [ $? -eq 0 ]
for p in $(dpu_procs "[f]use-qtfs.*$T/shared"); do kill -KILL "$p"; done
dpu env CHROOT_SETUP_STATE_DIR="$T/state" "$CS" down "$T/e2e.conf" >"$T/down2.out" 2>&1
rc=$?
check "down after a killed fuse-qtfs succeeds (exit $rc)" [ $rc -eq 0 ]
check "... and leaves no mount ($(dpu_mounts)), process or state" \
	sh -c "[ $(dpu_mounts) -eq 0 ] && [ ! -e '$T/state/e2e' ]"

# The daemons end before their reports are read (see sanitizer_found).
stop_daemons "(qtfs-server|fuse-qtfs|rexecd|rexec).* $T/" $PIDS
PIDS=
sanitizer_found "$T/sanitizer" && failures=$((failures + 1))

if [ $failures -ne 0 ]; then
	echo "$failures check(s) failed" >&2
	for f in qtfs rexecd; do
		echo "--- $f.log" >&2
		tail -n 20 "$T/$f.log" >&2
	done
	exit 1
fi
echo
echo "ok: the offload environment end to end"
