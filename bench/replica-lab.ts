/**
 * The production topology on one machine: N API processes and N worker
 * processes (`landfall api`, `landfall worker`, each its own node process, as
 * docker-compose runs them) behind a round-robin HTTP balancer. The tests'
 * replicated mode (test/support/replicas.ts) and the chaos lab
 * (bench/chaos-lab.ts) run on it.
 *
 * The balancer picks the next replica per request, not per connection (an
 * agent's keep-alive connection would otherwise stick to one process). A
 * replica that refuses the connection is skipped, as a load balancer with
 * health checks would; only when none takes it does the balancer answer 502
 * itself, and it marks those answers so they are not counted as the API's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { configToEnv, passthroughEnv, type Config } from '../src/config';
import { freePort, repoRoot, sleep, stopProcess } from '../src/dev/process-utils';
import type { RunningWorker } from '../src/worker/worker';

/** The compiled CLI (set-up builds it), whether this module runs compiled or under jest. */
export const MAIN = path.join(repoRoot(), 'dist', 'src', 'cli', 'main.js');

/** Answers the balancer gives itself when no replica took the connection (not the API's answers). */
export const BALANCER_HEADER = 'x-landfall-balancer';

export interface BalancerStats {
  /** Answers by replica index and HTTP status. */
  byReplica: Array<Record<number, number>>;
  /** Requests no replica took (answered 502 by the balancer). */
  unrouted: number;
  /** Every answer of the API with status >= 500, with what was asked. */
  serverErrors: Array<{ at: number; replica: number; method: string; url: string; status: number; body: string }>;
}

export interface Balancer {
  url: string;
  port: number;
  server: http.Server;
  stats: BalancerStats;
  /** The replicas' own URLs. */
  targets(): string[];
  close(): Promise<void>;
}

