/**
 * What a load generator must report about itself so its latencies can be
 * believed (bench/fleet-real.ts): a request's time is taken inside the
 * generator, so the generator's own event-loop lag, garbage-collection pauses
 * and waits for a free pooled socket all land in it.
 *
 * - `RequestTimes`: each agent request split, from undici's diagnostics
 *   channels, into the wait before its headers were written to a socket (the
 *   pool's queue, the loop getting round to it) and the time from that write
 *   to its answer's headers (the wire and the service, plus whatever lag the
 *   generator's loop had when the answer arrived).
 * - `GeneratorGauges`: the loop's delay (monitorEventLoopDelay), GC pauses
 *   (PerformanceObserver 'gc'), CPU and heap over a window.
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import { monitorEventLoopDelay, PerformanceObserver, type IntervalHistogram } from 'node:perf_hooks';
import { percentiles, type Percentiles } from './agent-stats';

export type RequestKind = 'poll' | 'reply' | 'register' | 'other';

export function kindOf(method: string, p: string): RequestKind {
  if (p.includes('/instructions')) return method === 'GET' ? 'poll' : 'reply';
  if (method === 'POST' && p.endsWith('/hosts')) return 'register';
  return 'other';
}

/** Latencies (ms) per request kind; the parts are per request too, in the same order as `total`. */
export interface KindSamples {
  /** From the agent's call to its answer's body read (what ServiceClient's observer sees). */
  total: number[];
  /** From the agent's call until undici wrote the request's headers to a socket. */
  toWrite: number[];
  /** From that write until the answer's headers were parsed. */
  wire: number[];
}

export type Samples = Record<RequestKind, KindSamples>;

export const emptySamples = (): Samples => ({
  poll: { total: [], toWrite: [], wire: [] },
  reply: { total: [], toWrite: [], wire: [] },
  register: { total: [], toWrite: [], wire: [] },
  other: { total: [], toWrite: [], wire: [] },
});

export function mergeSamples(into: Samples, from: Samples): Samples {
  for (const k of Object.keys(into) as RequestKind[]) {
    // push(...x) overflows the stack at hundreds of thousands of samples.
    for (const part of ['total', 'toWrite', 'wire'] as const) for (const v of from[k][part]) into[k][part].push(v);
  }
  return into;
}

/**
 * Times every undici request of this process by its diagnostics channels, keyed
 * by method and path (an agent's poll carries its host id and a timestamp, so
 * two in flight at once do not share a key; if they ever do, the first write is
 * taken). `observe` is ServiceClient's observer: it closes a request's record.
 */
export class RequestTimes {
  readonly samples: Samples = emptySamples();
  recording = false;
  private readonly wrote = new Map<string, { at: number; headersAt?: number }>();
  private readonly onWrite = (msg: unknown) => {
    const { request } = msg as { request: { method: string; path: string } };
    const key = `${request.method} ${request.path}`;
    if (!this.wrote.has(key)) this.wrote.set(key, { at: performance.now() });
  };
  private readonly onHeaders = (msg: unknown) => {
    const { request } = msg as { request: { method: string; path: string } };
    const w = this.wrote.get(`${request.method} ${request.path}`);
    if (w && w.headersAt === undefined) w.headersAt = performance.now();
  };

  constructor(private readonly basePath: string) {
    diagnosticsChannel.subscribe('undici:client:sendHeaders', this.onWrite);
    diagnosticsChannel.subscribe('undici:request:headers', this.onHeaders);
  }

  /** ServiceClient's observer: the request's total as the agent saw it, split by the write. */
  readonly observe = (a: { method: string; path: string; status: number; ms: number }): void => {
    const key = `${a.method} ${this.basePath}${a.path}`;
    const w = this.wrote.get(key);
    this.wrote.delete(key);
    if (!this.recording) return;
    const end = performance.now();
    const start = end - a.ms;
    const s = this.samples[kindOf(a.method, a.path)];
    s.total.push(a.ms);
    s.toWrite.push(w ? w.at - start : NaN);
    s.wire.push(w?.headersAt !== undefined ? w.headersAt - w.at : NaN);
  };

