#!/usr/bin/env bash
# The long Schemathesis run: test/fuzz/schemathesis.test.ts (the real stack, seeded ids, a user's and an
# agent's token, --checks all) for FUZZ_MINUTES per token (default 20), both at once, under nice.
# Figures: test-artifacts/fuzz/{user,agent}/result.json and output.txt; a summary line per token at the end.
#   bash bench/fuzz.sh              # 20 minutes per token
#   FUZZ_MINUTES=5 bash bench/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-fuzz-venv.sh
minutes="${FUZZ_MINUTES:-20}"
start=$(date +%s)
status=0
LANDFALL_FUZZ_MAX_TIME=$((minutes * 60)) LANDFALL_FUZZ_MAX_EXAMPLES="${FUZZ_MAX_EXAMPLES:-1000}" LANDFALL_FUZZ_SEED="${FUZZ_SEED:-$(date +%s)}" \
  nice -n 10 npx --no-install jest --ci test/fuzz/schemathesis.test.ts || status=$?
node -e '
let cases = 0, failures = 0, errors = 0;
for (const who of ["agent", "user"]) {
  const r = require(require("path").resolve("test-artifacts/fuzz", who, "result.json"));
  const f = Object.values(r.failures).reduce((n, x) => n + x.count, 0);
  const e = r.errors.reduce((n, x) => n + x.count, 0);
  const s5 = Object.entries(r.stats.by_status).filter(([s]) => s.startsWith("5")).reduce((n, [, c]) => n + c, 0);
  cases += r.cases; failures += f; errors += e;
  console.log(`fuzz ${who}: ${r.cases} cases, ${r.operations} operations, ${Math.round(r.durationSeconds)} s, ${f} failures ${JSON.stringify(r.failures)}, ${e} errors, ${s5} 5xx responses, ${r.stats.seeded} of ${r.stats.requests} requests with seeded ids (${r.stats.seeded_by_status["404"] ?? 0} of them 404), ${r.filtered} semantic 400s dropped`);
}
console.log(`fuzz total: ${cases} cases, ${failures} failures, ${errors} errors`);
' || true
echo "fuzz: finished in $(( $(date +%s) - start )) s (exit $status)" >&2
exit $status
