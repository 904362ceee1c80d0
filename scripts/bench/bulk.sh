#!/usr/bin/env bash
# Issue 40 item 2's figures: bulk work against SQLite's own speed, same run. For each workload the
# time storefs takes, and the ratio to the time `sqlite3 NEW < DUMP.sql` takes to load the same
# rows from the source store's own `.dump` (the goal is <= 1.00x); for XML and binary targets also
# the ratio to writing the same number of bytes with one write(2) (python's os.write, then fsync).
# Then the time `storefs info` takes to open the XML and binary stores. Prints figures and the load
# average; asserts nothing. When PostgreSQL is installed (scripts/setup), also migrations into and
# out of a PostgreSQL store on a private server this script starts (initdb as the postgres user, a
# Unix socket in its folder only); and `cp -a` into an in-memory mount (`mount --memory`) and out of
# it into an empty SQLite mount.
#
# Usage: scripts/bench/bulk.sh [OBJECTS] [COPY_OBJECTS]     (default 100000 1000)
# STOREFS=/path/to/storefs to use a built binary; otherwise builds release.
set -euo pipefail
NAME=bulk
objects=${1:-100000}
copy_objects=${2:-1000}
source "$(dirname "$0")/common.sh"
need sqlite3 sqlite3
need /usr/bin/time time
bench_workspace 16m
W=$WORK
# common.sh's cleanup, and the two mounts of the cp -a part before it.
common_cleanup=$(declare -f cleanup | tail -n +2)
eval "common_cleanup() $common_cleanup"
PGBIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
PG="$W/pg"
cleanup() {
  set +e
  [ -d "$PG/data" ] && timeout 60 runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PG/data" -m immediate stop >/dev/null 2>&1
  for m in "$W/dst" "$W/src"; do mountpoint -q "$m" && { fusermount3 -u "$m" || fusermount3 -uz "$m"; }; done
  sleep 0.5
  common_cleanup
}
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "== storefs bulk benchmark ($(date -u +%FT%TZ), $(nproc) cores, load $(load)), $STOREFS"

# Seconds of the command given, as a float.
timed() {
  local t0 t1
  t0=$(now_us); "$@" >/dev/null; t1=$(now_us)
  python3 -c "print(f'{($t1 - $t0) / 1e6:.3f}')"
}
# Seconds sqlite3 takes to load the rows of store $1 from its own .dump into a new file.
dump_load() {
  sqlite3 "$1" .dump >"$W/dump.sql"
  rm -f "$W/reload.sqlite"
  timed sh -c "sqlite3 '$W/reload.sqlite' < '$W/dump.sql'"
  rm -f "$W/reload.sqlite" "$W/dump.sql"
}
# Seconds one os.write of as many bytes as file $1 holds takes (then fsync), on the same filesystem.
one_write() {
  python3 - "$1" "$W/one-write" <<'EOF'
import os, sys, time
size = os.path.getsize(sys.argv[1])
data = os.urandom(1 << 20) * (size >> 20) + os.urandom(size & ((1 << 20) - 1))
t0 = time.monotonic()
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
view = memoryview(data)
while view:
    view = view[os.write(fd, view):]
os.fsync(fd)
os.close(fd)
print(f"{time.monotonic() - t0:.3f}")
os.unlink(sys.argv[2])
EOF
}
# The peak memory (max RSS, MiB) of the last `peak` command, or nothing.
peak_file="$W/peak"
peak() { /usr/bin/time -f %M -o "$peak_file" "$@"; }
row() {  # workload seconds reference-seconds [one-write-seconds]; then the peak of the last `peak`, once
  local kb=""
  [ -s "$peak_file" ] && kb=$(tail -1 "$peak_file") && rm -f "$peak_file"
  python3 -c "
w, s, r, o, kb = '$1', $2, $3, '${4:-}', '$kb'
extra = f'{s / float(o):10.2f}x' if o else f'{\"\":>11}'
mib = f'{int(kb) / 1024:9.0f}' if kb.isdigit() else f'{\"\":>9}'
print(f'{w:34} {s:9.2f} {r:12.2f} {s / r:9.2f}x {extra} {mib}')"
}

