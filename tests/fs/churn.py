# SPDX-License-Identifier: Apache-2.0
#
# churn.py HOST SECONDS SEED MOUNT...: the host's tree and the DPU's view
# of it while both change it at once, then compared.
#
# HOST is an export; its subdirectories named in $CHURN_ROOTS hold the
# tree that changes (default "disk mem": the disk's file system and a
# tmpfs, so that inode numbers are reused on one and not on the other,
# and renames between them fail with EXDEV; test-qtfs-churn.sh adds an
# overlayfs, "ovl").  For SECONDS, one thread
# changes that tree on the host: creates, rewrites (same size or not),
# writes in place, appends, truncates, unlinks, renames of files and of
# directories (across directories, over existing names, a directory under
# a sibling that was its parent's), mkdir, rmdir of whole subtrees, hard
# links, symlinks, chmod.  Meanwhile, on each MOUNT (the export mounted on
# the DPU), two threads walk the tree (lstat of every name, listings with
# attributes, reads of whole files, readlink) and one makes the same kind
# of changes through the mount, and one keeps files it made open while
# the others move, link and unlink them: what it writes through an open
# file must read back through it, its size follow, and no call on it
# fail.  Files in HOST/still never change: every
# read of them through a mount, in the middle of the churn, must give the
# host's bytes.
#
# Then the changes stop, and each mount takes the barrier (a getxattr of
# user.qtfs.sync): every name must be the host's at once (the names of
# files and directories, their types); after attr_timeout (1 s) every
# attribute the comparison looks at and every file's bytes too.  Printed:
# the calls made and the errors by errno on each side, "bad errnos: N"
# (calls through a mount that failed with an errno no change of the tree
# explains: EIO, ENOTCONN, ETIMEDOUT, EPROTO, EBADMSG, ENOSYS, 512 and
# up, EINVAL but from readlink(); ESTALE and ELOOP are counted, not bad:
# a path call that loses its race with the host twice gets ESTALE, and a
# lookup through a directory's new place while the DPU's kernel still
# holds its old nesting gets ELOOP, see docs/fuse-qtfs.md), "still mismatches: N", "names after the barrier: N
# differences" and "after attr_timeout: N differences", each difference
# on a line of its own.  Used by test-qtfs-churn.sh.
import errno, hashlib, os, random, shutil, stat, sys, threading, time

host, seconds, seed = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
mounts = sys.argv[4:]
ROOTS = tuple(os.environ.get("CHURN_ROOTS", "disk mem").split())
BAD = {errno.EIO, errno.ENOTCONN, errno.ETIMEDOUT, errno.EPROTO, errno.EBADMSG,
       errno.ENOSYS}
STILL = 12
lock = threading.Lock()
stop = threading.Event()
stats = {}      # (side, errno name or "ok") -> count
bad = []        # (mount, call, path, errno)
still_bad = []  # (mount, name)


def count(side, what):
    with lock:
        stats[(side, what)] = stats.get((side, what), 0) + 1


def still_bytes(i):
    return hashlib.sha256(b"still %d" % i).digest() * (1 + i * 997)


def setup():
    os.makedirs(os.path.join(host, "still"), exist_ok=True)
    for i in range(STILL):
        with open(os.path.join(host, "still", "s%02d" % i), "wb") as f:
            f.write(still_bytes(i))
    for r in ROOTS:
        for d in ("d0", "d1", "d2/d3"):
            os.makedirs(os.path.join(host, r, d), exist_ok=True)


def tree(base):
    """Every directory and every non-directory under base/ROOTS, relative to base."""
    dirs, others = [], []
    for r in ROOTS:
        for top, ds, fs in os.walk(os.path.join(base, r)):
            rel = os.path.relpath(top, base)
            dirs.append(rel)
            others.extend(os.path.join(rel, f) for f in fs)
            others.extend(os.path.join(rel, d) for d in ds
                          if os.path.islink(os.path.join(top, d)))
    return dirs, others


