#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# The README's demo, for now: set the machine up and build (setup-debian.sh),
# then show each program's command line.  The programs are placeholders
# (README "Status"); the real demo replaces this once they work.
#
# Usage: sh scripts/demo.sh [CONFIGURE-ARG]...

set -eu

cd "$(dirname "$0")/.."
sh scripts/setup-debian.sh "$@"

for p in fuse-qtfs/qtfs-server fuse-qtfs/fuse-qtfs rexecd/rexecd rexec/rexec \
	chroot-setup/chroot-setup autoscale/autoscale \
	bm/bm-api bm/bm-controller bm/bm-handler bm/bmctl sim/sim; do
	echo
	echo "==== $p ===="
	"./$p" --help
done

echo
echo "All programs built.  They only answer --help and --version so far;"
echo "see the Status table in README.md."
