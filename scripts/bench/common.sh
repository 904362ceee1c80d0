# Shared by the bench scripts (sourced, not run): tools, the storefs binary, and a work folder with a
# mount point and a tmpfs that are unmounted and removed on exit, also on failure or Ctrl-C.
# Set NAME (used in messages and the folder name) before sourcing.

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export PATH="/opt/swift/usr/bin:$PATH"

need() { command -v "$1" >/dev/null 2>&1 || { [ "$(id -u)" -eq 0 ] || SUDO=sudo; ${SUDO:-} apt-get install -y -qq "$2" >/dev/null; }; }

# STOREFS=path/to/storefs skips the release build.
STOREFS_GIVEN=${STOREFS:+1}
if [ -z "${STOREFS:-}" ]; then
  swift build -c release --product storefs >&2
  STOREFS="$(swift build -c release --show-bin-path)/storefs"
fi
[ -x "$STOREFS" ] || { echo "$NAME: no storefs binary at $STOREFS" >&2; exit 1; }
# The FUSE floor (Sources/fuse-floor): FLOOR=path/to/fuse-floor, else the one beside a given
# STOREFS, else a release build. Only read.sh and write.sh use it (use_floor).
use_floor() {
  if [ -z "${FLOOR:-}" ]; then
    FLOOR="$(dirname "$STOREFS")/fuse-floor"
    if [ -z "$STOREFS_GIVEN" ] || [ ! -x "$FLOOR" ]; then
      swift build -c release --product fuse-floor >&2
      FLOOR="$(swift build -c release --show-bin-path)/fuse-floor"
    fi
  fi
  [ -x "$FLOOR" ] || { echo "$NAME: no fuse-floor binary at $FLOOR" >&2; exit 1; }
}

now_us() { date +%s%6N; }

# bench_workspace TMPFS_SIZE: WORK, MNT and a tmpfs at TMPFS of that size, cleaned up on exit.
bench_workspace() {
  WORK=$(mktemp -d "/tmp/storefs-bench-$NAME.XXXXXX")
  MNT="$WORK/mnt"; TMPFS="$WORK/tmpfs"; FLOOR_MNT="$WORK/floor"
  mkdir -p "$MNT" "$TMPFS" "$FLOOR_MNT"
  trap cleanup EXIT
  trap 'exit 130' INT TERM
  mount -t tmpfs -o "size=$1,mode=755" storefs-bench "$TMPFS"
}
# The pid of the storefs server of $MNT (empty when none runs).
server_pid() { pgrep -f -- "$(basename "$STOREFS") mount .* $MNT" | head -1; }
unmount_store() {
  if mountpoint -q "$MNT"; then fusermount3 -u "$MNT" || fusermount3 -uz "$MNT"; fi
  for _ in $(seq 1 1200); do [ -n "$(server_pid)" ] || return 0; sleep 0.1; done
  echo "$NAME: storefs server for $MNT did not exit" >&2
}
# mount_floor [--read-only] SOURCE: fuse-floor serving an in-memory copy of SOURCE at FLOOR_MNT;
# returns once it is mounted (copying a 100,000-object tree of 1.1 million files takes a while).
mount_floor() {
  "$FLOOR" "$@" "$FLOOR_MNT" 2>>"$WORK/floor.log" &
  FLOOR_PID=$!
  until mountpoint -q "$FLOOR_MNT"; do
    kill -0 "$FLOOR_PID" 2>/dev/null || { echo "$NAME: fuse-floor did not mount:"; cat "$WORK/floor.log"; exit 1; } >&2
    sleep 0.1
  done
}
unmount_floor() {
  if mountpoint -q "$FLOOR_MNT"; then fusermount3 -u "$FLOOR_MNT" || fusermount3 -uz "$FLOOR_MNT"; fi
  [ -n "${FLOOR_PID:-}" ] || return 0
  # a lazily unmounted floor still serves whoever holds it open: wait a while, then stop it
  for _ in $(seq 1 600); do kill -0 "$FLOOR_PID" 2>/dev/null || break; sleep 0.1; done
  kill "$FLOOR_PID" 2>/dev/null || true
  wait "$FLOOR_PID" 2>/dev/null || true
  FLOOR_PID=
}
cleanup() {
  set +e
  unmount_floor
  unmount_store
  mountpoint -q "$TMPFS" && umount "$TMPFS"
  rm -rf "$WORK"
}
stats() { getfattr --only-values -n user.storefs.stats "$MNT" 2>/dev/null | tr -d "\n"; }
# fuse_ops_between BEFORE AFTER: the FUSE operations between two stats() readings, most frequent first.
fuse_ops_between() {
  python3 - "$1" "$2" <<'PY'
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
d = {k: v - a["fuse"].get(k, 0) for k, v in b["fuse"].items() if v - a["fuse"].get(k, 0)}
print("FUSE operations:", ", ".join(f"{k} {v}" for k, v in sorted(d.items(), key=lambda kv: -kv[1])))
PY
}
# stat_between KEY BEFORE AFTER: how much counter KEY of stats() grew.
stat_between() {
  python3 -c 'import json,sys; print(json.loads(sys.argv[3])[sys.argv[1]] - json.loads(sys.argv[2])[sys.argv[1]])' "$1" "$2" "$3"
}
# bench_postgres: a private PostgreSQL cluster for a PostgreSQL benchmark, in $WORK/pg (after
# bench_workspace): initdb as the postgres user, started with a Unix socket in that folder only
# and the server's default durability; PG, PGBIN and PG_URL_BASE (add schema=NAME) are set, and
# the exit trap unmounts the mounts listed in MOUNTS, stops the server and cleans up.
bench_postgres() {
  PGBIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
  [ -x "$PGBIN/initdb" ] || { echo "$NAME: PostgreSQL is not installed (scripts/setup installs it)" >&2; exit 1; }
  PG="$WORK/pg"
  MOUNTS=()
  trap bench_postgres_cleanup EXIT
  chmod 755 "$WORK"
  mkdir -p "$PG" && chown postgres "$PG"
  timeout 120 runuser -u postgres -- "$PGBIN/initdb" -D "$PG/data" -A trust -U postgres -E UTF8 --locale=C >/dev/null
  timeout 120 runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PG/data" -l "$PG/log" -w -t 60 \
    -o "-k $PG -p 5432 -c listen_addresses='' -c max_connections=200" start >/dev/null
  PG_URL_BASE="postgresql:///postgres?host=$PG&port=5432&user=postgres"
}
bench_postgres_cleanup() {
  set +e
  for m in "${MOUNTS[@]}"; do mountpoint -q "$m" && { timeout 120 "$STOREFS" unmount "$m" >/dev/null 2>&1 || fusermount3 -uz "$m"; }; done
  [ -d "$PG/data" ] && timeout 60 runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PG/data" -m immediate stop >/dev/null 2>&1
  cleanup
}
