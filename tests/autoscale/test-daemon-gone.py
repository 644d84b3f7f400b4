#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# `autoscale run` in the cloud node lifecycle controller's place: a Node
# not Ready whose instance bm-api no longer has (state "deleted", or purged
# and not listed at all) is deleted from the API server, as that
# controller does for the providers it knows (MonitorNodes in
# k8s.io/cloud-provider's node_lifecycle_controller.go).  Against the fake
# API server (tests/kube) and a stand-in bm-api whose pool "a" and
# instances the test holds, as test-daemon-drain.py.
#
# Each case_* function is one case, its docstring says what is expected.
# Arguments: names of cases to run (default: all).

import http.server
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemonenv import BmHandler, DaemonEnv, check, free_port, main  # noqa: E402


class BmState:
    """Pool "a" and its instances as bm-api lists them: a deleted instance
    stays listed with state "deleted" until it is purged (docs/bm.md)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.instances = {}  # id -> state; absent: purged
        self.lists = 0  # GET /v1/instances answered 200
        self.fail_lists = 0  # answer the next ones 500

    def pools(self):
        return {"items": [{"name": "a", "free": 4, "in_use": len(self.instances),
                           "template": {"cpu": "4", "memory": "8Gi", "min_size": 0,
                                        "max_size": 10}}]}

    def list(self):
        return {"items": [{"id": i, "pool": "a", "state": s, "created_at": 1}
                          for i, s in self.instances.items()]}


def bm_handler(state):
    class H(BmHandler):
        def do_GET(self):
            with state.lock:
                if self.path == "/v1/pools":
                    return self.reply(200, state.pools())
                if self.path == "/v1/instances":
                    if state.fail_lists > 0:
                        state.fail_lists -= 1
                        return self.reply(500, {"code": "internal", "message": "db locked"})
                    state.lists += 1
                    return self.reply(200, state.list())
            self.reply(404, {"code": "not_found", "message": "no such path"})

        def do_DELETE(self):
            self.reply(500, {"code": "internal", "message": "no instance DELETE expected"})

    return H


class Env(DaemonEnv):
    def __init__(self, name):
        self.bm = BmState()
        self.bm_port = free_port()
        super().__init__("as-gone-", name, self.bm_port)

    def start_bm(self):
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", self.bm_port),
                                                   bm_handler(self.bm))
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def lists(self):
        with self.bm.lock:
            return self.bm.lists

    def loops(self, n):
        """Wait for @n more loops that read bm-api (one GET /v1/instances each)."""
        want = self.lists() + n
        self.wait(lambda: self.lists() >= want, "%d more loops" % n, 10 + 3 * n)


def deletion_lines(env, node):
    return [l for l in env.log().splitlines() if 'deleting Node "%s": not Ready' % node in l]


def case_restart(env):
    """Instances deprovisioned while the daemon was down: their Nodes go after a restart.

    n1 (a-1) is Ready, n2 (a-2) and n3 (a-3) are NotReady (their kubelets
    stopped) with instances still active: the daemon leaves all three.
    While it is down, a-2 is deleted (listed with state "deleted") and
    a-3 purged (not listed at all, a 404).  After the restart n2 and n3
    are deleted, n3's DELETE refused (403) twice and tried again in the
    next loops; one log line per Node, and n1 stays.
    """
    env.bm.instances = {"a-1": "active", "a-2": "active", "a-3": "active"}
    env.start_bm()
    env.kube.add_node("n1", provider_id="yusur://a/a-1")
    env.kube.add_node("n2", provider_id="yusur://a/a-2", ready=False)
    env.kube.add_node("n3", provider_id="yusur://a/a-3", ready=False)
    env.start()
    env.loops(3)
    check(env.node("n2") and env.node("n3"), "a Node of a live instance was deleted")
    env.stop()
    with env.bm.lock:
        env.bm.instances["a-2"] = "deleted"
        del env.bm.instances["a-3"]
    env.kube.fault(r"^/api/v1/nodes/n3$", 403, count=2, method="DELETE")
    env.start()
    env.wait(lambda: env.node("n2") is None and env.node("n3") is None,
             "n2 and n3 to be deleted", 20)
    env.loops(3)
    check(env.node("n1") is not None, "n1 (instance active, Ready) was deleted")
    for n in ("n2", "n3"):
        check(len(deletion_lines(env, n)) == 1, "%s: deletion logged %d times"
              % (n, len(deletion_lines(env, n))))
    check("trying again each loop" in env.log(), "n3's failed deletion was not logged")
    n = sum(1 for r in env.kube.requests()
            if r.get("method") == "DELETE" and r.get("path") == "/api/v1/nodes/n3")
    check(n == 3, "%d DELETEs of node n3, not 2 refused and 1 done" % n)
    s, o = env.kube.get("/api/v1/events")
    check(len([e for e in o["items"] if e["reason"] == "DeletingNode"]) == 2,
          "DeletingNode events: %s" % [e["message"] for e in o["items"]])


def case_not_ours_or_alive(env):
    """Only a NotReady Node of a pool read, whose instance is gone, is deleted.

    Left: a NotReady Node whose instance is active, one without a
    providerID, one of another provider, one of a pool bm-api does not
    list (it cannot be checked), a Ready one whose instance is gone (its
    kubelet still reports, as the lifecycle controller leaves it), and
    with --dry-run even the one that qualifies.  Deleted without
    --dry-run: "gone" (yusur://a/a-8, not listed).
    """
    env.bm.instances = {"a-1": "active", "a-2": "deleted"}
    env.start_bm()
    keep = {"alive": "yusur://a/a-1", "none": None, "other": "aws:///us-east-1a/i-0123",
            "unread": "yusur://z/z-1"}
    for name, pid in keep.items():
        env.kube.add_node(name, provider_id=pid, ready=False)
    env.kube.add_node("ready", provider_id="yusur://a/a-2")
    env.kube.add_node("gone", provider_id="yusur://a/a-8", ready=False)
    env.start(["--dry-run"])
    env.loops(4)
    check(env.node("gone") is not None, "--dry-run deleted Node gone")
    env.stop()
    env.start()
    env.wait(lambda: env.node("gone") is None, "Node gone to be deleted", 20)
    env.loops(3)
    for name in list(keep) + ["ready"]:
        check(env.node(name) is not None, "Node %s was deleted" % name)
    check(len(deletion_lines(env, "gone")) == 1, "deletion of gone logged %d times"
          % len(deletion_lines(env, "gone")))


def case_bm_unreachable(env):
    """bm-api unreachable, then failing: nothing is deleted until it answers.

    With no answer (connection refused), then a 500 to GET /v1/instances,
    the provider cannot tell which instances are gone: the loop is
    skipped and no Node deleted.  Once bm-api answers, "gone" (its
    instance deleted) goes and "alive" stays.
    """
    env.bm.instances = {"a-1": "active", "a-2": "deleted"}
    env.kube.add_node("alive", provider_id="yusur://a/a-1", ready=False)
    env.kube.add_node("gone", provider_id="yusur://a/a-2", ready=False)
    env.start()
    env.wait(lambda: env.log().count("node groups not readable") >= 3,
             "three loops without bm-api", 20)
    check(env.node("gone") is not None, "Node gone deleted while bm-api was unreachable")
    with env.bm.lock:
        env.bm.fail_lists = 3
    env.start_bm()
    env.wait(lambda: env.bm.fail_lists == 0, "three failed lists", 20)
    check(env.node("gone") is not None, "Node gone deleted while bm-api failed")
    env.wait(lambda: env.node("gone") is None, "Node gone to be deleted", 20)
    env.loops(2)
    check(env.node("alive") is not None, "Node alive was deleted")


CASES = [case_restart, case_not_ours_or_alive, case_bm_unreachable]


if __name__ == "__main__":
    sys.exit(main(Env, CASES))
