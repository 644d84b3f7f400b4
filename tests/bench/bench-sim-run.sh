#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Engine benchmark (issue 7): wall time and peak memory of `sim run` on
#  1. a 1,000,000-pod synthetic trace (`sim gen`, 30 days, the default class
#     mix and daily cycle) on the 5,000-machine pool of
#     tests/bench/sim-bench.ini (targets: under 60 s and 2 GiB);
#  2. an Alibaba-2023-style trace of about 8,000 pods on about 1,500 nodes
#     (target: under 2 s).  With SIM_OPENB_DIR holding the real
#     openb_pod_list_default.csv and openb_node_list_all_node.csv those are
#     used; otherwise this script writes a stand-in of the same size and
#     layout (the six machine shapes of sim/examples/openb_node_list_sample.csv,
#     pods drawn by awk with a fixed seed) and says so.
# Each run is timed by /usr/bin/time (wall seconds, max RSS); the summary's
# "run" line gives events, loops and loops run in full.  A baseline in the
# same run: the same trace with SIM_FULL_LOOPS=1 (every autoscaler loop in
# full) for case 2, whose ratio shows what skipping idle loops saves.
# Asserts nothing (a benchmark, not a test).
#
# Usage: sh tests/bench/bench-sim-run.sh [PODS]
# Build without --enable-sanitizers first: ASan multiplies the times.

set -u
top_srcdir=$(cd "${top_srcdir:-.}" && pwd)
top_builddir=$(cd "${top_builddir:-.}" && pwd)
pods=${1:-1000000}
SIM=$top_builddir/sim/sim

[ -x "$SIM" ] || { echo "bench-sim-run: build $SIM first" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench-sim-run: needs /usr/bin/time (Debian package time)" >&2; exit 1; }
if grep -q 'SAN_CFLAGS = .*-fsanitize' "$top_builddir/Makefile" 2>/dev/null; then
	echo "bench-sim-run: warning: $SIM is built with sanitizers; times are not representative" >&2
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/bench-sim-run.XXXXXX")
trap 'rm -rf "$T"' EXIT
trap 'exit 1' HUP INT TERM

# run LABEL ARGS...: sim run into $T/out, prints time, RSS and the run line.
run() {
	label=$1
	shift
	rm -rf "$T/out"
	/usr/bin/time -f '%e %M' -o "$T/time" "$SIM" run --quiet --out "$T/out" "$@" 2>"$T/err" ||
		{ echo "bench-sim-run: $label failed: $(cat "$T/err")" >&2; exit 1; }
	set -- $(cat "$T/time")
	printf '%-34s %8s s %8s MiB  %s\n' "$label" "$1" "$(($2 / 1024))" \
		"$(sed -n 's/^  "run": //p' "$T/out/summary.json")"
}

rate=$(awk -v n="$pods" 'BEGIN { printf "%.3f", n / 720 }')
"$SIM" gen --pods "$pods" --duration 30d --rate "$rate" --seed 1 -o "$T/big.csv" --quiet
echo "1. synthetic: $(($(wc -l <"$T/big.csv") - 1)) pods over 30 days ($rate per hour), 5,000 machines"
run "sim run, synthetic" --trace "$T/big.csv" --cluster "$top_srcdir/tests/bench/sim-bench.ini"
grep -h '"pods"\|"pending_seconds"\|"pool"' "$T/out/summary.json"

if [ -n "${SIM_OPENB_DIR:-}" ] && [ -f "$SIM_OPENB_DIR/openb_pod_list_default.csv" ]; then
	opods=$SIM_OPENB_DIR/openb_pod_list_default.csv
	onodes=$SIM_OPENB_DIR/openb_node_list_all_node.csv
	echo "2. openb: the real default trace from $SIM_OPENB_DIR"
else
	opods=$T/openb_pod_list_bench.csv
	onodes=$T/openb_node_list_bench.csv
	echo "2. openb: a stand-in of the default trace's size (8,000 pods, 1,500 nodes; SIM_OPENB_DIR unset)"
	awk -F, 'NR > 1 { shape[n++] = $2 "," $3 "," $4 "," $5 }
		END { print "sn,cpu_milli,memory_mib,gpu,model";
		      for (i = 0; i < 1500; i++) printf "bench-node-%04d,%s\n", i, shape[i % n] }' \
		"$top_srcdir/sim/examples/openb_node_list_sample.csv" >"$onodes"
	awk 'BEGIN { srand(7); print "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time";
		split("1000 2000 4000 8000 16000 32000", cpu, " ");
		split("V100M16|V100M32 T4 P100 A10", model, " ");
		t = 0;
		for (i = 0; i < 8000; i++) {
			t += int(-log(1 - rand()) * 90) + 1;
			c = cpu[int(rand() * 6) + 1]; g = int(rand() * 3); gm = g ? 1000 : 0;
			if (g == 1 && rand() < 0.5) gm = 500;
			spec = (g && rand() < 0.3) ? model[int(rand() * 4) + 1] : "";
			d = int(-log(1 - rand()) * 7200) + 60;
			printf "bench-pod-%04d,%d,%d,%d,%d,%s,LS,Succeeded,%d,%d,%d\n", i, c, c * 4, g, gm * (g ? g : 0) / (g ? g : 1), spec, t, t + d, t + 5 }
	}' >"$opods"
fi
run "sim run, openb" --trace "$opods" --nodes "$onodes" --cluster "$top_srcdir/sim/examples/openb.ini"
grep -h '"pods"\|"pool"' "$T/out/summary.json"
SIM_FULL_LOOPS=1 run "sim run, openb, every loop in full" --trace "$opods" --nodes "$onodes" \
	--cluster "$top_srcdir/sim/examples/openb.ini"
