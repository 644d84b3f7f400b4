# SPDX-License-Identifier: Apache-2.0
#
# hostile-workload.py MOUNT MITM_PID: 3000 calls of every kind on a
# fuse-qtfs mount whose server side is hostile or mangled (qtfs-mitm,
# pid MITM_PID): stats, listings, reads, writes, creates, unlinks, mkdir,
# rename, links, readlink, extended attributes, statfs, chmod, truncate,
# locks, fsync, lseek, copy_file_range.  Each call is bounded by an alarm
# well past the mount's deadline; it prints the number of calls, the
# errors by errno, the calls that hung, the copies that claimed more
# bytes than asked and the errnos of the kernel's own that got through.
# hostile-workload.py --setup DIR: make the tree the calls expect in the
# export DIR: d/n000 to d/n399, big (3 MiB), link -> big, user.k on big.
# Used by test-qtfs-hostile.sh (the replies mangled) and
# test-qtfs-hostile-client.sh (the requests mangled).
import errno, fcntl, os, random, signal, sys, time

if sys.argv[1] == "--setup":
    h = sys.argv[2]
    os.mkdir(os.path.join(h, "d"))
    for i in range(400):
        with open(os.path.join(h, "d", "n%03d" % i), "w") as f:
            f.write("x" * i)
    with open(os.path.join(h, "big"), "wb") as f:
        f.write(os.urandom(3 << 20))
    os.symlink("big", os.path.join(h, "link"))
    os.setxattr(os.path.join(h, "big"), "user.k", b"v")
    sys.exit(0)

m, mitm = sys.argv[1], int(sys.argv[2])
rng = random.Random(7)

class Hung(Exception):
    pass

def alarm(*_):
    raise Hung()

signal.signal(signal.SIGALRM, alarm)
hung, errors, done = [], {}, 0

def op_stat():
    os.stat(os.path.join(m, "d", "n%03d" % rng.randrange(400)))
def op_list():
    os.listdir(os.path.join(m, "d"))
def op_ls_l():
    for e in os.scandir(os.path.join(m, "d")):
        if rng.random() < 0.05:
            e.stat()
def op_read():
    with open(os.path.join(m, "big"), "rb") as f:
        f.seek(rng.randrange(3 << 20))
        f.read(rng.choice((100, 4096, 200000)))
def op_write():
    p = os.path.join(m, "w%d" % rng.randrange(20))
    with open(p, "ab") as f:
        f.write(b"y" * rng.randrange(1, 70000))
def op_create_unlink():
    p = os.path.join(m, "c%d" % rng.randrange(50))
    fd = os.open(p, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    os.close(fd)
    if rng.random() < 0.5:
        os.unlink(p)
def op_mkdir_rmdir():
    p = os.path.join(m, "dd%d" % rng.randrange(10))
    os.mkdir(p)
    os.rmdir(p)
def op_rename():
    os.rename(os.path.join(m, "w%d" % rng.randrange(20)), os.path.join(m, "w%d" % rng.randrange(20)))
def op_link_symlink():
    p = os.path.join(m, "l%d" % rng.randrange(10))
    if rng.random() < 0.5:
        os.symlink("big", p)
    else:
        os.link(os.path.join(m, "big"), p)
def op_readlink():
    os.readlink(os.path.join(m, "link"))
def op_xattr():
    p = os.path.join(m, "big")
    os.getxattr(p, "user.k")
    os.listxattr(p)
    if rng.random() < 0.2:
        os.setxattr(p, "user.k", b"v")
def op_statfs():
    os.statvfs(m)
def op_chmod_truncate():
    p = os.path.join(m, "w%d" % rng.randrange(20))
    os.chmod(p, 0o600 | rng.randrange(0o100))
    os.truncate(p, rng.randrange(10000))
def op_lock():
    with open(os.path.join(m, "big"), "rb") as f:
        fcntl.lockf(f, fcntl.LOCK_SH | fcntl.LOCK_NB, 10, 0)
        fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
overcounts, copies = 0, 0
def op_copy_range():
    global overcounts, copies
    a = os.open(os.path.join(m, "big"), os.O_RDONLY)
    try:
        b = os.open(os.path.join(m, "w%d" % rng.randrange(20)), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            n = rng.randrange(1, 200000)
            if os.copy_file_range(a, b, n, rng.randrange(3 << 20), rng.randrange(100000)) > n:
                overcounts += 1
            copies += 1
        finally:
            os.close(b)
    finally:
        os.close(a)
def op_fsync_seek():
    fd = os.open(os.path.join(m, "big"), os.O_RDONLY)
    try:
        os.lseek(fd, 0, os.SEEK_DATA)
        os.fsync(fd)
    finally:
        os.close(fd)

ops = [op_stat, op_list, op_ls_l, op_read, op_write, op_create_unlink, op_mkdir_rmdir, op_rename,
       op_link_symlink, op_readlink, op_xattr, op_statfs, op_chmod_truncate, op_lock, op_fsync_seek,
       op_copy_range]
t0 = time.monotonic()
def mitm_alive():
    try:
        return open("/proc/%d/stat" % mitm).read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False

for i in range(3000):
    if i % 100 == 0 and not mitm_alive():
        print("qtfs-mitm is gone")
        break
    op = rng.choice(ops)
    signal.alarm(15)
    try:
        op()
    except Hung:
        hung.append(op.__name__)
    except OSError as e:
        errors[e.errno] = errors.get(e.errno, 0) + 1
    except Exception as e:
        # what a mangled attribute makes of Python's own checks (a huge st_blksize)
        errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
    finally:
        signal.alarm(0)
    done += 1
print("calls: %d in %.0f s" % (done, time.monotonic() - t0))
print("errors: %s" % ", ".join("%s %d" % (errno.errorcode.get(k, k), v) for k, v in
                               sorted(errors.items(), key=lambda kv: str(kv[0]))))
print("hung: %d %s" % (len(hung), " ".join(hung[:10])))
# a copy_file_range() that says it copied more than it was asked to
print("overcounted copies: %d (of %d that succeeded)" % (overcounts, copies))
# 512 and up are the kernel's own (ERESTARTSYS...), which no program may see
print("kernel-internal errnos: %d" % sum(v for k, v in errors.items() if isinstance(k, int) and k >= 512))
