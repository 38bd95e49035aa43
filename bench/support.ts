/** What the lifecycle, fleet and install benchmarks share: flags, a watchdog, a migrated embedded PostgreSQL. */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import { startEmbeddedPostgres, type EmbeddedPg } from '../src/dev/embedded-postgres';
import { freePort, repoRoot, sleep, stopProcess } from '../src/dev/process-utils';
import { createDb } from '../src/db/database';
import { migrateLatest } from '../src/db/migrations';

/** `--name N` from the command line, or the default (checkOptions has made sure N is a number). */
export function numberFlag(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}

/** The options a benchmark reads: those that take a number, those that take text, and bare switches. */
export interface OptionSpec {
  numbers?: readonly string[];
  strings?: readonly string[];
  switches?: readonly string[];
}

/**
 * What is wrong with a command line for these options (undefined: nothing):
 * an option the benchmark does not read, a number option without a number, a
 * text option without its text, or a word that is no option's value.
 */
export function optionProblem(argv: readonly string[], spec: OptionSpec): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const name = a.startsWith('--') ? a.slice(2) : undefined;
    if (name === undefined) return `unexpected argument "${a}"`;
    if (spec.switches?.includes(name)) continue;
    const value = argv[i + 1];
    if (spec.numbers?.includes(name)) {
      if (value === undefined || value.trim() === '' || !Number.isFinite(Number(value))) return `--${name} takes a number${value === undefined ? '' : `, not "${value}"`}`;
      i++;
      continue;
    }
    if (spec.strings?.includes(name)) {
      if (value === undefined || value.startsWith('--')) return `--${name} takes a value`;
      i++;
      continue;
    }
    return `unknown option ${a}`;
  }
  return undefined;
}

/**
 * Checks the command line before a benchmark starts: `--help` prints its
 * usage; a mistyped option (`--round 200`) or a number option without a
 * number stops it with its usage, where it used to run minutes with the
 * defaults and print figures for a run nobody asked for.
 */
