#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Replays the frame-decoder seed corpus through the fuzz target (built with
# gcc and, under --enable-sanitizers, ASan/UBSan).  Fails if the replay
# fails or ran fewer inputs than the corpus is meant to hold, so a corpus
# that went missing from a tarball cannot pass as an empty one.

set -u

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=.}"

replay="$top_builddir/tests/fuzz/replay-frame"
corpus="$top_srcdir/tests/fuzz/corpus/frame"
min_inputs=10

if ! out=$("$replay" "$corpus"); then
	echo "FAIL: $replay $corpus exited non-zero" >&2
	printf '%s\n' "$out" >&2
	exit 1
fi
printf '%s\n' "$out"

n=$(printf '%s\n' "$out" | sed -n 's/^replay: \([0-9][0-9]*\) inputs$/\1/p')
if [ -z "$n" ]; then
	echo "FAIL: no input count in replay output" >&2
	exit 1
fi
if [ "$n" -lt "$min_inputs" ]; then
	echo "FAIL: replay ran $n inputs from $corpus, expected at least $min_inputs" >&2
	exit 1
fi
echo "PASS: $n inputs"
