# SPDX-License-Identifier: Apache-2.0
#
# The framed protocol's frames (docs/protocol.md, "Frames") for the tests'
# hand-made peers of rexec and rexecd: rexec-raw.py (a hostile client) and
# greedy-rexecd.py (a server that ignores the stream credit).

import socket
import struct


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
