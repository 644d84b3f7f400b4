#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# The host and the DPU change one tree at once (tests/fs/churn.py): on the
# host, creates, rewrites, renames of files and directories (a directory
# moved under what was its own child), rmdir of subtrees, hard links and
# symlinks, on an ext4, a tmpfs and an overlayfs; through two mounts (a unix socket; TCP
# with two connections and a key), walks, listings, reads and the same
# kind of changes.  Nothing may fail with an errno the changes do not
# explain, and files that never change must always read as the host's.
# Once the changes stop and the barrier is taken, each mount must show the
# host's names at once, and the host's attributes and bytes after
# attr_timeout: the client's node tree, name cache, kept listings and kept
# pages follow whatever the host did.

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"

mkdir -p "$T/exp/disk" "$T/exp/mem" "$T/exp/ovl" "$T/layers"
mount -t tmpfs tmpfs "$T/exp/mem" || exit 1
QTFS_MOUNTS="$T/exp/mem"
# And an overlayfs, as a container's root file system is on the host: its
# lower layer's files are copied up when changed, its directories are
# renamed only where the kernel allows (EXDEV otherwise).
CHURN_ROOTS="disk mem"
mount -t tmpfs tmpfs "$T/layers" || exit 1
QTFS_MOUNTS="$QTFS_MOUNTS $T/layers"
mkdir -p "$T/layers/lower/d0" "$T/layers/lower/d1/d2" "$T/layers/upper" "$T/layers/work"
for i in 1 2 3 4 5 6; do
	echo "lower $i" >"$T/layers/lower/d0/flower$i"
	head -c $((i * 3000)) /dev/urandom >"$T/layers/lower/d1/d2/flower$i"
done
if mount -t overlay overlay -o "lowerdir=$T/layers/lower,upperdir=$T/layers/upper,workdir=$T/layers/work" \
	"$T/exp/ovl"; then
	QTFS_MOUNTS="$QTFS_MOUNTS $T/exp/ovl"
	CHURN_ROOTS="$CHURN_ROOTS ovl"
else
	echo "no overlayfs here: the churn leaves it out"
fi
export CHURN_ROOTS
port=$(free_port)
start_server "$T/server.log" --listen "unix:$T/sock" --listen "tcp://127.0.0.1:$port" --key-file "$KEY" \
	--export "$T/exp" || exit 1
check "mount over unix" mount_qtfs "unix:$T/sock:$T/exp" "$T/m1" --key-file "$KEY" 2>"$T/c1.log"
check "mount over tcp, 2 connections" mount_qtfs "tcp://127.0.0.1:$port:$T/exp" "$T/m2" --key-file "$KEY" \
	-o conns=2 2>"$T/c2.log"
c1=$(pgrep -f -- "$FUSE_QTFS .*$T/m1\$")
c2=$(pgrep -f -- "$FUSE_QTFS .*$T/m2\$")

# First, one race on purpose: a directory removed on the host while the
# DPU lists it.  The host's own getdents then says ENOENT; through the
# mount too (qtfs-server's seek to where the listing went on had failed
# with EINVAL on ext4, which seeks in a removed directory as in a file).
# like_host DESC FUNC NAME [MOUNT]: FUNC BASE HOST-PATH runs once in the
# host's own directory (BASE is HOST-PATH, $T/exp/disk/NAME) and once
# through the mount MOUNT, m1 by default (BASE is $T/MOUNT/disk/NAME); the
# last lines they print must match.
like_host() {
	_m=${4:-m1}
	"$2" "$T/exp/disk/$3" "$T/exp/disk/$3" >"$T/$3.exp" 2>&1
	"$2" "$T/$_m/disk/$3" "$T/exp/disk/$3" >"$T/$3.$_m" 2>&1
	check "$1: $(tail -n 1 "$T/$3.$_m") (host: $(tail -n 1 "$T/$3.exp"))" \
		sh -c '[ "$(tail -n 1 "$1")" = "$(tail -n 1 "$2")" ]' sh "$T/$3.exp" "$T/$3.$_m"
}

gone_listing() {
	python3 -c '
import os, shutil, sys
d, h = sys.argv[1], sys.argv[2]
os.mkdir(h)
for n in "ab":
    open(os.path.join(h, n), "w").close()
it = os.scandir(d)
next(it)
shutil.rmtree(h)
try:
    list(it)
    print("no error")
except OSError as e:
    print(os.strerror(e.errno))' "$1" "$2"
}
like_host "a listing of a directory removed meanwhile" gone_listing gone

# And an open file that the host renames away, replaces by another and
# then unlinks: fstat(), fchmod() and the f*xattr() calls on it go to the
# open file, as on the host (by path they had reached the other file, or
# failed with ENOENT).
open_moved() {
	python3 -c '
import os, sys, time
p, h = sys.argv[1], sys.argv[2]
fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"open!")
os.rename(h, h + ".moved")
with open(h, "wb") as f:
    f.write(b"the other")
time.sleep(1.2)  # past attr_timeout
st = os.fstat(fd)
os.fchmod(fd, 0o600)
print("fstat size %d, fchmod: open file %o, other %o" % (st.st_size, os.stat(h + ".moved").st_mode & 0o777,
                                                         os.stat(h).st_mode & 0o777), end="")
os.setxattr(fd, "user.k", b"v")
os.setxattr(fd, "user.gone", b"x")
os.removexattr(fd, "user.gone")
print("; fsetxattr: open file %s, other %s; fgetxattr %s, flistxattr %s" % (
    os.listxattr(h + ".moved"), os.listxattr(h), os.getxattr(fd, "user.k"), os.listxattr(fd)), end="")
