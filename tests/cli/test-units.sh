#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# The daemons' systemd units (contrib/systemd), as make built them: no
# template word is left, ExecStart names the program where make install
# puts it ($sbindir or $bindir, from the build's configuration), the
# program takes the unit's options (run with them and --help: exit 0, where
# an option it does not know exits 2), and systemd-analyze verify finds
# nothing to say of the unit (its ExecStart pointed at the built program,
# which is what verify looks for on disk).

top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
cli_test=test-units
. "$top_srcdir/tests/cli-env.sh"

: "${sbindir:?the test needs sbindir and bindir from make}" "${bindir:?}"

units="qtfs-server rexecd bm-api bm-controller bm-handler autoscale"

# built PROGRAM: where the build tree has it.
built() {
	for _p in fuse-qtfs/qtfs-server rexecd/rexecd bm/bm-api bm/bm-controller bm/bm-handler \
		autoscale/autoscale; do
		[ "${_p##*/}" = "$1" ] && echo "$top_builddir/$_p" && return 0
	done
	return 1
}

analyze=$(command -v systemd-analyze) || echo "systemd-analyze not installed: units not verified by systemd"
for u in $units; do
	f=$top_builddir/contrib/systemd/$u.service
	if [ ! -f "$f" ]; then
		fail "$u.service was not built"
		continue
	fi
	grep -n '@[A-Za-z_]*@' "$f" >"$tmp/left" && fail "$u.service keeps template words: $(cat "$tmp/left")"
	# ExecStart with its continuation lines joined, as systemd reads it.
	exec_line=$(awk '/^ExecStart=/ { on = 1 } on { more = sub(/\\$/, ""); printf "%s ", $0; if (!more) exit }' "$f" |
		tr '\t' ' ')
	exec_line=${exec_line#ExecStart=}
	# shellcheck disable=SC2086 # the command line, split as systemd splits it (no quotes in ours)
	set -- $exec_line
	prog=$1
	shift
	name=${prog##*/}
	case $prog in
	"$sbindir/$name" | "$bindir/$name") ;;
	*) fail "$u.service: ExecStart runs $prog, not a program in $sbindir or $bindir" ;;
	esac
	if ! bin=$(built "$name"); then
		fail "$u.service: ExecStart runs $name, which the build does not make"
		continue
	fi
	expect 0 "$bin" "$@" --help
	if [ -n "$analyze" ]; then
		# verify wants the program on disk and reads man pages unless told not to.
		sed "s|^ExecStart=$prog|ExecStart=$(cd "$(dirname "$bin")" && pwd)/$name|" "$f" >"$tmp/$u.service"
		"$analyze" verify --man=no "$tmp/$u.service" >"$tmp/verify" 2>&1 ||
			fail "$u.service: systemd-analyze verify failed: $(cat "$tmp/verify")"
		[ -s "$tmp/verify" ] && fail "$u.service: systemd-analyze verify says: $(cat "$tmp/verify")"
	fi
done

cli_finish "systemd units: $(echo $units | wc -w) checked"
