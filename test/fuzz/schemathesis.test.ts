/**
 * Schemathesis against the OpenAPI document, on the real stack (fuzz-stack.ts):
 * once with a user's token over every operation a user may call, once with an
 * agent's token over every operation an agent may call. All its checks
 * (`--checks all`: server errors, response schemas, status codes, content
 * types, headers, negative-data rejection, auth, use after free, …), its
 * phases (examples, coverage, fuzzing, stateful with inferred links), NUL
 * characters allowed in strings; generated ids replaced by seeded ones
 * (hooks.py) so requests get past the 404. The run fails on any failed check.
 *
 * Bounded for `npm test` (under three minutes: both runs at once, 75 s each
 * plus the stack). bench/fuzz.sh runs the same for longer
 * (LANDFALL_FUZZ_MAX_TIME, LANDFALL_FUZZ_MAX_EXAMPLES) and writes the figures.
 * Reports and logs: test-artifacts/fuzz/<user|agent>/.
 */
import path from 'node:path';
import { rmSync, writeFileSync } from 'node:fs';
import { runSchemathesis, type FuzzResult } from './fuzz-run';
import { startFuzzStack, type FuzzStack } from './fuzz-stack';

const ARTIFACTS = path.resolve(__dirname, '../../test-artifacts/fuzz');
// The long run (bench/fuzz.sh) raises these; npm test keeps the defaults.
const MAX_EXAMPLES = Number(process.env.LANDFALL_FUZZ_MAX_EXAMPLES ?? 12);
// Per run, both runs at once; Schemathesis repeats fuzzing and stateful testing until it is spent.
const MAX_TIME_S = Number(process.env.LANDFALL_FUZZ_MAX_TIME ?? 75);
const SEED = Number(process.env.LANDFALL_FUZZ_SEED ?? 17);

let stack: FuzzStack;
beforeAll(async () => {
  rmSync(ARTIFACTS, { recursive: true, force: true });
  stack = await startFuzzStack();
}, 180_000);
afterAll(async () => {
  await stack?.stop();
});

function summary(r: FuzzResult): string {
  const failures = Object.entries(r.failures)
    .map(([name, f]) => `- ${name}: ${f.count} (${f.operations.join(', ')})`)
    .join('\n');
  return `${r.cases} cases over ${r.operations} operations in ${r.durationSeconds.toFixed(0)} s, exit ${r.exitCode}; errors ${JSON.stringify(r.errors)}; hooks: ${JSON.stringify(r.stats)}\n${failures}\n--- output (tail) ---\n${r.output.slice(-8000)}`;
}

function expectClean(r: FuzzResult, minCases: number) {
  // Written out so that a failed run says everything in the jest report.
  if (r.exitCode !== 0 || Object.keys(r.failures).length > 0 || r.errors.length > 0 || r.cases < minCases) throw new Error(summary(r));
  // Seeded ids reached the resources: most seeded requests were answered without a 404.
  const seeded404 = r.stats.seeded_by_status['404'] ?? 0;
  expect(r.stats.seeded).toBeGreaterThan(minCases / 4);
  expect(seeded404 / r.stats.seeded).toBeLessThan(0.25);
  expect(Object.keys(r.stats.by_status).filter((s) => s.startsWith('5'))).toEqual([]);
}

const TEST_TIMEOUT_MS = (MAX_TIME_S + 240) * 1000;

// The two runs at once: they share the stack, and the machine's second core.
it.concurrent(
  'an agent token: no server error, no response-schema violation, no failed check',
  async () => {
    const r = await runSchemathesis({
      as: 'agent',
      token: stack.agentToken,
      apiUrl: stack.h.api.url,
      chains: stack.chains.slice(0, 1),
      maxExamples: MAX_EXAMPLES,
      maxSteps: 10,
      maxTimeSeconds: MAX_TIME_S,
      seed: SEED,
      workers: 1,
      dir: path.join(ARTIFACTS, 'agent'),
    });
    writeFileSync(path.join(ARTIFACTS, 'agent', 'result.json'), JSON.stringify({ ...r, output: undefined }, null, 2));
    console.log(`fuzz (agent): ${r.cases} cases, ${r.operations} operations, ${r.durationSeconds.toFixed(0)} s, ${r.stats.seeded} seeded requests`);
    expectClean(r, 100);
  },
  TEST_TIMEOUT_MS,
);

it.concurrent(
  'a user token: no server error, no response-schema violation, no failed check',
  async () => {
    const r = await runSchemathesis({
      as: 'user',
      token: stack.userToken,
      apiUrl: stack.h.api.url,
      chains: stack.chains,
      seeder: stack.seeder,
      maxExamples: MAX_EXAMPLES,
      maxSteps: 10,
      maxTimeSeconds: MAX_TIME_S,
      seed: SEED,
      workers: 1,
      dir: path.join(ARTIFACTS, 'user'),
    });
    writeFileSync(path.join(ARTIFACTS, 'user', 'result.json'), JSON.stringify({ ...r, output: undefined }, null, 2));
    console.log(`fuzz (user): ${r.cases} cases, ${r.operations} operations, ${r.durationSeconds.toFixed(0)} s, ${r.stats.seeded} seeded requests`);
    expectClean(r, 300);
  },
  TEST_TIMEOUT_MS,
);
