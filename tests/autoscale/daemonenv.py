# SPDX-License-Identifier: Apache-2.0
#
# What test-daemon-drain.py and test-daemon-gone.py share: `autoscale run`
# with the yusur provider against the fake API server (tests/kube) and a
# stand-in bm-api the test serves itself, one case_* function per case,
# each on a fresh cluster.  test-daemon-list.py and tests/kube's
# test-leader-hang.py take the stand-in bm-api's handler and free_port().

import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import time

SRC = os.environ.get("top_srcdir", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("top_builddir", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "kube"))
from kubefake import FakeKube  # noqa: E402


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class BmHandler(http.server.BaseHTTPRequestHandler):
    """A stand-in bm-api's handler: subclasses add do_GET and do_DELETE."""

    def reply(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class DaemonEnv:
    """A fake API server named @prefix@name, a cloud config naming bm-api at
    @bm_port, and autoscale run (start(), with @extra arguments) logging
    into autoscale.log.  The stand-in bm-api, if the test serves one, is
    self.srv (shut down by close())."""

    def __init__(self, prefix, name, bm_port):
        self.kube = FakeKube(name=prefix + name)
        self.srv = None
        self.proc = None
        self.log_path = os.path.join(self.kube.dir, "autoscale.log")
        with open(os.path.join(self.kube.dir, "token"), "w") as f:
            f.write("bm-token\n")
        self.cloud = os.path.join(self.kube.dir, "cloud.conf")
        with open(self.cloud, "w") as f:
            f.write("[yusur]\nurl = http://127.0.0.1:%d\ntoken_file = token\nimage = worker-1\n"
                    % bm_port)

    def start(self, extra=()):
        port = free_port()
        self.url = "http://127.0.0.1:%d" % port
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [os.path.join(BUILD, "autoscale", "autoscale"), "run",
                 "--kubeconfig", self.kube.kubeconfig, "--cloud-provider=yusur",
                 "--cloud-config", self.cloud, "--address", "127.0.0.1:%d" % port,
                 "--scan-interval=1s", "--leader-elect=false"] + list(extra),
                stdout=log, stderr=subprocess.STDOUT, cwd=self.kube.dir)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise Failure("autoscale did not exit on SIGTERM")
            check(rc == 0, "autoscale exited with %s on SIGTERM" % rc)
        self.proc = None

    def close(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.srv:
            self.srv.shutdown()
            self.srv.server_close()
        self.kube.close()

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def node(self, name):
        s, n = self.kube.get("/api/v1/nodes/" + name)
        return n if s == 200 else None

    def wait(self, cond, what, timeout=30):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            check(self.proc is None or self.proc.poll() is None,
                  "autoscale exited with %s" % (self.proc and self.proc.returncode))
            v = cond()
            if v:
                return v
            time.sleep(0.1)
        raise Failure("timed out waiting for " + what)


def run_case(env_class, fn):
    env = env_class(fn.__name__.replace("_", "-"))
    print("--", fn.__doc__.strip().splitlines()[0], flush=True)
    try:
        fn(env)
        env.stop()
    except Exception:
        if os.path.exists(env.log_path):
            tail = "".join(env.log().splitlines(True)[-50:])
            sys.stderr.write("==== autoscale.log (tail)\n%s\n" % tail)
        raise
    finally:
        env.close()


def main(env_class, cases):
    """Run @cases (those named in the arguments, default all); 0."""
    only = sys.argv[1:]
    for fn in cases:
        if not only or fn.__name__ in only:
            run_case(env_class, fn)
    return 0
