#!/usr/bin/env bash
# The relational core and the PostgreSQL store against SQLite and PostgreSQL themselves (issue 35),
# on a private PostgreSQL cluster this script starts (initdb as the postgres user, a Unix socket in
# its folder, the server's default settings: fsync on, synchronous_commit on):
#
#   query count   cat MNT/.query/Employee/<predicate>/.count on read-only mounts of the same sample
#                 store as SQLite and migrated into PostgreSQL, for each size given (default 20000):
#                 the median of 5 predicates (a new constant each, so no answer is kept), ratio
#                 PostgreSQL/SQLite
#   stalled read  the server stopped with SIGSTOP while a mount's fsync waits on its save: a first
#                 read of each of 200 loaded objects (open, read, close): median, p99, max
#   commits/s     one read-write mount, one process writing and closing one attribute file again
#                 and again (each close commits on a PostgreSQL mount) for SECONDS, against pgbench
#                 running the equivalent one-row UPDATE transaction on the same table for as long
#   lines         Swift lines of SQLiteStore, PostgresStore and RelationalCore, at BASE and now
#
# Usage: scripts/bench/relational.sh [OBJECTS...]     (default 20000)
# Environment: STOREFS=path/to/storefs skips the build; SECONDS_PER_RUN=N (default 10);
# BASE=commit for the line counts (default 8cfa84c, before issue 35).
set -euo pipefail
NAME=relational.sh
source "$(dirname "$0")/common.sh"
SIZES=("${@:-20000}")
RUN_SECONDS=${SECONDS_PER_RUN:-10}
BASE=${BASE:-8cfa84c}
need python3 python3; need fusermount3 fuse3
PGBIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
[ -x "$PGBIN/initdb" ] || { echo "$NAME: PostgreSQL is not installed (scripts/setup installs it)" >&2; exit 1; }
[ -x "$PGBIN/pgbench" ] || { echo "$NAME: pgbench is missing ($PGBIN)" >&2; exit 1; }

bench_workspace 64m
PG="$WORK/pg"
MOUNTS=()
pg_cleanup() {
  set +e
  [ -f "$PG/data/postmaster.pid" ] && signal_server CONT
  for m in "${MOUNTS[@]}"; do mountpoint -q "$m" && { timeout 120 "$STOREFS" unmount "$m" >/dev/null 2>&1 || fusermount3 -uz "$m"; }; done
  [ -d "$PG/data" ] && timeout 60 runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PG/data" -m immediate stop >/dev/null 2>&1
  cleanup
}
trap pg_cleanup EXIT
chmod 755 "$WORK"
mkdir -p "$PG" && chown postgres "$PG"
timeout 120 runuser -u postgres -- "$PGBIN/initdb" -D "$PG/data" -A trust -U postgres -E UTF8 --locale=C >/dev/null
timeout 120 runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PG/data" -l "$PG/log" -w -t 60 -o "-k $PG -p 5432 -c listen_addresses=''" start >/dev/null
url() { echo "postgresql:///postgres?host=$PG&port=5432&user=postgres&schema=$1"; }
psql_run() { timeout 60 runuser -u postgres -- "$PGBIN/psql" -X -q -A -t -h "$PG" -p 5432 -d postgres -c "$1"; }
signal_server() {  # signal_server SIGNAL: the postmaster and every process it started
  local postmaster; postmaster=$(head -1 "$PG/data/postmaster.pid")
  kill "-$1" "$postmaster" $(pgrep -P "$postmaster") 2>/dev/null || true
}
mount_store() {  # mount_store STORE MOUNTPOINT [OPTIONS]
  mkdir -p "$2"
  "$STOREFS" mount "$1" "$2" ${3:+-o "$3"} --log-file "$WORK/$(basename "$2").log" >/dev/null
  MOUNTS+=("$2")
}
unmount_path() { timeout 120 "$STOREFS" unmount "$1" >/dev/null 2>&1 || fusermount3 -uz "$1"; }
echo "relational.sh: sizes ${SIZES[*]}, storefs $STOREFS, PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}'), load $(cut -d' ' -f1-3 /proc/loadavg)"

# --- query count
count_queries() {  # count_queries MOUNT: the median ms of five counts of new predicates, and the last count
  python3 - "$1" <<'EOF'
import statistics, sys, time
mount, times, out = sys.argv[1], [], ""
for i in range(1, 6):
    start = time.perf_counter()
    with open("%s/.query/Employee/salary > %d/.count" % (mount, 90000 + i * 1000)) as f:
        out = f.read().strip()
    times.append((time.perf_counter() - start) * 1000)
print("%.1f %s" % (statistics.median(times), out))
EOF
}
for size in "${SIZES[@]}"; do
  [ "$size" = 0 ] && continue  # 0: no query counts
  store="$WORK/Company$size.sqlite"
  "$STOREFS" sample --objects "$size" "$store" >/dev/null
  "$STOREFS" migrate "$store" "$(url "sample$size")" >/dev/null 2>"$WORK/migrate.err" \
    || { echo "$NAME: migrate into PostgreSQL: $(tail -3 "$WORK/migrate.err")" >&2; exit 1; }
  mount_store "$store" "$WORK/sqlite$size" ro
  mount_store "$(url "sample$size")" "$WORK/pg$size" ro
  read -r sqlite_ms sqlite_out < <(count_queries "$WORK/sqlite$size")
  read -r pg_ms pg_out < <(count_queries "$WORK/pg$size")
  [ "$sqlite_out" = "$pg_out" ] || echo "$NAME: counts differ: SQLite $sqlite_out, PostgreSQL $pg_out" >&2
  printf 'query count     %s objects: SQLite %s ms, PostgreSQL %s ms (median of 5), ratio %s (count %s)\n' \
    "$size" "$sqlite_ms" "$pg_ms" "$(python3 -c "print('%.2f' % ($pg_ms / $sqlite_ms))")" "$pg_out"
  unmount_path "$WORK/sqlite$size"; unmount_path "$WORK/pg$size"
  rm -f "$store"
