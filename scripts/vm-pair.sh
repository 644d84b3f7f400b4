#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Run the offload across two kernels: host-vm and dpu-vm, two guests of
# the Debian 12 image scripts/vm-check.sh makes, set up as
# docs/two-vm-guide.md sets up its two VMs.
#
# Usage: sh scripts/vm-pair.sh [OPTION]...
#   --out DIR          where the results go (default ./vm-pair)
#   --cache DIR        where the guests' disk image is made and kept
#                      (default /var/cache/qtfs-vm, shared with vm-check.sh)
#   --timeout SECONDS  power the guests off after this long (default 2400,
#                      at least 600)
#   --accel kvm|tcg    KVM, or qemu's emulation (default: as vm-check.sh)
#   --mirror URL       Debian mirror the image is made from (default
#                      http://deb.debian.org/debian; as vm-check.sh's)
#   --keep             keep the guests' work disks as DIR/host-work.img and
#                      DIR/dpu-work.img
#
# Everything else runs the "host" and the "DPU" on one kernel, with network
# namespaces (tests/cs/test-cs-e2e.sh, the README's demo); a user of the
# two-VM guide has two kernels, two boot_ids, two pid spaces and a real
# network between them.  This script boots two guests of the cached image
# (made if needed, as vm-check.sh --prepare does; the recipe is
# scripts/vm-lib.sh's), with qemu, 1 vCPU and 2 GiB each, joined by a
# private qemu socket network (host-vm listens on a port of 127.0.0.1,
# dpu-vm connects; no other network).  The tree (its tracked files,
# uncommitted changes included) is built once, in the image's root file
# system by chroot (as vm-check.sh --build host does: the guests' packages
# and compiler), and put with two pre-shared keys (mode 600) and a role
# file on each guest's work disk; each guest runs scripts/vm-pair-guest.sh
# and powers off.  host-vm (192.168.122.10) serves qtfs-server (/proc,
# /sys, /srv/shared) and rexecd on tcp with the keys, and a unix socket
# for the forward; dpu-vm (192.168.122.20) runs `chroot-setup up` of a
# profile modeled on test-cs-e2e's and checks:
#   1. two kernels: boot_id and hostname through the proc-mode mount are
#      the host's (as it wrote them in /srv/shared), not the DPU's; the
#      host's qtfs-server pid is the host's; /proc/self is the DPU's own;
#   2. files cross the shared directory both ways;
#   3. a busybox bundle built on the shared path runs on the host through
#      the runc shim: its init is found in the host /proc and its cgroup
#      through /sys, its stdout reaches the DPU through a fifo, the kill
#      shim stops it;
#   4. the unix-socket forward carries a request to the host; the service
#      writes to the host through the mount;
#   5. `chroot-setup down` leaves no mount, helper or state;
# then says it is done (a file in /srv/shared, through rexec), and host-vm
# checks its side: the DPU's file, the container's output written on the
# host's kernel, the forward's request, the service's file.  Each guest's
# results are read back from its work disk with debugfs into
# DIR/results/host and DIR/results/dpu (run.log, checks.txt, the daemons'
# logs); the serial consoles are DIR/host-console.log and
# DIR/dpu-console.log.  Prints a summary with every failing check's line
# (and the notes: what the run saw that is not a check); exits 0 only if
# both guests finished and every check passed.  A watchdog
# in each guest powers it off before --timeout; the guests are stopped at
# --timeout in any case.
#
# Needs root, as vm-check.sh, and its cache lock: one of the two runs at a
# time.  Under emulation (tcg) the run takes several minutes.

set -eu

die() {
	echo "vm-pair.sh: $*" >&2
	exit 1
}
usage() {
	echo "vm-pair.sh: $*" >&2
	echo "Try 'sh scripts/vm-pair.sh --help'." >&2
	exit 2
}
# shellcheck source=scripts/vm-lib.sh
. "$(dirname "$0")/vm-lib.sh"

cache=/var/cache/qtfs-vm
out=$(pwd)/vm-pair
keep=no
timeout_s=2400
accel=
mirror=http://deb.debian.org/debian

while [ $# -gt 0 ]; do
	case $1 in
	-h | --help)
		sed -n 's/^# \{0,1\}//; 8,18p' "$0"
		exit 0
		;;
	--cache | --out | --timeout | --accel | --mirror)
		[ $# -ge 2 ] || usage "$1 needs an argument"
		case $1 in
		--cache) cache=$2 ;;
		--out) out=$2 ;;
		--timeout) timeout_s=$2 ;;
		--accel) accel=$2 ;;
		--mirror) mirror=${2%/} ;;
		esac
		shift 2
		;;
	--keep) keep=yes && shift ;;
	*) usage "unknown argument '$1'" ;;
	esac
