#!/bin/sh
# Remove exactly what scripts/install.sh installed (same DESTDIR/PREFIX/... variables).
exec "$(dirname "$0")/install.sh" uninstall "$@"
