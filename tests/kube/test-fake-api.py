#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# API semantics of tests/kube/fake-apiserver.py that the autoscaler's client
# relies on, checked over raw HTTP: Status errors (404, 409 AlreadyExists,
# 409 Conflict on a stale resourceVersion, 422), pagination, selectors,
# watch ordering and replay, 410 Expired after compaction, patches, graceful
# pod deletion, eviction against PDBs (429/404/201), the scheduler (binding,
# PodScheduled=False/Unschedulable), TLS with token and client-certificate
# authentication, fault injection, and a restart that keeps the state.

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kubefake import FakeKube  # noqa: E402

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL: " + what)
    return cond


def status_is(resp, code, reason):
    c, obj = resp
    ok = c == code and isinstance(obj, dict) and obj.get("kind") == "Status" and obj.get("code") == code \
        and obj.get("reason") == reason and obj.get("status") == "Failure"
    return check(ok, "want %d %s, got %d %s" % (code, reason, c, json.dumps(obj)[:300]))


def events(stream, n, timeout=10):
    out = []
    deadline = time.time() + timeout
    while len(out) < n and time.time() < deadline:
        line = stream.readline()
        if not line:
            break
        ev = json.loads(line)
        if ev["type"] != "BOOKMARK":
            out.append(ev)
    return out


def test_discovery(k):
    c, v = k.get("/api")
    check(c == 200 and v["kind"] == "APIVersions" and v["versions"] == ["v1"], "/api")
    c, g = k.get("/apis")
    names = {x["name"]: x["preferredVersion"]["groupVersion"] for x in g["groups"]}
    check(names.get("policy") == "policy/v1" and names.get("apps") == "apps/v1"
          and names.get("coordination.k8s.io") == "coordination.k8s.io/v1", "/apis groups: %s" % names)
    c, rl = k.get("/api/v1")
    by = {r["name"]: r for r in rl["resources"]}
    ev = by.get("pods/eviction", {})
    check(ev.get("group") == "policy" and ev.get("version") == "v1" and ev.get("kind") == "Eviction",
          "pods/eviction in discovery: %s" % ev)
    check(by["nodes"]["namespaced"] is False and by["pods"]["namespaced"] is True
          and "watch" in by["pods"]["verbs"] and by["pods"]["shortNames"] == ["po"], "APIResourceList pods/nodes")
    c, rl = k.get("/apis/policy/v1")
    check(c == 200 and rl["resources"][0]["kind"] == "PodDisruptionBudget", "/apis/policy/v1")
    check(k.get("/apis/nope/v1")[0] == 404, "unknown group 404")
    c, ver = k.get("/version")
    check(c == 200 and ver["major"] == "1", "/version")
    for p in ("/healthz", "/livez", "/readyz"):
        check(k.get(p) == (200, "ok"), p)