done

# --- stalled read and commits/s: a 2,000-object store in PostgreSQL, mounted read-write
"$STOREFS" sample --objects 2000 "$WORK/Small.sqlite" >/dev/null
"$STOREFS" migrate "$WORK/Small.sqlite" "$(url small)" >/dev/null
RW="$WORK/rw"
mount_store "$(url small)" "$RW"
mapfile -t EMPLOYEES < <(find "$RW/Employee" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort -V | head -240)
LOADED=("${EMPLOYEES[@]:40:200}")
( cd "$RW/Employee" && ls -l "${LOADED[@]}" >/dev/null )
signal_server STOP
python3 - "$RW/Employee/${EMPLOYEES[0]}/lastName" >"$WORK/stalled.out" 2>&1 <<'EOF' &
import os, sys
f = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC); os.write(f, b"Stalled\n"); os.fsync(f); os.close(f); print("saved")
EOF
writer=$!
sleep 1
python3 - "$RW/Employee" "${LOADED[@]}" <<'EOF'
import os, sys, time, statistics
folder, names = sys.argv[1], sys.argv[2:]
times = []
for name in names:
    start = time.perf_counter()
    with open(os.path.join(folder, name, "lastName"), "rb") as f:
        f.read()
    times.append((time.perf_counter() - start) * 1000)
times.sort()
print("stalled read    %d first reads of loaded objects while a save waits on a stopped server: median %.2f ms, p99 %.2f ms, max %.2f ms"
      % (len(times), statistics.median(times), times[int(len(times) * 0.99) - 1], times[-1]))
EOF
signal_server CONT
wait "$writer" || true
echo "                the stalled save after SIGCONT: $(cat "$WORK/stalled.out")"

mount_rate=$(python3 - "$RW/Employee" "$RUN_SECONDS" "${EMPLOYEES[@]:1:20}" <<'EOF'
import os, sys, time
folder, seconds, names = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
done, deadline, i = 0, time.monotonic() + seconds, 0
while time.monotonic() < deadline:
    f = os.open(os.path.join(folder, names[i % len(names)], "lastName"), os.O_WRONLY | os.O_TRUNC)
    os.write(f, b"Commit%d\n" % i); os.close(f)
    done += 1; i += 1
print("%.1f" % (done / seconds))
EOF
)
unmount_path "$RW"

KEYS=$(psql_run "SELECT min(\"Z_PK\") || ' ' || max(\"Z_PK\") FROM small.\"ZPERSON\" WHERE \"Z_ENT\" = (SELECT \"Z_ENT\" FROM small.\"Z_PRIMARYKEY\" WHERE \"Z_NAME\" = 'Employee')")
[ -n "$KEYS" ] || { echo "$NAME: no Employee keys in the store" >&2; exit 1; }
cat >"$PG/update.sql" <<EOF
\set id random(${KEYS% *}, ${KEYS#* })
BEGIN;
UPDATE small."ZPERSON" SET "ZLASTNAME" = 'Commit' || :id, "Z_OPT" = "Z_OPT" + 1 WHERE "Z_PK" = :id;
COMMIT;
EOF
chown postgres "$PG/update.sql"
pgbench_rate=$(timeout 120 runuser -u postgres -- "$PGBIN/pgbench" -n -h "$PG" -p 5432 -c 1 -j 1 -T "$RUN_SECONDS" \
  -f "$PG/update.sql" postgres | awk '/^tps/ {printf "%.1f", $3}')
printf 'commits/s       one mount %s, pgbench (one-row UPDATE transaction, 1 client) %s, ratio %s\n' \
  "$mount_rate" "$pgbench_rate" "$(python3 -c "print('%.2f' % ($mount_rate / $pgbench_rate))")"

# --- lines of the store modules
lines() { git ls-tree -r --name-only "$1" -- "$2" 2>/dev/null | grep '\.swift$' | while read -r f; do git show "$1:$f"; done | wc -l; }
now_lines() { find "$1" -name '*.swift' -print0 2>/dev/null | xargs -0 cat 2>/dev/null | wc -l; }
printf 'lines           SQLiteStore %s → %s, PostgresStore %s → %s, RelationalCore %s → %s (BASE %s)\n' \
  "$(lines "$BASE" Sources/SQLiteStore)" "$(now_lines Sources/SQLiteStore)" \
  "$(lines "$BASE" Sources/PostgresStore)" "$(now_lines Sources/PostgresStore)" \
  "$(lines "$BASE" Sources/RelationalCore)" "$(now_lines Sources/RelationalCore)" "$BASE"
