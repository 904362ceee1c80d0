#!/usr/bin/env bash
# Read benchmark (issues 3 and 14): on read-only mounts of sample stores (default 10,000 and 100,000
# objects), times each workload cold (a fresh mount, and the kernel's caches dropped: no dentries, no
# pages of the store file, storefs holds no rows) and warm (the same command again on that mount),
# and the same workload on a copy of the mounted tree in a tmpfs made in the same run (cp -R -P; run
# twice, the second run is reported) and on the FUSE floor (fuse-floor, an in-memory copy of that tree
# served through FuseKit read-only as storefs mounts it: what any FUSE filesystem pays here; caches
# dropped before its cold run; with requests over io_uring as storefs's where the kernel offers it, and
# again over /dev/fuse). Prints per workload the times, the ratios to tmpfs and the floor, the cost
# per entry, the server's CPU time per entry, the store requests and FUSE operations it served (from
# user.storefs.stats), and the server's peak RSS.
#
#   ls -l         ls -l MNT/Employee | wc -l          (the largest entity directory)
#   find          find MNT -type f | wc -l            (every attribute file of the mount)
#   cat Employee  find MNT/Employee -type f -print0 | xargs -0 cat | wc -c
#                                                    (every attribute file of the largest entity)
# Baselines besides tmpfs: `sqlite3 STORE 'SELECT * FROM ZPERSON'` (cold, against cold `ls -l`),
# and concurrency: 4 processes each listing and reading a different entity (Employee, Milestone,
# Manager, Project: ls -l, then cat of every file) at once, against the same 4 one after another,
# each on a fresh mount with cold caches.
#
# A tmpfs copy of a store beyond TMPFS_LIMIT objects (default 100000; 1,000,000 objects are 11
# million files, 44 GB of tmpfs pages) is not made: its tmpfs column is then the largest measured
# size's time scaled by the entries (marked ~).
#
# Usage: scripts/bench/read.sh [OBJECTS...]     (default 10000 100000)
# Environment: STOREFS=path/to/storefs skips the build; FLOOR=path/to/fuse-floor (else the one beside
# STOREFS, else built); REPEAT=N runs every size N times (default 1);
# TMPFS_LIMIT=N as above; WORKLOADS="ls -l,find" runs only those (comma-separated; a 1,000,000-object
# `cat Employee` reads 9 million files); PARALLEL=0 leaves out the concurrency figure.
set -euo pipefail
NAME=read.sh
source "$(dirname "$0")/common.sh"
SIZES=("$@"); ((${#SIZES[@]})) || SIZES=(10000 100000)
REPEAT=${REPEAT:-1}
TMPFS_LIMIT=${TMPFS_LIMIT:-100000}

need getfattr attr; need fusermount3 fuse3; need python3 python3; need sqlite3 sqlite3
use_floor

bench_workspace 8g

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }
# server CPU time (user + system) in ms, and peak RSS in KiB
server_cpu_ms() { awk '{print ($14 + $15) * 1000 / '"$(getconf CLK_TCK)"'}' "/proc/$1/stat"; }
server_hwm_kb() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }
# how often anyone dropped the kernel's dentry and inode caches since boot
cache_drops() { awk '$1 == "drop_slab" {print $2}' /proc/vmstat; }

IFS=, read -r -a WORKLOADS <<<"${WORKLOADS:-ls -l,find,cat Employee}"
# run WORKLOAD ROOT: runs it under ROOT, prints microseconds; the output count goes to $WORK/count
run() {
  local t0 t1
  t0=$(now_us)
  case $1 in
    "ls -l") ls -l "$2/Employee" | wc -l >"$WORK/count";;
    "find") find "$2" -type f | wc -l >"$WORK/count";;
    "cat Employee") find "$2/Employee" -type f -print0 | xargs -0 cat | wc -c >"$WORK/count";;
  esac
  t1=$(now_us)
  echo $((t1 - t0))
}
# entity_work ROOT ENTITY: what one of the 4 concurrent processes does
entity_work() { ls -l "$1/$2" >/dev/null; find "$1/$2" -type f -print0 | xargs -0 cat >/dev/null; }
PARALLEL_ENTITIES=(Employee Milestone Manager Project)

