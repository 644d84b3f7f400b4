# SPDX-License-Identifier: Apache-2.0
#
# Sourced by the rexec integration tests: a private temp dir, a key, a
# helper that starts rexecd with a config file written from its arguments,
# helpers to run the client against it, and a cleanup trap that stops
# every process the test started (servers, background clients, helpers),
# even after a failure, and fails the test if any of them left a sanitizer
# report.  Tests exit 77 (skip) only where the machine cannot
# run them at all: not root (other users, namespaces, /proc of rexecd).
#
# After sourcing:  $T (temp dir, mode 755), $REXEC, $REXECD, $KEY (a valid
# key file), $CLIENT_CONF (an empty client config, so that the machine's
# /etc/rexec/client.conf plays no part), and the functions below.
# SERVER_WRAP / CLIENT_WRAP, when set, prefix the rexecd and rexec commands
# (e.g. "nsenter --net=/run/netns/X" to put them on two "hosts");
# REXECD_TCP_ADDR (default 127.0.0.1) is the address rexecd's TCP listener
# binds.

top_builddir=$(cd "${top_builddir:-.}" && pwd)
top_srcdir=${top_srcdir:-.}
REXEC=$top_builddir/rexec/rexec
REXECD=$top_builddir/rexecd/rexecd
# rexec takes the barrier of every fuse-qtfs mount it sees when a command
# ends (docs/rexec.md): not of the mounts other tests running beside these
# ones make, whose unmount would then find them busy for that moment.
export REXEC_NO_SYNC=1

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: needs root (other users, namespaces, /proc of rexecd)"
	exit 77
fi
for b in "$REXEC" "$REXECD"; do
	if [ ! -x "$b" ]; then
		echo "FAIL: $b not built" >&2
		exit 1
	fi
done
if ! command -v python3 >/dev/null; then
	echo "FAIL: python3 is needed by the rexec tests" >&2
	exit 1
fi

T=$(mktemp -d /tmp/rexec-test.XXXXXX) || exit 1
chmod 755 "$T"
REXECD_PIDS=""
BG_PIDS=""
failures=0
REXECD_TCP_ADDR=${REXECD_TCP_ADDR:-127.0.0.1}

rexec_cleanup() {
	rc=$?
	# Clients first (their sessions end), then rexecd: on SIGTERM it
	# SIGTERMs the process groups it still runs and waits kill_grace.
	for p in $BG_PIDS; do
		kill "$p" 2>/dev/null
	done
	for p in $REXECD_PIDS; do
		kill "$p" 2>/dev/null
	done
	i=0
	while [ $i -lt 60 ]; do
		alive=""
		for p in $REXECD_PIDS $BG_PIDS; do
			kill -0 "$p" 2>/dev/null && alive="$alive $p"
		done
		[ -z "$alive" ] && break
		sleep 0.1
		i=$((i + 1))
	done
	for p in $REXECD_PIDS $BG_PIDS; do
		kill -9 "$p" 2>/dev/null
	done
	# Remote commands the tests started with a marker argument.
	if [ -n "${MARK:-}" ]; then
		pkill -9 -f "$MARK" 2>/dev/null
	fi
	cleanup_more
	sanitizer_found "$T/sanitizer" && rc=1
	rm -rf "$T"
	exit $rc
}
trap rexec_cleanup EXIT
trap 'exit 1' HUP INT TERM

KEY=$T/psk
head -c 48 /dev/urandom | base64 >"$KEY"
chmod 600 "$KEY"
CLIENT_CONF=$T/client.conf
printf '[rexec]\n' >"$CLIENT_CONF"
# A string unique to this run, for the arguments of remote commands that
# the tests look for with pgrep -f (and that cleanup kills).
MARK=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
MARK=7$$.$MARK

# ok, fail, check (and netns_pair); sanitizer reports go to $T/sanitizer.
. "$(dirname "$0")/../check-env.sh"
sanitizer_to "$T/sanitizer"

# check_rc DESCRIPTION WANT CMD...: CMD (stdout in $T/out, stderr in
# $T/err) must exit with status WANT.
check_rc() {
	desc=$1
	want=$2
	shift 2
	"$@" >"$T/out" 2>"$T/err"
	got=$?
	if [ "$got" -eq "$want" ]; then
		ok "$desc (exit $got)"
	else
		fail "$desc: exit $got, expected $want; stderr: $(head -c 600 "$T/err")"
	fi
}

# check_rc_msg DESCRIPTION WANT PATTERN CMD...: as check_rc, and stderr
# must match PATTERN (grep -E -i).
check_rc_msg() {
	desc=$1
	want=$2
	pat=$3
	shift 3
	"$@" >"$T/out" 2>"$T/err"
	got=$?
	if [ "$got" -ne "$want" ]; then
		fail "$desc: exit $got, expected $want; stderr: $(head -c 600 "$T/err")"
	elif ! grep -E -i -q "$pat" "$T/err"; then
		fail "$desc: stderr does not match /$pat/: $(head -c 600 "$T/err")"
	else
		ok "$desc (exit $got: $(grep -E -i -m 1 "$pat" "$T/err"))"
	fi
}

