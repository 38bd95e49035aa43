#!/usr/bin/env bash
# Creates .tools/compat-venv with the generated assisted-service Python client and aicli
# (test/compat/requirements.txt) for the compatibility test, idempotently:
# a stamp named after the requirements' sha256 skips the install when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="$PWD/.tools/compat-venv"
req=test/compat/requirements.txt
stamp="$VENV/.requirements-$(sha256sum "$req" | cut -c1-16)"
if [ -x "$VENV/bin/python" ] && [ -f "$stamp" ]; then exit 0; fi
command -v python3 >/dev/null 2>&1 || { echo "setup: python3 is required for the assisted-service client compatibility test" >&2; exit 1; }
echo "setup: installing the assisted-service Python client and aicli (PyPI) into .tools/compat-venv" >&2
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$req"
rm -f "$VENV"/.requirements-*
touch "$stamp"
