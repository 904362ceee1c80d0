#!/bin/sh
# Install or uninstall storefs: the binary, the mount(8) helper, the systemd unit, the docs.
#
#   sudo scripts/install.sh              build in release mode and install
#   sudo scripts/install.sh uninstall    remove exactly what install put (also scripts/uninstall.sh)
#
# Variables (environment):
#   DESTDIR   staging root, prepended to every path (packaging, tests); default: none
#   PREFIX    default /usr/local; BINDIR ($PREFIX/bin), DOCDIR ($PREFIX/share/doc/storefs)
#   SBINDIR   where mount(8) looks for mount.fuse.storefs; default /sbin
#   UNITDIR   default /etc/systemd/system;  CONFDIR  default /etc/storefs
#   BINARY    install this storefs binary instead of building one (swift build -c release)
#
# install records what it created in $PREFIX/share/storefs/install-manifest; uninstall removes
# those files, then the directories install created if they are empty (so the administrator's
# /etc/storefs/*.conf stay).
set -eu

action="${1:-install}"
case "$action" in
    install|uninstall) ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "usage: $0 [install|uninstall]" >&2; exit 2 ;;
esac

DESTDIR="${DESTDIR:-}"
PREFIX="${PREFIX:-/usr/local}"
BINDIR="${BINDIR:-$PREFIX/bin}"
SBINDIR="${SBINDIR:-/sbin}"
UNITDIR="${UNITDIR:-/etc/systemd/system}"
CONFDIR="${CONFDIR:-/etc/storefs}"
DOCDIR="${DOCDIR:-$PREFIX/share/doc/storefs}"
MANIFEST="$PREFIX/share/storefs/install-manifest"

root="$(cd "$(dirname "$0")/.." && pwd)"
files="$BINDIR/storefs $SBINDIR/mount.fuse.storefs $UNITDIR/storefs@.service $DOCDIR/example.conf $DOCDIR/PRODUCTION.md"
recorded=""

say() { echo "storefs: $*"; }

record() { recorded="$recorded$1 $2
"; }

# mkdir -p that records each directory it creates, so that uninstall removes only those.
make_dir() {
    missing=""
    dir="$1"
    while [ "$dir" != / ] && [ ! -d "$DESTDIR$dir" ]; do
        missing="$dir $missing"
        dir="$(dirname "$dir")"
    done
    for dir in $missing; do
        mkdir "$DESTDIR$dir"
        record d "$dir"
    done
}

systemd_running() {
    [ -z "$DESTDIR" ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1
}

reload_systemd() {
    if systemd_running; then
        systemctl daemon-reload && say "systemctl daemon-reload done"
    else
        say "systemd is not running here (or DESTDIR is set): skipped systemctl daemon-reload"
    fi
}

build() {
    if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
        PATH="/opt/swift/usr/bin:$PATH"
    fi
    command -v swift >/dev/null 2>&1 || { echo "storefs: swift not found; put the toolchain on PATH or set BINARY=" >&2; exit 1; }
    say "building (swift build -c release --product storefs)"
    (cd "$root" && swift build -c release --product storefs >&2)
    BINARY="$(cd "$root" && swift build -c release --show-bin-path)/storefs"
}

install_all() {
    if [ -z "${BINARY:-}" ]; then build; fi
    [ -x "$BINARY" ] || { echo "storefs: $BINARY is not an executable" >&2; exit 1; }
    if [ -n "$DESTDIR" ]; then mkdir -p "$DESTDIR"; fi

    for dir in "$BINDIR" "$SBINDIR" "$UNITDIR" "$CONFDIR" "$DOCDIR" "$(dirname "$MANIFEST")"; do
        make_dir "$dir"
    done
    install -m 0755 "$BINARY" "$DESTDIR$BINDIR/storefs"
    sed "s#^STOREFS=.*#STOREFS=\"\${STOREFS:-$BINDIR/storefs}\"#" "$root/scripts/mount.storefs" > "$DESTDIR$SBINDIR/mount.fuse.storefs"
    chmod 0755 "$DESTDIR$SBINDIR/mount.fuse.storefs"
    sed -e "s#/usr/local/bin/storefs#$BINDIR/storefs#g" -e "s#/etc/storefs/#$CONFDIR/#g" \
        -e "s#/usr/local/share/doc/storefs/#$DOCDIR/#g" \
        "$root/systemd/storefs@.service" > "$DESTDIR$UNITDIR/storefs@.service"
    chmod 0644 "$DESTDIR$UNITDIR/storefs@.service"
    install -m 0644 "$root/systemd/example.conf" "$DESTDIR$DOCDIR/example.conf"
    install -m 0644 "$root/docs/PRODUCTION.md" "$DESTDIR$DOCDIR/PRODUCTION.md"
    for file in $files; do record f "$file"; done
    record f "$MANIFEST"

    # Merge with an earlier install's manifest: directories it created are still ours.
    if [ -f "$DESTDIR$MANIFEST" ]; then recorded="$recorded$(cat "$DESTDIR$MANIFEST")
"; fi
    printf '%s' "$recorded" | sed '/^$/d' | sort -u > "$DESTDIR$MANIFEST.new"
    mv "$DESTDIR$MANIFEST.new" "$DESTDIR$MANIFEST"

    say "installed $DESTDIR$BINDIR/storefs, $DESTDIR$SBINDIR/mount.fuse.storefs, $DESTDIR$UNITDIR/storefs@.service"
    say "configurations go in $DESTDIR$CONFDIR/NAME.conf (example: $DESTDIR$DOCDIR/example.conf)"
    reload_systemd
}

uninstall_all() {
    if [ -f "$DESTDIR$MANIFEST" ]; then
        manifest="$(cat "$DESTDIR$MANIFEST")"
    else
        say "no $DESTDIR$MANIFEST: removing the standard files only"
        manifest="$(for file in $files; do echo "f $file"; done)"
    fi
    if systemd_running && systemctl list-units --no-legend --state=active 'storefs@*' 2>/dev/null | grep -q .; then
        say "warning: storefs@ units are still active; stop them with systemctl stop 'storefs@*'"
    fi
    echo "$manifest" | while read -r kind path; do
        [ "$kind" = f ] || continue
        rm -f "$DESTDIR$path"
    done
    # Deepest first, and only if empty: the administrator's files keep their directory.
    echo "$manifest" | awk '$1 == "d" { print length($2), $2 }' | sort -rn | while read -r _ path; do
        rmdir "$DESTDIR$path" 2>/dev/null || say "kept $DESTDIR$path (not empty)"
    done
    say "uninstalled"
    reload_systemd
}

if [ "$action" = install ]; then install_all; else uninstall_all; fi
