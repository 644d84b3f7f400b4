#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# fake-apiserver.py: a Kubernetes API server test double (Python 3 stdlib).
#
# A real kube-apiserver (plus etcd, scheduler, kubelets) cannot run on the
# test machines, so the autoscaler's Kubernetes client is tested against this
# program instead.  It answers on the same paths with the same JSON shapes as
# kube-apiserver for the subset the autoscaler and kubectl use, and the
# conformance test (tests/kube/test-fake-kubectl.sh) runs the real kubectl
# against it so it cannot drift from the real API.
#
# What it reproduces:
#  - core/v1 nodes, pods (+ status, binding, eviction), namespaces, events,
#    configmaps; policy/v1 poddisruptionbudgets; apps/v1 deployments,
#    replicasets, statefulsets, daemonsets; batch/v1 jobs;
#    coordination.k8s.io/v1 leases; events.k8s.io/v1 events (stored as core
#    events, converted on the way in and out, as the real server does).
#  - get, list (labelSelector, fieldSelector, limit/continue), watch (chunked
#    JSON lines, resourceVersion replay from a bounded window of events per
#    resource like the watch cache's, 410 Expired once that window has moved
#    past the requested version, bookmarks, sendInitialEvents), create, update (optimistic concurrency on
#    metadata.resourceVersion), patch (JSON merge, strategic merge, JSON
#    patch), delete (graceful deletion of bound pods, finalizers),
#    deletecollection.  One global resourceVersion counter, like etcd's
#    revision.  Errors are metav1 Status objects with the real reason/code.
#  - Discovery (/api, /apis, APIResourceList), /version, /healthz, /livez,
#    /readyz, and meta.k8s.io Table output for kubectl's human printing.
#  - The controllers the autoscaler depends on, in miniature: a scheduler
#    (resources, nodeSelector, required node affinity, taints/tolerations,
#    cordon; PodScheduled=False/Unschedulable for the rest), a kubelet that
#    runs bound pods and finishes graceful deletions, the disruption
#    controller (PDB status), pod GC for pods of deleted nodes, the node
#    lifecycle taints (unschedulable, not-ready) and an ownerReference GC.
#  - Plain HTTP, or HTTPS with a throw-away CA (openssl CLI), bearer token
#    and client certificate authentication; a kubeconfig for clients.
#  - Test controls under /fake/: fault injection, request log, watch history
#    compaction, reset; --state FILE keeps the objects across a restart.
#
# What it does not: no workload controllers (Deployments do not create
# ReplicaSets, nor ReplicaSets pods), no admission beyond namespace
# existence, no RBAC (any authenticated user may do anything; anonymous only
# health and version), little validation, no protobuf, no server-side apply,
# no HTTP/2, no aggregated discovery (clients fall back to the per-group
# documents), an OpenAPI document without schemas (kubectl then validates
# nothing client-side), no preemption, no NoExecute eviction, namespaces are
# deleted at once with their contents, list pages are cut from
# the current state rather than an etcd snapshot, and after a restart the
# watch history starts empty (so old resourceVersions get 410, as they do
# when a real apiserver's watch cache restarts).

import argparse
import base64
import copy
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import uuid
from collections import deque
from datetime import datetime, timezone
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

VERSION = {
    "major": "1",
    "minor": "29",
    "gitVersion": "v1.29.0-fake",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2024-01-01T00:00:00Z",
    "goVersion": "go1.21.5",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def now_iso(t=None):
    return datetime.fromtimestamp(time.time() if t is None else t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


# ---------------------------------------------------------------------------
# Errors: metav1 Status

REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
           405: "MethodNotAllowed", 406: "NotAcceptable", 409: "Conflict", 410: "Expired",
           415: "UnsupportedMediaType", 422: "Invalid", 429: "TooManyRequests",
           500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout"}


class ApiError(Exception):
    def __init__(self, code, message, reason=None, details=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASONS.get(code, "Unknown")
        self.details = details

    def status(self):
        st = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
              "message": self.message, "reason": self.reason, "code": self.code}
        if self.details is not None:
            st["details"] = self.details
        return st


def qualified(res):
    return res.plural + ("." + res.group if res.group else "")


def details(res, name):
    d = {"kind": res.plural}
    if name:
        d["name"] = name
    if res.group:
        d["group"] = res.group
    return d


def no_route():
    return ApiError(404, "the server could not find the requested resource", details={})


def not_found(res, name):
    return ApiError(404, '%s "%s" not found' % (qualified(res), name), details=details(res, name))


def conflict(res, name, why):
    return ApiError(409, 'Operation cannot be fulfilled on %s "%s": %s' % (qualified(res), name, why),
                    details=details(res, name))


def invalid(res, name, field, why):
    return ApiError(422, '%s "%s" is invalid: %s: %s' % (res.kind, name, field, why),
                    details=dict(details(res, name), kind=res.kind,
                                 causes=[{"reason": "FieldValueInvalid", "message": why, "field": field}]))


def success_status(code=200, d=None):
    st = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}
    if d:
        st["details"] = d
    return st


# ---------------------------------------------------------------------------
# Resources served

class Resource:
    def __init__(self, group, version, plural, kind, namespaced, short=(), status=True,
                 verbs=None, singular=None):
        self.group, self.version, self.plural, self.kind = group, version, plural, kind
        self.namespaced, self.short, self.has_status = namespaced, list(short), status
        self.singular = singular or kind.lower()
        self.verbs = verbs or ["create", "delete", "deletecollection", "get", "list", "patch",
                               "update", "watch"]
        self.gv = group + "/" + version if group else version
        # Where objects live: events.k8s.io events share core events' storage.
        self.store_key = "events" if plural == "events" else (group + "/" if group else "") + plural


RESOURCES = [
    Resource("", "v1", "pods", "Pod", True, ["po"]),
    Resource("", "v1", "nodes", "Node", False, ["no"]),
    Resource("", "v1", "namespaces", "Namespace", False, ["ns"],
             verbs=["create", "delete", "get", "list", "patch", "update", "watch"]),
    Resource("", "v1", "events", "Event", True, ["ev"], status=False),
    Resource("", "v1", "configmaps", "ConfigMap", True, ["cm"], status=False),
    Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ["pdb"]),
    Resource("apps", "v1", "deployments", "Deployment", True, ["deploy"]),
    Resource("apps", "v1", "replicasets", "ReplicaSet", True, ["rs"]),
    Resource("apps", "v1", "statefulsets", "StatefulSet", True, ["sts"]),
    Resource("apps", "v1", "daemonsets", "DaemonSet", True, ["ds"]),
    Resource("batch", "v1", "jobs", "Job", True),
    Resource("coordination.k8s.io", "v1", "leases", "Lease", True, status=False),
    Resource("events.k8s.io", "v1", "events", "Event", True, ["ev"], status=False),
]
BY_GV = {}
for _r in RESOURCES:
    BY_GV.setdefault(_r.gv, {})[_r.plural] = _r
GROUPS = []  # (group, version) in discovery order, core excluded
for _r in RESOURCES:
    if _r.group and (_r.group, _r.version) not in GROUPS:
        GROUPS.append((_r.group, _r.version))
KIND_TO_RES = {(r.gv, r.kind): r for r in RESOURCES}

# Subresources listed in discovery: (parent, name, group, version, kind, verbs)
SUBRESOURCES = [
    ("pods", "binding", "", "v1", "Binding", ["create"]),
    ("pods", "eviction", "policy", "v1", "Eviction", ["create"]),
    ("pods", "status", "", "v1", "Pod", ["get", "patch", "update"]),
    ("nodes", "status", "", "v1", "Node", ["get", "patch", "update"]),
    ("namespaces", "status", "", "v1", "Namespace", ["get", "patch", "update"]),
    ("poddisruptionbudgets", "status", "", "", "PodDisruptionBudget", ["get", "patch", "update"]),
    ("deployments", "status", "", "", "Deployment", ["get", "patch", "update"]),
    ("replicasets", "status", "", "", "ReplicaSet", ["get", "patch", "update"]),
    ("statefulsets", "status", "", "", "StatefulSet", ["get", "patch", "update"]),
    ("daemonsets", "status", "", "", "DaemonSet", ["get", "patch", "update"]),
    ("jobs", "status", "", "", "Job", ["get", "patch", "update"]),
]


def api_resource_list(gv):
    out = []
    group = gv.split("/")[0] if "/" in gv else ""
    for res in BY_GV[gv].values():
        e = {"name": res.plural, "singularName": res.singular, "namespaced": res.namespaced,
             "kind": res.kind, "verbs": res.verbs}
        if res.short:
            e["shortNames"] = res.short
        if res.plural in ("pods", "deployments", "replicasets", "statefulsets", "daemonsets", "jobs"):
            e["categories"] = ["all"]
        out.append(e)
        for parent, sub, sgroup, sversion, kind, verbs in SUBRESOURCES:
            if parent != res.plural:
                continue
            s = {"name": parent + "/" + sub, "singularName": "", "namespaced": res.namespaced,
                 "kind": kind, "verbs": verbs}
            if sgroup and sgroup != group:
                s["group"], s["version"] = sgroup, sversion
            out.append(s)
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": out}


def api_group(group, version):
    gv = {"groupVersion": group + "/" + version, "version": version}
    return {"name": group, "versions": [gv], "preferredVersion": gv}


# ---------------------------------------------------------------------------
# Selectors

LABEL_REQ = re.compile(r"^\s*(!?)\s*([A-Za-z0-9._/-]+)\s*(?:(==|=|!=|\s+in\s+|\s+notin\s+)\s*(.*?))?\s*$")


