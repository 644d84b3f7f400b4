#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Host pseudo file systems through fuse-qtfs, compared with local reads of
# the same files (the "host" and the "DPU" are one machine here, so a local
# read is the host's answer): /proc files read whole and in small chunks,
# /sys attributes, a cgroup created, joined and limited through the mount,
# poll wake-up on cgroup.events, proc mode (/proc/self and listed local
# processes), and a FIFO connecting a process on each side.

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"

mkdir -p "$T/exp/fifos"
cg2=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
exports="--export /proc --export /sys --export $T/exp"
[ -n "$cg2" ] && exports="$exports --export $cg2"
# shellcheck disable=SC2086 # one word per option
start_server "$T/server.log" --listen "unix:$T/sock" $exports || exit 1

check "mount host /proc" mount_qtfs "unix:$T/sock:/proc" "$T/proc"
check "mount host /sys" mount_qtfs "unix:$T/sock:/sys" "$T/sys"

# -- /proc: a quiet process's files must read exactly as locally ---------------
sleep 300 &
quiet=$!
QTFS_PIDS="$QTFS_PIDS $quiet"
sleep 0.1
sleep 0.5
# SigQ in status counts the user's queued signals machine-wide: not the file's to keep still.
# filter F: status without SigQ, other files unchanged.
filter() {
	if [ "$1" = status ]; then grep -v '^SigQ'; else cat; fi
}
for f in maps status environ cmdline limits; do
	filter $f <"/proc/$quiet/$f" >"$T/local"
	filter $f <"$T/proc/$quiet/$f" >"$T/whole"
	check "/proc/PID/$f is identical" cmp "$T/local" "$T/whole"
	# 97-byte reads: many requests at moving offsets over one host descriptor.
	dd if="$T/proc/$quiet/$f" bs=97 2>/dev/null | filter $f >"$T/chunked"
	check "/proc/PID/$f read in 97-byte chunks is identical" cmp "$T/local" "$T/chunked"
done
# A pass over /proc/PID/maps in small reads while the process unmaps
# some of the mappings listed first, or exits, between two of them
# (tests/fs/proc_pass.py): a local reader gets whole lines, each a mapping
# of the process, and every mapping it had all along.  The first read is
# answered from the bytes the OPEN brought; the host's descriptor must
# go on from their end, not start the pass again.
for w in exit unmap; do
	out=$(timeout 30 python3 "$top_srcdir/tests/fs/proc_pass.py" "$T/proc" $w 2>&1)
	check "/proc/PID/maps read in chunks across a change ($w): $out" [ "$out" = "whole lines" ]
done
# poll on /proc/PID/mountinfo wakes at a mount in the process's
# namespace, with POLLPRI|POLLERR, which the host reports to one poll
# only: the server's wait takes it, and the DPU's poller must still get
# it.  In a mount namespace of its own, so the machine's table stays as
# it was whatever happens.
mkdir -p "$T/pollmnt"
# shellcheck disable=SC2016 # $1 and $2 are the inner shell's
unshare -m --propagation private sh -c 'exec python3 - "$1" "$2"' sh "$T/proc" "$T/pollmnt" \
	>"$T/mipoll.out" 2>&1 <<'PY'
import os, select, signal, subprocess, sys
signal.alarm(20)
for base in ("/proc", sys.argv[1]):
    fd = os.open("%s/%d/mountinfo" % (base, os.getpid()), os.O_RDONLY)
    os.read(fd, 1 << 20)
    p = select.poll()
    p.register(fd, select.POLLPRI | select.POLLERR)
    before = p.poll(100)
    subprocess.run(["mount", "-t", "tmpfs", "qtfs-poll", sys.argv[2]], check=True)
    after = p.poll(5000)
    subprocess.run(["umount", sys.argv[2]], check=True)
    print("local" if base == "/proc" else "mount", [e for _, e in before], [e for _, e in after])
    os.close(fd)
PY
check "poll on /proc/PID/mountinfo wakes at a mount (control: locally)" \
	grep -qx "local \[\] \[10\]" "$T/mipoll.out"
