#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# A container runtime living on the mount, as in the offload, where the
# DPU's containerd keeps /var/lib/containerd and its runtime state in host
# directories (docs/fuse-qtfs.md): Debian's containerd with its root (the
# content store, its bbolt database, the overlayfs snapshots: the lower and
# the upper layer of every container) and its state (bundles, runc's
# state) on a fuse-qtfs mount.  It imports an image built here (a static
# busybox), runs containers with their output and exit status, keeps one
# running that writes into its upper layer, which the host sees, and execs
# into it; that container survives a kill -9 of qtfs-server and a restart
# of containerd, which finds its database and the container's shim again
# through the mount; the content store's blobs on the host match their
# digests; and removing it all leaves no snapshot, blob or mount behind.
# Over a unix socket, then over tcp with 4 connections.
# Skips (77) without containerd, ctr, runc or busybox (scripts/setup-debian.sh
# installs them).

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"

for t in containerd ctr containerd-shim-runc-v2 runc busybox python3; do
	if ! command -v $t >/dev/null; then
		echo "SKIP: needs $t (scripts/setup-debian.sh installs it)"
		exit 77
	fi
done

IMG=docker.io/library/qtfs-test:1
CTD_PID=
# Set by each pass (run_pass): its containerd namespace and socket, its
# export and mount, the export's snapshots and content blobs.
NS=
ADDR=

c() {
	ctr -a "$ADDR" -n "$NS" "$@"
}

ctd_up() {
	c version >/dev/null 2>&1
}

start_containerd() {
	containerd --config "$T/containerd-$MODE.toml" >>"$T/containerd-$MODE.log" 2>&1 &
	CTD_PID=$!
	wait_until 20 ctd_up
}

stop_containerd() {
	kill "$CTD_PID" 2>/dev/null
	wait_gone 200 "$CTD_PID"
}

# What the containers leave if the test stops half-way: their processes,
# the shims, containerd, and the overlay mounts of their root file systems
# on the mount.  Through runc directly (its state is the shims', under
# /run/containerd/runc/NAMESPACE), not containerd: with the mount's server
# gone (a failed step) every call that touches the mount waits for its
# deadline.
containerd_teardown() {
	[ -n "$NS" ] || return 0
	for id in $(runc --root "/run/containerd/runc/$NS" list -q 2>/dev/null); do
		timeout 10 runc --root "/run/containerd/runc/$NS" kill "$id" KILL >/dev/null 2>&1
		timeout 10 runc --root "/run/containerd/runc/$NS" delete -f "$id" >/dev/null 2>&1
	done
	pkill -KILL -f "containerd-shim-runc-v2 -namespace $NS " 2>/dev/null
	[ -z "$CTD_PID" ] || kill -KILL "$CTD_PID" 2>/dev/null
	CTD_PID=
	rm -rf "/run/containerd/runc/$NS"
	awk -v t="$T/" 'index($2, t) == 1 && $3 == "overlay" { print $2 }' /proc/mounts | sort -r |
		while read -r m; do umount -l "$m"; done
}
# Before qtfs-env.sh's cleanup unmounts what they live on (keeping the exit status for it).
on_exit() {
	ctd_rc=$?
	containerd_teardown
	(exit "$ctd_rc")
	qtfs_cleanup
}
trap on_exit EXIT

