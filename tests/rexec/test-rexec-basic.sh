#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# rexec runs a command on the host as if it ran here: exit statuses
# (including death by a signal), stdout and stdin byte for byte (100 MiB
# each way, compared by sha256 with the local file), stderr kept apart
# (and in the order written when it goes where stdout does, 2>&1),
# the environment (-e, -E, and nothing else without -E), the working
# directory (-C, and the local one by default), the umask, argv with
# spaces, newlines, quotes and empty strings, and a pty with -t: the remote
# side sees a /dev/pts terminal of the local window size and follows a
# resize, and without -t it sees no terminal at all.  Host and DPU are the
# same machine here, so the host's answers can be compared with local ones.

# ulimit -S and -H (the open-files limit below): not POSIX, but in every sh
# these tests run under, dash and bash.
# shellcheck disable=SC3045

. "${top_srcdir:-.}/tests/rexec/rexec-env.sh"

PTYRUN="python3 $top_srcdir/tests/rexec/ptyrun.py"
start_rexecd h || exit 1

# -- exit status --------------------------------------------------------------
check_rc "true exits 0" 0 rx h true
check_rc "false exits 1" 1 rx h false
check_rc "exit 42 comes back" 42 rx h sh -c 'exit 42'
check_rc "exit 255 comes back" 255 rx h sh -c 'exit 255'
check_rc "a remote self-kill by TERM is 128+15" 143 rx h sh -c 'kill -TERM $$'
check_rc "a remote self-kill by KILL is 128+9" 137 rx h sh -c 'kill -KILL $$'
check "the audit line has the status" grep -q 'argv0="sh" path=[^ ]*/sh pid=[0-9]* status="exit 42" duration=[0-9]*ms' "$T/h.log"
check "... and the signal" grep -q 'status="signal TERM"' "$T/h.log"

# -- bulk data, byte for byte -----------------------------------------------------
head -c 104857600 /dev/urandom >"$T/big"
want=$(sha256sum <"$T/big" | cut -d' ' -f1)
got=$(rx h cat "$T/big" | sha256sum | cut -d' ' -f1)
check "100 MiB of binary stdout arrive intact" [ "$got" = "$want" ]
got=$(rx h cat <"$T/big" | sha256sum | cut -d' ' -f1)
check "100 MiB of stdin go through cat and back intact" [ "$got" = "$want" ]
got=$(rxt h cat <"$T/big" | sha256sum | cut -d' ' -f1)
check "... also over TCP with a key" [ "$got" = "$want" ]
rm -f "$T/big"

# -- the drain timer never cuts what the command wrote ----------------------------------
# After the command exits, an output that stays idle for drain counts as
# ended (for a daemon that keeps stdout).  A reader that makes the client
# hold back credit must still get every byte written before the exit,
# however short drain is: 8 MiB (more than the credit and the pipe) to a
# reader that sleeps between reads, with drain=1ms, six times.  The same
# with the default drain and a reader that starts a second late.
start_rexecd d drain=1ms || exit 1
head -c 8388608 /dev/urandom >"$T/mid"
want=$(sha256sum <"$T/mid" | cut -d' ' -f1)
slow_cat='import os, sys, time
while True:
    b = os.read(0, 65536)
    if not b:
        break
    os.write(1, b)
    time.sleep(float(sys.argv[1]))'
short=0
for d in 0.001 0.002 0.005 0.001 0.002 0.005; do
	got=$(rx d cat "$T/mid" | python3 -c "$slow_cat" "$d" | sha256sum | cut -d' ' -f1)
	[ "$got" = "$want" ] || short=$((short + 1))
