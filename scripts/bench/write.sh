#!/usr/bin/env bash
# Write benchmark (issue 4): `cp -a` of a folder of N new Milestone object folders (default 10,000;
# keys 100001.., each with title, dueDate, done) into a read-write mount of a 10,000-object sample store,
# plus the time until it is committed (fsync of the entity folder, then unmount until the server has
# exited), against the same `cp -a` into a tmpfs directory and into the FUSE floor (fuse-floor: an
# in-memory tree served through FuseKit, what any FUSE filesystem pays here) in the same run. Checks
# with sqlite3 that the rows are in ZMILESTONE and reports the number of commits. Then 100 edits of
# one value each with echo, sed -i and vim, against the same edits of a file on tmpfs and on the floor.
#
# Usage: scripts/bench/write.sh [N] [EDITS]     (defaults 10000 100)
# Environment: STOREFS=path/to/storefs skips the build; FLOOR=path/to/fuse-floor (else the one beside
# STOREFS, else built).
set -euo pipefail
NAME=write.sh
source "$(dirname "$0")/common.sh"
N=${1:-10000}
EDITS=${2:-100}
FIRST=100001

need sqlite3 sqlite3; need getfattr attr; need fusermount3 fuse3; need python3 python3; need vim vim
use_floor

bench_workspace 1g

ms() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", (b - a) / 1000}'; }
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

echo "== storefs write benchmark: $N new objects, $EDITS edits ($(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo "binary: $STOREFS"
store="$WORK/W.sqlite"
"$STOREFS" sample --objects 10000 "$store" >/dev/null
before=$(sqlite3 "$store" "SELECT count(*) FROM ZMILESTONE")

# the input: N object folders on tmpfs
IN="$TMPFS/in"; mkdir -p "$IN"
for ((k = FIRST; k < FIRST + N; k++)); do
  mkdir "$IN/p$k"
  printf 'Milestone %d\n' "$k" >"$IN/p$k/title"
  printf '2024-05-%02dT12:00:00Z\n' $((k % 28 + 1)) >"$IN/p$k/dueDate"
  if ((k % 2)); then echo true; else echo false; fi >"$IN/p$k/done"
done

# baseline: the same cp -a into a tmpfs directory
mkdir -p "$TMPFS/out1" "$TMPFS/out2"
cp -a "$IN/." "$TMPFS/out1/"            # warm-up of the source's pages and dentries
t0=$(now_us); cp -a "$IN/." "$TMPFS/out2/"; sync -f "$TMPFS/out2"; t1=$(now_us)
tmp_cp=$(ms "$t0" "$t1")

# the FUSE floor: the same cp -a into an empty fuse-floor mount, over io_uring (as storefs's, where
# the kernel offers it), then over /dev/fuse
mkdir -p "$WORK/empty"
floor_cp_into() { # floor_cp_into [--no-io-uring]: prints ms
  mount_floor "$@" "$WORK/empty"; mkdir "$FLOOR_MNT/Milestone"
  local t0 t1
  t0=$(now_us)
  cp -a "$IN/." "$FLOOR_MNT/Milestone/" 2>"$WORK/floor-cp.err" || { echo "cp -a into the floor failed:"; sort "$WORK/floor-cp.err" | uniq -c | head -5; } >&2
  sync -f "$FLOOR_MNT/Milestone"; t1=$(now_us)
  unmount_floor
  ms "$t0" "$t1"
}
floor_cp=$(floor_cp_into)
floor_dev_cp=$(floor_cp_into --no-io-uring)

