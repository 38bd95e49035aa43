/**
 * The load generator of the agent-API benchmarks, run as its own child process
 * (`fork` from bench/agent-api.ts and bench/soak.ts) so that its CPU time is its own
 * (read from /proc by the parent) and it never shares an event loop with the
 * parent's bookkeeping (/proc sampling, the freshness probe's queries).
 *
 * The agent mix, a random host per request: `postRatio` POST …/instructions carrying
 * that host's inventory with a changed fact, the rest GET …/instructions (the poll).
 * The changed fact is the memory size: every reply to a host states a different
 * `memory.physical_bytes` from the one before it (512–527 GiB, `usable_bytes` 9 GiB
 * less), so its digest differs, the API stores it, and the host's validations are
 * evaluated again (the memory validations read it and their message names it).
 *
 * Two ways of driving it, each on a command from the parent:
 *   open    a constant arrival rate whatever the API's latency, as a fleet of agents
 *           behaves (each polls on its own clock); latency runs from the moment a request
 *           was due, so time queued behind a slow API counts (no coordinated omission);
 *           optionally split into windows (the soak's per-minute figures);
 *   closed  autocannon, N keep-alive connections, as fast as the API answers.
 */
import { inventoryFor } from './inventory';
import { percentiles, type Percentiles } from './agent-stats';
import { LeanPool } from './lean-http';

// ---- the protocol with the parent
export interface LoadInit {
  type: 'init';
  port: number;
  /** Per host, its …/instructions path; the host's index is its inventory's seed and name. */
  stepsPaths: string[];
  postRatio: number;
}
export interface OpenCommand {
  type: 'open';
  id: number;
  rate: number;
  seconds: number;
  maxSockets: number;
  /** Split the figures into windows of this many seconds (by due time); default one window. */
  windowSeconds?: number;
  /**
   * Seconds of the same load before the measured `seconds`, on the same
   * connections, not counted: the window starts while the load runs, as a
   * fleet's does, not after a pause on new connections (whose first seconds
   * measured the restart). The parent is told when the window starts (`mark`).
   */
  leadSeconds?: number;
}
export interface ClosedCommand {
  type: 'closed';
  id: number;
  connections: number;
  seconds: number;
}
export type LoadCommand = LoadInit | OpenCommand | ClosedCommand | { type: 'stop' };

export interface WindowResult {
  fromS: number;
  toS: number;
  scheduled: number;
  completed: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  /** Due but not sent: too many requests were already in flight (the API far behind). */
  skipped: number;
  /** Sent but still unanswered 15 s after the window ended: abandoned, and failures like the rest. */
  unanswered: number;
  statusCodes: Record<string, number>;
  /** Transport errors by code (ECONNRESET, …): a reset on a reused keep-alive connection is not the API failing a request. */
  errorCodes: Record<string, number>;
  /**
   * The most any request of the window went out after its scheduled start
   * (ms): the generator's own lateness (its timer, its share of the CPU). It
   * counts in the latencies, which run from the scheduled start.
   */
  lateMaxMs: number;
  all: Percentiles;
  byKind: Record<'GET' | 'POST', Percentiles>;
}
export interface OpenResult extends WindowResult {
  offered: number;
  /** Answers per second over the time they took (below `offered` when the API fell behind). */
  achieved: number;
  maxInFlight: number;
  windows: WindowResult[];
  /** The p99 of each second by due time (ms; NaN: none answered), whatever the windows: a tail from a few bad seconds reads differently from an even one. */
  secondsP99: number[];
  /** The same for the lead's seconds (none without a lead): how the load's start settled, shown, not measured. */
  leadSecondsP99: number[];
}
export interface ClosedResult {
  seconds: number;
  completed: number;
  requestsPerSecond: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCodes: Record<string, number>;
  all: Percentiles;
  byKind: Record<'GET' | 'POST', Percentiles>;
}
export type LoadMessage = { type: 'ready' } | { type: 'mark'; id: number } | { type: 'open-result'; id: number; result: OpenResult } | { type: 'closed-result'; id: number; result: ClosedResult } | { type: 'failed'; id?: number; error: string };

