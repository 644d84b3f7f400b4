#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Directories listed to their end know their names (docs/fuse-qtfs.md,
# "Name caching"): a directory the host made, once the DPU has read a
# listing of it from start to end, answers the lookup of a missing name
# at once, as one the DPU made does, and a create there costs no LOOKUP on
# the host.  What must not go wrong: a name the host makes there later is
# found (its report, or the barrier); a listing not read to the end, or
# during which the DPU made a name there whose report had not come yet,
# starts no list, so that name is still found once the kernel forgets it
# (the host's reports held back 2 s by qtfs-mitm to make that so); a
# pseudo file system never has one.  The server's LOOKUP count (it logs
# its request counts on SIGUSR1) tells whether a lookup crossed the link.
# (Not a stopped server: a stat also refreshes the attributes of the
# directories on its way once attr_timeout has passed, which on a slow
# machine, under CPU emulation, it had.)

. "${top_srcdir:-.}/tests/fs/qtfs-env.sh"
. "${top_srcdir:-.}/tests/fs/hostile-env.sh"

mkdir -p "$T/exp/mem"
mount -t tmpfs tmpfs "$T/exp/mem" || exit 1
QTFS_MOUNTS="$T/exp/mem"
h=$T/exp/mem
start_server "$T/server.log" --listen "unix:$T/sock" --export "$T/exp" --export /proc:ro \
	--key-file "$KEY" || exit 1
skip_without_expire_only "unix:$T/sock:$T/exp" --key-file "$KEY"
check "mount" mount_qtfs "unix:$T/sock:$T/exp" "$T/mnt" --key-file "$KEY" -o timeout=10
d=$T/mnt/mem

# lookup_of PATH: how many LOOKUPs a stat of PATH, which must say "no
# such file", sent to the server (its directory looked up just before,
# so that only PATH's own lookup counts).
lookup_of() {
	stat "$(dirname "$1")" >/dev/null || return 1
	_before=$(server_count LOOKUP) || return 1
	if stat "$1" >"$T/stat.out" 2>&1 || ! grep -q "No such file" "$T/stat.out"; then
		echo "stat $1: $(cat "$T/stat.out")" >&2
		return 1
	fi
	_after=$(server_count LOOKUP) || return 1
	echo $((_after - _before))
}

# answered_here PATH: the stat of the missing PATH is answered without the host.
answered_here() {
	_n=$(lookup_of "$1") && [ "$_n" -eq 0 ]
}

# asks_host PATH: the stat of the missing PATH asks the host.
asks_host() {
	_n=$(lookup_of "$1") && [ "$_n" -ge 1 ]
}

sync_barrier() {
	python3 -c 'import os, sys; os.getxattr(sys.argv[1], "user.qtfs.sync")' "$1"
}

# -- the control: a directory made on the host, not listed -----------------------
mkdir "$h/plain"
touch "$h/plain/a"
stat "$d/plain" >/dev/null
check "control: in a directory made on the host and not listed, a missing name asks the host" \
	asks_host "$d/plain/none"

# -- a listing read to the end -----------------------------------------------------
mkdir "$h/big"
(cd "$h/big" && seq -f n%g 1 3000 | xargs touch)
check "a first listing of 3000 names" sh -c "[ \$(ls '$d/big' | wc -l) -eq 3000 ]"
check "then a missing name there is answered without the host" answered_here "$d/big/none"
check "... and a name listed is there" stat "$d/big/n2999" >/dev/null
before=$(server_count LOOKUP)
(cd "$d/big" && seq -f new%g 1 500 | xargs touch)
after=$(server_count LOOKUP)
check "500 creates there sent no LOOKUP to the host ($before -> $after)" \
	sh -c '[ -n "$1" ] && [ -n "$2" ] && [ "$2" -le $(($1 + 2)) ]' sh "$before" "$after"
check "... and the names made are there, on the host too" \
	sh -c "[ \$(ls '$d/big' | wc -l) -eq 3500 ] && [ \$(ls '$h/big' | wc -l) -eq 3500 ]"
echo x >"$h/big/hostmade"
check "a name the host makes there afterwards is found" within 100 [ -e "$d/big/hostmade" ]
python3 - "$h/big" "$d/big" >"$T/barrier.out" 2>&1 <<'PY'
import os, sys
h, d = sys.argv[1], sys.argv[2]
for i in range(100):
    n = "b%d" % i
    open(os.path.join(h, n), "w").close()
    os.getxattr(d, "user.qtfs.sync")
    os.stat(os.path.join(d, n))
    if i % 2:
        os.rename(os.path.join(h, n), os.path.join(h, "r" + n))
        os.getxattr(d, "user.qtfs.sync")
        os.stat(os.path.join(d, "r" + n))
