#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# Retention through the real programs: bm-controller purges history beyond
# history_max_entries, and operations and deleted instances past their age
# (aged here in the database behind the programs' back), while the machine's
# own operation, a recently deleted instance and a live one stay; bm-api's
# /metrics counts what went and the controller logs it.

import os
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bmenv import Env, check, run  # noqa: E402

DAY_MS = 86400 * 1000


def metric(e, name):
    s, text, _ = e.http("GET", e.api_url + "/metrics")
    check(s == 200, "metrics: %s" % s)
    for line in text.splitlines():
        if line.startswith(name + " "):
            return int(line.split()[1])
    check(False, "%s not in /metrics" % name)


def provision(e, iid):
    s, inst = e.api("POST", "/v1/instances", {"pool": "p", "image": "img", "disk_gb": 4,
                                              "id": iid})
    check(s == 202, "provision %s: %s %s" % (iid, s, inst))
    e.wait_state(inst["machine"], "active")
    return inst


def main():
    e = Env("retention", {"history_max_entries": "4", "purge_interval": "200ms",
                          "purge_batch": "2"})
    e.start_handler(extra=["--boot-ms", "0"])
    e.start_api()
    for mid in ("r0", "r1", "r2"):
        e.enroll(mid)
    e.api("POST", "/v1/pools", {"name": "p", "match": {"model": "m1"}})
    e.start_controller()
    for mid in ("r0", "r1", "r2"):
        e.wait_state(mid, "available")
    gone, recent, live = provision(e, "i-gone"), provision(e, "i-recent"), provision(e, "i-live")
    for inst in (gone, recent):
        s, _ = e.api("DELETE", "/v1/instances/" + inst["id"])
        check(s == 202, "deprovision %s: %s" % (inst["id"], s))
        e.wait_state(inst["machine"], "available")
    _, op_gone = e.api("GET", gone["operation"])
    mine = e.machine(gone["machine"])["operation"]

    # Everything 40 days old, but i-recent deleted 20 days ago.
    db = sqlite3.connect(e.db, timeout=10)
    with db:
        db.execute("UPDATE operations SET created_at = created_at - ?,"
                   " finished_at = finished_at - ? WHERE finished_at > 0",
                   (40 * DAY_MS, 40 * DAY_MS))
        db.execute("UPDATE history SET started_at = started_at - ?,"
                   " finished_at = finished_at - ?", (40 * DAY_MS, 40 * DAY_MS))
        db.execute("UPDATE instances SET deleted_at = deleted_at - ? WHERE id = 'i-gone'",
                   (40 * DAY_MS,))
        db.execute("UPDATE instances SET deleted_at = deleted_at - ? WHERE id = 'i-recent'",
                   (20 * DAY_MS,))
    db.close()

    e.wait(lambda: e.api("GET", "/v1/instances/i-gone")[0] == 404, "i-gone purged")
    e.wait(lambda: e.api("GET", op_gone["url"])[0] == 404, "its provision operation purged")
    s, again = e.api("DELETE", "/v1/instances/i-gone")
    check(s == 404, "delete of a purged instance: %s %s" % (s, again))
    s, again = e.api("DELETE", "/v1/instances/i-recent")
    check(s == 409 and again.get("state") == "deleted",
          "a recently deleted instance keeps its tombstone: %s %s" % (s, again))
    s, inst = e.api("GET", "/v1/instances/i-live")
    check(s == 200 and inst["state"] == "active", "live instance: %s %s" % (s, inst))
    s, op = e.api("GET", "/v1/operations/%d" % mine)
    check(s == 200 and op["state"] == "succeeded",
          "the machine's own operation stays, however old: %s %s" % (s, op))
    for mid in ("r0", "r1", "r2"):
        e.wait(lambda: len(e.api("GET", "/v1/machines/%s/history" % mid)[1]["items"]) <= 4,
               "history of %s capped at 4" % mid)
        _, hist = e.api("GET", "/v1/machines/%s/history" % mid)
        check(len(hist["items"]) >= 1, "history of %s emptied: %s" % (mid, hist))
    check(metric(e, 'bm_purged_rows_total{table="instances"}') == 1, "instances metric")
    check(metric(e, 'bm_purged_rows_total{table="operations"}') >= 1, "operations metric")
    check(metric(e, 'bm_purged_rows_total{table="history"}') >= 1, "history metric")
    e.wait(lambda: "purged" in e.log_tail("controller", 400), "purge logged")
    e.stop("controller")
    e.stop("api")
    e.stop("handler")


run(main)
