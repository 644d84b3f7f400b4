#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# What keeps a fuse-qtfs client inside what the host exports.  qtfs-raw, a
# hostile client, sends crafted requests (paths with "..", absolute paths,
# paths through symlinks planted in the export that lead out of it, garbage
# payloads, bogus handles, unauthenticated frames) over a unix socket and
# over TCP with a key, and a canary file next to the export must stay
# untouched.  Then, through real mounts: symlinks are resolved on the
# client, never on the host; a wrong, missing or world-readable key is
# refused; the whitelist confines writes and logs each denial, and a rename
# replaces only what the whitelist lets be removed there; read-only
# exports and -o ro refuse writes; MOUNT outside every export and of a file
# is refused; the unix socket's uid check and the handle and connection
# limits hold without taking the server down.
#
# Layout: the host side lives in $T/host (the export and, next to it, the
# canary), the client side in $T/dpu (the mount points), so that a path that
# a client resolves "up" out of its mount lands in $T/dpu, and a host file
# that changes can only have been changed by the server.

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"

RAW=$top_builddir/tests/fs/qtfs-raw
H=$T/host
D=$T/dpu
mkdir -p "$H/exp" "$D" || exit 1

# -- fixture ----------------------------------------------------------------
echo "host canary, outside the export" >"$H/canary"
chmod 644 "$H/canary"
cp -p "$H/canary" "$T/canary.orig"
ln -s / "$H/exp/escape_abs"
ln -s ../../.. "$H/exp/escape_rel"
ln -s .. "$H/exp/up"
echo "inside" >"$H/exp/file"

# The host directories an escape would change: their listing before.
snapshot() {
	(cd "$H" && find . | sort)
}
snapshot >"$T/host.before"

host_unchanged() {
	snapshot >"$T/host.after"
	cmp -s "$T/canary.orig" "$H/canary" &&
		[ "$(stat -c %a:%u:%g:%h "$H/canary")" = "644:0:0:1" ] &&
		diff "$T/host.before" "$T/host.after" >&2
}

# expect_fail DESCRIPTION PATTERN CMD...: CMD must exit non-zero and say PATTERN (grep -E -i).
expect_fail() {
	desc=$1
	pat=$2
	shift 2
	if "$@" >"$T/cmd.out" 2>&1; then
		fail "$desc: succeeded"
	elif ! grep -E -i -q "$pat" "$T/cmd.out"; then
		fail "$desc: message does not match /$pat/: $(cat "$T/cmd.out")"
	else
		ok "$desc ($(grep -E -i -m 1 "$pat" "$T/cmd.out"))"
	fi
}

# raw LOG ARGS...: run qtfs-raw, its report in LOG; on failure show what was not refused.
raw() {
	log=$1
	shift
	if "$RAW" "$@" >"$log" 2>&1; then
		return 0
	fi
	grep -v '^ok' "$log" >&2
	return 1
}

server_alive() {
	kill -0 "$1" 2>/dev/null
}

between() {
	[ "$1" -ge "$2" ] && [ "$1" -le "$3" ]
}

# -- raw attacks over unix and tcp ------------------------------------------
start_server "$T/server-unix.log" --listen "unix:$T/sock" --export "$H/exp" --export /proc:ro ||
	exit 1
UNIX_PID=$SERVER_PID
port=$(free_port)
start_server "$T/server-tcp.log" --listen "tcp://127.0.0.1:$port" --export "$H/exp" \
	--key-file "$KEY" || exit 1
TCP_PID=$SERVER_PID

check "qtfs-raw attacks over unix refused" \
	raw "$T/raw-unix.log" --canary "$H/canary" --proc /proc "unix:$T/sock" "$H/exp"
check "unix server survived the attacks" server_alive "$UNIX_PID"
check "qtfs-raw attacks over tcp with a key refused" \
	raw "$T/raw-tcp.log" --key-file "$KEY" --canary "$H/canary" "tcp://127.0.0.1:$port" "$H/exp"