echo "== storefs read benchmark ($(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo "binary: $STOREFS"
scaled_from="" # "objects:file" of the largest size with a tmpfs copy
for rep in $(seq 1 "$REPEAT"); do
for n in "${SIZES[@]}"; do
  store="$WORK/S$n.sqlite"
  [ -f "$store" ] || "$STOREFS" sample --objects "$n" "$store" >/dev/null
  results="$WORK/results-$n"; : >"$results"
  with_tmpfs=$((n <= TMPFS_LIMIT))
  load_at_start=$(cut -d' ' -f1 /proc/loadavg)
  if ((with_tmpfs)) && [ -z "$(ls -A "$TMPFS")" ]; then
    # the tmpfs baseline and the floor's source: the mounted tree, copied like cp -a (links as
    # links) but without xattrs: cp -a asks ~8 getxattr and 4 listxattr per file, which made the
    # copy of the 100,000-object tree take over 20 minutes
    "$STOREFS" mount "$store" "$MNT" -o ro --log-file "$WORK/mount-$n.log"
    cp -R -P --preserve=mode,timestamps "$MNT/." "$TMPFS/" 2>"$WORK/cp.err" \
      || { echo "read.sh: copying the mount reported:"; sort "$WORK/cp.err" | uniq -c | head -5; }
    unmount_store
  fi
  for w in "${WORKLOADS[@]}"; do
    "$STOREFS" mount "$store" "$MNT" -o ro --log-file "$WORK/mount-$n.log"
    pid=$(server_pid)
    drop_caches
    s0=$(stats); cpu0=$(server_cpu_ms "$pid")
    cold=$(run "$w" "$MNT"); c_cold=$(cat "$WORK/count")
    cpu1=$(server_cpu_ms "$pid"); s1=$(stats); drops0=$(cache_drops)
    warm=$(run "$w" "$MNT"); c_warm=$(cat "$WORK/count")
    s2=$(stats); hwm=$(server_hwm_kb "$pid")
    # anyone's drop_caches during the warm run empties the kernel's caches: it is no warm run then
    if [ "$(cache_drops)" != "$drops0" ]; then echo "read.sh: the machine's caches were dropped during the warm $w (by another process)"; fi
    unmount_store
    tmp=-1; c_tmp=-
    if ((with_tmpfs)); then
      drop_caches; run "$w" "$TMPFS" >/dev/null; tmp=$(run "$w" "$TMPFS"); c_tmp=$(cat "$WORK/count")
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$cold" "$warm" "$tmp" "$c_cold" "$c_warm" "$c_tmp" \
      "$s0" "$s1" "$s2" "$((cpu1 - cpu0))" "$hwm" >>"$results"
  done
  # the FUSE floor: every workload cold (caches dropped) and warm on one read-only fuse-floor mount,
  # with requests over io_uring (as storefs's, where the kernel offers it), then over /dev/fuse
  : >"$WORK/floor-$n"; : >"$WORK/floor-dev-$n"
  if ((with_tmpfs)); then
    for way in ring dev; do
      if [ $way = ring ]; then mount_floor --read-only "$TMPFS"; out="$WORK/floor-$n"
      else mount_floor --read-only --no-io-uring "$TMPFS"; out="$WORK/floor-dev-$n"; fi
      for w in "${WORKLOADS[@]}"; do
        drop_caches; cpu0=$(server_cpu_ms "$FLOOR_PID")
        cold=$(run "$w" "$FLOOR_MNT"); c_cold=$(cat "$WORK/count"); cpu1=$(server_cpu_ms "$FLOOR_PID")
        warm=$(run "$w" "$FLOOR_MNT")
        printf '%s\t%s\t%s\t%s\t%s\n' "$w" "$cold" "$warm" "$c_cold" "$((cpu1 - cpu0))" >>"$out"
      done
      unmount_floor
    done
    grep -h "requests came through" "$WORK/floor.log" | sort | uniq -c | sed 's/^/floor: /'; : >"$WORK/floor.log"
  fi
  # sqlite3 reading every row of the Employee/Manager table, cold, against cold ls -l
  drop_caches
  t0=$(now_us); sqlite3 "$store" 'SELECT * FROM ZPERSON' | wc -l >/dev/null; t1=$(now_us)
  sqlite_us=$((t1 - t0))
  # concurrency: 4 entities one after another, then at once, each on a fresh mount, caches dropped
  sequential_us=1; parallel_us=0
  if [ "${PARALLEL:-1}" != 0 ]; then
  "$STOREFS" mount "$store" "$MNT" -o ro --log-file "$WORK/mount-$n.log"; drop_caches
  t0=$(now_us); for e in "${PARALLEL_ENTITIES[@]}"; do entity_work "$MNT" "$e"; done; t1=$(now_us)
  sequential_us=$((t1 - t0)); unmount_store
  "$STOREFS" mount "$store" "$MNT" -o ro --log-file "$WORK/mount-$n.log"; drop_caches
  t0=$(now_us); for e in "${PARALLEL_ENTITIES[@]}"; do entity_work "$MNT" "$e" & done; wait; t1=$(now_us)
  parallel_us=$((t1 - t0)); unmount_store
  fi
  if ((with_tmpfs)); then scaled_from="$n:$results.keep"; cp "$results" "$results.keep"; fi
  grep -ho "FUSE requests of .* arrive through [^ ]*" "$WORK/mount-$n.log" | sed 's/ of [^ ]* / /' | sort | uniq -c | sed 's/^/storefs: /' || true
  python3 - "$n" "$results" "$rep" "$sqlite_us" "$sequential_us" "$parallel_us" "$load_at_start" "$(cut -d' ' -f1 /proc/loadavg)" "$scaled_from" "$WORK/floor-$n" "$WORK/floor-dev-$n" <<'EOF'