done
check "8 MiB to a slow reader with drain=1ms arrive whole, 6 times ($short short)" [ $short -eq 0 ]
got=$(rx h cat "$T/mid" | (sleep 1; cat) | sha256sum | cut -d' ' -f1)
check "... and with the default drain to a reader that starts 1 s late" [ "$got" = "$want" ]
rm -f "$T/mid"
# What drain is for: a background process keeps stdout open and silent.
t0=$(date +%s%N)
out=$(rx h sh -c "sleep ${MARK}9 & echo before; exit 4")
rc=$?
t1=$(date +%s%N)
check "a daemon holding stdout: rexec still ends (exit $rc, $(((t1 - t0) / 1000000)) ms) with the output" \
	sh -c "[ $rc -eq 4 ] && [ '$out' = before ] && [ $(((t1 - t0) / 1000000)) -lt 3000 ]"
check "... and the daemon lives on" pgrep -f "^sleep ${MARK}9\$"
# A reader that stops early: the remote writer must not hang the client.
check "head -c 10 of an endless remote stream ends" \
	sh -c "timeout 20 sh -c '\"\$1\" --config \"\$2\" -H unix:\$3 --key-file \"\$4\" cat /dev/zero | head -c 10 | wc -c | grep -qx 10' sh \
	\"$REXEC\" \"$CLIENT_CONF\" \"$T/h.sock\" \"$KEY\""
check_rc "stdin at EOF right away: wc sees 0 bytes" 0 sh -c "rx_out=\$(\"$REXEC\" --config \"$CLIENT_CONF\" -H unix:$T/h.sock --key-file \"$KEY\" wc -c </dev/null) && [ \"\$rx_out\" = 0 ]"
# -n: stdin is not read (as ssh -n), so rexec in a 'while read' loop
# leaves the loop its input; without -n rexec reads stdin ahead of the
# command (up to its credit) and would take the lines after the first.
printf 'a\nb\nc\n' >"$T/lines"
got=$(while read -r l; do rx h -n sh -c 'sleep 0.2; echo "$1"' sh "$l"; done <"$T/lines" | tr '\n' ' ')
check "-n: rexec in a while-read loop leaves the loop its input (got: $got)" [ "$got" = "a b c " ]
got=$(rx h -n cat <"$T/lines")
rc=$?
check "-n: the command's stdin is at its end at once (exit $rc, got: $got)" sh -c "[ $rc -eq 0 ] && [ -z '$got' ]"

# -- stderr ---------------------------------------------------------------------------
rx h sh -c 'echo out; echo err >&2; exit 3' >"$T/o" 2>"$T/e"
rc=$?
check "stdout and stderr separate: exit 3" [ $rc -eq 3 ]
check "... stdout has only out" [ "$(cat "$T/o")" = out ]
check "... stderr has only err" [ "$(cat "$T/e")" = err ]
# With 2>&1 what the command writes to each keeps its order, as locally,
# in a pipe and in a file (two pipes on the host mixed it up).
# shellcheck disable=SC2016 # for the remote shell
pairs='i=0; while [ $i -lt 500 ]; do echo "o$i"; echo "e$i" >&2; i=$((i + 1)); done'
sh -c "$pairs" >"$T/pairs.want" 2>&1
rx h sh -c "$pairs" 2>&1 | cat >"$T/pairs.got"
check "2>&1 into a pipe: stdout and stderr in the order written ($(head -n 4 "$T/pairs.got" |
	tr '\n' ' '))" cmp -s "$T/pairs.want" "$T/pairs.got"
rx h sh -c "$pairs" >"$T/pairs.got" 2>&1
check "2>&1 into a file: the same bytes as locally" cmp -s "$T/pairs.want" "$T/pairs.got"
got=$(rx h sh -c 'readlink /proc/$$/fd/1 /proc/$$/fd/2 | uniq | wc -l' 2>&1)
check "... the command's stdout and stderr are one pipe there, as here ($got)" [ "$got" = 1 ]
got=$(rx h sh -c 'readlink /proc/$$/fd/1 /proc/$$/fd/2 | uniq | wc -l' 2>"$T/e")
check "... and two without 2>&1 ($got)" [ "$got" = 2 ]

# -- environment ------------------------------------------------------------------------
LEAKME=secret-$MARK
export LEAKME
rx h env >"$T/env0"
check "without -e or -E the remote env is only rexecd's PATH" \
	[ "$(cut -d= -f1 "$T/env0" | sort | tr '\n' ' ')" = "PATH " ]
