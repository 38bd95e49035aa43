#!/usr/bin/env bash
# Every test: type check, lint (with the workflow-purity rule), then jest
# (unit, integration on real PostgreSQL/Temporal/MinIO, end to end).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p test-artifacts
start=$(date +%s)

# Every temporary folder of this run (servers' data, ISOs, object stores, browsers' profiles: the tests' and their
# children's, through TMPDIR) goes under one folder, removed when the run ends. The tests do not remove their own:
# a run left 1-2 GB in /tmp, and a machine that ran the suite for days ran out of disk mid-run.
run_tmp=$(mktemp -d "${TMPDIR:-/tmp}/landfall-test-run.XXXXXX")
# Open to every user, as /tmp is: the embedded PostgreSQL runs as its own user inside it.
chmod 1777 "$run_tmp"
trap 'rm -rf "$run_tmp"' EXIT
export TMPDIR="$run_tmp"

echo "test: type check" >&2
npx --no-install tsc -p tsconfig.json --noEmit
npx --no-install tsc -p web/tsconfig.json --noEmit

echo "test: lint" >&2
npx --no-install eslint --max-warnings 0 .

# Two passes: everything but the virtual machines on two workers, then the VM and BMC suites one
# file at a time. A TCG guest takes a whole core; run beside the other suites it starves their
# servers (timeouts that are the machine's, not the code's) and is starved in turn.
VM_SUITES='/test/vm/|/test/bmc/redfish-'
status=0
set +e
if [ $# -gt 0 ]; then
  echo "test: jest $*" >&2
  npx --no-install jest --ci --json --outputFile=test-artifacts/jest-results.json "$@" || status=$?
  results="test-artifacts/jest-results.json"
else
  echo "test: jest (all but the VM suites)" >&2
  npx --no-install jest --ci --json --outputFile=test-artifacts/jest-results.json --testPathIgnorePatterns "$VM_SUITES" || status=$?
  echo "test: jest (VM and BMC suites, one at a time)" >&2
  npx --no-install jest --ci --json --outputFile=test-artifacts/jest-results-vm.json --runInBand --testPathPatterns "$VM_SUITES" || status=$?
  results="test-artifacts/jest-results.json test-artifacts/jest-results-vm.json"
fi
set -e

# A plain closing line that CI reads whatever the runner.
node -e '
let passed = 0, failed = 0, skipped = 0;
for (const f of process.argv.slice(1)) {
  const r = require(require("path").resolve(f));
  passed += r.numPassedTests; failed += r.numFailedTests + r.numRuntimeErrorTestSuites; skipped += r.numPendingTests;
}
console.log(`jest: ${passed} passed, ${failed} failed, ${skipped} skipped`);
' $results || true
echo "test: finished in $(( $(date +%s) - start )) s (exit $status)" >&2
exit $status
