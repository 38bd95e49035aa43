/**
 * The chaos suite, bounded (bench/chaos.ts is the long run): three
 * installs at once on the production topology (two API processes behind a
 * balancer, two workers, Temporal, PostgreSQL, one agent process per cluster)
 * while api, worker, Temporal, PostgreSQL and an agent are each SIGKILLed at
 * a seeded random moment mid-install and brought back. The seed is printed;
 * CHAOS_SEED=<seed> replays the same moments.
 *
 * The promise checked: every install reaches `installed` with no person
 * acting, except the host whose own agent was killed while writing its image
 * (it reports why, and one retry installs it); no install step executed twice
 * (counted in the agents' own journals); no stage report lost; no report left
 * undelivered; and the API answered 503, never another 5xx, while a
 * dependency was away.
 */
import { appendFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runChaos } from '../../bench/chaos-lab';
import { tempDir } from '../support/services';

const ARTIFACTS = path.resolve(__dirname, '../../test-artifacts');
const seed = process.env.CHAOS_SEED ?? `${Date.now()}`;

it(`keeps its promise when each component is killed mid-install (seed ${seed})`, async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  const logFile = path.join(ARTIFACTS, 'chaos.log');
  writeFileSync(logFile, `seed ${seed}\n`);
  const log = (line: string) => appendFileSync(logFile, `${new Date().toISOString()} ${line}\n`);
  const dir = tempDir('chaos');
  log(`dir ${dir}`);
  const report = await runChaos({
    seed,
    clusters: 2,
    agentVictims: 1,
    concurrency: 3,
    killsPerComponent: 1,
    gapMs: [1000, 4000],
    downMs: [2000, 5000],
    dir,
    log,
    // 85 s alone on this machine; in one CI run beside the other suites, the victim's cluster was still in error
    // at a 200 s deadline.
    deadlineMs: 330_000,
  });
  writeFileSync(path.join(ARTIFACTS, 'chaos-report.json'), JSON.stringify(report, null, 2));
  log(`report: ${JSON.stringify({ ...report, kills: undefined })}`);

  try {
    assertPromise(report);
  } catch (err) {
    // CI keeps only what the test prints, and shows only the head and the tail of a long output: where the
    // unfinished installs stood and what the lab saw fail come first, the lab's own account of the run (without
    // its one long report line) after.
    const lines = readFileSync(logFile, 'utf8').split('\n');
    const failures = lines.filter((l) => / install failed: |NOT expected|refused/.test(l));
    const account = lines.filter((l) => !/ report: /.test(l));
    console.log(`chaos: not installed: ${JSON.stringify(report.notInstalled)}\n${failures.join('\n')}\n\nchaos.log:\n${account.join('\n')}`);
    throw err;
  }
  // Kept when anything above failed: every process's log is in <dir>/logs.
  rmSync(dir, { recursive: true, force: true });
}, 400_000);

function assertPromise(report: Awaited<ReturnType<typeof runChaos>>) {
  // Each component was killed, and the kills landed while installs were in flight.
  expect(report.kills.map((k) => k.component).sort()).toEqual(['agent', 'api', 'postgres', 'temporal', 'worker']);
  expect(report.kills.every((k) => Object.keys(k.inFlight).some((s) => ['preparing-for-installation', 'installing', 'finalizing'].includes(s)))).toBe(true);
  // Every install reached installed; the only person acting is one retry of the victim's host.
  expect(report.notInstalled).toEqual([]);
  expect(report.installed).toBe(3);
  expect(report.personActions.filter((a) => !a.allowed)).toEqual([]);
  expect(report.personActions).toHaveLength(1);
  expect(report.personActions[0]!.reason).toMatch(/restarted|agent stopped/);
  // Executed once: one execution per install step dispatched (5 + 5 + the victim's two), none twice.
  expect(report.duplicateExecutions).toEqual([]);
  expect(report.executions).toBe(12);
  expect(report.installStepsDispatched).toBe(12);
  // No step of an installed host is left `sent`.
  expect(report.stepsLeftSent).toBe(0);
  // Nothing lost.
  expect(report.lostStageReports).toEqual([]);
  expect(report.lostEvents).toEqual([]);
  expect(report.undeliveredAtEnd).toBe(0);
  // 503 while a dependency was away, never another 5xx.
  expect(report.serverErrors).toEqual([]);
  expect(Object.keys(report.answers.by5xx).filter((s) => s !== '503')).toEqual([]);
  expect(report.answers.during.dependencyDown503).toBeGreaterThan(0);
}