class Changer:
    """Random changes of the tree under base (the host's, or a mount's)."""

    def __init__(self, base, rng, tag):
        self.base, self.rng, self.tag, self.n = base, rng, tag, 0
        self.odd = []

    def p(self, rel):
        return os.path.join(self.base, rel)

    def name(self, kind):
        self.n += 1
        return "%s%s%d" % (kind, self.tag, self.n)

    def data(self):
        r = self.rng
        n = r.choice((0, 1, 100, 4096, 5000, 65536, 70000, 300000))
        return bytes([r.randrange(256)]) * n

    def step(self):
        r = self.rng
        # The paths to change are picked from the host's tree (quicker to
        # walk than a mount's); a mount's changer then makes its changes
        # through the mount, often at paths the host has just changed.
        dirs, others = tree(host)
        root = r.choice(ROOTS)
        dirs = [x for x in dirs if x.split("/")[0] == root]
        files = [o for o in others if os.path.basename(o).startswith("f") and o.split("/")[0] == root]
        # Files a holder (below) has open: moved, linked and unlinked, never written.
        held = [o for o in others if os.path.basename(o).startswith("h") and o.split("/")[0] == root]
        op = r.choice(("create", "create", "rewrite", "inplace", "append", "truncate", "unlink",
                       "rename_file", "rename_file", "mkdir", "rmdir", "rename_dir", "link",
                       "symlink", "chmod"))
        d = r.choice(dirs)
        f = r.choice(files) if files else None
        if op == "create" or (f is None and op in ("rewrite", "inplace", "append", "truncate",
                                                   "unlink", "rename_file", "link", "chmod")):
            with open(self.p(os.path.join(d, self.name("f"))), "wb") as fh:
                fh.write(self.data())
        elif op == "rewrite":
            with open(self.p(f), "r+b" if r.random() < 0.5 else "wb") as fh:
                fh.seek(0)
                b = self.data()
                fh.write(b)
                fh.truncate(len(b))
        elif op == "inplace":
            with open(self.p(f), "r+b") as fh:
                size = os.fstat(fh.fileno()).st_size
                fh.seek(r.randrange(size + 1))
                fh.write(bytes([r.randrange(256)]) * r.choice((1, 10, 4096)))
        elif op == "append":
            with open(self.p(f), "ab") as fh:
                fh.write(self.data())
        elif op == "truncate":
            os.truncate(self.p(f), r.choice((0, 1, 4095, 10000)))
        elif op == "unlink":
            os.unlink(self.p(r.choice(files + held)))
        elif op == "rename_file":
            if held and r.random() < 0.3:
                os.rename(self.p(r.choice(held)), self.p(os.path.join(d, self.name("h"))))
                return op
            to = r.choice(files) if r.random() < 0.3 else os.path.join(d, self.name("f"))
            os.rename(self.p(f), self.p(to))
        elif op == "mkdir":
            if d.count("/") < 5:
                os.mkdir(self.p(os.path.join(d, self.name("d"))))
        elif op == "rmdir":
            if d not in ROOTS:
                shutil.rmtree(self.p(d))
        elif op == "rename_dir":
            if d in ROOTS:
                return op
            to = r.choice(dirs)
            # Not into itself: the host would refuse (EINVAL); and at
            # times a directory goes where its own child was.
            if to == d or to.startswith(d + "/"):
                kids = [x for x in dirs if os.path.dirname(x) == d]
                if not kids:
                    return op
                tmp = os.path.join(os.path.dirname(d), self.name("d"))
                kid = r.choice(kids)
                os.rename(self.p(kid), self.p(tmp))
                os.rename(self.p(d), self.p(os.path.join(tmp, self.name("d"))))
                return op
            if to.count("/") < 5:
                os.rename(self.p(d), self.p(os.path.join(to, self.name("d"))))
        elif op == "link":
            src = r.choice(files + held)
            os.link(self.p(src), self.p(os.path.join(d, self.name(os.path.basename(src)[0]))))
        elif op == "symlink":
            target = r.choice(files) if files and r.random() < 0.5 else "fnowhere"
            os.symlink(os.path.relpath(target, d) if "/" in target else target,
                       self.p(os.path.join(d, self.name("s"))))
        elif op == "chmod":
            os.chmod(self.p(f), r.choice((0o600, 0o644, 0o755, 0o400)))
        return op


