#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
#
# bm-handler's exec driver against commands that misbehave (docs/bm.md,
# "exec driver contract"), with [exec] timeout = 2s.  The command is a
# shell script that acts by the request's host: one closes its output and
# sleeps past the timeout (504 at the timeout, not 200 when it is done);
# one answers and exits but leaves a process holding its stdout (200 at
# once, not 504); one times out with a child of its own (the child is
# killed too); failing ones (the message is the output's "error" or
# stderr's first line, even when stdout is not JSON); and outputs just
# under and over the 1 MiB limit (the first whole and in order, the second
# "output too large").

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bmenv import Env, check, free_port, run  # noqa: E402

SCRIPT = r"""#!/bin/sh
d="$BM_TEST_DIR"
req=$(cat)
case "$req" in
*'"host":"ok"'*)
	echo '{"power":"on"}' ;;
*'"host":"closes"'*)
	exec >&- 2>&-
	sleep 6
	echo done >"$d/closes.done" ;;
*'"host":"leaves"'*)
	sleep 30 &
	echo $! >"$d/leaves.pid"
	echo '{"power":"off"}' ;;
*'"host":"hangs"'*)
	sleep 30 &
	echo $! >"$d/hangs.pid"
	wait ;;
*'"host":"fails"'*)
	echo 'this is not JSON'
	echo 'disk on fire' >&2
	echo 'second line' >&2
	exit 3 ;;
*'"host":"fails-json"'*)
	echo '{"error":"volume gone"}'
	echo 'ignored' >&2
	exit 1 ;;
*'"host":"killed"'*)
	kill -9 $$ ;;
*'"host":"near"'*)
	printf '{"x":"'
	seq 1 120000 | tr '\n' ' '
	printf '"}' ;;
*'"host":"big"'*)
	printf '{"x":"'
	head -c 1100000 /dev/zero | tr '\0' a
	printf '"}' ;;
esac
"""


def alive(pid):
    """True while @pid runs (a zombie does not count)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def main():
    e = Env("exec")
    os.environ["BM_TEST_DIR"] = e.dir
    script = os.path.join(e.dir, "dpu-sdk")
    with open(script, "w") as f:
        f.write(SCRIPT)
    os.chmod(script, 0o755)
    conf = os.path.join(e.dir, "handler.conf")
    with open(conf, "w") as f:
        f.write("[handler]\ndriver = exec\n[exec]\ncommand = %s\ntimeout = 2s\n" % script)
    port = free_port()
    e.start("handler", [os.path.join(e.bin, "bm-handler"), "--config", conf,
                        "--listen", "127.0.0.1:%d" % port], "handler.log")
    e.handler_url = "http://127.0.0.1:%d" % port
    e.wait_http(e.handler_url + "/healthz")
    pids = []
    try:
        def status(host):
            t0 = time.time()
            s, r = e.handler("GET", "/h/%s/v1/status" % host)
            return s, r, time.time() - t0

        s, r, t = status("ok")
        check(s == 200 and r["power"] == "on", "ok: %s %s" % (s, r))

        s, r, t = status("closes")
        check(s == 504 and t < 5, "closed its output, slept 6 s: %s after %.1f s %s" % (s, t, r))

        s, r, t = status("leaves")
        pids.append(int(open(os.path.join(e.dir, "leaves.pid")).read()))
        check(s == 200 and r["power"] == "off" and t < 1.5,
              "exited 0, left a process on stdout: %s after %.1f s %s" % (s, t, r))

        s, r, t = status("hangs")
        check(s == 504 and t < 5, "hangs: %s after %.1f s %s" % (s, t, r))
        pids.append(int(open(os.path.join(e.dir, "hangs.pid")).read()))
        e.wait(lambda: not alive(pids[-1]), "the timed-out command's child to be killed", 3)

        s, r, t = status("fails")
        check(s == 500 and r["message"].endswith(": disk on fire"),
              "failed with stderr: %s %s" % (s, r))
        s, r, t = status("fails-json")
        check(s == 500 and r["message"].endswith(": volume gone"),
              "failed with an error field: %s %s" % (s, r))
        s, r, t = status("killed")
        check(s == 500 and "signal 9" in r["message"], "killed: %s %s" % (s, r))

        s, r, t = status("near")
        want = "".join("%d " % i for i in range(1, 120001))
        check(s == 200 and r.get("x") == want,
              "output under 1 MiB: %s %s" % (s, str(r)[:200]))
        s, r, t = status("big")
        check(s == 500 and "output too large" in r["message"],
              "output over 1 MiB: %s %s" % (s, str(r)[:200]))
    finally:
        for pid in pids:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
    e.stop("handler")


run(main)
