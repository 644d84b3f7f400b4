#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# rexec --ssh (rexec/ssh-mode.c) against a real OpenSSH sshd: the test makes
# a host key, a client key, authorized_keys and ~/.ssh/known_hosts (HOME is
# the test's own) in a temp dir, starts sshd on a free loopback port, and
# runs commands through rexec.  Remote and local are the same machine, so
# what the command sees is compared with what we sent: exit statuses and
# signals, stdout and stdin byte-exact, stderr kept apart, argv with every
# awkward byte, -C, -e, -t, the end of the command with stdin still open,
# our stdout going away, stop signals, and refused host and client keys.
#
# Exits 77 (skip) only when /usr/sbin/sshd is not installed; CI installs it
# (scripts/setup-debian.sh).  Needs root for sshd to switch users.

set -u

top_builddir=${top_builddir:-.}
rexec=$top_builddir/rexec/rexec
sshd=/usr/sbin/sshd

if [ ! -x "$sshd" ]; then
	echo "SKIP: $sshd not installed (apt-get install openssh-server)"
	exit 77
fi
if [ ! -x "$rexec" ]; then
	echo "FAIL: $rexec not built" >&2
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-rexec-ssh.XXXXXX") || exit 1
sshd_pid=
cleanup() {
	# Remote commands left behind on purpose, then sshd.
	for pid in $(cat "$tmp/remote.pids" 2>/dev/null) $sshd_pid; do
		kill -KILL "$pid" 2>/dev/null
	done
	[ -n "$sshd_pid" ] && wait "$sshd_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

failures=0
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

# No agent and no ~/.ssh but the test's: its own files decide everything.
unset SSH_AUTH_SOCK SSH_AGENT_PID
# No fuse-qtfs barrier when a command ends (tests/rexec/test-rexec-basic.sh
# has its own checks): another test's mount whose server is down would
# add its deadline to the timings checked here.
REXEC_NO_SYNC=1
export REXEC_NO_SYNC
HOME=$tmp/home
export HOME
mkdir -p "$HOME/.ssh"

ssh-keygen -q -t ed25519 -N '' -C test-host -f "$tmp/host_ed25519" || exit 1
ssh-keygen -q -t ed25519 -N '' -C test-client -f "$tmp/id" || exit 1
ssh-keygen -q -t ed25519 -N '' -C test-other -f "$tmp/other" || exit 1
cp "$tmp/id.pub" "$tmp/authorized_keys"
# sshd on 127.0.0.1 and a free high port.  No AcceptEnv: -e must work without it.
. "$(dirname "$0")/../sshd-env.sh"
start_test_sshd "$tmp/sshd" "HostKey $tmp/host_ed25519" "AuthorizedKeysFile $tmp/authorized_keys" ||
	exit 1
sshd_pid=$SSHD_PID
port=$SSHD_PORT
printf '[127.0.0.1]:%s %s\n' "$port" "$(cut -d' ' -f1,2 "$tmp/host_ed25519.pub")" >"$HOME/.ssh/known_hosts"
dest="$(id -un)@127.0.0.1:$port"

# rx [REXEC-OPTION]... -- CMD [ARG]...: rexec --ssh with the good key.
rx() {
	timeout -k 5 60 "$rexec" --ssh "$dest" -i "$tmp/id" "$@"
}
# run CMD...: status in $rc, stderr in $tmp/err, stdout in $tmp/out.
run() {
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}
# elapsed CMD...: like run, plus the seconds it took in $secs.
elapsed() {
	start=$(date +%s)
	run "$@"
	secs=$(($(date +%s) - start))
}

# (1) exit statuses, and a signal as 128+N (a death by that signal)
run rx -- true </dev/null
[ "$rc" -eq 0 ] || {
	fail "true: exit $rc; stderr: $(cat "$tmp/err")"
	echo "--- sshd log:" >&2
	cat "$tmp/sshd.log" >&2
}
run rx -- false </dev/null
[ "$rc" -eq 1 ] || fail "false: exit $rc, expected 1; stderr: $(cat "$tmp/err")"
run rx -- sh -c 'exit 42' </dev/null
[ "$rc" -eq 42 ] || fail "exit 42: exit $rc; stderr: $(cat "$tmp/err")"
run rx -- sh -c 'kill -TERM $$' </dev/null
[ "$rc" -eq 143 ] || fail "kill -TERM \$\$: exit $rc, expected 143; stderr: $(cat "$tmp/err")"
# ... and rexec is killed by it, as a local child would be (WIFSIGNALED).
got=$(python3 -c 'import subprocess, sys
print(subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL).returncode)' \
	"$rexec" --ssh "$dest" -i "$tmp/id" -- sh -c 'kill -TERM $$' 2>"$tmp/err")
[ "$got" = -15 ] || fail "kill -TERM \$\$: returncode $got, expected -15; stderr: $(cat "$tmp/err")"
run rx -- "$tmp/no-such-command" </dev/null
[ "$rc" -eq 127 ] || fail "missing command: exit $rc, expected 127; stderr: $(cat "$tmp/err")"

# stdout and stderr both to one pipe (2>&1): in the order written, as locally
# shellcheck disable=SC2016 # for the remote shell
pairs='i=0; while [ $i -lt 500 ]; do echo "o$i"; echo "e$i" >&2; i=$((i + 1)); done'
want=$(sh -c "$pairs" 2>&1 | md5sum)
got=$(rx -- sh -c "$pairs" </dev/null 2>&1 | md5sum)
[ "$got" = "$want" ] || fail "2>&1: stdout and stderr out of order: $(rx -- sh -c "$pairs" \
	</dev/null 2>&1 | head -n 3 | tr '\n' ' ')"

# (2) 10 MiB of random bytes out, and back in through stdin, unchanged
head -c $((10 * 1024 * 1024)) /dev/urandom >"$tmp/blob"
want=$(sha256sum <"$tmp/blob" | cut -d' ' -f1)
run rx -- cat "$tmp/blob" </dev/null
got=$(sha256sum <"$tmp/out" | cut -d' ' -f1)
[ "$rc" -eq 0 ] && [ "$got" = "$want" ] ||
	fail "10 MiB out: exit $rc, sha256 $got ($(wc -c <"$tmp/out") bytes), expected $want; stderr: $(cat "$tmp/err")"
run rx -- cat <"$tmp/blob"
got=$(sha256sum <"$tmp/out" | cut -d' ' -f1)
[ "$rc" -eq 0 ] && [ "$got" = "$want" ] ||
	fail "10 MiB round trip: exit $rc, sha256 $got ($(wc -c <"$tmp/out") bytes), expected $want; stderr: $(cat "$tmp/err")"
# EOF on stdin reaches the command
n=$(rx -- wc -c </dev/null 2>"$tmp/err")
[ "$n" = 0 ] || fail "wc -c </dev/null: got '$n'; stderr: $(cat "$tmp/err")"

# (3) stderr arrives on our stderr, apart from stdout
run rx -- sh -c 'echo out; echo err >&2' </dev/null
[ "$(cat "$tmp/out")" = out ] && [ "$(cat "$tmp/err")" = err ] ||
	fail "stdout/stderr: stdout '$(cat "$tmp/out")', stderr '$(cat "$tmp/err")'"

# (4) argv arrives byte-exact: the same printf here and there
nl='
'
set -- 'two words' "it's" '"double"' "new${nl}line" '$HOME' '`id`' '$(id)' 'back\slash' '*' '' \
	'-n' '; exit 3' "$(printf 'tab\there')" "$(printf '\377\001')" "' '"
printf '%s|\n' "$@" >"$tmp/args.want"
run rx -- sh -c 'printf "%s|\n" "$@"' sh "$@" </dev/null
cmp -s "$tmp/out" "$tmp/args.want" ||
	fail "argv: exit $rc, got $(od -c "$tmp/out" | head -n 5); stderr: $(cat "$tmp/err")"
set --
# ... argv[0] too, and an argv[0] that starts with '-'
mkdir -p "$tmp/bin dir"
printf '#!/bin/sh\necho "ran $0"\n' >"$tmp/bin dir/it's -x"
chmod +x "$tmp/bin dir/it's -x"
run rx -- "$tmp/bin dir/it's -x" </dev/null
[ "$(cat "$tmp/out")" = "ran $tmp/bin dir/it's -x" ] ||
	fail "argv[0] with space and quote: exit $rc, got '$(cat "$tmp/out")'; stderr: $(cat "$tmp/err")"

# (5) -C DIR: runs there; a directory that cannot be entered is a setup failure (124)
mkdir -p "$tmp/work dir"
run rx -C "$tmp/work dir" -- pwd </dev/null
[ "$rc" -eq 0 ] && [ "$(cat "$tmp/out")" = "$tmp/work dir" ] ||
	fail "-C: exit $rc, pwd '$(cat "$tmp/out")'; stderr: $(cat "$tmp/err")"
run rx -C "$tmp/no such dir" -- sh -c 'echo should-not-run' </dev/null
[ "$rc" -eq 124 ] || fail "-C missing dir: exit $rc, expected 124"
grep -q should-not-run "$tmp/out" && fail "-C missing dir: the command ran"

# (6) -e NAME=VALUE arrives without sshd's AcceptEnv, with any value
run rx -e 'REXEC_T1=a b' -e "REXEC_T2=it's=\$x" -- sh -c 'printf "%s|%s" "$REXEC_T1" "$REXEC_T2"' </dev/null
[ "$(cat "$tmp/out")" = "a b|it's=\$x" ] ||
	fail "-e: exit $rc, got '$(cat "$tmp/out")'; stderr: $(cat "$tmp/err")"
run rx -e NOEQUALS -- true </dev/null
[ "$rc" -eq 125 ] || fail "-e without '=': exit $rc, expected 125"

# (7) -t: a pty (80x24 without a local terminal); pipes without it
run rx -t -- test -t 0 </dev/null
[ "$rc" -eq 0 ] || fail "-t test -t 0: exit $rc; stderr: $(cat "$tmp/err")"
run rx -- test -t 0 </dev/null
[ "$rc" -eq 1 ] || fail "test -t 0 without -t: exit $rc, expected 1"
run rx -t -- stty size </dev/null
[ "$(tr -d '\r' <"$tmp/out")" = "24 80" ] || fail "-t stty size: '$(cat "$tmp/out")', expected '24 80'"
run rx -t -- sh -c 'exit 3' </dev/null
[ "$rc" -eq 3 ] || fail "-t exit 3: exit $rc"

# (8) the command ends while our stdin stays open (a FIFO we hold): no wait for EOF
mkfifo "$tmp/fifo"
exec 3<>"$tmp/fifo"
elapsed rx -- true <&3
[ "$rc" -eq 0 ] && [ "$secs" -le 5 ] || fail "stdin open: exit $rc after ${secs}s, expected 0 at once"
exec 3>&-

# (9) our stdout goes away: the channel is closed and we end as by SIGPIPE (141)
elapsed sh -c '{ timeout -k 5 15 "$@" yes </dev/null; echo $? >"$0/yes.rc"; } | head -n 1 >"$0/yes.out"' "$tmp" \
	"$rexec" --ssh "$dest" -i "$tmp/id"
[ "$(cat "$tmp/yes.out")" = y ] && [ "$(cat "$tmp/yes.rc")" = 141 ] && [ "$secs" -le 5 ] ||
	fail "yes | head -n 1: out '$(cat "$tmp/yes.out")', exit $(cat "$tmp/yes.rc") after ${secs}s, expected 141"

# (10) SIGTERM to rexec: it stops within the channel's grace period and exits 143,
# both while the output is open and after the command closed it (still running).
stop_test() {
	what=$1
	shift
	rm -f "$tmp/stop.started"
	timeout -k 5 30 "$rexec" --ssh "$dest" -i "$tmp/id" "$@" </dev/null >"$tmp/out" 2>"$tmp/err" &
	rpid=$!
	for _ in $(seq 100); do
		[ -s "$tmp/stop.started" ] && break
		sleep 0.1
	done
	start=$(date +%s)
	kill -TERM "$rpid"
	wait "$rpid"
	rc=$?
	secs=$(($(date +%s) - start))
	[ "$rc" -eq 143 ] && [ "$secs" -le 5 ] || fail "SIGTERM $what: exit $rc after ${secs}s, expected 143"
}
stop_test "with output open" -- sh -c "echo \$\$ >>'$tmp/remote.pids'; echo x >'$tmp/stop.started'; exec sleep 30"
# (sshd sends EOF once stdout and stderr are closed; the channel stays open.)
stop_test "after the output closed" -- \
	sh -c "exec >/dev/null 2>&1; echo \$\$ >>'$tmp/remote.pids'; echo x >'$tmp/stop.started'; exec sleep 30"
stop_test "on a pty" -t -- sh -c "echo \$\$ >>'$tmp/remote.pids'; echo x >'$tmp/stop.started'; exec sleep 30"

# (11) a different host key in known_hosts: refused, one line naming known_hosts
mkdir -p "$tmp/home2/.ssh"
printf '[127.0.0.1]:%s %s\n' "$port" "$(cut -d' ' -f1,2 "$tmp/other.pub")" >"$tmp/home2/.ssh/known_hosts"
run env HOME="$tmp/home2" timeout -k 5 60 "$rexec" --ssh "$dest" -i "$tmp/id" -- sh -c 'echo should-not-run' </dev/null
[ "$rc" -eq 255 ] || fail "wrong host key: exit $rc, expected 255"
grep -q '^rexec: .*known_hosts' "$tmp/err" && [ "$(wc -l <"$tmp/err")" -eq 1 ] ||
	fail "wrong host key: message: $(cat "$tmp/err")"
grep -q should-not-run "$tmp/out" && fail "wrong host key: the command ran"

# (12) a client key the server does not know: refused
run timeout -k 5 60 "$rexec" --ssh "$dest" -i "$tmp/other" -- sh -c 'echo should-not-run' </dev/null
[ "$rc" -eq 255 ] || fail "wrong identity: exit $rc, expected 255"
grep -q '^rexec: .*authentication' "$tmp/err" || fail "wrong identity: message: $(cat "$tmp/err")"
grep -q should-not-run "$tmp/out" && fail "wrong identity: the command ran"

# (13) nothing listening: 255 with a message
run timeout -k 5 60 "$rexec" --ssh "$(id -un)@127.0.0.1:1" -i "$tmp/id" -- true </dev/null
[ "$rc" -eq 255 ] && grep -q '^rexec: ' "$tmp/err" || fail "connection refused: exit $rc; stderr: $(cat "$tmp/err")"

if [ "$failures" -ne 0 ]; then
	echo "$failures check(s) failed" >&2
	exit 1
fi
echo "ok: rexec --ssh against sshd on port $port"
