# SPDX-License-Identifier: Apache-2.0
#
# Sourced by the shell tests: what they report with, and the two "hosts"
# of the network tests.
#
# cleanup_more: see below.
# ok DESC / fail DESC: print one result line ("ok: ..." on stdout, "FAIL:
#   ..." on stderr); fail counts in $failures, which the test's exit status
#   comes from.
# check DESC CMD...: run CMD; ok or fail.
# netns_pair HOST-NS DPU-NS HOST-IF DPU-IF HOST-ADDR DPU-ADDR: two network
#   namespaces joined by a veth pair, addresses (with their /prefix) and
#   every link up, loopback included.  The caller deletes the namespaces
#   (which deletes the pair).  Non-zero if any step fails.
# sanitizer_to DIR: a sanitizer build's reports (a daemon's leaks at its
#   exit, say) go to files in DIR from now on, named report.PROGRAM.PID,
#   for every process started after, even those that outlive the test's
#   own checks.  (For whole allocation stacks through GLib, which has no
#   frame pointers, run with ASAN_OPTIONS=fast_unwind_on_malloc=0; slow.)
# sanitizer_found DIR: print the reports in DIR; true if there are any
#   (for the test's cleanup, once its daemons are gone: a KILL during the
#   leak check at exit loses the report; see wait_gone).
# is_mounted PATH: something is mounted on PATH (read from the mount table,
#   not stat: mountpoint(1) fails on a FUSE mount whose daemon is gone, and
#   waits out the request deadline on one whose server is).
# wait_gone TENTHS PID [MOUNTPOINT]: see below.
# vsock_loopback: true if this machine can make a vsock connection to
#   itself (to CID 1, VMADDR_CID_LOCAL: the vsock_loopback module, loaded
#   here if it is there to load).  Without it no vsock test can run.
# stop_daemons PATTERN PID...: SIGTERM each PID, wait up to 10 s each for
#   them and for every process whose command line matches PATTERN (pgrep
#   -f) to end, and KILL what is left: for the reports (sanitizer_found).

failures=${failures:-0}

# cleanup_more: a test's own teardown (its network namespaces), which the
# cleanup traps of qtfs-env.sh and rexec-env.sh run once the test's
# daemons are gone, before they exit.  A test redefines it.
cleanup_more() {
	:
}

ok() {
	echo "ok: $*"
}

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

check() {
	_desc=$1
	shift
	if "$@"; then
		ok "$_desc"
	else
		fail "$_desc"
	fi
}

vsock_loopback() {
	modprobe -q vsock_loopback 2>/dev/null
	python3 - <<'PY' 2>/dev/null
import socket
l = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
l.bind((socket.VMADDR_CID_ANY, socket.VMADDR_PORT_ANY))
l.listen(1)
c = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
c.settimeout(5)
c.connect((1, l.getsockname()[1]))
PY
}

netns_pair() {
	ip netns add "$1" && ip netns add "$2" &&
		ip link add "$3" type veth peer name "$4" &&
		ip link set "$3" netns "$1" && ip link set "$4" netns "$2" &&
		ip -n "$1" addr add "$5" dev "$3" && ip -n "$2" addr add "$6" dev "$4" &&
		ip -n "$1" link set lo up && ip -n "$2" link set lo up &&
		ip -n "$1" link set "$3" up && ip -n "$2" link set "$4" up
}

sanitizer_to() {
	mkdir -p "$1"
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$1/report:log_exe_name=1"
	UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$1/report:log_exe_name=1"
	export ASAN_OPTIONS UBSAN_OPTIONS
}

sanitizer_found() {
	[ -n "$(ls "$1" 2>/dev/null)" ] || return 1
	echo "FAIL: sanitizer reports:"
	for f in "$1"/*; do
		echo "== ${f##*/} (report.PROGRAM.PID)"
		cat "$f"
	done
}

# wait_gone TENTHS PID [MOUNTPOINT]: wait up to TENTHS tenths of a second
# for PID to end (a zombie counts: its parent may be long gone, and this
# sandbox's pid 1 reaps nobody) and for MOUNTPOINT, if given, to be
# unmounted.  $gone_state is PID's last ps state ("" once reaped).  0 if
# both happened.
is_mounted() {
	awk -v m="$1" '$2 == m { found = 1 } END { exit !found }' /proc/self/mounts
}

wait_gone() {
	_i=0
	while :; do
		gone_state=$(ps -o stat= -p "$2" 2>/dev/null)
		if [ -z "${3:-}" ] || ! is_mounted "$3"; then
			case "$gone_state" in "" | Z*) return 0 ;; esac
		fi
		[ $_i -ge "$1" ] && return 1
		sleep 0.1
		_i=$((_i + 1))
	done
}

# wait_until SECONDS CMD...: poll CMD every 50 ms until it succeeds; 1 on timeout.
wait_until() {
	_wu_n=$(($1 * 20))
	shift
	while [ "$_wu_n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.05
		_wu_n=$((_wu_n - 1))
	done
	"$@"
}

stop_daemons() {
	_pat=$1
	shift
	for _p in "$@"; do
		kill "$_p" 2>/dev/null
	done
	for _p in "$@" $(pgrep -f "$_pat" 2>/dev/null); do
		wait_gone 100 "$_p" || kill -9 "$_p" 2>/dev/null
	done
}
