#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# End to end (issue 9): the fake Kubernetes API server (tests/kube), bm-api,
# bm-controller, two fake bm-handlers whose power-on registers a Node after a
# delay (register-node.py), and `autoscale run` with short intervals.
#
# 0. --dry-run with 8 pending pods logs the scale-up below and changes
#    nothing (no instance, no event, no Lease).
# Pools: "a" = 4 machines of 2 cpu / 4Gi, "b" = 2 machines of 8 cpu / 32Gi.
# 1. 8 pending pods of 1 cpu / 1Gi.  Hand-computed least-waste: a needs 4
#    nodes (cpu waste 0, memory (16-8)/16 = 0.5, score 0.5); b needs 1 node
#    (cpu 0, memory (32-8)/32 = 0.75, score 0.75) -> a +4.  The 4 nodes join
#    and all 8 pods are bound.
# 2. Scale-down with blockers: node 1 runs a kube-system pod, node 2 a
#    safe-to-evict "false" pod, node 3 is annotated scale-down-disabled (all
#    three 1.5 of 2 cpu, under the 0.9 threshold), node 4 runs one 0.5 cpu
#    pod that fits elsewhere -> node 4 is tainted, drained (eviction),
#    deleted, and its machine is available again; nodes 1-3 stay.  The
#    first two evictions get 429 and are retried; node 4's DaemonSet pod gets
#    a best-effort eviction (it neither blocks nor is waited for).
# 3. Provisioning failure: pool a's handler fails every power-on; a 1.5 cpu
#    pod prefers a (score 0.25+0.75=1.0 against b's 0.81+0.97) -> a +1
#    fails -> a backs off -> b +1, and the pod runs on the b node.
# 4. The API server restarts; the daemon carries on: the pod is deleted, the
#    b node goes and its machine is available again.
# 5. A standby daemon on the same Lease never acts; when the leader exits
#    (SIGTERM) it releases the Lease and the standby takes over at once.
# Also: /metrics and /healthz, events, the status ConfigMap, and clean
# exits on SIGTERM (ASan checks leaks there), also when it comes during
# start-up, once the daemon has its handler.

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

SRC = os.environ.get("top_srcdir", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "kube"))
sys.path.insert(0, os.path.join(SRC, "tests", "bm"))
from kubefake import FakeKube  # noqa: E402
import bmenv  # noqa: E402
from bmenv import check, free_port  # noqa: E402

procs = []  # autoscale processes, killed by pid on the way out

POOLS = {"a": {"cpu": "2", "memory": "4Gi", "labels": {"class": "small"}},
         "b": {"cpu": "8", "memory": "32Gi", "labels": {"class": "big"}}}


def step(msg):
    print("--", msg, flush=True)


def main():
    env = bmenv.Env("as-e2e")
    kube = FakeKube(tls=True, token="kube-token-0123456789", name="as-e2e")
    try:
        run(env, kube)
    except Exception:
        for name in ("dry-run.log", "autoscale.log", "standby.log", "handler_a.log", "handler_b.log", "controller.log"):
            p = os.path.join(env.dir, name)
            if os.path.exists(p):
                with open(p) as f:
                    sys.stderr.write("==== %s (tail)\n%s\n" % (name, "".join(f.readlines()[-60:])))
        raise
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        kube.close()
    return 0


