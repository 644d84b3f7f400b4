#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# A dead server must never hang the mount: kill -9 qtfs-server in the
# middle of a workload; callers get an error within their deadline
# (-o timeout=3), data written and fsynced before the kill is on the host,
# and once the server is back the client reconnects by itself and a file
# that was open across the restart keeps working (reopened by path, unless
# the host put another file at its name meanwhile: ESTALE, from the write
# or, answered before the host's reply, the close), as does a
# directory being listed (its listing goes on from where it was).  A
# client that vanishes with a file open whose close blocks does not stall
# the server for the others.

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"

mkdir -p "$T/exp"
port=$(free_port)
start_server "$T/server.log" --listen "tcp://127.0.0.1:$port" --export "$T/exp" --key-file "$KEY" || exit 1
check "mount with timeout=3" mount_qtfs "tcp://127.0.0.1:$port:$T/exp" "$T/mnt" \
	--key-file "$KEY" -o timeout=3

# A process that keeps a file open across the restart, driven by flag files.
mkdir "$T/exp/dir" "$T/exp/h3"
python3 -c 'import sys; [open("%s/n%04d" % (sys.argv[1], i), "w").close() for i in range(2000)]' "$T/exp/dir"
python3 - "$T/mnt/held" "$T" >"$T/held.out" 2>&1 <<'PY' &
import errno, os, sys, time
path, t = sys.argv[1], sys.argv[2]
# A directory listed in part before the restart and the rest after.
it = os.scandir(os.path.join(os.path.dirname(path), "dir"))
names = [next(it).name for _ in range(300)]
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b"before;")
os.fsync(fd)
# A second file only read and fstat'ed after the restart: those calls
# are answered asynchronously and must reopen the file too.
with open(path + "2", "wb") as f:
    f.write(b"read-only file")
fd2 = os.open(path + "2", os.O_RDONLY)
# A third, which the host unlinks and replaces by another file while the
# server is down: reopened by path, the handle would write into the other
# file (on ext4, likely with the same inode number, another generation).
# In a directory of its own, which nothing on the DPU lists meanwhile (a
# listing would tell the client of the new file, and the old one's name
# would be gone).
fd3 = os.open(os.path.join(os.path.dirname(path), "h3", "held3"), os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd3, b"third")
open(t + "/held.ready", "w").close()
deadline = time.time() + 60
while not os.path.exists(t + "/held.go") and time.time() < deadline:
    time.sleep(0.05)
names += [e.name for e in it]
print("dir:", len(names), len(set(names)))
print("fstat2:", os.fstat(fd2).st_size)
print("read2:", os.pread(fd2, 64, 0).decode())
os.close(fd2)
os.pwrite(fd, b"after", 7)
print("read back:", os.pread(fd, 64, 0).decode())
os.close(fd)
# The write is answered before the host's reply (write-behind): the
# error comes with it or with the close.
try:
    os.pwrite(fd3, b"after", 5)
    w3 = "done"
except OSError as e:
    w3 = errno.errorcode.get(e.errno, e.errno)
try:
    os.close(fd3)
    c3 = "ok"
except OSError as e:
    c3 = errno.errorcode.get(e.errno, e.errno)
print("write3:", w3, "close3:", c3)
PY
held=$!

# Fsynced data: must survive the kill.
head -c 2000000 /dev/urandom >"$T/synced.src"
python3 -c '
import os, sys
src, dst = sys.argv[1], sys.argv[2]
with open(src, "rb") as f, open(dst, "wb") as g:
    g.write(f.read()); g.flush(); os.fsync(g.fileno())
' "$T/synced.src" "$T/mnt/synced"

# A busy writer, killed together with the server.
(
	i=0
	while [ $i -lt 100000 ]; do
		echo "line $i" >>"$T/mnt/busy" 2>/dev/null || exit 0
		i=$((i + 1))
	done
) &
busy=$!