check "... and nothing of ours leaks" sh -c "! grep -q LEAKME '$T/env0'"
rx h -e FOO=bar -e 'SP=a b=c' env >"$T/env1"
check "-e variables arrive" grep -qx 'FOO=bar' "$T/env1"
check "... with spaces and '=' in the value" grep -qx 'SP=a b=c' "$T/env1"
check "... and still nothing else leaks" sh -c "! grep -q LEAKME '$T/env1'"
rx h -E env >"$T/env2"
check "-E forwards the local environment" grep -qx "LEAKME=secret-$MARK" "$T/env2"
check "... all of it" [ "$(grep -c . "$T/env2")" -ge "$(env | grep -c '^[A-Za-z_][A-Za-z0-9_]*=')" ]
got=$(rx h -e "DUP$MARK=1" -e "DUP$MARK=2" env | grep "^DUP$MARK=" | tr '\n' ' ')
check "a later -e NAME= replaces an earlier one, as env(1) does ($got)" [ "$got" = "DUP$MARK=2 " ]
check_rc_msg "an empty command name: 127 without asking the host, as env '' does" 127 "'': command not found" \
	rx h ''
check "-e overrides -E" sh -c "rx_v=\$(\"$REXEC\" --config \"$CLIENT_CONF\" -H unix:$T/h.sock --key-file \"$KEY\" -E -e LEAKME=over printenv LEAKME) && [ \"\$rx_v\" = over ]"
check "-e PATH replaces rexecd's default" sh -c "rx_v=\$(\"$REXEC\" --config \"$CLIENT_CONF\" -H unix:$T/h.sock --key-file \"$KEY\" -e PATH=/usr/bin:/bin /usr/bin/printenv PATH) && [ \"\$rx_v\" = /usr/bin:/bin ]"
unset LEAKME

# -- working directory ---------------------------------------------------------------------
check "-C /tmp: pwd prints /tmp" [ "$(rx h -C /tmp pwd)" = /tmp ]
mkdir -p "$T/dir with space/sub"
check "default cwd is the local one" [ "$(cd "$T/dir with space/sub" && rx h pwd)" = "$T/dir with space/sub" ]
check "... relative paths resolve there" [ "$(cd "$T/dir with space" && rx h ls)" = sub ]
check "-C wins over the local cwd" [ "$(cd "$T" && rx h -C / pwd)" = / ]

# -- umask ---------------------------------------------------------------------------------------
check "umask 027 is forwarded" [ "$(umask 027 && rx h sh -c umask)" = 0027 ]
check "umask 077 is forwarded" [ "$(umask 077 && rx h sh -c umask)" = 0077 ]
(umask 077 && rx h sh -c "echo x >'$T/umasked'")
check "... and applies to files the command creates" [ "$(stat -c %a "$T/umasked")" = 600 ]

# -- argv ---------------------------------------------------------------------------------------------
nl='
'
printf '[%s]\n' 'a b' "x${nl}y" "q\"u'o\\te" '' '*' '$HOME' '--' '-e' >"$T/argv.want"
rx h printf '[%s]\n' 'a b' "x${nl}y" "q\"u'o\\te" '' '*' '$HOME' '--' '-e' >"$T/argv.got"
check "argv with spaces, newlines, quotes, globs and empty strings intact" cmp -s "$T/argv.want" "$T/argv.got"
check "options after CMD belong to CMD" [ "$(rx h echo -t -E -C /)" = "-t -E -C /" ]
check "-- before CMD" [ "$(rx h -- echo -- x)" = "-- x" ]
big_arg=$(head -c 60000 /dev/zero | tr '\0' a)
check "a 60000-byte argument intact" [ "$(rx h printf %s "$big_arg" | wc -c)" -eq 60000 ]
# As many as the kernel takes here (its bound is their total size): xargs
# and find -exec {} + pass tens of thousands.
# shellcheck disable=SC2046 # one argument per number, on purpose
check "100000 arguments, as locally" [ "$(rx h printf '%s\n' $(seq 1 100000) | md5sum)" = "$(seq 1 100000 | md5sum)" ]
# shellcheck disable=SC2046
got=$(env $(seq -f "V%g=x" 1 10000) "$REXEC" --config "$CLIENT_CONF" -H "unix:$T/h.sock" --key-file "$KEY" -E env |
	grep -c '^V[0-9]*=x$')
