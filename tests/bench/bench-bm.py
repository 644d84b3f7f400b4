#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# BareMetalManager benchmark (not part of make check; `make bench-bm`).
#
# 1. bm-api throughput and latency percentiles under a closed-loop load
#    generator of our own: N client processes, each with one keep-alive
#    HTTP/1.1 connection, issuing requests back to back for a fixed time.
#    Cases: GET /healthz (no auth, no database: the HTTP floor, measured in
#    the same run as the baseline), GET /v1/machines/{id}, GET
#    /v1/machines?limit=100, and POST /v1/instances (a provision: one
#    BEGIN IMMEDIATE transaction claiming a machine).
# 2. Time for bm-controller to provision 500 machines with the fake driver
#    at zero delay: from the 500 POSTs to the last machine active, i.e. the
#    controller's own overhead (6 handler calls and 12 transactions per
#    machine), with max_provisioning raised to 500.
#
# Usage: bench-bm.py [SECONDS-PER-CASE] [CLIENTS] [MACHINES]

import http.client
import json
import multiprocessing
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bm"))
from bmenv import Env, TOKEN  # noqa: E402


def client(args):
    """Requests back to back for @seconds, or @count of them when seconds is None."""
    port, method, path, body_fn, seconds, count, n = args
    conn = http.client.HTTPConnection("127.0.0.1", port)
    hdrs = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
    lat = []
    codes = {}
    start = time.monotonic()
    end = start + (seconds or 0)
    i = 0
    while (time.monotonic() < end) if seconds else (i < count):
        body = body_fn(n, i) if body_fn else None
        t0 = time.monotonic()
        conn.request(method, path, body=body, headers=hdrs)
        r = conn.getresponse()
        r.read()
        lat.append(time.monotonic() - t0)
        codes[r.status] = codes.get(r.status, 0) + 1
        i += 1
    conn.close()
    return lat, codes, start, time.monotonic()


def provision_body(n, i):
    return json.dumps({"pool": "p", "image": "img", "disk_gb": 1})


def load(port, method, path, seconds, clients, body_fn=None, count=0):
    # Workers forked from a forkserver, which has no threads: a worker
    # forked from this process while one of its threads (a Pool's, from the
    # case before) held a lock waited on it forever, which hung a run now
    # and then.
    with multiprocessing.get_context("forkserver").Pool(clients) as pool:
        res = pool.map(client, [(port, method, path, body_fn, seconds, count, n)
                                for n in range(clients)], chunksize=1)
    # The load's window: from the first client's start to the last one's
    # end (CLOCK_MONOTONIC is one clock for every process), so that the
    # workers' own start is not counted.
    seconds = max(r[3] for r in res) - min(r[2] for r in res)
    lat = sorted(x for r in res for x in r[0])
    codes = {}
    for _, c, _, _ in res:
        for k, v in c.items():
            codes[k] = codes.get(k, 0) + v

    def pct(p):
        return lat[min(len(lat) - 1, int(len(lat) * p))] * 1000

    return len(lat) / seconds, pct(0.5), pct(0.99), codes


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5
    clients = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    machines = int(sys.argv[3]) if len(sys.argv) > 3 else 500
    e = Env("bench", {"max_provisioning": str(machines), "workers": "32",
                      "poll_interval": "20ms", "boot_poll": "20ms"})
    e.start_handler(extra=["--boot-ms", "0"])
    e.start_api()
    port = int(e.api_url.rsplit(":", 1)[1])

    # Enroll with the controller off: these stay "enrolling" for the GET cases.
    for i in range(1000):
        e.api("POST", "/v1/machines", {"id": "g%04d" % i, "model": "get", "cpu": 1,
                                       "handler": e.handler_url + "/h/g%04d" % i})
    rows = []
    base = None
    for name, method, path, fn in [
            ("GET /healthz (baseline)", "GET", "/healthz", None),
            ("GET /v1/machines/{id}", "GET", "/v1/machines/g0500", None),
            ("GET /v1/machines?limit=100", "GET", "/v1/machines?limit=100", None)]:
        rps, p50, p99, codes = load(port, method, path, seconds, clients, fn)
        base = base or rps
        rows.append((name, rps, rps / base, p50, p99, codes))

    # Provision: enough free machines that every request in the window finds one.
    e.start_controller(check=False)
    for i in range(machines):
        e.api("POST", "/v1/machines", {"id": "p%04d" % i, "model": "prov", "cpu": 1,
                                       "labels": {"set": "prov"},
                                       "handler": e.handler_url + "/h/p%04d" % i})
    e.wait(lambda: len(e.api("GET", "/v1/machines?state=available&label=set=prov&limit=1000")[1]["items"])
           == machines, "machines available", timeout=300)
    e.stop("controller")
    e.api("POST", "/v1/pools", {"name": "p", "match": {"model": "prov"}})
    # A fixed number of provisions (as many as free machines), so every one
    # succeeds and the case measures the claim, not the 409 path.
    rps, p50, p99, codes = load(port, "POST", "/v1/instances", None, clients, provision_body,
                                count=machines // clients)
    rows.append(("POST /v1/instances (provision)", rps, rps / base, p50, p99, codes))
    # Give the machines back (DELETE every instance), let them settle.
    for inst in e.api("GET", "/v1/instances")[1]["items"]:
        e.api("DELETE", "/v1/instances/" + inst["id"])
    e.start_controller(check=False)
    e.wait(lambda: len(e.api("GET", "/v1/machines?state=available&label=set=prov&limit=1000")[1]["items"])
           == machines, "machines back", timeout=600)

    # All machines queued with the controller stopped, then timed from its
    # start to the last machine active: the controller's own overhead.
    e.stop("controller")
    for i in range(machines):
        s, _ = e.api("POST", "/v1/instances", {"pool": "p", "image": "img", "disk_gb": 1,
                                               "networks": ["n"]})
        assert s == 202, s
    t0 = time.monotonic()
    e.start_controller(check=False)
    e.wait(lambda: len(e.api("GET", "/v1/machines?state=active&label=set=prov&limit=1000")[1]["items"])
           == machines, "all active", timeout=1200)
    t_all = time.monotonic() - t0
    e.stop("controller")
    e.stop("api")
    e.stop("handler")

    print("bm-api, %d clients, %.0f s per case (provision: %d requests)" %
          (clients, seconds, machines // clients * clients))
    print("| case | req/s | ratio | p50 ms | p99 ms | answers |")
    print("|---|---:|---:|---:|---:|---|")
    for name, rps, ratio, p50, p99, codes in rows:
        print("| %s | %.0f | %.2fx | %.2f | %.2f | %s |" % (name, rps, ratio, p50, p99,
                                                            dict(sorted(codes.items()))))
    print()
    print("provision %d queued machines, fake driver at zero delay: all active after %.1f s"
          " (%.2f ms per machine)" % (machines, t_all, t_all * 1000 / machines))


if __name__ == "__main__":
    main()
