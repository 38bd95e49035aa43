/**
 * Benchmark of the agent API: thousands of registered hosts polling one API
 * process. See bench/README.md for what it measures and the figures.
 *
 *   npm run bench:agent-api -- [--hosts 5000] [--hosts-per-cluster 50] [--duration 20] [--warmup 5]
 *                              [--connections 50] [--rate 1700] [--post-ratio 0.1] [--pool-max N]
 *                              [--node-options "…"] [--cpu-prof] [--pg-stats] [--json FILE]
 *
 * Starts an embedded PostgreSQL in a temporary folder, migrates it, spawns one
 * `landfall api` child process (so its RSS and CPU are its own), creates
 * clusters and their infra-envs, registers the hosts through the agent
 * endpoint and posts each one's inventory (the steady state of a fleet: every
 * host has an inventory stored). Then it drives the agent mix (mostly
 * GET …/instructions, the poll; some POST …/instructions carrying a ~10 KB
 * inventory reply; a random host per request) twice:
 *
 *   saturation   autocannon, N keep-alive connections, as fast as the API answers:
 *                the most requests/s one process serves, and its latency when full;
 *   target rate  an open-loop generator at a constant arrival rate (1,700 req/s,
 *                100,000 hosts at the 60 s poll): the latency agents see at that
 *                load, measured from each request's scheduled start.
 *
 * Only 127.0.0.1 is ever targeted. Everything it starts is stopped at the end,
 * and a watchdog bounds the whole run.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, promises as fs, readFileSync, existsSync, readdirSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import { startEmbeddedPostgres, type EmbeddedPg } from '../src/dev/embedded-postgres';
import { freePort, repoRoot, sleep, stopProcess } from '../src/dev/process-utils';
import { createDb } from '../src/db/database';
import { migrateLatest } from '../src/db/migrations';
import { BASE_PATH } from '../src/api/assisted/presenters';
import { inventoryFor } from './inventory';
import { formatSummary, summarizeCpuProfile, type ProfileSummary } from './cpuprofile-summary';

// ---- autocannon has no bundled types; the part of its programmatic API used here.
interface AcRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  setupRequest?: (req: AcRequest, context: Record<string, unknown>) => AcRequest;
}
interface AcHistogram {
  average: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  total: number;
}
interface AcResult {
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCodeStats: Record<string, { count: number }>;
  latency: AcHistogram;
  requests: AcHistogram & { sent: number };
}
interface AcInstance {
  on(event: 'response', fn: (client: { requestIterator?: { context?: Record<string, unknown> } }, status: number, bytes: number, ms: number) => void): void;
  stop(): void;
}
type Autocannon = (opts: Record<string, unknown>, cb: (err: Error | null, result: AcResult) => void) => AcInstance;
const autocannon = require('autocannon') as Autocannon;

// ---- the target from the issue: 100,000 hosts polling every 60 s.
const TARGET_RPS = 1700;
const TARGET_P99_MS = 50;

interface Options {
  hosts: number;
  hostsPerCluster: number;
  duration: number;
  warmup: number;
  connections: number;
  rate: number;
  maxSockets: number;
  postRatio: number;
  registerConcurrency: number;
  poolMax?: number;
  nodeOptions?: string;
  cpuProf: boolean;
  pgStats: boolean;
  json?: string;
}

const USAGE = `usage: node dist/bench/agent-api.js [options]
  --hosts N                 registered hosts (default 5000)
  --hosts-per-cluster N     hosts per cluster (and infra-env) (default 50)
  --duration S              seconds of each measured phase (default 20)
  --warmup S                warm-up seconds before measuring (default 5)
  --connections N           keep-alive connections of the saturation phase (default 50)
  --rate R                  requests/s of the open-loop phase (default 1700; 0 skips it)
  --max-sockets N           most connections the open-loop phase opens (default 256)
  --post-ratio R            share of POST inventory replies in the mix (default 0.1)
  --register-concurrency N  parallel registrations during set-up (default 32)
  --pool-max N              DATABASE_POOL_MAX of the API process (default: the service default)
  --node-options "…"        NODE_OPTIONS of the API process only (e.g. "--max-semi-space-size=64")
  --cpu-prof                profile the API process (node --cpu-prof) and summarise the saturation phase
  --pg-stats                enable pg_stat_statements and print the top statements of the saturation phase
  --json FILE               also write the figures as JSON
`;

function parseArgs(argv: string[]): Options {
  const o: Options = { hosts: 5000, hostsPerCluster: 50, duration: 20, warmup: 5, connections: 50, rate: TARGET_RPS, maxSockets: 256, postRatio: 0.1, registerConcurrency: 32, cpuProf: false, pgStats: false };
  const num = (name: string, v: string | undefined, min: number, max: number): number => {
    const n = Number(v);
    if (v === undefined || !Number.isFinite(n) || n < min || n > max) throw new Error(`${name} must be a number in [${min}, ${max}] (got ${v ?? 'nothing'})`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = () => argv[++i];
    switch (a) {
      case '--hosts': o.hosts = Math.floor(num(a, next(), 1, 1_000_000)); break;
      case '--hosts-per-cluster': o.hostsPerCluster = Math.floor(num(a, next(), 1, 1_000_000)); break;
      case '--duration': o.duration = num(a, next(), 1, 3600); break;
      case '--warmup': o.warmup = num(a, next(), 0, 600); break;
      case '--connections': o.connections = Math.floor(num(a, next(), 1, 2000)); break;
      case '--rate': o.rate = num(a, next(), 0, 100_000); break;
      case '--max-sockets': o.maxSockets = Math.floor(num(a, next(), 1, 4096)); break;
      case '--post-ratio': o.postRatio = num(a, next(), 0, 1); break;
      case '--register-concurrency': o.registerConcurrency = Math.floor(num(a, next(), 1, 512)); break;
      case '--pool-max': o.poolMax = Math.floor(num(a, next(), 1, 200)); break;
      case '--node-options': o.nodeOptions = next(); break;
      case '--cpu-prof': o.cpuProf = true; break;
      case '--pg-stats': o.pgStats = true; break;
      case '--json': o.json = next(); break;
      case '--help': case '-h': process.stdout.write(USAGE); process.exit(0); break;
      default: throw new Error(`unknown option ${a}\n${USAGE}`);
    }
  }
  return o;
}

// ---- /proc readings (Linux)
const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

function procStatus(pid: number): { rssKb: number; hwmKb: number } | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? 0);
    return { rssKb: kb('VmRSS'), hwmKb: kb('VmHWM') };
  } catch {
    return undefined;
  }
}

/** CPU seconds of a process (self, and its reaped children) and its parent's pid. */
function procTimes(pid: number): { self: number; children: number; ppid: number } | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses; fields start after the last ')'.
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // f[0] is field 3 (state): ppid is field 4, utime 14, stime 15, cutime 16, cstime 17.
    const n = (field: number) => Number(f[field - 3]);
    return { ppid: n(4), self: (n(14) + n(15)) / CLK_TCK, children: (n(16) + n(17)) / CLK_TCK };
  } catch {
    return undefined;
  }
}

