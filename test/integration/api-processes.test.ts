/**
 * `landfall api` with API_PROCESSES=2 (src/api/cluster.ts): two worker
 * processes serve the one port and a third refreshes what agents report
 * (src/api/refresher-process.ts), /metrics covers them all, a worker that
 * dies is brought back, SIGTERM stops them all, and a primary killed with
 * SIGKILL leaves no worker behind (nothing holding the port or the
 * database). Runs the built CLI (dist/, as `npm test`'s set-up builds it).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import net from 'node:net';
import { getPriority } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { createDb } from '../../src/db/database';
import { REFRESHER_MAIN_NICE, REFRESHER_NICE } from '../../src/api/refresher-process';
import { REFRESHER_V8_ARGS } from '../../src/api/cluster';
import { migrateLatest } from '../../src/db/migrations';
import { freePort } from '../../src/dev/process-utils';
import type { EmbeddedPg } from '../../src/dev/embedded-postgres';
import { eventually, startTestPostgres, tempDir } from '../support/services';

const MAIN = path.resolve(__dirname, '../../dist/src/cli/main.js');

let pg: EmbeddedPg;
const started: ChildProcess[] = [];

beforeAll(async () => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run "npm run build" (npm test's set-up does)`);
  pg = await startTestPostgres(`procs_${Math.random().toString(36).slice(2, 8)}`);
  const db = createDb(pg.url, 1);
  await migrateLatest(db);
  await db.destroy();
}, 120_000);

afterAll(async () => {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await pg?.stop();
});

function startApiProcesses(port: number, processes: number, env: Record<string, string> = {}): { child: ChildProcess; log: string[] } {
  const log: string[] = [];
  const child = spawn(process.execPath, [MAIN, 'api'], {
    env: {
      PATH: process.env.PATH,
      API_HOST: '127.0.0.1',
      API_PORT: String(port),
      API_PROCESSES: String(processes),
      DATABASE_URL: pg.url,
      DATABASE_POOL_MAX: '2',
      TEMPORAL_ADDRESS: '127.0.0.1:1',
      STORAGE_LOCAL_DIR: tempDir('api-procs'),
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info',
      SHUTDOWN_TIMEOUT_MS: '5000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  for (const s of [child.stdout!, child.stderr!]) s.on('data', (d: Buffer) => log.push(...d.toString().split('\n').filter(Boolean)));
  return { child, log };
}

/** One request on a connection of its own (so the primary hands each to a worker in turn). */
function get(port: number, p: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: p, agent: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error(`GET ${p}: no answer within 10 s`)));
    req.end();
  });
}

/** A process that is running (not gone, not a zombie waiting for its parent to reap it). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const p of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid && running(Number(p))) out.push(Number(p));
    } catch {
      /* gone meanwhile */
    }
  }
  return out.sort();
}

/** What the primary forked a process as (API_PROCESS_ROLE in its environment). */
function roleOf(pid: number): string | undefined {
  try {
    return /(?:^|\0)API_PROCESS_ROLE=([^\0]*)/.exec(readFileSync(`/proc/${pid}/environ`, 'latin1'))?.[1];
  } catch {
    return undefined;
  }
}

/** The primary's children once there are two serving processes and one refresher. */
async function apiChildren(primary: number): Promise<{ serving: number[]; refresher: number }> {
  return eventually(async () => {
    const all = childrenOf(primary);
    const serving = all.filter((p) => roleOf(p) === 'serve');
    const refresher = all.filter((p) => roleOf(p) === 'refresh');
    return all.length === 3 && serving.length === 2 && refresher.length === 1 ? { serving, refresher: refresher[0]! } : undefined;
  }, 30_000, 'two serving processes and a refresher');
}

/** A refresh request, as an agent's report leaves one: gone once a refresher claimed it (no serving process runs one). */
async function refreshRequestTaken(): Promise<void> {
  const db = createDb(pg.url, 1);
  try {
    const target = `c:${randomUUID()}`;
    await db('refresh_requests').insert({ target, cluster_id: target.slice(2) });
    await db.raw("select pg_notify('landfall_refresh', '')");
    await eventually(async () => !(await db('refresh_requests').where({ target }).first()), 30_000, 'the refresh request claimed');
  } finally {
    await db.destroy();
  }
}

