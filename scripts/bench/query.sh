#!/usr/bin/env bash
# Query folder benchmark (issue 26, item 1): a query over the employees of a sample store of N
# objects (default 100,000) through a mount, three ways, each on a fresh mount (nothing cached):
# - the query folder: `ls MNT/.query/Employee/PREDICATE` and `cat .../.count` (SQL in the store);
# - without query folders: reading the two attribute files the predicate names in every employee's
#   folder and filtering (what a user would script: every object faulted);
# - sqlite3 counting the same rows in the file (the floor: no FUSE, no objects).
# Prints the times, the ratios and the store requests each mount path made.
#
# Usage: scripts/bench/query.sh [OBJECTS]
# Environment: STOREFS=path/to/storefs skips the release build.
set -euo pipefail
NAME=query
source "$(dirname "$0")/common.sh"
OBJECTS=${1:-100000}
need sqlite3 sqlite3
bench_workspace 16m
STORE="$WORK/Company.sqlite"
PREDICATE="level > 8 AND isRemote == YES"

echo "== query folder benchmark: $OBJECTS objects ($(date -u +%FT%TZ), $(nproc) cores," \
  "load $(cut -d' ' -f1-3 /proc/loadavg))"
echo "binary: $STOREFS"
"$STOREFS" sample --objects "$OBJECTS" "$STORE" >/dev/null
cat "$STORE" >/dev/null

mount_store() {
  timeout 120 "$STOREFS" mount "$STORE" "$MNT" -o ro || { echo "$NAME: storefs mount failed" >&2; exit 1; }
}
requests() { stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["storeRequests"])'; }
seconds_since() { python3 -c "print(f'{($(now_us) - $1) / 1e6:.3f}')"; }

mount_store
before=$(requests)
start=$(now_us)
listed=$(timeout 600 ls "$MNT/.query/Employee/$PREDICATE" | wc -l)
counted=$(timeout 600 cat "$MNT/.query/Employee/$PREDICATE/.count")
folder_secs=$(seconds_since "$start")
folder_requests=$(( $(requests) - before ))
unmount_store

mount_store
before=$(requests)
start=$(now_us)
walked=$(timeout 1200 python3 - "$MNT/Employee" <<'PY'
import os, sys
root, n = sys.argv[1], 0
for name in os.listdir(root):
    folder = os.path.join(root, name)
    try:
        with open(os.path.join(folder, "level")) as f: level = int(f.read())
        with open(os.path.join(folder, "isRemote")) as f: remote = f.read().strip() == "true"
    except FileNotFoundError:
        continue
    n += level > 8 and remote
print(n)
PY
)
walk_secs=$(seconds_since "$start")
walk_requests=$(( $(requests) - before ))
unmount_store

start=$(now_us)
floor=$(sqlite3 "$STORE" "SELECT count(*) FROM ZPERSON WHERE Z_ENT IN (SELECT Z_ENT FROM Z_PRIMARYKEY
  WHERE Z_NAME IN ('Employee', 'Manager')) AND ZLEVEL > 8 AND ZISREMOTE = 1")
sqlite_secs=$(seconds_since "$start")

echo "matches: query folder $listed listed, .count $counted; walking every employee $walked; sqlite3 $floor"
[ "$listed" = "$counted" ] && [ "$listed" = "$walked" ] && [ "$listed" = "$floor" ] \
  || { echo "$NAME: the three answers differ" >&2; exit 1; }
echo "query folder (ls + .count): $folder_secs s, $folder_requests store requests"
echo "walking every employee:     $walk_secs s, $walk_requests store requests"
echo "sqlite3 count:              $sqlite_secs s"
echo "walking / query folder time $(python3 -c "print(f'{$walk_secs / max($folder_secs, 0.001):.1f}')")," \
  "query folder / sqlite3 time $(python3 -c "print(f'{$folder_secs / max($sqlite_secs, 0.001):.1f}')")"
