#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# What sim writes where: a run's name is a directory under `sim compare
# --out`, so it can never be "." or ".." (from [cluster] name or from the
# file name), which wrote a run's files over the compare directory or
# outside --out, and gave a compare directory `sim report` refuses.  A run
# whose summary.json cannot be written leaves no timeseries.csv either, and
# a compare with a run that fails leaves --out as it was.

set -u

top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
sim=$top_builddir/sim/sim
ex=$top_srcdir/sim/examples
trace=$ex/mixed-workload.jsonl

cli_test=test-output
. "$top_srcdir/tests/cli-env.sh"

mkdir -p "$tmp/cfg" "$tmp/res"
sed 's/^name = .*/name = other/' "$ex/mixed-dedicated.ini" >"$tmp/cfg/other.ini"
for name in . ..; do
	sed "s/^name = .*/name = $name/" "$ex/mixed-pooled.ini" >"$tmp/cfg/dots.ini"
	expect 1 "$sim" compare --trace "$trace" --cluster "$tmp/cfg/dots.ini" \
		--cluster "$tmp/cfg/other.ini" --out "$tmp/res/cmp" --quiet
	grep -q "^sim: $tmp/cfg/dots.ini: \[cluster\] name: '$name' " "$tmp/err" ||
		fail "name $name: $(cat "$tmp/err")"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "name $name: not one line: $(cat "$tmp/err")"
	[ -e "$tmp/res/summary.json" ] && fail "name $name: wrote $tmp/res/summary.json"
	[ -e "$tmp/res/cmp" ] && fail "name $name: wrote $tmp/res/cmp"
	rm -rf "$tmp/res" && mkdir "$tmp/res"
done
# The same names from the file name: "..ini" is "." without its extension.
grep -v '^name = ' "$ex/mixed-pooled.ini" >"$tmp/cfg/..ini"
grep -v '^name = ' "$ex/mixed-pooled.ini" >"$tmp/cfg/...ini"
for f in ..ini ...ini; do
	expect 1 "$sim" compare --trace "$trace" --cluster "$tmp/cfg/$f" \
		--cluster "$tmp/cfg/other.ini" --out "$tmp/res/cmp" --quiet
	grep -q "^sim: $tmp/cfg/$f: \[cluster\] name: " "$tmp/err" || fail "$f: $(cat "$tmp/err")"
	[ -e "$tmp/res/summary.json" ] && fail "$f: wrote $tmp/res/summary.json"
	rm -rf "$tmp/res" && mkdir "$tmp/res"
done
# A name with dots in it is still a name.
sed 's/^name = .*/name = a..b/' "$ex/mixed-pooled.ini" >"$tmp/cfg/ab.ini"
expect 0 "$sim" compare --trace "$trace" --cluster "$tmp/cfg/ab.ini" \
	--cluster "$tmp/cfg/other.ini" --out "$tmp/res/cmp" --quiet
[ -s "$tmp/res/cmp/a..b/summary.json" ] || fail "a..b: no summary.json"
expect 0 "$sim" report "$tmp/res/cmp" -o "$tmp/res/again.html"

# summary.json cannot be written (a directory is in its way): exit 1, one
# line, and no timeseries.csv (it was renamed into place before the summary
# failed) nor temporary file left next to it.
mkdir -p "$tmp/nosum/summary.json"
expect 1 "$sim" run --trace "$trace" --cluster "$ex/mixed-pooled.ini" --out "$tmp/nosum" --quiet
grep -q "^sim: cannot write '$tmp/nosum/summary.json': " "$tmp/err" ||
	fail "no summary: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "no summary: not one line: $(cat "$tmp/err")"
left=$(cd "$tmp/nosum" && echo *)
[ "$left" = summary.json ] || fail "no summary: left behind: $left"

# A compare whose later run fails (a trace class the second configuration
# does not map) leaves --out as it was: the first run's results were
# written over the last compare's, a mix that looked complete.  The message
# names the run that failed and says what is left.
printf 'id,class,arrival_ms,duration_ms,cpu_milli,memory_bytes\na,spot,0,1000,100,100\n' \
	>"$tmp/spot.csv"
sed 's/^\[cluster\]$/[cluster]\ndefault_class = none/' "$tmp/cfg/other.ini" >"$tmp/cfg/strict.ini"
grep -q '^default_class = none$' "$tmp/cfg/strict.ini" || fail "strict.ini: no default_class"
expect 0 "$sim" compare --trace "$trace" --cluster "$ex/mixed-pooled.ini" \
	--cluster "$tmp/cfg/other.ini" --out "$tmp/keep" --quiet
(cd "$tmp/keep" && find . -type f | sort | xargs cksum) >"$tmp/keep.before"
for out in "$tmp/keep" "$tmp/fresh"; do
	expect 1 "$sim" compare --trace "$tmp/spot.csv" --cluster "$ex/mixed-pooled.ini" \
		--cluster "$tmp/cfg/strict.ini" --out "$out" --quiet
	want="^sim: run 2 of 2, 'other' ($tmp/cfg/strict.ini): .*'spot'.* is not mapped"
	grep -q "$want.*; nothing written to '$out'\$" "$tmp/err" ||
		fail "later run fails: $(cat "$tmp/err")"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "later run fails: not one line: $(cat "$tmp/err")"
done
(cd "$tmp/keep" && find . -type f | sort | xargs cksum) >"$tmp/keep.after"
cmp -s "$tmp/keep.before" "$tmp/keep.after" ||
	fail "later run fails: --out changed: $(diff "$tmp/keep.before" "$tmp/keep.after")"
[ -e "$tmp/fresh" ] && fail "later run fails: created --out: $(ls -A "$tmp/fresh")"
ls -A "$tmp/keep" | grep -q '^\.compare-' &&
	fail "later run fails: staging left: $(ls -A "$tmp/keep")"
# A file where a run's directory goes is found before anything is moved.
mkdir "$tmp/way" && : >"$tmp/way/other"
expect 1 "$sim" compare --trace "$trace" --cluster "$ex/mixed-pooled.ini" \
	--cluster "$tmp/cfg/other.ini" --out "$tmp/way" --quiet
grep -q "^sim: '$tmp/way/other' is in the way (not a directory); nothing written to '$tmp/way'\$" \
	"$tmp/err" || fail "in the way: $(cat "$tmp/err")"
[ "$(ls -A "$tmp/way")" = other ] || fail "in the way: left: $(ls -A "$tmp/way")"

cli_finish "ok: sim output paths"
