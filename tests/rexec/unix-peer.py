# SPDX-License-Identifier: Apache-2.0
#
# Both ends of the unix-socket traffic that tests/rexec/test-rexec-forward.sh
# sends through `rexec forward-unix`:
#
#   serve PATH TEXT     on the "host": one server on unix socket PATH, one
#                       thread per connection.  A connection's first bytes
#                       choose what it gets: "GET " an HTTP/1.0 response whose
#                       body is TEXT; "ECHO\n" every following byte echoed
#                       back until EOF; "FD\n" carrying a descriptor
#                       (SCM_RIGHTS, on those bytes or the next one): the
#                       server sends back
#                       "OFF:<the descriptor's offset>\nFILE:" and the
#                       file's contents from offset 0; "HELLO\n" TEXT and
#                       a newline, then, 0.3 s later, the connection closed
#                       (so the EOF comes on its own, after the bytes were
#                       delivered).  Each accepted connection is logged on
#                       stderr.
#   echo PATH MIB       on the "DPU": send MIB MiB of random bytes after
#                       "ECHO\n" (while reading the echo, from another
#                       thread), shut down writing, and check the echo is
#                       byte-exact.  Exit 0 if it is.
#   sendfd PATH FILE    send FILE's descriptor, at offset 3, with "FD\n";
#                       print what came back.  Exit 0 if anything came back.
#   sendpipe PATH       send a pipe's read end with "FD\n"; exit 0 if the
#                       connection is then closed without a reply, 1 if a
#                       reply came, 2 if nothing happened within 10 s.
#   raw PATH            connect, send "ECHO\nping", shut down writing, print
#                       the reply (empty if the connection was just closed).
#   hello PATH          connect, send "HELLO\n", print what comes until EOF
#                       (without shutting down writing first), then close.

import array
import os
import socket
import sys
import threading
import time


def recv_exact_until_eof(sock):
    chunks = []
    while True:
        d = sock.recv(1 << 16)
        if not d:
            return b"".join(chunks)
        chunks.append(d)


def handle(conn, text):
    # Descriptors ride on whichever bytes the relay delivers them with, so
    # every read is a recvmsg that keeps them, as real fd-passing servers do.
    fds = []

    def rd(n):
        msg, anc, _, _ = conn.recvmsg(n, socket.CMSG_SPACE(16 * 4))
        for level, typ, data in anc:
            if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                a = array.array("i")
                a.frombytes(data[:len(data) - (len(data) % a.itemsize)])
                fds.extend(a)
        return msg

    try:
        head = b""
        while b"\n" not in head and len(head) < 4096:
            d = rd(1)
            if not d:
                return
            head += d
        if head.startswith(b"GET "):
            while not head.endswith(b"\r\n\r\n"):
                d = rd(1)
                if not d:
                    break
                head += d
            body = text.encode() + b"\n"
            conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
                         + str(len(body)).encode() + b"\r\n\r\n" + body)
        elif head == b"ECHO\n":
            while True:
                d = rd(1 << 16)
                if not d:
                    break
                conn.sendall(d)
        elif head == b"HELLO\n":
            conn.sendall(text.encode() + b"\n")
            time.sleep(0.3)
        elif head == b"FD\n":
            # The descriptor came with the header, or comes with the next byte.
            if not fds:
                rd(1)
            if not fds:
                conn.sendall(b"NOFD\n")
            else:
                off = os.lseek(fds[0], 0, os.SEEK_CUR)
                with os.fdopen(fds.pop(0), "rb") as f:
                    f.seek(0)
                    conn.sendall(b"OFF:%d\nFILE:" % off + f.read())
        conn.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    finally:
        for fd in fds:
            os.close(fd)
        conn.close()


def serve(path, text):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # Bound under another name and renamed once listening: callers wait
    # for the file, and a connect between bind and listen is refused.
    s.bind(path + ".tmp")
    s.listen(64)
    os.rename(path + ".tmp", path)
    while True:
        c, _ = s.accept()
        sys.stderr.write("accepted a connection\n")
        sys.stderr.flush()
        threading.Thread(target=handle, args=(c, text), daemon=True).start()


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(path)
    return s


def echo(path, mib):
    data = os.urandom(mib << 20)
    s = connect(path)
    got = []

    def reader():
        got.append(recv_exact_until_eof(s))

    t = threading.Thread(target=reader)
    t.start()
    s.sendall(b"ECHO\n")
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    t.join(60)
    back = got[0] if got else b""
    if back != data:
        print("echo: sent %d bytes, got %d back, equal prefix %s" %
              (len(data), len(back), back == data[:len(back)]))
        sys.exit(1)
    print("echo: %d bytes intact" % len(data))


def sendfd(path, file):
    s = connect(path)
    fd = os.open(file, os.O_RDONLY)
    os.lseek(fd, 3, os.SEEK_SET)
    s.sendmsg([b"FD\n"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
    os.close(fd)
    back = recv_exact_until_eof(s)
    sys.stdout.write(back.decode(errors="replace"))
    sys.exit(0 if back else 1)


def sendpipe(path):
    s = connect(path)
    s.settimeout(10)
    r, w = os.pipe()
    s.sendmsg([b"FD\n"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [r]))])
    os.close(r)
    try:
        back = recv_exact_until_eof(s)
    except socket.timeout:
        sys.exit(2)
    except ConnectionResetError:
        back = b""
    if back:
        print("reply: %r" % back)
        sys.exit(1)
    sys.exit(0)


def raw(path):
    s = connect(path)
    try:
        s.sendall(b"ECHO\nping")
        s.shutdown(socket.SHUT_WR)
        back = recv_exact_until_eof(s)
    except (ConnectionResetError, BrokenPipeError):
        back = b""
    sys.stdout.write(back.decode(errors="replace"))


def hello(path):
    s = connect(path)
    s.sendall(b"HELLO\n")
    back = recv_exact_until_eof(s)
    s.close()
    sys.stdout.write(back.decode(errors="replace"))


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "serve":
        serve(path, sys.argv[3])
    elif mode == "echo":
        echo(path, int(sys.argv[3]))
    elif mode == "sendfd":
        sendfd(path, sys.argv[3])
    elif mode == "sendpipe":
        sendpipe(path)
    elif mode == "raw":
        raw(path)
    elif mode == "hello":
        hello(path)
    else:
        sys.exit("unix-peer: unknown mode " + mode)


main()