check "10000 variables with -E ($got)" [ "$got" -eq 10000 ]

# -- pty ----------------------------------------------------------------------------------------------------
rx h -t tty >"$T/tty" 2>&1
rc=$?
check "-t tty succeeds (exit $rc)" [ $rc -eq 0 ]
check "... on a /dev/pts terminal ($(tr -d '\r' <"$T/tty"))" grep -Eq '^/dev/pts/[0-9]+.?$' "$T/tty"
check "-t without a local terminal still carries the exit status" [ "$(rx h -t sh -c 'exit 5' >/dev/null 2>&1; echo $?)" = 5 ]
check "-T overrides -t" [ "$(rx h -t -T sh -c 'test -t 0 && echo tty || echo notty')" = notty ]
check "without -t stdin is not a terminal" [ "$(rx h sh -c 'test -t 0 && echo tty || echo notty')" = notty ]
# Under a real local terminal (a pty of 37x101 made by ptyrun.py).
$PTYRUN 37 101 -- "$REXEC" --config "$CLIENT_CONF" -H "unix:$T/h.sock" --key-file "$KEY" -t stty size >"$T/pty1" 2>&1
rc=$?
check "-t stty size follows the local window: 37 101 (got $(cat "$T/pty1"), exit $rc)" \
	[ "$(cat "$T/pty1")" = "37 101" ]
$PTYRUN 37 101 -- "$REXEC" --config "$CLIENT_CONF" -H "unix:$T/h.sock" --key-file "$KEY" -t \
	sh -c 'test -t 0 && test -t 1 && test -t 2 && echo "TERM=$TERM"' >"$T/pty2" 2>&1
check "-t: stdin, stdout and stderr are the terminal, TERM is set ($(cat "$T/pty2"))" \
	grep -Eq '^TERM=.+' "$T/pty2"
$PTYRUN 37 101 -- "$REXEC" --config "$CLIENT_CONF" -H "unix:$T/h.sock" --key-file "$KEY" \
	sh -c 'test -t 0 || test -t 1 || echo notty' >"$T/pty3" 2>&1
check "without -t, even from a terminal, the remote side has none" [ "$(cat "$T/pty3")" = notty ]
$PTYRUN 37 101 --after ready --resize 50 120 --until "50 120" --timeout 15 -- \
	"$REXEC" --config "$CLIENT_CONF" -H "unix:$T/h.sock" --key-file "$KEY" -t \
	sh -c 'trap "stty size; exit 0" WINCH; echo ready; while :; do sleep 0.1; done' >"$T/pty4" 2>&1
rc=$?
check "a local resize reaches the remote command as SIGWINCH with 50 120 (exit $rc)" \
	grep -qx "50 120" "$T/pty4"
printf 'hello\n' | rx h -t sh -c 'read -r l; echo "got:$l"' >"$T/pty5" 2>&1
# rexec's own message while the terminal is raw ends with CR LF, or the
# shell's next prompt would start mid-line.
$PTYRUN 24 80 --keep-cr -- "$REXEC" --config "$CLIENT_CONF" -H "unix:$T/h.sock" --key-file "$KEY" -t \
	/nonexistent-cmd >"$T/pty6" 2>&1
check "-t: rexec's message on the raw terminal ends with CR LF ($(od -An -c "$T/pty6" | tr -s ' \n' ' '))" \
	/usr/bin/python3 -c 'import sys
