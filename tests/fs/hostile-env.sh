# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=sh
#
# Sourced after qtfs-env.sh by the tests that put qtfs-mitm between a
# fuse-qtfs mount and a real qtfs-server (test-qtfs-hostile.sh mangles
# replies, test-qtfs-hostile-client.sh requests): starting and stopping
# the proxy, and running hostile-workload.py with the checks of its output.

MITM=${top_builddir:-.}/tests/fs/qtfs-mitm

# start_mitm LOG ARGS...: qtfs-mitm with --key-file $KEY and ARGS in the
# background, its messages in LOG; $mitm is its pid.  A check that it
# listens; its listening line is printed (it says what it mangles).
start_mitm() {
	_mitm_log=$1
	shift
	"$MITM" --key-file "$KEY" "$@" 2>"$_mitm_log" &
	mitm=$!
	QTFS_PIDS="$QTFS_PIDS $mitm"
	check "qtfs-mitm listens" wait_until 5 grep -q "listening on" "$_mitm_log"
	grep "listening on" "$_mitm_log"
}

# stop_mitm LOG: end qtfs-mitm and print its last line (how many messages
# went through, how many were mangled).
stop_mitm() {
	kill "$mitm"
	wait "$mitm"
	tail -n 1 "$1"
}

# mangling_stopped LOG WHAT: stop qtfs-mitm's mangling (SIGUSR1) and check
# that it had mangled some WHAT ("replies", "requests").
mangling_stopped() {
	kill -USR1 "$mitm"
	wait_until 5 grep -q "stopped after" "$1"
	check "qtfs-mitm mangled $2 ($(grep -o 'after [0-9]* of [0-9]*' "$1" | tail -n 1))" \
		sh -c "grep 'stopped after' '$1' | grep -qv 'after 0 of'"
}

# run_workload MOUNT WHAT: hostile-workload.py's 3000 calls on MOUNT, each
# bounded by an alarm well past the deadline (3 s; a call that lost its
# connection is retried on another, so twice that and a margin), and all
# of them by a SIGKILL (a FUSE request the daemon never answers outlasts
# any other signal); its output in $T/work.out.  Then the checks of that
# output (WHAT says through what the calls went) and of the client's log,
# $T/client.log.
run_workload() {
	timeout -s KILL 300 python3 "${top_srcdir:-.}/tests/fs/hostile-workload.py" "$1" "$mitm" \
		>"$T/work.out" 2>&1
	cat "$T/work.out"
	check "3000 calls through $2 all ended" grep -q "^calls: 3000 " "$T/work.out"
	check "... none past its deadline" grep -q "^hung: 0" "$T/work.out"
	check "... none with an errno of the kernel's own (512 and up)" \
		grep -q "^kernel-internal errnos: 0" "$T/work.out"
	check "... and the kernel took every reply the client wrote" sh -c "! grep 'writing device' '$T/client.log'"
	check "... no copy_file_range() said it copied more than asked" \
		grep -q "^overcounted copies: 0 " "$T/work.out"
}
