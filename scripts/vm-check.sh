#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Run the test suite in a virtual machine booted with Debian 12's own kernel
# (or an older Debian release's: --kernel).
#
# Usage: sh scripts/vm-check.sh [OPTION]...
#   --tests "TEST..."  run only these tests (make check TESTS=...), named as
#                      in TESTS: tests/fs/test-qtfs-posix.sh tests/unit/test-loop
#   --configure "ARG..."  arguments for ./configure (none by default; CI's
#                      are --enable-werror --enable-sanitizers)
#   --accel kvm|tcg    KVM, or qemu's emulation (default: KVM where the CPU
#                      shows VT-x or AMD-V and /dev/kvm is there, else tcg)
#   --build guest|host build in the guest, or in the image's root file
#                      system with chroot on the host, the guest then only
#                      running the tests (default: guest with KVM, host
#                      with tcg)
#   --kernel SUITE     boot the kernel of Debian release SUITE instead of
#                      bookworm's, the rest of the image staying bookworm:
#                      bullseye is Linux 5.10, the oldest kernel supported
#                      (Debian 11, openEuler 22.03 LTS)
#   --cache DIR        where the guest's disk image is made and kept
#                      (default /var/cache/qtfs-vm, with --kernel
#                      /var/cache/qtfs-vm-SUITE)
#   --out DIR          where the results go (default ./vm-check)
#   --rebuild          make the guest's disk image again
#   --prepare          only make the guest's disk image (if needed)
#   --keep             keep the guest's work disk (the built tree) as
#                      DIR/work.img, to read with debugfs or a loop mount
#   --timeout SECONDS  power the guest off after this long (default 14400)
#   --mirror URL       Debian mirror (default http://deb.debian.org/debian;
#                      its security suite is looked for at URL-security)
#
# The product promises to run on stock kernels without modules, and
# `make check` otherwise only runs on the kernel of the machine at hand.
# The kernel a fresh Debian 12 machine boots is Linux 6.1
# (linux-image-amd64 of bookworm), so this script makes, once, a bookworm
# root file system with debootstrap holding that kernel and the packages
# scripts/setup-debian.sh installs (run inside it with --no-build, so the
# list lives in one place), kept under the cache directory as a directory
# and as an ext4 image of it.  Each run puts the tree (the tracked files,
# uncommitted changes included) on a second disk and boots the image with
# qemu-system-x86_64 (2 vCPUs, 4 GiB, the image's own kernel and initrd,
# no network: the tests need only loopback and their own network
# namespaces); the guest loads the modules the tests use (fuse, veth,
# overlay, loop, vsock_loopback), builds with autoreconf, configure and
# make -j2, runs make -j2 check and powers off.  The root disk is opened as
# a snapshot, so the cached image never changes.  The results are read
# back from the second disk with debugfs (no loop device, no mount on the
# host): the guest's uname -r, test-suite.log and every test's .log and
# .trs, the build log and the guest's dmesg, under DIR/results; the serial
# console is DIR/console.log.  Prints a summary with each failing test's
# FAIL lines; exits 0 only if the build and every test passed (a skip
# counts as a failure: on this image every test can run).
#
# Where /dev/kvm cannot run a stock kernel (a VM whose KVM is PVM, which
# runs only guests built for it: no vmx or svm in /proc/cpuinfo), qemu
# emulates the CPU (tcg), several times slower; the tree is then built on
# the host in the image's root file system (the same packages and
# compiler as the guest's: the build does not depend on the running
# kernel), and the guest only runs the tests.  Timing-sensitive checks may
# then fail for slowness alone: compare with a run on the host.
#
# With --kernel SUITE the image (a cache directory of its own) is the same
# but for its kernel: SUITE's linux-image-amd64 from the mirror, installed
# alone from SUITE (its dependencies and the initramfs-tools making its
# initrd are bookworm's), and booted.  The tree is still built with
# bookworm's compiler and kernel headers, as a bookworm binary would run
# on an older kernel: what the suite checks is then that the programs
# fall back where that kernel lacks a syscall, a flag, an io_uring opcode
# or a FUSE feature.
#
# Needs root; installs qemu-system-x86 and debootstrap if they are
# missing.  Making the image takes a few minutes and about 4 GiB.

set -eu

die() {
	echo "vm-check.sh: $*" >&2
	exit 1
}
usage() {
	echo "vm-check.sh: $*" >&2
	echo "Try 'sh scripts/vm-check.sh --help'." >&2
	exit 2
}
# shellcheck source=scripts/vm-lib.sh
. "$(dirname "$0")/vm-lib.sh"

tests=
configure_args=
cache=
kernel_suite=
out=$(pwd)/vm-check
rebuild=no
prepare=no
keep=no
timeout_s=14400
accel=
build_at=
mirror=http://deb.debian.org/debian