d = open(sys.argv[1], "rb").read()
sys.exit(0 if d.startswith(b"rexec: ") and d.endswith(b"\r\n") and d.count(b"\n") == d.count(b"\r\n") else 1)' "$T/pty6"
check "-t with piped input: the line arrives" grep -q "got:hello" "$T/pty5"

# sync_mounts= (the fuse-qtfs barrier when a command ends): a list of
# mount points, auto or none; a relative path is refused in one line.
printf '[rexec]\nsync_mounts=%s\n' "$T;/nonexistent" >"$T/sync.conf"
check_rc "sync_mounts= with mount points (a missing one is skipped)" 0 env -u REXEC_NO_SYNC \
	"$REXEC" --config "$T/sync.conf" -H "unix:$T/h.sock" --key-file "$KEY" true
printf '[rexec]\nsync_mounts=none\n' >"$T/sync.conf"
check_rc "sync_mounts=none" 0 "$REXEC" --config "$T/sync.conf" -H "unix:$T/h.sock" --key-file "$KEY" true
printf '[rexec]\nsync_mounts=relative/dir\n' >"$T/sync.conf"
check_rc "sync_mounts= with a relative path is refused" 125 \
	"$REXEC" --config "$T/sync.conf" -H "unix:$T/h.sock" --key-file "$KEY" true
check "... in one line naming it" sh -c "[ \$(wc -l <'$T/err') -eq 1 ] && grep -q 'relative/dir' '$T/err'"

# connect_timeout bounds connecting and authenticating together: a socket
# whose listener takes the connection (its backlog) and never speaks ends
# rexec with 255 after connect_timeout, not after the 10 s default.
# (Bound under another name and renamed once listening: between bind and
# listen a connect is refused, and rexec would fail at once for that.)
/usr/bin/python3 -c 'import os, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1] + ".tmp")
s.listen(8)
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(30)' "$T/mute.sock" >/dev/null 2>&1 &
mute=$!
BG_PIDS="$BG_PIDS $mute"
wait_until 5 test -S "$T/mute.sock"
printf '[rexec]\nconnect_timeout=1s\n' >"$T/mute.conf"
t0=$(date +%s)
check_rc "a host that never answers the handshake" 255 \
	"$REXEC" --config "$T/mute.conf" -H "unix:$T/mute.sock" --key-file "$KEY" true
t1=$(date +%s)
check "... ends rexec after connect_timeout=1s (took $((t1 - t0)) s)" [ $((t1 - t0)) -le 4 ]
check "... saying why" grep -q "authentication with .* timed out" "$T/err"
kill "$mute" 2>/dev/null

# A host that sends past the stream credit (2 MiB unacknowledged) to a
# reader that is slow: rexec must not keep it all, as fast as it comes.
/usr/bin/python3 "$top_srcdir/tests/rexec/greedy-rexecd.py" "$KEY" "$T/greedy.sock" 8388608 \
	>"$T/greedy.out" 2>&1 &
greedy=$!
BG_PIDS="$BG_PIDS $greedy"
wait_until 5 test -S "$T/greedy.sock"
"$REXEC" --config "$CLIENT_CONF" -H "unix:$T/greedy.sock" --key-file "$KEY" cat 2>"$T/err" |
	(sleep 1; wc -c >"$T/greedy.got")
rc=$(grep -c "sent more stdout than its credit" "$T/err")
check "a host that sends more than the window to a slow reader is cut off ($(cat "$T/err"))" [ "$rc" -eq 1 ]
check "... after no more than the window ($(cat "$T/greedy.got") bytes)" [ "$(cat "$T/greedy.got")" -le 2097152 ]
kill "$greedy" 2>/dev/null

