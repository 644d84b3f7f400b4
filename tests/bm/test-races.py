#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
#
# An instance with the largest user_data bm-api takes, which bm-handler
# must take too.  Then requests that overtake work bm-controller has in
# flight (the fake handler is slowed down so the controller is inside a
# handler call when the second request comes): a newer power target while
# an older one is being carried out, a detach while the disk is still
# attaching, and a deprovisioning while power and hot-plug requests are
# waiting.  What the operations say must be what the hardware (the fake
# handler's inventory) did, and no operation may stay pending for ever.
# One overtaken while carried out started (started_at); one overtaken
# while waiting never did (started_at 0).

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bmenv import Env, check, run  # noqa: E402


def op(e, url):
    s, o = e.api("GET", url)
    check(s == 200, "GET %s: %s %s" % (url, s, o))
    return o


def finished(e, url, timeout=30):
    return e.wait(lambda: (lambda o: o["state"] in ("succeeded", "failed") and o)(op(e, url)),
                  "operation %s to finish (%s)" % (url, op(e, url)), timeout)


def started(e, url, timeout=30):
    """Wait until the controller has begun operation @url (it is in the handler's call)."""
    return e.wait(lambda: (lambda o: o["state"] != "pending" and o)(op(e, url)),
                  "operation %s to start (%s)" % (url, op(e, url)), timeout)


def main():
    e = Env("races", {"step_timeout": "5s"})
    with open(os.path.join(e.dir, "api.conf"), "w") as f:
        f.write("[api]\nmax_body = 512K\n")
    e.start_handler(extra=["--boot-ms", "0"])
    e.start_api()
    e.start_controller()
    e.enroll("r0")
    e.wait_state("r0", "available")
    e.api("POST", "/v1/pools", {"name": "p", "match": {"model": "m1"}})
    # The largest user_data bm-api takes (64 KiB), of characters JSON
    # escapes (6 bytes each): bm-handler must take the volume's body too.
    s, inst = e.api("POST", "/v1/instances", {"pool": "p", "image": "img", "disk_gb": 4,
                                              "user_data": "\x01" * 65536})
    check(s == 202, "provision: %s %s" % (s, inst))
    m = e.wait(lambda: (lambda m: m["state"] in ("active", "error") and m)(e.machine("r0")),
               "r0 to be provisioned")
    check(m["state"] == "active", "provisioning with 64 KiB of user_data: %s" % m)
    e.handler("PUT", "/v1/fake", {"delay_ms": 1500})

    # Power off, and while the controller is switching it off, on: the
    # newer target is carried out after the older one, and the machine
    # ends on.
    s, off = e.api("PUT", "/v1/machines/r0/power", {"target": "off"})
    check(s == 202, "power off: %s %s" % (s, off))
    o = started(e, off["operation"])
    check(o["state"] == "running", "power off, its call in flight: %s" % o)
    s, on = e.api("PUT", "/v1/machines/r0/power", {"target": "on"})
    check(s == 202, "power on: %s %s" % (s, on))
    o = finished(e, on["operation"])
    check(o["state"] == "succeeded", "power on: %s" % o)
    o = op(e, off["operation"])
    check(o["state"] == "failed" and "superseded" in o["error"], "power off: %s" % o)
    check(0 < o["started_at"] <= o["finished_at"],
          "power off was carried out but did not start: %s" % o)
    check(e.inventory()["r0"]["power"] == "on",
          "power on succeeded but the host is %s" % e.inventory()["r0"]["power"])
    check(e.machine("r0")["power"] == "on", "machine power: %s" % e.machine("r0"))

    # A disk unplugged while it is still attaching: the detach wins, the
    # attach fails as superseded, and neither row nor device stays.
    s, d = e.api("POST", "/v1/machines/r0/disks", {"size_gb": 2})
    check(s == 202, "add disk: %s %s" % (s, d))
    o = started(e, d["operation"])
    check(o["state"] == "running", "attach, its calls in flight: %s" % o)
    s, dd = e.api("DELETE", "/v1/machines/r0/disks/" + d["id"])
    check(s == 202, "remove disk: %s %s" % (s, dd))
    o = finished(e, dd["operation"])
    check(o["state"] == "succeeded", "detach: %s" % o)
    o = op(e, d["operation"])
    check(o["state"] == "failed" and "superseded" in o["error"], "attach: %s" % o)
    check(0 < o["started_at"] <= o["finished_at"],
          "attach was carried out but did not start: %s" % o)
    _, disks = e.api("GET", "/v1/machines/r0/disks")
    check(all(x["id"] != d["id"] for x in disks["items"]), "detached disk still listed: %s" % disks)
    inv = e.inventory()["r0"]
    check(d["id"] not in inv["disks"] and d["id"] not in inv["volumes"],
          "detach succeeded but the host has: %s" % inv)

    # Deprovisioning with a power request, a disk and a NIC waiting (the
    # controller is stopped so none of them starts): every one of them
    # fails as superseded, none stays pending.
    e.handler("PUT", "/v1/fake", {"delay_ms": 0})
    e.stop("controller")
    waiting = []
    for method, path, body in (("PUT", "power", {"target": "reboot"}),
                               ("POST", "disks", {"size_gb": 2}),
                               ("POST", "nics", {"network": "n1"})):
        s, r = e.api(method, "/v1/machines/r0/" + path, body)
        check(s == 202, "%s %s: %s %s" % (method, path, s, r))
        waiting.append(r["operation"])
    s, x = e.api("DELETE", "/v1/instances/" + inst["id"])
    check(s == 202, "deprovision: %s %s" % (s, x))
    e.start_controller()
    e.wait_state("r0", "available")
    for url in waiting:
        o = op(e, url)
        check(o["state"] == "failed" and o["error"] == "superseded by deprovision" and
              o["started_at"] == 0 and o["finished_at"] > 0,
              "%s request left by deprovisioning: %s" % (o["type"], o))
    _, ops = e.api("GET", "/v1/operations?machine=r0&limit=1000")
    left = [o for o in ops["items"] if o["state"] in ("pending", "running")]
    check(not left, "operations pending after deprovisioning: %s" % left)
    inv = e.inventory()["r0"]
    check(not inv["volumes"] and not inv["disks"] and not inv["nics"], "leak: %s" % inv)
    e.stop("controller")
    e.stop("api")
    e.stop("handler")


run(main)
