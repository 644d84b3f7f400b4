#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Signals and process lifetimes.  INT, TERM, HUP, QUIT, USR1 and USR2 sent
# to rexec reach the remote command; a remote sleep dies with rexec's
# SIGTERM and rexec reports 143.  A command killed by a signal kills rexec
# by the same signal, as its parent would see of a local child (a bash
# loop over rexec ends on ^C).  Once the command has ended and rexec is
# stuck writing its last output, SIGTERM or SIGINT ends rexec at once
# (and restores a raw terminal), and so does SIGTERM while the command
# still runs, its output stuck.  When rexec itself is SIGKILLed, rexecd
# SIGTERMs the remote process group and SIGKILLs it kill_grace later: a
# group that ignores TERM lives through the grace period and no longer, one
# that does not ignore it dies at once.  Stopping rexecd ends what it runs.
# 1000 sequential execs leave no zombie and no descriptor behind in rexecd,
# and 200 concurrent ones all succeed.
#
# Remote commands carry $MARK in an argument (sleep ${MARK}N is a valid
# duration), so pgrep -f finds exactly the processes of this run.

. "${top_srcdir:-.}/tests/rexec/rexec-env.sh"

start_rexecd h kill_grace=2s || exit 1
HPID=$(rexecd_pid h)

# count_sleeps N: remote sleeps of this run with suffix N.
count_sleeps() {
	pgrep -c -f "^sleep ${MARK}$1\$"
}
sleeps_are() {
	[ "$(count_sleeps "$1")" -eq "$2" ]
}

# rexecd was started from this script in the background, so it inherited
# SIGINT and SIGQUIT ignored; the commands it runs must not.
# Only the classic signals 1-31: glibc keeps 32 and 33 for itself, and
# sigaction() cannot reset them if an ancestor left them ignored.
rx h sh -c 'grep -E "^Sig(Ign|Blk):" /proc/self/status' >"$T/sigmasks"
sigbad=0
while read -r _ mask; do
	low=$(echo "$mask" | cut -c9-16)
	[ $((0x$low & 0x7fffffff)) -eq 0 ] || sigbad=1
done <"$T/sigmasks"
check "the remote command starts with no signal ignored or blocked ($(tr '\n\t' '  ' <"$T/sigmasks"))" \
	sh -c "[ $sigbad -eq 0 ] && [ -s '$T/sigmasks' ]"

# -- SIGTERM to rexec ------------------------------------------------------------
bg rx h sleep "${MARK}1"
c=$BG_PID
check "remote sleep started" wait_until 5 sleeps_are 1 1
kill -TERM "$c"
if wait_gone "$c" 5; then
	check "rexec exits 143 after SIGTERM (got $BG_RC)" [ "$BG_RC" -eq 143 ]
else
	fail "rexec still running 5 s after SIGTERM"
fi
check "... and the remote sleep is gone" wait_until 2 sleeps_are 1 0

# -- after the command ended: rexec still writes its output, and a signal ends it ---------------
# 1 MiB of output (within the credit, so the command ends and its EXIT
# comes) into a fifo whose reader never reads: rexec's last write blocks
# after the command has ended.  SIGTERM, then SIGINT, must end rexec
# within a second, with 143 and 130, as they would a local writer.
mkfifo "$T/fifo"
for sig in TERM INT; do
	(exec sleep "${MARK}8") <"$T/fifo" &
	BG_PIDS="$BG_PIDS $!"
	holder=$!
	bg rx h sh -c "head -c 1048576 /dev/zero; echo done-$sig >&2" >"$T/fifo" 2>"$T/tail.$sig"
	c=$BG_PID
	check "$sig: the command ended while rexec's output is stuck" \
		wait_until 5 grep -q "done-$sig" "$T/tail.$sig"
	sleep 0.5
	check "... rexec still runs (its last write waits for the reader)" kill -0 "$c"
	kill -"$sig" "$c"
	if wait_gone "$c" 1; then
		want=143
		[ "$sig" = INT ] && want=130
		check "... and $sig ends it within 1 s with $want (got $BG_RC)" [ "$BG_RC" -eq "$want" ]
	else
		fail "$sig to rexec blocked on its last write: still running 1 s later"
		kill -9 "$c"
	fi
	kill "$holder" 2>/dev/null
done

# -- while the command runs, with rexec's output stuck -----------------------------------------------
# The command writes without end into a fifo whose reader never reads:
# rexec's write blocks, it stops giving credit, and the command blocks in
# turn.  SIGTERM is forwarded and kills the command, but its EXIT would
# come only after output that can never be written: rexec must end at
# once with 143 instead of waiting for it.
(exec sleep "${MARK}8") <"$T/fifo" &
BG_PIDS="$BG_PIDS $!"
holder=$!
bg rx h cat /dev/zero >"$T/fifo"
c=$BG_PID
sleep 1.5
check "a command writing to a reader that does not read: rexec runs" kill -0 "$c"
kill -TERM "$c"
if wait_gone "$c" 2; then
	check "... and SIGTERM ends it within 2 s with 143 (got $BG_RC)" [ "$BG_RC" -eq 143 ]