check "tcp server survived the attacks" server_alive "$TCP_PID"
# qtfs-raw's MOUNT does not say it takes large reads into pipes
# (QTFS_MNT_PIPE_READS): over TCP from this host they are copied for it.
check "large reads are copied for a TCP client on this host that does not take them into pipes" \
	grep -q "mounted .*(TCP from this host: large reads are copied" "$T/server-tcp.log"
check "canary and host tree unchanged after the raw attacks" host_unchanged

# -- symlinks through a real mount: resolved on the client -------------------
M=$D/mnt
check "mount over unix" mount_qtfs "unix:$T/sock:$H/exp" "$M"
# The server refuses to follow escape_abs (EXDEV); the client follows it itself.
check "escape_abs/etc/passwd is the client's own /etc/passwd" cmp -s "$M/escape_abs/etc/passwd" /etc/passwd
check "readlink of escape_rel gives its text" [ "$(readlink "$M/escape_rel")" = "../../.." ]
check "readlink of up gives its text" [ "$(readlink "$M/up")" = ".." ]
# $M/up is $D on the client: the write lands there, not next to the export.
check "write through up/ succeeds on the client side" sh -c "echo x >'$M/up/canary'"
check "... and landed in the client's directory" [ "$(cat "$D/canary" 2>/dev/null)" = x ]
check "... and the host canary is unchanged" host_unchanged
check "reading up/canary gives the client's file" [ "$(cat "$M/up/canary")" = x ]
rm -f "$D/canary"
check "unmount" umount_qtfs "$M"

# -- keys ---------------------------------------------------------------------
KEY2=$T/psk2
head -c 48 /dev/urandom | base64 >"$KEY2"
chmod 600 "$KEY2"
expect_fail "mount with a wrong key refused" "key|authentic" \
	mount_qtfs "tcp://127.0.0.1:$port:$H/exp" "$D/k1" --key-file "$KEY2"
check "... not mounted" sh -c "! mountpoint -q '$D/k1'"
expect_fail "mount without a key against a keyed server refused" "key|authentic" \
	mount_qtfs "tcp://127.0.0.1:$port:$H/exp" "$D/k2"
expect_fail "qtfs-raw with a wrong key refused" "handshake|authentic|key" \
	"$RAW" --key-file "$KEY2" --group lexical "tcp://127.0.0.1:$port" "$H/exp"
expect_fail "server refuses tcp without a key" "key" \
	"$QTFS_SERVER" --config "$T/empty.conf" --listen "tcp://127.0.0.1:$(free_port)" --export "$H/exp"
cp "$KEY" "$T/psk-open"
chmod 644 "$T/psk-open"
expect_fail "client refuses a world-readable key file" "group or others|chmod" \
	mount_qtfs "tcp://127.0.0.1:$port:$H/exp" "$D/k3" --key-file "$T/psk-open"
chmod 640 "$T/psk-open"
expect_fail "server refuses a group-readable key file" "group or others|chmod" \
	"$QTFS_SERVER" --config "$T/empty.conf" --listen "tcp://127.0.0.1:$(free_port)" \
	--export "$H/exp" --key-file "$T/psk-open"
check "right key still mounts" mount_qtfs "tcp://127.0.0.1:$port:$H/exp" "$D/k4" --key-file "$KEY"
check "... and reads" [ "$(cat "$D/k4/file")" = inside ]
check "unmount" umount_qtfs "$D/k4"

# -- MOUNT of what is not an exported directory -------------------------------
expect_fail "mount of a path outside every export refused" "not inside an export" \
	mount_qtfs "unix:$T/sock:/etc" "$D/x1"
expect_fail "mount of exp/.. refused" "not inside an export" \
	mount_qtfs "unix:$T/sock:$H/exp/.." "$D/x2"
