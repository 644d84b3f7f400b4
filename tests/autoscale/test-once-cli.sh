#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# `autoscale once` command line: flags override the --options file, --now
# overrides the snapshot's time, bad options are usage errors (exit 2),
# bad files are failures (exit 1) naming the file, and `run` is still the
# issue-9 placeholder.

set -u

top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
bin=$top_builddir/autoscale/autoscale
dir=$top_srcdir/tests/autoscale/scenarios

command -v python3 >/dev/null || { echo "SKIP: python3 not installed (Debian package python3)"; exit 77; }

cli_test=test-once-cli
. "$top_srcdir/tests/cli-env.sh"

# run ARGS...: status in $rc, output in $tmp/out and $tmp/err
run() {
	"$bin" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

# group: the scale-up's node group in $tmp/out
group() {
	python3 -c 'import json,sys; print((json.load(open(sys.argv[1]))["scale_up"] or {}).get("node_group"))' "$tmp/out"
}

# least-nodes picks "large" (1 node), least-waste "small" (3 nodes, less waste)
snap=$dir/su-expander-least-nodes.json
echo '{"expander": "least-nodes", "seed": 3}' >"$tmp/opts.json"
run once --snapshot "$snap" --options "$tmp/opts.json"
[ "$rc" -eq 0 ] && [ "$(group)" = large ] || fail "options file: exit $rc, group $(group), expected large"
run once --options "$tmp/opts.json" --snapshot "$snap" --expander least-waste
[ "$rc" -eq 0 ] && [ "$(group)" = small ] || fail "flag over options file: exit $rc, group $(group), expected small"
run once --snapshot "$snap"
[ "$(group)" = small ] || fail "default expander: group $(group), expected small (least-waste)"

echo '{"expander": "least-nodes", "scale-down-unneded-time": "5m"}' >"$tmp/bad.json"
run once --snapshot "$snap" --options "$tmp/bad.json"
[ "$rc" -eq 1 ] && grep -q 'bad.json: unknown option "scale-down-unneded-time"' "$tmp/err" ||
	fail "unknown option in file: exit $rc, stderr $(cat "$tmp/err")"
echo '{"max-scale-down-parallelism": 0}' >"$tmp/range.json"
run once --snapshot "$snap" --options "$tmp/range.json"
[ "$rc" -eq 1 ] && grep -q 'range.json: option "max-scale-down-parallelism": "0" is not an integer in \[1, 1000000\]' "$tmp/err" ||
	fail "out-of-range option in file: exit $rc, stderr $(cat "$tmp/err")"

run once --snapshot "$snap" --expander cheapest
[ "$rc" -eq 2 ] && grep -q '"cheapest"' "$tmp/err" && [ ! -s "$tmp/out" ] ||
	fail "bad --expander: exit $rc, stderr $(cat "$tmp/err")"
run once --snapshot "$snap" --scale-down-unneeded-time 10minutes
[ "$rc" -eq 2 ] || fail "bad duration: exit $rc"
run once --snapshot "$snap" --now yesterday
[ "$rc" -eq 2 ] || fail "bad --now: exit $rc"
run once
[ "$rc" -eq 2 ] && grep -q 'missing --snapshot' "$tmp/err" || fail "no --snapshot: exit $rc"
run once --snapshot "$tmp/none.json"
[ "$rc" -eq 1 ] && grep -q 'none.json' "$tmp/err" || fail "missing file: exit $rc"
run run --in-cluster
[ "$rc" -eq 2 ] && grep -q 'cloud-provider' "$tmp/err" || fail "run: exit $rc, stderr $(cat "$tmp/err")"
run run --in-cluster --cloud-provider=yusur --cloud-config "$tmp/none.conf"
[ "$rc" -eq 1 ] && grep -q 'none.conf' "$tmp/err" || fail "run, no cloud config: exit $rc, stderr $(cat "$tmp/err")"
run run --kubeconfig a --in-cluster --cloud-provider=yusur --cloud-config x
[ "$rc" -eq 2 ] || fail "run with --kubeconfig and --in-cluster: exit $rc"

# --now wins over the snapshot's now: unneeded since 11:55, more than 10m needed (CA:
# since + 10m must be before now)
snap=$dir/sd-not-unneeded-long-enough.json
run once --snapshot "$snap" --now 2024-05-01T12:05:00Z
grep -q '"n1": "NotUnneededLongEnough"' "$tmp/out" || fail "--now 12:05:00: n1 should stay"
run once --snapshot "$snap" --now 2024-05-01T12:05:01Z
python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["scale_down"]["nodes"] != ["n1"])' "$tmp/out" ||
	fail "--now 12:05:01: n1 should go"
# booleans take Go's forms
run once --snapshot "$snap" --now 2024-05-01T12:05:01Z --scale-down-enabled=false
grep -q '"scale_down_status": "ScaleDownDisabled"' "$tmp/out" || fail "--scale-down-enabled=false"

cli_finish "ok: autoscale once command line"
