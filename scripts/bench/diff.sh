#!/usr/bin/env bash
# Diff benchmark (issue 26, item 4): `storefs diff` of two sample stores of N objects (default
# 100,000) that differ in about 2% of their objects (values, relationships, deletions), in objects
# compared per second. Baselines in the same run: sqldiff (SQLite's own row-by-row diff of two
# databases) and `sqlite3 .dump` of both stores followed by diff(1), the text a user would
# otherwise compare.
#
# Usage: scripts/bench/diff.sh [OBJECTS]
# Environment: STOREFS=path/to/storefs skips the release build.
set -euo pipefail
NAME=diff
source "$(dirname "$0")/common.sh"
OBJECTS=${1:-100000}
need sqlite3 sqlite3; need sqldiff sqlite3-tools
[ -x /usr/bin/time ] || need /usr/bin/time time

WORK=$(mktemp -d "/tmp/storefs-bench-$NAME.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM
A="$WORK/A.sqlite"
B="$WORK/B.sqlite"

echo "== storefs diff benchmark: two stores of $OBJECTS objects ($(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo "binary: $STOREFS"
"$STOREFS" sample --objects "$OBJECTS" "$A" >/dev/null
"$STOREFS" sample --objects "$OBJECTS" "$B" >/dev/null
# The second store changed as an app would change it, in SQL: new last names and levels, moved
# employees, removed project members, deleted milestones (with their projects' order).
sqlite3 "$B" <<'SQL'
UPDATE ZPERSON SET ZLASTNAME = ZLASTNAME || ' Jr.', Z_OPT = Z_OPT + 1 WHERE Z_PK % 97 = 0;
UPDATE ZPERSON SET ZLEVEL = 1 + (ZLEVEL % 10), Z_OPT = Z_OPT + 1 WHERE Z_PK % 101 = 0;
UPDATE ZPERSON SET ZDEPARTMENT = 1 + (ZDEPARTMENT % (SELECT MAX(Z_PK) FROM ZDEPARTMENT)), Z_OPT = Z_OPT + 1 WHERE Z_PK % 89 = 0;
DELETE FROM Z_4PROJECTS WHERE rowid % 113 = 0;
DELETE FROM ZMILESTONE WHERE Z_PK % 53 = 0;
SQL
objects=$("$STOREFS" info --json "$A" | python3 -c 'import json,sys; print(json.load(sys.stdin)["objects"])')
cat "$A" "$B" >/dev/null

secs() { awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; printf "%.2f", s}' "$1"; }
rss_mb() { awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$1"; }
rate() { python3 -c "print(f'{$1 / max($2, 0.001):,.0f}')"; }
ratio() { python3 -c "print(f'{$1 / max($2, 0.001):.2f}')"; }

# storefs diff exits 1 when the stores differ, as diff(1) does.
/usr/bin/time -v "$STOREFS" diff "$A" "$B" >"$WORK/storefs.out" 2>"$WORK/storefs.time" || [ $? -eq 1 ] \
  || { cat "$WORK/storefs.time" >&2; exit 1; }
/usr/bin/time -v sqldiff "$A" "$B" >"$WORK/sqldiff.out" 2>"$WORK/sqldiff.time" || { cat "$WORK/sqldiff.time" >&2; exit 1; }
/usr/bin/time -v bash -c 'sqlite3 "$0" .dump >"$2/a.sql" && sqlite3 "$1" .dump >"$2/b.sql" && { diff "$2/a.sql" "$2/b.sql" >"$2/dump.out" || [ $? -eq 1 ]; }' \
  "$A" "$B" "$WORK" 2>"$WORK/dump.time" || { cat "$WORK/dump.time" >&2; exit 1; }

s=$(secs "$WORK/storefs.time"); q=$(secs "$WORK/sqldiff.time"); d=$(secs "$WORK/dump.time")
echo "storefs diff:        $s s, $(rate "$objects" "$s") objects/s, peak RSS $(rss_mb "$WORK/storefs.time") MB, $(grep -c '^[-+~] ' "$WORK/storefs.out") objects differ ($(grep -c '^[-] ' "$WORK/storefs.out") deleted, $(grep -c '^[~] ' "$WORK/storefs.out") changed)"
echo "sqldiff:             $q s, peak RSS $(rss_mb "$WORK/sqldiff.time") MB, $(wc -l <"$WORK/sqldiff.out") statements"
echo "sqlite3 .dump + diff: $d s, $(grep -c '^[<>]' "$WORK/dump.out") lines differ"
echo "storefs/sqldiff time $(ratio "$s" "$q"), storefs/(dump+diff) time $(ratio "$s" "$d")"
