#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# rexec over vsock, the transport between a host and a DPU (or a VM) that
# has no IP network: rexecd listens on vsock://any:PORT, rexec connects to
# vsock://local:PORT (CID 1, this machine: the kernel's vsock_loopback
# module).  The exit status, stdout and stderr apart, stdin byte for byte,
# a forwarded signal and a SIGTERM that ends the remote command; a wrong
# key and no key are refused, and so is a vsock listener without one.
# Skipped (77) where the kernel cannot make a vsock connection to itself;
# make check-vm's guest (Debian 12's kernel) always can, and there a skip
# counts as a failure.

. "${top_srcdir:-.}/tests/rexec/rexec-env.sh"

if ! vsock_loopback; then
	echo "SKIP: this kernel cannot make a vsock connection to itself (no vsock_loopback)"
	exit 77
fi
vport=$(random_port)
printf '[rexecd]\nallow_all=true\n' >"$T/nokey.conf"
check_rc_msg "rexecd refuses a vsock listener without a key" 1 "without a pre-shared key" \
	"$REXECD" --config "$T/nokey.conf" --listen "vsock://any:$vport"
start_rexecd v tcp=no -- --listen "vsock://any:$vport" --key-file "$KEY" || exit 1
check "rexecd listens on vsock too" wait_until 10 grep -q "listening on vsock://" "$T/v.log"
rxv() {
	"$REXEC" --config "$CLIENT_CONF" -H "vsock://local:$vport" --key-file "$KEY" "$@"
}

check_rc "exit 42 over vsock" 42 rxv sh -c 'exit 42'
check "the connection came over vsock" grep -q "peer=vsock(" "$T/v.log"
head -c 48 /dev/urandom | base64 >"$T/psk2"
chmod 600 "$T/psk2"
check_rc "another key over vsock: 255" 255 \
	"$REXEC" --config "$CLIENT_CONF" -H "vsock://local:$vport" --key-file "$T/psk2" true
check_rc_msg "no key for a vsock URI: refused before connecting" 125 "needs a pre-shared key" \
	"$REXEC" --config "$CLIENT_CONF" -H "vsock://local:$vport" true

head -c 8388608 /dev/urandom >"$T/big"
want=$(sha256sum <"$T/big" | cut -d' ' -f1)
check "8 MiB of stdout over vsock intact" [ "$(rxv cat "$T/big" | sha256sum | cut -d' ' -f1)" = "$want" ]
check "8 MiB of stdin through cat and back intact" \
	[ "$(rxv cat <"$T/big" | sha256sum | cut -d' ' -f1)" = "$want" ]
rxv sh -c 'echo out; echo err >&2' >"$T/o" 2>"$T/e"
check "stdout and stderr apart over vsock" sh -c "[ \"\$(cat '$T/o')\" = out ] && [ \"\$(cat '$T/e')\" = err ]"
check "-e and cwd over vsock" [ "$(rxv -C /tmp -e X=y sh -c 'echo "$X $PWD"')" = "y /tmp" ]

signal_checks "over vsock" rxu "vsock://local:$vport"
check "rexecd is still up" rexecd_alive v
finish
