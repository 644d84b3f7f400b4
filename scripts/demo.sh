#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# The README's demo: set the machine up and build (setup-debian.sh), then
# bring up a DPU offload environment between two "hosts" on this machine
# and use it, printing what happens at each step.  Network namespace HOST
# runs qtfs-server and rexecd; network namespace DPU (with its own mount
# and pid namespaces) runs `chroot-setup up` with a profile that mounts the
# host's /proc, /sys and a shared directory with fuse-qtfs, adds runc and
# kill shims, a unix-socket forward and a service.  From inside it, a
# busybox container is started on the host with Debian's runc, found in
# the host's /proc and cgroups, read through a FIFO and killed; then
# `chroot-setup down` removes everything.  The scenario is the end-to-end
# test tests/cs/test-cs-e2e.sh, so the demo cannot drift from what CI
# checks.  Needs root.  Last, the capacity simulator compares the shipped
# mixed VM / bare-metal / container workload on a pooled and a dedicated
# bare-metal pool (`sim compare`, checked by tests/sim/test-run.sh) and
# prints where its report is.
#
# Usage: sh scripts/demo.sh [CONFIGURE-ARG]...

set -eu

cd "$(dirname "$0")/.."
sh scripts/setup-debian.sh "$@"
echo
echo "== the offload demo (tests/cs/test-cs-e2e.sh)"
e2e=0
top_builddir=$(pwd) sh tests/cs/test-cs-e2e.sh || e2e=$?
echo
echo "== capacity planning: pooled vs dedicated bare metal (sim compare)"
out=${SIM_DEMO_OUT:-$(pwd)/sim-demo}
./sim/sim compare --trace sim/examples/mixed-workload.jsonl \
	--cluster sim/examples/mixed-pooled.ini --cluster sim/examples/mixed-dedicated.ini \
	--out "$out"
echo "report: $out/report.html (summaries: $out/summary.json)"
exit "$e2e"
