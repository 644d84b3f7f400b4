#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Real-world tools on a fuse-qtfs mount and on the native file system side
# by side: each scenario runs in a fresh directory of each, and what it
# prints (results, exit codes, error messages, stat fields, extended
# attributes, checksums) must be the same.  tar with hard links, symlinks,
# sparse files, long names and xattrs; cp -a and rsync -aHAX into and out
# of the tree; git (rename, link, fsync, mmap, lock files); sqlite3 with a
# rollback journal and with WAL, three writers at once; make's timestamps;
# flock(1) counters; parallel O_APPEND writers; files used after unlink;
# set-id bits dropped by a write.
# Then what only two hosts can show: a file the host rewrites while the
# DPU holds its attributes, read through the mount (close-to-open).

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"

# scripts/setup-debian.sh installs them.
for tool in git sqlite3 rsync tar getfattr setfattr flock make cc; do
	command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/setup-debian.sh)"
done
[ "$failures" -eq 0 ] || finish

mkdir -p "$T/exp" "$T/native"
start_server "$T/server.log" --listen "unix:$T/sock" --export "$T/exp" || exit 1
check "mount" mount_qtfs "unix:$T/sock:$T/exp" "$T/mnt" -o allow_other 2>"$T/client.log" ||
	finish

# both DESC SCRIPT: run SCRIPT with sh in a fresh directory x of the native
# file system and of the mount; what it prints, with either directory's
# path written DIR, must be the same.
both() {
	for _side in native mnt; do
		rm -rf "${T:?}/$_side/x"
		mkdir -p "$T/$_side/x"
		(cd "$T/$_side/x" && T="$T" sh -c "$2" 2>&1) |
			sed "s#$T/$_side/x#DIR#g" >"$T/out.$_side"
	done
	if cmp -s "$T/out.native" "$T/out.mnt"; then
		ok "$1"
	else
		fail "$1 (native < > mount):"
		diff "$T/out.native" "$T/out.mnt" | head -n 40 >&2
	fi
}

# A tree of what tar and cp must carry, packed once.
mkdir -p "$T/src/d/sub"
head -c 100000 /dev/urandom >"$T/src/d/f"
ln "$T/src/d/f" "$T/src/d/hard"
ln -s f "$T/src/d/sym"
ln -s /nonexistent "$T/src/d/dangling"
truncate -s 10M "$T/src/d/sparse"
printf x | dd of="$T/src/d/sparse" bs=1 seek=5000000 conv=notrunc 2>/dev/null
long=$(printf '%0250d' 0)
echo long >"$T/src/d/$long"
mkdir -p "$T/src/d/$(printf 'a%.0s' $(seq 200))/$(printf 'b%.0s' $(seq 200))"
setfattr -n user.foo -v bar "$T/src/d/f"
setfattr -n user.dir -v 1 "$T/src/d/sub"
mkfifo "$T/src/d/fifo"
chmod 2755 "$T/src/d/sub"
# Times of the past: rsync leaves alone a copy's mtime that is in the same
# second as its original's, which made the copies' mtimes differ by chance.
find "$T/src/d" -exec touch -h -d '2010-01-01 00:00:00.5' {} +
touch -d '2001-02-03 04:05:06.123456789' "$T/src/d/f"
(cd "$T/src" && tar --xattrs --sparse -cf "$T/t.tar" d)

# The tree's names, types, modes, links, owners, sizes, mtimes, targets.
cat >"$T/lstree" <<'EOF'
find "${1:-.}" -printf '%p %M %n %U %G %s %T@ %l\n' | LC_ALL=C sort
EOF

both "tar -x of hard links, symlinks, a sparse file, long names, xattrs; tar -c back" '
	tar --xattrs --sparse -xpf "$T/t.tar" && sh "$T/lstree" d
	getfattr -R -d -m - d 2>&1 | sort
	du -s d; du -s --apparent-size d; md5sum d/f d/sparse
	tar --xattrs --sparse -cf - d | tar --xattrs --full-time -tvf - | sort'
both "cp -a and rsync -aHAX in and out" '
	tar --xattrs --sparse -xpf "$T/t.tar"
	cp -a d cp && sh "$T/lstree" cp | cut -d" " -f1-6,8
	getfattr -R -d -m - cp 2>&1 | sort
	rsync -aHAX d/ rs/ && sh "$T/lstree" rs && getfattr -R -d -m - rs 2>&1 | sort
	rm -rf ../out && rsync -aHAX rs/ ../out/ && sh "$T/lstree" ../out; du -s rs cp'
both "git init, commit, branch, merge, stash, gc, repack, fsck, clone" '
	export GIT_AUTHOR_DATE=2020-01-01T00:00:00Z GIT_COMMITTER_DATE=2020-01-01T00:00:00Z
	g="git -c user.name=a -c user.email=a@b -c init.defaultBranch=main"
	$g init -q r && cd r && for i in $(seq 50); do echo $i >f$i; done
	mkdir sub && ln -s f1 sub/l && $g add . && $g commit -qm one
	$g checkout -qb b2 && for i in $(seq 25); do echo x$i >>f$i; done
	$g rm -q f30 && $g commit -qam two && $g checkout -q main && ls | wc -l
	$g gc -q --aggressive && $g repack -adq && $g fsck --full 2>&1
	$g checkout -q b2 && $g merge -q main && $g log --oneline && cat f1
	echo mod >>f2 && $g stash -q && $g stash pop -q && $g diff --stat
	$g clone -q . ../clone && cd ../clone && git fsck 2>&1 && ls | wc -l'
