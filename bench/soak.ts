/**
 * Soak of the agent API: does memory stay flat under a steady agent load? See bench/README.md.
 *
 *   npm run bench:soak -- [--minutes 10] [--hosts 10000] [--rate 1000] [--processes N]
 *
 * The same stack and fleet as bench/agent-api.ts (embedded PostgreSQL, `landfall api` with
 * API_PROCESSES=N, hosts registered with inventories), then the agent mix (90 % polls, 10 %
 * inventory replies that change a fact) at one constant offered rate, open loop, for the whole
 * run. Every `--sample-seconds` it reads the resident memory of the API tree and of PostgreSQL
 * (and the API's heap if its /metrics exports it); per minute it reports latency, failures, CPU
 * and "agent report → validations stored". The verdict: the API's RSS at the end within 10 % of
 * its RSS after the first minute. Results go to bench/results/soak-….json.
 *
 * Only 127.0.0.1 is ever targeted; everything it starts is stopped at the end; a watchdog bounds it.
 */
import os from 'node:os';
import path from 'node:path';
import { sleep } from '../src/dev/process-utils';
import type { OpenResult, WindowResult } from './agent-load';
import { cpuShare, growth, secondsAtBound, secondsLine, type CpuShare, type CpuSnapshot } from './agent-stats';
import { cpuSnapshot, fmt, freshnessP99Cell, freshnessProbe, Generator, gitCommit, log, mb, ms, populate, resultPath, startStack, writeResult, type FreshnessResult, type Stack } from './agent-stack';
import { machineLoad, treePssKb, treeRssKb, treeRssKbByRole } from './proc-stats';
import { boundedNumber } from './support';

const RSS_GROWTH_MAX = 0.1;
/** The real cadence of a fleet: every host polls once a minute. */
const POLL_SECONDS = 60;

interface Options {
  minutes: number;
  hosts: number;
  hostsPerCluster: number;
  rate: number;
  processes?: number;
  nodeOptions?: string;
  sampleSeconds: number;
  postRatio: number;
  freshnessIntervalMs: number;
  maxSockets: number;
  registerConcurrency: number;
  json?: string;
  noResultFile: boolean;
}

const USAGE = `usage: node dist/bench/soak.js [options]
  --minutes M               minutes of steady load (default 10)
  --hosts N                 registered hosts (default 10000)
  --hosts-per-cluster N     hosts per cluster (default 50)
  --rate R                  offered requests/s, open loop (default 1000; the hosts' own cadence is hosts/60)
  --processes N             API_PROCESSES of \`landfall api\` (default: unset, the service's own default)
  --node-options "…"        NODE_OPTIONS of the API processes only
  --sample-seconds S        memory sampling period (default 10)
  --post-ratio R            share of inventory replies in the mix (default 0.1)
  --freshness-interval MS   one report → visible sample every MS, stored and read through the API in turn (default 1000; 0: none)
  --max-sockets N           most connections the generator opens (default 256)
  --register-concurrency N  parallel registrations during set-up (default 32)
  --json FILE               also write the result there
  --no-result-file          do not write bench/results/soak-….json
`;