# storefs: cp -a, fsync of the entity folder (commits everything pending), unmount until the server exits
"$STOREFS" mount "$store" "$MNT" --log-file "$WORK/mount.log"
s0=$(stats)
t0=$(now_us)
cp -a "$IN/." "$MNT/Milestone/" 2>"$WORK/cp.err" || { echo "cp -a into the mount failed:"; sort "$WORK/cp.err" | uniq -c | head -5; }
t1=$(now_us)
sync "$MNT/Milestone"
t2=$(now_us)
s1=$(stats)
unmount_store
t3=$(now_us)
after=$(sqlite3 "$store" "SELECT count(*) FROM ZMILESTONE")
new=$(sqlite3 "$store" "SELECT count(*) FROM ZMILESTONE WHERE Z_PK >= $FIRST AND Z_PK < $FIRST + $N")
sample=$(sqlite3 "$store" "SELECT ZTITLE || ' | ' || ZDONE FROM ZMILESTONE WHERE Z_PK = $FIRST" 2>&1 || true)
st_cp=$(ms "$t0" "$t1"); st_sync=$(ms "$t1" "$t2"); st_umount=$(ms "$t2" "$t3"); st_all=$(ms "$t0" "$t3")

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a/b}'; }
printf '\n%-40s %12s %12s %12s\n' "cp -a of $N object folders" "ms" "x tmpfs" "x floor"
printf '%-40s %12s %12s %12s\n' "tmpfs (cp -a + sync -f)" "$tmp_cp" "1.00" "$(ratio "$tmp_cp" "$floor_cp")"
printf '%-40s %12s %12s %12s\n' "FUSE floor (cp -a + sync -f)" "$floor_cp" "$(ratio "$floor_cp" "$tmp_cp")" "1.00"
printf '%-40s %12s %12s %12s\n' "FUSE floor over /dev/fuse" "$floor_dev_cp" "$(ratio "$floor_dev_cp" "$tmp_cp")" "$(ratio "$floor_dev_cp" "$floor_cp")"
for row in "storefs cp -a:$st_cp" "storefs fsync (commit):$st_sync" "storefs unmount until exit:$st_umount" "storefs total:$st_all"; do
  printf '%-40s %12s %12s %12s\n' "${row%%:*}" "${row##*:}" "$(ratio "${row##*:}" "$tmp_cp")" "$(ratio "${row##*:}" "$floor_cp")"
done
echo "ZMILESTONE rows: $before before, $after after ($((after - before)) added; $new with keys $FIRST..$((FIRST + N - 1)); expected $N)"
echo "row p$FIRST: $sample"
echo "commits during cp -a + fsync: $(stat_between commits "$s0" "$s1"); storeRequests $(stat_between storeRequests "$s0" "$s1")"
fuse_ops_between "$s0" "$s1"

# edits of one value: echo >, sed -i, vim; on storefs (Department/p1/name) and on a tmpfs file
"$STOREFS" mount "$store" "$MNT" --log-file "$WORK/mount.log"
F="$MNT/Department/p1/name"; T="$TMPFS/name"
[ -f "$F" ] || { echo "write.sh: $F does not exist" >&2; exit 1; }
cp "$F" "$T"
mkdir -p "$WORK/one"; cp "$F" "$WORK/one/name"; L="$FLOOR_MNT/name"
# Writable copies, as the mount's file is: a read-only one made `vim -es … -c wq` write nothing, so
# the floor's vim figure measured no edit at all.
chmod 644 "$T" "$WORK/one/name"
edit() { # edit TOOL FILE: EDITS edits, prints ms
  local t0 t1 i
  t0=$(now_us)
  for ((i = 1; i <= EDITS; i++)); do
    case $1 in
      echo) echo "value $i" >"$2";;
      sed) sed -i "s/.*/sed $i/" "$2";;
      vim) vim -u NONE -i NONE -N -n -es -c "s/.*/vim $i/" -c wq "$2";;
    esac
  done
  t1=$(now_us)
  ms "$t0" "$t1"
}
s0=$(stats)
printf '\n%-28s %12s %12s %12s %12s %10s %10s %10s %16s\n' "$EDITS edits of one value" "storefs ms" "tmpfs ms" "floor ms" \
  "per edit ms" "x tmpfs" "x floor" "floor/tmpfs" "floor /dev/fuse"
# the floor's edits: over io_uring, then over /dev/fuse (one mount each)
declare -A floor_edit floor_dev_edit
mount_floor "$WORK/one"
for tool in echo sed vim; do floor_edit[$tool]=$(edit "$tool" "$L"); done
floor_value=$(cat "$L"); unmount_floor
mount_floor --no-io-uring "$WORK/one"
for tool in echo sed vim; do floor_dev_edit[$tool]=$(edit "$tool" "$L"); done
unmount_floor
for tool in echo sed vim; do
  a=$(edit "$tool" "$F"); b=$(edit "$tool" "$T"); c=${floor_edit[$tool]}; d=${floor_dev_edit[$tool]}
  printf '%-28s %12s %12s %12s %12s %10s %10s %10s %16s\n' "$tool" "$a" "$b" "$c" "$(awk -v a="$a" -v n="$EDITS" 'BEGIN {printf "%.2f", a/n}')" \
    "$(ratio "$a" "$b")" "$(ratio "$a" "$c")" "$(ratio "$c" "$b")" "$d ($(ratio "$d" "$b")x)"
done
echo "value now: $(cat "$F") (tmpfs: $(cat "$T"); floor: $floor_value)"
grep -h "requests came through" "$WORK/floor.log" | sort | uniq -c | sed 's/^/floor: /'
grep -ho "FUSE requests of .* arrive through [^ ]*" "$WORK/mount.log" | sed 's/ of [^ ]* / /' | sort | uniq -c | sed 's/^/storefs: /' || true
sync "$F"; s1=$(stats)
unmount_store
echo "stored: $(sqlite3 "$store" "SELECT ZNAME FROM ZDEPARTMENT WHERE Z_PK = 1" 2>&1)"
echo "commits during the edits: $(stat_between commits "$s0" "$s1")"
fuse_ops_between "$s0" "$s1"
if grep -qiE 'error|warn|fail' "$WORK/mount.log"; then echo "mount log (tail):"; tail -5 "$WORK/mount.log"; fi
echo "floor's FUSE operations, per mount (cp -a over io_uring, over /dev/fuse; edits over io_uring, over /dev/fuse):"
grep -h "FUSE operations" "$WORK/floor.log" | sed 's/^fuse-floor: /  /'
