#!/usr/bin/env bash
# Health benchmark (issue 39), in three parts, each against a baseline measured in the same run:
#
# 1. `storefs doctor` (read-only) of a sample store of OBJECTS objects (default 100,000) whose
#    persistent history holds CHANGES changes (default 1,000,000, ten per transaction, made in SQL
#    as Maccy's store grew), against sqlite3 running what no examination can skip on the same
#    file: `PRAGMA integrity_check` and a count of the history's rows.
# 2. `storefs doctor --prune-history-before` of half the history (--no-backup), against sqlite3
#    deleting the same rows (the transactions, their changes) on a copy.
# 3. What `--metrics` costs a mount: a cold `ls -lR` and `cat` of every lastName of a mount of the
#    store with and without metrics (and a scrape every 0.2 s during the run), best of REPEAT.
#
# Usage: scripts/bench/health.sh [OBJECTS] [CHANGES]
# Environment: STOREFS=path/to/storefs skips the release build; REPEAT=N (default 3).
set -euo pipefail
NAME=health
source "$(dirname "$0")/common.sh"
OBJECTS=${1:-100000}
CHANGES=${2:-1000000}
REPEAT=${REPEAT:-3}
need sqlite3 sqlite3; need python3 python3; need fusermount3 fuse3; need curl curl

bench_workspace 4g
store="$TMPFS/Library.sqlite"
"$STOREFS" sample --objects "$OBJECTS" "$store" >/dev/null
transactions=$((CHANGES / 10))
sqlite3 "$store" <<SQL
CREATE TABLE ATRANSACTIONSTRING (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR);
CREATE TABLE ATRANSACTION (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZAUTHORTS INTEGER,
  ZBUNDLEIDTS INTEGER, ZCONTEXTNAMETS INTEGER, ZPROCESSIDTS INTEGER, ZTIMESTAMP FLOAT);
CREATE TABLE ACHANGE (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCHANGETYPE INTEGER, ZENTITY INTEGER,
  ZENTITYPK INTEGER, ZTRANSACTIONID INTEGER, ZCOLUMNS BLOB);
CREATE INDEX ACHANGE_ZTRANSACTIONID_INDEX ON ACHANGE (ZTRANSACTIONID);
INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (16001, 'CHANGE', 0, $CHANGES),
  (16002, 'TRANSACTION', 0, $transactions), (16003, 'TRANSACTIONSTRING', 0, 1);
INSERT INTO ATRANSACTIONSTRING VALUES (1, 16003, NULL, 'app');
WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < $transactions)
INSERT INTO ATRANSACTION SELECT n, 16002, NULL, 1, 1, NULL, 1, 700000000 + n FROM t;
WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < $CHANGES)
INSERT INTO ACHANGE SELECT n, 16001, NULL, 0, 4, 1 + n % $OBJECTS, 1 + (n - 1) / 10, NULL FROM c;
SQL
size=$(stat -c %s "$store")
echo "store: $OBJECTS objects, $transactions transactions, $CHANGES changes, $((size / 1048576)) MiB (on tmpfs)"

best_us() {
  local best="" t0 t1
  for _ in $(seq 1 "$REPEAT"); do
    t0=$(now_us)
    "$@" >/dev/null 2>&1 || [ $? -eq 1 ] || { echo "$NAME: $* failed" >&2; exit 1; }
    t1=$(now_us)
    if [ -z "$best" ] || [ $((t1 - t0)) -lt "$best" ]; then best=$((t1 - t0)); fi
  done
  echo "$best"
}
ratio() { python3 -c "print(f'{$1 / $2:.2f}x')"; }
seconds() { python3 -c "print(f'{$1 / 1e6:.2f} s')"; }

# 1. Examination.
doctor=$(best_us "$STOREFS" doctor --json "$store")
floor=$(best_us sqlite3 "$store" "PRAGMA integrity_check; SELECT COUNT(*) FROM ACHANGE; SELECT COUNT(*) FROM ATRANSACTION")
rss=$( { /usr/bin/time -f "%M" "$STOREFS" doctor --json "$store" >/dev/null; } 2>&1 | tail -1 || true)
echo "doctor: $(seconds "$doctor"), peak RSS ${rss} KB; sqlite3 integrity_check + counts: $(seconds "$floor") (doctor $(ratio "$doctor" "$floor"))"

# 2. Pruning half the history (each run on a fresh copy).
half=$((transactions / 2))
prune_storefs() { cp "$store" "$WORK/p.sqlite"; "$STOREFS" doctor --no-backup --prune-history-before "t$half" "$WORK/p.sqlite"; }
prune_sqlite() {
  cp "$store" "$WORK/p.sqlite"
  sqlite3 "$WORK/p.sqlite" "DELETE FROM ACHANGE WHERE ZTRANSACTIONID IN (SELECT Z_PK FROM ATRANSACTION WHERE Z_PK < $half); DELETE FROM ATRANSACTION WHERE Z_PK < $half"
}
pruned=$(best_us prune_storefs)
deleted=$(best_us prune_sqlite)
echo "prune before t$half: $(seconds "$pruned") (with the examinations before and after); sqlite3 deleting the same rows: $(seconds "$deleted") (storefs $(ratio "$pruned" "$deleted"))"

# 3. What --metrics costs a mount.
workload() {
  ls -lR "$MNT" >/dev/null
  find "$MNT/Employee" -maxdepth 2 -name lastName -print0 | xargs -0 cat >/dev/null
}
run_mount() { # run_mount [--metrics PORT]: the workload on a fresh mount, microseconds
  "$STOREFS" mount -o ro "$store" "$MNT" "$@"
  local scraper=""
  if [ $# -gt 0 ]; then
    (while true; do curl -s "http://127.0.0.1:$2/metrics" >/dev/null; sleep 0.2; done) &
    scraper=$!
  fi
  local t0 t1
  t0=$(now_us); workload; t1=$(now_us)
  [ -n "$scraper" ] && kill "$scraper" && wait "$scraper" 2>/dev/null || true
  if [ $# -gt 0 ]; then curl -s "http://127.0.0.1:$2/metrics" > "$WORK/metrics.txt"; fi
  unmount_store
  echo $((t1 - t0))
}
without=""; with=""
for _ in $(seq 1 "$REPEAT"); do
  t=$(run_mount); if [ -z "$without" ] || [ "$t" -lt "$without" ]; then without=$t; fi
  t=$(run_mount --metrics 19999); if [ -z "$with" ] || [ "$t" -lt "$with" ]; then with=$t; fi
done
requests=$(grep '^storefs_fuse_requests_total' "$WORK/metrics.txt" | awk '{s += $2} END {print s}')
echo "cold ls -lR + cat of every lastName ($requests requests): without metrics $(seconds "$without"), with --metrics and a scrape every 0.2 s $(seconds "$with") ($(ratio "$with" "$without"))"