function parseArgs(argv: string[]): Options {
  const o: Options = { minutes: 10, hosts: 10_000, hostsPerCluster: 50, rate: 1000, sampleSeconds: 10, postRatio: 0.1, freshnessIntervalMs: 1000, maxSockets: 256, registerConcurrency: 32, noResultFile: false };
  const num = (name: string, v: string | undefined, min: number, max: number): number => boundedNumber(name, v, min, max);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = () => argv[++i];
    switch (a) {
      case '--minutes': o.minutes = num(a, next(), 1, 24 * 60); break;
      case '--hosts': o.hosts = Math.floor(num(a, next(), 1, 1_000_000)); break;
      case '--hosts-per-cluster': o.hostsPerCluster = Math.floor(num(a, next(), 1, 1_000_000)); break;
      case '--rate': o.rate = num(a, next(), 1, 1_000_000); break;
      case '--processes': o.processes = Math.floor(num(a, next(), 1, 64)); break;
      case '--node-options': o.nodeOptions = next(); break;
      case '--sample-seconds': o.sampleSeconds = num(a, next(), 1, 600); break;
      case '--post-ratio': o.postRatio = num(a, next(), 0, 1); break;
      case '--freshness-interval': o.freshnessIntervalMs = num(a, next(), 0, 60_000); break;
      case '--max-sockets': o.maxSockets = Math.floor(num(a, next(), 1, 4096)); break;
      case '--register-concurrency': o.registerConcurrency = Math.floor(num(a, next(), 1, 512)); break;
      case '--json': o.json = next(); break;
      case '--no-result-file': o.noResultFile = true; break;
      case '--help': case '-h': process.stdout.write(USAGE); process.exit(0); break;
      default: throw new Error(`unknown option ${a}\n${USAGE}`);
    }
  }
  if (o.minutes < 2) throw new Error('--minutes must be at least 2: the verdict compares the end with the first minute');
  return o;
}

interface MemorySample {
  seconds: number;
  apiRssKb: number;
  apiPssKb: number;
  apiProcesses: number;
  pgRssKb: number;
  pgPssKb: number;
  /** The API's V8 heap in use, from /metrics, when it exports it. */
  apiHeapUsedBytes?: number;
  apiHeapUsedBytesByRole?: Record<string, number>;
  /** The API's RSS by process role (primary, serve: all serving processes, refresh), kB. */
  apiRssKbByRole?: Record<string, number>;
}

interface Minute {
  minute: number;
  window: WindowResult;
  cpuCores: CpuShare;
  freshness?: FreshnessResult;
  memory: MemorySample;
}

