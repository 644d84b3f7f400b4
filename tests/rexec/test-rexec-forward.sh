#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# rexec forward-unix: a local unix socket ($T/dpu/...) relayed through
# rexecd to a unix socket on the host ($T/host/...), which must be inside
# forward_allow.  Through the relay: an HTTP request with curl (or python
# when curl is missing), a 10 MiB echo that must come back byte-exact with
# half-close, several connections at once, and SCM_RIGHTS: a regular
# file's descriptor sent by a client arrives at the host server as a
# descriptor of the same file at the same offset, while a pipe's descriptor
# gets the connection closed, as does a file outside rexecd's
# pass_fds_allow.  Sockets outside forward_allow (a sibling
# directory whose name merely starts the same, "..", a symlink planted
# inside the allowed directory) are refused, and rexec says so.  A
# connection the host server ends after its answer frees its sockets and
# its rexecd session at both ends (max_sessions is not used up).
#
# The host servers are tests/rexec/unix-peer.py.

. "${top_srcdir:-.}/tests/rexec/rexec-env.sh"

PEER="python3 $top_srcdir/tests/rexec/unix-peer.py"
H=$T/host
D=$T/dpu
mkdir -p "$H" "$D" "$T/hostx" "$T/other"

start_rexecd h "forward_allow=$H;$T/one/exact.sock" "pass_fds_allow=$T/pass" || exit 1

# serve NAME PATH TEXT: a unix-peer.py server on the host side.
serve() {
	bg $PEER serve "$2" "$3" 2>"$T/$1.log"
	wait_until 5 test -S "$2" || {
		echo "unix-peer server at $2 did not start" >&2
		cat "$T/$1.log" >&2
		exit 1
	}
}

# forward LOCAL REMOTE: start rexec forward-unix in the background, its
# stderr in $T/fwd-<basename of LOCAL>.log; sets FWD_PID.
forward() {
	bg rx h forward-unix "$1" "$2" 2>"$T/fwd-$(basename "$1").log"
	FWD_PID=$BG_PID
	wait_until 5 test -S "$1" || {
		echo "forward-unix did not create $1" >&2
		cat "$T/fwd-$(basename "$1").log" >&2
		return 1
	}
}

http_get() {
	if command -v curl >/dev/null; then
		curl -s --max-time 20 --unix-socket "$1" http://x/
	else
		python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(20); s.connect(sys.argv[1])
s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
r = b""
while True:
    d = s.recv(65536)
    if not d: break
    r += d
sys.stdout.write(r.split(b"\r\n\r\n", 1)[1].decode())' "$1"
	fi
}

serve srv "$H/http.sock" "hello from the host $MARK"
check "the host server answers directly" [ "$(http_get "$H/http.sock")" = "hello from the host $MARK" ]

# -- HTTP through the forward -------------------------------------------------------
check "forward-unix starts and listens on $D/http.sock" forward "$D/http.sock" "$H/http.sock"
FWD_HTTP=$FWD_PID
check "an HTTP GET through the forward gets the host's answer" \
	[ "$(http_get "$D/http.sock")" = "hello from the host $MARK" ]
check "a second GET on a new connection too" \
	[ "$(http_get "$D/http.sock")" = "hello from the host $MARK" ]
pids=""
i=0
while [ $i -lt 20 ]; do
	http_get "$D/http.sock" >"$T/par.$i" &
	pids="$pids $!"
	i=$((i + 1))
done
for p in $pids; do
	wait "$p"
done
check "20 parallel GETs all answered" \
	[ "$(cat "$T"/par.* | grep -cx "hello from the host $MARK")" -eq 20 ]
check "rexecd logged the forwards" grep -q "forward peer=unix(uid=0,pid=[0-9]*) to $H/http.sock" "$T/h.log"

# -- bulk, byte-exact, with half-close ---------------------------------------------------
check "10 MiB echoed through the forward byte-exact" $PEER echo "$D/http.sock" 10
check "... and 1 MiB again on a fresh connection" $PEER echo "$D/http.sock" 1

# -- SCM_RIGHTS --------------------------------------------------------------------------------
mkdir -p "$T/pass"
printf 'contents of a file passed as a descriptor %s\n' "$MARK" >"$T/pass/passed"
$PEER sendfd "$D/http.sock" "$T/pass/passed" >"$T/fd.out" 2>&1
check "a regular file's fd sent through the forward reaches the host server" grep -q "^FILE:" "$T/fd.out"
check "... as the same file" [ "$(sed -n 's/^FILE://p' "$T/fd.out")" = "contents of a file passed as a descriptor $MARK" ]
check "... at the same offset (3)" grep -qx "OFF:3" "$T/fd.out"
echo "not to be passed $MARK" >"$T/notpassed"
$PEER sendfd "$D/http.sock" "$T/notpassed" >"$T/fd2.out" 2>&1
check "a file outside pass_fds_allow gets the connection closed ($(head -c 80 "$T/fd2.out"))" \
	sh -c "! grep -q 'not to be passed' '$T/fd2.out'"
check "... rexecd said why" grep -q "passing $T/notpassed is not allowed (pass_fds_allow)" "$T/h.log"
$PEER sendpipe "$D/http.sock" >"$T/pipe.out" 2>&1
rc=$?
check "a pipe's fd gets the connection closed, with no reply (exit $rc: $(cat "$T/pipe.out"))" [ $rc -eq 0 ]
check "... rexec said why" grep -q "not a regular file" "$T/fwd-http.sock.log"
check "the forward still serves new connections after that" \
	[ "$(http_get "$D/http.sock")" = "hello from the host $MARK" ]