/** CPU seconds of the postmaster and everything it forked (live backends, plus the ones already reaped). */
function postgresCpuSeconds(postmasterPid: number): number {
  const pm = procTimes(postmasterPid);
  if (!pm) return 0;
  let total = pm.self + pm.children;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const t = procTimes(Number(entry));
    if (t && t.ppid === postmasterPid) total += t.self;
  }
  return total;
}

function machineCpu(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = line;
  const busy = user + nice + system + irq + softirq + steal;
  return { busy: busy / CLK_TCK, total: (busy + idle + iowait) / CLK_TCK };
}

interface CpuSnapshot {
  api: number;
  pg: number;
  bench: number;
  machine: { busy: number; total: number };
  wall: number;
}

/** Cores used by each party between two snapshots. */
interface CpuShare {
  api: number;
  postgres: number;
  loadGenerator: number;
  other: number;
  machineBusy: number;
  machineCores: number;
}

function cpuShare(a: CpuSnapshot, b: CpuSnapshot): CpuShare {
  const wall = b.wall - a.wall;
  const api = (b.api - a.api) / wall;
  const postgres = (b.pg - a.pg) / wall;
  const loadGenerator = (b.bench - a.bench) / wall;
  const machineBusy = (b.machine.busy - a.machine.busy) / wall;
  return { api, postgres, loadGenerator, other: Math.max(0, machineBusy - api - postgres - loadGenerator), machineBusy, machineCores: (b.machine.total - a.machine.total) / wall };
}

// ---- helpers
const mb = (kb: number) => `${(kb / 1024).toFixed(0)} MB`;
const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const isTty = process.stdout.isTTY === true;

