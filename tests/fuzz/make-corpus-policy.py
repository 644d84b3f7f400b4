#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Regenerates the seed corpus of the policy fuzz target (tests/fuzz/corpus/policy).

The generated files are committed; run this only to change them:
    python3 tests/fuzz/make-corpus-policy.py [OUTDIR]

A seed's first byte picks the part (fuzz-policy.c).  Even: a whitelist file
(docs/qtfs-whitelist.md), a NUL, then queries of an operation byte (the
index of the section in OPS) and a path, each ended by a NUL.  Odd: the
allow list (',' between entries), a NUL, then the environment a client
sent ('\\n' between entries).
"""
import os
import sys

OPS = ["Open", "Write", "Read", "Readdir", "Mkdir", "Rmdir", "Create", "Unlink", "Rename",
       "Setattr", "Setxattr", "Mount", "Kill", "Udsconnect"]

QUERIES = ["/var/lib", "/var/lib/docker", "/var/libvirt", "/var", "/", "/var/lib/",
           "/var//lib/x", "/var/lib/./x", "/var/lib/../etc", "var/lib", "/run/containerd/x",
           "/.", "/..x", "/x/.hidden", "/" + "a" * 4100]


def wl(text, queries=QUERIES, ops=range(len(OPS) + 2)):
    out = b"\x00" + text.encode() + b"\x00"
    for op in ops:
        for q in queries:
            out += bytes([op]) + q.encode() + b"\x00"
    return out


def env(allow, sent):
    return b"\x01" + ",".join(allow).encode() + b"\x00" + "\n".join(sent).encode()


SEEDS = {
    "wl-example": wl("[Open]\nPath=/var/lib/docker;/run/containerd\n[Rmdir]\nPath=\n"),
    "wl-root-entry": wl("[Write]\nPath=/\n[Read]\nPath=/var\n"),
    "wl-slashes": wl("[Create]\nPath=/var//lib/;//run///\n"),
    "wl-empty-items": wl("[Unlink]\nPath=/a;;/b;\n[Rename]\nPath= /var/lib ; /tmp \n"),
    "wl-escapes": wl("[Setattr]\nPath=/var/lib\\s;/with\\;semicolon\n"),
    "wl-no-path-key": wl("[Mkdir]\n[Readdir]\nPath=/var\n"),
    "wl-covered": wl("[Setxattr]\nPath=/var/lib/docker;/var/lib;/var/lib/x/y\n"),
    "wl-repeated-section": wl("[Open]\nPath=/a\n[Read]\nPath=/b\n[Open]\nPath=/var/lib\n"),
    "wl-all-sections": wl("".join("[%s]\nPath=/var/lib\n" % o for o in OPS)),
    "wl-comments": wl("# a comment\n\n[Kill]\nPath=/usr/bin\n[Udsconnect]\nPath=/run\n"),
    "bad-relative": wl("[Open]\nPath=var/lib\n"),
    "bad-dotdot": wl("[Open]\nPath=/var/../etc\n"),
    "bad-dot": wl("[Open]\nPath=/var/./lib\n"),
    "bad-section": wl("[open]\nPath=/var\n"),
    "bad-key": wl("[Open]\nPaths=/var\n"),
    "bad-translation": wl("[Open]\nPath[en]=/var\n"),
    "bad-escape": wl("[Open]\nPath=/var\\q\n"),
    "bad-control": wl("[Open]\nPath=/var\x01lib\n"),
    "bad-too-many": wl("[Open]\nPath=" + ";".join("/e%d" % i for i in range(65)) + "\n"),
    "bad-long-entry": wl("[Open]\nPath=/" + "a" * 4096 + "\n"),
    "bad-not-keyfile": wl("Path=/var\n"),
    "env-pass": env([], ["PATH=/usr/bin", "LD_PRELOAD=/tmp/x.so", "LD_LIBRARY_PATH=/tmp",
                         "GCONV_PATH=/tmp", "HOME=/root", "LANG=C", "TERM=xterm"]),
    "env-allow": env(["PATH", "LC_*", "TERM"], ["PATH=/usr/bin", "PATHX=1", "LC_ALL=C",
                                               "LC_=x", "LANG=C", "TERM=vt100", "LD_PRELOAD=x"]),
    "env-allow-star": env(["*"], ["A=1", "LD_PRELOAD=x", "B=="]),
    "env-allow-empty-entries": env(["", ",", "X"], ["X=1", "Y=2", "=z", "noequals"]),
    "env-fixed": env(["PATH=/usr/bin:/bin", "LC_ALL=C"], ["PATH=/evil", "LD_PRELOAD=x"]),
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                             "corpus", "policy")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