else
	fail "SIGTERM to rexec whose output is stuck while the command runs: still running 2 s later"
	kill -9 "$c"
fi
kill "$holder" 2>/dev/null

# The same with -t from a terminal: the terminal rexec made raw is
# restored when the signal ends it.  A helper gives rexec a pty as stdin,
# waits for the command's audit line, sends SIGTERM, and prints rexec's
# status and whether the pty is back in canonical mode.
tail_pty='import os, pty, signal, sys, termios, time
log, fifo, before = sys.argv[1], sys.argv[2], int(sys.argv[3])
m, s = pty.openpty()
out = os.open(fifo, os.O_WRONLY)
pid = os.fork()
if pid == 0:
    os.dup2(s, 0); os.dup2(out, 1)
    os.execvp(sys.argv[4], sys.argv[4:])
os.close(out)
deadline = time.time() + 10
while time.time() < deadline and open(log).read().count("status=") <= before:
    time.sleep(0.05)
time.sleep(0.5)
raw = not (termios.tcgetattr(s)[3] & termios.ICANON)
os.kill(pid, signal.SIGTERM)
deadline = time.time() + 1
while time.time() < deadline:
    p, st = os.waitpid(pid, os.WNOHANG)
    if p:
        canon = bool(termios.tcgetattr(s)[3] & termios.ICANON)
        print("exit", os.waitstatus_to_exitcode(st), "raw-before", raw, "canon-after", canon)
        sys.exit(0)
    time.sleep(0.02)
print("still running")
os.kill(pid, signal.SIGKILL)
os.waitpid(pid, 0)'
(exec sleep "${MARK}8") <"$T/fifo" &
BG_PIDS="$BG_PIDS $!"
holder=$!
python3 -c "$tail_pty" "$T/h.log" "$T/fifo" "$(grep -c 'status=' "$T/h.log")" \
	"$REXEC" --config "$CLIENT_CONF" -H "unix:$T/h.sock" --key-file "$KEY" -t \
	head -c 1048576 /dev/zero >"$T/tailpty" 2>&1
check "-t: SIGTERM kills rexec stuck on its last write, terminal restored ($(cat "$T/tailpty"))" \
	grep -qx "exit -15 raw-before True canon-after True" "$T/tailpty"
kill "$holder" 2>/dev/null

# -- each forwarded signal reaches a trapping remote shell -------------------------------
for sig in INT TERM HUP QUIT USR1 USR2; do
	bg rx h sh -c "trap 'echo got $sig; exit 7' $sig; echo ready; while :; do sleep 0.05; done" \
		>"$T/sig.$sig" 2>&1
	c=$BG_PID
	if ! wait_until 5 grep -q ready "$T/sig.$sig"; then
		fail "$sig: remote shell did not start: $(cat "$T/sig.$sig")"
		kill -9 "$c"
		continue
	fi
	kill -"$sig" "$c"
	if wait_gone "$c" 5; then
		check "$sig reaches the remote trap (exit $BG_RC, output: $(tr '\n' ' ' <"$T/sig.$sig"))" \
			sh -c "[ $BG_RC -eq 7 ] && grep -qx 'got $sig' '$T/sig.$sig'"
	else
		fail "$sig: rexec did not end"
		kill -9 "$c"
	fi
done

# A signal rexec was started ignoring (a script's background job ignores
# INT and QUIT) stays ignored, as it would for a local command.
$CLIENT_WRAP "$REXEC" --config "$CLIENT_CONF" -H "unix:$T/h.sock" --key-file "$KEY" \
	sh -c "echo ready; sleep 3" >"$T/ign" 2>&1 &
c=$!
BG_PIDS="$BG_PIDS $c"
if wait_until 5 grep -q ready "$T/ign"; then
	kill -INT "$c"
	sleep 0.5
	check "an INT that rexec was started ignoring stays ignored" kill -0 "$c"
	kill -TERM "$c"
	wait_gone "$c" 5 || kill -9 "$c"
else
	fail "ignored INT: remote shell did not start: $(cat "$T/ign")"
fi

# The signal goes to the whole remote process group, not only its leader.
bg rx h sh -c "sleep ${MARK}2 & sleep ${MARK}2 & trap '' USR1; echo ready; wait" >"$T/grp" 2>&1
c=$BG_PID
check "two remote sleeps started" wait_until 5 sleeps_are 2 2
kill -USR1 "$c"
check "USR1 reached both sleeps in the group (they die of it)" wait_until 3 sleeps_are 2 0
if wait_gone "$c" 5; then
	check "... and the shell, which ignored it, exited 0 when they were gone (got $BG_RC)" [ "$BG_RC" -eq 0 ]
