#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# chroot-setup up/down/status/exec against real parts on this machine: a
# qtfs-server and a rexecd on unix sockets play the host, and a profile
# builds a root with local binds, procfs, a tmpfs, a fuse-qtfs mount of a
# host directory, a rexec shim, a unix-socket forward and a service.
# Checked: files cross the mount both ways, the shim runs on the "host"
# with the profile's environment, the forward carries bytes and comes back
# after its rexec is killed, the service starts inside the root with the
# profile's environment, is restarted when killed and stopped by `down`,
# `up` twice changes nothing, status is live, `down` (twice) leaves no
# mount, helper or state, pivot_root=true enters a mount namespace of its
# own, a bad remote path or a service that cannot start makes `up` fail
# and undo everything, `down` cleans up after the fuse-qtfs helper was
# killed, and a directory on the way swapped for a symlink as fuse-qtfs or
# a forward starts sends neither its mount nor its socket through it.  The script re-runs itself in a private mount namespace.  Needs
# root and /dev/fuse (77 otherwise).

set -u

top=$(cd "${top_builddir:-.}" && pwd)
if [ "$(id -u)" -ne 0 ] || [ ! -c /dev/fuse ]; then
	echo "SKIP: needs root and /dev/fuse"
	exit 77
fi
if [ -z "${CS_TEST_IN_NS:-}" ]; then
	CS_TEST_IN_NS=$(readlink /proc/self/ns/mnt) exec unshare -m --propagation private sh "$0" "$@"
fi
# Other tests' FUSE mounts must not live on in this namespace.
sh "$(dirname "$0")/../detach-fuse.sh" "$CS_TEST_IN_NS"

CS=$top/chroot-setup/chroot-setup
T=$(mktemp -d /tmp/cs-test.XXXXXX)
chmod 755 "$T"
export CHROOT_SETUP_STATE_DIR="$T/state" FUSE_QTFS="$top/fuse-qtfs/fuse-qtfs" REXEC="$top/rexec/rexec"
PIDS=
failures=0
cleanup() {
	for m in $(grep " $T/" /proc/self/mountinfo | cut -d' ' -f5 | sort -r); do
		umount -l "$m" 2>/dev/null
	done
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	pkill -f "forward-unix.*$T" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
# ok, fail, check (and netns_pair).
. "$(dirname "$0")/../check-env.sh"
# Sanitizer reports of everything from here on, the processes inside the
# root too (it binds $T/run at the same path).
mkdir -p "$T/run"
sanitizer_to "$T/run/sanitizer"
mounts_under() { grep -c " $T/root" /proc/self/mountinfo; }

mkdir -p "$T/host" "$T/run" "$T/root"
: >"$T/empty.conf"
"$top/fuse-qtfs/qtfs-server" --config "$T/empty.conf" --listen "unix:$T/run/q.sock" \
	--export "$T/host" >"$T/qtfs.log" 2>&1 &
PIDS="$PIDS $!"
printf '[rexecd]\nallow_all=true\nforward_allow=%s/host\n' "$T" >"$T/rexecd.conf"
"$top/rexecd/rexecd" --config "$T/rexecd.conf" --listen "unix:$T/run/r.sock" >"$T/rexecd.log" 2>&1 &
PIDS="$PIDS $!"
python3 - "$T/host/echo.sock" <<'PY' &
import os, socket, sys
# Renamed into place once listening: a connect between bind and listen is refused.
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1] + ".tmp"); s.listen(4)
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    c, _ = s.accept()
    while True:
        d = c.recv(65536)
        if not d:
            break
        c.sendall(d)
    c.close()
PY
PIDS="$PIDS $!"
for _ in $(seq 100); do
	[ -S "$T/run/q.sock" ] && [ -S "$T/run/r.sock" ] && [ -S "$T/host/echo.sock" ] && break
	sleep 0.05
done

lib64=
[ -d /lib64 ] && lib64="[bind:/lib64]"
cat >"$T/p.conf" <<EOF2
[profile]
name=cstest
root=$T/root
qtfs_server=unix:$T/run/q.sock
rexec_host=unix:$T/run/r.sock
rexec_binary=$top/rexec/rexec
env=PATH=/shims:/usr/bin:/bin;CS_MARK=from-the-profile

[bind:/usr]
ro=true
[bind:/lib]
$lib64
[bind:/bin]
[bind:$T/run]
[bind:$top]
[mount:/proc]
type=proc
[mount:/scratch]
type=tmpfs
options=size=1m
[qtfs:/data]
remote=$T/host
[shim:printenv]
dir=/shims
[shim:pinned-echo]
dir=/shims
host=/bin/echo
[forward:/sock/echo.sock]
remote=$T/host/echo.sock
[mount:/run/svc]
type=tmpfs
[service:ticker]
exec=/bin/sh -c 'echo "\$CS_MARK" >/run/svc/ready; exec sleep 1000'
ready=/run/svc/ready
restart=always
stop_timeout=2
[service:stubborn]
exec=/bin/sh -c 'trap "" TERM; while :; do sleep 0.1; done'
stop_timeout=1
EOF2

