# SPDX-License-Identifier: Apache-2.0
#
# The framed protocol's frames (docs/protocol.md, "Frames") and the
# encodings of rexec's payloads (docs/protocol.md, "Remote execution") for the tests'
# hand-made peers of rexec and rexecd: rexec-raw.py (a hostile client),
# greedy-rexecd.py (a server that ignores the stream credit),
# old-rexecd.py (a server from before an EXEC flag) and the fuzz seeds'
# generator (tests/fuzz/make-corpus-rexec.py).

import hashlib
import hmac
import os
import socket
import struct

HELLO, CHALLENGE, RESPONSE, AUTH_OK = 1, 2, 3, 4


def u8(v):
    return struct.pack(">B", v)


def u16(v):
    return struct.pack(">H", v)


def u32(v):
    return struct.pack(">I", v)


def u64(v):
    return struct.pack(">Q", v)


def s(text):
    """A string: its length (u32), then its bytes (UTF-8 if @text is a str)."""
    b = text.encode() if isinstance(text, str) else text
    return u32(len(b)) + b


def strv(items):
    """A list of strings: their count (u32), then each as s()."""
    return u32(len(items)) + b"".join(s(i) for i in items)


def frame(typ, payload=b"", flags=0, mid=0, version=1, length=None):
    """A frame: the 16-byte header (length, version, flags, type, id), then @payload."""
    n = len(payload) if length is None else length
    return struct.pack(">IBBHQ", n, version, flags, typ, mid) + payload


class FrameReader:
    """Frames from a connected socket, whole, in order."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def recv_frame(self, timeout=10):
        """A frame (type, flags, id, payload), or None at EOF/reset/timeout."""
        self.sock.settimeout(timeout)
        try:
            while True:
                if len(self.buf) >= 16:
                    n, _, fl, typ, mid = struct.unpack(">IBBHQ", self.buf[:16])
                    if len(self.buf) >= 16 + n:
                        p = self.buf[16:16 + n]
                        self.buf = self.buf[16 + n:]
                        return typ, fl, mid, p
                d = self.sock.recv(65536)
                if not d:
                    return None
                self.buf += d
        except (socket.timeout, ConnectionResetError, BrokenPipeError):
            return None


def read_key(keyfile):
    """The pre-shared key: the file's bytes less one final newline (lib/auth.c)."""
    with open(keyfile, "rb") as f:
        key = f.read()
    return key[:-1] if key.endswith(b"\n") else key


def serve_handshake(c, peer, key):
    """The server's half of the pre-shared-key handshake on @c (read
    through the FrameReader @peer).  False if the client broke it off."""
    f = peer.recv_frame()
    if f is None or f[0] != HELLO:
        return False
    nc = f[3][1:33]
    ns = os.urandom(32)
    proof = hmac.new(key, b"qt-psk-v1 server" + nc + ns, hashlib.sha256).digest()
    c.sendall(frame(CHALLENGE, b"\0" + ns + proof))
    f = peer.recv_frame()
    if f is None or f[0] != RESPONSE:
        return False
    c.sendall(frame(AUTH_OK))
    return True