expect_fail "mount of a file refused" "not a directory" \
	mount_qtfs "unix:$T/sock:$H/exp/file" "$D/x3"
expect_fail "mount through an escaping symlink refused" "cannot mount" \
	mount_qtfs "unix:$T/sock:$H/exp/escape_abs/etc" "$D/x4"

# -- whitelist ------------------------------------------------------------------
WX=$H/wexp
mkdir -p "$WX/allowed" "$WX/denied" "$WX/linkable"
echo "victim" >"$WX/denied/victim"
echo "kept" >"$WX/linkable/kept"
{
	for s in Write Unlink Mkdir Rename; do
		printf '[%s]\nPath=%s\n' "$s" "$WX/allowed"
	done
	# Links may be made from linkable/ too, where nothing may be written.
	printf '[Create]\nPath=%s;%s\n' "$WX/allowed" "$WX/linkable"
} >"$T/whitelist"
start_server "$T/server-wl.log" --listen "unix:$T/sock-wl" --export "$WX" \
	--whitelist "$T/whitelist" || exit 1
W=$D/wl
check "mount with a whitelist" mount_qtfs "unix:$T/sock-wl:$WX" "$W"
check "create in the allowed dir" sh -c "echo hi >'$W/allowed/f'"
check "mkdir in the allowed dir" mkdir "$W/allowed/d"
check "rename in the allowed dir" mv "$W/allowed/f" "$W/allowed/g"
check "append in the allowed dir" sh -c "echo more >>'$W/allowed/g'"
check "unlink in the allowed dir" rm "$W/allowed/g"
check "... the host saw all of it" sh -c "[ -d '$WX/allowed/d' ] && [ ! -e '$WX/allowed/g' ]"
rmdir "$W/allowed/d"
expect_fail "create in the denied dir" "Permission denied" sh -c "echo hi >'$W/denied/new'"
expect_fail "mkdir in the denied dir" "Permission denied" mkdir "$W/denied/newdir"
expect_fail "unlink in the denied dir" "Permission denied" rm -f "$W/denied/victim"
expect_fail "write in the denied dir" "Permission denied" sh -c "echo x >>'$W/denied/victim'"
expect_fail "rename out of the denied dir" "Permission denied" \
	mv "$W/denied/victim" "$W/allowed/stolen"
expect_fail "create in the export root" "Permission denied" sh -c "echo hi >'$W/new'"
# A hard link would let the file be written under its new name.
expect_fail "a link into the allowed dir of a file that may not be written there" \
	"Permission denied" ln "$W/linkable/kept" "$W/allowed/kept"
check "... refused with a log line naming both and what it would allow" \
	grep -q "Link \"$WX/allowed/kept\" to \"$WX/linkable/kept\" denied by the whitelist: it would allow Write there" \
	"$T/server-wl.log"
