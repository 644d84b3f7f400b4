#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# A hostile server must not take fuse-qtfs down.  qtfs-mitm stands between
# the client and a real qtfs-server, passes every request on and mangles
# one reply in six on the way back (bytes flipped, payloads cut short,
# lengthened or replaced by junk with huge length prefixes, made-up errnos
# in error replies), so that every reply parser of the client sees broken
# input in the middle of real traffic: mounts, lookups, attributes,
# opens, reads and writes, listings (kept or not), links, extended
# attributes, statfs, locks, the host watch.  Through it, a workload of
# every kind of call: each call must end (an error is fine, a hang past the
# deadline is not), the client must stay up, with no sanitizer report.
# Then the mangling stops and the same mount works again: the client
# reconnects by itself where a broken reply ended a connection.  Last,
# two manglings on purpose, in every answer to GETATTR, that the kernel
# would take for a broken root (the mount's end): a negative size, another
# file type; the calls fail while they last, and the mount works after.
# And a block size of 4 GiB, a READLINK answer one byte longer than the
# kernel takes, and a READ answered EINTR when nothing was interrupted.

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"
. "${top_srcdir:-.}/tests/fs/hostile-env.sh"

mkdir -p "$T/exp"
start_server "$T/server.log" --listen "unix:$T/sock" --export "$T/exp" --key-file "$KEY" || exit 1
start_mitm "$T/mitm.log" --listen "unix:$T/mitm.sock" --upstream "unix:$T/sock" --rate 6 \
	--seed "${QTFS_HOSTILE_SEED:-$$}"

# The host side: files, a directory of names, a symlink, an attribute.
python3 "${top_srcdir:-.}/tests/fs/hostile-workload.py" --setup "$T/exp"

check "mount through qtfs-mitm" mount_qtfs "unix:$T/mitm.sock:$T/exp" "$T/mnt" --key-file "$KEY" -o timeout=3 2>"$T/client.log"
client=$(pgrep -f -- "$FUSE_QTFS .*$T/mnt\$")
check "... its daemon is found ($client)" [ -n "$client" ]

# The workload: 3000 calls of every kind (hostile-env.sh, run_workload).
run_workload "$T/mnt" "the hostile server"
check "... and the client is still up" kill -0 "$client"
mangling_stopped "$T/mitm.log" replies

# Honest replies again.  What a broken reply put in the DPU's caches stays
# there as long as it would have: attributes and names until they lapse
# (1 s), a file's pages and a directory's listing while the host's copy is
# unchanged (a cache cannot tell a broken reply from a good one), so the
# checks use files and directories made from now on.
sleep 1.5
head -c 1000000 /dev/urandom >"$T/exp/big2"
works() {
	: >"$T/works.step"
	echo write >"$T/works.step" && echo fresh >"$T/mnt/after" &&
		echo host-has-it >"$T/works.step" && [ "$(cat "$T/exp/after")" = fresh ] &&
		echo read-back >"$T/works.step" && [ "$(cat "$T/mnt/after")" = fresh ] &&
		echo host-file >"$T/works.step" && cmp -s "$T/exp/big2" "$T/mnt/big2" &&
		echo mkdir >"$T/works.step" && mkdir -p "$T/mnt/newdir" &&
		touch "$T/exp/newdir/a" "$T/exp/newdir/b" &&
		echo list >"$T/works.step" && [ "$(ls "$T/mnt/newdir" | tr '\n' ' ')" = "a b " ]
}
again=yes
wait_until 10 works || again="no (last step tried: $(cat "$T/works.step"))"
check "the mount works again once the replies are honest: $again" [ "$again" = yes ]
check "... the client is the same process" kill -0 "$client"
check "unmount" umount_qtfs "$T/mnt"
stop_mitm "$T/mitm.log"

# One mangling on purpose, every time, in the answers to GETATTR: sizes
# no file has (negative, which the kernel reads as past the largest size
# it takes), or another file type than the file's.  Neither may reach the
# kernel, which would take the root for a broken inode and fail every
# call on the mount with EIO until it is unmounted.
for what in size type; do
	start_mitm "$T/mitm-$what.log" --listen "unix:$T/mitm-$what.sock" --upstream "unix:$T/sock" \
		--bad=getattr-$what --paused
	check "mount through it" mount_qtfs "unix:$T/mitm-$what.sock:$T/exp" "$T/mnt-$what" --key-file "$KEY" \
		-o attr_timeout=0
	check "the root's attributes come through" stat "$T/mnt-$what"
	kill -USR2 "$mitm"
	check "qtfs-mitm starts mangling" wait_until 5 grep -q "mangling (again)" "$T/mitm-$what.log"
	check "a GETATTR answer with a bad $what is an error" sh -c "! stat '$T/mnt-$what' 2>'$T/stat.err'"
	cat "$T/stat.err"
	check "... of a file's too" sh -c "! stat '$T/mnt-$what/big' 2>/dev/null"
	kill -USR1 "$mitm"
	check "qtfs-mitm stops mangling" wait_until 5 grep -q "mangling stopped" "$T/mitm-$what.log"
	check "then the root's attributes come through again" stat "$T/mnt-$what"
	check "... calls on the mount work" sh -c "echo $what >'$T/mnt-$what/again' && [ \"\$(cat '$T/exp/again')\" = $what ]"
	check "... and a file's attributes and data are the host's" cmp -s "$T/exp/big" "$T/mnt-$what/big"
	check "unmount" umount_qtfs "$T/mnt-$what"
	stop_mitm "$T/mitm-$what.log"