check "check accepts the profile" "$CS" check "$T/p.conf"
"$CS" up "$T/p.conf" >"$T/up.out" 2>&1
rc=$?
check "up succeeds (exit $rc: $(tail -n 3 "$T/up.out" | tr '\n' ' '))" [ $rc -eq 0 ]
check "the fuse-qtfs mount is there" grep -q " $T/root/data .* fuse.fuse-qtfs " /proc/self/mountinfo
echo "from the host" >"$T/host/h.txt"
check "a host file is seen in the root" [ "$(cat "$T/root/data/h.txt" 2>/dev/null)" = "from the host" ]
echo "from the dpu" >"$T/root/data/d.txt"
check "a file written in the root reaches the host" [ "$(cat "$T/host/d.txt" 2>/dev/null)" = "from the dpu" ]
out=$("$CS" up "$T/p.conf" 2>&1)
check "up again changes nothing ($out)" sh -c "echo '$out' | grep -q 'already up'"
out=$("$CS" exec "$T/p.conf" -- printenv CS_MARK 2>&1)
check "the printenv shim runs on the host with the profile's environment (got: $out)" \
	[ "$out" = from-the-profile ]
check "... rexecd ran it ($(grep -c printenv "$T/rexecd.log") log lines)" grep -q 'argv0="printenv"' "$T/rexecd.log"
check "the shim is a symlink to rexec" [ "$(readlink "$T/root/shims/printenv")" = "$top/rexec/rexec" ]
# host= pins the host binary: no pinned-echo exists on the host, /bin/echo runs.
out=$("$CS" exec "$T/p.conf" -- pinned-echo pinned 2>&1)
check "a shim with host=/bin/echo runs /bin/echo on the host (got: $out)" [ "$out" = pinned ]
out=$(REXEC_SHIMS="other=/bin/false" "$CS" exec "$T/p.conf" -- pinned-echo still 2>&1)
check "... also with REXEC_SHIMS set for another shim (got: $out)" [ "$out" = still ]
echo_via() {
	python3 -c "
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b'ping through the forward')
s.shutdown(socket.SHUT_WR); print(s.recv(100).decode())" "$1" 2>&1
}
got=$(echo_via "$T/root/sock/echo.sock")
check "the forward carries bytes to the host socket (got: $got)" [ "$got" = "ping through the forward" ]
pkill -KILL -f "[f]orward-unix.*$T"
for _ in $(seq 50); do
	sleep 0.1
	got=$(echo_via "$T/root/sock/echo.sock")
	[ "$got" = "ping through the forward" ] && break
done
check "the forward comes back after its rexec was killed (got: $got)" [ "$got" = "ping through the forward" ]

# The service: started in the root with the profile's variables, restarted when killed.
svc_status() { cat "$T/state/cstest/service-ticker.status" 2>/dev/null; }
check "the service ran in the root with the profile's environment" \
	[ "$(cat "$T/root/run/svc/ready" 2>/dev/null)" = from-the-profile ]
pid1=$(svc_status | awk '$1 == "running" { print $2 }')
check "the service is running (status: $(svc_status))" [ -n "$pid1" ]
check "... chrooted into the root" [ "$(readlink "/proc/$pid1/root")" = "$T/root" ]
kill -KILL "$pid1" 2>/dev/null
for _ in $(seq 50); do
	sleep 0.1
	[ "$(svc_status | awk '{ print $1, ($3 >= 2) }')" = "running 1" ] && break
done
check "a killed service is restarted (status: $(svc_status))" \
	awk '$1 == "running" && $3 == 2 { ok = 1 } END { exit !ok }' "$T/state/cstest/service-ticker.status"
pid2=$(svc_status | awk '{ print $2 }')
check "status shows the service's state" sh -c "'$CS' status '$T/p.conf' | grep -q 'service ticker .*running pid $pid2, 2 starts'"
check "exec runs inside the root with a read-only /usr" \
	sh -c "! '$CS' exec '$T/p.conf' -- sh -c 'touch /usr/cs-test' 2>/dev/null"
check "status says up and every step live" "$CS" status "$T/p.conf"
check "status --json says up" sh -c "'$CS' status --json '$T/p.conf' | grep -q '\"state\":\"up\"'"

