#!/usr/bin/env bash
# Creates .tools/<name> from a pinned requirements file, idempotently: a stamp named after the
# requirements' sha256 skips the install when nothing changed.
#   install-python-venv.sh NAME REQUIREMENTS EXECUTABLE WHAT
# EXECUTABLE (relative to the venv's bin/) must exist for the venv to count as installed;
# WHAT names the packages in set-up's messages.
set -euo pipefail
cd "$(dirname "$0")/.."
name=$1 req=$2 exe=$3 what=$4
VENV="$PWD/.tools/$name"
stamp="$VENV/.requirements-$(sha256sum "$req" | cut -c1-16)"
if [ -x "$VENV/bin/$exe" ] && [ -f "$stamp" ]; then exit 0; fi
command -v python3 >/dev/null 2>&1 || { echo "setup: python3 is required for $what" >&2; exit 1; }
echo "setup: installing $what (PyPI) into .tools/$name" >&2
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$req"
rm -f "$VENV"/.requirements-*
touch "$stamp"
