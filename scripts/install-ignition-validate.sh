#!/usr/bin/env bash
# The real ignition-validate (github.com/coreos/ignition/v2/validate, built as "validate").
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/versions.sh
exec bash scripts/install-go-tool.sh ignition-validate github.com/coreos/ignition/v2/validate "$IGNITION_VERSION" validate