check "... and no link on the host" sh -c "[ ! -e '$WX/allowed/kept' ] && [ \"\$(stat -c %h '$WX/linkable/kept')\" = 1 ]"
check "a link within the allowed dir works" sh -c "echo l >'$W/allowed/l1' && ln '$W/allowed/l1' '$W/allowed/l2'"
rm -f "$W/allowed/l1" "$W/allowed/l2"
check "reading in the denied dir still works" [ "$(cat "$W/denied/victim")" = victim ]
check "... the victim is intact on the host" [ "$(cat "$WX/denied/victim")" = victim ]
check "... and nothing new in the denied dir" [ "$(ls -A "$WX/denied")" = victim ]
# One log line per denial, naming the peer, the operation and the host path.
for op_path in "Create:$WX/denied/new" "Mkdir:$WX/denied/newdir" "Unlink:$WX/denied/victim" \
	"Write:$WX/denied/victim" "Rename:$WX/denied/victim" "Create:$WX/new"; do
	op=${op_path%%:*}
	p=${op_path#*:}
	n=$(grep -c "peer unix(uid=0[^)]*): $op \"$p\" denied by the whitelist" "$T/server-wl.log")
	check "log: one line for $op \"$p\" (found $n)" [ "$n" -eq 1 ]
done
# [Create] without [Write] lets a file be made, not filled: the handle a CREATE
# answers with is judged as an OPEN for the same access would be.
expect_fail "create where files may be made but not written" "Permission denied" \
	sh -c "echo hi >'$W/linkable/new'"
check "... nothing made on the host" [ ! -e "$WX/linkable/new" ]
check "... and one log line for it" \
	grep -q "): Write \"$WX/linkable/new\" denied by the whitelist" "$T/server-wl.log"
# A truncate is a write: truncate(2) by path (a SETATTR, no handle) is judged
# by [Write] as an O_TRUNC open is, whatever [Setattr] allows (here: all).
expect_fail "truncate(2) where files may not be written" "Permission denied" \
	python3 -c 'import os, sys; os.truncate(sys.argv[1], 0)' "$W/linkable/kept"
check "... the file is intact on the host" [ "$(cat "$WX/linkable/kept")" = kept ]
check "... and one log line for it" \
	grep -q "): Write \"$WX/linkable/kept\" denied by the whitelist" "$T/server-wl.log"
check "truncate(2) where files may be written works" sh -c \
	"echo data >'$W/allowed/t' && python3 -c 'import os; os.truncate(\"$W/allowed/t\", 2)' &&
	[ \"\$(cat '$WX/allowed/t')\" = da ] && rm '$W/allowed/t'"
# Names are the client's: one with a newline must not start a log line of its own.
expect_fail "mkdir of a name with a newline in the denied dir" "Permission denied" \
	mkdir "$W/denied/$(printf 'nl\nforged')"
check "... logged on one line, escaped" \
	grep -q "): Mkdir \"$WX/denied/nl\\\\nforged\" denied by the whitelist" "$T/server-wl.log"
check "... and no line of the client's making" sh -c "! grep -q '^forged' '$T/server-wl.log'"
check "unmount" umount_qtfs "$W"
# A raw client may send "allowed/link/x" where link -> ../denied: the whitelist
# must judge the path the server really reaches.
check "qtfs-raw whitelist attacks refused" \
	raw "$T/raw-wl.log" --group whitelist --whitelist-allowed allowed --whitelist-denied denied \
	"unix:$T/sock-wl" "$WX"
check "... the victim is intact on the host" [ "$(cat "$WX/denied/victim" 2>/dev/null)" = victim ]
check "... and nothing new in the denied dir" [ "$(ls -A "$WX/denied")" = victim ]
# [Read]: files are read only below its paths (judged at the open).
echo "open" >"$WX/allowed/readme"
printf '[Read]\nPath=%s\n' "$WX/allowed" >"$T/whitelist-read"
start_server "$T/server-wlr.log" --listen "unix:$T/sock-wlr" --export "$WX" \
	--whitelist "$T/whitelist-read" || exit 1
check "mount with a [Read] whitelist" mount_qtfs "unix:$T/sock-wlr:$WX" "$D/wlr"
check "[Read]: a file below its path is read" [ "$(cat "$D/wlr/allowed/readme")" = open ]
expect_fail "[Read]: a file elsewhere is not" "Permission denied" cat "$D/wlr/denied/victim"
check "[Read]: ... and the server said so" \
	grep -q "Read \"$WX/denied/victim\" denied by the whitelist" "$T/server-wlr.log"
check "[Read]: listing there still works" [ "$(ls "$D/wlr/denied")" = victim ]
check "unmount the [Read] mount" umount_qtfs "$D/wlr"
rm "$WX/allowed/readme"

# -- whitelist: what a rename replaces ----------------------------------------
# A rename over an existing name removes what was there: it needs [Unlink]
# (a file) or [Rmdir] (a directory) at the target besides [Rename], or a file
# that may not be removed could be replaced by any other.  RENAME_EXCHANGE
# removes nothing but renames both names; RENAME_WHITEOUT makes a device
# node at the old name ([Create] there).  keep/ may be renamed in, nothing
# more; free/ may have names made and removed too; fixed/ none of it.
# Each of the server's three ways to make a rename: on the event loop
# thread, on io_uring's workers (inline_metadata=false: not on the loop
# thread) and on its worker pool (ring_file_ops=false).
NX=$H/rexp
{
	printf '[Rename]\nPath=%s;%s\n' "$NX/keep" "$NX/free"
	for s in Unlink Rmdir Create; do
		printf '[%s]\nPath=%s\n' "$s" "$NX/free"
	done
} >"$T/whitelist-rename"
printf '[server]\ninline_metadata=false\n' >"$T/rename-ring.conf"
printf '[server]\nring_file_ops=false\n' >"$T/rename-pool.conf"

# rename2 FLAGS A B: renameat2(A, B) with FLAGS (none, noreplace, exchange
# or whiteout); prints ok or the error.
rename2() {
	python3 - "$@" <<'PY'
import ctypes, os, sys
op, a, b = sys.argv[1:]
libc = ctypes.CDLL(None, use_errno=True)
flag = {"none": 0, "noreplace": 1, "exchange": 2, "whiteout": 4}[op]
if libc.renameat2(-100, a.encode(), -100, b.encode(), flag) != 0:
    print(os.strerror(ctypes.get_errno()))
else:
    print("ok")
PY
}

# rename_is DESC WANT FLAGS A B: rename2 must print WANT.
rename_is() {
	_got=$(rename2 "$3" "$4" "$5")
	check "$1 ($_got)" [ "$_got" = "$2" ]
}

# logged_once LOG OP PATH [WHY]: one denial line for OP at PATH (ending in WHY).
logged_once() {
	_n=$(grep -c -F "): $2 \"$3\" denied by the whitelist${4:-}" "$1")
	[ "$_n" -eq 1 ] || { echo "$2 \"$3\": $_n log lines" >&2; return 1; }
}

for how in loop ring pool; do
	case $how in
	loop) conf=$T/empty.conf ;;
	ring) conf=$T/rename-ring.conf ;;
	pool) conf=$T/rename-pool.conf ;;
	esac
	rm -rf "$NX"
	mkdir -p "$NX/keep/d1" "$NX/keep/d2" "$NX/free/d1" "$NX/free/d2" "$NX/fixed"
	for d in keep free fixed; do
		for f in src victim a b; do
			echo "$d $f" >"$NX/$d/$f"
		done
	done
	log=$T/server-rename-$how.log
	start_server "$log" --config "$conf" --listen "unix:$T/sock-rn-$how" --export "$NX" \
		--whitelist "$T/whitelist-rename" || exit 1
	N=$D/rn-$how
	check "$how: mount with the rename whitelist" mount_qtfs "unix:$T/sock-rn-$how:$NX" "$N"
	rename_is "$how: a rename over a file that may not be unlinked is refused" \
		"Permission denied" none "$N/keep/src" "$N/keep/victim"
	check "$how: ... the target and the source are intact on the host" \
		[ "$(cat "$NX/keep/victim")/$(cat "$NX/keep/src")" = "keep victim/keep src" ]
	check "$how: ... and one log line names it" \
		logged_once "$log" Unlink "$NX/keep/victim" ": a rename would replace it"
	rename_is "$how: a rename over an empty directory that may not be removed is refused" \
		"Permission denied" none "$N/keep/d1" "$N/keep/d2"
	check "$how: ... both directories are still there on the host" \
		sh -c '[ -d "$1" ] && [ -d "$2" ]' sh "$NX/keep/d1" "$NX/keep/d2"
	check "$how: ... and one log line names it" \
		logged_once "$log" Rmdir "$NX/keep/d2" ": a rename would replace it"
	rename_is "$how: a rename to a new name there works" ok none "$N/keep/src" "$N/keep/new"
	check "$how: ... on the host" \
		sh -c '[ "$(cat "$1/new")" = "keep src" ] && [ ! -e "$1/src" ]' sh "$NX/keep"
	rename_is "$how: RENAME_NOREPLACE over a file there is EEXIST, as ever" \
		"File exists" noreplace "$N/keep/new" "$N/keep/victim"
	rename_is "$how: RENAME_NOREPLACE to a new name there works" \
		ok noreplace "$N/keep/new" "$N/keep/src"
	rename_is "$how: RENAME_EXCHANGE there works (it removes nothing)" \
		ok exchange "$N/keep/a" "$N/keep/b"
	check "$how: ... on the host" \
		[ "$(cat "$NX/keep/a")/$(cat "$NX/keep/b")" = "keep b/keep a" ]
	rename_is "$how: RENAME_EXCHANGE with a name that may not be renamed is refused" \
		"Permission denied" exchange "$N/keep/a" "$N/fixed/a"
	check "$how: ... both files are as they were on the host" \
		[ "$(cat "$NX/keep/a")/$(cat "$NX/fixed/a")" = "keep b/fixed a" ]
	check "$how: ... and one log line names the side refused" \
		logged_once "$log" Rename "$NX/fixed/a"
	rename_is "$how: RENAME_WHITEOUT where nothing may be created is refused" \
		"Permission denied" whiteout "$N/keep/a" "$N/keep/wo"
	check "$how: ... the file is where it was on the host" \
		sh -c '[ "$(cat "$1/a")" = "keep b" ] && [ ! -e "$1/wo" ]' sh "$NX/keep"
	check "$how: ... and one log line names it" logged_once "$log" Create "$NX/keep/a"
	rename_is "$how: a rename over a file that may be unlinked works" \
		ok none "$N/free/src" "$N/free/victim"
	check "$how: ... on the host" \
		sh -c '[ "$(cat "$1/victim")" = "free src" ] && [ ! -e "$1/src" ]' sh "$NX/free"
	rename_is "$how: a rename over a directory that may be removed works" \
		ok none "$N/free/d1" "$N/free/d2"
	check "$how: ... on the host" sh -c '[ ! -e "$1/d1" ] && [ -d "$1/d2" ]' sh "$NX/free"
	rename_is "$how: RENAME_WHITEOUT where files may be created works" \
		ok whiteout "$N/free/a" "$N/free/wo"
	check "$how: ... a whiteout on the host" \
		[ "$(stat -c %F:%t:%T "$NX/free/a")" = "character special file:0:0" ]
	check "$how: unmount" umount_qtfs "$N"
