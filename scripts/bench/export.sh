#!/usr/bin/env bash
# Export benchmark (issue 26, item 2): `storefs export` of a sample store of N objects (default
# 1,000,000) as JSON Lines and as CSV, in objects per second, with its peak memory. Baseline in the
# same run: sqlite3 dumping the same rows (every row of the store's entity and join tables, as
# JSON, then as CSV), which reads the file the same way without turning rows into objects.
#
# Usage: scripts/bench/export.sh [OBJECTS]
# Environment: STOREFS=path/to/storefs skips the release build.
set -euo pipefail
NAME=export
source "$(dirname "$0")/common.sh"
OBJECTS=${1:-1000000}
need sqlite3 sqlite3
[ -x /usr/bin/time ] || need /usr/bin/time time

WORK=$(mktemp -d "/tmp/storefs-bench-$NAME.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM
STORE="$WORK/Company.sqlite"

echo "== storefs export benchmark: $OBJECTS objects ($(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo "binary: $STOREFS"
"$STOREFS" sample --objects "$OBJECTS" "$STORE" >/dev/null
objects=$("$STOREFS" info --json "$STORE" | python3 -c 'import json,sys; print(json.load(sys.stdin)["objects"])')
tables=$(sqlite3 "$STORE" "SELECT group_concat(name, ' ') FROM sqlite_master WHERE type='table' AND name LIKE 'Z%' AND name NOT IN ('Z_PRIMARYKEY','Z_METADATA','Z_MODELCACHE')")
rows=$(for t in $tables; do sqlite3 "$STORE" "SELECT count(*) FROM $t"; done | awk '{s+=$1} END {print s}')
echo "store: $objects objects, $rows rows in tables $tables, $(du -m "$STORE" | cut -f1) MB"
# Warm the page cache for both readers alike.
cat "$STORE" >/dev/null

secs() { awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; printf "%.2f", s}' "$1"; }
rss_mb() { awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$1"; }
cpu() { awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {printf "%.2f", u+s}' "$1"; }
rate() { python3 -c "print(f'{$1 / max($2, 0.001):,.0f}')"; }
ratio() { python3 -c "print(f'{$1 / max($2, 0.001):.2f}')"; }

# run LABEL OUTPUT COMMAND...: time and peak memory of COMMAND writing to OUTPUT.
run() {
  local label=$1 output=$2; shift 2
  /usr/bin/time -v "$@" >"$output" 2>"$WORK/$label.time" || { cat "$WORK/$label.time" >&2; exit 1; }
  printf '%s %s %s %s\n' "$(secs "$WORK/$label.time")" "$(rss_mb "$WORK/$label.time")" "$(wc -c <"$output")" "$(cpu "$WORK/$label.time")"
}
sqlite_dump() { # MODE: every row of every table, one sqlite3 run per table, as storefs reads them
  for t in $tables; do sqlite3 -"$1" "$STORE" "SELECT * FROM $t"; done
}
export -f sqlite_dump; export STORE tables

for format in jsonl csv; do
  if [ "$format" = csv ]; then
    # CSV holds one entity: the whole store is exported entity by entity.
    cmd=(bash -c 'for e in Department Employee Project Milestone; do "$0" export "$1" --entity "$e" --format csv; done' "$STOREFS" "$STORE")
    baseline=(bash -c 'sqlite_dump csv')
  else
    cmd=("$STOREFS" export "$STORE")
    baseline=(bash -c 'sqlite_dump json')
  fi
  read -r s_secs s_rss s_bytes s_cpu < <(run "storefs-$format" "$WORK/out.$format" "${cmd[@]}")
  read -r b_secs b_rss b_bytes b_cpu < <(run "sqlite3-$format" "$WORK/base.$format" "${baseline[@]}")
  lines=$(wc -l <"$WORK/out.$format")
  echo "$format: storefs export $s_secs s ($s_cpu s CPU), $(rate "$objects" "$s_secs") objects/s, peak RSS $s_rss MB, $((s_bytes / 1048576)) MB, $lines lines"
  echo "$format: sqlite3 dump    $b_secs s ($b_cpu s CPU), $(rate "$rows" "$b_secs") rows/s, peak RSS $b_rss MB, $((b_bytes / 1048576)) MB"
  echo "$format: storefs/sqlite3 time $(ratio "$s_secs" "$b_secs"), CPU $(ratio "$s_cpu" "$b_cpu")"
  rm -f "$WORK/out.$format" "$WORK/base.$format"
done

# A query: the employees of the Sales departments with a high level, filtered in SQL.
read -r q_secs q_rss q_bytes < <(run query "$WORK/query.jsonl" "$STOREFS" export "$STORE" --entity Employee \
  --where "level > 5 AND department.name BEGINSWITH 'Sales'")
echo "query: storefs export --where $q_secs s, $(wc -l <"$WORK/query.jsonl") of the employees, peak RSS $q_rss MB"
