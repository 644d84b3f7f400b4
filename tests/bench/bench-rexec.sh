#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# rexec benchmark, side by side in one run on loopback: a local fork+exec,
# rexec through rexecd over tcp (with a key) and over a unix socket,
# rexec --ssh and ssh(1) through a local sshd with generated keys.  Prints
# p50/p99 latency of running /bin/true and the stdout throughput of cat of
# a SIZE MiB file (to /dev/null), with ratios against the local run and
# against raw loopback TCP.  Asserts nothing (a benchmark, not a test).
#
# Usage: sh tests/bench/bench-rexec.sh [SIZE-MIB] [RUNS]   (default 1024, 300)
# Every command is started the same way (python3's subprocess, timed from
# spawn to exit), so the launcher's own cost is in every row equally, and
# the modes take turns run by run, so drift in the machine's load hits them
# alike.  The two SSH modes, 100x slower, run max(20, RUNS/10) times.

set -u
top_builddir=$(cd "${top_builddir:-.}" && pwd)
size=${1:-1024}
runs=${2:-300}
REXECD=$top_builddir/rexecd/rexecd
REXEC=$top_builddir/rexec/rexec
PY=${PYTHON:-python3}

[ "$(id -u)" -eq 0 ] || { echo "bench-rexec: needs root (sshd)" >&2; exit 1; }
T=$(mktemp -d /tmp/bench-rexec.XXXXXX)
PIDS=
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

freeport() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

(umask 077 && head -c 48 /dev/urandom | base64 >"$T/psk")
printf '/usr/bin/true\n/usr/bin/cat\n' >"$T/whitelist"
printf '[rexecd]\nwhitelist=%s\n' "$T/whitelist" >"$T/rexecd.conf"
port=$(freeport)
"$REXECD" --config "$T/rexecd.conf" --listen "tcp://127.0.0.1:$port" --listen "unix:$T/sock" \
	--key-file "$T/psk" --log-level warn >"$T/rexecd.log" 2>&1 &
PIDS="$PIDS $!"

mkdir -p "$T/home/.ssh"
ssh-keygen -q -t ed25519 -N '' -f "$T/hostkey" && ssh-keygen -q -t ed25519 -N '' -f "$T/id"
cp "$T/id.pub" "$T/authorized_keys"
. "$(dirname "$0")/../sshd-env.sh"
start_test_sshd "$T/sshd" "HostKey $T/hostkey" "AuthorizedKeysFile $T/authorized_keys" || exit 1
PIDS="$PIDS $SSHD_PID"
sport=$SSHD_PORT
printf '[127.0.0.1]:%s %s\n' "$sport" "$(cut -d' ' -f1,2 "$T/hostkey.pub")" >"$T/home/.ssh/known_hosts"
head -c $((size * 1048576)) /dev/urandom >"$T/big"

export T size runs port sport REXEC PY
HOME=$T/home $PY - <<'EOF2'
import os, socket, subprocess, threading, time

T, size, runs = os.environ["T"], int(os.environ["size"]), int(os.environ["runs"])
port, sport, rexec = os.environ["port"], os.environ["sport"], os.environ["REXEC"]
big = T + "/big"
key = ["--key-file", T + "/psk"]
ssh = ["ssh", "-q", "-o", "BatchMode=yes", "-o", "IdentityFile=" + T + "/id",
       "-o", "UserKnownHostsFile=" + T + "/home/.ssh/known_hosts", "-p", sport, "root@127.0.0.1"]
modes = [
    ("local fork+exec", []),
    ("rexec unix", [rexec, "-H", "unix:" + T + "/sock"] + key),
    ("rexec tcp", [rexec, "-H", "tcp://127.0.0.1:" + port] + key),
    ("rexec --ssh", [rexec, "--ssh", "root@127.0.0.1:" + sport, "-i", T + "/id"]),
    ("ssh", ssh),
]

def timed(argv, stdout=subprocess.DEVNULL):
    t = time.perf_counter()
    r = subprocess.run(argv, stdout=stdout, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise SystemExit("bench-rexec: %s exited %d" % (" ".join(argv), r.returncode))
    return time.perf_counter() - t

def raw_tcp():
    # Baseline: what `cat FILE` into a TCP socket and a reader dropping it
    # would do, with plain read/send and recv (no sendfile, which skips the
    # copy every relay must make): 1 MiB at a time over one loopback TCP
    # connection, as the transport benchmark's raw-TCP baseline does.
    srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
    def send():
        c = socket.create_connection(srv.getsockname())
        buf = bytearray(1 << 20)
        with open(big, "rb", buffering=0) as f:
            while True:
                n = f.readinto(buf)
                if not n:
                    break
                c.sendall(memoryview(buf)[:n])
        c.close()
    t = time.perf_counter()
    th = threading.Thread(target=send); th.start()
    c, _ = srv.accept(); buf = bytearray(1 << 20); n = 0
    while True:
        k = c.recv_into(buf)
        if not k:
            break
        n += k
    th.join()
    return time.perf_counter() - t

print("rexec benchmark: %d runs of /bin/true, cat of %d MiB to /dev/null" % (runs, size))
print("%-18s %9s %9s %9s %12s %9s" % ("mode", "p50 ms", "p99 ms", "p50-local", "cat MiB/s", "vs TCP"))
base = None
tcp = size / raw_tcp()
# Round robin, so that drift in the machine's load hits every mode alike.
lats = {name: [] for name, _ in modes}
slow = {"rexec --ssh", "ssh"}
for i in range(runs):
    for name, pre in modes:
        if name not in slow or i < max(20, runs // 10):
            lats[name].append(timed(pre + ["/bin/true"]))
for name, pre in modes:
    lat = sorted(lats[name])
    p50, p99 = lat[len(lat) // 2] * 1e3, lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1e3
    if base is None:
        base = p50
    thr = size / min(timed(pre + ["cat", big]) for _ in range(2))
    print("%-18s %9.3f %9.3f %+9.3f %12.0f %8.2fx" % (name, p50, p99, p50 - base, thr, thr / tcp))
print("%-18s %9s %9s %9s %12.0f %8.2fx" % ("raw loopback TCP", "-", "-", "-", tcp, 1.0))
EOF2