/** landfall_api_requests_total by process id, from /metrics. */
async function requestsByProcess(port: number): Promise<Map<number, number>> {
  const text = (await get(port, '/metrics')).body;
  return new Map([...text.matchAll(/^landfall_api_requests_total\{process="(\d+)"\} (\d+)$/gm)].map((m) => [Number(m[1]), Number(m[2])]));
}

const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });

it('serves from two processes, sums their metrics, restarts a dead one, and takes both down with a SIGKILLed primary', async () => {
  const port = await freePort();
  // The refresher's main thread asked to run above the serving processes (by default it runs with the others, below).
  const { child, log } = startApiProcesses(port, 2, { API_REFRESHER_MAIN_NICE: String(REFRESHER_MAIN_NICE) });
  await eventually(async () => (await get(port, '/healthz').catch(() => ({ status: 0 }))).status === 200, 60_000, 'the API answering');
  // One worker answering is not the end of start-up: until every serving process listens, a process that dies
  // stops them all (by design: "exits 1 when its processes cannot start"). On a loaded machine the second
  // worker listened seconds after the first, and the refresher killed meanwhile was not brought back.
  await eventually(async () => log.some((l) => l.includes('api processes listening')), 60_000, 'every serving process listening');
  const { serving: workers, refresher } = await apiChildren(child.pid!);

  // The refresher's main thread runs above the serving processes' priority (where raising one is allowed: root here),
  // its other threads below; it refreshes, and is brought back when it dies.
  const primary = getPriority(child.pid!);
  const main = process.getuid?.() === 0 ? REFRESHER_MAIN_NICE : primary;
  expect(REFRESHER_MAIN_NICE).toBeLessThan(0);
  await eventually(async () => getPriority(refresher) === main, 10_000, "the refresher's main thread at its priority");
  for (const pid of workers) expect(getPriority(pid)).toBe(primary);
  // Every other thread of it: V8's own threads (its collections run on them) started at nice 0.
  const threads = (pid: number) => readdirSync(`/proc/${pid}/task`).map(Number);
  expect(threads(refresher).length).toBeGreaterThan(1);
  await eventually(
    async () => threads(refresher).every((tid) => getPriority(tid) === (tid === refresher ? main : Math.max(REFRESHER_NICE, primary))),
    10_000,
    'every other thread of the refresher at its priority',
  );
  for (const pid of workers) expect(threads(pid).every((tid) => getPriority(tid) === getPriority(child.pid!))).toBe(true);
  // Its heap is collected sooner (REFRESHER_V8_ARGS); the serving processes keep V8's own factor.
  const argv = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  expect(REFRESHER_V8_ARGS.length).toBeGreaterThan(0);
  expect(argv(refresher)).toEqual(expect.arrayContaining([...REFRESHER_V8_ARGS]));
  expect(argv(refresher).some((a) => a.startsWith('--heap-growing-percent='))).toBe(true);
  // No forced compaction: its pauses delayed refreshes, and with the inventories kept outside the heap the soak held without it.
  expect(argv(refresher)).not.toContain('--compact-on-every-full-gc');
  for (const pid of workers) expect(argv(pid).some((a) => a.startsWith('--heap-growing-percent'))).toBe(false);
  await refreshRequestTaken();
  process.kill(refresher, 'SIGKILL');
  const refresherAgain = await eventually(async () => {
    const r = childrenOf(child.pid!).filter((p) => roleOf(p) === 'refresh');
    return r.length === 1 && r[0] !== refresher ? r[0] : undefined;
  }, 30_000, 'the refresher replaced');
  await refreshRequestTaken();

  // Both answer: the primary hands each connection to the next free worker (one busy compiling the
  // validator on its first request is passed over meanwhile), so keep connecting until both have.
  const byProcess = await eventually(async () => {
    for (let i = 0; i < 6; i++) expect((await get(port, '/healthz')).status).toBe(200);
    const m = await requestsByProcess(port);
    return m.size === 2 && [...m.values()].every((n) => n >= 3) ? m : undefined;
  }, 60_000, 'both processes answering');
  expect([...byProcess.keys()].sort()).toEqual(workers);
  expect(byProcess.has(refresherAgain)).toBe(false);
  // /metrics from either process covers both: the process-local series summed, the database-read ones once.
  const text = (await get(port, '/metrics')).body;
  expect(text.match(/^# TYPE landfall_installed_clusters_first_attempt_ratio /gm)).toHaveLength(1);
  const rss = Number(/^landfall_process_resident_memory_bytes (\d+)$/m.exec(text)![1]);
  const each = workers.map((pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024);
  expect(rss).toBeGreaterThan(Math.max(...each) * 1.3);
  // Collection pauses, by process role and kind: the serving processes' are there (start-up alone allocates tens of
  // megabytes, collected), and no series lacks its role.
  const gc = [...text.matchAll(/^landfall_process_gc_pause_seconds_count\{([^}]*)\} (\d+)$/gm)].map((m) => ({ labels: m[1]!, n: Number(m[2]) }));
  expect(gc.some((s) => /role="serve"/.test(s.labels) && /kind="minor"/.test(s.labels) && s.n > 0)).toBe(true);
  expect(gc.every((s) => /role="(serve|refresh|main)"/.test(s.labels))).toBe(true);

  // A worker that dies is replaced, and the API answers meanwhile (a connection handed to the dying
  // worker at that instant is lost with it: a client retries).
  process.kill(workers[0]!, 'SIGKILL');
  await eventually(async () => (await get(port, '/healthz').catch(() => ({ status: 0 }))).status === 200, 30_000, 'an answer after a worker died');
  const replaced = await eventually(async () => {
    const w = childrenOf(child.pid!).filter((p) => roleOf(p) === 'serve');
    return w.length === 2 && !w.includes(workers[0]!) ? w : undefined;
  }, 30_000, 'the dead worker replaced');
  expect(replaced).toContain(workers[1]);
  expect(log.join('\n')).toMatch(/exited unexpectedly; restarting it/);
  await eventually(async () => {
    await get(port, '/healthz');
    return (await requestsByProcess(port)).has(replaced.find((p) => p !== workers[1])!);
  }, 60_000, 'the new worker answering');

  // The primary killed outright: its workers leave by themselves and free the port.
  child.kill('SIGKILL');
  await eventually(async () => [...replaced, refresherAgain].every((pid) => !running(pid)), 15_000, 'no worker left after the primary was killed');
  expect(await portOpen(port)).toBe(false);
}, 180_000);

it('stops every process on SIGTERM and exits 0 (its refresher at the priorities API_REFRESHER_NICE and API_REFRESHER_MAIN_NICE ask for)', async () => {
  const port = await freePort();
  // API_REFRESHER_MAIN_NICE unset: the main thread takes API_REFRESHER_NICE's value too.
  const { child } = startApiProcesses(port, 2, { API_REFRESHER_NICE: '0' });
  await eventually(async () => (await get(port, '/healthz').catch(() => ({ status: 0 }))).status === 200, 60_000, 'the API answering');
  const { serving, refresher } = await apiChildren(child.pid!);
  // Nice 0: not lowered, every thread at the primary's priority (the default lowers them all: the test above), and it refreshes.
  await refreshRequestTaken();
  const threads = readdirSync(`/proc/${refresher}/task`).map(Number);
  expect(threads.length).toBeGreaterThan(1);
  expect(threads.map((tid) => getPriority(tid))).toEqual(threads.map(() => getPriority(child.pid!)));
  const workers = [...serving, refresher];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  expect(await exited).toBe(0);
  for (const pid of workers) expect(running(pid)).toBe(false);
  expect(await portOpen(port)).toBe(false);
}, 120_000);

it('exits 1 when its processes cannot start (the port is taken) rather than restarting them forever', async () => {
  const blocker = net.createServer();
  const port = await freePort();
  await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve));
  try {
    const { child, log } = startApiProcesses(port, 2);
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(1);
    expect(log.join('\n')).toMatch(/exited during start-up/);
  } finally {
    blocker.close();
  }
}, 120_000);