def test_crud(k):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "1"}}
    c, obj = k.post("/api/v1/namespaces/default/configmaps", cm)
    check(c == 201 and obj["metadata"]["uid"] and obj["metadata"]["namespace"] == "default", "create 201")
    rv1 = int(obj["metadata"]["resourceVersion"])
    status_is(k.post("/api/v1/namespaces/default/configmaps", cm), 409, "AlreadyExists")
    c, st = k.get("/api/v1/namespaces/default/configmaps/nope")
    status_is((c, st), 404, "NotFound")
    check(st.get("details") == {"name": "nope", "kind": "configmaps"} and st["message"] == 'configmaps "nope" not found',
          "NotFound details: %s" % st)
    c, st = k.get("/apis/apps/v1/namespaces/default/deployments/nope")
    check(st.get("message") == 'deployments.apps "nope" not found' and st["details"].get("group") == "apps",
          "group-qualified NotFound: %s" % st)
    status_is(k.post("/api/v1/namespaces/nosuch/configmaps", cm), 404, "NotFound")
    status_is(k.post("/api/v1/namespaces/default/configmaps",
                     {"metadata": {"name": "Bad_Name"}}), 422, "Invalid")
    bad = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "badq"},
           "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "two"}}}]}}
    c, st = k.post("/api/v1/namespaces/default/pods", bad)
    status_is((c, st), 400, "BadRequest")
    check("quantities must match" in st.get("message", ""), "a bad quantity is refused: %s" % st.get("message"))

    # optimistic concurrency
    obj["data"]["x"] = "2"
    c, upd = k.put("/api/v1/namespaces/default/configmaps/a", obj)
    check(c == 200 and int(upd["metadata"]["resourceVersion"]) > rv1, "update bumps resourceVersion")
    check(upd["metadata"]["uid"] == obj["metadata"]["uid"], "update keeps uid")
    obj["data"]["x"] = "3"  # still carries the first resourceVersion
    c, st = k.put("/api/v1/namespaces/default/configmaps/a", obj)
    status_is((c, st), 409, "Conflict")
    check("the object has been modified" in st.get("message", ""), "Conflict message")
    c, same = k.put("/api/v1/namespaces/default/configmaps/a", upd)
    check(same["metadata"]["resourceVersion"] == upd["metadata"]["resourceVersion"], "no-op update keeps RV")
    status_is(k.put("/api/v1/namespaces/default/configmaps/zz", dict(obj, metadata={"name": "zz"})), 404, "NotFound")

    # leases: two candidates race with the same resourceVersion, one wins
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "ca", "namespace": "kube-system"}, "spec": {"holderIdentity": "a"}}
    c, l0 = k.post("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", lease)
    for who, want in (("b", 200), ("c", 409)):
        l1 = json.loads(json.dumps(l0))
        l1["spec"]["holderIdentity"] = who
        c, _ = k.put("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/ca", l1)
        check(c == want, "lease takeover by %s: %d" % (who, c))

    # patches
    p = "/api/v1/namespaces/default/configmaps/a"
    c, o = k.patch(p, {"metadata": {"labels": {"l": "v"}}, "data": {"x": None, "y": "2"}})
    check(c == 200 and o["metadata"]["labels"] == {"l": "v"} and o["data"] == {"y": "2"}, "merge patch: %s" % o)
    c, o = k.patch(p, [{"op": "add", "path": "/metadata/annotations", "value": {"a/b": "c"}}],
                   "application/json-patch+json")
    check(c == 200 and o["metadata"]["annotations"] == {"a/b": "c"}, "json patch")
    c, o = k.patch(p, [{"op": "test", "path": "/data/y", "value": "nope"}], "application/json-patch+json")
    check(c == 422, "json patch test op fails with 422: %d" % c)
    c, o = k.patch(p, {"metadata": {"resourceVersion": "1"}, "data": {"z": "1"}})
    status_is((c, o), 409, "Conflict")
    status_is(k.patch(p, {}, "application/apply-patch+yaml"), 415, "UnsupportedMediaType")

    c, o = k.delete(p)
    check(c == 200 and o["metadata"]["name"] == "a", "delete returns the object")
    status_is(k.delete(p), 404, "NotFound")


def test_list_pagination(k):
    for i in range(7):
        k.must(201, "POST", "/api/v1/namespaces/kube-public/configmaps",
               {"metadata": {"name": "cm%d" % i, "labels": {"parity": "even" if i % 2 == 0 else "odd"}}})
    c, first = k.get("/api/v1/namespaces/kube-public/configmaps?limit=3")
    check(first["kind"] == "ConfigMapList" and len(first["items"]) == 3 and first["metadata"].get("continue")
          and first["metadata"].get("remainingItemCount") == 4, "first page: %s" % first["metadata"])
    check("kind" not in first["items"][0], "list items carry no kind, like the real server")
    names = [i["metadata"]["name"] for i in first["items"]]
    tok = first["metadata"]["continue"]
    while tok:
        c, page = k.get("/api/v1/namespaces/kube-public/configmaps?limit=3&continue=" + tok)
        check(page["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"], "pages share the RV")
        names += [i["metadata"]["name"] for i in page["items"]]
        tok = page["metadata"].get("continue")
    check(names == ["cm%d" % i for i in range(7)], "pages cover the list once in order: %s" % names)
    c, sel = k.get("/api/v1/namespaces/kube-public/configmaps?labelSelector=parity%3Dodd")
    check([i["metadata"]["name"] for i in sel["items"]] == ["cm1", "cm3", "cm5"], "labelSelector =")
    c, sel = k.get("/api/v1/namespaces/kube-public/configmaps?labelSelector=parity+notin+(odd),parity")
    check(len(sel["items"]) == 4, "labelSelector notin + exists")
    c, sel = k.get("/api/v1/configmaps?fieldSelector=metadata.name%3Dcm2")
    check([i["metadata"]["name"] for i in sel["items"]] == ["cm2"], "fieldSelector metadata.name across namespaces")
    status_is(k.get("/api/v1/configmaps?fieldSelector=data.x%3D1"), 400, "BadRequest")
    k.must(200, "DELETE", "/api/v1/namespaces/kube-public/configmaps/cm6")
    k.compact()
    status_is(k.get("/api/v1/namespaces/kube-public/configmaps?limit=3&continue=" + first["metadata"]["continue"]),
              410, "Expired")


