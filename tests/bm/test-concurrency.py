#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# The last-free-machine race: 100 concurrent provision requests for 10 free
# machines, spread over two bm-api processes on one database, must give
# exactly 10 instances on 10 different machines and 90 clear 409s.

import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bmenv import Env, check, run  # noqa: E402

MACHINES = 10
REQUESTS = 100


def main():
    e = Env("concurrency")
    e.start_handler(extra=["--boot-ms", "0"])
    # -vv: each request's answer is logged, for the failure message below.
    e.start_api(extra=["-vv"])
    url2 = e.start_api("api2", extra=["-vv"])
    e.start_controller()
    for i in range(MACHINES):
        e.enroll("c%02d" % i)
    for i in range(MACHINES):
        e.wait_state("c%02d" % i, "available")
    # Hold the controller back so the claimed machines stay put for the checks.
    e.stop("controller")
    s, b = e.api("POST", "/v1/pools", {"name": "p", "match": {"model": "m1"}})
    check(s == 201, "creating the pool: %s %s" % (s, b))

    barrier = threading.Barrier(REQUESTS)
    results = [None] * REQUESTS

    def provision(n):
        barrier.wait()
        results[n] = e.api("POST", "/v1/instances",
                           {"pool": "p", "image": "img", "disk_gb": 1},
                           url=url2 if n % 2 else None)

    threads = [threading.Thread(target=provision, args=(n,)) for n in range(REQUESTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ok = [b for s, b in results if s == 202]
    conflicts = [b for s, b in results if s == 409]
    others = [(s, b) for s, b in results if s not in (202, 409)]
    if others:
        lines = [l for key in ("api", "api2") for l in e.log_tail(key, 400).splitlines()
                 if "POST /v1/instances -> 202" not in l
                 and "POST /v1/instances -> 409" not in l]
        check(False, "unexpected answers: %s\nthe APIs' logs, less the expected answers:\n%s"
              % (others[:5], "\n".join(lines[-60:])))
    check(len(ok) == MACHINES, "%d provisions succeeded, expected %d" % (len(ok), MACHINES))
    check(all(b["code"] == "no_capacity" and b["message"] for b in conflicts),
          "409 bodies: %s" % conflicts[:3])
    machines = [b["machine"] for b in ok]
    check(len(set(machines)) == MACHINES, "a machine was given twice: %s" % sorted(machines))
    _, lst = e.api("GET", "/v1/machines?state=queued&limit=1000")
    check(len(lst["items"]) == MACHINES, "queued machines: %d" % len(lst["items"]))
    for m in lst["items"]:
        check(m["instance_id"] in [b["id"] for b in ok], "machine %s has a stray instance" % m["id"])
    _, insts = e.api("GET", "/v1/instances")
    check(len(insts["items"]) == MACHINES, "instances recorded: %d" % len(insts["items"]))
    e.stop("api")
    e.stop("api2")
    e.stop("handler")


run(main)
