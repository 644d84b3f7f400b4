# SPDX-License-Identifier: Apache-2.0
#
# Sourced by the command-line tests that need no root and no daemons
# (tests/sim/test-*.sh, tests/autoscale/test-once-cli.sh): a temporary
# directory $tmp removed on exit, failure counting and a command runner.
# Set $cli_test (the test's name) before sourcing.
#
#   fail MSG...          count a failure and say why on stderr
#   expect STATUS CMD... run CMD, stdout in $tmp/out, stderr in $tmp/err,
#                        status in $rc; a failure unless it is STATUS
#   cli_finish OKMSG     exit 1 if anything failed, else print OKMSG

tmp=$(mktemp -d "${TMPDIR:-/tmp}/${cli_test:-cli-test}.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

failures=0
# fail (and ok, check).
. "$(dirname "$0")/../check-env.sh"

expect() {
	want=$1
	shift
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" -eq "$want" ] || fail "$*: exit $rc, expected $want: $(head -c 2000 "$tmp/err")"
}

cli_finish() {
	if [ "$failures" -ne 0 ]; then
		echo "$failures check(s) failed" >&2
		exit 1
	fi
	[ -z "${1:-}" ] || echo "$1"
	exit 0
}
