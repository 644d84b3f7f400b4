#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Regenerates the seed corpora of the rexec and rexecd fuzz targets.

The generated files are committed; run this only to change them:
    python3 tests/fuzz/make-corpus-rexec.py [OUTDIR]
(OUTDIR holds rexec/ and rexecd/; tests/fuzz/corpus by default.)

Payloads are laid out as docs/protocol.md ("Remote execution") describes:
big-endian integers, strings as a u32 length and the bytes.

rexec (fuzz-rexec.c, the decoders): one kind byte (the index into kinds[])
and a payload.  Valid messages of every kind, and each of the ways a
decoder must refuse one.

rexecd (fuzz-rexecd.c, whole sessions): a flags byte (0x1: every record at
once), then records of (u8 op: EXEC, FORWARD, DATA, ACK, EOF, CLOSE,
SIGNAL, RESIZE; u16 length; payload).  The target's rexecd runs cat, head,
true, echo and sleep; passed files may come from its files/ directory (in,
out, and a symlink up to /etc/hostname); forwards may reach its sock
(BASE, /tmp/qtfs-fuzz-rexecd, in fuzz-rexecd.c).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "rexec"))
from rexec_frames import s, strv, u8, u16, u32, u64  # noqa: E402

EXEC, FORWARD, RESULT, EXIT, ACK, EOF, CLOSE, SIGNAL, RESIZE, DATA = range(10)


def refs(items):
    out = u32(len(items))
    for fd, flags, off, path in items:
        out += u32(fd) + u32(flags) + u64(off) + s(path)
    return out


def exec_req(flags=0, cmd="/bin/true", argv=("true",), env=("PATH=/usr/bin",), cwd="/",
             umask=0o22, term="", cols=0, rows=0, fds=()):
    return (u32(flags) + s(cmd) + strv(list(argv)) + strv(list(env)) + s(cwd) + u32(umask) +
            s(term) + u16(cols) + u16(rows) + refs(list(fds)))


SEEDS = {
    # EXEC
    "exec-minimal": (EXEC, exec_req()),
    "exec-pty": (EXEC, exec_req(flags=1, cmd="bash", argv=("bash", "-l"), term="xterm-256color",
                                cols=80, rows=24, cwd="")),
    "exec-fds": (EXEC, exec_req(fds=[(0, 0, 0, "/etc/hostname"), (1, 0o2001, 4096, "/var/log/x"),
                                     (7, 0o4010002, 0, "/tmp/a b")])),
    "exec-bad-flags": (EXEC, exec_req(flags=2)),
    "exec-no-argv": (EXEC, exec_req(argv=())),
    "exec-empty-cmd": (EXEC, exec_req(cmd="")),
    "exec-env-no-equals": (EXEC, exec_req(env=("PATH",))),
    "exec-env-empty-name": (EXEC, exec_req(env=("=x",))),
    "exec-relative-cwd": (EXEC, exec_req(cwd="tmp")),
    "exec-umask-over": (EXEC, exec_req(umask=0o1000)),
    "exec-nul-in-arg": (EXEC, exec_req(argv=("a\0b",))),
    "exec-relative-ref": (EXEC, exec_req(fds=[(3, 0, 0, "etc/passwd")])),
    "exec-ref-fd-over": (EXEC, exec_req(fds=[(1048577, 0, 0, "/x")])),
    "exec-ref-offset-negative": (EXEC, exec_req(fds=[(3, 0, 1 << 63, "/x")])),
    "exec-argc-huge": (EXEC, u32(0) + s("/bin/true") + u32(0xffffffff)),
    "exec-trailing-byte": (EXEC, exec_req() + b"\0"),
    "exec-truncated": (EXEC, exec_req()[:-3]),
    # FORWARD
    "forward": (FORWARD, s("/run/containerd/containerd.sock")),
    "forward-relative": (FORWARD, s("run/x.sock")),
    "forward-long": (FORWARD, s("/" + "a" * 4096)),
    # results and exits
    "result-ok": (RESULT, u8(0) + u32(0) + u32(4242) + s("")),
    "result-denied": (RESULT, u8(2) + u32(13) + u32(0) + s("/usr/bin/x is not in the whitelist")),
    "result-unknown": (RESULT, u8(7) + u32(0) + u32(0) + s("")),
    "exit-code": (EXIT, u8(0) + u8(0) + u32(3) + s("")),
    "exit-signal": (EXIT, u8(1) + u8(1) + u32(11) + s("SEGV")),
    "exit-code-over": (EXIT, u8(0) + u8(0) + u32(256) + s("")),
    "exit-bool-over": (EXIT, u8(2) + u8(0) + u32(0) + s("")),
    # streams
    "ack": (ACK, u8(1) + u32(65536)),
    "ack-over-window": (ACK, u8(0) + u32(2 * 1024 * 1024 + 1)),
    "eof-stdin": (EOF, u8(0)),
    "close-bad-stream": (CLOSE, u8(3)),
    "signal-term": (SIGNAL, s("TERM")),
    "signal-sigint": (SIGNAL, s("SIGINT")),
    "signal-unknown": (SIGNAL, s("SIGFOO")),
    "signal-too-long": (SIGNAL, s("X" * 17)),
    "resize": (RESIZE, u16(132) + u16(43)),
    "resize-short": (RESIZE, u16(132)),
    "data": (DATA, u8(1) + u32(0) + b"hello\n"),
    "data-empty": (DATA, u8(0) + u32(0)),
    "data-ref": (DATA, u8(0) + refs([(0, 0, 0, "/etc/hostname")]) + b"x"),
    "data-ref-no-byte": (DATA, u8(0) + refs([(0, 0, 0, "/etc/hostname")])),
    "data-refs-count-huge": (DATA, u8(0) + u32(254) + b"x" * 20),
}