done

# A preferred I/O size of 4 GiB less one byte in every GETATTR answer.
# The kernel would make it 2 GiB (the power of two below) and the
# inode's block size, and programs size their buffers by it (Python's
# open() refuses a file whose size is past its limits): the client gives
# at most 1 MiB, one request's worth.
start_mitm "$T/mitm-blk.log" --listen "unix:$T/mitm-blk.sock" --upstream "unix:$T/sock" --bad=getattr-blksize
check "mount through it" mount_qtfs "unix:$T/mitm-blk.sock:$T/exp" "$T/mnt-blk" --key-file "$KEY" -o attr_timeout=0
blk=$(python3 -c 'import os, sys; print(os.stat(sys.argv[1]).st_blksize)' "$T/mnt-blk/big")
check "a block size of 4 GiB from the host is 1 MiB at most ($blk)" [ "${blk:-0}" -le 1048576 ]
check "... and the file reads as the host's" python3 -c '
import sys
sys.exit(open(sys.argv[1], "rb").read() != open(sys.argv[2], "rb").read())' "$T/exp/big" "$T/mnt-blk/big"
check "unmount" umount_qtfs "$T/mnt-blk"
stop_mitm "$T/mitm-blk.log"

# A READLINK answer of 4096 bytes, one more than the kernel takes (and
# than any Linux host has): the client answers EIO itself, where passing
# it on would have the kernel refuse the reply (the same EIO for the
# program, and "writing device" in the client's log).
start_mitm "$T/mitm-link.log" --listen "unix:$T/mitm-link.sock" --upstream "unix:$T/sock" --bad=readlink-long
check "mount through it" mount_qtfs "unix:$T/mitm-link.sock:$T/exp" "$T/mnt-link" --key-file "$KEY" \
	2>"$T/client-link.log"
check "readlink of a 4096-byte target fails with EIO" fails_with EIO readlink "$T/mnt-link/link"
check "... the client's own: the kernel took every reply" sh -c "! grep 'writing device' '$T/client-link.log'"
kill -USR1 "$mitm"
check "qtfs-mitm stops mangling" wait_until 5 grep -q "mangling stopped" "$T/mitm-link.log"
check "then readlink gives the host's target" [ "$(readlink "$T/mnt-link/link")" = big ]
check "unmount" umount_qtfs "$T/mnt-link"
stop_mitm "$T/mitm-link.log"

# A READ the host answers with EINTR, which it gives only to a call the
# client interrupted, when nothing was interrupted: the program got no
# signal, so it gets EIO (an EINTR would be a signal that never came; a
# program would retry the read, or fail with a wrong reason).  The read
# goes past what the OPEN brought along, so that it is a READ.
head -c 3000000 /dev/urandom >"$T/exp/eintr"
start_mitm "$T/mitm-eintr.log" --listen "unix:$T/mitm-eintr.sock" --upstream "unix:$T/sock" --bad=read-eintr
check "mount through it" mount_qtfs "unix:$T/mitm-eintr.sock:$T/exp" "$T/mnt-eintr" --key-file "$KEY"
check "an EINTR to a read nobody interrupted is an EIO" python3 -c '
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.pread.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_long]
libc.pread.restype = ctypes.c_ssize_t
fd = os.open(sys.argv[1], os.O_RDONLY)
buf = ctypes.create_string_buffer(65536)
n = libc.pread(fd, buf, 65536, 2000000)
e = ctypes.get_errno() if n < 0 else 0
print("pread:", n, errno.errorcode.get(e, e))
sys.exit(not (n < 0 and e == errno.EIO))' "$T/mnt-eintr/eintr"
kill -USR1 "$mitm"
check "qtfs-mitm stops mangling" wait_until 5 grep -q "mangling stopped" "$T/mitm-eintr.log"
check "then the file reads as the host's" cmp -s "$T/exp/eintr" "$T/mnt-eintr/eintr"
check "unmount" umount_qtfs "$T/mnt-eintr"
stop_mitm "$T/mitm-eintr.log"
finish
