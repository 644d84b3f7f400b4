#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# Crash safety: 50 provision/deprovision cycles while bm-controller is
# killed with SIGKILL at random moments and restarted.  At the end every
# machine is available or active, the fake handler's inventory matches the
# database exactly (no leaked or doubled volume, disk or NIC, free machines
# powered off), and the controller's invariant check never fired.  Last,
# each daemon is stopped (SIGTERM) at random moments of its start-up, once
# its main() runs: a clean exit every time, not a death by the signal (the
# last restart of the cycles once met the test's final stop that way).
#
# The kills' pace follows the machine's: a controller that takes more than
# 100 ms to start (about 20 ms here; seconds under CPU emulation, as in
# make check-vm) is killed that many times less often, and the waits are
# that much longer, else it would be killed before it had done anything.

import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bmenv import Env, check, run  # noqa: E402

MACHINES = 6
CYCLES = int(os.environ.get("BM_CRASH_CYCLES", "50"))


def lease_count(path):
    try:
        with open(path) as f:
            return f.read().count("holding the controller lease")
    except OSError:
        return 0


def start_timed(e):
    """Start the controller; return how long it took to take its lease."""
    log = os.path.join(e.dir, "controller.log")
    before = lease_count(log)
    t0 = time.time()
    e.start_controller()
    while lease_count(log) == before:
        check(time.time() - t0 < 60 and e.procs["controller"].poll() is None,
              "the controller did not take its lease:\n" + e.log_tail("controller"))
        time.sleep(0.002)
    return time.time() - t0


def main():
    seed = int(os.environ.get("BM_SEED", str(int(time.time()))))
    random.seed(seed)
    print("seed", seed)
    e = Env("crash", {"max_retries": "1000", "retry_max": "100ms", "poll_interval": "20ms"})
    e.start_handler(extra=["--boot-ms", "0", "--delay-ms", "2"])
    e.start_api()
    startup = start_timed(e)
    slow = max(1.0, startup / 0.1)
    print("controller start-up %.3f s: kill intervals and waits x%.1f" % (startup, slow))
    for i in range(MACHINES):
        e.enroll("k%d" % i)
    for i in range(MACHINES):
        e.wait_state("k%d" % i, "available")
    e.api("POST", "/v1/pools", {"name": "p", "match": {"model": "m1"}})

    stop = threading.Event()
    kills = [0]
    lock = threading.Lock()

    def crash():
        with lock:
            e.kill("controller")
            kills[0] += 1
            e.start_controller()

    # Kills at random times in the background, plus one at a random moment
    # after each batch of requests, so every cycle sees at least two however
    # fast or slow the machine is.
    def killer():
        while not stop.is_set():
            time.sleep(random.uniform(0.01, 0.25) * slow)
            if not stop.is_set():
                crash()

    t = threading.Thread(target=killer)
    t.start()
    try:
        for cycle in range(CYCLES):
            insts = []
            n = random.randint(1, MACHINES)
            for _ in range(n):
                req = {"pool": "p", "image": "img", "disk_gb": 2,
                       "networks": ["a", "b"][:random.randint(0, 2)]}
                # Machines left deprovisioning by the previous cycle come back soon.
                s, i = e.wait(lambda: (lambda r: r[0] != 409 and r)(e.api("POST", "/v1/instances", req)),
                              "a free machine", timeout=60 * slow)
                check(s == 202, "cycle %d: provision: %s %s" % (cycle, s, i))
                insts.append(i)
            time.sleep(random.uniform(0, 0.05) * slow)
            crash()
            for i in insts:
                e.wait_state(i["machine"], "active", timeout=60 * slow)
            for i in insts:
                s, r = e.api("DELETE", "/v1/instances/" + i["id"])
                check(s == 202, "cycle %d: deprovision: %s %s" % (cycle, s, r))
            time.sleep(random.uniform(0, 0.05) * slow)
            crash()
            if cycle % 5 == 4:
                continue  # leave some deprovisioning while the next cycle starts
            for i in insts:
                e.wait_state(i["machine"], "available", timeout=60 * slow)
    finally:
        stop.set()
        t.join()
    print("controller killed %d times" % kills[0])
    check(kills[0] >= 2 * CYCLES, "too few kills (%d)" % kills[0])

    # Let the last controller settle everything.
    def settled():
        ms = e.api("GET", "/v1/machines?limit=1000")[1]["items"]
        return all(m["state"] in ("available", "active") for m in ms) and ms
    ms = e.wait(settled, "every machine available or active", timeout=60 * slow)
    disks = {}
    for m in ms:
        check(m["error_count"] == 0, "machine went to error: %s" % m)
        disks[m["id"]] = e.api("GET", "/v1/machines/%s/disks" % m["id"])[1]["items"]
        nics = e.api("GET", "/v1/machines/%s/nics" % m["id"])[1]["items"]
        inv = e.inventory().get(m["id"], {"volumes": {}, "disks": {}, "nics": {}, "power": "off"})
        want = sorted(d["id"] for d in disks[m["id"]])
        check(sorted(inv["volumes"]) == want and sorted(inv["disks"]) == want,
              "machine %s (%s): handler has volumes %s disks %s, database %s" %
              (m["id"], m["state"], sorted(inv["volumes"]), sorted(inv["disks"]), want))
        check(sorted(inv["nics"]) == sorted(n["id"] for n in nics),
              "machine %s: handler NICs %s, database %s" % (m["id"], sorted(inv["nics"]), nics))
        if m["state"] == "available":
            check(not want and inv["power"] == "off", "free machine %s not clean: %s" % (m["id"], inv))
        else:
            check(inv["power"] == "on" and len(want) == 1, "active machine %s: %s" % (m["id"], inv))
    for name in os.listdir(e.dir):
        if name.endswith(".log"):
            with open(os.path.join(e.dir, name)) as f:
                text = f.read()
            check("invariant broken" not in text and "ERROR: AddressSanitizer" not in text,
                  "%s:\n%s" % (name, text[-2000:]))
    e.stop("controller")
    e.stop("api")
    e.stop("handler")

    for i in range(10):
        e.start_controller(key="early", ident="early")
        time.sleep(random.uniform(0, 0.02))
        e.stop("early")
        e.start_api(key="api-early", wait=False)
        time.sleep(random.uniform(0, 0.02))
        e.stop("api-early")
        e.start_handler(key="handler-early", wait=False)
        time.sleep(random.uniform(0, 0.02))
        e.stop("handler-early")
    print("10 stops during start-up of each daemon: clean exits")


run(main)
