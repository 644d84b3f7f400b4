#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# File locks across a fuse-qtfs mount: processes using the mount (the
# "DPU") and processes using the exported directory directly (the "host")
# must see each other's POSIX record locks and flock locks, as processes
# on one machine would.  Usage: locks.py MOUNT_DIR NATIVE_DIR (the same
# directory seen through the mount and natively).  Prints one line per
# check; exits 1 if any failed.

import fcntl
import multiprocessing as mp
import os
import signal
import struct
import sys
import time

mnt, native = sys.argv[1], sys.argv[2]
failures = 0


def check(what, cond):
    global failures
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failures += 1


def take(f, how, kind):
    """A POSIX record lock of the whole file, or a flock."""
    if how == "posix":
        fcntl.lockf(f, kind)
    else:
        fcntl.flock(f, kind)


def try_lock(path, how, kind, mode="r+"):
    """Try a non-blocking lock in a new process; True if granted."""
    def child(q):
        with open(path, mode) as f:
            try:
                take(f, how, kind | fcntl.LOCK_NB)
                q.put(True)
            except OSError:
                q.put(False)
    q = mp.Queue()
    p = mp.Process(target=child, args=(q,))
    p.start()
    r = q.get(timeout=20)
    p.join()
    return r


def try_posix(path, kind, mode="r+"):
    return try_lock(path, "posix", kind, mode)


def try_flock(path, kind):
    return try_lock(path, "flock", kind, "r")


class Holder:
    """A process holding a lock until told to go (or killed)."""

    def __init__(self, path, how, kind, mode="r+"):
        self.ready, self.go = mp.Event(), mp.Event()
        self.p = mp.Process(target=self.run, args=(path, how, kind, mode))
        self.p.start()
        if not self.ready.wait(20):
            raise RuntimeError("holder did not get its lock")

    def run(self, path, how, kind, mode):
        f = open(path, mode)
        take(f, how, kind)
        self.ready.set()
        self.go.wait(60)

    def release(self):
        self.go.set()
        self.p.join(20)


def getlk(path, kind):
    """F_GETLK for the whole file: the type of a conflicting lock, or F_UNLCK."""
    with open(path, "r+") as f:
        fl = struct.pack("hh4xqqi4x", kind, os.SEEK_SET, 0, 0, 0)
        res = fcntl.fcntl(f, fcntl.F_GETLK, fl)
        return struct.unpack("hh4xqqi4x", res)[0]


def wait_lock(path, how, kind, q, go=None):
    """Blocking lock; report the time it took, then hold until @go."""
    t0 = time.monotonic()
    with open(path, "r+") as f:
        take(f, how, kind)
        q.put(time.monotonic() - t0)
        if go:
            go.wait(20)


def result_of(w, q):
    """What process @w put on @q within 10 s (None if nothing), once @w has ended."""
    try:
        r = q.get(timeout=10)
    except Exception:
        r = None
    w.join(10)
    return r


def waits_for(holder, path, how, what, min_wait=None):
    """A blocking @how write lock on @path waits while @holder holds its
    lock, and gets it once the holder lets go (after @min_wait s at least)."""
    q = mp.Queue()
    w = mp.Process(target=wait_lock, args=(path, how, fcntl.LOCK_EX, q))
    w.start()
    time.sleep(0.5)
    check(what, q.empty())
    holder.release()
    waited = result_of(w, q)
    check("... and gets it once the host lets go (after %s s)" % waited,
          waited is not None and (min_wait is None or waited >= min_wait))


def eventually(probe):
    """Whether @probe() comes true within 5 s."""
    for _ in range(50):
        if probe():
            return True
        time.sleep(0.1)
    return False


for name in ("a", "b", "c", "d"):
    with open(os.path.join(native, name), "w") as f:
        f.write("x" * 4096)
A_m, A_n = os.path.join(mnt, "a"), os.path.join(native, "a")

# 1. A DPU process's POSIX write lock is seen on the host, and by another DPU process.
h = Holder(A_m, "posix", fcntl.LOCK_EX)
check("DPU write lock: the host cannot take a write lock", not try_posix(A_n, fcntl.LOCK_EX))
check("DPU write lock: the host cannot take a read lock", not try_posix(A_n, fcntl.LOCK_SH, "r"))
check("DPU write lock: another DPU process cannot take it", not try_posix(A_m, fcntl.LOCK_EX))
check("DPU write lock: the host's F_GETLK reports it", getlk(A_n, fcntl.F_WRLCK) == fcntl.F_WRLCK)
h.release()
check("released: the host can take it", try_posix(A_n, fcntl.LOCK_EX))

# 2. The host's lock is seen on the DPU (F_SETLK fails, F_GETLK reports it).
h = Holder(A_n, "posix", fcntl.LOCK_EX)
check("host write lock: the DPU cannot take it", not try_posix(A_m, fcntl.LOCK_EX))
check("host write lock: the DPU's F_GETLK reports a write lock", getlk(A_m, fcntl.F_WRLCK) == fcntl.F_WRLCK)
# 3. A blocking F_SETLKW on the DPU waits for the host to let go.
waits_for(h, A_m, "posix", "F_SETLKW on the DPU waits while the host holds the lock", min_wait=0.4)

