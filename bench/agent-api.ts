/**
 * Benchmark of the agent API: thousands of registered hosts polling `landfall api` (N processes)
 * at fixed offered rates, open loop. See bench/README.md for what it measures and the figures.
 *
 *   node dist/bench/agent-api.js [--hosts 5000] [--rates 500,1000,1500,1700,2000,2500,3000] [--processes N] …
 *   node dist/bench/agent-api.js --help
 *
 * Starts an embedded PostgreSQL in a temporary folder, migrates it, spawns `landfall api`
 * (API_PROCESSES=N), creates clusters and their infra-envs, registers the hosts through the
 * agent endpoint and posts each one's inventory. Then, from a load-generator child process
 * (bench/agent-load.ts), it offers the agent mix (90 % polls, 10 % inventory replies that
 * change a fact) at each rate of the list for a fixed window, open loop: latency runs from each
 * request's due time. Per rate: achieved req/s, p50/p99/max, errors and non-2xx, the CPU of the
 * API tree, PostgreSQL, the generator, the bench itself and everything else on the machine, and
 * "agent report → validations stored" sampled from PostgreSQL during the window. The knee is the
 * highest rate with p99 under 50 ms and no failures (`--bisect` narrows it). A closed-loop
 * saturation figure follows unless `--no-saturation`. Results go to bench/results/.
 *
 * Only 127.0.0.1 is ever targeted. Everything it starts is stopped at the end, and a watchdog
 * bounds the whole run.
 */
import { existsSync, readdirSync, readFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot, sleep } from '../src/dev/process-utils';
import { formatSummary, summarizeCpuProfile, type ProfileSummary } from './cpuprofile-summary';
import type { ClosedResult, OpenResult } from './agent-load';
import { cpuShare, findKnee, nextBisectRate, parseRates, scrapeEffect, secondsLine, type CpuShare, type ScrapeEffect, type KneeCriteria, type Percentiles, type RateOutcome } from './agent-stats';
import { cpuSnapshot, fmt, freshnessP99Cell, freshnessProbe, Generator, log, mb, ms, populate, readRefreshMetrics, refreshBacklog, refreshesBetween, gcBetween, resultPath, rssSampler, startStack, writeResult, gitCommit, type FreshnessResult, type SlowSample, type Stack } from './agent-stack';
import { machineLoad, treePssKb, treeRssKb } from './proc-stats';
import { boundedNumber, keyValue } from './support';

// ---- the target from the issue: 100,000 hosts polling every 60 s, p99 under 50 ms; report → visible p99 under 200 ms.
const TARGET_RPS = 1700;
const TARGET_P99_MS = 50;
const FRESHNESS_P99_MS = 200;
/** A generator using more than this share of a core may be what limits the rate. */
const GENERATOR_CORE_WARN = 0.7;

interface Options {
  hosts: number;
  hostsPerCluster: number;
  rates: number[];
  duration: number;
  warmup: number;
  lead: number;
  settle: number;
  processes?: number;
  bisect: boolean;
  bisectResolution: number;
  bisectSteps: number;
  keepGoing: boolean;
  saturation: boolean;
  connections: number;
  maxSockets: number;
  postRatio: number;
  freshnessIntervalMs: number;
  scrapeEvery: number;
  registerConcurrency: number;
  analyze: boolean;
  poolMax?: number;
  nodeOptions?: string;
  apiEnv: Record<string, string>;
  pgSql: string[];
  pgConf: Record<string, string>;
  cpuProf: boolean;
  pgStats: boolean;
  json?: string;
  noResultFile: boolean;
}

const USAGE = `usage: node dist/bench/agent-api.js [options]
  --hosts N                 registered hosts (default 5000)
  --hosts-per-cluster N     hosts per cluster (and infra-env) (default 50)
  --rates R,R,…             offered requests/s, open loop, one window each (default 500,1000,1500,1700,2000,2500,3000)
  --duration S              seconds of each measured window (default 20)
  --warmup S                warm-up seconds before the first window: its own load, unmeasured, running on into it (default 30)
  --lead S                  the same before every later window, after the pause (default 5)
  --settle S                pause between windows, to let a rate's queue drain (default 3)
  --processes N             API_PROCESSES of \`landfall api\` (default: unset, the service's own default)
  --bisect                  after the sweep, bisect between the knee and the first miss
  --bisect-resolution R     stop bisecting when they are this close (default 50 req/s)
  --bisect-steps N          at most this many bisection windows (default 3)
  --keep-going              measure every rate even after one the API could not keep up with
  --no-saturation           skip the closed-loop saturation window
  --no-analyze              no ANALYZE after set-up: measure with the statistics of an empty database (autovacuum's first round on it comes ~2 min after its creation)
  --connections N           keep-alive connections of the saturation window (default 50)
  --max-sockets N           most connections the open loop opens (default 256)
  --post-ratio R            share of inventory replies in the mix (default 0.1)
  --freshness-interval MS   one report → visible sample every MS during each window (default 250; 0: none)
  --scrape-every S          during each window, GET /metrics every S seconds, as a Prometheus would (default 0: only at its start and end);
                            prints the scrapes' wall time and the p99 of the seconds they started in against the others
  --register-concurrency N  parallel registrations during set-up (default 32)
  --pool-max N              DATABASE_POOL_MAX of the API (default: the service default)
  --node-options "…"        NODE_OPTIONS of the API processes only
  --api-env K=V             another environment variable of the API processes (repeatable), e.g. API_REFRESHER=false
  --pg-sql SQL              a statement run on the database after its migrations (repeatable), e.g. a setting under study
  --pg-conf K=V             a PostgreSQL setting, applied with a restart before the API starts (repeatable), e.g. shared_buffers=1GB
  --cpu-prof                profile every API process; summarise the window at ${TARGET_RPS} req/s (or the highest rate)
  --pg-stats                pg_stat_statements over the same window
  --json FILE               also write the result there
  --no-result-file          do not write bench/results/agent-api-….json
`;

