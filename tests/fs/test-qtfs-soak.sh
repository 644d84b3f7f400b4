#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# A mount kept for months: the same workload (tests/fs/soak.py: files,
# directories, renames and RENAME_EXCHANGE, hard links, a large listing,
# xattrs, many processes opening one file, POSIX locks and flock taken,
# released, waited for and held by processes that die, relayed FIFOs
# across the two sides, interrupted polls, the host's /proc) runs cycle
# after cycle, with a connection loss in each: qtfs-server of a
# conns=2 mount killed with SIGKILL and started again, and a client of the
# long-lived server killed with files open and locks held.  After each
# cycle, once the DPU's kernel has dropped its names, each daemon must hold
# what it held before the first (the baseline): descriptors, threads, and
# the client's nodes, open files, listings and lock owners (its SIGUSR1
# state line) and the server's sessions, handles and lock owners (its
# own); the server watches no directory for the dead client, and holds no
# relayed FIFO that every DPU reader closed (soak.py).  VmRSS is printed,
# not checked: the allocator keeps what it got (glibc's arenas grow for a
# while; with MALLOC_ARENA_MAX=1 the client's RSS levels off).
# QTFS_SOAK_CYCLES (3) and QTFS_SOAK_SCALE (1) make it longer.

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"

cycles=${QTFS_SOAK_CYCLES:-3}
start=$(date +%s)
scale=${QTFS_SOAK_SCALE:-1}
# The names the cycles make in the root are there from the start: the
# client keeps the names of a directory it lists (a superset: see
# "listed directories" in fs.c), and those go with the directory only.
mkdir -p "$T/exp/fifos" "$T/exp/soak" "$T/exp/dying" "$T/exp/moves/hostdir"
port=$(free_port)
tcp=tcp://127.0.0.1:$port
start_server "$T/server.log" --listen "unix:$T/sock" --key-file "$KEY" \
	--export "$T/exp" --export /proc || exit 1
srv=$SERVER_PID
start_server "$T/server2.log" --listen "$tcp" --key-file "$KEY" --export "$T/exp" || exit 1
srv2=$SERVER_PID
check "mount over unix" mount_qtfs "unix:$T/sock:$T/exp" "$T/m1" --key-file "$KEY" \
	-o fifo_relay=fifos 2>"$T/c1.log"
check "mount of the host's /proc" mount_qtfs "unix:$T/sock:/proc" "$T/proc" --key-file "$KEY" \
	2>"$T/cp.log"
check "mount over tcp, 2 connections" mount_qtfs "$tcp:$T/exp" "$T/m2" --key-file "$KEY" \
	-o conns=2,fifo_relay=fifos 2>"$T/c2.log"
c1=$(pgrep -f -- "$FUSE_QTFS .*$T/m1\$")
c2=$(pgrep -f -- "$FUSE_QTFS .*$T/m2\$")
cp=$(pgrep -f -- "$FUSE_QTFS .*$T/proc\$")

# usage PID: descriptors, threads, VmRSS (kB).  The threads of GLib's
# pools are counted apart (an idle one waits up to 15 s before it ends: the
# check wants at most GLib's count of idle threads kept, 2; the daemons'
# pools keep none), and so are io_uring's workers (iou-wrk-*, which the
# kernel ends when idle).
usage() {
	_pool=$(cat "/proc/$1/task"/*/comm 2>/dev/null | grep -c '^pool')
	_iou=$(cat "/proc/$1/task"/*/comm 2>/dev/null | grep -c '^iou-')
	printf '%s fds %s threads (+%s idle, +%s io_uring) %s rss' \
		"$(find "/proc/$1/fd" -mindepth 1 -maxdepth 1 | wc -l)" \
		"$(($(awk '/^Threads:/ { print $2 }' "/proc/$1/status") - _pool - _iou))" \
		"$_pool" "$_iou" \
		"$(awk '/^VmRSS:/ { print $2 }' "/proc/$1/status")"
}

# state PID LOG PATTERN: the last line matching PATTERN that PID logs into
# LOG on SIGUSR1, the time stamp and numbers of no interest taken out.
state() {
	_line=$(usr1_line "$1" "$2" "$3") || { echo "no state"; return; }
	printf '%s\n' "$_line" |
		sed -e 's/.*\('"$3"'\)/\1/' -e 's/, [0-9]* directories moved as the host reported//'
}

# snapshot: one line per daemon, into $T/snap.
snapshot() {
	sync
	echo 2 >/proc/sys/vm/drop_caches
	sleep 1
	{
		echo "client m1: $(usage "$c1"); $(state "$c1" "$T/c1.log" 'state:')"
		echo "client m2: $(usage "$c2"); $(state "$c2" "$T/c2.log" 'state:')"
		echo "client proc: $(usage "$cp")"
		echo "server: $(usage "$srv"); $(state "$srv" "$T/server.log" 'sessions:')"
	} >"$T/snap"
}

