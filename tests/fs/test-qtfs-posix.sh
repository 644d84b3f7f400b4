#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# fuse-qtfs against the native file system, differentially: fsdiff runs the
# same POSIX scenarios on a directory of the host's file system and on a
# fuse-qtfs mount of another directory of the same file system, and every
# result and errno must match (also as an unprivileged user, through
# default_permissions); fsx then runs 100k seeded random operations on the
# mount with zero mismatches.  Over a unix socket with one connection, then
# over TCP with a pre-shared key and four connections, then with the epoll
# event loop on both sides.  Last, an overlayfs on the DPU whose upper
# layer is on a mount.

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"

mkdir -p "$T/exp" "$T/native" "$T/exp2" "$T/native2"

# -- unix socket, one connection ---------------------------------------------
start_server "$T/server.log" --listen "unix:$T/sock" --export "$T/exp" --export "$T/exp2" || exit 1
check "mount over unix" mount_qtfs "unix:$T/sock:$T/exp" "$T/mnt" -o allow_other 2>"$T/client1.log"
# Locks are kept on the host, which cannot always tell which DPU process
# holds one (docs/fuse-qtfs.md, "Locks"): F_GETLK's pid is not compared.
check "fsdiff (unix, as root and as nobody)" \
	"$FSDIFF" --user 65534:65534 --no-lock-pid "$T/native" "$T/mnt"
check "fsx 100000 ops with mmap (unix)" "$FSX" -N 100000 -m "$T/mnt"
check "large reads (unix)" big_reads "$T/exp" "$T/mnt"
# The host takes them through its page cache, not with O_DIRECT (whose
# alignment rules the server's buffers do not meet): every READ failed.
check "O_DIRECT reads and writes (unix)" direct_io "$T/exp" "$T/mnt"
# The kernel takes the smaller of the mount's read_ahead_kb and INIT's
# max_readahead: both must say -o readahead_kb's (here the default).
ra=$(readahead_kb "$T/mnt")
check "the mount's readahead is the default 16 MiB (got $ra KiB)" [ "$ra" = 16384 ]
# READs as large as a 1 MiB pipe holds spliced (fs.h, QTFS_FUSE_READ_MAX*).
check "max_read is 1008 KiB over a unix socket" grep -q " $T/mnt fuse.fuse-qtfs .*max_read=1032192" /proc/mounts
cpid=$(pgrep -f "^$FUSE_QTFS .* $T/mnt\$")
check "unmount" umount_qtfs "$T/mnt"
# A clean unmount is quiet: the client ends at once, and says only that
# it mounted and was unmounted (no failed call of its shutdown, no
# connection "lost"), and, on a kernel before 6.2, that it cannot expire
# cached names.
# (It was reparented to pid 1, which may leave it a zombie for a while:
# wait_gone counts that as ended, kill -0 would not.)  Within 20 s: it
# ends in well under a second here, but a sanitized build checks for
# leaks as it exits, which took over 10 s once in a loaded distcheck; a
# client waiting for a call's deadline would take 30 s.
check "... the client was found" [ -n "$cpid" ]
check "... the client ends" wait_gone 200 "${cpid:-0}"
check "... and logged only its mount and unmount: $(tr '\n' '|' <"$T/client1.log")" \
	sh -c "[ \$(grep -c -v -e ': mounted ' -e ' was unmounted\$' -e 'cannot expire cached names' \
		'$T/client1.log') -eq 0 ]"

# A mount point whose name mountinfo writes escaped (a backslash is \134
# there): the client found its own mount's device by the escaped name, and
# such a mount kept the kernel's 128 KiB of readahead.
ra_mnt="$T/mnt\\x"
check "mount on a name with a backslash" mount_qtfs "unix:$T/sock:$T/exp" "$ra_mnt"
ra=$(readahead_kb "$ra_mnt")
check "... has the default 16 MiB of readahead too (got $ra KiB)" [ "$ra" = 16384 ]
check "... unmount" umount_qtfs "$ra_mnt"