else
	fail "rexec did not end after its remote group finished"
fi

# -- a command killed by a signal: rexec is killed by it too ----------------------------
# A local child that a signal killed is WIFSIGNALED to its parent, not an
# exit code of 128+N: a shell's $? is 128+N either way, but Python's
# returncode, Go's ExitError and a shell's ^C handling tell them apart.
died_of='import subprocess, sys
print(subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL).returncode)'
for sig in TERM KILL SEGV; do
	want=$(python3 -c "$died_of" sh -c "kill -$sig \$\$")
	got=$(python3 -c "$died_of" "$REXEC" --config "$CLIENT_CONF" -H "unix:$T/h.sock" \
		--key-file "$KEY" sh -c "kill -$sig \$\$")
	check "a remote death by SIG$sig is one here (returncode $got, locally $want)" \
		sh -c "[ '$got' = '$want' ] && [ '$want' -lt 0 ]"
done
# ^C in a terminal sends SIGINT to the whole foreground group: a bash
# script and the command it waits for.  bash ends the script only if that
# command died of the SIGINT (one that exits, even with 130, is taken to
# have handled it, as an editor does), so a loop over rexec went on.
if command -v bash >/dev/null; then
	ctrl_c='import os, signal, subprocess, sys, time
mark, cmd = sys.argv[1], sys.argv[2:]
p = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.PIPE,
                     stdin=subprocess.DEVNULL)
deadline = time.time() + 10
while time.time() < deadline and subprocess.run(["pgrep", "-f", mark],
                                                stdout=subprocess.DEVNULL).returncode:
    time.sleep(0.05)
os.killpg(p.pid, signal.SIGINT)
try:
    out = p.communicate(timeout=20)[0]
except subprocess.TimeoutExpired:
    os.killpg(p.pid, signal.SIGKILL)
    out = p.communicate()[0] + b"timeout"
print("%d:%s" % (p.returncode, out.decode().replace("\n", " ").strip()))'
	# shellcheck disable=SC2016 # the loop is for bash, not for us
	loop='for i in 1 2 3; do "$@"; echo "after $i: $?"; done'
	want=$(python3 -c "$ctrl_c" "^sleep ${MARK}7\$" \
		env --default-signal=INT bash -c "$loop" bash sleep "${MARK}7")
	got=$(python3 -c "$ctrl_c" "^sleep ${MARK}7\$" \
		env --default-signal=INT bash -c "$loop" bash \
		"$REXEC" --config "$CLIENT_CONF" -H "unix:$T/h.sock" --key-file "$KEY" \
		sleep "${MARK}7")
	check "SIGINT to a bash loop over rexec ends it, as locally (\"$got\", locally \"$want\")" \
		sh -c "[ '$got' = '$want' ] && [ '$want' = -2: ]"
	check "... and the remote sleep is gone" wait_until 3 sleeps_are 7 0
else
	fail "bash is needed for the ^C check"
fi

# -- SIGTSTP: the remote group stops with rexec, and goes on with it ----------------------------
# state_of PID: the first letter of ps's STAT (T: stopped).
state_of() {
	ps -o stat= -p "$1" 2>/dev/null | cut -c1
}
remote_state_is() {
	_p=$(pgrep -f "^sleep ${MARK}6\$" | head -n 1)
	[ -n "$_p" ] && [ "$(state_of "$_p")" = "$1" ]
}
bg rx h sleep "${MARK}6"
c=$BG_PID
check "remote sleep 6 started" wait_until 5 sleeps_are 6 1
kill -TSTP "$c"
check "SIGTSTP stops rexec" wait_until 3 sh -c "[ \"\$(ps -o stat= -p $c | cut -c1)\" = T ]"
# The TSTP for rexecd must leave before rexec stops itself.
check "... and the remote sleep is stopped while rexec is" wait_until 3 remote_state_is T
kill -CONT "$c"
check "SIGCONT: the remote sleep runs again" wait_until 3 remote_state_is S
kill -TERM "$c"
wait_gone "$c" 5
check "... and ends with rexec" wait_until 2 sleeps_are 6 0
# Stopped, and then the client is gone: the SIGTERM for the group comes
# with a SIGCONT, so it is taken at once, not kill_grace (2 s) later.
bg rx h sleep "${MARK}6"
c=$BG_PID
check "remote sleep 6 started again" wait_until 5 sleeps_are 6 1
kill -TSTP "$c"
check "... stopped with rexec" wait_until 3 remote_state_is T
kill -KILL "$c"
check "rexec killed while stopped: the stopped remote sleep ends within 1 s" wait_until 1 sleeps_are 6 0