def split_top(s):
    """Split a selector on commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return parts


def parse_label_selector(s):
    reqs = []
    for part in split_top(s or ""):
        m = LABEL_REQ.match(part)
        if not m:
            raise ApiError(400, "unable to parse requirement: %s" % part.strip())
        neg, key, op, val = m.group(1), m.group(2), (m.group(3) or "").strip(), m.group(4)
        if neg:
            if op:
                raise ApiError(400, "unable to parse requirement: %s" % part.strip())
            reqs.append((key, "DoesNotExist", []))
        elif not op:
            reqs.append((key, "Exists", []))
        elif op in ("in", "notin"):
            v = val.strip()
            if not (v.startswith("(") and v.endswith(")")):
                raise ApiError(400, "unable to parse requirement: found '%s', expected: '('" % v)
            vals = [x.strip() for x in v[1:-1].split(",")]
            reqs.append((key, "In" if op == "in" else "NotIn", vals))
        else:
            reqs.append((key, "NotIn" if op == "!=" else "In", [val.strip()]))
    return reqs


def match_requirements(reqs, labels):
    labels = labels or {}
    for key, op, vals in reqs:
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
        if op == "In" and labels.get(key) not in vals:
            return False
        if op == "NotIn" and key in labels and labels[key] in vals:
            return False
    return True


def selector_to_reqs(sel):
    """A metav1.LabelSelector (matchLabels + matchExpressions) as requirements."""
    if sel is None:
        return None
    reqs = [(k, "In", [v]) for k, v in (sel.get("matchLabels") or {}).items()]
    for e in sel.get("matchExpressions") or []:
        reqs.append((e["key"], e["operator"], e.get("values") or []))
    return reqs


def field_value(obj, path):
    cur = obj
    for p in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(p)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


FIELDS = {
    "pods": ["spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
             "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"],
    "nodes": ["spec.unschedulable"],
    "namespaces": ["status.phase"],
    "events": ["involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
               "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
               "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"],
    "replicasets": ["status.replicas"],
    "jobs": ["status.successful"],
}


def parse_field_selector(s, res):
    reqs = []
    allowed = ["metadata.name", "metadata.namespace"] + FIELDS.get(res.plural, [])
    for part in split_top(s or ""):
        m = re.match(r"^\s*([A-Za-z0-9._]+)\s*(!=|==|=)\s*(.*?)\s*$", part)
        if not m:
            raise ApiError(400, 'invalid selector: \'%s\'; can\'t understand \'%s\'' % (s, part))
        if m.group(1) not in allowed:
            raise ApiError(400, 'field label not supported: %s' % m.group(1))
        reqs.append((m.group(1), m.group(2) == "!=", m.group(3)))
    return reqs


def match_fields(reqs, obj):
    for path, neg, val in reqs:
        if path == "source" and "source" in obj:
            got = field_value(obj, "source.component")
        else:
            got = field_value(obj, path)
        if (got == val) == neg:
            return False
    return True


# ---------------------------------------------------------------------------
# Patches

# Strategic merge: lists merged by key (the patchMergeKey of the Go types);
# other lists are replaced, as for fields without a patchStrategy.
MERGE_KEYS = {"containers": "name", "initContainers": "name", "ephemeralContainers": "name",
              "env": "name", "volumes": "name", "volumeMounts": "mountPath",
              "imagePullSecrets": "name", "ports": "containerPort", "conditions": "type",
              "addresses": "type", "ownerReferences": "uid"}
PRIMITIVE_MERGE = {"finalizers"}


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def strategic_merge(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: v for k, v in copy.deepcopy(patch).items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for k, v in patch.items():
        if k.startswith("$setElementOrder/") or k in ("$retainKeys", "$patch"):
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            field = k.split("/", 1)[1]
            out[field] = [x for x in out.get(field) or [] if x not in v]
            continue
        if v is None:
            out.pop(k, None)
        elif isinstance(v, list) and k in MERGE_KEYS and isinstance(out.get(k), list):
            out[k] = merge_list(out[k], v, MERGE_KEYS[k])
        elif isinstance(v, list) and k in PRIMITIVE_MERGE and isinstance(out.get(k), list):
            out[k] = out[k] + [x for x in v if x not in out[k]]
        elif isinstance(v, list):
            out[k] = [x for x in copy.deepcopy(v) if not (isinstance(x, dict) and "$patch" in x)]
        else:
            r = strategic_merge(out.get(k), v)
            if r is None:
                out.pop(k, None)
            else:
                out[k] = r
    if retain is not None:
        out = {k: v for k, v in out.items() if k in retain}
    return out


def merge_list(cur, patch, key):
    if any(isinstance(x, dict) and x.get("$patch") == "replace" for x in patch):
        return [x for x in copy.deepcopy(patch) if not (isinstance(x, dict) and "$patch" in x)]
    out = copy.deepcopy(cur)
    for item in patch:
        if not isinstance(item, dict):
            out.append(item)
            continue
        idx = next((i for i, x in enumerate(out) if isinstance(x, dict) and x.get(key) == item.get(key)), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                del out[idx]
        elif idx is None:
            out.append(strategic_merge({}, item))
        else:
            out[idx] = strategic_merge(out[idx], item)
    return out


def pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, "invalid JSON pointer %r" % path)
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def json_patch(doc, ops):
    doc = copy.deepcopy(doc)
    if not isinstance(ops, list):
        raise ApiError(400, "json patch must be a list of operations")

    def walk(parts):
        cur = doc
        for p in parts[:-1]:
            cur = cur[int(p)] if isinstance(cur, list) else cur[p]
        return cur, parts[-1]

    def get(parts):
        cur = doc
        for p in parts:
            cur = cur[int(p)] if isinstance(cur, list) else cur[p]
        return cur

    def remove(parts):
        parent, last = walk(parts)
        if isinstance(parent, list):
            return parent.pop(int(last))
        return parent.pop(last)

    def add(parts, value):
        parent, last = walk(parts)
        if isinstance(parent, list):
            parent.insert(len(parent) if last == "-" else int(last), value)
        else:
            parent[last] = value

    for op in ops:
        try:
            kind, parts = op["op"], pointer(op["path"])
            if kind == "add":
                add(parts, copy.deepcopy(op["value"]))
            elif kind == "remove":
                remove(parts)
            elif kind == "replace":
                remove(parts)
                add(parts, copy.deepcopy(op["value"]))
            elif kind == "move":
                add(parts, remove(pointer(op["from"])))
            elif kind == "copy":
                add(parts, copy.deepcopy(get(pointer(op["from"]))))
            elif kind == "test":
                if get(parts) != op.get("value"):
                    raise ApiError(422, "the server rejected our request due to an error in our request")
            else:
                raise ApiError(400, "Unexpected kind: %s" % kind)
        except (KeyError, IndexError, ValueError, TypeError):
            raise ApiError(422, "the server rejected our request due to an error in our request")
    return doc


# ---------------------------------------------------------------------------
# Quantities and scheduling helpers

SUFFIX = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
          "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
          "P": Decimal("1e15"), "E": Decimal("1e18"), "Ki": Decimal(2 ** 10), "Mi": Decimal(2 ** 20),
          "Gi": Decimal(2 ** 30), "Ti": Decimal(2 ** 40), "Pi": Decimal(2 ** 50), "Ei": Decimal(2 ** 60)}


def quantity(q):
    if isinstance(q, (int, float)):
        return Decimal(str(q))
    m = re.match(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)$", str(q).strip())
    if not m:
        raise ValueError("bad quantity %r" % q)
    return Decimal(m.group(1)) * SUFFIX[m.group(2)]


def bad_quantity(obj):
    """The first resource quantity of a pod or node object that does not parse, or None."""
    spec = obj.get("spec") or {}
    found = []
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            res = (c or {}).get("resources") or {}
            for part in ("requests", "limits"):
                found += list((res.get(part) or {}).values())
    found += list((spec.get("overhead") or {}).values())
    st = obj.get("status") or {}
    for part in ("capacity", "allocatable"):
        found += list((st.get(part) or {}).values())
    for q in found:
        try:
            quantity(q)
        except (ValueError, ArithmeticError):
            return q
    return None


def pod_requests(pod):
    spec = pod.get("spec") or {}
    total = {}
    for c in spec.get("containers") or []:
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            total[k] = total.get(k, Decimal(0)) + quantity(v)
    for c in spec.get("initContainers") or []:
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            total[k] = max(total.get(k, Decimal(0)), quantity(v))
    for k, v in (spec.get("overhead") or {}).items():
        total[k] = total.get(k, Decimal(0)) + quantity(v)
    total["pods"] = Decimal(1)
    return total


def qos_class(spec):
    res = [c.get("resources") or {} for c in (spec.get("containers") or []) + (spec.get("initContainers") or [])]
    if not any(r.get("requests") or r.get("limits") for r in res):
        return "BestEffort"
    if all(set((r.get("limits") or {})) >= {"cpu", "memory"} and r.get("limits") == r.get("requests")
           for r in res):
        return "Guaranteed"
    return "Burstable"


def tolerates(tolerations, taint):
    for t in tolerations or []:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if not t.get("key"):
            if t.get("operator") == "Exists":
                return True
            continue
        if t["key"] != taint.get("key"):
            continue
        if t.get("operator") == "Exists" or (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def node_ready(node):
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def match_node_selector_term(term, node):
    labels = node["metadata"].get("labels") or {}
    for e in term.get("matchExpressions") or []:
        key, op, vals = e["key"], e["operator"], e.get("values") or []
        have = key in labels
        v = labels.get(key)
        ok = {"In": have and v in vals, "NotIn": not have or v not in vals, "Exists": have,
              "DoesNotExist": not have,
              "Gt": have and v.isdigit() and vals and int(v) > int(vals[0]),
              "Lt": have and v.isdigit() and vals and int(v) < int(vals[0])}.get(op, False)
        if not ok:
            return False
    for e in term.get("matchFields") or []:
        v = node["metadata"]["name"] if e["key"] == "metadata.name" else None
        if (e["operator"] == "In") != (v in (e.get("values") or [])):
            return False
    return True


def pod_matches_node_selectors(pod, node):
    spec = pod.get("spec") or {}
    labels = node["metadata"].get("labels") or {}
    for k, v in (spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return False
    req = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
           .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if req and req.get("nodeSelectorTerms"):
        return any(match_node_selector_term(t, node) for t in req["nodeSelectorTerms"])
    return True


def pod_terminal(pod):
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def pod_healthy(pod):
    if pod["metadata"].get("deletionTimestamp") or (pod.get("status") or {}).get("phase") != "Running":
        return False
    for c in pod["status"].get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def scaled(value, total, round_up):
    if isinstance(value, int):
        return value
    m = re.match(r"^(\d+)%$", str(value))
    if not m:
        return int(value)
    n = int(m.group(1)) * total
    return -(-n // 100) if round_up else n // 100


def set_condition(conds, cond):
    """Replace the condition of the same type; keep lastTransitionTime when status holds."""
    for i, c in enumerate(conds):
        if c.get("type") == cond["type"]:
            if c.get("status") == cond["status"]:
                cond["lastTransitionTime"] = c.get("lastTransitionTime", cond.get("lastTransitionTime"))
            conds[i] = cond
            return
    conds.append(cond)


# ---------------------------------------------------------------------------
# The store: objects, the revision counter and the watch history

class Event:
    __slots__ = ("rv", "key", "type", "obj", "old")

    def __init__(self, rv, key, type_, obj, old):
        self.rv, self.key, self.type, self.obj, self.old = rv, key, type_, obj, old


class Store:
    def __init__(self, history):
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.rv = 0
        self.objects = {}          # store_key -> {(namespace, name): object}
        # Like the apiserver's watch cache, a window of recent events per
        # resource: a watch or continue token older than its resource's
        # window gets 410 Expired.
        self.history_len = history
        self.history = {}          # store_key -> deque of Event
        self.dropped = {}          # store_key -> rv of the newest event dropped from its window
        self.floor = 0             # events with rv <= floor are gone for every resource
        self.closing = False
        self.watch_epoch = 0       # bumped by /fake/close-watches: open watches end
        self.pdb_dirty = set()     # namespaces whose PDB status must be recomputed

    # -- persistence -------------------------------------------------------
    def seed(self):
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            if ("", ns) not in self.objects.get("namespaces", {}):
                self.create(RES["namespaces"], None, {"metadata": {"name": ns}})

    def dump(self):
        with self.lock:
            return {"resourceVersion": self.rv,
                    "objects": {k: list(v.values()) for k, v in self.objects.items()}}

    def load(self, data):
        with self.lock:
            self.rv = int(data["resourceVersion"])
            self.floor = self.rv
            self.history.clear()
            self.objects = {}
            for key, objs in data["objects"].items():
                for o in objs:
                    self.objects.setdefault(key, {})[(o["metadata"].get("namespace", ""), o["metadata"]["name"])] = o

    def reset(self):
        with self.lock:
            for key, objs in list(self.objects.items()):
                for k in list(objs):
                    self._emit(key, "DELETED", None, objs.pop(k))
            self.seed()

    def compact(self):
        with self.lock:
            self.history.clear()
            self.floor = self.rv

    # -- primitives (caller holds the lock) --------------------------------
    def _emit(self, key, type_, obj, old):
        self.rv += 1
        if obj is not None:
            obj["metadata"]["resourceVersion"] = str(self.rv)
        if type_ == "DELETED":
            old = copy.deepcopy(old)
            old["metadata"]["resourceVersion"] = str(self.rv)
            obj, old = old, None
        window = self.history.setdefault(key, deque(maxlen=self.history_len))
        if len(window) == window.maxlen:
            self.dropped[key] = window[0].rv
        window.append(Event(self.rv, key, type_, copy.deepcopy(obj), old))
        ns = obj["metadata"].get("namespace", "")
        if key in ("pods", "policy/poddisruptionbudgets"):
            self.pdb_dirty.add(ns)
        self.cond.notify_all()

    def _put(self, res, obj, old):
        m = obj["metadata"]
        self.objects.setdefault(res.store_key, {})[(m.get("namespace", ""), m["name"])] = obj
        self._emit(res.store_key, "ADDED" if old is None else "MODIFIED", obj, old)

    def _remove(self, res, obj):
        m = obj["metadata"]
        del self.objects[res.store_key][(m.get("namespace", ""), m["name"])]
        self._emit(res.store_key, "DELETED", None, obj)

    def lookup(self, res, ns, name):
        return self.objects.get(res.store_key, {}).get((ns or "", name))

    def must(self, res, ns, name):
        obj = self.lookup(res, ns, name)
        if obj is None:
            raise not_found(res, name)
        return obj

    def items(self, res, ns=None):
        objs = self.objects.get(res.store_key, {})
        return [objs[k] for k in sorted(objs) if ns is None or k[0] == ns]

    # -- verbs ------------------------------------------------------------
    def create(self, res, ns, body):
        with self.lock:
            obj = copy.deepcopy(body)
            m = obj.setdefault("metadata", {})
            if not m.get("name") and m.get("generateName"):
                m["name"] = m["generateName"] + uuid.uuid4().hex[:5]
            name = m.get("name") or ""
            if not name:
                raise invalid(res, name, "metadata.name", "Required value: name or generateName is required")
            if not re.match(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", name) or len(name) > 253:
                raise invalid(res, name, "metadata.name",
                              'Invalid value: "%s": a lowercase RFC 1123 subdomain must consist of lower '
                              "case alphanumeric characters, '-' or '.', and must start and end with an "
                              "alphanumeric character" % name)
            if res.namespaced:
                if m.get("namespace") and ns and m["namespace"] != ns:
                    raise ApiError(400, "the namespace of the provided object does not match the "
                                        "namespace sent on the request")
                m["namespace"] = ns
                if self.lookup(RES["namespaces"], "", ns) is None:
                    raise not_found(RES["namespaces"], ns)
            else:
                m.pop("namespace", None)
            if self.lookup(res, ns, name) is not None:
                raise ApiError(409, '%s "%s" already exists' % (qualified(res), name),
                               reason="AlreadyExists", details=details(res, name))
            for f in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
                m.pop(f, None)
            m["uid"] = str(uuid.uuid4())
            m["creationTimestamp"] = now_iso()
            obj = typed(res, obj)
            self._default(res, obj)
            self._put(res, obj, None)
            return obj

    def _default(self, res, obj):
        m = obj["metadata"]
        if res.plural in ("deployments", "replicasets", "statefulsets", "daemonsets", "jobs",
                          "poddisruptionbudgets"):
            m["generation"] = 1
            obj.setdefault("status", {})
        if res.plural == "pods":
            spec = obj.setdefault("spec", {})
            spec.setdefault("restartPolicy", "Always")
            spec.setdefault("terminationGracePeriodSeconds", 30)
            spec.setdefault("dnsPolicy", "ClusterFirst")
            spec.setdefault("schedulerName", "default-scheduler")
            spec.setdefault("priority", 0)
            for c in spec.get("containers") or []:
                r = c.setdefault("resources", {})
                if r.get("limits") and "requests" not in r:
                    r["requests"] = dict(r["limits"])
                elif r.get("limits"):
                    for k, v in r["limits"].items():
                        r["requests"].setdefault(k, v)
            obj["status"] = {"phase": "Pending", "qosClass": qos_class(spec)}
        if res.plural == "namespaces":
            obj["spec"] = {"finalizers": ["kubernetes"]}
            obj["status"] = {"phase": "Active"}
            m.setdefault("labels", {})["kubernetes.io/metadata.name"] = m["name"]
        if res.plural == "nodes":
            obj.setdefault("spec", {})
            obj.setdefault("status", {})

    def update(self, res, ns, name, body, subresource=None, check_rv=True):
        with self.lock:
            old = self.must(res, ns, name)
            obj = copy.deepcopy(body)
            m = obj.setdefault("metadata", {})
            if m.get("name", name) != name:
                raise ApiError(400, "the name of the object (%s) does not match the name on the URL (%s)"
                               % (m.get("name"), name))
            if check_rv and m.get("resourceVersion") and m["resourceVersion"] != old["metadata"]["resourceVersion"]:
                raise conflict(res, name, "the object has been modified; please apply your changes to "
                                          "the latest version and try again")
            if subresource == "status":
                new = copy.deepcopy(old)
                new["status"] = obj.get("status", {})
                obj = new
            else:
                if res.has_status:
                    obj["status"] = copy.deepcopy(old.get("status", {}))
                keep = {k: old["metadata"][k] for k in ("uid", "creationTimestamp", "deletionTimestamp",
                                                         "deletionGracePeriodSeconds", "generation",
                                                         "namespace") if k in old["metadata"]}
                m.update(keep)
                m["name"] = name
                for k in ("deletionTimestamp", "deletionGracePeriodSeconds"):
                    if k not in keep:
                        m.pop(k, None)
                if "generation" in keep and obj.get("spec") != old.get("spec"):
                    m["generation"] = keep["generation"] + 1
            obj = typed(res, obj)
            if obj == old or _same_but_rv(obj, old):
                return old
            if res.plural == "pods" and obj["spec"].get("nodeName") != old["spec"].get("nodeName") \
                    and old["spec"].get("nodeName"):
                raise invalid(res, name, "spec", "Forbidden: pod updates may not change fields other than "
                                                 "`spec.containers[*].image`, `spec.initContainers[*].image`, "
                                                 "`spec.activeDeadlineSeconds`, `spec.tolerations` (only "
                                                 "additions to existing tolerations)")
            obj["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            if m.get("deletionTimestamp") and not m.get("finalizers") and not \
                    (res.plural == "pods" and old["spec"].get("nodeName") and not pod_terminal(obj)):
                self._put(res, obj, old)
                self._remove(res, obj)
                return obj
            self._put(res, obj, old)
            return obj

    def delete(self, res, ns, name, opts):
        with self.lock:
            obj = self.must(res, ns, name)
            pre = opts.get("preconditions") or {}
            if pre.get("uid") and pre["uid"] != obj["metadata"]["uid"]:
                raise conflict(res, name, "Precondition failed: UID in precondition: %s, UID in object "
                                          "meta: %s" % (pre["uid"], obj["metadata"]["uid"]))
            if pre.get("resourceVersion") and pre["resourceVersion"] != obj["metadata"]["resourceVersion"]:
                raise conflict(res, name, "the object has been modified; please apply your changes to "
                                          "the latest version and try again")
            grace = 0
            if res.plural == "pods" and obj["spec"].get("nodeName") and not pod_terminal(obj):
                grace = opts.get("gracePeriodSeconds")
                if grace is None:
                    grace = obj["spec"].get("terminationGracePeriodSeconds", 30)
                grace = int(grace)
            if grace > 0 or obj["metadata"].get("finalizers"):
                m = obj["metadata"]
                if m.get("deletionTimestamp") and grace >= int(m.get("deletionGracePeriodSeconds", 0)):
                    return obj
                new = copy.deepcopy(obj)
                new["metadata"]["deletionTimestamp"] = now_iso(time.time() + grace)
                new["metadata"]["deletionGracePeriodSeconds"] = grace
                self._put(res, new, obj)
                return new
            self._remove(res, obj)
            if res.plural == "namespaces":
                for r in RESOURCES:
                    if r.namespaced and r.store_key == (r.group + "/" if r.group else "") + r.plural:
                        for o in self.items(r, name):
                            self._remove(r, o)
            if opts.get("propagationPolicy") != "Orphan":
                self.collect_garbage(obj["metadata"]["uid"])
            return obj

    def collect_garbage(self, owner_uid):
        """Background propagation: delete dependents of owner_uid that have no other owner left."""
        uids = {o["metadata"]["uid"] for objs in self.objects.values() for o in objs.values()}
        for r in RESOURCES:
            if r.store_key != (r.group + "/" if r.group else "") + r.plural:
                continue
            for o in self.items(r):
                refs = [ref.get("uid") for ref in o["metadata"].get("ownerReferences") or []]
                if owner_uid in refs and not any(u in uids for u in refs) \
                        and self.lookup(r, o["metadata"].get("namespace"), o["metadata"]["name"]) is o:
                    self.delete(r, o["metadata"].get("namespace"), o["metadata"]["name"], {})

    # -- watch ------------------------------------------------------------
    def events_after(self, rv, key):
        """Events for key newer than rv, or None when rv is older than the history."""
        if rv < self.compacted(key):
            return None
        return [e for e in self.history.get(key, ()) if e.rv > rv]

    def compacted(self, key):
        """Events of key with rv <= this are gone."""
        return max(self.floor, self.dropped.get(key, 0))


def typed(res, obj):
    """obj with kind and apiVersion first, in storage form (events.k8s.io events are core events)."""
    gv = "v1" if res.store_key == "events" else res.gv
    return dict({"kind": res.kind, "apiVersion": gv}, **{k: v for k, v in obj.items() if k not in ("kind", "apiVersion")})


def _same_but_rv(a, b):
    a = copy.deepcopy(a)
    a["metadata"]["resourceVersion"] = b["metadata"].get("resourceVersion")
    return a == b


RES = {r.plural: r for r in RESOURCES if not r.group or r.plural != "events"}
RES["events"] = BY_GV["v1"]["events"]


# ---------------------------------------------------------------------------
# events.k8s.io/v1 <-> core/v1 Event

EV_MAP = [("regarding", "involvedObject"), ("note", "message"), ("reportingController", "reportingComponent"),
          ("deprecatedSource", "source"), ("deprecatedFirstTimestamp", "firstTimestamp"),
          ("deprecatedLastTimestamp", "lastTimestamp"), ("deprecatedCount", "count")]


def event_to_core(ev):
    out = copy.deepcopy(ev)
    for new, old in EV_MAP:
        if new in out:
            out[old] = out.pop(new)
    return out


def event_from_core(ev):
    out = copy.deepcopy(ev)
    for new, old in EV_MAP:
        if old in out:
            out[new] = out.pop(old)
    out["apiVersion"] = "events.k8s.io/v1"
    return out


def present(res, obj):
    """The object as this resource's group/version shows it."""
    if res.group == "events.k8s.io":
        return event_from_core(obj)
    return obj