def test_watch(k):
    base = "/api/v1/namespaces/default/configmaps"
    c, lst = k.get(base)
    rv = lst["metadata"]["resourceVersion"]
    k.must(201, "POST", base, {"metadata": {"name": "w1"}})
    k.must(200, "PATCH", base + "/w1", {"data": {"a": "b"}}, "application/merge-patch+json")
    k.must(200, "DELETE", base + "/w1")
    # a watch from the list's RV replays what happened since, in order
    with k.watch(base + "?watch=1&resourceVersion=" + rv) as s:
        evs = events(s, 3)
    check([e["type"] for e in evs] == ["ADDED", "MODIFIED", "DELETED"], "replay order: %s" % [e["type"] for e in evs])
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in evs]
    check(rvs == sorted(rvs) and len(set(rvs)) == 3 and rvs[0] > int(rv), "increasing RVs: %s" % rvs)
    check(evs[0]["object"]["kind"] == "ConfigMap" and evs[1]["object"]["data"] == {"a": "b"}, "event objects")

    # live events, filtered by label, and the legacy /watch/ path
    with k.watch("/api/v1/watch/namespaces/default/configmaps?labelSelector=w%3Dyes&resourceVersion="
                 + str(rvs[-1])) as s:
        k.must(201, "POST", base, {"metadata": {"name": "w2"}})
        k.must(201, "POST", base, {"metadata": {"name": "w3", "labels": {"w": "yes"}}})
        k.must(200, "PATCH", base + "/w2", {"metadata": {"labels": {"w": "yes"}}}, "application/merge-patch+json")
        k.must(200, "PATCH", base + "/w3", {"metadata": {"labels": {"w": "no"}}}, "application/merge-patch+json")
        evs = events(s, 3)
    got = [(e["type"], e["object"]["metadata"]["name"]) for e in evs]
    check(got == [("ADDED", "w3"), ("ADDED", "w2"), ("DELETED", "w3")],
          "objects entering/leaving a selector are ADDED/DELETED: %s" % got)

    # without a resourceVersion: the current state as ADDED, then bookmarks if asked
    with k.watch(base + "?watch=true&allowWatchBookmarks=true&sendInitialEvents=true"
                 "&resourceVersionMatch=NotOlderThan") as s:
        line = json.loads(s.readline())
        check(line["type"] == "ADDED", "initial ADDED")
        while line["type"] != "BOOKMARK":
            line = json.loads(s.readline())
        check(line["object"]["metadata"].get("annotations", {}).get("k8s.io/initial-events-end") == "true",
              "initial-events-end bookmark: %s" % line)

    # once the history moved on: ERROR 410 Expired in the stream
    k.compact()
    with k.watch(base + "?watch=1&resourceVersion=" + rv) as s:
        ev = json.loads(s.readline())
    check(ev["type"] == "ERROR" and ev["object"]["code"] == 410 and ev["object"]["reason"] == "Expired"
          and ev["object"]["kind"] == "Status", "410 Expired on an old watch RV: %s" % ev)
    # timeoutSeconds ends the stream cleanly
    t0 = time.time()
    with k.watch(base + "?watch=1&timeoutSeconds=1&resourceVersion=" + str(k.compact())) as s:
        check(s.read() == b"" and time.time() - t0 < 5, "timeoutSeconds closes the watch")