while [ $# -gt 0 ]; do
	case $1 in
	-h | --help)
		sed -n 's/^# \{0,1\}//; 7,32p' "$0"
		exit 0
		;;
	--tests | --configure | --accel | --build | --kernel | --cache | --out | --timeout | --mirror)
		[ $# -ge 2 ] || usage "$1 needs an argument"
		case $1 in
		--tests) tests=$2 ;;
		--configure) configure_args=$2 ;;
		--accel) accel=$2 ;;
		--build) build_at=$2 ;;
		--kernel) kernel_suite=$2 ;;
		--cache) cache=$2 ;;
		--out) out=$2 ;;
		--timeout) timeout_s=$2 ;;
		--mirror) mirror=${2%/} ;;
		esac
		shift 2
		;;
	--rebuild) rebuild=yes && shift ;;
	--prepare) prepare=yes && shift ;;
	--keep) keep=yes && shift ;;
	*) usage "unknown argument '$1'" ;;
	esac
done
case $kernel_suite in
'' | bookworm) kernel_suite= ;;
*[!a-z]*) usage "--kernel wants a Debian release's name (such as bullseye), not '$kernel_suite'" ;;
esac
[ -n "$cache" ] || cache=/var/cache/qtfs-vm${kernel_suite:+-$kernel_suite}
vm_common_args
# A release the mirror does not have would fail only after debootstrap.
if [ -n "$kernel_suite" ] && [ ! -f "$cache/base.img" ] &&
	! python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=30)' \
		"$mirror/dists/$kernel_suite/Release" 2>/dev/null; then
	die "cannot read $mirror/dists/$kernel_suite/Release:" \
		"no Debian release '$kernel_suite' there, or the mirror is out of reach"
fi
case $build_at in
'' | guest | host) ;;
*) usage "--build is guest or host, not '$build_at'" ;;
esac

top=$(cd "$(dirname "$0")/.." && pwd)
[ -f "$top/configure.ac" ] || die "cannot find configure.ac in '$top'"
[ "$(id -u)" -eq 0 ] || die "run as root (debootstrap, chroot and qemu)"

vm_host_packages
vm_pick_accel
if [ -z "$build_at" ]; then
	build_at=guest
	[ "$accel" = kvm ] || build_at=host
fi
git -C "$top" rev-parse --git-dir >/dev/null 2>&1 ||
	die "'$top' is not a git checkout: the guest gets the tree through git archive"

mkdir -p "$cache"
exec 9>"$cache/lock"
if ! flock -n 9; then
	echo "== waiting for another vm-check.sh using $cache"
	flock 9
fi

vm_image "$rebuild"
[ "$prepare" = no ] || exit 0

# The run's disk: the tree, the guest's script and its arguments.
t_start=$(date +%s)
stage=$(mktemp -d)
work=$out/work.img
trap 'rm -rf "$stage"' EXIT
trap 'exit 130' INT TERM
# A commit of the working tree's tracked files (none if it is clean).
vm_tree_rev
mkdir -p "$out"
rm -rf "$out/results" "$out/console.log" "$out/summary.txt" "$work"
vm_tree_export "$stage/src"
printf '%s\n' "$tests" >"$stage/tests.txt"
printf '%s\n' "$configure_args" >"$stage/configure.txt"
cat >"$stage/vm-run.sh" <<'EOF'
#!/bin/sh
# In the guest: load the tests' modules, build the tree in /work/src (if
# the host has not: "build", in the image's chroot), run its tests and
# leave the results in /work/results for scripts/vm-check.sh.
R=/work/results
mkdir -p "$R/logs"
say() {
	echo "vm-check: $*"
}
cd /work/src || exit 1
build() {
	t0=$(date +%s)
	args=$(cat /work/configure.txt)
	say "== build: autoreconf -fi, ./configure ${args:-(no arguments)}, make -j2"
	# make check with no tests builds what the tests run, so that the
	# guest has only them to run.
	# shellcheck disable=SC2086 # the configure arguments are words
	if { autoreconf -fi && ./configure $args &&
		make -j2 && make -j2 check TESTS=; } >"$R/build.log" 2>&1; then
		echo 0 >"$R/build.rc"
	else
		echo 1 >"$R/build.rc"
		say "== build failed; the end of its log:"
		tail -n 40 "$R/build.log"
	fi
	rm -f test-suite.log
	echo $(($(date +%s) - t0)) >"$R/build.seconds"
	say "== build took $(cat "$R/build.seconds") s"
}
if [ "${1-}" = build ]; then
	build
	exit 0
fi
uname -r >"$R/uname"
cat /proc/version >"$R/version"
say "kernel $(uname -r), $(nproc) CPUs, $(free -m | awk '/^Mem:/ {print $2}') MiB"
for m in fuse veth overlay loop vsock_loopback; do
	modprobe "$m" 2>&1 || say "modprobe $m failed"
done >"$R/modules.txt"
cat "$R/modules.txt"
[ -f "$R/build.rc" ] || build
if [ "$(cat "$R/build.rc")" -eq 0 ]; then
	t1=$(date +%s)
	tests=$(cat /work/tests.txt)
	say "== make -j2 check${tests:+ TESTS=\"$tests\"}"
	if [ -n "$tests" ]; then
		make -j2 check TESTS="$tests"
	else
		make -j2 check
	fi >"$R/check.log" 2>&1 </dev/null &
	# The PASS/FAIL lines on the console as they come.
	tail -n +1 -f --pid=$! "$R/check.log" |
		grep --line-buffered -E '^(PASS|FAIL|SKIP|XFAIL|XPASS|ERROR|# )'
	wait $!
	echo $? >"$R/check.rc"
	echo $(($(date +%s) - t1)) >"$R/check.seconds"
	say "== make check took $(cat "$R/check.seconds") s"
