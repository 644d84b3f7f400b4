#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Self-check of the file-system tests: fsdiff on two directories of the same
# native file system must find no difference, and fsx must find no mismatch.
# A failure here is a bug in fsdiff or fsx (a scenario that is not
# deterministic, a model that is wrong), not in fuse-qtfs, which this does
# not touch.  As root, fsdiff also runs the permission scenarios as nobody
# (--user 65534:65534); as another user that part is skipped, and the script
# exits 77 after the rest passed, so the skip is visible.

set -u

top_builddir=${top_builddir:-.}
fsdiff=$top_builddir/tests/fs/fsdiff
fsx=$top_builddir/tests/fs/fsx

for bin in "$fsdiff" "$fsx"; do
	if [ ! -x "$bin" ]; then
		echo "FAIL: $bin: not built" >&2
		exit 1
	fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-fs-native.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
mkdir "$tmp/a" "$tmp/b" "$tmp/fsx" || exit 1

failures=0

run() {
	echo "+ $*"
	if ! "$@"; then
		echo "FAIL: $*" >&2
		failures=$((failures + 1))
	fi
}

# The scenario list itself: a fixed, non-empty set with no duplicates.
n=$("$fsdiff" --list | wc -l)
u=$("$fsdiff" --list | sort -u | wc -l)
if [ "$n" -lt 30 ] || [ "$n" -ne "$u" ]; then
	echo "FAIL: fsdiff --list: $n names, $u distinct" >&2
	failures=$((failures + 1))
fi

if [ "$(id -u)" -eq 0 ]; then
	run "$fsdiff" --user 65534:65534 "$tmp/a" "$tmp/b"
else
	run "$fsdiff" "$tmp/a" "$tmp/b"
fi

# Every scenario cleaned up after itself.
for d in "$tmp/a" "$tmp/b"; do
	if [ -n "$(ls -A "$d")" ]; then
		echo "FAIL: $d not empty after fsdiff: $(ls -A "$d")" >&2
		failures=$((failures + 1))
	fi
done

run "$fsx" -N 20000 "$tmp/fsx"
run "$fsx" -N 5000 -S 7 -l 70000 -m "$tmp/fsx"

# Same seed, same output.
out1=$("$fsx" -N 2000 -S 42 -v "$tmp/fsx" | cksum)
out2=$("$fsx" -N 2000 -S 42 -v "$tmp/fsx" | cksum)
if [ "$out1" != "$out2" ]; then
	echo "FAIL: fsx -S 42 printed different output on two runs" >&2
	failures=$((failures + 1))
fi

if [ "$failures" -ne 0 ]; then
	echo "$failures check(s) failed" >&2
	exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: not root, so fsdiff ran without --user and the root-only scenarios" >&2
	exit 77
fi
echo "ok: fsdiff and fsx agree with the native file system"
