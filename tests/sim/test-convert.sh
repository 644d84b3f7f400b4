#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# sim convert and sim gen from the command line: native traces round-trip
# byte for byte between JSON lines and CSV, a gzip-compressed copy of each
# fixture converts exactly like the plain one, a bad record fails with
# file, line and field on stderr and leaves no output file, --skip-bad
# counts it, gen gives the same bytes for the same seed (and its output
# converts to itself), and misuse exits 2 while a missing cluster file
# makes run/compare exit 1 naming it (tests/sim/test-run.sh tests them).

set -u

top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
sim=$top_builddir/sim/sim
fx=$top_srcdir/tests/sim

cli_test=test-convert
. "$top_srcdir/tests/cli-env.sh"

# Native round trips: CSV -> JSON lines -> CSV, both equal to the fixtures.
expect 0 "$sim" convert --trace "$fx/native.csv" -o "$tmp/a.jsonl"
cmp -s "$tmp/a.jsonl" "$fx/native.jsonl" || fail "native.csv -> jsonl differs from native.jsonl"
expect 0 "$sim" convert --trace "$tmp/a.jsonl" -o "$tmp/b.csv"
cmp -s "$tmp/b.csv" "$fx/native.csv" || fail "jsonl -> csv differs from native.csv"
expect 0 "$sim" convert --trace "$fx/native.jsonl" --out-format csv -o "$tmp/c.txt"
cmp -s "$tmp/c.txt" "$fx/native.csv" || fail "--out-format csv ignored"
grep -q "4 records from .* (native)" "$tmp/err" || fail "no summary on stderr: $(cat "$tmp/err")"

# gzip is read transparently: same output as the plain file, for every format.
for f in native.jsonl openb_pod_list_tiny.csv batch_task.csv task_events.csv; do
	expect 0 "$sim" convert --trace "$fx/$f" -o "$tmp/plain.jsonl" --quiet
	expect 0 "$sim" convert --trace "$fx/$f.gz" -o "$tmp/gz.jsonl" --quiet
	[ -s "$tmp/plain.jsonl" ] || fail "$f: no records"
	cmp -s "$tmp/plain.jsonl" "$tmp/gz.jsonl" || fail "$f: gzip copy converts differently"
	[ -s "$tmp/err" ] && fail "$f: --quiet still wrote: $(cat "$tmp/err")"
	# What convert writes reads back to itself.
	expect 0 "$sim" convert --trace "$tmp/plain.jsonl" -o "$tmp/again.jsonl" --quiet
	cmp -s "$tmp/plain.jsonl" "$tmp/again.jsonl" || fail "$f: native output does not round-trip"
done
expect 0 "$sim" convert --trace "$fx/batch_task.csv" --format alibaba2018 \
	--machine-memory 100Gi -o "$tmp/bt.csv" --quiet
# 0.3% of 100 GiB = 322122547.2 bytes -> 322122547; 3+1+2 instances.
[ "$(grep -c '^j_' "$tmp/bt.csv")" -eq 6 ] || fail "batch_task: expected 6 instances"
grep -q '^j_3/M1/2,container,157213000,82000,1000,322122547,' "$tmp/bt.csv" ||
	fail "batch_task: --machine-memory not applied: $(cat "$tmp/bt.csv")"

# OUT ending in .gz is written compressed, reproducibly, and reads back.
expect 0 "$sim" convert --trace "$fx/native.csv" -o "$tmp/z.csv.gz" --quiet
expect 0 "$sim" convert --trace "$fx/native.csv" -o "$tmp/z2.csv.gz" --quiet
gzip -dc "$tmp/z.csv.gz" >"$tmp/z.csv" 2>/dev/null || fail "-o z.csv.gz: not gzip"
cmp -s "$tmp/z.csv" "$fx/native.csv" || fail "-o z.csv.gz: wrong content"
cmp -s "$tmp/z.csv.gz" "$tmp/z2.csv.gz" || fail "-o z.csv.gz: not the same bytes twice"
expect 0 "$sim" gen --pods 20000 --seed 3 -o "$tmp/gz.jsonl.gz" --quiet
expect 0 "$sim" gen --pods 20000 --seed 3 -o "$tmp/gz.jsonl" --quiet
expect 0 "$sim" convert --trace "$tmp/gz.jsonl.gz" -o "$tmp/back.jsonl" --quiet
cmp -s "$tmp/back.jsonl" "$tmp/gz.jsonl" || fail "gen -o .jsonl.gz does not read back"

# A bad record: exit 1, file:line: field on stderr, no output left behind.
printf 'id,arrival_ms,cpu_milli,memory_bytes\na,0,1,1\nb,1,abc,1\nc,2,1,1\n' >"$tmp/bad.csv"
expect 1 "$sim" convert --trace "$tmp/bad.csv" -o "$tmp/bad.jsonl"
grep -q "bad.csv:3: field cpu_milli: \"abc\" is not a number" "$tmp/err" ||
	fail "bad record message: $(cat "$tmp/err")"