export function checkOptions(usage: string, spec: OptionSpec, argv: readonly string[] = process.argv.slice(2)): void {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${usage.trim()}\n`);
    process.exit(0);
  }
  const problem = optionProblem(argv, spec);
  if (problem) {
    process.stderr.write(`${problem}\n${usage.trim()}\n`);
    process.exit(2);
  }
}

/**
 * A `K=V` option's value (the first `=` splits; the value may hold more), or
 * an error naming the flag, with `usage`: a bench's environment and
 * server-setting options share it.
 */
export function keyValue(name: string, text: string | undefined, usage?: string): [string, string] {
  const [k, ...v] = (text ?? '').split('=');
  if (!k || !v.length) throw new Error(`${name} takes K=V (got ${text ?? 'nothing'})${usage ? `\n${usage}` : ''}`);
  return [k, v.join('=')];
}

/**
 * An option's value as a number within [min, max] (a whole one with
 * `whole`), or an error naming the option and what it got, followed by
 * `usage` when given: the benches that parse their own command line share it.
 */
export function boundedNumber(name: string, v: string | undefined, min: number, max: number, opts: { whole?: boolean; usage?: string } = {}): number {
  const n = Number(v);
  const ok = v !== undefined && v.trim() !== '' && (opts.whole ? Number.isInteger(n) : Number.isFinite(n)) && n >= min && n <= max;
  if (!ok) throw new Error(`${name} must be a ${opts.whole ? 'whole number' : 'number'} in [${min}, ${max}] (got ${v ?? 'nothing'})${opts.usage ? `\n${opts.usage}` : ''}`);
  return n;
}

/** Bounds a benchmark: it exits by itself even if something it waits for never comes. */
export function watchdog(ms: number): NodeJS.Timeout {
  return setTimeout(() => {
    console.error('bench: watchdog expired');
    process.exit(2);
  }, ms);
}

/** A temporary folder and a migrated embedded PostgreSQL in it. */
export async function benchDatabase(name: string): Promise<{ dir: string; pg: EmbeddedPg }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `landfall-bench-${name}-`));
  const pg = await startEmbeddedPostgres({ dir: path.join(dir, 'pg'), port: await freePort(), database: 'bench' });
  const db = createDb(pg.url, 2);
  try {
    await migrateLatest(db);
  } finally {
    await db.destroy();
  }
  return { dir, pg };
}

/** Resident memory of a process, in MB, from /proc. */
export function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
}

/** A JSON caller for the REST API at `base`: parses the answer, and throws with the body on a 4xx or 5xx. */
export function apiCaller(base: string) {
  return async (method: string, p: string, body?: unknown) => {
    const r = await fetch(`${base}${p}`, { method, headers: body !== undefined ? { 'content-type': 'application/json' } : {}, body: body !== undefined ? JSON.stringify(body) : undefined });
    const text = await r.text();
    if (r.status >= 400) throw new Error(`${method} ${p}: ${r.status} ${text.slice(0, 300)}`);
    return text ? JSON.parse(text) : undefined;
  };
}

// ---- Process accounting from /proc (Linux), shared by the fleet benches (boot-storm, idle-fleet, fleet-real).

const CLK_TCK = 100; // USER_HZ: 100 on every Linux this runs on (getconf CLK_TCK)

/** A process's parent, CPU seconds (its own, and its reaped children's) and command line, or undefined once gone. */
export function procInfo(pid: number): { ppid: number; self: number; children: number } | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses; fields start after the last ')'.
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    const n = (field: number) => Number(f[field - 3]);
    return { ppid: n(4), self: (n(14) + n(15)) / CLK_TCK, children: (n(16) + n(17)) / CLK_TCK };
  } catch {
    return undefined;
  }
}

/** The command line of a process ('' once gone). */
export function procCmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '';
  }
}

/** Every live process, with its parent, read once (to walk process trees). */
function processTable(): Map<number, number> {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const info = procInfo(Number(entry));
    if (info) parents.set(Number(entry), info.ppid);
  }
  return parents;
}

/** A process and all its live descendants. */
export function processTree(root: number, table = processTable()): number[] {
  const out = [root];
  for (let i = 0; i < out.length; i++) for (const [pid, ppid] of table) if (ppid === out[i]) out.push(pid);
  return out.filter((p) => table.has(p));
}

/**
 * CPU seconds of a process tree: every live member's own time plus what its reaped children used
 * (a backend PostgreSQL forked and reaped, a node:cluster worker that exited).
 */
export function treeCpuSeconds(root: number, table = processTable()): number {
  return processTree(root, table).reduce((s, pid) => {
    const t = procInfo(pid);
    return s + (t ? t.self + t.children : 0);
  }, 0);
}

/** Resident memory of a process tree, in kB (shared pages counted once per process: an upper bound). */
export function treeRssKb(root: number, table = processTable()): number {
  return processTree(root, table).reduce((s, pid) => {
    try {
      return s + Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
    } catch {
      return s;
    }
  }, 0);
}

/** Busy and total CPU seconds of the whole machine. */
export function machineCpuSeconds(): { busy: number; total: number } {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = f;
  const busy = user + nice + system + irq + softirq + steal;
  return { busy: busy / CLK_TCK, total: (busy + idle + iowait) / CLK_TCK };
}

/** The machine's load averages, as `uptime` prints them. */
export function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

/**
 * Cores used by named parties (process trees, or this process with `'self'`) between `start()` and
 * `stop()`, and `other`: what the rest of the machine used meanwhile (other people's work on a
 * shared box; a run where it is large is disturbed).
 */
export class CpuMeter {
  private t0 = 0;
  private before = new Map<string, number>();
  private machine0 = { busy: 0, total: 0 };

  /** A party: a process tree by pid (or a function giving the pid now), `'self'`, or `{ only: pid }` (that process alone, not its children). */
  constructor(private readonly parties: Record<string, number | 'self' | { only: number } | (() => number | undefined)>) {}

  private read(): Map<string, number> {
    const table = processTable();
    const out = new Map<string, number>();
    for (const [name, who] of Object.entries(this.parties)) {
      if (who === 'self') {
        const u = process.cpuUsage();
        out.set(name, (u.user + u.system) / 1e6);
      } else if (typeof who === 'object') {
        out.set(name, procInfo(who.only)?.self ?? 0);
      } else {
        const pid = typeof who === 'function' ? who() : who;
        out.set(name, pid ? treeCpuSeconds(pid, table) : 0);
      }
    }
    return out;
  }

  start(): void {
    this.before = this.read();
    this.machine0 = machineCpuSeconds();
    this.t0 = performance.now();
  }

  /** Cores per party over the interval, `other`, the machine's busy cores, and the interval's seconds. */
  stop(): { cores: Record<string, number>; other: number; machineBusy: number; seconds: number } {
    const after = this.read();
    const m = machineCpuSeconds();
    const seconds = (performance.now() - this.t0) / 1000;
    const cores: Record<string, number> = {};
    let ours = 0;
    for (const [name, v] of after) {
      cores[name] = Math.max(0, v - (this.before.get(name) ?? 0)) / seconds;
      ours += cores[name]!;
    }
    const machineBusy = (m.busy - this.machine0.busy) / seconds;
    return { cores, other: Math.max(0, machineBusy - ours), machineBusy, seconds };
  }
}

// One nearest-rank percentile function for every bench: the unit-tested one (bench/agent-stats.ts).
import { percentiles, type Percentiles } from './agent-stats';
export { percentiles, type Percentiles };

/** Runs `fn` over 0..n-1 with at most `concurrency` at a time. */
export async function forEachConcurrently(n: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, n) }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

/** `--name value` from the command line (the last one given), or the default. */
export function stringFlag(name: string, dflt?: string): string | undefined {
  const i = process.argv.lastIndexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
}

/** Deterministic, valid v4-shaped host ids, so runs are comparable and a database count can be checked id by id. */
export const benchHostId = (i: number, prefix = 'b0000000'): string => `${prefix}-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;

// ---- Landfall's own processes, from this checkout's build or another's (`--repo DIR`, for before/after comparisons).

/** `node <repo>/dist/src/cli/main.js migrate latest` against a database: the schema of that checkout. */
export async function migrateWithCli(repo: string, databaseUrl: string): Promise<void> {
  const cli = path.join(repo, 'dist', 'src', 'cli', 'main.js');
  if (!existsSync(cli)) throw new Error(`${cli} is missing: build that checkout first (npx tsc -p tsconfig.build.json)`);
  await new Promise<void>((resolve, reject) => {
    const p = spawn(process.execPath, [cli, 'migrate', 'latest'], { cwd: repo, env: { PATH: process.env.PATH, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-2000)));
    p.once('error', reject);
    p.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`migrate exited with code ${code}: ${err}`))));
  });
}