# An rexecd from before the ONE_OUTPUT flag (2>&1) refuses an EXEC that
# carries it as malformed: rexec asks again without it, and the command
# runs, its output as two streams as it was then.
/usr/bin/python3 "$top_srcdir/tests/rexec/old-rexecd.py" "$KEY" "$T/old.sock" >"$T/old.out" 2>&1 &
old=$!
BG_PIDS="$BG_PIDS $old"
wait_until 5 test -S "$T/old.sock"
got=$("$REXEC" --config "$CLIENT_CONF" -H "unix:$T/old.sock" --key-file "$KEY" true 2>&1)
rc=$?
check "rexec with 2>&1 runs on an rexecd that does not know ONE_OUTPUT (rc=$rc: $got)" \
	[ $rc -eq 0 ] && [ "$got" = "from the old rexecd" ]
check "... having asked with it first, then without ($(tr '\n' ' ' <"$T/old.out"))" \
	[ "$(cat "$T/old.out")" = "$(printf 'EXEC flags 0x2\nEXEC flags 0x0')" ]
kill "$old" 2>/dev/null

# rexecd raises its own soft limit on open files to the hard one, for its
# sessions; the commands get back the limit rexecd was started with.
soft=$(ulimit -Sn)
hard=$(ulimit -Hn)
if [ "$hard" = unlimited ] || [ "$hard" -gt 777 ]; then
	ulimit -Sn 777
	start_rexecd lim tcp=no || exit 1
	ulimit -Sn "$soft"
	got=$(rxn lim sh -c 'ulimit -Sn')
	check "a command gets the soft limit on open files rexecd was started with ($got)" [ "$got" = 777 ]
	own=$(awk '/^Max open files/ { print $4 }' "/proc/$REXECD_PID/limits")
	check "... while rexecd's own is the hard limit ($own)" [ "$own" = "$hard" ]
else
	ok "SKIP: the hard limit on open files ($hard) leaves no room below it"
fi

# -- stdio closed --------------------------------------------------------------------
# rexec started with fd 0, 1 or 2 closed: its own descriptors must not land
# there (the command's output would go into them).  A closed stdin reads as
# empty, what goes to a closed stdout or stderr is discarded.
got=$(rx h sh -c 'echo w1 >&2; sleep 0.3; echo w2 >&2; echo done' 2>&-)
rc=$?
check "stderr closed: the command runs to its end (exit $rc, stdout \"$got\")" \
	[ "$rc:$got" = "0:done" ]
check_rc "stdin, stdout and stderr closed: the command's status comes back" 3 \
	sh -c '"$@" <&- >&- 2>&-' sh "$REXEC" --config "$CLIENT_CONF" -H "unix:$T/h.sock" --key-file "$KEY" \
	sh -c 'echo w1 >&2; sleep 0.3; echo w2 >&2; echo out; exit 3'
check "... and rexecd saw no protocol error" sh -c "! grep -qi 'protocol\|malformed' '$T/h.log'"
got=$(timeout 20 "$REXEC" --config "$CLIENT_CONF" -H "unix:$T/h.sock" --key-file "$KEY" \
	sh -c 'cat; echo "cat: $?"' <&-)
check "stdin closed reads as empty: $got" [ "$got" = "cat: 0" ]
got=$(rx h sh -c 'echo gone; echo kept >&2' 2>&1 >&-)
check "stdout closed: its output is discarded, stderr still comes ($got)" [ "$got" = kept ]
# rexecd started the same way: its sockets must not become its stderr.
bg "$REXECD" --config "$T/h.conf" --listen "unix:$T/closed.sock" <&- >&- 2>&-
wait_until 5 test -S "$T/closed.sock"
got=$(rxn closed sh -c 'echo out; echo err >&2' 2>&1)
got=$(printf '%s\n' "$got" | sort | tr '\n' ' ')
check "rexecd started with stdio closed serves a command: $got" [ "$got" = "err out " ]

# -- the reader of a pty's output goes away ------------------------------------------------
# Without -t the command gets SIGPIPE, as locally; with -t its terminal is
# hung up (SIGHUP), and rexec ends with its status either way.
rm -f "$T/pty.rc"
got=$(timeout 20 sh -c '{ "$@" </dev/null; echo $? >"$0"; } | head -1 | tr -d "\r"' "$T/pty.rc" \
	"$REXEC" --config "$CLIENT_CONF" -H "unix:$T/h.sock" --key-file "$KEY" -t yes "$MARK")
