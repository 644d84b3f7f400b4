#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# The fake bm-handler's --on-boot command in the autoscaler's end-to-end
# test: it stands in for a booted OS joining the cluster.  After
# REGISTER_DELAY seconds it creates a Node named after the host ($BM_HOST)
# with the spec.providerID and pool given in the instance's user-data
# ($BM_USER_DATA, a JSON object rendered from the provider's template) and
# the capacity of its pool (the JSON file $REGISTER_POOLS).  The API server
# comes from $KUBE_URL, $KUBE_TOKEN and $KUBE_CA.

import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request


def main():
    ud = json.loads(os.environ["BM_USER_DATA"])
    with open(os.environ["REGISTER_POOLS"]) as f:
        pool = json.load(f)[ud["pool"]]
    time.sleep(float(os.environ.get("REGISTER_DELAY", "0.5")))
    name = os.environ["BM_HOST"]
    res = {"cpu": pool["cpu"], "memory": pool["memory"], "pods": "110"}
    labels = dict(pool.get("labels", {}), **{"kubernetes.io/hostname": name,
                                            "autoscale.yusur.io/pool": ud["pool"]})
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels,
                         "annotations": {"join-token": ud.get("token", "")}},
            "spec": {"providerID": ud["provider_id"]},
            "status": {"capacity": res, "allocatable": dict(res),
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}
    ctx = None
    if os.environ.get("KUBE_CA"):
        ctx = ssl.create_default_context(cafile=os.environ["KUBE_CA"])
    for _ in range(50):
        req = urllib.request.Request(os.environ["KUBE_URL"] + "/api/v1/nodes",
                                     data=json.dumps(node).encode(), method="POST")
        req.add_header("Content-Type", "application/json")
        req.add_header("Authorization", "Bearer " + os.environ["KUBE_TOKEN"])
        try:
            urllib.request.urlopen(req, context=ctx, timeout=10).read()
            return 0
        except urllib.error.HTTPError as e:
            if e.code == 409:
                return 0
        except OSError:
            pass
        time.sleep(0.2)
    print("register-node: could not register %s" % name, file=sys.stderr)
    return 1


sys.exit(main())