# 4. A signal interrupts the wait (EINTR), as a local wait would end.
h = Holder(A_n, "posix", fcntl.LOCK_EX)


def interrupted(q):
    def on_alarm(signo, frame):
        raise TimeoutError
    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    t0 = time.monotonic()
    try:
        with open(A_m, "r+") as f:
            fcntl.lockf(f, fcntl.LOCK_EX)
        q.put("granted")
    except TimeoutError:
        q.put(time.monotonic() - t0)


q = mp.Queue()
w = mp.Process(target=interrupted, args=(q,))
w.start()
r = result_of(w, q)
check("a signal ends a blocked F_SETLKW on the DPU (after %s s)" % r, isinstance(r, float) and r < 5)
h.release()

# 5. Read locks are shared across hosts; a write lock is not.
h = Holder(A_m, "posix", fcntl.LOCK_SH, "r")
check("DPU read lock: the host can take a read lock too", try_posix(A_n, fcntl.LOCK_SH, "r"))
check("DPU read lock: the host cannot take a write lock", not try_posix(A_n, fcntl.LOCK_EX))
h.release()

# 6. POSIX: closing any descriptor of the file drops the process's locks.
def close_other(q, go):
    f1 = open(os.path.join(mnt, "b"), "r+")
    fcntl.lockf(f1, fcntl.LOCK_EX)
    q.put("locked")
    go.wait(20)
    f2 = open(os.path.join(mnt, "b"), "r")
    f2.close()
    q.put("closed")
    go.clear()
    time.sleep(20)


q, go = mp.Queue(), mp.Event()
w = mp.Process(target=close_other, args=(q, go))
w.start()
q.get(timeout=10)
check("a DPU lock on b holds", not try_posix(os.path.join(native, "b"), fcntl.LOCK_EX))
go.set()
q.get(timeout=10)
check("closing another descriptor of b drops it (POSIX)", try_posix(os.path.join(native, "b"), fcntl.LOCK_EX))
w.terminate()
w.join()

# 7. A process that dies holding a lock loses it.
def die_locked(q):
    f = open(os.path.join(mnt, "c"), "r+")
    fcntl.lockf(f, fcntl.LOCK_EX)
    q.put("locked")
    time.sleep(60)


q = mp.Queue()
w = mp.Process(target=die_locked, args=(q,))
w.start()
q.get(timeout=10)
check("a DPU lock on c holds", not try_posix(os.path.join(native, "c"), fcntl.LOCK_EX))
os.kill(w.pid, signal.SIGKILL)
w.join()
check("killing the DPU process drops its lock",
      eventually(lambda: try_posix(os.path.join(native, "c"), fcntl.LOCK_EX)))

# 8. flock, both ways, with a blocking wait.
D_m, D_n = os.path.join(mnt, "d"), os.path.join(native, "d")
h = Holder(D_m, "flock", fcntl.LOCK_EX)
check("DPU flock: the host cannot flock it", not try_flock(D_n, fcntl.LOCK_EX))
check("DPU flock: another DPU open cannot flock it", not try_flock(D_m, fcntl.LOCK_SH))
check("flock and POSIX locks do not interact (as on Linux)", try_posix(D_n, fcntl.LOCK_EX))
h.release()
# close(2) returns before the kernel's RELEASE, which carries the unlock,
# reaches the host: flock locks go a moment after the last close.
check("released: the host can flock it", eventually(lambda: try_flock(D_n, fcntl.LOCK_EX)))
h = Holder(D_n, "flock", fcntl.LOCK_EX)
check("host flock: the DPU cannot flock it", not try_flock(D_m, fcntl.LOCK_EX))
waits_for(h, D_m, "flock", "a blocking flock on the DPU waits")

# 9. Open file description locks (F_OFD_SETLK) belong to the open file:
# they conflict with another open file's, in one process too, and go with
# the file's last close, of which the kernel tells the file system only
# by the RELEASE (its FLUSH names the process).  Once every DPU file is
# closed the server holds no descriptor of the host file (with
# QTFS_SERVER_PID).
F_OFD_GETLK, F_OFD_SETLK = 36, 37
server = os.environ.get("QTFS_SERVER_PID")


def ofd(fd, kind):
    """An OFD lock of the whole file: True if granted."""
    try:
        fcntl.fcntl(fd, F_OFD_SETLK, struct.pack("hhqqi4x", kind, 0, 0, 0, 0))
        return True
    except OSError:
        return False


def server_holds(path):
    """How many descriptors of the host file @path the server holds."""
    n = 0
    for fd in os.listdir("/proc/%s/fd" % server):
        try:
            n += os.readlink("/proc/%s/fd/%s" % (server, fd)) == path
        except OSError:
            pass
    return n


def held_ofd(q):
    fd = os.open(os.path.join(mnt, "e"), os.O_RDWR)
    q.put(ofd(fd, fcntl.F_WRLCK))