def changer(base, side, tag, rng, pause):
    c = Changer(base, rng, tag)
    while not stop.is_set():
        try:
            op = c.step()
            count(side, "ok")
        except OSError as e:
            count(side, errno.errorcode.get(e.errno, str(e.errno)))
            if side != "host" and (e.errno in BAD or e.errno >= 512):
                with lock:
                    bad.append((base, "change", e.filename, e.errno))
        if pause:
            time.sleep(pause)


def walker(m, rng):
    side = "dpu"

    def call(what, fn, path):
        try:
            v = fn(path)
            count(side, "ok")
            return v
        except OSError as e:
            count(side, errno.errorcode.get(e.errno, str(e.errno)))
            # EINVAL: readlink() of what is no longer a symlink; nothing else here.
            if e.errno in BAD or e.errno >= 512 or (e.errno == errno.EINVAL and what != "readlink"):
                with lock:
                    bad.append((m, what, path, e.errno))
            elif e.errno not in (errno.ENOENT, errno.ENOTDIR):
                print("%s: %s: %s" % (what, path, e), flush=True)
            return None

    def read(path):
        with open(path, "rb") as fh:
            return fh.read()

    while not stop.is_set():
        k = rng.random()
        if k < 0.15:
            i = rng.randrange(STILL)
            b = call("read", read, os.path.join(m, "still", "s%02d" % i))
            if b is not None and b != still_bytes(i):
                with lock:
                    still_bad.append((m, i))
            continue
        r = rng.choice(ROOTS)
        def walk_error(e):
            count(side, "walk-" + errno.errorcode.get(e.errno, str(e.errno)))
            if e.errno in BAD or e.errno >= 512 or e.errno == errno.EINVAL:
                with lock:
                    bad.append((m, "walk", e.filename, e.errno))
            elif e.errno not in (errno.ENOENT, errno.ENOTDIR):
                print("walk: %s: %s" % (e.filename, e), flush=True)

        for top, ds, fs in os.walk(os.path.join(m, r), onerror=walk_error):
            if stop.is_set():
                break
            if rng.random() < 0.5:
                def plus(t):
                    with os.scandir(t) as it:
                        for e in it:
                            e.stat(follow_symlinks=False)
                call("scandir", plus, top)
            for n in fs + ds:
                p = os.path.join(top, n)
                st = call("lstat", os.lstat, p)
                if st is None:
                    continue
                if stat.S_ISREG(st.st_mode) and rng.random() < 0.3:
                    call("read", read, p)
                elif stat.S_ISLNK(st.st_mode):
                    call("readlink", os.readlink, p)