# ---------------------------------------------------------------------------
# Controllers: scheduler, kubelet, disruption controller, pod GC, node taints

class Controllers(threading.Thread):
    def __init__(self, store, interval, kill_delay, orphan_delay):
        super().__init__(daemon=True)
        self.store, self.interval, self.kill_delay = store, interval, kill_delay
        self.orphan_delay, self.orphans = orphan_delay, {}

    def run(self):
        while not self.store.closing:
            try:
                self.step()
            except Exception as e:  # a controller bug must not kill the server
                print("fake-apiserver: controller: %r" % e, file=sys.stderr)
            time.sleep(self.interval)

    def step(self):
        s = self.store
        with s.lock:
            self.node_taints()
            self.kubelet()
            self.pod_gc()
            self.schedule()
            self.pdbs()

    def node_taints(self):
        s = self.store
        for node in s.items(RES["nodes"]):
            want = []
            if node["spec"].get("unschedulable"):
                want.append("node.kubernetes.io/unschedulable")
            if not node_ready(node):
                want.append("node.kubernetes.io/not-ready")
            managed = ("node.kubernetes.io/unschedulable", "node.kubernetes.io/not-ready")
            taints = node["spec"].get("taints") or []
            new = [t for t in taints if t.get("key") not in managed or t["key"] in want]
            for k in want:
                if not any(t.get("key") == k and t.get("effect") == "NoSchedule" for t in new):
                    new.append({"key": k, "effect": "NoSchedule", "timeAdded": now_iso()})
            if new != taints:
                n = copy.deepcopy(node)
                n["spec"]["taints"] = new
                if not new:
                    del n["spec"]["taints"]
                s._put(RES["nodes"], n, node)

    def kubelet(self):
        s = self.store
        now = time.time()
        for pod in s.items(RES["pods"]):
            m, node_name = pod["metadata"], pod["spec"].get("nodeName")
            node = s.lookup(RES["nodes"], "", node_name) if node_name else None
            if node is None or not node_ready(node):
                continue  # nobody runs or stops pods of a node that is gone or not ready
            if m.get("deletionTimestamp"):
                started = parse_iso(m["deletionTimestamp"]) - int(m.get("deletionGracePeriodSeconds", 0))
                if now >= min(parse_iso(m["deletionTimestamp"]), started + self.kill_delay):
                    if m.get("finalizers"):
                        continue
                    s._remove(RES["pods"], pod)
                continue
            if pod["status"].get("phase") == "Pending":
                new = copy.deepcopy(pod)
                st = new["status"]
                addrs = (node.get("status") or {}).get("addresses") or []
                ip = next((a["address"] for a in addrs if a.get("type") == "InternalIP"), "10.0.0.1")
                st.update({"phase": "Running", "hostIP": ip, "podIP": ip, "startTime": now_iso()})
                conds = st.setdefault("conditions", [])
                for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready"):
                    set_condition(conds, {"type": t, "status": "True", "lastProbeTime": None,
                                          "lastTransitionTime": now_iso()})
                st["containerStatuses"] = [
                    {"name": c.get("name", ""), "image": c.get("image", ""), "imageID": "", "ready": True,
                     "restartCount": 0, "started": True, "state": {"running": {"startedAt": now_iso()}},
                     "lastState": {}} for c in pod["spec"].get("containers") or []]
                s._put(RES["pods"], new, pod)

    def pod_gc(self):
        """Pods bound to a node that stays gone for orphan_delay are deleted (podgc's quarantine)."""
        s, now, orphans = self.store, time.monotonic(), {}
        for pod in s.items(RES["pods"]):
            node_name = pod["spec"].get("nodeName")
            if node_name and s.lookup(RES["nodes"], "", node_name) is None:
                uid = pod["metadata"]["uid"]
                orphans[uid] = self.orphans.get(uid, now)
                if now - orphans[uid] >= self.orphan_delay:
                    s._remove(RES["pods"], pod)
        self.orphans = orphans

    def schedule(self):
        s = self.store
        nodes = s.items(RES["nodes"])
        used = {n["metadata"]["name"]: {} for n in nodes}
        for pod in s.items(RES["pods"]):
            nn = pod["spec"].get("nodeName")
            if nn in used and not pod_terminal(pod):
                for k, v in pod_requests(pod).items():
                    used[nn][k] = used[nn].get(k, Decimal(0)) + v
        pending = [p for p in s.items(RES["pods"]) if not p["spec"].get("nodeName")
                   and not p["metadata"].get("deletionTimestamp") and not pod_terminal(p)
                   and p["spec"].get("schedulerName", "default-scheduler") == "default-scheduler"]
        pending.sort(key=lambda p: (-int(p["spec"].get("priority") or 0), p["metadata"]["creationTimestamp"],
                                    p["metadata"]["namespace"], p["metadata"]["name"]))
        for pod in pending:
            reasons, fits = {}, []
            req = pod_requests(pod)
            for node in nodes:
                why = self.fit(pod, req, node, used[node["metadata"]["name"]])
                if why:
                    for w in why:
                        reasons[w] = reasons.get(w, 0) + 1
                else:
                    fits.append(node)
            if fits:
                node = min(fits, key=lambda n: (self.utilisation(n, used[n["metadata"]["name"]]),
                                                n["metadata"]["name"]))
                name = node["metadata"]["name"]
                for k, v in req.items():
                    used[name][k] = used[name].get(k, Decimal(0)) + v
                bind(s, pod, name)
                continue
            if not nodes:
                msg = "no nodes available to schedule pods"
            else:
                msg = "0/%d nodes are available: %s." % (len(nodes), ", ".join(
                    "%d %s" % (n, w) for w, n in sorted(reasons.items())))
            cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": msg,
                    "lastProbeTime": None, "lastTransitionTime": now_iso()}
            old = next((c for c in pod["status"].get("conditions") or [] if c.get("type") == "PodScheduled"), None)
            if old and old.get("reason") == "Unschedulable" and old.get("message") == msg:
                continue
            new = copy.deepcopy(pod)
            set_condition(new["status"].setdefault("conditions", []), cond)
            s._put(RES["pods"], new, pod)

    @staticmethod
    def fit(pod, req, node, used):
        why = []
        if not node_ready(node):
            why.append("node(s) were not ready")
        tol = pod["spec"].get("tolerations")
        if node["spec"].get("unschedulable") and not tolerates(
                tol, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}):
            why.append("node(s) were unschedulable")
        for t in node["spec"].get("taints") or []:
            if t.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tol, t) \
                    and t.get("key") != "node.kubernetes.io/unschedulable":
                why.append("node(s) had untolerated taint {%s: %s}" % (t.get("key"), t.get("value", "")))
                break
        if not pod_matches_node_selectors(pod, node):
            why.append("node(s) didn't match Pod's node affinity/selector")
        alloc = (node.get("status") or {}).get("allocatable") or (node.get("status") or {}).get("capacity") or {}
        for k, v in req.items():
            have = quantity(alloc[k]) if k in alloc else Decimal(0)
            if used.get(k, Decimal(0)) + v > have:
                why.append("Too many pods" if k == "pods" else "Insufficient " + k)
        return why

    @staticmethod
    def utilisation(node, used):
        """The larger of cpu and memory requested/allocatable: the scheduler prefers the emptiest node."""
        alloc = (node.get("status") or {}).get("allocatable") or {}
        fr = [float(used.get(k, 0)) / float(quantity(alloc[k])) for k in ("cpu", "memory")
              if k in alloc and quantity(alloc[k]) > 0]
        return max(fr) if fr else 0.0

    def pdbs(self):
        s = self.store
        dirty, s.pdb_dirty = s.pdb_dirty, set()
        for ns in dirty:
            pods = s.items(RES["pods"], ns)
            for pdb in s.items(RES["poddisruptionbudgets"], ns):
                reqs = selector_to_reqs(pdb["spec"].get("selector"))
                matching = [p for p in pods
                            if reqs is not None and match_requirements(reqs, p["metadata"].get("labels"))]
                # Evicted pods stay in disruptedPods until their deletion shows (or 2 minutes pass)
                # and do not count as healthy meanwhile.
                live = {p["metadata"]["name"] for p in matching if not p["metadata"].get("deletionTimestamp")}
                disrupted = {n: t for n, t in (pdb["status"].get("disruptedPods") or {}).items()
                             if n in live and time.time() - parse_iso(t) < 120} or None
                healthy = sum(1 for p in matching if pod_healthy(p) and p["metadata"]["name"] not in (disrupted or {}))
                spec = pdb["spec"]
                failed = False
                if spec.get("maxUnavailable") is None and isinstance(spec.get("minAvailable", 1), int):
                    expected = len(matching)
                    desired = spec.get("minAvailable", 1)
                else:
                    expected = self.expected_scale(matching)
                    failed = expected is None
                    expected = expected or 0
                    if spec.get("maxUnavailable") is not None:
                        desired = max(0, expected - scaled(spec["maxUnavailable"], expected, True))
                    else:
                        desired = scaled(spec["minAvailable"], expected, True)
                allowed = 0 if failed else max(0, healthy - desired)
                st = {"observedGeneration": pdb["metadata"].get("generation", 1), "disruptionsAllowed": allowed,
                      "currentHealthy": healthy, "desiredHealthy": desired, "expectedPods": expected,
                      "disruptedPods": disrupted}
                cond = {"type": "DisruptionAllowed", "status": "True" if allowed > 0 else "False",
                        "reason": "SyncFailed" if failed else "SufficientPods" if allowed > 0 else "InsufficientPods",
                        "message": "found no controllers for some pods" if failed else "",
                        "observedGeneration": st["observedGeneration"], "lastTransitionTime": now_iso()}
                conds = copy.deepcopy(pdb["status"].get("conditions") or [])
                set_condition(conds, cond)
                st["conditions"] = conds
                if {k: pdb["status"].get(k) for k in st} != st:
                    new = copy.deepcopy(pdb)
                    new["status"].update(st)
                    if disrupted is None:
                        del new["status"]["disruptedPods"]
                    s._put(RES["poddisruptionbudgets"], new, pdb)


    def expected_scale(self, pods):
        """Sum of the replicas of the pods' controllers, as the disruption controller finds them
        for maxUnavailable and percentages; None when a pod has no controller with a scale."""
        s, seen, total = self.store, set(), 0
        for p in pods:
            ref = next((r for r in p["metadata"].get("ownerReferences") or [] if r.get("controller")), None)
            if ref is None or ref.get("kind") not in ("ReplicaSet", "StatefulSet", "Deployment"):
                return None
            ns = p["metadata"]["namespace"]
            owner = s.lookup(RES[ref["kind"].lower() + "s"], ns, ref["name"])
            if owner is None or owner["metadata"]["uid"] != ref.get("uid"):
                return None
            dref = next((r for r in owner["metadata"].get("ownerReferences") or []
                         if r.get("controller") and r.get("kind") == "Deployment"), None)
            if dref and s.lookup(RES["deployments"], ns, dref["name"]) is not None:
                owner = s.lookup(RES["deployments"], ns, dref["name"])
            if owner["metadata"]["uid"] not in seen:
                seen.add(owner["metadata"]["uid"])
                total += int((owner.get("spec") or {}).get("replicas", 1))
        return total


