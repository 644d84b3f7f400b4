#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# The guests' side of scripts/vm-pair.sh, which puts this file on each
# guest's work disk as /work/vm-run.sh (the image's qtfs-vm-check.service
# runs it, then powers the guest off).  /work/role says which guest this
# is: "host" (host-vm, 192.168.122.10, where the containers run: it
# serves qtfs-server and rexecd on tcp as docs/two-vm-guide.md configures
# them) or "dpu" (dpu-vm, 192.168.122.20: `chroot-setup up` of a profile
# modeled on tests/cs/test-cs-e2e.sh's, and the checks, numbered as in the
# summary of scripts/vm-pair.sh).  The two meet through the host's shared
# export, /srv/shared: the host writes there what the DPU compares with
# (its boot_id, hostname, the pid of its qtfs-server), the DPU writes
# /srv/shared/dpu-done when it has finished, and the host then checks
# what the DPU did on its side.
#
# Each check is one "ok: ..." or "FAIL: ..." line (tests/check-env.sh), in
# /work/ROLE/run.log with everything else the run prints; /work/ROLE holds
# the daemons' logs, and "finished" once the run got to its end.  Every
# wait is bounded (/work/wait-ports, /work/wait-done), and a watchdog
# powers the guest off after /work/watchdog seconds whatever hangs.

set -u

HOST_IP=192.168.122.10
DPU_IP=192.168.122.20
S=/srv/shared
src=/work/src
role=$(cat /work/role)
R=/work/$role
CTR=vm-pair-ctr
mkdir -p "$R"
cd / || exit 1

# ok, fail, check, wait_until.
. "$src/tests/check-env.sh"

say() {
	printf '\n== %s\n' "$*"
}

# The guest powers off however the run is stuck (sysrq: no service to
# wait for, the file systems synced first).  A normal end stops it with
# the rest of the service.
watchdog=$(cat /work/watchdog)
(
	sleep "$watchdog"
	echo "FAIL: the watchdog stops $role-vm after $watchdog s: the run hung" >>"$R/run.log"
	echo "[$role-vm] FAIL: the watchdog stops the guest after $watchdog s" >/dev/console
	sync
	echo 1 >/proc/sys/kernel/sysrq
	echo o >/proc/sysrq-trigger
) &

# wait_for SECONDS CMD...: poll CMD every second until it succeeds; 1 once
# SECONDS have passed.
wait_for() {
	_end=$(($(date +%s) + $1))
	shift
	until "$@"; do
		[ "$(date +%s)" -lt "$_end" ] || return 1
		sleep 1
	done
}

# net_up ADDRESS: ADDRESS/24 on the first interface that is not loopback
# (the virtio-net device, whatever udev named it: the guest has no other).
net_up() {
	modprobe virtio_net 2>/dev/null
	udevadm settle --timeout=30 2>/dev/null
	_dev=
	for _i in $(seq 30); do
		# A device's interface, not a virtual one a module made.
		for _d in /sys/class/net/*; do
			[ -e "$_d/device" ] && _dev=${_d##*/} && break
		done
		[ -n "$_dev" ] && break
		sleep 1
	done
	[ -n "$_dev" ] || return 1
	echo "    interface $_dev, $1/24"
	ip link set lo up && ip addr add "$1/24" dev "$_dev" && ip link set "$_dev" up
}

# The keys, at the paths of docs/two-vm-guide.md, mode 600.
install_keys() {
	mkdir -p /etc/qtfs /etc/rexec &&
		install -m 600 /work/keys/qtfs-psk /etc/qtfs/psk &&
		install -m 600 /work/keys/rexec-key /etc/rexec/key
}

