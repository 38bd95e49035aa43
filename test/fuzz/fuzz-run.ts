/**
 * Runs Schemathesis (PyPI, pinned in test/fuzz/requirements.txt, installed by
 * scripts/install-fuzz-venv.sh) against a running Landfall API with one
 * token, and reads what it found. The test (schemathesis.test.ts) and the long
 * run (bench/fuzz.sh) both use it.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { OPENAPI_PATH } from '../../src/api/openapi/spec';

const ROOT = path.resolve(__dirname, '../..');
export const SCHEMATHESIS = path.join(ROOT, '.tools', 'fuzz-venv', 'bin', 'schemathesis');
const HOOKS = path.join(__dirname, 'hooks.py');

export interface Chain {
  cluster_id?: string;
  infra_env_id: string;
  host_ids: string[];
  bmc_host_ids?: string[];
}

export interface FuzzRun {
  /** user or agent: which security scheme the token is for, and so which operations are run. */
  as: 'user' | 'agent';
  token: string;
  apiUrl: string;
  chains: Chain[];
  /** A loopback URL whose POST /chains makes a throw-away chain for a DELETE to remove. */
  seeder?: string;
  maxExamples: number;
  maxSteps: number;
  /** Bounds the whole run, in seconds (Schemathesis stops starting new cases). */
  maxTimeSeconds: number;
  seed: number;
  workers: number;
  /** Folder for the config, the reports and the log. */
  dir: string;
}

export interface FuzzResult {
  exitCode: number | null;
  output: string;
  /** Test cases Schemathesis generated and sent (its own count). */
  cases: number;
  operations: number;
  durationSeconds: number;
  /** Failures by Schemathesis code and title, with the operations they were seen on (details in output.txt). */
  failures: Record<string, { count: number; operations: string[] }>;
  /** Errors (the run could not test something), and warnings (as Schemathesis labels them). */
  errors: Array<{ title: string; count: number }>;
  warnings: string[];
  /** Failures the hooks' filter_failure dropped (semantic 400s, see hooks.py). */
  filtered: number;
  /** From the hooks: requests, and how many carried seeded ids, by status. */
  stats: { requests: number; seeded: number; seeded_by_status: Record<string, number>; by_status: Record<string, number>; disposable_chains: number; semantic_400_dropped: Record<string, number> };
}

/** The operations whose security the token satisfies (the document's default is userAuth). */
export function operationIds(as: 'user' | 'agent'): string[] {
  const spec = parse(readFileSync(OPENAPI_PATH, 'utf8')) as {
    security?: Array<Record<string, unknown>>;
    paths: Record<string, Record<string, { operationId?: string; security?: Array<Record<string, unknown>> }>>;
  };
  const scheme = as === 'user' ? 'userAuth' : 'agentAuth';
  const ids: string[] = [];
  for (const ops of Object.values(spec.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      if (method === 'parameters' || !op.operationId) continue;
      const security = op.security ?? spec.security ?? [];
      if (security.some((s) => scheme in s)) ids.push(op.operationId);
    }
  }
  return ids;
}

const toml = (v: unknown): string => JSON.stringify(v);

export async function runSchemathesis(run: FuzzRun): Promise<FuzzResult> {
  if (!existsSync(SCHEMATHESIS)) throw new Error(`${SCHEMATHESIS} is missing; run "bash scripts/install-fuzz-venv.sh" (npm test runs scripts/setup.sh --test, which does)`);
  mkdirSync(run.dir, { recursive: true });
  const seeds = path.join(run.dir, 'seeds.json');
  const statsFile = path.join(run.dir, 'hook-stats.json');
  writeFileSync(seeds, JSON.stringify({ chains: run.chains, seeder: run.seeder, probability: 0.9, seed: run.seed, stats: statsFile }));
  const scheme = run.as === 'user' ? 'userAuth' : 'agentAuth';
  const config = path.join(run.dir, 'schemathesis.toml');
  writeFileSync(
    config,
    [
      `hooks = ${toml(HOOKS)}`,
      `workers = ${run.workers}`,
      `seed = ${run.seed}`,
      // An event stream is read for a few events or until the timeout, then counts as answered.
      'max-stream-events = 3',
      'request-timeout = 20',
      '[generation]',
      `max-examples = ${run.maxExamples}`,
      // NUL characters in strings: PostgreSQL cannot store them, the API must refuse them with a 400.
      'allow-x00 = true',
      // Not kept between runs: each run starts from the seed alone.
      'database = "none"',
      '[phases.stateful]',
      `max-steps = ${run.maxSteps}`,
      `[auth.openapi.${scheme}]`,
      `api_key = ${toml(run.as === 'user' ? `Bearer ${run.token}` : run.token)}`,
      '',
    ].join('\n'),
  );
  const ids = operationIds(run.as);
  const junit = path.join(run.dir, 'junit.xml');
  const report = path.join(run.dir, 'report.json');
  const args = [
    '--config-file',
    config,
    'run',
    `${run.apiUrl}/api/assisted-install/v2/openapi.json`,
    // No base URL: the document's servers, read against where it was loaded from, give each path its base
    // (/api/assisted-install, and /api/landfall for Landfall's own paths).
    '--checks',
    'all',
    '--max-time',
    String(run.maxTimeSeconds),
    '--include-operation-id-regex',
    `^(${ids.join('|')})$`,
    '--report',
    'junit,json',
    '--report-junit-path',
    junit,
    '--report-json-path',
    report,
    '--no-color',
    '--suppress-health-check',
    'all',
  ];
  const started = Date.now();
  const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
    execFile(
      SCHEMATHESIS,
      args,
      { cwd: run.dir, timeout: (run.maxTimeSeconds + 120) * 1000, maxBuffer: 64 * 1024 * 1024, env: { PATH: process.env.PATH!, HOME: run.dir, LANDFALL_FUZZ_SEEDS: seeds, PYTHONUNBUFFERED: '1', PYTHONDONTWRITEBYTECODE: '1' } },
      (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, output: `${stdout}${stderr ? `\n--- stderr ---\n${stderr}` : ''}${err?.killed ? '\n(killed: timed out)' : ''}` }),
    );
  });
  const durationSeconds = (Date.now() - started) / 1000;
  writeFileSync(path.join(run.dir, 'output.txt'), output);
  const stats = existsSync(statsFile) ? (JSON.parse(readFileSync(statsFile, 'utf8')) as FuzzResult['stats']) : { requests: 0, seeded: 0, seeded_by_status: {}, by_status: {}, disposable_chains: 0, semantic_400_dropped: {} };
  return { exitCode: code, output, durationSeconds, stats, ...readReport(report) };
}

/** Cases, operations and failures from Schemathesis's JSON run report. */
function readReport(file: string): Pick<FuzzResult, 'cases' | 'operations' | 'failures' | 'errors' | 'warnings' | 'filtered'> {
  if (!existsSync(file)) return { cases: 0, operations: 0, failures: {}, errors: [], warnings: [], filtered: 0 };
  const r = JSON.parse(readFileSync(file, 'utf8')) as {
    operations?: { tested: number };
    test_cases: { generated: number };
    failures: Array<{ code: string; title: string; count: number; operations: string[] }>;
    errors: Array<{ title: string; count: number }>;
    warnings: string[];
    filtered?: number;
  };
  const failures: FuzzResult['failures'] = {};
  for (const f of r.failures) failures[`${f.code} ${f.title}`] = { count: f.count, operations: f.operations };
  return { cases: r.test_cases.generated, operations: r.operations?.tested ?? 0, failures, errors: r.errors, warnings: r.warnings, filtered: r.filtered ?? 0 };
}