def bind(store, pod, node_name):
    new = copy.deepcopy(pod)
    new["spec"]["nodeName"] = node_name
    set_condition(new["status"].setdefault("conditions", []),
                  {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                   "lastTransitionTime": now_iso()})
    store._put(RES["pods"], new, pod)
    return new


def evict(store, ns, name, body):
    """policy/v1 Eviction, as the registry's eviction REST does it."""
    pods = RES["pods"]
    with store.lock:
        pod = store.must(pods, ns, name)
        opts = (body or {}).get("deleteOptions") or {}
        phase = pod["status"].get("phase")
        if phase in ("Succeeded", "Failed", "Pending") or pod["metadata"].get("deletionTimestamp"):
            store.delete(pods, ns, name, opts)
            return success_status(201)
        store.controllers.pdbs()
        pdbs = [p for p in store.items(RES["poddisruptionbudgets"], ns)
                if p["spec"].get("selector") is not None
                and match_requirements(selector_to_reqs(p["spec"]["selector"]), pod["metadata"].get("labels"))]
        if len(pdbs) > 1:
            raise ApiError(500, "This pod has more than one PodDisruptionBudget, which the eviction "
                                "subresource does not support.")
        if pdbs:
            pdb = pdbs[0]
            st = pdb["status"]
            if st.get("disruptionsAllowed", 0) <= 0:
                e = ApiError(429, "Cannot evict pod as it would violate the pod's disruption budget.",
                             details={"causes": [{"reason": "DisruptionBudget", "message":
                                                  "The disruption budget %s needs %d healthy pods and has %d currently"
                                                  % (pdb["metadata"]["name"], st.get("desiredHealthy", 0),
                                                     st.get("currentHealthy", 0))}]})
                raise e
            new = copy.deepcopy(pdb)
            new["status"]["disruptionsAllowed"] = st["disruptionsAllowed"] - 1
            new["status"].setdefault("disruptedPods", {})[name] = now_iso()
            store._put(RES["poddisruptionbudgets"], new, pdb)
        store.delete(pods, ns, name, opts)
        return success_status(201)


