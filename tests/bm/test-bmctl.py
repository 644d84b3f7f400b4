#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# bmctl against a real bm-api, bm-controller and fake bm-handler: enroll
# from CSV and JSON inventories, list (table, -o json, filters), get,
# provision --wait, hot-plug, power, watch --once, deprovision --wait,
# maintenance on and off --wait, and the exit statuses of API errors (1)
# and usage errors (2), the latter also without a token file.  Then the
# exec driver: one machine through the whole lifecycle with the example
# script bm/examples/bm-exec-example.py as the "vendor SDK".

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bmenv import Env, check, run, free_port  # noqa: E402


def main():
    e = Env("bmctl")
    e.start_handler(extra=["--boot-ms", "0"])
    e.start_api()
    e.start_controller()
    env = dict(os.environ, BM_URL=e.api_url, BM_TOKEN_FILE=os.path.join(e.dir, "token"))
    bmctl = os.path.join(e.bin, "bmctl")

    def ctl(*args, rc=0):
        p = subprocess.run([bmctl] + list(args), env=env, capture_output=True, text=True,
                           timeout=60)
        check(p.returncode == rc, "bmctl %s: exit %d, expected %d\n%s%s" %
              (" ".join(args), p.returncode, rc, p.stdout, p.stderr))
        return p.stdout, p.stderr

    # Arguments are checked before the token file is read: without one, a
    # usage error still exits 2 with its own message; a request exits 1.
    notoken = dict(env, BM_TOKEN_FILE=os.path.join(e.dir, "no-such-token"))
    for args, msg in ((("maintenance", "M", "on", "--wait"), "is not a REASON"),
                      (("bogus",), "unknown command 'bogus'"),
                      (("get",), "get: expected MACHINE"),
                      (("provision", "p", "--disk-gb", "x"), "is not a size in GB"),
                      (("watch", "--nope"), "watch: unexpected argument"),
                      (("deprovision", "w1", "--now"), "expected INSTANCE [--wait]")):
        p = subprocess.run([bmctl] + list(args), env=notoken, capture_output=True, text=True,
                           timeout=60)
        check(p.returncode == 2 and p.stderr.startswith("bmctl: ") and
              msg in p.stderr.splitlines()[0] and "token" not in p.stderr,
              "bmctl %s without a token file: exit %d\n%s" %
              (" ".join(args), p.returncode, p.stderr))
    two = os.path.join(e.dir, "two.json")
    with open(two, "w") as f:
        json.dump([{"id": "t0"}, {"id": "t1"}], f)
    for args in (("list",), ("enroll", two)):
        p = subprocess.run([bmctl] + list(args), env=notoken, capture_output=True, text=True,
                           timeout=60)
        check(p.returncode == 1 and p.stderr.count("token file: ") == 1,
              "bmctl %s without a token file: exit %d\n%s" %
              (" ".join(args), p.returncode, p.stderr))

    csv = os.path.join(e.dir, "inv.csv")
    with open(csv, "w") as f:
        f.write("id,model,cpu,memory_mb,gpus,labels,handler\n")
        for i in range(3):
            f.write("c%d,m1,32,131072,0,rack=r1;gpu=no,%s/h/c%d\n" % (i, e.handler_url, i))
    js = os.path.join(e.dir, "inv.json")
    with open(js, "w") as f:
        json.dump([{"id": "j0", "model": "m2", "cpu": 8, "labels": {"rack": "r2"},
                    "handler": e.handler_url + "/h/j0"}], f)
    out, _ = ctl("enroll", csv)
    check(out.startswith("ID") and "c2" in out, "enroll table:\n" + out)
    out, _ = ctl("-o", "json", "enroll", js)
    check(json.loads(out)[0]["id"] == "j0", "enroll json: " + out)
    _, err = ctl("enroll", csv, rc=1)
    check("exists" in err, "enroll twice: " + err)
    for m in ("c0", "c1", "c2", "j0"):
        e.wait_state(m, "available")
    out, _ = ctl("-o", "json", "list", "--label", "rack=r1")
    check(sorted(m["id"] for m in json.loads(out)) == ["c0", "c1", "c2"], "list --label: " + out)
    out, _ = ctl("list", "--state", "available")
    check(len(out.strip().splitlines()) == 5, "list table:\n" + out)
    out, _ = ctl("-o", "json", "get", "c1")
    check(json.loads(out)["labels"] == {"rack": "r1", "gpu": "no"}, "get: " + out)
    _, err = ctl("get", "nope", rc=1)
    check("not_found" in err, "get unknown: " + err)
    # Arguments that are not ids never reach a URL: "../pools/p" was pool p.
    e.api("POST", "/v1/pools", {"name": "keep", "match": {"model": "none"}})
    for args in (("delete", "../pools/keep"), ("get", "c1/history"), ("get", "c1?x=1"),
                 ("detach-nic", "c1", "../../pools/keep"), ("operation", "../pools/keep")):
        _, err = ctl(*args, rc=2)
        check("is not an" in err, "bmctl %s: %s" % (" ".join(args), err))
    s, _ = e.api("GET", "/v1/pools/keep")
    check(s == 200, "bmctl deleted pool keep through a machine id")
    e.api("DELETE", "/v1/pools/keep")
    pool = os.path.join(e.dir, "pool.json")
    with open(pool, "w") as f:
        json.dump({"name": "big", "match": {"cpu": 32}, "template": {"cpu": 32}}, f)
    out, _ = ctl("pool-create", pool)
    check("big" in out and "3" in out, "pool-create: " + out)
    out, _ = ctl("-o", "json", "provision", "big", "--image", "deb", "--disk-gb", "8",
                 "--network", "prod", "--id", "w1", "--wait")
    inst = json.loads(out)
    check(inst["id"] == "w1", "provision: " + out)
    mid = inst["machine"]
    check(e.machine(mid)["state"] == "active", "not active after --wait")
    ctl("attach-disk", mid, "4")
    ctl("attach-nic", mid, "backup")
    e.wait(lambda: len([d for d in e.api("GET", "/v1/machines/%s/disks" % mid)[1]["items"]
                        if d["state"] == "attached"]) == 2, "data disk attached")
    out, _ = ctl("-o", "json", "power", mid, "reboot")
    check(json.loads(out)["operation"].startswith("/v1/operations/"), "power: " + out)
    out, _ = ctl("watch", "--once", "--machine", mid)
    check("provision" in out and "attach_disk" in out, "watch:\n" + out)
    out, _ = ctl("instances")
    check("w1" in out, "instances:\n" + out)
    ctl("history", mid)
    ctl("deprovision", "w1", "--wait")
    check(e.machine(mid)["state"] == "available", "not available after deprovision --wait")
    # maintenance: on shows the machine; off starts the verify (an enroll
    # operation), which --wait waits for as provision --wait does.
    out, _ = ctl("maintenance", mid, "on", "fan")
    check(out.startswith("ID") and "maintenance" in out, "maintenance on:\n" + out)
    check(e.machine(mid)["maintenance_reason"] == "fan", "maintenance reason")
    out, _ = ctl("-o", "json", "maintenance", mid, "off", "--wait")
    op = json.loads(out)["operation"]
    m = e.machine(mid)
    check(m["state"] == "available" and op == "/v1/operations/%d" % m["operation"] and
          e.api("GET", op)[1]["state"] == "succeeded",
          "maintenance off --wait: %s, machine %s" % (out, m))
    ctl("maintenance", mid, "on")
    out, _ = ctl("maintenance", mid, "off")
    check(out.startswith("operation /v1/operations/"), "maintenance off: " + out)
    e.wait_state(mid, "available")
    # A verify that fails: --wait exits 1 with the operation's error.
    ctl("maintenance", mid, "on")
    e.handler("PUT", "/v1/fake", {"faults": {"power_off": {"count": -1}}})
    _, err = ctl("maintenance", mid, "off", "--wait", rc=1)
    check("failed" in err and "power_off" in err, "maintenance off --wait, verify fails: " + err)
    check(e.machine(mid)["state"] == "error", "machine after its verify failed")
    e.handler("PUT", "/v1/fake", {"faults": {}})
    ctl("recover", mid)
    e.wait_state(mid, "available")
    for args in (("maintenance", mid, "off", "why"), ("maintenance", mid, "on", "a", "b"),
                 ("maintenance", mid, "of"), ("maintenance", mid),
                 ("maintenance", mid, "on", "--wait")):
        ctl(*args, rc=2)
    check(e.machine(mid)["state"] == "available", "maintenance on --wait refused, machine left alone")
    ctl("delete", "j0")
    ctl("bogus", rc=2)
    ctl("get", rc=2)
    ctl("-o", "yaml", "list", rc=2)
    ctl("provision", "big", "--disk-gb", "x", rc=2)
    # --wait gives up after --wait-timeout when nobody carries the operation out
    ctl("--wait-timeout", "soon", "list", rc=2)
    e.stop("controller")
    t0 = time.monotonic()
    out, err = ctl("-o", "json", "--wait-timeout", "2s", "provision", "big", "--image", "deb",
                   "--disk-gb", "8", "--id", "w2", "--wait", rc=1)
    check("still pending after --wait-timeout" in err and time.monotonic() - t0 < 30,
          "provision --wait without a controller: %s" % err)
    free = [m["id"] for m in e.api("GET", "/v1/machines?state=available")[1]["items"]]
    ctl("maintenance", free[0], "on")
    t0 = time.monotonic()
    _, err = ctl("--wait-timeout", "2s", "maintenance", free[0], "off", "--wait", rc=1)
    check("still pending after --wait-timeout" in err and time.monotonic() - t0 < 30,
          "maintenance off --wait without a controller: %s" % err)
    e.start_controller()
    e.api("DELETE", "/v1/instances/w2")
    e.wait_state(json.loads(out)["machine"], "available")
    e.wait_state(free[0], "available")

    # The exec driver with the example script.
    port = free_port()
    script = os.path.join(os.environ.get("top_srcdir", os.path.join(e.bin, "..")),
                          "bm", "examples", "bm-exec-example.py")
    os.environ["BM_EXEC_STATE"] = os.path.join(e.dir, "exec-state")
    e.start("exec", [os.path.join(e.bin, "bm-handler"), "--driver", "exec", "--exec", script,
                     "--listen", "127.0.0.1:%d" % port], "exec.log")
    e.exec_url = "http://127.0.0.1:%d" % port
    e.wait_http(e.exec_url + "/healthz")
    s, st = e.handler("GET", "/h/x1/v1/status", key="exec")
    check(s == 200 and st["power"] == "off", "exec status: %s %s" % (s, st))
    s, err = e.handler("PUT", "/h/x1/v1/disks/d1", {"volume": "none"}, key="exec")
    check(s == 500 and "no volume" in err["message"], "exec failure: %s %s" % (s, err))
    e.enroll("x1", model="exec", handler_key="exec")
    e.wait_state("x1", "available")
    e.api("POST", "/v1/pools", {"name": "ex", "match": {"model": "exec"}})
    s, i = e.api("POST", "/v1/instances", {"pool": "ex", "image": "img", "disk_gb": 1,
                                           "networks": ["n"]})
    e.wait_state("x1", "active")
    with open(os.path.join(os.environ["BM_EXEC_STATE"], "x1.json")) as f:
        st = json.load(f)
    check(st["power"] == "on" and len(st["disks"]) == 1 and len(st["nics"]) == 1,
          "exec host state: %s" % st)
    e.api("DELETE", "/v1/instances/" + i["id"])
    e.wait_state("x1", "available")
    with open(os.path.join(os.environ["BM_EXEC_STATE"], "x1.json")) as f:
        st = json.load(f)
    check(st["power"] == "off" and not st["disks"] and not st["volumes"] and not st["nics"],
          "exec host after deprovision: %s" % st)
    e.stop("controller")
    e.stop("exec")
    e.stop("api")
    e.stop("handler")


run(main)
