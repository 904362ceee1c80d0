#!/usr/bin/env bash
# Issue 40 item 3: a 256 MiB value in an attribute that allows external storage, against the file
# that holds it, in the same run. Cold read: `cat` of the value through the mount (the kernel reads
# its _EXTERNAL_DATA file through FUSE passthrough) against `cat` of that file, page cache dropped
# before each. Write: `cp` of a 256 MiB file into the attribute against `cp` to the same filesystem,
# each followed by `sync` of the file written (through the mount, the fsync commits the value).
# `dd bs=1M` reads the same two ways (cat also asks for sequential readahead with fadvise; dd does
# not). Median of RUNS (5) runs each; the FUSE operations and the server's peak memory are
# printed, and the load average at the start and end. TRANSPORT=dev-fuse serves the mount over /dev/fuse.
#
# Usage: STOREFS=.build/debug/storefs scripts/bench/large-values.sh   (else a release build)
set -euo pipefail
NAME=large-values
source "$(dirname "$0")/common.sh"
RUNS=${RUNS:-5}
[ "$(id -u)" -eq 0 ] || { echo "$NAME: dropping the page cache needs root" >&2; exit 1; }
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
bench_workspace 16m
FIXTURE=Tests/Fixtures/external-data
STORE="$WORK/store/Attachments.sqlite"
mkdir -p "$WORK/store" "$WORK/plain"
cp "$FIXTURE/Attachments.sqlite" "$STORE"
cp -r "$FIXTURE/.Attachments_SUPPORT" "$WORK/store/"
EXTERNAL="$WORK/store/.Attachments_SUPPORT/_EXTERNAL_DATA"
head -c 268435456 /dev/urandom >"$WORK/video.bin"
[ "${TRANSPORT:-}" = dev-fuse ] && export STOREFS_IO_URING=0
"$STOREFS" mount "$STORE" "$MNT" --model "$FIXTURE/Attachments.xcdatamodel" --log-file "$WORK/storefs.log" -v
VALUE="$MNT/Attachment/p8/data"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
seconds() { local start; start=$(now_us); "$@"; echo "scale=3; ($(now_us) - $start) / 1000000" | bc; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
copy_in() { cp "$WORK/video.bin" "$1" && sync "$1"; }

for run in $(seq 1 "$RUNS"); do
  rm -f "$WORK/plain/video.bin"; drop
  seconds copy_in "$WORK/plain/video.bin" >>"$WORK/cp.times"
  drop
  before=$(stats)
  seconds copy_in "$VALUE" >>"$WORK/storefs-write.times"
  after=$(stats)
  [ "$run" -eq 1 ] && { echo -n "write through the mount: "; fuse_ops_between "$before" "$after"; }
done
cmp "$WORK/video.bin" "$VALUE"
FILE="$EXTERNAL/$(sqlite3 -readonly "$STORE" 'SELECT substr(ZDATA, 2) FROM ZATTACHMENT WHERE Z_PK = 8')"
[ -f "$FILE" ] || { echo "$NAME: the row names no file ($FILE)" >&2; exit 1; }
for run in $(seq 1 "$RUNS"); do
  drop
  { drop; seconds sh -c "cat '$FILE' >/dev/null"; } >>"$WORK/cat.times"
  drop
  before=$(stats)
  seconds sh -c "cat '$VALUE' >/dev/null" >>"$WORK/storefs-read.times"
  after=$(stats)
  { drop; seconds dd if="$FILE" of=/dev/null bs=1M status=none; } >>"$WORK/dd.times"
  { drop; seconds dd if="$VALUE" of=/dev/null bs=1M status=none; } >>"$WORK/storefs-dd.times"
  [ "$run" -eq 1 ] && { echo -n "cold read through the mount: "; fuse_ops_between "$before" "$after"; }
done
grep -h "passthrough" "$WORK/storefs.log" | sed 's/^[^ ]* //' | sort -u
grep -h "arrive through" "$WORK/storefs.log" | sed 's/^[^ ]* //' | sort -u
echo "server peak memory (VmHWM): $(grep VmHWM /proc/"$(server_pid)"/status | awk '{print $2, $3}')"
r_cat=$(median <"$WORK/cat.times"); r_fs=$(median <"$WORK/storefs-read.times")
d_file=$(median <"$WORK/dd.times"); d_fs=$(median <"$WORK/storefs-dd.times")
w_cp=$(median <"$WORK/cp.times"); w_fs=$(median <"$WORK/storefs-write.times")
printf '%-44s %8s %8s %6s\n' workload storefs baseline ratio
printf '%-44s %8s %8s %6s\n' "cold read of 256 MiB (vs cat of its file)" "$r_fs" "$r_cat" "$(echo "scale=2; $r_fs / $r_cat" | bc)"
printf '%-44s %8s %8s %6s\n' "cold dd bs=1M of 256 MiB (vs dd of its file)" "$d_fs" "$d_file" "$(echo "scale=2; $d_fs / $d_file" | bc)"
printf '%-44s %8s %8s %6s\n' "write of 256 MiB + sync (vs cp + sync)" "$w_fs" "$w_cp" "$(echo "scale=2; $w_fs / $w_cp" | bc)"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
