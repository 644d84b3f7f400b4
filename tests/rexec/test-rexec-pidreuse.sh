#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Signals to a command's process group after the command itself exited.
# rexecd signals the group by number (kill(-pid)), and the number is the
# command's pid.  Here the command exits at once and leaves behind a
# process of another session that keeps the output going (so the session
# drains and the client may still send signals); its own group is then
# empty.  If rexecd reaped the command at that point, the number would be
# free: this test hands it to a stranger (ns_last_pid, in a pid namespace
# of its own so that nothing else takes it first), a `setsid sleep` that
# leads a group of that number, and a signal forwarded by the client must
# not reach it.  A group with members left must still get the signals.

if [ -z "${REXEC_TEST_PIDNS:-}" ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "SKIP: needs root (pid namespace, ns_last_pid)"
		exit 77
	fi
	exec env REXEC_TEST_PIDNS="$(readlink /proc/self/ns/mnt)" unshare --pid --fork --mount-proc "$0" "$@"
fi
# --mount-proc made a private mount namespace: other tests' FUSE mounts
# must not live on in it.
sh "$(dirname "$0")/../detach-fuse.sh" "$REXEC_TEST_PIDNS"

. "${top_srcdir:-.}/tests/rexec/rexec-env.sh"

start_rexecd h || exit 1

# state PID: the state letter of PID (Z: zombie), empty if it is gone.
state() {
	sed -n 's/^.*) \(.\).*/\1/p' "/proc/$1/stat" 2>/dev/null
}
running() {
	_s=$(state "$1")
	[ -n "$_s" ] && [ "$_s" != Z ]
}
exited() {
	_s=$(state "$1")
	[ -z "$_s" ] || [ "$_s" = Z ]
}

# -- a stranger that gets the number must not get the signal ---------------------------
# The writer runs in a session of its own (setsid), so it is not in the
# command's group, and forks nothing (a process started in between could
# take the number first); ${MARK}a is for cleanup.  The command waits
# until the writer runs (it makes the file its first argument names): the
# output must not pause for rexecd's drain time (200 ms) once the command
# has exited, or the session ends (a python3 starting under CPU emulation
# took longer than that).
writer_py='import sys, time
open(sys.argv[1], "w").close()
while True:
    print("x", flush=True)
    time.sleep(0.05)'
bg rx h sh -c "echo \$\$; setsid /usr/bin/python3 -c '$writer_py' '$T/writer.up' ${MARK}a &
	until [ -e '$T/writer.up' ]; do sleep 0.02; done; exit 0" >"$T/out1"
c=$BG_PID
check "the command started and printed its pid" wait_until 5 sh -c "[ -s '$T/out1' ]"
N=$(head -n 1 "$T/out1")
check "the command (pid $N) exited while its output goes on" wait_until 5 exited "$N"
sleep 0.3
# The next pid this namespace hands out is N, unless N is still taken.
echo $((N - 1)) >/proc/sys/kernel/ns_last_pid
setsid sleep "${MARK}7" &
stranger=$!
BG_PIDS="$BG_PIDS $stranger"
check "a stranger runs (pid $stranger; the command's was $N)" wait_until 2 running "$stranger"
kill -USR1 "$c"
kill -TERM "$c"
sleep 0.5
check "USR1 and TERM forwarded after the command exited do not reach the stranger (pid $stranger, command $N)" \
	running "$stranger"
check "... and rexec keeps running while the output goes on" running "$c"
writer=$(pgrep -f "^/usr/bin/python3 -c .* ${MARK}a\$")
check "the writer is found ($writer)" [ -n "$writer" ]
kill "$writer" 2>/dev/null
if wait_gone "$c" 5; then
	check "once the writer is gone rexec ends with the command's status (exit $BG_RC)" [ "$BG_RC" -eq 0 ]
else
	fail "rexec still runs 5 s after the writer ended"
fi
kill "$stranger" 2>/dev/null

# -- a group with members left still gets the signals -----------------------------------
# The writer is in the command's group this time: the forwarded TERM ends
# it, the output ends, and rexec ends with the command's status.
bg rx h sh -c "echo \$\$; sh -c 'while :; do echo y; sleep 0.05; done; : ${MARK}c' & exit 0" >"$T/out2"
c=$BG_PID
check "the second command started" wait_until 5 sh -c "[ -s '$T/out2' ]"
N=$(head -n 1 "$T/out2")
check "... and exited (pid $N)" wait_until 5 exited "$N"
kill -TERM "$c"
if wait_gone "$c" 5; then
	check "TERM after the command exited reaches the rest of its group; rexec exits 0 (got $BG_RC)" [ "$BG_RC" -eq 0 ]
else
	fail "rexec still runs 5 s after TERM: the rest of the group did not get it"
fi
check "... and the group's writer is gone" wait_until 2 sh -c "! pgrep -f '^sh -c while :; do echo y; sleep 0.05; done; : ${MARK}c\$' >/dev/null"

# -- the client goes away after the command exited: the rest of its group ends -----------
bg rx h sh -c "echo \$\$; sh -c 'while :; do echo z; sleep 0.05; done; : ${MARK}d' & exit 0" >"$T/out3"
c=$BG_PID
check "the third command started" wait_until 5 sh -c "[ -s '$T/out3' ]"
N=$(head -n 1 "$T/out3")
check "... and exited (pid $N)" wait_until 5 exited "$N"
kill -KILL "$c"
check "rexec killed: the rest of the group ends within 1 s" \
	wait_until 1 sh -c "! pgrep -f '^sh -c while :; do echo z; sleep 0.05; done; : ${MARK}d\$' >/dev/null"
HPID=$(rexecd_pid h)
check "no zombie left under rexecd" wait_until 3 sh -c "[ \$(ps --ppid $HPID -o stat= | grep -c '^Z') -eq 0 ]"
check "rexecd is still up" rexecd_alive h
finish
