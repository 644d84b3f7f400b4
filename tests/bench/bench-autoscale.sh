#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# bench-autoscale.sh [NODES...]: time one RunOnce of the autoscaler core
# on synthetic clusters (default 1,000 and 5,000 nodes x 30 pods, 20 node
# groups, 1,000 pending pods in 50 shapes; issue 6), then `autoscale once`
# end to end on the same 5,000-node cluster written as a snapshot file.
#
# The core is compiled here with -O2 and without sanitizers, whatever the
# build tree was configured with, so the figures do not depend on
# --enable-sanitizers; `autoscale once` is the build tree's own (see
# below).  Not part of make check: it never gates on a time.
# Targets (docs/benchmarks.md): 1,000 nodes < 150 ms, 5,000 nodes < 1 s.

set -eu

top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
CC=${CC:-cc}
nodes=${*:-1000 5000}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-autoscale.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

core=$top_srcdir/autoscale/core
# shellcheck disable=SC2046  # pkg-config prints several words
$CC -O2 -DNDEBUG -I"$top_builddir" -I"$core" $(pkg-config --cflags glib-2.0) \
	"$top_srcdir/tests/bench/bench-autoscale.c" "$core"/*.c \
	$(pkg-config --libs glib-2.0) -lm -o "$tmp/bench-autoscale"

echo "== RunOnce in process (-O2, no sanitizers)"
for n in $nodes; do
	"$tmp/bench-autoscale" "$n" 5
	echo
done

# `autoscale once` is the build tree's program (make builds it first): since
# the live daemon (issue 9) it links the Kubernetes client, bm/ and lib/,
# too much to compile by hand here.  Its build flags are the tree's.
bin=$top_builddir/autoscale/autoscale
build="the build tree's flags"
if ldd "$bin" 2>/dev/null | grep -q libasan; then
	build="a sanitizer build: expect it several times slower than -O2"
fi
if command -v /usr/bin/time >/dev/null; then
	last=$(echo "$nodes" | awk '{print $NF}')
	"$tmp/bench-autoscale" --json "$last" >"$tmp/snap.json"
	echo "== autoscale once end to end, $last nodes ($(du -m "$tmp/snap.json" | cut -f1) MiB snapshot; $build)"
	/usr/bin/time -f "wall %e s, peak RSS %M KiB" "$bin" once --snapshot "$tmp/snap.json" >"$tmp/decision.json"
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); su=d["scale_up"]; sd=d["scale_down"]; print("decision: scale-up", su and (su["node_group"], su["delta"]), "scale-down", sd and len(sd["nodes"]), "nodes")' "$tmp/decision.json" 2>/dev/null || true
fi