function parseArgs(argv: string[]): Options {
  const o: Options = {
    hosts: 5000,
    hostsPerCluster: 50,
    rates: [500, 1000, 1500, 1700, 2000, 2500, 3000],
    duration: 20,
    warmup: 30,
    lead: 5,
    settle: 3,
    bisect: false,
    bisectResolution: 50,
    bisectSteps: 3,
    keepGoing: false,
    saturation: true,
    connections: 50,
    maxSockets: 256,
    postRatio: 0.1,
    freshnessIntervalMs: 250,
    scrapeEvery: 0,
    registerConcurrency: 32,
    analyze: true,
    cpuProf: false,
    pgStats: false,
    noResultFile: false,
    apiEnv: {},
    pgSql: [],
    pgConf: {},
  };
  const num = (name: string, v: string | undefined, min: number, max: number): number => boundedNumber(name, v, min, max);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = () => argv[++i];
    switch (a) {
      case '--hosts': o.hosts = Math.floor(num(a, next(), 1, 1_000_000)); break;
      case '--hosts-per-cluster': o.hostsPerCluster = Math.floor(num(a, next(), 1, 1_000_000)); break;
      case '--rates': o.rates = parseRates(next() ?? ''); break;
      case '--rate': o.rates = [num(a, next(), 1, 1_000_000)]; break;
      case '--duration': o.duration = num(a, next(), 1, 3600); break;
      case '--warmup': o.warmup = num(a, next(), 0, 600); break;
      case '--lead': o.lead = num(a, next(), 0, 600); break;
      case '--settle': o.settle = num(a, next(), 0, 600); break;
      case '--processes': o.processes = Math.floor(num(a, next(), 1, 64)); break;
      case '--bisect': o.bisect = true; break;
      case '--bisect-resolution': o.bisectResolution = num(a, next(), 1, 100_000); break;
      case '--bisect-steps': o.bisectSteps = Math.floor(num(a, next(), 1, 20)); break;
      case '--keep-going': o.keepGoing = true; break;
      case '--no-saturation': o.saturation = false; break;
      case '--no-analyze': o.analyze = false; break;
      case '--connections': o.connections = Math.floor(num(a, next(), 1, 2000)); break;
      case '--max-sockets': o.maxSockets = Math.floor(num(a, next(), 1, 4096)); break;
      case '--post-ratio': o.postRatio = num(a, next(), 0, 1); break;
      case '--freshness-interval': o.freshnessIntervalMs = num(a, next(), 0, 60_000); break;
      case '--scrape-every': o.scrapeEvery = num(a, next(), 0, 600); break;
      case '--register-concurrency': o.registerConcurrency = Math.floor(num(a, next(), 1, 512)); break;
      case '--pool-max': o.poolMax = Math.floor(num(a, next(), 1, 200)); break;
      case '--node-options': o.nodeOptions = next(); break;
      case '--api-env': {
        const [k, v] = keyValue(a, next(), USAGE);
        o.apiEnv[k] = v;
        break;
      }
      case '--pg-sql': o.pgSql.push(next() ?? ''); break;
      case '--pg-conf': {
        const [k, v] = keyValue(a, next(), USAGE);
        o.pgConf[k] = v;
        break;
      }
      case '--cpu-prof': o.cpuProf = true; break;
      case '--pg-stats': o.pgStats = true; break;
      case '--json': o.json = next(); break;
      case '--no-result-file': o.noResultFile = true; break;
      case '--help': case '-h': process.stdout.write(USAGE); process.exit(0); break;
      default: throw new Error(`unknown option ${a}\n${USAGE}`);
    }
  }
  return o;
}

interface RateWindow {
  offered: number;
  bisection: boolean;
  open: OpenResult;
  cpuCores: CpuShare;
  freshness?: FreshnessResult;
  apiRssKbPeak: number;
  pgRssKbPeak: number;
  /** Clusters waiting for a coalesced refresh as the window ended (undefined: no queue in this schema). */
  refreshBacklog?: number;
  /** The window's refreshes as the service counted them, by who ran them (undefined: no such metrics in this tree). */
  refreshes?: ReturnType<typeof refreshesBetween>;
  /** The window's collection pauses in the API's processes, by role (undefined: no such metrics in this tree). */
  gc?: ReturnType<typeof gcBetween>;
  /** --scrape-every: each scrape's second of the window and wall time, and the p99 of the seconds with one against the rest. */
  scrapes?: ScrapeEffect;
  /** PostgreSQL's WAL written and checkpoints begun in the window (undefined: the server did not say). */
  wal?: WalWindow;
}

