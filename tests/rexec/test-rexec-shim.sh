#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Shims and descriptor passing.  `rexec shim install DIR NAME...` makes
# symlinks to rexec; run under such a name, rexec runs that command on the
# host with the same argv, the whole environment and the cwd, and passes
# regular files open at fds >= 3; the command is the name of the symlink
# executed even when the caller sets another argv[0].  --pass-fds does the same for a plain
# rexec: the host re-opens each file at the same number, with the same
# flags and offset (so here, host == this machine, the remote command reads
# from the offset we had, and its appends land in our file).  A file the
# host cannot open makes the exec fail with 124, one outside rexecd's
# pass_fds_allow with 126.
#
# The shims find rexecd through REXEC_HOST and REXEC_KEY_FILE (a shim takes
# no options of its own).  rexecd "h" allows passing files from $T
# (pass_fds_allow); "nofds" has the default, which allows none.

. "${top_srcdir:-.}/tests/rexec/rexec-env.sh"

start_rexecd h "pass_fds_allow=$T" || exit 1
start_rexecd nofds || exit 1
REXEC_HOST=unix:$T/h.sock
REXEC_KEY_FILE=$KEY
export REXEC_HOST REXEC_KEY_FILE
S=$T/shims
mkdir -p "$S"

# -- shim install -------------------------------------------------------------------
check_rc "shim install DIR printenv pwd sh cat" 0 \
	"$REXEC" --config "$CLIENT_CONF" shim install "$S" printenv pwd sh cat "nosuch$$"
self=$(readlink -f "$REXEC")
for n in printenv pwd sh cat; do
	check "... $n is a symlink to rexec" [ "$(readlink "$S/$n")" = "$self" ]
done
check_rc "installing again changes nothing and succeeds" 0 \
	"$REXEC" --config "$CLIENT_CONF" shim install "$S" printenv pwd
echo "not a shim" >"$S/myfile"
check_rc_msg "a file that is not a shim is not replaced" 1 "not a rexec shim" \
	"$REXEC" --config "$CLIENT_CONF" shim install "$S" myfile
check "... and is intact" [ "$(cat "$S/myfile")" = "not a shim" ]
check_rc_msg "a name with a slash is refused" 125 "not a command name" \
	"$REXEC" --config "$CLIENT_CONF" shim install "$S" ../escape
check "... and created nothing outside DIR" [ ! -e "$T/escape" ]
check_rc_msg "shim without install is a usage error" 125 "install" \
	"$REXEC" --config "$CLIENT_CONF" shim list "$S"
cp "$CLIENT_CONF" "$T/shim.conf"
check_rc "NAME=HOSTPATH records the host path in the config" 0 \
	"$REXEC" --config "$T/shim.conf" shim install "$S" "myecho=/usr/bin/echo"
check "... in [shims]" sh -c "grep -q '^\[shims\]' '$T/shim.conf' && grep -qx 'myecho=/usr/bin/echo' '$T/shim.conf'"
check "... and makes the symlink" [ -L "$S/myecho" ]
check_rc_msg "NAME=relative/path is refused" 125 "absolute" \
	"$REXEC" --config "$T/shim.conf" shim install "$S" "bad=bin/echo"

