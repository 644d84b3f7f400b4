#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# fuse-qtfs benchmark, side by side in one run on loopback: the native
# directory, fuse-qtfs over tcp (with a key) and over a unix socket, sshfs
# through a local sshd, and raw loopback TCP throughput.  Prints a table
# and ratios; asserts nothing (a benchmark, not a test).  Needs root.
#
# Usage: sh tests/bench/bench-qtfs.sh [SIZE-MIB]   (default 1024)
# Workloads:
#   seq write / seq read   SIZE MiB in 1 MiB blocks (write ends with fsync;
#                          the read is run three times, the median reported;
#                          the read's host side is in the page cache, a
#                          mount's DPU side is dropped before each read)
#   rand read qd1          4 KiB preads at random offsets of a 64 MiB file,
#                          readahead off: p50 / p99 latency in microseconds
#   4k writes              5000 write(2)s of 4 KiB appending to a new file:
#                          p50 / p99 latency of each, in microseconds
#   create / stat / unlink 10k files, stat with attribute caching off
#                          (each of these three times, the median reported);
#                          create and unlink again with the export on tmpfs;
#                          creates again there into directories the host
#                          made, not listed and listed first through the
#                          mount (fuse-qtfs then knows their names)
#   readdir                a 10k-entry directory, listings per second
#                          (also the median of three)
#   /proc/meminfo          whole-file reads per second (host /proc mounted)
# The export and the native directory are on an ext4 file system with a
# journal, made for the run in a file on /tmp and mounted through a loop
# device, as a host's disk would be: an ext4 without a journal (this
# machine's root) passes over every inode freed in the last minutes when
# it picks one for a new file, reading their inode table blocks to tell,
# so after a workload's 10k unlinks its creates slow down for minutes (the
# native directory's from 96k/s to 7-20k/s here, fuse-qtfs's by half).
# Where no loop device can be had, they stay on /tmp, and the run says so.
#   the FUSE ceiling       the sequential read and the creates on fuse-null,
#                          a FUSE file system that answers every request at
#                          once from memory (no host, no network): what any
#                          FUSE file system can reach on this machine; once
#                          sleeping between requests, once polling for 50 us
#                          first as fuse-qtfs does by default (-o poll_us=),
#                          and through FUSE over io_uring where the kernel has
#                          it on
# The sequential read also reports the CPU time each side spent per GiB:
# the host's (qtfs-server; sshd and its children) and the DPU's (the
# fuse-qtfs daemon; sshfs and its ssh), from /proc/PID/stat of the
# process trees, while the reader itself is not counted.

set -u
case ${1:-} in
-h | --help)
	echo "Usage: sh tests/bench/bench-qtfs.sh [SIZE-MIB]   (as root; default 1024; see the script's header)"
	exit 0
	;;
esac
top_builddir=$(cd "${top_builddir:-.}" && pwd)
size=${1:-1024}
case $size in
'' | *[!0-9]* | 0*)
	echo "bench-qtfs: SIZE-MIB must be a whole number of MiB from 1, not '$size'" >&2
	exit 2
	;;
esac
QTFS_SERVER=$top_builddir/fuse-qtfs/qtfs-server
FUSE_QTFS=$top_builddir/fuse-qtfs/fuse-qtfs
FUSE_NULL=$top_builddir/tests/bench/fuse-null
PY=${PYTHON:-python3}