// ---- the agent mix
export interface MixRequest {
  kind: 'GET' | 'POST';
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

const GIB = 1024 ** 3;
/**
 * What the upstream agent's generated client sends with every poll and reply
 * (V2GetNextStepsParams, V2PostStepReplyParams: DiscoveryAgentVersion), the
 * version it registered with (bench/agent-stack.ts).
 */
const AGENT_HEADERS = { discovery_agent_version: 'bench-agent:1.0' } as const;

class Mix {
  /** How many replies each host has posted: the next one states another memory size. */
  private readonly replies: Uint32Array;
  constructor(
    private readonly stepsPaths: string[],
    private readonly postRatio: number,
  ) {
    this.replies = new Uint32Array(stepsPaths.length);
  }

  next(): MixRequest {
    const i = Math.floor(Math.random() * this.stepsPaths.length);
    const p = this.stepsPaths[i]!;
    if (Math.random() < this.postRatio) {
      const n = ++this.replies[i]!;
      return { kind: 'POST', method: 'POST', path: p, headers: { 'content-type': 'application/json', accept: 'application/json', ...AGENT_HEADERS }, body: Buffer.from(changedInventoryReply(i, n)) };
    }
    return { kind: 'GET', method: 'GET', path: `${p}?timestamp=${Math.floor(Date.now() / 1000)}`, headers: { accept: 'application/json', ...AGENT_HEADERS } };
  }
}

/**
 * Host `i`'s inventory reply number `n`: its registration inventory (bench/inventory.ts, as
 * set-up posted it) with 512 + n mod 16 GiB of memory, so consecutive replies differ.
 */
export function changedInventoryReply(i: number, n: number): string {
  const gib = 512 + (n % 16);
  const [a, b, c] = inventoryParts(i);
  const output = `${a}${gib * GIB}${b}${(gib - 9) * GIB}${c}`;
  return JSON.stringify({ step_type: 'inventory', step_id: `inventory-${n.toString(16).padStart(8, '0')}`, exit_code: 0, output });
}

/**
 * Host `i`'s inventory as text, cut where the two memory sizes go: built once
 * per host, since building, parsing and serialising a 10.9 KB inventory for
 * every reply was a share of the generator's CPU, which the API under test
 * does not get (~55 MB for 5,000 hosts).
 */
const inventoryCuts = new Map<number, [string, string, string]>();
function inventoryParts(i: number): [string, string, string] {
  let parts = inventoryCuts.get(i);
  if (!parts) {
    const inv = JSON.parse(inventoryFor(hostName(i), i)) as { memory: { physical_bytes: unknown; usable_bytes: unknown } };
    inv.memory.physical_bytes = '\u0001physical';
    inv.memory.usable_bytes = '\u0001usable';
    const text = JSON.stringify(inv);
    const [a, rest] = text.split('"\\u0001physical"') as [string, string];
    const [b, c] = rest.split('"\\u0001usable"') as [string, string];
    inventoryCuts.set(i, (parts = [a, b, c]));
  }
  return parts;
}

/** The name set-up gives host `i` (its inventory's hostname). */
export const hostName = (i: number): string => `worker-${String(i).padStart(6, '0')}`;

// ---- latency bookkeeping
class Recorder {
  scheduled = 0;
  completed = 0;
  errors = 0;
  timeouts = 0;
  non2xx = 0;
  skipped = 0;
  inFlight = 0;
  unanswered = 0;
  statusCodes: Record<string, number> = {};
  errorCodes: Record<string, number> = {};
  lateMaxMs = 0;
  all: number[] = [];
  kind: Record<'GET' | 'POST', number[]> = { GET: [], POST: [] };

