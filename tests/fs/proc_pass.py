#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# A /proc/PID/maps read in small chunks while its process changes under
# the reader, through a mount of the host's /proc (fuse-qtfs).  A local
# reader of a seq_file gets whole lines whatever happens between its
# reads: each read goes on from where the last one stopped, the rest of a
# line included.  Usage:
#
#   proc_pass.py PROC-DIR exit     the process exits (and is reaped) after
#                                  the first 100 bytes were read
#   proc_pass.py PROC-DIR unmap    the process unmaps its lowest mappings
#                                  after the first 100 bytes were read
#
# Every line must be whole and one of the process's mappings, in order,
# and none that it had all along may be missing.
# Prints what went wrong and exits 1, or prints "whole lines" and exits 0.

import os
import re
import subprocess
import sys

CHILD = r'''
import ctypes, mmap, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
# Mappings below everything else, so that their lines open the file, with
# a gap between them so that they stay apart.
BASE, FIXED_NOREPLACE = 0x10000000, 0x100000
addrs = [BASE + i * 0x2000 for i in range(60)]
for a in addrs:
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | FIXED_NOREPLACE
    got = libc.mmap(a, 4096, mmap.PROT_READ, flags, -1, 0)
    assert got == a, "mmap at %x: %s" % (a, got)
print("ready", flush=True)
sys.stdin.readline()
if sys.argv[1] == "unmap":
    for a in addrs[:30]:
        libc.munmap(a, 4096)
    print("done", flush=True)
    sys.stdin.readline()
'''

LINE = re.compile(rb"[0-9a-f]+-[0-9a-f]+ [-r][-w][-x][ps] [0-9a-f]+ [0-9a-f]+:[0-9a-f]+ \d+ *.*\n")


def ranges(line):
    a, b = line.split(b" ", 1)[0].split(b"-")
    return ((int(a, 16), int(b, 16)), line)


def main():
    proc, what = sys.argv[1], sys.argv[2]
    child = subprocess.Popen([sys.executable, "-c", CHILD, what],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    child.stdout.readline()
    kept = set()
    # Every mapping the process has, and had, as the host says.
    with open("/proc/%d/maps" % child.pid, "rb") as f:
        known = {ranges(ln)[0] for ln in f}
    fd = os.open("%s/%d/maps" % (proc, child.pid), os.O_RDONLY)
    data = os.read(fd, 100)
    child.stdin.write(b"go\n")
    child.stdin.flush()
    if what == "exit":
        child.wait()
    else:
        child.stdout.readline()
        with open("/proc/%d/maps" % child.pid, "rb") as f:
            # Mappings the process had all along: a pass must show each.
            kept = known & {ranges(ln)[0] for ln in f}
    while True:
        try:
            b = os.read(fd, 4096)
        except ProcessLookupError:
            break
        if not b:
            break
        data += b
    os.close(fd)
    if what != "exit":
        child.stdin.write(b"end\n")
        child.stdin.flush()
        child.wait()
    lines = data.splitlines(True)
    bad = [ln for ln in lines if not LINE.fullmatch(ln) or ranges(ln)[0] not in known]
    starts = [ranges(ln)[0][0] for ln in lines if LINE.fullmatch(ln)]
    if bad or len(data) <= 100 or starts != sorted(set(starts)):
        print("%d bytes; lines not the process's mappings: %r" % (len(data), bad[:3]))
        return 1
    missing = sorted(kept - {ranges(ln)[0] for ln in lines})
    if missing:
        print("mappings it had all along are missing: %s" %
              ", ".join("%x-%x" % r for r in missing[:5]))
        return 1
    print("whole lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