import json, sys
n, path, rep = sys.argv[1], sys.argv[2], sys.argv[3]
sqlite_us, seq_us, par_us = (int(a) for a in sys.argv[4:7])
load0, load1, scaled_from = sys.argv[7], sys.argv[8], sys.argv[9]
floor = {}  # workload -> (cold ms, warm ms, count, server CPU ms of the cold run)
for line in open(sys.argv[10]):
    w, fc, fw, fcount, fcpu = line.rstrip("\n").split("\t")
    floor[w] = (int(fc) / 1000, int(fw) / 1000, fcount, float(fcpu))
floor_dev = {}  # the same over /dev/fuse
for line in open(sys.argv[11]):
    w, fc, fw, fcount, fcpu = line.rstrip("\n").split("\t")
    floor_dev[w] = (int(fc) / 1000, int(fw) / 1000, fcount, float(fcpu))
reference = {}
if scaled_from:
    ref_n, ref_path = scaled_from.split(":", 1)
    for line in open(ref_path):
        f = line.rstrip("\n").split("\t")
        if int(f[3]) > 0:
            reference[f[0]] = int(f[3]) / int(f[6])  # tmpfs microseconds per counted unit
print(f"\n{n} objects (run {rep}; load {load0} at the start, {load1} at the end); times in ms; counts: lines (ls -l, find) or bytes (cat)")
print(f"{'workload':<13} {'cold':>9} {'warm':>9} {'tmpfs':>10} {'cold/tmpfs':>10} {'warm/tmpfs':>10} {'floor cold':>10} {'floor warm':>10} {'cold/floor':>10} {'warm/floor':>10} {'floor/tmpfs':>11} {'floor /dev/fuse cold':>20} {'/dev/fuse floor/tmpfs':>21} {'cold us/entry':>13} {'server CPU us/entry':>19} {'floor CPU us/entry':>18} {'peak RSS MiB':>12}  count storefs/tmpfs/floor")
ops = []
ls_cold = None
for line in open(path):
    w, cold, warm, tmp, cc, cw, ct, s0, s1, s2, cpu, hwm = line.rstrip("\n").split("\t")
    cold, warm, tmp = int(cold) / 1000, int(warm) / 1000, int(tmp) / 1000
    mark = ""
    if tmp < 0 and w in reference:
        tmp, mark, ct = reference[w] * int(cc) / 1000, "~", cc
    fcold, fwarm, fcount, fcpu = floor.get(w, (-1, -1, "-", -1))
    same = "" if cc == cw == ct and fcount in (cc, "-") else "  MISMATCH"
    s0, s1, s2 = json.loads(s0), json.loads(s1), json.loads(s2)
    # entries the workload walked: lines listed; for cat, the files read (READ requests, and the
    # files preloaded after a sibling was read, which the kernel then reads from its page cache)
    served = lambda key: s1["fuse"].get(key, 0) - s0["fuse"].get(key, 0)
    entries = int(cc) if w != "cat Employee" else max(1, served("read") + served("preloads"))
    if w == "ls -l": ls_cold = cold
    ratio = lambda a: f"{mark}{a / tmp:.2f}x" if tmp > 0 else "-"
    tmptext = f"{mark}{tmp:.1f}" if tmp > 0 else "-"
    over = lambda a, b: f"{a / b:.2f}x" if a > 0 and b > 0 else "-"
    floor_cpu = f"{fcpu * 1000 / entries:.2f}" if fcpu >= 0 else "-"
    ftext = lambda a: f"{a:.1f}" if a > 0 else "-"
    print(f"{w:<13} {cold:>9.1f} {warm:>9.1f} {tmptext:>10} {ratio(cold):>10} {ratio(warm):>10} {ftext(fcold):>10} {ftext(fwarm):>10} "
          f"{over(cold, fcold):>10} {over(warm, fwarm):>10} {over(fcold, tmp if not mark else -1):>11} "
          f"{ftext(floor_dev.get(w, (-1,))[0]):>20} {over(floor_dev.get(w, (-1,))[0], tmp if not mark else -1):>21} {cold * 1000 / entries:>13.2f} "
          f"{int(float(cpu)) * 1000 / entries:>19.2f} {floor_cpu:>18} {int(hwm) / 1024:>12.1f}  {cc}/{ct}/{fcount}{same}")
    diff = lambda a, b: {k: v - a["fuse"].get(k, 0) for k, v in b["fuse"].items() if v - a["fuse"].get(k, 0)}
    fmt = lambda d: ", ".join(f"{k} {v}" for k, v in sorted(d.items(), key=lambda kv: -kv[1])) or "none"
    ops.append(f"  {w:<12} cold: storeRequests {s1['storeRequests'] - s0['storeRequests']}, faultsFired {s1['faultsFired'] - s0['faultsFired']}; {fmt(diff(s0, s1))}")
    ops.append(f"  {w:<12} warm: storeRequests {s2['storeRequests'] - s1['storeRequests']}, faultsFired {s2['faultsFired'] - s1['faultsFired']}; {fmt(diff(s1, s2))}")
if ls_cold is not None:
    print(f"cold ls -l Employee / cold sqlite3 'SELECT * FROM ZPERSON' ({sqlite_us / 1000:.1f} ms): {ls_cold * 1000 / sqlite_us:.2f}x")
if par_us > 0:
    print(f"4 entities at once / one after another (cold, fresh mounts): {par_us / 1000:.0f} / {seq_us / 1000:.0f} ms = {par_us / seq_us:.2f}")
print("store requests and FUSE operations (each includes 1-2 for reading user.storefs.stats):")
print("\n".join(ops))
EOF
  if grep -qiE 'error|warn' "$WORK/mount-$n.log"; then echo "mount log (tail):"; tail -5 "$WORK/mount-$n.log"; fi
  rm -rf "${TMPFS:?}"/*
  rm -f "$results"
done
done
