#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# A change whose connection breaks before its answer comes: made on the
# host or not, the client cannot tell from the connection, and must look.
# qtfs-mitm breaks the connection at the first request of every kind of
# change for each path (--cut): after the server answered it (made, the
# answer lost) through one mount, before the request reaches the server
# (not made) through another.  Made: the same sequence of changes (mkdir,
# mkfifo, symlink, create with and without O_EXCL, link, rename, rename
# over a name, RENAME_EXCHANGE, unlink, rmdir) on the mount and on a
# native directory: every change succeeds on both, and the trees end the
# same.  Not made, the server alive: the changes a second making leaves
# as they are (mknod, mkdir, symlink, link, a create with O_EXCL or
# without O_TRUNC) are sent again and succeed; the others (rename, unlink,
# rmdir, create with O_TRUNC, RENAME_EXCHANGE) are EIO and change nothing,
# since that server may still carry the first out: one that reaches the
# server late (--cut=late) is made once.  Not made, the server restarted
# (another instance; qtfs-mitm --restarts): those are sent again too and
# succeed; but not when the server that had the last send is still there
# (sent again to the restarted one and lost again; a change that waited
# through a real restart for its connection, then lost): EIO, made once.
# Before the client looked, each such change failed with EIO, made or
# not; and an overlayfs with its upper layer on the mount (as containerd's
# snapshots) then answered ESTALE for the renamed name for as long as it
# kept it: a file renamed over another through such an overlay, the way
# the container of test-qtfs-containerd.sh writes its counter, reads
# back.  Last, a change lost whose connection comes back late and whose
# second send gets no answer ends by its deadline.  (Also here, for the
# held-back reports it needs: an unprivileged create O_TRUNC of a set-id
# file that exists drops its set-id bits.)

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"
. "${top_srcdir:-.}/tests/fs/hostile-env.sh"

mkdir -p "$T/exp/after" "$T/exp/before" "$T/native"
start_server "$T/server.log" --listen "unix:$T/sock" --export "$T/exp" --key-file "$KEY" || exit 1
cuts() {
	for op in mkdir mknod symlink create link rename unlink rmdir; do
		printf ' --cut=%s:%s' "$1" "$op"
	done
}
# shellcheck disable=SC2046 # cuts prints options, split on purpose
start_mitm "$T/mitm-after.log" --listen "unix:$T/after.sock" --upstream "unix:$T/sock" $(cuts after)
mitm_after=$mitm
# shellcheck disable=SC2046
start_mitm "$T/mitm-before.log" --listen "unix:$T/before.sock" --upstream "unix:$T/sock" $(cuts before)
mitm_before=$mitm

check "mount through the mitm that cuts after the answer" \
	mount_qtfs "unix:$T/after.sock:$T/exp/after" "$T/ma" --key-file "$KEY" -o timeout=5 -v \
	2>"$T/client-after.log"
check "mount through the mitm that cuts before the server" \
	mount_qtfs "unix:$T/before.sock:$T/exp/before" "$T/mb" --key-file "$KEY" -o timeout=5 -v \
	2>"$T/client-before.log"

# changes DIR: the sequence, one line per change with its exit status.
changes() {
	python3 - "$1" <<'PY'
import ctypes, os, sys
d = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)

def exchange(a, b):
    # renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
    if libc.renameat2(-100, a.encode(), -100, b.encode(), 2) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))

def write(path, data, flags=os.O_CREAT | os.O_WRONLY | os.O_TRUNC):
    fd = os.open(path, flags, 0o644)
    os.write(fd, data)
    os.close(fd)

steps = [
    ("mkdir", lambda: os.mkdir(d + "/dir")),
    ("mkfifo", lambda: os.mkfifo(d + "/fifo")),
    ("symlink", lambda: os.symlink("some/target", d + "/sym")),
    ("create", lambda: write(d + "/f", b"data\n")),
    ("create O_EXCL", lambda: write(d + "/x", b"excl\n", os.O_CREAT | os.O_EXCL | os.O_WRONLY)),
    ("link", lambda: os.link(d + "/f", d + "/f2")),
    ("rename", lambda: os.rename(d + "/f2", d + "/g")),
    ("create n", lambda: write(d + "/n", b"1\n")),
    ("create count", lambda: write(d + "/count", b"0\n")),
    ("rename over", lambda: os.rename(d + "/n", d + "/count")),
    ("read count", lambda: open(d + "/count").read() == "1\n"),
    ("exchange", lambda: exchange(d + "/g", d + "/x")),
    ("unlink", lambda: os.unlink(d + "/f")),
    ("mkdir in dir", lambda: os.mkdir(d + "/dir/sub")),
    ("rmdir", lambda: os.rmdir(d + "/dir/sub")),
]
for name, fn in steps:
    try:
        print(name, "wrong" if fn() is False else "ok")
    except OSError as e:
        print(name, os.strerror(e.errno))
