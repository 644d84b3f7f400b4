#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# bench-autoscale-live.py [--nodes N] [--pods-per-node P] [--groups G] [--events E] ...
# (make bench-autoscale-live BENCH_LIVE_ARGS="...")
#
# `autoscale run` at the scale Cluster Autoscaler is tested to (5,000 nodes,
# 150,000 pods), against a purpose-built fake API server and bm-api in this
# process: tests/kube/fake-apiserver.py keeps a real store and runs its own
# scheduler every 0.1 s, far too slow at this size, while here every list page
# and watch event is serialized once in advance so the daemon's side is what
# is measured.  Not a test: it prints figures and never gates on a time.
#
# What it reports (docs/benchmarks.md, "autoscale daemon at scale"):
#  - the initial list: pages of limit=500 followed by their continue
#    tokens, time until the daemon's first loop, and its RSS then;
#  - one loop, from the daemon's own /metrics (buildModel, runOnce, main:
#    mean over the loops of the run); buildModel includes the provider's
#    refresh, two HTTP requests to this script's bm-api;
#  - a rollout: E MODIFIED pod events written to the pod watch as fast as
#    the daemon reads them; events/s and daemon CPU per event.  Baseline in
#    the same run: the same stream read by curl into /dev/null (transport,
#    no parsing);
#  - the status ConfigMap's size as written.
#
# Synthetic cluster: N nodes of 32 cpu / 128 GiB in G pools (bm-api pools,
# yusur provider), P pods of 1 cpu / 2 GiB on each (30 of 32 cpu: no node is
# a scale-down candidate), one ReplicaSet per node owning its pods, no
# pending pod.  Pods and nodes carry managedFields and the other metadata
# real ones have, about 2.5 KB and 3 KB of JSON.

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BUILD = os.environ.get("top_builddir", ".")
PAGE_MAX = 500