stubborn=$(awk '$1 == "running" { print $2 }' "$T/state/cstest/service-stubborn.status" 2>/dev/null)
"$CS" down "$T/p.conf" >"$T/down.out" 2>&1
check "down succeeds" [ $? -eq 0 ]
check "down leaves no mount under the root ($(mounts_under))" [ "$(mounts_under)" -eq 0 ]
check "down stops the forward helper" sh -c "! pgrep -f '[f]orward-unix.*$T' >/dev/null"
check "down stops the service ($pid2)" sh -c "! kill -0 $pid2 2>/dev/null"
check "down kills the service that ignores SIGTERM after its stop_timeout ($stubborn)" \
	sh -c "[ -n '$stubborn' ] && ! kill -0 '$stubborn' 2>/dev/null"
check "down removes the shim" [ ! -e "$T/root/shims/printenv" ]
check "down removes the state" [ ! -e "$T/state/cstest" ]
check "down removes the directories up made: the root is empty again ($(ls -A "$T/root" | tr '\n' ' '))" \
	[ -z "$(ls -A "$T/root")" ]
check "down twice is fine" "$CS" down "$T/p.conf"
check "status after down fails" sh -c "! '$CS' status '$T/p.conf' >/dev/null"

# pivot_root=true: exec enters a mount namespace of its own, where the root is /.
sed 's|^name=cstest$|name=cspivot\npivot_root=true|' "$T/p.conf" >"$T/pivot.conf"
"$CS" up "$T/pivot.conf" >"$T/pivot.out" 2>&1
check "up with pivot_root (exit $?)" [ $? -eq 0 ]
ns_here=$(readlink /proc/self/ns/mnt)
ns_there=$("$CS" exec "$T/pivot.conf" -- sh -c 'readlink /proc/self/ns/mnt' 2>&1)
check "exec with pivot_root runs in another mount namespace ($ns_there vs $ns_here)" \
	sh -c "[ -n '$ns_there' ] && [ '$ns_there' != '$ns_here' ]"
check "... and the fuse-qtfs mount works" [ "$("$CS" exec "$T/pivot.conf" -- cat /data/h.txt 2>&1)" = "from the host" ]
svc=$(cat "$T/state/cspivot/service-ticker.status" 2>/dev/null | awk '{ print $2 }')
check "the service runs with pivot_root too" sh -c "[ -n '$svc' ] && [ \"\$(readlink /proc/$svc/ns/mnt)\" != '$ns_here' ]"
"$CS" down "$T/pivot.conf" >/dev/null 2>&1
check "down with pivot_root leaves no mount ($(mounts_under))" [ "$(mounts_under)" -eq 0 ]

# A service that cannot start: up fails and undoes everything.
printf '[service:broken]\nexec=/no/such/program\n' | cat "$T/p.conf" - >"$T/broken.conf"
"$CS" up "$T/broken.conf" >"$T/broken.out" 2>&1
rc=$?
check "up with a service that cannot start fails (exit $rc)" [ $rc -ne 0 ]
check "... naming it" grep -q '\[service:broken\].*No such file' "$T/broken.out"
check "... and leaves nothing mounted ($(mounts_under)) or running" \
	sh -c "[ $(mounts_under) -eq 0 ] && ! pgrep -f '[f]orward-unix.*$T' >/dev/null"
check "... and no state" [ ! -e "$T/state/cstest" ]
check "... and the root as it found it ($(ls -A "$T/root" | tr '\n' ' '))" [ -z "$(ls -A "$T/root")" ]

# A supervisor that cannot write its status file: up says so (not "did not
# appear"), with the supervisor's log naming the cause, and undoes it all.
printf '[service:mute]\nexec=/bin/sleep 1000\nready_timeout=2\n' | cat "$T/p.conf" - >"$T/mute.conf"
mkdir -p "$T/state/cstest/service-mute.status"
"$CS" up "$T/mute.conf" >"$T/mute.out" 2>&1
rc=$?
check "up with a status file it cannot write fails (exit $rc)" [ $rc -ne 0 ]
check "... saying the supervisor gave no status" \
	grep -q '\[service:mute\]: no status from its supervisor' "$T/mute.out"
check "... and why, from its log" \
	grep -q 'cannot write the status file.*Is a directory' "$T/mute.out"
check "... and leaves nothing mounted ($(mounts_under)) or running" \
	sh -c "[ $(mounts_under) -eq 0 ] && ! pgrep -f '[s]leep 1000\$' >/dev/null"
rm -rf "$T/state/cstest"

# A bad remote path: up fails on that step and undoes the ones before it.
sed "s|^remote=$T/host\$|remote=$T/no-such-export|" "$T/p.conf" >"$T/bad.conf"
"$CS" up "$T/bad.conf" >"$T/bad.out" 2>&1
rc=$?
check "up with a bad remote path fails (exit $rc)" [ $rc -ne 0 ]
check "... naming the step" grep -q '\[qtfs:/data\]' "$T/bad.out"
check "... and leaves nothing mounted ($(mounts_under))" [ "$(mounts_under)" -eq 0 ]
check "... and no state" [ ! -e "$T/state/cstest" ]