def node_of(k, name):
    return k.get("/api/v1/namespaces/default/pods/" + name)[1]["spec"].get("nodeName")


def pod_cond(k, name):
    p = k.get("/api/v1/namespaces/default/pods/" + name)[1]
    return next((c for c in p["status"].get("conditions") or [] if c["type"] == "PodScheduled"), {})


def test_scheduler(k):
    k.add_node("small", cpu="2", memory="4Gi", labels={"pool": "cpu"})
    k.add_node("gpu", cpu="8", memory="16Gi", labels={"pool": "gpu"},
               taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])
    k.add_node("down", cpu="64", memory="64Gi", ready=False)
    k.add_pod("s1", cpu="1500m", memory="1Gi")
    k.wait(lambda: node_of(k, "s1"), what="s1 bound")
    check(node_of(k, "s1") == "small", "s1 on the only schedulable node")
    k.wait(lambda: k.get("/api/v1/namespaces/default/pods/s1")[1]["status"]["phase"] == "Running", what="s1 runs")
    k.add_pod("s2", cpu="1500m", memory="1Gi")
    k.wait(lambda: pod_cond(k, "s2").get("reason") == "Unschedulable", what="s2 Unschedulable")
    c = pod_cond(k, "s2")
    check(c["status"] == "False" and "0/3 nodes are available" in c["message"] and "Insufficient cpu" in c["message"]
          and "untolerated taint {nvidia.com/gpu: present}" in c["message"], "Unschedulable message: %s" % c)
    check(k.get("/api/v1/namespaces/default/pods/s2")[1]["status"]["phase"] == "Pending", "s2 stays Pending")
    k.add_pod("g1", cpu="1", tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
              node_selector={"pool": "gpu"})
    k.wait(lambda: node_of(k, "g1") == "gpu", what="g1 on gpu")
    k.add_pod("sel", cpu="1m", node_selector={"pool": "nope"})
    k.wait(lambda: "didn't match Pod's node affinity/selector" in pod_cond(k, "sel").get("message", ""),
           what="selector mismatch")
    # a new node with room: the pending pod is bound there
    k.add_node("big", cpu="4", memory="8Gi")
    k.wait(lambda: node_of(k, "s2") == "big", what="s2 bound after scale-up")
    # fieldSelector on spec.nodeName and status.phase
    c, lst = k.get("/api/v1/pods?fieldSelector=spec.nodeName%3Dsmall")
    check([p["metadata"]["name"] for p in lst["items"]] == ["s1"], "fieldSelector spec.nodeName")
    c, lst = k.get("/api/v1/namespaces/default/pods?fieldSelector=status.phase%3DPending,spec.nodeName%3D")
    check([p["metadata"]["name"] for p in lst["items"]] == ["sel"], "pending unbound pods: %s" %
          [p["metadata"]["name"] for p in lst["items"]])
    # cordon: the node lifecycle taint appears, new pods avoid it
    k.must(200, "PATCH", "/api/v1/nodes/big", {"spec": {"unschedulable": True}}, "application/strategic-merge-patch+json")
    k.wait(lambda: any(t["key"] == "node.kubernetes.io/unschedulable"
                       for t in k.get("/api/v1/nodes/big")[1]["spec"].get("taints", [])), what="unschedulable taint")
    # binding subresource: 409 when already bound
    c, st = k.post("/api/v1/namespaces/default/pods/s1/binding",
                   {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "s1"},
                    "target": {"kind": "Node", "name": "big"}})
    status_is((c, st), 409, "Conflict")
    # deleting a node: its pods go (pod GC)
    k.must(200, "DELETE", "/api/v1/nodes/gpu")
    k.wait(lambda: k.get("/api/v1/namespaces/default/pods/g1")[0] == 404, what="pod GC of g1")


