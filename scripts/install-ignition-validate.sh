#!/usr/bin/env bash
# Builds the real ignition-validate (github.com/coreos/ignition/v2/validate) into .tools/bin, idempotently.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/versions.sh
TOOLS="$PWD/.tools"
stamp="$TOOLS/bin/.ignition-validate-$IGNITION_VERSION"
if [ -x "$TOOLS/bin/ignition-validate" ] && [ -f "$stamp" ]; then exit 0; fi
command -v go >/dev/null 2>&1 || { echo "setup: go is required to build ignition-validate for the tests" >&2; exit 1; }
echo "setup: building ignition-validate $IGNITION_VERSION with go install" >&2
mkdir -p "$TOOLS/bin"
GOBIN="$TOOLS/bin" go install "github.com/coreos/ignition/v2/validate@$IGNITION_VERSION"
mv "$TOOLS/bin/validate" "$TOOLS/bin/ignition-validate"
rm -f "$TOOLS"/bin/.ignition-validate-*
touch "$stamp"
