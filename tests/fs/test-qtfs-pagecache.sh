#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# What the DPU keeps of a file's data between requests.  First its page
# cache across opens (docs/fuse-qtfs.md, "Page cache"): an
# open keeps a file's cached pages while the host's copy is unchanged (same
# mtime, ctime and size, and no change for a while before the open that
# read them), and drops them otherwise.  Residency is what fincore(1) sees
# (it opens the file too); content is compared with the host's copy after
# every kind of change a stale cache would hide: rewritten in place with
# the same size, with its mtime set back, changed twice within moments,
# renamed over by another file of the same size and times, and written from
# the DPU.  On a disk and on tmpfs; -o auto_cache=0 drops pages at every
# open.  Then file capabilities (fs.c, "File capabilities before a write"):
# the kernel asks before every write whether the file has any to drop; an
# answer of none is kept attr_timeout seconds, so writes stop costing two
# round trips each, but a capability set from the DPU is seen at once, one
# set on the host at once with attr_timeout=0, and a write from the DPU
# drops the host's either way, as a write on the host would.  Last, how a
# large read's bytes come in (docs/fuse-qtfs.md, "Replies into pipes"):
# from the socket into a pipe and on into the kernel, never through the
# client's memory; on a mount of its own, the client holds pipes after
# one read that it did not before (and never did).

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"

if ! command -v fincore >/dev/null; then
	echo "SKIP: no fincore (util-linux)"
	exit 77
fi

mkdir -p "$T/exp/disk" "$T/exp/mem"
mount -t tmpfs tmpfs "$T/exp/mem" || exit 1
QTFS_MOUNTS="$T/exp/mem"
# -vv: the server logs each request that fails (a GETXATTR of no such
# attribute among them), which the capability checks count.
start_server "$T/server.log" --listen "unix:$T/sock" --export "$T/exp" -vv || exit 1
check "mount" mount_qtfs "unix:$T/sock:$T/exp" "$T/mnt" -o timeout=5
check "mount with auto_cache=0,attr_timeout=0" mount_qtfs "unix:$T/sock:$T/exp" "$T/nokeep" \
	-o auto_cache=0,attr_timeout=0,timeout=5

# resident FILE: the bytes of FILE in the DPU's page cache, after an open.
resident() {
	fincore --bytes --noheadings --output RES "$1" | tr -d ' '
}

# same HOSTFILE DPUFILE: the DPU reads what the host has.
same() {
	cmp -s "$1" "$2"
}

# fill FILE SEED: 4 MiB of bytes that depend on SEED (all files the same size).
fill() {
	python3 -c 'import random, sys; sys.stdout.buffer.write(random.Random(sys.argv[1]).randbytes(4 << 20))' "$2" >"$1"
}

size=$((4 << 20))
for fs in disk mem; do
	h=$T/exp/$fs
	for f in keep inplace mtime rename other dpuw nokeep; do
		fill "$h/$f" "$fs$f"
	done
	touch -r "$h/rename" "$h/other"
done
# The host reports a file as unchanged for a while once its ctime is more
# than QTFS_SETTLED_S (2) seconds old.
sleep 3.1

