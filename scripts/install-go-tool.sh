#!/usr/bin/env bash
# Builds one Go tool with `go install MODULE/PACKAGE@VERSION` into .tools/bin, idempotently
# (a stamp file names the version). Go's module and build caches live outside the checkout,
# so a rebuild in a fresh clone is quick.
#   install-go-tool.sh NAME PACKAGE VERSION [BUILT_NAME]
# NAME is the binary's name in .tools/bin; BUILT_NAME is what go install calls it, when that differs.
# Extra GOFLAGS come from the caller's environment.
set -euo pipefail
cd "$(dirname "$0")/.."
name="$1" package="$2" version="$3" built="${4:-$1}"
TOOLS="$PWD/.tools"
stamp="$TOOLS/bin/.$name-$version"
if [ -x "$TOOLS/bin/$name" ] && [ -f "$stamp" ]; then exit 0; fi
command -v go >/dev/null 2>&1 || { echo "setup: go is required to build $name for the tests" >&2; exit 1; }
echo "setup: building $name $version with go install (cold: minutes)" >&2
mkdir -p "$TOOLS/bin"
GOBIN="$TOOLS/bin" go install "$package@$version"
[ "$built" = "$name" ] || mv "$TOOLS/bin/$built" "$TOOLS/bin/$name"
rm -f "$TOOLS/bin/.$name-"*
touch "$stamp"