fi
[ ! -f test-suite.log ] || cp test-suite.log "$R/"
find tests \( -name '*.log' -o -name '*.trs' \) -type f | tar -cf - -T - | tar -xf - -C "$R/logs"
dmesg >"$R/dmesg.txt"
echo finished >"$R/finished"
sync
EOF
echo "== the tree: $desc"
if [ "$build_at" = host ]; then
	# In the image's root file system, so with the guest's packages; its
	# /work is the work disk's tree, at the path the guest mounts it on.
	echo "== build on the host, chroot $cache/rootfs (log: $out/results/build.log)"
	mkdir "$stage/results"
	in_root "$cache/rootfs" '
		root=$1
		mount -t tmpfs tmpfs "$root/tmp"
		mount --bind "$2" "$root/work"
		chroot "$root" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			HOME=/root LANG=C.UTF-8 sh /work/vm-run.sh build
	' "$stage"
fi
mkfs.ext4 -q -F -L qtfs-vm-work -d "$stage" "$work" 16G >/dev/null ||
	die "mkfs.ext4 of the work disk failed"
rm -rf "$stage"

if [ "$accel" = kvm ]; then
	set -- -accel kvm -cpu host
else
	set -- -accel tcg,thread=multi -cpu max
fi
echo "== booting Linux $(cat "$cache/kernel") of the image ($accel, 2 vCPUs, 4 GiB;" \
	"console: $out/console.log)"
{
	rc=0
	timeout -k 30 "$timeout_s" qemu-system-x86_64 -nodefaults -no-user-config "$@" -smp 2 -m 4G \
		-display none -monitor none -serial stdio -no-reboot \
		-kernel "$cache/vmlinuz" -initrd "$cache/initrd.img" \
		-append "root=/dev/vda rw console=ttyS0 quiet panic=1 systemd.show_status=error" \
		-drive "file=$cache/base.img,format=raw,if=virtio,snapshot=on" \
		-drive "file=$work,format=raw,if=virtio" \
		-device virtio-rng-pci </dev/null || rc=$?
	echo "$rc" >"$out/qemu.rc"
} | tee "$out/console.log"
elapsed=$(($(date +%s) - t_start))
qemu_rc=$(cat "$out/qemu.rc")
rm -f "$out/qemu.rc"
if [ "$qemu_rc" -eq 124 ]; then
	echo "vm-check.sh: the guest ran past --timeout $timeout_s s and was stopped" >&2
elif [ "$qemu_rc" -ne 0 ]; then
	echo "vm-check.sh: qemu exited with status $qemu_rc" >&2
fi

debugfs -R "rdump /results $out" "$work" >/dev/null 2>&1 || true
[ "$keep" = yes ] || rm -f "$work"
R=$out/results
[ -f "$R/finished" ] || die "the guest did not finish its run; see $out/console.log"

# The summary, from each test's .trs.
{
	echo "guest kernel: $(cat "$R/uname")" \
		"($(sed -n 's/.* \(Debian [^ ]*\) .*/\1/p' "$R/version")), $accel, built on the $build_at"
	echo "tree: $desc; the run took ${elapsed} s: build $(cat "$R/build.seconds") s," \
		"make check $(cat "$R/check.seconds" 2>/dev/null || echo -) s"
	if [ "$(cat "$R/build.rc")" -ne 0 ]; then
		echo "BUILD FAILED: see $R/build.log"
	else
		find "$R/logs" -name '*.trs' | sort >"$R/trs.list"
		for r in PASS FAIL SKIP XFAIL XPASS ERROR; do
			n=$(xargs -r grep -l "^:test-result: $r" <"$R/trs.list" | wc -l)
			[ "$n" -eq 0 ] || printf '%s %s, ' "$n" "$r"
		done
		echo "of $(wc -l <"$R/trs.list") tests (make check exited $(cat "$R/check.rc"))"
		xargs -r grep -l -E '^:test-result: (FAIL|ERROR|XPASS|SKIP)' <"$R/trs.list" |
			while read -r trs; do
				log=${trs%.trs}.log
				echo "$(sed -n 's/^:test-result: //p' "$trs" | head -n 1): ${trs#"$R"/logs/}" |
					sed 's/\.trs$//'
				echo "    log: $log"
				grep -E '^(FAIL|ERROR|SKIP)' "$log" | head -n 10 | sed 's/^/    /'
			done
	fi
	echo "logs: $R"
} >"$out/summary.txt"
echo
echo "== vm-check summary"
cat "$out/summary.txt"
[ "$(cat "$R/build.rc")" -eq 0 ] && [ "$(cat "$R/check.rc")" -eq 0 ] &&
	! xargs -r grep -l -E '^:test-result: (FAIL|ERROR|XPASS|SKIP)' <"$R/trs.list" | grep -q . ||
	exit 1