# ---------------------------------------------------------------------------
# Table output (what `kubectl get` prints)

def age(ts):
    if not ts:
        return "<unknown>"
    d = int(time.time() - parse_iso(ts))
    if d < 120:
        return "%ds" % max(d, 0)
    if d < 7200:
        return "%dm" % (d // 60)
    if d < 172800:
        return "%dh" % (d // 3600)
    return "%dd" % (d // 86400)


def table_columns(res):
    col = lambda n, t="string", p=0, f="": {"name": n, "type": t, "format": f, "description": n, "priority": p}
    if res.plural == "nodes":
        return [col("Name", f="name"), col("Status"), col("Roles"), col("Age"), col("Version"),
                col("Internal-IP", p=1)]
    if res.plural == "pods":
        return [col("Name", f="name"), col("Ready"), col("Status"), col("Restarts", "string"), col("Age"),
                col("IP", p=1), col("Node", p=1)]
    return [col("Name", f="name"), col("Created At", "date")]


def table_cells(res, o):
    m = o["metadata"]
    if res.plural == "nodes":
        st = "Ready" if node_ready(o) else "NotReady"
        if o["spec"].get("unschedulable"):
            st += ",SchedulingDisabled"
        roles = ",".join(sorted(k.split("/", 1)[1] for k in m.get("labels") or {}
                                if k.startswith("node-role.kubernetes.io/"))) or "<none>"
        ip = next((a["address"] for a in (o.get("status") or {}).get("addresses") or []
                   if a.get("type") == "InternalIP"), "<none>")
        return [m["name"], st, roles, age(m.get("creationTimestamp")),
                ((o.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", ""), ip]
    if res.plural == "pods":
        cs = o["status"].get("containerStatuses") or []
        ready = "%d/%d" % (sum(1 for c in cs if c.get("ready")), len(o["spec"].get("containers") or []))
        st = "Terminating" if m.get("deletionTimestamp") else o["status"].get("phase", "")
        return [m["name"], ready, st, str(sum(c.get("restartCount", 0) for c in cs)),
                age(m.get("creationTimestamp")), o["status"].get("podIP", "<none>"),
                o["spec"].get("nodeName", "<none>")]
    return [m["name"], m.get("creationTimestamp")]


def to_table(res, objs, version, include, list_meta=None):
    rows = []
    for o in objs:
        row = {"cells": table_cells(res, o)}
        if include == "Object":
            row["object"] = o
        elif include != "None":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/" + version,
                             "metadata": o["metadata"]}
        rows.append(row)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/" + version, "metadata": list_meta or {},
            "columnDefinitions": table_columns(res), "rows": rows}


def wants_table(accept):
    for part in (accept or "").split(","):
        if "as=Table" in part:
            v = re.search(r"v=(v1beta1|v1)\b", part)
            return v.group(1) if v else "v1"
        if part.strip().split(";")[0] in ("application/json", "*/*"):
            return None
    return None


# ---------------------------------------------------------------------------
# HTTP

class Faults:
    def __init__(self):
        self.lock = threading.Lock()
        self.rules = []
        self.log = deque(maxlen=5000)

    def match(self, method, path, query):
        with self.lock:
            for r in self.rules:
                if r["count"] != 0 and re.search(r["path"], path) and r.get("method", method) == method \
                        and re.search(r.get("query", ""), query):
                    if r["count"] > 0:
                        r["count"] -= 1
                    return r
        return None


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-apiserver"

    def setup(self):
        super().setup()
        if isinstance(self.connection, ssl.SSLSocket):
            self.connection.settimeout(10)
            try:
                self.connection.do_handshake()
            finally:
                self.connection.settimeout(None)

    def log_message(self, fmt, *args):
        if self.server.opts.verbose:
            sys.stderr.write("fake-apiserver: %s\n" % (fmt % args))

    # -- plumbing ------------------------------------------------------------
    def send_json(self, code, obj, headers=None):
        data = json.dumps(obj, separators=(",", ":")).encode()
        # Logged before the client can read the answer: a test that asks
        # for the request log right after must find this request in it.
        self.record(code)
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_text(self, code, text):
        data = text.encode()
        self.record(code)
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def record(self, code):
        """Log the request; before its answer is sent (see send_json())."""
        if not self.path.startswith("/fake/"):
            self.server.faults.log.append({"method": self.command, "path": urlsplit(self.path).path,
                                           "query": urlsplit(self.path).query, "code": code})

    def read_body(self):
        """Read the whole request body before anything can fail, so that an early error
        reply leaves the keep-alive connection in step."""
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = b""
            while True:
                size = int(self.rfile.readline().strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    break
                raw += self.rfile.read(size)
                self.rfile.readline()
        self.raw = raw

    def body(self):
        if not self.raw:
            return None
        try:
            return json.loads(self.raw)
        except ValueError as e:
            raise ApiError(400, "the object provided is unrecognized or invalid JSON: %s" % e)

    def do_GET(self):
        self.dispatch()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET

    def dispatch(self):
        try:
            self.read_body()
            url = urlsplit(self.path)
            self.q = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
            path = url.path.rstrip("/") or "/"
            if path.startswith("/fake/"):
                return self.fake(path)
            user = self.authenticate()
            fault = self.server.faults.match(self.command, path, url.query)
            if fault:
                if fault.get("delay"):
                    time.sleep(fault["delay"])
                if fault.get("close"):
                    self.record(0)
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return None
                if fault.get("status"):
                    e = ApiError(fault["status"], fault.get("message", "injected fault"), fault.get("reason"))
                    hdr = {"Retry-After": str(fault["retryAfter"])} if "retryAfter" in fault else None
                    return self.send_json(e.code, e.status(), hdr)
            if path in ("/healthz", "/livez", "/readyz"):
                return self.send_text(200, "ok")
            if path == "/version":
                return self.send_json(200, VERSION)
            if path in ("/openapi/v2", "/openapi/v3"):
                return self.openapi(path)
            if user is None:
                raise ApiError(403, 'forbidden: User "system:anonymous" cannot %s path "%s"'
                               % (self.command.lower(), path))
            self.route(path)
        except ApiError as e:
            self.send_json(e.code, e.status())
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as e:  # report like the real server: 500 InternalError
            import traceback
            traceback.print_exc()
            err = ApiError(500, "Internal error occurred: %r" % e)
            try:
                self.send_json(500, err.status())
            except OSError:
                pass

    def authenticate(self):
        opts = self.server.opts
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            if opts.token_value and auth[7:].strip() == opts.token_value:
                return "token-user"
            raise ApiError(401, "Unauthorized")
        if isinstance(self.connection, ssl.SSLSocket):
            cert = self.connection.getpeercert()
            if cert:
                return dict(x[0] for x in cert["subject"]).get("commonName", "cert-user")
        if not opts.token_value and not opts.tls:
            return "anonymous-admin"  # plain HTTP without a token: no authentication, like an insecure port
        return None

    def openapi(self, path):
        """An OpenAPI document without schemas: kubectl's client-side validation finds no schema
        for any kind and accepts the object, as it does for kinds a server does not describe."""
        if path == "/openapi/v3":
            return self.send_json(200, {"paths": {}})
        if "protobuf" in (self.headers.get("Accept") or ""):
            # gnostic openapi_v2.Document{swagger: "2.0", info: {title, version}}
            title, version = b"fake-apiserver", VERSION["gitVersion"].encode()
            info = b"\x0a" + bytes([len(title)]) + title + b"\x12" + bytes([len(version)]) + version
            data = b"\x0a\x032.0" + b"\x12" + bytes([len(info)]) + info
            self.record(200)
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return None
        return self.send_json(200, {"swagger": "2.0", "info": {"title": "fake-apiserver",
                                                                "version": VERSION["gitVersion"]},
                                    "paths": {}, "definitions": {}})

    # -- test controls ---------------------------------------------------------
    def fake(self, path):
        store, faults = self.server.store, self.server.faults
        if path == "/fake/faults" and self.command == "POST":
            rule = self.body() or {}
            rule.setdefault("count", -1)
            re.compile(rule["path"])
            with faults.lock:
                faults.rules.append(rule)
            return self.send_json(201, rule)
        if path == "/fake/faults" and self.command == "DELETE":
            with faults.lock:
                faults.rules.clear()
            return self.send_json(200, {})
        if path == "/fake/faults":
            with faults.lock:
                return self.send_json(200, {"items": faults.rules})
        if path == "/fake/requests":
            if self.command == "DELETE":
                faults.log.clear()
                return self.send_json(200, {})
            return self.send_json(200, {"items": list(faults.log)})
        if path == "/fake/reset" and self.command == "POST":
            with faults.lock:
                faults.rules.clear()
            faults.log.clear()
            store.reset()
            return self.send_json(200, {"resourceVersion": str(store.rv)})
        if path == "/fake/close-watches" and self.command == "POST":
            with store.lock:
                store.watch_epoch += 1
                store.cond.notify_all()
            return self.send_json(200, {})
        if path == "/fake/compact" and self.command == "POST":
            store.compact()
            return self.send_json(200, {"resourceVersion": str(store.rv)})
        if path == "/fake/state":
            return self.send_json(200, store.dump())
        raise no_route()

    # -- routing ------------------------------------------------------------
    def route(self, path):
        parts = path.strip("/").split("/")
        if path == "/api":
            host = self.headers.get("Host", "127.0.0.1")
            return self.send_json(200, {"kind": "APIVersions", "versions": ["v1"],
                                        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                                        "serverAddress": host}]})
        if path == "/apis":
            return self.send_json(200, {"kind": "APIGroupList", "apiVersion": "v1",
                                        "groups": [api_group(g, v) for g, v in GROUPS]})
        if parts[0] == "api" and len(parts) >= 2:
            gv, rest = parts[1], parts[2:]
        elif parts[0] == "apis" and len(parts) == 2:
            gs = [api_group(g, v) for g, v in GROUPS if g == parts[1]]
            if not gs:
                raise no_route()
            return self.send_json(200, dict(gs[0], kind="APIGroup", apiVersion="v1"))
        elif parts[0] == "apis" and len(parts) >= 3:
            gv, rest = parts[1] + "/" + parts[2], parts[3:]
        else:
            raise no_route()
        if gv not in BY_GV:
            raise no_route()
        if not rest:
            return self.send_json(200, api_resource_list(gv))
        watch_path = rest[0] == "watch"
        if watch_path:
            rest = rest[1:]
        ns = None
        if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] in BY_GV[gv]:
            ns, rest = rest[1], rest[2:]
        res = BY_GV[gv].get(rest[0]) if rest else None
        if res is None:
            raise no_route()
        if ns is not None and not res.namespaced:
            raise no_route()
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if len(rest) > 3:
            raise no_route()
        if res.namespaced and name is not None and ns is None:
            raise no_route()
        if watch_path or (name is None and self.command == "GET" and self.q.get("watch") in ("1", "true")):
            if name is not None:
                sel = [x for x in (self.q.get("fieldSelector"), "metadata.name=" + name) if x]
                self.q["fieldSelector"] = ",".join(sel)
            return self.watch(res, ns)
        if name is None:
            return self.collection(res, ns)
        return self.item(res, ns, name, sub)

    def collection(self, res, ns):
        store = self.server.store
        if self.command == "GET":
            return self.list(res, ns)
        if self.command == "POST":
            if res.namespaced and ns is None:
                raise ApiError(405, "the server does not allow this method on the requested resource")
            body = self.object_body(res)
            if self.q.get("dryRun"):
                return self.send_json(201, present(res, body))
            obj = store.create(res, ns, body)
            return self.send_json(201, present(res, obj))
        if self.command == "DELETE":
            opts = self.body() or {}
            lsel = parse_label_selector(self.q.get("labelSelector"))
            fsel = parse_field_selector(self.q.get("fieldSelector"), res)
            with store.lock:
                gone = [store.delete(res, o["metadata"].get("namespace"), o["metadata"]["name"], opts)
                        for o in store.items(res, ns) if match_requirements(lsel, o["metadata"].get("labels"))
                        and match_fields(fsel, o)]
            return self.send_json(200, self.list_object(res, gone, {"resourceVersion": str(store.rv)}))
        raise ApiError(405, "the server does not allow this method on the requested resource")

    def object_body(self, res):
        """The request's object, checked against the resource and in storage (core) form."""
        body = self.body()
        if not isinstance(body, dict):
            raise ApiError(400, "the object provided is unrecognized")
        self.check_kind(res, body)
        # Quantities are parsed while decoding, as the real server does: a bad one is 400.
        if res.kind in ("Pod", "Node") and bad_quantity(body) is not None:
            raise ApiError(400, "%s in version \"%s\" cannot be handled as a %s: quantities must match "
                                "the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
                           % (res.kind, res.version, res.kind))
        return event_to_core(body) if res.group == "events.k8s.io" else body

    def check_kind(self, res, body):
        if body.get("kind") and body["kind"] != res.kind:
            raise ApiError(400, "the API version in the data (%s) does not match the expected API version (%s)"
                           % (body.get("apiVersion"), res.gv) if body.get("apiVersion") != res.gv else
                           "%s in version \"%s\" cannot be handled as a %s: no kind \"%s\" is registered"
                           % (body["kind"], res.version, res.kind, body["kind"]))

    def list_object(self, res, items, meta):
        shown = []
        for o in items:
            o = present(res, o)
            o = {k: v for k, v in o.items() if k not in ("apiVersion", "kind")}
            shown.append(o)
        return {"kind": res.kind + "List", "apiVersion": res.gv, "metadata": meta, "items": shown}

    def selected(self, res, ns):
        store = self.server.store
        lsel = parse_label_selector(self.q.get("labelSelector"))
        fsel = parse_field_selector(self.q.get("fieldSelector"), res)
        return [o for o in store.items(res, ns) if match_requirements(lsel, o["metadata"].get("labels"))
                and match_fields(fsel, o)]

    def list(self, res, ns):
        store = self.server.store
        with store.lock:
            rv = store.rv
            cont = self.q.get("continue")
            start = None
            if cont:
                try:
                    tok = json.loads(base64.b64decode(cont + "=" * (-len(cont) % 4)))
                    rv, start = int(tok["rv"]), tok["start"]
                except (ValueError, KeyError, TypeError):
                    raise ApiError(400, "continue key is not valid: incorrect encoded start resourceVersion")
                if rv < store.compacted(res.store_key):
                    raise ApiError(410, "The provided continue parameter is too old to display a consistent "
                                        "list result. You can start a new list without the continue parameter.",
                                   reason="Expired")
            if self.q.get("resourceVersionMatch") == "Exact" and self.q.get("resourceVersion"):
                want = int(self.q["resourceVersion"])
                if want < store.compacted(res.store_key):
                    raise ApiError(410, "The resourceVersion for the provided list is too old.", reason="Expired")
            objs = self.selected(res, ns)
            key = lambda o: "%s/%s" % (o["metadata"].get("namespace", ""), o["metadata"]["name"])
            if start is not None:
                objs = [o for o in objs if key(o) >= start]
            meta = {"resourceVersion": str(rv)}
            limit = int(self.q.get("limit") or 0)
            if limit > 0 and self.server.max_page:
                # A server may return fewer items than asked (the real one does
                # when it filters); tests cut pages small this way.
                limit = min(limit, self.server.max_page)
            if limit > 0 and len(objs) > limit:
                rest = objs[limit:]
                objs = objs[:limit]
                tok = {"v": "meta.k8s.io/v1", "rv": rv, "start": key(rest[0])}
                meta["continue"] = base64.b64encode(json.dumps(tok).encode()).decode().rstrip("=")
                if not self.q.get("labelSelector") and not self.q.get("fieldSelector"):
                    meta["remainingItemCount"] = len(rest)
            objs = copy.deepcopy(objs)
        tv = wants_table(self.headers.get("Accept"))
        if tv:
            return self.send_json(200, to_table(res, [present(res, o) for o in objs], tv,
                                                self.q.get("includeObject", "Metadata"), meta))
        return self.send_json(200, self.list_object(res, objs, meta))

    def item(self, res, ns, name, sub):
        store = self.server.store
        allowed = {None} | {s[1] for s in SUBRESOURCES if s[0] == res.plural}
        if sub not in allowed:
            raise no_route()
        if sub == "eviction":
            if self.command != "POST":
                raise ApiError(405, "the server does not allow this method on the requested resource")
            body = self.body() or {}
            if (body.get("metadata") or {}).get("name", name) != name:
                raise ApiError(400, "name in URL does not match name in Eviction object")
            return self.send_json(201, evict(store, ns, name, body))
        if sub == "binding":
            if self.command != "POST":
                raise ApiError(405, "the server does not allow this method on the requested resource")
            body = self.body() or {}
            target = (body.get("target") or {}).get("name")
            with store.lock:
                pod = store.must(res, ns, name)
                if pod["spec"].get("nodeName"):
                    raise conflict(res, name, 'pod %s is already assigned to node "%s"'
                                   % (name, pod["spec"]["nodeName"]))
                if not target:
                    raise invalid(res, name, "target.name", "Required value")
                bind(store, pod, target)
            return self.send_json(201, success_status(201))
        if self.command in ("GET", "HEAD"):
            with store.lock:
                obj = copy.deepcopy(store.must(res, ns, name))
            tv = wants_table(self.headers.get("Accept"))
            if tv:
                return self.send_json(200, to_table(res, [present(res, obj)], tv,
                                                    self.q.get("includeObject", "Metadata"),
                                                    {"resourceVersion": obj["metadata"]["resourceVersion"]}))
            return self.send_json(200, present(res, obj))
        if self.command == "PUT":
            body = self.object_body(res)
            if self.q.get("dryRun"):
                return self.send_json(200, present(res, body))
            return self.send_json(200, present(res, store.update(res, ns, name, body, sub)))
        if self.command == "PATCH":
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            patch = self.body()
            with store.lock:
                cur = present(res, copy.deepcopy(store.must(res, ns, name)))
                if ctype == "application/merge-patch+json":
                    new = merge_patch(cur, patch)
                elif ctype == "application/strategic-merge-patch+json":
                    new = strategic_merge(cur, patch)
                elif ctype == "application/json-patch+json":
                    new = json_patch(cur, patch)
                else:
                    raise ApiError(415, "the body of the request was in an unknown format - accepted media "
                                        "types include: application/json-patch+json, "
                                        "application/merge-patch+json, application/strategic-merge-patch+json")
                if not isinstance(new, dict):
                    raise ApiError(400, "the patch did not produce an object")
                if res.group == "events.k8s.io":
                    new = event_to_core(new)
                new.setdefault("metadata", {})
                check = (new["metadata"].get("resourceVersion") or "") != cur["metadata"]["resourceVersion"]
                if not check:
                    new["metadata"].pop("resourceVersion", None)
                if self.q.get("dryRun"):
                    return self.send_json(200, present(res, new))
                obj = store.update(res, ns, name, new, sub)
            return self.send_json(200, present(res, obj))
        if self.command == "DELETE":
            opts = self.body() or {}
            if "gracePeriodSeconds" in self.q:
                opts["gracePeriodSeconds"] = int(self.q["gracePeriodSeconds"])
            if "propagationPolicy" in self.q:
                opts["propagationPolicy"] = self.q["propagationPolicy"]
            if self.q.get("dryRun"):
                with store.lock:
                    return self.send_json(200, present(res, copy.deepcopy(store.must(res, ns, name))))
            obj = store.delete(res, ns, name, opts)
            return self.send_json(200, present(res, obj))
        raise ApiError(405, "the server does not allow this method on the requested resource")

    # -- watch ----------------------------------------------------------------
    def watch(self, res, ns):
        store, opts = self.server.store, self.server.opts
        lsel = parse_label_selector(self.q.get("labelSelector"))
        fsel = parse_field_selector(self.q.get("fieldSelector"), res)
        timeout = float(self.q.get("timeoutSeconds") or opts.watch_timeout)
        bookmarks = self.q.get("allowWatchBookmarks") in ("1", "true")
        initial_events = self.q.get("sendInitialEvents") in ("1", "true")
        rv_param = self.q.get("resourceVersion", "")
        tv = wants_table(self.headers.get("Accept"))

        def match(o):
            return o is not None and (ns is None or o["metadata"].get("namespace") == ns) \
                and match_requirements(lsel, o["metadata"].get("labels")) and match_fields(fsel, o)

        def shape(o):
            o = present(res, o)
            return to_table(res, [o], tv, self.q.get("includeObject", "Metadata")) if tv else o

        # Taken before the client can see the response: a /fake/close-watches
        # it sends once the headers are in must end this watch too.
        epoch = store.watch_epoch
        self.record(200)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()

        def send(type_, obj):
            line = json.dumps({"type": type_, "object": obj}, separators=(",", ":")).encode() + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
            self.wfile.flush()

        def bookmark(rv, initial_end=False):
            meta = {"resourceVersion": str(rv)}
            if initial_end:
                meta["annotations"] = {"k8s.io/initial-events-end": "true"}
            send("BOOKMARK", {"kind": res.kind, "apiVersion": res.gv, "metadata": meta})

        deadline = time.monotonic() + timeout
        try:
            with store.lock:
                if rv_param in ("", "0") or initial_events:
                    last = store.rv
                    initial = [copy.deepcopy(o) for o in store.items(res, ns) if match(o)]
                    if rv_param not in ("", "0") and initial_events and int(rv_param) > last:
                        last = int(rv_param)
                else:
                    last = int(rv_param)
                    initial = []
                    if store.events_after(last, res.store_key) is None:
                        initial = None
                        compacted = store.compacted(res.store_key)
            if initial is None:
                send("ERROR", ApiError(410, "too old resource version: %d (%d)" % (last, compacted),
                                       reason="Expired").status())
                return self.end_chunks()
            for o in initial:
                send("ADDED", shape(o))
            if initial_events and bookmarks:
                bookmark(last, True)
            next_bookmark = time.monotonic() + opts.bookmark_interval
            while not store.closing and store.watch_epoch == epoch:
                err = None
                with store.lock:
                    evs = store.events_after(last, res.store_key)
                    if evs == []:
                        store.cond.wait(min(0.5, max(0.01, deadline - time.monotonic())))
                        evs = store.events_after(last, res.store_key)
                    seen = store.rv  # every event of this resource up to here is in evs
                    if evs is None:
                        err = ApiError(410, "too old resource version: %d (%d)"
                                       % (last, store.compacted(res.store_key)),
                                       reason="Expired").status()
                if err:
                    send("ERROR", err)
                    break
                for e in evs:
                    last = e.rv
                    old_m, new_m = match(e.old), match(e.obj)
                    if e.type == "DELETED":
                        if match(e.obj):
                            send("DELETED", shape(e.obj))
                    elif new_m and (e.type == "ADDED" or not old_m):
                        send("ADDED", shape(e.obj))
                    elif new_m:
                        send("MODIFIED", shape(e.obj))
                    elif old_m:
                        send("DELETED", shape(e.obj))  # left the selection: its new state
                last = max(last, seen)
                if time.monotonic() >= deadline:
                    break
                if bookmarks and time.monotonic() >= next_bookmark:
                    bookmark(last)
                    next_bookmark = time.monotonic() + opts.bookmark_interval
            self.end_chunks()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True

    def end_chunks(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


# ---------------------------------------------------------------------------
# TLS material and kubeconfig

def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def make_certs(d):
    os.makedirs(d, exist_ok=True)
    p = lambda n: os.path.join(d, n)
    if os.path.exists(p("server.crt")):
        return  # a restart keeps the CA its clients trust
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", p("ca.key"), "-out", p("ca.crt"),
            "-days", "2", "-subj", "/CN=fake-apiserver-ca")
    ext = p("server.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    for who, subj, extfile in (("server", "/CN=fake-apiserver", ext),
                               ("client", "/O=system:masters/CN=fake-admin", None)):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", p(who + ".key"), "-out", p(who + ".csr"),
                "-subj", subj)
        args = ["x509", "-req", "-in", p(who + ".csr"), "-CA", p("ca.crt"), "-CAkey", p("ca.key"),
                "-CAcreateserial", "-out", p(who + ".crt"), "-days", "2"]
        if extfile:
            args += ["-extfile", extfile]
        openssl(*args)


def b64file(path):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


def write_kubeconfig(path, server, opts):
    lines = ["apiVersion: v1", "kind: Config", "clusters:", "- name: fake", "  cluster:",
             "    server: %s" % server]
    if opts.tls:
        lines.append("    certificate-authority-data: %s" % b64file(os.path.join(opts.tls, "ca.crt")))
    lines += ["users:", "- name: fake", "  user:"]
    if opts.token_value:
        lines.append("    token: %s" % opts.token_value)
    elif opts.tls:
        lines.append("    client-certificate-data: %s" % b64file(os.path.join(opts.tls, "client.crt")))
        lines.append("    client-key-data: %s" % b64file(os.path.join(opts.tls, "client.key")))
    else:
        lines[-1] = "  user: {}"
    lines += ["contexts:", "- name: fake", "  context:", "    cluster: fake", "    user: fake",
              "    namespace: default", "current-context: fake", ""]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines))
    os.replace(tmp, path)


