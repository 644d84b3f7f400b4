#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# sim report: the fixture result directories (tests/sim/report/) render to
# HTML that parses strictly and shows the fixtures' figures (formatted by
# hand in check-report.py); a compare directory renders like its runs
# listed one by one; a month of 10-second samples gives a small file that
# still shows a one-sample spike; output is the same bytes every time and
# wherever the inputs live; the fixture summaries validate against
# docs/sim-summary.schema.json; and malformed inputs (truncated JSON,
# missing keys, non-numeric cells, ragged rows, huge lines, garbage) fail
# with one line naming the file and exit 1, never crash (the binary runs
# under ASan in make check) and never leave a report behind.

set -u

top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
sim=$top_builddir/sim/sim
fx=$top_srcdir/tests/sim/report
check="python3 $top_srcdir/tests/sim/check-report.py"
schema=$top_srcdir/docs/sim-summary.schema.json

command -v python3 >/dev/null 2>&1 || {
	echo "SKIP: python3 is missing" >&2
	exit 77
}

cli_test=test-report
. "$top_srcdir/tests/cli-env.sh"

# --- good inputs -----------------------------------------------------------

expect 0 "$sim" report "$fx/single" -o "$tmp/single.html"
[ -s "$tmp/err" ] && fail "report wrote to stderr: $(cat "$tmp/err")"
$check html "$tmp/single.html" single || fail "single report"

expect 0 "$sim" report "$fx/compare/pooled" "$fx/compare/dedicated" -o "$tmp/compare.html"
$check html "$tmp/compare.html" compare || fail "compare report"
# A compare directory stands for its runs, in its summary's order.
expect 0 "$sim" report "$fx/compare" -o "$tmp/compare2.html"
cmp -s "$tmp/compare.html" "$tmp/compare2.html" || fail "compare DIR differs from its runs listed"

# Determinism: again, and from a copy elsewhere, the same bytes.
expect 0 "$sim" report "$fx/single" -o "$tmp/single2.html"
cmp -s "$tmp/single.html" "$tmp/single2.html" || fail "single report differs between two renders"
cp -R "$fx/compare" "$tmp/copy"
expect 0 "$sim" report "$tmp/copy/pooled" "$tmp/copy/dedicated" -o "$tmp/compare3.html"
cmp -s "$tmp/compare.html" "$tmp/compare3.html" || fail "report depends on where the inputs are"

# --title, escaped like everything else.
expect 0 "$sim" report --title 'Pool <vs> "dedicated" & co' "$fx/compare" -o "$tmp/t.html"
$check html "$tmp/t.html" any || fail "titled report"
grep -q '<title>Pool &lt;vs&gt; &quot;dedicated&quot; &amp; co</title>' "$tmp/t.html" ||
	fail "--title not used or not escaped"

