#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# One cycle of the soak workload (tests/fs/test-qtfs-soak.sh): everything a
# long-lived mount sees, once, then every file and process it made gone,
# so that what the daemons hold afterwards can be compared with what they
# held before.  Usage:
#
#   soak.py HOST-DIR MOUNT-DIR PROC-MOUNT SCALE
#
# SOAK_SERVER_PIDS: the qtfs-server processes, whose descriptors are
# looked at.
# MOUNT-DIR is HOST-DIR through a mount with fifo_relay=fifos; PROC-MOUNT
# is the host's /proc through another.  SCALE multiplies the file counts.
# Prints one line per step; exits 1 at the first step that fails.

import ctypes
import errno
import fcntl
import os
import select
import shutil
import signal
import sys
import time

host, mnt, proc, scale = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
libc = ctypes.CDLL(None, use_errno=True)
RENAME_EXCHANGE = 2
AT_FDCWD = -100


t0 = time.monotonic()


def step(name):
    print("%.1f s: %s" % (time.monotonic() - t0, name), flush=True)


def renameat2(a, b, flags):
    if libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), a)


def child(fn):
    """Run fn in a forked child; its exit status is 0 if fn returned."""
    pid = os.fork()
    if pid == 0:
        try:
            fn()
            os._exit(0)
        except BaseException as e:  # noqa: B036 - the child must never return
            print("child:", repr(e), file=sys.stderr, flush=True)
            os._exit(1)
    return pid


def reap(pids, want_ok=True):
    for p in pids:
        _, st = os.waitpid(p, 0)
        if want_ok and not (os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0):
            raise RuntimeError("a child failed: status %d" % st)


w = os.path.join(mnt, "soak")
hw = os.path.join(host, "soak")
os.makedirs(w, exist_ok=True)

step("files")
for i in range(40 * scale):
    p = os.path.join(w, "f%d" % i)
    data = os.urandom(i % 7 * 1000 + 1)
    with open(p, "wb") as f:
        f.write(data)
    with open(p, "rb") as f:
        assert f.read() == data, p
    os.unlink(p)

step("dirs")
for i in range(15 * scale):
    d = os.path.join(w, "d%d" % i)
    os.mkdir(d)
    os.mkdir(d + "/sub")
    open(d + "/sub/x", "w").close()
    os.stat(d + "/sub/x")
    os.unlink(d + "/sub/x")
    os.rmdir(d + "/sub")
    os.rmdir(d)

step("renames")
for i in range(15 * scale):
    a, b = os.path.join(w, "ra%d" % i), os.path.join(w, "rb%d" % i)
    with open(a, "w") as f:
        f.write("a")
    os.mkdir(b)
    renameat2(a, b, RENAME_EXCHANGE)
    assert os.path.isdir(a) and open(b).read() == "a"
    os.rename(b, b + ".moved")
    os.rename(a, a + ".moved")
    os.unlink(b + ".moved")
    os.rmdir(a + ".moved")

step("links")
for i in range(15 * scale):
    a = os.path.join(w, "l%d" % i)
    with open(a, "w") as f:
        f.write("l")
    for j in range(3):
        os.link(a, "%s.%d" % (a, j))
    assert os.stat(a).st_nlink == 4
    os.symlink("l%d" % i, a + ".sym")
    os.readlink(a + ".sym")
    for j in range(3):
        os.unlink("%s.%d" % (a, j))
    os.unlink(a + ".sym")
    os.unlink(a)

step("big directory")
big = os.path.join(hw, "big")
os.mkdir(big)
n = 500 * scale
for i in range(n):
    open(os.path.join(big, "n%05d" % i), "w").close()
for _ in range(2):
    assert len(os.listdir(os.path.join(w, "big"))) == n
    with os.scandir(os.path.join(w, "big")) as it:  # with attributes, stopped half way
        for k, e in enumerate(it):
            e.stat()
            if k > n // 2:
                break
shutil.rmtree(big)

step("xattrs")
x = os.path.join(w, "x")
open(x, "w").close()
for i in range(20 * scale):
    os.setxattr(x, "user.k%d" % i, b"v" * (i % 40 + 1))
    os.getxattr(x, "user.k%d" % i)
os.listxattr(x)
for i in range(20 * scale):
    os.removexattr(x, "user.k%d" % i)
os.unlink(x)

step("many openers")
shared = os.path.join(w, "shared")
with open(shared, "w") as f:
    f.write("s" * 1000)


def opener():
    for _ in range(20):
        fd = os.open(shared, os.O_RDWR)
        os.pread(fd, 10, 0)
        os.close(fd)


reap([child(opener) for _ in range(6)])

step("locks")


def locker(die):
    fd = os.open(shared, os.O_RDWR)
    fd2 = os.open(shared, os.O_RDWR)
    for k in range(20):
        fcntl.lockf(fd, fcntl.LOCK_EX, 10, k * 10)
        fcntl.lockf(fd, fcntl.LOCK_UN, 10, k * 10)
    fcntl.flock(fd2, fcntl.LOCK_SH)
    fcntl.flock(fd2, fcntl.LOCK_UN)
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 500 + os.getpid() % 400)
    fcntl.flock(fd2, fcntl.LOCK_SH)
    if die == "exit":
        os._exit(0)  # with both held
    if die == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    os.close(fd)
    os.close(fd2)