for fs in disk mem; do
	h=$T/exp/$fs
	d=$T/mnt/$fs
	for f in keep inplace mtime rename dpuw; do
		cat "$d/$f" >/dev/null
	done
	check "$fs: an unchanged file keeps its pages across opens" [ "$(resident "$d/keep")" = $size ]
	check "$fs: ... and reads the same" same "$h/keep" "$d/keep"

	printf 'X' | dd of="$h/inplace" bs=1 seek=12345 conv=notrunc 2>/dev/null
	check "$fs: rewritten in place on the host, same size: the next open drops the pages" \
		[ "$(resident "$d/inplace")" = 0 ]
	check "$fs: ... and reads the host's bytes" same "$h/inplace" "$d/inplace"

	touch -r "$h/mtime" "$T/mtime.ref"
	printf 'Y' | dd of="$h/mtime" bs=1 seek=4321 conv=notrunc 2>/dev/null
	touch -r "$T/mtime.ref" "$h/mtime"
	check "$fs: rewritten with its mtime set back: the host's bytes (ctime moved)" \
		same "$h/mtime" "$d/mtime"

	# Changed twice within moments (a coarse clock may give both changes
	# one timestamp): the open between them saw an unsettled file.
	fill "$h/twice" "$fs-twice-1"
	cat "$d/twice" >/dev/null
	fill "$h/twice" "$fs-twice-2"
	check "$fs: changed twice within moments: the second change is read" same "$h/twice" "$d/twice"

	mv "$h/other" "$h/rename"
	check "$fs: renamed over by a file of the same size and mtime: the new file is read" \
		within 150 same "$h/rename" "$d/rename"

	fill "$T/dpuw.new" "$fs-dpu"
	cp "$T/dpuw.new" "$d/dpuw"
	check "$fs: written from the DPU: the host has it" same "$T/dpuw.new" "$h/dpuw"
	check "$fs: ... and the DPU reads it again" same "$T/dpuw.new" "$d/dpuw"

	cat "$T/nokeep/$fs/nokeep" >/dev/null
	check "$fs: auto_cache=0: an open drops the pages" [ "$(resident "$T/nokeep/$fs/nokeep")" = 0 ]
	check "$fs: ... and reads the same" same "$h/nokeep" "$T/nokeep/$fs/nokeep"
done

# File capabilities.  caps FILE [HEX]: set FILE's security.capability to a
# version 2 record permitting CAP_NET_BIND_SERVICE, or print "none" or the
# record's hex.
caps() {
	python3 - "$@" <<'PY'
import errno, os, struct, sys
path = sys.argv[1]
if len(sys.argv) > 2:
    os.setxattr(path, "security.capability", struct.pack("<5I", 0x02000000, 1 << 10, 0, 0, 0))
    sys.exit(0)
try:
    print(os.getxattr(path, "security.capability").hex())
except OSError as e:
    if e.errno != errno.ENODATA:
        raise
    print("none")
PY
}

# writes FILE N: N separate 100-byte writes, appended.
writes() {
	python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
for _ in range(int(sys.argv[2])):
    os.write(fd, b"x" * 100)
os.close(fd)' "$1" "$2"
}

# asked: the GETXATTRs of a missing attribute that reached the server.
asked() {
	grep -c "GETXATTR: No data available" "$T/server.log"
}

h=$T/exp/disk
d=$T/mnt/disk
: >"$h/capw"
before=$(asked)
writes "$d/capw" 200
after=$(asked)
check "200 writes from the DPU: the host was asked for the file's capabilities $((after - before)) times (at most 10)" \
	[ $((after - before)) -le 10 ]
check "... and every byte is there" [ "$(stat -c %s "$h/capw")" = 20000 ]
cap_set=$(caps "$h/capw" set && caps "$h/capw")
check "capabilities set on the host ($cap_set)" [ "$cap_set" != none ]
check "... are seen at once through an attr_timeout=0 mount" [ "$(caps "$T/nokeep/disk/capw")" = "$cap_set" ]
writes "$d/capw" 1
check "... and a write from the DPU drops them, as on the host" [ "$(caps "$h/capw")" = none ]
caps "$d/capw" set
check "capabilities set from the DPU are seen there at once" [ "$(caps "$d/capw")" = "$cap_set" ]
check "... and on the host" [ "$(caps "$h/capw")" = "$cap_set" ]
writes "$d/capw" 1
check "... and a write from the DPU drops them" [ "$(caps "$h/capw")" = none ]
check "... which the DPU sees at once" [ "$(caps "$d/capw")" = none ]

check "-o auto_cache=2 is a usage error (exit 2) that names it" \
	sh -c "'$FUSE_QTFS' -o auto_cache=2 unix:$T/sock:$T/exp $T/none 2>'$T/ac.err'; [ \$? -eq 2 ] &&
		head -n 1 '$T/ac.err' | grep -q 'auto_cache'"

