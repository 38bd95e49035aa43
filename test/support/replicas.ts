/**
 * The tests' replicated mode: with LANDFALL_TEST_REPLICAS=2 the harnesses
 * (api-harness, install-harness) run two API processes behind a round-robin
 * balancer and two worker processes (bench/replica-lab.ts) instead of one of
 * each in the test's process. A test that passes with one process must pass
 * when consecutive requests reach different processes: anything one process
 * kept in memory that changes an answer shows up as a different answer.
 */
import path from 'node:path';
import { PROCESS_LOCAL_METRICS } from '../../src/metrics';
import { startApiReplicas as startApis, startWorkerReplicas as startWorkers, type Balancer } from '../../bench/replica-lab';
import type { Config } from '../../src/config';

export { BALANCER_HEADER, type Balancer } from '../../bench/replica-lab';

/** Each process's log, appended across runs: test-artifacts/replicas/<database>-api-0.log … */
const ARTIFACTS = path.resolve(__dirname, '../../test-artifacts/replicas');

export const startApiReplicas = (cfg: Config, n: number, label: string) => startApis(cfg, n, label, ARTIFACTS);
export const startWorkerReplicas = (cfg: Config, n: number, label: string) => startWorkers(cfg, n, label, ARTIFACTS);

/** How many API and worker processes the harnesses run: LANDFALL_TEST_REPLICAS (a test setting, read here only). */
export function testReplicas(): number {
  const n = Number(process.env.LANDFALL_TEST_REPLICAS ?? '1');
  return Number.isInteger(n) && n >= 1 ? n : 1;
}

/**
 * /metrics as a Prometheus server would see the service: with one process its
 * answer; with replicas, each replica scraped and the process-local series
 * summed across them (the rest are read from PostgreSQL and agree). A series
 * only some replicas have (a stage whose every report reached one replica) is
 * kept: the sum is over the union of series, under the first replica's family
 * headers, each family's samples kept together as the exposition format asks.
 */
export async function scrapeMetrics(h: { url: string; balancer?: Balancer }): Promise<string> {
  const urls = h.balancer ? h.balancer.targets() : [h.url];
  const texts = await Promise.all(urls.map((u) => fetch(`${u}/metrics`).then((r) => r.text())));
  if (texts.length === 1) return texts[0]!;
  const family = (line: string) => PROCESS_LOCAL_METRICS.find((m) => line.startsWith(`${m}_`) || line.startsWith(`${m}{`) || line.startsWith(`${m} `));
  // Per local family, its series in first-seen order across replicas, summed.
  const sums = new Map<string, Map<string, number>>();
  for (const t of texts) {
    for (const line of t.split('\n')) {
      const m = /^([^#].*) (\S+)$/.exec(line);
      const f = m && family(line);
      if (!m || !f) continue;
      const series = sums.get(f) ?? new Map<string, number>();
      sums.set(f, series);
      series.set(m[1]!, (series.get(m[1]!) ?? 0) + Number(m[2]));
    }
  }
  const out: string[] = [];
  const written = new Set<string>();
  const writeFamily = (f: string) => {
    if (written.has(f)) return;
    written.add(f);
    for (const [series, value] of sums.get(f) ?? []) out.push(`${series} ${value}`);
  };
  for (const line of texts[0]!.split('\n')) {
    const type = /^# TYPE (\S+) /.exec(line);
    if (type && PROCESS_LOCAL_METRICS.includes(type[1]!)) {
      // The samples right after their family's header, even when this replica has none of them.
      out.push(line);
      writeFamily(type[1]!);
      continue;
    }
    const f = /^[^#].* \S+$/.test(line) ? family(line) : undefined;
    if (f) writeFamily(f);
    else out.push(line);
  }
  return out.join('\n');
}

/**
 * For a suite that runs another suite's cases in the replicated topology: the
 * harnesses read the count when they start (in beforeAll), after this ran.
 */
export function useTestReplicas(n: number): void {
  process.env.LANDFALL_TEST_REPLICAS = String(n);
}