# counts SNAP: the numbers of SNAP that must come back.  Not VmRSS, which
# the allocator decides, nor the pools' idle threads, nor the names the
# client keeps of the directories it listed, a cache bounded by
# listed_names= that a reconnection empties, nor the server's watched
# directories (checked apart: see watched_ok), nor the clients' count of
# directories unwatched so far, which only grows.
counts() {
	sed -e 's/[0-9]* rss//' -e 's/ (+[0-9]* idle, +[0-9]* io_uring)//' \
		-e 's/, [0-9]* names of directories listed//' \
		-e 's/, [0-9]* watched directories//' \
		-e 's/; [0-9]* forgotten directories unwatched so far//' "$1"
}

# watched SNAP: the server's count of watched directories in SNAP.
watched() {
	sed -n 's/.* \([0-9]*\) watched directories.*/\1/p' "$1"
}

# A client of the long-lived server that dies with files open and locks
# held: its sessions must end on the server with everything they had.
dying_client() {
	mount_qtfs "unix:$T/sock:$T/exp" "$T/m3" --key-file "$KEY" -o conns=2 2>>"$T/c3.log" ||
		return 1
	python3 -c '
import fcntl, os, sys, time
fds = [os.open(sys.argv[1] + "/dying/held%d" % i, os.O_RDWR | os.O_CREAT, 0o644) for i in range(10)]
for fd in fds:
    fcntl.lockf(fd, fcntl.LOCK_EX)
fcntl.flock(fds[0], fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(60)' "$T/m3" >"$T/held.out" &
	_h=$!
	wait_until 10 grep -q held "$T/held.out" || return 1
	kill -9 "$(pgrep -f -- "$FUSE_QTFS .*$T/m3\$")"
	kill -9 "$_h"
	wait "$_h" 2>/dev/null
	umount -l "$T/m3"
	rm -f "$T"/exp/dying/held*
}

# The conns=2 mount's server dies and comes back.
restart_server2() {
	kill -9 "$srv2"
	wait "$srv2" 2>/dev/null
	start_server "$T/server2.$c.log" --listen "$tcp" --key-file "$KEY" --export "$T/exp" ||
		return 1
	srv2=$SERVER_PID
	wait_until 20 ls "$T/m2" >/dev/null
}

# workload MOUNT OUT: soak.py on MOUNT, its transcript in OUT, shown if it fails.
workload() {
	SOAK_SERVER_PIDS="$srv $srv2" timeout -s KILL 120 \
		python3 "${top_srcdir:-.}/tests/fs/soak.py" "$T/exp" "$1" "$T/proc" "$scale" \
		>"$2" 2>&1 && grep -q ": done\$" "$2" && return 0
	cat "$2"
	return 1
}

# The baseline: each mount looked at once, as after any use.
ls -la "$T/m1" "$T/m2" "$T/proc/self/" >/dev/null
cat "$T/proc/loadavg" >/dev/null
snapshot
echo "baseline:"
sed 's/^/	/' "$T/snap"
counts "$T/snap" >"$T/snap.0"
cp "$T/snap" "$T/snap.base"

# A directory the host made, in a directory no one lists, renamed from the
# DPU: the server watches neither, so no report of the move comes back, and
# the client's note of it (own moves) goes after its 10 s.  It is gone by
# the first cycle's snapshot, which waits for that if the cycle was quick.
check "a rename of a directory the server does not watch" \
	mv "$T/m1/moves/hostdir" "$T/m1/moves/renamed"
moved_at=$(date +%s)

c=1
while [ "$c" -le "$cycles" ]; do
	check "cycle $c: the workload on the unix mount" workload "$T/m1" "$T/w1.out"
	check "cycle $c: the workload on the tcp mount" workload "$T/m2" "$T/w2.out"
	check "cycle $c: a client dies with files open and locks held" dying_client
	check "cycle $c: the tcp mount's server killed and started again" restart_server2
	_wait=$((moved_at + 11 - $(date +%s)))
	[ "$_wait" -le 0 ] || sleep "$_wait"
	snapshot
	echo "after cycle $c ($(($(date +%s) - start)) s):"
	sed 's/^/	/' "$T/snap"
	check "cycle $c: no daemon has more than 2 threads of GLib's pools left" \
		sh -c "! grep -q '(+\([3-9]\|[1-9][0-9]\+\) idle' '$T/snap'"
	counts "$T/snap" >"$T/snap.$c"
	# The clients of the long-lived server work in soak/, fifos/ and moves/,
	# which stay; the one that died worked in dying/ alone: its watch goes
	# with it.
	check "cycle $c: the server watches $(watched "$T/snap") dirs: root, soak/, fifos/, moves/" \
		[ "$(watched "$T/snap")" -le $(($(watched "$T/snap.base") + 3)) ]
	check "cycle $c: every count back to the baseline" cmp -s "$T/snap.0" "$T/snap.$c" ||
		diff "$T/snap.0" "$T/snap.$c"
	c=$((c + 1))
done
check "unmount" umount_qtfs "$T/m1"
check "unmount" umount_qtfs "$T/m2"
check "unmount" umount_qtfs "$T/proc"
finish