i=0
while [ ! -e "$T/held.ready" ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
sleep 0.5
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null
check "fsynced data is on the host after kill -9" cmp -s "$T/synced.src" "$T/exp/synced"
rm "$T/exp/h3/held3"
echo other >"$T/exp/h3/held3"

# While the server is down, calls fail within the deadline instead of hanging.
start=$(date +%s)
timeout 30 stat "$T/mnt/nothing-here" >/dev/null 2>"$T/stat.err"
rc=$?
elapsed=$(($(date +%s) - start))
check "a call on a dead server fails (rc=$rc)" [ $rc -ne 0 ] && [ $rc -ne 124 ]
check "... within its deadline (${elapsed}s <= 10s)" [ "$elapsed" -le 10 ]
# The barrier a root process asks for (rexec when a command ends,
# trusted.qtfs.sync) is answered at once (every cached name expired): the
# kernel checks no permission for it, which for user.qtfs.sync needs the
# root's attributes from the host again after attr_timeout, which waits
# for the deadline.
sleep 1.2
barrier=$(python3 -c '
import os, sys, time
t = time.monotonic()
try:
    os.getxattr(sys.argv[1], "trusted.qtfs.sync")
    r = "ok"
except OSError as e:
    r = os.strerror(e.errno)
print("%s in %.1f s" % (r, time.monotonic() - t))' "$T/mnt")
check "the barrier for root with the server down: $barrier" sh -c 'echo "$1" | grep -q "^ok in 0\.[0-4] s"' sh "$barrier"
kill "$busy" 2>/dev/null
wait "$busy" 2>/dev/null

# Restart; the client reconnects with backoff.
start_server "$T/server2.log" --listen "tcp://127.0.0.1:$port" --export "$T/exp" --key-file "$KEY" || exit 1
ok=no
i=0
while [ $i -lt 100 ]; do
	if ls "$T/mnt" >/dev/null 2>&1; then
		ok=yes
		break
	fi
	sleep 0.1
	i=$((i + 1))
done
check "the mount works again after the restart" [ $ok = yes ]
check "fsynced data reads back through the mount" cmp -s "$T/synced.src" "$T/mnt/synced"
touch "$T/held.go"
wait "$held"
check "a file open across the restart keeps working" grep -q "read back: before;after" "$T/held.out"
check "... and one only read: fstat" grep -q "^fstat2: 14$" "$T/held.out"
check "... and a listing of 2000 names begun before it ends after it, each name once" \
	grep -q "^dir: 2000 2000$" "$T/held.out"
check "... and read" grep -q "^read2: read-only file$" "$T/held.out"
check "one the host replaced meanwhile is stale, said by the write or the close: $(grep write3 "$T/held.out")" \
	grep -Eq "^write3: (ESTALE close3: ok|done close3: ESTALE)$" "$T/held.out"
check "... and the other file is untouched" grep -qx other "$T/exp/h3/held3"
check "the host file has both writes" grep -q "before;after" "$T/exp/held"
echo new >"$T/mnt/new"
check "new files after the restart" grep -qx new "$T/exp/new"
check "unmount" umount_qtfs "$T/mnt"

# SIGTERM while calls wait for a server that is gone: the calls still in
# the client's hands (a stat on its loop thread, a mkdir on a FUSE worker)
# are answered before the FUSE session goes, at once rather than at their
# 20 s deadline, and the daemon exits 0.  An answer after the session is freed is a use after
# free inside libfuse (not instrumented, so ASan is silent); libfuse then
# says "fuse: writing device" about the closed descriptor it finds.
mkdir -p "$T/mnt3"
"$FUSE_QTFS" -f --key-file "$KEY" -o timeout=20 "tcp://127.0.0.1:$port:$T/exp" "$T/mnt3" \
	>"$T/fg.log" 2>&1 &
fg=$!
i=0
while ! mountpoint -q "$T/mnt3" && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
check "a foreground mount" mountpoint -q "$T/mnt3"
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null
stat "$T/mnt3/waiting-for-the-server" >/dev/null 2>&1 &
waiter=$!
mkdir "$T/mnt3/waiting-dir" 2>/dev/null &
waiter2=$!
sleep 0.5
kill -TERM "$fg"
wait_gone 50 "$fg"
check "SIGTERM with calls waiting: the daemon is gone within 5 s (state '$gone_state')" [ $? -eq 0 ]
wait "$fg"
rc=$?
check "... and exits 0 (rc=$rc)" [ "$rc" -eq 0 ]
check "... cleanly (no answer after the session, no sanitizer report)" \
	sh -c '! grep -q -e "writing device" -e Sanitizer "$1"' sh "$T/fg.log"
wait "$waiter"
rc=$?
check "... and the waiting stat fails (rc=$rc)" [ "$rc" -ne 0 ]
wait "$waiter2"
rc=$?
check "... and so does the waiting mkdir (rc=$rc)" [ "$rc" -ne 0 ]
mountpoint -q "$T/mnt3" && fusermount3 -u "$T/mnt3"

# A client that goes away with files open: the server closes them, and a
# close can wait for long (write-back, a network file system, a FUSE
# daemon).  Not on its event loop thread, or every other client waits as
# long.  Here the export holds a second FUSE mount whose daemon is stopped,
# so closing the file open there blocks until it runs again.
mkdir -p "$T/exp4/in" "$T/inner" "$T/m4a" "$T/m4b"
echo inner >"$T/inner/f"
start_server "$T/server4.log" --listen "unix:$T/s4" --export "$T/exp4" || exit 1
server4=$SERVER_PID
start_server "$T/server5.log" --listen "unix:$T/s5" --export "$T/inner" || exit 1
"$FUSE_QTFS" -f "unix:$T/s5:$T/inner" "$T/exp4/in" >"$T/inner.log" 2>&1 &
inner=$!
QTFS_PIDS="$QTFS_PIDS $inner"
QTFS_MOUNTS="$T/exp4/in $QTFS_MOUNTS"
"$FUSE_QTFS" -f "unix:$T/s4:$T/exp4" "$T/m4a" >"$T/m4a.log" 2>&1 &
goner=$!
QTFS_PIDS="$QTFS_PIDS $goner"
QTFS_MOUNTS="$T/m4a $QTFS_MOUNTS"
check "a mount that will go away" wait_until 10 is_mounted "$T/m4a"
check "a mount that stays" mount_qtfs "unix:$T/s4:$T/exp4" "$T/m4b"
sh -c 'exec 9<"$1" && exec sleep 1000' sh "$T/m4a/in/f" >/dev/null 2>&1 &
holder=$!
QTFS_PIDS="$QTFS_PIDS $holder"
server_has_f() { holds_open "$server4" "$T/exp4/in/f"; }
check "the server holds the file in the inner mount open" wait_until 10 server_has_f
kill -STOP "$inner"
kill -9 "$goner"
check "the client is gone" wait_until 5 sh -c "! kill -0 $goner 2>/dev/null"
reaches4() { timeout 5 touch "$T/m4b/after" 2>/dev/null && [ -e "$T/exp4/after" ]; }
# A server thread in the close, waiting for the stopped daemon's answer to the FLUSH.
in_flush() { cat "/proc/$server4/task/"*/stack 2>/dev/null | grep -q fuse_flush; }
no_flush() { ! in_flush; }
check "the session's close waits for the stopped daemon" wait_until 5 in_flush
check "... and the other client is served meanwhile" reaches4
kill -CONT "$inner"
check "the inner daemon runs again: the close ends" wait_until 10 no_flush
# A close by a live client of a file whose file system has a flush method
# (this inner FUSE mount): io_uring's close hands it to its worker, and
# the file is closed on the host all the same.
echo written-through >"$T/m4b/in/g"
check "a file written into the inner mount through the client arrives" \
	[ "$(cat "$T/exp4/in/g" 2>/dev/null)" = written-through ]
server_has_g() { holds_open "$server4" "$T/exp4/in/g"; }
server_has_no_g() { ! server_has_g; }
check "... and the server closed it" wait_until 5 server_has_no_g
# The inner mount answers the server's writes before its own host's reply
# (write-behind): its host has them once the server's close of the file
# there (asynchronous, after the client's) is done.
inner_has_g() { [ "$(cat "$T/inner/g" 2>/dev/null)" = written-through ]; }
check "... and so has the inner mount's host" wait_until 5 inner_has_g
kill "$holder" 2>/dev/null
umount -l "$T/m4a" 2>/dev/null
check "unmount the one that stayed" umount_qtfs "$T/m4b"
check "unmount the inner mount" umount_qtfs "$T/exp4/in"
finish
