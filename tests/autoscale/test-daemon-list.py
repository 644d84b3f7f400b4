#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# `autoscale run`'s initial list, scaled down: the fake API server cuts list
# pages to 2 items (--max-page 2), so 5 nodes come in 3 pages joined by
# continue tokens, as 5,000 nodes come in 10 pages of 500.
#
# 1. Every continue token expires (410 Gone): the list is slower than the
#    server's snapshot lives, as a 150,000-pod list can be.  The daemon
#    must fall back to one list without limit, as client-go's pager does,
#    and see all 5 nodes; paging again and again would never end.
# 2. One continue token expires: the list starts over at once and is not
#    a watch error (no autoscale_kube_watch_errors_total).
#
# A stand-in bm-api serves pool "a" with the 5 instances.

import http.server
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

SRC = os.environ.get("top_srcdir", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.abspath(os.environ.get("top_builddir", "."))
sys.path.insert(0, os.path.join(SRC, "tests", "kube"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kubefake import FakeKube  # noqa: E402
from daemonenv import BmHandler, free_port  # noqa: E402

N = 5


def bm_handler():
    pools = {"items": [{"name": "a", "free": 0, "in_use": N,
                        "template": {"cpu": "4", "memory": "8Gi", "min_size": 0, "max_size": 10}}]}
    insts = {"items": [{"id": "a-%d" % i, "pool": "a", "state": "active", "created_at": 1}
                       for i in range(N)]}

    class H(BmHandler):
        def do_GET(self):
            obj = {"/v1/pools": pools, "/v1/instances": insts}.get(self.path)
            self.reply(200 if obj else 404, obj or {"code": "not_found", "message": "no"})
    return H


def metric(url, name):
    with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
        m = re.search(r"^%s (\S+)$" % re.escape(name), r.read().decode(), re.M)
    return float(m.group(1)) if m else None


def run_case(name, fault_count, bm_port):
    with FakeKube(name="as-list-" + name, extra_args=["--max-page", "2"]) as kube:
        for i in range(N):
            kube.add_node("n%d" % i, provider_id="yusur://a/a-%d" % i)
        with open(os.path.join(kube.dir, "token"), "w") as f:
            f.write("bm-token\n")
        with open(os.path.join(kube.dir, "cloud.conf"), "w") as f:
            f.write("[yusur]\nurl = http://127.0.0.1:%d\ntoken_file = token\nimage = w\n" % bm_port)
        kube.fault(r"^/api/v1/nodes$", 410, count=fault_count, query="continue=", reason="Expired",
                   message="The provided continue parameter is too old")
        port = free_port()
        url = "http://127.0.0.1:%d" % port
        log_path = os.path.join(kube.dir, "autoscale.log")
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [os.path.join(BUILD, "autoscale", "autoscale"), "run", "--kubeconfig",
                 kube.kubeconfig, "--cloud-provider=yusur", "--cloud-config", "cloud.conf",
                 "--address", "127.0.0.1:%d" % port, "--scan-interval=1s", "--dry-run",
                 "--leader-elect=false", "--v=4"],
                stdout=log, stderr=subprocess.STDOUT, cwd=kube.dir)
        try:
            ready = None
            end = time.monotonic() + 8
            while time.monotonic() < end and ready != N:
                time.sleep(0.1)
                try:
                    ready = metric(url, 'cluster_autoscaler_nodes_count{state="ready"}')
                except OSError:
                    pass
            if ready != N:
                raise AssertionError("%s: %s ready nodes in the daemon's loop, want %d"
                                     % (name, ready, N))
            werr = metric(url, "autoscale_kube_watch_errors_total")
            if werr != 0:
                raise AssertionError("%s: %s watch errors, want 0" % (name, werr))
            lists = [r for r in kube.requests() if r["method"] == "GET"
                     and r["path"] == "/api/v1/nodes" and "watch=" not in r["query"]]
            return lists
        except Exception:
            with open(log_path) as f:
                sys.stderr.write("==== autoscale.log (tail)\n%s\n" % "".join(f.readlines()[-30:]))
            raise
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                rc = "killed"
            if rc != 0:
                raise AssertionError("%s: autoscale exited with %s on SIGTERM" % (name, rc))


def main():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), bm_handler())
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        print("-- every continue token expires: one list without limit", flush=True)
        lists = run_case("expire-all", -1, srv.server_address[1])
        whole = [r for r in lists if "limit=" not in r["query"]]
        if not whole or whole[0]["code"] != 200:
            raise AssertionError("no whole list after the expired tokens: %s" % lists)
        print("-- one continue token expires: the list starts over at once", flush=True)
        lists = run_case("expire-once", 1, srv.server_address[1])
        if [r["code"] for r in lists[:5]] != [200, 410, 200, 200, 200]:
            raise AssertionError("want pages 200, 410, then 3 pages of 200: %s" % lists)
    finally:
        srv.shutdown()
        srv.server_close()
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