PY
}

# tree DIR: every name with its type, size, link target and content.
tree() {
	(cd "$1" && find . -mindepth 1 -printf '%p %y %s %l\n' | sort &&
		find . -type f -exec sh -c 'printf "%s: " "$1"; cat "$1"' sh {} \; | sort)
}

changes "$T/native" >"$T/native.out"
changes "$T/ma" >"$T/after.out"
cat "$T/after.out"
check "every change succeeds natively" sh -c '! grep -v " ok$" "$1"' sh "$T/native.out"
check "... and through the mitm that cut them after the server's answer" cmp "$T/native.out" "$T/after.out"
tree "$T/native" >"$T/native.tree"
tree "$T/exp/after" >"$T/after.tree"
check "the host's tree is the native one (answers lost)" cmp "$T/native.tree" "$T/after.tree"
tree "$T/ma" >"$T/after-mnt.tree"
check "... and so is the mount's" cmp "$T/native.tree" "$T/after-mnt.tree"
n_after=$(grep -c "^qtfs-mitm: cut after the answer" "$T/mitm-after.log")
check "every kind of change was cut after its answer ($n_after connections)" [ "$n_after" -ge 12 ]
check "the client says which it found made" grep -q "found made on the host" "$T/client-after.log"

# unmade DIR MODE: changes on names of their own, one line each with its
# exit status: first those a second making leaves as they are, then the
# others.  MODE native: only the first (what the host should end with
# when the others are refused); all: every one.
unmade_setup() {
	mkdir -p "$1/dgone"
	for f in gone r1 e1 e2; do echo "$f" >"$1/$f"; done
}
unmade() {
	python3 - "$1" "$2" <<'PY'
import ctypes, os, sys
d, mode = sys.argv[1:]
libc = ctypes.CDLL(None, use_errno=True)

def exchange(a, b):
    if libc.renameat2(-100, a.encode(), -100, b.encode(), 2) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))

def write(path, data, flags):
    fd = os.open(path, flags, 0o644)
    os.write(fd, data)
    os.close(fd)

W = os.O_CREAT | os.O_WRONLY
twice_ok = [
    ("mkdir", lambda: os.mkdir(d + "/d")),
    ("mkfifo", lambda: os.mkfifo(d + "/p")),
    ("symlink", lambda: os.symlink("some/target", d + "/s")),
    ("create", lambda: write(d + "/c", b"data\n", W)),
    ("create O_EXCL", lambda: write(d + "/x", b"excl\n", W | os.O_EXCL)),
    ("link", lambda: os.link(d + "/c", d + "/c2")),
]
others = [
    ("create O_TRUNC", lambda: write(d + "/t", b"new\n", W | os.O_TRUNC)),
    ("rename", lambda: os.rename(d + "/r1", d + "/r2")),
    ("unlink", lambda: os.unlink(d + "/gone")),
    ("rmdir", lambda: os.rmdir(d + "/dgone")),
    ("exchange", lambda: exchange(d + "/e1", d + "/e2")),
]
for name, fn in twice_ok + (others if mode == "all" else []):
    try:
        fn()
        print(name, "ok")
    except OSError as e:
        print(name, os.strerror(e.errno))
PY
}

mkdir -p "$T/native3"
unmade_setup "$T/native3"
unmade_setup "$T/exp/before"
unmade "$T/native3" native >/dev/null
unmade "$T/mb" all >"$T/before.out"
cat "$T/before.out"
check "requests lost, the server alive: mkdir, mkfifo, symlink, create, create O_EXCL and link are sent again and succeed" \
	sh -c "[ \$(head -n 6 '$T/before.out' | grep -c ' ok\$') -eq 6 ]"
