#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Relayed FIFOs at their edges, against the same FIFO used on the host
# alone (tests/fs/fifo_edges.py): O_NONBLOCK opens and reads, O_RDWR, the
# writer or the reader going away on either side, two writers, a full
# pipe, poll's POLLHUP.  test-qtfs-pseudo.sh has the plain traffic,
# interrupts and many FIFOs at once.

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"

EDGES=$top_srcdir/tests/fs/fifo_edges.py
mkdir -p "$T/exp/fifos"
start_server "$T/server.log" --listen "unix:$T/sock" --export "$T/exp" || exit 1
check "mount with fifo_relay" mount_qtfs "unix:$T/sock:$T/exp" "$T/mnt" -o fifo_relay=fifos

for s in $(python3 "$EDGES" --list); do
	# A scenario that waits for good is a failure too (timeout: 124).
	out=$(timeout -s KILL 20 python3 "$EDGES" "$T/mnt/fifos" "$T/exp/fifos" "$s" 2>&1)
	rc=$?
	check "FIFO $s: the relay does what the host does ($out, rc=$rc)" [ "$rc" -eq 0 ]
done
check "the mount still answers" timeout 5 ls "$T/mnt/fifos"
finish
