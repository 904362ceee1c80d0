#!/usr/bin/env bash
# Engine benchmark (issue 2): time and peak memory of writing a sample store of N objects
# (default 1,000,000) and of `storefs info` on it; the number of store queries needed to fire 10,000
# faults after a listing, read from the mount's counters (user.storefs.stats). Baseline in the same run:
# sqlite3 bulk-inserting the same number of rows (one transaction, generated in SQL), which is a lower
# bound for any writer of that many rows.
#
# Usage: scripts/bench/engine.sh [OBJECTS] [FAULTS]     (defaults 1000000 10000)
# Environment: STOREFS=path/to/storefs skips the build; BENCH_DIR=DIR puts the temporary store there
# (default: a fresh directory under /tmp, on disk). Needs root or a user allowed to mount FUSE.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/opt/swift/usr/bin:$PATH"
OBJECTS=${1:-1000000}
FAULTS=${2:-10000}

need() { command -v "$1" >/dev/null 2>&1 || { [ "$(id -u)" -eq 0 ] || SUDO=sudo; ${SUDO:-} apt-get install -y -qq "$2" >/dev/null; }; }
[ -x /usr/bin/time ] || need /usr/bin/time time
need sqlite3 sqlite3; need getfattr attr; need fusermount3 fuse3; need python3 python3
if [ -z "${STOREFS:-}" ]; then
  swift build -c release --product storefs >&2
  STOREFS="$(swift build -c release --show-bin-path)/storefs"
fi
[ -x "$STOREFS" ] || { echo "engine.sh: no storefs binary at $STOREFS" >&2; exit 1; }

WORK=$(mktemp -d "${BENCH_DIR:-/tmp}/storefs-bench-engine.XXXXXX")
MNT="$WORK/mnt"
mkdir -p "$MNT"
cleanup() {
  set +e
  if mountpoint -q "$MNT"; then fusermount3 -u "$MNT" || fusermount3 -uz "$MNT"; fi
  for _ in $(seq 1 300); do pgrep -f -- "$(basename "$STOREFS") mount .* $MNT" >/dev/null || break; sleep 0.1; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now_us() { date +%s%6N; }
stats() { getfattr --only-values -n user.storefs.stats "$MNT" 2>/dev/null | tr -d "\n"; }
# rss_kb FILE / secs FILE: fields of a /usr/bin/time -v report
rss_mb() { awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$1"; }
secs() { awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; printf "%.2f", s}' "$1"; }
cpu() { awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {printf "%.2f", u+s}' "$1"; }

echo "== storefs engine benchmark: $OBJECTS objects, $FAULTS faults ($(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo "binary: $STOREFS"

# 1. sample write
/usr/bin/time -v "$STOREFS" sample --objects "$OBJECTS" "$WORK/X.sqlite" >"$WORK/sample.out" 2>"$WORK/sample.time" \
  || { cat "$WORK/sample.out" "$WORK/sample.time" >&2; exit 1; }
size_mb=$(du -cm "$WORK"/X.sqlite* | awk 'END {print $1}')
rows=$(sqlite3 "$WORK/X.sqlite" "SELECT group_concat(name, ' ') FROM sqlite_master WHERE type='table' AND name LIKE 'Z%' AND name NOT IN ('Z_PRIMARYKEY','Z_METADATA','Z_MODELCACHE')" \
  | tr ' ' '\n' | while read -r t; do sqlite3 "$WORK/X.sqlite" "SELECT count(*) FROM $t"; done | awk '{s+=$1} END {print s}')

# 2. info
/usr/bin/time -v "$STOREFS" info "$WORK/X.sqlite" >"$WORK/info.out" 2>"$WORK/info.time" \
  || { cat "$WORK/info.out" "$WORK/info.time" >&2; exit 1; }

# 3. baseline: sqlite3 writes as many rows, with as many columns, in one transaction, generated in SQL
cols=$(sqlite3 "$WORK/X.sqlite" "SELECT count(*) FROM pragma_table_info('ZPERSON')")
[ "$cols" -gt 3 ] || cols=8
colsdef=$(for i in $(seq 4 "$cols"); do printf ', c%d' "$i"; done)
colsval=$(for i in $(seq 4 "$cols"); do if ((i % 2)); then printf ", x*%d" "$i"; else printf ", 'value '||x"; fi; done)
/usr/bin/time -v sqlite3 "$WORK/B.sqlite" "PRAGMA journal_mode=WAL; CREATE TABLE ZPERSON(Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER$colsdef);
  WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n WHERE x < $rows)
  INSERT INTO ZPERSON SELECT x, 1, 1$colsval FROM n;" >/dev/null 2>"$WORK/base.time"

# 4. faults: list Employee on a read-only mount, then read one attribute of FAULTS objects
"$STOREFS" mount "$WORK/X.sqlite" "$MNT" -o ro --log-file "$WORK/mount.log"
s0=$(stats)
t0=$(now_us)
ls -f "$MNT/Employee" | grep -v '^\.\.\?$' >"$WORK/list"
t1=$(now_us)
s1=$(stats)
head -n "$FAULTS" "$WORK/list" | sed "s|^|$MNT/Employee/|;s|\$|/lastName|" | xargs cat >/dev/null
t2=$(now_us)
s2=$(stats)
listed=$(wc -l <"$WORK/list")
fusermount3 -u "$MNT"
while pgrep -f -- "$(basename "$STOREFS") mount .* $MNT" >/dev/null; do sleep 0.1; done
# the same reads on a fresh mount without the listing first: faults fire one lookup at a time
"$STOREFS" mount "$WORK/X.sqlite" "$MNT" -o ro --log-file "$WORK/mount.log"
s3=$(stats)
t3=$(now_us)
head -n "$FAULTS" "$WORK/list" | sed "s|^|$MNT/Employee/|;s|\$|/lastName|" | xargs cat >/dev/null
t4=$(now_us)
s4=$(stats)
fusermount3 -u "$MNT"
while pgrep -f -- "$(basename "$STOREFS") mount .* $MNT" >/dev/null; do sleep 0.1; done

objects=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["objects"])' <<<"$("$STOREFS" info --json "$WORK/X.sqlite")")
printf '\n%-44s %10s %10s %10s %12s\n' "workload" "wall s" "cpu s" "peak MiB" "rows/s"
for w in sample info base; do
  f="$WORK/$w.time"
  case $w in
    sample) name="storefs sample --objects $OBJECTS";;
    info) name="storefs info (same store)";;
    base) name="baseline: sqlite3 INSERT $rows rows x $cols cols";;
  esac
  s=$(secs "$f")
  printf '%-44s %10s %10s %10s %12s\n' "$name" "$s" "$(cpu "$f")" "$(rss_mb "$f")" \
    "$([ $w = info ] && echo - || awk -v n="$rows" -v s="$s" 'BEGIN {printf "%.0f", (s > 0 ? n/s : 0)}')"