# -- /etc/fstab style: mount(8) -> mount.fuse3 -> fuse-qtfs, then SIGTERM ------------
mkdir -p "$T/fstab"
QTFS_MOUNTS="$QTFS_MOUNTS $T/fstab"
echo through-fstab >"$T/exp/fstab-file"
# mount(8) runs helpers with a fixed PATH, where an installed fuse-qtfs
# lives; the uninstalled one is reached by calling its helper directly.
check "mount.fuse3 -t fuse-qtfs (what mount(8) runs for an fstab line)" \
	env PATH="$top_builddir/fuse-qtfs:$PATH" mount.fuse3 \
	"unix:$T/sock:$T/exp" "$T/fstab" -t fuse-qtfs -o _netdev,nofail,attr_timeout=0
check "... shows the export" grep -qx through-fstab "$T/fstab/fstab-file"
check "... with the source as its name" sh -c 'grep -q "^unix:$1:$2 $3 fuse.fuse-qtfs" /proc/mounts' sh \
	"$T/sock" "$T/exp" "$T/fstab"
pid=$(pgrep -f "fuse-qtfs .*$T/fstab" | head -n 1)
kill -TERM "$pid" 2>/dev/null
wait_gone 100 "$pid" "$T/fstab"
check "SIGTERM unmounts cleanly and the daemon ends (state '$gone_state')" [ $? -eq 0 ]

# -- tcp with a key, four connections, no busy polling --------------------------
# (the other mounts poll for the default 50 us, -o poll_us=, before sleeping)
check "-o poll_us: a value past 10000 is a usage error (exit 2) that names it" \
	sh -c "'$FUSE_QTFS' -o poll_us=10001 unix:$T/none:/x $T/mnt2 2>'$T/poll.err'; [ \$? -eq 2 ] &&
		head -n 1 '$T/poll.err' | grep -q 'poll_us'"
port=$(free_port)
start_server "$T/server-tcp.log" --listen "tcp://127.0.0.1:$port" --export "$T/exp2" \
	--key-file "$KEY" || exit 1
server2=$SERVER_PID
check "mount over tcp with conns=4" mount_qtfs "tcp://127.0.0.1:$port:$T/exp2" "$T/mnt2" \
	--key-file "$KEY" -o allow_other,conns=4,readahead_kb=4096,poll_us=0
check "fsdiff (tcp, conns=4)" "$FSDIFF" --user 65534:65534 --no-lock-pid "$T/native2" "$T/mnt2"
check "fsx 20000 ops, another seed (tcp)" "$FSX" -S 7 -N 20000 "$T/mnt2"
check "large reads (tcp, conns=4)" big_reads "$T/exp2" "$T/mnt2"
check "O_DIRECT reads and writes (tcp, conns=4)" direct_io "$T/exp2" "$T/mnt2"
ra=$(readahead_kb "$T/mnt2")
check "the mount's readahead is -o readahead_kb=4096's (got $ra KiB)" [ "$ra" = 4096 ]
# READs as large as a 1 MiB pipe holds spliced (fs.h, QTFS_FUSE_READ_MAX).
check "max_read is 832 KiB over tcp" grep -q " $T/mnt2 fuse.fuse-qtfs .*max_read=851968" /proc/mounts
# Large reads are spliced into the socket for fuse-qtfs, which takes them
# into pipes (QTFS_MNT_PIPE_READS), over TCP from this same host too
# (server.c, SPLICE_MIN; test-qtfs-security sees a client that does not
# get them copied); over a unix socket always.
check "the server splices large reads for fuse-qtfs over TCP from this host" \
	sh -c 'grep -q "mounted" "$1" && ! grep -q "large reads are copied" "$1"' sh "$T/server-tcp.log"
