#!/usr/bin/env bash
# Issue 40's workloads, storefs against its floor (issue 40 items 1 and 4): cold `find` of a sample
# store's mount, EDITS `echo > attr` edits, `cp -a` of FOLDERS new object folders (committed: fsync
# of the entity folder), EDITS `vim` edits (each a write, an fsync and a commit). Each workload on:
#   storefs over io_uring and over /dev/fuse (STOREFS_IO_URING=0), and BEFORE_STOREFS (an older
#     build, over io_uring) when set, for the before/after in one run;
#   fuse-floor over the same tree (its in-memory copy), over io_uring and over /dev/fuse;
#   tmpfs (the same tree, or the same edits of a tmpfs file);
#   the SQLite reference: sqlite3 doing the same work on the store file itself (reading every row of
#     every table for find; one autocommit UPDATE per edit; one INSERT transaction of the rows cp -a
#     makes).
# RUNS rounds (default 3), each round every target once in turn, so that load falls on all alike;
# the table shows each figure's median, its ratio to the floor over the same transport, and the load
# average at the start and end. Then the FUSE requests of each workload (storefs's from
# user.storefs.stats, the floor's from its exit line) and the server CPU time per request, from the
# first round.
#
# Usage: scripts/bench/writes.sh [OBJECTS] [EDITS] [FOLDERS] [RUNS]    (defaults 10000 500 1000 3)
# Environment: STOREFS, FLOOR as for write.sh; BEFORE_STOREFS=path/to/older/storefs adds its column.
set -euo pipefail
NAME=writes.sh
source "$(dirname "$0")/common.sh"
OBJECTS=${1:-10000}
EDITS=${2:-500}
FOLDERS=${3:-1000}
RUNS=${4:-3}
FIRST=100001

need sqlite3 sqlite3; need fusermount3 fuse3; need python3 python3; need vim vim
use_floor
bench_workspace 2g

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }
cpu_ms() { awk '{print ($14 + $15) * 1000 / '"$(getconf CLK_TCK)"'}' "/proc/$1/stat"; }
load() { cut -d' ' -f1 /proc/loadavg; }
R="$WORK/results"; : >"$R" # lines: workload target run ms
OPS="$WORK/ops"; : >"$OPS" # lines: workload target cpu_ms ops-text (first run)
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$R"; }
ms_since() { awk -v a="$1" -v b="$(now_us)" 'BEGIN {printf "%.1f", (b - a) / 1000}'; }

echo "== storefs writes benchmark, issue 40: $OBJECTS objects, $EDITS edits, cp -a of $FOLDERS folders, median of $RUNS ($(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), kernel $(uname -r))"
echo "storefs: $STOREFS${BEFORE_STOREFS:+; before: $BEFORE_STOREFS}; floor: $FLOOR"
echo "enable_uring: $(cat /sys/module/fuse/parameters/enable_uring 2>/dev/null || echo absent)"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

store0="$WORK/S.sqlite"
"$STOREFS" sample --objects "$OBJECTS" "$store0" >/dev/null
# the tree (tmpfs baseline and the floor's source for find): the mounted store copied without xattrs
TREE="$TMPFS/tree"; mkdir -p "$TREE"
"$STOREFS" mount "$store0" "$MNT" -o ro --log-file "$WORK/mount.log"
cp -R -P --preserve=mode,timestamps "$MNT/." "$TREE/" 2>"$WORK/cp.err" || { echo "copying the mount reported:"; sort "$WORK/cp.err" | uniq -c | head -5; }
unmount_store
# the input of cp -a: FOLDERS Milestone folders on tmpfs
IN="$TMPFS/in"; mkdir -p "$IN"
for ((k = FIRST; k < FIRST + FOLDERS; k++)); do
  mkdir "$IN/p$k"
  printf 'Milestone %d\n' "$k" >"$IN/p$k/title"
  printf '2024-05-%02dT12:00:00Z\n' $((k % 28 + 1)) >"$IN/p$k/dueDate"
  if ((k % 2)); then echo true; else echo false; fi >"$IN/p$k/done"
done
# writable, as on a read-write mount (the tree's copy is read-only's 0444, and vim leaves a
# read-only file unwritten)
ONE="$WORK/one"; mkdir -p "$ONE"; cp "$TREE/Department/p1/name" "$ONE/name"; chmod 644 "$ONE/name"
ent=$(sqlite3 "$store0" "SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Milestone'")

