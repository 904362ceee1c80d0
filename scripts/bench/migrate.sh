#!/usr/bin/env bash
# Issue 5's figures: objects per second of `storefs migrate` between each pair of file types on a
# sample store, load time (`storefs info`, which opens the store), time until a read-only mount
# answers, and file size of each type, and
# `cp -a` migration of a smaller store into an empty mount against `cp -a` of the same tree into
# tmpfs (the baseline, measured in the same run), and SQLite inserting the sample's rows itself
# (scripts/bench/sqlite_insert.py) beside `storefs sample`. Prints figures; asserts nothing.
#
# Usage: scripts/bench/migrate.sh [OBJECTS] [COPY_OBJECTS]     (default 1000000 10000; OBJECTS 0
# runs the cp -a part only)
# STOREFS=/path/to/storefs to use a built binary; otherwise builds release.
set -euo pipefail
objects=${1:-1000000}
copy_objects=${2:-10000}
cd "$(dirname "$0")/../.."
export PATH="/opt/swift/usr/bin:$PATH"
if [ -z "${STOREFS:-}" ]; then
  swift build -c release --product storefs >/dev/null
  STOREFS="$(swift build -c release --show-bin-path)/storefs"
fi
[ -x /usr/bin/time ] || apt-get install -y -qq time >/dev/null
echo "== storefs migrate benchmark ($(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
work=$(mktemp -d /tmp/storefs-bench-migrate.XXXXXX)
cleanup() {
  for m in "$work"/src "$work"/dst "$work"/tmpfs; do
    mountpoint -q "$m" 2>/dev/null && { fusermount3 -u "$m" 2>/dev/null || umount "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; }
  done
  sleep 0.5
  # never through a mount that is still there (a busy one detached lazily above)
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

seconds() { python3 -c "import sys,time; print(f'{time.time():.3f}')"; }
elapsed() { python3 -c "print(f'{$2 - $1:.2f}')"; }

echo "storefs: $STOREFS"
if [ "$objects" -gt 0 ]; then
echo "== sample store of $objects objects"
t0=$(seconds); "$STOREFS" sample --objects "$objects" "$work/S.sqlite" >/dev/null; t1=$(seconds)
python3 -c "print(f'sample: {$t1 - $t0:.2f} s, {$objects / ($t1 - $t0):,.0f} objects/s')"
# The reference: SQLite inserting the same rows itself (prepared statements, one transaction).
read -r ref_seconds ref_rows < <(python3 scripts/bench/sqlite_insert.py "$work/S.sqlite" "$work/reference.sqlite")
python3 -c "print(f'SQLite inserting the same {$ref_rows:,} rows: {$ref_seconds:.2f} s, {$objects / $ref_seconds:,.0f} objects/s; sample / SQLite: {($t1 - $t0) / $ref_seconds:.2f}x')"
rm -f "$work"/reference.sqlite*

printf "\n%-22s %10s %14s\n" "migration" "seconds" "objects/s"
migrate() {
  local from=$1 to=$2
  local t0 t1
  t0=$(seconds); "$STOREFS" migrate "$work/S.$from" "$work/S.$to" >/dev/null; t1=$(seconds)
  python3 -c "print(f'{\"$from -> $to\":22} {$t1 - $t0:10.2f} {$objects / ($t1 - $t0):14,.0f}')"
}
migrate sqlite xml
migrate sqlite binary
rm "$work/S.binary"; migrate xml binary
rm "$work/S.xml"; migrate binary xml
mv "$work/S.sqlite" "$work/orig.sqlite"
migrate xml sqlite; rm "$work/S.sqlite"
migrate binary sqlite

# Seconds from starting a read-only mount of $1 until the mount point answers, and the server's
# RSS (KiB) then: what a user waits for before `ls` works.
mount_time() {
  local start end pid rss
  mkdir -p "$work/src"
  start=$(date +%s%N)
  "$STOREFS" mount --foreground -o ro "$1" "$work/src" >/dev/null 2>"$work/mount.log" &
  pid=$!
  # A stat of a mount whose server hangs would block: each check is bounded, the wait too (10 min).
  until timeout 10 mountpoint -q "$work/src"; do
    if ! kill -0 "$pid" 2>/dev/null || (( $(date +%s%N) - start > 600000000000 )); then
      echo "mount of $1 did not answer:" >&2; cat "$work/mount.log" >&2; kill "$pid" 2>/dev/null; return 1
    fi
    sleep 0.02
  done
  end=$(date +%s%N)
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
  fusermount3 -u "$work/src"
  wait "$pid" || true
  echo "$(( (end - start) / 1000000 )) $rss"
}

printf "\n%-8s %12s %16s %14s %12s %10s %16s\n" "type" "MiB" "info (load) s" "peak RSS MiB" "RSS/file" "mount s" "mounted RSS MiB"
for type in sqlite xml binary; do
  size=$(stat -c %s "$work/S.$type")
  /usr/bin/time -f "%e %M" -o "$work/info.time" "$STOREFS" info "$work/S.$type" >/dev/null
  read -r secs rss_kb <"$work/info.time"
  read -r mount_ms mount_rss_kb < <(mount_time "$work/S.$type")
  python3 -c "print(f'{\"$type\":8} {$size/1048576:12.1f} {$secs:16.2f} {$rss_kb/1024:14.1f} {$rss_kb*1024/$size:11.2f}x {$mount_ms/1000:10.2f} {$mount_rss_kb/1024:16.1f}')"
done
rm -f "$work"/S.* "$work"/orig.sqlite*
fi

echo; echo "== cp -a migration of a $copy_objects-object store"
"$STOREFS" sample --objects "$copy_objects" "$work/C.sqlite" >/dev/null
"$STOREFS" create --model sample "$work/D.xml" >/dev/null
mkdir -p "$work/src" "$work/dst" "$work/tmpfs"
"$STOREFS" mount "$work/C.sqlite" "$work/src" -o ro
"$STOREFS" mount "$work/D.xml" "$work/dst"
mount -t tmpfs -o size=2g tmpfs "$work/tmpfs"
# The first copy also warms the source mount (its rows and the kernel's caches), so the baseline is
# the second copy into an emptied tmpfs and both timed copies read a warm source.
cp -a "$work/src/." "$work/tmpfs/"; rm -rf "${work:?}"/tmpfs/* "$work"/tmpfs/.[!.]* 2>/dev/null || true
t0=$(seconds); cp -a "$work/src/." "$work/tmpfs/"; t1=$(seconds)
tmpfs_s=$(elapsed "$t0" "$t1")
t0=$(seconds); cp -a "$work/src/." "$work/dst/"; t1=$(seconds)
copy_s=$(elapsed "$t0" "$t1")
fusermount3 -u "$work/dst"
# The server commits after fusermount3 returns: wait for it to exit (its argv[0] is $STOREFS).
while pgrep -f -- "$(basename "$STOREFS") mount $work/D.xml" >/dev/null; do sleep 0.1; done
t2=$(seconds)
total_s=$(elapsed "$t0" "$t2")
objects_copied=$("$STOREFS" info --json "$work/D.xml" | python3 -c "import json,sys; print(json.load(sys.stdin)['objects'])")
printf "%-40s %10s\n" "cp -a into tmpfs (baseline)" "$tmpfs_s s"
printf "%-40s %10s\n" "cp -a into an empty .xml mount" "$copy_s s"
printf "%-40s %10s\n" "  ... until committed and unmounted" "$total_s s"
python3 -c "print(f'ratio to tmpfs: {$total_s / $tmpfs_s:.1f}x; objects in the new store: $objects_copied')"
[ "$objects_copied" = "$copy_objects" ] || echo "MISMATCH: the new store holds $objects_copied of $copy_objects objects"
