# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=sh
#
# Sourced by the fuse-qtfs integration tests: a private temp dir, a key,
# helpers to start qtfs-server and mount fuse-qtfs, and a cleanup trap that
# unmounts and stops everything the test started, even after a failure, and
# fails the test if any of it left a sanitizer report.
# Tests exit 77 (skip) only where the machine cannot run them at all: not
# root, or no /dev/fuse.
#
# After sourcing:  $T (temp dir, mode 755), $QTFS_SERVER, $FUSE_QTFS,
# $FSDIFF, $FSX, $KEY (a valid key file), and the functions below.
# SERVER_WRAP / CLIENT_WRAP, when set, prefix the server and client
# commands (e.g. "nsenter --net=/run/netns/X" to put them on two "hosts").

top_builddir=$(cd "${top_builddir:-.}" && pwd)
top_srcdir=${top_srcdir:-.}
QTFS_SERVER=$top_builddir/fuse-qtfs/qtfs-server
FUSE_QTFS=$top_builddir/fuse-qtfs/fuse-qtfs
# shellcheck disable=SC2034 # for the tests that source this
FSDIFF=$top_builddir/tests/fs/fsdiff
# shellcheck disable=SC2034
FSX=$top_builddir/tests/fs/fsx

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: needs root (FUSE mounts, other users)"
	exit 77
fi
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "SKIP: no /dev/fuse or fusermount3"
	exit 77
fi

T=$(mktemp -d /tmp/qtfs-test.XXXXXX) || exit 1
chmod 755 "$T"
QTFS_MOUNTS=""
QTFS_PIDS=""
failures=0

qtfs_cleanup() {
	rc=$?
	for m in $QTFS_MOUNTS; do
		if is_mounted "$m"; then
			fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
		fi
	done
	# A sanitizer build checks for leaks as it exits, which takes a while:
	# every daemon of the test (the unmounted ones exit on their own) must
	# be gone before the reports are read.
	stop_daemons "fuse-qtfs.* $T/" $QTFS_PIDS
	cleanup_more
	sanitizer_found "$T/sanitizer" && rc=1
	rm -rf "$T"
	exit $rc
}
trap qtfs_cleanup EXIT
trap 'exit 1' HUP INT TERM

KEY=$T/psk
head -c 48 /dev/urandom | base64 >"$KEY"
chmod 600 "$KEY"

# ok, fail, check (and netns_pair); sanitizer reports go to $T/sanitizer.
. "$(dirname "$0")/../check-env.sh"
# shellcheck disable=SC2034 # wait_gone's, for the checks' messages
gone_state=
sanitizer_to "$T/sanitizer"

# A free TCP port on loopback.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
		echo $((20000 + $$ % 20000))
}

# start_server LOG ARGS...: start qtfs-server in the background with ARGS
# (its config file pointed at an empty one), wait until it listens; sets
# SERVER_PID.
start_server() {
	log=$1
	shift
	: >"$T/empty.conf"
	# shellcheck disable=SC2086 # SERVER_WRAP is a command prefix, split on purpose
	$SERVER_WRAP "$QTFS_SERVER" --config "$T/empty.conf" -v "$@" >>"$log" 2>&1 &
	SERVER_PID=$!
	QTFS_PIDS="$QTFS_PIDS $SERVER_PID"
	i=0
	while [ $i -lt 100 ]; do
		if grep -q "listening on" "$log" 2>/dev/null; then
			return 0
		fi
		if ! kill -0 "$SERVER_PID" 2>/dev/null; then
			echo "qtfs-server exited:" >&2
			cat "$log" >&2
			return 1
		fi
		sleep 0.05
		i=$((i + 1))
	done
	echo "qtfs-server did not start listening" >&2
	return 1
}

# mount_qtfs SOURCE MOUNTPOINT [ARGS...]: mount (fuse-qtfs daemonizes once
# mounted; its exit status is the mount's).
mount_qtfs() {
	src=$1
	mnt=$2
	shift 2
	mkdir -p "$mnt"
	QTFS_MOUNTS="$mnt $QTFS_MOUNTS"
	# shellcheck disable=SC2086 # CLIENT_WRAP is a command prefix, split on purpose
	$CLIENT_WRAP "$FUSE_QTFS" "$@" "$src" "$mnt"
}