[ "$(id -u)" -eq 0 ] || { echo "bench-qtfs: needs root" >&2; exit 1; }
T=$(mktemp -d /tmp/bench-qtfs.XXXXXX)
chmod 755 "$T"
PIDS=
MOUNTS=
DISK_MOUNTS=
cleanup() {
	for m in $MOUNTS; do fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
	# The clients end on their own once unmounted; the server goes after
	# them, so that none of them logs its connections lost on the way out.
	_w=0
	while [ $_w -lt 50 ] && pgrep -f "^$FUSE_QTFS .*$T" >/dev/null; do
		sleep 0.1
		_w=$((_w + 1))
	done
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	# The disk's own mounts last, when nothing holds a file on it.
	for m in $DISK_MOUNTS; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

mkdir -p "$T/native" "$T/exp" "$T/m-tcp" "$T/m-unix" "$T/m-sshfs" "$T/p-qtfs" "$T/p-sshfs"
# The disk (see the top): room for the largest file twice over, sparse.
truncate -s $((size * 2 + 1024))M "$T/disk.img"
mkdir -p "$T/disk"
if mkfs.ext4 -q -F -L bench-qtfs "$T/disk.img" >"$T/mkfs.log" 2>&1 &&
	mount -o loop "$T/disk.img" "$T/disk" 2>>"$T/mkfs.log"; then
	DISK_MOUNTS="$T/disk"
	mkdir -p "$T/disk/native" "$T/disk/exp"
	for d in native exp; do
		mount --bind "$T/disk/$d" "$T/$d" || exit 1
		DISK_MOUNTS="$T/$d $DISK_MOUNTS"
	done
	echo "== the export and the native directory: ext4 with a journal, on a loop device"
else
	rm -f "$T/disk.img"
	echo "== the export and the native directory: on $(stat -f -c %T /tmp) in /tmp, no loop device" \
		"for an ext4 of their own ($(tail -n 1 "$T/mkfs.log"))"
fi
(umask 077 && head -c 48 /dev/urandom | base64 >"$T/psk")
port=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
: >"$T/empty.conf"
"$QTFS_SERVER" --config "$T/empty.conf" --listen "tcp://127.0.0.1:$port" --listen "unix:$T/sock" \
	--key-file "$T/psk" --export "$T/exp" --export /proc >"$T/server.log" 2>&1 &
SERVER_PID=$!
PIDS="$PIDS $!"
sleep 0.5
"$FUSE_QTFS" --key-file "$T/psk" -o conns=4 "tcp://127.0.0.1:$port:$T/exp" "$T/m-tcp" || exit 1
MOUNTS="$MOUNTS $T/m-tcp"
"$FUSE_QTFS" --key-file "$T/psk" -o conns=4 "unix:$T/sock:$T/exp" "$T/m-unix" || exit 1
MOUNTS="$MOUNTS $T/m-unix"
"$FUSE_QTFS" --key-file "$T/psk" "unix:$T/sock:/proc" "$T/p-qtfs" || exit 1
MOUNTS="$MOUNTS $T/p-qtfs"

# sshfs through a local sshd with generated keys.
mkdir -p "$T/home"
ssh-keygen -q -t ed25519 -N '' -f "$T/hostkey" && ssh-keygen -q -t ed25519 -N '' -f "$T/id"
cp "$T/id.pub" "$T/authorized_keys"
. "$(dirname "$0")/../sshd-env.sh"
start_test_sshd "$T/sshd" "HostKey $T/hostkey" "AuthorizedKeysFile $T/authorized_keys" \
	"Subsystem sftp internal-sftp" || exit 1
PIDS="$PIDS $SSHD_PID"
sport=$SSHD_PORT
printf '[127.0.0.1]:%s %s\n' "$sport" "$(cut -d' ' -f1,2 "$T/hostkey.pub")" >"$T/known_hosts"
sshopts="-o IdentityFile=$T/id,UserKnownHostsFile=$T/known_hosts,port=$sport"
sshfs $sshopts "root@127.0.0.1:$T/exp" "$T/m-sshfs" || exit 1
MOUNTS="$MOUNTS $T/m-sshfs"
sshfs $sshopts,direct_io "root@127.0.0.1:/proc" "$T/p-sshfs" || exit 1
MOUNTS="$MOUNTS $T/p-sshfs"

cat >"$T/bench.py" <<'EOF'
import os, random, socket, sys, threading, time

def seq_write(d, mib):
    buf = b"\xa5" * (1 << 20)
    t = time.perf_counter()
    fd = os.open(os.path.join(d, "big"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for _ in range(mib):
        os.write(fd, buf)
    os.fsync(fd)
    os.close(fd)
    return mib / (time.perf_counter() - t)

def tree_ticks(roots):
    """CPU ticks of the processes @roots and all their descendants."""
    procs = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                st = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        procs[int(p)] = (int(st[1]), int(st[11]) + int(st[12]))
    total = 0
    for pid, (ppid, ticks) in procs.items():
        q = pid
        while q > 1:
            if q in roots:
                total += ticks
                break
            q = procs.get(q, (0, 0))[0]
    return total

def seq_read(path, mib, host=(), dpu=()):
    if dpu:
        # A mount's copy in the DPU's page cache goes first (fuse-qtfs keeps
        # it across opens while the host's is unchanged): the read crosses
        # the link.
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    h0, c0 = tree_ticks(host), tree_ticks(dpu)
    t = time.perf_counter()
    fd = os.open(path, os.O_RDONLY)
    n = 0
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            break
        n += len(b)
    os.close(fd)
    el = time.perf_counter() - t
    gib = n / (1 << 30) or 1
    hz = os.sysconf("SC_CLK_TCK")
    return (n / (1 << 20) / el, (tree_ticks(host) - h0) * 1000 / hz / gib,
            (tree_ticks(dpu) - c0) * 1000 / hz / gib)

def rand_read(d):
    path = os.path.join(d, "rand")
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    rng = random.Random(7)
    lat = []
    for _ in range(3000):
        off = rng.randrange(0, (64 << 20) // 4096) * 4096
        t = time.perf_counter_ns()
        os.pread(fd, 4096, off)
        lat.append((time.perf_counter_ns() - t) / 1000)
    os.close(fd)
    lat.sort()
    return lat[len(lat) // 2], lat[len(lat) * 99 // 100]

def small_writes(d, n=5000):
    """4 KiB write(2)s appending to a new file: p50 / p99 latency of each."""
    buf = b"\x5a" * 4096
    lat = []
    fd = os.open(os.path.join(d, "small"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for _ in range(n):
        t = time.perf_counter_ns()
        os.write(fd, buf)
        lat.append((time.perf_counter_ns() - t) / 1000)
    os.close(fd)
    os.unlink(os.path.join(d, "small"))
    lat.sort()
    return lat[len(lat) // 2], lat[len(lat) * 99 // 100]

def meta(d, n=10000):
    sub = os.path.join(d, "meta")
    os.mkdir(sub)
    names = [os.path.join(sub, "f%05d" % i) for i in range(n)]
    t = time.perf_counter()
    for p in names:
        os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    c = n / (time.perf_counter() - t)
    t = time.perf_counter()
    for p in names:
        os.stat(p)
    s = n / (time.perf_counter() - t)
    t = time.perf_counter()
    for _ in range(5):
        os.listdir(sub)
    r = 5 / (time.perf_counter() - t)
    t = time.perf_counter()
    for p in names:
        os.unlink(p)
    u = n / (time.perf_counter() - t)
    os.rmdir(sub)
    return c, s, r, u

def timed_creates(sub, n):
    """@n new files made and closed in @sub, as meta() does: per second."""
    t = time.perf_counter()
    for j in range(n):
        os.close(os.open(os.path.join(sub, "f%05d" % j), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    return n / (time.perf_counter() - t)

def hostmade3(host, d, listed, n=10000):
    """Creates into a directory the host made (100 names in it), listed through @d first or
    not: the median of three."""
    runs = []
    for i in range(3):
        name = "h%s%d" % ("l" if listed else "n", i)
        os.mkdir(os.path.join(host, name))
        for j in range(100):
            open(os.path.join(host, name, "old%d" % j), "w").close()
        sub = os.path.join(d, name)
        try:  # fuse-qtfs's barrier: the host's new directory is seen at once
            os.getxattr(d, "user.qtfs.sync")
        except OSError:
            pass
        if listed:
            os.listdir(sub)
        else:
            os.stat(sub)
        runs.append(timed_creates(sub, n))
    return sorted(runs)[1]

def creates3(d, n=10000):
    """Only the creates of meta(), into a new directory each time: the median of three."""
    runs = []
    for i in range(3):
        sub = os.path.join(d, "c%d" % i)
        os.mkdir(sub)
        runs.append(timed_creates(sub, n))
    return sorted(runs)[1]

def meta3(d):
    """meta() three times: the median of each figure."""
    runs = [meta(d) for _ in range(3)]
    return tuple(sorted(col)[1] for col in zip(*runs))

def meminfo(path, secs=2.0):
    n = 0
    t = time.perf_counter()
    while time.perf_counter() - t < secs:
        with open(path, "rb") as f:
            if not f.read():
                return 0.0
        n += 1
    return n / (time.perf_counter() - t)

def raw_tcp(mib):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    def sink():
        c, _ = srv.accept()
        while c.recv(1 << 20):
            pass
        c.close()
    th = threading.Thread(target=sink)
    th.start()
    s = socket.create_connection(srv.getsockname())
    buf = b"\0" * (1 << 20)
    t = time.perf_counter()
    for _ in range(mib):
        s.sendall(buf)
    s.close()
    th.join()
    return mib / (time.perf_counter() - t)

cmd = sys.argv[1]
if cmd == "seq":
    d, mib = sys.argv[2], int(sys.argv[3])
    print("%.0f %.0f" % (seq_write(d, mib), 0))
elif cmd == "read":
    pids = lambda s: {int(x) for x in s.split(",") if x}
    print("%.0f %.0f %.0f" % seq_read(sys.argv[2], int(sys.argv[3]), pids(sys.argv[4]), pids(sys.argv[5])))
elif cmd == "rand":
    print("%.0f %.0f" % rand_read(sys.argv[2]))
elif cmd == "smallw":
    print("%.0f %.0f" % small_writes(sys.argv[2]))
elif cmd == "meta":
    print("%.0f %.0f %.1f %.0f" % meta3(sys.argv[2]))
elif cmd == "hostmade":
    print("%.0f" % hostmade3(sys.argv[2], sys.argv[3], sys.argv[4] == "listed"))
elif cmd == "creates":
    print("%.0f" % creates3(sys.argv[2]))
elif cmd == "meminfo":
    print("%.0f" % meminfo(sys.argv[2]))
elif cmd == "tcp":
    print("%.0f" % raw_tcp(int(sys.argv[2])))
EOF

b() { $PY "$T/bench.py" "$@"; }
# Of three numbers, one per line: the median; all three as "a/b/c".
median3() { sort -n | sed -n 2p; }
slashed() { tr '\n' / | sed 's|/$||'; }
head -c $((64 << 20)) /dev/urandom >"$T/exp/rand"
cp "$T/exp/rand" "$T/native/rand"

echo "== raw loopback TCP"
tcps=$(for i in 1 2 3; do b tcp "$size"; done)
tcp=$(echo "$tcps" | median3)
echo "   $tcp MB/s (median of $(echo "$tcps" | slashed))"

results=""
for target in native m-tcp m-unix m-sshfs; do
	d=$T/$target
	[ "$target" = native ] || d=$T/$target
	echo "== $target"
	w=$(b seq "$d" "$size" | cut -d' ' -f1)
	# The host copy is in the page cache; the client's is dropped before
	# each read (seq_read), so reads cross the link.
	case $target in
	native) host= dpu= ;;
	m-tcp | m-unix) host=$SERVER_PID dpu=$(pgrep -f "fuse-qtfs.* $d\$" | tr '\n' ,) ;;
	m-sshfs) host=$SSHD_PID dpu=$(pgrep -f "sshfs.* $d\$" | tr '\n' ,) ;;
	esac
	# Three reads; the median is reported.  The first read of a mount is
	# often the slowest by far: the DPU's page cache takes pages that this
	# virtual machine's host has not backed yet (first touch of fresh guest
	# memory here: about 330 MB/s), and the copy into them pays for it.
	reads=$(for i in 1 2 3; do b read "$d/big" "$size" "$host" "$dpu"; done)
	all=$(echo "$reads" | cut -d' ' -f1 | slashed)
	set -- $(echo "$reads" | median3)
	r=$1 rhost=$2 rdpu=$3
	set -- $(b rand "$d")
	p50=$1 p99=$2
	set -- $(b smallw "$d")
	w50=$1 w99=$2
	rm -f "$d/big"
	# create, readdir and unlink on the mount as it is; stat on a second
	# mount of the same tree with attribute and entry caching off.
	set -- $(b meta "$d")
	c=$1 rd=$3 u=$4
	mkdir -p "$T/nc-$target"
	case $target in
	m-tcp) "$FUSE_QTFS" --key-file "$T/psk" -o attr_timeout=0,entry_timeout=0,watch_timeout=0 \
		"tcp://127.0.0.1:$port:$T/exp" "$T/nc-$target" ;;
	m-unix) "$FUSE_QTFS" --key-file "$T/psk" -o attr_timeout=0,entry_timeout=0,watch_timeout=0 \
		"unix:$T/sock:$T/exp" "$T/nc-$target" ;;
	m-sshfs) sshfs $sshopts,cache=no,attr_timeout=0,entry_timeout=0,negative_timeout=0 \
		"root@127.0.0.1:$T/exp" "$T/nc-$target" ;;
	native) rmdir "$T/nc-$target" && ln -s "$T/native" "$T/nc-$target" ;;
	esac
	[ "$target" = native ] || MOUNTS="$MOUNTS $T/nc-$target"
	set -- $(b meta "$T/nc-$target")
	s=$2
	echo "   seq write $w MB/s, seq read $r MB/s (of $all; CPU ms/GiB: host $rhost, DPU $rdpu), rand 4k p50 ${p50}us p99 ${p99}us"
	echo "   4k writes p50 ${w50}us p99 ${w99}us"
	echo "   create $c/s, stat $s/s, readdir(10k) $rd/s, unlink $u/s"
	results="$results
$target $w $r $p50 $p99 $c $s $rd $u $rhost $rdpu $w50 $w99"
done

# sshfs keeps names in its own cache for 20 s; fuse-qtfs caches the names
# the host watches for it for 30 s (watch_timeout), the others for 1 s.
# The same workload without the watch shows what it brings.
echo "== m-unix with watch_timeout=0 (names cached for 1 s)"
mkdir -p "$T/nw"
"$FUSE_QTFS" --key-file "$T/psk" -o watch_timeout=0 "unix:$T/sock:$T/exp" "$T/nw" || exit 1
MOUNTS="$MOUNTS $T/nw"
set -- $(b meta "$T/nw")
cnw=$1 unw=$4
echo "   create $cnw/s, unlink $unw/s"

# The same create and unlink with the export (and the native directory) on
# tmpfs: the host's disk drops out, what is left is the file system's.
echo "== create and unlink with the export on tmpfs"
mkdir -p "$T/exp/tmpfs" "$T/native/tmpfs"
mount -t tmpfs tmpfs "$T/exp/tmpfs" && mount -t tmpfs tmpfs "$T/native/tmpfs" || exit 1
MOUNTS="$MOUNTS $T/exp/tmpfs $T/native/tmpfs"
tmpfs=""
for target in native m-tcp m-unix m-sshfs; do
	set -- $(b meta "$T/$target/tmpfs")
	tmpfs="$tmpfs $1 $4"
	echo "   $target: create $1/s, unlink $4/s"
done

# Creates into directories the host made, on the tmpfs export: the kernel
# looks each new name up first, which a directory made on the DPU answers
# from the client's list of its names; one the host made has that list
# only once the DPU has listed it to the end (fuse-qtfs's "listed
# directories"), else each lookup asks the host.  (Not sshfs: it makes no
# such difference; its creates on tmpfs are the row above.)
echo "== creates into directories the host made (export on tmpfs), not listed / listed first"
hostmade=""
for target in native m-tcp m-unix; do
	h=$T/exp/tmpfs/hm-$target
	[ "$target" = native ] && h=$T/native/tmpfs/hm-$target
	mkdir "$h"
	hn=$(b hostmade "$h" "$T/$target/tmpfs/hm-$target" plain)
	hl=$(b hostmade "$h" "$T/$target/tmpfs/hm-$target" listed)
	hostmade="$hostmade $hn $hl"
	echo "   $target: $hn/s not listed, $hl/s listed first"
done

# The ceiling: fuse-null answers every request at once from memory, mounted
# as fuse-qtfs is (1 MiB requests, 16 MiB of readahead, 1 s timeouts), so
# the kernel sends it the requests it sends fuse-qtfs.  It is what fuse-qtfs
# would reach here if the host, the link and its own work cost nothing.
ceiling() {
	mkdir -p "$T/null"
	"$FUSE_NULL" "$@" --size $((size << 20)) "$T/null" >>"$T/null.log" 2>&1 || return 1
	reads=$(for i in 1 2 3; do b read "$T/null/data" "$size" "" ""; done)
	nr=$(echo "$reads" | cut -d' ' -f1 | median3)
	nc=$(b creates "$T/null")
	echo "   seq read $nr MB/s (median of $(echo "$reads" | cut -d' ' -f1 | slashed)), create $nc/s"
	fusermount3 -u "$T/null"
}
echo "== the FUSE ceiling: fuse-null, through /dev/fuse"
ceiling || exit 1
null="$nr $nc"
echo "== the FUSE ceiling: fuse-null, through /dev/fuse, polling for 50 us as fuse-qtfs does"
ceiling --poll-us 50 || exit 1
null="$null $nr $nc"
if [ "$(cat /sys/module/fuse/parameters/enable_uring 2>/dev/null)" = Y ]; then
	echo "== the FUSE ceiling: fuse-null, through FUSE over io_uring"
	ceiling --uring || exit 1
	null="$null $nr $nc"
else
	echo "== (FUSE over io_uring: off in this kernel, fuse.enable_uring=N; not measured)"
	null="$null - -"
fi

echo "== /proc/meminfo reads per second"
mi_native=$(b meminfo /proc/meminfo)
mi_qtfs=$(b meminfo "$T/p-qtfs/meminfo")
mi_sshfs=$(b meminfo "$T/p-sshfs/meminfo")
echo "   native $mi_native/s, fuse-qtfs $mi_qtfs/s, sshfs(direct_io) $mi_sshfs/s"

echo
echo "$results" | $PY -c '
import sys
tcp, mn, mq, ms, cnw, unw = [float(x) for x in sys.argv[1:7]]
tm = [float(x) for x in sys.argv[7:15]]  # create, unlink on tmpfs: native, tcp, unix, sshfs
# read, create: through /dev/fuse, sleeping; polling (as fuse-qtfs); over io_uring
null = [None if x == "-" else float(x) for x in sys.argv[15:21]]
hm = [float(x) for x in sys.argv[21:27]]  # host-made directories: not listed, listed; native, tcp, unix
rows = {}
for line in sys.stdin.read().split("\n"):
    if line.strip():
        f = line.split()
        rows[f[0]] = [float(x) for x in f[1:]]
cols = ["seq write MB/s", "seq read MB/s", "rand4k p50 us", "rand4k p99 us", "create/s", "stat/s", "readdir/s", "unlink/s",
        "seq read, host CPU ms/GiB", "seq read, DPU CPU ms/GiB", "4k write p50 us", "4k write p99 us"]
lower_better = {2, 3, 8, 9, 10, 11}
names = ["native", "m-tcp", "m-unix", "m-sshfs"]
print("| workload | native | fuse-qtfs tcp | fuse-qtfs unix | sshfs | qtfs tcp / sshfs | qtfs unix / sshfs |")
print("|---|---:|---:|---:|---:|---:|---:|")
for i, c in enumerate(cols):
    v = [rows[n][i] for n in names]
    def ratio(a, b):
        if i in lower_better:
            return b / a if a else 0
        return a / b if b else 0
    native = "-" if i in (8, 9) else "%.0f" % v[0]
    print("| %s | %s | %.0f | %.0f | %.0f | %.1fx | %.1fx |" % (c, native, v[1], v[2], v[3], ratio(v[1], v[3]), ratio(v[2], v[3])))
print("| /proc/meminfo reads/s | %.0f | %.0f | - | %.0f | %.1fx | - |" % (mn, mq, ms, mq / ms if ms else 0))
for i, label, v in ((4, "create/s", cnw), (7, "unlink/s", unw)):
    sv = rows["m-sshfs"][i]
    print("| %s, without the host watch (watch_timeout=0) | | | %.0f | %.0f | | %.1fx |" % (label, v, sv, v / sv if sv else 0))
for k, label in ((0, "create/s"), (1, "unlink/s")):
    v = tm[k::2]
    print("| %s, export on tmpfs | %.0f | %.0f | %.0f | %.0f | %.1fx | %.1fx |" %
          (label, v[0], v[1], v[2], v[3], v[1] / v[3] if v[3] else 0, v[2] / v[3] if v[3] else 0))
for k, label in ((0, "create/s, export on tmpfs, into a directory the host made"),
                 (1, "create/s, ... the same, listed first through the mount")):
    v = hm[k::2]
    sv = tm[6]  # sshfs on tmpfs, where it makes no difference
    print("| %s | %.0f | %.0f | %.0f | (%.0f) | %.1fx | %.1fx |" %
          (label, v[0], v[1], v[2], sv, v[1] / sv if sv else 0, v[2] / sv if sv else 0))
print()
print("raw loopback TCP: %.0f MB/s; seq read over tcp = %.0f%% of it, over unix = %.0f%%" %
      (tcp, 100 * rows["m-tcp"][1] / tcp, 100 * rows["m-unix"][1] / tcp))
sc = rows["m-sshfs"][4]
for label, nr, nc in (("through /dev/fuse", null[0], null[1]),
                      ("through /dev/fuse polling 50 us", null[2], null[3]),
                      ("through FUSE over io_uring", null[4], null[5])):
    if nr is None:
        continue
    print("FUSE ceiling (fuse-null, no host, no work), %s: seq read %.0f MB/s = %.0f%% of raw TCP; "
          "create %.0f/s = %.1fx sshfs" % (label, nr, 100 * nr / tcp, nc, nc / sc if sc else 0))
# Creates against the export on tmpfs: fuse-null has no disk under it
# either; against the ceiling that polls as fuse-qtfs does.
print("fuse-qtfs against that ceiling (/dev/fuse, polling): seq read %.0f%% over tcp, %.0f%% over unix; "
      "create (export on tmpfs) %.0f%% over tcp, %.0f%% over unix" %
      (100 * rows["m-tcp"][1] / null[2], 100 * rows["m-unix"][1] / null[2],
       100 * tm[2] / null[3], 100 * tm[4] / null[3]))
' "$tcp" "$mi_native" "$mi_qtfs" "$mi_sshfs" "$cnw" "$unw" $tmpfs $null $hostmade
