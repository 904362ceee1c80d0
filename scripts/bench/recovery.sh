#!/usr/bin/env bash
# storefs's recovered records against sqlite-dissect's on the same files (issue 37): records
# recovered, false ones, time and memory, on ground-truth stores made here (the sample company,
# the corpus's Notes and Photos stores, changed with plain SQL in known ways; journal DELETE and
# WAL) and on the corpus's real stores. Prints two Markdown tables (docs/benchmarks.md, section 37).
#
# Usage: scripts/bench/recovery.sh     (STOREFS=path to use a built binary; WORK=folder for the files)
# Needs sqlite-dissect (pip install sqlite-dissect) and GNU time.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/opt/swift/usr/bin:$PATH"
python3 -c "import sqlite_dissect" 2>/dev/null || { echo "recovery.sh: pip install sqlite-dissect first" >&2; exit 2; }
if [ -z "${STOREFS:-}" ]; then
  swift build --product storefs >&2
  STOREFS="$(swift build --show-bin-path)/storefs"
fi
WORK=${WORK:-$(mktemp -d)}
echo "# storefs $("$STOREFS" --version), sqlite-dissect $(python3 -c 'import importlib.metadata as m; print(m.version("sqlite-dissect"))'), load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 scripts/bench/recovery.py "$STOREFS" "$PWD/Tests/Fixtures/corpus/sqlite" "$WORK"