edits() { # edits TOOL FILE
  local i
  for ((i = 1; i <= EDITS; i++)); do
    case $1 in
      echo) echo "value $i" >"$2" ;;
      vim) vim -u NONE -i NONE -N -n -es -c "s/.*/vim $i/" -c wq "$2" ;;
    esac
  done
}
# workload WORKLOAD ROOT: runs it on ROOT (a mount or tmpfs folder), prints ms
workload() {
  local t0
  case $1 in
    find) drop_caches; t0=$(now_us); find "$2" -type f | wc -l >"$WORK/count" ;;
    echo) t0=$(now_us); edits echo "$2/Department/p1/name"; sync "$2/Department/p1/name" ;;
    vim) t0=$(now_us); edits vim "$2/Department/p1/name" ;;
    cp) t0=$(now_us); cp -a "$IN/." "$2/Milestone/" 2>"$WORK/cp.err" || { echo "cp -a into $2 failed:"; sort "$WORK/cp.err" | uniq -c | head -3; } >&2
      sync "$2/Milestone" ;;
  esac
  ms_since "$t0"
}
# check_edit WORKLOAD ROOT LABEL: says so when the last edit is not in the file
check_edit() {
  local want
  case $1 in echo) want="value $EDITS" ;; vim) want="vim $EDITS" ;; *) return 0 ;; esac
  [ "$(cat "$2/Department/p1/name")" = "$want" ] || echo "$3: $1 left '$(cat "$2/Department/p1/name")', expected '$want'"
}
# storefs_run LABEL BINARY URING WORKLOAD RUN
storefs_run() {
  local store="$WORK/run.sqlite" pid s0 s1 c0 c1 ms opts=()
  cp "$store0" "$store"; rm -f "$store-wal" "$store-shm"
  [ "$4" = find ] && opts=(-o ro)
  STOREFS_IO_URING=$3 "$2" mount "$store" "$MNT" "${opts[@]}" --log-file "$WORK/mount-$1.log"
  pid=$(pgrep -f -- "$(basename "$2") mount .* $MNT" | head -1)
  s0=$(stats); c0=$(cpu_ms "$pid")
  ms=$(workload "$4" "$MNT")
  c1=$(cpu_ms "$pid"); s1=$(stats)
  STOREFS_SAVED=$STOREFS; STOREFS=$2; unmount_store; STOREFS=$STOREFS_SAVED
  record "$4" "$1" "$5" "$ms"
  if [ "$5" = 1 ]; then printf '%s\t%s\t%s\t%s\n' "$4" "$1" "$(awk -v a="$c0" -v b="$c1" 'BEGIN {print b - a}')" "$(fuse_ops_between "$s0" "$s1" | sed 's/^FUSE operations: //')" >>"$OPS"; fi
  case $4 in
    echo) got=$(sqlite3 "$store" "SELECT ZNAME FROM ZDEPARTMENT WHERE Z_PK = 1"); [ "$got" = "value $EDITS" ] || echo "storefs ($1): stored name is '$got', expected 'value $EDITS'" ;;
    vim) got=$(sqlite3 "$store" "SELECT ZNAME FROM ZDEPARTMENT WHERE Z_PK = 1"); [ "$got" = "vim $EDITS" ] || echo "storefs ($1): stored name is '$got', expected 'vim $EDITS'" ;;
    cp) got=$(sqlite3 "$store" "SELECT count(*) FROM ZMILESTONE WHERE Z_PK >= $FIRST"); [ "$got" = "$FOLDERS" ] || echo "storefs ($1): $got new Milestone rows, expected $FOLDERS" ;;
  esac
}
# floor_run LABEL FLAG WORKLOAD RUN (FLAG: --io-uring or --no-io-uring)
floor_run() {
  local c0 c1 ms flags=()
  [ "$2" = --no-io-uring ] && flags=(--no-io-uring)
  case $3 in
    find) mount_floor --read-only "${flags[@]}" "$TREE" ;;
    cp) mkdir -p "$WORK/empty/Milestone"; mount_floor "${flags[@]}" "$WORK/empty" ;;
    *) mkdir -p "$WORK/edit/Department/p1"; cp "$ONE/name" "$WORK/edit/Department/p1/name"; mount_floor "${flags[@]}" "$WORK/edit" ;;
  esac
  c0=$(cpu_ms "$FLOOR_PID"); ms=$(workload "$3" "$FLOOR_MNT"); c1=$(cpu_ms "$FLOOR_PID")
  check_edit "$3" "$FLOOR_MNT" "$1"
  : >"$WORK/floor.log"; unmount_floor
  record "$3" "$1" "$4" "$ms"
  if [ "$4" = 1 ]; then printf '%s\t%s\t%s\t%s\n' "$3" "$1" "$(awk -v a="$c0" -v b="$c1" 'BEGIN {print b - a}')" "$(grep -h "FUSE operations" "$WORK/floor.log" | sed 's/^fuse-floor: FUSE operations: //')" >>"$OPS"; fi
}
tmpfs_run() { # WORKLOAD RUN
  local root="$TMPFS/t" ms
  rm -rf "$root"; mkdir -p "$root/Milestone" "$root/Department/p1"; cp "$ONE/name" "$root/Department/p1/name"
  if [ "$1" = find ]; then ms=$(workload find "$TREE"); else ms=$(workload "$1" "$root"); fi
  check_edit "$1" "$root" tmpfs
  record "$1" tmpfs "$2" "$ms"
}
sqlite_run() { # WORKLOAD RUN: sqlite3 doing the workload's work on the store file
  local store="$WORK/run.sqlite" t0
  cp "$store0" "$store"; rm -f "$store-wal" "$store-shm"
  case $1 in
    find) drop_caches; t0=$(now_us)
      for t in $(sqlite3 "$store" "SELECT name FROM sqlite_master WHERE type = 'table'"); do echo "SELECT * FROM \"$t\";"; done | sqlite3 "$store" | wc -l >/dev/null ;;
    echo | vim) t0=$(now_us)
      for ((i = 1; i <= EDITS; i++)); do echo "UPDATE ZDEPARTMENT SET ZNAME = 'value $i' WHERE Z_PK = 1;"; done | sqlite3 "$store" ;;
    cp) t0=$(now_us)
      sqlite3 "$store" "BEGIN; WITH RECURSIVE k(n) AS (SELECT $FIRST UNION ALL SELECT n + 1 FROM k WHERE n < $FIRST + $FOLDERS - 1)
        INSERT INTO ZMILESTONE (Z_PK, Z_ENT, Z_OPT, ZTITLE, ZDONE) SELECT n, $ent, 1, 'Milestone ' || n, n % 2 FROM k; COMMIT;" ;;
  esac
  record "$1" sqlite3 "$2" "$(ms_since "$t0")"
}