done

# -- read-only ------------------------------------------------------------------
RX=$H/roexp
mkdir -p "$RX"
echo "ro data" >"$RX/file"
# The read-write export around it gets a mount of its own, which can write
# there: the server says so at start (and of no other pair).
start_server "$T/server-ro.log" --listen "unix:$T/sock-ro" --export "$RX:ro" --export "$H" || exit 1
check "a read-only export nested in a read-write one is warned of" \
	grep -q "export \"$RX\" is read-only, but clients that mount the read-write export \"$H\" can write it there" \
	"$T/server-ro.log"
check "... and side by side ones are not" sh -c '! grep -q "is read-only, but" "$1"' sh "$T/server-unix.log"
R=$D/ro
check "mount of a read-only export" mount_qtfs "unix:$T/sock-ro:$RX" "$R"
check "... mounted read-only" sh -c "grep ' $R ' /proc/mounts | grep -q ' ro[ ,]'"
check "... reads work" [ "$(cat "$R/file")" = "ro data" ]
expect_fail "... create refused" "Read-only file system" sh -c "echo x >'$R/new'"
expect_fail "... write refused" "Read-only file system" sh -c "echo x >>'$R/file'"
expect_fail "... mkdir refused" "Read-only file system" mkdir "$R/d"
expect_fail "... unlink refused" "Read-only file system" rm -f "$R/file"
check "... host file unchanged" sh -c "[ \"\$(cat '$RX/file')\" = 'ro data' ] && [ ! -e '$RX/new' ]"
check "unmount" umount_qtfs "$R"
check "mount -o ro of a read-write export" mount_qtfs "unix:$T/sock:$H/exp" "$D/ro2" -o ro
check "... reads work" [ "$(cat "$D/ro2/file")" = inside ]
expect_fail "... create refused" "Read-only file system" sh -c "echo x >'$D/ro2/new'"
expect_fail "... write refused" "Read-only file system" sh -c "echo x >>'$D/ro2/file'"
check "... host file unchanged" sh -c "[ \"\$(cat '$H/exp/file')\" = inside ] && [ ! -e '$H/exp/new' ]"
check "unmount" umount_qtfs "$D/ro2"

