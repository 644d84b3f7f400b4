#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Replays each fuzz target's seed corpus through the target (built with gcc
# and, under --enable-sanitizers, ASan/UBSan; tests/fuzz/local.mk).  Fails
# if a replay fails or ran fewer inputs than its corpus is meant to hold, so
# a corpus that went missing from a tarball cannot pass as an empty one.

set -u

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=.}"

# NAME MIN_INPUTS: tests/fuzz/replay-NAME over tests/fuzz/corpus/NAME.
targets="frame 10 rexec 40 qtfs-server 25 rexecd 20 kube 40 trace 50 bm 50 policy 20"

status=0
# shellcheck disable=SC2086 # split into its words on purpose
set -- $targets
while [ $# -ge 2 ]; do
	name=$1 min_inputs=$2
	shift 2
	replay="$top_builddir/tests/fuzz/replay-$name"
	corpus="$top_srcdir/tests/fuzz/corpus/$name"
	if ! out=$("$replay" "$corpus"); then
		echo "FAIL: $name: $replay $corpus exited non-zero" >&2
		printf '%s\n' "$out" >&2
		status=1
		continue
	fi
	n=$(printf '%s\n' "$out" | sed -n 's/^replay: \([0-9][0-9]*\) inputs$/\1/p')
	if [ -z "$n" ]; then
		echo "FAIL: $name: no input count in the replay's output" >&2
		status=1
	elif [ "$n" -lt "$min_inputs" ]; then
		echo "FAIL: $name: replay ran $n inputs from $corpus, expected at least $min_inputs" >&2
		status=1
	else
		echo "PASS: $name: $n inputs"
	fi
done
exit $status