# umount_qtfs MOUNTPOINT: unmount; another test running beside this one
# may hold the mount for a moment (a rexec taking its barrier on every
# fuse-qtfs mount it sees, where REXEC_NO_SYNC is not set; a namespace
# holding a copy of it): try again for 10 s, then say which processes
# hold it.  Once seen: test-qtfs-ssh's mount busy for over a second in a
# distcheck run, beside test-rexec-netns and test-rexec-ssh, cause not
# found (those run rexec with REXEC_NO_SYNC=1).
umount_qtfs() {
	_i=0
	while ! fusermount3 -u "$1" 2>"$T/umount.err"; do
		_i=$((_i + 1))
		if [ $_i -ge 200 ] || ! grep -q busy "$T/umount.err"; then
			cat "$T/umount.err" >&2
			grep -q busy "$T/umount.err" && mount_holders "$1" >&2
			return 1
		fi
		sleep 0.05
	done
}

# skip_without_expire_only SOURCE [ARGS...]: exit 77 (skip) where this kernel has
# no FUSE expire-only notification (Linux 6.2, and some stable kernels
# before it, Debian 12's 6.1 among them): fuse-qtfs then caches names for
# entry_timeout only, and neither a report nor the barrier drops a name
# the kernel holds (docs/fuse-qtfs.md, "Name caching"), which is what a
# name-caching test checks.  A mount of
# SOURCE (with ARGS) asks the kernel, and says so at once when it cannot.
skip_without_expire_only() {
	_src=$1
	shift
	mount_qtfs "$_src" "$T/probe-expire" "$@" 2>"$T/probe-expire.log" || return 0
	stat "$T/probe-expire" >/dev/null 2>&1
	umount_qtfs "$T/probe-expire"
	if grep -q "cannot expire cached names" "$T/probe-expire.log"; then
		echo "SKIP: this kernel cannot expire cached names (no FUSE expire-only notification)"
		exit 77
	fi
}

