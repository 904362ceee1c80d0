#!/usr/bin/env bash
# History benchmark (issue 26): `storefs history` of a store holding N persistent-history
# transactions (default 10,000), as text and as JSON Lines, against sqlite3 reading the same rows
# (transactions, their four interned names, their changes) in one joined query in the same run:
# the floor for any reader of them. Also the fixed cost (opening the store and its model:
# `--since` past all but the last transaction) and the peak RSS of the whole listing (it reads in
# pages, so memory must not grow with N). Then the same history through a read-only mount: `ls -U
# MNT/.history` (one listing, transactions without their changes), `ls -lU` of it (every folder's
# attributes too), and a lookup of one transaction's changes (`ls MNT/.history/tN/updated`), against
# sqlite3 reading the transaction numbers alone.
#
# The store: a copy of the SwiftData store of the test corpus (Tests/Fixtures/corpus/sqlite/
# sergd2005_ResourcesManager_default.store, 38 transactions by SwiftData) grown to N transactions
# of three changes each, every change a copy of one SwiftData recorded (so each decodes against
# the store's model), on a tmpfs.
#
# Usage: scripts/bench/history.sh [TRANSACTIONS...]     (default 10000)
# Environment: STOREFS=path/to/storefs skips the release build; REPEAT=N best of N runs (default 3).
set -euo pipefail
NAME=history
source "$(dirname "$0")/common.sh"
SIZES=("$@"); ((${#SIZES[@]})) || SIZES=(10000)
REPEAT=${REPEAT:-3}
need sqlite3 sqlite3; need python3 python3; need fusermount3 fuse3
[ -x /usr/bin/time ] || need /usr/bin/time time

bench_workspace 2g
corpus=Tests/Fixtures/corpus/sqlite/sergd2005_ResourcesManager_default.store

# best_us COMMAND...: the fastest of REPEAT runs, in microseconds (output discarded; a failure ends the script)
best_us() {
  local best="" t0 t1
  for _ in $(seq 1 "$REPEAT"); do
    t0=$(now_us)
    timeout 600 "$@" >/dev/null || { echo "$NAME: $* failed" >&2; exit 1; }
    t1=$(now_us)
    if [ -z "$best" ] || [ $((t1 - t0)) -lt "$best" ]; then best=$((t1 - t0)); fi
  done
  echo "$best"
}
ms() { awk -v us="$1" 'BEGIN {printf "%.0f ms", us / 1000}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1fx", a / b}'; }

echo "== storefs history benchmark ($(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo "binary: $STOREFS"
for n in "${SIZES[@]}"; do
  store="$TMPFS/history-$n.store"
  cp "$corpus" "$store"
  cp "$corpus-wal" "$store-wal"
  timeout 600 python3 - "$store" "$n" <<'PY'
import sqlite3, sys
path, total = sys.argv[1], int(sys.argv[2])
db = sqlite3.connect(path)
changes = db.execute("SELECT ZCHANGETYPE, ZENTITY, ZENTITYPK, ZCOLUMNS FROM ACHANGE ORDER BY Z_PK").fetchall()
row = db.execute("SELECT Z_PK, ZAUTHORTS, ZBUNDLEIDTS, ZCONTEXTNAMETS, ZPROCESSIDTS, ZTIMESTAMP FROM ATRANSACTION ORDER BY Z_PK DESC LIMIT 1").fetchone()
last, names, stamp = row[0], row[1:5], row[5]
change = db.execute("SELECT MAX(Z_PK) FROM ACHANGE").fetchone()[0]
with db:
    for t in range(last + 1, total + 1):
        db.execute("INSERT INTO ATRANSACTION (Z_PK, Z_ENT, ZAUTHORTS, ZBUNDLEIDTS, ZCONTEXTNAMETS, ZPROCESSIDTS, ZTIMESTAMP) "
                   "VALUES (?, 16002, ?, ?, ?, ?, ?)", (t, *names, stamp + t))
        for j in range(3):
            change += 1
            kind, entity, key, columns = changes[(3 * t + j) % len(changes)]
            db.execute("INSERT INTO ACHANGE (Z_PK, Z_ENT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID, ZCOLUMNS) "
                       "VALUES (?, 16001, ?, ?, ?, ?, ?)", (change, kind, entity, key, t, columns))
    db.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_NAME = 'TRANSACTION'", (total,))
    db.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_NAME = 'CHANGE'", (change,))
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
PY
  transactions=$(sqlite3 -readonly "$store" "SELECT COUNT(*) FROM ATRANSACTION")
  changes=$(sqlite3 -readonly "$store" "SELECT COUNT(*) FROM ACHANGE")
  lines=$("$STOREFS" history "$store" | wc -l)
  [ "$lines" -eq $((transactions + changes)) ] || { echo "$NAME: storefs history printed $lines lines, expected $((transactions + changes))" >&2; exit 1; }

  query="SELECT t.Z_PK, t.ZTIMESTAMP, a.ZNAME, b.ZNAME, c.ZNAME, p.ZNAME, ch.Z_PK, ch.ZCHANGETYPE, ch.ZENTITY, ch.ZENTITYPK,
    hex(ch.ZCOLUMNS) FROM ATRANSACTION t LEFT JOIN ATRANSACTIONSTRING a ON a.Z_PK = t.ZAUTHORTS
    LEFT JOIN ATRANSACTIONSTRING b ON b.Z_PK = t.ZBUNDLEIDTS LEFT JOIN ATRANSACTIONSTRING c ON c.Z_PK = t.ZCONTEXTNAMETS
    LEFT JOIN ATRANSACTIONSTRING p ON p.Z_PK = t.ZPROCESSIDTS LEFT JOIN ACHANGE ch ON ch.ZTRANSACTIONID = t.Z_PK
    ORDER BY t.Z_PK, ch.Z_PK"
  base=$(best_us sqlite3 -readonly "$store" "$query")
  fixed=$(best_us "$STOREFS" history --since $((transactions - 1)) "$store")
  text=$(best_us "$STOREFS" history "$store")
  json=$(best_us "$STOREFS" history --json "$store")
  /usr/bin/time -v "$STOREFS" history --json "$store" >/dev/null 2>"$WORK/time" || { cat "$WORK/time" >&2; exit 1; }
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$WORK/time")
  /usr/bin/time -v "$STOREFS" history --since $((transactions - 1)) "$store" >/dev/null 2>"$WORK/time"
  rss_fixed=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$WORK/time")

  echo
  echo "-- $transactions transactions, $changes changes ($(du -m "$store" | cut -f1) MB; best of $REPEAT)"
  printf '  %-44s %10s\n' "sqlite3, the same rows joined (baseline)" "$(ms "$base")"
  printf '  %-44s %10s  %s\n' "storefs history --since LAST-1 (fixed cost)" "$(ms "$fixed")" "$(ratio "$fixed" "$base")"
  printf '  %-44s %10s  %s; without the fixed cost %s (%s per transaction)\n' "storefs history (text)" "$(ms "$text")" \
    "$(ratio "$text" "$base")" "$(ratio $((text - fixed)) "$base")" "$(awk -v us=$((text - fixed)) -v n="$transactions" 'BEGIN {printf "%.1f us", us / n}')"
  printf '  %-44s %10s  %s; without the fixed cost %s\n' "storefs history --json" "$(ms "$json")" "$(ratio "$json" "$base")" \
    "$(ratio $((json - fixed)) "$base")"
  printf '  %-44s %10s\n' "peak RSS: history --json / --since LAST-1" "$rss MB / $rss_fixed MB"

  # The same history as folders: a fresh read-only mount per run of each listing.
  numbers=$(best_us sqlite3 -readonly "$store" "SELECT Z_PK FROM ATRANSACTION ORDER BY Z_PK")
  mount_ls() {
    "$STOREFS" mount "$store" "$MNT" -o ro --log-file "$WORK/mount.log" || { cat "$WORK/mount.log" >&2; exit 1; }
    local t0 t1
    t0=$(now_us)
    timeout 600 "$@" >/dev/null || { echo "$NAME: $* failed" >&2; exit 1; }
    t1=$(now_us)
    unmount_store
    echo $((t1 - t0))
  }
  best_mount() {
    local best="" t
    for _ in $(seq 1 "$REPEAT"); do
      t=$(mount_ls "$@")
      if [ -z "$best" ] || [ "$t" -lt "$best" ]; then best=$t; fi
    done
    echo "$best"
  }
  "$STOREFS" mount "$store" "$MNT" -o ro --log-file "$WORK/mount.log"
  listed=$(ls -U "$MNT/.history" | wc -l)
  unmount_store
  [ "$listed" -eq "$transactions" ] || { echo "$NAME: ls .history listed $listed, expected $transactions" >&2; exit 1; }
  ls_plain=$(best_mount ls -U "$MNT/.history")
  ls_long=$(best_mount ls -lU "$MNT/.history")
  lookup=$(best_mount ls "$MNT/.history/t$((transactions / 2))/updated")
  printf '  %-44s %10s\n' "sqlite3, transaction numbers (baseline)" "$(ms "$numbers")"
  printf '  %-44s %10s  %s\n' "ls -U MNT/.history (fresh mount)" "$(ms "$ls_plain")" "$(ratio "$ls_plain" "$numbers")"
  printf '  %-44s %10s  %s\n' "ls -lU MNT/.history (fresh mount)" "$(ms "$ls_long")" "$(ratio "$ls_long" "$numbers")"
  printf '  %-44s %10s\n' "ls MNT/.history/tN/updated (fresh mount)" "$(ms "$lookup")"
done