def test_eviction(k):
    k.add_node("e1", cpu="8", memory="8Gi")
    sts = k.must(201, "POST", "/apis/apps/v1/namespaces/default/statefulsets",
                 {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
                  "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "db"}}, "serviceName": "db",
                           "template": {"metadata": {"labels": {"app": "db"}},
                                        "spec": {"containers": [{"name": "c", "image": "db"}]}}}})
    for i in range(3):
        k.add_pod("app-%d" % i, node="e1", labels={"app": "db"},
                  owner=("StatefulSet", "db", "apps/v1", sts["metadata"]["uid"]))
    k.wait(lambda: all(k.get("/api/v1/namespaces/default/pods/app-%d" % i)[1]["status"]["phase"] == "Running"
                       for i in range(3)), what="db pods running")
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db"},
           "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "db"}}}}
    k.must(201, "POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", pdb)
    path = "/apis/policy/v1/namespaces/default/poddisruptionbudgets/db"
    k.wait(lambda: k.get(path)[1]["status"].get("expectedPods") == 3, what="pdb status")
    st = k.get(path)[1]["status"]
    check(st["disruptionsAllowed"] == 1 and st["currentHealthy"] == 3 and st["desiredHealthy"] == 2,
          "pdb status: %s" % st)

    def evict(name):
        return k.post("/api/v1/namespaces/default/pods/%s/eviction" % name,
                      {"apiVersion": "policy/v1", "kind": "Eviction",
                       "metadata": {"name": name, "namespace": "default"}})
    c, st = evict("app-0")
    check(c == 201 and st.get("status") == "Success", "first eviction allowed: %d %s" % (c, st))
    c, st = evict("app-1")
    status_is((c, st), 429, "TooManyRequests")
    causes = st.get("details", {}).get("causes", [])
    check(causes and causes[0]["reason"] == "DisruptionBudget"
          and "needs 2 healthy pods and has 2 currently" in causes[0]["message"], "429 cause: %s" % causes)
    status_is(evict("nope"), 404, "NotFound")
    k.wait(lambda: k.get("/api/v1/namespaces/default/pods/app-0")[0] == 404, what="evicted pod gone")
    st = k.get(path)[1]["status"]
    check("disruptedPods" not in st and st["currentHealthy"] == 2 and st["disruptionsAllowed"] == 0,
          "pdb status after the eviction: %s" % st)
    # graceful deletion: deletionTimestamp first, then gone
    c, o = k.delete("/api/v1/namespaces/default/pods/app-2")
    check(c == 200 and o["metadata"].get("deletionTimestamp") and o["metadata"].get("deletionGracePeriodSeconds") == 30,
          "graceful delete marks the pod")
    k.wait(lambda: k.get("/api/v1/namespaces/default/pods/app-2")[0] == 404, what="pod deleted by kubelet")
    # with fewer healthy pods than the budget needs, still 429
    c, st = evict("app-1")
    status_is((c, st), 429, "TooManyRequests")
    # an unhealthy (Pending) pod is evicted regardless of the budget
    k.add_pod("app-9", labels={"app": "db"}, node_selector={"none": "none"})
    c, st = evict("app-9")
    check(c == 201, "pending pod evicted despite the PDB: %d" % c)
    # deleting the owner removes its pods (garbage collector, background)
    k.must(200, "DELETE", "/apis/apps/v1/namespaces/default/statefulsets/db")
    k.wait(lambda: k.get("/api/v1/namespaces/default/pods/app-1")[0] == 404, what="GC of app-1")


def test_events(k):
    ev = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
          "metadata": {"name": "scale.1", "namespace": "default"}, "eventTime": "2024-01-01T00:00:00.000000Z",
          "reportingController": "cluster-autoscaler", "reportingInstance": "ca-1", "action": "ScaleUp",
          "reason": "TriggeredScaleUp", "note": "pod triggered scale-up", "type": "Normal",
          "regarding": {"kind": "Pod", "namespace": "default", "name": "p"}}
    c, o = k.post("/apis/events.k8s.io/v1/namespaces/default/events", ev)
    check(c == 201 and o["note"] == "pod triggered scale-up" and o["regarding"]["name"] == "p", "events.k8s.io create")
    c, core = k.get("/api/v1/namespaces/default/events/scale.1")
    check(core.get("message") == "pod triggered scale-up" and core["involvedObject"]["name"] == "p"
          and core["apiVersion"] == "v1" and "note" not in core,
          "the same event through core/v1: %s" % core)
    c, lst = k.get("/api/v1/events?fieldSelector=involvedObject.name%3Dp,reason%3DTriggeredScaleUp")
    check(len(lst["items"]) == 1, "events fieldSelector")