# mount_holders MOUNTPOINT: the processes whose working directory, root or
# open files lie beneath MOUNTPOINT, one line each.
mount_holders() {
	_held=
	for _p in /proc/[0-9]*; do
		for _l in "$_p/cwd" "$_p/root" "$_p"/fd/*; do
			case $(readlink "$_l" 2>/dev/null) in
			"$1" | "$1"/*)
				echo "held by pid ${_p#/proc/} ($(cat "$_p/comm" 2>/dev/null)): $_l"
				_held=yes
				break
				;;
			esac
		done
	done
	[ -n "$_held" ] || echo "no process has a directory or file open there (a system call in the mount, such as a barrier, holds it)"
}

# big_reads HOST-DIR MOUNT-DIR: large reads (the server splices such reads
# of the file's pages straight into the socket, or copies them for a TCP
# client on its own host): files of several sizes
# read through the mount at once must equal the host's, and so must a read
# from an offset inside a page.  The largest spans several readahead
# windows, so many READs are in flight at once, on every connection.
big_reads() {
	sizes="40000000 3000000 2097153 196608 100000"
	for s in $sizes; do
		head -c "$s" /dev/urandom >"$1/big$s" || return 1
	done
	pids=
	for s in $sizes; do
		cat "$2/big$s" >"$T/got$s" &
		pids="$pids $!"
	done
	for p in $pids; do
		wait "$p"
	done
	for s in $sizes; do
		cmp -s "$1/big$s" "$T/got$s" || { echo "big$s differs" >&2; return 1; }
	done
	dd if="$2/big3000000" of="$T/got-off" bs=1M skip=4097 iflag=skip_bytes 2>/dev/null &&
		tail -c +4098 "$1/big3000000" >"$T/want-off" && cmp -s "$T/want-off" "$T/got-off" ||
		{ echo "read from offset 4097 differs" >&2; return 1; }
	rm -f "$1"/big* "$T"/got* "$T/want-off"
}

# direct_io HOSTDIR MOUNTDIR: O_DIRECT reads and writes on the mount, with
# buffers, offsets and sizes aligned as the host's O_DIRECT wants them
# and not, against the host's copy; a buffered descriptor open beside
# them sees what they wrote.
direct_io() {
	python3 - "$1" "$2" <<'PY'
import mmap, os, sys
host, mnt = sys.argv[1] + "/direct", sys.argv[2] + "/direct"
data = os.urandom(1 << 20)
open(host, "wb").write(data)
buf = mmap.mmap(-1, 1 << 20)        # page-aligned
fd = os.open(mnt, os.O_RDWR | os.O_DIRECT)
cached = os.open(mnt, os.O_RDONLY)
os.pread(cached, 1 << 20, 0)        # its pages are in the DPU's cache
n = os.preadv(fd, [buf], 0)
assert n == len(data) and buf[:n] == data, "aligned O_DIRECT read differs"
assert os.pread(fd, 1000, 4097) == data[4097:5097], "unaligned O_DIRECT read differs"
new = os.urandom(8192)
buf[:8192] = new
assert os.pwritev(fd, [memoryview(buf)[:8192]], 4096) == 8192
data = data[:4096] + new + data[4096 + 8192:]
assert os.pwrite(fd, b"xyz", 70001) == 3, "unaligned O_DIRECT write"
data = data[:70001] + b"xyz" + data[70004:]
assert open(host, "rb").read() == data, "the host's copy differs after the O_DIRECT writes"
assert os.pread(cached, 1 << 20, 0) == data, "a buffered read on the DPU missed the O_DIRECT writes"
os.close(fd); os.close(cached); os.unlink(host)
PY
}

# holds_open PID PATH: whether process PID has PATH open.
holds_open() {
	for _fd in "/proc/$1/fd"/*; do
		[ "$(readlink "$_fd" 2>/dev/null)" = "$2" ] && return 0
	done
	return 1
}

# usr1_line PID LOG PATTERN: have PID (qtfs-server, fuse-qtfs) log what it
# holds (SIGUSR1) into LOG, and print the line matching PATTERN that it
# adds after those already there; non-zero if none comes within 5 s.
# PATTERN is grep's and has no single quote.
usr1_line() {
	_ul_n=$(grep -c "$3" "$2")
	kill -USR1 "$1"
	wait_until 5 sh -c "[ \$(grep -c '$3' '$2') -gt $_ul_n ]" || return 1
	grep "$3" "$2" | tail -n 1
}

# server_count OP [LOG]: the count of requests OP (LOOKUP, GETXATTR...)
# the server $SERVER_PID has taken in so far, 0 for none: it logs its
# counts into LOG (default $T/server.log) on SIGUSR1.
server_count() {
	_sc_line=$(usr1_line "$SERVER_PID" "${2:-$T/server.log}" 'requests since the start:') ||
		return 1
	printf '%s\n' "$_sc_line" |
		awk -v op="$1" '{ for (i = 1; i < NF; i++) if ($i == op) { print $(i + 1); exit } print 0 }'
}

# within TRIES CMD...: CMD succeeds within TRIES x 20 ms (what the host
# reports reaches the DPU some milliseconds later).
within() {
	n=$1
	shift
	i=0
	while [ $i -lt "$n" ]; do
		"$@" && return 0
		sleep 0.02
		i=$((i + 1))
	done
	return 1
}

# readahead_kb MOUNTPOINT: the kernel's readahead for the mount, in KiB
# (what its backing device info says once INIT is answered).  mountinfo
# writes a backslash, space, tab or newline in a name as \ooo; awk gets the
# name through the environment (-v would take its backslashes as escapes).
readahead_kb() {
	_esc=$(printf '%s' "$1" | sed -e 's/\\/\\134/g' -e 's/ /\\040/g' -e 's/	/\\011/g')
	_dev=$(MNT="$_esc" awk '$5 == ENVIRON["MNT"] { print $3 }' /proc/self/mountinfo | tail -n 1)
	cat "/sys/class/bdi/$_dev/read_ahead_kb"
}

# fails_with ERRNO CALL PATH: Python's os.CALL(PATH) fails with ERRNO (a
# name: ELOOP, EIO...); prints the errno it got, or "no error".
fails_with() {
	python3 -c '
import errno, os, sys
try:
    getattr(os, sys.argv[2])(sys.argv[3])
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))
    sys.exit(errno.errorcode.get(e.errno) != sys.argv[1])
print("no error")
sys.exit(1)' "$@"
}

finish() {
	if [ "$failures" -ne 0 ]; then
		echo "$failures check(s) failed"
		for f in "$T"/*.log; do
			[ -f "$f" ] || continue
			echo "---- $f (last 30 lines)"
			tail -n 30 "$f"
		done
		exit 1
	fi
	echo "all checks passed"
	exit 0
}