# -- outside forward_allow ------------------------------------------------------------------------
serve other "$T/other/real.sock" "OTHER $MARK"
serve hostx "$T/hostx/s.sock" "HOSTX $MARK"
ln -s "$T/other/real.sock" "$H/link.sock"
for remote in "$T/other/real.sock" "$T/hostx/s.sock" "$H/../other/real.sock" "$H/link.sock" "$T/one/exact.sockx"; do
	local_sock=$D/out.$(echo "$remote" | cksum | cut -d' ' -f1).sock
	if ! forward "$local_sock" "$remote"; then
		fail "forward-unix to $remote did not start"
		continue
	fi
	got=$($PEER raw "$local_sock" 2>&1)
	check "a connection forwarded to $remote (outside forward_allow) gets nothing (got: $got)" [ -z "$got" ]
	check "... rexec said why" wait_until 3 grep -q "is not in the host's forward_allow list" "$T/fwd-$(basename "$local_sock").log"
	kill "$FWD_PID"
	wait "$FWD_PID" 2>/dev/null
done
check "rexecd audited the refusals" \
	grep -q "deny peer=unix(uid=0,pid=[0-9]*) cmd=\"forward:$T/other/real.sock\": .*forward_allow" "$T/h.log"
check "... including the .. one, under its canonical name" \
	[ "$(grep -c "cmd=\"forward:$T/other/real.sock\"" "$T/h.log")" -ge 2 ]
check "the other host servers were never reached" sh -c "! grep -q . '$T/other.log' '$T/hostx.log'"

# An exact socket path in forward_allow (not a directory): allowed.
mkdir -p "$T/one"
serve one "$T/one/exact.sock" "ONE $MARK"
check "forward to an exactly listed socket" forward "$D/one.sock" "$T/one/exact.sock"
check "... answers" [ "$(http_get "$D/one.sock")" = "ONE $MARK" ]
kill "$FWD_PID"
wait "$FWD_PID" 2>/dev/null

# A host socket that does not exist: the connection is closed, the forward lives on.
check "forward to a missing socket inside forward_allow starts" forward "$D/missing.sock" "$H/missing.sock"
check "... a connection gets nothing" [ -z "$($PEER raw "$D/missing.sock" 2>&1)" ]
check "... and the forward is still running" kill -0 "$FWD_PID"
kill "$FWD_PID"
wait "$FWD_PID" 2>/dev/null

# -- connections that end --------------------------------------------------------------------------
# The host server sends a line and closes 0.3 s later, after the line went
# through: both ends must then let go of the relayed connection (its
# sockets, and its rexecd session), so that a rexecd with max_sessions=2
# serves any number of them one after the other.
start_rexecd h2 "forward_allow=$H" max_sessions=2 || exit 1
serve hello "$H/hello.sock" "HELLO $MARK"
bg rx h2 forward-unix "$D/hello.sock" "$H/hello.sock" 2>"$T/fwd-hello.log"
FWD_HELLO=$BG_PID
if wait_until 5 test -S "$D/hello.sock"; then
	fwd_fds=$(fd_count "$FWD_HELLO")
	h2_fds=$(fd_count "$(rexecd_pid h2)")
	i=0
	while [ $i -lt 4 ]; do
		check "connection $((i + 1)) of 4 in a row (max_sessions=2) gets the line and EOF" \
			[ "$($PEER hello "$D/hello.sock")" = "HELLO $MARK" ]
		i=$((i + 1))
	done
	check "... none was refused" sh -c "! grep -q 'too many sessions' '$T/fwd-hello.log'"
	check "forward-unix holds no descriptor of the ended connections ($fwd_fds before)" \
		wait_until 5 sh -c "[ \$(ls /proc/$FWD_HELLO/fd | wc -l) -eq $fwd_fds ]"
	check "... nor does rexecd ($h2_fds before)" \
		wait_until 5 sh -c "[ \$(ls /proc/$(rexecd_pid h2)/fd | wc -l) -eq $h2_fds ]"
else
	fail "forward-unix did not create $D/hello.sock: $(cat "$T/fwd-hello.log")"
fi
kill "$FWD_HELLO"
wait "$FWD_HELLO" 2>/dev/null

# -- its socket path on stop ---------------------------------------------------------------------------
# A forward that stops removes its socket, and only that: a file put at the
# path since (the socket removed, the name taken by someone else) stays.
if forward "$D/own.sock" "$H/http.sock"; then
	kill "$FWD_PID"
	wait "$FWD_PID" 2>/dev/null
	check "a stopped forward removes its socket" sh -c "! test -e '$D/own.sock'"
fi
if forward "$D/taken.sock" "$H/http.sock"; then
	rm -f "$D/taken.sock"
	echo "not the forward's" >"$D/taken.sock"
	kill "$FWD_PID"
	wait "$FWD_PID" 2>/dev/null
	check "... but not a file put at its path since" \
		[ "$(cat "$D/taken.sock" 2>/dev/null)" = "not the forward's" ]
	rm -f "$D/taken.sock"
fi

# -- usage ----------------------------------------------------------------------------------------------
check_rc_msg "forward-unix with one socket only: 125" 125 "LOCAL_SOCKET" rx h forward-unix "$D/x.sock"
check "the HTTP forward ran all along" kill -0 "$FWD_HTTP"
kill "$FWD_HTTP"
wait "$FWD_HTTP" 2>/dev/null
check "rexecd is still up" rexecd_alive h
finish