for run in $(seq 1 "$RUNS"); do
  echo "round $run (load $(load))"
  for w in find echo cp vim; do
    storefs_run storefs "$STOREFS" 1 "$w" "$run"
    storefs_run storefs-dev "$STOREFS" 0 "$w" "$run"
    [ -n "${BEFORE_STOREFS:-}" ] && storefs_run before "$BEFORE_STOREFS" 1 "$w" "$run"
    floor_run floor --io-uring "$w" "$run"
    floor_run floor-dev --no-io-uring "$w" "$run"
    tmpfs_run "$w" "$run"
    sqlite_run "$w" "$run"
  done
done

python3 - "$R" "$OPS" "$load_start" "$(cut -d' ' -f1-3 /proc/loadavg)" "$EDITS" "$FOLDERS" <<'PY'
import statistics, sys
results, ops, load0, load1, edits, folders = sys.argv[1:]
times = {}
for line in open(results):
    w, target, run, ms = line.rstrip("\n").split("\t")
    times.setdefault((w, target), []).append(float(ms))
med = {k: statistics.median(v) for k, v in times.items()}
names = {"find": "cold find", "echo": f"{edits} echo > attr", "cp": f"cp -a of {folders} folders", "vim": f"{edits} vim edits"}
targets = ["storefs", "storefs-dev", "before", "floor", "floor-dev", "tmpfs", "sqlite3"]
present = [t for t in targets if any(k[1] == t for k in med)]
print(f"\nmedians in ms (load {load0} at the start, {load1} at the end); storefs/floor over the same transport (goal <= 1.1x)")
head = f"{'workload':<24}" + "".join(f"{t:>13}" for t in present) + f"{'io_uring':>10}{'/dev/fuse':>10}"
if "before" in present: head += f"{'before':>8}"
head += f"{'floor/tmpfs':>12}{'x sqlite3':>10}"
print(head)
for w in ["find", "echo", "cp", "vim"]:
    row = f"{names[w]:<24}" + "".join(f"{med.get((w, t), float('nan')):>13.1f}" for t in present)
    r = lambda a, b: med[(w, a)] / med[(w, b)] if (w, a) in med and (w, b) in med and med[(w, b)] else float("nan")
    row += f"{r('storefs', 'floor'):>9.2f}x{r('storefs-dev', 'floor-dev'):>9.2f}x"
    if "before" in present: row += f"{r('before', 'floor'):>7.2f}x"
    row += f"{r('floor', 'tmpfs'):>11.2f}x{r('storefs', 'sqlite3'):>9.2f}x"
    print(row)
print("runs (ms): " + "; ".join(f"{w}/{t} " + ",".join(f"{x:.0f}" for x in v) for (w, t), v in sorted(times.items())))
print("\nFUSE requests per workload (first round) and the server's CPU per request")
for line in open(ops):
    w, target, cpu, text = line.rstrip("\n").split("\t")
    # kernel notifications and error counts are no requests
    counts = dict(part.rsplit(" ", 1) for part in text.split(", ") if part.strip())
    total = sum(int(v) for k, v in counts.items() if k not in ("errors", "invalidations", "invalidationFailures", "preloads"))
    per = f"{float(cpu) * 1000 / total:.1f} us/request" if total else "-"
    print(f"{names[w]:<24} {target:<12} {total:>7} requests, CPU {float(cpu):.0f} ms ({per}): {text}")
PY
