#!/usr/bin/env bash
# Creates .tools/fuzz-venv with Schemathesis (test/fuzz/requirements.txt) for the API fuzz suite,
# idempotently: a stamp named after the requirements' sha256 skips the install when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="$PWD/.tools/fuzz-venv"
req=test/fuzz/requirements.txt
stamp="$VENV/.requirements-$(sha256sum "$req" | cut -c1-16)"
if [ -x "$VENV/bin/schemathesis" ] && [ -f "$stamp" ]; then exit 0; fi
command -v python3 >/dev/null 2>&1 || { echo "setup: python3 is required for the Schemathesis fuzz suite" >&2; exit 1; }
echo "setup: installing Schemathesis (PyPI) into .tools/fuzz-venv" >&2
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$req"
rm -f "$VENV"/.requirements-*
touch "$stamp"
