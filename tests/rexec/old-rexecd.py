# SPDX-License-Identifier: Apache-2.0
#
# An rexecd from before the EXEC flag ONE_OUTPUT (0x2, stdout and stderr
# one open file): it answers an EXEC that carries a flag it does not know
# as such an rexecd did, REXEC_R_BAD_REQUEST with EBADMSG, and closes.  An
# EXEC without it "runs": the answer that it started, a line on stdout and
# EXIT 0.  Takes connections on a unix socket until killed and prints the
# flags of each EXEC, one line each.
#
#   python3 old-rexecd.py KEYFILE SOCKET

import os
import socket
import struct
import sys

from rexec_frames import FrameReader, frame, read_key, s, serve_handshake

EXEC, DATA, EXIT = 0x1000, 0x1001, 0x1007
F_REPLY = 1
KNOWN = 0x1          # PTY: the only flag such an rexecd knew
BAD_REQUEST, EBADMSG = 6, 74


def session(c, key):
    peer = FrameReader(c)
    if not serve_handshake(c, peer, key):
        return
    while True:
        f = peer.recv_frame()
        if f is None:
            return
        if f[0] == EXEC:
            break
    flags = struct.unpack(">I", f[3][:4])[0]
    print("EXEC flags %#x" % flags, flush=True)
    if flags & ~KNOWN:
        c.sendall(frame(EXEC, struct.pack(">BII", BAD_REQUEST, EBADMSG, 0)
                        + s("malformed EXEC request"), F_REPLY, f[2]))
        return
    c.sendall(frame(EXEC, struct.pack(">BIII", 0, 0, 1, 0), F_REPLY, f[2]))
    c.sendall(frame(DATA, b"\1" + struct.pack(">I", 0) + b"from the old rexecd\n"))
    # not signaled, no core, code 0, no signal name
    c.sendall(frame(EXIT, struct.pack(">BBII", 0, 0, 0, 0)))
    while peer.recv_frame() is not None:
        pass


def main():
    key = read_key(sys.argv[1])
    path = sys.argv[2]
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # Listening before the name appears: a connect in between is refused.
    srv.bind(path + ".tmp")
    srv.listen(4)
    os.rename(path + ".tmp", path)
    while True:
        c, _ = srv.accept()
        try:
            session(c, key)
        except OSError:
            pass
        c.close()


main()
