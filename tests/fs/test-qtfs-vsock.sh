#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# fuse-qtfs over vsock, the transport between a host and a DPU (or a VM)
# that has no IP network: qtfs-server listens on vsock://any:PORT, the
# client mounts vsock://local:PORT (CID 1, this machine: the kernel's
# vsock_loopback module).  A listener without a key is refused, a client
# without the key or with another one cannot mount; with it, the POSIX
# differential suite, random operations, large reads and writes byte for
# byte, and a server killed with SIGKILL and started again on the same
# port: the mount comes back.  Skipped (77) where the kernel cannot make a
# vsock connection to itself; make check-vm's guest (Debian 12's kernel)
# always can, and there a skip counts as a failure.

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"

if ! vsock_loopback; then
	echo "SKIP: this kernel cannot make a vsock connection to itself (no vsock_loopback)"
	exit 77
fi
vport=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 40000))
mkdir -p "$T/exp" "$T/native"

: >"$T/empty.conf"
check "a vsock listener without a key is refused" \
	sh -c '! "$1" --config "$2" --listen "vsock://any:$3" --export "$4" >"$5" 2>&1 &&
		grep -q "without a pre-shared key" "$5"' sh "$QTFS_SERVER" "$T/empty.conf" "$vport" "$T/exp" "$T/nokey.out"
start_server "$T/server.log" --listen "vsock://any:$vport" --export "$T/exp" --key-file "$KEY" || exit 1
check "the server listens on vsock" grep -q "listening on vsock://" "$T/server.log"

mkdir -p "$T/mnt"
check "no key: the mount is refused" \
	sh -c '! timeout 20 "$1" -o timeout=2 "vsock://local:$2:$3" "$4" 2>"$5" &&
		grep -q "server requires a pre-shared key" "$5"' sh \
	"$FUSE_QTFS" "$vport" "$T/exp" "$T/mnt" "$T/nokey-client.err"
head -c 48 /dev/urandom | base64 >"$T/psk2"
chmod 600 "$T/psk2"
check "another key: the mount is refused" \
	sh -c '! timeout 20 "$1" --key-file "$2" -o timeout=2 "vsock://local:$3:$4" "$5" 2>"$6" &&
		grep -q "wrong pre-shared key" "$6"' sh \
	"$FUSE_QTFS" "$T/psk2" "$vport" "$T/exp" "$T/mnt" "$T/badkey.err"
if is_mounted "$T/mnt"; then
	fail "... yet something is mounted"
else
	ok "... and nothing is mounted"
fi

check "mount over vsock" mount_qtfs "vsock://local:$vport:$T/exp" "$T/mnt" --key-file "$KEY" -o conns=2,allow_other
check "the client's connections came over vsock" grep -q "vsock(" "$T/server.log"
check "fsdiff over vsock (as root and as nobody)" \
	"$FSDIFF" --user 65534:65534 --no-lock-pid "$T/native" "$T/mnt"
check "fsx 20000 ops over vsock" "$FSX" -S 3 -N 20000 -m "$T/mnt"
head -c 8000000 /dev/urandom >"$T/big"
cp "$T/big" "$T/mnt/big"
check "8 MB written over vsock arrives intact" cmp -s "$T/big" "$T/exp/big"
check "and reads back intact" cmp -s "$T/big" "$T/mnt/big"
check "large reads over vsock" big_reads "$T/exp" "$T/mnt"

# The server killed and started again: the client reconnects.
echo "before" >"$T/exp/back"
kill -KILL "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null
echo "after" >"$T/exp/back"
start_server "$T/server2.log" --listen "vsock://any:$vport" --export "$T/exp" --key-file "$KEY" || exit 1
check "after a kill -9 and a restart of the server the mount answers again" \
	wait_until 30 sh -c 'grep -qx after "$1"' sh "$T/mnt/back"
check "unmount" umount_qtfs "$T/mnt"
finish
