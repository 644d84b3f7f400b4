#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# A signal to a process blocked in a call on a fuse-qtfs mount must end
# the call at once, as it would on a local file.  The handler raises, so
# Python does not restart the call.  Usage:
#
#   interrupt.py read PATH            open PATH, then a read that blocks
#   interrupt.py fifo PATH HOLDER     PATH is a relayed FIFO that HOLDER (a
#                                     host process) holds open for writing
#                                     and never writes to: the read, then,
#                                     HOLDER killed, an open with no writer
#
# Each blocked call is interrupted after 0.5 s; prints "<call> interrupted
# fast" (within 3 s), "<call> interrupted slow" or "<call> returned".
# Exits 1 with "timeout" if everything has not ended within 10 s.

import os
import signal
import sys
import threading
import time


class Intr(Exception):
    pass


def handler(sig, frame):
    raise Intr()


signal.signal(signal.SIGUSR1, handler)
signal.signal(signal.SIGALRM, lambda s, f: (print("timeout", flush=True), os._exit(1)))
signal.alarm(10)
main = threading.get_ident()


def attempt(what, fn):
    threading.Timer(0.5, lambda: signal.pthread_kill(main, signal.SIGUSR1)).start()
    t = time.monotonic()
    try:
        fn()
        print(what, "returned", flush=True)
    except Intr:
        print(what, "interrupted", "fast" if time.monotonic() - t < 3 else "slow", flush=True)


if len(sys.argv) == 3 and sys.argv[1] == "read":
    fd = os.open(sys.argv[2], os.O_RDONLY)
    attempt("read", lambda: os.read(fd, 4096))
elif len(sys.argv) == 4 and sys.argv[1] == "fifo":
    fd = os.open(sys.argv[2], os.O_RDONLY)
    attempt("read", lambda: os.read(fd, 10))
    os.close(fd)
    os.kill(int(sys.argv[3]), signal.SIGTERM)
    time.sleep(0.3)
    attempt("open", lambda: os.open(sys.argv[2], os.O_RDONLY))
else:
    sys.exit("usage: interrupt.py read PATH | interrupt.py fifo PATH HOLDER-PID")