# -- unix socket uid check --------------------------------------------------------
printf '[server]\nunix_uids=12345\n' >"$T/uids.conf"
start_server "$T/server-uid.log" --config "$T/uids.conf" --listen "unix:$T/sock-uid" \
	--export "$H/exp" || exit 1
expect_fail "root refused on a socket allowing uid 12345 only" "refused access to .*unix uid" \
	mount_qtfs "unix:$T/sock-uid:$H/exp" "$D/uid"
check "... the server logged why" grep -q "uid 0 is not allowed" "$T/server-uid.log"
check "... and is still up" server_alive "$SERVER_PID"

# -- limits -----------------------------------------------------------------------
LX=$H/limits
mkdir -p "$LX"
i=1
while [ $i -le 10 ]; do
	echo "$i" >"$LX/f$i"
	i=$((i + 1))
done
printf '[server]\nmax_handles=5\n' >"$T/handles.conf"
start_server "$T/server-handles.log" --config "$T/handles.conf" --listen "unix:$T/sock-h" \
	--export "$LX" || exit 1
HANDLES_PID=$SERVER_PID
L=$D/limits
check "mount with max_handles=5" mount_qtfs "unix:$T/sock-h:$LX" "$L"
# Ten readers holding their file open at once; the shell reports each failed open.
: >"$T/emfile.err"
holders=""
i=1
while [ $i -le 10 ]; do
	(exec 2>>"$T/emfile.err" && exec <"$L/f$i" && exec sleep 30) &
	holders="$holders $!"
	i=$((i + 1))