const latencyLine = (p: Percentiles) => `p50 ${ms(p.p50)}   p90 ${ms(p.p90)}   p99 ${ms(p.p99)}   max ${ms(p.max)}`;
const cpuLine = (c: CpuShare) =>
  `API ${fmt(c.api, 2)}   PostgreSQL ${fmt(c.postgres, 2)}   load generator ${fmt(c.generator, 2)}   bench ${fmt(c.bench, 2)}   other processes ${fmt(c.other, 2)}   (machine busy ${fmt(c.machineBusy, 2)} of ${fmt(c.machineCores, 1)})`;
const failuresOf = (r: { errors: number; timeouts: number; non2xx: number; skipped?: number; unanswered?: number }) => r.errors + r.timeouts + r.non2xx + (r.skipped ?? 0) + (r.unanswered ?? 0);
const outcomeOf = (w: RateWindow): RateOutcome => ({ offered: w.offered, achieved: w.open.achieved, p99: w.open.all.p99, failures: failuresOf(w.open) });
const codes = (c: Record<string, number>) => Object.entries(c).map(([code, n]) => `${code}: ${fmt(n)}`).join(', ') || 'none';
const loadText = () => {
  const l = machineLoad();
  return `load average ${l.loadavg.map((x) => x.toFixed(2)).join(', ')} on ${l.cpus} CPUs`;
};

