#!/usr/bin/env bash
# Cluster commits/s (issue 36 item 6): storefs mounts writing beside pgbench on one PostgreSQL
# server this script starts (initdb as the postgres user, a Unix socket in its folder, the server's
# default settings: fsync on, synchronous_commit on). Same run, same server:
#
#   pgbench alone   pgbench -n -c CLIENTS -j 2 -T SECONDS (TPC-B-like, scale 4): transactions/s,
#                   before and after the mounts' runs (the ratios are against their mean)
#   N mounts        N = 1, 2, 4 read-write mounts of one store, 2 writers each (open, write,
#                   fsync, close of their own objects' attributes: one storefs save = one commit),
#                   while the same pgbench runs: pgbench's transactions/s and its ratio to alone,
#                   storefs's commits/s (acknowledged fsyncs), and the cluster's total commits/s
#
# Usage: scripts/bench/pg-cluster.sh [SECONDS]      (default 10 per phase)
# Environment: STOREFS=path/to/storefs skips the release build; CLIENTS=N pgbench clients (4).
set -euo pipefail
NAME=pg-cluster.sh
source "$(dirname "$0")/common.sh"
RUN_SECONDS=${1:-10}
CLIENTS=${CLIENTS:-4}
need python3 python3; need fusermount3 fuse3
bench_workspace 16m
bench_postgres
[ -x "$PGBIN/pgbench" ] || { echo "$NAME: pgbench is missing ($PGBIN)" >&2; exit 1; }
URL="$PG_URL_BASE&schema=cluster"
ratio() { python3 -c "print('%.2f' % ($1 / $2) if $2 else 'n/a')"; }

echo "pg-cluster.sh: $RUN_SECONDS s per phase, pgbench $CLIENTS clients, storefs $STOREFS, PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}'), load $(cut -d' ' -f1-3 /proc/loadavg)"
timeout 300 "$PGBIN/pgbench" -q -i -s 4 -h "$PG" -p 5432 -U postgres postgres >/dev/null 2>"$WORK/pgbench-init.err" \
  || { echo "$NAME: pgbench -i:" >&2; tail -5 "$WORK/pgbench-init.err" >&2; exit 1; }
"$STOREFS" sample --objects 2000 "$WORK/Company.sqlite" >/dev/null
"$STOREFS" migrate "$WORK/Company.sqlite" "$URL" >/dev/null 2>&1

pgbench_tps() {  # pgbench_tps OUTFILE: runs pgbench for RUN_SECONDS, writes its transactions/s
  timeout $((RUN_SECONDS + 60)) "$PGBIN/pgbench" -n -c "$CLIENTS" -j 2 -T "$RUN_SECONDS" -h "$PG" -p 5432 -U postgres postgres 2>&1 \
    | sed -n 's/^tps = \([0-9.]*\) .*/\1/p' | head -1 >"$1"
}

employees=($("$PGBIN/psql" -X -q -A -t -h "$PG" -p 5432 -U postgres -d postgres -c \
  "select \"Z_PK\" from cluster.\"ZPERSON\" where \"Z_ENT\" = (select \"Z_ENT\" from cluster.\"Z_PRIMARYKEY\" where \"Z_NAME\" = 'Employee') order by \"Z_PK\" limit 32"))
[ "${#employees[@]}" -ge 32 ] || { echo "$NAME: the sample store has too few employees" >&2; exit 1; }

# pgbench alone before and after the mounts' runs: the machine's own drift shows between the two,
# and the ratios are against their mean.
pgbench_tps "$WORK/alone"
before=$(cat "$WORK/alone")
declare -A LINE
for mounts in 1 2 4; do
  MOUNTS=()
  for m in $(seq 1 "$mounts"); do
    mkdir -p "$WORK/m$m"; "$STOREFS" mount "$URL" "$WORK/m$m" >/dev/null; MOUNTS+=("$WORK/m$m")
  done
  until=$(python3 -c "import time; print(time.time() + $RUN_SECONDS)")
  pids=()
  for m in $(seq 1 "$mounts"); do
    for w in 0 1; do
      i=$(( ((m - 1) * 2 + w) * 4 ))
      timeout $((RUN_SECONDS + 60)) python3 scripts/bench/fsync-writer.py "$WORK/m$m" "${employees[*]:$i:4}" 0 "$until" >"$WORK/w$m-$w" 2>>"$WORK/writers.err" &
      pids+=($!)
    done
  done
  pgbench_tps "$WORK/beside"
  for pid in "${pids[@]}"; do wait "$pid" || { echo "$NAME: a writer failed:" >&2; tail -5 "$WORK/writers.err" >&2; exit 1; }; done
  total=$(python3 -c "import glob; print(sum(int(open(p).read() or 0) for p in glob.glob('$WORK/w*-*')))")
  rm -f "$WORK"/w*-*
  beside=$(cat "$WORK/beside")
  storefs_rate=$(python3 -c "print('%.1f' % ($total / $RUN_SECONDS))")
  cluster=$(python3 -c "print('%.1f' % ($beside + $total / $RUN_SECONDS))")
  LINE[$mounts]="$beside $storefs_rate $cluster"
  for m in "${MOUNTS[@]}"; do timeout 120 "$STOREFS" unmount "$m" >/dev/null; done
  MOUNTS=()
done
pgbench_tps "$WORK/alone"
after=$(cat "$WORK/alone")
alone=$(python3 -c "print('%.1f' % (($before + $after) / 2))")
echo "pgbench alone   $before tps before, $after tps after (mean $alone)"
for mounts in 1 2 4; do
  read -r beside storefs_rate cluster <<<"${LINE[$mounts]}"
  echo "$mounts mount(s)      pgbench $beside tps ($(ratio "$beside" "$alone")x alone), storefs $storefs_rate commits/s ($((mounts * 2)) writers), cluster $cluster commits/s ($(ratio "$cluster" "$alone")x pgbench alone)"
done
echo "load after      $(cut -d' ' -f1-3 /proc/loadavg)"
