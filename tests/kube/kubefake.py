# SPDX-License-Identifier: Apache-2.0
#
# kubefake: start tests/kube/fake-apiserver.py from a Python test, talk to it,
# seed it, and stop it.  Python stdlib only.
#
#     import sys, os
#     sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests", "kube"))
#     from kubefake import FakeKube
#
#     with FakeKube(tls=True, token="secret") as k:   # or FakeKube() for plain HTTP
#         k.kubeconfig                  # path of a kubeconfig for clients (kubectl, autoscale run)
#         k.url                         # http(s)://127.0.0.1:PORT
#         k.add_node("n1", cpu="4", memory="8Gi", labels={"pool": "a"})
#         k.add_pod("p1", cpu="500m", memory="1Gi")           # pending; the scheduler binds it
#         k.add_pod("p2", node="n1", owner=("ReplicaSet", "rs1"))   # bound; runs at once
#         code, obj = k.get("/api/v1/namespaces/default/pods/p1")
#         k.wait(lambda: k.get("/api/v1/namespaces/default/pods/p1")[1]["spec"].get("nodeName"))
#         k.fault(r"/eviction$", 429, count=2)                # next two evictions fail
#         k.requests()                  # what clients asked, e.g. to count evictions
#         k.restart()                   # SIGTERM (state saved), start again on the same port
#
# The server runs in its own temporary directory (k.dir), which is removed on
# exit; its stderr goes to k.dir/fake-apiserver.log and is printed when the
# server fails to start.  Every process started here is stopped by pid.

import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "fake-apiserver.py")