  close(): void {
    diagnosticsChannel.unsubscribe('undici:client:sendHeaders', this.onWrite);
    diagnosticsChannel.unsubscribe('undici:request:headers', this.onHeaders);
  }
}

export interface GaugeReading {
  seconds: number;
  /** This process's CPU over the window, in cores. */
  cpuCores: number;
  /** How late a 10 ms timer fired (ms): what every timestamp this process takes can be off by. */
  loopDelayMs: { mean: number; p50: number; p99: number; max: number };
  gc: { count: number; totalMs: number; maxMs: number; p99Ms: number; byKind: Record<string, { count: number; totalMs: number; maxMs: number }> };
  heapUsedMb: number;
  rssMb: number;
}

const GC_KINDS: Record<number, string> = { 1: 'scavenge', 2: 'mark-compact', 4: 'incremental', 8: 'weak-callbacks' };

export class GeneratorGauges {
  private h: IntervalHistogram | undefined;
  private obs: PerformanceObserver | undefined;
  private gcs: Array<{ kind: string; ms: number }> = [];
  private t0 = 0;
  private cpu0 = process.cpuUsage();

  start(): void {
    this.h = monitorEventLoopDelay({ resolution: 10 });
    this.h.enable();
    this.gcs = [];
    this.obs = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) this.gcs.push({ kind: GC_KINDS[((e as unknown as { detail?: { kind?: number } }).detail)?.kind ?? 0] ?? 'other', ms: e.duration });
    });
    this.obs.observe({ entryTypes: ['gc'] });
    this.t0 = performance.now();
    this.cpu0 = process.cpuUsage();
  }

  stop(): GaugeReading {
    const seconds = (performance.now() - this.t0) / 1000;
    const cpu = process.cpuUsage(this.cpu0);
    this.h?.disable();
    this.obs?.disconnect();
    const h = this.h!;
    const ms = (ns: number) => ns / 1e6;
    const byKind: GaugeReading['gc']['byKind'] = {};
    for (const g of this.gcs) {
      const k = (byKind[g.kind] ??= { count: 0, totalMs: 0, maxMs: 0 });
      k.count++;
      k.totalMs += g.ms;
      k.maxMs = Math.max(k.maxMs, g.ms);
    }
    const mem = process.memoryUsage();
    return {
      seconds,
      cpuCores: (cpu.user + cpu.system) / 1e6 / Math.max(seconds, 1e-9),
      // The histogram counts the 10 ms resolution itself in every sample: what is over it is the lag.
      loopDelayMs: { mean: Math.max(0, ms(h.mean) - 10), p50: Math.max(0, ms(h.percentile(50)) - 10), p99: Math.max(0, ms(h.percentile(99)) - 10), max: Math.max(0, ms(h.max) - 10) },
      gc: { count: this.gcs.length, totalMs: this.gcs.reduce((s, g) => s + g.ms, 0), maxMs: this.gcs.reduce((m, g) => Math.max(m, g.ms), 0), p99Ms: percentiles(this.gcs.map((g) => g.ms)).p99 || 0, byKind },
      heapUsedMb: mem.heapUsed / 1024 / 1024,
      rssMb: mem.rss / 1024 / 1024,
    };
  }
}

/** Percentiles of a kind's samples, NaN (no write seen) left out of its parts. */
export function summarize(s: KindSamples): { total: Percentiles; toWrite: Percentiles; wire: Percentiles } {
  return { total: percentiles(s.total), toWrite: percentiles(s.toWrite.filter((x) => !Number.isNaN(x))), wire: percentiles(s.wire.filter((x) => !Number.isNaN(x))) };
}

/**
 * Steps per poll a repeat interval implies: with a poll every P s, a step due again R ms after it went out (less the
 * service's early-poll slack, at most a tenth of R: src/services/step-cadence.ts) goes out on every ceil((R - slack)/P)-th
 * poll. Without the slack a measured P of 59.99 s would expect a 2-minute step on every third poll, where the service
 * (rightly) hands it out on every second.
 */