function log(line: string): void {
  process.stdout.write(`${line}\n`);
}

interface Percentiles {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

function percentiles(xs: number[]): Percentiles {
  const s = Float64Array.from(xs).sort();
  const at = (p: number) => (s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]! : NaN);
  return { count: s.length, p50: at(50), p90: at(90), p99: at(99), max: s.length ? s[s.length - 1]! : NaN };
}

const ms = (v: number) => `${fmt(v, v < 10 ? 1 : 0)} ms`;
const latencyLine = (p: Percentiles) => `p50 ${ms(p.p50)}   p90 ${ms(p.p90)}   p99 ${ms(p.p99)}   max ${ms(p.max)}`;
const cpuLine = (c: CpuShare) =>
  `API ${fmt(c.api, 2)}   PostgreSQL ${fmt(c.postgres, 2)}   load generator ${fmt(c.loadGenerator, 2)}   other processes ${fmt(c.other, 2)}   (machine busy ${fmt(c.machineBusy, 2)} of ${fmt(c.machineCores, 1)})`;

async function jsonCall<T>(method: string, url: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(url, { method, headers: body !== undefined ? { 'content-type': 'application/json' } : {}, body: body !== undefined ? JSON.stringify(body) : undefined });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

async function expectStatus<T>(what: string, p: Promise<{ status: number; body: T }>, expected: number): Promise<T> {
  const r = await p;
  if (r.status !== expected) throw new Error(`${what}: HTTP ${r.status} (expected ${expected}): ${JSON.stringify(r.body).slice(0, 300)}`);
  return r.body;
}

/** Runs `fn` over 0..n-1 with at most `concurrency` at a time. */
async function forEachConcurrently(n: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, n) }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