/** One GET /metrics and its wall time (ms); NaN when it failed. */
async function timedScrape(s: Stack): Promise<number> {
  const t0 = performance.now();
  try {
    const r = await fetch(`${s.base}/metrics`, { signal: AbortSignal.timeout(30_000) });
    await r.text();
    return r.ok ? performance.now() - t0 : NaN;
  } catch {
    return NaN;
  }
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const criteria: KneeCriteria = { p99Ms: TARGET_P99_MS };
  const windows = opts.rates.length + (opts.bisect ? opts.bisectSteps : 0);
  const budgetMs = 240_000 + opts.hosts * 100 + (opts.warmup + windows * (opts.duration + opts.settle + opts.lead + 20) + (opts.saturation ? opts.duration + 20 : 0)) * 1000;
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
    process.stderr.write(`agent-api bench: still running after ${Math.round(budgetMs / 1000)} s, giving up\n`);
    void cleanup().finally(() => process.exit(1));
  }, budgetMs);
  watchdog.unref();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      process.stderr.write(`\nagent-api bench: ${sig}, stopping\n`);
      void cleanup().finally(() => process.exit(130));
    });
  }

  try {
    log(`agent-api bench: ${fmt(opts.hosts)} hosts, ${opts.hostsPerCluster} per cluster, API_PROCESSES ${opts.processes ?? 'unset (service default)'}; ${loadText()}`);
    // Kept after the run, in the checkout's ignored .state folder, for a closer look (e.g. in Chrome's DevTools).
    const profDir = opts.cpuProf ? path.join(repoRoot(), '.state', 'bench', `agent-api-prof-${startedAt.toISOString().replace(/[:.]/g, '-')}`) : undefined;
    if (profDir) mkdirSync(profDir, { recursive: true });
    stack = await startStack({ processes: opts.processes, poolMax: opts.poolMax, nodeOptions: opts.nodeOptions, apiEnv: opts.apiEnv, cpuProfDir: profDir, pgStats: opts.pgStats, pgSql: opts.pgSql, pgConf: opts.pgConf });
    const s = stack;
    const rssIdle = treeRssKb(s.apiPid);
    log(`API up: ${rssIdle.processes} process(es) in its tree (pid ${s.apiPid}), ${mb(rssIdle.kb)} RSS; registering hosts`);
    const fleet = await populate(s, opts.hosts, opts.hostsPerCluster, opts.registerConcurrency, opts.analyze);
    const rssAfterSetup = treeRssKb(s.apiPid);
    log(`set-up: ${fmt(opts.hosts)} hosts in ${fmt(fleet.clusterCount)} clusters registered with inventories in ${fmt(fleet.registerSeconds, 1)} s (${fleet.statuses.map((x) => `${x.status} ${fmt(x.n)}`).join(', ')}); API RSS ${mb(rssAfterSetup.kb)}; ${opts.analyze ? 'then ANALYZE' : 'no ANALYZE (--no-analyze)'}`);

    gen = new Generator(s.port, fleet.stepsPaths, opts.postRatio);
    const g = gen;
    const rss = rssSampler(s);
    const rssPeakOverall = { apiKb: 0, pgKb: 0 };
    log(`mix: ${Math.round((1 - opts.postRatio) * 100)} % GET …/instructions (poll), ${Math.round(opts.postRatio * 100)} % POST …/instructions (inventory reply, memory size changed), a random host each`);
    const profileRate = opts.rates.includes(TARGET_RPS) ? TARGET_RPS : opts.rates[opts.rates.length - 1]!;
    let profileWindow: { fromUs: number; toUs: number } | undefined;
    let pgTop: Array<Record<string, unknown>> = [];
    let hotShare: { updates: number; hot: number } | undefined;
    let windowsRun = 0;
    /**
     * One rate: its lead (the warm-up before the first window) and its window
     * are one open-loop run on the same connections. What is read at the
     * window's start (CPU, the service's metrics, the probe) is read while the
     * load runs, as at any moment of a fleet's life: before, the window began
     * after a pause and on new connections, and its first seconds measured that.
     */
    const measure = async (rate: number, bisection: boolean): Promise<RateWindow> => {
      const first = windowsRun++ === 0;
      if (!first && opts.settle > 0) await sleep(opts.settle * 1000);
      const leadS = first ? opts.warmup : opts.lead;
      const profiled = rate === profileRate && !bisection;
      if (leadS > 0) log(`${first ? 'warming up' : 'lead'}: ${fmt(rate)} req/s for ${leadS} s, then measured for ${opts.duration} s without a pause`);
      let onMark!: () => void;
      const marked = new Promise<void>((resolve) => (onMark = resolve));
      const running = g.open(rate, opts.duration, opts.maxSockets, { leadSeconds: leadS, onMark });
      await Promise.race([marked, running]);
      const c0 = cpuSnapshot(s, g.pid);
      const fromUs = Number(process.hrtime.bigint() / 1000n);
      rss.reset();
      const probe = opts.freshnessIntervalMs > 0 ? freshnessProbe(s, fleet, opts.hostsPerCluster, opts.freshnessIntervalMs) : undefined;
      const markAt = performance.now();
      const scraped: Array<{ second: number; ms: number }> = [];
      const scraper = opts.scrapeEvery > 0 ? setInterval(() => void timedScrape(s).then((ms) => scraped.push({ second: Math.floor((performance.now() - ms - markAt) / 1000), ms })), opts.scrapeEvery * 1000) : undefined;
      const m0 = await readRefreshMetrics(s);
      const m0At = performance.now();
      const wal0 = await walCounters(s);
      if (profiled && opts.pgStats) await s.pgQuery('select pg_stat_statements_reset()');
      const upd0 = profiled && opts.pgStats ? await hostUpdates(s) : undefined;
      const open = await running;
      if (scraper) clearInterval(scraper);
      const c1 = cpuSnapshot(s, g.pid);
      const toUs = Number(process.hrtime.bigint() / 1000n);
      const freshness = await probe?.stop();
      const m1 = await readRefreshMetrics(s);
      const wal1 = await walCounters(s);
      const wal = wal0 && wal1 ? walBetween(wal0, wal1) : undefined;
      const refreshes = m0 && m1 ? refreshesBetween(m0, m1, (performance.now() - m0At) / 1000) : undefined;
      const gc = m0 && m1 && Object.keys(m1.gc).length ? gcBetween(m0, m1, (performance.now() - m0At) / 1000) : undefined;
      const backlog = await refreshBacklog(s);
      if (profiled) {
        profileWindow = { fromUs, toUs };
        if (opts.pgStats) {
          // The counters are flushed by each backend about once a second: let the window's last ones land.
          await sleep(1500);
          const upd1 = await hostUpdates(s);
          if (upd0) hotShare = { updates: upd1.updates - upd0.updates, hot: upd1.hot - upd0.hot };
          pgTop = (
            await s.pgQuery(
              `select calls::int as calls, plans::int as plans, total_exec_time as total_ms, mean_exec_time as mean_ms, (shared_blks_hit + shared_blks_read)::float8 / greatest(calls, 1) as blks, regexp_replace(query, '\\s+', ' ', 'g') as query
                 from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
                 order by total_exec_time desc limit 12`,
            )
          ).rows;
        }
      }
      const peak = rss.peak();
      rssPeakOverall.apiKb = Math.max(rssPeakOverall.apiKb, peak.apiKb);
      rssPeakOverall.pgKb = Math.max(rssPeakOverall.pgKb, peak.pgKb);
      const w: RateWindow = { offered: rate, bisection, open, cpuCores: cpuShare(c0, c1), freshness, apiRssKbPeak: peak.apiKb, pgRssKbPeak: peak.pgKb, refreshBacklog: backlog, refreshes, gc, wal, scrapes: scraper ? scrapeEffect(scraped, open.secondsP99) : undefined };
      printWindow(w);
      return w;
    };

    const results: RateWindow[] = [];
    const notMeasured: number[] = [];
    for (const rate of opts.rates) {
      if (!opts.keepGoing && results.some((w) => w.open.achieved < 0.9 * w.offered)) {
        notMeasured.push(rate);
        continue;
      }
      results.push(await measure(rate, false));
    }
    if (notMeasured.length) log(`not measured (a lower rate was already beyond what the API answers; --keep-going measures them): ${notMeasured.map((r) => fmt(r)).join(', ')} req/s`);
    if (opts.bisect) {
      for (let step = 0; step < opts.bisectSteps; step++) {
        const rate = nextBisectRate(results.map(outcomeOf), criteria, opts.bisectResolution);
        if (rate === undefined) break;
        results.push(await measure(rate, true));
      }
    }
    const knee = findKnee(results.map(outcomeOf), criteria);

    let saturation: (ClosedResult & { cpuCores: CpuShare }) | undefined;
    if (opts.saturation) {
      await sleep(opts.settle * 1000);
      log(`saturation: closed loop, ${opts.connections} keep-alive connections, ${opts.duration} s`);
      const c0 = cpuSnapshot(s, g.pid);
      const r = await g.closed(opts.connections, opts.duration);
      saturation = { ...r, cpuCores: cpuShare(c0, cpuSnapshot(s, g.pid)) };
    }
    rss.stop();
    const rssEnd = treeRssKb(s.apiPid);
    const pgRssEnd = treeRssKb(s.postmasterPid);
    const pssEnd = { apiKb: treePssKb(s.apiPid), pgKb: treePssKb(s.postmasterPid) };
    const loadAfter = machineLoad();

    // ---- report
    const target = results.find((w) => w.offered === TARGET_RPS && !w.bisection);
    const targetMet = target !== undefined && outcomeOf(target).failures === 0 && target.open.all.p99 < TARGET_P99_MS && target.open.achieved >= 0.98 * TARGET_RPS;
    const freshnessAtTarget = target?.freshness;
    const freshnessMet = freshnessAtTarget !== undefined && freshnessTargetMet(freshnessAtTarget);
    // Through the API's GET (what a person is shown): undefined when the run took no such sample.
    const visibleMet = freshnessAtTarget?.api ? freshnessTargetMet(freshnessAtTarget.api) : undefined;
    const generatorMax = Math.max(...results.map((w) => w.cpuCores.generator), saturation?.cpuCores.generator ?? 0);
    // node:cluster: a primary and its workers; one process serves alone.
    // The tree: one process alone, or a primary, its serving workers and (unless API_REFRESHER=false) its refresher.
    const refresherOn = opts.apiEnv.API_REFRESHER !== 'false';
    const apiWorkers = rssAfterSetup.processes > 1 ? rssAfterSetup.processes - 1 - (refresherOn ? 1 : 0) : 1;
    log('');
    log(`agent-api bench: ${fmt(opts.hosts)} hosts in ${fmt(fleet.clusterCount)} clusters, API tree ${rssAfterSetup.processes} process(es), ${apiWorkers} serving (API_PROCESSES ${opts.processes ?? 'unset'}), commit ${commit}, node ${process.version}, ${os.cpus().length} CPUs`);
    log(`machine load    before ${loadBefore.loadavg.map((x) => x.toFixed(2)).join(', ')}; after ${loadAfter.loadavg.map((x) => x.toFixed(2)).join(', ')}`);
    log('');
    log('offered   achieved   p50       p99       max        failures   report→stored p99    report→read p99      CPU cores: API  PG    gen   other');
    for (const w of [...results].sort((a, b) => a.offered - b.offered)) {
      const f = w.freshness;
      log(
        `${fmt(w.offered).padStart(7)}   ${fmt(w.open.achieved).padStart(8)}   ${ms(w.open.all.p50).padEnd(9)} ${ms(w.open.all.p99).padEnd(9)} ${ms(w.open.all.max).padEnd(10)} ${String(failuresOf(w.open)).padStart(8)}   ${freshnessP99Cell(f, true).padEnd(20)} ${freshnessP99Cell(f?.api, true).padEnd(20)} ${fmt(w.cpuCores.api, 2).padStart(14)} ${fmt(w.cpuCores.postgres, 2).padStart(5)} ${fmt(w.cpuCores.generator, 2).padStart(5)} ${fmt(w.cpuCores.other, 2).padStart(5)}${w.bisection ? '   (bisection)' : ''}`,
      );
    }
    log('');
    log(
      `knee            ${knee.knee !== undefined ? `${fmt(knee.knee)} req/s` : 'below the lowest rate measured'} (highest offered rate with p99 < ${TARGET_P99_MS} ms, no failures, ≥ 98 % answered${knee.firstMiss !== undefined ? `; first miss at ${fmt(knee.firstMiss)}` : '; no rate measured missed'})` +
        (knee.metAboveMiss.length ? `; met again above the miss at ${knee.metAboveMiss.map((r) => fmt(r)).join(', ')} (noise: not counted)` : ''),
    );
    if (saturation) {
      log(`saturation      ${fmt(saturation.requestsPerSecond)} req/s closed loop (${opts.connections} connections), ${latencyLine(saturation.all)}, ${failuresOf(saturation)} failures (status ${codes(saturation.statusCodes)})`);
      log(`  CPU (cores)   ${cpuLine(saturation.cpuCores)}`);
    }
    log(`API RSS         idle ${mb(rssIdle.kb)}, after set-up ${mb(rssAfterSetup.kb)}, peak under load ${mb(rssPeakOverall.apiKb)}, at end ${mb(rssEnd.kb)} (sum over ${rssEnd.processes} process(es)); PostgreSQL peak ${mb(rssPeakOverall.pgKb)}, end ${mb(pgRssEnd.kb)} (RSS sums count shared pages in every process; PSS at end: API ${mb(pssEnd.apiKb)}, PostgreSQL ${mb(pssEnd.pgKb)})`);
    log(
      `target          ${fmt(TARGET_RPS)} req/s at p99 < ${TARGET_P99_MS} ms, no errors: ${target ? `p99 ${ms(target.open.all.p99)}, ${fmt(target.open.achieved)} answered/s, ${failuresOf(target.open)} failures → ${targetMet ? 'MET' : 'MISSED'}` : `not measured (add ${TARGET_RPS} to --rates)`}`,
    );
    log(
      `freshness       report → validations stored p99 < ${FRESHNESS_P99_MS} ms at ${fmt(TARGET_RPS)} req/s: ${freshnessAtTarget ? `${freshnessLatencies(freshnessAtTarget, ', ')} (${freshnessCounts(freshnessAtTarget)}) → ${freshnessMet ? 'MET' : 'MISSED'}` : 'not measured'}`,
    );
    const read = freshnessAtTarget?.api;
    if (read) {
      log(`visible         report → validations read through the API p99 < ${FRESHNESS_P99_MS} ms at ${fmt(TARGET_RPS)} req/s: ${freshnessLatencies(read, ', ')} (${freshnessCounts(read)}) → ${visibleMet ? 'MET' : 'MISSED'} (the read settles its cluster's pending refresh)`);
    }
    if (generatorMax > GENERATOR_CORE_WARN) log(`WARNING         the load generator used up to ${fmt(generatorMax, 2)} cores in a window: near a core, it may be what limits the rate`);
    if (s.apiLog.lines > 0) log(`API log         ${s.apiLog.lines} lines at warn or above; last: ${s.apiLog.last.slice(-3).join(' | ').slice(0, 600)}`);
    if (opts.pgStats && pgTop.length) {
      log(`PostgreSQL      top statements in the ${fmt(profileRate)} req/s window:`);
      if (hotShare) log(`  hosts rows updated in that window: ${fmt(hotShare.updates)}, of which HOT (no index entry written): ${fmt(hotShare.hot)} (${fmt((100 * hotShare.hot) / Math.max(1, hotShare.updates), 1)} %)`);
      const size = (await s.pgQuery(`select avg(pg_column_size(h.*))::int as row, avg(pg_column_size(h.doc))::int as doc, avg(pg_column_size(h.inventory))::int as inventory, avg(pg_column_size(h.step_sends))::int as sends,
                                            pg_relation_size('hosts') as heap, pg_total_relation_size('hosts') as total from hosts h`)).rows[0] ?? {};
      // A poll rewrites its host's row (HOT): the row's inline width is what each check-in copies and prunes.
      log(`  hosts row inline ${size.row} B on average (doc ${size.doc} B, inventory ${size.inventory} B, step_sends ${size.sends} B, as stored: compressed or a TOAST pointer); heap ${mb(Number(size.heap) / 1024)}, with TOAST and indexes ${mb(Number(size.total) / 1024)}`);
      // Plans are counted only with pg_stat_statements.track_planning on (--pg-conf pg_stat_statements.track_planning=on).
      for (const r of pgTop) log(`  ${fmt(Number(r.calls)).padStart(9)} calls  ${fmt(Number(r.plans)).padStart(7)} plans  ${fmt(Number(r.mean_ms), 3)} ms mean  ${fmt(Number(r.total_ms)).padStart(6)} ms total  ${fmt(Number(r.blks), 1).padStart(6)} blocks/call  ${String(r.query).slice(0, 160)}`);
    }

    // Stop the API (CPU profiles are written as its processes exit), then summarise.
    await gen.stop();
    await s.stop();
    let profiles: Array<{ file: string; summary: ProfileSummary }> = [];
    if (profDir && profileWindow) {
      const files = existsSync(profDir) ? readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile')) : [];
      profiles = files.map((f) => ({ file: f, summary: summarizeCpuProfile(JSON.parse(readFileSync(path.join(profDir, f), 'utf8')), profileWindow, 30) }));
      for (const p of profiles) {
        log(`\nCPU profile of API process ${path.join(profDir, p.file)}, the ${fmt(profileRate)} req/s window only:`);
        log(formatSummary(p.summary));
      }
      if (!files.length) log(`no CPU profile was written in ${profDir}`);
    }

    const out = {
      bench: 'agent-api',
      startedAt: startedAt.toISOString(),
      commit,
      node: process.version,
      cpus: os.cpus().length,
      options: opts,
      apiProcesses: rssAfterSetup.processes,
      apiWorkers,
      machineLoad: { before: loadBefore, after: loadAfter },
      setup: { clusters: fleet.clusterCount, registerSeconds: fleet.registerSeconds, hostStatuses: fleet.statuses },
      rates: results.map((w) => ({
        offered: w.offered,
        bisection: w.bisection,
        achieved: w.open.achieved,
        completed: w.open.completed,
        scheduled: w.open.scheduled,
        errors: w.open.errors,
        timeouts: w.open.timeouts,
        non2xx: w.open.non2xx,
        skipped: w.open.skipped,
        unanswered: w.open.unanswered,
        statusCodes: w.open.statusCodes,
        errorCodes: w.open.errorCodes,
        maxInFlight: w.open.maxInFlight,
        latencyMs: w.open.all,
        byKind: w.open.byKind,
        secondsP99Ms: w.open.secondsP99,
        leadSecondsP99Ms: w.open.leadSecondsP99,
        scrapes: w.scrapes,
        cpuCores: w.cpuCores,
        cpuMsPerRequest: { api: (1000 * w.cpuCores.api) / w.open.achieved, postgres: (1000 * w.cpuCores.postgres) / w.open.achieved },
        freshness: w.freshness,
        apiRssKbPeak: w.apiRssKbPeak,
        pgRssKbPeak: w.pgRssKbPeak,
        refreshBacklog: w.refreshBacklog,
        // What the window printed of the service's own counts: its refreshes by who ran them, and its collection pauses.
        refreshes: w.refreshes,
        gc: w.gc,
        wal: w.wal,
      })),
      notMeasured,
      knee: { ...knee, criteria: { p99Ms: TARGET_P99_MS, minAchievedRatio: 0.98, failures: 0 } },
      saturation,
      rssKb: { apiIdle: rssIdle.kb, apiAfterSetup: rssAfterSetup.kb, apiPeak: rssPeakOverall.apiKb, apiEnd: rssEnd.kb, pgPeak: rssPeakOverall.pgKb, pgEnd: pgRssEnd.kb, apiPssEnd: pssEnd.apiKb, pgPssEnd: pssEnd.pgKb },
      target: { requestsPerSecond: TARGET_RPS, p99Ms: TARGET_P99_MS, met: targetMet, freshnessP99Ms: FRESHNESS_P99_MS, freshnessMet, visibleMet },
      generatorCoresMax: generatorMax,
      pgTop,
      profiles,
    };
    if (!opts.noResultFile) {
      const file = resultPath('agent-api', [`${opts.hosts}h`, `${apiWorkers}p`], startedAt, commit);
      await writeResult(file, out);
      log(`result          ${path.relative(process.cwd(), file)}`);
    }
    if (opts.json) await writeResult(opts.json, out);
  } finally {
    await cleanup();
    clearTimeout(watchdog);
  }
}