# bg CMD...: start CMD in the background, tracked for cleanup; sets BG_PID.
# CMD may be rx, rxt or rxn (then a rexecd's NAME), or rxu (then a URI,
# with $KEY): BG_PID is then rexec's own pid (a function would run in a
# subshell, and signals sent to it would miss rexec).
# shellcheck disable=SC2086 # CLIENT_WRAP is a command prefix, split on purpose
bg() {
	case $1 in
	rx)
		shift
		bg_name=$1
		shift
		set -- $CLIENT_WRAP "$REXEC" --config "$CLIENT_CONF" -H "unix:$T/$bg_name.sock" --key-file "$KEY" "$@"
		;;
	rxn)
		shift
		bg_name=$1
		shift
		set -- $CLIENT_WRAP "$REXEC" --config "$CLIENT_CONF" -H "unix:$T/$bg_name.sock" "$@"
		;;
	rxt)
		shift
		bg_name=$1
		shift
		set -- $CLIENT_WRAP "$REXEC" --config "$CLIENT_CONF" \
			-H "tcp://$REXECD_TCP_ADDR:$(rexecd_port "$bg_name")" --key-file "$KEY" "$@"
		;;
	rxu)
		shift
		bg_uri=$1
		shift
		set -- $CLIENT_WRAP "$REXEC" --config "$CLIENT_CONF" -H "$bg_uri" --key-file "$KEY" "$@"
		;;
	esac
	# A non-interactive shell starts background jobs with SIGINT and SIGQUIT
	# ignored, and rexec (like any command) keeps what it was started
	# ignoring; give them back, as an interactive shell's job would have them.
	# HUP too, for a run of the tests under nohup(1).
	env --default-signal=INT,QUIT,HUP "$@" &
	BG_PID=$!
	BG_PIDS="$BG_PIDS $BG_PID"
}

# signal_checks WHERE MODE TARGET: through `bg MODE TARGET` (rxt NAME, rxu
# URI...), a USR1 sent to rexec reaches a trap of the remote command
# (exit 7), and a SIGTERM ends rexec with 143 and the remote command with
# it.  WHERE says how in the messages ("across the link").
signal_checks() {
	_sc_where=$1
	shift
	bg "$@" sh -c "trap 'echo got USR1; exit 7' USR1; echo ready; while :; do sleep 0.05; done" >"$T/sig" 2>&1
	_sc_c=$BG_PID
	if wait_until 10 grep -q ready "$T/sig"; then
		kill -USR1 "$_sc_c"
		if wait_gone "$_sc_c" 10; then
			check "USR1 $_sc_where reaches the remote trap (exit $BG_RC)" \
				sh -c "[ $BG_RC -eq 7 ] && grep -qx 'got USR1' '$T/sig'"
		else
			fail "rexec did not end after USR1"
		fi
	else
		fail "remote shell did not start: $(cat "$T/sig")"
	fi

	bg "$@" sleep "${MARK}s"
	_sc_c=$BG_PID
	check "a remote sleep started" wait_until 10 sh -c "pgrep -f '^sleep ${MARK}s\$' >/dev/null"
	kill -TERM "$_sc_c"
	if wait_gone "$_sc_c" 10; then
		check "SIGTERM to rexec: exit 143 (got $BG_RC)" [ "$BG_RC" -eq 143 ]
	else
		fail "rexec did not end after SIGTERM"
	fi
	check "... and the remote sleep is gone" wait_until 3 sh -c "! pgrep -f '^sleep ${MARK}s\$' >/dev/null"
}

# wait_gone PID SECONDS: wait until PID has exited (it must be a child of
# the shell: its status lands in BG_RC).  1 on timeout.
wait_gone() {
	if ! wait_until "$2" sh -c "! kill -0 $1 2>/dev/null || grep -q '^[^ ]* ([^)]*) Z' /proc/$1/stat 2>/dev/null"; then
		return 1
	fi
	wait "$1"
	# shellcheck disable=SC2034 # read by the tests that source this file
	BG_RC=$?
	return 0
}

random_port() {
	echo $((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 40000))
}