check "poll on /proc/PID/mountinfo through the mount wakes at a mount, POLLPRI|POLLERR" \
	grep -qx "mount \[\] \[10\]" "$T/mipoll.out"
cut -d: -f1 /proc/meminfo >"$T/mi.local"
cut -d: -f1 "$T/proc/meminfo" >"$T/mi.remote"
check "/proc/meminfo has the same fields" cmp -s "$T/mi.local" "$T/mi.remote"
check "/proc/meminfo is not empty through the mount (size 0 on procfs)" [ -s "$T/mi.remote" ]
check "/proc/version is identical" cmp -s /proc/version "$T/proc/version"
# The start of a small pseudo file comes with its OPEN (server.c,
# "prefetch"): a reader that goes back to offset 0 must get the host's
# current content, not what was read at open.  /proc/uptime moves every 10 ms.
# reread FILE: read FILE, seek back, wait, read again; print "same" or "fresh".
reread() {
	python3 - "$1" <<'PY'
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
a = os.read(fd, 4096)
os.lseek(fd, 0, os.SEEK_SET)
time.sleep(0.05)
b = os.read(fd, 4096)
os.close(fd)
print("fresh" if a and b and a != b else "same")
PY
}
check "/proc/uptime read again after lseek(0) is fresh" [ "$(reread "$T/proc/uptime")" = fresh ]
check "/proc/uptime read again after lseek(0) is fresh locally (control)" [ "$(reread /proc/uptime)" = fresh ]
check "/proc/PID/exe is a readable link" [ "$(readlink "$T/proc/$quiet/exe")" = "$(readlink /proc/$quiet/exe)" ]
check "/proc/PID/stat can be listed" ls "$T/proc/$quiet/task" >/dev/null

# -- /sys -------------------------------------------------------------------------
ls /sys/class/net >"$T/net.local"
ls "$T/sys/class/net" >"$T/net.remote"
check "/sys/class/net lists the same" cmp -s "$T/net.local" "$T/net.remote"
check "/sys/kernel/mm/transparent_hugepage/enabled is identical" \
	cmp -s /sys/kernel/mm/transparent_hugepage/enabled "$T/sys/kernel/mm/transparent_hugepage/enabled"
check "/sys/devices/system/cpu/online is identical" \
	cmp -s /sys/devices/system/cpu/online "$T/sys/devices/system/cpu/online"

# -- cgroup v2: create, join, limit, poll --------------------------------------------
if [ -n "$cg2" ]; then
	check "mount host cgroup2 tree" mount_qtfs "unix:$T/sock:$cg2" "$T/cg"
	name=qtfs-test-$$
	check "mkdir a cgroup through the mount" mkdir "$T/cg/$name"
	check "the cgroup exists on the host" [ -f "$cg2/$name/cgroup.procs" ]
	sleep 300 &
	member=$!
	QTFS_PIDS="$QTFS_PIDS $member"
	echo "$member" >"$T/cg/$name/cgroup.procs"
	check "writing cgroup.procs moved the process on the host" grep -qx "$member" "$cg2/$name/cgroup.procs"
	check "cgroup.events says populated 1" grep -qx "populated 1" "$T/cg/$name/cgroup.events"
	if grep -qw memory "$cg2/cgroup.subtree_control" 2>/dev/null; then
		echo 104857600 >"$T/cg/$name/memory.max"
		check "memory.max took effect on the host" grep -qx 104857600 "$cg2/$name/memory.max"
	fi
	# poll(2) on cgroup.events must wake when the cgroup empties.
	python3 - "$T/cg/$name/cgroup.events" "$member" >"$T/poll.out" 2>&1 <<'PY' &
import os, select, signal, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
os.read(fd, 4096)
p = select.poll()
p.register(fd, select.POLLPRI)
signal.alarm(20)
time.sleep(0.3)
os.kill(int(sys.argv[2]), signal.SIGKILL)
start = time.time()
ev = p.poll(15000)
os.lseek(fd, 0, 0)
print("events", ev and ev[0][1], "after", round(time.time() - start, 1))
print(os.read(fd, 4096).decode())
PY
	pyp=$!
	wait "$pyp"
	check "poll on cgroup.events woke up" grep -q "^events [1-9]" "$T/poll.out"
	check "cgroup.events then says populated 0" grep -qx "populated 0" "$T/poll.out"
	check "rmdir the cgroup through the mount" rmdir "$T/cg/$name"
	check "the cgroup is gone on the host" [ ! -e "$cg2/$name" ]
