#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Writes answered before the host's reply (docs/fuse-qtfs.md,
# "Write-behind"): nothing a process on the DPU can see differs from
# writes answered with the host's reply, except the moment the host sees
# them and which call says that one failed.  Right after a burst of small
# writes, with none of them closed: the file's size (stat, a listing with
# attributes, a hard link made then, a lookup of a name the host gave it),
# a read through another open file,
# a truncation, rewrites of one range, O_APPEND writes from two open
# files, a create with O_TRUNC of a name the host has just given the
# file, all against what a local file gives; the host has every byte once
# the file is closed or fsynced.  A host file system that fills up: the
# error comes with a later write or the close, never lost, and the client
# logs it; with -o write_behind=0 the failing write itself says it.  A
# kill -9 of the server with writes on their way: the close comes back
# within the deadline, and where it says success the host has the bytes.

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"
. "${top_srcdir:-.}/tests/fs/hostile-env.sh"

mkdir -p "$T/exp/disk" "$T/exp/small" "$T/local"
mount -t tmpfs -o size=1m tmpfs "$T/exp/small" || exit 1
QTFS_MOUNTS="$T/exp/small"
start_server "$T/server.log" --listen "unix:$T/sock" --export "$T/exp" || exit 1
check "mount" mount_qtfs "unix:$T/sock:$T/exp" "$T/mnt" -o allow_other,timeout=5 2>"$T/client.log"
check "mount with write_behind=0" mount_qtfs "unix:$T/sock:$T/exp" "$T/sync" -o write_behind=0,timeout=5

# The same steps on the mount and in a local directory; each prints what it saw.
cat >"$T/steps.py" <<'PY'
import os, stat, sys

d = sys.argv[1]
host = sys.argv[2] if len(sys.argv) > 2 else d  # the same directory on the host
out = []
blk = lambda i: bytes([65 + i % 26]) * 4096


def say(*a):
    out.append(" ".join(str(x) for x in a))


# 256 writes of 4 KiB, none closed: size by fstat, stat and a listing.
f = os.path.join(d, "burst")
fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for i in range(256):
    os.write(fd, blk(i))
say("fstat", os.fstat(fd).st_size, "stat", os.stat(f).st_size)
say("listing", [e.stat().st_size for e in os.scandir(d) if e.name == "burst"])
# A read through another open file.
with open(f, "rb") as r:
    data = r.read()
say("read", len(data), data == b"".join(blk(i) for i in range(256)))
# A name the host gives the file, looked up on the DPU right after more
# writes: the lookup brings the host's attributes of the file.
os.link(os.path.join(host, "burst"), os.path.join(host, "burst.host"))
try:
    os.getxattr(d, "user.qtfs.sync")  # the mount: the host's new name is known
except OSError:
    pass
for i in range(256):
    os.write(fd, blk(i))
say("host name", os.stat(f + ".host").st_size, os.fstat(fd).st_size)
# A listing with attributes opened before more writes and read after them.
with os.scandir(d) as it:
    for i in range(256):
        os.write(fd, blk(i))
    say("listing again", sorted(e.stat().st_size for e in it if e.name.startswith("burst")))
# A hard link made now, and the size through it.
for i in range(16):
    os.write(fd, blk(i))
os.link(f, f + ".link")
say("link", os.stat(f + ".link").st_size, os.lstat(f + ".link").st_nlink)
# A truncation among writes.
for i in range(32):
    os.write(fd, blk(i))
os.ftruncate(fd, 5000)
os.pwrite(fd, b"z" * 100, 6000)
say("truncated", os.fstat(fd).st_size, os.stat(f).st_size)
os.close(fd)
with open(f, "rb") as r:
    say("after", r.read() == blk(0) + blk(1)[:904] + b"\0" * 1000 + b"z" * 100)