done
sleep 1
n=$(grep -c "Too many open files" "$T/emfile.err")
check "opening 10 files at once: $n refused with EMFILE" between "$n" 1 5
kill $holders 2>/dev/null
wait $holders 2>/dev/null
check "... the server is still up" server_alive "$HANDLES_PID"
check "... and opens work again once they are closed" [ "$(cat "$L/f10")" = 10 ]
check "unmount" umount_qtfs "$L"

printf '[server]\nmax_conns=1\n' >"$T/conns.conf"
start_server "$T/server-conns.log" --config "$T/conns.conf" --listen "unix:$T/sock-c" \
	--export "$H/exp" || exit 1
CONNS_PID=$SERVER_PID
check "first mount with max_conns=1" mount_qtfs "unix:$T/sock-c:$H/exp" "$D/c1"
expect_fail "second mount refused while the first exists" "connection|refused" \
	mount_qtfs "unix:$T/sock-c:$H/exp" "$D/c2"
check "... the first mount still works" [ "$(cat "$D/c1/file")" = inside ]
check "... the server is still up" server_alive "$CONNS_PID"
check "unmount" umount_qtfs "$D/c1"

check "host tree unchanged at the end (outside the dirs the checks wrote)" sh -c \
	"cmp -s '$T/canary.orig' '$H/canary'"
finish
