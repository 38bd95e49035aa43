/**
 * The pure arithmetic of the agent-API benchmarks (bench/agent-api.ts, bench/soak.ts):
 * percentiles, the knee of a rate sweep and the next rate a bisection tries, and
 * the CPU each party used between two snapshots. No I/O here, so it is unit-tested
 * (test/unit/agent-bench-stats.test.ts) apart from the runs.
 */

export interface Percentiles {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/**
 * Nearest-rank percentiles (the smallest value with at least p % of the samples at or
 * below it): a p99 is a latency some request really had, never an interpolation.
 * NaN for no samples.
 */
export function percentiles(xs: ArrayLike<number>): Percentiles {
  const s = Float64Array.from(xs).sort();
  const at = (p: number) => (s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]! : NaN);
  return { count: s.length, p50: at(50), p90: at(90), p99: at(99), max: s.length ? s[s.length - 1]! : NaN };
}

/** One offered rate of a sweep, as the knee finder judges it. */
export interface RateOutcome {
  offered: number;
  /** Answers per second over the window (below `offered` when the API fell behind). */
  achieved: number;
  p99: number;
  /** Transport errors, timeouts, non-2xx answers and requests never sent because too many were in flight. */
  failures: number;
}

export interface KneeCriteria {
  p99Ms: number;
  /** The share of the offered rate that must be answered within the window (default 0.98). */
  minAchievedRatio?: number;
}

/** Whether a rate met the target: p99 under the bound, nothing failed, and the API kept up. */
export function rateMeets(o: RateOutcome, c: KneeCriteria): boolean {
  return Number.isFinite(o.p99) && o.p99 < c.p99Ms && o.failures === 0 && o.achieved >= (c.minAchievedRatio ?? 0.98) * o.offered;
}

export interface Knee {
  /** The highest rate that met the target below the lowest rate that missed it; undefined if the lowest rate missed. */
  knee: number | undefined;
  /** The lowest rate that missed it; undefined if every rate met it (the knee is then at least `knee`). */
  firstMiss: number | undefined;
  /** Rates above `firstMiss` that met the target anyway (noise, or a warmer API): reported, never taken as the knee. */
  metAboveMiss: number[];
}

/**
 * The knee of a sweep: the highest offered rate whose p99 stayed under the bound with no
 * failures, counting only rates below the first one that missed, so a lucky pass above a
 * miss does not move it up. Outcomes may come in any order (a bisection adds rates in between).
 */
export function findKnee(outcomes: RateOutcome[], c: KneeCriteria): Knee {
  const sorted = [...outcomes].sort((a, b) => a.offered - b.offered);
  const miss = sorted.find((o) => !rateMeets(o, c));
  const below = sorted.filter((o) => (miss ? o.offered < miss.offered : true) && rateMeets(o, c));
  return {
    knee: below.length ? below[below.length - 1]!.offered : undefined,
    firstMiss: miss?.offered,
    metAboveMiss: miss ? sorted.filter((o) => o.offered > miss.offered && rateMeets(o, c)).map((o) => o.offered) : [],
  };
}

/**
 * The next rate a bisection between the knee and the first miss measures, rounded to
 * `resolution`; undefined when the two are within `resolution` of each other (or there is
 * no bracket: every rate met the target, or none did).
 */
export function nextBisectRate(outcomes: RateOutcome[], c: KneeCriteria, resolution: number): number | undefined {
  const { knee, firstMiss } = findKnee(outcomes, c);
  if (knee === undefined || firstMiss === undefined || firstMiss - knee <= resolution) return undefined;
  const mid = Math.round((knee + firstMiss) / 2 / resolution) * resolution;
  if (mid <= knee || mid >= firstMiss || outcomes.some((o) => o.offered === mid)) return undefined;
  return mid;
}

/** Comma-separated rates (`500,1000,1700`) as positive numbers, ascending, no repeats. */
export function parseRates(text: string): number[] {
  const rates = text.split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  if (!rates.length || rates.some((r) => !Number.isFinite(r) || r <= 0 || r > 1_000_000)) throw new Error(`--rates must be a comma-separated list of positive requests/s (got "${text}")`);
  return [...new Set(rates)].sort((a, b) => a - b);
}

