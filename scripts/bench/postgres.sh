#!/usr/bin/env bash
# PostgreSQL store benchmark (issue 27), on a private PostgreSQL cluster this script starts (initdb
# as the postgres user, a Unix socket in its folder, the server's default settings: fsync on,
# synchronous_commit on), against the SQLite store measured in the same run:
#
#   migrate       storefs migrate sample.sqlite postgresql://...   objects/s (baseline: into .sqlite)
#   cold reads    ls -l MNT/Employee | wc -l; find MNT -type f | wc -l;
#                 find MNT/Employee -type f -print0 | xargs -0 cat | wc -c
#                 each on a fresh read-only mount with the kernel's caches dropped (and, for
#                 PostgreSQL, the server restarted: its buffers are empty too); ratio PostgreSQL/SQLite
#   commit        open, write, fsync, close of one attribute, 200 times on a read-write mount:
#                 median and p99 (baseline: the same on the SQLite store)
#   scaling       1, 2 and 4 read-write mounts of the store, 4 writers each writing their own
#                 objects with fsync for SECONDS: aggregate writes/s and the ratio to one mount
#
# Usage: scripts/bench/postgres.sh [OBJECTS]      (default 100000)
# Environment: STOREFS=path/to/storefs skips the build; SECONDS_PER_RUN=N for the scaling runs
# (default 10).
set -euo pipefail
NAME=postgres.sh
source "$(dirname "$0")/common.sh"
OBJECTS=${1:-100000}
RUN_SECONDS=${SECONDS_PER_RUN:-10}
need python3 python3; need getfattr attr; need fusermount3 fuse3
PGBIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
[ -x "$PGBIN/initdb" ] || { echo "$NAME: PostgreSQL is not installed (scripts/setup installs it)" >&2; exit 1; }

bench_workspace 64m
PG="$WORK/pg"
MOUNTS=()
pg_cleanup() {
  set +e
  for m in "${MOUNTS[@]}"; do mountpoint -q "$m" && { timeout 120 "$STOREFS" unmount "$m" >/dev/null 2>&1 || fusermount3 -uz "$m"; }; done
  [ -d "$PG/data" ] && timeout 60 runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PG/data" -m immediate stop >/dev/null 2>&1
  cleanup
}
trap pg_cleanup EXIT
chmod 755 "$WORK"
mkdir -p "$PG" && chown postgres "$PG"
timeout 120 runuser -u postgres -- "$PGBIN/initdb" -D "$PG/data" -A trust -U postgres -E UTF8 --locale=C >/dev/null
pg_start() { timeout 120 runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PG/data" -l "$PG/log" -w -t 60 -o "-k $PG -p 5432 -c listen_addresses=''" start >/dev/null; }
pg_restart() { timeout 120 runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PG/data" -m fast -w -t 60 stop >/dev/null; pg_start; }
pg_start
URL="postgresql:///postgres?host=$PG&port=5432&user=postgres&schema=bench"
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }
seconds() { python3 -c "print('%.2f' % (($2 - $1) / 1e6))"; }
ratio() { python3 -c "print('%.2f' % ($1 / $2) if $2 else 'n/a')"; }

echo "postgres.sh: $OBJECTS objects, storefs $STOREFS, PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}')"
"$STOREFS" sample --objects "$OBJECTS" "$WORK/Company.sqlite" >/dev/null

# --- migrate
migrate() { "$STOREFS" migrate "$@" >/dev/null 2>"$WORK/migrate.err" || { echo "$NAME: storefs migrate $*:" >&2; tail -5 "$WORK/migrate.err" >&2; exit 1; }; }
t0=$(now_us); migrate "$WORK/Company.sqlite" "$WORK/Again.sqlite"; t1=$(now_us)
t2=$(now_us); migrate "$WORK/Company.sqlite" "$URL"; t3=$(now_us)
sqlite_rate=$(python3 -c "print('%.0f' % ($OBJECTS / (($t1 - $t0) / 1e6)))")
pg_rate=$(python3 -c "print('%.0f' % ($OBJECTS / (($t3 - $t2) / 1e6)))")
echo "migrate         into SQLite $(seconds "$t0" "$t1") s ($sqlite_rate objects/s), into PostgreSQL $(seconds "$t2" "$t3") s ($pg_rate objects/s), ratio $(ratio "$((t3 - t2))" "$((t1 - t0))")"

# --- cold reads
declare -A WORKLOAD=(
  ["ls -l"]='ls -l "$ROOT/Employee" | wc -l'
  ["find"]='find "$ROOT" -type f | wc -l'
  ["cat Employee"]='find "$ROOT/Employee" -type f -print0 | xargs -0 cat | wc -c'
)
cold() {  # cold STORE WORKLOAD: prints microseconds and the output
  local store="$1" workload="$2"
  [ "$store" = "$URL" ] && pg_restart
  "$STOREFS" mount "$store" "$MNT" -o ro >/dev/null
  drop_caches
  local start end out
  start=$(now_us); out=$(ROOT="$MNT" bash -c "${WORKLOAD[$workload]}"); end=$(now_us)
  timeout 120 "$STOREFS" unmount "$MNT" >/dev/null 2>&1 || fusermount3 -uz "$MNT"
  echo "$((end - start)) $out"
}
for workload in "ls -l" "find" "cat Employee"; do
  read -r s_us s_out < <(cold "$WORK/Company.sqlite" "$workload")
  read -r p_us p_out < <(cold "$URL" "$workload")
  [ "$s_out" = "$p_out" ] || echo "postgres.sh: $workload printed $s_out on SQLite and $p_out on PostgreSQL" >&2
  printf '%-15s SQLite %s s, PostgreSQL %s s, ratio %s (output %s)\n' "cold $workload" "$(seconds 0 "$s_us")" "$(seconds 0 "$p_us")" \
    "$(ratio "$p_us" "$s_us")" "$p_out"
done

# --- commit latency
commit_latency() {  # commit_latency MOUNT: median and p99 ms of open+write+fsync+close
  python3 - "$1" <<'PY'
import os, statistics, sys, time
mnt = sys.argv[1]
keys = sorted(int(n[1:]) for n in os.listdir(mnt + "/Department") if n.startswith("p"))
times = []
for i in range(200):
    path = "%s/Department/p%d/name" % (mnt, keys[i % len(keys)])
    t = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC); os.write(fd, b"Dept %d\n" % i); os.fsync(fd); os.close(fd)
    times.append((time.perf_counter() - t) * 1000)
times.sort()
print("%.2f %.2f" % (statistics.median(times), times[int(len(times) * 0.99)]))
PY
}
"$STOREFS" mount "$WORK/Company.sqlite" "$MNT" >/dev/null; MOUNTS=("$MNT")
read -r s_med s_p99 < <(commit_latency "$MNT")
timeout 120 "$STOREFS" unmount "$MNT" >/dev/null
"$STOREFS" mount "$URL" "$MNT" >/dev/null
read -r p_med p_p99 < <(commit_latency "$MNT")
timeout 120 "$STOREFS" unmount "$MNT" >/dev/null
echo "commit latency  SQLite median $s_med ms p99 $s_p99 ms; PostgreSQL median $p_med ms p99 $p_p99 ms (open, write, fsync, close)"

