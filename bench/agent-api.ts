/**
 * Benchmark of the agent API: N registered hosts polling one API process.
 *
 *   npm run bench:agent-api -- [--hosts 5000] [--duration 20] [--warmup 5] [--connections 50]
 *                              [--post-ratio 0.1] [--pool-max N] [--cpu-prof] [--pg-stats] [--json FILE]
 *
 * Starts an embedded PostgreSQL in a temporary folder, migrates it, spawns one
 * `landfall api` child process (so its RSS and CPU are its own), creates a
 * cluster and an infra-env, registers the hosts through the agent endpoint and
 * posts each one's inventory (the steady state of a fleet: every host has an
 * inventory stored), then drives the agent mix with autocannon: mostly
 * GET …/instructions (the poll), some POST …/instructions with a ~10 KB
 * inventory reply. Only 127.0.0.1 is ever targeted. See bench/README.md.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, promises as fs, readFileSync, existsSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import { startEmbeddedPostgres, type EmbeddedPg } from '../src/dev/embedded-postgres';
import { freePort, repoRoot, sleep, stopProcess } from '../src/dev/process-utils';
import { createDb } from '../src/db/database';
import { migrateLatest } from '../src/db/migrations';
import { BASE_PATH } from '../src/api/assisted/presenters';
import { inventoryFor } from './inventory';
import { formatSummary, summarizeCpuProfile } from './cpuprofile-summary';

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
  mean: number;
  stddev: number;
  min: number;
  max: number;
  p50: number;
  p90: number;
  p99: number;
  p99_9: number;
  total: number;
}
interface AcResult {
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  resets: number;
  statusCodeStats: Record<string, { count: number }>;
  latency: AcHistogram;
  requests: AcHistogram & { sent: number };
  throughput: AcHistogram;
}
interface AcInstance {
  on(event: 'response', fn: (client: { requestIterator?: { context?: Record<string, unknown> } }, status: number, bytes: number, ms: number) => void): void;
  on(event: 'done', fn: (r: AcResult) => void): void;
  on(event: 'error', fn: (err: Error) => void): void;
  stop(): void;
}
type Autocannon = (opts: Record<string, unknown>, cb: (err: Error | null, result: AcResult) => void) => AcInstance;
const autocannon = require('autocannon') as Autocannon;

// ---- targets from the issue: 100,000 hosts polling every 60 s.
const TARGET_RPS = 1700;
const TARGET_P99_MS = 50;

interface Options {
  hosts: number;
  duration: number;
  warmup: number;
  connections: number;
  postRatio: number;
  registerConcurrency: number;
  poolMax?: number;
  cpuProf: boolean;
  pgStats: boolean;
  json?: string;
}

const USAGE = `usage: node dist/bench/agent-api.js [options]
  --hosts N                 registered hosts (default 5000)
  --duration S              measured seconds (default 20)
  --warmup S                warm-up seconds before measuring (default 5)
  --connections N           concurrent keep-alive connections (default 50)
  --post-ratio R            share of POST inventory replies (default 0.1)
  --register-concurrency N  parallel registrations during set-up (default 32)
  --pool-max N              DATABASE_POOL_MAX of the API process (default: the service default)
  --cpu-prof                profile the API process (node --cpu-prof) and summarise the measured window
  --pg-stats                enable pg_stat_statements and print the top statements of the measured window
  --json FILE               also write the figures as JSON
`;

function parseArgs(argv: string[]): Options {
  const o: Options = { hosts: 5000, duration: 20, warmup: 5, connections: 50, postRatio: 0.1, registerConcurrency: 32, cpuProf: false, pgStats: false };
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
      case '--duration': o.duration = num(a, next(), 1, 3600); break;
      case '--warmup': o.warmup = num(a, next(), 0, 600); break;
      case '--connections': o.connections = Math.floor(num(a, next(), 1, 2000)); break;
      case '--post-ratio': o.postRatio = num(a, next(), 0, 1); break;
      case '--register-concurrency': o.registerConcurrency = Math.floor(num(a, next(), 1, 512)); break;
      case '--pool-max': o.poolMax = Math.floor(num(a, next(), 1, 200)); break;
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

/** utime, stime, cutime, cstime (seconds) and ppid of a process. */
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

// ---- helpers
const mb = (kb: number) => `${(kb / 1024).toFixed(0)} MB`;
const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const percentile = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! : NaN);
const isTty = process.stdout.isTTY === true;

function log(line: string): void {
  process.stdout.write(`${line}\n`);
}

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

function uuid(i: number): string {
  // Deterministic, valid v4-shaped ids so runs are comparable.
  const h = i.toString(16).padStart(12, '0');
  return `b0000000-0000-4000-8000-${h}`;
}