done
printf '\nstore: %s objects, %s rows in Z tables (with join tables), %s MiB on disk (with WAL)\n' "$objects" "$rows" "$size_mb"
printf 'storefs sample: %s objects/s\n' "$(awk -v n="$objects" -v s="$(secs "$WORK/sample.time")" 'BEGIN {printf "%.0f", n/s}')"
printf 'ratio sample/baseline wall: %s\n' "$(awk -v a="$(secs "$WORK/sample.time")" -v b="$(secs "$WORK/base.time")" 'BEGIN {printf "%.1fx", a/b}')"

python3 - "$s0" "$s1" "$s2" "$listed" "$FAULTS" "$t0" "$t1" "$t2" "$s3" "$s4" "$t3" "$t4" <<'EOF'
import json, sys
s0, s1, s2 = (json.loads(a) for a in sys.argv[1:4])
listed, faults = int(sys.argv[4]), int(sys.argv[5])
t0, t1, t2 = (int(a) for a in sys.argv[6:9])
s3, s4 = (json.loads(a) for a in sys.argv[9:11])
t3, t4 = (int(a) for a in sys.argv[11:13])
d = lambda a, b, k: b.get(k, 0) - a.get(k, 0)
print(f"\nfaulting (read-only mount, batch 500):")
print(f"{'step':<44} {'wall s':>10} {'storeRequests':>14} {'faultsFired':>12} {'cachedObjects':>14}")
print(f"{'ls -f Employee (' + str(listed) + ' names)':<44} {(t1-t0)/1e6:>10.2f} {d(s0,s1,'storeRequests'):>14} {d(s0,s1,'faultsFired'):>12} {s1.get('cachedObjects',0):>14}")
print(f"{'cat lastName of the first ' + str(faults):<44} {(t2-t1)/1e6:>10.2f} {d(s1,s2,'storeRequests'):>14} {d(s1,s2,'faultsFired'):>12} {s2.get('cachedObjects',0):>14}")
print(f"{'same cat, fresh mount, no listing first':<44} {(t4-t3)/1e6:>10.2f} {d(s3,s4,'storeRequests'):>14} {d(s3,s4,'faultsFired'):>12} {s4.get('cachedObjects',0):>14}")
print(f"expected about {faults // 500} + a few store requests for {faults} faults (cache {s2.get('cacheBytes',0)/2**20:.1f} MiB)")
fo = {k: s2['fuse'].get(k, 0) - s1['fuse'].get(k, 0) for k in s2.get('fuse', {})}
print("FUSE operations during the cat step:", ", ".join(f"{k} {v}" for k, v in sorted(fo.items(), key=lambda kv: -kv[1]) if v))
EOF
echo; echo "storefs info output:"; sed 's/^/  /' "$WORK/info.out"
if grep -qiE 'error|warn' "$WORK/mount.log"; then echo "mount log (tail):"; tail -5 "$WORK/mount.log"; fi