host_main() {
	boot_id=$(cat /proc/sys/kernel/random/boot_id)
	say "host-vm: kernel $(uname -r), boot_id $boot_id"
	check "host-vm has its address $HOST_IP/24" net_up "$HOST_IP"
	check "the keys are in /etc/qtfs/psk and /etc/rexec/key, mode 600" install_keys
	mkdir -p "$S" /srv/hostrun

	# Before the servers listen: the DPU starts when they do.
	echo "written on the host" >"$S/from-host"

	say "qtfs-server exports /proc, /sys and $S; rexecd runs runc, kill and touch; a server listens on /srv/hostrun/api.sock"
	cat >/etc/qtfs/server.conf <<EOF
[server]
listen=tcp://$HOST_IP:6000
exports=/proc;/sys;$S
key_file=/etc/qtfs/psk
EOF
	runc=$(command -v runc)
	printf '%s\n/usr/bin/kill\n/usr/bin/touch\n' "$runc" >/etc/rexec/whitelist
	cat >/etc/rexec/rexecd.conf <<EOF
[rexecd]
listen=tcp://$HOST_IP:6001
key_file=/etc/rexec/key
forward_allow=/srv/hostrun
EOF
	"$src/fuse-qtfs/qtfs-server" --config /etc/qtfs/server.conf >"$R/qtfs-server.log" 2>&1 &
	qpid=$!
	"$src/rexecd/rexecd" --config /etc/rexec/rexecd.conf >"$R/rexecd.log" 2>&1 &
	rpid=$!
	python3 - /srv/hostrun/api.sock "$R/api-requests.txt" <<'PY' &
import os, socket, sys
# Renamed into place once listening: a connect between bind and listen is refused.
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1] + ".tmp"); s.listen(4)
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
log = open(sys.argv[2], "a")
while True:
    c, _ = s.accept()
    req = c.recv(4096).decode()
    log.write(req + "\n"); log.flush()
    c.sendall(("pong from the host: " + req).encode())
    c.close()
PY
	apid=$!
	{
		echo "boot_id=$boot_id"
		echo "hostname=$(hostname)"
		echo "qtfs_server_pid=$qpid"
		echo "rexecd_pid=$rpid"
	} >"$S/host-facts.new" && mv "$S/host-facts.new" "$S/host-facts"
	sed 's/^/    /' "$S/host-facts"
	check "qtfs-server and rexecd listen on $HOST_IP:6000 and :6001, the api server on its socket" \
		wait_for 30 sh -c "ss -ltn | grep -q ' $HOST_IP:6000 ' && ss -ltn | grep -q ' $HOST_IP:6001 ' &&
			test -S /srv/hostrun/api.sock"

	wait_done=$(cat /work/wait-done)
	say "waiting (up to $wait_done s) for the DPU's $S/dpu-done"
	t0=$(date +%s)
	check "the DPU says it is done ($S/dpu-done)" wait_for "$wait_done" test -e "$S/dpu-done"
	echo "    after $(($(date +%s) - t0)) s"

	say "host-vm: what the DPU did, seen on the host"
	got=$(cat "$S/from-dpu" 2>/dev/null)
	dpu_boot=${got#written on the DPU, boot_id }
	check "the DPU's file is in $S/from-dpu (got: $got)" \
		sh -c "[ '$got' != '$dpu_boot' ] && [ -n '$dpu_boot' ] && [ '$dpu_boot' != '$boot_id' ]"
	ran_on=$(cat "$S/bundle/rootfs/ran-on" 2>/dev/null)
	check "the container the DPU started ran on this kernel (its ran-on: $ran_on; boot_id $boot_id)" \
		[ "$ran_on" = "$boot_id" ]
	check "... and rexecd ran runc for it" grep -q 'argv0="runc"' "$R/rexecd.log"
	check "... and it is gone from the host's runc (deleted through the shim)" \
		sh -c "! runc state $CTR >/dev/null 2>&1"
	check "the forward's request reached /srv/hostrun/api.sock ($(tr '\n' ' ' <"$R/api-requests.txt" 2>/dev/null))" \
		grep -qx 'GET /version' "$R/api-requests.txt"
	beat=$(cat "$S/agent.heartbeat" 2>/dev/null)
	check "the DPU's service wrote $S/agent.heartbeat through the mount ($beat)" \
		sh -c "[ '${beat:-0}' -gt 0 ] 2>/dev/null"
	check "qtfs-server and rexecd are still running" kill -0 "$qpid" "$rpid"

	kill "$qpid" "$rpid" "$apid" 2>/dev/null
	for p in $qpid $rpid $apid; do
		wait_gone 100 "$p" || kill -KILL "$p" 2>/dev/null
	done
}

# Run inside the DPU's offload environment (bounded: a mount that hangs
# must not hold the run).
in_env() {
	timeout -k 5 120 "$CS" exec pair -- "$@"
}
dpu_mounts() {
	grep -c ' /srv/offload/root' /proc/self/mountinfo
}
dpu_sees_ended() {
	in_env sh -c '! test -e "/proc/$1" || grep -q "^[^ ]* ([^)]*) Z" "/proc/$1/stat"' - "$1"
}
ports_open() {
	python3 - "$HOST_IP" <<'PY' 2>/dev/null
import socket, sys
for port in (6000, 6001):
    socket.create_connection((sys.argv[1], port), timeout=3).close()
PY
}
left_procs() {
	# shellcheck disable=SC2046 # one line
	echo $(pgrep -f '[f]use-qtfs') $(pgrep -f '[f]orward-unix') $(pgrep -f '[a]gent.heartbeat')
}