both "sqlite3, rollback journal and WAL, three writers at once" '
	for m in delete wal; do
		sqlite3 db-$m "pragma journal_mode=$m; create table t(a integer primary key, b);"
		pids=
		for p in 1 2 3; do
			(for i in $(seq 100); do
				sqlite3 -cmd ".timeout 20000" db-$m "insert into t(b) values($p)" ||
					echo insert failed
			done) &
			pids="$pids $!"
		done
		for p in $pids; do wait $p; done
		sqlite3 db-$m "pragma integrity_check; select count(*), sum(b) from t"
	done'
both "make: rebuilds by mtime, touch -r, find -newer, install, sort -o, mv -T, ln" '
	printf "int main(void) { return 3; }\n" >m.c
	printf "m: m.c\n\tcc -o m m.c\n" >Makefile
	make -s; ./m; echo rc=$?; make -q; echo q=$?
	touch -d "2000-01-01 00:00:00.123456789" a; touch -r a b; stat -c "%n %y" a b
	touch -d @1 m; make -q; echo q=$?; make -s; make -q; echo q=$?; find . -newer a | sort
	install -m 0640 -D a dir/x/y && stat -c "%A %s" dir/x/y
	printf "3\n1\n2\n" >s; sort -o s s; cat s
	mkdir m1 m2 && touch m2/z; mv -T m1 m2; mv -T m2 m3; ls m3
	ln a la; ln a la; ln -s a sa; ln -sf b sa; readlink sa; mv -T a m3; mv la b
	stat -c "%n %h" a b; mv b ./b; ln -f b b'
both "flock(1) counters, parallel O_APPEND writers" '
	pids=
	for p in 1 2 3 4; do
		(for i in $(seq 40); do
			flock lk sh -c "n=\$(cat cnt 2>/dev/null || echo 0); echo \$((n + 1)) >cnt"
		done) &
		pids="$pids $!"
	done
	for p in $pids; do wait $p; done
	cat cnt; flock -n lk -c "flock -n lk true; echo inner \$?"
	pids=
	for p in 1 2 3 4 5 6; do
		(for i in $(seq 200); do echo "writer $p line $i" >>app; done) &
		pids="$pids $!"
	done
	for p in $pids; do wait $p; done
	wc -l <app; sort app | uniq -d'
both "a file used after its unlink, renames over open files" '
	python3 - <<EOF
import mmap, os
fd = os.open("u", os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b"hello world\n" * 1000)
os.unlink("u")
s = os.fstat(fd)
print(s.st_nlink, s.st_size, os.pread(fd, 12, 0))
os.pwrite(fd, b"XYZ", 5)
os.ftruncate(fd, 100)
os.fchmod(fd, 0o600)
os.setxattr(fd, "user.a", b"1")
m = mmap.mmap(fd, 100)
m[0:2] = b"MM"
m.flush()
m.close()
os.utime(fd, ns=(10**9, 2 * 10**9))
s = os.fstat(fd)
print(os.pread(fd, 12, 0), oct(s.st_mode), s.st_size, s.st_mtime_ns, os.getxattr(fd, "user.a"))
os.fsync(fd)
os.close(fd)
fd = os.open("v", os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b"old")
open("w", "w").write("new")
os.rename("w", "v")
os.write(fd, b"more")
print(os.pread(fd, 10, 0), open("v").read(), os.fstat(fd).st_nlink)
EOF'
# A write by a caller other than root drops the set-id bits at once; the
# DPU's kernel kept the mode it held, so that a stat of the mode alone
# (statx for STATX_MODE, as stat -c %A asks) showed them until
# attr_timeout passed.
both "a write by an unprivileged caller drops set-id bits, as stat -c %A sees at once" '
	as_nobody="setpriv --reuid=65534 --regid=65534 --clear-groups"
	for how in append write; do
		cp /bin/true x && chown 65534:65534 x && chmod 6755 x && stat -c %A x
		case $how in
		append) $as_nobody sh -c "echo >>x" ;;
		write) printf a | $as_nobody dd of=x bs=1 seek=5 conv=notrunc status=none ;;
		esac
		echo "$how: $(stat -c %A x)"
		rm x
	done'

# The host rewrites a file after the DPU's kernel took its attributes
# (a stat, a listing) and before a program there opens and reads it: the
# open must show the new bytes, all of them (close-to-open).  The kernel
# reads its page cache only up to the size it holds, and an open did not
# refresh it: the DPU read the new file cut to the old size.
host_rewrite() {
	python3 - "$T/exp" "$T/mnt" <<'EOF'
import os, sys
host, mnt = sys.argv[1] + "/rewritten", sys.argv[2] + "/rewritten"
bad = []
for i in range(20):
    with open(host, "wb") as f:
        f.write(b"old %d\n" % i)
    os.stat(mnt)
    new = b"new %d\n" % i * (i + 2)
    with open(host, "wb") as f:
        f.write(new)
    with open(mnt, "rb") as f:
        got = f.read()
    if got != new:
        bad.append((i, got[-10:], len(got), len(new)))
os.unlink(host)
if bad:
    print("read after the host's rewrite (round, tail, length, wanted):", bad[:3])
    sys.exit(1)
EOF
}
check "a file the host rewrote after a stat on the DPU reads whole at its next open" host_rewrite

check "unmount" umount_qtfs "$T/mnt"
finish
