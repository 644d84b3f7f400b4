# SPDX-License-Identifier: Apache-2.0
#
# A hostile rexec client: it speaks the framed protocol by hand
# (docs/protocol.md) and sends rexecd what the real client never would:
# garbage, a header announcing a huge frame, a bad version, frames cut
# short, malformed EXECs, messages out of order or on streams that do not
# exist, a second EXEC on a session, unknown types, and connections that
# vanish mid-handshake or mid-exec.  Each attack runs on its own
# connection and checks what rexecd answered; in the middle of it all, one
# well-formed session (cat, with harmless junk mixed into its messages)
# must still run to its exit, while a file reference the session may not
# pass gets the connection closed.  Prints "ok: ..." or "FAIL: ..." per attack and exits 1
# if any failed.  Whether rexecd survived is for the caller to check.
#
#   python3 rexec-raw.py [--key KEYFILE] [--mark MARK] unix:/PATH | tcp://HOST:PORT
#
# With --read-ref PATH it only sends one EXEC of `cat <&3` whose fd 3 is a
# file reference to PATH exactly as given (the real client would send the
# path the kernel resolved), prints what cat printed, and exits 0 if the
# EXEC was accepted, 1 if it was refused.

import hashlib
import hmac
import os
import socket
import struct
import sys
import time

from rexec_frames import FrameReader, frame, s, strv, u8, u16, u32, u64

HELLO, CHALLENGE, RESPONSE, AUTH_OK, AUTH_FAIL = 1, 2, 3, 4, 5
EXEC, DATA, ACK, EOF, CLOSE, SIGNAL, RESIZE, EXIT = range(0x1000, 0x1008)
FORWARD = 0x1010
F_REPLY, F_ERROR = 1, 2
R_BAD_REQUEST = 6

failures = 0


def ok(msg):
    print("ok: " + msg)


def fail(msg):
    global failures
    failures += 1
    print("FAIL: " + msg)


def exec_payload(cmd, argv, env=(), cwd="/", umask=0o22, flags=0, term="", fds=b"\0\0\0\0",
                 argc=None):
    argvb = strv(argv) if argc is None else u32(argc) + b"".join(s(x) for x in argv)
    return (u32(flags) + s(cmd) + argvb + strv(list(env)) + s(cwd) + u32(umask) + s(term)
            + u16(80) + u16(24) + fds)