else
	echo "note: no cgroup2 mount on this machine; cgroup checks not run"
fi

# -- proc mode ------------------------------------------------------------------
lp=$T/local_proc
mkdir -p "$lp"
mount -t proc proc "$lp" || fail "mount a local procfs"
QTFS_MOUNTS="$QTFS_MOUNTS $lp"
cp /bin/sleep "$T/kubelet"
"$T/kubelet" 300 &
kube=$!
QTFS_PIDS="$QTFS_PIDS $kube"
sleep 0.1
check "mount host /proc in proc mode" mount_qtfs "unix:$T/sock:/proc" "$T/pproc" -o "proc,local_proc=$lp"
out=$(sh -c 'echo $$; exec readlink "$1/self"' sh "$T/pproc")
pid=$(echo "$out" | head -n 1)
check "proc mode: self -> local_proc/<caller pid>" [ "$(echo "$out" | tail -n 1)" = "$lp/$pid" ]
out=$(sh -c 'echo $$; exec readlink "$1/thread-self"' sh "$T/pproc")
pid=$(echo "$out" | head -n 1)
check "proc mode: thread-self -> local_proc/pid/task/tid" [ "$(echo "$out" | tail -n 1)" = "$lp/$pid/task/$pid" ]
check "proc mode: a listed local process (comm kubelet) is local" [ "$(readlink "$T/pproc/$kube")" = "$lp/$kube" ]
check "proc mode: other pids are the host's" [ -d "$T/pproc/$quiet" ] && [ ! -L "$T/pproc/$quiet" ]
check "proc mode: /proc/self/status through the link is the reader's" \
	sh -c 'exec grep -q "^Pid:	$$\$" "$1/self/status"' sh "$T/pproc"

# -- FIFO relay -----------------------------------------------------------------
check "mount with fifo_relay" mount_qtfs "unix:$T/sock:$T/exp" "$T/mnt" -o fifo_relay=fifos
check "mkfifo through the mount" mkfifo "$T/mnt/fifos/io"
check "the host has a FIFO" [ -p "$T/exp/fifos/io" ]
timeout 10 cat "$T/exp/fifos/io" >"$T/fifo1" &
r=$!
sleep 0.2
echo "from the DPU" >"$T/mnt/fifos/io"
wait $r
check "DPU writer -> host reader" grep -qx "from the DPU" "$T/fifo1"
timeout 10 cat "$T/mnt/fifos/io" >"$T/fifo2" &
r=$!
sleep 0.2
echo "from the host" >"$T/exp/fifos/io"
wait $r
check "host writer -> DPU reader" grep -qx "from the host" "$T/fifo2"
python3 - "$T/mnt/fifos/io" "$T/exp/fifos/io" >"$T/fpoll.out" 2>&1 <<'PY'
import os, select, signal, sys, threading, time
signal.alarm(20)
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)
p = select.poll()
p.register(fd, select.POLLIN)
before = p.poll(200)
def writer():
    time.sleep(0.5)
    w = os.open(sys.argv[2], os.O_WRONLY)
    os.write(w, b"x")
    time.sleep(0.5)
    os.close(w)
threading.Thread(target=writer).start()
after = p.poll(10000)
print("before", before, "after", after, "data", os.read(fd, 10))
PY
check "poll on a relayed FIFO: idle, then woken by a host writer" \
	grep -q "^before \[\] after \[(.*, 1)\] data b'x'" "$T/fpoll.out"
