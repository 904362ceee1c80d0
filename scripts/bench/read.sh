#!/usr/bin/env bash
# Read benchmark (issue 3): on read-only mounts of sample stores (default 10,000 and 100,000 objects),
# times three workloads cold (fresh mount: the kernel holds no dentries, storefs no rows) and warm (the
# same command again on that mount), and the same workloads on a copy of the mounted tree in a tmpfs
# made in the same run (cp -R -P) (baseline; run twice, the second run is reported). Prints per workload the
# times, the ratios to tmpfs and the FUSE operations storefs served (from user.storefs.stats).
#
#   ls -l     ls -l MNT/Employee (the largest entity directory)
#   find      find MNT | wc -l
#   cat all   find MNT -type f -print0 | xargs -0 cat   (find does not follow the links: each value once)
#
# Usage: scripts/bench/read.sh [OBJECTS...]     (default 10000 100000)
# Environment: STOREFS=path/to/storefs skips the build; REPEAT=N runs every size N times (default 1).
set -euo pipefail
NAME=read.sh
source "$(dirname "$0")/common.sh"
SIZES=("$@"); ((${#SIZES[@]})) || SIZES=(10000 100000)
REPEAT=${REPEAT:-1}

need getfattr attr; need fusermount3 fuse3; need python3 python3

bench_workspace 8g

WORKLOADS=("ls -l" "find" "cat all")
# run WORKLOAD ROOT: runs it under ROOT, prints microseconds; the output count goes to $WORK/count
run() {
  local t0 t1
  t0=$(now_us)
  case $1 in
    "ls -l") ls -l "$2/Employee" | wc -l >"$WORK/count";;
    "find") find "$2" | wc -l >"$WORK/count";;
    "cat all") find "$2" -type f -print0 | xargs -0 cat | wc -c >"$WORK/count";;
  esac
  t1=$(now_us)
  echo $((t1 - t0))
}

echo "== storefs read benchmark ($(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo "binary: $STOREFS"
for rep in $(seq 1 "$REPEAT"); do
for n in "${SIZES[@]}"; do
  store="$WORK/S$n.sqlite"
  [ -f "$store" ] || "$STOREFS" sample --objects "$n" "$store" >/dev/null
  results="$WORK/results-$n"; : >"$results"
  for w in "${WORKLOADS[@]}"; do
    "$STOREFS" mount "$store" "$MNT" -o ro --log-file "$WORK/mount-$n.log"
    s0=$(stats); cold=$(run "$w" "$MNT"); c_cold=$(cat "$WORK/count")
    s1=$(stats); warm=$(run "$w" "$MNT"); c_warm=$(cat "$WORK/count")
    s2=$(stats)
    if [ "$w" = "ls -l" ] && [ -z "$(ls -A "$TMPFS")" ]; then
      # like cp -a (links as links) but without copying xattrs: cp -a asks ~8 getxattr and 4 listxattr
      # per file, which made the copy of the 100,000-object tree take over 20 minutes
      cp -R -P --preserve=mode,timestamps "$MNT/." "$TMPFS/" 2>"$WORK/cp.err" \
        || { echo "read.sh: copying the mount reported:"; sort "$WORK/cp.err" | uniq -c | head -5; }
    fi
    unmount_store
    run "$w" "$TMPFS" >/dev/null; tmp=$(run "$w" "$TMPFS"); c_tmp=$(cat "$WORK/count")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$cold" "$warm" "$tmp" "$c_cold" "$c_warm" "$c_tmp" \
      "$s0" "$s1" "$s2" >>"$results"
  done
  python3 - "$n" "$results" "$rep" <<'EOF'
import json, sys
n, path, rep = sys.argv[1], sys.argv[2], sys.argv[3]
print(f"\n{n} objects (run {rep}); times in ms; counts: lines of output (ls -l, find) or bytes read (cat all)")
print(f"{'workload':<9} {'cold':>9} {'warm':>9} {'tmpfs':>9} {'cold/tmpfs':>10} {'warm/tmpfs':>10}  {'count storefs/tmpfs':<21}")
ops = []
for line in open(path):
    w, cold, warm, tmp, cc, cw, ct, s0, s1, s2 = line.rstrip("\n").split("\t")
    cold, warm, tmp = int(cold) / 1000, int(warm) / 1000, int(tmp) / 1000
    same = "" if cc == cw == ct else "  MISMATCH"
    print(f"{w:<9} {cold:>9.1f} {warm:>9.1f} {tmp:>9.1f} {cold/tmp:>9.1f}x {warm/tmp:>9.1f}x  {cc}/{ct}{same}")
    s0, s1, s2 = json.loads(s0), json.loads(s1), json.loads(s2)
    diff = lambda a, b: {k: v - a["fuse"].get(k, 0) for k, v in b["fuse"].items() if v - a["fuse"].get(k, 0)}
    fmt = lambda d: ", ".join(f"{k} {v}" for k, v in sorted(d.items(), key=lambda kv: -kv[1])) or "none"
    ops.append(f"  {w:<8} cold: {fmt(diff(s0, s1))}; storeRequests {s1['storeRequests'] - s0['storeRequests']}")
    ops.append(f"  {w:<8} warm: {fmt(diff(s1, s2))}; storeRequests {s2['storeRequests'] - s1['storeRequests']}")
print("FUSE operations served (each includes 1-2 for reading user.storefs.stats):")
print("\n".join(ops))
EOF
  if grep -qiE 'error|warn' "$WORK/mount-$n.log"; then echo "mount log (tail):"; tail -5 "$WORK/mount-$n.log"; fi
  rm -rf "${TMPFS:?}"/* "$WORK"/results-*
done
done
