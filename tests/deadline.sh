#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# The harness's LOG_COMPILER: runs one test (a unit test binary or a
# script) under a deadline, so that a test that hangs fails with a line
# naming it instead of holding `make check` until CI's own limit, and
# says how long the test ran.
#
#   QT_TEST_TIMEOUT   seconds a test may run (default 1800; 0: no deadline)
#
# timeout(1) runs the test in a process group of its own and, at the
# deadline, sends TERM to the whole group: the test's cleanup trap runs
# (unmounts, daemons, network namespaces) while whatever it waited on is
# ended too.  KILL follows 60 s later.  A process blocked in the kernel on
# a FUSE request that its daemon read and never answered ends only with
# that daemon; the test's own daemons are in the group and get the TERM.
#
# The test's standard input is /dev/null (it runs in the background of
# this script).  Being in a group of its own, the test would no longer
# get the INT of a Ctrl-C at `make check`: INT, TERM, HUP and QUIT sent to
# this script are passed on to timeout(1), which passes them to the group.

limit=${QT_TEST_TIMEOUT:-1800}
case $limit in
'' | *[!0-9]*)
	echo "$0: QT_TEST_TIMEOUT=$limit is not a number of seconds" >&2
	exit 99
	;;
esac
if [ "$limit" -eq 0 ] || ! command -v timeout >/dev/null 2>&1; then
	exec "$@"
fi

start=$(date +%s)
timeout --kill-after=60 "$limit" "$@" &
pid=$!
for sig in INT TERM HUP QUIT; do
	# shellcheck disable=SC2064 # the signal's name and the pid, now
	trap "kill -$sig $pid 2>/dev/null" "$sig"
done
# wait returns early (above 128) when a trapped signal arrives: wait again
# until timeout(1) itself is gone.
while :; do
	wait "$pid"
	rc=$?
	kill -0 "$pid" 2>/dev/null || break
done
took=$(($(date +%s) - start))
case $rc in
124 | 137)
	if [ "$took" -ge "$limit" ]; then
		echo "FAIL: $1 did not end within its deadline of $limit s" \
			"(QT_TEST_TIMEOUT): ended by timeout(1)" >&2
		exit 1
	fi
	;;
esac
echo "($1: $took s)" >&2
exit "$rc"
