#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# Example command for bm-handler's exec driver (docs/bm.md, "exec driver
# contract").  bm-handler runs it as
#
#     bm-exec-example.py ACTION        with the JSON request on stdin
#
# and reads one JSON object from stdout; exit status 0 means success, any
# other status failure, with {"error": "..."} on stdout or a message on
# stderr.  Every action must be idempotent.  A real integration would call
# the DPU vendor's SDK here; this one keeps the host's state in a JSON file
# per host under $BM_EXEC_STATE (default /tmp/bm-exec-state), which is
# enough to run the whole lifecycle against it.

import fcntl
import json
import os
import sys


def main():
    action = sys.argv[1]
    req = json.load(sys.stdin)
    host = req["host"]
    state_dir = os.environ.get("BM_EXEC_STATE", "/tmp/bm-exec-state")
    os.makedirs(state_dir, exist_ok=True)
    path = os.path.join(state_dir, host + ".json")
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(path) as f:
                st = json.load(f)
        except FileNotFoundError:
            st = {"power": "off", "boot_device": "none", "volumes": {}, "disks": {}, "nics": {}}
        rid = req.get("id")
        if action == "power_on":
            st["power"] = "on"
        elif action == "power_off":
            st["power"] = "off"
        elif action == "volume_create":
            st["volumes"].setdefault(rid, {"size_gb": req["size_gb"], "image": req.get("image", "")})
        elif action == "volume_delete":
            if any(d["volume"] == rid for d in st["disks"].values()):
                print(json.dumps({"error": "volume %s is attached" % rid}))
                return 1
            st["volumes"].pop(rid, None)
        elif action == "disk_attach":
            if req["volume"] not in st["volumes"]:
                print(json.dumps({"error": "no volume %s" % req["volume"]}))
                return 1
            st["disks"][rid] = {"volume": req["volume"], "bus": req.get("bus", "virtio-blk")}
        elif action == "disk_detach":
            st["disks"].pop(rid, None)
            if st["boot_device"] == rid:
                st["boot_device"] = "none"
        elif action == "nic_attach":
            st["nics"][rid] = {"network": req.get("network", ""), "mac": req.get("mac", "")}
        elif action == "nic_detach":
            st["nics"].pop(rid, None)
        elif action == "set_boot":
            st["boot_device"] = req["device"]
        elif action != "status":
            print("unknown action " + action, file=sys.stderr)
            return 2
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(st, f)
        os.replace(tmp, path)
    # "booted": this example has no OS to wait for, so a powered-on host with
    # a boot disk counts as booted.
    st["booted"] = st["power"] == "on" and st["boot_device"] in st["disks"]
    print(json.dumps(st))
    return 0


sys.exit(main())
