#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Forgotten directories (docs/fuse-qtfs.md, "Name caching"): the host
# watches every directory the DPU looks a name up in; once the DPU's
# kernel has forgotten one, the client says so (UNWATCH) and the server
# stops watching it, where before it kept the watch for as long as the
# client stayed connected.  Then the same while the DPU looks in those
# directories again and lists them at the same time as its kernel drops
# them: whatever the order the server takes the UNWATCH and those calls
# in, a name the host removes or makes there must show on the DPU once
# entry_timeout has passed (a lost watch with names still cached for
# watch_timeout, or a list of names without its watch, would not).

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"

ndirs=300
mkdir -p "$T/exp/t"
i=1
while [ $i -le $ndirs ]; do
	mkdir "$T/exp/t/d$i"
	: >"$T/exp/t/d$i/f"
	i=$((i + 1))
done
# A procfs inside the export, as a host's / or /run has pseudo file systems.
mkdir -p "$T/exp/proc"
mount -t proc proc "$T/exp/proc" || exit 1
QTFS_MOUNTS="$T/exp/proc"
start_server "$T/server.log" --listen "unix:$T/sock" --export "$T/exp" --key-file "$KEY" || exit 1
check "mount (names cached 30 s where watched, else 1 s)" mount_qtfs "unix:$T/sock:$T/exp" \
	"$T/mnt" --key-file "$KEY" -o watch_timeout=30,entry_timeout=1 2>"$T/client.log"
client=$(pgrep -f -- "$FUSE_QTFS .*$T/mnt\$")

# watched: the server's count of directories it watches (its SIGUSR1 line).
watched() {
	_line=$(usr1_line "$SERVER_PID" "$T/server.log" 'watched directories') || return 1
	printf '%s\n' "$_line" | sed -n 's/.* \([0-9]*\) watched directories.*/\1/p'
}

# The lookups run in a memory cgroup of their own where the machine has
# one to make (v1's memory controller, or v2's with memory.reclaim), so
# that the kernel can be made to drop the names they made (charged to it)
# and no other's: a test running beside this one keeps its caches.
# Elsewhere the whole machine's caches are dropped (drop_caches).
CG=
RECLAIM=
if [ -d /sys/fs/cgroup/memory ] && mkdir "/sys/fs/cgroup/memory/qtfs-unwatch-$$" 2>/dev/null; then
	CG=/sys/fs/cgroup/memory/qtfs-unwatch-$$
	RECLAIM=memory.force_empty
elif [ -f /sys/fs/cgroup/cgroup.subtree_control ] &&
	grep -qw memory /sys/fs/cgroup/cgroup.subtree_control &&
	mkdir "/sys/fs/cgroup/qtfs-unwatch-$$" 2>/dev/null; then
	CG=/sys/fs/cgroup/qtfs-unwatch-$$
	RECLAIM=memory.reclaim
	[ -f "$CG/$RECLAIM" ] || RECLAIM=
fi
echo "names dropped by: ${RECLAIM:-drop_caches} ${CG:+(in $CG)}"
cleanup_more() {
	[ -z "$CG" ] || rmdir "$CG" 2>/dev/null
}

# in_cg CMD...: CMD, in the test's memory cgroup if it has one.
in_cg() {
	if [ -n "$RECLAIM" ]; then
		sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$CG" "$@"
	else
		"$@"
	fi
}

# forget: have the DPU's kernel drop the unused names the lookups made
# (the client then gets FORGETs for the nodes), and give the client's
# UNWATCH (sent 100 ms after the FORGETs) time to reach the server.
forget() {
	sync
	case $RECLAIM in
	memory.force_empty) echo 0 >"$CG/memory.force_empty" ;;
	memory.reclaim) echo 1G >"$CG/memory.reclaim" 2>/dev/null ;;
	*) echo 2 >/proc/sys/vm/drop_caches ;;
	esac
	sleep 0.5
}

few_watched() {
	[ "$(watched)" -le 2 ]
}

none_watched() {
	[ "$(watched)" -eq 0 ]
}