# Its four blobs (two layers, config, manifest) in the content store on the
# host, each the bytes of its digest.  (containerd keeps the index a moment
# too, until its collector runs.)
blobs_match() {
	for d in $blobs; do
		sum=$(sha256sum <"$BLOBS/${d#sha256:}" | cut -d' ' -f1) || return 1
		if [ "sha256:$sum" != "$d" ]; then
			echo "blob $d holds sha256:$sum" >&2
			return 1
		fi
	done
}
host_count() {
	cat "$SNAPS"/*/fs/data/count 2>/dev/null
}
# exec_count ID: the counter as exec ID into the running container reads
# it.  Where that is not a number, the log gets the exec's status and
# output, the host's counter, and the directory as a second exec lists it.
# The container renames a new file over /data/count every 100 ms, and an
# open racing such a rename through an overlay on the mount can fail with
# ESTALE (docs/fuse-qtfs.md, "Limits"; seen once in a loaded run): the
# exec is tried once more then, as a program reading such a file on NFS
# would.
exec_count() {
	_out=$(c task exec --exec-id "$1" "d1-$$" cat /data/count 2>&1)
	_rc=$?
	case $_out in
	*"Stale file handle"*)
		echo "exec $1: '$_out', once more" >&2
		_out=$(c task exec --exec-id "$1-again" "d1-$$" cat /data/count 2>&1)
		_rc=$?
		;;
	esac
	case $_out in
	'' | *[!0-9]*)
		echo "exec $1: status $_rc, output '$_out'; the host's counter: '$(host_count)';" \
			"the directory: $(c task exec --exec-id "$1-ls" "d1-$$" ls -lin /data 2>&1 | tr '\n' ' ')" >&2
		;;
	esac
	printf '%s\n' "$_out"
}
count_grows() {
	a=$(host_count)
	sleep 0.5
	b=$(host_count)
	[ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt "$a" ]
}
running() {
	c task ls 2>/dev/null | grep -q "^d1-$$ .*RUNNING"
}
stopped() {
	c task ls 2>/dev/null | grep -q "^d1-$$ .*STOPPED"
}
none_left() {
	[ -z "$(ls -A "$SNAPS")" ] && [ -z "$(ls -A "$BLOBS")" ]
}

# run_pass unix|tcp: the whole sequence on a mount over a unix socket, or
# over tcp with 4 connections, with an export, a containerd and a
# namespace of its own.
run_pass() {
	MODE=$1
	NS=qtfs-test-$$-$MODE
	ADDR=$T/containerd-$MODE.sock
	EXP=$T/exp-$MODE
	MNT=$T/mnt-$MODE
	SNAPS=$EXP/lib/io.containerd.snapshotter.v1.overlayfs/snapshots
	BLOBS=$EXP/lib/io.containerd.content.v1.content/blobs/sha256
	mkdir -p "$EXP"
	if [ "$MODE" = unix ]; then
		listen="unix:$T/sock"
		start_server "$T/server-$MODE.log" --listen "$listen" --export "$EXP" || exit 1
		check "$MODE: mount" mount_qtfs "$listen:$EXP" "$MNT"
	else
		listen="tcp://127.0.0.1:$(free_port)"
		start_server "$T/server-$MODE.log" --listen "$listen" --key-file "$KEY" --export "$EXP" || exit 1
		check "$MODE: mount with 4 connections" mount_qtfs "$listen:$EXP" "$MNT" --key-file "$KEY" -o conns=4
	fi
	mkdir -p "$MNT/lib" "$MNT/run"
	cat >"$T/containerd-$MODE.toml" <<-CONF
	version = 2
	root = "$MNT/lib"
	state = "$MNT/run"
	disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.internal.v1.opt"]
	[grpc]
	  address = "$ADDR"
	CONF
	check "$MODE: containerd starts with its root and state on the mount" start_containerd

	check "$MODE: an image is imported" c image import "$T/image.tar"
	check "$MODE: ... and listed" sh -c "ctr -a '$ADDR' -n '$NS' image ls -q | grep -qx '$IMG'"
	check "$MODE: ... its four blobs are on the host, each the bytes of its digest" blobs_match

	out=$(c run --rm "$IMG" "r1-$$" /bin/sh -c 'echo hello; cat /etc/passwd; ls /data | wc -l' 2>&1)
	check "$MODE: a container runs: $(echo "$out" | tr '\n' ' ')" \
		[ "$out" = "$(printf 'hello\nroot:x:0:0:root:/:/bin/sh\n0')" ]
	# The second layer as unpacked on the mount: a whiteout (a 0:0 device
	# node), an opaque directory (trusted.overlay.opaque) and a hard link.
	out=$(c run --rm "$IMG" "r3-$$" /bin/sh -c \
		'ls /bin/wc 2>&1; ls /data0; cat /opt/b; stat -c %h /opt/a' 2>&1)
	check "$MODE: ... with its second layer's whiteout, opaque directory and hard link: $(echo "$out" | tr '\n' ' ')" \
		[ "$out" = "$(printf 'ls: /bin/wc: No such file or directory\nnew\nlinked\n2')" ]
	c run --rm "$IMG" "r2-$$" /bin/sh -c 'exit 3' >/dev/null 2>&1
	rc=$?
	check "$MODE: ... its exit status comes back ($rc)" [ "$rc" -eq 3 ]

	# One that keeps running, writing a counter into its upper layer.
	check "$MODE: a container runs detached" c run -d "$IMG" "d1-$$" /bin/sh -c \
		'i=0; while :; do i=$((i + 1)); echo $i >/data/n; mv /data/n /data/count; sleep 0.1; done'
	check "$MODE: ... its writes reach its upper layer on the host" wait_until 10 count_grows
	out=$(exec_count e1)
	check "$MODE: ... exec into it reads what it wrote ($out)" [ "$out" -gt 0 ]
	out=$(c task exec --exec-id e2 "d1-$$" /bin/sh -c \
		'dd if=/dev/urandom of=/data/big bs=64k count=256 2>/dev/null; sync; sha256sum /data/big' 2>&1)
	check "$MODE: ... a 16 MiB file written in it is the host's byte for byte" \
		[ "${out%% *}" = "$(sha256sum "$SNAPS"/*/fs/data/big | cut -d' ' -f1)" ]

	kill -9 "$SERVER_PID"
	if [ "$MODE" = unix ]; then
		start_server "$T/server2-$MODE.log" --listen "$listen" --export "$EXP"
	else
		start_server "$T/server2-$MODE.log" --listen "$listen" --key-file "$KEY" --export "$EXP"
	fi
	check "$MODE: after kill -9 of qtfs-server and a restart: the container runs on" running
	check "$MODE: ... still writing to the host" wait_until 10 count_grows
	out=$(exec_count e3)
	check "$MODE: ... exec works ($out)" [ "$out" -gt 0 ]

	stop_containerd
	check "$MODE: containerd restarts and reads its database through the mount" start_containerd
	check "$MODE: ... finds the running container's shim again" running
	out=$(exec_count e4)
	check "$MODE: ... and execs into it ($out)" [ "$out" -gt 0 ]

	check "$MODE: the container stops" c task kill -s KILL "d1-$$"
	check "$MODE: ... is stopped" wait_until 10 stopped
	check "$MODE: ... and is removed" sh -c "ctr -a '$ADDR' -n '$NS' task delete 'd1-$$' >/dev/null &&
		ctr -a '$ADDR' -n '$NS' containers rm 'd1-$$'"
	# --sync: the collection runs before the removal returns.  Left to
	# itself, containerd's scheduler makes the next collection 49 times
	# the collections' average length after the last (pause_threshold
	# 0.02), and a deletion does not bring it forward; with the database on
	# the mount, in a loaded sanitized run, that was once past the wait.
	check "$MODE: the image is removed" c image rm --sync "$IMG"
	check "$MODE: ... and containerd's collector leaves no snapshot or blob on the host" wait_until 10 none_left
	if ! none_left; then
		echo "---- left on the host, and containerd's last words about it"
		find "$SNAPS" "$BLOBS" -maxdepth 2 | head -20
		grep -i -E 'gc|garbage|remov|snapshot|error' "$T/containerd-$MODE.log" | tail -20
	fi
	stop_containerd
	check "$MODE: no overlay mount left on the mount" sh -c "! grep -q ' $MNT/.* overlay ' /proc/mounts"
	check "$MODE: unmount" umount_qtfs "$MNT"
	containerd_teardown
}

blobs=$(python3 "$top_srcdir/tests/fs/oci-image.py" "$T/image.tar" "$IMG")
run_pass unix
run_pass tcp
finish