check "... and over a unix socket" sh -c '! grep -q "large reads are copied" "$1"' sh "$T/server.log"
# On a memory file system (tmpfs, as /run is) the server's loop makes the
# namespace calls and closes itself instead of handing them to io_uring's
# workers or its pool: the same scenarios again there.
mkdir -p "$T/exp2/mem" "$T/native2/mem"
if mount -t tmpfs tmpfs "$T/exp2/mem" && mount -t tmpfs tmpfs "$T/native2/mem"; then
	check "fsdiff on tmpfs (tcp, conns=4)" "$FSDIFF" --user 65534:65534 --no-lock-pid "$T/native2/mem" "$T/mnt2/mem"
	check "fsx 20000 ops on tmpfs" "$FSX" -S 11 -N 20000 "$T/mnt2/mem"
	check "large reads on tmpfs" big_reads "$T/exp2/mem" "$T/mnt2/mem"
	umount "$T/native2/mem"
	umount -l "$T/exp2/mem"
else
	fail "mount tmpfs under the export"
fi

# A file system whose directory offsets count entries (ramfs; tmpfs before
# Linux 6.6): a program that removes the entries of a listing as it reads
# them (rm -r) must find every one, as on the host.  A seek to an offset
# after entries before it were removed lands too far there, so the server
# goes on from where the last READDIR ended without one.  The lstat of
# each entry makes the kernel read the rest with attributes (READDIRPLUS).
rm_as_read() {
	python3 -c '
import os, sys
d = os.path.join(sys.argv[1], "rmr")
os.mkdir(os.path.join(sys.argv[2], "rmr"))
for i in range(600):
    open(os.path.join(sys.argv[2], "rmr", "n%d-%s" % (i, "x" * (i % 97))), "w").close()
n = 0
with os.scandir(d) as it:
    for e in it:
        os.lstat(e.path)
        os.unlink(e.path)
        n += 1
print("removed %d, left %d" % (n, len(os.listdir(d))))' "$1" "$2"
}
mkdir -p "$T/exp2/ram" "$T/native2/ram"
if mount -t ramfs ramfs "$T/exp2/ram" && mount -t ramfs ramfs "$T/native2/ram"; then
	want=$(rm_as_read "$T/native2/ram" "$T/native2/ram" 2>&1)
	got=$(rm_as_read "$T/mnt2/ram" "$T/exp2/ram" 2>&1)
	check "ramfs: entries removed as a listing reads them: $got (host: $want)" [ "$got" = "$want" ]
	check "fsdiff's listings on ramfs" "$FSDIFF" --only readdir,readdir_300 "$T/native2/ram" "$T/mnt2/ram"
	umount "$T/native2/ram"
	umount -l "$T/exp2/ram"
else
	fail "mount ramfs under the export"
fi

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

