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
# checks.  Needs root.
#
# Usage: sh scripts/demo.sh [CONFIGURE-ARG]...

set -eu

cd "$(dirname "$0")/.."
sh scripts/setup-debian.sh "$@"
echo
echo "== the offload demo (tests/cs/test-cs-e2e.sh)"
top_builddir=$(pwd) exec sh tests/cs/test-cs-e2e.sh
