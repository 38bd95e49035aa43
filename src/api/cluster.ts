/**
 * `landfall api` on every core: with API_PROCESSES > 1 the process started is
 * a primary that serves nothing itself. It forks that many workers, each a
 * whole API (startApi) sharing the port through node:cluster (the primary
 * accepts connections and hands them round-robin to the workers), plus one
 * more that serves nothing and refreshes what agents report
 * (refresher-process.ts; none with API_REFRESHER=false), and:
 * - brings a worker that dies back with backoff (Restarter), once all have
 *   listened; a worker that dies before the API is up stops the start (a bad
 *   setting or a taken port would otherwise loop forever);
 * - on SIGTERM/SIGINT asks every worker to shut down gracefully and exits
 *   when all have, or kills them after SHUTDOWN_TIMEOUT_MS;
 * - answers the workers' requests for the process-local metrics of all of
 *   them, so /metrics from any worker covers the whole API (summed, as
 *   PROCESS_LOCAL_METRICS says), and the database-read series once.
 * A worker exits when its IPC channel to the primary closes: a primary
 * killed with SIGKILL takes its workers with it, nothing is left holding the
 * port or the database.
 *
 * Nothing here shares state between workers that changes an answer: they are
 * replicas on one machine, as several `landfall api` behind a balancer are.
 */
import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { Config } from '../config';
import type { Logger } from '../logger';
import { Restarter } from '../dev/process-utils';
import { PROCESS_LOCAL_METRICS } from '../metrics';

const LOCAL_REQ = 'landfall:local-metrics-req';
const LOCAL_RES = 'landfall:local-metrics-res';
const CLUSTER_REQ = 'landfall:cluster-metrics-req';
const CLUSTER_RES = 'landfall:cluster-metrics-res';
/** How long the primary waits for the workers' metrics (a busy worker answers late; its series are then left out). */
const GATHER_MS = 2000;

/**
 * The refresher keeps a copy of every host it refreshes and replaces entries
 * as facts change, so its heap is a large live set with steady garbage. V8
 * lets the old generation grow well past the live set between full
 * collections (its factor goes up to 4): at 10,000 hosts its heap swung
 * between ~0.33 and ~0.78 GB, and its RSS followed the peaks, reached only in
 * the second minute of load (bench/soak). A growing factor of 1.5 collects
 * sooner.
 *
 * No forced compaction: when the copy held every inventory parsed, its old
 * generation kept taking pages while its live size stayed flat (a parsed
 * inventory lives until the host's next report, then leaves a hole), RSS +13
 * MB a minute, and compacting at every full collection was what kept it flat.
 * The inventories are now kept as text outside V8's heap
 * (facts-builder.ts KeptInventory), and without compaction the 10-minute soak
 * held: API RSS +1.9 % (refresher 423 → 441 MB), where compacting collections
 * cost 160–250 ms each at 5,000 hosts under load and the others 8–60 ms
 * (bench/README.md, 2026-11-29, seventh session). The refresher answers no
 * agent: its collections delay a refresh, and a read waiting for one.
 */
export const REFRESHER_V8_ARGS: readonly string[] = ['--heap-growing-percent=50'];

type Message = { type?: string; id?: number; metrics?: unknown[]; text?: string };

export function isApiWorker(): boolean {
  return cluster.isWorker;
}