# start_rexecd NAME [KEY=VALUE]... [-- REXECD_ARG...]: write $T/NAME.conf
# ([rexecd] and the KEY=VALUE lines; allow_all=true unless a whitelist or
# allow_all is given; kill_grace=2s unless given) and start rexecd with it,
# listening on unix:$T/NAME.sock and tcp://$REXECD_TCP_ADDR:PORT with $KEY,
# -v, its log in $T/NAME.log.  The pseudo-key tcp=no (not written to the
# config) leaves out the TCP listener and the key, for clients without
# one.  A server with a key wants it on the unix socket too (rx passes
# it).  Waits until the listeners are up.  Sets
# REXECD_PID, REXECD_PORT and REXECD_SOCK, and writes $T/NAME.pid and
# $T/NAME.port.  Ports are picked at random and retried when taken.
start_rexecd() {
	_sr_name=$1
	shift
	_sr_conf=$T/$_sr_name.conf
	printf '[rexecd]\n' >"$_sr_conf"
	_sr_has_policy=no
	_sr_has_grace=no
	_sr_tcp=yes
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do
		case $1 in
		tcp=no)
			_sr_tcp=no
			shift
			continue
			;;
		whitelist=* | allow_all=*) _sr_has_policy=yes ;;
		kill_grace=*) _sr_has_grace=yes ;;
		esac
		printf '%s\n' "$1" >>"$_sr_conf"
		shift
	done
	[ "${1:-}" = "--" ] && shift
	[ $_sr_has_policy = no ] && echo "allow_all=true" >>"$_sr_conf"
	[ $_sr_has_grace = no ] && echo "kill_grace=2s" >>"$_sr_conf"
	REXECD_SOCK=$T/$_sr_name.sock
	_sr_log=$T/$_sr_name.log
	_sr_tries=0
	while [ $_sr_tries -lt 10 ]; do
		_sr_tries=$((_sr_tries + 1))
		REXECD_PORT=$(random_port)
		rm -f "$REXECD_SOCK"
		: >"$_sr_log"
		if [ $_sr_tcp = yes ]; then
			set -- --listen "tcp://$REXECD_TCP_ADDR:$REXECD_PORT" --key-file "$KEY" "$@"
			_sr_want=2
		else
			REXECD_PORT=none
			_sr_want=1
		fi
		# shellcheck disable=SC2086 # SERVER_WRAP is a command prefix, split on purpose
		$SERVER_WRAP "$REXECD" --config "$_sr_conf" --listen "unix:$REXECD_SOCK" -v "$@" \
			>>"$_sr_log" 2>&1 &
		REXECD_PID=$!
		REXECD_PIDS="$REXECD_PIDS $REXECD_PID"
		[ $_sr_tcp = yes ] && shift 4
		_sr_i=0
		while [ $_sr_i -lt 200 ]; do
			if [ "$(grep -c "listening on" "$_sr_log" 2>/dev/null)" -ge $_sr_want ] && [ -S "$REXECD_SOCK" ]; then
				echo "$REXECD_PID" >"$T/$_sr_name.pid"
				echo "$REXECD_PORT" >"$T/$_sr_name.port"
				return 0
			fi
			if ! kill -0 "$REXECD_PID" 2>/dev/null; then
				break
			fi
			sleep 0.05
			_sr_i=$((_sr_i + 1))
		done
		if kill -0 "$REXECD_PID" 2>/dev/null; then
			echo "rexecd $_sr_name did not start listening:" >&2
			cat "$_sr_log" >&2
			return 1
		fi
		# Exited: try another port if this one was taken, else give up.
		if [ $_sr_tcp = no ] || ! grep -q -i "in use" "$_sr_log"; then
			echo "rexecd $_sr_name exited:" >&2
			cat "$_sr_log" >&2
			return 1
		fi
	done
	echo "rexecd $_sr_name: no free port after $_sr_tries tries" >&2
	return 1
}

# stop_rexecd NAME: SIGTERM it and wait until it is gone (at most 10 s).
stop_rexecd() {
	_st_p=$(cat "$T/$1.pid")
	kill "$_st_p" 2>/dev/null
	wait_until 10 sh -c "! kill -0 $_st_p 2>/dev/null"
	wait "$_st_p" 2>/dev/null
	return 0
}

rexecd_pid() {
	cat "$T/$1.pid"
}

rexecd_port() {
	cat "$T/$1.port"
}

rexecd_alive() {
	kill -0 "$(rexecd_pid "$1")" 2>/dev/null
}

# rx NAME ARG...: the client against rexecd NAME's unix socket, with $KEY.
rx() {
	rx_name=$1
	shift
	# shellcheck disable=SC2086 # CLIENT_WRAP is a command prefix, split on purpose
	$CLIENT_WRAP "$REXEC" --config "$CLIENT_CONF" -H "unix:$T/$rx_name.sock" --key-file "$KEY" "$@"
}

# rxn NAME ARG...: the client against rexecd NAME's unix socket, no key
# (for a rexecd started with tcp=no).
rxn() {
	rx_name=$1
	shift
	# shellcheck disable=SC2086 # CLIENT_WRAP is a command prefix, split on purpose
	$CLIENT_WRAP "$REXEC" --config "$CLIENT_CONF" -H "unix:$T/$rx_name.sock" "$@"
}

# rxt NAME ARG...: the client against rexecd NAME's TCP listener, with $KEY.
rxt() {
	rx_name=$1
	shift
	# shellcheck disable=SC2086 # CLIENT_WRAP is a command prefix, split on purpose
	$CLIENT_WRAP "$REXEC" --config "$CLIENT_CONF" -H "tcp://$REXECD_TCP_ADDR:$(rexecd_port "$rx_name")" \
		--key-file "$KEY" "$@"
}

# The number of open descriptors of a process.
fd_count() {
	ls "/proc/$1/fd" 2>/dev/null | wc -l
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