class Conn(FrameReader):
    def __init__(self, target, key):
        if target.startswith("unix:"):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(target[5:])
        else:
            host, port = target[len("tcp://"):].rsplit(":", 1)
            sock = socket.create_connection((host, int(port)))
        sock.settimeout(10)
        super().__init__(sock)
        self.key = key

    def send(self, b):
        self.sock.sendall(b)

    def closed_by_peer(self, timeout=10):
        """True if the peer closes the connection (frames before that are skipped)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            f = self.recv_frame(timeout=max(0.1, end - time.monotonic()))
            if f is None:
                try:
                    self.sock.settimeout(0.2)
                    return self.sock.recv(1) == b""
                except socket.timeout:
                    return False
                except OSError:
                    return True
        return False

    def handshake(self):
        nc = os.urandom(32)
        mode = 0 if self.key is not None else 1
        self.send(frame(HELLO, u8(mode) + nc + s("rexec-raw")))
        f = self.recv_frame()
        if f is None or f[0] != CHALLENGE:
            raise RuntimeError("no CHALLENGE: %r" % (f,))
        p = f[3]
        ns = p[1:33]
        if self.key is None:
            return
        mac = hmac.new(self.key, b"qt-psk-v1 client" + ns + nc, hashlib.sha256).digest()
        self.send(frame(RESPONSE, mac))
        f = self.recv_frame()
        if f is None or f[0] != AUTH_OK:
            raise RuntimeError("no AUTH_OK: %r" % (f,))

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def main():
    args = sys.argv[1:]
    key = None
    mark = "rexec-raw"
    read_ref = None
    twice = False
    tiny = 0
    tiny_cmd = "sleep 5"
    while args and args[0].startswith("--"):
        if args[0] == "--key":
            with open(args[1], "rb") as f:
                key = f.read()
            if key.endswith(b"\n"):
                key = key[:-1]
            args = args[2:]
        elif args[0] == "--mark":
            mark = args[1]
            args = args[2:]
        elif args[0] == "--read-ref":
            read_ref = args[1]
            args = args[2:]
        elif args[0] == "--twice":
            twice = True
            args = args[1:]
        elif args[0] == "--tiny-frames":
            tiny = int(args[1])
            args = args[2:]
        elif args[0] == "--tiny-exit":
            tiny_cmd = "exit 0"
            args = args[1:]
        else:
            sys.exit("rexec-raw: unknown option " + args[0])
    target = args[0]

    def conn(hs=True):
        c = Conn(target, key)
        if hs:
            c.handshake()
        return c

    if tiny:
        # A command that does not read its stdin, sent @tiny 1-byte DATA
        # frames on it (within the stream's credit); rexecd must hold them
        # without a message per byte.  With --tiny-exit the command exits
        # at once, and the frames come for a stdin that is closed: rexecd
        # must not answer each with a message of its own that we never
        # read.  Prints how many frames went out.
        c = conn()
        c.send(frame(EXEC, exec_payload("sh", ["sh", "-c", tiny_cmd]), mid=1))
        f = c.recv_frame()
        if f is None or f[0] != EXEC or f[3][0] != 0:
            sys.exit("EXEC refused: %r" % (f,))
        one = frame(DATA, u8(0) + u32(0) + b"x")
        batch = one * 1000
        for _ in range(tiny // 1000):
            c.send(batch)
        print(tiny // 1000 * 1000)
        sys.stdout.flush()
        time.sleep(1)
        c.close()
        sys.exit(0)

    if twice:
        # A refused EXEC (a command that does not exist), then another
        # request on the same session: EBUSY, the session is over.
        c = conn()
        c.send(frame(EXEC, exec_payload("no-such-command-" + mark, ["x"]), mid=1))
        f = c.recv_frame()
        if f is None or f[0] != EXEC or f[3][0] == 0:
            sys.exit("the first EXEC was not refused: %r" % (f,))
        c.send(frame(EXEC, exec_payload("true", ["true"]), mid=2))
        f = c.recv_frame()
        if f is None or not f[1] & F_ERROR or struct.unpack(">I", f[3][:4])[0] != 16:
            sys.exit("the second request got %r, not EBUSY" % (f,))
        sys.exit(0)

    if read_ref is not None:
        c = conn()
        ref = u32(1) + u32(3) + u32(os.O_RDONLY) + u64(0) + s(read_ref)
        c.send(frame(EXEC, exec_payload("sh", ["sh", "-c", "cat <&3"], fds=ref), mid=1))
        f = c.recv_frame()
        if f is None or f[0] != EXEC or f[3][0] != 0:
            print("refused: %r" % (f and f[3],), file=sys.stderr)
            sys.exit(1)
        out = b""
        while True:
            f = c.recv_frame()
            if f is None or f[0] == EXIT:
                break
            if f[0] == DATA and f[3][0] == 1:
                out += f[3][5:]
                c.send(frame(ACK, u8(1) + u32(len(f[3]) - 5)))
        sys.stdout.write(out.decode(errors="replace"))
        sys.exit(0)

    # -- before or instead of the handshake ------------------------------------
    c = conn(False)
    c.send(os.urandom(4096))
    (ok if c.closed_by_peer() else fail)("random bytes instead of a handshake: connection closed")
    c.close()

    c = conn(False)
    c.send(frame(EXEC, exec_payload("true", ["true"]), mid=1))
    f = c.recv_frame()
    (ok if f is None or f[0] in (AUTH_FAIL,) else fail)(
        "EXEC before the handshake is not run (got %r)" % (f and f[0],))
    c.close()

    c = conn(False)
    c.send(frame(HELLO, u8(0) + os.urandom(32))[:30])
    c.close()
    ok("a connection that vanishes mid-handshake")

    # -- frame headers ------------------------------------------------------------
    c = conn()
    c.send(frame(EXEC, b"", mid=1, length=0xFFFFFFFF))
    (ok if c.closed_by_peer() else fail)("a header announcing 4 GiB: connection closed")
    c.close()

    c = conn()
    c.send(frame(EXEC, b"", mid=1, length=64 * 1024 * 1024))
    (ok if c.closed_by_peer() else fail)("a header announcing 64 MiB: connection closed")
    c.close()

    c = conn()
    c.send(frame(EXEC, exec_payload("true", ["true"]), mid=1, version=2))
    (ok if c.closed_by_peer() else fail)("version 2: connection closed")
    c.close()

    c = conn()
    c.send(frame(EXEC, exec_payload("true", ["true"]), mid=1, flags=0x80))
    (ok if c.closed_by_peer() else fail)("unknown header flag: connection closed")
    c.close()

    c = conn()
    try:
        c.send(os.urandom(1 << 16))
        closed = c.closed_by_peer()
    except (BrokenPipeError, ConnectionResetError):
        closed = True  # closed before all of it was in (a smaller socket buffer)
    (ok if closed else fail)("64 KiB of garbage after the handshake: connection closed")
    c.close()

    # A frame cut short, then the connection closes.
    c = conn()
    full = frame(EXEC, exec_payload("sleep", ["sleep", mark + "9"]), mid=1)
    c.send(full[:len(full) // 2])
    c.close()
    ok("a truncated EXEC, then close")

    # -- malformed EXECs: answered BAD_REQUEST, or the connection closed ----------
    bad = {
        "argc 0xffffffff": exec_payload("true", ["true"], argc=0xFFFFFFFF),
        "no argv": exec_payload("true", []),
        "empty cmd": exec_payload("", ["x"]),
        "NUL in cmd": exec_payload("tr\0ue", ["true"]),
        "relative cwd": exec_payload("true", ["true"], cwd="tmp"),
        "env without =": exec_payload("true", ["true"], env=["NOEQ"]),
        "umask 01000": exec_payload("true", ["true"], umask=0o1000),
        "unknown EXEC flag": exec_payload("true", ["true"], flags=0x100),
        "relative file ref": exec_payload(
            "true", ["true"], fds=u32(1) + u32(3) + u32(0) + u64(0) + s("etc/passwd")),
        "file ref at fd 1": exec_payload(
            "true", ["true"], fds=u32(1) + u32(1) + u32(0) + u64(0) + s("/etc/passwd")),
        "trailing byte": exec_payload("true", ["true"]) + b"\0",
        "empty payload": b"",
    }
    for name, p in bad.items():
        c = conn()
        c.send(frame(EXEC, p, mid=7))
        f = c.recv_frame()
        if f is None:
            ok("malformed EXEC (%s): connection closed" % name)
        elif f[0] == EXEC and f[1] & F_REPLY and f[2] == 7 and (
                f[1] & F_ERROR or (len(f[3]) >= 1 and f[3][0] == R_BAD_REQUEST)):
            ok("malformed EXEC (%s): refused" % name)
        else:
            fail("malformed EXEC (%s): answered %r" % (name, f))
        c.close()

    c = conn()
    c.send(frame(0x1fff, b"junk", mid=3))
    f = c.recv_frame()
    (ok if f is None or (f[1] & F_ERROR and f[2] == 3) else fail)(
        "unknown call type: error reply or close (got %r)" % (f,))
    c.close()

    c = conn()
    c.send(frame(FORWARD, s("relative/sock"), mid=4))
    f = c.recv_frame()
    (ok if f is None or (f[2] == 4 and (f[1] & F_ERROR or f[3][0] != 0)) else fail)(
        "FORWARD of a relative path refused (got %r)" % (f,))
    c.close()

    # -- a real session with junk mixed in ------------------------------------------
    c = conn()
    # One-way junk before the EXEC: must be ignored, not crash anything.
    c.send(frame(DATA, u8(0) + u32(0) + b"early"))
    c.send(frame(SIGNAL, s("BOGUS")))
    c.send(frame(ACK, u8(1) + u32(0xFFFFFFFF)))
    c.send(frame(EXEC, exec_payload("cat", ["cat"]), mid=1))
    f = c.recv_frame()
    if f is None or f[0] != EXEC or not f[1] & F_REPLY or f[3][0] != 0:
        fail("EXEC cat after junk: not started (%r)" % (f,))
    else:
        ok("EXEC cat after junk one-way messages: started")
        c.send(frame(EXEC, exec_payload("true", ["true"]), mid=2))      # a second EXEC
        c.send(frame(DATA, u8(7) + u32(0) + b"x"))                         # no stream 7
        c.send(frame(DATA, u8(1) + u32(0) + b"x"))                         # stdout is not ours to write
        c.send(frame(DATA, u8(0) + u32(0xFFFFFFFF) + b"x"))               # malformed DATA
        c.send(frame(DATA, u8(0) + u32(0) + b"z" * (256 * 1024 + 1)))     # over REXEC_CHUNK
        c.send(frame(ACK, u8(2) + u32(0xFFFFFFFF)))
        c.send(frame(ACK, u8(9) + u32(1)))
        c.send(frame(EOF, u8(5)))
        c.send(frame(CLOSE, u8(0)))
        c.send(frame(SIGNAL, s("BOGUS")))
        c.send(frame(SIGNAL, s("X" * 100)))
        c.send(frame(RESIZE, u16(100)))                                   # short
        c.send(frame(RESIZE, u16(100) + u16(50)))                         # no pty
        c.send(frame(0x1555, b"unknown one-way"))
        c.send(frame(DATA, u8(0) + u32(0) + b"hello\n"))
        c.send(frame(EOF, u8(0)))
        out = b""
        code = None
        second = None
        end = time.monotonic() + 10
        while time.monotonic() < end:
            f = c.recv_frame(timeout=max(0.1, end - time.monotonic()))
            if f is None:
                break
            typ, fl, mid, p = f
            if typ == DATA and p[0] == 1:
                nref = struct.unpack(">I", p[1:5])[0]
                if nref == 0:
                    out += p[5:]
                    c.send(frame(ACK, u8(1) + u32(len(p) - 5)))
            elif fl & F_REPLY and mid == 2:
                second = f
            elif typ == EXIT:
                code = p
                break
        (ok if second is not None and second[1] & F_ERROR else fail)(
            "a second EXEC on the session is refused (got %r)" % (second,))
        (ok if out == b"hello\n" else fail)(
            "cat echoed only the well-formed stdin (got %r)" % (out[:80],))
        (ok if code is not None and code[:6] == b"\0\0\0\0\0\0" else fail)(
            "cat exited 0 after the junk (EXIT %r)" % (code,))
    c.close()

    # -- a file reference on stdin of an exec: the connection is closed -------------
    c = conn()
    c.send(frame(EXEC, exec_payload("sleep", ["sleep", mark + "7"]), mid=1))
    f = c.recv_frame()
    if f is None or f[0] != EXEC or f[3][0] != 0:
        fail("EXEC sleep: not started (%r)" % (f,))
    else:
        try:
            c.send(frame(DATA, u8(0) + u32(1) + u32(0) + u32(0) + u64(0) + s("/etc/shadow") + b"x"))
            closed = c.closed_by_peer(timeout=5)
        except OSError:
            closed = True
        (ok if closed else fail)("DATA carrying a reference to /etc/shadow: connection closed")
    c.close()

    # -- an EXEC whose client vanishes at once --------------------------------------
    c = conn()
    c.send(frame(EXEC, exec_payload("sleep", ["sleep", mark + "8"]), mid=1))
    c.recv_frame()
    c.close()
    ok("EXEC sleep, then the connection vanishes")

    # -- a burst of half-open connections ----------------------------------------------
    socks = []
    for _ in range(100):
        try:
            socks.append(Conn(target, key))
        except OSError:
            break
    for x in socks:
        x.send(frame(HELLO, u8(1)))
    for x in socks:
        x.close()
    ok("%d connections opened and dropped mid-handshake" % len(socks))

    sys.exit(1 if failures else 0)


main()