# A signal to a DPU process blocked on a relayed FIFO interrupts the read,
# and then the open, as on a local FIFO (tests/fs/interrupt.py).  Without
# that, both would wait for the host side.
sleep 30 >"$T/exp/fifos/io" 2>/dev/null &
holder=$!
python3 "$top_srcdir/tests/fs/interrupt.py" fifo "$T/mnt/fifos/io" "$holder" >"$T/fintr.out" 2>&1
check "a signal interrupts a read blocked on a relayed FIFO" grep -qx "read interrupted fast" "$T/fintr.out"
check "a signal interrupts an open blocked on a relayed FIFO" grep -qx "open interrupted fast" "$T/fintr.out"
kill "$holder" 2>/dev/null
check "the mount answers after the interrupts" timeout 3 ls "$T/mnt/fifos"
# Blocking opens must not stall other requests: a reader waits on an empty FIFO
# while the mount keeps answering.
timeout 5 cat "$T/mnt/fifos/io" >/dev/null &
blocked=$!
sleep 0.3
check "other requests proceed while a FIFO open blocks" timeout 3 ls "$T/mnt/fifos"
echo "done" >"$T/exp/fifos/io"
wait $blocked
# SIGTERM while a DPU reader waits on a relayed FIFO (no deadline): the
# daemon still ends at once, as its calls fail before its workers are
# waited for, and the reader gets an error instead of waiting on.
timeout 20 cat "$T/mnt/fifos/io" >/dev/null 2>&1 &
waiting=$!
sleep 0.3
pid=$(pgrep -f "fuse-qtfs .*$T/mnt\$" | head -n 1)
kill -TERM "$pid"
wait_gone 50 "$pid"
check "SIGTERM with a reader blocked on a relayed FIFO: the daemon is gone within 5 s (state '$gone_state')" \
	[ $? -eq 0 ]
