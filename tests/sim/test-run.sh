#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# sim run and sim compare from the command line, on the shipped examples:
# the same seed gives the same bytes; running every autoscaler loop in full
# (SIM_FULL_LOOPS=1) gives the same bytes as skipping idle loops (only the
# "run" line of summary.json, wall time and loop counts, may differ), with
# the engine's invariants checked after every step (SIM_CHECK=1); the
# outputs follow docs/sim-output.md (keys in order, one timeseries row per
# sample interval, pods conserved); the pooled example beats the
# dedicated one on pending time; --nodes and the openb example config
# run; a bad cluster config fails with one line naming file and key.

set -u

top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
sim=$top_builddir/sim/sim
ex=$top_srcdir/sim/examples

command -v python3 >/dev/null || { echo "SKIP: python3 not installed (Debian package python3)"; exit 77; }
cli_test=test-run
. "$top_srcdir/tests/cli-env.sh"

# same_run A B: summary.json (but its "run" line) and timeseries.csv equal.
same_run() {
	grep -v '^  "run": ' "$1/summary.json" >"$tmp/s1"
	grep -v '^  "run": ' "$2/summary.json" >"$tmp/s2"
	cmp -s "$tmp/s1" "$tmp/s2" || fail "$1 and $2: summary.json differs: $(diff "$tmp/s1" "$tmp/s2" | head -5)"
	cmp -s "$1/timeseries.csv" "$2/timeseries.csv" || fail "$1 and $2: timeseries.csv differs"
}

trace=$ex/mixed-workload.jsonl
for cfg in pooled dedicated; do
	expect 0 "$sim" run --trace "$trace" --cluster "$ex/mixed-$cfg.ini" --out "$tmp/$cfg.1" --seed 3 --quiet
	[ -s "$tmp/err" ] && fail "--quiet run wrote to stderr: $(cat "$tmp/err")"
	expect 0 "$sim" run --trace "$trace" --cluster "$ex/mixed-$cfg.ini" --out "$tmp/$cfg.2" --seed 3 --quiet
	same_run "$tmp/$cfg.1" "$tmp/$cfg.2"
	SIM_FULL_LOOPS=1 SIM_CHECK=1 expect 0 "$sim" run --trace "$trace" --cluster "$ex/mixed-$cfg.ini" --out "$tmp/$cfg.full" --seed 3 --quiet
	same_run "$tmp/$cfg.1" "$tmp/$cfg.full"
	for f in summary.json timeseries.csv report.html; do
		[ -s "$tmp/$cfg.1/$f" ] || fail "$cfg: no $f"
	done
done
# A different seed draws other provisioning delays.
expect 0 "$sim" run --trace "$trace" --cluster "$ex/mixed-pooled.ini" --out "$tmp/seed4" --seed 4 --quiet
cmp -s "$tmp/pooled.1/timeseries.csv" "$tmp/seed4/timeseries.csv" && fail "seeds 3 and 4 gave the same timeseries"

# The contract: keys and their order, the timeseries shape, conservation;
# skipping must have skipped, full loops must not have.
python3 - "$tmp/pooled.1" "$tmp/pooled.full" <<'PY' || fail "output contract"
import csv, json, sys
d, full = sys.argv[1], sys.argv[2]
s = json.load(open(d + "/summary.json"))
keys = ["schema", "name", "trace", "format", "cluster", "seed", "mode", "sim_start", "sim_end",
        "pods", "pending_seconds", "overall", "groups", "scale_ups", "scale_downs", "pool", "run"]
assert list(s) == keys, list(s)
assert s["schema"] == "dpu-offload/sim-summary/1" and s["name"] == "pooled" and s["mode"] == "pooled"
assert s["seed"] == 3 and s["format"] == "native"
p = s["pods"]
assert list(p) == ["total", "scheduled", "finished", "running_at_end", "pending_at_end",
                   "never_scheduled", "skipped_bad_records"]
assert p["total"] == 400 == p["finished"] + p["running_at_end"] + p["pending_at_end"], p
assert p["scheduled"] + p["never_scheduled"] == p["total"], p
assert list(s["pending_seconds"]) == ["p50", "p90", "p99", "max", "mean"]
gk = ["id", "class", "machine_hours", "cost", "cpu_alloc_mean", "cpu_alloc_p95", "mem_alloc_mean",
      "mem_alloc_p95", "nodes_peak", "nodes_mean", "scale_ups", "scale_downs"]
assert list(s["overall"]) == gk[2:], list(s["overall"])
assert [g["id"] for g in s["groups"]] == ["containers", "vms", "baremetal"]
assert [g["class"] for g in s["groups"]] == ["container", "vm", "baremetal"]
for g in s["groups"]:
    assert list(g) == gk, list(g)
    assert 0 <= g["cpu_alloc_mean"] <= g["cpu_alloc_p95"] <= 1, g
