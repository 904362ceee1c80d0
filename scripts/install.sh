#!/bin/sh
# Install or uninstall storefs: the binary, the mount(8) helpers, the systemd unit, the man
# pages, the shell completions, the docs and the licence.
#
# The binary is installed as swift build made it: it loads the Swift runtime from the toolchain
# it was built with (/opt/swift), which must stay installed (install says so when it does);
# scripts/package bundles the runtime instead.
#
#   sudo scripts/install.sh              build in release mode and install
#   sudo scripts/install.sh uninstall    remove exactly what install put (also scripts/uninstall.sh)
#
# Variables (environment):
#   DESTDIR   staging root, prepended to every path (packaging, tests); default: none
#   PREFIX    default /usr/local; BINDIR ($PREFIX/bin), DOCDIR ($PREFIX/share/doc/storefs),
#             MANDIR ($PREFIX/share/man), BASHCOMPDIR, ZSHCOMPDIR, FISHCOMPDIR (under $PREFIX/share)
#   SBINDIR   where mount(8) looks for mount.fuse.storefs; default /sbin
#   UNITDIR   default /etc/systemd/system;  CONFDIR  default /etc/storefs
#   BINARY    install this storefs binary instead of building one (swift build -c release)
#   MANPAGES  a folder of generated man pages (scripts/manpages prints one); generated while
#             building, left out when BINARY is given without it
#   MANIFEST  where install records what it created; default $PREFIX/share/storefs/install-manifest,
#             empty for none (a package manager keeps its own list)
#
# install records what it created in the manifest; uninstall removes those files, then the
# directories install created if they are empty (so the administrator's /etc/storefs/*.conf stay).
set -eu

action="${1:-install}"
case "$action" in
    install|uninstall) ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "usage: $0 [install|uninstall]" >&2; exit 2 ;;
esac

# The mount(8)/umount(8) helpers: "SOURCE INSTALLED-NAME", one a line; SOURCE is in scripts/, the
# installed file in SBINDIR, with its STOREFS= line pointing at the installed binary. install,
# uninstall and scripts/package all take the helpers from here.
HELPERS="
mount.storefs mount.fuse.storefs
umount.fuse.storefs umount.fuse.storefs
"

DESTDIR="${DESTDIR:-}"
PREFIX="${PREFIX:-/usr/local}"
BINDIR="${BINDIR:-$PREFIX/bin}"
SBINDIR="${SBINDIR:-/sbin}"
UNITDIR="${UNITDIR:-/etc/systemd/system}"
CONFDIR="${CONFDIR:-/etc/storefs}"
DOCDIR="${DOCDIR:-$PREFIX/share/doc/storefs}"
MANDIR="${MANDIR:-$PREFIX/share/man}"
BASHCOMPDIR="${BASHCOMPDIR:-$PREFIX/share/bash-completion/completions}"
# Debian's zsh reads /usr/share/zsh/vendor-completions and /usr/local/share/zsh/site-functions.
if [ "$PREFIX" = /usr ]; then ZSHCOMPDIR="${ZSHCOMPDIR:-/usr/share/zsh/vendor-completions}"; fi
ZSHCOMPDIR="${ZSHCOMPDIR:-$PREFIX/share/zsh/site-functions}"
FISHCOMPDIR="${FISHCOMPDIR:-$PREFIX/share/fish/vendor_completions.d}"
MANIFEST="${MANIFEST-$PREFIX/share/storefs/install-manifest}"
# LIBFUSE.md and LGPL2.txt: the libfuse linked into the binary, its origin and its licence.
DOCS="docs/PRODUCTION.md docs/SEMANTICS.md README.md systemd/example.conf LICENSE docs/LIBFUSE.md Vendor/libfuse/LGPL2.txt"
# The mount helper's manual page (the others are generated from the commands: scripts/manpages).
HELPER_PAGE="scripts/mount.fuse.storefs.8"

root="$(cd "$(dirname "$0")/.." && pwd)"
recorded=""

say() { echo "storefs: $*"; }