E_m, E_n = os.path.join(mnt, "e"), os.path.join(native, "e")
open(E_n, "w").close()
fd1, fd2 = os.open(E_m, os.O_RDWR), os.open(E_m, os.O_RDWR)
check("DPU OFD lock", ofd(fd1, fcntl.F_WRLCK))
check("... another open file of the same process cannot take one", not ofd(fd2, fcntl.F_WRLCK))
check("... the host cannot lock it", not try_posix(E_n, fcntl.LOCK_EX))
got = struct.unpack("hhqqi4x", fcntl.fcntl(fd2, F_OFD_GETLK, struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, 0, 0, 0)))
check("... F_OFD_GETLK reports it with pid -1 (%s)" % (got,), got[0] == fcntl.F_WRLCK and got[4] == -1)
os.close(fd1)
check("closed: the other open file takes it at once", ofd(fd2, fcntl.F_WRLCK))
os.close(fd2)
check("closed too: the host can lock it", eventually(lambda: try_posix(E_n, fcntl.LOCK_EX)))
q = mp.Queue()
w = mp.Process(target=held_ofd, args=(q,))
w.start()
check("a DPU process that exits holding an OFD lock", q.get(timeout=10))
w.join()
check("... leaves it to the host", eventually(lambda: try_posix(E_n, fcntl.LOCK_EX)))
if server:
    check("the server holds no descriptor of the file any more",
          eventually(lambda: server_holds(E_n) == 0))

# 10. Refused lock requests leave nothing behind on the server: many
# processes trying a lock the host holds (a try-lock loop) must not use up
# its descriptors (each owner's lock gets one of its own on the host).
if server:
    G_m, G_n = os.path.join(mnt, "g"), os.path.join(native, "g")
    open(G_n, "w").close()
    h = Holder(G_n, "posix", fcntl.LOCK_EX)
    refused = sum(not try_posix(G_m, fcntl.LOCK_EX) for _ in range(20))
    check("20 DPU processes are refused the host's lock (%d)" % refused, refused == 20)
    check("... and the server holds no descriptor for them", eventually(lambda: server_holds(G_n) == 0))
    h.release()

# 11. A lock is a coherency point (as on NFS): what the host wrote before
# the DPU's lock call returned is what the DPU reads after it, though the
# DPU's kernel had the file's pages cached and attr_timeout has not run
# out.  The host's write is in place, the same size.
C_m, C_n = os.path.join(mnt, "c"), os.path.join(native, "c")
for how in ("posix", "ofd", "flock"):
    with open(C_n, "wb") as f:
        f.write(b"old-" + how.encode() + b"." * 4000)
    fd = os.open(C_m, os.O_RDWR)
    before = os.pread(fd, 4, 0)
    with open(C_n, "r+b") as f:
        f.write(b"new-")
    if how == "ofd":
        took = ofd(fd, fcntl.F_WRLCK)
    else:
        take(fd, how, fcntl.LOCK_EX)
        took = True
    after = os.pread(fd, 4, 0)
    check("%s lock on the DPU after a host write: it reads the host's bytes (%r, then %r)" %
          (how, before, after), took and before == b"old-" and after == b"new-")
    os.close(fd)

# 12. SQLite with its rollback journal (POSIX locks, and reads after each
# lock of what the last holder wrote): a DPU process and a host process
# each add 200 to one counter in one database, a transaction at a time.
def sqlite_adds(path, n):
    import sqlite3
    c = sqlite3.connect(path, timeout=60, isolation_level=None)
    for i in range(n):
        c.execute("begin immediate")
        v = c.execute("select v from t where k = 1").fetchone()[0]
        c.execute("update t set v = ? where k = 1", (v + 1,))
        c.execute("insert into t(v) values (?)", (-i,))
        c.execute("commit")
    c.close()


try:
    import sqlite3
except ImportError:
    sqlite3 = None
if sqlite3:
    D_n = os.path.join(native, "db")
    for leftover in (D_n, D_n + "-journal"):
        if os.path.exists(leftover):
            os.unlink(leftover)
    db = sqlite3.connect(D_n)
    db.execute("pragma journal_mode = delete")
    db.execute("create table t(k integer primary key, v integer)")
    db.execute("insert into t values (1, 0)")
    db.commit()
    db.close()
    ps = [mp.Process(target=sqlite_adds, args=(os.path.join(d, "db"), 200)) for d in (mnt, native)]
    for p in ps:
        p.start()
    for p in ps:
        p.join(120)
    db = sqlite3.connect(D_n)
    v = db.execute("select v from t where k = 1").fetchone()[0]
    rows = db.execute("select count(*) from t").fetchone()[0]
    integrity = db.execute("pragma integrity_check").fetchone()[0]
    db.close()
    check("SQLite from both sides: counter %d of 400, %d rows of 401, integrity %s, exits %s" %
          (v, rows, integrity, [p.exitcode for p in ps]),
          v == 400 and rows == 401 and integrity == "ok" and all(p.exitcode == 0 for p in ps))

sys.exit(1 if failures else 0)
