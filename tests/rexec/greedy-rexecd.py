# SPDX-License-Identifier: Apache-2.0
#
# A rexecd that does not keep to the stream credit (docs/protocol.md,
# "Streams and credit"): it takes one connection on a unix socket, does
# the pre-shared-key handshake as the server, starts no command but
# answers the EXEC as started, then sends BYTES of stdout in 256 KiB DATA
# frames without waiting for any ACK, and EXIT 0.  The real client must
# not keep more than REXEC_WINDOW (2 MiB) of them.
#
#   python3 greedy-rexecd.py KEYFILE SOCKET BYTES

import os
import socket
import struct
import sys

from rexec_frames import FrameReader, frame, read_key, serve_handshake

EXEC, DATA, EXIT = 0x1000, 0x1001, 0x1007
F_REPLY = 1
CHUNK = 256 * 1024


def main():
    keyfile, path, total = sys.argv[1], sys.argv[2], int(sys.argv[3])
    key = read_key(keyfile)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # Listening before the name appears: a connect in between is refused.
    srv.bind(path + ".tmp")
    srv.listen(1)
    os.rename(path + ".tmp", path)
    c, _ = srv.accept()
    peer = FrameReader(c)
    if not serve_handshake(c, peer, key):
        sys.exit("no handshake")
    while True:
        f = peer.recv_frame()
        if f is None:
            sys.exit("no EXEC")
        if f[0] == EXEC:
            break
    # result 0, errno 0, pid 1, message ""
    c.sendall(frame(EXEC, struct.pack(">BIII", 0, 0, 1, 0), F_REPLY, f[2]))
    sent = 0
    try:
        while sent < total:
            n = min(CHUNK, total - sent)
            c.sendall(frame(DATA, b"\1" + struct.pack(">I", 0) + b"x" * n))
            sent += n
        # not signaled, no core, code 0, no signal name
        c.sendall(frame(EXIT, struct.pack(">BBII", 0, 0, 0, 0)))
    except OSError:
        pass
    print("sent", sent, flush=True)
    while peer.recv_frame() is not None:
        pass


main()