export function expectedPerPoll(everyMs: number, pollPeriodSeconds: number, earlySlackMs: number): number {
  const slack = Math.min(earlySlackMs, everyMs / 10);
  return 1 / Math.max(1, Math.ceil((everyMs - slack) / 1000 / pollPeriodSeconds - 1e-9));
}

/** One agent operation's histogram as the API exports it: cumulative counts by upper bound (seconds), and the total. */
export interface ServiceHistogram {
  buckets: Array<{ le: number; count: number }>;
  count: number;
  /** The sum of the values observed (seconds); 0 when the text had none. */
  sum: number;
}

/**
 * The API's own time per agent operation (`landfall_agent_request_duration_seconds`, summed over its processes)
 * from a /metrics text; empty when the tree has no such metric.
 */
export function parseServiceTimes(metricsText: string): Record<string, ServiceHistogram> {
  return parseHistograms(metricsText, 'landfall_agent_request_duration_seconds', 'operation');
}

/**
 * A histogram of a /metrics text by the values of one of its labels (series
 * without that label are left out); with several labels, by their values
 * joined with '/', in the order given.
 */
export function parseHistograms(metricsText: string, metric: string, label: string | readonly string[]): Record<string, ServiceHistogram> {
  const names = typeof label === 'string' ? [label] : label;
  const out: Record<string, ServiceHistogram> = {};
  const line = new RegExp(`^${metric}_(bucket|count|sum)\\{([^}]*)\\}\\s+([0-9.eE+-]+)$`);
  for (const raw of metricsText.split('\n')) {
    const m = line.exec(raw.trim());
    if (!m) continue;
    const labels = Object.fromEntries([...m[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1]!, x[2]!]));
    if (names.some((n) => !labels[n])) continue;
    const op = names.map((n) => labels[n]).join('/');
    const h = (out[op] ??= { buckets: [], count: 0, sum: 0 });
    if (m[1] === 'count') h.count = Number(m[3]);
    else if (m[1] === 'sum') h.sum = Number(m[3]);
    else if (labels.le !== '+Inf') h.buckets.push({ le: Number(labels.le), count: Number(m[3]) });
  }
  for (const h of Object.values(out)) h.buckets.sort((a, b) => a.le - b.le);
  return out;
}

/** What happened between two readings of the histograms: counts in the window, the share within 50 ms, p50/p99 as bucket bounds. */
export function serviceTimesBetween(before: Record<string, ServiceHistogram>, after: Record<string, ServiceHistogram>) {
  return Object.fromEntries(
    Object.entries(histogramsBetween(before, after, 0.05)).map(([op, { withinShare, ...h }]) => [op, { count: h.count, within50msShare: withinShare, p50AtMostMs: h.p50AtMostMs, p99AtMostMs: h.p99AtMostMs }]),
  );
}

/**
 * Per label value, what happened between two readings: the count and sum,
 * how many and what share within `withinS` (a bucket bound), and p50, p99 and
 * the longest as bucket bounds (ms).
 */
export function histogramsBetween(before: Record<string, ServiceHistogram>, after: Record<string, ServiceHistogram>, withinS: number) {
  return Object.fromEntries(
    Object.entries(after).map(([op, h]) => {
      const b = before[op];
      const count = h.count - (b?.count ?? 0);
      const buckets = h.buckets.map((x) => ({ le: x.le, count: x.count - (b?.buckets.find((y) => y.le === x.le)?.count ?? 0) }));
      const bound = (q: number) => {
        const hit = buckets.find((x) => x.count >= q * count);
        return hit ? hit.le * 1000 : Infinity;
      };
      const within = buckets.find((x) => x.le === withinS)?.count;
      const sumS = h.sum - (b?.sum ?? 0);
      return [op, { count, sumS, withinCount: within, withinShare: within === undefined || count === 0 ? undefined : within / count, p50AtMostMs: bound(0.5), p99AtMostMs: bound(0.99), maxAtMostMs: bound(1) }];
    }),
  );
}