def test_faults(k):
    k.fault("^/api/v1/nodes$", 500, count=1, method="GET")
    status_is(k.get("/api/v1/nodes"), 500, "InternalError")
    check(k.get("/api/v1/nodes")[0] == 200, "fault used up after count")
    k.fault("/eviction$", 429, count=-1, retryAfter=1)
    status_is(k.post("/api/v1/namespaces/default/pods/x/eviction", {}), 429, "TooManyRequests")
    k.clear_faults()
    reqs = [r for r in k.requests() if r["path"] == "/api/v1/nodes"]
    check([r["code"] for r in reqs][-2:] == [500, 200], "request log: %s" % reqs[-2:])
    # faults by query: watches fail, lists work
    k.fault("^/api/v1/nodes$", 503, count=1, query="watch=")
    check(k.get("/api/v1/nodes")[0] == 200, "list not hit by a watch fault")
    status_is(k.get("/api/v1/nodes?watch=1"), 503, "ServiceUnavailable")
    # a dropped connection
    k.fault("^/api/v1/nodes$", None, count=1, close=True)
    try:
        k.get("/api/v1/nodes")
        check(False, "connection not dropped")
    except OSError:
        pass
    check(k.get("/api/v1/nodes")[0] == 200, "next request fine after a drop")
    # the server ends open watches
    with k.watch("/api/v1/nodes?watch=1&resourceVersion=" + k.get("/api/v1/nodes")[1]["metadata"]["resourceVersion"]) as s:
        t0 = time.time()
        k.close_watches()
        check(s.read() == b"" and time.time() - t0 < 5, "close-watches ends the stream")


def test_seed():
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "seeded"},
            "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sp", "namespace": "kube-system"},
           "spec": {"containers": [{"name": "c", "image": "x"}]}}
    with FakeKube(seed=[node, pod], name="seed") as k:
        check(k.get("/api/v1/nodes/seeded")[0] == 200, "seeded node")
        k.wait(lambda: k.get("/api/v1/namespaces/kube-system/pods/sp")[1]["spec"].get("nodeName") == "seeded",
               what="seeded pod scheduled")
        k.restart()
        check(k.get("/api/v1/namespaces/kube-system/pods/sp")[1]["spec"].get("nodeName") == "seeded",
              "restart with --state and --seed keeps the state")