rc=$?
check "rexec -t yes | head -1 ends (exit $rc, \"$got\")" [ "$rc:$got" = "0:$MARK" ]
check "... with the command's status: SIGHUP, 129 ($(cat "$T/pty.rc" 2>/dev/null))" \
	[ "$(cat "$T/pty.rc" 2>/dev/null)" = 129 ]
check "... and the command is gone on the host" wait_until 5 sh -c "! pgrep -f '[y]es $MARK' >/dev/null"
got=$(timeout 20 sh -c '{ "$@" </dev/null; echo $? >"$0"; } | head -1' "$T/pty.rc" \
	"$REXEC" --config "$CLIENT_CONF" -H "unix:$T/h.sock" --key-file "$KEY" yes "$MARK")
check "without -t: SIGPIPE, 141, as locally ($(cat "$T/pty.rc" 2>/dev/null))" \
	[ "$got:$(cat "$T/pty.rc" 2>/dev/null)" = "$MARK:141" ]

# -- a non-blocking stdout or stdin, made so by the parent ----------------------------------
# EAGAIN there means "not now", not the end: nothing is cut, nothing fails.
NBPIPE="/usr/bin/python3 $top_srcdir/tests/rexec/nonblock-pipe.py"
RXH="$REXEC --config $CLIENT_CONF -H unix:$T/h.sock --key-file $KEY"
# shellcheck disable=SC2086 # RXH and NBPIPE are commands, split on purpose
got=$(timeout 60 $NBPIPE out 0.5 $RXH sh -c 'head -c 1000000 /dev/zero')
check "a non-blocking stdout read late gets all of 1000000 bytes ($got)" \
	[ "$got" = "bytes=1000000 lines=0 rc=0" ]
# shellcheck disable=SC2086
got=$(timeout 60 $NBPIPE out 0.5 $RXH seq 1 3000000)
check "... and all 3000000 lines of seq, exit 0 ($got)" \
	[ "$got" = "bytes=22888896 lines=3000000 rc=0" ]
# shellcheck disable=SC2086
got=$(timeout 60 $NBPIPE in 0.5 1000000 $RXH wc -c | tr -d ' ' | tr '\n' ' ')
check "a non-blocking stdin written late gets to the command whole ($got)" \
	[ "$got" = "1000000 rc=0 " ]

# -- descriptors rexecd inherited --------------------------------------------------------
# A service manager or a shell may start rexecd with descriptors of its
# own open (here 7, not close-on-exec): no command gets them.  Again with
# close_range() refusing CLOSE_RANGE_CLOEXEC (EINVAL, strace), as before
# Linux 5.11 (5.10 of Debian 11 and openEuler 22.03), where they reached
# every command.  (LeakSanitizer cannot run under ptrace.)
for how in "" "without CLOSE_RANGE_CLOEXEC"; do
	wrap=${SERVER_WRAP:-}
	[ -z "$how" ] || SERVER_WRAP="env ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
strace -f -qq -o /dev/null -e trace=close_range -e inject=close_range:error=EINVAL"
	exec 7>"$T/inherited"
	start_rexecd fd7 || exit 1
	exec 7>&-
	SERVER_WRAP=$wrap
	# shellcheck disable=SC2016 # for the remote shell
	got=$(rx fd7 sh -c 'ls /proc/$$/fd' 2>&1 | tr '\n' ' ')
	check "a command has only stdin, stdout and stderr of rexecd's${how:+ ($how)} ($got)" \
		[ "$got" = "0 1 2 " ]
	# Killed, strace leaves the program it runs running: rexecd first.
	# shellcheck disable=SC2046 # one pid, or none
	[ -z "$how" ] || kill $(ps --ppid "$(rexecd_pid fd7)" -o pid=) 2>/dev/null
	stop_rexecd fd7
done

check "rexecd is still up" rexecd_alive h
finish
