#!/usr/bin/env bash
# Issue 28's figures: a lightweight model migration of a sample store (an attribute added, one
# renamed by its renaming identifier, an integer widened) against the store-type copy of the same
# store (`storefs migrate S.sqlite C.sqlite`, same model: the baseline, measured in the same run),
# into a new store and in place; seconds, objects per second and peak RSS of each, and the ratios.
# Prints figures; asserts nothing.
#
# Usage: scripts/bench/model-migrate.sh [OBJECTS]     (default 100000)
# STOREFS=/path/to/storefs to use a built binary; otherwise builds release.
set -euo pipefail
objects=${1:-100000}
cd "$(dirname "$0")/../.."
export PATH="/opt/swift/usr/bin:$PATH"
if [ -z "${STOREFS:-}" ]; then
  timeout 3600 swift build -c release --product storefs >/dev/null
  STOREFS="$(timeout 600 swift build -c release --show-bin-path)/storefs"
fi
[ -x /usr/bin/time ] || apt-get install -y -qq time >/dev/null
echo "== storefs model migration benchmark ($(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo "storefs: $STOREFS"
work=$(mktemp -d /tmp/storefs-bench-model-migrate.XXXXXX)
trap 'rm -rf "$work"' EXIT

timeout 3600 "$STOREFS" sample --objects "$objects" "$work/S.sqlite" >/dev/null
timeout 600 "$STOREFS" model "$work/S.sqlite" --output "$work/V1.xcdatamodel" >/dev/null
timeout 60 python3 - "$work/V1.xcdatamodel/contents" "$work/V2.xcdatamodel" <<'PY'
import os, sys
text = open(sys.argv[1]).read()
text = text.replace('<attribute name="code" optional="YES" attributeType="String"',
                    '<attribute name="shortCode" optional="YES" attributeType="String" elementID="code"', 1)
text = text.replace('<attribute name="founded"', '<attribute name="motto" optional="YES" attributeType="String" syncable="YES"/>\n        <attribute name="founded"', 1)
text = text.replace('<attribute name="level" optional="YES" attributeType="Integer 16"', '<attribute name="level" optional="YES" attributeType="Integer 32"', 1)
os.makedirs(sys.argv[2], exist_ok=True)
open(os.path.join(sys.argv[2], "contents"), "w").write(text)
PY
timeout 600 "$STOREFS" model --diff "$work/V1.xcdatamodel" "$work/V2.xcdatamodel" | tail -n +2

run() {  # label, then the storefs arguments; prints seconds and peak RSS (KiB)
  local label=$1; shift
  timeout 3600 /usr/bin/time -f "%e %M" -o "$work/time" "$STOREFS" "$@" >/dev/null
  read -r secs rss <"$work/time"
  printf "%-34s %9.2f %14.0f %14.1f\n" "$label" "$secs" "$(python3 -c "print($objects / max($secs, 0.01))")" "$(python3 -c "print($rss / 1024)")"
  echo "$secs $rss" >"$work/$label.result"
}
printf "\n%-34s %9s %14s %14s\n" "$objects objects" "seconds" "objects/s" "peak RSS MiB"
run "copy (store type, same model)" migrate "$work/S.sqlite" "$work/C.sqlite"
run "model migration into a new store" migrate "$work/S.sqlite" "$work/M.sqlite" --model "$work/V2.xcdatamodel"
run "model migration in place" migrate --in-place "$work/C.sqlite" --model "$work/V2.xcdatamodel"
read -r copy_s copy_rss <"$work/copy (store type, same model).result"
read -r new_s new_rss <"$work/model migration into a new store.result"
read -r place_s place_rss <"$work/model migration in place.result"
python3 -c "print(f'model migration / copy: {$new_s / $copy_s:.2f}x time, {$new_rss / $copy_rss:.2f}x RSS; in place / copy: {$place_s / $copy_s:.2f}x time')"
timeout 600 "$STOREFS" model --hashes "$work/M.sqlite" | grep -c "same as the store's" | xargs printf "entities whose hash matches the new model: %s\n"