# --- scaling: 1, 2, 4 mounts, 4 writers each, each writer its own objects
employees=($("$PGBIN/psql" -X -q -A -t -h "$PG" -p 5432 -U postgres -d postgres -c \
  "select \"Z_PK\" from bench.\"ZPERSON\" where \"Z_ENT\" = (select \"Z_ENT\" from bench.\"Z_PRIMARYKEY\" where \"Z_NAME\" = 'Employee') order by \"Z_PK\" limit 64"))
declare -A RATE
for mounts in 1 2 4; do
  MOUNTS=()
  for m in $(seq 1 "$mounts"); do
    mkdir -p "$WORK/m$m"; "$STOREFS" mount "$URL" "$WORK/m$m" >/dev/null; MOUNTS+=("$WORK/m$m")
  done
  start=$(python3 -c "import time; print(time.time() + 5)")
  until=$(python3 -c "print($start + $RUN_SECONDS)")
  pids=()
  for m in $(seq 1 "$mounts"); do
    for w in 0 1 2 3; do
      i=$(( (m - 1) * 4 + w ))
      timeout $((RUN_SECONDS + 60)) python3 scripts/bench/fsync-writer.py "$WORK/m$m" "${employees[$i * 4]} ${employees[$i * 4 + 1]} ${employees[$i * 4 + 2]} ${employees[$i * 4 + 3]}" "$start" "$until" >"$WORK/w$m-$w" 2>>"$WORK/writers.err" &
      pids+=($!)
    done
  done
  for pid in "${pids[@]}"; do wait "$pid" || { echo "$NAME: a writer failed:" >&2; tail -5 "$WORK/writers.err" >&2; exit 1; }; done
  total=$(python3 -c "import glob; print(sum(int(open(p).read() or 0) for p in glob.glob('$WORK/w*-*')))")
  rm -f "$WORK"/w*-*
  RATE[$mounts]=$(python3 -c "print('%.1f' % ($total / $RUN_SECONDS))")
  for m in "${MOUNTS[@]}"; do timeout 120 "$STOREFS" unmount "$m" >/dev/null; done
  MOUNTS=()
done
echo "scaling         writes/s with 4 writers per mount: 1 mount ${RATE[1]}, 2 mounts ${RATE[2]} ($(ratio "${RATE[2]}" "${RATE[1]}")x), 4 mounts ${RATE[4]} ($(ratio "${RATE[4]}" "${RATE[1]}")x)"
