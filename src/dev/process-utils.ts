import net from 'node:net';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import type { Logger } from '../logger';

/** The checkout root: the nearest folder above this file holding package.json. */
export function repoRoot(from = __dirname): string {
  let dir = from;
  while (!existsSync(path.join(dir, 'package.json'))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${from}`);
    dir = up;
  }
  return dir;
}

export function toolsDir(): string {
  return path.join(repoRoot(), '.tools');
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function canConnect(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

export async function waitForPort(host: string, port: number, timeoutMs: number, what: string, proc?: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc && proc.exitCode !== null) throw new Error(`${what} exited with code ${proc.exitCode} before listening on ${port}`);
    if (await canConnect(host, port)) return;
    await sleep(100);
  }
  throw new Error(`${what} did not listen on ${host}:${port} within ${timeoutMs} ms`);
}

/**
 * The lowest port the kernel hands to outgoing connections. A port from
 * listen(0) comes from that range too, so between being picked and being
 * bound by the server it was picked for, an outgoing connection (a Temporal
 * or database client) may take it as its local port: a stack test once lost
 * its API's port that way, EADDRINUSE on every restart.
 */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : 32768;
  } catch {
    return 32768;
  }
}
const PICKED_FROM = 20_000;
/** Parallel test workers pick from ranges of their own, so two never pick the same port. */
const WORKER_RANGES = 8;
let nextPick: number | undefined;

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** A free TCP port on loopback, below the kernel's range for outgoing connections when there is room there. */
export async function freePort(): Promise<number> {
  const high = ephemeralLow() - 1;
  const width = Math.floor((high - PICKED_FROM + 1) / WORKER_RANGES);
  if (width >= 100) {
    const base = PICKED_FROM + (Number(process.env.JEST_WORKER_ID ?? 0) % WORKER_RANGES) * width;
    nextPick ??= base + Math.floor(Math.random() * width);
    for (let tried = 0; tried < width; tried++) {
      const port = base + ((nextPick - base + tried) % width);
      if (await canListen(port)) {
        nextPick = base + ((port - base + 1) % width);
        return port;
      }
    }
  }
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Sends `signal`, then SIGKILL after `graceMs`; resolves when the process is gone.
 * Used for every child we start so Ctrl-C never leaves an orphan behind.
 */
export function stopProcess(proc: ChildProcess, graceMs: number, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
    proc.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    proc.kill(signal);
  });
}

/** Whether a process with this pid exists (signal 0 checks without sending anything). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Brings a dead component back with backoff (1 s, doubling to 30 s; back to
 * 1 s once it has stayed up a minute) and says so in the log, rather than
 * taking the whole stack down: what `landfall dev` promises is that a
 * component dying is a pause, not an outage a person must notice. The API's
 * cluster primary (src/api/cluster.ts) brings its workers back the same way.
 */
export class Restarter {
  private failures = 0;
  private upSince = 0;

  constructor(
    private readonly name: string,
    private readonly logger: Logger,
    private readonly isStopping: () => boolean,
    private readonly start: () => Promise<void>,
    private readonly opts: { baseMs?: number; capMs?: number; healthyMs?: number } = {},
  ) {}

  /** The component started (first start or a restart). */
  started(): void {
    this.upSince = Date.now();
  }

  /** The component died: start it again after the backoff, as long as the stack is not stopping. */
  async died(detail: Record<string, unknown>): Promise<void> {
    if (this.isStopping()) return;
    if (Date.now() - this.upSince > (this.opts.healthyMs ?? 60_000)) this.failures = 0;
    for (;;) {
      const waitMs = Math.min(this.opts.capMs ?? 30_000, (this.opts.baseMs ?? 1000) * 2 ** this.failures);
      this.failures++;
      this.logger.error({ component: this.name, ...detail, restartInMs: waitMs, restarts: this.failures }, `${this.name} exited unexpectedly; restarting it`);
      await sleep(waitMs);
      if (this.isStopping()) return;
      try {
        await this.start();
        this.started();
        this.logger.info({ component: this.name, restarts: this.failures }, `${this.name} restarted`);
        return;
      } catch (err) {
        detail = { err: (err as Error).message };
      }
    }
  }
}