export interface LandfallChild {
  proc: ChildProcess;
  pid: number;
  /** The last lines it wrote (warn and above with LOG_LEVEL=warn). */
  recent: string[];
  lines: () => number;
  stop(): Promise<void>;
}

/** `node <repo>/dist/src/cli/main.js <command>` as a child process, its output kept (last 20 lines). */
export function spawnLandfall(repo: string, command: string[], env: NodeJS.ProcessEnv): LandfallChild {
  const cli = path.join(repo, 'dist', 'src', 'cli', 'main.js');
  if (!existsSync(cli)) throw new Error(`${cli} is missing: build that checkout first`);
  const proc = spawn(process.execPath, [cli, ...command], { cwd: repo, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const recent: string[] = [];
  let n = 0;
  const keep = (d: Buffer) => {
    for (const line of d.toString().split('\n')) {
      if (!line.trim()) continue;
      n++;
      recent.push(line.slice(0, 500));
      if (recent.length > 20) recent.shift();
    }
  };
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  return { proc, pid: proc.pid!, recent, lines: () => n, stop: () => stopProcess(proc, 20_000, 'SIGTERM') };
}

/** Waits until `url` answers 200 (or the child exits, or the time is up). */
export async function waitHttpOk(url: string, timeoutMs: number, child?: LandfallChild): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child && child.proc.exitCode !== null) throw new Error(`the process exited with code ${child.proc.exitCode}: ${child.recent.slice(-5).join(' | ')}`);
    if (await fetch(url).then((r) => r.ok, () => false)) return;
    if (Date.now() > deadline) throw new Error(`${url} did not answer 200 within ${timeoutMs} ms`);
    await sleep(200);
  }
}