def holder(m, rng, tag):
    """Files made on the mount and kept open while the others move them
    around (renames, links, unlinks, rmdir of their directory): what is
    written through the open file reads back through it, its size
    follows, and no call on it fails."""
    side, n = "dpu-hold", 0

    def fail(what, path, e):
        with lock:
            bad.append((m, what, path, e))

    while not stop.is_set():
        dirs, _ = tree(host)
        n += 1
        path = os.path.join(m, rng.choice(dirs), "h%s%d" % (tag, n))
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError as e:
            count(side, errno.errorcode.get(e.errno, str(e.errno)))
            if e.errno in BAD or e.errno >= 512 or e.errno == errno.EINVAL:
                fail("create", path, e.errno)
            continue
        model = bytearray()
        what = "pwrite"
        try:
            for _ in range(rng.randrange(5, 40)):
                what = "pwrite"
                off = rng.randrange(len(model) + 1) if rng.random() < 0.8 else rng.randrange(300000)
                b = os.urandom(rng.choice((1, 100, 4096, 10000)))
                if os.pwrite(fd, b, off) != len(b):
                    fail("pwrite short", path, 0)
                model.extend(b"\0" * max(0, off + len(b) - len(model)))
                model[off:off + len(b)] = b
                what = "pread"
                if rng.random() < 0.5 and os.pread(fd, len(b), off) != b:
                    fail("pread after pwrite", path, 0)
                what = "fstat"
                if os.fstat(fd).st_size != len(model):
                    fail("fstat size", path, 0)
                what = "fsync"
                if rng.random() < 0.1:
                    os.fsync(fd)
                count(side, "ok")
                time.sleep(0.001)
            what = "pread"
            if os.pread(fd, len(model) + 10, 0) != bytes(model):
                fail("pread of the whole file", path, 0)
        except OSError as e:
            count(side, errno.errorcode.get(e.errno, str(e.errno)))
            fail(what + " on an open file", path, e.errno)
        finally:
            os.close(fd)


def snapshot(base, with_attrs):
    out = {}
    for r in ROOTS:
        for top, ds, fs in os.walk(os.path.join(base, r)):
            rel = os.path.relpath(top, base)
            for n in ds + fs:
                p = os.path.join(top, n)
                key = os.path.join(rel, n)
                try:
                    st = os.lstat(p)
                except OSError as e:
                    out[key] = ("error", errno.errorcode.get(e.errno, e.errno))
                    continue
                v = [stat.S_IFMT(st.st_mode)]
                if with_attrs:
                    v += [oct(stat.S_IMODE(st.st_mode)), st.st_nlink]
                    try:
                        if stat.S_ISREG(st.st_mode):
                            with open(p, "rb") as fh:
                                b = fh.read()
                            v += [st.st_size, len(b), hashlib.sha256(b).hexdigest()[:16]]
                        elif stat.S_ISLNK(st.st_mode):
                            v += [os.readlink(p)]
                    except OSError as e:
                        v += ["error", errno.errorcode.get(e.errno, e.errno)]
                out[key] = tuple(v)
    return out


def diff(a, b):
    lines = []
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            lines.append("  %s: host %s, mount %s" % (k, a.get(k), b.get(k)))
    return lines


def compare(label, with_attrs):
    """Each mount's tree against the host's; prints the differences."""
    want = snapshot(host, with_attrs)
    total = 0
    for m in mounts:
        d = diff(want, snapshot(m, with_attrs))
        total += len(d)
        print("\n".join(["%s:" % m] + d) if d else "%s: the same %d entries" % (m, len(want)))
    print("%s: %d differences" % (label, total))


if __name__ == "__main__":
    setup()
    threads = [threading.Thread(target=changer, args=(host, "host", "h", random.Random(seed), 0.0005))]
    for i, m in enumerate(mounts):
        threads.append(threading.Thread(target=changer,
                                        args=(m, "dpu-change", "m%d" % i, random.Random(seed + 100 + i), 0.0005)))
        for j in range(2):
            threads.append(threading.Thread(target=walker, args=(m, random.Random(seed + 200 + 10 * i + j))))
        threads.append(threading.Thread(target=holder, args=(m, random.Random(seed + 300 + i), "m%d" % i)))
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    for (side, what), n in sorted(stats.items()):
        print("%s %s: %d" % (side, what, n))
    for m, what, path, e in bad[:20]:
        print("  bad: %s %s %s" % (what, path, errno.errorcode.get(e, e) if e else "wrong"))
    print("bad errnos: %d" % len(bad))
    print("still mismatches: %d" % len(still_bad))

    for m in mounts:
        os.getxattr(m, "user.qtfs.sync")
    compare("names after the barrier", False)
    time.sleep(1.2)
    compare("after attr_timeout", True)