# rexecd: ops of the session records.
R_EXEC, R_FORWARD, R_DATA, R_ACK, R_EOF, R_CLOSE, R_SIGNAL, R_RESIZE = range(8)
# fuzz-rexecd.c's BASE.
FILES = "/tmp/qtfs-fuzz-rexecd/files"
SOCK = "/tmp/qtfs-fuzz-rexecd/sock"


def rec(op, payload):
    return u8(op) + u16(len(payload)) + payload


def session(flags, *records):
    return u8(flags) + b"".join(records)


def run(cmd, *args, **kw):
    return rec(R_EXEC, exec_req(cmd=cmd, argv=(cmd,) + args, env=(), cwd="/", **kw))


def data(stream, payload, refs_=()):
    return rec(R_DATA, u8(stream) + refs(list(refs_)) + payload)


SESSIONS = {
    "cat-stdin": session(0, run("cat"), data(0, b"hello\n"), rec(R_EOF, u8(0))),
    "cat-twice-exec": session(0, run("cat"), run("cat"), rec(R_EOF, u8(0))),
    "echo": session(0, run("echo", "a", "b")),
    "true": session(0, run("true")),
    "head-lines": session(0, run("head", "-n", "1"), data(0, b"one\ntwo\n"), rec(R_EOF, u8(0))),
    "sleep-term": session(0, run("sleep", "100"), rec(R_SIGNAL, s("TERM"))),
    "sleep-stop-cont": session(0, run("sleep", "100"), rec(R_SIGNAL, s("TSTP")), rec(R_SIGNAL, s("CONT"))),
    "sleep-orphaned": session(0, run("sleep", "100")),
    "cat-pty": session(0, run("cat", flags=1, term="xterm", cols=80, rows=24), rec(R_RESIZE, u16(100) + u16(30)),
                       data(0, b"typed\r"), data(0, b"\x04")),
    "cat-passed-file": session(0, run("cat", "/proc/self/fd/3", fds=[(3, 0, 0, FILES + "/in"), (4, 1, 0, FILES + "/out")])),
    "cat-passed-symlink": session(0, run("cat", "/proc/self/fd/3", fds=[(3, 0, 0, FILES + "/up")])),
    "cat-passed-outside": session(0, run("cat", "/proc/self/fd/3", fds=[(3, 0, 0, "/etc/passwd")])),
    "not-whitelisted": session(0, run("sh", "-c", "exit 3")),
    "relative-cmd-dotdot": session(0, run("../bin/cat")),
    "bad-cwd": session(0, rec(R_EXEC, exec_req(cmd="cat", argv=("cat",), cwd="/nonexistent"))),
    "forward": session(0, rec(R_FORWARD, s(SOCK)), data(0, b"ping\n"), rec(R_EOF, u8(0))),
    "forward-refused": session(0, rec(R_FORWARD, s("/run/other.sock"))),
    "stdin-refs": session(0, run("cat"), data(0, b"x", [(0, 0, 0, FILES + "/in")])),
    "over-credit": session(0, run("sleep", "100"), *[data(0, b"z" * 60000) for _ in range(40)]),
    "acks-unasked": session(0, run("cat"), rec(R_ACK, u8(1) + u32(2 * 1024 * 1024)), rec(R_ACK, u8(1) + u32(1))),
    "close-outputs": session(0, run("cat"), rec(R_CLOSE, u8(1)), rec(R_CLOSE, u8(2)), data(0, b"x\n")),
    "eof-twice": session(0, run("cat"), rec(R_EOF, u8(0)), rec(R_EOF, u8(0)), data(0, b"late")),
    "streams-before-exec": session(0, data(0, b"early"), rec(R_SIGNAL, s("KILL")), rec(R_RESIZE, u16(1) + u16(1)),
                                   run("cat"), rec(R_EOF, u8(0))),
    "all-at-once": session(1, run("cat"), data(0, b"a"), rec(R_EOF, u8(0)), rec(R_SIGNAL, s("INT"))),
    "malformed": session(0, rec(R_EXEC, b"\0\0"), rec(R_DATA, b""), rec(R_SIGNAL, b"\xff" * 3)),
}


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus")
    out = os.path.join(top, "rexec")
    os.makedirs(out, exist_ok=True)
    for name, (kind, payload) in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(u8(kind) + payload)
    out = os.path.join(top, "rexecd")
    os.makedirs(out, exist_ok=True)
    for name, data_ in SESSIONS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data_)


if __name__ == "__main__":
    main()