mh = sum(g["machine_hours"] for g in s["groups"])
assert abs(mh - s["overall"]["machine_hours"]) < 1e-3 * max(1, mh), (mh, s["overall"])
assert list(s["pool"]) == ["machines_total", "machines_used_peak"] and s["pool"]["machines_total"] == 14
assert list(s["run"]) == ["events", "loops", "loops_full", "wall_seconds"]
r = s["run"]
assert r["loops_full"] < r["loops"], r
assert json.load(open(full + "/summary.json"))["run"]["loops_full"] == r["loops"]
rows = list(csv.reader(open(d + "/timeseries.csv")))
assert rows[0] == ["t", "pending", "pool_free", "cpu_alloc", "mem_alloc", "nodes_total",
                   "nodes.containers", "nodes.vms", "nodes.baremetal"], rows[0]
# Rows every 10 s from 0, and one at sim_end (the final state) if that is off the grid.
end = s["sim_end"]
assert len(rows) - 1 == end // 10 + 1 + (end % 10 != 0), (len(rows), end)
assert int(rows[-1][0]) == end, (rows[-1], end)
for i, row in enumerate(rows[1:]):
    assert int(row[0]) == min(10 * i, end)
    assert int(row[5]) == sum(int(x) for x in row[6:]), row
    assert 0 <= float(row[3]) <= 1 and 0 <= int(row[2]) <= 14, row
PY

# compare: one directory per config, the combined summary, one report.
expect 0 "$sim" compare --trace "$trace" --cluster "$ex/mixed-pooled.ini" \
	--cluster "$ex/mixed-dedicated.ini" --out "$tmp/cmp" --seed 3 --quiet
same_run "$tmp/pooled.1" "$tmp/cmp/pooled"
same_run "$tmp/dedicated.1" "$tmp/cmp/dedicated"
[ -s "$tmp/cmp/report.html" ] || fail "compare: no report.html"
python3 - "$tmp/cmp" <<'PY' || fail "compare summary"
import json, sys
s = json.load(open(sys.argv[1] + "/summary.json"))
assert s["schema"] == "dpu-offload/sim-compare/1"
assert [r["name"] for r in s["runs"]] == ["pooled", "dedicated"]
pooled, ded = s["runs"]
# The pooling effect the example exists to show.
assert pooled["pending_seconds"]["mean"] < ded["pending_seconds"]["mean"], (pooled, ded)
PY

# The Alibaba 2023 sample: its node list as the pool, from the config or --nodes.
expect 0 "$sim" run --trace "$ex/openb_pod_list_sample.csv" --cluster "$ex/openb.ini" --out "$tmp/ob" --quiet
expect 0 "$sim" run --trace "$ex/openb_pod_list_sample.csv" --cluster "$ex/openb.ini" \
	--nodes "$ex/openb_node_list_sample.csv" --out "$tmp/ob2" --quiet
same_run "$tmp/ob" "$tmp/ob2"
grep -q '"machines_total": 24' "$tmp/ob/summary.json" || fail "openb: not the 24 sample nodes"

# --skip-bad: sim run says how many records it skipped, and the first.
printf 'id,arrival_ms,duration_ms,cpu_milli,memory_bytes\np1,0,1000,100,100\np2,1,1000,abc,100\np3,2,1000,100,100\n' >"$tmp/skip.csv"
expect 0 "$sim" run --skip-bad --trace "$tmp/skip.csv" --cluster "$ex/mixed-pooled.ini" --out "$tmp/skip"
grep -q "^sim: pooled: 2 pods, .*; skipped 1 bad records, the first: $tmp/skip.csv:3: field cpu_milli: \"abc\" is not a number\$" "$tmp/err" ||
	fail "--skip-bad: no skipped count: $(cat "$tmp/err")"
grep -q '"skipped_bad_records": 1}' "$tmp/skip/summary.json" || fail "--skip-bad: summary.json"