print("all found")
PY
check "after the barrier, 100 names the host just made or renamed in are found ($(tail -n 1 "$T/barrier.out"))" \
	[ $? -eq 0 ]
check "... and names it did not make are still answered without it" answered_here "$d/big/none2"
rm -r "$h/big/hostmade"

# A subdirectory made on the host inside a listed one is a directory of its
# own: not listed until it is.
mkdir "$h/big/sub"
check "a directory the host made in a listed one is found" within 100 [ -d "$d/big/sub" ]
check "... and is not listed itself" asks_host "$d/big/sub/none"
ls "$d/big/sub" >/dev/null
check "... until it is listed" answered_here "$d/big/sub/none"

# -- a listing not read to the end --------------------------------------------------
mkdir "$h/part"
(cd "$h/part" && seq -f p%g 1 3000 | xargs touch)
python3 - "$d/part" <<'PY'
import os, sys
it = os.scandir(sys.argv[1])
for _ in range(10):
    next(it)
it.close()
PY
check "a listing stopped before the end starts no list" asks_host "$d/part/none"
ls "$d/part" >/dev/null
check "... a whole one does" answered_here "$d/part/none"

# A listing read again from the start (rewinddir) after names came in the
# middle of it: the second reading is whole.
mkdir "$h/rew"
(cd "$h/rew" && seq -f r%g 1 3000 | xargs touch)
python3 - "$d/rew" "$h/rew" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
os.listdir(fd)                      # whole, from the start
os.listdir(fd)                      # again: rewinddir, a new reading
os.close(fd)
PY
check "a listing read twice on one open directory starts a list" answered_here "$d/rew/none"

# -- the race: a name made from here during a listing, its report late ----------------
# qtfs-mitm holds every WATCH reply 2 s: the report of the create below
# comes after the listing has ended.  The list must not start without the
# name; were it to, the kernel, once it forgets the name, would be told it
# is not there.
start_mitm "$T/mitm.log" --listen "unix:$T/late.sock" --upstream "unix:$T/sock" --rate 0 \
	--delay-watch=2000
check "mount through a mitm that holds the host's reports back" \
	mount_qtfs "unix:$T/late.sock:$T/exp" "$T/late" --key-file "$KEY" -o timeout=10
sleep 2.5 # the watch's first reply, held back too
mkdir "$h/race"
(cd "$h/race" && seq -f q%g 1 3000 | xargs touch)
python3 - "$T/late/mem/race" >"$T/race.out" 2>&1 <<'PY'
import os, sys, time
d = sys.argv[1]
keep = os.open(d, os.O_RDONLY | os.O_DIRECTORY)   # the directory stays known
it = os.scandir(d)
names = [next(it).name for _ in range(10)]         # the first READDIRs
open(os.path.join(d, "madehere"), "w").close()     # the DPU's create
names += [e.name for e in it]                      # the rest, to the end
t = time.monotonic()
# forget the name here: unused dentries and inodes go
with open("/proc/sys/vm/drop_caches", "w") as f:
    f.write("2")
found = os.path.exists(os.path.join(d, "madehere"))
print("%d names listed; the name made %s; %.2f s after the listing"
      % (len(names), "found" if found else "NOT FOUND", time.monotonic() - t))
sys.exit(0 if found and time.monotonic() - t < 2 else 1)
PY
check "a name the DPU made during a listing, its report held back, is found once forgotten ($(tail -n 1 "$T/race.out"))" \
	[ $? -eq 0 ]
stat "$T/late/mem/race" >/dev/null
check "... that listing started no list" asks_host "$T/late/mem/race/none"

# -- never on a pseudo file system --------------------------------------------------
check "mount the host's /proc" mount_qtfs "unix:$T/sock:/proc" "$T/proc" --key-file "$KEY" -o timeout=10
ls "$T/proc/self/" >/dev/null
ls "$T/proc" >/dev/null
check "/proc listed: a missing name still asks the host" asks_host "$T/proc/none"

for m in mnt late proc; do
	check "unmount $m" umount_qtfs "$T/$m"
done
finish