/** Deterministic, valid v4-shaped host ids, so runs are comparable. */
const hostUuid = (i: number) => `b0000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;

// ---- the agent mix
interface MixRequest {
  kind: 'GET' | 'POST';
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

// ---- the open-loop phase
interface OpenLoopResult {
  seconds: number;
  scheduled: number;
  completed: number;
  answeredPerSecond: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  skipped: number;
  maxInFlight: number;
  statusCodes: Record<string, number>;
  all: Percentiles;
  byKind: Record<string, Percentiles>;
}

/**
 * Requests at a constant arrival rate whatever the API's latency, as a fleet
 * of agents behaves (each polls on its own clock). Latency runs from the
 * moment a request was due, so time spent queued behind a slow API counts
 * (no coordinated omission). Connections are opened as needed, up to
 * `maxSockets`; past that, requests wait in the client's queue.
 */
function openLoop(port: number, rate: number, seconds: number, maxSockets: number, next: () => MixRequest): Promise<OpenLoopResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  const lat: Record<string, number[]> = { GET: [], POST: [] };
  const all: number[] = [];
  const statusCodes: Record<string, number> = {};
  let scheduled = 0;
  let completed = 0;
  let errors = 0;
  let timeouts = 0;
  let non2xx = 0;
  let skipped = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  let lastDone = 0;
  const interval = 1000 / rate;
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  // Far more requests in flight than connections means the API is far behind: stop adding to the pile.
  const inFlightCap = maxSockets * 20;
  return new Promise((resolve) => {
    let ticking = true;
    let resolved = false;
    let drainTimer: NodeJS.Timeout | undefined;
    const finish = (force = false) => {
      if (resolved || (!force && (ticking || inFlight > 0))) return;
      resolved = true;
      if (drainTimer) clearTimeout(drainTimer);
      agent.destroy();
      const byKind = Object.fromEntries(Object.entries(lat).map(([k, xs]) => [k, percentiles(xs)]));
      // Answers per second over the time they took: below the offered rate when the API falls behind.
      const answeredPerSecond = completed / Math.max(seconds, (lastDone - t0) / 1000);
      resolve({ seconds, scheduled, completed, answeredPerSecond, errors, timeouts, non2xx, skipped, maxInFlight, statusCodes, all: percentiles(all), byKind });
    };
    const fire = (due: number) => {
      scheduled++;
      if (inFlight >= inFlightCap) {
        skipped++;
        return;
      }
      const r = next();
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      let done = false;
      const settle = (status: number | undefined, err?: 'error' | 'timeout') => {
        if (done || resolved) return;
        done = true;
        inFlight--;
        if (err === 'timeout') timeouts++;
        else if (err) errors++;
        else {
          completed++;
          statusCodes[String(status)] = (statusCodes[String(status)] ?? 0) + 1;
          if (!status || status < 200 || status >= 300) non2xx++;
          lastDone = performance.now();
          const took = lastDone - due;
          all.push(took);
          lat[r.kind]!.push(took);
        }
        finish();
      };
      const req = http.request({ host: '127.0.0.1', port, method: r.method, path: r.path, headers: r.body ? { ...r.headers, 'content-length': String(r.body.length) } : r.headers, agent }, (res) => {
        res.on('data', () => undefined);
        res.on('end', () => settle(res.statusCode));
        res.on('error', () => settle(undefined, 'error'));
      });
      req.setTimeout(10_000, () => {
        settle(undefined, 'timeout');
        req.destroy();
      });
      req.on('error', () => settle(undefined, 'error'));
      req.end(r.body);
    };
    const tick = setInterval(() => {
      const now = Math.min(performance.now(), end);
      while (t0 + scheduled * interval <= now) fire(t0 + scheduled * interval);
      if (now >= end) {
        clearInterval(tick);
        ticking = false;
        // Whatever has not answered 15 s after the end is abandoned (and counted neither way).
        drainTimer = setTimeout(() => finish(true), 15_000);
        finish();
      }
    }, 1);
  });
}

// ---- the run
async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const root = repoRoot();
  const cli = path.join(root, 'dist', 'src', 'cli', 'main.js');
  if (!existsSync(cli)) throw new Error(`${cli} is missing: build first (npm run bench:agent-api does)`);

  // Bounded in time whatever happens: set-up, registration, warm-up, both phases, shutdown.
  const budgetMs = 180_000 + opts.hosts * 40 + (opts.warmup + 2 * opts.duration) * 1000 + 60_000;
  const work = mkdtempSync(path.join(os.tmpdir(), 'landfall-bench-'));
  let pg: EmbeddedPg | undefined;
  let api: ChildProcess | undefined;
  let cannon: AcInstance | undefined;
  let cleaning: Promise<void> | undefined;
  const cleanup = () =>
    (cleaning ??= (async () => {
      cannon?.stop();
      if (api) await stopProcess(api, 15_000, 'SIGTERM');
      if (pg) await pg.stop().catch(() => undefined);
      await fs.rm(work, { recursive: true, force: true }).catch(() => undefined);
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
    // ---- PostgreSQL. The data folder sits directly in the temporary folder: as root, PostgreSQL
    // runs as `postgres`, and startEmbeddedPostgres opens up only the data folder's parent.
    const pgDir = path.join(work, 'pgdata');
    pg = await startEmbeddedPostgres({ dir: pgDir, port: await freePort(), database: 'landfall_bench' });
    const pgQuery = async (sql: string) => {
      const c = new PgClient({ connectionString: pg!.url });
      await c.connect();
      try {
        return await c.query(sql);
      } finally {
        await c.end();
      }
    };
    if (opts.pgStats) {
      await pgQuery("alter system set shared_preload_libraries = 'pg_stat_statements'");
      await pg.stop();
      await pg.start();
      await pgQuery('create extension if not exists pg_stat_statements');
    }
    const postmasterPid = Number(readFileSync(path.join(pgDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const db = createDb(pg.url, 2);
    await migrateLatest(db);
    await db.destroy();

    // ---- the API, as its own process
    const port = await freePort();
    const profDir = path.join(root, '.state', 'bench');
    if (opts.cpuProf) await fs.mkdir(profDir, { recursive: true });
    const profName = `agent-api-${new Date().toISOString().replace(/[:.]/g, '-')}.cpuprofile`;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      API_HOST: '127.0.0.1',
      API_PORT: String(port),
      SERVICE_BASE_URL: `http://127.0.0.1:${port}`,
      DATABASE_URL: pg.url,
      // Nothing on the agent path talks to Temporal; the client connects lazily.
      TEMPORAL_ADDRESS: '127.0.0.1:1',
      STORAGE_BACKEND: 'local',
      STORAGE_LOCAL_DIR: path.join(work, 'objects'),
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
      AUTH_TYPE: 'none',
      API_VALIDATE_RESPONSES: 'false',
      ...(opts.poolMax !== undefined ? { DATABASE_POOL_MAX: String(opts.poolMax) } : {}),
      ...(opts.nodeOptions !== undefined ? { NODE_OPTIONS: opts.nodeOptions } : {}),
    };
    const nodeArgs = opts.cpuProf ? ['--cpu-prof', '--cpu-prof-dir', profDir, '--cpu-prof-name', profName] : [];
    api = spawn(process.execPath, [...nodeArgs, cli, 'api'], { env, stdio: ['ignore', 'pipe', 'pipe'], cwd: root });
    const apiPid = api.pid!;
    const apiLog: string[] = [];
    let apiLogLines = 0;
    const keep = (d: Buffer) => {
      for (const line of d.toString().split('\n')) {
        if (!line.trim()) continue;
        apiLogLines++;
        apiLog.push(line);
        if (apiLog.length > 10) apiLog.shift();
      }
    };
    api.stdout!.on('data', keep);
    api.stderr!.on('data', keep);
    const base = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (api.exitCode !== null) throw new Error(`the API exited with code ${api.exitCode}: ${apiLog.join(' | ')}`);
      const ok = await fetch(`${base}/healthz`).then((r) => r.ok, () => false);
      if (ok) break;
      if (Date.now() > deadline) throw new Error('the API did not answer /healthz within 30 s');
      await sleep(100);
    }
    const rssIdle = procStatus(apiPid);

    // ---- clusters, infra-envs, hosts (each registered, then its inventory posted, as an agent does)
    const v2 = `${base}${BASE_PATH}/v2`;
    const pullSecret = JSON.stringify({ auths: { 'registry.example.com': { auth: 'YmVuY2g6YmVuY2g=' } } });
    const sshKey = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx4l8jTj2tUiX4lUzTnI6FvR2d1eI8kXoW7hSg2gq1m bench@landfall';
    const clusterCount = Math.ceil(opts.hosts / opts.hostsPerCluster);
    const infraEnvIds: string[] = new Array<string>(clusterCount);
    await forEachConcurrently(clusterCount, 8, async (k) => {
      const cluster = await expectStatus<{ id: string }>(
        'create cluster',
        jsonCall('POST', `${v2}/clusters`, { name: `bench-${k}`, openshift_version: '1.31', pull_secret: pullSecret, base_dns_domain: 'example.com', ssh_public_key: sshKey }),
        201,
      );
      const ie = await expectStatus<{ id: string }>(
        'create infra-env',
        jsonCall('POST', `${v2}/infra-envs`, { name: `bench-${k}-ie`, pull_secret: pullSecret, cluster_id: cluster.id, ssh_authorized_key: sshKey, image_type: 'minimal-iso' }),
        201,
      );
      infraEnvIds[k] = ie.id;
    });
    const hostIds = Array.from({ length: opts.hosts }, (_, i) => hostUuid(i));
    const stepsPath = (i: number) => `${BASE_PATH}/v2/infra-envs/${infraEnvIds[Math.floor(i / opts.hostsPerCluster)]}/hosts/${hostIds[i]}/instructions`;
    const stepsPaths = hostIds.map((_, i) => stepsPath(i));
    const replyBody = (i: number) =>
      JSON.stringify({ step_type: 'inventory', step_id: `inventory-${(i >>> 0).toString(16).padStart(8, '0')}`, exit_code: 0, output: inventoryFor(`worker-${String(i).padStart(6, '0')}`, i) });

    const t0 = Date.now();
    let registered = 0;
    let lastPrint = 0;
    const progress = (final = false) => {
      const now = Date.now();
      if (!final && now - lastPrint < (isTty ? 200 : 5000)) return;
      lastPrint = now;
      const line = `registering hosts and posting their inventory: ${fmt(registered)}/${fmt(opts.hosts)} (${fmt(registered / Math.max((now - t0) / 1000, 0.001))}/s)`;
      if (isTty) process.stdout.write(`\r${line}${final ? '\n' : ''}`);
      else log(line);
    };
    await forEachConcurrently(opts.hosts, opts.registerConcurrency, async (i) => {
      const ie = infraEnvIds[Math.floor(i / opts.hostsPerCluster)]!;
      await expectStatus(`register host ${i}`, jsonCall('POST', `${v2}/infra-envs/${ie}/hosts`, { host_id: hostIds[i], discovery_agent_version: 'bench-agent:1.0' }), 201);
      const res = await fetch(`${base}${stepsPaths[i]}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: replyBody(i) });
      const text = await res.text();
      if (res.status !== 204) throw new Error(`inventory reply of host ${i}: HTTP ${res.status}: ${text.slice(0, 300)}`);
      registered++;
      progress();
    });
    progress(true);
    const registerSeconds = (Date.now() - t0) / 1000;
    const rssAfterSetup = procStatus(apiPid);
    const statuses = (await pgQuery('select status, count(*)::int as n from hosts group by status order by n desc')).rows as Array<{ status: string; n: number }>;

    // ---- the mix: a random host per request; a small pool of distinct ~10 KB replies keeps the generator cheap
    const replies = Array.from({ length: 64 }, (_, i) => Buffer.from(replyBody(i)));
    const replyKb = replies.reduce((s, b) => s + b.length, 0) / replies.length / 1024;
    const pick = (n: number) => Math.floor(Math.random() * n);
    const nextRequest = (): MixRequest => {
      const p = stepsPaths[pick(stepsPaths.length)]!;
      if (Math.random() < opts.postRatio) {
        return { kind: 'POST', method: 'POST', path: p, headers: { 'content-type': 'application/json', accept: 'application/json' }, body: replies[pick(replies.length)]! };
      }
      return { kind: 'GET', method: 'GET', path: `${p}?timestamp=${Math.floor(Date.now() / 1000)}`, headers: { accept: 'application/json' } };
    };
    const acRequest: AcRequest = {
      setupRequest: (req, context) => {
        const r = nextRequest();
        context.kind = r.kind;
        // Fresh objects every time: autocannon shares the template's headers between builds.
        req.method = r.method;
        req.path = r.path;
        req.headers = { ...r.headers };
        req.body = r.body ?? Buffer.alloc(0);
        return req;
      },
    };
    const acByKind: Record<string, number[]> = { GET: [], POST: [] };
    const runCannon = (seconds: number, record: boolean) =>
      new Promise<AcResult>((resolve, reject) => {
        cannon = autocannon({ url: base, connections: opts.connections, duration: seconds, requests: [acRequest], timeout: 10 }, (err, result) => {
          cannon = undefined;
          if (err) reject(err);
          else resolve(result);
        });
        if (record) {
          // The response event comes before the connection builds its next request, so the context still names this one.
          cannon.on('response', (client, _status, _bytes, took) => {
            const kind = client.requestIterator?.context?.kind;
            if (typeof kind === 'string') acByKind[kind]?.push(took);
          });
        }
      });

    const snap = (): CpuSnapshot => {
      const u = process.cpuUsage();
      return { api: procTimes(apiPid)?.self ?? 0, pg: postgresCpuSeconds(postmasterPid), bench: (u.user + u.system) / 1e6, machine: machineCpu(), wall: performance.now() / 1000 };
    };
    let rssPeakKb = 0;
    const sampler = setInterval(() => {
      const s = procStatus(apiPid);
      if (s) rssPeakKb = Math.max(rssPeakKb, s.rssKb);
    }, 200);

    log(`mix: ${Math.round((1 - opts.postRatio) * 100)}% GET …/instructions, ${Math.round(opts.postRatio * 100)}% POST …/instructions with a ${fmt(replyKb, 1)} KB inventory reply, random host per request`);
    if (opts.warmup > 0) {
      log(`warming up for ${opts.warmup} s`);
      await runCannon(opts.warmup, false);
    }
    if (opts.pgStats) await pgQuery("select pg_stat_statements_reset(), pg_stat_reset(), pg_stat_reset_shared('wal')");

    // ---- phase 1: saturation
    log(`saturation: autocannon, ${opts.connections} connections, ${opts.duration} s`);
    const fromUs = Number(process.hrtime.bigint() / 1000n);
    const s0 = snap();
    const sat = await runCannon(opts.duration, true);
    const s1 = snap();
    const toUs = Number(process.hrtime.bigint() / 1000n);
    const satCpu = cpuShare(s0, s1);
    let pgTop: Array<{ calls: number; total_ms: number; mean_ms: number; query: string }> = [];
    let pgTables: Array<{ relname: string; n_tup_upd: number; n_tup_hot_upd: number; n_dead_tup: number; autovacuums: number }> = [];
    let pgWal: { wal_records: number; wal_fpi: number; wal_bytes: number; wal_sync: number } | undefined;
    if (opts.pgStats) {
      pgTables = (
        await pgQuery(
          `select relname, n_tup_upd::int, n_tup_hot_upd::int, n_dead_tup::int, autovacuum_count::int as autovacuums
             from pg_stat_user_tables where relname in ('hosts', 'host_steps', 'infra_envs', 'clusters', 'events') order by n_tup_upd desc`,
        )
      ).rows;
      pgWal = (await pgQuery('select wal_records::bigint::float8 as wal_records, wal_fpi::bigint::float8 as wal_fpi, wal_bytes::float8 as wal_bytes, wal_sync::bigint::float8 as wal_sync from pg_stat_wal')).rows[0];
      pgTop = (
        await pgQuery(
          `select calls::int as calls, total_exec_time as total_ms, mean_exec_time as mean_ms, regexp_replace(query, '\\s+', ' ', 'g') as query
             from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
             order by total_exec_time desc limit 12`,
        )
      ).rows;
    }

    // ---- phase 2: the target rate, open loop
    let target: OpenLoopResult | undefined;
    let targetCpu: CpuShare | undefined;
    if (opts.rate > 0) {
      log(`target rate: open loop, ${fmt(opts.rate)} req/s for ${opts.duration} s (up to ${opts.maxSockets} connections)`);
      await sleep(1000);
      const o0 = snap();
      target = await openLoop(port, opts.rate, opts.duration, opts.maxSockets, nextRequest);
      targetCpu = cpuShare(o0, snap());
    }
    clearInterval(sampler);
    const rssEnd = procStatus(apiPid);
    rssPeakKb = Math.max(rssPeakKb, rssEnd?.rssKb ?? 0);

    // ---- report
    const rps = sat.requests.total / sat.duration;
    const satAll: Percentiles = { count: sat.requests.total, p50: sat.latency.p50, p90: sat.latency.p90, p99: sat.latency.p99, max: sat.latency.max };
    const satByKind = Object.fromEntries(Object.entries(acByKind).map(([k, xs]) => [k, percentiles(xs)]));
    const codes = (c: Record<string, number>) => Object.entries(c).map(([code, n]) => `${code}: ${fmt(n)}`).join(', ') || 'none';
    const achieved = target ? target.answeredPerSecond : 0;
    const rateOk = !target || (target.skipped === 0 && achieved >= 0.98 * opts.rate);
    const clean = sat.errors === 0 && sat.timeouts === 0 && sat.non2xx === 0 && (!target || (target.errors === 0 && target.timeouts === 0 && target.non2xx === 0));
    const targetP99 = target?.all.p99;
    const met = rps >= TARGET_RPS && targetP99 !== undefined && targetP99 < TARGET_P99_MS && rateOk && clean;

    log('');
    log(`agent-api bench: ${fmt(opts.hosts)} hosts in ${fmt(clusterCount)} cluster(s), one API process (pid ${apiPid}), node ${process.version}, ${os.cpus().length} CPUs`);
    log(`  set-up        hosts registered and inventories posted in ${fmt(registerSeconds, 1)} s; host statuses: ${statuses.map((s) => `${s.status} ${fmt(s.n)}`).join(', ')}`);
    log(`saturation (autocannon, ${opts.connections} connections, ${fmt(sat.duration, 1)} s after a ${opts.warmup} s warm-up)`);
    log(`  requests/s    ${fmt(rps)}   (${fmt(sat.requests.total)} completed)`);
    log(`  latency       ${latencyLine(satAll)}`);
    for (const k of ['GET', 'POST']) if (satByKind[k]!.count) log(`    ${k.padEnd(4)} ${fmt(satByKind[k]!.count).padStart(8)}   ${latencyLine(satByKind[k]!)}`);
    log(`  errors        ${sat.errors} errors, ${sat.timeouts} timeouts, ${sat.non2xx} non-2xx   (status ${codes(Object.fromEntries(Object.entries(sat.statusCodeStats).map(([c, v]) => [c, v.count])))})`);
    log(`  CPU (cores)   ${cpuLine(satCpu)}`);
    if (target && targetCpu) {
      log(`target rate (open loop, ${fmt(opts.rate)} req/s offered for ${opts.duration} s; latency from each request's due time)`);
      log(`  requests/s    ${fmt(achieved)} answered   (${fmt(target.completed)} of ${fmt(target.scheduled)} due; most in flight ${fmt(target.maxInFlight)}${target.skipped ? `; ${fmt(target.skipped)} not sent: the API fell too far behind` : ''})`);
      log(`  latency       ${latencyLine(target.all)}`);
      for (const k of ['GET', 'POST']) if (target.byKind[k]!.count) log(`    ${k.padEnd(4)} ${fmt(target.byKind[k]!.count).padStart(8)}   ${latencyLine(target.byKind[k]!)}`);
      log(`  errors        ${target.errors} errors, ${target.timeouts} timeouts, ${target.non2xx} non-2xx   (status ${codes(target.statusCodes)})`);
      log(`  CPU (cores)   ${cpuLine(targetCpu)}`);
    }
    log(`API RSS         idle ${mb(rssIdle?.rssKb ?? 0)}, after set-up ${mb(rssAfterSetup?.rssKb ?? 0)}, peak under load ${mb(rssPeakKb)}, at end ${mb(rssEnd?.rssKb ?? 0)} (VmHWM ${mb(rssEnd?.hwmKb ?? 0)})`);
    log(
      `target          ${fmt(TARGET_RPS / 1000, 1)}k req/s at p99 < ${TARGET_P99_MS} ms (100,000 hosts at the 60 s poll): saturation ${fmt(rps / TARGET_RPS, 2)}x the rate` +
        (targetP99 !== undefined ? `, p99 ${ms(targetP99)} at ${fmt(opts.rate)} req/s offered` : ', open-loop phase skipped') +
        ` → ${met ? 'MET' : 'MISSED'}`,
    );
    if (apiLogLines > 0) log(`API log         ${apiLogLines} lines at warn or above; last: ${apiLog.slice(-3).join(' | ').slice(0, 600)}`);
    if (opts.pgStats) {
      const execMs = pgTop.reduce((s, r) => s + r.total_ms, 0);
      log(`PostgreSQL      top statements of the saturation phase (executor time ${fmt(execMs / 1000 / sat.duration, 2)} cores):`);
      for (const r of pgTop) log(`  ${fmt(r.calls).padStart(9)} calls  ${fmt(r.mean_ms, 3)} ms mean  ${fmt(r.total_ms).padStart(6)} ms total  ${r.query.slice(0, 160)}`);
      for (const t of pgTables) log(`  table ${t.relname}: ${fmt(t.n_tup_upd)} row updates (${fmt(t.n_tup_upd ? (100 * t.n_tup_hot_upd) / t.n_tup_upd : 0)}% HOT), ${fmt(t.n_dead_tup)} dead rows, ${t.autovacuums} autovacuums`);
      if (pgWal) log(`  WAL: ${fmt(pgWal.wal_bytes / 1024 / 1024 / sat.duration, 1)} MB/s, ${fmt(pgWal.wal_records / sat.duration)} records/s, ${fmt(pgWal.wal_fpi / sat.duration)} full-page images/s, ${fmt(pgWal.wal_sync / sat.duration)} WAL syncs/s`);
    }

    // Stop the API (its CPU profile is written as it exits), then summarise.
    await stopProcess(api, 15_000, 'SIGTERM');
    let profile: ProfileSummary | undefined;
    if (opts.cpuProf) {
      const file = path.join(profDir, profName);
      if (existsSync(file)) {
        profile = summarizeCpuProfile(JSON.parse(readFileSync(file, 'utf8')), { fromUs, toUs }, 30);
        log(`\nCPU profile of the API process, saturation phase only (${path.relative(process.cwd(), file)}):`);
        log(formatSummary(profile));
      } else {
        log(`no CPU profile was written at ${file}`);
      }
    }
    if (opts.json) {
      const out = {
        options: opts,
        hostStatuses: statuses,
        saturation: { requestsPerSecond: rps, completed: sat.requests.total, latencyMs: satAll, byKind: satByKind, errors: sat.errors, timeouts: sat.timeouts, non2xx: sat.non2xx, cpuCores: satCpu },
        targetRate: target && { offered: opts.rate, ...target, cpuCores: targetCpu },
        rssKb: { idle: rssIdle?.rssKb, afterSetup: rssAfterSetup?.rssKb, peak: rssPeakKb, end: rssEnd?.rssKb, hwm: rssEnd?.hwmKb },
        target: { requestsPerSecond: TARGET_RPS, p99Ms: TARGET_P99_MS, ratio: rps / TARGET_RPS, met },
        pgTop,
        pgTables,
        pgWal,
        profile,
      };
      await fs.writeFile(opts.json, JSON.stringify(out, null, 2) + '\n');
    }
  } finally {
    await cleanup();
    clearTimeout(watchdog);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`agent-api bench failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
