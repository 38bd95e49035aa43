/**
 * The chaos suite, long: `npm run bench:chaos -- [--clusters 30] [--victims 3]
 * [--concurrency 4] [--kills 4] [--seed S]`. Installs of 3+2 simulated
 * clusters (and single-node victims whose agent is killed mid-write) while
 * api, worker, Temporal and PostgreSQL are each killed --kills times at seeded
 * random moments (bench/chaos-lab.ts). Prints the figures and writes the full
 * report to chaos-report.json in the run's folder; exits 1 when the promise
 * was broken.
 */
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runChaos, stopChaos } from './chaos-lab';
import { checkOptions, numberFlag, watchdog } from './support';

checkOptions('usage: node dist/bench/chaos.js [--clusters 30] [--victims 3] [--concurrency 4] [--kills 4] [--deadline-minutes 90] [--seed TEXT]', { numbers: ['clusters', 'victims', 'concurrency', 'kills', 'deadline-minutes'], strings: ['seed'] });

async function main(): Promise<void> {
  // Ctrl-C stops what the run started (PostgreSQL, Temporal, api, workers, fleets), then exits.
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void stopChaos().finally(() => process.exit(130)));
  const seedAt = process.argv.indexOf('--seed');
  const seed = seedAt >= 0 ? process.argv[seedAt + 1]! : `${Date.now()}`;
  const clusters = numberFlag('clusters', 30);
  const victims = numberFlag('victims', 3);
  const concurrency = numberFlag('concurrency', 4);
  const killsPerComponent = numberFlag('kills', 4);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'landfall-chaos-'));
  const deadlineMs = numberFlag('deadline-minutes', 90) * 60_000;
  const timer = watchdog(deadlineMs + 120_000);
  const logFile = path.join(dir, 'chaos.log');
  console.log(`chaos: seed ${seed}; ${clusters} clusters of 3+2 and ${victims} single-node victims, ${concurrency} at a time, each component killed ${killsPerComponent} times; logs in ${dir}`);
  const report = await runChaos({
    seed,
    clusters,
    agentVictims: victims,
    concurrency,
    killsPerComponent,
    gapMs: [5000, 40000],
    downMs: [2000, 10000],
    dir,
    deadlineMs,
    log: (line) => {
      appendFileSync(logFile, `${new Date().toISOString()} ${line}\n`);
      if (/^kill|installed$|person|failed|supervisor/.test(line) || line.includes(': host ')) console.log(line);
    },
  });
  clearTimeout(timer);
  writeFileSync(path.join(dir, 'chaos-report.json'), JSON.stringify(report, null, 2));
  const kills = report.kills.reduce<Record<string, number>>((a, k) => ({ ...a, [k.component]: (a[k.component] ?? 0) + 1 }), {});
  const unexpected = report.personActions.filter((a) => !a.allowed);
  const non503 = Object.entries(report.answers.by5xx).filter(([s]) => s !== '503').reduce((n, [, v]) => n + v, 0);
  const figures = {
    seed,
    installs: `${report.installed}/${report.installs} installed`,
    personActions: `${report.personActions.length} (${report.personActions.length - unexpected.length} allowed: retries of hosts whose agent was killed mid-write; ${unexpected.length} not expected)`,
    duplicateExecutions: report.duplicateExecutions.length,
    executions: `${report.executions} install step executions for ${report.installStepsDispatched} install steps dispatched (${report.installStepSends} sends)`,
    stepsLeftSent: report.stepsLeftSent,
    lostStageReports: report.lostStageReports.length,
    lostEvents: report.lostEvents.length,
    undeliveredAtEnd: report.undeliveredAtEnd,
    kills,
    selfDeaths: report.selfDeaths.length,
    answers: report.answers.total,
    '5xx': report.answers.by5xx,
    '503WhileDependencyDown': report.answers.during.dependencyDown503,
    non503ServerErrors: non503,
    minutes: Math.round(report.durationMs / 600) / 100,
  };
  console.log(JSON.stringify(figures, null, 2));
  const ok = report.notInstalled.length === 0 && unexpected.length === 0 && report.duplicateExecutions.length === 0 && report.lostStageReports.length === 0 && report.lostEvents.length === 0 && non503 === 0;
  process.exit(ok ? 0 : 1);
}

main().catch((err: unknown) => {
  console.error(`chaos: ${(err as Error).stack ?? String(err)}`);
  process.exit(1);
});
