#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# The host's POSIX ACLs on the DPU (docs/fuse-qtfs.md, "ACLs").  fsdiff's
# perm_acl scenario (run by test-qtfs-posix) compares what a user whom ACLs
# grant or refuse may do on the mount with the native directory, and the
# modes and ACLs new files get under a default ACL.  Here what it cannot
# show: an ACL the host changes is enforced on the DPU within attr_timeout;
# pseudo files, which have no ACLs, are read by any user with no request
# for one; an export on a file system without ACLs (ramfs) is
# still read and written as its modes say, and one on a network file
# system (here a fuse-qtfs mount) gets the umask too; and against a server that does
# not apply the caller's umask (one from before QTFS_MNT_UMASK, made with
# qtfs-mitm), new files still get the umask.

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"
. "${top_srcdir:-.}/tests/fs/hostile-env.sh"

NOBODY=65534

# acl set PATH access|default SPEC | acl get PATH access|default: a POSIX
# ACL as the kernel's xattr, SPEC like getfacl's short form
# ("u::rw-,u:65534:r--,g::r--,m::r--,o::---"); get prints the same form
# or the errno name.  (No setfacl needed.)
cat >"$T/acl.py" <<'PY'
import errno, os, struct, sys

TAGS = {"u": (0x01, 0x02), "g": (0x04, 0x08), "m": (0x10, None), "o": (0x20, None)}
NAMES = {0x01: "u:", 0x02: "u", 0x04: "g:", 0x08: "g", 0x10: "m:", 0x20: "o:"}

def perm(s):
    return (4 if s[0] == "r" else 0) | (2 if s[1] == "w" else 0) | (1 if s[2] == "x" else 0)

def encode(spec):
    ents = []
    for e in spec.split(","):
        kind, who, p = e.split(":")
        tag = TAGS[kind][1] if who else TAGS[kind][0]
        ents.append((tag, perm(p), int(who) if who else 0xFFFFFFFF))
    ents.sort()
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in ents)

def decode(b):
    out = []
    for i in range(4, len(b), 8):
        tag, p, who = struct.unpack_from("<HHI", b, i)
        ps = ("r" if p & 4 else "-") + ("w" if p & 2 else "-") + ("x" if p & 1 else "-")
        name = NAMES[tag]
        out.append(name + (":" + str(who) if tag in (0x02, 0x08) else "") + ":" + ps)
    return ",".join(out)

op, path, which = sys.argv[1:4]
name = "system.posix_acl_" + which
try:
    if op == "set":
        os.setxattr(path, name, encode(sys.argv[4]))
    else:
        print(decode(os.getxattr(path, name)))
except OSError as e:
    print("EOPNOTSUPP" if e.errno == errno.EOPNOTSUPP else errno.errorcode.get(e.errno, e.errno))
    sys.exit(1)
PY
acl() {
	python3 "$T/acl.py" "$@"
}

# acl_is PATH access|default WANT: what acl get says is WANT.
acl_is() {
	[ "$(acl get "$1" "$2")" = "$3" ]
}

# as_nobody CMD...: run CMD as uid/gid 65534 with no other groups.
as_nobody() {
	setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$@"
}

# reads FILE, appends FILE: whether the user may read, append to FILE.
reads() {
	as_nobody sh -c 'cat "$1" >/dev/null' sh "$1" 2>/dev/null
}
appends() {
	as_nobody sh -c 'echo more >>"$1"' sh "$1" 2>/dev/null
}
not() {
	! "$@"
}

mkdir -p "$T/exp/noacl"
start_server "$T/server.log" --listen "unix:$T/sock" --export "$T/exp" --export /proc:ro \
	--key-file "$KEY" || exit 1
check "mount" mount_qtfs "unix:$T/sock:$T/exp" "$T/mnt" --key-file "$KEY" -o allow_other

# -- an ACL the host changes ---------------------------------------------------
printf 'secret\n' >"$T/exp/h"
chmod 640 "$T/exp/h"
check "a named-user entry on the host" acl set "$T/exp/h" access "u::rw-,u:$NOBODY:r--,g::r--,m::r--,o::---"
check "... lets the user read on the DPU" reads "$T/mnt/h"
check "... and nothing more" not appends "$T/mnt/h"
check "the host takes the entry's read away" acl set "$T/exp/h" access "u::rw-,u:$NOBODY:---,g::r--,m::r--,o::---"
check "... and the DPU refuses the read within attr_timeout" \
	wait_until 3 not reads "$T/mnt/h"
check "the host gives read and write" acl set "$T/exp/h" access "u::rw-,u:$NOBODY:rw-,g::r--,m::rw-,o::---"
check "... and the DPU lets the user write within attr_timeout" \
	wait_until 3 appends "$T/mnt/h"
check "... the write is on the host" grep -q more "$T/exp/h"

