#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Scenario fixtures for `autoscale once`: each tests/autoscale/scenarios/NAME.json
# is a snapshot (its "description" says what it shows), NAME.expected.json the
# parts of the decision it is about, and NAME.flags, when present, the CA
# flags to run with.  NAME.expected-error instead holds text that stderr must
# contain, with exit status 1.  The expectations were worked out by hand from
# CA's rules (docs/autoscale-snapshot.md), not recorded from a run.

set -u

top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
bin=$top_builddir/autoscale/autoscale
dir=$top_srcdir/tests/autoscale/scenarios
check=$top_srcdir/tests/autoscale/check-decision.py

command -v python3 >/dev/null || { echo "SKIP: python3 not installed (Debian package python3)"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-scenarios.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

pass=0
failures=0
for snap in "$dir"/*.json; do
	case $snap in *.expected.json) continue ;; esac
	name=${snap##*/}
	name=${name%.json}
	flags=
	[ -f "$dir/$name.flags" ] && flags=$(cat "$dir/$name.flags")
	# shellcheck disable=SC2086  # flags are words
	"$bin" once --snapshot "$snap" $flags >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ -f "$dir/$name.expected-error" ]; then
		if [ "$rc" -ne 1 ] || ! grep -qF -f "$dir/$name.expected-error" "$tmp/err"; then
			echo "FAIL: $name: exit $rc, stderr: $(cat "$tmp/err")"
			failures=$((failures + 1))
		else
			pass=$((pass + 1))
		fi
		continue
	fi
	if [ "$rc" -ne 0 ]; then
		echo "FAIL: $name: exit status $rc: $(cat "$tmp/err")"
		failures=$((failures + 1))
		continue
	fi
	if ! python3 "$check" "$dir/$name.expected.json" "$tmp/out" >"$tmp/diff"; then
		echo "FAIL: $name:"
		sed 's/^/    /' "$tmp/diff"
		failures=$((failures + 1))
		continue
	fi
	pass=$((pass + 1))
done
echo "$pass scenario(s) passed, $failures failed"
[ "$failures" -eq 0 ] && [ "$pass" -gt 0 ]