check "... rename, unlink, rmdir, create O_TRUNC and RENAME_EXCHANGE are EIO" \
	sh -c "[ \$(tail -n +7 '$T/before.out' | grep -c ' Input/output error\$') -eq 5 ]"
tree "$T/native3" >"$T/native3.tree"
tree "$T/exp/before" >"$T/before.tree"
check "... and the host has only the first made" cmp "$T/native3.tree" "$T/before.tree"
n_before=$(grep -c "^qtfs-mitm: cut .* before the server" "$T/mitm-before.log")
check "every one was cut before the server ($n_before connections)" [ "$n_before" -ge 11 ]
check "the client says which it sent again" grep -q "not made on the host, sent again" "$T/client-before.log"
check "... and which not" grep -q "RENAME \"r1\".*the server that had it may still make it: EIO" \
	"$T/client-before.log"

# rename2 OP A B: renameat2(A, B) with RENAME_EXCHANGE or RENAME_WHITEOUT;
# prints ok or the error.
rename2() {
	python3 - "$@" <<'PY'
import ctypes, os, sys
op, a, b = sys.argv[1:]
libc = ctypes.CDLL(None, use_errno=True)
flag = {"exchange": 2, "whiteout": 4}[op]
if libc.renameat2(-100, a.encode(), -100, b.encode(), flag) != 0:
    print(os.strerror(ctypes.get_errno()))
else:
    print("ok")
PY
}

# One that reaches a live server after the client looked (qtfs-mitm passes
# it on a second after breaking the connection): made once.  Sent again,
# the exchange was made twice (the names back as they were, and 0
# answered), and the whiteout renamed the whiteout over the file (its
# data gone, both names whiteouts).
mkdir -p "$T/exp/late2"
echo A >"$T/exp/late2/a"
echo B >"$T/exp/late2/b"
echo C >"$T/exp/late2/c"
echo D >"$T/exp/late2/d"
start_mitm "$T/mitm-late2.log" --listen "unix:$T/late2.sock" --upstream "unix:$T/sock" --cut=late:rename
mitm_late2=$mitm
check "mount through the mitm that passes a rename on late" \
	mount_qtfs "unix:$T/late2.sock:$T/exp/late2" "$T/m2" --key-file "$KEY" -o timeout=5 -v \
	2>"$T/client-late2.log"
out=$(rename2 exchange "$T/m2/a" "$T/m2/b")
out2=$(rename2 whiteout "$T/m2/c" "$T/m2/d")
# Both carried out by the server (a second after the cut), whatever the load.
wait_until 10 sh -c "[ \$(grep -c 'late request answered' '$T/mitm-late2.log') -ge 2 ]"
check "a RENAME_EXCHANGE that reaches the server late: $out" [ "$out" = "Input/output error" ]
check "... made once: a holds B, b holds A" \
	sh -c "[ \"\$(cat '$T/exp/late2/a')\" = B ] && [ \"\$(cat '$T/exp/late2/b')\" = A ]"
check "a RENAME_WHITEOUT that reaches the server late: $out2" [ "$out2" = "Input/output error" ]
check "... made once: d holds C, c is a whiteout ($(stat -c '%F %t:%T' "$T/exp/late2/c"))" \
	sh -c "[ \"\$(cat '$T/exp/late2/d' 2>&1)\" = C ] && [ \"\$(stat -c '%F %t:%T' '$T/exp/late2/c')\" = 'character special file 0:0' ]"
check "unmount (a rename passed on late)" umount_qtfs "$T/m2"
mitm=$mitm_late2
stop_mitm "$T/mitm-late2.log"

# The counter of test-qtfs-containerd.sh's container, through an overlay
# whose upper layer is on the mount: each rename's answer is lost.
mkdir -p "$T/lower" "$T/ma/up" "$T/ma/work" "$T/ov"
if mount -t overlay overlay -o "lowerdir=$T/lower,upperdir=$T/ma/up,workdir=$T/ma/work" "$T/ov" 2>"$T/ov.err"; then
	QTFS_MOUNTS="$T/ov $QTFS_MOUNTS"
	out=$(for i in 1 2 3; do
		echo "$i" >"$T/ov/n$i" && mv "$T/ov/n$i" "$T/ov/count" && cat "$T/ov/count"
	done 2>&1 | tr '\n' ' ')
	check "an overlay on the mount: a counter renamed into place three times: $out" [ "$out" = "1 2 3 " ]
	check "... the host has it" grep -qx 3 "$T/exp/after/up/count"
	umount "$T/ov"