def test_history_window():
    """The watch window is per resource: churn of one kind does not expire another's versions."""
    with FakeKube(history=5, name="hist", extra_args=["--bookmark-interval", "0.2"]) as k:
        rv = k.get("/api/v1/nodes")[1]["metadata"]["resourceVersion"]
        for i in range(10):
            k.must(201, "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "c%d" % i}})
        k.add_node("late")
        with k.watch("/api/v1/nodes?watch=1&resourceVersion=" + rv) as s:
            ev = json.loads(s.readline())
        check(ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] == "late", "node watch kept: %s" % ev)
        # bookmarks carry the store's progress, so a quiet watch does not fall behind
        k.must(201, "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "after"}})
        now = int(k.get("/api/v1/configmaps")[1]["metadata"]["resourceVersion"])
        with k.watch("/api/v1/nodes?watch=1&allowWatchBookmarks=true&resourceVersion=" + rv) as s:
            evs = [json.loads(s.readline()) for _ in range(2)]
        check(evs[0]["type"] == "ADDED" and evs[1]["type"] == "BOOKMARK"
              and int(evs[1]["object"]["metadata"]["resourceVersion"]) >= now
              and evs[1]["object"]["kind"] == "Node", "bookmark progress: %s" % evs)
        with k.watch("/api/v1/configmaps?watch=1&resourceVersion=" + rv) as s:
            ev = json.loads(s.readline())
        check(ev["type"] == "ERROR" and ev["object"]["code"] == 410, "configmap window moved on: %s" % ev)
        c, st = k.get("/api/v1/configmaps?resourceVersionMatch=Exact&resourceVersion=" + rv)
        status_is((c, st), 410, "Expired")


def test_keepalive():
    """Early error replies (faults, 404) leave a keep-alive connection usable."""
    import http.client
    with FakeKube(name="ka") as k:
        k.fault("/configmaps$", 500, count=1, method="POST")
        conn = http.client.HTTPConnection("127.0.0.1", k.port, timeout=10)
        body = json.dumps({"metadata": {"name": "x" * 40}, "data": {"k": "v" * 4000}})
        codes = []
        for path in ("/api/v1/namespaces/default/configmaps", "/api/v1/nosuch/thing",
                     "/api/v1/namespaces/default/configmaps"):
            conn.request("POST", path, body, {"Content-Type": "application/json"})
            r = conn.getresponse()
            r.read()
            codes.append(r.status)
        conn.close()
        check(codes == [500, 404, 201], "one connection, three replies: %s" % codes)


def test_tls_and_restart():
    with FakeKube(tls=True, token="s3cret", name="tls") as k:
        check(k.url.startswith("https://"), "https url")
        check(k.get("/api/v1/nodes")[0] == 200, "token accepted over TLS")
        with open(k.kubeconfig) as f:
            kc = f.read()
        check("certificate-authority-data: " in kc and "token: s3cret" in kc and "current-context: fake" in kc,
              "kubeconfig contents")
        with open(os.path.join(k.sa_dir, "token")) as f, open(os.path.join(k.sa_dir, "ca.crt")) as g:
            check(f.read() == "s3cret" and "BEGIN CERTIFICATE" in g.read(), "service account mount")
        tok = k.token
        k.token = "wrong"
        status_is(k.get("/api/v1/nodes"), 401, "Unauthorized")
        k.token = None
        status_is(k.get("/api/v1/nodes"), 403, "Forbidden")
        check(k.get("/healthz")[0] == 200, "anonymous healthz")
        k.token = tok
        k.add_node("keep", cpu="2")
        k.add_pod("keep-pod", node="keep")
        rv = int(k.get("/api/v1/pods")[1]["metadata"]["resourceVersion"])
        k.restart(down_seconds=0.3)
        c, n = k.get("/api/v1/nodes/keep")
        check(c == 200 and n["metadata"]["name"] == "keep", "objects survive a restart")
        check(k.get("/api/v1/namespaces/default/pods/keep-pod")[0] == 200, "pods survive a restart")
        c, lst = k.get("/api/v1/pods")
        check(int(lst["metadata"]["resourceVersion"]) >= rv, "RV does not go back after a restart")
        with k.watch("/api/v1/pods?watch=1&resourceVersion=%d" % (rv - 1)) as s:
            ev = json.loads(s.readline())
        check(ev["type"] == "ERROR" and ev["object"]["code"] == 410, "watch history starts afresh: %s" % ev)
    with FakeKube(tls=True, name="cert") as k:
        check(k.get("/api/v1/namespaces")[0] == 200, "client certificate accepted")
        with open(k.kubeconfig) as f:
            kc = f.read()
        check("client-certificate-data: " in kc and "client-key-data: " in kc, "kubeconfig with client cert")


def main():
    with FakeKube(name="api") as k:
        for t in (test_discovery, test_crud, test_list_pagination, test_watch, test_scheduler, test_eviction,
                  test_events, test_faults):
            before = failures
            t(k)
            print("%s %s" % ("ok" if failures == before else "not ok", t.__name__))
    for t in (test_seed, test_history_window, test_keepalive, test_tls_and_restart):
        before = failures
        t()
        print("%s %s" % ("ok" if failures == before else "not ok", t.__name__))
    if failures:
        print("%d check(s) failed" % failures)
        sys.exit(1)


if __name__ == "__main__":
    main()
