#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# fuse-qtfs against the native file system, differentially: fsdiff runs the
# same POSIX scenarios on a directory of the host's file system and on a
# fuse-qtfs mount of another directory of the same file system, and every
# result and errno must match (also as an unprivileged user, through
# default_permissions); fsx then runs 100k seeded random operations on the
# mount with zero mismatches.  Over a unix socket with one connection, then
# over TCP with a pre-shared key and four connections.

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"

mkdir -p "$T/exp" "$T/native" "$T/exp2" "$T/native2"

# -- unix socket, one connection ---------------------------------------------
start_server "$T/server.log" --listen "unix:$T/sock" --export "$T/exp" --export "$T/exp2" || exit 1
check "mount over unix" mount_qtfs "unix:$T/sock:$T/exp" "$T/mnt" -o allow_other
check "fsdiff (unix, as root and as nobody)" \
	"$FSDIFF" --user 65534:65534 "$T/native" "$T/mnt"
check "fsx 100000 ops with mmap (unix)" "$FSX" -N 100000 -m "$T/mnt"
check "unmount" umount_qtfs "$T/mnt"

# -- tcp with a key, four connections -----------------------------------------
port=$(free_port)
start_server "$T/server-tcp.log" --listen "tcp://127.0.0.1:$port" --export "$T/exp2" \
	--key-file "$KEY" || exit 1
check "mount over tcp with conns=4" mount_qtfs "tcp://127.0.0.1:$port:$T/exp2" "$T/mnt2" \
	--key-file "$KEY" -o allow_other,conns=4
check "fsdiff (tcp, conns=4)" "$FSDIFF" --user 65534:65534 "$T/native2" "$T/mnt2"
check "fsx 20000 ops, another seed (tcp)" "$FSX" -S 7 -N 20000 "$T/mnt2"

# Parallel writers on several connections: each file must be intact.
i=0
pids=
while [ $i -lt 8 ]; do
	head -c 3000000 /dev/urandom >"$T/src$i"
	cp "$T/src$i" "$T/mnt2/par$i" &
	pids="$pids $!"
	i=$((i + 1))
done
for p in $pids; do
	wait "$p"
done
i=0
good=yes
while [ $i -lt 8 ]; do
	cmp -s "$T/src$i" "$T/exp2/par$i" || good=no
	i=$((i + 1))
done
check "8 parallel 3 MB copies arrive intact" [ $good = yes ]
check "unmount (tcp)" umount_qtfs "$T/mnt2"
finish
