#!/usr/bin/env bash
# Every figure of issue 29 in one run, each beside its baselines measured in the same run: reads
# (read.sh: storefs, tmpfs, the FUSE floor over io_uring and over /dev/fuse, sqlite3), writes
# (write.sh: cp -a and edits, the same baselines), `ls -l` cost per entry from 10,000 to
# 1,000,000 objects (read.sh, ls -l only), and the bulk paths (migrate.sh: `storefs sample` against
# SQLite inserting the same rows, migrations, opening each store type). Every part prints the FUSE
# operations each workload caused; with BEFORE_STOREFS set to the storefs binary of an earlier
# build, the read and write parts run with it too (beside this build's floor), for the operation
# counts before.
# The load average is printed at the start and end of every part; rerun on a quiet machine to
# compare (docs/benchmarks.md records both).
#
# Usage: scripts/bench/all.sh                  (the issue's sizes: about an hour on two cores)
#   SIZES="10000 100000" LS_SIZES="10000 100000 1000000" WRITE="10000 500" MIGRATE=1000000
#   set any of them smaller for a shorter run (MIGRATE=0 leaves the bulk part out, LS_SIZES="" the
#   ls -l part); STOREFS/FLOOR as for read.sh. WRITES="OBJECTS EDITS FOLDERS RUNS" sizes writes.sh
#   (issue 40's workloads; default 10000 500 1000 3).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/opt/swift/usr/bin:$PATH"
SIZES=${SIZES:-10000 100000}
LS_SIZES=${LS_SIZES-10000 100000 1000000}
WRITE=${WRITE:-10000 500}
MIGRATE=${MIGRATE:-1000000}
if [ -z "${STOREFS:-}" ]; then
  swift build -c release --product storefs >&2
  swift build -c release --product fuse-floor >&2
  STOREFS="$(swift build -c release --show-bin-path)/storefs"
fi
export STOREFS
part() { echo; echo "######## $* (load $(cut -d' ' -f1-3 /proc/loadavg))"; }

echo "== issue 29 figures ($(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), kernel $(uname -r))"
echo "enable_uring: $(cat /sys/module/fuse/parameters/enable_uring 2>/dev/null || echo 'absent (no FUSE over io_uring)')"
part "reads"; PARALLEL=${PARALLEL:-1} scripts/bench/read.sh $SIZES
part "writes"; scripts/bench/write.sh $WRITE
# issue 40: cold find, echo, cp -a and vim against the floor over both transports, medians of 3
part "issue 40 writes"; BEFORE_STOREFS=${BEFORE_STOREFS:-} scripts/bench/writes.sh ${WRITES:-10000 500 1000 3}
if [ -n "$LS_SIZES" ]; then
  part "ls -l per entry"; WORKLOADS="ls -l" PARALLEL=0 TMPFS_LIMIT=${TMPFS_LIMIT:-100000} scripts/bench/read.sh $LS_SIZES
fi
if [ "$MIGRATE" != 0 ]; then part "bulk paths"; scripts/bench/migrate.sh "$MIGRATE" 10000; fi
if [ -n "${BEFORE_STOREFS:-}" ]; then
  floor="${FLOOR:-$(dirname "$STOREFS")/fuse-floor}"
  part "reads, before ($BEFORE_STOREFS)"; STOREFS=$BEFORE_STOREFS FLOOR=$floor PARALLEL=0 scripts/bench/read.sh ${SIZES%% *}
  part "writes, before"; STOREFS=$BEFORE_STOREFS FLOOR=$floor scripts/bench/write.sh $WRITE
fi
part "end"