# Near the 10-year limit: the sample interval is raised, with a notice, so
# that timeseries.csv stays within 1,000,000 rows and the report renders
# (it was 31.5M rows, 682 MB, and the report refused it).  sim_end is
# 315,000,001 s: rows at 0, 320, ..., 315,000,000 and at the end, and the header.
printf 'id,arrival_ms,duration_ms,cpu_milli,memory_bytes\na,0,1000,100,100\nb,315000000000,1000,100,100\n' >"$tmp/decade.csv"
printf '[cluster]\n[machine m]\ncpu = 4\nmemory = 8Gi\ncount = 1\n[group g]\nclass = container\nmachine_types = m\nmin = 1\nmax = 1\n[autoscaler]\nscan-interval = 10s\n' >"$tmp/decade.ini"
expect 0 "$sim" run --trace "$tmp/decade.csv" --cluster "$tmp/decade.ini" --out "$tmp/decade"
grep -q "^sim: decade: timeseries.csv sampled every 320s, not every 10s, " "$tmp/err" || fail "decade: no notice: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/decade/timeseries.csv")" -eq 984378 ] ||
	fail "decade: $(wc -l <"$tmp/decade/timeseries.csv") lines"
[ -s "$tmp/decade/report.html" ] || fail "decade: no report"

# Numbers in summary.json read back exactly: 1000 h at 1234.5678/h is
# 1234567.8, which "%.6g" wrote as 1.23457e+06 (the report showed
# 1234570.00); integral values stay integral.
printf 'id,arrival_ms,duration_ms,cpu_milli,memory_bytes\na,0,3600000000,1000,0\n' >"$tmp/pricey.csv"
printf '[cluster]\nsample_interval = 1h\n[machine m]\ncpu = 96\nmemory = 8Gi\ncount = 1\ncost_per_hour = 1234.5678\n[group g]\nclass = container\nmachine_types = m\nmin = 1\nmax = 1\n' >"$tmp/pricey.ini"
expect 0 "$sim" run --trace "$tmp/pricey.csv" --cluster "$tmp/pricey.ini" --out "$tmp/pricey" --quiet
grep -q '"overall": {"machine_hours": 1000, "cost": 1234567.8, "cpu_alloc_mean": 0.010416666666666666, ' "$tmp/pricey/summary.json" ||
	fail "pricey: $(grep overall "$tmp/pricey/summary.json")"
grep -q '1234567\.80' "$tmp/pricey/report.html" || fail "pricey: the report does not show 1234567.80"

# A trace path that is not UTF-8 ("caf\351.csv", Latin-1) is written to
# summary.json with U+FFFD for the bad byte: sim run used to fail at its
# own report, which rejected the summary it had just written.
bad_name=$(printf 'caf\351.csv')
cp "$tmp/pricey.csv" "$tmp/$bad_name"
expect 0 "$sim" run --trace "$tmp/$bad_name" --cluster "$tmp/pricey.ini" --out "$tmp/latin1" --quiet
python3 - "$tmp/latin1/summary.json" <<'PY' || fail "not-UTF-8 trace path in summary.json"
import json, sys
t = json.load(open(sys.argv[1], encoding="utf-8"))["trace"]
assert t.endswith("/caf\ufffd.csv"), t
PY
[ -s "$tmp/latin1/report.html" ] || fail "not-UTF-8 trace path: no report"
# A report that cannot be written says so, once, naming it.
mkdir -p "$tmp/ro/report.html"
expect 1 "$sim" run --trace "$tmp/pricey.csv" --cluster "$tmp/pricey.ini" --out "$tmp/ro" --quiet
grep -q "^sim: cannot write '$tmp/ro/report.html': " "$tmp/err" || fail "report write error: $(cat "$tmp/err")"
[ "$(grep -c 'cannot write' "$tmp/err")" -eq 1 ] || fail "report write error: $(cat "$tmp/err")"

# Bad configs: exit 1, one line naming the file and the key.
printf '[cluster]\nmode = dedicated\n[machine m]\ncpu = 4\nmemory = 8Gi\n[group g]\nclass = vm\nmachine_types = m\n' >"$tmp/bad.ini"
expect 1 "$sim" run --trace "$trace" --cluster "$tmp/bad.ini" --out "$tmp/bad"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "bad config: not one line: $(cat "$tmp/err")"
grep -q "^sim: $tmp/bad.ini: \[group g\] machines: missing" "$tmp/err" || fail "bad config: $(cat "$tmp/err")"
printf '[cluster]\n[machine m]\ncpu = 4\nmemory = 8Gi\n[group g]\nclass = vm\nmachine_types = m\n[autoscaler]\nscan-interval = soon\n' >"$tmp/bad2.ini"
expect 1 "$sim" run --trace "$trace" --cluster "$tmp/bad2.ini" --out "$tmp/bad"
grep -q "^sim: $tmp/bad2.ini: \[autoscaler\] scan-interval: " "$tmp/err" || fail "bad option: $(cat "$tmp/err")"
expect 2 "$sim" compare --trace "$trace" --cluster "$ex/mixed-pooled.ini" --out "$tmp/x"
expect 2 "$sim" run --trace "$trace" --out "$tmp/x"

cli_finish "ok: sim run and sim compare"