/** Runs the primary until every worker has exited after a SIGTERM/SIGINT (or start-up failed). */
export function runApiPrimary(cfg: Config, logger: Logger): void {
  const n = cfg.api.processes;
  const slotOf = new Map<number, number>();
  const restarters: Restarter[] = [];
  let stopping = false;
  let up = false;
  let listening = 0;
  let exitCode = 0;

  // Slots 0…n-1 serve; slot n, when the API refreshes, is its refresher (src/api/refresher-process.ts).
  const refresherSlot = cfg.apiRefresher ? n : undefined;
  const fork = (slot: number): Worker => {
    // Each fork gets the settings of the last setupPrimary: the refresher its own V8 flags, the others none added.
    cluster.setupPrimary({ execArgv: [...process.execArgv, ...(slot === refresherSlot ? REFRESHER_V8_ARGS : [])] });
    const w = cluster.fork({ API_PROCESS_ROLE: slot === refresherSlot ? 'refresh' : 'serve' });
    slotOf.set(w.id, slot);
    w.on('message', (m: Message) => void answerClusterMetrics(w, m));
    return w;
  };
  const alive = () => Object.values(cluster.workers ?? {}).filter((w): w is Worker => Boolean(w) && !w!.isDead());

  const shutdown = (code: number, why: string) => {
    if (stopping) return;
    stopping = true;
    exitCode = code;
    logger.info({ processes: alive().length, why }, 'api stopping its processes');
    for (const w of alive()) w.process.kill('SIGTERM');
    setTimeout(() => {
      for (const w of alive()) w.process.kill('SIGKILL');
      process.exit(1);
    }, cfg.shutdownTimeoutMs + 2000).unref();
    if (alive().length === 0) process.exit(exitCode);
  };

  cluster.on('listening', (w) => {
    if (up || stopping) return;
    listening++;
    if (listening === n) {
      up = true;
      logger.info({ processes: n, pids: alive().map((x) => x.process.pid) }, 'api processes listening');
    }
    void w;
  });
  cluster.on('exit', (w, code, signal) => {
    const slot = slotOf.get(w.id)!;
    slotOf.delete(w.id);
    if (stopping) {
      if (alive().length === 0) process.exit(exitCode);
      return;
    }
    if (!up) {
      logger.error({ pid: w.process.pid, code, signal }, 'an api process exited during start-up; stopping');
      shutdown(1, 'start-up failed');
      return;
    }
    void restarters[slot]!.died({ pid: w.process.pid, code, signal });
  });

  process.once('SIGTERM', () => shutdown(0, 'SIGTERM'));
  process.once('SIGINT', () => shutdown(0, 'SIGINT'));

  logger.info({ processes: n, port: cfg.api.port }, 'api starting its processes');
  for (let slot = 0; slot < n + (refresherSlot === undefined ? 0 : 1); slot++) {
    restarters[slot] = new Restarter(slot === refresherSlot ? 'api refresher' : `api process ${slot}`, logger, () => stopping, async () => void fork(slot));
    fork(slot);
    restarters[slot]!.started();
  }

  /** One worker asks for every worker's process-local series: gather them, sum them, answer it. */
  async function answerClusterMetrics(asker: Worker, m: Message) {
    if (m?.type !== CLUSTER_REQ) return;
    const workers = alive().filter((w) => w.isConnected());
    const gathered: unknown[][] = [];
    await new Promise<void>((resolve) => {
      let pending = workers.length;
      const key = Math.random();
      const timer = setTimeout(finish, GATHER_MS);
      const listeners = workers.map((w) => {
        const l = (r: Message & { key?: number }) => {
          if (r?.type !== LOCAL_RES || r.key !== key) return;
          gathered.push(r.metrics ?? []);
          if (--pending === 0) finish();
        };
        w.on('message', l);
        w.send({ type: LOCAL_REQ, key });
        return [w, l] as const;
      });
      function finish() {
        clearTimeout(timer);
        for (const [w, l] of listeners) w.off('message', l);
        resolve();
      }
      if (pending === 0) finish();
    });
    let text = '';
    try {
      text = await AggregatorRegistry.aggregate(gathered as never).metrics();
    } catch (err) {
      logger.warn({ err: (err as Error).message }, 'could not sum the api processes metrics');
    }
    if (asker.isConnected()) asker.send({ type: CLUSTER_RES, id: m.id, text });
  }
}

/**
 * In a worker: answer the primary's requests for this process's local series,
 * and leave when the primary is gone (its IPC channel closed).
 */
export function joinApiCluster(registry: Registry, logger: Logger): void {
  process.on('message', (m: Message & { key?: number }) => {
    if (m?.type !== LOCAL_REQ) return;
    void Promise.all(PROCESS_LOCAL_METRICS.map((name) => registry.getSingleMetric(name)?.get())).then(
      (metrics) => process.send?.({ type: LOCAL_RES, key: m.key, metrics: metrics.filter(Boolean) }),
      () => process.send?.({ type: LOCAL_RES, key: m.key, metrics: [] }),
    );
  });
  // Node's cluster worker also exits on an unexpected disconnect; this says why in the log and does not rely on it.
  process.once('disconnect', () => {
    logger.warn('the api primary is gone; exiting');
    process.exit(0);
  });
}

let nextId = 0;
const waiting = new Map<number, (text: string | undefined) => void>();

/**
 * /metrics in a worker: the series read from PostgreSQL from this process (once),
 * the process-local ones summed over every worker by the primary.
 */
export async function clusterMetricsText(registry: Registry): Promise<string> {
  const local = new Set(PROCESS_LOCAL_METRICS);
  const names = (registry.getMetricsAsArray() as unknown as Array<{ name: string }>).map((m) => m.name).filter((name) => !local.has(name));
  const shared = await Promise.all(names.map((name) => registry.getSingleMetricAsString(name)));
  const id = nextId++;
  if (waiting.size === 0) process.on('message', onClusterMetrics);
  const summed = await new Promise<string | undefined>((resolve) => {
    const timer = setTimeout(() => settle(undefined), GATHER_MS + 1000);
    const settle = (text: string | undefined) => {
      clearTimeout(timer);
      waiting.delete(id);
      if (waiting.size === 0) process.off('message', onClusterMetrics);
      resolve(text);
    };
    waiting.set(id, settle);
    process.send?.({ type: CLUSTER_REQ, id });
  });
  // Without the primary's answer, this process's own series: better than none.
  const localText = summed ?? (await Promise.all(PROCESS_LOCAL_METRICS.filter((name) => registry.getSingleMetric(name)).map((name) => registry.getSingleMetricAsString(name)))).join('\n');
  return `${[...shared, localText.trimEnd()].join('\n')}\n`;
}

function onClusterMetrics(m: Message) {
  if (m?.type === CLUSTER_RES && typeof m.id === 'number') waiting.get(m.id)?.(m.text ?? '');
}