# A month of 10-second samples (259,201 rows): generated, not shipped.
mkdir "$tmp/long"
cp "$fx/long/summary.json" "$tmp/long/"
python3 - "$tmp/long/timeseries.csv" <<'EOF' || fail "cannot generate the long series"
import sys
with open(sys.argv[1], "w") as f:
    f.write("t,pending,pool_free,cpu_alloc,mem_alloc,nodes_total,nodes.a,nodes.b\n")
    for i in range(259201):
        a = 100 + i % 20
        b = 0 if i == 200000 else 60 + i % 7
        pending = 977 if i == 123457 else (i // 1000) % 3
        f.write("%d,%d,%d,%.3f,0.4,%d,%d,%d\n" % (i * 10, pending, 250 - a - b,
                                                   0.5 + (i % 10) / 100, a + b, a, b))
EOF
expect 0 "$sim" report "$tmp/long" -o "$tmp/long.html"
$check html "$tmp/long.html" long || fail "long report"

# More groups than a chart can tell apart (15, peaks 1..15).
mkdir "$tmp/many"
python3 - "$fx/single/summary.json" "$tmp/many" <<'EOF' || fail "cannot generate many groups"
import json, sys
d = json.load(open(sys.argv[1]))
g = d["groups"][0]
d["groups"] = [dict(g, id="g%02d" % i, nodes_peak=i + 1) for i in range(15)]
json.dump(d, open(sys.argv[2] + "/summary.json", "w"))
with open(sys.argv[2] + "/timeseries.csv", "w") as f:
    f.write("t,pending,pool_free,cpu_alloc,mem_alloc,nodes_total" +
            "".join(",nodes.g%02d" % i for i in range(15)) + "\n")
    for t in range(0, 3600, 60):
        f.write("%d,0,10,0.5,0.5,120" % t + "".join(",%d" % (i + 1) for i in range(15)) + "\n")
EOF
expect 0 "$sim" report "$tmp/many" -o "$tmp/many.html"
$check html "$tmp/many.html" many || fail "report with 15 groups"

# Extremes that are valid: times near 2^53, a count near FLT_MAX, one
# second of span.  The axis code must neither loop nor misdraw.
mkdir "$tmp/far"
sed 's/"sim_start": 0/"sim_start": 9000000000000000/; s/"sim_end": 7200/"sim_end": 9000000000000001/' \
	"$fx/single/summary.json" >"$tmp/far/summary.json"
{
	head -n 1 "$fx/single/timeseries.csv"
	echo 9000000000000000,1,2,0.5,0.5,3,1,1,1
	echo 9000000000000001,3e38,2,0.5,0.5,3,1,1,1
} >"$tmp/far/timeseries.csv"
expect 0 "$sim" report "$tmp/far" -o "$tmp/far.html"
$check html "$tmp/far.html" any || fail "extreme values"

# The checker itself rejects what it should.
for bad in 's|</table>||' 's|<p class="meta">|<p class="meta"><script>x</script>|' \
	's|</h1>|</h1><b>http://x</b>|' 's|</h1>|</h1>\&nbsp;|' 's|</h1>|</h1> a < b|'; do
	sed "$bad" "$tmp/single.html" >"$tmp/mut.html"
	$check html "$tmp/mut.html" any 2>/dev/null && fail "checker accepts mutation $bad"
done

# --- the schema --------------------------------------------------------------

$check schema "$schema" "$fx/single/summary.json" "$fx/compare/summary.json" \
	"$fx/compare/pooled/summary.json" "$fx/compare/dedicated/summary.json" \
	"$fx/long/summary.json"
rc=$?
if [ "$rc" -eq 77 ]; then
	echo "SKIP: python3-jsonschema is missing" >&2
	exit 77
fi
[ "$rc" -eq 0 ] || fail "fixture summaries do not validate against the schema"

# --- malformed inputs ----------------------------------------------------------

# bad NAME: a copy of the single fixture, changed by the commands on stdin
# (run in the copy), must fail with one line naming FILE and saying WHAT.
bad() {
	name=$1 file=$2 what=$3 schema_too=${4:-yes}
	d=$tmp/bad-$name
	rm -rf "$d"
	cp -R "$fx/single" "$d"
	(cd "$d" && sh -e) || fail "$name: cannot prepare the input"
	expect 1 "$sim" report "$d" -o "$tmp/bad.html"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$name: not one line: $(head -c 1000 "$tmp/err")"
	grep -q "^sim: .*'$d/$file'" "$tmp/err" && grep -q "$what" "$tmp/err" ||
		fail "$name: message does not name '$file' and '$what': $(head -c 1000 "$tmp/err")"
	[ -e "$tmp/bad.html" ] && fail "$name: left a report behind"
	rm -f "$tmp/bad.html"
	case $file.$schema_too in
	summary.json.yes)
		$check schema "$schema" --invalid "$d/summary.json" ||
			fail "$name: the schema accepts it" ;;
	esac
}

# csv_sed NAME WHAT SED-EXPRESSION: timeseries.csv edited by sed.
csv_sed() {
	printf "%s\n" "sed '$3' timeseries.csv >x && mv x timeseries.csv" | bad "$1" timeseries.csv "$2"
}

# json_edit NAME WHAT PYTHON [no]: summary.json parsed as d, changed, written.
json_edit() {
	printf "%s\n" "python3 -c \"import json; d = json.load(open('summary.json')); $3; json.dump(d, open('summary.json', 'w'))\"" |
		bad "$1" summary.json "$2" "${4:-yes}"
}