record() { recorded="$recorded$1 $2
"; }

# The files install puts, without man pages (their names come from the generator): what
# uninstall removes when there is no manifest.
standard_files() {
    echo "$BINDIR/storefs"
    echo "$HELPERS" | while read -r _ name; do [ -n "$name" ] && echo "$SBINDIR/$name"; done
    echo "$UNITDIR/storefs@.service"
    for doc in $DOCS; do echo "$DOCDIR/$(basename "$doc")"; done
    echo "$BASHCOMPDIR/storefs"
    echo "$ZSHCOMPDIR/_storefs"
    echo "$FISHCOMPDIR/storefs.fish"
    echo "$MANDIR/man8/$(basename "$HELPER_PAGE")"
}

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

# put MODE SOURCE TARGET: install one file (its folder made and recorded) and record it.
put() {
    make_dir "$(dirname "$3")"
    install -m "$1" "$2" "$DESTDIR$3"
    record f "$3"
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
    if [ -z "${MANPAGES:-}" ]; then
        say "generating the man pages (scripts/manpages)"
        MANPAGES="$("$root/scripts/manpages" release)"
    fi
}

install_all() {
    if [ -z "${BINARY:-}" ]; then build; fi
    [ -x "$BINARY" ] || { echo "storefs: $BINARY is not an executable" >&2; exit 1; }
    if [ -n "$DESTDIR" ]; then mkdir -p "$DESTDIR"; fi
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    : > "$work/helpers"

    put 0755 "$BINARY" "$BINDIR/storefs"
    echo "$HELPERS" | while read -r source name; do
        [ -n "$source" ] || continue
        sed "s#^STOREFS=.*#STOREFS=\"\${STOREFS:-$BINDIR/storefs}\"#" "$root/scripts/$source" > "$work/$name"
        echo "$name" >> "$work/helpers"
    done
    for name in $(cat "$work/helpers"); do put 0755 "$work/$name" "$SBINDIR/$name"; done
    sed -e "s#/usr/local/bin/storefs#$BINDIR/storefs#g" -e "s#/etc/storefs/#$CONFDIR/#g" \
        -e "s#/usr/local/share/doc/storefs/#$DOCDIR/#g" \
        "$root/systemd/storefs@.service" > "$work/storefs@.service"
    put 0644 "$work/storefs@.service" "$UNITDIR/storefs@.service"
    make_dir "$CONFDIR"
    for doc in $DOCS; do put 0644 "$root/$doc" "$DOCDIR/$(basename "$doc")"; done

    # Completions come from the binary itself (swift-argument-parser writes them).
    "$BINARY" --generate-completion-script bash > "$work/storefs.bash"
    "$BINARY" --generate-completion-script zsh > "$work/_storefs"
    "$BINARY" --generate-completion-script fish > "$work/storefs.fish"
    put 0644 "$work/storefs.bash" "$BASHCOMPDIR/storefs"
    put 0644 "$work/_storefs" "$ZSHCOMPDIR/_storefs"
    put 0644 "$work/storefs.fish" "$FISHCOMPDIR/storefs.fish"

    put 0644 "$root/$HELPER_PAGE" "$MANDIR/man8/$(basename "$HELPER_PAGE")"
    if [ -n "${MANPAGES:-}" ]; then
        [ -f "$MANPAGES/storefs.1" ] || { echo "storefs: MANPAGES=$MANPAGES holds no storefs.1" >&2; exit 1; }
        for page in "$MANPAGES"/*.1; do put 0644 "$page" "$MANDIR/man1/$(basename "$page")"; done
    else
        say "no man pages installed (BINARY given without MANPAGES=; scripts/manpages makes them)"
    fi

    if [ -n "$MANIFEST" ]; then
        make_dir "$(dirname "$MANIFEST")"
        record f "$MANIFEST"
        # Merge with an earlier install's manifest: directories it created are still ours.
        if [ -f "$DESTDIR$MANIFEST" ]; then recorded="$recorded$(cat "$DESTDIR$MANIFEST")
"; fi
        printf '%s' "$recorded" | sed '/^$/d' | sort -u > "$DESTDIR$MANIFEST.new"
        mv "$DESTDIR$MANIFEST.new" "$DESTDIR$MANIFEST"
    fi

    say "installed $DESTDIR$BINDIR/storefs, $DESTDIR$SBINDIR/mount.fuse.storefs, $DESTDIR$UNITDIR/storefs@.service"
    say "configurations go in $DESTDIR$CONFDIR/NAME.conf (example: $DESTDIR$DOCDIR/example.conf)"
    runtime_notice
    reload_systemd
}

# The binary swift build makes loads the Swift runtime from the toolchain it was built with
# (its RUNPATH): install.sh installs it as it is, so that toolchain must stay. The Debian package
# (scripts/package) bundles the runtime instead.
runtime_notice() {
    runtime="$(ldd "$DESTDIR$BINDIR/storefs" 2>/dev/null | awk '$1 ~ /^libswiftCore/ && $3 ~ /^\// { print $3 }')"
    case "$runtime" in
        */lib/swift/linux/*)
            say "note: storefs loads the Swift runtime from $(dirname "$runtime"): keep that toolchain installed," \
                "or install the Debian package (scripts/package), which bundles the runtime" ;;
    esac
}

uninstall_all() {
    if [ -n "$MANIFEST" ] && [ -f "$DESTDIR$MANIFEST" ]; then
        manifest="$(cat "$DESTDIR$MANIFEST")"
    else
        say "no $DESTDIR$MANIFEST: removing the standard files only"
        manifest="$(standard_files | sed 's/^/f /'; for page in "$DESTDIR$MANDIR"/man1/storefs*.1; do
            [ -f "$page" ] && echo "f $MANDIR/man1/$(basename "$page")"; done)"
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