# One range written again and again, alternating with its neighbour.
f = os.path.join(d, "rewrite")
fd = os.open(f, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
# As root, every other write as nobody (the server makes that one from its
# thread pool, the others on its io_uring: two queues side by side).
mixed = os.geteuid() == 0
for i in range(2000):
    if mixed and i % 2:
        os.seteuid(65534)
    os.pwrite(fd, bytes([i % 251]) * 24000, 8000 * (i % 3))
    if mixed and i % 2:
        os.seteuid(0)
say("rewrite", os.fstat(fd).st_size, os.pread(fd, 8, 0), os.pread(fd, 8, 15996), os.pread(fd, 8, 39992))
os.close(fd)

# O_APPEND from two open files in turn, and a plain write between.
f = os.path.join(d, "log")
a = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
b = os.open(f, os.O_WRONLY | os.O_APPEND)
for i in range(100):
    os.write(a if i % 2 else b, b"line %03d\n" % i)
    if i == 50:
        os.pwrite(os.open(f, os.O_WRONLY), b"X", 0)
os.close(a)
os.close(b)
with open(f, "rb") as r:
    data = r.read()
say("append", len(data), data[:9], data[-9:])

# A file renamed over while its writes are on their way.
f = os.path.join(d, "tmp")
fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for i in range(64):
    os.write(fd, blk(i))
os.rename(f, os.path.join(d, "final"))
say("renamed", os.stat(os.path.join(d, "final")).st_size)
os.close(fd)

# A name the host gives a file with writes on their way, made a moment
# before the DPU opens it with O_CREAT|O_TRUNC: in a directory made from
# the DPU, whose names the client keeps, the DPU's kernel usually still
# finds the name absent then and sends a create, which must empty the
# file after those writes, not before them.
sub = os.path.join(d, "made")
os.mkdir(sub)
f = os.path.join(sub, "w")
fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for i in range(256):
    os.write(fd, blk(i))
os.link(os.path.join(host, "made", "w"), os.path.join(host, "made", "w2"))
fd2 = os.open(os.path.join(sub, "w2"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
say("created over", os.fstat(fd2).st_size, os.fstat(fd).st_size)
os.write(fd2, b"new")
os.close(fd2)
os.close(fd)
say("after it", os.stat(f).st_size)
print("\n".join(out))
PY
python3 "$T/steps.py" "$T/local" >"$T/local.out" 2>&1
python3 "$T/steps.py" "$T/mnt/disk" "$T/exp/disk" >"$T/mnt.out" 2>&1
check "writes on their way: what a local file gives ($(tr '\n' '|' <"$T/mnt.out"))" \
	cmp -s "$T/local.out" "$T/mnt.out" || diff "$T/local.out" "$T/mnt.out"
for f in burst rewrite log final made/w; do
	check "... the host has $f once it is closed" cmp -s "$T/local/$f" "$T/exp/disk/$f"
done
# The same as a user other than root: the server writes for such a caller
# from its thread pool (it drops set-id bits first), side by side, where
# the order of one file's writes is the client's to keep.
mkdir -m 777 "$T/local/nobody" "$T/exp/disk/nobody"
/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups \
	/usr/bin/python3 "$T/steps.py" "$T/mnt/disk/nobody" "$T/exp/disk/nobody" >"$T/nobody.out" 2>&1
check "... as nobody too ($(tr '\n' '|' <"$T/nobody.out"))" cmp -s "$T/local.out" "$T/nobody.out"
for f in burst rewrite log final made/w; do
	check "... the host has $f once it is closed" cmp -s "$T/local/$f" "$T/exp/disk/nobody/$f"
done

# fsync without a close: the host has every byte when it returns.
check "fsync: the host has the bytes when it returns" python3 - "$T/mnt/disk/fs" "$T/exp/disk/fs" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for i in range(200):
    os.write(fd, b"%04d" % i * 1024)
os.fsync(fd)
with open(sys.argv[2], "rb") as f:
    ok = f.read() == b"".join(b"%04d" % i * 1024 for i in range(200))
os.close(fd)
sys.exit(0 if ok else 1)
PY

# A host file system that fills up (1 MiB of tmpfs).  $1: the mount.
cat >"$T/full.py" <<'PY'
import errno, os, sys
path = sys.argv[1]
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
at = None
for i in range(512):
    try:
        os.write(fd, b"x" * 4096)
    except OSError as e:
        at = "write %d: %s" % (i, errno.errorcode[e.errno])
        break
try:
    os.close(fd)
    closed = "ok"
except OSError as e:
    closed = errno.errorcode[e.errno]
print(at, "close", closed)
PY
out=$(python3 "$T/full.py" "$T/mnt/small/big")
check "a full host file system: a later write or the close says ENOSPC ($out)" \
	sh -c "echo '$out' | grep -q ENOSPC"
# (The error reaches the writer first: the log line may come a moment later.)
check "... and the client logged it" \
	wait_until 5 grep -q "failed there: No space left on device" "$T/client.log"
rm -f "$T/exp/small/big"
out=$(python3 "$T/full.py" "$T/sync/small/big")
check "write_behind=0: the failing write itself says ENOSPC ($out)" \
	sh -c "echo '$out' | grep -Eq '^write (25[0-9]|2[0-4][0-9]): ENOSPC close ok'"
rm -f "$T/exp/small/big"
out=$(python3 "$T/full.py" "$T/mnt/small/big")
check "the next file after the error is answered early again ($out)" \
	sh -c "echo '$out' | grep -q ENOSPC"
rm -f "$T/exp/small/big"

check "write_behind: a bad value is a usage error (exit 2)" \
	sh -c "'$FUSE_QTFS' -o write_behind=x unix:$T/sock:$T/exp '$T/bad' 2>'$T/bad.err'; [ \$? -eq 2 ] && grep -q write_behind '$T/bad.err'"

# A create without O_EXCL goes at once beside writes on their way, with
# O_EXCL added.  One that finds the name taken (a name the host has just
# given a file whose writes are on their way, which the DPU's kernel did
# not know yet) must empty that file after those writes, not before.
# qtfs-mitm holds back the host's reports, so that the DPU's kernel finds
# the name absent in a directory made from the DPU and sends a create, and
# every WRITE for 300 ms, so that the writes are still on their way then.
server=$SERVER_PID
start_server "$T/server-key.log" --listen "unix:$T/ksock" --export "$T/exp" --key-file "$KEY" || exit 1
key_server=$SERVER_PID
SERVER_PID=$server
start_mitm "$T/mitm.log" --listen "unix:$T/mitm.sock" --upstream "unix:$T/ksock" --rate 0 \
	--delay-watch=2000 --delay-writes=300
check "mount through a mitm that holds back reports and writes" \
	mount_qtfs "unix:$T/mitm.sock:$T/exp/disk" "$T/mm" --key-file "$KEY" -o timeout=5 -vv \
	2>"$T/client-mitm.log"
sleep 2.5 # the watch's first reply, held back too
out=$(python3 - "$T/mm/over" "$T/exp/disk/over" <<'PY'
import os, sys
d, host = sys.argv[1], sys.argv[2]
os.mkdir(d)
fd = os.open(os.path.join(d, "w"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for i in range(16):
    os.write(fd, bytes([65 + i]) * 65536)
os.link(os.path.join(host, "w"), os.path.join(host, "w2"))
fd2 = os.open(os.path.join(d, "w2"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd2, b"new")
os.close(fd2)
os.close(fd)
print(os.stat(os.path.join(d, "w")).st_size, open(os.path.join(host, "w"), "rb").read()[:8])
PY
)
check "a create O_TRUNC of a name the host has just given a file with writes on their way: after them ($out)" \
	[ "$out" = "3 b'new'" ]
check "... the create found the name taken and waited for the writes" \
	grep -q 'CREATE "w2": the name is taken, sent again once the writes before it are done' \
	"$T/client-mitm.log"
check "unmount (the mitm's)" umount_qtfs "$T/mm"
stop_mitm "$T/mitm.log"
kill "$key_server"

# kill -9 of the server with writes on their way.
python3 - "$T/mnt/disk/killed" >"$T/killed.out" 2>&1 <<'PY' &
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
open(sys.argv[1] + ".go", "w").close()
t = time.monotonic()
try:
    for i in range(4000):
        t = time.monotonic()
        os.write(fd, b"%07d\n" % i * 512)
except OSError as e:
    # A write on their way that cannot be sent again: a later one says so.
    print("write", e.strerror, round(time.monotonic() - t, 1))
t = time.monotonic()
try:
    os.close(fd)
    print("close ok", round(time.monotonic() - t, 1))
except OSError as e:
    print("close", e.strerror, round(time.monotonic() - t, 1))
PY
writer=$!
wait_until 10 test -e "$T/exp/disk/killed.go"
kill -9 "$SERVER_PID"
start_server "$T/server2.log" --listen "unix:$T/sock" --export "$T/exp" || exit 1
check "kill -9 of the server with writes on their way: the writes and the close come back" wait_gone 300 "$writer"
check "... within the deadline ($(cat "$T/killed.out"))" grep -Eq "^close .* [0-9]\.[0-9]$" "$T/killed.out"
if grep -q "close ok" "$T/killed.out" && ! grep -q "^write" "$T/killed.out"; then
	check "... and having said success, the host has every byte" python3 - "$T/exp/disk/killed" <<'PY'
import sys
with open(sys.argv[1], "rb") as f:
    sys.exit(0 if f.read() == b"".join(b"%07d\n" % i * 512 for i in range(4000)) else 1)
PY
fi

check "unmount write_behind=0" umount_qtfs "$T/sync"
check "unmount" umount_qtfs "$T/mnt"
finish