# look_in_all: a lookup in each directory (which has the server watch
# each), in the test's memory cgroup.
look_in_all() {
	in_cg sh -c 'i=1; while [ $i -le $2 ]; do stat "$1/d$i/f" >/dev/null || exit 1; i=$((i + 1)); done' \
		sh "$T/mnt/t" "$ndirs"
}

# all_watched: look in all, and the server watches them all.  (Tried again
# by wait_until: a test beside this one that drops the whole machine's
# caches, as test-qtfs-soak does, may have the kernel forget some of
# them meanwhile.)
all_watched() {
	look_in_all && [ "$(watched)" -gt $ndirs ]
}

wait_until 10 all_watched
n=$(watched)
check "looking in $ndirs directories has the server watch them ($n)" [ "${n:-0}" -gt $ndirs ]
forget
wait_until 5 few_watched
n=$(watched)
check "once the DPU's kernel forgot them, it watches at most 2 ($n: the export's root, t)" \
	[ "${n:-999}" -le 2 ]
check "... the client holds only its root" sh -c "kill -USR1 $client; sleep 0.3;
	grep 'state:' '$T/client.log' | tail -n 1 | grep -q 'state: 1 nodes'"

# unwatched MOUNT LOG: the count of directories MOUNT's client has sent in
# UNWATCH calls (the last figure of its SIGUSR1 line, in LOG).
unwatched() {
	_line=$(usr1_line "$(pgrep -f -- "$FUSE_QTFS .*$1\$")" "$2" 'state:') || return 1
	printf '%s\n' "$_line" | sed -n 's/.*; \([0-9]*\) forgotten directories unwatched.*/\1/p'
}
n=$(unwatched "$T/mnt" "$T/client.log")
check "... having sent UNWATCH for them ($n)" [ "${n:-0}" -ge $ndirs ]
# Not for directories on a pseudo file system inside the export (the
# procfs): the server never watches them, and each UNWATCH on its way
# keeps the answers of the calls meanwhile from being trusted.
looked=$(in_cg sh -c 'n=0; for d in "$1"/[0-9]*/; do stat "$d/status" >/dev/null 2>&1 &&
	n=$((n + 1)); done; echo $n' sh "$T/mnt/proc")
forget
n2=$(unwatched "$T/mnt" "$T/client.log")
check "none for the $looked process directories looked in there, once forgotten ($n, $n2)" \
	sh -c '[ "$1" -ge 20 ] && [ "$2" = "$3" ]' sh "${looked:-0}" "$n" "$n2"
wait_until 10 all_watched
n=$(watched)
check "looking in them again has them watched again ($n)" [ "${n:-0}" -gt $ndirs ]

# drop_args: where the python scripts below write to have the kernel
# drop names, and what (see forget).
drop_args() {
	case $RECLAIM in
	memory.force_empty) echo "$CG/memory.force_empty 0" ;;
	memory.reclaim) echo "$CG/memory.reclaim 1G" ;;
	*) echo "/proc/sys/vm/drop_caches 2" ;;
	esac
}

# Rounds of lookups and listings in every directory while the kernel
# drops them (each drop sends UNWATCHes that race with the next calls in
# the same directories), then host changes in every directory.  (Where
# only the whole machine's caches can be dropped, once a second.)
# shellcheck disable=SC2046 # drop_args is two words on purpose
out=$(in_cg python3 - "$T/exp/t" "$T/mnt/t" $ndirs $(drop_args) <<'PY'
import os, sys, threading, time
host, dpu, n, drop_file, drop_value = sys.argv[1], sys.argv[2], int(sys.argv[3]), *sys.argv[4:6]

def drop():
    try:
        with open(drop_file, "w") as f:
            f.write(drop_value)
    except OSError:
        pass  # memory.reclaim: less than asked could be reclaimed

bad = []
for rnd in range(3):
    stop = threading.Event()
    def dropper():
        while not stop.is_set():
            drop()
            time.sleep(1 if drop_file.startswith("/proc/") else 0.05)
    t = threading.Thread(target=dropper)
    t.start()
    for _ in range(3):
        for i in range(1, n + 1):
            d = "%s/d%d" % (dpu, i)
            os.stat(d + "/f")
            os.listdir(d)
            try:
                os.stat(d + "/g")  # answered from the list where there is one
            except FileNotFoundError:
                pass
    stop.set()
    t.join()
    # Names cached now, some maybe with a watch that an UNWATCH undid.
    for i in range(1, n + 1):
        os.stat("%s/d%d/f" % (dpu, i))
    for i in range(1, n + 1):
        os.unlink("%s/d%d/f" % (host, i))
        open("%s/d%d/g" % (host, i), "w").close()
    time.sleep(1.3)  # past entry_timeout
    for i in range(1, n + 1):
        d = "%s/d%d" % (dpu, i)
        if os.path.exists(d + "/f"):
            bad.append("round %d: d%d/f still there" % (rnd, i))
        if not os.path.exists(d + "/g"):
            bad.append("round %d: d%d/g missing" % (rnd, i))
    for i in range(1, n + 1):
        os.unlink("%s/d%d/g" % (host, i))
        open("%s/d%d/f" % (host, i), "w").close()
    time.sleep(1.3)
print("%d wrong: %s" % (len(bad), "; ".join(bad[:5])))
PY
)
check "while the kernel drops them: host changes seen after entry_timeout ($out)" \
	[ "${out%% *}" = 0 ]