def write_serviceaccount(d, opts):
    """What /var/run/secrets/kubernetes.io/serviceaccount holds in a pod (for --in-cluster clients,
    with KUBERNETES_SERVICE_HOST=127.0.0.1 and KUBERNETES_SERVICE_PORT=<port>)."""
    os.makedirs(d, exist_ok=True)
    for name, text in (("token", opts.token_value), ("namespace", "kube-system")):
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    with open(os.path.join(opts.tls, "ca.crt")) as src, open(os.path.join(d, "ca.crt"), "w") as dst:
        dst.write(src.read())


def seed_objects(store, path):
    """Create each object of a JSON List/array, in order, through the same path as POST."""
    with open(path) as f:
        data = json.load(f)
    for obj in data.get("items", []) if isinstance(data, dict) else data:
        res = KIND_TO_RES.get((obj.get("apiVersion"), obj.get("kind")))
        if res is None:
            sys.exit("fake-apiserver: --seed: no resource for %s %s" % (obj.get("apiVersion"), obj.get("kind")))
        ns = (obj.get("metadata") or {}).get("namespace") or "default" if res.namespaced else None
        if res.group == "events.k8s.io":
            obj = event_to_core(obj)
        try:
            store.create(res, ns, obj)
        except ApiError as e:
            if e.reason != "AlreadyExists":  # a restart with --state reseeds the same objects
                sys.exit("fake-apiserver: --seed: %s" % e.message)


