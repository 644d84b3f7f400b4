#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# A dead server must never hang the mount: kill -9 qtfs-server in the
# middle of a workload; callers get an error within their deadline
# (-o timeout=3), data written and fsynced before the kill is on the host,
# and once the server is back the client reconnects by itself and a file
# that was open across the restart keeps working (reopened by path).

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"

mkdir -p "$T/exp"
port=$(free_port)
start_server "$T/server.log" --listen "tcp://127.0.0.1:$port" --export "$T/exp" --key-file "$KEY" || exit 1
check "mount with timeout=3" mount_qtfs "tcp://127.0.0.1:$port:$T/exp" "$T/mnt" \
	--key-file "$KEY" -o timeout=3

# A process that keeps a file open across the restart, driven by flag files.
python3 - "$T/mnt/held" "$T" >"$T/held.out" 2>&1 <<'PY' &
import os, sys, time
path, t = sys.argv[1], sys.argv[2]
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b"before;")
os.fsync(fd)
# A second file only read and fstat'ed after the restart: those calls
# are answered asynchronously and must reopen the file too.
with open(path + "2", "wb") as f:
    f.write(b"read-only file")
fd2 = os.open(path + "2", os.O_RDONLY)
open(t + "/held.ready", "w").close()
deadline = time.time() + 60
while not os.path.exists(t + "/held.go") and time.time() < deadline:
    time.sleep(0.05)
print("fstat2:", os.fstat(fd2).st_size)
print("read2:", os.pread(fd2, 64, 0).decode())
os.close(fd2)
os.pwrite(fd, b"after", 7)
print("read back:", os.pread(fd, 64, 0).decode())
os.close(fd)
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

# While the server is down, calls fail within the deadline instead of hanging.
start=$(date +%s)
timeout 30 stat "$T/mnt/nothing-here" >/dev/null 2>"$T/stat.err"
rc=$?
elapsed=$(($(date +%s) - start))
check "a call on a dead server fails (rc=$rc)" [ $rc -ne 0 ] && [ $rc -ne 124 ]
check "... within its deadline (${elapsed}s <= 10s)" [ "$elapsed" -le 10 ]
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
check "... and read" grep -q "^read2: read-only file$" "$T/held.out"
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
finish