class FakeKube:
    def __init__(self, tls=False, token=None, history=None, extra_args=(), name="kube"):
        self.dir = tempfile.mkdtemp(prefix="fake-%s." % name, dir=os.environ.get("TMPDIR", "/tmp"))
        self.tls, self.token = tls, token
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        self.state = os.path.join(self.dir, "state.json")
        self.port = 0
        self.args = list(extra_args)
        if history:
            self.args += ["--history", str(history)]
        if token:
            with open(os.path.join(self.dir, "token"), "w") as f:
                f.write(token + "\n")
        self.proc = None
        self.start()

    # -- process ----------------------------------------------------------
    def start(self):
        portfile = os.path.join(self.dir, "port")
        if os.path.exists(portfile):
            os.unlink(portfile)
        cmd = [sys.executable, SERVER, "--port", str(self.port), "--port-file", portfile,
               "--kubeconfig-out", self.kubeconfig, "--state", self.state] + self.args
        if self.tls:
            cmd += ["--tls", os.path.join(self.dir, "tls")]
        if self.token:
            cmd += ["--token", os.path.join(self.dir, "token")]
        self.log = open(os.path.join(self.dir, "fake-apiserver.log"), "a")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log)
        deadline = time.time() + 20
        while not os.path.exists(portfile):
            if self.proc.poll() is not None or time.time() > deadline:
                with open(self.log.name) as f:
                    sys.stderr.write(f.read())
                raise RuntimeError("fake-apiserver did not start")
            time.sleep(0.05)
        with open(portfile) as f:
            self.port = int(f.read())
        self.url = "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port)
        self.ctx = None
        if self.tls:
            self.ctx = ssl.create_default_context(cafile=os.path.join(self.dir, "tls", "ca.crt"))
            if not self.token:
                self.ctx.load_cert_chain(os.path.join(self.dir, "tls", "client.crt"),
                                         os.path.join(self.dir, "tls", "client.key"))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        self.log.close()

    def restart(self, down_seconds=0.0):
        """Stop (the server saves its objects), wait, start again on the same port."""
        self.stop()
        time.sleep(down_seconds)
        self.start()

    def close(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- HTTP -------------------------------------------------------------
    def request(self, method, path, body=None, ctype="application/json", headers=None):
        """Returns (HTTP status, decoded JSON or text)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", ctype)
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=30) as r:
                code, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            code, raw = e.code, e.read()
        try:
            return code, json.loads(raw)
        except ValueError:
            return code, raw.decode(errors="replace")

    def get(self, path):
        return self.request("GET", path)

    def post(self, path, body):
        return self.request("POST", path, body)

    def put(self, path, body):
        return self.request("PUT", path, body)

    def patch(self, path, body, ctype="application/merge-patch+json"):
        return self.request("PATCH", path, body, ctype)

    def delete(self, path, body=None):
        return self.request("DELETE", path, body)

    def watch(self, path, timeout=10):
        """Open a watch stream; returns a response whose readline() gives one event per line."""
        req = urllib.request.Request(self.url + path)
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        return urllib.request.urlopen(req, context=self.ctx, timeout=timeout)

    # -- seeding ----------------------------------------------------------
    def add_node(self, name, cpu="4", memory="8Gi", pods="110", labels=None, taints=None, ready=True,
                 unschedulable=False, provider_id=None):
        res = {"cpu": str(cpu), "memory": str(memory), "pods": str(pods)}
        node = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": dict({"kubernetes.io/hostname": name}, **(labels or {}))},
                "spec": {},
                "status": {"capacity": res, "allocatable": dict(res),
                           "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                           "reason": "KubeletReady" if ready else "KubeletNotReady"}],
                           "addresses": [{"type": "InternalIP", "address": "10.0.0.%d" % (len(name) % 250 + 1)},
                                         {"type": "Hostname", "address": name}],
                           "nodeInfo": {"kubeletVersion": "v1.29.0"}}}
        if taints:
            node["spec"]["taints"] = taints
        if unschedulable:
            node["spec"]["unschedulable"] = True
        if provider_id:
            node["spec"]["providerID"] = provider_id
        return self.must(201, "POST", "/api/v1/nodes", node)

    def add_pod(self, name, namespace="default", cpu="100m", memory="64Mi", node=None, labels=None,
                owner=None, annotations=None, node_selector=None, tolerations=None, spec=None):
        """owner=(kind, name[, apiVersion[, uid]]) adds a controller ownerReference."""
        meta = {"name": name, "namespace": namespace, "labels": labels or {}, "annotations": annotations or {}}
        if owner:
            kind, oname = owner[0], owner[1]
            api = owner[2] if len(owner) > 2 else ("batch/v1" if kind == "Job" else "apps/v1")
            uid = owner[3] if len(owner) > 3 else "00000000-0000-0000-0000-%012d" % (abs(hash(oname)) % 10 ** 12)
            meta["ownerReferences"] = [{"apiVersion": api, "kind": kind, "name": oname, "uid": uid,
                                        "controller": True, "blockOwnerDeletion": True}]
        pod_spec = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9",
                                    "resources": {"requests": {"cpu": str(cpu), "memory": str(memory)}}}]}
        if node:
            pod_spec["nodeName"] = node
        if node_selector:
            pod_spec["nodeSelector"] = node_selector
        if tolerations:
            pod_spec["tolerations"] = tolerations
        pod_spec.update(spec or {})
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}
        return self.must(201, "POST", "/api/v1/namespaces/%s/pods" % namespace, pod)

    def must(self, want, method, path, body=None, ctype="application/json"):
        code, obj = self.request(method, path, body, ctype)
        if code != want:
            raise RuntimeError("%s %s: want %d, got %d: %s" % (method, path, want, code, obj))
        return obj

    # -- test controls -----------------------------------------------------
    def fault(self, path_regex, status, count=1, method=None, **extra):
        rule = dict({"path": path_regex, "status": status, "count": count}, **extra)
        if method:
            rule["method"] = method
        return self.must(201, "POST", "/fake/faults", rule)

    def clear_faults(self):
        self.must(200, "DELETE", "/fake/faults")

    def requests(self):
        return self.must(200, "GET", "/fake/requests")["items"]

    def compact(self):
        """Drop the watch history: watches and continue tokens from older versions get 410."""
        return int(self.must(200, "POST", "/fake/compact")["resourceVersion"])

    def reset(self):
        self.must(200, "POST", "/fake/reset")

    def wait(self, cond, timeout=10.0, what="condition"):
        deadline = time.time() + timeout
        while True:
            v = cond()
            if v:
                return v
            if time.time() > deadline:
                raise AssertionError("timed out waiting for " + what)
            time.sleep(0.05)