reap([child(lambda: locker("close")) for _ in range(2)])
reap([child(lambda: locker("exit")) for _ in range(2)])
reap([child(lambda: locker("kill")) for _ in range(2)], want_ok=False)

# A lock waited for and interrupted: the holder holds on, the waiter is killed.
fd = os.open(shared, os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX, 0, 0)
fcntl.flock(fd, fcntl.LOCK_EX)


def waiter(kind):
    g = os.open(shared, os.O_RDWR)
    if kind == "posix":
        fcntl.lockf(g, fcntl.LOCK_EX, 0, 0)
    else:
        fcntl.flock(g, fcntl.LOCK_EX)


waiters = [child(lambda: waiter("posix")), child(lambda: waiter("flock"))]
time.sleep(0.5)
for p in waiters:
    os.kill(p, signal.SIGKILL)
reap(waiters, want_ok=False)
os.close(fd)
# Once all are gone, the whole file is free on the host too.  (Soon, not
# at once: the kernel sends the RELEASE that drops a flock after close()
# has returned.)
hfd = os.open(os.path.join(hw, "shared"), os.O_RDWR)
for k in range(100):
    try:
        fcntl.lockf(hfd, fcntl.LOCK_EX | fcntl.LOCK_NB, 0, 0)
        fcntl.flock(hfd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        break
    except BlockingIOError:
        if k == 99:
            raise
        time.sleep(0.05)
os.close(hfd)
os.unlink(shared)

step("fifos")
fifo = os.path.join(mnt, "fifos", "soak")
hfifo = os.path.join(host, "fifos", "soak")
os.mkfifo(fifo)
for i in range(3 * scale):
    # host writer -> DPU reader, and back
    wp = child(lambda: (lambda f: (os.write(f, b"hello\n"), os.close(f)))(
        os.open(hfifo, os.O_WRONLY)))
    r = os.open(fifo, os.O_RDONLY)
    assert os.read(r, 100) == b"hello\n"
    os.close(r)
    reap([wp])
    rp = child(lambda: (lambda f: (os.read(f, 100), os.close(f)))(os.open(hfifo, os.O_RDONLY)))
    wfd = os.open(fifo, os.O_WRONLY)
    os.write(wfd, b"back\n")
    os.close(wfd)
    reap([rp])

step("interrupted polls")


def poller():
    signal.signal(signal.SIGUSR1, lambda s, f: None)
    f = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    p = select.poll()
    p.register(f, select.POLLIN)
    try:
        p.poll(30000)
    except InterruptedError:
        pass
    try:
        os.read(f, 10)  # blocks in the relay: the holder never writes
    except (InterruptedError, BlockingIOError):
        pass
    os.close(f)


holder = os.open(hfifo, os.O_RDWR)  # a host writer that never writes
for i in range(2 * scale):
    pp = [child(poller) for _ in range(2)]
    time.sleep(0.3)
    os.kill(pp[0], signal.SIGUSR1)  # interrupted, then closes
    os.kill(pp[1], signal.SIGKILL)  # dies in the poll
    time.sleep(0.1)
    if os.waitpid(pp[0], os.WNOHANG)[0] == 0:
        os.kill(pp[0], signal.SIGKILL)
    reap(pp, want_ok=False)
for i in range(3):  # polls that time out, then closes
    f = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    p = select.poll()
    p.register(f, select.POLLIN)
    assert p.poll(100) == []
    os.close(f)


def server_holds(path):
    n = 0
    for pid in os.environ.get("SOAK_SERVER_PIDS", "").split():
        for fd in os.listdir("/proc/%s/fd" % pid):
            try:
                n += os.readlink("/proc/%s/fd/%s" % (pid, fd)) == path
            except FileNotFoundError:
                pass
    return n


# Every DPU reader closed it, while a host writer still has it open: no
# qtfs-server has it open any more (a poll wait kept it open up to 25 s).
for k in range(40):
    if not server_holds(hfifo):
        break
    if k == 39:
        raise RuntimeError("qtfs-server holds the FIFO %d times after every DPU reader closed it"
                           % server_holds(hfifo))
    time.sleep(0.05)
os.close(holder)
os.unlink(fifo)

step("pseudo files")
for _ in range(scale):
    pids = [d for d in os.listdir(proc) if d.isdigit()]
    for p in pids[:30]:
        for name in ("stat", "status", "cmdline"):
            try:
                with open(os.path.join(proc, p, name), "rb") as f:
                    f.read()
            except (FileNotFoundError, ProcessLookupError):
                pass
    for name in ("meminfo", "loadavg", "mounts", "self/status"):
        with open(os.path.join(proc, name), "rb") as f:
            f.read()

step("files left open by a dying process")


def holder_dies():
    fds = []
    for i in range(20):
        fds.append(os.open(os.path.join(w, "o%d" % i), os.O_RDWR | os.O_CREAT, 0o644))
    fds.append(os.open(w, os.O_RDONLY | os.O_DIRECTORY))
    os.kill(os.getpid(), signal.SIGKILL)


reap([child(holder_dies)], want_ok=False)
for i in range(20):
    os.unlink(os.path.join(w, "o%d" % i))

step("done")
