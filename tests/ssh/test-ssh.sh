#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# The SSH transport (lib/ssh.h) against a real OpenSSH sshd: the test makes
# a host key, a client key, authorized_keys and known_hosts in a temp dir,
# starts sshd on a free loopback port, and runs tests/ssh/ssh-cat (our
# client, no OpenSSH client code involved) through it.  It checks that bytes
# pass both ways unchanged, that EOF, exit status and exit signals come back,
# that a pty can be had and resized, and that a wrong host key or a wrong
# client key is refused with a message saying so.
#
# Exits 77 (skip) only when /usr/sbin/sshd is not installed; CI installs it
# (scripts/setup-debian.sh).  Needs root for sshd to switch users.

set -u

top_builddir=${top_builddir:-.}
ssh_cat=$top_builddir/tests/ssh/ssh-cat
sshd=/usr/sbin/sshd

if [ ! -x "$sshd" ]; then
	echo "SKIP: $sshd not installed (apt-get install openssh-server)"
	exit 77
fi
if [ ! -x "$ssh_cat" ]; then
	echo "FAIL: $ssh_cat not built" >&2
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-ssh.XXXXXX") || exit 1
sshd_pids=
cleanup() {
	# Remote commands left behind on purpose, and a session process the test
	# stopped (SIGKILL reaches stopped processes).
	for pid in $(cat "$tmp/remote.pids" "$tmp/stopped.pid" 2>/dev/null) $sshd_pids; do
		kill -KILL "$pid" 2>/dev/null
	done
	for pid in $sshd_pids; do
		wait "$pid" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

failures=0
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

# No agent and no ~/.ssh: the test's own files decide everything.
unset SSH_AUTH_SOCK SSH_AGENT_PID
HOME=$tmp/home
export HOME
mkdir -p "$HOME"

ssh-keygen -q -t ed25519 -N '' -C test-host -f "$tmp/host_ed25519" || exit 1
ssh-keygen -q -t ecdsa -N '' -C test-host -f "$tmp/host_ecdsa" || exit 1
ssh-keygen -q -t ed25519 -N '' -C test-client -f "$tmp/id" || exit 1
ssh-keygen -q -t ed25519 -N '' -C test-other -f "$tmp/other" || exit 1
cp "$tmp/id.pub" "$tmp/authorized_keys"
. "$(dirname "$0")/../sshd-env.sh"
# start_sshd NAME [CONFIG-LINE]...: an sshd with the test's host keys and
# authorized key (sshd-env.sh); sets $port, logs to $tmp/NAME.log.
start_sshd() {
	name=$1
	shift
	start_test_sshd "$tmp/$name" "HostKey $tmp/host_ed25519" "HostKey $tmp/host_ecdsa" \
		"AuthorizedKeysFile $tmp/authorized_keys" "AcceptEnv QT_SSH_TEST" "$@" || exit 1
	sshd_pids="$sshd_pids $SSHD_PID"
	port=$SSHD_PORT
}

start_sshd sshd
# Only the Ed25519 key, although sshd also has an ECDSA one (see "host key types" below).
printf '[127.0.0.1]:%s %s\n' "$port" "$(cut -d' ' -f1,2 "$tmp/host_ed25519.pub")" >"$tmp/known_hosts"
target="ssh://$(id -un)@127.0.0.1:$port"
main_port=$port

# cat_ssh [SSH-CAT-OPTION]... COMMAND: ssh-cat with the good key and known_hosts.
cat_ssh() {
	timeout 60 "$ssh_cat" -i "$tmp/id" -k "$tmp/known_hosts" "$@"
}
# Run ssh-cat with $1 as target-less argument list; status in $rc, stderr in $tmp/err.
run() {
	"$@" 2>"$tmp/err"
	rc=$?
}

# (1) a line through cat
out=$(echo hello | cat_ssh "$target" cat 2>"$tmp/err")
[ "$out" = hello ] || {
	fail "echo hello | cat: got '$out'; stderr: $(cat "$tmp/err")"
	echo "--- sshd log:" >&2
	cat "$tmp/sshd.log" >&2
}

# (2) 5 MiB of random bytes, both ways through cat, unchanged
head -c $((5 * 1024 * 1024)) /dev/urandom >"$tmp/blob"
cat_ssh "$target" cat <"$tmp/blob" >"$tmp/blob.out" 2>"$tmp/err" || fail "5 MiB cat: exit $?: $(cat "$tmp/err")"
want=$(sha256sum <"$tmp/blob" | cut -d' ' -f1)
got=$(sha256sum <"$tmp/blob.out" | cut -d' ' -f1)
[ "$want" = "$got" ] || fail "5 MiB cat: sha256 $got, expected $want ($(wc -c <"$tmp/blob.out") bytes back)"

# (3) exit status
run cat_ssh "$target" 'exit 7' </dev/null
[ "$rc" -eq 7 ] || fail "exit 7: status $rc; stderr: $(cat "$tmp/err")"
run cat_ssh "$target" true </dev/null
[ "$rc" -eq 0 ] || fail "true: status $rc; stderr: $(cat "$tmp/err")"

# (4) exit signal: 128+15 and the signal's name
run cat_ssh "$target" 'kill -TERM $$' </dev/null
[ "$rc" -eq 143 ] || fail "kill -TERM \$\$: status $rc, expected 143; stderr: $(cat "$tmp/err")"
grep -q 'signal TERM' "$tmp/err" || fail "kill -TERM \$\$: stderr does not name TERM: $(cat "$tmp/err")"

# (5) stdin EOF reaches the remote command: wc -c ends and counts every byte
n=$(head -c 100000 /dev/urandom | cat_ssh "$target" 'wc -c' 2>"$tmp/err")
[ "$n" = 100000 ] || fail "wc -c: got '$n', expected 100000; stderr: $(cat "$tmp/err")"
n=$(cat_ssh "$target" 'wc -c' </dev/null 2>"$tmp/err")
[ "$n" = 0 ] || fail "wc -c </dev/null: got '$n', expected 0; stderr: $(cat "$tmp/err")"

# stderr of the remote command does not mix into the stream
out=$(cat_ssh "$target" 'echo out; echo err >&2' </dev/null 2>"$tmp/err")
[ "$out" = out ] || fail "stdout/stderr: stdout '$out', expected 'out'"

# environment, sent as the server's AcceptEnv allows
out=$(cat_ssh -e QT_SSH_TEST=passed -e NOT_ACCEPTED=x "$target" 'echo "$QT_SSH_TEST:${NOT_ACCEPTED-}"' </dev/null 2>"$tmp/err")
[ "$out" = "passed:" ] || fail "environment: got '$out', expected 'passed:'; stderr: $(cat "$tmp/err")"

# known_hosts hashed by ssh-keygen -H still matches
cp "$tmp/known_hosts" "$tmp/known_hosts.hashed"
ssh-keygen -q -H -f "$tmp/known_hosts.hashed" >/dev/null 2>&1
grep -q '^|1|' "$tmp/known_hosts.hashed" || fail "ssh-keygen -H did not hash known_hosts"
out=$(echo hashed | timeout 60 "$ssh_cat" -i "$tmp/id" -k "$tmp/known_hosts.hashed" "$target" cat 2>"$tmp/err")
[ "$out" = hashed ] || fail "hashed known_hosts: got '$out'; stderr: $(cat "$tmp/err")"

# host key types: sshd has an ECDSA and an Ed25519 key; whichever one
# known_hosts lists is the one negotiated (libssh2 alone would pick ECDSA).
printf '[127.0.0.1]:%s %s\n' "$main_port" "$(cut -d' ' -f1,2 "$tmp/host_ecdsa.pub")" >"$tmp/known_hosts.ecdsa"
out=$(echo ecdsa | timeout 60 "$ssh_cat" -i "$tmp/id" -k "$tmp/known_hosts.ecdsa" "$target" cat 2>"$tmp/err")
[ "$out" = ecdsa ] || fail "ECDSA-only known_hosts: got '$out'; stderr: $(cat "$tmp/err")"

# (6) a different host key in known_hosts: refused, and the message says so
printf '[127.0.0.1]:%s %s\n' "$main_port" "$(cut -d' ' -f1,2 "$tmp/other.pub")" >"$tmp/known_hosts.wrong"
run timeout 60 "$ssh_cat" -i "$tmp/id" -k "$tmp/known_hosts.wrong" "$target" 'echo should-not-run' </dev/null
[ "$rc" -eq 255 ] || fail "wrong host key: exit $rc, expected 255"
grep -q 'host key' "$tmp/err" || fail "wrong host key: message does not mention the host key: $(cat "$tmp/err")"
grep -q 'does not match' "$tmp/err" || fail "wrong host key: message does not say mismatch: $(cat "$tmp/err")"
# ... and a host missing from known_hosts: refused with the way to add it
: >"$tmp/known_hosts.empty"
run timeout 60 "$ssh_cat" -i "$tmp/id" -k "$tmp/known_hosts.empty" "$target" true </dev/null
[ "$rc" -eq 255 ] || fail "unknown host key: exit $rc, expected 255"
grep -q 'host key.*unknown.*ssh-keyscan' "$tmp/err" || fail "unknown host key: message: $(cat "$tmp/err")"
# ... and the default known_hosts (~/.ssh/known_hosts, absent here) is used without -k
run timeout 60 "$ssh_cat" -i "$tmp/id" "$target" true </dev/null
grep -q "$HOME/.ssh/known_hosts" "$tmp/err" || fail "default known_hosts: message: $(cat "$tmp/err")"

# (7) a key the server does not know: refused as an authentication failure
run timeout 60 "$ssh_cat" -i "$tmp/other" -k "$tmp/known_hosts" "$target" 'echo should-not-run' </dev/null
[ "$rc" -eq 255 ] || fail "wrong identity: exit $rc, expected 255"
grep -q 'authentication' "$tmp/err" || fail "wrong identity: message does not say authentication: $(cat "$tmp/err")"
grep -q 'should-not-run' "$tmp/err" && fail "wrong identity: the command ran"
# ... and without -i, the keys of ssh-agent are tried first
if command -v ssh-agent >/dev/null && command -v ssh-add >/dev/null; then
	eval "$(ssh-agent -s -a "$tmp/agent.sock")" >/dev/null
	echo "$SSH_AGENT_PID" >>"$tmp/remote.pids"
	ssh-add -q "$tmp/id" 2>/dev/null
	out=$(echo agent | timeout 60 "$ssh_cat" -k "$tmp/known_hosts" "$target" cat 2>"$tmp/err")
	[ "$out" = agent ] || fail "ssh-agent: got '$out'; stderr: $(cat "$tmp/err")"
	kill "$SSH_AGENT_PID"
	unset SSH_AUTH_SOCK SSH_AGENT_PID
else
	fail "ssh-agent or ssh-add missing (apt-get install openssh-client)"
fi
# ... and the default keys in ~/.ssh are used without -i
mkdir -p "$HOME/.ssh"
cp "$tmp/id" "$HOME/.ssh/id_ed25519"
cp "$tmp/known_hosts" "$HOME/.ssh/known_hosts"
out=$(echo default | timeout 60 "$ssh_cat" "$target" cat 2>"$tmp/err")
[ "$out" = default ] || fail "default identity and known_hosts: got '$out'; stderr: $(cat "$tmp/err")"

# (8) -t: a pty, with the requested size, resized on request
out=$(cat_ssh -t "$target" 'test -t 0 && test -t 1 && echo tty-yes' </dev/null 2>"$tmp/err" | tr -d '\r')
[ "$out" = tty-yes ] || fail "-t: got '$out'; stderr: $(cat "$tmp/err")"
out=$(cat_ssh "$target" 'test -t 0 || echo no-tty' </dev/null 2>"$tmp/err")
[ "$out" = no-tty ] || fail "without -t: got '$out'"
out=$(cat_ssh -t -s 100x40 "$target" 'stty size' </dev/null 2>"$tmp/err" | tr -d '\r')
[ "$out" = "40 100" ] || fail "-t -s 100x40: stty size '$out'; stderr: $(cat "$tmp/err")"
# The resize is sent before any input, so it is in force once 'read' returns.
out=$(echo go | cat_ssh -t -s 100x40 -r 132x50 "$target" 'read x; stty size' 2>"$tmp/err" | tr -d '\r' | tail -n 1)
[ "$out" = "50 132" ] || fail "-r 132x50: stty size '$out'; stderr: $(cat "$tmp/err")"
run cat_ssh -t "$target" 'exit 3' </dev/null
[ "$rc" -eq 3 ] || fail "-t exit 3: status $rc"

# An sshd that goes away mid-command: an error, not a hang.
run cat_ssh "$target" "echo \$\$ >>'$tmp/remote.pids'; kill -KILL \$PPID; exec sleep 30" </dev/null
[ "$rc" -eq 255 ] || fail "sshd killed: status $rc, expected 255; stderr: $(cat "$tmp/err")"
grep -q 'connection to .* lost' "$tmp/err" || fail "sshd killed: message: $(cat "$tmp/err")"

# Freeing a channel whose command still runs stops the bridge within its
# grace period (1 s), both when sshd answers and when it is frozen.
# 'timeout 15' turns a hang into status 124.
elapsed() {
	start=$(date +%s)
	"$@"
	rc=$?
	secs=$(($(date +%s) - start))
}
elapsed timeout 15 "$ssh_cat" -x 1 -i "$tmp/id" -k "$tmp/known_hosts" "$target" \
	"echo \$\$ >>'$tmp/remote.pids'; exec sleep 30" </dev/null 2>"$tmp/err"
[ "$rc" -eq 0 ] && [ "$secs" -le 5 ] ||
	fail "free while running: status $rc after ${secs}s, expected 0 within 5s; stderr: $(cat "$tmp/err")"
elapsed timeout 15 "$ssh_cat" -x 1 -i "$tmp/id" -k "$tmp/known_hosts" "$target" \
	"echo \$PPID >'$tmp/stopped.pid'; echo \$\$ >>'$tmp/remote.pids'; kill -STOP \$PPID; exec sleep 30" \
	</dev/null 2>"$tmp/err"
[ "$rc" -eq 0 ] && [ "$secs" -le 5 ] ||
	fail "free with sshd frozen: status $rc after ${secs}s, expected 0 within 5s; stderr: $(cat "$tmp/err")"
[ -s "$tmp/stopped.pid" ] || fail "free with sshd frozen: the command did not run"

# The remote output's reader going away closes the channel (as with ssh(1)).
elapsed sh -c 'timeout 15 "$1" -i "$2/id" -k "$2/known_hosts" "$3" yes 2>"$2/err" </dev/null |
	head -n 1 >"$2/out"' sh "$ssh_cat" "$tmp" "$target"
[ "$(cat "$tmp/out")" = y ] && [ "$secs" -le 5 ] ||
	fail "yes | head -n 1: got '$(cat "$tmp/out")' after ${secs}s; stderr: $(cat "$tmp/err")"

# Key re-exchange in the middle of a transfer (RekeyLimit: every MiB) on a
# second sshd.  Diffie-Hellman because libssh2 1.10 leaks 51 bytes at each
# re-key with curve25519 or ECDH, which LeakSanitizer would report.
start_sshd rekey "RekeyLimit 1M" "KexAlgorithms diffie-hellman-group14-sha256" "LogLevel DEBUG1"
printf '[127.0.0.1]:%s %s\n' "$port" "$(cut -d' ' -f1,2 "$tmp/host_ed25519.pub")" >"$tmp/known_hosts.rekey"
timeout 60 "$ssh_cat" -i "$tmp/id" -k "$tmp/known_hosts.rekey" "ssh://$(id -un)@127.0.0.1:$port" cat \
	<"$tmp/blob" >"$tmp/blob.out" 2>"$tmp/err" || fail "5 MiB cat with re-keying: exit $?: $(cat "$tmp/err")"
got=$(sha256sum <"$tmp/blob.out" | cut -d' ' -f1)
[ "$want" = "$got" ] || fail "5 MiB cat with re-keying: sha256 $got, expected $want"
kex=$(grep -c 'SSH2_MSG_KEXINIT sent' "$tmp/rekey.log")
[ "$kex" -ge 4 ] || fail "5 MiB cat with re-keying: only $kex key exchanges in the sshd log"

if [ "$failures" -ne 0 ]; then
	echo "$failures check(s) failed" >&2
	exit 1
fi
echo "ok: ssh transport against sshd on port $main_port"
