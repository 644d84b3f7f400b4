#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Conformance of tests/kube/fake-apiserver.py against the real kubectl
# (Debian package kubernetes-client; $KUBECTL overrides): whatever kubectl
# needs from the API server (discovery, OpenAPI, Table printing, strategic
# merge patches, eviction, watch, wait-for-deletion) the fake must serve, or
# kubectl fails here.  Each step is checked through kubectl and through raw
# HTTP, so a mistake on either side shows.  Runs over HTTPS with a bearer
# token, then restarts the server with client-certificate authentication and
# checks that the objects survived.  Exits 77 only when kubectl is missing.

set -u

srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
KUBECTL=${KUBECTL:-kubectl}
command -v "$KUBECTL" >/dev/null 2>&1 || {
	echo "SKIP: kubectl not found (apt-get install kubernetes-client)"
	exit 77
}
command -v openssl >/dev/null 2>&1 || {
	echo "FAIL: openssl not found"
	exit 1
}

dir=$(mktemp -d "${TMPDIR:-/tmp}/fake-kubectl.XXXXXX")
server_pid=
watch_pid=
fails=0

cleanup() {
	for p in $watch_pid $server_pid; do
		kill "$p" 2>/dev/null
	done
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# gone PID: true once the process has exited (zombies count as gone here)
gone() {
	[ ! -e "/proc/$1/stat" ] || [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" = Z ]
}

start_server() {
	rm -f "$dir/port"
	# shellcheck disable=SC2086 # $1 holds optional arguments
	python3 "$srcdir/tests/kube/fake-apiserver.py" --port "${port:-0}" --port-file "$dir/port" \
		--tls "$dir/tls" --kubeconfig-out "$dir/kubeconfig" --state "$dir/state.json" $1 \
		>>"$dir/server.log" 2>&1 &
	server_pid=$!
	i=0
	while [ ! -s "$dir/port" ]; do
		i=$((i + 1))
		if [ $i -gt 200 ] || gone "$server_pid"; then
			cat "$dir/server.log"
			echo "FAIL: fake-apiserver did not start"
			exit 1
		fi
		sleep 0.1
	done
	port=$(cat "$dir/port")
}

stop_server() {
	kill -TERM "$server_pid"
	i=0
	until gone "$server_pid"; do
		i=$((i + 1))
		[ $i -gt 100 ] && break
		sleep 0.1
	done
	wait "$server_pid" 2>/dev/null
	server_pid=
}

k() {
	"$KUBECTL" --kubeconfig "$dir/kubeconfig" "$@"
}

# raw METHOD PATH [EXPR]: the HTTP status, or EXPR (Python, on the decoded
# JSON body `o`) evaluated and printed, using the same kubeconfig material.
raw() {
	python3 - "$dir" "$port" "$@" <<'EOF'
import json, os, ssl, sys, urllib.request, urllib.error
d, port, method, path = sys.argv[1:5]
expr = sys.argv[5] if len(sys.argv) > 5 else None
ctx = ssl.create_default_context(cafile=os.path.join(d, "tls", "ca.crt"))
req = urllib.request.Request("https://127.0.0.1:%s%s" % (port, path), method=method)
if os.path.exists(os.path.join(d, "token")):
    req.add_header("Authorization", "Bearer " + open(os.path.join(d, "token")).read().strip())
try:
    with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
        code, body = r.status, r.read()
except urllib.error.HTTPError as e:
    code, body = e.code, e.read()
o = json.loads(body)
print(eval(expr) if expr else code)
EOF
}

# until_eq WANT CMD...: retry CMD for up to 10 s until it prints WANT
until_eq() {
	want=$1
	shift
	i=0
	while [ $i -lt 100 ]; do
		got=$("$@" 2>&1)
		[ "$got" = "$want" ] && return 0
		i=$((i + 1))
		sleep 0.1
	done
	echo "  (wanted '$want', got '$got' from: $*)"
	return 1
}

echo "kubectl: $("$KUBECTL" version --client 2>/dev/null | head -1)"
echo "s3cret-token-for-kubectl" >"$dir/token"
start_server "--token $dir/token"
grep -q "certificate-authority-data:" "$dir/kubeconfig" || fail "kubeconfig has no CA data"

# --- seed two nodes and a pod with a PDB through kubectl create -f ---------
cat >"$dir/nodes.yaml" <<'EOF'
apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels: {kubernetes.io/hostname: node-a, pool: small}
status:
  capacity: {cpu: "2", memory: 4Gi, pods: "10"}
  allocatable: {cpu: "2", memory: 4Gi, pods: "10"}
  conditions: [{type: Ready, status: "True", reason: KubeletReady}]
  addresses: [{type: InternalIP, address: 10.9.0.1}]
---
apiVersion: v1
kind: Node
metadata:
  name: node-b
  labels: {kubernetes.io/hostname: node-b, pool: small}
status:
  capacity: {cpu: "2", memory: 4Gi, pods: "10"}
  allocatable: {cpu: "2", memory: 4Gi, pods: "10"}
  conditions: [{type: Ready, status: "True", reason: KubeletReady}]
  addresses: [{type: InternalIP, address: 10.9.0.2}]
EOF
cat >"$dir/web.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  labels: {app: web}
spec:
  nodeSelector: {kubernetes.io/hostname: node-a}
  containers:
  - name: web
    image: nginx
    resources: {requests: {cpu: 500m, memory: 256Mi}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 1
  selector:
    matchLabels: {app: web}
EOF
k create -f "$dir/nodes.yaml" >/dev/null || fail "kubectl create nodes"
k create -f "$dir/web.yaml" >/dev/null || fail "kubectl create pod and pdb"
k create -f "$dir/web.yaml" >/dev/null 2>"$dir/err" && fail "second create succeeded"
grep -q "AlreadyExists" "$dir/err" || fail "second create: $(cat "$dir/err")"

[ "$(raw GET /api/v1/nodes 'len(o["items"])')" = 2 ] || fail "raw node count"
[ "$(k get nodes -o json | python3 -c 'import json,sys; print(sorted(i["metadata"]["name"] for i in json.load(sys.stdin)["items"]))')" = "['node-a', 'node-b']" ] ||
	fail "kubectl get nodes -o json"
k get nodes >"$dir/out" || fail "kubectl get nodes"
grep -q "^node-a  *Ready " "$dir/out" || fail "kubectl get nodes table: $(cat "$dir/out")"

until_eq Running k get pod web-1 -o 'jsonpath={.status.phase}' || fail "web-1 not Running"
[ "$(k get pod web-1 -o 'jsonpath={.spec.nodeName}')" = node-a ] || fail "web-1 not scheduled on node-a"
[ "$(raw GET /api/v1/namespaces/default/pods/web-1 'o["spec"]["nodeName"]')" = node-a ] || fail "raw web-1 nodeName"
k get pods -A -o json >"$dir/all.json" || fail "kubectl get pods -A -o json"
[ "$(python3 -c 'import json,sys; print([(i["metadata"]["namespace"], i["metadata"]["name"]) for i in json.load(open(sys.argv[1]))["items"]])' "$dir/all.json")" = "[('default', 'web-1')]" ] ||
	fail "kubectl get pods -A: $(head -c 300 "$dir/all.json")"
until_eq 0 raw GET /apis/policy/v1/namespaces/default/poddisruptionbudgets/web 'o["status"].get("disruptionsAllowed")' ||
	fail "PDB disruptionsAllowed"
[ "$(k get pdb web -o 'jsonpath={.status.currentHealthy}')" = 1 ] || fail "kubectl get pdb status"

# --- watch: kubectl get pods -w sees a pod created over raw HTTP -----------
timeout 30 "$KUBECTL" --kubeconfig "$dir/kubeconfig" get pods -w -o name >"$dir/watch.out" 2>&1 &
watch_pid=$!
until_eq yes sh -c "grep -q '^pod/web-1\$' '$dir/watch.out' && echo yes" || fail "watch: initial list"
python3 - "$dir" "$port" <<'EOF' || fail "raw create web-2"
import json, os, ssl, sys, urllib.request
d, port = sys.argv[1:3]
ctx = ssl.create_default_context(cafile=os.path.join(d, "tls", "ca.crt"))
pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-2", "labels": {"app": "other"}},
       "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
req = urllib.request.Request("https://127.0.0.1:%s/api/v1/namespaces/default/pods" % port,
                             data=json.dumps(pod).encode(), method="POST",
                             headers={"Content-Type": "application/json",
                                      "Authorization": "Bearer " + open(os.path.join(d, "token")).read().strip()})
assert urllib.request.urlopen(req, context=ctx).status == 201
EOF
until_eq yes sh -c "grep -q '^pod/web-2\$' '$dir/watch.out' && echo yes" ||
	fail "watch: no event for web-2: $(cat "$dir/watch.out")"
kill "$watch_pid" 2>/dev/null
watch_pid=

# --- cordon / uncordon -----------------------------------------------------
k cordon node-a >/dev/null || fail "kubectl cordon"
[ "$(raw GET /api/v1/nodes/node-a 'o["spec"].get("unschedulable")')" = True ] || fail "raw: cordon"
until_eq "Ready,SchedulingDisabled" sh -c "'$KUBECTL' --kubeconfig '$dir/kubeconfig' get node node-a --no-headers | awk '{print \$2}'" ||
	fail "kubectl get node after cordon"
k uncordon node-a >/dev/null || fail "kubectl uncordon"
[ "$(raw GET /api/v1/nodes/node-a 'bool(o["spec"].get("unschedulable"))')" = False ] || fail "raw: uncordon"

# --- taint and its removal ---------------------------------------------------
k taint nodes node-b dedicated=batch:NoSchedule >/dev/null || fail "kubectl taint"
[ "$(raw GET /api/v1/nodes/node-b '[(t["key"], t.get("value"), t["effect"]) for t in o["spec"].get("taints", [])]')" = \
	"[('dedicated', 'batch', 'NoSchedule')]" ] || fail "raw: taint"
[ "$(k get node node-b -o 'jsonpath={.spec.taints[0].key}')" = dedicated ] || fail "kubectl: taint"
k taint nodes node-b dedicated=batch:NoSchedule >/dev/null 2>&1 && fail "same taint twice accepted"
k taint nodes node-b dedicated- >/dev/null || fail "kubectl taint removal"
[ "$(raw GET /api/v1/nodes/node-b 'o["spec"].get("taints", [])')" = "[]" ] || fail "raw: taint removal"

# --- drain: blocked by the PDB (eviction 429), then allowed ---------------------
if k drain node-a --force --timeout=3s >"$dir/drain.out" 2>&1; then
	fail "drain went through a PDB with disruptionsAllowed=0"
fi
grep -q "disruption budget" "$dir/drain.out" || fail "drain output: $(cat "$dir/drain.out")"
[ "$(raw GET /api/v1/namespaces/default/pods/web-1)" = 200 ] || fail "web-1 evicted despite the PDB"
k delete pdb web >/dev/null || fail "kubectl delete pdb"
k drain node-a --force --timeout=20s >"$dir/drain.out" 2>&1 || fail "drain: $(cat "$dir/drain.out")"
[ "$(raw GET /api/v1/namespaces/default/pods/web-1)" = 404 ] || fail "web-1 still there after drain"
grep -q "evicting pod default/web-1" "$dir/drain.out" || fail "drain did not evict: $(cat "$dir/drain.out")"

# --- delete pod (kubectl waits for the graceful deletion) and node ----------------
k delete pod web-2 --timeout=20s >/dev/null || fail "kubectl delete pod"
[ "$(raw GET /api/v1/namespaces/default/pods/web-2)" = 404 ] || fail "raw: web-2 still there"
k delete pod web-2 >/dev/null 2>"$dir/err" && fail "deleting a missing pod succeeded"
grep -q "NotFound" "$dir/err" || fail "delete missing pod: $(cat "$dir/err")"
k delete node node-b >/dev/null || fail "kubectl delete node"
[ "$(raw GET /api/v1/nodes/node-b)" = 404 ] || fail "raw: node-b still there"

# --- restart with client-certificate authentication; the state survives ---------
stop_server
rm -f "$dir/token"
start_server ""
grep -q "client-certificate-data:" "$dir/kubeconfig" || fail "kubeconfig has no client certificate"
[ "$(k get nodes -o name)" = node/node-a ] || fail "after restart: $(k get nodes -o name 2>&1)"
[ "$(k get node node-a -o 'jsonpath={.spec.unschedulable}')" = true ] || fail "after restart: node-a not cordoned"

if [ "$fails" -ne 0 ]; then
	echo "--- server log"
	tail -20 "$dir/server.log"
	echo "$fails check(s) failed"
	exit 1
fi
echo "ok: kubectl get/create/watch/cordon/taint/drain/delete against fake-apiserver"