done
vm_common_args
[ "$timeout_s" -ge 600 ] || usage "--timeout wants at least 600 seconds, not $timeout_s"

top=$(cd "$(dirname "$0")/.." && pwd)
[ -f "$top/configure.ac" ] || die "cannot find configure.ac in '$top'"
[ -f "$top/scripts/vm-pair-guest.sh" ] || die "cannot find scripts/vm-pair-guest.sh in '$top'"
[ "$(id -u)" -eq 0 ] || die "run as root (chroot and qemu)"
vm_host_packages
vm_pick_accel
git -C "$top" rev-parse --git-dir >/dev/null 2>&1 ||
	die "'$top' is not a git checkout: the guests get the tree through git archive"

mkdir -p "$cache"
exec 9>"$cache/lock"
if ! flock -n 9; then
	echo "== waiting for another vm-check.sh or vm-pair.sh using $cache"
	flock 9
fi
vm_image no

# The guests' deadlines, inside the outer one: the watchdog powers a guest
# off 2 minutes before qemu is stopped, so that its results are on its
# disk; host-vm waits for the DPU until 3 minutes before that, dpu-vm for
# the host's ports up to 15 minutes (a guest's boot under tcg on a loaded
# machine is slow, but not that slow).
watchdog=$((timeout_s - 120))
wait_done=$((watchdog - 180))
wait_ports=900
[ "$wait_ports" -lt "$wait_done" ] || wait_ports=$((wait_done / 2))

t_start=$(date +%s)
stage=$(mktemp -d)
hq='' dq='' tailpid=''
# shellcheck disable=SC2317 # run by the traps
cleanup() {
	for p in $hq $dq $tailpid; do
		kill "$p" 2>/dev/null || :
	done
	rm -rf "$stage"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

vm_tree_rev
mkdir -p "$out"
rm -rf "$out/results" "$out/host-console.log" "$out/dpu-console.log" "$out/summary.txt" \
	"$out/build.log" "$out/host-work.img" "$out/dpu-work.img"
vm_tree_export "$stage/src"
echo "== the tree: $desc"

# Built once, for both guests, in the image's root file system with its
# /work the stage (the path the guests mount their disks on).
echo "== build on the host, chroot $cache/rootfs (log: $out/build.log)"
t0=$(date +%s)
cat >"$stage/build.sh" <<'EOF'
cd /work/src && autoreconf -fi && ./configure && make -j2
EOF
in_root "$cache/rootfs" '
	root=$1
	mount -t tmpfs tmpfs "$root/tmp"
	mount --bind "$2" "$root/work"
	chroot "$root" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 sh -e /work/build.sh
' "$stage" >"$out/build.log" 2>&1 || {
	tail -n 40 "$out/build.log" >&2
	die "the build failed; see $out/build.log"
}
build_s=$(($(date +%s) - t0))
rm "$stage/build.sh"
echo "== build took $build_s s"

# Two keys, one per service, as the guide makes them.
mkdir "$stage/keys"
(
	umask 077
	head -c 48 /dev/urandom | base64 >"$stage/keys/qtfs-psk"
	head -c 48 /dev/urandom | base64 >"$stage/keys/rexec-key"
)
cp "$top/scripts/vm-pair-guest.sh" "$stage/vm-run.sh"
echo "$watchdog" >"$stage/watchdog"
echo "$wait_done" >"$stage/wait-done"
echo "$wait_ports" >"$stage/wait-ports"
for role in host dpu; do
	echo "$role" >"$stage/role"
	mkfs.ext4 -q -F -L "qtfs-$role" -d "$stage" "$out/$role-work.img" 8G >/dev/null ||
		die "mkfs.ext4 of $role-vm's work disk failed"
done
rm -rf "$stage"

# A free port of 127.0.0.1 for the guests' network.
port=$((20000 + $$ % 20000))
while ss -ltn | grep -q "127.0.0.1:$port "; do
	port=$((port + 1))
done

if [ "$accel" = kvm ]; then
	accel_args="-accel kvm -cpu host"
else
	accel_args="-accel tcg,thread=multi -cpu max"
