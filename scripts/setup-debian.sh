#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Prepare a Debian 12 machine and build the tree: install the packages the
# build and the tests need, then autoreconf, configure and make.  Meant for a
# fresh machine with only git and a shell, run as root from anywhere; safe to
# run again (packages already present are not fetched again).
#
# Usage: sh scripts/setup-debian.sh [--no-build] [CONFIGURE-ARG]...
#   --no-build   only install packages
#   other arguments are passed to ./configure

set -eu

packages="build-essential autoconf automake pkg-config
libglib2.0-dev liburing-dev libfuse3-dev fuse3 libjson-c-dev
libcurl4-openssl-dev libssh2-1-dev check libmicrohttpd-dev libsqlite3-dev libyaml-dev
clang libclang-rt-14-dev
runc busybox-static containerd
iproute2 openssh-server openssh-client sshfs procps psmisc python3 python3-jsonschema util-linux
mount e2fsprogs systemd
ca-certificates openssl time strace
git sqlite3 rsync attr"
# kubectl for tests/kube/test-fake-kubectl.sh.  A kubectl already installed
# (Google's `kubectl` package, which conflicts with Debian's) does as well.
command -v kubectl >/dev/null 2>&1 || packages="$packages kubernetes-client"
# containerd for tests/fs/test-qtfs-containerd.sh, which starts its own
# (the package's service is not started when this script installs it).
# libclang-rt-14-dev holds libFuzzer's runtime; clang only recommends it.
# mount and e2fsprogs: make bench-qtfs's and test-qtfs-dircache's ext4 on a loop device (both are
# of priority required, so already there on most installs).
# systemd: systemd-analyze verify of the units (tests/cli/test-units.sh).
# strace: tests/cs/test-cs-safety.sh holds a program's exec with it.
# git, sqlite3, rsync, attr (getfattr, setfattr): tests/fs/test-qtfs-tools.sh
# runs them on a mount and on the native file system side by side.

die() {
	echo "setup-debian.sh: $*" >&2
	exit 1
}

build=yes
n=$#
while [ "$n" -gt 0 ]; do
	arg=$1
	shift
	n=$((n - 1))
	case $arg in
	--no-build) build=no ;;
	-h | --help)
		sed -n 's/^# \{0,1\}//; 4,11p' "$0"
		exit 0
		;;
	*) set -- "$@" "$arg" ;;
	esac
done

cd "$(dirname "$0")/.."
[ -f configure.ac ] || die "cannot find configure.ac in $(pwd)"

missing=
for p in $packages; do
	# dpkg-query fails for unknown packages too; then apt-get decides.
	status=$(dpkg-query -W -f '${Status}' "$p" 2>/dev/null) || status=
	[ "$status" = "install ok installed" ] || missing="$missing $p"
done

if [ -n "$missing" ]; then
	[ "$(id -u)" -eq 0 ] || die "run as root to install:$missing"
	echo "== installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	# No service of a package installed here starts (containerd's): the
	# tests start their own daemons.  Only where no policy is in place.
	policy=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		policy=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod 755 "$policy"
		trap 'rm -f "$policy"' EXIT
	fi
	# shellcheck disable=SC2086 # one word per package
	apt-get install -y --no-install-recommends $missing
	[ -z "$policy" ] || rm -f "$policy"
else
	echo "== packages: all present"
fi

[ "$build" = yes ] || exit 0

echo "== autoreconf -fi"
autoreconf -fi
echo "== ./configure $*"
./configure "$@"
echo "== make -j$(nproc)"
make -j"$(nproc)"