  result(fromS: number, toS: number): WindowResult {
    return {
      fromS,
      toS,
      scheduled: this.scheduled,
      completed: this.completed,
      errors: this.errors,
      timeouts: this.timeouts,
      non2xx: this.non2xx,
      skipped: this.skipped,
      unanswered: this.unanswered,
      statusCodes: this.statusCodes,
      errorCodes: this.errorCodes,
      lateMaxMs: this.lateMaxMs,
      all: percentiles(this.all),
      byKind: { GET: percentiles(this.kind.GET), POST: percentiles(this.kind.POST) },
    };
  }
}

const REQUEST_TIMEOUT_MS = 10_000;

/** A request as the bytes an agent's HTTP client sends: request line, Host, the mix's headers, Content-Length, body. */
function requestBytes(r: MixRequest, port: number): Buffer {
  let head = `${r.method} ${r.path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n`;
  for (const [k, v] of Object.entries(r.headers)) head += `${k}: ${v}\r\n`;
  if (!r.body) return Buffer.from(`${head}\r\n`, 'latin1');
  return Buffer.concat([Buffer.from(`${head}content-length: ${r.body.length}\r\n\r\n`, 'latin1'), r.body]);
}

/**
 * The open loop (exported for its test); `mix` gives each request. With a
 * lead, `onMark` is called when the first request of the window is due.
 */
export function openLoop(port: number, mix: { next(): MixRequest }, cmd: OpenCommand, onMark?: () => void): Promise<OpenResult> {
  const { rate, seconds, maxSockets } = cmd;
  const leadMs = Math.max(0, cmd.leadSeconds ?? 0) * 1000;
  const windowMs = (cmd.windowSeconds ?? seconds) * 1000;
  const windowCount = Math.max(1, Math.ceil((seconds * 1000) / windowMs));
  const pool = new LeanPool(port, maxSockets, REQUEST_TIMEOUT_MS);
  const total = new Recorder();
  const windows = Array.from({ length: windowCount }, () => new Recorder());
  const bySecond: number[][] = [];
  const leadBySecond: number[][] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  let lastDone = 0;
  const interval = 1000 / rate;
  // The lead's requests are due from `start`, the window's from t0; both on one schedule.
  const start = performance.now();
  const t0 = start + leadMs;
  const end = t0 + seconds * 1000;
  let marked = leadMs === 0;
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
      pool.destroy();
      for (const rec of [total, ...windows]) rec.unanswered = rec.inFlight;
      const sum = total.result(0, seconds);
      const achieved = total.completed / Math.max(seconds, (lastDone - t0) / 1000);
      const secondsP99 = Array.from({ length: Math.ceil(seconds) }, (_, k) => (bySecond[k]?.length ? percentiles(bySecond[k]!).p99 : NaN));
      const leadSecondsP99 = Array.from({ length: Math.ceil(leadMs / 1000) }, (_, k) => (leadBySecond[k]?.length ? percentiles(leadBySecond[k]!).p99 : NaN));
      resolve({ ...sum, offered: rate, achieved, maxInFlight, secondsP99, leadSecondsP99, windows: windows.map((w, k) => w.result((k * windowMs) / 1000, Math.min(seconds, ((k + 1) * windowMs) / 1000))) });
    };
    // A lead request: sent on its schedule like the rest, its answer counted nowhere (it only keeps the load on).
    const fireLead = (due: number) => {
      if (inFlight >= inFlightCap) return;
      const r = mix.next();
      inFlight++;
      let done = false;
      pool.request(requestBytes(r, port), (o) => {
        if (done || resolved) return;
        done = true;
        inFlight--;
        if ('status' in o) (leadBySecond[Math.floor((due - start) / 1000)] ??= []).push(performance.now() - due);
        finish();
      });
    };
    const fire = (due: number) => {
      if (due < t0) return fireLead(due);
      if (!marked) {
        marked = true;
        onMark?.();
      }
      const w = windows[Math.min(windowCount - 1, Math.floor((due - t0) / windowMs))]!;
      total.scheduled++;
      w.scheduled++;
      const late = performance.now() - due;
      total.lateMaxMs = Math.max(total.lateMaxMs, late);
      w.lateMaxMs = Math.max(w.lateMaxMs, late);
      if (inFlight >= inFlightCap) {
        total.skipped++;
        w.skipped++;
        return;
      }
      const r = mix.next();
      inFlight++;
      total.inFlight++;
      w.inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      let done = false;
      const settle = (status: number | undefined, err?: 'error' | 'timeout', code?: string) => {
        if (done || resolved) return;
        done = true;
        inFlight--;
        for (const rec of [total, w]) {
          rec.inFlight--;
          if (err === 'timeout') rec.timeouts++;
          else if (err) {
            rec.errors++;
            const c = code ?? 'unknown';
            rec.errorCodes[c] = (rec.errorCodes[c] ?? 0) + 1;
          }
          else {
            rec.completed++;
            rec.statusCodes[String(status)] = (rec.statusCodes[String(status)] ?? 0) + 1;
            if (!status || status < 200 || status >= 300) rec.non2xx++;
          }
        }
        if (!err) {
          lastDone = performance.now();
          const took = lastDone - due;
          (bySecond[Math.floor((due - t0) / 1000)] ??= []).push(took);
          for (const rec of [total, w]) {
            rec.all.push(took);
            rec.kind[r.kind].push(took);
          }
        }
        finish();
      };
      pool.request(requestBytes(r, port), (o) => ('status' in o ? settle(o.status) : settle(undefined, o.error, o.code)));
    };
    let sent = 0;
    // Each tick sends everything due by now, then sleeps until the next request is due (at
    // least 1 ms: timers are no finer), so a low rate costs no more wake-ups than it needs.
    const tick = () => {
      const now = Math.min(performance.now(), end);
      while (start + sent * interval <= now && start + sent * interval < end) fire(start + sent++ * interval);
      if (now >= end || start + sent * interval >= end) {
        ticking = false;
        // Whatever has not answered 15 s after the end is abandoned, and counted as unanswered.
        drainTimer = setTimeout(() => finish(true), 15_000);
        finish();
        return;
      }
      setTimeout(tick, Math.max(1, start + sent * interval - performance.now()));
    };
    tick();
  });
}

