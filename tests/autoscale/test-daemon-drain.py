#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# `autoscale run`'s scale-down actuation when things go wrong, against the
# fake API server (tests/kube) and a stand-in bm-api whose pool and
# instances the test holds (no bm-controller, no machines: fast).
#
# Each case starts from a fresh cluster: pool "a" with instances a-1 and
# a-2, nodes n1 (yusur://a/a-1, 3.5 of 4 cpu used) and n2 (yusur://a/a-2)
# with one 100m pod of ReplicaSet "web" that fits on n1.  So n2 is the one
# node RunOnce removes, after --scale-down-unneeded-time=1s.
#
# Each case_* function is one case, its docstring says what CA does there.
# Arguments: names of cases to run (default: all).

import http.server
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemonenv import BmHandler, DaemonEnv, check, main  # noqa: E402

TAINT = "ToBeDeletedByClusterAutoscaler"


class BmState:
    """Pool "a" and its instances; DELETE as bm-api answers it (docs/bm.md)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.instances = {}  # id -> state
        self.deletes = []  # ids DELETEd, in order
        self.delete_status = None  # force this status on DELETE
        self.pool_gone = False  # bm-api lists neither pool "a" nor its instances

    def pools(self):
        if self.pool_gone:
            return {"items": []}
        return {"items": [{"name": "a", "free": 4, "in_use": len(self.instances),
                           "template": {"cpu": "4", "memory": "8Gi", "min_size": 0,
                                        "max_size": 10}}]}

    def list(self):
        if self.pool_gone:
            return {"items": []}
        return {"items": [{"id": i, "pool": "a", "state": s, "created_at": 1}
                          for i, s in self.instances.items() if s != "deleted"]}


def bm_handler(state):
    class H(BmHandler):
        def do_GET(self):
            with state.lock:
                if self.path == "/v1/pools":
                    return self.reply(200, state.pools())
                if self.path == "/v1/instances":
                    return self.reply(200, state.list())
            self.reply(404, {"code": "not_found", "message": "no such path"})

        def do_DELETE(self):
            iid = self.path.rsplit("/", 1)[-1]
            with state.lock:
                state.deletes.append(iid)
                if state.delete_status:
                    return self.reply(state.delete_status, {"code": "internal", "message": "boom"})
                s = state.instances.get(iid)
                if s is None:
                    return self.reply(404, {"code": "not_found", "message": "instance not found"})
                if s == "deleted":
                    return self.reply(409, {"code": "conflict", "state": "deleted",
                                            "message": "instance is deleted"})
                state.instances[iid] = "deleted"
            self.reply(202, {"operation": "/v1/operations/1"})
    return H


class Env(DaemonEnv):
    def __init__(self, name):
        self.bm = BmState()
        self.bm.instances = {"a-1": "active", "a-2": "active"}
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), bm_handler(self.bm))
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        super().__init__("as-drain-", name, srv.server_address[1])
        self.srv = srv
        k = self.kube
        k.add_node("n1", cpu="4", memory="8Gi", provider_id="yusur://a/a-1")
        k.add_node("n2", cpu="4", memory="8Gi", provider_id="yusur://a/a-2")
        k.must(201, "POST", "/apis/apps/v1/namespaces/default/replicasets", {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
        k.add_pod("big", cpu="3500m", memory="1Gi", node="n1", labels={"app": "web"},
                  owner=("ReplicaSet", "web"))

    def start(self, extra=()):
        super().start(["--scale-down-unneeded-time=1s", "--scale-down-delay-after-add=0s",
                       "--scale-down-delay-after-failure=0s",
                       "--scale-down-utilization-threshold=0.5",
                       "--max-graceful-termination-sec=1"] + list(extra))

    def taints(self, name):
        n = self.node(name)
        return [t["key"] for t in (n or {}).get("spec", {}).get("taints") or []]

    def pods(self, ns="default"):
        s, o = self.kube.get("/api/v1/namespaces/%s/pods" % ns)
        return {p["metadata"]["name"]: p for p in o["items"]}

    def events(self, reason):
        s, o = self.kube.get("/api/v1/events")
        return [e for e in o["items"] if e["reason"] == reason]


def add_held_mover(env, **spec):
    """Pod "mover" on n2, of a ReplicaSet, held by a finalizer: evicted, it stays
    (deletionTimestamp set) until release_mover()."""
    env.kube.add_pod("mover", cpu="100m", memory="64Mi", node="n2", labels={"app": "web"},
                     owner=("ReplicaSet", "web"), **spec)
    env.kube.must(200, "PATCH", "/api/v1/namespaces/default/pods/mover",
                  {"metadata": {"finalizers": ["example.com/hold"]}},
                  "application/merge-patch+json")


def release_mover(env):
    env.kube.must(200, "PATCH", "/api/v1/namespaces/default/pods/mover",
                  {"metadata": {"finalizers": None}}, "application/merge-patch+json")


def case_eviction_refused(env):
    """Evictions refused (429) past --max-pod-eviction-time: the node is released.

    CA gives a drain up once its evictions are still refused after
    max-pod-eviction-time: the node gets its taint removed and is
    uncordoned, a ScaleDownFailed event is recorded, and the
    --scale-down-delay-after-failure cooldown (here 1h) keeps every node
    from being tainted again.
    """
    env.kube.add_pod("mover", cpu="100m", memory="64Mi", node="n2", labels={"app": "web"},
                     owner=("ReplicaSet", "web"))
    env.kube.fault(r"/eviction$", 429, count=-1)
    env.start(["--max-pod-eviction-time=3s", "--scale-down-delay-after-failure=1h"])
    env.wait(lambda: TAINT in env.taints("n2"), "n2 to be tainted")
    env.wait(lambda: env.node("n2")["spec"].get("unschedulable"), "n2 to be cordoned", 5)
    env.wait(lambda: TAINT not in env.taints("n2"), "n2 to be untainted", 20)
    env.wait(lambda: not env.node("n2")["spec"].get("unschedulable"), "n2 to be uncordoned", 5)
    # Posted after the untaint and the uncordon: it may come a moment later.
    env.wait(lambda: env.events("ScaleDownFailed"), "a ScaleDownFailed event", 10)
    check("mover" in env.pods(), "the mover pod went")
    time.sleep(4)
    check(TAINT not in env.taints("n2") and TAINT not in env.taints("n1"),
          "a node was tainted again within --scale-down-delay-after-failure")
    check(env.bm.deletes == [], "instances deleted: %s" % env.bm.deletes)


def case_pod_stays(env):
    """An evicted pod that never goes: the node is released, not deleted.

    The eviction is accepted but the pod is held by a finalizer.  CA waits
    for the evicted pods to go for their grace period plus a headroom, then
    gives the drain up: the instance must not be deleted under the pod.
    """
    env.kube.add_pod("stuck", cpu="100m", memory="64Mi", node="n2", labels={"app": "web"},
                     owner=("ReplicaSet", "web"))
    env.kube.must(200, "PATCH", "/api/v1/namespaces/default/pods/stuck",
                  {"metadata": {"finalizers": ["example.com/hold"]}},
                  "application/merge-patch+json")
    env.start(["--node-deletion-delay-timeout=2s", "--scale-down-delay-after-failure=1h"])
    env.wait(lambda: TAINT in env.taints("n2"), "n2 to be tainted")
    env.wait(lambda: env.pods()["stuck"]["metadata"].get("deletionTimestamp"),
             "the stuck pod to be evicted")
    env.wait(lambda: TAINT not in env.taints("n2"), "n2 to be untainted", 20)
    env.wait(lambda: not env.node("n2")["spec"].get("unschedulable"), "n2 to be uncordoned", 5)
    # Posted after the untaint and the uncordon: it may come a moment later.
    env.wait(lambda: env.events("ScaleDownFailed"), "a ScaleDownFailed event", 10)
    check(env.bm.deletes == [], "instances deleted: %s" % env.bm.deletes)


def case_stale_taint(env):
    """A ToBeDeleted taint left by an earlier run is removed at start.

    As CA at start-up: the taint goes and the node is uncordoned.
    """
    env.kube.add_pod("keep", cpu="3", memory="1Gi", node="n2", labels={"app": "web"},
                     owner=("ReplicaSet", "web"))
    env.kube.must(200, "PATCH", "/api/v1/nodes/n2",
                  {"spec": {"unschedulable": True,
                            "taints": [{"key": TAINT, "value": "1700000000",
                                        "effect": "NoSchedule"}]}},
                  "application/merge-patch+json")
    env.start()
    env.wait(lambda: TAINT not in env.taints("n2"), "the stale taint to go", 20)
    env.wait(lambda: not env.node("n2")["spec"].get("unschedulable"), "n2 to be uncordoned", 5)


def case_instance_gone(env):
    """DeleteNodes of an instance someone else deleted meanwhile: the node goes.

    bm-api answers 409 with state "deleted" to a DELETE of an instance
    already deleted (docs/bm.md); the machine is gone, as a 404 would say,
    so the removal is done, not failed.
    """
    add_held_mover(env)
    env.start(["--scale-down-delay-after-failure=1h"])
    env.wait(lambda: TAINT in env.taints("n2"), "n2 to be tainted")
    with env.bm.lock:
        env.bm.instances["a-2"] = "deleted"
    release_mover(env)
    env.wait(lambda: env.node("n2") is None, "node n2 to be deleted", 20)
    check(not env.events("ScaleDownFailed"), "ScaleDownFailed: %s"
          % [e["message"] for e in env.events("ScaleDownFailed")])


def case_grace_uncapped(env):
    """--max-graceful-termination-sec=0: evictions keep the pod's own grace period.

    CA caps a pod's grace period only when the flag is above 0 (its
    evictPod: maxTermination > 0 && termination > maxTermination); an
    Eviction with gracePeriodSeconds 0 would remove the pod from the API
    at once, while its containers still run.
    """
    add_held_mover(env, spec={"terminationGracePeriodSeconds": 7})
    env.start(["--max-graceful-termination-sec=0"])
    pod = env.wait(lambda: env.pods()["mover"]["metadata"].get("deletionTimestamp") and
                   env.pods()["mover"], "the mover pod to be evicted")
    grace = pod["metadata"].get("deletionGracePeriodSeconds")
    check(grace == 7, "evicted with a grace period of %s s, not the pod's 7 s" % grace)


def case_delete_fails(env):
    """DeleteNodes refused by bm-api: the node is released and cools down."""
    env.bm.delete_status = 500
    env.start(["--scale-down-delay-after-failure=1h"])
    env.wait(lambda: env.bm.deletes, "a DELETE of the instance")
    env.wait(lambda: TAINT not in env.taints("n2"), "n2 to be untainted", 20)
    env.wait(lambda: not env.node("n2")["spec"].get("unschedulable"), "n2 to be uncordoned", 5)
    # Posted after the untaint and the uncordon: it may come a moment later.
    env.wait(lambda: env.events("ScaleDownFailed"), "a ScaleDownFailed event", 10)
    n = len(env.bm.deletes)
    time.sleep(4)
    check(len(env.bm.deletes) == n and TAINT not in env.taints("n2"),
          "tried again within --scale-down-delay-after-failure")


def case_node_deleted(env):
    """The Node object deleted by someone else mid-drain: the instance still goes."""
    add_held_mover(env)
    env.start(["--scale-down-delay-after-failure=1h"])
    env.wait(lambda: TAINT in env.taints("n2"), "n2 to be tainted")
    env.kube.delete("/api/v1/nodes/n2")
    release_mover(env)
    env.wait(lambda: "a-2" in env.bm.deletes, "the instance to be deleted", 30)
    check(not env.events("ScaleDownFailed"), "ScaleDownFailed: %s"
          % [e["message"] for e in env.events("ScaleDownFailed")])


def case_node_delete_retried(env):
    """The Node deletion refused after DeleteNodes: it is tried again next loops.

    CA does not delete Node objects (the cloud node controller does);
    autoscale does, and nothing else would, so a refused deletion must not
    leave the Node behind for good.  The instance is deleted once; the
    removal is a success, not a ScaleDownFailed.
    """
    env.kube.fault(r"^/api/v1/nodes/n2$", 403, count=2, method="DELETE")
    env.start(["--scale-down-delay-after-failure=1h"])
    env.wait(lambda: "a-2" in env.bm.deletes, "the instance to be deleted", 30)
    env.wait(lambda: env.node("n2") is None, "node n2 to be deleted", 20)
    n = sum(1 for r in env.kube.requests()
            if r.get("method") == "DELETE" and r.get("path") == "/api/v1/nodes/n2")
    check(n == 3, "%d DELETEs of node n2, not 2 refused and 1 done" % n)
    check(env.bm.deletes == ["a-2"], "instances deleted: %s" % env.bm.deletes)
    check(not env.events("ScaleDownFailed"), "ScaleDownFailed: %s"
          % [e["message"] for e in env.events("ScaleDownFailed")])
    check("trying again each loop" in env.log(), "the failed deletion was not logged")


def case_group_gone(env):
    """The node's group no longer listed mid-drain: the node is released, not deleted.

    With no group there is no DeleteNodes to call, and deleting the Node
    object alone would leave its machine running (its kubelet registering
    it again); CA fails such a removal too.
    """
    add_held_mover(env)
    env.start(["--scale-down-delay-after-failure=1h"])
    env.wait(lambda: TAINT in env.taints("n2"), "n2 to be tainted")
    with env.bm.lock:
        env.bm.pool_gone = True
    time.sleep(2)  # a loop or two: the provider reads bm-api again
    release_mover(env)
    env.wait(lambda: env.node("n2") is None or TAINT not in env.taints("n2"),
             "n2 to be released or deleted", 20)
    check(env.node("n2") is not None, "node n2 deleted without its instance")
    env.wait(lambda: not env.node("n2")["spec"].get("unschedulable"), "n2 to be uncordoned", 5)
    # Posted after the untaint and the uncordon: it may come a moment later.
    env.wait(lambda: env.events("ScaleDownFailed"), "a ScaleDownFailed event", 10)
    check(env.bm.deletes == [], "instances deleted: %s" % env.bm.deletes)


CASES = [case_eviction_refused, case_pod_stays, case_stale_taint, case_instance_gone,
         case_grace_uncapped, case_delete_fails, case_node_deleted, case_node_delete_retried,
         case_group_gone]


if __name__ == "__main__":
    sys.exit(main(Env, CASES))