# -- running shims --------------------------------------------------------------------
FOO="bar with spaces $MARK"
export FOO
check "the printenv shim sees the local environment" [ "$("$S/printenv" FOO)" = "$FOO" ]
check "... all of it (our REXEC_HOST too)" [ "$("$S/printenv" REXEC_HOST)" = "$REXEC_HOST" ]
check_rc "... and returns printenv's status for a missing variable" 1 "$S/printenv" "NOSUCH_$$"
unset FOO
check "cd /tmp && the pwd shim prints /tmp" [ "$(cd /tmp && "$S/pwd")" = /tmp ]
mkdir -p "$T/a dir"
check "... and any other cwd" [ "$(cd "$T/a dir" && "$S/pwd")" = "$T/a dir" ]
check "argv goes through intact" [ "$("$S/sh" -c 'printf "%s|" "$@"' zero 'a b' '' "c'd")" = "a b||c'd|" ]
check "argv[0] on the host is the shim's name" [ "$("$S/sh" -c 'echo "$0"')" = sh ]
check "... without the directory it was invoked through" [ "$(sh -c 'exec "$0" -c "echo \"\$0\""' "$S/sh")" = sh ]
check_rc "a shim's exit status is the command's" 3 "$S/sh" -c 'exit 3'
check_rc "a shim for a command the host lacks: 127" 127 "$S/nosuch$$"
printf 'line1\nline2\n' >"$T/in"
check "stdin goes through a shim" [ "$("$S/cat" <"$T/in" | tail -n 1)" = line2 ]
check "umask goes through a shim" [ "$(umask 077 && "$S/sh" -c umask)" = 0077 ]
check "a shim invoked through a relative path works" [ "$(cd "$S" && ./pwd)" = "$S" ]
# The command is the name of the symlink executed, not argv[0], which a
# caller may set to anything; argv[0] still reaches the command (without
# its directory).
check "exec -a weird SHIM: the shim's command runs, with argv[0] weird ($(bash -c 'exec -a weird "$0" -c "echo \"\$0\""' "$S/sh" 2>&1))" \
	[ "$(bash -c 'exec -a weird "$0" -c "echo \"\$0\""' "$S/sh")" = weird ]
check "exec -a rexec SHIM: still a shim, not rexec's own options" \
	[ "$(bash -c 'exec -a rexec "$0" -c "echo \"\$0\""' "$S/sh" 2>&1)" = rexec ]
execv_py='import os, sys
os.execv(sys.argv[1], [sys.argv[2]] + sys.argv[3:])'
check "os.execv with argv[0] /elsewhere/other: printenv runs, argv[0] is other" \
	[ "$(REXEC_T=x /usr/bin/python3 -c "$execv_py" "$S/printenv" /elsewhere/other REXEC_T)" = x ]
check "... through a relative path too" \
	[ "$(cd "$S" && /usr/bin/python3 -c "$execv_py" ./sh /elsewhere/other -c 'echo "$0"')" = other ]
for a0 in '' /usr/bin/; do
	# shellcheck disable=SC2016 # $0 is the inner sh's
	got=$(bash -c 'exec -a "$1" "$0" -c "echo \"[\$0]\""' "$S/sh" "$a0")
	check "exec -a \"$a0\" SHIM: the host's argv[0] is empty too ($got)" [ "$got" = "[]" ]
done

# -- --pass-fds -------------------------------------------------------------------------
printf '0123456789abcdef\n' >"$T/file"
check "--pass-fds: the host reads our fd 3" \
	[ "$(rx h --pass-fds sh -c 'cat <&3' 3<"$T/file")" = 0123456789abcdef ]
check "without --pass-fds, fd 3 is not open on the host" \
	sh -c "! \"\$0\" --config '$CLIENT_CONF' -H 'unix:$T/h.sock' --key-file '$KEY' sh -c 'cat <&3' 3<'$T/file' 2>/dev/null" "$REXEC"
# python3 opens the file and seeks to 5 before exec'ing rexec.
at5=$(python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.lseek(fd, 5, os.SEEK_SET)
if fd != 3:
    os.dup2(fd, 3)
    os.close(fd)
os.set_inheritable(3, True)
os.execv(sys.argv[2], sys.argv[2:])
' "$T/file" "$REXEC" --config "$CLIENT_CONF" -H "unix:$T/h.sock" --key-file "$KEY" --pass-fds sh -c 'cat <&3')
check "... from our file offset (5): $at5" [ "$at5" = 56789abcdef ]
# Open flags go on the wire as the protocol's own values, and only those a
# re-open can use: a file opened with O_NOFOLLOW (and the O_LARGEFILE a
# 64-bit kernel reports for any file) is re-opened through /proc without
# them, and O_APPEND still comes through (the >> check below).
nofollow=$(/usr/bin/python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NOFOLLOW)
os.dup2(fd, 5)
os.execv(sys.argv[2], sys.argv[2:])
' "$T/file" "$REXEC" --config "$CLIENT_CONF" -H "unix:$T/h.sock" --key-file "$KEY" --pass-fds sh -c 'cat <&5' 2>&1)
check "a file opened with O_NOFOLLOW passes: $nofollow" [ "$nofollow" = 0123456789abcdef ]
echo first >"$T/out"
rx h --pass-fds sh -c 'echo appended >&3' 3>>"$T/out"
check "a write fd opened with >> appends on the host" [ "$(cat "$T/out" | tr '\n' ' ')" = "first appended " ]
check "two fds at 3 and 7" [ "$(rx h --pass-fds sh -c 'cat <&3; cat <&7' 3<"$T/file" 7<"$T/in" | tr '\n' ' ')" = "0123456789abcdef line1 line2 " ]
check "a pipe at fd 3 is not passed (only regular files)" \
	sh -c "echo piped | \"\$0\" --config '$CLIENT_CONF' -H 'unix:$T/h.sock' --key-file '$KEY' --pass-fds sh -c 'cat <&3' 3<&0 2>/dev/null; [ \$? -ne 0 ]" "$REXEC"
if [ -e /etc/rexec/client.conf ]; then
	echo "note: /etc/rexec/client.conf exists; not testing the shim_pass_fds default"
else
	check "a shim does not pass fds by default (shim_pass_fds=false)" \
		sh -c "! '$S/sh' -c 'cat <&3' 3<'$T/file' 2>/dev/null"
fi
check_rc_msg "a rexecd without pass_fds_allow refuses --pass-fds: 126" 126 "pass_fds_allow" \
	rx nofds --pass-fds cat /dev/null 3<"$T/file"
check "... and audits it" grep -q "deny peer=unix(uid=0,pid=[0-9]*) cmd=\"cat\": fd 3: passing $T/file is not allowed" "$T/nofds.log"
check_rc "... without --pass-fds the same command runs" 0 rx nofds cat /dev/null 3<"$T/file"
check_rc_msg "a file outside pass_fds_allow is refused: 126" 126 "pass_fds_allow" \
	rx h --pass-fds cat /dev/null 3</etc/hostname
ln -s /etc/hostname "$T/hostname-link"
check_rc "... also when opened through a symlink inside pass_fds_allow" 126 \
	rx h --pass-fds cat /dev/null 3<"$T/hostname-link"
mkdir -p "$T/priv"
check_rc_msg "a passed file the host cannot open: 124" 124 "passed file|re-open" \
	unshare -m sh -c 'mount -t tmpfs none "$1/priv" && echo x >"$1/priv/f" && exec 3<"$1/priv/f" &&
		exec "$2" --config "$3" -H "unix:$1/h.sock" --key-file "$4" --pass-fds -C / cat /dev/null' \
	sh "$T" "$REXEC" "$CLIENT_CONF" "$KEY"
finish
