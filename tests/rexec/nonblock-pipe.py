# SPDX-License-Identifier: Apache-2.0
#
# Runs a command with a non-blocking pipe for its stdout or stdin, the
# other end served late, as a parent that made its pipe O_NONBLOCK and is
# slow to read (or to write) would: tests/rexec/test-rexec-basic.sh runs
# rexec under it, which must wait such a pipe out (EAGAIN), not take it for
# the end of the stream.
#
#   out DELAY CMD...        CMD's stdout is the write end of a pipe made
#                           O_NONBLOCK; read nothing for DELAY seconds,
#                           then everything to EOF, slowly (4 KiB reads,
#                           a pause now and then).  Prints
#                           "bytes=N lines=L rc=R".
#   in DELAY BYTES CMD...   CMD's stdin is the read end of a pipe made
#                           O_NONBLOCK; write nothing for DELAY seconds,
#                           then BYTES bytes, then close.  Prints what CMD
#                           wrote and "rc=R".

import fcntl
import os
import subprocess
import sys
import time


def nonblock(fd):
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)


def out(delay, cmd):
    r, w = os.pipe()
    nonblock(w)
    p = subprocess.Popen(cmd, stdout=w)
    os.close(w)
    time.sleep(delay)
    n = lines = reads = 0
    while True:
        d = os.read(r, 4096)
        if not d:
            break
        n += len(d)
        lines += d.count(b"\n")
        reads += 1
        if reads % 64 == 0:
            time.sleep(0.01)
    print("bytes=%d lines=%d rc=%d" % (n, lines, p.wait()))


def inp(delay, nbytes, cmd):
    r, w = os.pipe()
    nonblock(r)
    p = subprocess.Popen(cmd, stdin=r)
    os.close(r)
    time.sleep(delay)
    data = b"x" * nbytes
    while data:
        data = data[os.write(w, data):]
    os.close(w)
    sys.stdout.flush()
    print("rc=%d" % p.wait())


def main():
    if sys.argv[1] == "out":
        out(float(sys.argv[2]), sys.argv[3:])
    elif sys.argv[1] == "in":
        inp(float(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
    else:
        sys.exit("nonblock-pipe: unknown mode " + sys.argv[1])


main()
