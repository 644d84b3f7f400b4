# SPDX-License-Identifier: Apache-2.0
#
# Sourced by the tests and benchmarks that talk to a real OpenSSH server.
#
# start_test_sshd PREFIX [CONFIG-LINE]...
#   Starts /usr/sbin/sshd (or $SSHD) through tests/clean-sshd.sh on
#   127.0.0.1 and a free high port, with PREFIX.config, PREFIX.log and
#   PREFIX.pid, the settings every test wants (public-key authentication
#   only, root allowed with a key, no PAM, no strict modes) and the
#   caller's CONFIG-LINEs (HostKey, AuthorizedKeysFile, AcceptEnv...).
#   Random ports are tried: `sshd -D -e` exits at once when its port is
#   taken, and is ready once its log says it listens.  Sets SSHD_PORT and
#   SSHD_PID (the caller stops it); on failure prints sshd's last words
#   and returns 1.  Needs /run/sshd, which it creates.

start_test_sshd() {
	_prefix=$1
	shift
	mkdir -p /run/sshd
	SSHD_PORT=
	SSHD_PID=
	for _ in 1 2 3 4 5 6 7 8; do
		_p=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 40000))
		{
			cat <<CONF
ListenAddress 127.0.0.1
Port $_p
PidFile $_prefix.pid
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
StrictModes no
UsePAM no
CONF
			printf '%s\n' "$@"
		} >"$_prefix.config"
		"$(dirname "$0")/../clean-sshd.sh" "${SSHD:-/usr/sbin/sshd}" -D -e -f "$_prefix.config" \
			2>"$_prefix.log" &
		_pid=$!
		for _ in $(seq 50); do
			kill -0 "$_pid" 2>/dev/null || break
			grep -q "Server listening" "$_prefix.log" && break
			sleep 0.1
		done
		if kill -0 "$_pid" 2>/dev/null && grep -q "Server listening" "$_prefix.log"; then
			SSHD_PORT=$_p
			SSHD_PID=$_pid
			return 0
		fi
		wait "$_pid" 2>/dev/null
	done
	echo "FAIL: sshd did not start; its last words:" >&2
	cat "$_prefix.log" >&2
	return 1
}
