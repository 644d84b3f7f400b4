#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# Edge cases of a FIFO with one end on each side, run twice: once on a
# host FIFO alone (both ends local: what the kernel does) and once with
# the DPU's end through a relayed FIFO of a fuse-qtfs mount.  The two
# outcomes must be the same.  Usage:
#
#   fifo_edges.py DPU-DIR HOST-DIR NAME    one scenario (see SCENARIOS)
#   fifo_edges.py --list                   the names of the scenarios
#
# DPU-DIR is a fifo_relay= directory of the mount, HOST-DIR the host
# directory it shows.  Prints "local=... relay=..." and exits 0 when they
# agree, 1 when not.  A scenario that hangs is the caller's to time out.

import errno
import os
import select
import signal
import sys
import threading
import time


def ename(e):
    return errno.errorcode.get(e.errno, str(e.errno))


def nb_writer_no_reader(dp, hp):
    """O_NONBLOCK open for writing without a reader: ENXIO."""
    try:
        os.close(os.open(dp, os.O_WRONLY | os.O_NONBLOCK))
        return "opened"
    except OSError as e:
        return ename(e)


def nb_reader_no_writer(dp, hp):
    """O_NONBLOCK open for reading without a writer: opens, reads EOF."""
    fd = os.open(dp, os.O_RDONLY | os.O_NONBLOCK)
    try:
        return os.read(fd, 10)
    except OSError as e:
        return ename(e)
    finally:
        os.close(fd)


def rdwr(dp, hp):
    """O_RDWR never waits for a partner, and reads back its own write."""
    fd = os.open(dp, os.O_RDWR)
    os.write(fd, b"hello")
    r = os.read(fd, 10)
    os.close(fd)
    return r


def writer_closes(dp, hp):
    """A DPU reader gets the host writer's bytes, then EOF once it closes."""
    def w():
        fd = os.open(hp, os.O_WRONLY)
        os.write(fd, b"abc")
        time.sleep(0.3)
        os.close(fd)
    t = threading.Thread(target=w)
    t.start()
    fd = os.open(dp, os.O_RDONLY)
    got = [os.read(fd, 100)]
    while got[-1]:
        got.append(os.read(fd, 100))
    os.close(fd)
    t.join()
    return got


def reader_closes(dp, hp):
    """The host reader closes: the DPU writer's next write fails, EPIPE."""
    def r():
        fd = os.open(hp, os.O_RDONLY)
        os.read(fd, 3)
        os.close(fd)
    t = threading.Thread(target=r)
    t.start()
    fd = os.open(dp, os.O_WRONLY)
    os.write(fd, b"abc")
    t.join()
    try:
        os.write(fd, b"more")
        return "wrote"
    except OSError as e:
        return ename(e)
    finally:
        os.close(fd)


def dpu_reader_closes(dp, hp):
    """The DPU reader closes: the host writer's next write fails, EPIPE."""
    def r():
        fd = os.open(dp, os.O_RDONLY)
        os.read(fd, 3)
        os.close(fd)
    t = threading.Thread(target=r)
    t.start()
    fd = os.open(hp, os.O_WRONLY)
    os.write(fd, b"abc")
    t.join()
    time.sleep(0.2)  # the DPU's close reaches the host
    try:
        os.write(fd, b"more")
        return "wrote"
    except OSError as e:
        return ename(e)
    finally:
        os.close(fd)


def two_writers(dp, hp):
    """A DPU writer and a host writer: no EOF until both have closed."""
    got = []

    def r():
        fd = os.open(hp, os.O_RDONLY)
        got.append(os.read(fd, 100))
        while got[-1]:
            got.append(os.read(fd, 100))
        os.close(fd)
    t = threading.Thread(target=r)
    t.start()
    w1 = os.open(dp, os.O_WRONLY)
    w2 = os.open(hp, os.O_WRONLY)
    os.write(w1, b"one.")
    time.sleep(0.2)
    os.close(w1)
    time.sleep(0.3)
    early_eof = b"" in got
    os.write(w2, b"two.")
    os.close(w2)
    t.join()
    return (early_eof, b"".join(got))


def nb_read_empty(dp, hp):
    """O_NONBLOCK read of an empty FIFO that has a writer: EAGAIN."""
    w = os.open(hp, os.O_RDWR)
    fd = os.open(dp, os.O_RDONLY | os.O_NONBLOCK)
    try:
        return os.read(fd, 10)
    except OSError as e:
        return ename(e)
    finally:
        os.close(fd)
        os.close(w)


def nb_write_full(dp, hp):
    """O_NONBLOCK writes fill the pipe (64 KiB), then EAGAIN."""
    rd = os.open(hp, os.O_RDONLY | os.O_NONBLOCK)
    fd = os.open(dp, os.O_WRONLY | os.O_NONBLOCK)
    total, r = 0, None
    for _ in range(1000):
        try:
            total += os.write(fd, b"x" * 4096)
        except OSError as e:
            r = ename(e)
            break
    os.close(fd)
    os.close(rd)
    return (total, r)


