#!/usr/bin/env bash
# Every test: type check, lint (with the workflow-purity rule), then jest
# (unit, integration on real PostgreSQL/Temporal/MinIO, end to end).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p test-artifacts
start=$(date +%s)

echo "test: type check" >&2
npx --no-install tsc -p tsconfig.json --noEmit
npx --no-install tsc -p web/tsconfig.json --noEmit

echo "test: lint" >&2
npx --no-install eslint --max-warnings 0 .

echo "test: jest" >&2
set +e
npx --no-install jest --ci --json --outputFile=test-artifacts/jest-results.json "$@"
status=$?
set -e

# A plain closing line that CI reads whatever the runner.
node -e '
const r = require("./test-artifacts/jest-results.json");
const failed = r.numFailedTests + r.numRuntimeErrorTestSuites;
console.log(`jest: ${r.numPassedTests} passed, ${failed} failed, ${r.numPendingTests} skipped`);
' || true
echo "test: finished in $(( $(date +%s) - start )) s (exit $status)" >&2
exit $status
