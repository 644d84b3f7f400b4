#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Two hosts: rexecd in one network namespace ("host"), rexec in another
# ("dpu"), joined by a veth pair, as on a machine and its DPU.  Only the
# network is split (nsenter --net), so both see the same files and
# processes and the test can compare.  Over TCP with a key: the exit
# status, stdout and stdin byte for byte, a forwarded signal, and the
# cleanup of the remote process group when the client is SIGKILLed, and a
# DPU that goes silent (its link cut): both ends give up after peer_timeout
# and the remote command is ended.  The server must not be reachable except
# over the veth link.

. "${top_srcdir:-.}/tests/rexec/rexec-env.sh"

if ! command -v ip >/dev/null || ! command -v nsenter >/dev/null; then
	echo "FAIL: ip (iproute2) and nsenter (util-linux) are needed" >&2
	exit 1
fi
nh=rexec-h-$$
nd=rexec-d-$$
# Run by the cleanup trap once the daemons are gone (it exits after).
cleanup_more() {
	ip netns del "$nh" 2>/dev/null
	ip netns del "$nd" 2>/dev/null
}
netns_pair "$nh" "$nd" "rh$$" "rd$$" 10.252.0.1/24 10.252.0.2/24 || exit 1

SERVER_WRAP="nsenter --net=/run/netns/$nh"
REXECD_TCP_ADDR=10.252.0.1
start_rexecd h kill_grace=2s peer_timeout=3s || exit 1
port=$(rexecd_port h)
CLIENT_WRAP="nsenter --net=/run/netns/$nd"

check_rc "the server is not reachable from outside the two namespaces" 255 \
	timeout 20 "$REXEC" --config "$CLIENT_CONF" -H "tcp://10.252.0.1:$port" --key-file "$KEY" true
check_rc "exit 42 across the link" 42 rxt h sh -c 'exit 42'
check "the connection came from the dpu namespace" grep -q "peer=10.252.0.2:[0-9]* argv0=\"sh\"" "$T/h.log"
head -c 48 /dev/urandom | base64 >"$T/psk2"
chmod 600 "$T/psk2"
check_rc "a wrong key across the link: 255" 255 \
	$CLIENT_WRAP "$REXEC" --config "$CLIENT_CONF" -H "tcp://10.252.0.1:$port" --key-file "$T/psk2" true

head -c 52428800 /dev/urandom >"$T/big"
want=$(sha256sum <"$T/big" | cut -d' ' -f1)
check "50 MiB of stdout across the link intact" \
	[ "$(rxt h cat "$T/big" | sha256sum | cut -d' ' -f1)" = "$want" ]
check "50 MiB of stdin through cat and back intact" \
	[ "$(rxt h cat <"$T/big" | sha256sum | cut -d' ' -f1)" = "$want" ]
rm -f "$T/big"
rxt h sh -c 'echo out; echo err >&2' >"$T/o" 2>"$T/e"
check "stdout and stderr apart across the link" sh -c "[ \"\$(cat '$T/o')\" = out ] && [ \"\$(cat '$T/e')\" = err ]"
check "-e and cwd across the link" [ "$(rxt h -C /tmp -e X=y sh -c 'echo "$X $PWD"')" = "y /tmp" ]

signal_checks "across the link" rxt h

bg rxt h sh -c "trap '' TERM; sleep ${MARK}2 & sleep ${MARK}2 & wait"
c=$BG_PID
check "a TERM-ignoring group started" wait_until 10 sh -c "[ \$(pgrep -c -f '^sleep ${MARK}2\$') -eq 2 ]"
kill -KILL "$c"
wait "$c" 2>/dev/null
check "client SIGKILLed: the group is gone within kill_grace + 1 s" \
	wait_until 3 sh -c "! pgrep -f '^sleep ${MARK}2\$' >/dev/null"

# A DPU whose link goes dead (power lost, cable pulled) sends nothing more,
# not even a reset: without a bound on the peer's silence, rexec and the
# remote command would wait for each other for hours.
printf '[rexec]\npeer_timeout=3s\n' >"$CLIENT_CONF"
check "an idle command outlives peer_timeout on a live link" \
	[ "$(rxt h sh -c 'sleep 7; echo alive')" = alive ]
check "... and nobody gave up on the other" sh -c "! grep -q 'no answer from the peer' '$T/h.log'"
bg rxt h sleep "${MARK}3"
c=$BG_PID
check "a remote sleep started" wait_until 10 sh -c "pgrep -f '^sleep ${MARK}3\$' >/dev/null"
ip -n "$nd" link set "rd$$" down
if wait_gone "$c" 15; then
	check "link cut: rexec ends with 255 (got $BG_RC)" [ "$BG_RC" -eq 255 ]
else
	fail "rexec still waits 15 s after its link was cut (peer_timeout=3s)"
fi
check "... rexecd drops the silent client and ends the remote sleep" \
	wait_until 15 sh -c "! pgrep -f '^sleep ${MARK}3\$' >/dev/null"
check "... and says why" grep -q "no answer from the peer's host for 3 s" "$T/h.log"
ip -n "$nd" link set "rd$$" up
check_rc "the link is back: a new command runs" 42 rxt h sh -c 'exit 42'

check "rexecd is still up" rexecd_alive h
finish