/** The API's heap in use, if its /metrics has a gauge for it (summed over its processes), in all and by process role. */
async function heapUsed(base: string): Promise<{ bytes?: number; byRole?: Record<string, number> }> {
  try {
    const text = await (await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(2000) })).text();
    const byRole: Record<string, number> = {};
    let bytes: number | undefined;
    for (const m of text.matchAll(/^(?:landfall_process_heap_used_bytes|nodejs_heap_size_used_bytes)(?:\{([^}]*)\})?\s+([0-9.e+]+)$/gm)) {
      const role = /role="([^"]*)"/.exec(m[1] ?? '')?.[1] ?? 'all';
      byRole[role] = (byRole[role] ?? 0) + Number(m[2]);
      bytes = (bytes ?? 0) + Number(m[2]);
    }
    return { bytes, byRole };
  } catch {
    return {};
  }
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const budgetMs = 300_000 + opts.hosts * 100 + opts.minutes * 60_000 + 60_000;
  const startedAt = new Date();
  // Read now, nearest the build being run (the checkout may move on during a long run).
  const commit = gitCommit();
  const loadBefore = machineLoad();
  let stack: Stack | undefined;
  let gen: Generator | undefined;
  let cleaning: Promise<void> | undefined;
  const cleanup = () =>
    (cleaning ??= (async () => {
      await gen?.stop().catch(() => undefined);
      await stack?.stop();
    })());
  const watchdog = setTimeout(() => {
    process.stderr.write(`soak: still running after ${Math.round(budgetMs / 1000)} s, giving up\n`);
    void cleanup().finally(() => process.exit(1));
  }, budgetMs);
  watchdog.unref();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      process.stderr.write(`\nsoak: ${sig}, stopping\n`);
      void cleanup().finally(() => process.exit(130));
    });
  }
  try {
    const cadence = opts.hosts / POLL_SECONDS;
    log(`soak: ${fmt(opts.hosts)} hosts, ${fmt(opts.rate)} req/s offered (${fmt(opts.rate / cadence, 1)}x their own cadence of ${fmt(cadence)}/s) for ${opts.minutes} min, API_PROCESSES ${opts.processes ?? 'unset (service default)'}; load average ${loadBefore.loadavg.map((x) => x.toFixed(2)).join(', ')}`);
    stack = await startStack({ processes: opts.processes, nodeOptions: opts.nodeOptions });
    const s = stack;
    const fleet = await populate(s, opts.hosts, opts.hostsPerCluster, opts.registerConcurrency);
    log(`set-up: ${fmt(opts.hosts)} hosts in ${fmt(fleet.clusterCount)} clusters in ${fmt(fleet.registerSeconds, 1)} s; API RSS ${mb(treeRssKb(s.apiPid).kb)}`);
    gen = new Generator(s.port, fleet.stepsPaths, opts.postRatio);
    const g = gen;

    const sampleMemory = async (seconds: number): Promise<MemorySample> => {
      const api = treeRssKb(s.apiPid);
      const pg = treeRssKb(s.postmasterPid);
      const heap = await heapUsed(s.base);
      return { seconds, apiRssKb: api.kb, apiPssKb: treePssKb(s.apiPid), apiProcesses: api.processes, pgRssKb: pg.kb, pgPssKb: treePssKb(s.postmasterPid), apiHeapUsedBytes: heap.bytes, apiHeapUsedBytesByRole: heap.byRole, apiRssKbByRole: treeRssKbByRole(s.apiPid) };
    };
    const setupMemory = await sampleMemory(0);
    const samples: MemorySample[] = [];
    const minuteCpu: CpuSnapshot[] = [];
    const minuteFreshness: FreshnessResult[] = [];
    const total = opts.minutes * 60;
    const t0 = performance.now();
    const running: Promise<OpenResult> = g.open(opts.rate, total, opts.maxSockets, { windowSeconds: 60 });
    minuteCpu.push(cpuSnapshot(s, g.pid));
    let probe = opts.freshnessIntervalMs > 0 ? freshnessProbe(s, fleet, opts.hostsPerCluster, opts.freshnessIntervalMs) : undefined;
    // Memory every sampleSeconds and CPU and freshness every minute, on the parent's clock from the generator's start.
    let minute = 0;
    for (let k = 1; k * opts.sampleSeconds <= total; k++) {
      const at = t0 + k * opts.sampleSeconds * 1000;
      while (performance.now() < at) await sleep(Math.min(250, at - performance.now()));
      const seconds = k * opts.sampleSeconds;
      const m = await sampleMemory(seconds);
      samples.push(m);
      if (Math.floor(seconds / 60) > minute) {
        minute = Math.floor(seconds / 60);
        minuteCpu.push(cpuSnapshot(s, g.pid));
        if (probe) {
          minuteFreshness.push(await probe.stop());
          probe = seconds < total ? freshnessProbe(s, fleet, opts.hostsPerCluster, opts.freshnessIntervalMs) : undefined;
        }
        log(`  minute ${minute}: API RSS ${mb(m.apiRssKb)} (${m.apiProcesses} process(es)), PostgreSQL RSS ${mb(m.pgRssKb)}${m.apiHeapUsedBytes !== undefined ? `, API heap used ${mb(m.apiHeapUsedBytes / 1024)}` : ''}; API RSS by role: ${Object.entries(m.apiRssKbByRole ?? {}).map(([r, kb]) => `${r} ${mb(kb)}`).join(', ')}; heap by role: ${Object.entries(m.apiHeapUsedBytesByRole ?? {}).map(([r, b]) => `${r} ${mb(b / 1024)}`).join(', ')}`);
      }
    }
    const result = await running;
    if (probe) minuteFreshness.push(await probe.stop());
    const endMemory = await sampleMemory(Math.round((performance.now() - t0) / 1000));
    const loadAfter = machineLoad();

    const minutes: Minute[] = result.windows.map((w, i) => ({
      minute: i + 1,
      window: w,
      cpuCores: minuteCpu[i + 1] ? cpuShare(minuteCpu[i]!, minuteCpu[i + 1]!) : cpuShare(minuteCpu[i]!, minuteCpu[i]!),
      freshness: minuteFreshness[i],
      memory: samples.filter((x) => x.seconds <= (i + 1) * 60 + opts.sampleSeconds / 2).pop() ?? endMemory,
    }));
    const afterFirst = samples.find((x) => x.seconds >= 60 - opts.sampleSeconds / 2) ?? setupMemory;
    const last = samples[samples.length - 1] ?? endMemory;
    const apiGrowth = growth(afterFirst.apiRssKb, last.apiRssKb);
    const pgGrowth = growth(afterFirst.pgRssKb, last.pgRssKb);
    const heapGrowth = afterFirst.apiHeapUsedBytes !== undefined && last.apiHeapUsedBytes !== undefined ? growth(afterFirst.apiHeapUsedBytes, last.apiHeapUsedBytes) : undefined;
    // Single samples land anywhere in a GC cycle: the second minute's mean against the last minute's says the same with less noise.
    const meanKb = (from: number, to: number) => {
      const xs = samples.filter((x) => x.seconds > from && x.seconds <= to).map((x) => x.apiRssKb);
      return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN;
    };
    const secondMinuteMeanKb = meanKb(60, 120);
    const lastMinuteMeanKb = meanKb(total - 60, total);
    const meanGrowth = growth(secondMinuteMeanKb, lastMinuteMeanKb);
    const failures = result.errors + result.timeouts + result.non2xx + result.skipped + result.unanswered;
    const rssMet = Math.abs(apiGrowth) <= RSS_GROWTH_MAX;

    log('');
    log(`soak: ${fmt(opts.hosts)} hosts, ${fmt(opts.rate)} req/s offered for ${opts.minutes} min, API tree ${last.apiProcesses} process(es) (API_PROCESSES ${opts.processes ?? 'unset'}), commit ${commit}, node ${process.version}, ${os.cpus().length} CPUs`);
    log(`machine load    before ${loadBefore.loadavg.map((x) => x.toFixed(2)).join(', ')}; after ${loadAfter.loadavg.map((x) => x.toFixed(2)).join(', ')}`);
    log('');
    log('minute  achieved  p50       p99       max        failures  report→stored p99   report→read p99     CPU: API  PG    gen   other   API RSS   PG RSS');
    for (const m of minutes) {
      const w = m.window;
      const answered = w.completed / Math.max(1, w.toS - w.fromS);
      const f = m.freshness;
      log(
        `${String(m.minute).padStart(6)}  ${fmt(answered).padStart(8)}  ${ms(w.all.p50).padEnd(9)} ${ms(w.all.p99).padEnd(9)} ${ms(w.all.max).padEnd(10)} ${String(w.errors + w.timeouts + w.non2xx + w.skipped + w.unanswered).padStart(8)}  ${freshnessP99Cell(f).padEnd(18)}  ${freshnessP99Cell(f?.api).padEnd(18)} ${fmt(m.cpuCores.api, 2).padStart(9)} ${fmt(m.cpuCores.postgres, 2).padStart(5)} ${fmt(m.cpuCores.generator, 2).padStart(5)} ${fmt(m.cpuCores.other, 2).padStart(5)}  ${mb(m.memory.apiRssKb).padStart(8)}  ${mb(m.memory.pgRssKb).padStart(7)}`,
      );
    }
    // Minute 1 by second: where its tail (the set-up's aftermath) is, and whether it ends within the minute.
    log(`minute 1        p99 by second: ${secondsLine(result.secondsP99.slice(0, 60))}`);
    log(`by minute       seconds with p99 ≥ 50 ms: ${minutes.map((m) => `${m.minute}: ${secondsAtBound(result.secondsP99.slice((m.minute - 1) * 60, m.minute * 60))}`).join(', ')}; the generator sent up to ${ms(result.lateMaxMs)} after a request's scheduled start`);
    log('');
    log(`requests        ${fmt(result.completed)} answered of ${fmt(result.scheduled)} due (${fmt(result.achieved)}/s); ${result.errors} errors${result.errors ? ` (${Object.entries(result.errorCodes).map(([c, n]) => `${c}: ${n}`).join(', ')})` : ''}, ${result.timeouts} timeouts, ${result.non2xx} non-2xx, ${result.skipped} not sent, ${result.unanswered} unanswered; p50 ${ms(result.all.p50)}, p99 ${ms(result.all.p99)}, max ${ms(result.all.max)}`);
    log(`API RSS         after set-up ${mb(setupMemory.apiRssKb)}, after minute 1 ${mb(afterFirst.apiRssKb)}, at the end ${mb(last.apiRssKb)} (${(apiGrowth * 100).toFixed(1)} %), peak ${mb(Math.max(...samples.map((x) => x.apiRssKb)))}; PSS ${mb(afterFirst.apiPssKb)} → ${mb(last.apiPssKb)}`);
    log(`                mean of minute 2 ${mb(secondMinuteMeanKb)}, mean of the last minute ${mb(lastMinuteMeanKb)} (${(meanGrowth * 100).toFixed(1)} %)`);
    log(`PostgreSQL RSS  after minute 1 ${mb(afterFirst.pgRssKb)}, at the end ${mb(last.pgRssKb)} (${(pgGrowth * 100).toFixed(1)} %); PSS ${mb(afterFirst.pgPssKb)} → ${mb(last.pgPssKb)}`);
    log(`API heap used   ${heapGrowth !== undefined ? `${mb(afterFirst.apiHeapUsedBytes! / 1024)} → ${mb(last.apiHeapUsedBytes! / 1024)} (${(heapGrowth * 100).toFixed(1)} %)` : 'not exported by /metrics'}`);
    log(`target          API RSS at the end within ${RSS_GROWTH_MAX * 100} % of after the first minute: ${(apiGrowth * 100).toFixed(1)} % ${apiGrowth < 0 ? ' (it shrank)' : ''} → ${rssMet ? 'MET' : 'MISSED'}${failures ? ` (with ${fmt(failures)} failed requests)` : ', no failed request'}`);
    if (s.apiLog.lines > 0) log(`API log         ${s.apiLog.lines} lines at warn or above; last: ${s.apiLog.last.slice(-3).join(' | ').slice(0, 600)}`);

    const out = {
      bench: 'soak',
      startedAt: startedAt.toISOString(),
      commit,
      node: process.version,
      cpus: os.cpus().length,
      options: opts,
      machineLoad: { before: loadBefore, after: loadAfter },
      setup: { clusters: fleet.clusterCount, registerSeconds: fleet.registerSeconds, hostStatuses: fleet.statuses, memory: setupMemory },
      total: { ...result, windows: undefined },
      minutes: minutes.map((m) => ({ minute: m.minute, ...m.window, cpuCores: m.cpuCores, freshness: m.freshness, memory: m.memory })),
      memorySamples: samples,
      verdict: { apiRssAfterFirstMinuteKb: afterFirst.apiRssKb, apiRssEndKb: last.apiRssKb, apiGrowth, secondMinuteMeanKb, lastMinuteMeanKb, meanGrowth, pgGrowth, heapGrowth, maxGrowth: RSS_GROWTH_MAX, met: rssMet, failures },
    };
    await gen.stop();
    await s.stop();
    if (!opts.noResultFile) {
      const file = resultPath('soak', [`${opts.hosts}h`, `${opts.rate}rps`, `${last.apiProcesses > 1 ? last.apiProcesses - 1 : 1}p`], startedAt, commit);
      await writeResult(file, out);
      log(`result          ${path.relative(process.cwd(), file)}`);
    }
    if (opts.json) await writeResult(opts.json, out);
  } finally {
    await cleanup();
    clearTimeout(watchdog);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`soak failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