# -- pseudo files: no ACLs, no request for one -------------------------------
check "mount the host's /proc" mount_qtfs "unix:$T/sock:/proc" "$T/proc" --key-file "$KEY" -o allow_other
before=$(server_count GETXATTR)
check "the user reads the host's /proc/meminfo" reads "$T/proc/meminfo"
check "... and /proc/1/status, in a directory of 0555" reads "$T/proc/1/status"
after=$(server_count GETXATTR)
check "no GETXATTR reached the server for it ($before then $after)" [ "$before" = "$after" ]
check "... an ACL of a pseudo file reads as none" acl_is "$T/proc/meminfo" access ENODATA

# -- a host file system without ACLs ---------------------------------------------
mount -t ramfs ramfs "$T/exp/noacl" || exit 1
QTFS_MOUNTS="$QTFS_MOUNTS $T/exp/noacl"
noacl=$T/exp/noacl
chmod 777 "$noacl"
printf 'g\n' >"$noacl/group"
chown 0:$NOBODY "$noacl/group"
chmod 660 "$noacl/group"
printf 'o\n' >"$noacl/other"
chmod 644 "$noacl/other"
check "the host says it has no ACLs there: $(acl get "$noacl/other" access)" \
	acl_is "$noacl/other" access EOPNOTSUPP
check "the user writes a file of its group there on the DPU" appends "$T/mnt/noacl/group"
check "... and reads one anyone may read" reads "$T/mnt/noacl/other"
check "... and may not write that one" not appends "$T/mnt/noacl/other"
# (The kernel asks for the ACL; the host's EOPNOTSUPP would refuse the access.)
check "an ACL there reads as none on the DPU" acl_is "$T/mnt/noacl/other" access ENODATA
as_nobody sh -c "umask 022; : >'$T/mnt/noacl/made'; mkdir '$T/mnt/noacl/dir'"
check "a file made there by the user gets the umask: $(stat -c %a "$noacl/made")" \
	[ "$(stat -c %a "$noacl/made")" = 644 ]
check "... and a directory: $(stat -c %a "$noacl/dir")" [ "$(stat -c %a "$noacl/dir")" = 755 ]

# -- an export on a network file system -------------------------------------
# The server treats a FUSE mount as one (its getxattr is a request to
# another server): the umask of a create there is applied by its pool,
# not its loop.  The mount of this test's own server is such an export.
start_server "$T/server-net.log" --listen "unix:$T/sock-net" --export "$T/mnt" --key-file "$KEY" ||
	exit 1
NET_PID=$SERVER_PID
check "mount an export that is itself a fuse-qtfs mount" \
	mount_qtfs "unix:$T/sock-net:$T/mnt/noacl" "$T/net" --key-file "$KEY" -o allow_other
as_nobody sh -c "umask 027; : >'$T/net/netf'; mkdir '$T/net/netd'"
check "a file made there gets the umask: $(stat -c %a "$noacl/netf")" [ "$(stat -c %a "$noacl/netf")" = 640 ]
check "... and a directory: $(stat -c %a "$noacl/netd")" [ "$(stat -c %a "$noacl/netd")" = 750 ]
check "unmount" umount_qtfs "$T/net"
kill "$NET_PID"
check "... and its server stops (it holds the first mount)" wait_gone 100 "$NET_PID"

# -- a server that does not apply the umask ----------------------------------
# Only the MOUNT flags from before QTFS_MNT_UMASK (0x20) reach the server:
# the client must leave the umask to its kernel.
mkdir -p "$T/exp/old"
chmod 777 "$T/exp/old"
start_mitm "$T/mitm.log" --listen "unix:$T/mitm.sock" --upstream "unix:$T/sock" --rate 0 \
	--mount-flags 0x1f
check "mount through a server without UMASK" mount_qtfs "unix:$T/mitm.sock:$T/exp" "$T/old" \
	--key-file "$KEY" -o allow_other
as_nobody sh -c "umask 027; : >'$T/old/old/f'; mkdir '$T/old/old/d'; mkfifo '$T/old/old/p'"
check "a file made by the user gets the umask: $(stat -c %a "$T/exp/old/f")" [ "$(stat -c %a "$T/exp/old/f")" = 640 ]
check "... a directory: $(stat -c %a "$T/exp/old/d")" [ "$(stat -c %a "$T/exp/old/d")" = 750 ]
check "... a FIFO: $(stat -c %a "$T/exp/old/p")" [ "$(stat -c %a "$T/exp/old/p")" = 640 ]
check "... and ACLs are still enforced" reads "$T/old/h"
check "unmount" umount_qtfs "$T/old"
stop_mitm "$T/mitm.log"

check "unmount /proc" umount_qtfs "$T/proc"
check "unmount" umount_qtfs "$T/mnt"
finish