wait $waiting
rc=$?
check "... and the reader fails rather than waits (rc=$rc)" sh -c '[ "$1" -ne 0 ] && [ "$1" -ne 124 ]' sh "$rc"
# A client that vanishes (kill -9: no INTERRUPT sent) while the server's
# open of a FIFO for it blocks: the lost connection interrupts that open,
# so no thread of the server's blocking pool is left waiting for a writer
# that may never come (wchan wait_for_partner).
fifo_waiters() {
	# A thread's kernel stack (root only), else its wchan, which ends
	# without a newline.  Before Linux 5.16, x86's wchan needs frame
	# pointers: with Debian 11's ORC unwinder it is 0 on 5.10.
	for t in /proc/"$SERVER_PID"/task/*; do
		cat "$t/stack" 2>/dev/null || { cat "$t/wchan" && echo; }
	done 2>/dev/null | grep -c wait_for_partner
}
no_fifo_waiters() {
	[ "$(fifo_waiters)" -eq 0 ]
}
some_fifo_waiters() {
	[ "$(fifo_waiters)" -gt 0 ]
}
check "mount again with fifo_relay" mount_qtfs "unix:$T/sock:$T/exp" "$T/mnt2" -o fifo_relay=fifos
timeout 20 cat "$T/mnt2/fifos/io" >/dev/null 2>&1 &
waiting=$!
check "a DPU reader's FIFO open blocks a server thread" wait_until 5 some_fifo_waiters
pid=$(pgrep -f "fuse-qtfs .*$T/mnt2\$" | head -n 1)
kill -KILL "$pid"
wait_gone 50 "$pid"
wait $waiting
check "the client killed: the server's blocked open ends with the connection" wait_until 5 no_fifo_waiters
# A pseudo file whose reads wait for events (tracefs' trace_pipe, with no
# tracer: nothing ever comes) is read as a FIFO is, on the blocking pool:
# a signal to the reader interrupts the read at once.  (On a shared worker
# or io_uring's, nothing could end that read.)  The trace_pipe of a trace
# instance of our own: the top one's has whatever events someone else
# left in its buffer.
check "mount for the server's shutdown" mount_qtfs "unix:$T/sock:$T/exp" "$T/mnt3" -o fifo_relay=fifos
mkdir -p "$T/exp/tracing"
if mount -t tracefs nodev "$T/exp/tracing" 2>/dev/null; then
	QTFS_MOUNTS="$QTFS_MOUNTS $T/exp/tracing"
	tri=instances/qtfs-test-$$
	mkdir "$T/exp/tracing/$tri" || tri=.
	python3 "$top_srcdir/tests/fs/interrupt.py" read "$T/mnt3/tracing/$tri/trace_pipe" >"$T/trintr.out" 2>&1
	check "a signal interrupts a read blocked on trace_pipe" grep -qx "read interrupted fast" "$T/trintr.out"
	timeout 20 cat "$T/mnt3/tracing/$tri/trace_pipe" >/dev/null 2>&1 &
	r3=$!
else
	ok "SKIP: no tracefs here"
	r3=
fi
# Many DPU readers blocked on relayed FIFOs at once, more than the client
# has FUSE workers (64) and more than one connection may have requests in
# flight (128), as a container runtime keeps one per container stream: the
# other requests (readdir, mkdir) must still be served, and each FIFO must
# still pair with its host writer.
mkdir -p "$T/exp/many"
n=150
i=1
while [ $i -le $n ]; do
	mkfifo "$T/exp/many/f$i"
	i=$((i + 1))
done
check "mount with 150 relayed FIFOs" mount_qtfs "unix:$T/sock:$T/exp" "$T/mnt4" -o fifo_relay=many,conns=1
readers=
i=1
while [ $i -le $n ]; do
	timeout 60 cat "$T/mnt4/many/f$i" >"$T/many.out.$i" 2>&1 &
	readers="$readers $!"
	i=$((i + 1))
done
all_open() { [ "$(fifo_waiters)" -ge $n ]; }
check "150 FIFO opens wait on the host" wait_until 10 all_open
check "... and a readdir is still served" sh -c '[ "$(timeout 10 ls "$1" | wc -l)" -eq 150 ]' sh "$T/mnt4/many"
check "... and a mkdir" timeout 10 mkdir "$T/mnt4/many-dir"
i=1
while [ $i -le $n ]; do
	timeout 10 sh -c 'echo "x$2" >"$1"' sh "$T/exp/many/f$i" "$i" 2>/dev/null
	i=$((i + 1))
done
paired=0
for r in $readers; do
	wait "$r" && paired=$((paired + 1))
done
check "... and every FIFO paired with its host writer ($paired of $n)" [ "$paired" -eq $n ]
check "... each reader got its own line" sh -c '[ "$(cat "$1".* | sort -u | wc -l)" -eq 150 ]' sh "$T/many.out"
check "unmount that mount" umount_qtfs "$T/mnt4"

# SIGTERM to the server while its workers block for a client, on a FIFO
# open (no writer), a FIFO read (a silent host writer) and trace_pipe: the
# shutdown interrupts them and waits for them before it frees what they
# use, so the server ends soon, with status 0, and (sanitizer build) no
# report.
mkfifo "$T/exp/fifos/io2"
timeout 20 cat "$T/mnt3/fifos/io" >/dev/null 2>&1 &
r1=$!
sleep 30 >"$T/exp/fifos/io2" 2>/dev/null &
holder=$!
timeout 20 cat "$T/mnt3/fifos/io2" >/dev/null 2>&1 &
r2=$!
check "two server threads block for the DPU" wait_until 5 some_fifo_waiters
sleep 0.5
kill -TERM "$SERVER_PID"
wait_gone 50 "$SERVER_PID"
check "SIGTERM to the server with blocked FIFO calls: gone within 5 s (state '$gone_state')" [ $? -eq 0 ]
wait "$SERVER_PID"
rc=$?
check "... with exit status 0 (rc=$rc)" [ "$rc" -eq 0 ]
check "... having waited for its blocked calls" sh -c '! grep -q "exiting without them" "$1"' sh "$T/server.log"
kill "$holder" "$r1" "$r2" $r3 2>/dev/null
if [ -n "$r3" ]; then
	# An instance goes once nothing has it open (the reader just killed).
	[ "$tri" = . ] || wait_until 5 rmdir "$T/exp/tracing/$tri" 2>/dev/null ||
		echo "note: trace instance $tri left behind"
	umount -l "$T/exp/tracing"
fi
finish