/** Request bodies are buffered (to try another replica when one refuses); responses are streamed. */
export async function startBalancer(targets: string[], port?: number): Promise<Balancer> {
  const urls = targets.map((t) => new URL(t));
  let next = 0;
  const stats: BalancerStats = { byReplica: urls.map(() => ({})), unrouted: 0, serverErrors: [] };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const tryFrom = (tries: number) => {
        if (tries >= urls.length) {
          stats.unrouted++;
          res.writeHead(502, { [BALANCER_HEADER]: 'no-replica', 'content-type': 'application/json' });
          res.end(JSON.stringify({ kind: 'Error', id: 502, href: '', code: '502', reason: 'no API replica accepted the connection' }));
          return;
        }
        const replica = next++ % urls.length;
        const target = urls[replica]!;
        const up = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host } }, (upRes) => {
          const status = upRes.statusCode ?? 0;
          const counts = (stats.byReplica[replica] ??= {});
          counts[status] = (counts[status] ?? 0) + 1;
          if (status >= 500) {
            const out: Buffer[] = [];
            upRes.on('data', (c: Buffer) => out.length < 4 && out.push(c));
            upRes.on('end', () => stats.serverErrors.push({ at: Date.now(), replica, method: req.method ?? '', url: req.url ?? '', status, body: Buffer.concat(out).toString('utf8').slice(0, 500) }));
          }
          res.writeHead(status, upRes.headers);
          upRes.pipe(res);
          upRes.on('error', () => res.destroy());
        });
        let answered = false;
        up.on('response', () => (answered = true));
        up.on('error', (err: NodeJS.ErrnoException) => {
          // Refused before anything was sent: the replica is down; another may take it. Anything
          // later (a replica killed mid-answer) reaches the client as the broken connection it is.
          if (!answered && (err.code === 'ECONNREFUSED' || err.code === 'ECONNRESET') && !res.headersSent) tryFrom(tries + 1);
          else res.destroy();
        });
        res.on('close', () => {
          if (!res.writableFinished) up.destroy();
        });
        up.end(body);
      };
      tryFrom(0);
    });
  });
  server.keepAliveTimeout = 30_000;
  const listenPort = port ?? (await freePort());
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(listenPort, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${listenPort}`,
    port: listenPort,
    server,
    stats,
    targets: () => urls.map((u) => u.origin),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** One `landfall api` or `landfall worker` process, started again by `start()` after it died or was killed. */
export class ServiceProcess {
  proc: ChildProcess | undefined;
  private log: WriteStream | undefined;
  starts = 0;

  constructor(
    readonly name: string,
    private readonly command: 'api' | 'worker',
    private readonly env: NodeJS.ProcessEnv,
    /** Where its output goes (<logDir>/<name>.log, appended across restarts). */
    private readonly logDir: string,
    /** An API is started when /healthz answers; a worker when it logs that it runs. */
    private readonly readyUrl?: string,
  ) {}

  get logFile(): string {
    return path.join(this.logDir, `${this.name}.log`);
  }

  get alive(): boolean {
    return !!this.proc && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  async start(timeoutMs = 90_000): Promise<void> {
    mkdirSync(this.logDir, { recursive: true });
    this.log ??= createWriteStream(this.logFile, { flags: 'a' });
    this.log.write(`--- start ${++this.starts} at ${new Date().toISOString()}\n`);
    const proc = spawn(process.execPath, [MAIN, this.command], { env: this.env, stdio: ['ignore', 'pipe', 'pipe'] });
    proc.stdout!.pipe(this.log, { end: false });
    proc.stderr!.pipe(this.log, { end: false });
    this.proc = proc;
    let running = false;
    const watch = (d: Buffer) => {
      if (d.toString().includes('worker running')) running = true;
    };
    proc.stdout!.on('data', watch);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`${this.name} exited with code ${proc.exitCode} while starting (log: ${this.logFile})`);
      const ok = this.readyUrl ? await fetch(`${this.readyUrl}/healthz`).then((r) => r.ok, () => false) : running;
      if (ok) {
        proc.stdout!.off('data', watch);
        return;
      }
      if (Date.now() > deadline) throw new Error(`${this.name} did not answer /healthz within ${timeoutMs} ms`);
      await sleep(100);
    }
  }

  /** SIGKILL: no shutdown hook runs, as when the machine or the OOM killer takes it. */
  async kill(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const gone = new Promise((r) => p.once('exit', r));
    p.kill('SIGKILL');
    await gone;
  }

  async stop(): Promise<void> {
    if (this.proc) await stopProcess(this.proc, 10_000);
    this.log?.end();
    this.log = undefined;
  }
}

export function envOf(cfg: Config, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...passthroughEnv(), ...configToEnv(cfg), ...extra };
  return Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined)) as NodeJS.ProcessEnv;
}

export interface ApiReplicas {
  balancer: Balancer;
  apis: ServiceProcess[];
  close(): Promise<void>;
}

/**
 * N API processes from one configuration behind a balancer listening on the
 * configuration's API port; each process gets a port of its own and keeps
 * SERVICE_BASE_URL (the balancer's, as behind a real load balancer).
 */
export async function startApiReplicas(cfg: Config, n: number, label: string, logDir: string): Promise<ApiReplicas> {
  const ports = await Promise.all(Array.from({ length: n }, () => freePort()));
  const balancer = await startBalancer(ports.map((p) => `http://127.0.0.1:${p}`), cfg.api.port);
  const apis = ports.map((port, i) => new ServiceProcess(`${label}-api-${i}`, 'api', envOf({ ...cfg, api: { ...cfg.api, host: '127.0.0.1', port } }), logDir, `http://127.0.0.1:${port}`));
  try {
    await Promise.all(apis.map((a) => a.start()));
  } catch (err) {
    await Promise.all(apis.map((a) => a.stop()));
    await balancer.close();
    throw err;
  }
  return {
    balancer,
    apis,
    async close() {
      await balancer.close();
      await Promise.all(apis.map((a) => a.stop()));
    },
  };
}

/** N worker processes, started once each runs (a worker bundles its workflows first, which takes seconds). */
export async function startWorkerReplicas(cfg: Config, n: number, label: string, logDir: string): Promise<RunningWorker & { processes: ServiceProcess[] }> {
  const processes = Array.from({ length: n }, (_, i) => new ServiceProcess(`${label}-worker-${i}`, 'worker', envOf(cfg), logDir));
  await Promise.all(processes.map((w) => w.start()));
  return {
    processes,
    done: Promise.all(processes.map((w) => new Promise((r) => w.proc!.once('exit', r)))).then(() => undefined),
    shutdown: async () => {
      await Promise.all(processes.map((w) => w.stop()));
    },
  };
}