fi
# boot ROLE NETDEV-OPTION MAC: one guest, in the background, its pid in $!.
boot() {
	# shellcheck disable=SC2086 # the accelerator's words
	timeout -k 30 "$timeout_s" qemu-system-x86_64 -nodefaults -no-user-config $accel_args \
		-smp 1 -m 2G -display none -monitor none -no-reboot \
		-serial "file:$out/$1-console.log" \
		-kernel "$cache/vmlinuz" -initrd "$cache/initrd.img" \
		-append "root=/dev/vda rw console=ttyS0 quiet panic=1 systemd.show_status=error" \
		-drive "file=$cache/base.img,format=raw,if=virtio,snapshot=on" \
		-drive "file=$out/$1-work.img,format=raw,if=virtio" \
		-netdev "socket,id=n0,$2" -device "virtio-net-pci,netdev=n0,mac=$3" \
		-device virtio-rng-pci </dev/null >"$out/$1-qemu.log" 2>&1 &
}
echo "== booting host-vm and dpu-vm, Linux $(cat "$cache/kernel") of the image ($accel," \
	"1 vCPU and 2 GiB each; network 127.0.0.1:$port; consoles: $out/host-console.log," \
	"$out/dpu-console.log)"
: >"$out/host-console.log"
: >"$out/dpu-console.log"
boot host "listen=127.0.0.1:$port" 52:54:00:12:34:10
hq=$!
# dpu-vm's qemu connects at its start: host-vm's must be listening.
i=0
until ss -ltn | grep -q "127.0.0.1:$port "; do
	[ $i -lt 300 ] && kill -0 "$hq" 2>/dev/null ||
		die "host-vm's qemu does not listen on 127.0.0.1:$port; see $out/host-qemu.log"
	sleep 0.1
	i=$((i + 1))
done
boot dpu "connect=127.0.0.1:$port" 52:54:00:12:34:20
dq=$!
# Each guest's lines (its run.log, marked with its name) as they come.
{
	tail -n +1 -F "$out/host-console.log" "$out/dpu-console.log" 2>/dev/null &
	echo $! >"$out/.tail.pid"
	wait
} | sed -un 's/^.*\(\[\(host\|dpu\)-vm\] \)/\1/p' &
i=0
while [ ! -s "$out/.tail.pid" ] && [ $i -lt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
tailpid=$(cat "$out/.tail.pid" 2>/dev/null || :)
hrc=0
wait "$hq" || hrc=$?
hq=
drc=0
wait "$dq" || drc=$?
dq=
sleep 1
[ -z "$tailpid" ] || kill "$tailpid" 2>/dev/null || :
tailpid=
rm -f "$out/.tail.pid"
elapsed=$(($(date +%s) - t_start))
for r in host:$hrc dpu:$drc; do
	if [ "${r#*:}" -eq 124 ]; then
		echo "vm-pair.sh: ${r%:*}-vm ran past --timeout $timeout_s s and was stopped" >&2
	elif [ "${r#*:}" -ne 0 ]; then
		echo "vm-pair.sh: ${r%:*}-vm's qemu exited with status ${r#*:}; see $out/${r%:*}-qemu.log" >&2
	fi
done

mkdir -p "$out/results"
for role in host dpu; do
	debugfs -R "rdump /$role $out/results" "$out/$role-work.img" >/dev/null 2>&1 || :
	[ "$keep" = yes ] || rm -f "$out/$role-work.img"
done

# The summary, from each guest's checks.
pass=yes
{
	for role in host dpu; do
		R=$out/results/$role
		nok=$(grep -c '^ok:' "$R/run.log" 2>/dev/null) || :
		nfail=$(grep -c '^FAIL:' "$R/run.log" 2>/dev/null) || :
		if [ -f "$R/finished" ]; then
			state=finished
		else
			state="DID NOT FINISH (see $out/$role-console.log)"
			pass=no
		fi
		echo "$role-vm: Linux $(cat "$R/uname" 2>/dev/null || echo '?')," \
			"boot_id $(cat "$R/boot_id" 2>/dev/null || echo '?'), $state: ${nok:-0} ok, ${nfail:-0} FAIL"
		[ "${nfail:-0}" -eq 0 ] && [ "${nok:-0}" -gt 0 ] || pass=no
		grep -E '^(FAIL|note):' "$R/run.log" 2>/dev/null | sed 's/^/    /' || :
	done
	echo "tree: $desc; the run took $elapsed s (build $build_s s); $accel, 1 vCPU and 2 GiB each"
	echo "logs: $out/results/host, $out/results/dpu (run.log, checks.txt)"
} >"$out/summary.txt"
[ "$hrc" -eq 0 ] && [ "$drc" -eq 0 ] || pass=no
echo
echo "== vm-pair summary"
cat "$out/summary.txt"
[ "$pass" = yes ]