# Namespace changes on a disk (the export is on the host's /tmp): io_uring
# would make each on one of its kernel workers (the server's "iou-wrk-"
# threads), so the server's loop makes them itself (server.c, ns_here()).
# Eight processes at once: every change is made and the tree is what they
# made.  Then one process: the workers do not run for its 700 changes
# (their schedstat run counts stay put; a change that took 20 ms, as a
# preempted loop thread's may on a busy machine, sends them all to the
# workers for a second: up to three tries).  Up to 7 runs (one in a
# hundred changes) are let pass: under CPU emulation (make check-vm) none
# of the three tries came out at 0 (the last at 2), where changes made by
# the workers would be hundreds.
ns=$(python3 - "$top_srcdir/tests/fs" "$T/exp2" "$T/mnt2" "$server2" <<'PY'
import os, sys, time
sys.path.insert(0, sys.argv[1])
from uring_workers import worker_runs
host, mnt, pid = sys.argv[2], sys.argv[3], int(sys.argv[4])

def changes(d, n):
    os.mkdir(d)
    for i in range(n):
        f, g = os.path.join(d, "f%d" % i), os.path.join(d, "g%d" % i)
        os.close(os.open(f, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        os.rename(f, g)
        os.link(g, os.path.join(d, "h%d" % i))
        os.unlink(g)
        os.mkdir(os.path.join(d, "d%d" % i))
        os.rmdir(os.path.join(d, "d%d" % i))
        os.symlink("h%d" % i, os.path.join(d, "s%d" % i))

def tree_ok(d, n):
    want = {"h%d" % i for i in range(n)} | {"s%d" % i for i in range(n)}
    return set(os.listdir(d)) == want

kids = []
for k in range(8):
    p = os.fork()
    if p == 0:
        try:
            changes(os.path.join(mnt, "ns%d" % k), 60)
            os._exit(0)
        except Exception as e:
            print("parallel worker %d: %s" % (k, e))
            os._exit(1)
    kids.append(p)
bad = [k for k in kids if os.waitpid(k, 0)[1] != 0]
if bad or not all(tree_ok(os.path.join(host, "ns%d" % k), 60) for k in range(8)):
    print("parallel: %d workers failed or left another tree" % len(bad))
    sys.exit(0)
for attempt in range(3):
    d = "ns-seq%d" % attempt
    before = worker_runs(pid)
    changes(os.path.join(mnt, d), 100)
    ran = worker_runs(pid) - before
    if not tree_ok(os.path.join(host, d), 100):
        print("sequential: another tree")
        break
    if ran <= 7:
        print("ok")
        break
    time.sleep(1.1)
else:
    print("sequential: io_uring's workers ran %d times" % ran)
PY
)
check "namespace changes on a disk, 8 processes at once then one at a time on the loop ($ns)" \
	[ "$ns" = ok ]
# One that stalls the loop (here: the server stopped for 30 ms while it
# makes one) sends them to io_uring's workers for a second, and the server
# says so; the next ones are the workers' (they run), and every change
# succeeds all the same.  The stops land where they land: up to 300 of
# them, until one falls inside a change (three tries).
# (Only with the io_uring loop: with epoll the pool makes them all.)
stall="n/a: the server runs the epoll loop here"
grep -q "event loop: io_uring" "$T/server-tcp.log" &&
	stall=$(python3 - "$top_srcdir/tests/fs" "$T/mnt2" "$server2" "$T/server-tcp.log" <<'PY'
import os, signal, sys, threading, time
sys.path.insert(0, sys.argv[1])
from uring_workers import worker_runs
mnt, pid, log = sys.argv[2], int(sys.argv[3]), sys.argv[4]
d = os.path.join(mnt, "stall")
os.mkdir(d)
errors = []
SAID = "on the event loop: namespace changes on disks go to io_uring's workers"

def said():
    with open(log) as f:
        return f.read().count(SAID)

def changes(n=None, done=None):
    i = 0
    try:
        while (done is None or not done.is_set()) and (n is None or i < n):
            p = os.path.join(d, "f%d" % i)
            os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            os.unlink(p)
            i += 1
    except OSError as e:
        errors.append(str(e))

# Up to three tries: stops until one lands inside a change (the server
# says so), then 50 changes within the second that follows.
result = "no stop landed inside a change"
for attempt in range(3):
    base = said()
    done = threading.Event()
    t = threading.Thread(target=changes, kwargs={"done": done})
    t.start()
    for _ in range(300):
        time.sleep(0.003)
        os.kill(pid, signal.SIGSTOP)
        time.sleep(0.03)
        os.kill(pid, signal.SIGCONT)
        if said() > base:
            break
    done.set()
    t.join()
    if said() == base:
        continue
    before = worker_runs(pid)
    changes(50)
    ran = worker_runs(pid) - before
    result = "ok" if ran > 0 else "io_uring's workers did not run after it"
    if ran > 0:
        break
if errors or os.listdir(d):
    result = "errors: %s, left: %d" % (errors[:1], len(os.listdir(d)))
print(result)
PY
)
check "a namespace change that stalls the loop sends them to the workers for a while ($stall)" \
	sh -c '[ "$1" = ok ] || [ "${1#n/a}" != "$1" ]' sh "$stall"

# A host inode number reused by another file (ext4 hands a deleted file's
# number to the next new one at once): a DPU that still has the old name
# cached must not reach the new file through it.  Prints "ok", "noreuse"
# (the host file system never reused the number: nothing to test) or what
# went wrong.
reuse=$(python3 - "$T/exp2" "$T/mnt2" <<'PY'
import os, sys
host, mnt = sys.argv[1], sys.argv[2]
h_old, h_new = os.path.join(host, "reuse-old"), os.path.join(host, "reuse-new")
m_old, m_new = os.path.join(mnt, "reuse-old"), os.path.join(mnt, "reuse-new")
for attempt in range(20):
    with open(h_old, "w") as f:
        f.write("old")
    os.stat(m_old)  # the DPU learns the name
    ino = os.stat(h_old).st_ino
    os.unlink(h_old)
    with open(h_new, "w") as f:
        f.write("new")
    if os.stat(h_new).st_ino != ino:
        os.unlink(h_new)
        continue
    with open(m_new) as f:
        got_new = f.read()
    try:
        with open(m_old) as f:
            got_old = f.read()
    except OSError:
        got_old = None
    os.unlink(h_new)
    if got_new != "new":
        print("the new file reads %r" % got_new)
    elif got_old is not None:
        print("the deleted name still opens and reads %r" % got_old)
    else:
        print("ok")
    break
else:
    print("noreuse")
PY
)
[ "$reuse" = noreuse ] && echo "note: $T is on a file system that did not reuse inode numbers"
case $reuse in ok | noreuse) reuse_ok=yes ;; *) reuse_ok=no ;; esac
check "a reused host inode number is a new file (got: $reuse)" [ $reuse_ok = yes ]
# Directory attributes after a change come with the reply (the server's
# post-operation attributes): after each kind of change made through the
# mount, the directory's stat on the mount equals the host's.  Then that
# they are what answers the kernel: a host-side chmod right after a create
# stays unseen until attr_timeout (1 s) has passed, as for any cached
# attribute.
post=$(python3 - "$T/exp2" "$T/mnt2" <<'PY'
import os, stat, sys, time
host, mnt = sys.argv[1], sys.argv[2]
H, M = os.path.join(host, "post"), os.path.join(mnt, "post")
H2, M2 = os.path.join(host, "post2"), os.path.join(mnt, "post2")
os.mkdir(M)
os.mkdir(M2)
keys = ("st_ino", "st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_mtime_ns", "st_ctime_ns")
bad = []
def same(what, *dirs):
    for m, h in dirs:
        a, b = os.stat(m), os.stat(h)
        diff = [k for k in keys if getattr(a, k) != getattr(b, k)]
        if diff:
            bad.append("%s: %s differs" % (what, ",".join(diff)))
steps = [
    ("create", lambda: os.close(os.open(M + "/f", os.O_CREAT | os.O_WRONLY, 0o644))),
    ("mkdir", lambda: os.mkdir(M + "/d")),
    ("symlink", lambda: os.symlink("f", M + "/s")),
    ("mkfifo", lambda: os.mkfifo(M + "/p")),
    ("link", lambda: os.link(M + "/f", M + "/h")),
    ("rename", lambda: os.rename(M + "/h", M + "/h2")),
    ("unlink", lambda: os.unlink(M + "/h2")),
    ("rmdir", lambda: os.rmdir(M + "/d")),
]
for what, fn in steps:
    os.stat(M)  # the kernel has the directory's attributes before the change
    time.sleep(0.02)  # so that a stale mtime would show
    fn()
    same(what, (M, H))
os.stat(M); os.stat(M2)
time.sleep(0.02)
os.rename(M + "/f", M2 + "/f")
same("rename across directories", (M, H), (M2, H2))
# The kept attributes answer the next GETATTR.  A report of the host's
# watch about this directory drops them (correctly), and the reports of
# the renames and removals above may still be on their way under load:
# three tries, each with a fresh name.
kept = []
for i in range(3):
    before = stat.S_IMODE(os.stat(M).st_mode)
    after = 0o750 if before == 0o700 else 0o700
    t = time.monotonic()
    os.close(os.open(M + "/g%d" % i, os.O_CREAT | os.O_WRONLY, 0o644))
    os.chmod(H, after)
    mode = stat.S_IMODE(os.stat(M).st_mode)
    if time.monotonic() - t >= 0.8 or mode == before:  # too slow to tell, or kept
        kept = []
        break
    kept.append("%o" % mode)
    time.sleep(0.2)
if kept:
    bad.append("the stat after a create asked the host (modes %s)" % ",".join(kept))
time.sleep(1.1)
mode = stat.S_IMODE(os.stat(M).st_mode)
if mode != after:
    bad.append("a host chmod is unseen after attr_timeout (mode %o)" % mode)
print("; ".join(bad) or "ok")
PY
)
check "directory attributes after each change match the host's (got: $post)" [ "$post" = ok ]
# A cold host cache: the server's loop thread resolves paths from the
# dentry cache only and hands the rest to its workers (RESOLVE_CACHED).
# Names the mount never saw, after the host dropped its dentries and
# inodes: lookups, stat, readlink, open and read, open for append.
mkdir -p "$T/exp2/cold/a/b/c"
printf 'cold data\n' >"$T/exp2/cold/a/b/c/file"
ln -s c/file "$T/exp2/cold/a/b/link"
sync
echo 2 >/proc/sys/vm/drop_caches
check "cold: stat of a deep path" [ "$(stat -c %s "$T/mnt2/cold/a/b/c/file")" = 10 ]
echo 2 >/proc/sys/vm/drop_caches
check "cold: readlink" [ "$(readlink "$T/mnt2/cold/a/b/link")" = c/file ]
echo 2 >/proc/sys/vm/drop_caches
check "cold: read through the symlink" [ "$(cat "$T/mnt2/cold/a/b/link")" = "cold data" ]
echo 2 >/proc/sys/vm/drop_caches
printf 'more\n' >>"$T/mnt2/cold/a/b/c/file"
check "cold: append reaches the host" [ "$(tail -n 1 "$T/exp2/cold/a/b/c/file")" = more ]
check "cold: a missing name is ENOENT" sh -c '! stat "$1" 2>/dev/null' sh "$T/mnt2/cold/a/nothing"
# Closes: nobody waits for a RELEASE, which leaves with the next request on
# its connection or after 2 ms; each must still reach the host.  A DPU
# process holds a file open, then exits with nothing sent after it; then
# 200 files are created, read and closed in a row.  The server keeps none
# of them open.
mkdir -p "$T/exp2/closes"
echo held >"$T/exp2/closes/held"
host_holds() { holds_open "$server2" "$T/exp2/closes/$1"; }
host_holds_none() { ! host_holds "$1"; }
sh -c 'exec 9<"$1" && exec sleep 1000' sh "$T/mnt2/closes/held" >/dev/null 2>&1 &
holder=$!
QTFS_PIDS="$QTFS_PIDS $holder"
check "the host holds a file open while a DPU process does" wait_until 10 host_holds held
kill "$holder"
check "... and closes it once that process exits" wait_until 5 host_holds_none held
for i in $(seq 200); do
	echo "$i" >"$T/mnt2/closes/f$i" && cat "$T/mnt2/closes/f$i" >/dev/null