check "the client is still up" kill -0 "$client"
check "unmount" umount_qtfs "$T/mnt"
wait_until 5 none_watched
n=$(watched)
check "after the unmount the server watches nothing ($n)" [ "${n:-999}" -eq 0 ]

# The race on purpose: qtfs-mitm holds every UNWATCH 500 ms on its way to
# the server, and meanwhile the DPU looks in the forgotten directories
# again and lists them.  The server takes those calls in first (its
# answers say the directories are watched), then the UNWATCH, which
# takes their watches away.  The client must not have trusted those
# answers: a name cached for watch_timeout (30 s) would still show once
# the host removed it, and a list started without its watch would hide
# the names the host makes.
. "${top_srcdir:-.}/tests/fs/hostile-env.sh"
start_mitm "$T/mitm.log" --listen "unix:$T/mitm.sock" --upstream "unix:$T/sock" --rate 0 \
	--delay-unwatch 500
check "mount through qtfs-mitm holding each UNWATCH 500 ms" mount_qtfs "unix:$T/mitm.sock:$T/exp" \
	"$T/late" --key-file "$KEY" -o watch_timeout=30,entry_timeout=1 2>"$T/late.log"
# shellcheck disable=SC2046 # drop_args is two words on purpose
out=$(in_cg python3 - "$T/exp/t" "$T/late/t" $ndirs $(drop_args) <<'PY'
import os, sys, time
host, dpu, n, drop_file, drop_value = sys.argv[1], sys.argv[2], int(sys.argv[3]), *sys.argv[4:6]
for i in range(1, n + 1):
    os.stat("%s/d%d/f" % (dpu, i))
os.sync()
try:
    with open(drop_file, "w") as f:
        f.write(drop_value)
except OSError:
    pass  # memory.reclaim: less than asked could be reclaimed
time.sleep(0.25)  # the client's UNWATCH has gone out, and waits in qtfs-mitm
for i in range(1, n + 1):
    d = "%s/d%d" % (dpu, i)
    os.stat(d + "/f")
    os.listdir(d)
time.sleep(0.6)  # the UNWATCH has reached the server
for i in range(1, n + 1):
    os.unlink("%s/d%d/f" % (host, i))
    open("%s/d%d/g" % (host, i), "w").close()
time.sleep(1.3)  # past entry_timeout
bad = []
for i in range(1, n + 1):
    d = "%s/d%d" % (dpu, i)
    if os.path.exists(d + "/f"):
        bad.append("d%d/f still there" % i)
    if not os.path.exists(d + "/g"):
        bad.append("d%d/g missing" % i)
print("%d wrong: %s" % (len(bad), "; ".join(bad[:4])))
PY
)
check "answers that an UNWATCH overtook are not trusted ($out)" [ "${out%% *}" = 0 ]
n=$(server_count UNWATCH)
check "... the server took UNWATCHes in ($n)" [ "${n:-0}" -gt 0 ]
check "unmount" umount_qtfs "$T/late"
stop_mitm "$T/mitm.log"

finish
