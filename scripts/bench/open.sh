#!/usr/bin/env bash
# Issue 40 item 2's open figures: how long a read-only mount of a store takes until it answers.
# For each run: the server's CPU when `mountpoint -q` first succeeds (utime+stime of
# /proc/PID/stat), the CPU of its busiest live thread (the reading thread: helper threads of the
# binary reader have ended by then), the wall time, peak memory (VmHWM) and the 1-minute load
# average. Cold runs drop the page cache first (as root); WARM=1 keeps it. Asserts nothing.
#
# Usage: scripts/bench/open.sh STORE [RUNS] [STOREFS ...]
#   STORE: an existing store (e.g. made by `storefs sample --objects 1000000 S.sqlite` and
#   `storefs migrate S.sqlite S.binary`); RUNS per build (default 3); one or more storefs binaries,
#   run alternately (default .build-release/release/storefs).
set -euo pipefail
store=${1:?usage: open.sh STORE [RUNS] [STOREFS ...]}
runs=${2:-3}
shift $(($# < 2 ? $# : 2))
builds=("$@")
[ ${#builds[@]} -gt 0 ] || builds=(.build-release/release/storefs)
mnt=$(mktemp -d /tmp/storefs-open.XXXXXX)
tck=$(getconf CLK_TCK)
trap 'mountpoint -q "$mnt" && fusermount3 -u "$mnt"; rmdir "$mnt"' EXIT
for run in $(seq 1 "$runs"); do
  for build in "${builds[@]}"; do
    [ -n "${WARM:-}" ] || { sync; echo 3 >/proc/sys/vm/drop_caches; }
    start=$(date +%s.%N)
    "$build" mount --foreground -o ro "$store" "$mnt" >/dev/null 2>&1 &
    pid=$!
    answered=no
    for _ in $(seq 1 12000); do
      if mountpoint -q "$mnt"; then answered=yes; break; fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.005
    done
    end=$(date +%s.%N)
    if [ $answered = no ]; then echo "run $run $build: the mount did not answer"; kill "$pid" 2>/dev/null; wait "$pid" || true; continue; fi
    read -r -a st </proc/$pid/stat
    threads=$(for t in /proc/$pid/task/*; do read -r -a ts <"$t/stat"; echo "${ts[13]} ${ts[14]}"; done |
      awk -v t="$tck" '{c = ($1 + $2) / t; if (c > m) m = c} END {printf "%.2f", m}')
    printf 'run %s %s: cpu %.2f s, reading thread %s s, wall %.2f s, peak %s KB, load %s\n' "$run" "$build" \
      "$(echo "(${st[13]} + ${st[14]}) / $tck" | bc -l)" "$threads" "$(echo "$end - $start" | bc -l)" \
      "$(awk '/VmHWM/ {print $2}' /proc/$pid/status)" "$(cut -d' ' -f1 /proc/loadavg)"
    fusermount3 -u "$mnt"
    wait "$pid" || true
  done
done