os.unlink(h + ".moved")
time.sleep(1.2)
st = os.fstat(fd)
print("; unlinked: size %d, nlink %d" % (st.st_size, st.st_nlink))
os.unlink(h)' "$1" "$2"
}
like_host "an open file renamed, replaced, unlinked on the host" open_moved held

# The same of an open directory that the host renames: fstat() (which
# fdopendir() makes), a listing, fchmod() and fsetxattr() through it.
open_dir_moved() {
	python3 -c '
import os, sys, time
p, h = sys.argv[1], sys.argv[2]
os.makedirs(h + "/sub")
fd = os.open(p, os.O_RDONLY | os.O_DIRECTORY)
os.rename(h, h + ".moved")
time.sleep(1.2)  # past attr_timeout
os.fstat(fd)
names = os.listdir(fd)
os.chmod(fd, 0o700)
os.setxattr(fd, "user.d", b"1")
print("names %s, mode %o, xattrs %s" % (names, os.stat(h + ".moved").st_mode & 0o777,
                                        os.listxattr(h + ".moved")))
os.close(fd)
os.rmdir(h + ".moved/sub")
os.rmdir(h + ".moved")' "$1" "$2"
}
like_host "an open directory renamed on the host" open_dir_moved dheld

# A DPU process whose working directory is in a directory the host moves
# into one the DPU has looked in: names relative to it follow the move,
# as on the host (the server reports the move, the client moves its node;
# before, they went by the old path and were ENOENT).
cwd_moved() {
	python3 -c '
import os, shutil, sys
base, h = sys.argv[1], sys.argv[2]
os.makedirs(h + "/a/b")
os.makedirs(h + "/z")
with open(h + "/a/b/f", "w") as f:
    f.write("here")
os.listdir(base + "/z")
os.chdir(base + "/a/b")
os.stat("f")
os.rename(h + "/a", h + "/z/a2")
if base != h:
    os.getxattr(base, "user.qtfs.sync")
with open("f") as f:
    out = [f.read()]
with open("g", "w") as f:
    f.write("new")
out += [str(os.path.exists(h + "/z/a2/b/g")), str(sorted(os.listdir(".")))]
os.chdir("/")
shutil.rmtree(h)
print(" ".join(out))' "$1" "$2"
}
like_host "a working directory the host moves" cwd_moved cwdt
# The same where the kernel cannot expire names (before Linux 6.2, forced
# here): the client still subscribes to the host's reports for the moves.
export FUSE_QTFS_NO_EXPIRE_ONLY=1
check "mount over unix as on a kernel without expire-only" \
	mount_qtfs "unix:$T/sock:$T/exp" "$T/m3" --key-file "$KEY" 2>"$T/c3.log"
unset FUSE_QTFS_NO_EXPIRE_ONLY
# (Said when the kernel's INIT comes, which may be just after the mount returned.)
check "its notice says names are cached for entry_timeout" \
	wait_until 5 grep -q "cannot expire cached names" "$T/c3.log"
like_host "a working directory the host moves, without expire-only" cwd_moved cwdt3 m3
check "unmount" umount_qtfs "$T/m3"

# A SETATTR goes through a handle the file is open by, even one open
# for reading only: a truncate by path then still works.
check "truncate(2) of a file open for reading only" python3 -c '
import os, sys
p = sys.argv[1]
with open(p, "wb") as f:
    f.write(b"12345")
fd = os.open(p, os.O_RDONLY)
os.truncate(p, 2)
sys.exit(os.stat(p).st_size != 2 or os.fstat(fd).st_size != 2)' "$T/m1/disk/ro"

seed=${QTFS_CHURN_SEED:-$$}
echo "seed $seed (QTFS_CHURN_SEED)"
timeout -s KILL 240 python3 "${top_srcdir:-.}/tests/fs/churn.py" "$T/exp" "${QTFS_CHURN_SECONDS:-20}" "$seed" \
	"$T/m1" "$T/m2" >"$T/churn.out" 2>&1
echo "churn.py: rc $?"
cat "$T/churn.out"
check "the churn ran to its end" grep -q "^after attr_timeout:" "$T/churn.out"
check "... changes on both sides went through" \
	sh -c "grep -q '^host ok: [1-9]' '$T/churn.out' && grep -q '^dpu-change ok: [1-9]' '$T/churn.out'"
check "no call failed with an errno the changes do not explain" grep -q "^bad errnos: 0\$" "$T/churn.out"
check "files that never changed always read as the host's" grep -q "^still mismatches: 0\$" "$T/churn.out"
check "after the barrier, every mount has the host's names" \
	grep -q "^names after the barrier: 0 differences\$" "$T/churn.out"
check "after attr_timeout, the host's attributes and bytes" grep -q "^after attr_timeout: 0 differences\$" "$T/churn.out"
check "both clients are still up" kill -0 "$c1" "$c2"

# Lookup counts kept exactly through all of it: once the DPU's kernel
# drops its unused names and inodes, each forgotten node goes, and the
# client holds the root alone (SIGUSR1 logs what it holds).
sync
echo 2 >/proc/sys/vm/drop_caches
only_root() {
	: >"$T/state.step"
	for c in "1 $c1" "2 $c2"; do
		# shellcheck disable=SC2086 # split on purpose: the log's number, the pid
		set -- $c
		kill -USR1 "$2"
		sleep 0.2
		tail -n 1 "$T/c$1.log" >>"$T/state.step"
		tail -n 1 "$T/c$1.log" | grep -q "state: 1 nodes (0 named, 0 other names, 1 lookups" || return 1
	done
}
wait_until 2 only_root
check "after the kernel forgot them, no node left but the root: $(tr '\n' ' ' <"$T/state.step")" only_root
check "unmount" umount_qtfs "$T/m1"
check "unmount" umount_qtfs "$T/m2"
finish
