#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
#
# A leader whose API server hangs on the Lease stops acting within
# --leader-elect-renew-deadline, before the Lease it can no longer renew
# expires for the other replicas (--leader-elect-lease-duration).
#
# `autoscale run` against the fake API server (and a stand-in bm-api with
# no pools) takes the Lease and writes its status ConfigMap every loop
# (--scan-interval=1s): those writes are how it is seen acting.  Then every
# Lease request hangs (a fault with a delay longer than the client's 30 s
# request timeout).  The daemon must stop writing and exit (status 1, "lost
# the leader lease") within the renew deadline, 10 s, plus 5 s for a slow
# machine; the Lease expired for the others at 15 s.  Before the Lease
# calls were bounded by the renew deadline, a renewal waited 2 x 30 s and
# the loop went on writing for about two minutes.

import http.server
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request

SRC = os.environ.get("top_srcdir", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("top_builddir", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "kube"))
sys.path.insert(0, os.path.join(SRC, "tests", "autoscale"))
from kubefake import FakeKube  # noqa: E402
from daemonenv import BmHandler, free_port  # noqa: E402  (the stand-in bm-api's replies)

RENEW_DEADLINE = 10.0
MARGIN = 5.0
LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/cluster-autoscaler"


class BmApi(BmHandler):
    """GET /v1/pools and /v1/instances: a bm-api with nothing in it."""

    def do_GET(self):
        if self.path.split("?")[0] in ("/v1/pools", "/v1/instances"):
            self.reply(200, {"items": []})
        else:
            self.reply(404, {"error": {"code": "not_found"}})


def fail(msg):
    raise AssertionError(msg)


def metric(url, name):
    try:
        with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


def writes(kube):
    """The daemon's writes but the Lease's: the status ConfigMap, events."""
    return [r for r in kube.requests()
            if r["method"] in ("POST", "PUT", "PATCH", "DELETE") and "/leases" not in r["path"]]


def wait(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            fail("timed out waiting for " + what)
        time.sleep(0.1)


def main():
    exe = os.path.join(BUILD, "autoscale", "autoscale")
    kube = FakeKube(name="leader-hang")
    bm = http.server.ThreadingHTTPServer(("127.0.0.1", 0), BmApi)
    threading.Thread(target=bm.serve_forever, daemon=True).start()
    proc = None
    log_path = os.path.join(kube.dir, "autoscale.log")
    try:
        with open(os.path.join(kube.dir, "token"), "w") as f:
            f.write("bm-token\n")
        cloud = os.path.join(kube.dir, "cloud.conf")
        with open(cloud, "w") as f:
            f.write("[yusur]\nurl = http://127.0.0.1:%d\ntoken_file = token\nimage = worker-1\n"
                    % bm.server_address[1])
        port = free_port()
        url = "http://127.0.0.1:%d" % port
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [exe, "run", "--kubeconfig", kube.kubeconfig, "--cloud-provider=yusur",
                 "--cloud-config", cloud, "--address", "127.0.0.1:%d" % port,
                 "--scan-interval=1s", "--leader-elect",
                 "--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=%ds" % RENEW_DEADLINE,
                 "--leader-elect-retry-period=500ms"],
                stdout=log, stderr=subprocess.STDOUT, cwd=kube.dir)
        wait(lambda: metric(url, "autoscale_leader") == 1, 30, "the daemon to lead")
        wait(lambda: len(writes(kube)) >= 2, 30, "the daemon to write its status (acting)")
        s, lease = kube.get(LEASE)
        if s != 200 or not lease["spec"].get("holderIdentity"):
            fail("lease: %s %s" % (s, lease))

        # Every Lease request now hangs longer than the client's request timeout.
        kube.fault(r"/leases", None, count=-1, delay=300)
        hung = time.monotonic()
        n_writes, last_write = len(writes(kube)), hung
        bound = hung + RENEW_DEADLINE + MARGIN
        while proc.poll() is None and time.monotonic() < bound + 3:
            n = len(writes(kube))
            if n > n_writes:
                n_writes, last_write = n, time.monotonic()
            time.sleep(0.2)
        exited = time.monotonic()
        if proc.poll() is None:
            fail("still running %.1f s after the Lease calls hung (renew deadline %.0f s)"
                 % (exited - hung, RENEW_DEADLINE))
        if last_write > bound:
            fail("still writing %.1f s after the Lease calls hung" % (last_write - hung))
        if exited > bound + 0.5:
            fail("exited only %.1f s after the Lease calls hung" % (exited - hung))
        if proc.returncode != 1:
            fail("exit status %s, want 1 (lost the Lease)" % proc.returncode)
        with open(log_path) as f:
            text = f.read()
        if "lost the leader lease" not in text:
            fail("no 'lost the leader lease' in the log")
        print("stopped acting %.1f s after the Lease calls hung; exited after %.1f s"
              % (last_write - hung, exited - hung))
    except Exception:
        if os.path.exists(log_path):
            with open(log_path) as f:
                sys.stderr.write("==== autoscale.log (tail)\n%s\n" % "".join(f.readlines()[-40:]))
        raise
    finally:
        if proc and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        bm.shutdown()
        bm.server_close()
        kube.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