/** A probe's slowest samples: "1,404 ms in second 3, …". */
function slowestLine(slowest: SlowSample[] | undefined): string {
  const parts = (x: SlowSample) => (x.postMs === undefined ? '' : ` (post ${ms(x.postMs)}, ${x.reads} read${x.reads === 1 ? '' : 's'}, longest ${ms(x.readMs ?? 0)})`);
  return slowest?.length ? slowest.map((x) => `${ms(x.ms)} in second ${x.s + 1}${parts(x)}`).join(', ') : 'none';
}

/** One way of reading freshness (FreshnessResult: stored, or its `api` half). */
type FreshnessFigure = FreshnessResult['api'];

/** Sampled, nothing failed or unseen, p99 under the target. */
function freshnessTargetMet(f: FreshnessFigure): boolean {
  return f.samples > 0 && f.failures === 0 && f.unseen === 0 && f.latencyMs.p99 < FRESHNESS_P99_MS;
}

/** p50, p99 and max joined by `sep`, or 'no sample'. */
function freshnessLatencies(f: FreshnessFigure, sep: string): string {
  return f.samples ? [`p50 ${ms(f.latencyMs.p50)}`, `p99 ${ms(f.latencyMs.p99)}`, `max ${ms(f.latencyMs.max)}`].join(sep) : 'no sample';
}