/** CPU seconds used so far by each party, and the machine's busy and total seconds (/proc/stat), at one instant. */
export interface CpuSnapshot {
  wall: number;
  api: number;
  /** Each API process's own CPU seconds, keyed `<role>:<pid>` (role: API_PROCESS_ROLE, or primary). */
  apiProcesses?: Record<string, number>;
  postgres: number;
  /** PostgreSQL's CPU seconds by kind of process (backend, walwriter, autovacuum worker, …). */
  postgresKinds?: Record<string, number>;
  generator: number;
  bench: number;
  machineBusy: number;
  machineTotal: number;
}

/** Cores used by each party between two snapshots; `other` is the machine's busy time not used by any of them. */
export interface CpuShare {
  api: number;
  /** Cores of each API process alive at both snapshots (`<role>:<pid>`): says whether the serving processes share the load. */
  apiProcesses?: Record<string, number>;
  postgres: number;
  /** PostgreSQL's cores by kind of process; a kind with no process left at the second snapshot counts what it used before (its reaped time is the postmaster's). */
  postgresKinds?: Record<string, number>;
  generator: number;
  bench: number;
  other: number;
  machineBusy: number;
  machineCores: number;
}

export function cpuShare(a: CpuSnapshot, b: CpuSnapshot): CpuShare {
  const wall = b.wall - a.wall;
  const per = (x: number, y: number) => (wall > 0 ? Math.max(0, y - x) / wall : 0);
  const api = per(a.api, b.api);
  const postgres = per(a.postgres, b.postgres);
  const generator = per(a.generator, b.generator);
  const bench = per(a.bench, b.bench);
  const machineBusy = per(a.machineBusy, b.machineBusy);
  const apiProcesses = a.apiProcesses && b.apiProcesses ? Object.fromEntries(Object.entries(b.apiProcesses).filter(([k]) => k in a.apiProcesses!).map(([k, v]) => [k, per(a.apiProcesses![k]!, v)])) : undefined;
  const postgresKinds = a.postgresKinds && b.postgresKinds ? Object.fromEntries(Object.keys({ ...a.postgresKinds, ...b.postgresKinds }).map((k) => [k, per(a.postgresKinds![k] ?? 0, b.postgresKinds![k] ?? 0)])) : undefined;
  return { api, ...(apiProcesses ? { apiProcesses } : {}), postgres, ...(postgresKinds ? { postgresKinds } : {}), generator, bench, other: Math.max(0, machineBusy - api - postgres - generator - bench), machineBusy, machineCores: per(a.machineTotal, b.machineTotal) };
}

/** RSS growth between two readings, as a ratio of the first (0.05 = grew 5 %). */
export const growth = (first: number, last: number): number => (first > 0 ? (last - first) / first : NaN);

/**
 * The p99 of each second as one line: the values in whole ms (n/a: a second
 * nothing was answered in; a JSON round trip makes NaN null) and how many
 * reached `boundMs`, the target's 50 ms.
 */
export function secondsLine(p99s: Array<number | null>, boundMs = 50): string {
  const over = secondsAtBound(p99s, boundMs);
  const text = p99s.map((v) => (typeof v === 'number' && Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : 'n/a'));
  return `${text.join(' ')} ms (${over} of ${p99s.length} seconds ≥ ${boundMs} ms)`;
}

/** How many of these seconds' p99s reached `boundMs` (seconds nothing was answered in count as not). */
export function secondsAtBound(p99s: Array<number | null>, boundMs = 50): number {
  return p99s.filter((v) => typeof v === 'number' && Number.isFinite(v) && v >= boundMs).length;
}

export interface ScrapeEffect {
  count: number;
  wallMs: Percentiles;
  /** The window's seconds a scrape started in. */
  seconds: number[];
  /** The median of those seconds' p99, and of the other seconds' (ms). */
  withScrape: number;
  without: number;
}

/** What the window's scrapes cost the polls: the seconds they started in against the rest (median of per-second p99s). */
export function scrapeEffect(scraped: Array<{ second: number; ms: number }>, secondsP99: number[]): ScrapeEffect {
  const seconds = [...new Set(scraped.map((x) => x.second))].filter((k) => k >= 0 && k < secondsP99.length).sort((a, b) => a - b);
  const median = (xs: number[]) => {
    const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
    return v.length ? v[Math.floor((v.length - 1) / 2)]! : NaN;
  };
  const withSet = new Set(seconds);
  return {
    count: scraped.length,
    wallMs: percentiles(scraped.map((x) => x.ms).filter((x) => Number.isFinite(x))),
    seconds,
    withScrape: median(seconds.map((k) => secondsP99[k]!)),
    without: median(secondsP99.filter((_, k) => !withSet.has(k))),
  };
}
