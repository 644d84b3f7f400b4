# SPDX-License-Identifier: Apache-2.0
#
# Sourced by scripts/vm-check.sh and scripts/vm-pair.sh: the guest's disk
# image (a Debian 12 root file system made with debootstrap, cached with
# its kernel and initrd), what the host needs to make and boot it, and the
# tree as the guests get it.  One recipe, so that both scripts boot the
# same cached image and a change to it is made in one place.
#
# The caller sets top (the source tree), cache (the image's directory),
# mirror (the Debian mirror), accel (kvm, tcg, or empty to choose) and
# may set kernel_suite (the Debian release whose kernel the image boots;
# empty or unset: bookworm's own, as the rest of the image), and
# defines die MESSAGE (exit 1) and usage MESSAGE (a bad argument: exit 2).  It holds the lock on $cache/lock while it uses the
# image.
#
# vm_common_args: check the options both scripts take (accel, timeout_s)
#   and make cache and out absolute.
# vm_host_packages: install what is missing of the host's packages.
# vm_pick_accel: set accel (kvm where the CPU can, else tcg) if empty.
# in_root ROOT SCRIPT [ARG]...: see below.
# vm_image REBUILD: make the image if REBUILD is yes, if it is missing or
#   of another recipe; else say it is cached.
# vm_tree_rev: set rev (a commit of the tree's tracked files, uncommitted
#   changes included) and desc (how to name it).
# vm_tree_export DIR: the files of $rev, made into DIR.

# shellcheck shell=sh disable=SC2154,SC2034 # the caller's variables, set and read there

# Bump when the image's recipe below changes (scripts/setup-debian.sh is
# part of the key already): a cached image of another recipe is made anew.
recipe=2
suite=bookworm

