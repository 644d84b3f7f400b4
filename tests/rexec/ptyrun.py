# SPDX-License-Identifier: Apache-2.0
#
# Run a command on a fresh pty of a given window size, as a terminal
# emulator would, and print what it writes (CR removed, unless --keep-cr).  With --resize,
# once the output contains --after TEXT, set a new window size (the kernel
# sends SIGWINCH to the command), then keep reading until --until TEXT
# shows up or the command exits.  Exits with the command's status
# (128+N for signal N), or 3 on a timeout.
#
#   python3 ptyrun.py ROWS COLS [--after TEXT --resize ROWS COLS]
#                     [--until TEXT] [--timeout S] [--keep-cr] -- CMD [ARG]...

import fcntl
import os
import select
import struct
import sys
import termios
import time


def setsize(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def shown(out, keep_cr):
    text = out.decode(errors="replace")
    return text if keep_cr else text.replace("\r", "")


def main():
    args = sys.argv[1:]
    rows, cols = int(args[0]), int(args[1])
    args = args[2:]
    after = until = None
    resize = None
    timeout = 20.0
    keep_cr = False
    while args and args[0] != "--":
        if args[0] == "--after":
            after = args[1].encode()
            args = args[2:]
        elif args[0] == "--resize":
            resize = (int(args[1]), int(args[2]))
            args = args[3:]
        elif args[0] == "--until":
            until = args[1].encode()
            args = args[2:]
        elif args[0] == "--keep-cr":
            keep_cr = True
            args = args[1:]
        elif args[0] == "--timeout":
            timeout = float(args[1])
            args = args[2:]
        else:
            sys.exit("ptyrun: unknown option " + args[0])
    cmd = args[1:]

    # The size is set before the command starts, so it cannot read an old one.
    master, slave = os.openpty()
    setsize(slave, rows, cols)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(master)
            os.setsid()
            fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
            for fd in (0, 1, 2):
                os.dup2(slave, fd)
            if slave > 2:
                os.close(slave)
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    os.close(slave)
    out = b""
    resized = False
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            sys.stdout.write(shown(out, keep_cr))
            sys.stderr.write("ptyrun: timeout\n")
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            sys.exit(3)
        r, _, _ = select.select([master], [], [], min(left, 0.2))
        if r:
            try:
                data = os.read(master, 65536)
            except OSError:
                data = b""
            if not data:
                break
            out += data
        if resize and not resized and after is not None and after in out:
            setsize(master, resize[0], resize[1])
            resized = True
        if until is not None and until in out:
            break
    sys.stdout.write(shown(out, keep_cr))
    sys.stdout.flush()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sys.exit(128 + os.WTERMSIG(status))
    sys.exit(os.WEXITSTATUS(status))


main()