// ---- closed loop: autocannon has no bundled types; the part of its programmatic API used here.
interface AcRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  setupRequest?: (req: AcRequest, context: Record<string, unknown>) => AcRequest;
}
interface AcResult {
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCodeStats: Record<string, { count: number }>;
  requests: { total: number };
}
interface AcInstance {
  on(event: 'response', fn: (client: { requestIterator?: { context?: Record<string, unknown> } }, status: number, bytes: number, ms: number) => void): void;
  stop(): void;
}
type Autocannon = (opts: Record<string, unknown>, cb: (err: Error | null, result: AcResult) => void) => AcInstance;

function closedLoop(port: number, mix: Mix, cmd: ClosedCommand): Promise<ClosedResult> {
  const autocannon = require('autocannon') as Autocannon;
  const all: number[] = [];
  const kind: Record<'GET' | 'POST', number[]> = { GET: [], POST: [] };
  const template: AcRequest = {
    setupRequest: (req, context) => {
      const r = mix.next();
      context.kind = r.kind;
      // Fresh objects every time: autocannon shares the template's headers between builds.
      req.method = r.method;
      req.path = r.path;
      req.headers = { ...r.headers };
      req.body = r.body ?? Buffer.alloc(0);
      return req;
    },
  };
  return new Promise((resolve, reject) => {
    const inst = autocannon({ url: `http://127.0.0.1:${port}`, connections: cmd.connections, duration: cmd.seconds, requests: [template], timeout: REQUEST_TIMEOUT_MS / 1000 }, (err, r) => {
      if (err) return reject(err);
      const statusCodes = Object.fromEntries(Object.entries(r.statusCodeStats).map(([c, v]) => [c, v.count]));
      resolve({ seconds: r.duration, completed: r.requests.total, requestsPerSecond: r.requests.total / r.duration, errors: r.errors, timeouts: r.timeouts, non2xx: r.non2xx, statusCodes, all: percentiles(all), byKind: { GET: percentiles(kind.GET), POST: percentiles(kind.POST) } });
    });
    // The response event comes before the connection builds its next request, so the context still names this one.
    inst.on('response', (client, _status, _bytes, took) => {
      all.push(took);
      const k = client.requestIterator?.context?.kind;
      if (k === 'GET' || k === 'POST') kind[k].push(took);
    });
  });
}

// ---- the child's main loop
function send(m: LoadMessage): void {
  process.send!(m);
}

if (require.main === module) {
  if (!process.send) {
    process.stderr.write('bench/agent-load is started by bench/agent-api.js or bench/soak.js (it needs an IPC channel)\n');
    process.exit(2);
  }
  let port = 0;
  let mix: Mix | undefined;
  // The parent going away ends the generator too.
  process.on('disconnect', () => process.exit(0));
  process.on('message', (m: LoadCommand) => {
    if (m.type === 'init') {
      port = m.port;
      mix = new Mix(m.stepsPaths, m.postRatio);
      send({ type: 'ready' });
    } else if (m.type === 'stop') {
      process.exit(0);
    } else if (!mix) {
      send({ type: 'failed', id: m.id, error: 'not initialised' });
    } else if (m.type === 'open') {
      openLoop(port, mix, m, () => send({ type: 'mark', id: m.id })).then(
        (result) => send({ type: 'open-result', id: m.id, result }),
        (err: unknown) => send({ type: 'failed', id: m.id, error: String(err) }),
      );
    } else if (m.type === 'closed') {
      closedLoop(port, mix, m).then(
        (result) => send({ type: 'closed-result', id: m.id, result }),
        (err: unknown) => send({ type: 'failed', id: m.id, error: String(err) }),
      );
    }
  });
}