# The fuse-qtfs helper dies; down still cleans up.
"$CS" up "$T/p.conf" >/dev/null 2>&1
# (chroot-setup hands it the directory it checked, as /proc/self/fd/3.)
pkill -KILL -f "fuse-qtfs .*:$T/host /proc/self/fd/3\$"
sleep 0.2
check "status notices the dead mount" sh -c "! '$CS' status '$T/p.conf' >/dev/null 2>&1 || ! ls '$T/root/data' >/dev/null 2>&1"
"$CS" down "$T/p.conf" >"$T/down2.out" 2>&1
check "down after a killed helper succeeds" [ $? -eq 0 ]
check "... and leaves no mount ($(mounts_under))" [ "$(mounts_under)" -eq 0 ]

# A directory on the way to a fuse-qtfs mount or a forward's socket moved
# (here: swapped for a symlink out of the root, as a host can do inside a
# tree it exports) after up checked it and before the helper used it: the
# mount and the socket go on the directory checked, never through the
# symlink, and up fails and undoes them.  The helper's stand-in makes the
# swap (once), then runs the real one.
mkdir -p "$T/outside/data"
cat >"$T/swap-then" <<'SH'
#!/bin/sh
[ -L "$SWAP_DIR" ] || { mv "$SWAP_DIR" "$SWAP_DIR.old" && ln -s "$SWAP_TO" "$SWAP_DIR"; } || exit 99
exec "$REAL" "$@"
SH
chmod 755 "$T/swap-then"
outside_or() { grep -c " $T/\(outside\|$1\)[/ ]" /proc/self/mountinfo; }
# swap_up NAME VAR DIR STEP...: up of profile NAME (root $T/NAME, STEP's
# lines after the header) with the helper $VAR behind swap-then, which
# swaps $T/NAME/DIR; its output in $T/NAME.out, its status in rc.
swap_up() {
	_n=$1 _v=$2 _d=$3
	shift 3
	{
		printf '[profile]\nname=%s\nroot=%s/%s\n' "$_n" "$T" "$_n"
		printf 'qtfs_server=unix:%s/run/q.sock\nrexec_host=unix:%s/run/r.sock\n' "$T" "$T"
		printf '%s\n' "$@"
	} >"$T/$_n.conf"
	env REAL="$(printenv "$_v")" SWAP_DIR="$T/$_n/$_d" SWAP_TO="$T/outside" "$_v=$T/swap-then" \
		"$CS" up "$T/$_n.conf" >"$T/$_n.out" 2>&1
	rc=$?
}
swap_up rq FUSE_QTFS x '[qtfs:/x/data]' "remote=$T/host"
check "up whose mount point moved as fuse-qtfs started fails (exit $rc: $(grep -F '[qtfs:' "$T/rq.out"))" \
	sh -c "[ $rc -ne 0 ] && grep -qF '[qtfs:/x/data]: $T/rq/x/data changed while fuse-qtfs mounted there: the directory checked is $T/rq/x.old/data now; unmounted it' '$T/rq.out'"
check "... mounted nothing through the symlink, and took its mount back ($(outside_or rq))" \
	[ "$(outside_or rq)" -eq 0 ]
check "... and keeps no state" [ ! -e "$T/state/rq" ]
swap_up rf REXEC s '[forward:/s/echo.sock]' "remote=$T/host/echo.sock"
check "up whose socket's directory moved as the forward started fails (exit $rc: $(grep -F '[forward:' "$T/rf.out"))" \
	sh -c "[ $rc -ne 0 ] && grep -qF '[forward:/s/echo.sock]: $T/rf/s/echo.sock did not appear' '$T/rf.out'"
check "... made no socket through the symlink, and its own is gone ($(ls "$T/outside" "$T/rf/s.old" | tr '\n' ' '))" \
	sh -c "[ ! -e '$T/outside/echo.sock' ] && [ ! -e '$T/rf/s.old/echo.sock' ] && ! pgrep -f '[f]orward-unix.*$T/host/echo.sock' >/dev/null"
check "... and keeps no state" [ ! -e "$T/state/rf" ]

# The daemons end before their reports are read (see sanitizer_found).
stop_daemons "(fuse-qtfs|rexec).*[ :]$T/" $PIDS
PIDS=
sanitizer_found "$T/run/sanitizer" && failures=$((failures + 1))

if [ $failures -ne 0 ]; then
	echo "$failures check(s) failed" >&2
	exit 1
fi
echo "ok: chroot-setup up/down/status/exec"
