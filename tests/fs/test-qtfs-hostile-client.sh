#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Nothing a client sends may take qtfs-server down or out of its export.
# qtfs-raw (test-qtfs-security.sh) sends crafted requests one by one; here
# qtfs-mitm stands between a real fuse-qtfs mount (over tcp, on four
# connections; test-qtfs-hostile.sh has one unix socket) and the server
# and mangles one request in four on its way there (bytes flipped,
# payloads cut short, lengthened or replaced by junk with huge length
# prefixes, one in eight of them with another operation's type), in the
# middle of real traffic of every kind: paths of files and of symlinks
# that lead out of the export (relative and absolute), and handles of open
# files.  While it runs, a second mount of the same export straight to
# the server writes and reads files.  Then: the server is still up, with
# no sanitizer report; the honest mount never saw a wrong byte or an
# error; nothing beside the export changed; the client is up too (the
# server's answers to mangled requests are errors of every kind, ENOSYS
# among them, which the client must not pass on: see docs/fuse-qtfs.md);
# and once the requests are honest the mangled mount works.

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"
. "${top_srcdir:-.}/tests/fs/hostile-env.sh"

MPORT=$(free_port)
# The export is $B/exp; beside it, in $B, what a request that escaped
# would touch (the test's own files are in $T, out of the way).
B=$T/box
mkdir -p "$B/exp" "$B/outside/sub"
python3 "${top_srcdir:-.}/tests/fs/hostile-workload.py" --setup "$B/exp"
for f in secret n000 big w1 c1; do echo "outside $f" >"$B/outside/$f"; done
echo "outside sub" >"$B/outside/sub/n001"
ln -s ../outside "$B/exp/up"
ln -s "$B/outside" "$B/exp/abs"
ln -s ../outside/secret "$B/exp/secret"
mkdir "$B/exp/honest"
# What must not change: every name in $B but the export's, with its size,
# mode and mtime, and the files' bytes.
outside_state() {
	find "$B" -path "$B/exp" -prune -o -printf '%p %s %m %T@ %y\n' | sort
	find "$B/outside" -type f -exec md5sum {} + | sort
}
outside_state >"$T/outside.before"

start_server "$T/server.log" --listen "unix:$T/sock" --export "$B/exp" --key-file "$KEY" || exit 1
start_mitm "$T/mitm.log" --listen "tcp://127.0.0.1:$MPORT" --upstream "unix:$T/sock" --requests --rate 4 \
	--seed "${QTFS_HOSTILE_SEED:-$$}"
check "mount through qtfs-mitm (tcp, 4 connections)" mount_qtfs "tcp://127.0.0.1:$MPORT:$B/exp" "$T/mnt" \
	--key-file "$KEY" -o timeout=3,conns=4 2>"$T/client.log"
client=$(pgrep -f -- "$FUSE_QTFS .*$T/mnt\$")
check "... its daemon is found ($client)" [ -n "$client" ]
check "mount straight to the server" mount_qtfs "unix:$T/sock:$B/exp" "$T/honest" --key-file "$KEY"

# The honest mount, all along: each round writes a file and reads it back.
: >"$T/honest.err"
(
	i=0
	while [ ! -e "$T/stop" ]; do
		i=$((i + 1))
		printf 'round %d\n' "$i" >"$T/honest/honest/f$((i % 8))" 2>>"$T/honest.err" ||
			echo "round $i: write failed" >>"$T/honest.err"
		[ "$(cat "$T/honest/honest/f$((i % 8))" 2>>"$T/honest.err")" = "round $i" ] ||
			echo "round $i: read back something else" >>"$T/honest.err"
	done
	echo "$i" >"$T/honest.rounds"
) &
honest=$!

# The same calls as test-qtfs-hostile.sh's, plus the ways out.
run_workload "$T/mnt" "the mangling proxy"
# Calls on the symlinks that lead out, as names (the DPU's kernel follows
# none of them here): their requests name the symlink, and mangled into
# other requests (an OPEN, a SETATTR, a WRITE...) they would reach the
# file beyond it, did the server follow it.
timeout -s KILL 60 python3 - "$T/mnt" >"$T/ways.out" 2>&1 <<'PY'
import os, sys
m = sys.argv[1]
n = 0
for i in range(300):
    for name in ("up", "abs", "secret"):
        p = os.path.join(m, name)
        n += 1
        for call in (lambda: os.readlink(p), lambda: os.lstat(p),
                     lambda: os.utime(p, (i, i), follow_symlinks=False),
                     lambda: os.setxattr(p, "trusted.k", b"v", follow_symlinks=False),
                     lambda: os.getxattr(p, "trusted.k", follow_symlinks=False)):
            try:
                call()
            except OSError:
                pass
print("ways out tried: %d" % n)
PY
touch "$T/stop"
wait "$honest"
cat "$T/ways.out"
check "the ways out were tried" grep -q "^ways out tried: 900" "$T/ways.out"
check "... and the kernel took every reply the client wrote then too" sh -c "! grep 'writing device' '$T/client.log'"
mangling_stopped "$T/mitm.log" requests
check "the server is still up" kill -0 "$SERVER_PID"
check "... and the client" kill -0 "$client"
check "the honest mount saw no error and no wrong byte in $(cat "$T/honest.rounds") rounds" \
	[ ! -s "$T/honest.err" ]
head -n 5 "$T/honest.err"
outside_state >"$T/outside.after"
diff "$T/outside.before" "$T/outside.after" | head -n 20
check "nothing outside the export changed" cmp -s "$T/outside.before" "$T/outside.after"

# Honest requests again: the mangled mount works (names it cached while
# the requests were mangled lapse within the 1 s entry timeout).
sleep 1.5
again=no
wait_until 10 sh -c "echo fresh >'$T/mnt/after' && [ \"\$(cat '$B/exp/after')\" = fresh ]" && again=yes
check "the mount works again once the requests are honest: $again" [ "$again" = yes ]
check "unmount the honest mount" umount_qtfs "$T/honest"
check "unmount" umount_qtfs "$T/mnt"
stop_mitm "$T/mitm.log"
finish