printf "%-34s %9s %12s %10s %11s %9s\n" "workload" "storefs s" "sqlite3 s" "/sqlite3" "/one write" "peak MiB"
sample_s=$(timed peak "$STOREFS" sample --objects "$objects" "$W/S.sqlite")
ref_s=$(dump_load "$W/S.sqlite")
row "sample --objects $objects" "$sample_s" "$ref_s"
for pair in sqlite:xml sqlite:binary xml:binary binary:xml xml:sqlite binary:sqlite; do
  from=${pair%%:*} to=${pair##*:}
  src="$W/S.$from"
  [ "$from" = sqlite ] || [ "$to" != sqlite ] || { mv "$W/S.sqlite" "$W/orig.sqlite"; }
  [ -e "$src" ] || { echo "missing $src" >&2; exit 1; }
  rm -f "$W/T.$to"
  s=$(timed peak "$STOREFS" migrate "$src" "$W/T.$to")
  if [ "$to" = sqlite ]; then
    row "migrate $from -> $to" "$s" "$ref_s"
    rm -f "$W"/T.sqlite*
    [ -e "$W/orig.sqlite" ] && mv "$W/orig.sqlite" "$W/S.sqlite"
  else
    row "migrate $from -> $to" "$s" "$ref_s" "$(one_write "$W/T.$to")"
    [ -e "$W/S.$to" ] || mv "$W/T.$to" "$W/S.$to"
    rm -f "$W/T.$to"
  fi
done
echo "(load $(load))"

if [ -x "$PGBIN/initdb" ]; then
  # Into and out of PostgreSQL (one private server, default settings: fsync on).
  chmod 755 "$W"
  mkdir -p "$PG" && chown postgres "$PG"
  timeout 120 runuser -u postgres -- "$PGBIN/initdb" -D "$PG/data" -A trust -U postgres -E UTF8 --locale=C >/dev/null
  timeout 120 runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PG/data" -l "$PG/log" -w -t 60 \
    -o "-k $PG -p 5432 -c listen_addresses=''" start >/dev/null
  pg="postgresql:///postgres?host=$PG&port=5432&user=postgres&schema=bulk"
  # CPU seconds the server has used so far: its processes' own, and those of the connections
  # that ended (counted in the postmaster's children times once it reaped them).
  pg_cpu() {
    local pm; pm=$(head -1 "$PG/data/postmaster.pid")
    { awk '{print $16 + $17}' "/proc/$pm/stat"
      for p in $pm $(pgrep -P "$pm"); do awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null; done
    } | awk -v hz="$(getconf CLK_TCK)" '{s += $1} END {printf "%.2f", s / hz}'
  }
  # A migration into PostgreSQL, timed, then where its CPU went: storefs's and the server's.
  into_pg() {  # FROM
    local c0 c1 s
    c0=$(pg_cpu)
    s=$(timed peak /usr/bin/time -f "%U %S" -o "$W/cpu" timeout 1800 "$STOREFS" migrate "$W/S.$1" "$pg")
    sleep 0.2; c1=$(pg_cpu)
    row "migrate $1 -> postgresql" "$s" "$ref_s"
    python3 -c "u, s = open('$W/cpu').read().split()[-2:]; print(f'{\"\":4}CPU: storefs {float(u) + float(s):.2f} s, PostgreSQL server {$c1 - $c0:.2f} s')"
  }
  into_pg sqlite
  for to in sqlite xml binary; do
    rm -f "$W"/T.*
    s=$(timed peak timeout 1800 "$STOREFS" migrate "$pg" "$W/T.$to")
    if [ "$to" = sqlite ]; then row "migrate postgresql -> $to" "$s" "$ref_s"
    else row "migrate postgresql -> $to" "$s" "$ref_s" "$(one_write "$W/T.$to")"; fi
    rm -f "$W"/T.*
  done
  for from in xml binary; do
    PGOPTIONS="-c client_min_messages=warning" "$PGBIN/psql" -X -q -h "$PG" -p 5432 -U postgres -d postgres -c "DROP SCHEMA bulk CASCADE" >/dev/null
    into_pg "$from"
  done
  timeout 60 runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PG/data" -m fast -w -t 60 stop >/dev/null
  rm -rf "$PG"
  echo "(load $(load))"
else
  echo "(PostgreSQL is not installed: no postgresql rows; scripts/setup installs it)"
fi

echo
printf "%-8s %10s %18s\n" "type" "MiB" "storefs info s"
for type in xml binary; do
  sync; echo 3 >/proc/sys/vm/drop_caches
  s=$(timed "$STOREFS" info "$W/S.$type")
  python3 -c "print(f'{\"$type\":8} {$(stat -c %s "$W/S.$type") / 1048576:10.1f} {$s:18.2f}')"
done
rm -f "$W"/S.*

echo
echo "== cp -a of a $copy_objects-object SQLite mount into an empty mount of another type"
"$STOREFS" sample --objects "$copy_objects" "$W/C.sqlite" >/dev/null
copy_ref=$(dump_load "$W/C.sqlite")
mkdir -p "$W/src" "$W/dst"
"$STOREFS" mount -o ro "$W/C.sqlite" "$W/src"
for to in xml binary; do
  "$STOREFS" create --model sample "$W/D.$to" >/dev/null
  "$STOREFS" mount "$W/D.$to" "$W/dst"
  t0=$(now_us)
  cp -a "$W/src/." "$W/dst/"
  fusermount3 -u "$W/dst"
  # The server commits after fusermount3 returns: wait for it to exit.
  while pgrep -f -- "$(basename "$STOREFS") mount $W/D.$to" >/dev/null; do sleep 0.05; done
  t1=$(now_us)
  s=$(python3 -c "print(f'{($t1 - $t0) / 1e6:.3f}')")
  row "cp -a sqlite mount -> $to mount" "$s" "$copy_ref" "$(one_write "$W/D.$to")"
done
# Into an in-memory mount (the copy ends when cp does: nothing is written), then out of it into
# an empty SQLite mount (until that server has committed and exited).
"$STOREFS" mount --memory --model sample "$W/dst"
s=$(timed cp -a "$W/src/." "$W/dst/")
row "cp -a sqlite mount -> memory mount" "$s" "$copy_ref"
fusermount3 -u "$W/src"
"$STOREFS" create --model sample "$W/E.sqlite" >/dev/null
"$STOREFS" mount "$W/E.sqlite" "$W/src"
t0=$(now_us)
cp -a "$W/dst/." "$W/src/"
fusermount3 -u "$W/src"
while pgrep -f -- "$(basename "$STOREFS") mount $W/E.sqlite" >/dev/null; do sleep 0.05; done
t1=$(now_us)
row "cp -a memory mount -> sqlite mount" "$(python3 -c "print(f'{($t1 - $t0) / 1e6:.3f}')")" "$copy_ref"
fusermount3 -u "$W/dst"
echo "(load $(load))"