else
	fail "overlayfs with its upper layer on the mount: $(cat "$T/ov.err")"
fi

# A change lost whose connection comes back late, and whose second send
# then gets no answer (qtfs-mitm holds it): it ends by its deadline
# (timeout=4), counted from the loss, not a whole timeout after the
# second send.  The server stopped makes the reconnection take 3 s, so
# the two outcomes are 4 s and 7 s or more: the check's 5.5 s leaves a
# busy machine 1.5 s either way.  (A CREATE sent again once waited a
# whole timeout of its own.)
start_mitm "$T/mitm-late.log" --listen "unix:$T/late.sock" --upstream "unix:$T/sock" \
	--cut=before:create --cut=hold:create --cut=before:symlink --cut=hold:symlink
mitm_late=$mitm
check "mount through the mitm that holds a change sent again" \
	mount_qtfs "unix:$T/late.sock:$T/exp/after" "$T/ml" --key-file "$KEY" \
	-o timeout=4,entry_timeout=60,attr_timeout=60 -v 2>"$T/client-late.log"
for op in create symlink; do
	# Nothing for the kernel to ask first: the change is the first request out
	# (a directory made here knows its names: no lookup of the new one).
	mkdir "$T/ml/late-$op"
	kill -STOP "$SERVER_PID"
	python3 - "$T/ml/late-$op" "$op" >"$T/late.out" 2>&1 <<'PY' &
import os, sys, time
d, op = sys.argv[1:]
t0 = time.monotonic()
try:
    if op == "create":
        os.close(os.open(d + "/f", os.O_CREAT | os.O_WRONLY, 0o644))
    else:
        os.symlink("target", d + "/sl")
    r = "ok"
except OSError as e:
    r = os.strerror(e.errno)
print("%s %.1f" % (r.replace(" ", "_"), time.monotonic() - t0))
PY
	py=$!
	sleep 3
	kill -CONT "$SERVER_PID"
	wait "$py"
	read -r res secs <"$T/late.out"
	check "$op lost, its connection back 3 s later, sent again and not answered: $res after $secs s" \
		python3 -c 'import sys; sys.exit(float(sys.argv[1]) > 5.5)' "$secs"
done
check "unmount (a change sent again held)" umount_qtfs "$T/ml"
mitm=$mitm_late
stop_mitm "$T/mitm-late.log"

# Requests lost with the server restarted (another instance): the process
# that had them is gone, so the changes refused above are sent again too.
# qtfs-mitm --restarts makes the server look restarted after each cut (the
# MOUNT replies carry another instance), as a server killed with the
# request unread and started again would.
mkdir -p "$T/exp/restart" "$T/native4"
unmade_setup "$T/exp/restart"
unmade_setup "$T/native4"
unmade "$T/native4" all >/dev/null
# shellcheck disable=SC2046
start_mitm "$T/mitm-restart.log" --listen "unix:$T/restart.sock" --upstream "unix:$T/sock" \
	$(cuts before) --restarts
mitm_restart=$mitm
check "mount through the mitm that cuts before a server that then looks restarted" \
	mount_qtfs "unix:$T/restart.sock:$T/exp/restart" "$T/mr" --key-file "$KEY" -o timeout=5 -v \
	2>"$T/client-restart.log"
unmade "$T/mr" all >"$T/restart.out"
cat "$T/restart.out"
check "requests lost, the server restarted: every change succeeds" sh -c '! grep -v " ok$" "$1"' sh "$T/restart.out"
check "... all eleven" [ "$(grep -c " ok$" "$T/restart.out")" -eq 11 ]
n_sent=$(grep -c "not made on the host, sent again" "$T/client-restart.log")
check "... each sent again ($n_sent), the client seeing the restarts" \
	sh -c "[ $n_sent -ge 11 ] && grep -q 'the server was restarted' '$T/client-restart.log'"