# -- rexec SIGKILLed: rexecd cleans up ------------------------------------------------------
# A group that ignores SIGTERM (inherited by the sleeps): SIGKILL after kill_grace=2s.
bg rx h sh -c "trap '' TERM; sleep ${MARK}3 & sleep ${MARK}3 & wait"
c=$BG_PID
check "TERM-ignoring group started" wait_until 5 sleeps_are 3 2
kill -KILL "$c"
wait "$c" 2>/dev/null
sleep 1
check "1 s after the client died the TERM-ignoring group still lives (grace period)" sleeps_are 3 2
check "... and it is gone by kill_grace + 1 s" wait_until 2 sleeps_are 3 0
check "... rexecd logged the SIGTERM" grep -q "client gone; SIGTERM to the process group" "$T/h.log"
check "... and the SIGKILL" grep -q "still alive after 2000 ms: SIGKILL" "$T/h.log"

bg rx h sh -c "sleep ${MARK}4 & sleep ${MARK}4 & wait"
c=$BG_PID
check "ordinary group started" wait_until 5 sleeps_are 4 2
kill -KILL "$c"
wait "$c" 2>/dev/null
check "a group that does not ignore TERM dies within 1 s of the client's death" wait_until 1 sleeps_are 4 0

# -- no zombies, no descriptor leaks -------------------------------------------------------------
rx h true
wait_until 2 sh -c "[ \$(ps --ppid $HPID -o pid= | wc -l) -eq 0 ]"
fd0=$(fd_count "$HPID")
i=0
bad=0
while [ $i -lt 1000 ]; do
	rx h true || bad=$((bad + 1))
	i=$((i + 1))
done
check "1000 sequential execs of true all exit 0 ($bad failed)" [ $bad -eq 0 ]
check "no zombie children of rexecd" wait_until 2 sh -c "[ \$(ps --ppid $HPID -o stat= | grep -c '^Z') -eq 0 ]"
check "no children of rexecd at all" wait_until 2 sh -c "[ \$(ps --ppid $HPID -o pid= | wc -l) -eq 0 ]"
check "rexecd's descriptor count is back to $fd0 (now $(fd_count "$HPID"))" \
	wait_until 10 sh -c "[ \$(ls /proc/$HPID/fd | wc -l) -eq $fd0 ]"

# -- 200 concurrent execs ----------------------------------------------------------------------------
# All 200 clients start at once: built with the sanitizers each costs
# about 90 ms of CPU, so on two cores busy with other tests they take
# rexecd's share of the CPU (1 of 200 runnable processes) for longer than
# the default 10 s connect_timeout, which covers the handshake too.  What
# is checked here is that every one of them runs, not how fast.
printf '[rexec]\nconnect_timeout=90s\n' >"$T/patient.conf"
pids=""
i=0
while [ $i -lt 200 ]; do
	"$REXEC" --config "$T/patient.conf" -H "unix:$T/h.sock" --key-file "$KEY" \
		sh -c 'sleep 1; echo ok' >"$T/c.$i" 2>&1 &
	pids="$pids $!"
	i=$((i + 1))
done
BG_PIDS="$BG_PIDS $pids"
bad=0
for p in $pids; do
	wait "$p" || bad=$((bad + 1))
done
nok=$(cat "$T"/c.* | grep -cx ok)
check "200 concurrent execs: all exit 0 ($bad did not)" [ $bad -eq 0 ]
check "... and 200 ok lines ($nok)" [ "$nok" -eq 200 ]
if [ "$nok" -ne 200 ]; then
	grep -hvx ok "$T"/c.* | sort | uniq -c | head -5 >&2
fi
rm -f "$T"/c.*
check "after them, no children left" wait_until 3 sh -c "[ \$(ps --ppid $HPID -o pid= | wc -l) -eq 0 ]"
check "... and rexecd's descriptor count is back to $fd0 (now $(fd_count "$HPID"))" \
	wait_until 10 sh -c "[ \$(ls /proc/$HPID/fd | wc -l) -eq $fd0 ]"

# -- stopping rexecd ends what it runs -------------------------------------------------------------------
bg rx h sleep "${MARK}5"
c=$BG_PID
check "a remote sleep runs" wait_until 5 sleeps_are 5 1
stop_rexecd h
check "SIGTERM to rexecd ends its remote commands" wait_until 3 sleeps_are 5 0
if wait_gone "$c" 5; then
	check "... and the client ends with a failure (exit $BG_RC)" [ "$BG_RC" -ne 0 ]
else
	fail "the client still runs after rexecd stopped"
fi
finish
