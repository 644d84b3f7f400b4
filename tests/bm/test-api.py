#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# bm-api, every endpoint and error code, against a real bm-api on loopback
# (and a fake bm-handler plus bm-controller where a machine must move):
# auth, 400 naming the field, bad and oversized bodies, 404, 405, 409 with
# the current state, 202 with an operation URL, pagination, label and state
# filters, Idempotency-Key, /healthz and /metrics.

import json
import os
import random
import socket
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bmenv import Env, TOKEN, check, run  # noqa: E402


def expect(got, status, code=None, what=""):
    s, body = got
    check(s == status, "%s: status %s, expected %s: %s" % (what, s, status, body))
    if code:
        check(isinstance(body, dict) and body.get("code") == code and body.get("message"),
              "%s: body %s, expected code %s with a message" % (what, body, code))
    return body


def main():
    e = Env("api")
    booted = os.path.join(e.dir, "booted")
    e.start_handler(extra=["--boot-ms", "0", "--on-boot",
                           'echo "$BM_HOST $BM_BOOT_DISK $BM_USER_DATA" >> ' + booted])
    e.start_api()

    # -- unauthenticated endpoints, auth --
    s, h, _ = e.http("GET", e.api_url + "/healthz")
    check(s == 200 and h["status"] == "ok" and h["schema_version"] >= 1, "healthz: %s %s" % (s, h))
    expect(e.api("GET", "/v1/machines", token=None), 401, "unauthorized", "no token")
    expect(e.api("GET", "/v1/machines", token="wrong-token-0123456789"), 401, "unauthorized",
           "wrong token")
    expect(e.api("GET", "/v1/machines", token=TOKEN + "x"), 401, "unauthorized", "longer token")
    expect(e.api("GET", "/v1/machines", token=TOKEN[:-1]), 401, "unauthorized", "shorter token")
    expect(e.api("GET", "/v1/nothing"), 404, "not_found", "unknown collection")
    expect(e.api("GET", "/elsewhere"), 404, "not_found", "outside /v1")
    expect(e.api("PATCH", "/v1/machines"), 405, "bad_method", "PATCH machines")

    # -- enroll: validation --
    hurl = e.handler_url
    good = {"id": "a1", "model": "m1", "cpu": 16, "memory_mb": 1024, "gpus": 1,
            "labels": {"rack": "r1", "zone": "z1"}, "handler": hurl + "/h/a1"}
    b = expect(e.api("POST", "/v1/machines", {k: v for k, v in good.items() if k != "id"}), 400,
               "bad_request", "enroll without id")
    check("'id'" in b["message"], "missing id not named: %s" % b)
    b = expect(e.api("POST", "/v1/machines", {**good, "cpu": "many"}), 400, "bad_request", "cpu str")
    check("'cpu'" in b["message"], "bad cpu not named: %s" % b)
    b = expect(e.api("POST", "/v1/machines", {**good, "handler": "ftp://x"}), 400, "bad_request",
               "handler")
    check("'handler'" in b["message"], "bad handler not named: %s" % b)
    for h in ("http://", "https:///x", "http://:80", "http://h st"):
        expect(e.api("POST", "/v1/machines", {**good, "handler": h}), 400, "bad_request",
               "handler %r" % h)
    expect(e.api("POST", "/v1/machines", {**good, "id": "../etc"}), 400, "bad_request", "bad id")
    b = expect(e.api("POST", "/v1/machines", {**good, "labels": {"a": 1}}), 400, "bad_request",
               "label value")
    check("'labels'" in b["message"], "bad labels not named: %s" % b)
    expect(e.api("POST", "/v1/machines", raw=b'{"id": '), 400, "bad_json", "truncated JSON")
    expect(e.api("POST", "/v1/machines", raw=b'{"id": "x"} trailing'), 400, "bad_json", "trailing")
    expect(e.api("POST", "/v1/machines", raw=b'[1, 2]'), 400, "bad_json", "array body")
    expect(e.api("POST", "/v1/machines", raw=b''), 400, "bad_request", "empty body")
    expect(e.api("POST", "/v1/machines", raw=b'[' * 100 + b']' * 100), 400, "bad_json", "deep")
    expect(e.api("POST", "/v1/machines", raw=b'{"id": "' + b'x' * 70000 + b'"}'), 413,
           "too_large", "oversized body")

    # A chunked upload has no Content-Length: the cap holds while it streams.
    port = int(e.api_url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as sk:
        sk.sendall(b"POST /v1/machines HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                   TOKEN.encode() + b"\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"x" * 8192
        try:
            for _ in range(20):
                sk.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
            sk.sendall(b"0\r\n\r\n")
        except OSError:
            pass
        reply = sk.recv(4096)
        check(reply.startswith(b"HTTP/1.1 413"), "chunked oversized body: %r" % reply[:80])

    # -- enroll, get, list, filters, pagination --
    m = expect(e.api("POST", "/v1/machines", good), 201, what="enroll a1")
    check(m["state"] == "enrolling" and m["labels"] == good["labels"], "enrolled: %s" % m)
    expect(e.api("POST", "/v1/machines", good), 409, "exists", "enroll twice")
    # one host's handler is one machine's: another id on it (a trailing slash too) is refused
    for h in (good["handler"], good["handler"] + "/"):
        b = expect(e.api("POST", "/v1/machines", {**good, "id": "a1-again", "handler": h}), 409,
                   "exists", "enroll a1's handler again as %s" % h)
        check("a1" in b["message"] and "handler" in b["message"],
              "409 does not name the machine holding the handler: %s" % b)
    expect(e.api("GET", "/v1/machines/a1-again"), 404, "not_found", "the refused machine")
    for i in range(2, 8):
        e.enroll("a%d" % i, labels={"rack": "r%d" % (i % 2)})
    expect(e.api("GET", "/v1/machines/zz"), 404, "not_found", "unknown machine")
    b = expect(e.api("GET", "/v1/machines?limit=3"), 200, what="page 1")
    check([x["id"] for x in b["items"]] == ["a1", "a2", "a3"] and b["next"] == "a3",
          "page 1: %s" % b)
    b2 = expect(e.api("GET", "/v1/machines?limit=3&after=a3"), 200, what="page 2")
    b3 = expect(e.api("GET", "/v1/machines?limit=3&after=" + b2["next"]), 200, what="page 3")
    ids = [x["id"] for x in b["items"] + b2["items"] + b3["items"]]
    check(ids == ["a%d" % i for i in range(1, 8)] and b3["next"] is None, "pages: %s" % ids)
    b = expect(e.api("GET", "/v1/machines?label=rack=r0"), 200, what="label filter")
    check(sorted(x["id"] for x in b["items"]) == ["a2", "a4", "a6"], "label filter: %s" % b)
    b = expect(e.api("GET", "/v1/machines?label=rack=r1,zone=z1"), 200, what="two labels")
    check([x["id"] for x in b["items"]] == ["a1"], "two labels: %s" % b)
    expect(e.api("GET", "/v1/machines?label=rack"), 400, "bad_request", "label without =")
    b = expect(e.api("GET", "/v1/machines?state=bogus"), 400, "bad_request", "bad state")
    check("'state'" in b["message"], "bad state filter not named: %s" % b)
    expect(e.api("GET", "/v1/machines?limit=0"), 400, "bad_request", "limit 0")
    expect(e.api("GET", "/v1/machines?limit=x"), 400, "bad_request", "limit x")

    # -- the controller makes them available --
    e.start_controller()
    for i in range(1, 8):
        e.wait_state("a%d" % i, "available")
    b = expect(e.api("GET", "/v1/machines?state=available&limit=1000"), 200, what="state filter")
    check(len(b["items"]) == 7, "state filter: %s" % b)

    # -- pools --
    expect(e.api("POST", "/v1/pools", {"match": {}}), 400, "bad_request", "pool without name")
    expect(e.api("POST", "/v1/pools", {"name": "p", "match": {"cpu": "x"}}), 400, "bad_request",
           "pool bad cpu")
    expect(e.api("POST", "/v1/pools", {"name": "p", "template": 3}), 400, "bad_request",
           "pool bad template")
    p = expect(e.api("POST", "/v1/pools", {"name": "r0", "match": {"model": "m1",
                                                                  "labels": {"rack": "r0"}},
                                          "template": {"cpu": 16, "max_pods": 110}}), 201,
               what="pool r0")
    check(p["free"] == 3 and p["in_use"] == 0 and p["template"]["max_pods"] == 110,
          "pool r0: %s" % p)
    expect(e.api("POST", "/v1/pools", {"name": "r0"}), 409, "exists", "pool twice")
    expect(e.api("POST", "/v1/pools", {"name": "none", "match": {"model": "zz"}}), 201,
           what="pool none")
    b = expect(e.api("GET", "/v1/pools"), 200, what="list pools")
    check([x["name"] for x in b["items"]] == ["none", "r0"], "pools: %s" % b)
    expect(e.api("GET", "/v1/pools/nope"), 404, "not_found", "unknown pool")

    # -- instances --
    inst = {"pool": "r0", "image": "debian-12", "disk_gb": 10, "networks": ["prod"],
            "user_data": "join-token"}
    b = expect(e.api("POST", "/v1/instances", {**inst, "disk_gb": None}), 400, "bad_request",
               "no disk_gb")
    check("'disk_gb'" in b["message"], "missing disk_gb not named: %s" % b)
    b = expect(e.api("POST", "/v1/instances", {k: v for k, v in inst.items() if k != "image"}),
               400, "bad_request", "no image")
    check("'image'" in b["message"], "missing image not named: %s" % b)
    for image in ("", "a b", "x\ny"):
        b = expect(e.api("POST", "/v1/instances", {**inst, "image": image}), 400, "bad_request",
                   "image %r" % image)
        check("'image'" in b["message"], "bad image not named: %s" % b)
    expect(e.api("POST", "/v1/instances", {**inst, "networks": "prod"}), 400, "bad_request",
           "networks not a list")
    b = expect(e.api("POST", "/v1/instances", {**inst, "disk_bus": "ide"}), 400, "bad_request",
               "bad disk_bus")
    check("'disk_bus'" in b["message"], "bad disk_bus not named: %s" % b)
    expect(e.api("POST", "/v1/instances", {**inst, "pool": "nope"}), 404, "not_found", "no pool")
    expect(e.api("POST", "/v1/instances", {**inst, "pool": "none"}), 409, "no_capacity",
           "no machine matches")
    s, i1 = e.api("POST", "/v1/instances", {**inst, "id": "web-1"})
    check(s == 202 and i1["operation"].startswith("/v1/operations/") and i1["pool"] == "r0",
          "provision: %s %s" % (s, i1))
    _, op = e.api("GET", i1["operation"])
    check(op["type"] == "provision" and op["instance_id"] == "web-1", "operation: %s" % op)
    expect(e.api("POST", "/v1/instances", {**inst, "id": "web-1"}), 409, "exists", "same id")
    expect(e.api("GET", "/v1/instances/nope"), 404, "not_found", "unknown instance")
    expect(e.api("GET", "/v1/operations/999999"), 404, "not_found", "unknown operation")
    expect(e.api("GET", "/v1/operations/abc"), 404, "not_found", "bad operation id")
    mid = i1["machine"]
    m = e.wait_state(mid, "active")
    check(m["instance_id"] == "web-1" and m["power"] == "on", "active machine: %s" % m)
    _, op = e.api("GET", i1["operation"])
    check(op["state"] == "succeeded" and op["finished_at"] > 0, "provision op: %s" % op)

    # The fake driver ran the on-boot command once, with the host and boot disk.
    e.wait(lambda: os.path.exists(booted), "the on-boot command")
    with open(booted) as f:
        check(f.read().split() == [mid, "web-1-boot", "join-token"],
              "on-boot command environment")

    # delete-only-when-unused, 409 names the state
    b = expect(e.api("DELETE", "/v1/machines/" + mid), 409, "conflict", "delete active")
    check(b["state"] == "active", "409 without the state: %s" % b)
    expect(e.api("DELETE", "/v1/pools/r0"), 409, "conflict", "delete used pool")
    b = expect(e.api("POST", "/v1/machines/%s/maintenance" % mid, {"reason": "x"}), 409,
               "conflict", "maintenance while active")
    check(b["state"] == "active", "409 state: %s" % b)

    # -- hot-plug --
    b = expect(e.api("POST", "/v1/machines/%s/disks" % mid, {}), 400, "bad_request", "no size")
    check("'size_gb'" in b["message"], "missing size_gb not named: %s" % b)
    expect(e.api("POST", "/v1/machines/%s/nics" % mid, {"network": "a/b"}), 400, "bad_request",
           "bad network")
    for mac in ("not-a-mac", "02:00:00:00:00:0g", "02-00-00-00-00-01", "02:00:00:00:000:1"):
        b = expect(e.api("POST", "/v1/machines/%s/nics" % mid, {"network": "n", "mac": mac}),
                   400, "bad_request", "mac %r" % mac)
        check("'mac'" in b["message"], "bad mac not named: %s" % b)
    expect(e.api("POST", "/v1/machines/%s/disks" % mid, {"size_gb": 5, "image": "a b"}), 400,
           "bad_request", "disk image with a space")
    b = expect(e.api("POST", "/v1/machines/%s/disks" % mid, {"size_gb": 5, "bus": "scsi"}), 400,
               "bad_request", "bad bus")
    check("'bus'" in b["message"], "bad bus not named: %s" % b)
    d = expect(e.api("POST", "/v1/machines/%s/disks" % mid, {"size_gb": 5, "bus": "nvme"}), 202,
               what="disk")
    n = expect(e.api("POST", "/v1/machines/%s/nics" % mid, {"network": "backup",
                                                            "mac": "02:00:00:00:00:01"}),
               202, what="nic")
    e.wait(lambda: e.api("GET", d["operation"])[1]["state"] == "succeeded", "disk attach")
    e.wait(lambda: e.api("GET", n["operation"])[1]["state"] == "succeeded", "nic attach")
    inv = e.inventory()[mid]
    check(d["id"] in inv["disks"] and d["id"] in inv["volumes"] and n["id"] in inv["nics"],
          "hot-plugged not in inventory: %s" % inv)
    check(inv["disks"][d["id"]]["bus"] == "nvme" and inv["disks"]["web-1-boot"]["bus"] ==
          "virtio-blk", "disk buses: %s" % inv["disks"])
    b = expect(e.api("GET", "/v1/machines/%s/disks" % mid), 200, what="list disks")
    check(sorted(x["state"] for x in b["items"]) == ["attached", "attached"], "disks: %s" % b)
    b = expect(e.api("GET", "/v1/machines/%s/nics" % mid), 200, what="list nics")
    check(sorted(x["network"] for x in b["items"]) == ["backup", "prod"] and
          all(x["state"] == "attached" for x in b["items"]), "nics: %s" % b)
    expect(e.api("DELETE", "/v1/machines/%s/disks/nope" % mid), 404, "not_found", "no disk")
    expect(e.api("DELETE", "/v1/machines/%s/disks/web-1-boot" % mid), 404, "not_found",
           "boot disk cannot be unplugged")
    dd = expect(e.api("DELETE", "/v1/machines/%s/disks/%s" % (mid, d["id"])), 202, what="unplug")
    nd = expect(e.api("DELETE", "/v1/machines/%s/nics/%s" % (mid, n["id"])), 202, what="unplug n")
    e.wait(lambda: e.api("GET", dd["operation"])[1]["state"] == "succeeded", "disk detach")
    e.wait(lambda: e.api("GET", nd["operation"])[1]["state"] == "succeeded", "nic detach")
    inv = e.inventory()[mid]
    check(d["id"] not in inv["disks"] and d["id"] not in inv["volumes"] and
          n["id"] not in inv["nics"], "unplugged still in inventory: %s" % inv)
    expect(e.api("POST", "/v1/machines/a9/disks", {"size_gb": 1}), 404, "not_found", "no machine")

    # -- power --
    expect(e.api("PUT", "/v1/machines/%s/power" % mid, {"target": "sideways"}), 400,
           "bad_request", "bad power target")
    p = expect(e.api("PUT", "/v1/machines/%s/power" % mid, {"target": "off"}), 202, what="off")
    e.wait(lambda: e.api("GET", p["operation"])[1]["state"] == "succeeded", "power off")
    check(e.inventory()[mid]["power"] == "off" and e.machine(mid)["power"] == "off", "power off")
    p = expect(e.api("PUT", "/v1/machines/%s/power" % mid, {"target": "on"}), 202, what="on")
    e.wait(lambda: e.api("GET", p["operation"])[1]["state"] == "succeeded", "power on")
    free = [x["id"] for x in e.api("GET", "/v1/machines?state=available")[1]["items"]]
    b = expect(e.api("PUT", "/v1/machines/%s/power" % free[0], {"target": "on"}), 409, "conflict",
               "power on a free machine")
    check(b["state"] == "available", "409 state: %s" % b)

    # -- Idempotency-Key --
    key = {"Idempotency-Key": "k-123"}
    s1, r1, h1 = e.http("POST", e.api_url + "/v1/instances", inst,
                        {**key, "Authorization": "Bearer " + TOKEN})
    s2, r2, h2 = e.http("POST", e.api_url + "/v1/instances", inst,
                        {**key, "Authorization": "Bearer " + TOKEN})
    check(s1 == 202 and s2 == 202 and r1 == r2 and h1["Location"] == h2["Location"] ==
          r1["operation"], "replay: %s %s / %s %s" % (s1, r1, s2, r2))
    b = expect(e.api("GET", "/v1/instances"), 200, what="instances")
    check(len(b["items"]) == 2, "idempotent provision made %d instances" % len(b["items"]))
    expect(e.api("POST", "/v1/instances", {**inst, "disk_gb": 11}, headers=key), 422,
           "idempotency_mismatch", "key reused")
    expect(e.api("POST", "/v1/instances", inst, headers={"Idempotency-Key": "k" * 200}), 400,
           "bad_request", "long key")
    # A replayed 201 names the new resource as the first answer did.
    for path, body in (("/v1/machines", {**good, "id": "loc-1", "handler": hurl + "/h/loc-1"}),
                       ("/v1/pools", {"name": "loc-p", "match": {"model": "zz"}})):
        hdrs = {"Idempotency-Key": "loc-" + path, "Authorization": "Bearer " + TOKEN}
        first = e.http("POST", e.api_url + path, body, hdrs)
        again = e.http("POST", e.api_url + path, body, hdrs)
        check(first[0] == again[0] == 201 and first[1] == again[1] and
              first[2]["Location"] == again[2]["Location"] == "%s/%s" % (path, body.get(
                  "id", body.get("name"))),
              "replayed 201 of %s: %s %s / %s %s" % (path, first[0], first[2]["Location"],
                                                     again[0], again[2]["Location"]))

    # -- deprovision --
    d = expect(e.api("DELETE", "/v1/instances/web-1"), 202, what="deprovision")
    d2 = expect(e.api("DELETE", "/v1/instances/web-1"), 202, what="deprovision again")
    check(d["operation"] == d2["operation"], "second DELETE made another operation")
    e.wait_state(mid, "available")
    inv = e.inventory()[mid]
    check(not inv["disks"] and not inv["volumes"] and not inv["nics"] and inv["power"] == "off",
          "deprovisioned host not clean: %s" % inv)
    b = expect(e.api("DELETE", "/v1/instances/web-1"), 409, "conflict", "deprovision deleted")
    check(b["state"] == "deleted", "state: %s" % b)
    _, hist = e.api("GET", "/v1/machines/%s/history" % mid)
    steps = [h["step"] for h in hist["items"]]
    for st in ("verify", "create_disk", "attach_disk", "attach_nics", "set_boot", "power_on",
               "wait_boot", "power_off", "detach_nics", "detach_disks", "delete_disks"):
        check(st in steps, "history lacks %s: %s" % (st, steps))
    b = expect(e.api("GET", "/v1/operations?machine=%s&limit=1000" % mid), 200, what="ops")
    check([o["type"] for o in b["items"]][:2] == ["enroll", "provision"], "ops: %s" % b)
    b = expect(e.api("GET", "/v1/operations?after=x"), 400, "bad_request", "bad after")

    # -- maintenance, delete --
    b = expect(e.api("POST", "/v1/machines/%s/maintenance" % mid, {"reason": "fan"}), 200,
               what="maintenance")
    check(b["state"] == "maintenance" and b["maintenance_reason"] == "fan", "maint: %s" % b)
    expect(e.api("POST", "/v1/machines/%s/recover" % mid), 409, "conflict", "recover non-error")
    # Ending it starts the verify: a 202 with its enroll operation, as recover
    # answers, replayed with the same Location for the same Idempotency-Key.
    hdrs = {"Idempotency-Key": "end-maint", "Authorization": "Bearer " + TOKEN}
    s, b, h = e.http("DELETE", e.api_url + "/v1/machines/%s/maintenance" % mid, headers=hdrs)
    check(s == 202 and list(b) == ["operation"] and h["Location"] == b["operation"] and
          b["operation"].startswith("/v1/operations/"), "end maintenance: %s %s" % (s, b))
    m = e.machine(mid)
    check(m["state"] == "enrolling" and "/v1/operations/%d" % m["operation"] == b["operation"],
          "after maintenance: %s, answer %s" % (m, b))
    _, op = e.api("GET", b["operation"])
    check(op["type"] == "enroll" and op["machine_id"] == mid, "end of maintenance op: %s" % op)
    again = e.http("DELETE", e.api_url + "/v1/machines/%s/maintenance" % mid, headers=hdrs)
    check(again[0] == 202 and again[1] == b and again[2]["Location"] == b["operation"],
          "replayed end of maintenance: %s %s" % (again[0], again[1]))
    e.wait(lambda: e.api("GET", b["operation"])[1]["state"] == "succeeded", "verify")
    e.wait_state(mid, "available")
    b = expect(e.api("DELETE", "/v1/machines/%s/maintenance" % mid), 409, "conflict",
               "end maintenance of an available machine")
    check(b["state"] == "available", "409 state: %s" % b)
    s, _ = e.api("DELETE", "/v1/machines/" + mid)
    check(s == 204, "delete free machine: %s" % s)
    expect(e.api("GET", "/v1/machines/" + mid), 404, "not_found", "deleted machine")
    expect(e.api("DELETE", "/v1/pools/none"), 204, what="delete pool") if False else None
    s, _ = e.api("DELETE", "/v1/pools/none")
    check(s == 204, "delete unused pool: %s" % s)

    # -- hostile bodies: mutated requests never get a 500 and never kill bm-api --
    rnd = random.Random(8)
    seeds = [json.dumps(x).encode() for x in (
        good, inst, {"name": "q", "match": {"model": "m1", "labels": {"a": "b"}}},
        {"size_gb": 5}, {"network": "n", "mac": "02:00:00:00:00:01"}, {"target": "on"})]
    paths = ["/v1/machines", "/v1/instances", "/v1/pools", "/v1/machines/%s/disks" % mid,
             "/v1/machines/%s/nics" % mid, "/v1/machines/%s/power" % mid]
    for n in range(300):
        body = bytearray(rnd.choice(seeds))
        for _ in range(rnd.randint(1, 4)):
            pos = rnd.randrange(len(body))
            op = rnd.random()
            if op < 0.4:
                body[pos] = rnd.randrange(256)
            elif op < 0.7:
                del body[pos]
            else:
                body[pos:pos] = rnd.choice([b"{", b"[", b'"', b"\\u0000", b"1e999", b"-",
                                            b"null", b",", b"\xff"])
        s, b = e.api("PUT" if paths[n % 6].endswith("power") else "POST", paths[n % 6],
                     raw=bytes(body))
        check(s < 500 and isinstance(b, dict) and (s < 400 or "code" in b),
              "mutated body %r on %s: %s %s" % (bytes(body), paths[n % 6], s, b))
    s, h, _ = e.http("GET", e.api_url + "/healthz")
    check(s == 200, "bm-api unhealthy after hostile bodies")

    # -- a database another writer holds past the busy timeout (10 s) --
    # 503 with Retry-After, with and without Idempotency-Key: not a 409
    # that says the machine is missing or a request is in progress.
    db = sqlite3.connect(e.db, isolation_level=None, timeout=30)
    db.execute("BEGIN IMMEDIATE")
    try:
        busy = [e.http("DELETE", e.api_url + "/v1/machines/m1",
                       headers=dict({"Authorization": "Bearer " + TOKEN}, **extra))
                for extra in ({}, {"Idempotency-Key": "busy-1"})]
    finally:
        db.execute("ROLLBACK")
        db.close()
    for s, b, h in busy:
        check(s == 503 and b["code"] == "unavailable" and h["Retry-After"] == "1",
              "request on a locked database: %s %s" % (s, b))

    # -- metrics --
    s, text, hdrs = e.http("GET", e.api_url + "/metrics")
    check(s == 200 and hdrs["Content-Type"].startswith("text/plain"), "metrics: %s" % s)
    check('bm_machines{state="available"}' in text and
          'bm_api_requests_total{code="401"} 4' in text and
          'bm_api_requests_total{code="413"} 2' in text and
          'bm_operation_duration_seconds_count{type="provision"}' in text,
          "metrics content:\n%s" % text)

    e.stop("controller")
    e.stop("api")
    e.stop("handler")


run(main)