tree "$T/native4" >"$T/native4.tree"
tree "$T/exp/restart" >"$T/restart.tree"
check "... and the host's tree is the native one" cmp "$T/native4.tree" "$T/restart.tree"
check "unmount (server restarted)" umount_qtfs "$T/mr"
mitm=$mitm_restart
stop_mitm "$T/mitm-restart.log"

# The server that may still carry a change out is the one its last send
# went to.  Sent again to a restarted server and lost again, the request
# passed on late (qtfs-mitm: the first cut before the server, which then
# looks restarted; the second late, which does not): an exchange is EIO and
# made once.  The client compared the first send's instance, sent it a
# third time, and the late one swapped the names back (0 answered).
mkdir -p "$T/exp/again"
echo A >"$T/exp/again/a"
echo B >"$T/exp/again/b"
start_mitm "$T/mitm-again.log" --listen "unix:$T/again.sock" --upstream "unix:$T/sock" \
	--cut=before:rename --cut=late:rename --restarts
mitm_again=$mitm
check "mount through the mitm that cuts a rename before a restart, then late" \
	mount_qtfs "unix:$T/again.sock:$T/exp/again" "$T/mg" --key-file "$KEY" -o timeout=5 -v \
	2>"$T/client-again.log"
out=$(rename2 exchange "$T/mg/a" "$T/mg/b")
wait_until 10 grep -q 'late request answered' "$T/mitm-again.log"
check "an exchange sent again to a restarted server and lost again, late: $out" [ "$out" = "Input/output error" ]
check "... made once: a holds B, b holds A" \
	sh -c "[ \"\$(cat '$T/exp/again/a')\" = B ] && [ \"\$(cat '$T/exp/again/b')\" = A ]"
check "unmount (a rename lost twice)" umount_qtfs "$T/mg"
mitm=$mitm_again
stop_mitm "$T/mitm-again.log"

# A real restart while a change waits for a connection, the change then
# lost on its way to the new server and passed on late: the server that
# has it is the new one, not the one the client knew when the call began.
# It compared that one's instance, found "restarted", sent the exchange
# again, and the late one swapped the names back (0 answered).  Its own
# server, killed and started again on the same socket; no name watch and
# long entry times, so that the kernel sends the RENAME without a lookup.
mkdir -p "$T/exp5"
echo A >"$T/exp5/a"
echo B >"$T/exp5/b"
server_main=$SERVER_PID
start_server "$T/server5.log" --listen "unix:$T/sock5" --export "$T/exp5" --key-file "$KEY" || exit 1
start_mitm "$T/mitm5.log" --listen "unix:$T/m5.sock" --upstream "unix:$T/sock5" --cut=late:rename
mitm5=$mitm
check "mount through the mitm that passes a rename on late (own server)" \
	mount_qtfs "unix:$T/m5.sock:$T/exp5" "$T/m5" --key-file "$KEY" \
	-o timeout=10,entry_timeout=60,attr_timeout=60,watch_timeout=0 -v 2>"$T/client5.log"
cat "$T/m5/a" "$T/m5/b" >/dev/null
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null
sleep 0.3
rename2 exchange "$T/m5/a" "$T/m5/b" >"$T/out5" &
py=$!
sleep 1
rm -f "$T/sock5"
start_server "$T/server5b.log" --listen "unix:$T/sock5" --export "$T/exp5" --key-file "$KEY" || exit 1
wait "$py"
wait_until 10 grep -q 'late request answered' "$T/mitm5.log"
out=$(cat "$T/out5")
check "an exchange waiting through a restart, then lost and passed on late: $out" \
	[ "$out" = "Input/output error" ]
check "... made once: a holds B, b holds A" \
	sh -c "[ \"\$(cat '$T/exp5/a')\" = B ] && [ \"\$(cat '$T/exp5/b')\" = A ]"
check "... and it went out after the restart" grep -q "the server was restarted" "$T/client5.log"
check "unmount (a restart while a rename waited)" umount_qtfs "$T/m5"
mitm=$mitm5
stop_mitm "$T/mitm5.log"
kill "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null
SERVER_PID=$server_main