vm_common_args() {
	case $accel in
	'' | kvm | tcg) ;;
	*) usage "--accel is kvm or tcg, not '$accel'" ;;
	esac
	case $timeout_s in
	'' | *[!0-9]*) usage "--timeout wants a number of seconds, not '$timeout_s'" ;;
	esac
	case $cache in /*) ;; *) cache=$(pwd)/$cache ;; esac
	case $out in /*) ;; *) out=$(pwd)/$out ;; esac
}

vm_host_packages() {
	# The host's side: qemu, debootstrap and its keyring, mkfs.ext4 and
	# debugfs, flock and unshare.  As scripts/setup-debian.sh does.
	missing=
	for p in qemu-system-x86 debootstrap debian-archive-keyring e2fsprogs util-linux git; do
		status=$(dpkg-query -W -f '${Status}' "$p" 2>/dev/null) || status=
		[ "$status" = "install ok installed" ] || missing="$missing $p"
	done
	if [ -n "$missing" ]; then
		echo "== installing on the host:$missing"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update
		# shellcheck disable=SC2086 # one word per package
		apt-get install -y --no-install-recommends $missing
	fi
}

vm_pick_accel() {
	# KVM needs the CPU's virtualization (shown as vmx or svm): a /dev/kvm
	# without it is PVM's or the like, which boots only kernels made for it.
	if [ -z "$accel" ]; then
		if [ -c /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
			accel=kvm
		else
			accel=tcg
			echo "== no KVM for a stock kernel here (no vmx or svm in /proc/cpuinfo, or no" \
				"/dev/kvm): qemu emulates the CPU (tcg)"
		fi
	fi
	[ "$accel" = tcg ] || [ -c /dev/kvm ] ||
		die "no /dev/kvm: this machine cannot run KVM guests (try --accel tcg)"
}

# What the image depends on: the recipe, the suite and mirror, the
# kernel's suite, and the package list of scripts/setup-debian.sh.
vm_image_key() {
	{
		echo "recipe=$recipe suite=$suite mirror=$mirror"
		[ -z "${kernel_suite-}" ] || echo "kernel_suite=$kernel_suite"
		cat "$top/scripts/setup-debian.sh"
	} | sha256sum | cut -d ' ' -f 1
}

# in_root ROOT SCRIPT [ARG]...: run SCRIPT with sh -e, $1 being ROOT and
# the ARGs after it, in a mount namespace of its own where ROOT has /proc,
# /sys and /dev mounted, as a chroot into it needs.
in_root() {
	_root=$1 _script=$2
	shift 2
	unshare --mount --propagation private sh -ec "
		mount -t proc proc \"\$1/proc\"
		mount -t sysfs sysfs \"\$1/sys\"
		mount --rbind /dev \"\$1/dev\"
		$_script" sh "$_root" "$@"
}

# The guest's root file system, made in $cache/rootfs and kept there (for
# --build host) and as $cache/base.img, with the kernel and initrd beside
# it.  The chroot's /proc, /sys and /dev are mounted in a mount namespace
# of their own (in_root), so that nothing stays mounted on the host,
# whatever stops the script.
make_image() {
	root=$cache/rootfs
	rm -rf "$root" "$cache/base.img" "$cache/vmlinuz" "$cache/initrd.img" "$cache/key" \
		"$cache/kernel"
	echo "== debootstrap $suite into $root"
	# debootstrap mounts /proc and /sys in the target itself.
	unshare --mount --propagation private debootstrap --variant=minbase \
		--include=systemd-sysv,udev,kmod,ca-certificates "$suite" "$root" "$mirror" \
		>"$cache/debootstrap.log" 2>&1 ||
		die "debootstrap failed; see $cache/debootstrap.log (and $root/debootstrap/debootstrap.log)"
	cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb $mirror-security $suite-security main
EOF
	echo qtfs-vm >"$root/etc/hostname"
	printf '127.0.0.1\tlocalhost\n127.0.1.1\tqtfs-vm\n::1\tlocalhost ip6-localhost ip6-loopback\n' \
		>"$root/etc/hosts"
	{
		echo '/dev/vda / ext4 rw,errors=remount-ro 0 1'
		echo '/dev/vdb /work ext4 rw,nofail,x-systemd.device-timeout=30s 0 2'
	} >"$root/etc/fstab"
	mkdir -p "$root/work"
	# No service starts in the chroot while packages are installed.
	printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
	chmod 755 "$root/usr/sbin/policy-rc.d"
	# setup-debian.sh looks for configure.ac beside its folder.
	mkdir -p "$root/var/tmp/qtfs-setup/scripts"
	cp "$top/scripts/setup-debian.sh" "$root/var/tmp/qtfs-setup/scripts/"
	cp "$top/configure.ac" "$root/var/tmp/qtfs-setup/"
	echo "== installing the kernel${kernel_suite:+ of $kernel_suite} and scripts/setup-debian.sh's" \
		"packages in the image"
	# Another release's kernel: its linux-image-amd64 (which names the
	# release's latest kernel package) from a source list that is there
	# only for that install, so that nothing else comes from that release;
	# the kernel package's dependencies (kmod, linux-base, initramfs-tools)
	# are bookworm's, and bookworm's initramfs-tools makes its initrd.
	in_root "$root" '
		root=$1 mirror=$2 ksuite=$3
		export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
		chroot "$root" apt-get update
		if [ -n "$ksuite" ]; then
			list=$root/etc/apt/sources.list.d/kernel-$ksuite.list
			echo "deb $mirror $ksuite main" >"$list"
			chroot "$root" apt-get update
			chroot "$root" apt-get install -y --no-install-recommends \
				"linux-image-amd64/$ksuite" initramfs-tools
			rm -f "$list"
			chroot "$root" apt-get update
		else
			chroot "$root" apt-get install -y --no-install-recommends linux-image-amd64 \
				initramfs-tools
		fi
		chroot "$root" sh /var/tmp/qtfs-setup/scripts/setup-debian.sh --no-build
		chroot "$root" apt-get clean
	' "$mirror" "${kernel_suite-}" >"$cache/install.log" 2>&1 ||
		die "installing in the image failed; see $cache/install.log"
	rm -rf "$root/var/tmp/qtfs-setup" "$root/usr/sbin/policy-rc.d"
	# As on CI's machines, no sshd or containerd runs: the tests start
	# their own.  No login prompt on the serial console; the test run is
	# the guest's one job, and it powers the guest off when it ends.
	for u in ssh.service containerd.service serial-getty@ttyS0.service getty@tty1.service; do
		ln -sf /dev/null "$root/etc/systemd/system/$u"
	done
	cat >"$root/etc/systemd/system/qtfs-vm-check.service" <<'EOF'
[Unit]
Description=dpu-offload test run (scripts/vm-check.sh)
ConditionPathExists=/work/vm-run.sh
RequiresMountsFor=/work
After=multi-user.target
SuccessAction=poweroff
FailureAction=poweroff

[Service]
Type=oneshot
ExecStart=/bin/sh /work/vm-run.sh
Environment=HOME=/root LANG=C.UTF-8 AM_COLOR_TESTS=no
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=infinity
TasksMax=infinity

[Install]
WantedBy=multi-user.target
EOF
	mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
	ln -sf ../qtfs-vm-check.service "$root/etc/systemd/system/multi-user.target.wants/"
	set -- "$root"/boot/vmlinuz-*
	[ $# -eq 1 ] && [ -f "$1" ] || die "expected one kernel in $root/boot, found: $*"
	cp "$1" "$cache/vmlinuz"
	echo "${1#"$root"/boot/vmlinuz-}" >"$cache/kernel"
	cp "$root/boot/initrd.img-${1#"$root"/boot/vmlinuz-}" "$cache/initrd.img" ||
		die "no initrd for $1"
	# Room for the tests' temporary files (the disk is sparse).
	mib=$(($(du -sm "$root" | cut -f 1) + 8192))
	echo "== mkfs.ext4 -d: $cache/base.img (${mib} MiB, sparse)"
	mkfs.ext4 -q -F -L qtfs-vm-root -d "$root" "$cache/base.img.new" "${mib}M" >/dev/null ||
		die "mkfs.ext4 of the image failed"
	mv "$cache/base.img.new" "$cache/base.img"
	echo "$key" >"$cache/key"
}

vm_image() {
	key=$(vm_image_key)
	if [ "$1" = yes ] || [ ! -f "$cache/base.img" ] || [ ! -d "$cache/rootfs/work" ] ||
		[ ! -f "$cache/vmlinuz" ] || [ ! -f "$cache/initrd.img" ] ||
		[ "$(cat "$cache/key" 2>/dev/null)" != "$key" ]; then
		make_image
	else
		echo "== guest image: $cache/base.img (cached)"
	fi
}

vm_tree_rev() {
	# A commit of the working tree's tracked files (none if it is clean).
	rev=$(git -C "$top" -c user.name=vm-check -c user.email=vm-check@localhost stash create) ||
		die "git stash create failed in '$top'"
	if [ -n "$rev" ]; then
		desc="$(git -C "$top" rev-parse --short HEAD) with uncommitted changes"
	else
		rev=HEAD
		desc=$(git -C "$top" rev-parse --short HEAD)
	fi
}

vm_tree_export() {
	mkdir "$1"
	git -C "$top" archive "$rev" | tar -x -C "$1"
}
