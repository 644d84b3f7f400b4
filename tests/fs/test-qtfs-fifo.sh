#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Relayed FIFOs at their edges, against the same FIFO used on the host
# alone (tests/fs/fifo_edges.py): O_NONBLOCK opens and reads, O_RDWR, the
# writer or the reader going away on either side (EPIPE, SIGPIPE), two
# writers, a full pipe, poll's POLLHUP, two polls of one file wanting
# different events, a close and the open of the other end right after it
# (over four connections too).  test-qtfs-pseudo.sh has the plain traffic, interrupts
# and many FIFOs at once.

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
# The reader goes: a local writer dies of SIGPIPE (status 141 in the
# shell), quietly, before it sees EPIPE.  The same writer on the DPU.
# sigpipe_status DIR: the shell's status of `yes` writing to DIR/sp while
# a host reader takes 10 bytes and leaves.
sigpipe_status() {
	rm -f "$T/exp/fifos/sp"
	mkfifo "$T/exp/fifos/sp"
	timeout 10 head -c 10 "$T/exp/fifos/sp" >/dev/null &
	_r=$!
	# SIGPIPE back at its default, whatever the harness left it at: not
	# with the shell's trap, which cannot undo a SIGPIPE ignored when it
	# started (POSIX; systemd's services start so, as in vm-check's guest).
	timeout -s KILL 10 env --default-signal=PIPE sh -c 'yes >"$1" 2>/dev/null; echo $?' \
		sh "$1/sp"
	wait "$_r"
}
on_host=$(sigpipe_status "$T/exp/fifos")
on_dpu=$(sigpipe_status "$T/mnt/fifos")
check "a writer whose reader left dies of SIGPIPE on the host (status $on_host)" [ "$on_host" = 141 ]
check "... and on the DPU through the relay (status $on_dpu)" [ "$on_dpu" = 141 ]
check "the mount still answers" timeout 5 ls "$T/mnt/fifos"
# A FIFO's close and the open after it on different connections (conns=4
# spreads them): the host must close it first, else the open meets the
# end just closed.
check "mount with conns=4" mount_qtfs "unix:$T/sock:$T/exp" "$T/mnt4" -o fifo_relay=fifos,conns=4
out=$(timeout -s KILL 30 python3 "$EDGES" "$T/mnt4/fifos" "$T/exp/fifos" reopen_other_end 2>&1)
rc=$?
check "FIFO reopen_other_end over 4 connections: as on the host ($out, rc=$rc)" [ "$rc" -eq 0 ]
finish
