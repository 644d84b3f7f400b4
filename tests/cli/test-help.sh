#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Command-line contract of every program (lib/cli.h): --help prints usage to
# stdout and exits 0, --version names the package and exits 0, and an unknown
# option exits 2 with a message naming it on stderr and nothing on stdout.
# rexec is the one exception: its status is the remote command's, so its
# own usage errors exit 125, as env(1) and nice(1) do.
# Scripts and unit files are written against this, so it holds even for
# programs that are still placeholders.

set -u

top_builddir=${top_builddir:-.}

programs="
fuse-qtfs/qtfs-server
fuse-qtfs/fuse-qtfs
rexecd/rexecd
rexec/rexec
chroot-setup/chroot-setup
autoscale/autoscale
bm/bm-api
bm/bm-controller
bm/bm-handler
bm/bmctl
sim/sim
"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-help.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

failures=0

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

# run PROGRAM ARG: run it, leaving stdout, stderr and the status in $tmp.
run() {
	"$1" "$2" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

for p in $programs; do
	bin=$top_builddir/$p
	name=${p##*/}
	if [ ! -x "$bin" ]; then
		fail "$bin: not built"
		continue
	fi

	run "$bin" --help
	[ "$rc" -eq 0 ] || fail "$p --help: exit status $rc, expected 0"
	grep -q '^Usage:' "$tmp/out" || fail "$p --help: no 'Usage:' line on stdout"

	run "$bin" --version
	[ "$rc" -eq 0 ] || fail "$p --version: exit status $rc, expected 0"
	grep -q "^$name (dpu-offload) " "$tmp/out" ||
		fail "$p --version: stdout is '$(cat "$tmp/out")', expected '$name (dpu-offload) VERSION'"

	usage_rc=2
	[ "$name" = rexec ] && usage_rc=125
	run "$bin" --no-such-option
	[ "$rc" -eq "$usage_rc" ] || fail "$p --no-such-option: exit status $rc, expected $usage_rc"
	[ -s "$tmp/out" ] && fail "$p --no-such-option: wrote to stdout: $(cat "$tmp/out")"
	grep -q -e '--no-such-option' "$tmp/err" ||
		fail "$p --no-such-option: stderr does not name the option: '$(cat "$tmp/err")'"
done

# The daemons with --log-level: an unknown level is a usage error, said
# before anything starts (no socket, no export).
: >"$tmp/empty.conf"
for p in fuse-qtfs/qtfs-server rexecd/rexecd; do
	"$top_builddir/$p" --config "$tmp/empty.conf" --log-level loud >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" -eq 2 ] || fail "$p --log-level loud: exit status $rc, expected 2"
	grep -q 'unknown log level "loud"' "$tmp/err" ||
		fail "$p --log-level loud: stderr is '$(cat "$tmp/err")'"
done

if [ "$failures" -ne 0 ]; then
	echo "$failures check(s) failed" >&2
	exit 1
fi
echo "ok: --help, --version and a bad option behave for every program"
