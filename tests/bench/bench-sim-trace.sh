#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Trace layer benchmark (issue 7): `sim gen` writes an N-pod synthetic
# trace (default 1,000,000), then `sim convert` reads it back as JSON
# lines and as CSV, plain and gzip-compressed, and writes native JSON
# lines to /dev/null.  Baselines in the same run: cat(1) and zcat(1) of
# the same files, i.e. the cost of just getting the bytes in; ratios are
# convert / baseline.  Peak memory (max RSS) from /usr/bin/time shows that
# convert streams.  Then bench-sim-load (if built) times sim_trace_load,
# which keeps every record in memory as the engine will.  Asserts nothing
# (a benchmark, not a test).
#
# Usage: sh tests/bench/bench-sim-trace.sh [PODS]
# Build without --enable-sanitizers first: ASan multiplies the times.

set -u
top_builddir=$(cd "${top_builddir:-.}" && pwd)
pods=${1:-1000000}
SIM=$top_builddir/sim/sim

[ -x "$SIM" ] || { echo "bench-sim-trace: build $SIM first" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench-sim-trace: needs /usr/bin/time (Debian package time)" >&2; exit 1; }
if grep -q 'SAN_CFLAGS = .*-fsanitize' "$top_builddir/Makefile" 2>/dev/null; then
	echo "bench-sim-trace: warning: $SIM is built with sanitizers; times are not representative" >&2
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/bench-sim-trace.XXXXXX")
trap 'rm -rf "$T"' EXIT
trap 'exit 1' HUP INT TERM

# measure LABEL CMD...: prints "LABEL seconds max-rss-KiB".
measure() {
	label=$1
	shift
	/usr/bin/time -f '%e %M' -o "$T/time" "$@" >/dev/null 2>"$T/err" ||
		{ echo "bench-sim-trace: $label failed: $(cat "$T/err")" >&2; exit 1; }
	echo "$label $(cat "$T/time")"
}

# N pods over 30 days: rate N / 720 per hour, with the default daily cycle.
rate=$(awk -v n="$pods" 'BEGIN { printf "%.3f", n / 720 }')
echo "pods: $pods over 30 days ($rate per hour)"
measure "gen (s, max-rss KiB):" "$SIM" gen --pods "$pods" --duration 30d --rate "$rate" --seed 1 \
	-o "$T/t.jsonl" --quiet
echo "pods written: $(wc -l <"$T/t.jsonl")"
"$SIM" convert --trace "$T/t.jsonl" -o "$T/t.csv" --quiet
gzip -1 -c "$T/t.jsonl" >"$T/t.jsonl.gz"
gzip -1 -c "$T/t.csv" >"$T/t.csv.gz"
echo "sizes (bytes): jsonl $(wc -c <"$T/t.jsonl") csv $(wc -c <"$T/t.csv")" \
	"jsonl.gz $(wc -c <"$T/t.jsonl.gz") csv.gz $(wc -c <"$T/t.csv.gz")"

printf '%-12s %9s %9s %7s %10s\n' case baseline convert ratio "rss(KiB)"
for f in t.jsonl t.csv t.jsonl.gz t.csv.gz; do
	case $f in
	*.gz) base="zcat $T/$f" ;;
	*) base="cat $T/$f" ;;
	esac
	b=$(measure base sh -c "$base >/dev/null" | awk '{print $2}')
	set -- $(measure conv "$SIM" convert --trace "$T/$f" -o /dev/null --out-format jsonl --quiet)
	c=$2
	rss=$3
	ratio=$(awk -v b="$b" -v c="$c" 'BEGIN { if (b > 0) printf "%.1fx", c / b; else print "-" }')
	printf '%-12s %8ss %8ss %7s %10s\n' "$f" "$b" "$c" "$ratio" "$rss"
done

LOAD=$top_builddir/tests/bench/bench-sim-load
if [ -x "$LOAD" ]; then
	for f in t.csv t.jsonl; do
		/usr/bin/time -f '%e %M' -o "$T/time" "$LOAD" "$T/$f" >"$T/out" ||
			{ echo "bench-sim-trace: load $f failed" >&2; exit 1; }
		echo "sim_trace_load $f: $(cat "$T/out"); $(awk '{print $1 " s, max RSS " $2 " KiB"}' "$T/time")"
	done
fi