def run(env, kube):
    d = env.dir
    pools_file = os.path.join(d, "pools.json")
    with open(pools_file, "w") as f:
        json.dump(POOLS, f)
    os.environ.update({"KUBE_URL": kube.url, "KUBE_TOKEN": kube.token,
                       "KUBE_CA": os.path.join(kube.dir, "tls", "ca.crt"),
                       "REGISTER_POOLS": pools_file, "REGISTER_DELAY": "0.5"})
    on_boot = "%s %s" % (sys.executable, os.path.join(SRC, "tests", "autoscale", "register-node.py"))
    env.start_handler("handler_a", ["--on-boot", on_boot])
    env.start_handler("handler_b", ["--on-boot", on_boot])
    env.start_api()
    env.start_controller(check=False)
    for i in range(1, 5):
        env.enroll("ma%d" % i, model="small", cpu=2, handler_key="handler_a")
    for i in range(1, 3):
        env.enroll("mb%d" % i, model="big", cpu=8, handler_key="handler_b")
    for name, p in POOLS.items():
        s, o = env.api("POST", "/v1/pools", {
            "name": name, "match": {"model": "small" if name == "a" else "big"},
            "template": {"cpu": p["cpu"], "memory": p["memory"], "labels": p["labels"],
                         "min_size": 0, "max_size": 10}})
        check(s == 201, "pool %s: %s %s" % (name, s, o))
    for m in ("ma1", "ma2", "ma3", "ma4", "mb1", "mb2"):
        env.wait_state(m, "available")

    user_data = os.path.join(d, "user-data.tmpl")
    with open(user_data, "w") as f:
        f.write('{"provider_id": "${PROVIDER_ID}", "pool": "${POOL}", "token": "${JOIN_TOKEN}"}\n')
    with open(os.path.join(d, "join-token"), "w") as f:
        f.write("join-secret\n")
    cloud = os.path.join(d, "cloud.conf")
    with open(cloud, "w") as f:
        f.write("[yusur]\nurl = %s\ntoken_file = token\nimage = worker-1\ndisk_gb = 10\n"
                "user_data = user-data.tmpl\njoin_token_file = join-token\n" % env.api_url)
    def start_autoscale(logname, extra=(), wait=True):
        port = free_port()
        log = open(os.path.join(d, logname), "ab")
        p = subprocess.Popen(
            [os.path.join(bmenv.builddir(), "autoscale", "autoscale"), "run",
             "--kubeconfig", kube.kubeconfig, "--cloud-provider=yusur", "--cloud-config", cloud,
             "--address", "127.0.0.1:%d" % port, "--scan-interval=1s",
             "--scale-down-unneeded-time=3s", "--scale-down-delay-after-add=0s",
             "--scale-down-delay-after-failure=0s", "--scale-down-utilization-threshold=0.9",
             "--max-graceful-termination-sec=5", "--leader-elect",
             "--leader-elect-lease-duration=15s", "--leader-elect-retry-period=500ms"] + list(extra),
            stdout=log, stderr=subprocess.STDOUT, cwd=d)
        procs.append(p)
        url = "http://127.0.0.1:%d" % port
        if wait:
            env.wait_http(url + "/healthz")
        return p, url

    def handles_sigterm(p):
        """Whether @p has its SIGTERM handler (its start-up's first step)."""
        try:
            with open("/proc/%d/status" % p.pid) as f:
                cgt = [l for l in f if l.startswith("SigCgt:")]
            return bool(cgt) and int(cgt[0].split()[1], 16) & (1 << (signal.SIGTERM - 1)) != 0
        except OSError:
            return False

    step("0a: a SIGTERM during start-up is a clean exit")
    for i in range(5):
        early, _ = start_autoscale("early.log", wait=False)
        env.wait(lambda: handles_sigterm(early) or early.poll() is not None,
                 "the daemon's SIGTERM handler", 10)
        time.sleep(0.005 * i)
        early.send_signal(signal.SIGTERM)
        rc = early.wait(30)
        check(rc == 0, "autoscale exited with %s on a SIGTERM %d ms into its start-up" % (rc, 5 * i))

    def metric(url, name):
        with urllib.request.urlopen(url + "/metrics") as r:
            m = re.search(r"^%s (\d+)$" % re.escape(name), r.read().decode(), re.M)
        return int(m.group(1)) if m else None

    step("0: --dry-run decides and logs, and changes nothing")
    for i in range(8):
        kube.add_pod("web-%d" % i, cpu="1", memory="1Gi", labels={"app": "web"},
                     owner=("ReplicaSet", "web"))
    dry, _ = start_autoscale("dry-run.log", ["--dry-run"])

    def logged(name, pattern):
        with open(os.path.join(d, name)) as f:
            return re.search(pattern, f.read())
    env.wait(lambda: logged("dry-run.log", r'scale-up: group "a" \+4 for 8 pods .*\[dry run\]'),
             "the dry run's scale-up decision", 20)
    time.sleep(1.5)
    dry.send_signal(signal.SIGTERM)
    check(dry.wait(30) == 0, "the dry run did not exit cleanly")
    s, inst = env.api("GET", "/v1/instances")
    check(inst["items"] == [], "the dry run provisioned: %s" % inst)
    s, evs = kube.get("/api/v1/events")
    check(evs["items"] == [], "the dry run recorded events: %s" % evs["items"])
    s, _ = kube.get("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/cluster-autoscaler")
    check(s == 404, "the dry run took the Lease")

    auto, metrics_url = start_autoscale("autoscale.log")
    env.wait(lambda: metric(metrics_url, "autoscale_leader") == 1, "the first daemon to lead", 20)
    # A second daemon on the same Lease stands by.
    standby, standby_url = start_autoscale("standby.log")

    def nodes():
        s, o = kube.get("/api/v1/nodes")
        return {n["metadata"]["name"]: n for n in o["items"]}

    def pods(ns="default"):
        s, o = kube.get("/api/v1/namespaces/%s/pods" % ns)
        return {p["metadata"]["name"]: p for p in o["items"]}

    def machine_state(m):
        return env.machine(m)["state"]

    def alive():
        check(auto.poll() is None, "autoscale exited with %s" % auto.returncode)

    def wait(cond, what, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            alive()
            v = cond()
            if v:
                return v
            time.sleep(0.2)
        raise bmenv.Failure("timed out waiting for " + what)

    for ns, rs in (("default", "web"), ("kube-system", "sys")):
        kube.must(201, "POST", "/apis/apps/v1/namespaces/%s/replicasets" % ns, {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": rs, "namespace": ns},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": rs}},
                     "template": {"metadata": {"labels": {"app": rs}},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}})

    step("1: 8 pending pods -> pool a +4")
    wait(lambda: len(nodes()) == 4, "4 nodes to join", 90)
    check(logged("autoscale.log", r'scale-up: group "a" \+4 for 8 pods'), "not one scale-up of a by 4")
    ns = nodes()
    for name, n in ns.items():
        check(n["spec"]["providerID"].startswith("yusur://a/a-"),
              "node %s providerID %s" % (name, n["spec"]["providerID"]))
        check(name.startswith("ma"), "node %s is not a pool a machine" % name)
    wait(lambda: all(p["spec"].get("nodeName") for p in pods().values()), "the 8 pods to be bound")
    s, inst = env.api("GET", "/v1/instances")
    check(sorted(i["pool"] for i in inst["items"]) == ["a"] * 4, "instances: %s" % inst)
    s, evs = kube.get("/api/v1/namespaces/default/events")
    reasons = [e["reason"] for e in evs["items"]]
    check("TriggeredScaleUp" in reasons, "no TriggeredScaleUp event: %s" % reasons)
    s, evs = kube.get("/api/v1/namespaces/kube-system/events")
    check(any(e["reason"] == "ScaledUpGroup" and "{a 0->4 (max: 4)}" in e["message"] and
              e["involvedObject"]["name"] == "cluster-autoscaler-status" for e in evs["items"]),
          "no ScaledUpGroup event on the status ConfigMap: %s" % [e["message"] for e in evs["items"]])
    with urllib.request.urlopen(metrics_url + "/metrics") as r:
        text = r.read().decode()
    check(re.search(r"^cluster_autoscaler_scaled_up_nodes_total 4$", text, re.M),
          "metrics: scaled_up_nodes_total is not 4")
    check(re.search(r'^cluster_autoscaler_node_group_max_count\{node_group="a"\} 4$', text, re.M),
          "metrics: group a's max is not 4 (free machines)")

    step("2: scale-down; a kube-system pod, a safe-to-evict=false pod and a disabled node stay")
    n1, n2, n3, n4 = sorted(ns)
    disabled = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
    for n in (n1, n2, n3, n4):
        kube.must(200, "PATCH", "/api/v1/nodes/" + n,
                  {"metadata": {"annotations": {disabled: "true"}}},
                  "application/merge-patch+json")
    for name in pods():
        kube.delete("/api/v1/namespaces/default/pods/" + name)
    wait(lambda: not pods(), "the web pods to go")
    kube.add_pod("sys-0", namespace="kube-system", cpu="1500m", memory="1Gi", node=n1,
                 labels={"app": "sys"}, owner=("ReplicaSet", "sys"))
    kube.add_pod("pinned", cpu="1500m", memory="1Gi", node=n2, labels={"app": "web"},
                 owner=("ReplicaSet", "web"),
                 annotations={"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"})
    kube.add_pod("keep", cpu="1500m", memory="1Gi", node=n3, labels={"app": "web"},
                 owner=("ReplicaSet", "web"))
    kube.add_pod("mover", cpu="500m", memory="512Mi", node=n4, labels={"app": "web"},
                 owner=("ReplicaSet", "web"))
    kube.must(201, "POST", "/apis/apps/v1/namespaces/default/daemonsets", {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
                 "template": {"metadata": {"labels": {"app": "agent"}},
                              "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    kube.add_pod("agent-x", cpu="10m", memory="16Mi", node=n4, labels={"app": "agent"},
                 owner=("DaemonSet", "agent"))
    # The first two evictions are refused as a PodDisruptionBudget would (429):
    # the drain retries in the next loops instead of giving up.
    kube.fault(r"/eviction$", 429, count=2)
    for n in (n1, n2, n4):
        kube.must(200, "PATCH", "/api/v1/nodes/" + n,
                  {"metadata": {"annotations": {disabled: None}}},
                  "application/merge-patch+json")
    wait(lambda: n4 not in nodes(), "node %s to be removed" % n4, 60)
    wait(lambda: machine_state(n4) == "available", "machine %s to be available again" % n4, 60)
    check("mover" not in pods(), "the mover pod was not evicted")
    check(any(r["method"] == "POST" and r["path"] == "/api/v1/namespaces/default/pods/agent-x/eviction"
              for r in kube.requests()), "the DaemonSet pod was not evicted before the node went")
    check(logged("autoscale.log", r'eviction of pod "default/mover" refused for now'),
          "the 429 was not retried")
    s, evs = kube.get("/api/v1/namespaces/default/events")
    check(any(e["reason"] == "ScaleDown" and e["involvedObject"]["name"] == n4 for e in evs["items"]),
          "no ScaleDown event on %s" % n4)
    time.sleep(5)  # > unneeded time + 1 loop: the blocked nodes had every chance to go
    ns = nodes()
    for n in (n1, n2, n3):
        check(n in ns, "node %s was removed despite its blocker" % n)
        taints = [t["key"] for t in ns[n]["spec"].get("taints", [])]
        check("ToBeDeletedByClusterAutoscaler" not in taints, "node %s tainted: %s" % (n, taints))
    s, cm = kube.get("/api/v1/namespaces/kube-system/configmaps/cluster-autoscaler-status")
    check(s == 200 and "Cluster-wide" in cm["data"]["status"], "status ConfigMap: %s %s" % (s, cm))
    s, lease = kube.get("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/cluster-autoscaler")
    check(s == 200 and lease["spec"]["holderIdentity"], "lease: %s %s" % (s, lease))

    step("3: provisioning in pool a fails -> a backs off -> pool b is used")
    s, o = env.handler("PUT", "/v1/fake", {"faults": {"power_on": {"count": -1}}}, key="handler_a")
    check(s == 200, "fault injection: %s %s" % (s, o))
    kube.add_pod("big-0", cpu="1500m", memory="1Gi", labels={"app": "web"},
                 owner=("ReplicaSet", "web"))

    def bound_b():
        p = pods().get("big-0")
        n = p and p["spec"].get("nodeName")
        return n and nodes().get(n, {}).get("spec", {}).get("providerID", "").startswith("yusur://b/") and n
    bnode = wait(bound_b, "big-0 to run on a pool b node", 90)
    with open(os.path.join(d, "autoscale.log")) as f:
        logtext = f.read()
    check(re.search(r'group "a" backed off', logtext), "no backoff of group a in the log")
    check(re.search(r'scale-up: group "a" \+1', logtext), "group a was not tried first")
    env.handler("PUT", "/v1/fake", {"faults": {}}, key="handler_a")

    step("4: the API server restarts; the daemon carries on")
    kube.restart(down_seconds=1.0)
    kube.delete("/api/v1/namespaces/default/pods/big-0")
    wait(lambda: bnode not in nodes(), "node %s to be removed after the restart" % bnode, 60)
    wait(lambda: machine_state(bnode) == "available", "machine %s available" % bnode, 60)
    with urllib.request.urlopen(metrics_url + "/healthz") as r:
        check(r.status == 200, "healthz %s" % r.status)
    # ma4 was drained; the b node is empty or still had big-0 terminating.
    def downs():
        with urllib.request.urlopen(metrics_url + "/metrics") as r:
            text = r.read().decode()
        return sum(int(v) for v in re.findall(
            r'^cluster_autoscaler_scaled_down_nodes_total\{reason="(?:empty|underutilized)"\} (\d+)$',
            text, re.M))
    wait(lambda: downs() == 2, "2 scale-downs in the metrics (%d)" % downs(), 10)

    check(standby.poll() is None and metric(standby_url, "autoscale_leader") == 0 and
          metric(standby_url, "cluster_autoscaler_scaled_up_nodes_total") == 0,
          "the standby daemon led or acted")

    step("5: the leader exits cleanly and gives the Lease up; the standby takes over")
    auto.send_signal(signal.SIGTERM)
    rc = auto.wait(30)
    check(rc == 0, "autoscale exited with %s on SIGTERM" % rc)
    # Well within the 15s lease duration: the Lease was released, not expired.
    env.wait(lambda: metric(standby_url, "autoscale_leader") == 1, "the standby to lead", 8)
    standby.send_signal(signal.SIGTERM)
    rc = standby.wait(30)
    check(rc == 0, "the standby exited with %s on SIGTERM" % rc)
    return standby


if __name__ == "__main__":
    sys.exit(main())