# A create with O_TRUNC of a name the host has just filled (its report
# held back by qtfs-mitm, the directory's list says no such name: the
# kernel sends CREATE, not OPEN), cut before the server: the file with
# data there is not one this create left (it would be empty).  The server
# alive, EIO and the data as it was; restarted, sent again with O_TRUNC:
# what the caller wrote, alone.  The client took the file for made and
# opened it without O_TRUNC: 0, and the old data's tail under "x".
for how in alive restarted; do
	flags=
	[ "$how" = restarted ] && flags=--restarts
	mkdir -p "$T/exp/trunc-$how"
	# shellcheck disable=SC2086 # flags: one option or none
	start_mitm "$T/mitm-trunc-$how.log" --listen "unix:$T/trunc-$how.sock" --upstream "unix:$T/sock" \
		--cut=before:create --delay-watch=2000 $flags
	eval "mitm_trunc_$how=\$mitm"
	check "mount through the mitm that cuts a create, the host's reports late ($how)" \
		mount_qtfs "unix:$T/trunc-$how.sock:$T/exp/trunc-$how" "$T/mt-$how" --key-file "$KEY" \
		-o timeout=5 -v 2>"$T/client-trunc-$how.log"
done
sleep 2.5 # the watches' first replies, held back too
for how in alive restarted; do
	mkdir "$T/mt-$how/d"
	echo "old content, long" >"$T/exp/trunc-$how/d/f"
	out=$(python3 - "$T/mt-$how/d/f" <<'PY2'
import os, sys
try:
    fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    os.write(fd, b"x\n")
    os.close(fd)
    print("ok")
except OSError as e:
    print(os.strerror(e.errno))
PY2
)
	content=$(cat "$T/exp/trunc-$how/d/f")
	if [ "$how" = alive ]; then
		check "a create O_TRUNC of a name just filled on the host, lost, the server alive: $out" \
			[ "$out" = "Input/output error" ]
		check "... the data as it was: $content" [ "$content" = "old content, long" ]
	else
		check "... the server restarted: $out" [ "$out" = ok ]
		check "... sent again with O_TRUNC: $content" [ "$content" = x ]
	fi
	check "... it was cut" grep -q 'cut 0x010e "d/f" before the server' "$T/mitm-trunc-$how.log"
	check "unmount (a create O_TRUNC, $how)" umount_qtfs "$T/mt-$how"
	eval "mitm=\$mitm_trunc_$how"
	stop_mitm "$T/mitm-trunc-$how.log"
done

# The same way to a CREATE of a name that exists, nothing cut: by an
# unprivileged caller, with O_TRUNC, of a set-id file the host has just
# made.  It truncates, and drops the set-id bits as a local open would
# (the server's open runs as root, which keeps them).
start_mitm "$T/mitm-suid.log" --listen "unix:$T/suid.sock" --upstream "unix:$T/sock" --rate 0 \
	--delay-watch=2000
mitm_suid=$mitm
mkdir -p "$T/exp/suid"
check "mount through a mitm that holds the host's reports back" \
	mount_qtfs "unix:$T/suid.sock:$T/exp/suid" "$T/ms" --key-file "$KEY" -o timeout=5,allow_other
sleep 2.5 # the watch's first reply, held back too
check "a directory made there" sh -c 'umask 0 && mkdir "$1"' sh "$T/ms/d"
printf 'set-id\n' >"$T/exp/suid/d/s"
chmod 06777 "$T/exp/suid/d/s"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c '
import os, sys
try:
    os.close(os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644))
    print("ok")
except OSError as e:
    print(os.strerror(e.errno))' "$T/ms/d/s")
check "a create O_TRUNC by nobody of a set-id file the host has just made: $out" [ "$out" = ok ]
check "... truncated it: $(stat -c %s "$T/exp/suid/d/s") bytes" [ "$(stat -c %s "$T/exp/suid/d/s")" = 0 ]
check "... and dropped its set-id bits: $(stat -c %a "$T/exp/suid/d/s")" [ "$(stat -c %a "$T/exp/suid/d/s")" = 777 ]
check "unmount (a create of a set-id file)" umount_qtfs "$T/ms"
mitm=$mitm_suid
stop_mitm "$T/mitm-suid.log"

check "unmount (answers lost)" umount_qtfs "$T/ma"
check "unmount (requests lost)" umount_qtfs "$T/mb"
mitm=$mitm_after
stop_mitm "$T/mitm-after.log"
mitm=$mitm_before
stop_mitm "$T/mitm-before.log"
finish