def save_state(store, path):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(store.dump(), f)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description="Kubernetes API server test double")
    ap.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: any free port)")
    ap.add_argument("--port-file", help="write the port here once listening")
    ap.add_argument("--tls", metavar="DIR", help="serve HTTPS; CA, server and client certs in DIR")
    ap.add_argument("--token", metavar="FILE", help="accept this bearer token (first line of FILE)")
    ap.add_argument("--kubeconfig-out", metavar="FILE", help="write a kubeconfig for clients")
    ap.add_argument("--serviceaccount-out", metavar="DIR",
                    help="write token, ca.crt and namespace as a pod's service account mount has them")
    ap.add_argument("--state", metavar="FILE", help="load objects at start, save them on SIGTERM/SIGINT")
    ap.add_argument("--seed", metavar="FILE", help="create the objects of this JSON List (or array) at start")
    ap.add_argument("--max-page", type=int, default=0,
                    help="at most this many items per list page, whatever the limit asked")
    ap.add_argument("--history", type=int, default=1000, help="watch history length in events")
    ap.add_argument("--bookmark-interval", type=float, default=5.0, help="seconds between watch bookmarks")
    ap.add_argument("--watch-timeout", type=float, default=1800.0, help="default watch length in seconds")
    ap.add_argument("--controller-interval", type=float, default=0.1, help="scheduler/kubelet period")
    ap.add_argument("--pod-kill-delay", type=float, default=0.2,
                    help="seconds the fake kubelet takes to stop a pod being deleted")
    ap.add_argument("--orphan-delay", type=float, default=1.0,
                    help="seconds before pods of a deleted node are deleted")
    ap.add_argument("--verbose", action="store_true", help="log each request to stderr")
    opts = ap.parse_args()
    opts.token_value = None
    if opts.token:
        with open(opts.token) as f:
            opts.token_value = f.readline().strip()

    store = Store(opts.history)
    if opts.state and os.path.exists(opts.state):
        with open(opts.state) as f:
            store.load(json.load(f))
    store.seed()
    if opts.seed:
        seed_objects(store, opts.seed)
    store.controllers = Controllers(store, opts.controller_interval, opts.pod_kill_delay, opts.orphan_delay)

    srv = Server(("127.0.0.1", opts.port), Handler)
    srv.opts, srv.store, srv.faults = opts, store, Faults()
    srv.max_page = opts.max_page
    scheme = "http"
    if opts.tls:
        make_certs(opts.tls)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(opts.tls, "server.crt"), os.path.join(opts.tls, "server.key"))
        ctx.load_verify_locations(os.path.join(opts.tls, "ca.crt"))
        ctx.verify_mode = ssl.CERT_OPTIONAL
        ctx.set_alpn_protocols(["http/1.1"])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)
        scheme = "https"
    port = srv.server_address[1]
    if opts.kubeconfig_out:
        write_kubeconfig(opts.kubeconfig_out, "%s://127.0.0.1:%d" % (scheme, port), opts)
    if opts.serviceaccount_out:
        if not (opts.tls and opts.token_value):
            sys.exit("fake-apiserver: --serviceaccount-out needs --tls and --token")
        write_serviceaccount(opts.serviceaccount_out, opts)

    def stop(signum, frame):
        store.closing = True
        with store.lock:
            store.cond.notify_all()
            if opts.state:
                save_state(store, opts.state)
        threading.Thread(target=srv.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    store.controllers.start()
    if opts.port_file:
        with open(opts.port_file + ".tmp", "w") as f:
            f.write("%d\n" % port)
        os.replace(opts.port_file + ".tmp", opts.port_file)
    print("fake-apiserver: listening on %s://127.0.0.1:%d" % (scheme, port), flush=True)
    srv.serve_forever(poll_interval=0.1)
    srv.server_close()


if __name__ == "__main__":
    main()
