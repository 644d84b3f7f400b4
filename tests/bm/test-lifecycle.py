#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# Lifecycle rules of bm-controller that the other scripts do not reach:
# what counts against max_retries while a machine waits for its boot, a
# controller killed in the middle of a reboot, and the operations of an
# enrollment that maintenance interrupts and of the verify after it.

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bmenv import Env, check, run  # noqa: E402


def failed_polls(e, mid):
    _, hist = e.api("GET", "/v1/machines/%s/history" % mid)
    return [h for h in hist["items"] if h["step"] == "wait_boot" and h["result"] != "ok"]


def boot_glitches(e):
    """A handler whose status call fails now and then during a long boot,
    with good answers in between, is not a handler that is down: max_retries
    counts failures in a row, and a successful poll ends the row.  Three
    isolated glitches with max_retries 3 must not fail the boot."""
    e.handler("PUT", "/v1/fake", {"boot_ms": 600000, "faults": {}})
    s, inst = e.api("POST", "/v1/instances", {"pool": "p", "image": "img", "disk_gb": 4})
    check(s == 202, "provision: %s %s" % (s, inst))
    mid = inst["machine"]
    e.wait_state(mid, "booting")
    for k in range(1, 4):
        e.handler("PUT", "/v1/fake", {"faults": {"status": {"count": 1}}})
        e.wait(lambda: len(failed_polls(e, mid)) >= k, "failed status poll %d" % k)
        # Backoff is at most retry_max (400 ms) + 25 %, polls every 50 ms:
        # by now the controller has seen the host answer again.
        time.sleep(1.5)
        m = e.machine(mid)
        check(m["state"] == "booting",
              "after %d isolated status failures (max_retries 3, good polls between) the"
              " machine is %s: %s" % (k, m["state"], m["last_error"]))
    e.handler("PUT", "/v1/fake", {"boot_ms": 0})
    e.wait_state(mid, "active")
    s, _ = e.api("DELETE", "/v1/instances/" + inst["id"])
    check(s == 202, "deprovision: %s" % s)
    e.wait_state(mid, "available")


def boots(e, mid):
    """The power-ons of @mid so far.  The handler runs its --on-boot hook
    without waiting for it, so a count is taken once it has stayed the
    same for 300 ms: a hook started by the last power-on has written."""
    def count():
        try:
            with open(os.path.join(e.dir, "boots")) as f:
                return f.read().split().count(mid)
        except OSError:
            return 0
    last, deadline = count(), time.monotonic() + 10
    while time.monotonic() < deadline:
        time.sleep(0.3)
        now = count()
        if now == last:
            break
        last = now
    return last


def reboot_crash(e):
    """A reboot is two handler calls, off then on.  A controller killed
    while the "on" is in flight replays at most that call (docs/bm.md),
    which is a no-op the second time: the host must not be power-cycled
    again."""
    e.handler("PUT", "/v1/fake", {"boot_ms": 0, "faults": {}})
    s, inst = e.api("POST", "/v1/instances", {"pool": "p", "image": "img", "disk_gb": 4})
    check(s == 202, "provision: %s %s" % (s, inst))
    mid = inst["machine"]
    e.wait_state(mid, "active")
    b0 = boots(e, mid)
    e.handler("PUT", "/v1/fake", {"delay_ms": 1500})
    s, r = e.api("PUT", "/v1/machines/%s/power" % mid, {"target": "reboot"})
    check(s == 202, "reboot: %s %s" % (s, r))
    e.wait(lambda: e.inventory()[mid]["power"] == "off", "the host to go off", timeout=20)
    # The "on" call takes 1.5 s in the handler: kill the controller in it.
    time.sleep(0.5)
    e.kill("controller")
    e.wait(lambda: e.inventory()[mid]["power"] == "on", "the call in flight to end", timeout=20)
    check(boots(e, mid) == b0 + 1, "boots by the reboot before the restart: %d"
          % (boots(e, mid) - b0))
    e.start_controller()
    e.wait(lambda: e.api("GET", r["operation"])[1]["state"] in ("succeeded", "failed"),
           "the reboot operation", timeout=30)
    _, o = e.api("GET", r["operation"])
    check(o["state"] == "succeeded", "reboot: %s" % o)
    check(boots(e, mid) == b0 + 1, "the host was power-cycled %d times for one reboot"
          % (boots(e, mid) - b0))
    e.handler("PUT", "/v1/fake", {"delay_ms": 0})
    e.api("DELETE", "/v1/instances/" + inst["id"])
    e.wait_state(mid, "available")


def maintenance_ends_enroll(e):
    """A machine taken into maintenance while it is enrolling will not be
    verified: its enroll operation must not stay open (bmctl --wait and
    every client polling it would wait for ever)."""
    e.stop("controller")
    m = e.enroll("l9")
    s, op = e.api("GET", "/v1/operations/%d" % m["operation"])
    check(s == 200 and op["type"] == "enroll" and op["state"] == "pending", "enroll op: %s" % op)
    s, mm = e.api("POST", "/v1/machines/l9/maintenance", {"reason": "rack work"})
    check(s == 200 and mm["state"] == "maintenance", "maintenance: %s %s" % (s, mm))
    e.start_controller()
    time.sleep(0.5)
    _, op = e.api("GET", "/v1/operations/%d" % m["operation"])
    check(op["state"] == "failed" and "maintenance" in op["error"],
          "enroll operation of a machine in maintenance: %s" % op)
    s, ans = e.api("DELETE", "/v1/machines/l9/maintenance")
    check(s == 202, "end of maintenance: %s %s" % (s, ans))
    mm = e.machine("l9")
    # The verify that follows is an enroll operation of its own, the one
    # the 202 names; the failed one stays as it finished.
    check(ans["operation"] == "/v1/operations/%d" % mm["operation"],
          "end of maintenance names %s, the machine's operation is %s" % (ans, mm["operation"]))
    check(mm["operation"] != m["operation"], "re-verify under the finished operation: %s" % mm)
    e.wait_state("l9", "available")
    _, again = e.api("GET", ans["operation"])
    check(again["type"] == "enroll" and again["state"] == "succeeded",
          "operation of the verify after maintenance: %s" % again)
    _, op2 = e.api("GET", "/v1/operations/%d" % m["operation"])
    check(op2 == op, "a finished operation changed: %s -> %s" % (op, op2))
    _, hist = e.api("GET", "/v1/machines/l9/history")
    check(hist["items"] and all(h["operation"] == mm["operation"] for h in hist["items"]),
          "verify after maintenance recorded under another operation: %s" % hist)
    s, _ = e.api("DELETE", "/v1/machines/l9")
    check(s == 204, "delete l9: %s" % s)


def main():
    e = Env("lifecycle", {"max_retries": "3", "boot_timeout": "60s"})
    e.start_handler(extra=["--boot-ms", "0", "--on-boot",
                           "echo $BM_HOST >> '%s'" % os.path.join(e.dir, "boots")])
    e.start_api()
    e.start_controller()
    e.enroll("l0")
    e.wait_state("l0", "available")
    e.api("POST", "/v1/pools", {"name": "p", "match": {"model": "m1"}})
    boot_glitches(e)
    reboot_crash(e)
    maintenance_ends_enroll(e)
    e.stop("controller")
    e.stop("api")
    e.stop("handler")


run(main)