bad truncated summary.json 'truncated JSON' <<'EOF'
head -c 300 summary.json >x && mv x summary.json
EOF
bad huge-json summary.json 'larger than 16777216 bytes' <<'EOF'
truncate -s 17M summary.json
EOF
bad empty-json summary.json 'empty file' <<'EOF'
: >summary.json
EOF
bad garbage summary.json 'line 1' <<'EOF'
printf '\001\377\376garbage{' >summary.json
EOF
bad trailing summary.json 'line 96 (byte 2022): data after the JSON value' <<'EOF'
echo '{}' >>summary.json
EOF
# json-c takes NaN even in strict mode; the renderer refuses it (Python's
# json takes it too, and no schema keyword refuses it).
bad nan summary.json "key 'overall.cost': not a finite number" no <<'EOF'
sed 's/"cost": 58.41/"cost": NaN/' summary.json >x && mv x summary.json
EOF
bad deep summary.json 'line' <<'EOF'
python3 -c "print('[' * 100000)" >summary.json
EOF
bad array summary.json 'expected a JSON object' <<'EOF'
echo '[1, 2]' >summary.json
EOF
json_edit schema "key 'schema'" "d['schema']='dpu-offload/sim-summary/2'"
json_edit missing-key "key 'pods.finished': missing" "del d['pods']['finished']"
json_edit wrong-type "key 'groups\[1\].cost': expected a number, got string" "d['groups'][1]['cost']='12'"
json_edit negative "key 'pods.total'.*not a non-negative integer" "d['pods']['total']=-3"
json_edit fraction "key 'overall.cpu_alloc_p95'.*out of range" "d['overall']['cpu_alloc_p95']=1.5"
json_edit mode "key 'mode': '<b>shared\\\\n' is not pooled" "d['mode']='<b>shared\\n'"
json_edit group-id "key 'groups\[0\].id'" "d['groups'][0]['id']='a,b'"
json_edit dup-group "appears twice" "d['groups'][2]['id']='web'" no
json_edit nul-string "key 'name': contains a NUL" "d['name']='a\u0000b'" no
bad no-csv timeseries.csv 'cannot read .*: No such file or directory' <<'EOF'
rm timeseries.csv
EOF
bad dir-csv timeseries.csv 'not a regular file' <<'EOF'
rm timeseries.csv && mkdir timeseries.csv
EOF
bad fifo-csv timeseries.csv 'not a regular file' <<'EOF'
rm timeseries.csv && mkfifo timeseries.csv
EOF
bad empty-csv timeseries.csv 'line 1: empty file' <<'EOF'
: >timeseries.csv
EOF
csv_sed header "line 1: header column 9 is missing, expected 'nodes.bm.metal'" '1s/,nodes.bm.metal$//'
csv_sed header-extra "line 1: more than 9 cells" '1s/$/,nodes.other/'
csv_sed non-numeric "line 4: column 'cpu_alloc': 'abc' is not a number" '4s/,0.5,/,abc,/'
csv_sed nan-cell "line 3: column 'pending': 'nan' is not a number" '3s/^600,12,/600,nan,/'
csv_sed float-t "line 3: column 't': '600.5' is not an integer" '3s/^600,/600.5,/'
csv_sed empty-cell "line 5: column 'nodes.web': '' is not a number" '5s/,7,4,3$/,,4,3/'
csv_sed ragged "line 6: 8 cells, the header has 9" '6s/,3$//'
csv_sed ragged-long "line 6: more than 9 cells" '6s/$/,1/'
csv_sed backwards "line 8: column 't': 600 is before" '8s/^3600,/600,/'
csv_sed alloc "line 6: column 'mem_alloc': 1.5 is out of range 0..1" '6s/,0.7,/,1.5,/'
csv_sed negative-cell "line 2: column 'pool_free': -1 is out of range" '2s/^0,0,40,/0,0,-1,/'
bad huge-line timeseries.csv "line 3: longer than 65536 bytes" <<'EOF'
python3 -c "
lines = open('timeseries.csv').read().split('\n')
lines[2] = lines[2] + '0' * 100000
open('timeseries.csv', 'w').write('\n'.join(lines))"
EOF
bad nul-byte timeseries.csv "line 4: contains a NUL byte" <<'EOF'
python3 -c "
lines = open('timeseries.csv').read().split('\n')
lines[3] = lines[3][:4] + '\0' + lines[3][4:]
open('timeseries.csv', 'w').write('\n'.join(lines))"
EOF
bad binary timeseries.csv "line 1: header column 1" <<'EOF'
printf '\001\377\376\033[31m,,,\r\r\t' >timeseries.csv
EOF

# Random damage (seeded): a clean render or one line and exit 1, never a
# crash, an ASan report or a hang.
mkdir "$tmp/mut"
$check mutate "$sim" "$fx/single" "$tmp/mut" 100 1 || fail "damaged single run"
$check mutate "$sim" "$fx/compare" "$tmp/mut" 100 2 || fail "damaged compare directory"

# A compare summary whose run name would leave the directory.
mkdir "$tmp/evil"
printf '{"schema": "dpu-offload/sim-compare/1", "runs": [{"name": ".."}]}\n' >"$tmp/evil/summary.json"
expect 1 "$sim" report "$tmp/evil" -o "$tmp/bad.html"
grep -q "key 'runs\[0\].name': '..' cannot be a directory name" "$tmp/err" ||
	fail "compare run name '..': $(cat "$tmp/err")"

# Misuse.
expect 2 "$sim" report -o "$tmp/x.html"
expect 2 "$sim" report "$fx/single"
expect 2 "$sim" report --bogus "$fx/single" -o "$tmp/x.html"
expect 1 "$sim" report "$tmp/nonexistent" -o "$tmp/x.html"
grep -q "cannot read '$tmp/nonexistent/summary.json'" "$tmp/err" || fail "missing dir: $(cat "$tmp/err")"
expect 1 "$sim" report "$fx/single" -o "$tmp/no/such/dir/x.html"
expect 0 "$sim" --help
grep -q "report DIR... -o FILE" "$tmp/out" || fail "--help does not show report"

cli_finish