[ -e "$tmp/bad.jsonl" ] && fail "a failed convert left $tmp/bad.jsonl"
for f in "$tmp"/*.tmp-*; do
	[ -e "$f" ] && fail "a failed convert left a temporary file: $f"
done
expect 0 "$sim" convert --trace "$tmp/bad.csv" -o "$tmp/bad.jsonl" --skip-bad
[ "$(wc -l <"$tmp/bad.jsonl")" -eq 2 ] || fail "--skip-bad: expected 2 records"
grep -q "skipped 1 bad records, the first: .*bad.csv:3: field cpu_milli" "$tmp/err" ||
	fail "--skip-bad summary: $(cat "$tmp/err")"
expect 1 "$sim" convert --trace "$tmp/no-such-file" -o "$tmp/x.jsonl"
grep -q "no-such-file" "$tmp/err" || fail "missing file not named: $(cat "$tmp/err")"

# gen: same seed, same bytes; another seed, other bytes; output round-trips.
expect 0 "$sim" gen --pods 2000 --seed 7 -o "$tmp/g1.jsonl"
expect 0 "$sim" gen --pods 2000 --seed 7 -o "$tmp/g2.jsonl"
expect 0 "$sim" gen --pods 2000 --seed 8 -o "$tmp/g3.jsonl"
cmp -s "$tmp/g1.jsonl" "$tmp/g2.jsonl" || fail "gen: same seed, different output"
cmp -s "$tmp/g1.jsonl" "$tmp/g3.jsonl" && fail "gen: different seeds, same output"
[ "$(wc -l <"$tmp/g1.jsonl")" -eq 2000 ] || fail "gen --pods 2000: wrong count"
expect 0 "$sim" convert --trace "$tmp/g1.jsonl" -o "$tmp/g1.csv" --quiet
expect 0 "$sim" convert --trace "$tmp/g1.csv" -o "$tmp/g1b.jsonl" --quiet
cmp -s "$tmp/g1.jsonl" "$tmp/g1b.jsonl" || fail "gen output does not round-trip through CSV"
expect 0 "$sim" gen --duration 2h --rate 600 --amplitude 0 --mix vm=1 --runtime-dist exp \
	--runtime-mean 10m -o "$tmp/g4.csv" --quiet
n=$(($(wc -l <"$tmp/g4.csv") - 1))
# 1200 expected; 5 sd is about 175.
[ "$n" -gt 1025 ] && [ "$n" -lt 1375 ] || fail "gen --duration 2h --rate 600: $n pods"
grep -v '^id,' "$tmp/g4.csv" | grep -vq ',vm,' && fail "gen --mix vm=1: another class"

# The shipped examples: the generated one is still what its command gives,
# and the openb sample reads.
ex=$top_srcdir/sim/examples
expect 0 "$sim" gen --pods 400 --rate 15 --amplitude 0.6 --peak 14h \
	--mix container=60,vm=25,baremetal=15 --runtime-mean 3h --runtime-max 2d --seed 2026 \
	-o "$tmp/mixed.jsonl"
cmp -s "$tmp/mixed.jsonl" "$ex/mixed-workload.jsonl" ||
	fail "sim gen no longer reproduces sim/examples/mixed-workload.jsonl"
expect 0 "$sim" convert --trace "$ex/openb_pod_list_sample.csv" -o "$tmp/ob.jsonl"
grep -q "^sim: 40 records from .* (openb)" "$tmp/err" || fail "openb sample: $(cat "$tmp/err")"

# -o naming something that is not a regular file is written in place: a
# character device stays a device (renaming a temporary over /dev/null
# would replace it, as root), a FIFO carries the records.
if [ "$(id -u)" -eq 0 ] && mknod "$tmp/null" c 1 3 2>/dev/null; then
	"$sim" convert --trace "$fx/native.csv" -o "$tmp/null" --quiet || fail "-o a device: failed"
	[ -c "$tmp/null" ] || fail "-o a device: it is no longer a device"
fi
mkfifo "$tmp/fifo"
cat "$tmp/fifo" >"$tmp/through-fifo" &
reader=$!
"$sim" convert --trace "$fx/native.csv" -o "$tmp/fifo" --out-format csv --quiet || fail "-o a FIFO: failed"
if [ -p "$tmp/fifo" ]; then
	wait "$reader"
	cmp -s "$tmp/through-fifo" "$fx/native.csv" || fail "-o a FIFO: the records did not come through it"
else
	fail "-o a FIFO: it is no longer a FIFO"
	kill "$reader" 2>/dev/null
fi

# Misuse is a usage error (2); the simulation commands are placeholders (1).
expect 2 "$sim" convert --pods 3 --trace "$fx/native.csv" -o "$tmp/x"
grep -q -e "--pods does not apply to 'convert'" "$tmp/err" || fail "no message for --pods"
expect 2 "$sim" convert --trace "$fx/native.csv" --format azure -o "$tmp/x"
expect 2 "$sim" convert --trace "$fx/native.csv"
expect 2 "$sim" gen --mix vm -o "$tmp/x"
expect 2 "$sim" gen --mix gpu=1 -o "$tmp/x"
expect 2 "$sim" gen --amplitude 2 -o "$tmp/x"
# A write error after a skipped record is the write error, not the stale
# message of the record --skip-bad skipped.
if [ -w /dev/full ]; then
	{
		echo 'id,arrival_ms,duration_ms,cpu_milli,memory_bytes'
		echo 'bad,0,1000,abc,100'
		seq 1 3000 | sed 's/.*/p&,&,1000,100,100/'
	} >"$tmp/skip-many.csv"
	expect 1 "$sim" convert --skip-bad --trace "$tmp/skip-many.csv" -o /dev/full
	[ "$(cat "$tmp/err")" = "sim: cannot write '/dev/full': No space left on device" ] ||
		fail "convert to /dev/full after a skipped record: $(cat "$tmp/err")"
fi

expect 1 "$sim" run --trace "$fx/native.csv" --cluster c.conf --out "$tmp"
grep -q "^sim: c.conf: " "$tmp/err" || fail "run: $(cat "$tmp/err")"
expect 1 "$sim" compare --trace "$fx/native.csv" --cluster a --cluster b --out "$tmp"

cli_finish "ok: sim convert and sim gen"
