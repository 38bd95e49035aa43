/**
 * What bench/agent-api.ts and bench/soak.ts share: an embedded PostgreSQL and a `landfall api`
 * (N processes) on 127.0.0.1, a fleet of registered hosts with inventories, the load generator
 * child process (bench/agent-load.ts), CPU and memory snapshots of every party, the freshness
 * probe (agent report → validations stored), and the result file's name.
 */
import { fork, spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, promises as fs, readFileSync, existsSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import { startEmbeddedPostgres, type EmbeddedPg } from '../src/dev/embedded-postgres';
import { freePort, processAlive, repoRoot, sleep, stopProcess } from '../src/dev/process-utils';
import { createDb } from '../src/db/database';
import { migrateLatest } from '../src/db/migrations';
import { BASE_PATH } from '../src/api/assisted/presenters';
import { inventoryFor } from './inventory';
import { hostName, type ClosedCommand, type ClosedResult, type LoadMessage, type OpenCommand, type OpenResult } from './agent-load';
import { percentiles, type CpuSnapshot, type Percentiles } from './agent-stats';
import { histogramsBetween, parseHistograms, type ServiceHistogram } from './fleet-gauges';
import { machineCpu, postgresCpuSecondsByKind, processCpuSeconds, treeCpuSeconds, treeCpuSecondsByProcess, treePids, treeRssKb } from './proc-stats';

export const fmt = (n: number, digits = 0): string => (Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : 'n/a');
export const ms = (v: number): string => `${fmt(v, v < 10 ? 1 : 0)} ms`;
export const mb = (kb: number): string => `${fmt(kb / 1024)} MB`;
export function log(line: string): void {
  process.stdout.write(`${line}\n`);
}

export interface StackOptions {
  /** API_PROCESSES of `landfall api`; undefined leaves the service's default. */
  processes?: number;
  poolMax?: number;
  nodeOptions?: string;
  /** More environment of the API processes (a setting under study, e.g. API_REFRESHER=false). */
  apiEnv?: Record<string, string>;
  /** Every API process writes a CPU profile here (node --cpu-prof). */
  cpuProfDir?: string;
  pgStats?: boolean;
  /** Statements run on the database after its migrations (a PostgreSQL setting under study). */
  pgSql?: string[];
  /** PostgreSQL settings (ALTER SYSTEM, then a restart: also those only a restart applies, e.g. shared_buffers). */
  pgConf?: Record<string, string>;
}

export interface Stack {
  work: string;
  pg: EmbeddedPg;
  postmasterPid: number;
  api: ChildProcess;
  apiPid: number;
  port: number;
  base: string;
  pgQuery: (sql: string, params?: unknown[]) => Promise<{ rows: Array<Record<string, unknown>> }>;
  apiLog: { lines: number; last: string[] };
  stop: () => Promise<void>;
}

/**
 * PostgreSQL in a temporary folder, migrated, and `landfall api` as a child process
 * (its primary and any workers form the "API" process tree), answering /healthz.
 * `stop` stops both and removes the folder; it is idempotent.
 */
export async function startStack(o: StackOptions): Promise<Stack> {
  const root = repoRoot();
  const cli = path.join(root, 'dist', 'src', 'cli', 'main.js');
  if (!existsSync(cli)) throw new Error(`${cli} is missing: build first (npm run build)`);
  const work = mkdtempSync(path.join(os.tmpdir(), 'landfall-bench-'));
  let pg: EmbeddedPg | undefined;
  let api: ChildProcess | undefined;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      if (api?.pid) {
        // node:cluster workers normally leave with their primary; any that does not is ours to end.
        const pids = treePids(api.pid).slice(1);
        await stopProcess(api, 15_000, 'SIGTERM');
        await sleep(200);
        for (const pid of pids) if (processAlive(pid)) process.kill(pid, 'SIGKILL');
      }
      if (pg) await pg.stop().catch(() => undefined);
      await fs.rm(work, { recursive: true, force: true }).catch(() => undefined);
    })());
  try {
    // The data folder sits directly in the temporary folder: as root, PostgreSQL runs as
    // `postgres`, and startEmbeddedPostgres opens up only the data folder's parent.
    const pgDir = path.join(work, 'pgdata');
    pg = await startEmbeddedPostgres({ dir: pgDir, port: await freePort(), database: 'landfall_bench' });
    const pgUrl = pg.url;
    const pgQuery = async (sql: string, params?: unknown[]) => {
      const c = new PgClient({ connectionString: pgUrl });
      await c.connect();
      try {
        return await c.query(sql, params);
      } finally {
        await c.end();
      }
    };
    const conf = Object.entries(o.pgConf ?? {});
    if (o.pgStats || conf.length) {
      if (o.pgStats) await pgQuery("alter system set shared_preload_libraries = 'pg_stat_statements'");
      for (const [k, v] of conf) await pgQuery(`alter system set ${k.replace(/[^a-z_.]/g, '')} = '${v.replace(/'/g, "''")}'`);
      await pg.stop();
      await pg.start();
      if (o.pgStats) await pgQuery('create extension if not exists pg_stat_statements');
    }
    const postmasterPid = Number(readFileSync(path.join(pgDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const db = createDb(pg.url, 2);
    await migrateLatest(db);
    await db.destroy();
    for (const sql of o.pgSql ?? []) await pgQuery(sql);

    const port = await freePort();
    const nodeOptions = o.nodeOptions ?? '';
    // --cpu-prof is refused in NODE_OPTIONS; node:cluster workers inherit the primary's execArgv, so each writes its own profile.
    const nodeArgs = o.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', o.cpuProfDir] : [];
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
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
      ...(o.processes !== undefined ? { API_PROCESSES: String(o.processes) } : {}),
      ...(o.poolMax !== undefined ? { DATABASE_POOL_MAX: String(o.poolMax) } : {}),
      ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
      ...o.apiEnv,
    };
    api = spawn(process.execPath, [...nodeArgs, cli, 'api'], { env, stdio: ['ignore', 'pipe', 'pipe'], cwd: root });
    const apiLog = { lines: 0, last: [] as string[] };
    const keep = (d: Buffer) => {
      for (const line of d.toString().split('\n')) {
        if (!line.trim()) continue;
        apiLog.lines++;
        apiLog.last.push(line);
        if (apiLog.last.length > 10) apiLog.last.shift();
      }
    };
    api.stdout!.on('data', keep);
    api.stderr!.on('data', keep);
    const base = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (api.exitCode !== null) throw new Error(`the API exited with code ${api.exitCode}: ${apiLog.last.join(' | ')}`);
      if (await fetch(`${base}/healthz`).then((r) => r.ok, () => false)) break;
      if (Date.now() > deadline) throw new Error('the API did not answer /healthz within 60 s');
      await sleep(100);
    }
    return { work, pg, postmasterPid, api, apiPid: api.pid!, port, base, pgQuery, apiLog, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

// ---- the fleet
export interface Fleet {
  clusterCount: number;
  infraEnvIds: string[];
  hostIds: string[];
  stepsPaths: string[];
  registerSeconds: number;
  statuses: Array<{ status: string; n: number }>;
}

/** Deterministic, valid v4-shaped host ids, so runs are comparable. */
export const hostUuid = (i: number): string => `b0000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;

async function jsonCall(method: string, url: string, body?: unknown, signal?: AbortSignal): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { method, headers: body !== undefined ? { 'content-type': 'application/json' } : {}, body: body !== undefined ? (typeof body === 'string' ? body : JSON.stringify(body)) : undefined, signal });
  return { status: res.status, text: await res.text() };
}
async function expect(what: string, p: Promise<{ status: number; text: string }>, status: number): Promise<string> {
  const r = await p;
  if (r.status !== status) throw new Error(`${what}: HTTP ${r.status} (expected ${status}): ${r.text.slice(0, 300)}`);
  return r.text;
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

/**
 * Clusters and infra-envs through the API, then every host registered through the agent
 * endpoint, polled once, and its inventory posted (bench/inventory.ts, 512 GiB of memory), as an agent does:
 * the steady state of a booted fleet.
 */
export async function populate(stack: Stack, hosts: number, hostsPerCluster: number, concurrency: number, analyze = true): Promise<Fleet> {
  const v2 = `${stack.base}${BASE_PATH}/v2`;
  const pullSecret = JSON.stringify({ auths: { 'registry.example.com': { auth: 'YmVuY2g6YmVuY2g=' } } });
  const sshKey = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx4l8jTj2tUiX4lUzTnI6FvR2d1eI8kXoW7hSg2gq1m bench@landfall';
  const clusterCount = Math.ceil(hosts / hostsPerCluster);
  const infraEnvIds: string[] = new Array<string>(clusterCount);
  await forEachConcurrently(clusterCount, 8, async (k) => {
    const cluster = JSON.parse(await expect('create cluster', jsonCall('POST', `${v2}/clusters`, { name: `bench-${k}`, openshift_version: '1.31', pull_secret: pullSecret, base_dns_domain: 'example.com', ssh_public_key: sshKey }), 201)) as { id: string };
    const ie = JSON.parse(
      await expect('create infra-env', jsonCall('POST', `${v2}/infra-envs`, { name: `bench-${k}-ie`, pull_secret: pullSecret, cluster_id: cluster.id, ssh_authorized_key: sshKey, image_type: 'minimal-iso' }), 201),
    ) as { id: string };
    infraEnvIds[k] = ie.id;
  });
  const hostIds = Array.from({ length: hosts }, (_, i) => hostUuid(i));
  const stepsPaths = hostIds.map((id, i) => `${BASE_PATH}/v2/infra-envs/${infraEnvIds[Math.floor(i / hostsPerCluster)]}/hosts/${id}/instructions`);
  const t0 = Date.now();
  let registered = 0;
  let lastPrint = t0;
  await forEachConcurrently(hosts, concurrency, async (i) => {
    const ie = infraEnvIds[Math.floor(i / hostsPerCluster)]!;
    await expect(`register host ${i}`, jsonCall('POST', `${v2}/infra-envs/${ie}/hosts`, { host_id: hostIds[i], discovery_agent_version: 'bench-agent:1.0' }), 201);
    // Its first poll, as an agent polls right after registering (the inventory step comes from it): the host has
    // its clock reading before the window. Without it, every host's first poll in the window flipped its
    // time-synced validation, a write per host that a booted fleet never makes again.
    await expect(`first poll of host ${i}`, jsonCall('GET', `${stack.base}${stepsPaths[i]}?timestamp=${Math.floor(Date.now() / 1000)}`), 200);
    const reply = JSON.stringify({ step_type: 'inventory', step_id: 'inventory-00000000', exit_code: 0, output: inventoryFor(hostName(i), i) });
    await expect(`inventory reply of host ${i}`, jsonCall('POST', `${stack.base}${stepsPaths[i]}`, reply), 204);
    registered++;
    if (Date.now() - lastPrint > 10_000) {
      lastPrint = Date.now();
      log(`  registered ${fmt(registered)}/${fmt(hosts)} hosts (${fmt(registered / ((lastPrint - t0) / 1000))}/s)`);
    }
  });
  const registerSeconds = (Date.now() - t0) / 1000;
  // Registrations and inventories may be refreshed after the agent was answered (coalesced refresh): measure the steady state.
  const drained = Date.now();
  while (((await refreshBacklog(stack)) ?? 0) > 0 && Date.now() - drained < 300_000) await sleep(500);
  // The tables' statistics, as a running service has them: autovacuum analyzes a table after 10 % of it changed, but
  // on a database created after PostgreSQL started (as here, seconds before set-up) its first round comes one naptime
  // late (measured: 120 s, against 60 s after a restart), after the measured window. Until then every statement the
  // API prepared while the tables were nearly empty keeps the generic plan made then: at 5,000 hosts, 4,308 sequential
  // scans of hosts (20 million rows read) in one window without this, 420 with it (2026-11-29, bench/README.md).
  if (analyze) await stack.pgQuery('analyze');
  const statuses = (await stack.pgQuery('select status, count(*)::int as n from hosts group by status order by n desc')).rows as Array<{ status: string; n: number }>;
  return { clusterCount, infraEnvIds, hostIds, stepsPaths, registerSeconds, statuses };
}

/** Targets (clusters, unbound hosts) waiting for a coalesced refresh; undefined on a schema without the queue. */
export async function refreshBacklog(stack: Stack): Promise<number | undefined> {
  try {
    return Number((await stack.pgQuery('select count(distinct target)::int as n from refresh_requests')).rows[0]!.n);
  } catch {
    return undefined;
  }
}

/** A table cell: one way of reading freshness (stored, or through the API) as its p99, and its sample count if asked; 'n/a' without samples. */
export function freshnessP99Cell(f: { samples: number; latencyMs: { p99: number } } | undefined, withCount = false): string {
  return f && f.samples ? `${ms(f.latencyMs.p99)}${withCount ? ` (n=${f.samples})` : ''}` : 'n/a';
}

/** The refreshes as the service counts them (its /metrics histograms, summed over the API's processes), by who ran them. */
export interface RefreshReading {
  ages: Record<string, ServiceHistogram>;
  transactions: Record<string, ServiceHistogram>;
  /** The API processes' collection pauses, by "role/kind" (empty from a tree without the metric). */
  gc: Record<string, ServiceHistogram>;
}

/** The service's refresh histograms now; undefined when /metrics does not answer or has none (an older tree). */
export async function readRefreshMetrics(stack: Stack): Promise<RefreshReading | undefined> {
  try {
    const r = await fetch(`${stack.base}/metrics`, { signal: AbortSignal.timeout(30_000) });
    if (!r.ok) return undefined;
    const text = await r.text();
    const ages = parseHistograms(text, 'landfall_refresh_request_age_seconds', 'path');
    return Object.keys(ages).length
      ? { ages, transactions: parseHistograms(text, 'landfall_refresh_transaction_duration_seconds', 'path'), gc: parseHistograms(text, 'landfall_process_gc_pause_seconds', ['role', 'kind']) }
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A window's refreshes by who ran them: transactions (count, p50/p99 as
 * bucket bounds) and refreshed targets with their request's age at the
 * commit (the service's own report → validations stored; share within 200 ms).
 */
export function refreshesBetween(before: RefreshReading, after: RefreshReading, seconds: number) {
  const ages = histogramsBetween(before.ages, after.ages, 0.2);
  const tx = histogramsBetween(before.transactions, after.transactions, 0.05);
  return Object.fromEntries(Object.entries(ages).map(([path, a]) => [path, { seconds, targets: a, transactions: tx[path] }]));
}

/** A pause this long or longer is counted apart: a refresh or a poll in flight waits it out. */
const LONG_GC_S = 0.05;

/**
 * A window's collection pauses, by process role (summed over the processes of
 * a role): how many of each kind a second, their total as a share of the
 * window (of one process's time: two serving processes pausing 3 % each show
 * 6 %), how many were 50 ms or longer, and the longest as its bucket bound.
 */
export function gcBetween(before: RefreshReading, after: RefreshReading, seconds: number) {
  const out: Record<string, { perSecond: Record<string, number>; pausedShare: number; longCount: number; longestAtMostMs: number }> = {};
  for (const [key, w] of Object.entries(histogramsBetween(before.gc, after.gc, LONG_GC_S))) {
    if (w.count <= 0) continue;
    const [role, kind] = key.split('/') as [string, string];
    const r = (out[role] ??= { perSecond: {}, pausedShare: 0, longCount: 0, longestAtMostMs: 0 });
    r.perSecond[kind] = w.count / seconds;
    r.pausedShare += w.sumS / seconds;
    r.longCount += w.count - (w.withinCount ?? 0);
    r.longestAtMostMs = Math.max(r.longestAtMostMs, w.maxAtMostMs);
  }
  return out;
}

// ---- the load generator child
export class Generator {
  private readonly child: ChildProcess;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (r: unknown) => void; reject: (e: Error) => void }>();
  private readonly marks = new Map<number, () => void>();
  private ready: Promise<void>;

  constructor(port: number, stepsPaths: string[], postRatio: number) {
    const file = path.join(__dirname, 'agent-load.js');
    this.child = fork(file, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'advanced' });
    let readyResolve!: () => void;
    let readyReject!: (e: Error) => void;
    this.ready = new Promise((res, rej) => {
      readyResolve = res;
      readyReject = rej;
    });
    this.child.on('message', (m: LoadMessage) => {
      if (m.type === 'ready') readyResolve();
      else if (m.type === 'mark') this.marks.get(m.id)?.();
      else if (m.type === 'failed') {
        const w = m.id !== undefined ? this.waiting.get(m.id) : undefined;
        if (w) {
          this.waiting.delete(m.id!);
          w.reject(new Error(`load generator: ${m.error}`));
        } else readyReject(new Error(`load generator: ${m.error}`));
      } else {
        const w = this.waiting.get(m.id);
        this.waiting.delete(m.id);
        this.marks.delete(m.id);
        w?.resolve(m.result);
      }
    });
    this.child.on('exit', (code) => {
      const e = new Error(`the load generator exited (code ${code})`);
      readyReject(e);
      for (const w of this.waiting.values()) w.reject(e);
      this.waiting.clear();
    });
    this.child.send({ type: 'init', port, stepsPaths, postRatio });
  }

  get pid(): number {
    return this.child.pid!;
  }

  private async ask<T>(cmd: Omit<OpenCommand, 'id'> | Omit<ClosedCommand, 'id'>, onMark?: () => void): Promise<T> {
    await this.ready;
    const id = this.nextId++;
    if (onMark) this.marks.set(id, onMark);
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (r: unknown) => void, reject });
      this.child.send({ ...cmd, id });
    });
  }

  /**
   * `seconds` of open-loop load, measured; with `lead`, that many seconds of
   * it first, unmeasured, and `onMark` called as the measured part starts.
   */
  open(rate: number, seconds: number, maxSockets: number, o: { windowSeconds?: number; leadSeconds?: number; onMark?: () => void } = {}): Promise<OpenResult> {
    return this.ask<OpenResult>({ type: 'open', rate, seconds, maxSockets, windowSeconds: o.windowSeconds, leadSeconds: o.leadSeconds }, o.onMark);
  }

  closed(connections: number, seconds: number): Promise<ClosedResult> {
    return this.ask<ClosedResult>({ type: 'closed', connections, seconds });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    if (this.child.connected) this.child.send({ type: 'stop' });
    await stopProcess(this.child, 5000, 'SIGTERM');
  }
}

// ---- CPU and memory of every party
export function cpuSnapshot(stack: Stack, generatorPid: number): CpuSnapshot {
  const u = process.cpuUsage();
  const m = machineCpu();
  return {
    wall: performance.now() / 1000,
    api: treeCpuSeconds(stack.apiPid),
    apiProcesses: treeCpuSecondsByProcess(stack.apiPid),
    postgres: treeCpuSeconds(stack.postmasterPid),
    postgresKinds: postgresCpuSecondsByKind(stack.postmasterPid),
    generator: processCpuSeconds(generatorPid),
    bench: (u.user + u.system) / 1e6,
    machineBusy: m.busy,
    machineTotal: m.total,
  };
}

/** Peak resident memory of the API and PostgreSQL trees, sampled every `everyMs` until stopped. */
export function rssSampler(stack: Stack, everyMs = 1000): { peak: () => { apiKb: number; pgKb: number }; reset: () => void; stop: () => void } {
  let apiKb = 0;
  let pgKb = 0;
  const take = () => {
    apiKb = Math.max(apiKb, treeRssKb(stack.apiPid).kb);
    pgKb = Math.max(pgKb, treeRssKb(stack.postmasterPid).kb);
  };
  take();
  const t = setInterval(take, everyMs);
  return {
    peak: () => ({ apiKb, pgKb }),
    reset: () => {
      apiKb = 0;
      pgKb = 0;
      take();
    },
    stop: () => clearInterval(t),
  };
}

// ---- freshness: agent report → validations stored
/**
 * One slow sample and where its time went: the reply's own POST (`postMs`), how many reads it took to see the flip,
 * and the longest of them (`readMs`; a read through the API settles the cluster, waiting for a refresh in flight).
 */
export interface SlowSample {
  at: number;
  s: number;
  ms: number;
  postMs?: number;
  reads?: number;
  readMs?: number;
}

export interface FreshnessResult {
  samples: number;
  /** Replies the API did not take (non-2xx or transport error), and flips not seen within the bound. */
  failures: number;
  unseen: number;
  latencyMs: Percentiles;
  /** The slowest samples (up to 5, slowest first): when each reply was posted (epoch ms; `s`: seconds into the probe, as the window's seconds) and how long it took to show. */
  slowest?: Array<SlowSample>;
  /**
   * The same flip as a person sees it: every other sample is read through the API (GET of the host, as the UI and
   * the CLI read it), not from PostgreSQL. Such a read settles its cluster's pending refresh first, so this is what
   * a reader is shown; the stored figure above is the service's own refresh, unhelped.
   */
  api: { samples: number; failures: number; unseen: number; latencyMs: Percentiles; slowest?: Array<SlowSample> };
}

/**
 * Samples "agent report → validations visible" while the load runs: every `intervalMs`, a host
 * (the first of each cluster in turn) posts an NTP reply that flips its `ntp-synced` validation,
 * and the time until PostgreSQL's stored validations show the flip is taken, polling the row
 * every `pollMs` for the first 250 ms and every 5 × `pollMs` after. Read from the database, not through a user GET, which may refresh the host
 * itself and so hide how long the service's own refresh took. Every other sample is read through
 * that GET instead (FreshnessResult.api): what a person is shown, the issue's "visible".
 */
export function freshnessProbe(stack: Stack, fleet: Fleet, hostsPerCluster: number, intervalMs = 250, pollMs = 5, boundMs = 10_000): { stop: () => Promise<FreshnessResult> } {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4, timeout: 60_000 });
  const client = new PgClient({ connectionString: stack.pg.url });
  const connected = client.connect();
  /** Per way of reading the flip: the times taken, replies the API did not take, and flips not seen within the bound. */
  const newTally = () => ({ took: [] as number[], at: [] as number[], parts: [] as Array<{ postMs: number; reads: number; readMs: number }>, failures: 0, unseen: 0 });
  const stored = newTally();
  const api = newTally();
  let k = 0;
  let running = true;
  const probeStart = Date.now();
  const statusOf = async (hostId: string, infraEnvId: string) =>
    (
      await client.query({
        name: 'bench-ntp-synced',
        text: `select v->>'status' as status
                 from hosts h, jsonb_each((h.doc->>'validations_info')::jsonb) c, jsonb_array_elements(c.value) v
                where h.id = $1 and h.infra_env_id = $2 and v->>'id' = 'ntp-synced'`,
        values: [hostId, infraEnvId],
      })
    ).rows[0]?.status as string | undefined;
  const post = (p: string, body: string) =>
    new Promise<number>((resolve) => {
      const req = http.request({ host: '127.0.0.1', port: stack.port, method: 'POST', path: p, agent, headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(0));
      });
      req.setTimeout(boundMs, () => req.destroy());
      req.on('error', () => resolve(0));
      req.end(body);
    });
  /** The host's ntp-synced status as the API shows it (GET …/infra-envs/{id}/hosts/{id}); undefined when the read failed. */
  const statusViaApi = async (hostId: string, infraEnvId: string) => {
    const r = await jsonCall('GET', `${stack.base}${BASE_PATH}/v2/infra-envs/${infraEnvId}/hosts/${hostId}`, undefined, AbortSignal.timeout(boundMs)).catch(() => undefined);
    if (r?.status !== 200) return undefined;
    try {
      const info = JSON.parse((JSON.parse(r.text) as { validations_info?: string }).validations_info ?? '{}') as Record<string, Array<{ id: string; status: string }>>;
      return Object.values(info).flat().find((v) => v.id === 'ntp-synced')?.status;
    } catch {
      return undefined;
    }
  };
  const one = async (k: number, viaApi: boolean, tally: typeof stored) => {
    const c = Math.floor(k / 2) % fleet.clusterCount;
    const i = Math.min(c * hostsPerCluster, fleet.hostIds.length - 1);
    const hostId = fleet.hostIds[i]!;
    const infraEnvId = fleet.infraEnvIds[c]!;
    const before = await statusOf(hostId, infraEnvId);
    const want = before === 'success' ? 'failure' : 'success';
    const body = JSON.stringify({ step_type: 'ntp-synchronizer', step_id: `ntp-bench-${k + 1}`, exit_code: 0, output: JSON.stringify({ ntp_sources: [{ source_name: 'ntp.example.com', source_state: want === 'success' ? 'synced' : 'unreachable' }] }) });
    const t0 = performance.now();
    const postedAt = Date.now();
    const status = await post(fleet.stepsPaths[i]!, body);
    if (status < 200 || status >= 300) {
      tally.failures++;
      return;
    }
    const postMs = performance.now() - t0;
    const statusNow = viaApi ? () => statusViaApi(hostId, infraEnvId) : () => statusOf(hostId, infraEnvId);
    let reads = 0;
    let readMs = 0;
    for (;;) {
      const r0 = performance.now();
      const seen = (await statusNow()) === want;
      reads++;
      readMs = Math.max(readMs, performance.now() - r0);
      if (seen) {
        tally.took.push(performance.now() - t0);
        tally.at.push(postedAt);
        tally.parts.push({ postMs, reads, readMs });
        return;
      }
      if (performance.now() - t0 > boundMs) {
        tally.unseen++;
        return;
      }
      // Finely while the answer could still meet the 200 ms target, then coarser: the polls are load on PostgreSQL too.
      // Through the API always coarsely: each read there is a whole GET, which settles the cluster itself.
      await sleep(!viaApi && performance.now() - t0 < 250 ? pollMs : 5 * pollMs);
    }
  };
  const loop = (async () => {
    await connected;
    while (running) {
      const started = performance.now();
      // Every other sample through the API: a read there refreshes what is pending, which would speed up a stored sample.
      const viaApi = k % 2 === 1;
      const tally = viaApi ? api : stored;
      await one(k++, viaApi, tally).catch(() => tally.failures++);
      const rest = intervalMs - (performance.now() - started);
      if (rest > 0 && running) await sleep(rest);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      agent.destroy();
      await client.end().catch(() => undefined);
      const slowest = (t: typeof stored) =>
        t.took
          .map((ms, i) => ({ at: t.at[i]!, s: Math.floor((t.at[i]! - probeStart) / 1000), ms: Math.round(ms), postMs: Math.round(t.parts[i]!.postMs), reads: t.parts[i]!.reads, readMs: Math.round(t.parts[i]!.readMs) }))
          .sort((a, b) => b.ms - a.ms)
          .slice(0, 5);
      const result = (t: typeof stored) => ({ samples: t.took.length, failures: t.failures, unseen: t.unseen, latencyMs: percentiles(t.took), slowest: slowest(t) });
      return { ...result(stored), api: result(api) };
    },
  };
}

// ---- where results go
export function gitCommit(): string {
  try {
    const root = repoRoot();
    const id = execFileSync('git', ['rev-parse', '--short=9', 'HEAD'], { cwd: root }).toString().trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: root }).toString().trim() !== '';
    return dirty ? `${id}-dirty` : id;
  } catch {
    return 'unknown';
  }
}

/** bench/results/<name>-<UTC date and time>-<parts…>-<commit>.json in the checkout. */
export function resultPath(name: string, parts: string[], at: Date, commit: string): string {
  const stamp = at.toISOString().slice(0, 16).replace(/:/g, '').replace('T', '-');
  return path.join(repoRoot(), 'bench', 'results', `${name}-${stamp}-${[...parts, commit].join('-')}.json`);
}

export async function writeResult(file: string, data: unknown): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  await fs.writeFile(file, `${JSON.stringify(data, null, 2)}\n`);
}