function freshnessCounts(f: FreshnessFigure): string {
  return `${f.samples} samples, ${f.failures} failed, ${f.unseen} never seen`;
}

function printWindow(w: RateWindow): void {
  const o = w.open;
  log(`${w.bisection ? 'bisection' : 'rate'} ${fmt(w.offered)} req/s offered: ${fmt(o.achieved)} answered/s (${fmt(o.completed)} of ${fmt(o.scheduled)} due; most in flight ${fmt(o.maxInFlight)}${o.skipped ? `; ${fmt(o.skipped)} not sent: the API fell too far behind` : ''}${o.unanswered ? `; ${fmt(o.unanswered)} unanswered 15 s after the window` : ''})`);
  log(`  latency       ${latencyLine(o.all)}`);
  for (const k of ['GET', 'POST'] as const) if (o.byKind[k].count) log(`    ${k.padEnd(4)} ${fmt(o.byKind[k].count).padStart(8)}   ${latencyLine(o.byKind[k])}`);
  log(`  by second     p99 ${secondsLine(o.secondsP99)}; the generator sent up to ${ms(o.lateMaxMs)} after a request's scheduled start`);
  if (w.scrapes) {
    const e = w.scrapes;
    log(`  scrapes       ${e.count} GET /metrics, wall p50 ${ms(e.wallMs.p50)}, max ${ms(e.wallMs.max)}; the seconds they started in: p99 median ${ms(e.withScrape)} (${e.seconds.length} s), the others ${ms(e.without)}`);
  }
  if (o.leadSecondsP99?.length) log(`  lead          p99 by second, not measured: ${secondsLine(o.leadSecondsP99)}`);
  log(`  failures      ${o.errors} errors, ${o.timeouts} timeouts, ${o.non2xx} non-2xx   (status ${codes(o.statusCodes)}${o.errors ? `; errors ${codes(o.errorCodes)}` : ''})`);
  const f = w.freshness;
  if (f) log(`  report→stored ${freshnessLatencies(f, '   ')}   (${freshnessCounts(f)})`);
  if (f?.api) log(`  report→read   ${freshnessLatencies(f.api, '   ')}   (through the API's GET of the host; ${freshnessCounts(f.api)})`);
  if (f) log(`  slowest       stored ${slowestLine(f.slowest)}; read ${slowestLine(f.api?.slowest)} (the second of the window each reply was posted in)`);
  for (const [path, r] of Object.entries(w.refreshes ?? {})) {
    const t = r.transactions;
    const within = r.targets.withinShare === undefined ? '' : `, ${(r.targets.withinShare * 100).toFixed(0)} % within 200 ms`;
    log(
      `  refreshes     ${path.padEnd(9)} ${fmt(r.targets.count)} targets, request age at commit p50 ≤ ${ms(r.targets.p50AtMostMs)}, p99 ≤ ${ms(r.targets.p99AtMostMs)}${within}` +
        (t ? `; ${fmt(t.count)} transactions (${fmt(t.count / r.seconds, 1)}/s), mean ${ms(t.count ? (t.sumS / t.count) * 1000 : 0)}, p50 ≤ ${ms(t.p50AtMostMs)}, p99 ≤ ${ms(t.p99AtMostMs)}, open ${((t.sumS / r.seconds) * 100).toFixed(0)} % of the window` : '') +
        '   (the service\'s /metrics; bucket bounds)',
    );
  }
  for (const [role, g] of Object.entries(w.gc ?? {})) {
    const kinds = Object.entries(g.perSecond).map(([k, n]) => `${k} ${fmt(n, 1)}/s`).join(', ');
    log(`  GC pauses     ${role.padEnd(9)} ${kinds}; paused ${(g.pausedShare * 100).toFixed(1)} % of the window, ${g.longCount} of ≥ 50 ms, longest ≤ ${ms(g.longestAtMostMs)}   (the service's /metrics; summed over the role's processes)`);
  }
  if (w.wal) log(`  WAL           ${walLine(w.wal)}`);
  log(`  CPU (cores)   ${cpuLine(w.cpuCores)}`);
  if (w.cpuCores.apiProcesses) log(`  API by process ${Object.entries(w.cpuCores.apiProcesses).map(([k, v]) => `${k.split(':')[0]} ${fmt(v, 2)}`).join(', ')} (cores)`);
  if (w.cpuCores.postgresKinds) log(`  PostgreSQL by process kind ${Object.entries(w.cpuCores.postgresKinds).filter(([, v]) => v >= 0.005).sort((x, y) => y[1] - x[1]).map(([k, v]) => `${k} ${fmt(v, 2)}`).join(', ')} (cores)`);
  log(`  CPU/request   API ${fmt((1000 * w.cpuCores.api) / o.achieved, 3)} ms, PostgreSQL ${fmt((1000 * w.cpuCores.postgres) / o.achieved, 3)} ms (steadier than req/s on a loaded machine; cores ÷ achieved rate)`);
  log(`  RSS peak      API ${mb(w.apiRssKbPeak)}, PostgreSQL ${mb(w.pgRssKbPeak)}${w.refreshBacklog !== undefined ? `; clusters waiting for a refresh at the end: ${w.refreshBacklog}` : ''}`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`agent-api bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);

interface WalCounters {
  at: number;
  bytes: number;
  timed: number;
  requested: number;
  maxWalSize: string;
  checkpointTimeout: string;
}
interface WalWindow {
  mbPerSecond: number;
  /** Checkpoints begun in the window: on schedule (checkpoint_timeout) and asked for (max_wal_size reached, or a command). */
  timed: number;
  requested: number;
  maxWalSize: string;
  checkpointTimeout: string;
}

/**
 * WAL written so far and the checkpoints begun, with the two settings that
 * pace them. A checkpoint (on schedule, or asked for when max_wal_size
 * filled) writes out every dirty buffer, and is followed by a full-page
 * image in the WAL of every page first written after it. Undefined when the
 * server has neither view (pg_stat_checkpointer is PostgreSQL 17's,
 * pg_stat_bgwriter the earlier ones'). The scheduled count includes
 * checkpoints skipped on an idle server; a loaded one skips none.
 */
async function walCounters(s: Pick<Stack, 'pgQuery'>): Promise<WalCounters | undefined> {
  const settings = `current_setting('max_wal_size') as max_wal_size, current_setting('checkpoint_timeout') as checkpoint_timeout, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 as bytes`;
  for (const view of ['select num_timed as timed, num_requested as requested from pg_stat_checkpointer', 'select checkpoints_timed as timed, checkpoints_req as requested from pg_stat_bgwriter']) {
    try {
      const r = (await s.pgQuery(`select c.timed::bigint as timed, c.requested::bigint as requested, ${settings} from (${view}) c`)).rows[0];
      if (r) return { at: performance.now(), bytes: Number(r.bytes), timed: Number(r.timed), requested: Number(r.requested), maxWalSize: String(r.max_wal_size), checkpointTimeout: String(r.checkpoint_timeout) };
    } catch {
      // The other view.
    }
  }
  return undefined;
}

function walBetween(a: WalCounters, b: WalCounters): WalWindow {
  return { mbPerSecond: (b.bytes - a.bytes) / 1e6 / ((b.at - a.at) / 1000), timed: b.timed - a.timed, requested: b.requested - a.requested, maxWalSize: b.maxWalSize, checkpointTimeout: b.checkpointTimeout };
}

const walLine = (w: WalWindow) =>
  `${fmt(w.mbPerSecond, 1)} MB/s written; checkpoints begun: ${w.timed} on schedule, ${w.requested} asked for   (max_wal_size ${w.maxWalSize}, checkpoint_timeout ${w.checkpointTimeout})`;

/** The hosts table's row updates so far, and how many were heap-only (HOT): an update that wrote no index entry. */
async function hostUpdates(s: Pick<Stack, 'pgQuery'>): Promise<{ updates: number; hot: number }> {
  const r = (await s.pgQuery(`select n_tup_upd::bigint as upd, n_tup_hot_upd::bigint as hot from pg_stat_user_tables where relname = 'hosts'`)).rows[0];
  return { updates: Number(r?.upd ?? 0), hot: Number(r?.hot ?? 0) };
}