/** The PostgreSQL server's pid (the postmaster: its backends are its children), from its data folder. */
export function postmasterPid(dataDir: string): number {
  return Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
}

/** One query on a short-lived connection (the benches' view of the database, outside the service). */
export async function pgQuery<T = Record<string, unknown>>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const c = new PgClient({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(sql, params)).rows as T[];
  } finally {
    await c.end();
  }
}

export const fmtNum = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
export const fmtMs = (v: number): string => `${fmtNum(v, v < 10 ? 1 : 0)} ms`;
export const latencyLine = (p: Percentiles): string => `n ${fmtNum(p.count)}   p50 ${fmtMs(p.p50)}   p90 ${fmtMs(p.p90)}   p99 ${fmtMs(p.p99)}   max ${fmtMs(p.max)}`;

/** Where a bench writes its result file: bench/results/<name>-<UTC time>.json in the checkout. */
export function resultFile(name: string): string {
  const dir = path.join(repoRoot(), 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  return path.join(dir, `${name}-${new Date().toISOString().replace(/[:]/g, '').replace(/\.\d+Z$/, 'Z')}.json`);
}

// ---- The whole stack as `npm start` runs it (`landfall dev`: Temporal, PostgreSQL, migrations, api, worker).

export interface DevStack {
  /** The API's base URL (127.0.0.1). */
  url: string;
  databaseUrl: string;
  /** The supervisor (`landfall dev`) process. */
  pid: number;
  /** Each component's pid now (the supervisor restarts a component that dies: read again rather than keep). */
  pids(): { supervisor: number; api?: number; worker?: number; temporal?: number; postgres?: number };
  recent: string[];
  stop(): Promise<void>;
}

/**
 * `node dist/src/cli/main.js dev` (what `npm start` runs after its set-up) in a temporary state
 * folder on free loopback ports, no demo fleet, `LOG_LEVEL=warn`; `env` adds or overrides settings
 * (e.g. HOST_DISCONNECT_TIMEOUT_MS). Resolves once the API answers /readyz.
 */
export async function startDevStack(o: { env?: Record<string, string>; repo?: string; readyTimeoutMs?: number } = {}): Promise<DevStack> {
  const repo = o.repo ?? repoRoot();
  const work = mkdtempSync(path.join(os.tmpdir(), 'landfall-bench-stack-'));
  // As root, PostgreSQL runs as `postgres`: it must be able to pass through this folder to its data folder.
  chmodSync(work, 0o711);
  const [apiPort, temporalPort, uiPort, pgPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const child = spawnLandfall(repo, ['dev'], {
    STATE_DIR: path.join(work, 'state'),
    API_HOST: '127.0.0.1',
    API_PORT: String(apiPort),
    SERVICE_BASE_URL: `http://127.0.0.1:${apiPort}`,
    TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`,
    TEMPORAL_UI_PORT: String(uiPort),
    EMBEDDED_POSTGRES_PORT: String(pgPort),
    DEMO_FLEET_HOSTS: '0',
    LOG_LEVEL: 'warn',
    LOG_FORMAT: 'json',
    AUTH_TYPE: 'none',
    ...o.env,
  });
  const url = `http://127.0.0.1:${apiPort}`;
  const stop = async () => {
    await stopProcess(child.proc, 60_000, 'SIGTERM');
    await rm(work, { recursive: true, force: true }).catch(() => undefined);
  };
  try {
    await waitHttpOk(`${url}/readyz`, o.readyTimeoutMs ?? 180_000, child);
  } catch (err) {
    await stop();
    throw err;
  }
  const password = readFileSync(path.join(work, 'state', 'postgres.password'), 'utf8').trim();
  const pids = () => {
    const table = processTable();
    const out: ReturnType<DevStack['pids']> = { supervisor: child.pid };
    for (const [pid, ppid] of table) {
      if (ppid !== child.pid) continue;
      const cmd = procCmdline(pid);
      if (/main\.js api\b/.test(cmd)) out.api = pid;
      else if (/main\.js worker\b/.test(cmd)) out.worker = pid;
      else if (/\btemporal\b.*server start-dev/.test(cmd)) out.temporal = pid;
      else if (/postgres\b.*-D /.test(cmd)) out.postgres = pid;
    }
    return out;
  };
  return { url, databaseUrl: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${pgPort}/landfall`, pid: child.pid, pids, recent: child.recent, stop };
}

// ---- Hosts through the agent API, fast: keep-alive connections, request bodies built beforehand.

/** A keep-alive HTTP client of one API on 127.0.0.1, timing each request. */
export function keepAliveClient(port: number, sockets: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
  const request = (method: string, p: string, body?: string): Promise<{ status: number; ms: number; text: string }> =>
    new Promise((resolve, reject) => {
      const t0 = performance.now();
      const headers: Record<string, string | number> = body !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {};
      const req = http.request({ host: '127.0.0.1', port, method, path: p, agent, headers }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0, text }));
        res.on('error', reject);
      });
      req.setTimeout(60_000, () => req.destroy(new Error('timed out after 60 s')));
      req.on('error', reject);
      req.end(body);
    });
  /** The parsed answer, or an error naming the request when its status is not `expected`. */
  const json = async <T = { id: string }>(method: string, p: string, body: unknown, expected: number): Promise<T> => {
    const r = await request(method, p, body === undefined ? undefined : JSON.stringify(body));
    if (r.status !== expected) throw new Error(`${method} ${p}: HTTP ${r.status} (expected ${expected}): ${r.text.slice(0, 300)}`);
    return JSON.parse(r.text || 'null') as T;
  };
  return { request, json, close: () => agent.destroy() };
}

export const AGENT_API = '/api/assisted-install/v2';
/** bench/inventory.ts gives host i the address 10.20.(i>>8).(i&255)/16 (for i < 65,536): the clusters' machine network. */
export const BENCH_MACHINE_NETWORK = '10.20.0.0/16';

/** `count` clusters ready to validate (machine network and VIPs, or `network`'s fields: a host with an inventory leaves discovering), one infra-env each; their infra-env ids. */
export async function createBenchClusters(client: ReturnType<typeof keepAliveClient>, count: number, prefix: string, network?: Record<string, unknown>): Promise<string[]> {
  const pullSecret = JSON.stringify({ auths: { 'registry.example.com': { auth: 'YmVuY2g6YmVuY2g=' } } });
  const sshKey = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx4l8jTj2tUiX4lUzTnI6FvR2d1eI8kXoW7hSg2gq1m bench@landfall';
  const infraEnvs: string[] = new Array<string>(count);
  await forEachConcurrently(count, 8, async (k) => {
    const c = await client.json('POST', `${AGENT_API}/clusters`, { name: `${prefix}-${k}`, openshift_version: '1.31', pull_secret: pullSecret, base_dns_domain: 'example.com', ssh_public_key: sshKey, ...(network ?? { machine_networks: [{ cidr: BENCH_MACHINE_NETWORK }], api_vips: [{ ip: '10.20.255.250' }], ingress_vips: [{ ip: '10.20.255.251' }] }) }, 201);
    infraEnvs[k] = (await client.json('POST', `${AGENT_API}/infra-envs`, { name: `${prefix}-${k}-ie`, pull_secret: pullSecret, cluster_id: c.id, ssh_authorized_key: sshKey, image_type: 'minimal-iso' }, 201)).id;
  });
  return infraEnvs;
}