def poll_hup(dp, hp):
    """poll on a DPU reader: nothing, then POLLHUP when the last writer goes."""
    w = os.open(hp, os.O_RDWR)
    fd = os.open(dp, os.O_RDONLY | os.O_NONBLOCK)
    w2 = os.open(hp, os.O_WRONLY)
    os.close(w)
    p = select.poll()
    p.register(fd, select.POLLIN)
    before = [ev for _, ev in p.poll(100)]
    os.close(w2)
    after = [ev for _, ev in p.poll(3000)]
    os.close(fd)
    return (before, after)


def poll_two_masks(dp, hp):
    """Two polls of one DPU reader, for POLLOUT (never on a read end) and
    for POLLIN: a host write wakes the POLLIN one."""
    w = os.open(hp, os.O_RDWR)
    fd = os.open(dp, os.O_RDONLY | os.O_NONBLOCK)
    w2 = os.open(hp, os.O_WRONLY)
    os.close(w)
    out = {}

    def wait_out():
        p = select.poll()
        p.register(fd, select.POLLOUT)
        out["out"] = [ev for _, ev in p.poll(2000)]
    t = threading.Thread(target=wait_out)
    t.start()
    time.sleep(0.2)  # the POLLOUT poll waits first

    def write_later():
        time.sleep(0.2)
        os.write(w2, b"x")
    t2 = threading.Thread(target=write_later)
    t2.start()
    p = select.poll()
    p.register(fd, select.POLLIN)
    start = time.monotonic()
    got = [ev for _, ev in p.poll(1500)]
    quick = time.monotonic() - start < 1.0
    t2.join()
    t.join()
    os.close(fd)
    os.close(w2)
    return (got, quick, out["out"])


class Hung(Exception):
    pass


def unblock(t, hp, flags):
    """Join thread @t; if it still waits in an open of @hp after 2 s, give
    it the partner it waits for (an open with @flags), and say so: "ok",
    "stuck", or "hung" if even that did not end it (a daemon thread)."""
    t.join(2)
    if not t.is_alive():
        return "ok"
    try:
        os.close(os.open(hp, flags | os.O_NONBLOCK))
    except OSError:
        pass
    t.join(2)
    return "hung" if t.is_alive() else "stuck"


def reopen_other_end(dp, hp):
    """The DPU reads, closes, at once opens for writing, and the host's
    reader comes late: the open waits for that reader, which gets the
    bytes (the reader just closed must not stand in for it).  Forty times;
    a step that waits for good ends the scenario."""
    def alarm(sig, frame):
        raise Hung()
    old = signal.signal(signal.SIGALRM, alarm)
    got = []
    try:
        for _ in range(40):
            t = threading.Thread(target=lambda: (lambda f: (os.write(f, b"hi"), os.close(f)))(
                os.open(hp, os.O_WRONLY)), daemon=True)
            t.start()
            signal.alarm(5)
            fd = os.open(dp, os.O_RDONLY)
            first = os.read(fd, 10)
            os.close(fd)
            signal.alarm(0)
            stuck = unblock(t, hp, os.O_RDONLY)
            out = {}

            def late_reader():
                time.sleep(0.02)
                f = os.open(hp, os.O_RDONLY)
                # No EOF while some writer still has it open: 5 s at most.
                ready = select.select([f], [], [], 5)[0]
                out["read"] = os.read(f, 10) if ready else "no EOF"
                os.close(f)
            t = threading.Thread(target=late_reader, daemon=True)
            t.start()
            t0 = time.monotonic()
            signal.alarm(5)
            fd = os.open(dp, os.O_WRONLY)
            waited = time.monotonic() - t0 >= 0.015
            try:
                os.write(fd, b"back")
                wrote = "wrote"
            except OSError as e:
                wrote = ename(e)
            os.close(fd)
            signal.alarm(0)
            late = unblock(t, hp, os.O_WRONLY)
            got.append((first, waited, wrote, out.get("read"), stuck, late))
            if "hung" in got[-1]:
                break
    except Hung:
        got.append("hung")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return sorted(set(got), key=repr)


SCENARIOS = {f.__name__: f for f in (
    nb_writer_no_reader, nb_reader_no_writer, rdwr, writer_closes, reader_closes,
    dpu_reader_closes, two_writers, nb_read_empty, nb_write_full, poll_hup,
    poll_two_masks, reopen_other_end)}


def run(fn, dp, hp):
    try:
        os.unlink(hp)
    except FileNotFoundError:
        pass
    os.mkfifo(hp)
    try:
        return fn(dp, hp)
    except OSError as e:
        return "unexpected " + ename(e)
    finally:
        os.unlink(hp)


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(SCENARIOS))
        return 0
    dpu, host, name = sys.argv[1:4]
    # Write errors are to come back as EPIPE, not as a signal.
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    fn = SCENARIOS[name]
    local = run(fn, host + "/" + name, host + "/" + name)
    relay = run(fn, dpu + "/" + name, host + "/" + name)
    print("local=%r relay=%r" % (local, relay))
    return 0 if local == relay else 1


if __name__ == "__main__":
    sys.exit(main())