dpu_main() {
	boot_id=$(cat /proc/sys/kernel/random/boot_id)
	say "dpu-vm: kernel $(uname -r), boot_id $boot_id"
	check "dpu-vm has its address $DPU_IP/24" net_up "$DPU_IP"
	check "the keys are in /etc/qtfs/psk and /etc/rexec/key, mode 600" install_keys
	modprobe fuse
	wait_ports=$(cat /work/wait-ports)
	t0=$(date +%s)
	check "the host's qtfs-server and rexecd answer on $HOST_IP:6000 and :6001" \
		wait_for "$wait_ports" ports_open
	echo "    after $(($(date +%s) - t0)) s"

	CS=$src/chroot-setup/chroot-setup
	export FUSE_QTFS="$src/fuse-qtfs/fuse-qtfs" REXEC="$src/rexec/rexec"
	B=$S/bundle
	mkdir -p /etc/chroot-setup/profiles /srv/offload/root
	cat >/etc/chroot-setup/profiles/pair.conf <<EOF
[profile]
name=pair
root=/srv/offload/root
qtfs_server=tcp://$HOST_IP:6000
qtfs_key_file=/etc/qtfs/psk
rexec_host=tcp://$HOST_IP:6001
rexec_key_file=/etc/rexec/key
rexec_binary=$src/rexec/rexec
env=PATH=/usr/local/bin:/usr/bin:/bin

[bind:/usr]
ro=true
[bind:/lib]
[bind:/lib64]
[bind:/bin]
[bind:/etc]
ro=true
[bind:$src]
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
[qtfs:$S]
options=fifo_relay=*
[shim:runc]
[shim:kill]
host=/usr/bin/kill
[forward:/run/api.sock]
remote=/srv/hostrun/api.sock
[service:agent]
exec=/bin/sh -c 'while :; do date +%s >$S/agent.new && mv $S/agent.new $S/agent.heartbeat; sleep 0.5; done'
ready=$S/agent.heartbeat
restart=on-failure
EOF
	say "dpu-vm: chroot-setup up pair"
	# Its own "ok: ..." line is not one of this run's checks.
	check "chroot-setup check accepts the profile" sh -c "'$CS' check pair >'$R/check.out' 2>&1"
	sed 's/^/    /' "$R/check.out"
	timeout -k 5 300 "$CS" up pair >"$R/up.out" 2>&1
	rc=$?
	sed 's/^/    /' "$R/up.out"
	check "up succeeds (exit $rc)" [ $rc -eq 0 ]
	check "the DPU has the three fuse-qtfs mounts" \
		sh -c "[ \$(grep -c ' /srv/offload/root.* fuse.fuse-qtfs ' /proc/self/mountinfo) -eq 3 ]"

	say "1. two kernels: the host's /proc through the mount, the DPU's own /proc/self"
	facts=$(in_env cat "$S/host-facts" 2>&1)
	host_boot=$(echo "$facts" | sed -n 's/^boot_id=//p')
	host_name=$(echo "$facts" | sed -n 's/^hostname=//p')
	qpid=$(echo "$facts" | sed -n 's/^qtfs_server_pid=//p')
	got=$(in_env cat /proc/sys/kernel/random/boot_id 2>&1)
	check "boot_id through the proc mount is the host's ($got; host-facts: $host_boot)" \
		sh -c "[ -n '$host_boot' ] && [ '$got' = '$host_boot' ]"
	check "... and not the DPU's own ($boot_id)" [ "$got" != "$boot_id" ]
	got=$(in_env cat /proc/sys/kernel/hostname 2>&1)
	mine=$(in_env uname -n 2>&1)
	check "the hostname through the mount is the host's ($got; host-facts: $host_name), uname -n the DPU's ($mine)" \
		sh -c "[ -n '$host_name' ] && [ '$got' = '$host_name' ] && [ '$mine' = \"\$(hostname)\" ] && [ '$mine' != '$got' ]"
	got=$(in_env cat "/proc/${qpid:-0}/comm" 2>&1)
	check "/proc/$qpid/comm through the mount is the host's qtfs-server ($got), which the DPU does not run" \
		sh -c "[ '$got' = qtfs-server ] && ! pgrep -x qtfs-server >/dev/null"
	# The shell reads /proc/self/stat itself (a builtin); readlink is a child.
	self=$(in_env sh -c 'read -r me rest </proc/self/stat; echo "$$ $me $(readlink /proc/self)"')
	# shellcheck disable=SC2086 # three words
	set -- $self x x x
	check "/proc/self is the caller's own DPU process ($self)" \
		sh -c "[ '$1' = '$2' ] && echo '$3' | grep -qx '/local_proc/[0-9]*'"

	# Not a check: proc mode shows a pid whose DPU process has a comm of
	# proc_comms (rexec, kubelet...) as the DPU's own, whatever the host
	# runs under that number, and two kernels give out pids each on their
	# own (here from the same boot, so in the same range).
	for p in $(pgrep -x rexec); do
		seen=$(in_env sed -n 's/^Name:[[:space:]]*//p' "/proc/$p/status" 2>/dev/null)
		if in_env kill -0 "$p" 2>/dev/null; then
			on_host="the host runs a process $p too, which the mount does not show"
		else
			on_host="the host has no process $p"
		fi
		echo "note: the DPU's rexec $p reads through the mount as '$seen'; $on_host"
	done

	say "2. files cross the shared directory both ways"
	got=$(in_env cat "$S/from-host" 2>&1)
	check "the DPU reads a file the host wrote (got: $got)" [ "$got" = "written on the host" ]
	in_env sh -c "echo 'written on the DPU, boot_id $boot_id' >$S/from-dpu.new && mv $S/from-dpu.new $S/from-dpu"
	check "the DPU writes $S/from-dpu (the host checks it)" [ $? -eq 0 ]

	say "3. a busybox bundle on the shared path runs on the host through the runc shim"
	in_env sh -c "set -e
		mkdir -p $B/rootfs/bin $B/rootfs/proc $B/rootfs/dev
		cp /bin/busybox $B/rootfs/bin/busybox
		for a in sh sleep echo cat; do ln -s busybox $B/rootfs/bin/\$a; done
		mkfifo $B/rootfs/out.fifo
		cd $B && runc spec" >"$R/bundle.out" 2>&1
	check "the bundle is built, runc spec through the shim ($(tr '\n' ' ' <"$R/bundle.out"))" \
		in_env sh -c "[ -f '$B/config.json' ] && [ -e '$B/rootfs/out.fifo' ] && [ -x '$B/rootfs/bin/busybox' ]"
	# It writes the boot_id it sees, then to the fifo; a reader going
	# away must not kill it.
	# shellcheck disable=SC2016 # the container's shell expands
	ctr_sh='trap "" PIPE; cat /proc/sys/kernel/random/boot_id >/ran-on; exec </dev/null >/out.fifo 2>&1; echo container started; i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.2; done'
	in_env python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))