done
check "200 files made and read: the host holds none of them open" wait_until 5 host_holds_none f
# A tree on the host deeper than a whole path may be (4096 bytes): a local
# program walks it relative to its working directory, and so does one on
# the DPU (the server walks such a request's path a piece at a time); rm -rf
# on the DPU removes it.  fsdiff's deep_tree compares the calls made there.
deep=$(python3 -c '
import errno, os, sys
os.chdir(sys.argv[1])
for i in range(20):
    n = "d%02d" % i + "x" * 240
    os.mkdir(n)
    os.chdir(n)
with open("leaf", "w") as f:
    f.write("deep")
os.chdir(sys.argv[2])
depth = 0
try:
    for i in range(20):
        os.chdir("d%02d" % i + "x" * 240)
        depth += 1
    with open("leaf") as f:
        print("leaf read: %s at %d bytes" % (f.read(), len(os.getcwd()) - len(sys.argv[2])))
except OSError as e:
    print("%s at depth %d (%d bytes)" % (errno.errorcode.get(e.errno, e.errno), depth,
                                         len(os.getcwd()) - len(sys.argv[2])))' "$T/exp2" "$T/mnt2")
check "a tree deeper than 4096 bytes: $deep" sh -c 'echo "$1" | grep -q "^leaf read: deep at 48[0-9][0-9] bytes"' sh "$deep"
check "... rm -rf of it on the DPU" rm -rf "$T/mnt2/d00$(printf "%0240d" 0 | tr 0 x)"
check "... which the host sees gone" sh -c '! ls -d "$1"/d00* 2>/dev/null' sh "$T/exp2"
check "... and the mount still answers" [ "$(cat "$T/mnt2/closes/f1")" = 1 ]
check "unmount (tcp)" umount_qtfs "$T/mnt2"

# -- the epoll loop on both sides (kernels without io_uring) ------------------
# Then the server runs every file operation on its pool, and the client's
# loop thread still reads the FUSE requests (a watch on /dev/fuse).
mkdir -p "$T/exp3" "$T/native3"
SERVER_WRAP="env QT_LOOP_BACKEND=epoll"
CLIENT_WRAP="env QT_LOOP_BACKEND=epoll"
start_server "$T/server-epoll.log" --listen "unix:$T/sock3" --export "$T/exp3" || exit 1
check "the server runs the epoll loop" grep -q "event loop: epoll" "$T/server-epoll.log"
check "mount with the epoll loop" mount_qtfs "unix:$T/sock3:$T/exp3" "$T/mnt3" -o allow_other
check "fsdiff (epoll loops)" "$FSDIFF" --user 65534:65534 --no-lock-pid "$T/native3" "$T/mnt3"
check "fsx 20000 ops (epoll loops)" "$FSX" -S 5 -N 20000 "$T/mnt3"
check "large reads (epoll loops)" big_reads "$T/exp3" "$T/mnt3"
check "unmount (epoll)" umount_qtfs "$T/mnt3"
SERVER_WRAP=
CLIENT_WRAP=

# -- an overlayfs on the DPU whose upper layer is on the mount -----------------
# As a container runtime's snapshotter would keep a container's layer on
# the host: copy-up, whiteouts (RENAME_WHITEOUT, or a 0:0 device node)
# and opaque directories (trusted.* xattrs) land in the host's upper dir.
mkdir -p "$T/exp4" "$T/lower4/dir" "$T/ovl4"
echo lower >"$T/lower4/file"
echo gone >"$T/lower4/gone"
echo in >"$T/lower4/dir/in"
start_server "$T/server4.log" --listen "unix:$T/sock4" --export "$T/exp4" || exit 1
check "mount for an overlayfs's upper layer" mount_qtfs "unix:$T/sock4:$T/exp4" "$T/mnt4"
mkdir -p "$T/mnt4/upper" "$T/mnt4/work"
if mount -t overlay overlay -o "lowerdir=$T/lower4,upperdir=$T/mnt4/upper,workdir=$T/mnt4/work" \
	"$T/ovl4" 2>"$T/ovl4.err"; then
	QTFS_MOUNTS="$T/ovl4 $QTFS_MOUNTS"
	echo more >>"$T/ovl4/file" && rm "$T/ovl4/gone" && rm -r "$T/ovl4/dir" && mkdir "$T/ovl4/dir" &&
		echo new >"$T/ovl4/dir/new"
	check "changes through the overlayfs" [ $? -eq 0 ]
	check "... a copied-up file on the host" [ "$(cat "$T/exp4/upper/file")" = "lower
more" ]
	check "... a whiteout on the host: $(stat -c '%F %t:%T' "$T/exp4/upper/gone" 2>&1)" \
		[ "$(stat -c '%F %t:%T' "$T/exp4/upper/gone")" = "character special file 0:0" ]
	check "... an opaque directory on the host" python3 -c '
import os, sys
sys.exit(os.getxattr(sys.argv[1], "trusted.overlay.opaque") != b"y")' "$T/exp4/upper/dir"
	check "... the overlayfs shows the merged tree" \
		[ "$(cd "$T/ovl4" && find . | sort | tr '\n' ' ')" = ". ./dir ./dir/new ./file " ]
	check "unmount the overlayfs" umount "$T/ovl4"
else
	ok "SKIP: no overlayfs here ($(tail -n 1 "$T/ovl4.err"))"
fi
check "unmount" umount_qtfs "$T/mnt4"
finish
