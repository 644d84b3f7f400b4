#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Regenerates the seed corpus of the qtfs-server fuzz target (tests/fuzz/corpus/qtfs-server).

The generated files are committed; run this only to change them:
    python3 tests/fuzz/make-corpus-qtfs-server.py [OUTDIR]

Each seed is the MOUNT flags (u16; 0x8000 mounts the read-only export, 0x4000
sends the records at once, 0x2000 goes to the server whose whitelist allows
changes only in d/) and
records of (u8 op, u16 length, payload), op being the request type's offset
from MOUNT (0x80 sends it one-way); payloads are laid out as
docs/protocol.md's table says.  The exports (fuzz-qtfs-server.c) hold f, d/g,
a FIFO p, and the symlinks abs and rel (to ../outside/secret), up (..),
d/upup (../../outside) and self (/proc/self/root).  Handles count from 1 on
each connection.
"""
import os
import struct
import sys

OPS = ["MOUNT", "STATFS", "LOOKUP", "GETATTR", "SETATTR", "READLINK", "MKNOD", "MKDIR", "UNLINK",
       "RMDIR", "SYMLINK", "RENAME", "LINK", "OPEN", "CREATE", "READ", "WRITE", "RELEASE", "FSYNC",
       "OPENDIR", "READDIR", "ACCESS", "GETXATTR", "SETXATTR", "LISTXATTR", "REMOVEXATTR",
       "FALLOCATE", "LSEEK", "COPY_RANGE", "FLUSH", "POLL", "SETLK", "GETLK", "INTERRUPT", "WATCH",
       "WATCH_SYNC", "UNWATCH"]

(DIR_ATTRS, WATCH, PIPE_READS, XATTR_FH, WATCH_MOVES, UMASK, WRITE_MODE, INSTANCE, LIST_DIRS,
 UNWATCH) = (1 << i for i in range(10))
RO, ALL_AT_ONCE, WL = 0x8000, 0x4000, 0x2000
O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_TRUNC, O_APPEND = 0, 1, 2, 0o100, 0o200, 0o1000, 0o2000
O_DIRECTORY, O_NOFOLLOW = 0o200000, 0o400000


def u16(v):
    return struct.pack(">H", v)


def u32(v):
    return struct.pack(">I", v & 0xffffffff)


def u64(v):
    return struct.pack(">Q", v & 0xffffffffffffffff)


def s(text):
    b = text.encode() if isinstance(text, str) else text
    return u32(len(b)) + b


CALLER = u32(0) + u32(0)


def rec(op, payload=b"", one_way=False):
    return u8(OPS.index(op) | (0x80 if one_way else 0)) + u16(len(payload)) + payload


def u8(v):
    return struct.pack(">B", v)


def seed(mflags, *records):
    return u16(mflags) + b"".join(records)


def lookup(p):
    return rec("LOOKUP", s(p))


def open_(p, flags, prefetch=0):
    return rec("OPEN", s(p) + u32(flags) + u32(prefetch))


def read(h, off=0, size=4096):
    return rec("READ", u64(h) + u64(off) + u32(size))


def write(h, data, off=0, wflags=0):
    return rec("WRITE", u64(h) + u64(off) + u32(wflags) + u32(0) + s(data))


def create(p, flags=O_RDWR | O_CREAT | O_EXCL, mode=0o644):
    return rec("CREATE", s(p) + u32(flags) + u32(mode) + CALLER)


def setattr(p, h=0, valid=0, mode=0, uid=0, gid=0, size=0):
    return rec("SETATTR", s(p) + u64(h) + u32(valid) + u32(mode) + u32(uid) + u32(gid) +
               u64(size) + u64(0) + u32(0) + u64(0) + u32(0))


SEEDS = {
    # Each request once, on paths that exist.
    "lookup-getattr": seed(0, lookup("f"), lookup("d/g"), rec("GETATTR", s("d") + u64(0)),
                           rec("GETATTR", s("") + u64(0)), rec("STATFS", s(""))),
    "readlink": seed(0, rec("READLINK", s("abs")), rec("READLINK", s("d/upup"))),
    "open-read": seed(PIPE_READS, open_("f", O_RDONLY, 4096), read(1), read(1, 8, 100),
                      rec("LSEEK", u64(1) + u64(0) + u32(3)), rec("FLUSH", u64(1)),
                      rec("RELEASE", u64(1))),
    "create-write": seed(WRITE_MODE, create("new"), write(1, "hello"), write(1, "x", 1 << 20, 2),
                         rec("FSYNC", u64(1) + u32(1)), rec("FALLOCATE", u64(1) + u32(0) + u64(0) + u64(8192)),
                         rec("RELEASE", u64(1))),
    "namespace": seed(DIR_ATTRS | UMASK, rec("MKDIR", s("e") + u32(0o755) + CALLER + u32(0o22)),
                      rec("MKNOD", s("e/fifo") + u32(0o10644) + u64(0) + CALLER + u32(0)),
                      rec("SYMLINK", s("e/l") + s("../f") + CALLER + u32(0)),
                      rec("LINK", s("f") + s("e/hard")),
                      rec("RENAME", s("e/hard") + s("d/moved") + u32(0)),
                      rec("RENAME", s("f") + s("d/g") + u32(2)),
                      rec("UNLINK", s("e/l")), rec("UNLINK", s("e/fifo")), rec("RMDIR", s("e"))),
    "setattr": seed(0, setattr("f", valid=1, mode=0o600), setattr("f", valid=8, size=3),
                    setattr("d", valid=6, uid=1000, gid=1000)),
    "xattr": seed(XATTR_FH, rec("SETXATTR", s("f") + u64(0) + s("user.a") + s("v") + u32(0)),
                  rec("GETXATTR", s("f") + u64(0) + s("user.a") + u32(64)),
                  rec("LISTXATTR", s("f") + u64(0) + u32(0)),
                  rec("REMOVEXATTR", s("f") + u64(0) + s("user.a"))),
    "readdir": seed(LIST_DIRS | WATCH, rec("OPENDIR", s("")),
                    rec("READDIR", u64(1) + u64(0) + u32(4096) + u32(3)),
                    rec("READDIR", u64(1) + u64(0) + u32(4096) + u32(1)), rec("RELEASE", u64(1))),
    "watch": seed(WATCH | WATCH_MOVES | LIST_DIRS, rec("WATCH", u32(0)), lookup("d"),
                  create("d/n"), rec("WATCH", u32(10)), rec("WATCH_SYNC")),
    "unwatch": seed(WATCH | LIST_DIRS | UNWATCH, rec("WATCH", u32(0)), lookup("d/n"),
                    rec("UNWATCH", u32(2) + u64(1) + u64(2) + u64(3) + u64(4) + u64(5) + u64(6)),
                    lookup("d/n"), rec("UNWATCH", u32(0)), rec("WATCH_SYNC")),
    "locks": seed(0, open_("f", O_RDWR), rec("SETLK", u64(1) + u64(7) + u32(1) + u64(0) + u64(0) +
                                              u32(0) + u32(42)),
                  rec("GETLK", u64(1) + u64(8) + u32(0) + u64(0) + u64(10)),
                  rec("SETLK", u64(1) + u64(7) + u32(1) + u64(0) + u64(0) + u32(1) + u32(42)),
                  rec("POLL", u64(1) + u32(1) + u32(0))),
    "copy-range": seed(0, open_("f", O_RDONLY), create("copy"),
                       rec("COPY_RANGE", u64(1) + u64(0) + u64(2) + u64(0) + u64(16) + u32(0))),
    "access": seed(INSTANCE, rec("ACCESS", s("f") + u32(4)), rec("ACCESS", s("d") + u32(1))),
    # A FIFO open blocks until the close ends the session.
    "fifo-open-blocks": seed(0, open_("p", O_RDONLY), rec("POLL", u64(1) + u32(1) + u32(30000))),
    "interrupt": seed(0, open_("p", O_RDONLY), rec("INTERRUPT", u64(2), one_way=True)),
    # Ways out of the export, each of which must be refused.
    "escape-dotdot": seed(0, lookup("../outside/secret"), lookup(".."), lookup("d/../../outside"),
                          lookup("/etc/passwd"), lookup("d//g"), lookup("d/g/")),
    "escape-symlinks": seed(0, lookup("abs"), lookup("rel/x"), lookup("up/outside/secret"),
                            lookup("d/upup/secret"), lookup("self/etc/passwd"),
                            open_("abs", O_WRONLY | O_TRUNC), open_("rel", O_RDWR | O_APPEND),
                            open_("up/outside/secret", O_RDWR), open_("self/tmp", O_RDONLY | O_DIRECTORY)),
    "escape-create": seed(0, create("up/outside/new"), create("abs", O_RDWR | O_CREAT),
                          create("d/upup/new"), rec("MKDIR", s("up/outside/d") + u32(0o755) + CALLER),
                          rec("SYMLINK", s("d/upup/l") + s("/") + CALLER)),
    "escape-rename": seed(0, rec("RENAME", s("f") + s("up/outside/secret") + u32(0)),
                          rec("RENAME", s("d/upup/secret") + s("stolen") + u32(0)),
                          rec("LINK", s("d/upup/secret") + s("hl")),
                          rec("RENAME", s("rel") + s("d/upup/x") + u32(2))),
    "escape-setattr": seed(0, setattr("abs", valid=8, size=0), setattr("rel", valid=1, mode=0o777),
                           setattr("d/upup/secret", valid=8), rec("SETXATTR", s("abs") + s("user.x") +
                                                                   s("v") + u32(0)),
                           rec("UNLINK", s("d/upup/secret"))),
    "escape-symlink-then-write": seed(0, rec("SYMLINK", s("t") + s("../outside/secret") + CALLER),
                                      open_("t", O_WRONLY | O_TRUNC), create("t", O_WRONLY | O_CREAT | O_TRUNC),
                                      setattr("t", valid=8)),
    "name-too-long": seed(0, lookup("a" * 1100), lookup("/".join(["d"] * 3000)), create("x" * 300)),
    # The read-only export refuses every change.
    "ro-writes": seed(RO, open_("f", O_WRONLY | O_TRUNC), create("n"), setattr("f", valid=8),
                      rec("MKDIR", s("e") + u32(0o755) + CALLER), rec("UNLINK", s("f")),
                      rec("RENAME", s("f") + s("g") + u32(0)),
                      rec("SETXATTR", s("") + s("user.fuzz") + s("y") + u32(0)),
                      rec("REMOVEXATTR", s("") + s("user.fuzz"))),
    "ro-handle-writes": seed(RO, open_("f", O_RDONLY), write(1, "x"),
                             rec("FALLOCATE", u64(1) + u32(0) + u64(0) + u64(10)),
                             setattr("f", h=1, valid=8)),
    # Malformed requests.
    "truncated": seed(0, rec("LOOKUP", u32(100) + b"f"), rec("OPEN", s("f")),
                      rec("SETATTR", s("f") + u64(0))),
    "trailing": seed(0, rec("LOOKUP", s("f") + b"\0"), rec("GETATTR", s("f") + u64(0) + b"xx")),
    "nul-in-path": seed(0, lookup("f\0x"), rec("CREATE", s("a\0b") + u32(0o102) + u32(0o644) + CALLER)),
    "bad-handles": seed(0, read(0), read(99), write(1 << 40, "x"), rec("RELEASE", u64(5)),
                        rec("READDIR", u64(1) + u64(0) + u32(0xffffffff) + u32(0xff)),
                        rec("COPY_RANGE", u64(1) + u64(0) + u64(1) + u64(0) + u64(1 << 62) + u32(0))),
    "huge-sizes": seed(0, open_("f", O_RDWR), read(1, 0, 0xffffffff), write(1, "x", (1 << 63) - 1),
                       rec("FALLOCATE", u64(1) + u32(0) + u64(0) + u64(1 << 62)),
                       rec("LSEEK", u64(1) + u64(1 << 63) + u32(9))),
    "second-mount": seed(0, rec("MOUNT", s("/") + u32(0)), rec("MOUNT", s("/etc") + u32(0))),
    "one-way-requests": seed(0, rec("CREATE", s("ow") + u32(0o102) + u32(0o644) + CALLER, one_way=True),
                             rec("INTERRUPT", u64(1) + b"x", one_way=True)),
    "many-opens": seed(0, *[open_("f", O_RDONLY) for _ in range(70)]),
    # Through the whitelisted server, changes only in d/.
    "wl-outside-d": seed(WL, create("n"), rec("MKDIR", s("e") + u32(0o755) + CALLER),
                         rec("RENAME", s("f") + s("d/f") + u32(0)), rec("LINK", s("f") + s("d/h")),
                         rec("LINK", s("d/g") + s("h")), setattr("f", valid=8),
                         open_("f", O_WRONLY | O_TRUNC), rec("UNLINK", s("f")),
                         rec("SYMLINK", s("s") + s("d") + CALLER),
                         rec("SETXATTR", s("") + s("user.fuzz") + s("y") + u32(0)),
                         rec("RENAME", s("d/g") + s("g") + u32(0)),
                         rec("RENAME", s("d") + s("e") + u32(0))),
    "wl-inside-d": seed(WL, create("d/n"), write(1, "x"), rec("MKDIR", s("d/e") + u32(0o755) + CALLER),
                        rec("RENAME", s("d/g") + s("d/e/g") + u32(0)), setattr("d/n", valid=8),
                        rec("SYMLINK", s("d/s") + s("../f") + CALLER), open_("d/s", O_WRONLY),
                        rec("UNLINK", s("d/upup"))),
    "wl-through-symlinks": seed(WL, rec("SYMLINK", s("d/l") + s("../f") + CALLER),
                                open_("d/l", O_WRONLY | O_TRUNC), setattr("d/l", valid=8),
                                rec("RENAME", s("d/l") + s("d/m") + u32(0)),
                                rec("LINK", s("up/export/f") + s("d/k"))),
    "wl-handles": seed(WL, open_("f", O_RDONLY), create("d/c"),
                       rec("COPY_RANGE", u64(1) + u64(0) + u64(2) + u64(0) + u64(16) + u32(0)),
                       write(1, "x"), setattr("f", h=1, valid=8),
                       rec("FALLOCATE", u64(1) + u32(0) + u64(0) + u64(10))),
    "wl-at-once": seed(WL | ALL_AT_ONCE, create("n"), create("d/n"),
                       rec("RENAME", s("d/n") + s("n2") + u32(0)), rec("UNLINK", s("f")),
                       setattr("", valid=1, mode=0o777)),
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                             "corpus", "qtfs-server")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