c["process"]["terminal"] = False
c["root"]["readonly"] = False
c["process"]["args"] = ["sh", "-c", sys.argv[2]]
json.dump(c, open(sys.argv[1], "w"), indent=1)' "$B/config.json" "$ctr_sh"
	in_env runc run -d --bundle "$B" "$CTR" >"$R/run.out" 2>&1
	rc=$?
	check "runc run through the shim succeeds (exit $rc: $(tr '\n' ' ' <"$R/run.out"))" [ $rc -eq 0 ]
	check "runc state through the shim says running" \
		sh -c "timeout -k 5 120 '$CS' exec pair -- runc state $CTR | grep -q '\"status\": \"running\"'"
	ran_on() {
		in_env cat "$B/rootfs/ran-on" 2>/dev/null | grep -q .
	}
	wait_for 20 ran_on
	got=$(in_env cat "$B/rootfs/ran-on" 2>&1)
	check "the container saw the host's kernel ($got), not the DPU's" \
		sh -c "[ '$got' = '$host_boot' ] && [ '$got' != '$boot_id' ]"
	n=$(in_env grep -c ' fuse.fuse-qtfs ' /proc/self/mountinfo 2>&1)
	check "inside, /proc/self/mountinfo lists the three fuse-qtfs mounts (got: $n)" [ "$n" = 3 ]
	out=$(in_env sh -c "mkdir $S/spec2 && cd $S/spec2 && runc spec && test -f config.json && echo seen" 2>&1)
	check "runc spec through the shim in a new directory, then config.json at once ($out)" [ "$out" = seen ]
	pid=$(in_env runc state "$CTR" | sed -n 's/.*"pid": \([0-9]*\),.*/\1/p')
	check "runc state through the shim gives the init's pid ($pid)" sh -c "[ \"${pid:-0}\" -gt 0 ]"
	pid=${pid:-0}
	status=$(in_env cat "/proc/$pid/status" 2>&1)
	check "the DPU reads /proc/$pid/status of the host" sh -c "echo '$status' | grep -q '^Pid:[[:space:]]*$pid\$'"
	check "... which is the container's sh" sh -c "echo '$status' | grep -q '^Name:[[:space:]]*sh'"
	# cgroup v2 at /sys/fs/cgroup, or v1 (hybrid) where the pids
	# controller says where it is: the host's, through the mount.
	if in_env test -e /sys/fs/cgroup/cgroup.controllers; then
		cg=$(in_env cat "/proc/$pid/cgroup" 2>&1 | sed -n 's|^0::||p')
		cgdir=/sys/fs/cgroup$cg
	else
		cg=$(in_env cat "/proc/$pid/cgroup" 2>&1 | sed -n 's|^[0-9]*:pids:||p')
		cgdir=/sys/fs/cgroup/pids$cg
	fi
	check "the DPU reads its cgroup ($cgdir)" [ -n "$cg" ]
	procs=$(in_env cat "$cgdir/cgroup.procs" 2>&1)
	# shellcheck disable=SC2086,SC2046 # one line
	check "... and finds it in the host's cgroup.procs through /sys (got: $(echo $procs))" \
		sh -c "echo '$procs' | grep -qx '$pid'"

	say "4. the container's stdout reaches the DPU through the fifo"
	out=$(in_env timeout 30 sh -c 'exec <"$1"; read -r a; read -r b; read -r c; echo "$a|$b|$c|"' - "$B/rootfs/out.fifo" 2>&1)
	check "the DPU reads the container's first lines ($out)" [ "$out" = "container started|tick 0|tick 1|" ]

	say "5. the kill shim stops the container"
	in_env kill -KILL "$pid"
	check "kill through the shim succeeds" [ $? -eq 0 ]
	check "the DPU sees $pid end (its /proc/$pid gone, or a zombie)" wait_for 30 dpu_sees_ended "$pid"
	check "runc reports it stopped" \
		sh -c "timeout -k 5 120 '$CS' exec pair -- runc state $CTR | grep -q '\"status\": \"stopped\"'"
	in_env runc delete "$CTR"
	check "runc delete through the shim removes it" sh -c "! timeout -k 5 120 '$CS' exec pair -- runc state $CTR >/dev/null 2>&1"

	say "6. the forward carries a request to the host; the service writes through the mount"
	got=$(in_env python3 -c "
import socket
s = socket.socket(socket.AF_UNIX); s.settimeout(30); s.connect('/run/api.sock'); s.sendall(b'GET /version')
print(s.recv(4096).decode())" 2>&1)
	check "the request through /run/api.sock is answered by the host (got: $got)" \
		[ "$got" = "pong from the host: GET /version" ]
	beat1=$(in_env cat "$S/agent.heartbeat" 2>/dev/null)
	sleep 2.5
	beat2=$(in_env cat "$S/agent.heartbeat" 2>/dev/null)
	check "the service's heartbeat moves on the host ($beat1, then $beat2)" \
		sh -c "[ -n '$beat1' ] && [ '$beat2' -gt '$beat1' ]"
	check "status is up and live" "$CS" status pair

	say "7. down leaves nothing behind"
	timeout -k 5 300 "$CS" down pair >"$R/down.out" 2>&1
	rc=$?
	sed 's/^/    /' "$R/down.out"
	check "down succeeds (exit $rc)" [ $rc -eq 0 ]
	check "no mount is left ($(dpu_mounts))" [ "$(dpu_mounts)" -eq 0 ]
	# fuse-qtfs exits a moment after its unmount.
	wait_for 10 sh -c "[ -z \"\$(pgrep -f '[f]use-qtfs')\" ]"
	check "no fuse-qtfs, forward or service is left ($(left_procs))" [ -z "$(left_procs)" ]
	check "no state is left" [ ! -e /run/chroot-setup/pair ]
	check "no shim is left" [ ! -e /srv/offload/root/usr/local/bin/runc ]

	say "dpu-vm: done; the host checks its side"
	check "the DPU tells the host it is done (rexec touch $S/dpu-done)" \
		timeout -k 5 120 "$REXEC" -H "tcp://$HOST_IP:6001" --key-file /etc/rexec/key -n -C / \
		touch "$S/dpu-done"
}

hostname "$role-vm"
# Both the log and the console, each line marked with the guest for the
# console that scripts/vm-pair.sh follows.
case $role in
host) host_main ;;
dpu) dpu_main ;;
*) echo "FAIL: unknown role '$role'" ;;
esac 2>&1 | tee "$R/run.log" | sed -u "s/^/[$role-vm] /"
grep -E '^(ok|FAIL):' "$R/run.log" >"$R/checks.txt"
uname -r >"$R/uname"
cat /proc/sys/kernel/random/boot_id >"$R/boot_id"
dmesg >"$R/dmesg.txt"
echo finished >"$R/finished"
sync