# -- appends shared with the host ---------------------------------------------------
# A file the DPU and the host append to in turn: every line lands at the
# host file's end in the order written, and a reader on the DPU that keeps
# the file open reads the host's bytes after each round.  Append mode from
# the open, and set with fcntl(F_SETFL) after it, which the host's
# descriptor does not have (the write says so: QTFS_WR_APPEND); and
# cleared with F_SETFL after an O_APPEND open: a write at an offset then
# goes there, as on the host (QTFS_MNT_WRITE_MODE).
# appends MODE HOSTFILE DPUFILE: "ok" or what went wrong.
appends() {
	python3 - "$@" <<'PY'
import fcntl, os, sys
mode, h, d = sys.argv[1:]
open(h, "wb").close()
os.stat(d)
if mode == "clear":
    with open(h, "wb") as f:
        f.write(b"0123456789")
    os.stat(d)
    fd = os.open(d, os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"ab")
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_APPEND)
    os.pwrite(fd, b"XY", 3)
    os.close(fd)
    with open(h, "rb") as f:
        got = f.read()
    print("ok" if got == b"012XY56789ab" else "the host has %r, not %r" % (got, b"012XY56789ab"))
    sys.exit(0)
if mode == "open":
    fd = os.open(d, os.O_WRONLY | os.O_APPEND)
else:
    fd = os.open(d, os.O_WRONLY)
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
reader = os.open(d, os.O_RDONLY)
want = b""
for r in range(20):
    with open(h, "ab") as f:
        f.write(b"host %02d\n" % r)
    os.write(fd, b"dpu %02d, a longer line\n" % r)
    want += b"host %02d\ndpu %02d, a longer line\n" % (r, r)
    with open(h, "rb") as f:
        got = f.read()
    if got != want:
        print("round %d: the host has %r, not %r" % (r, got[-40:], want[-40:]))
        sys.exit(0)
    seen = os.pread(reader, 1 << 16, 0)
    if seen != want:
        print("round %d: the DPU's reader sees %r, not %r" % (r, seen[-40:], want[-40:]))
        sys.exit(0)
print("ok")
PY
}
for fs in disk mem; do
	out=$(appends open "$T/exp/$fs/app" "$T/mnt/$fs/app")
	check "$fs: O_APPEND from the open, the DPU and the host in turn: each line at the end ($out)" [ "$out" = ok ]
	out=$(appends setfl "$T/exp/$fs/app" "$T/mnt/$fs/app")
	check "$fs: O_APPEND set by fcntl(F_SETFL) after the open: the same ($out)" [ "$out" = ok ]
	out=$(appends clear "$T/exp/$fs/app" "$T/mnt/$fs/app")
	check "$fs: O_APPEND cleared by fcntl(F_SETFL): a write at an offset goes there ($out)" [ "$out" = ok ]
done

# -- a large read's bytes, through pipes ------------------------------------------
check "mount for the reads through pipes" mount_qtfs "unix:$T/sock:$T/exp" "$T/pipes" -o timeout=5
client=$(pgrep -f -- "$FUSE_QTFS .*$T/pipes\$")
check "... its daemon is found ($client)" [ -n "$client" ]
pipes() {
	_n=0
	for _fd in "/proc/$client/fd"/*; do
		case $(readlink "$_fd") in pipe:*) _n=$((_n + 1)) ;; esac
	done
	echo "$_n"
}
fill "$T/exp/disk/spliced" spliced
before=$(pipes)
cat "$T/pipes/disk/spliced" >/dev/null
after=$(pipes)
check "a 4 MiB read went through pipes on the DPU (the client's pipe descriptors: $before before, $after after)" \
	[ "$after" -gt "$before" ]
check "... and brought the host's bytes" same "$T/exp/disk/spliced" "$T/pipes/disk/spliced"

check "unmount" umount_qtfs "$T/mnt"
check "unmount the auto_cache=0 mount" umount_qtfs "$T/nokeep"
check "unmount the mount of the reads through pipes" umount_qtfs "$T/pipes"
umount -l "$T/exp/mem"
finish
