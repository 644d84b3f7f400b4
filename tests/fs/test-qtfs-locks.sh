#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# POSIX record locks and flock across a fuse-qtfs mount (tests/fs/locks.py):
# processes on the mount and processes on the exported directory see each
# other's locks, blocking waits end when the lock is let go or a signal
# arrives, and closing or dying releases a process's locks; open file
# description locks go with their file's last close, and neither they nor
# refused requests leave descriptors on the server; a lock makes the DPU
# read what the host wrote before it, and SQLite works from both sides.
# Run over a unix socket, and over tcp with two connections.

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"

# run_locks NAME: locks.py on $T/mnt against $T/exp, its report in $T/locks-NAME.out.
run_locks() {
	if QTFS_SERVER_PID=$SERVER_PID python3 "$top_srcdir/tests/fs/locks.py" "$T/mnt" "$T/exp" \
		>"$T/locks-$1.out" 2>&1; then
		ok "locks over $1 ($(grep -c '^ok' "$T/locks-$1.out") checks)"
	else
		cat "$T/locks-$1.out"
		fail "locks over $1"
	fi
}

mkdir -p "$T/exp"
port=$(free_port)
start_server "$T/server.log" --listen "unix:$T/sock" --listen "tcp://127.0.0.1:$port" \
	--key-file "$KEY" --export "$T/exp" || exit 1

# The client's log (it daemonizes but keeps logging to our stderr) goes to a
# file: a lost connection during the test is a failure.
check "mount over unix" mount_qtfs "unix:$T/sock:$T/exp" "$T/mnt" --key-file "$KEY" 2>>"$T/client.log"
run_locks unix
umount_qtfs "$T/mnt"

check "mount over tcp, 2 connections" mount_qtfs "tcp://127.0.0.1:$port:$T/exp" "$T/mnt" \
	--key-file "$KEY" -o conns=2 2>>"$T/client.log"
run_locks tcp
umount_qtfs "$T/mnt"
grep -q "connection .* lost" "$T"/*.log && fail "a connection was lost during the test"
finish