// ---- the run
async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const root = repoRoot();
  const cli = path.join(root, 'dist', 'src', 'cli', 'main.js');
  if (!existsSync(cli)) throw new Error(`${cli} is missing: build first (npm run bench:agent-api does)`);

  // Bounded in time whatever happens: set-up, registration, warm-up, measurement, shutdown.
  const budgetMs = 120_000 + opts.hosts * 30 + (opts.warmup + opts.duration) * 1000 + 60_000;
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
    // PostgreSQL
    // The data folder sits directly in the temporary folder: as root, PostgreSQL runs as `postgres` and needs only its parent opened up.
    const pgDir = path.join(work, 'pgdata');
    pg = await startEmbeddedPostgres({ dir: pgDir, port: await freePort(), database: 'landfall_bench' });
    if (opts.pgStats) {
      const c = new PgClient({ connectionString: pg.url });
      await c.connect();
      await c.query("alter system set shared_preload_libraries = 'pg_stat_statements'");
      await c.end();
      await pg.stop();
      await pg.start();
      const c2 = new PgClient({ connectionString: pg.url });
      await c2.connect();
      await c2.query('create extension if not exists pg_stat_statements');
      await c2.end();
    }
    const postmasterPid = Number(readFileSync(path.join(pgDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const db = createDb(pg.url, 2);
    await migrateLatest(db);
    await db.destroy();

    // The API, as its own process
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

    // Cluster, infra-env, hosts
    const v2 = `${base}${BASE_PATH}/v2`;
    const pullSecret = JSON.stringify({ auths: { 'registry.example.com': { auth: 'YmVuY2g6YmVuY2g=' } } });
    const sshKey = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx4l8jTj2tUiX4lUzTnI6FvR2d1eI8kXoW7hSg2gq1m bench@landfall';
    const cluster = await expectStatus<{ id: string }>(
      'create cluster',
      jsonCall('POST', `${v2}/clusters`, { name: 'bench', openshift_version: '1.31', pull_secret: pullSecret, base_dns_domain: 'example.com', ssh_public_key: sshKey }),
      201,
    );
    const infraEnv = await expectStatus<{ id: string }>(
      'create infra-env',
      jsonCall('POST', `${v2}/infra-envs`, { name: 'bench-ie', pull_secret: pullSecret, cluster_id: cluster.id, ssh_authorized_key: sshKey, image_type: 'minimal-iso' }),
      201,
    );
    const ie = infraEnv.id;
    const hostIds = Array.from({ length: opts.hosts }, (_, i) => uuid(i));
    const hostPath = (id: string) => `${BASE_PATH}/v2/infra-envs/${ie}/hosts/${id}/instructions`;
    const replyBody = (i: number) =>
      JSON.stringify({ step_type: 'inventory', step_id: `inventory-${(i & 0xffffffff).toString(16).padStart(8, '0')}`, exit_code: 0, output: inventoryFor(`worker-${String(i).padStart(6, '0')}`, i) });

    const t0 = Date.now();
    let done = 0;
    let lastPrint = 0;
    const progress = (final = false) => {
      const now = Date.now();
      if (!final && now - lastPrint < (isTty ? 200 : 5000)) return;
      lastPrint = now;
      const line = `registering hosts and posting their inventory: ${done}/${opts.hosts} (${fmt(done / Math.max((now - t0) / 1000, 0.001))}/s)`;
      if (isTty) process.stdout.write(`\r${line}${final ? '\n' : ''}`);
      else log(line);
    };
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(opts.registerConcurrency, opts.hosts) }, async () => {
        while (next < opts.hosts) {
          const i = next++;
          const id = hostIds[i]!;
          await expectStatus(`register host ${i}`, jsonCall('POST', `${v2}/infra-envs/${ie}/hosts`, { host_id: id, discovery_agent_version: 'bench-agent:1.0' }), 201);
          const res = await fetch(`${base}${hostPath(id)}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: replyBody(i) });
          await res.arrayBuffer();
          if (res.status !== 204) throw new Error(`inventory reply of host ${i}: HTTP ${res.status}`);
          done++;
          progress();
        }
      }),
    );
    progress(true);
    const registerSeconds = (Date.now() - t0) / 1000;
    const rssAfterRegister = procStatus(apiPid);

    // The mix. A small pool of distinct ~10 KB replies, so building requests costs the load generator little.
    const replies = Array.from({ length: 64 }, (_, i) => Buffer.from(replyBody(i)));
    const replyBytes = replies.reduce((s, b) => s + b.length, 0) / replies.length;
    const pick = (n: number) => Math.floor(Math.random() * n);
    const request: AcRequest = {
      setupRequest: (req, context) => {
        const id = hostIds[pick(hostIds.length)]!;
        if (Math.random() < opts.postRatio) {
          context.kind = 'POST';
          req.method = 'POST';
          req.path = hostPath(id);
          req.headers = { 'content-type': 'application/json', accept: 'application/json' };
          req.body = replies[pick(replies.length)]!;
        } else {
          context.kind = 'GET';
          req.method = 'GET';
          req.path = `${hostPath(id)}?timestamp=${Math.floor(Date.now() / 1000)}`;
          req.headers = { accept: 'application/json' };
          req.body = Buffer.alloc(0);
        }
        return req;
      },
    };
    const byKind: Record<string, number[]> = { GET: [], POST: [] };
    const runCannon = (seconds: number, record: boolean) =>
      new Promise<AcResult>((resolve, reject) => {
        cannon = autocannon({ url: base, connections: opts.connections, duration: seconds, requests: [request], timeout: 10 }, (err, result) => {
          cannon = undefined;
          if (err) reject(err);
          else resolve(result);
        });
        if (record) {
          cannon.on('response', (client, _status, _bytes, ms) => {
            const kind = client.requestIterator?.context?.kind;
            if (typeof kind === 'string') byKind[kind]?.push(ms);
          });
        }
      });

    if (opts.warmup > 0) {
      log(`warming up for ${opts.warmup} s`);
      await runCannon(opts.warmup, false);
    }
    if (opts.pgStats) {
      const c = new PgClient({ connectionString: pg.url });
      await c.connect();
      await c.query('select pg_stat_statements_reset()');
      await c.end();
    }

    // Measure
    log(`measuring for ${opts.duration} s: ${opts.connections} connections, ${Math.round((1 - opts.postRatio) * 100)}% GET instructions / ${Math.round(opts.postRatio * 100)}% POST inventory reply (${fmt(replyBytes / 1024, 1)} KB)`);
    const snap = (): CpuSnapshot => {
      const u = process.cpuUsage();
      return { api: procTimes(apiPid)?.self ?? 0, pg: postgresCpuSeconds(postmasterPid), bench: (u.user + u.system) / 1e6, machine: machineCpu(), wall: performance.now() / 1000 };
    };
    let rssPeakKb = 0;
    const sampler = setInterval(() => {
      const s = procStatus(apiPid);
      if (s) rssPeakKb = Math.max(rssPeakKb, s.rssKb);
    }, 200);
    const fromUs = Number(process.hrtime.bigint() / 1000n);
    const before = snap();
    const result = await runCannon(opts.duration, true);
    const after = snap();
    const toUs = Number(process.hrtime.bigint() / 1000n);
    clearInterval(sampler);
    const rssEnd = procStatus(apiPid);
    rssPeakKb = Math.max(rssPeakKb, rssEnd?.rssKb ?? 0);

    let pgTop: Array<{ calls: number; total_ms: number; mean_ms: number; query: string }> = [];
    if (opts.pgStats) {
      const c = new PgClient({ connectionString: pg.url });
      await c.connect();
      const r = await c.query(
        `select calls::int as calls, total_exec_time as total_ms, mean_exec_time as mean_ms, regexp_replace(query, '\\s+', ' ', 'g') as query
           from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
           order by total_exec_time desc limit 10`,
      );
      pgTop = r.rows;
      await c.end();
    }

    // Report
    const wall = after.wall - before.wall;
    const cores = (a: number, b: number) => (b - a) / wall;
    const machineBusy = (after.machine.busy - before.machine.busy) / wall;
    const machineCores = (after.machine.total - before.machine.total) / wall;
    const rps = result.requests.average;
    const completed = result.requests.total;
    const p99 = result.latency.p99;
    const statusLine = Object.entries(result.statusCodeStats)
      .map(([code, s]) => `${code}: ${fmt(s.count)}`)
      .join(', ');
    const kindLine = (k: string) => {
      const xs = byKind[k]!.slice().sort((a, b) => a - b);
      return xs.length ? `${k.padEnd(4)} ${fmt(xs.length).padStart(9)} requests   p50 ${fmt(percentile(xs, 50), 1)} ms   p90 ${fmt(percentile(xs, 90), 1)} ms   p99 ${fmt(percentile(xs, 99), 1)} ms   max ${fmt(xs[xs.length - 1]!, 1)} ms` : `${k}: none`;
    };
    const met = rps >= TARGET_RPS && p99 < TARGET_P99_MS && result.errors === 0 && result.non2xx === 0;
    log('');
    log(`agent-api bench: ${fmt(opts.hosts)} hosts, one API process (pid ${apiPid}), ${opts.connections} connections, ${opts.duration} s after a ${opts.warmup} s warm-up, node ${process.version}, ${os.cpus().length} CPUs`);
    log(`  set-up        ${fmt(opts.hosts)} hosts registered with inventory in ${fmt(registerSeconds, 1)} s`);
    log(`  requests/s    ${fmt(rps)}   (${fmt(completed)} completed in ${fmt(result.duration, 1)} s)`);
    log(`  latency       p50 ${result.latency.p50} ms   p90 ${result.latency.p90} ms   p99 ${result.latency.p99} ms   max ${result.latency.max} ms`);
    log(`    ${kindLine('GET')}`);
    log(`    ${kindLine('POST')}`);
    log(`  errors        ${result.errors} errors, ${result.timeouts} timeouts, ${result.non2xx} non-2xx   (status ${statusLine || 'none'})`);
    log(`  API RSS       idle ${mb(rssIdle?.rssKb ?? 0)}, after set-up ${mb(rssAfterRegister?.rssKb ?? 0)}, peak under load ${mb(rssPeakKb)}, at end ${mb(rssEnd?.rssKb ?? 0)} (VmHWM ${mb(rssEnd?.hwmKb ?? 0)})`);
    log(
      `  CPU (cores)   API ${fmt(cores(before.api, after.api), 2)}   PostgreSQL ${fmt(cores(before.pg, after.pg), 2)}   load generator ${fmt(cores(before.bench, after.bench), 2)}   other processes ${fmt(Math.max(0, machineBusy - cores(before.api, after.api) - cores(before.pg, after.pg) - cores(before.bench, after.bench)), 2)}   machine busy ${fmt(machineBusy, 2)} of ${fmt(machineCores, 1)}`,
    );
    log(
      `  target        ${fmt(TARGET_RPS / 1000, 1)}k req/s at p99 < ${TARGET_P99_MS} ms (100,000 hosts at the 60 s poll): ${fmt(rps / TARGET_RPS, 2)}x the rate, p99 ${p99} ms → ${met ? 'MET' : 'MISSED'}`,
    );
    log(`  capacity      ≈ ${fmt(Math.floor((rps * 60) / 1000) * 1000)} hosts at the 60 s poll (at this mix and latency)`);
    if (apiLogLines > 0) log(`  API log       ${apiLogLines} lines at warn or above; last: ${apiLog.slice(-3).join(' | ').slice(0, 600)}`);
    if (opts.pgStats) {
      const execMs = pgTop.reduce((s, r) => s + r.total_ms, 0);
      log(`  PostgreSQL    top statements in the measured window (executor time ${fmt(execMs / 1000 / wall, 2)} cores of ${fmt(wall, 1)} s):`);
      for (const r of pgTop) log(`    ${fmt(r.calls).padStart(9)} calls  ${fmt(r.mean_ms, 3)} ms mean  ${fmt(r.total_ms)} ms total  ${r.query.slice(0, 150)}`);
    }

    // Stop the API (its CPU profile is written as it exits), then summarise.
    await stopProcess(api, 15_000, 'SIGTERM');
    let profileSummary: ReturnType<typeof summarizeCpuProfile> | undefined;
    if (opts.cpuProf) {
      const file = path.join(profDir, profName);
      if (existsSync(file)) {
        profileSummary = summarizeCpuProfile(JSON.parse(readFileSync(file, 'utf8')), { fromUs, toUs }, 30);
        log(`\nCPU profile of the API process, measured window only (${path.relative(process.cwd(), file)}):`);
        log(formatSummary(profileSummary));
      } else {
        log(`no CPU profile was written at ${file}`);
      }
    }
    if (opts.json) {
      await fs.writeFile(
        opts.json,
        JSON.stringify(
          {
            options: opts,
            requestsPerSecond: rps,
            completed,
            latencyMs: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max },
            byKind: Object.fromEntries(Object.entries(byKind).map(([k, xs]) => { const s = xs.slice().sort((a, b) => a - b); return [k, { count: s.length, p50: percentile(s, 50), p90: percentile(s, 90), p99: percentile(s, 99) }]; })),
            errors: result.errors,
            timeouts: result.timeouts,
            non2xx: result.non2xx,
            statusCodes: result.statusCodeStats,
            rssKb: { idle: rssIdle?.rssKb, afterSetup: rssAfterRegister?.rssKb, peak: rssPeakKb, end: rssEnd?.rssKb, hwm: rssEnd?.hwmKb },
            cpuCores: { api: cores(before.api, after.api), postgres: cores(before.pg, after.pg), loadGenerator: cores(before.bench, after.bench), machineBusy },
            targetRatio: rps / TARGET_RPS,
            met,
            pgTop,
            profile: profileSummary,
          },
          null,
          2,
        ) + '\n',
      );
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
