# SPDX-License-Identifier: Apache-2.0
#
# Sourced by the shell tests: what they report with, and the two "hosts"
# of the network tests.
#
# ok DESC / fail DESC: print one result line ("ok: ..." on stdout, "FAIL:
#   ..." on stderr); fail counts in $failures, which the test's exit status
#   comes from.
# check DESC CMD...: run CMD; ok or fail.
# netns_pair HOST-NS DPU-NS HOST-IF DPU-IF HOST-ADDR DPU-ADDR: two network
#   namespaces joined by a veth pair, addresses (with their /prefix) and
#   every link up, loopback included.  The caller deletes the namespaces
#   (which deletes the pair).  Non-zero if any step fails.
# sanitizer_to DIR: a sanitizer build's reports (a daemon's leaks at its
#   exit, say) go to files in DIR from now on, for every process started
#   after, even those that outlive the test's own checks.
# sanitizer_found DIR: print the reports in DIR; true if there are any
#   (for the test's cleanup, once its daemons are gone).

failures=${failures:-0}

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