def node_obj(i, pool, long_names):
    name = "node-%05d" % i
    images = [{"names": ["registry.example.com/team-%d/app-%d@sha256:%064x" % (j, j, i * 31 + j),
                         "registry.example.com/team-%d/app-%d:v1.%d" % (j, j, j)],
               "sizeBytes": 100000000 + j} for j in range(6)]
    return {
        "metadata": {
            "name": name, "uid": "00000000-0000-0000-0001-%012d" % i, "resourceVersion": "1",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"kubernetes.io/hostname": name, "pool": pool, "kubernetes.io/os": "linux",
                       "kubernetes.io/arch": "amd64",
                       "topology.kubernetes.io/zone": "zone-%d" % (i % 3),
                       "node.kubernetes.io/instance-type": "bm-32c128g"},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                            "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
            "managedFields": [{"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
                               "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                               "fieldsV1": {"f:status": {"f:conditions": {}, "f:images": {},
                                                         "f:nodeInfo": {}}}}]},
        "spec": {"providerID": "yusur://%s/i-%05d" % (pool, i), "podCIDR": "10.%d.%d.0/24"
                 % (i // 256, i % 256)},
        "status": {
            "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110",
                         "ephemeral-storage": "500Gi"},
            "allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110",
                            "ephemeral-storage": "500Gi"},
            "conditions": [{"type": t, "status": "False", "reason": "Kubelet" + t[:6],
                            "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}
                           for t in ("MemoryPressure", "DiskPressure", "PIDPressure")] +
                          [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "addresses": [{"type": "InternalIP", "address": "10.0.%d.%d" % (i // 256, i % 256)},
                          {"type": "Hostname", "address": name}],
            "nodeInfo": {"kubeletVersion": "v1.29.0", "osImage": "Debian GNU/Linux 12",
                         "containerRuntimeVersion": "containerd://1.7.0",
                         "kernelVersion": "6.1.0", "architecture": "amd64"},
            "images": images}}


def pod_obj(node_i, j, rs_uid):
    name = "web-%05d-%02d" % (node_i, j)
    ns = "ns-%03d" % (node_i % 100)
    return {
        "metadata": {
            "name": name, "namespace": ns, "uid": "00000000-0000-0002-%04d-%08d" % (j, node_i),
            "resourceVersion": "1", "creationTimestamp": "2026-01-01T00:00:00Z",
            "generateName": "web-%05d-" % node_i,
            "labels": {"app": "web-%05d" % node_i, "pod-template-hash": "5d8f7c9b6d",
                       "tier": "backend"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                 "name": "web-%05d" % node_i, "uid": rs_uid,
                                 "controller": True, "blockOwnerDeletion": True}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                               "apiVersion": "v1", "time": "2026-01-01T00:00:00Z",
                               "fieldsType": "FieldsV1",
                               "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {},
                                                           "f:ownerReferences": {}},
                                            "f:spec": {"f:containers": {}}}},
                              {"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
                               "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                               "subresource": "status",
                               "fieldsV1": {"f:status": {"f:conditions": {}, "f:podIP": {}}}}]},
        "spec": {
            "nodeName": "node-%05d" % node_i, "schedulerName": "default-scheduler",
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "serviceAccountName": "default", "priority": 0,
            "containers": [{"name": "app", "image": "registry.example.com/web:v1.2.3",
                            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                            "env": [{"name": "MODE", "value": "production"}],
                            "resources": {"requests": {"cpu": "1", "memory": "2Gi"},
                                          "limits": {"memory": "2Gi"}},
                            "volumeMounts": [{"name": "kube-api-access", "readOnly": True,
                                              "mountPath": "/var/run/secrets/kubernetes.io/"
                                                           "serviceaccount"}]}],
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}],
            "volumes": [{"name": "kube-api-access", "projected": {"sources": [
                {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}]}}]},
        "status": {
            "phase": "Running", "podIP": "10.1.%d.%d" % (node_i % 256, j), "qosClass": "Burstable",
            "startTime": "2026-01-01T00:00:00Z",
            "conditions": [{"type": t, "status": "True",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}
                           for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
            "containerStatuses": [{"name": "app", "ready": True, "restartCount": 0,
                                   "image": "registry.example.com/web:v1.2.3",
                                   "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]}}


class Cluster:
    def __init__(self, a):
        t0 = time.monotonic()
        # --long-names: 64 characters, the most a bm-api id may have.
        pools = ["pool-%02d" % g if not a.long_names else "pool-%s-%05d" % ("x" * 53, g)
                 for g in range(a.groups)]
        self.pools = pools
        self.nodes = [(json.dumps(node_obj(i, pools[i % len(pools)], a.long_names),
                                  separators=(",", ":")))
                      for i in range(a.nodes)]
        self.pods, rss = [], []
        for i in range(a.nodes):
            rs_uid = "00000000-0000-0003-0000-%012d" % i
            rss.append(json.dumps({"metadata": {"name": "web-%05d" % i,
                                                "namespace": "ns-%03d" % (i % 100),
                                                "uid": rs_uid, "resourceVersion": "1"},
                                   "spec": {"replicas": a.pods_per_node}}, separators=(",", ":")))
            for j in range(a.pods_per_node):
                self.pods.append(json.dumps(pod_obj(i, j, rs_uid), separators=(",", ":")))
        self.lists = {"/api/v1/nodes": self.nodes, "/api/v1/pods": self.pods,
                      "/apis/apps/v1/replicasets": rss}
        self.instances = json.dumps({"items": [{"id": "i-%05d" % i, "pool": pools[i % len(pools)],
                                                "state": "active", "created_at": 1}
                                               for i in range(a.nodes)]}).encode()
        per_pool = (a.nodes + len(pools) - 1) // len(pools)
        self.pools_doc = json.dumps({"items": [{"name": p, "free": 10, "in_use": per_pool,
                                                "template": {"cpu": "32", "memory": "128Gi",
                                                             "min_size": 0,
                                                             "max_size": per_pool + 10}}
                                               for p in pools]}).encode()
        self.gen_s = time.monotonic() - t0
        self.rv = 10
        self.requests = []          # (method, path) of every API request
        self.configmaps = {}        # path -> body bytes of the last write
        self.cm_sizes = []          # data bytes of each write
        self.cm_refused = 0         # writes refused as over 1 MiB
        self.storm = None           # bytes to write on the pod watch
        self.storm_cond = threading.Condition()
        self.storm_done = None      # monotonic time the last byte went out
        self.lock = threading.Lock()


def api_handler(cl):
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def reply(self, code, body, ctype="application/json"):
            if not isinstance(body, bytes):
                body = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            path, _, query = self.path.partition("?")
            q = dict(kv.partition("=")[::2] for kv in query.split("&") if kv)
            with cl.lock:
                cl.requests.append(("GET", self.path))
            if path == "/v1/pools":
                return self.reply(200, cl.pools_doc)
            if path == "/v1/instances":
                return self.reply(200, cl.instances)
            if q.get("watch") == "true":
                return self.watch(path)
            if path in cl.configmaps:
                return self.reply(200, cl.configmaps[path])
            if path.startswith("/api/v1/namespaces/"):
                return self.reply(404, {"kind": "Status", "code": 404, "reason": "NotFound"})
            items = cl.lists.get(path, [])
            limit = int(q.get("limit") or 0) or len(items)
            start = int(q.get("continue") or 0)
            page = items[start:start + min(limit, PAGE_MAX)]
            meta = '"resourceVersion":"%d"' % cl.rv
            if start + len(page) < len(items):
                meta += ',"continue":"%d"' % (start + len(page))
            body = ('{"kind":"List","apiVersion":"v1","metadata":{%s},"items":[%s]}'
                    % (meta, ",".join(page))).encode()
            self.reply(200, body)

        def watch(self, path):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Connection", "close")
            self.end_headers()
            if path != "/api/v1/pods":
                time.sleep(3600)
                return
            with cl.storm_cond:
                while cl.storm is None:
                    cl.storm_cond.wait()
                data, cl.storm = cl.storm, None
            for i in range(0, len(data), 1 << 20):
                self.wfile.write(data[i:i + (1 << 20)])
            self.wfile.flush()
            with cl.storm_cond:
                cl.storm_done = time.monotonic()
                cl.storm_cond.notify_all()
            time.sleep(3600)

        def write(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n)
            path = self.path.partition("?")[0]
            with cl.lock:
                cl.requests.append((self.command, self.path))
            if "/configmaps" in path:
                obj = json.loads(body)
                size = sum(len(k.encode()) + len(v.encode()) for k, v in obj["data"].items())
                cl.cm_sizes.append(size)
                if size > 1 << 20:
                    # As the API server's validation of ConfigMap data.
                    cl.cm_refused += 1
                    return self.reply(422, {"kind": "Status", "code": 422, "reason": "Invalid",
                                            "message": "data: Too long: must have at most "
                                                       "1048576 bytes"})
                if self.command == "POST":
                    path += "/" + obj["metadata"]["name"]
                obj["metadata"]["resourceVersion"] = "2"
                cl.configmaps[path] = json.dumps(obj).encode()
            self.reply(201 if self.command == "POST" else 200, body)

        do_POST = do_PUT = do_PATCH = write

    return H


def serve(handler):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def proc_stat(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / tick
    mem = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                mem[k] = int(v.split()[0]) / 1024
    return cpu, mem


def metrics(url):
    with urllib.request.urlopen(url + "/metrics", timeout=30) as r:
        text = r.read().decode()
    out = {}
    for m in re.finditer(r'^cluster_autoscaler_function_duration_seconds_(sum|count)'
                         r'\{function="(\w+)"\} (\S+)$', text, re.M):
        out.setdefault(m.group(2), {})[m.group(1)] = float(m.group(3))
    for m in re.finditer(r'^(autoscale_kube_\w+|cluster_autoscaler_nodes_count\{state="ready"\})'
                         r' (\S+)$', text, re.M):
        out[m.group(1)] = float(m.group(2))
    return out


def storm_bytes(cl, n):
    """n MODIFIED events cycling through the pods, each with a new resourceVersion."""
    parts = []
    pods = cl.pods
    for i in range(n):
        cl.rv += 1
        p = pods[i % len(pods)].replace('"resourceVersion":"1"',
                                        '"resourceVersion":"%d"' % cl.rv, 1)
        parts.append('{"type":"MODIFIED","object":%s}\n' % p)
    return "".join(parts).encode()


def thread_cpu(pid, comm):
    """CPU seconds of @pid's threads named @comm."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                head, _, rest = f.read().rpartition(")")
        except OSError:
            continue
        if head.partition("(")[2] == comm:
            fields = rest.split()
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def start_perf(prefix, what, pid):
    if not prefix:
        return None
    return subprocess.Popen(["perf", "record", "-q", "--call-graph", "dwarf,16384", "-F", "499",
                             "-p", str(pid),
                             "-o", "%s.%s" % (prefix, what)])


def stop_perf(p):
    if p:
        p.send_signal(signal.SIGINT)
        p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods-per-node", type=int, default=30)
    ap.add_argument("--groups", type=int, default=20)
    ap.add_argument("--long-names", action="store_true", help="64-character pool names")
    ap.add_argument("--events", type=int, default=100000)
    ap.add_argument("--loops", type=int, default=4, help="loops to time after the sync")
    ap.add_argument("--perf", metavar="PREFIX",
                    help="perf record to PREFIX.sync, PREFIX.loop and PREFIX.rollout")
    ap.add_argument("--bin", default=os.path.abspath(os.path.join(BUILD, "autoscale", "autoscale")))
    a = ap.parse_args()

    cl = Cluster(a)
    kb = sum(map(len, cl.pods)) / max(1, len(cl.pods)) / 1024
    print("cluster: %d nodes, %d pods (%.1f KiB each), %d groups; generated in %.1f s"
          % (len(cl.nodes), len(cl.pods), kb, a.groups, cl.gen_s), flush=True)
    api = serve(api_handler(cl))
    tmp = tempfile.mkdtemp(prefix="bench-as-live.", dir=os.environ.get("TMPDIR", "/tmp"))
    kubeconfig = os.path.join(tmp, "kubeconfig")
    with open(kubeconfig, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "c",
                   "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:%d"
                                                          % api.server_address[1]}}],
                   "users": [{"name": "u", "user": {"token": "t"}}],
                   "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}, f)
    with open(os.path.join(tmp, "token"), "w") as f:
        f.write("bm-token\n")
    with open(os.path.join(tmp, "cloud.conf"), "w") as f:
        f.write("[yusur]\nurl = http://127.0.0.1:%d\ntoken_file = token\nimage = worker-1\n"
                % api.server_address[1])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = "http://127.0.0.1:%d" % port
    log = open(os.path.join(tmp, "autoscale.log"), "wb")
    t0 = time.monotonic()
    proc = subprocess.Popen([a.bin, "run", "--kubeconfig", kubeconfig, "--cloud-provider=yusur",
                             "--cloud-config", "cloud.conf", "--address", "127.0.0.1:%d" % port,
                             "--scan-interval=2s", "--leader-elect=false",
                             "--max-node-provision-time=1h"],
                            stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
    perf = start_perf(a.perf, "sync", proc.pid)
    try:
        m = {}
        while time.monotonic() - t0 < 600:
            try:
                m = metrics(url)
                if m.get("main", {}).get("count", 0) >= 1:
                    break
            except OSError:
                pass
            if proc.poll() is not None:
                raise SystemExit("autoscale exited: %s" % proc.returncode)
            time.sleep(0.1)
        sync_s = time.monotonic() - t0
        stop_perf(perf)
        cpu, mem = proc_stat(proc.pid)
        pages = [p for meth, p in cl.requests if p.startswith("/api/v1/pods?")]
        conts = [p for p in pages if "continue=" in p]
        print("initial list + first loop: %.2f s wall, %.2f s daemon CPU; %d pod list requests "
              "(%d with continue); ready nodes %d; RSS %.0f MiB (peak %.0f)"
              % (sync_s, cpu, len(pages), len(conts),
                 m.get('cluster_autoscaler_nodes_count{state="ready"}', -1),
                 mem["VmRSS"], mem["VmHWM"]), flush=True)
        base = m
        perf = start_perf(a.perf, "loop", proc.pid)
        while True:
            m = metrics(url)
            if m["main"]["count"] >= base["main"]["count"] + a.loops:
                break
            time.sleep(0.2)
        stop_perf(perf)
        for fn in ("buildModel", "runOnce", "main"):
            d_sum = m[fn]["sum"] - base[fn]["sum"]
            d_n = m[fn]["count"] - base[fn]["count"]
            print("loop: %-10s mean %.1f ms over %d loops" % (fn, 1000 * d_sum / max(1, d_n), d_n))
        print("status ConfigMap: %d writes, %d refused as over 1 MiB; last %d bytes of data"
              % (len(cl.cm_sizes), cl.cm_refused, cl.cm_sizes[-1] if cl.cm_sizes else -1),
              flush=True)

        if a.events:
            data = storm_bytes(cl, a.events)
            # Baseline: curl reads the same bytes from a one-shot server into /dev/null.
            base_srv = serve(storm_once_handler(data))
            tb = time.monotonic()
            subprocess.run(["curl", "-s", "-o", "/dev/null", "http://127.0.0.1:%d/" %
                            base_srv.server_address[1]], check=True)
            base_s = time.monotonic() - tb
            base_srv.shutdown()
            perf = start_perf(a.perf, "rollout", proc.pid)
            cpu0 = thread_cpu(proc.pid, "watch-pods")
            ts = time.monotonic()
            with cl.storm_cond:
                cl.storm = data
                cl.storm_cond.notify_all()
                while cl.storm_done is None:
                    cl.storm_cond.wait()
            # All but what the socket buffers hold has been read; the
            # watch thread is done when its CPU time stops growing.
            cpu1, last = thread_cpu(proc.pid, "watch-pods"), time.monotonic()
            while time.monotonic() - last < 0.5:
                time.sleep(0.05)
                cpu = thread_cpu(proc.pid, "watch-pods")
                if cpu != cpu1:
                    cpu1, last = cpu, time.monotonic()
            took = max(cl.storm_done, last) - ts
            stop_perf(perf)
            _, mem = proc_stat(proc.pid)
            print("rollout: %d pod events (%.0f MiB): %.2f s, %.0f events/s, %.0f us CPU per "
                  "event (watch thread); curl baseline %.2f s (%.0f events/s), ratio %.1fx; "
                  "RSS %.0f MiB (peak %.0f)"
                  % (a.events, len(data) / 2**20, took, a.events / took,
                     1e6 * (cpu1 - cpu0) / a.events, base_s, a.events / base_s, took / base_s,
                     mem["VmRSS"], mem["VmHWM"]), flush=True)
            base = metrics(url)
            while metrics(url)["main"]["count"] < base["main"]["count"] + 2:
                time.sleep(0.2)
            m = metrics(url)
            for fn in ("buildModel", "main"):
                d_sum = m[fn]["sum"] - base[fn]["sum"]
                d_n = m[fn]["count"] - base[fn]["count"]
                print("loop after rollout: %-10s mean %.1f ms over %d loops"
                      % (fn, 1000 * d_sum / max(1, d_n), d_n))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        if proc.returncode not in (0, None):
            with open(log.name) as f:
                sys.stderr.write("".join(f.readlines()[-30:]))
        api.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def storm_once_handler(data):
    class H(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            for i in range(0, len(data), 1 << 20):
                self.wfile.write(data[i:i + (1 << 20)])
    return H


if __name__ == "__main__":
    sys.exit(main())
