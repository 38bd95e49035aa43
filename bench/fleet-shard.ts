/**
 * A share of bench/fleet-real.ts's simulated fleet: some of its clusters, each
 * one `runFleet` (agent/fleet.ts: the agent loop, the simulated executor, every
 * step handed out run and answered), with the generator's own gauges
 * (bench/fleet-gauges.ts) and its requests' times.
 *
 * Run in a child process of its own (`fork` of this file; it is driven over
 * IPC), so no one process carries 20,000 agents: with all of them in one
 * process, its garbage collection and event-loop lag were timed as the
 * service's latency. `startShard` is also what runs the whole fleet inside the
 * bench's process (`--fleet-processes 0`, the way it was measured before).
 */
import { setMaxListeners } from 'node:events';
import { runFleet, type FleetTotals } from '../agent/fleet';
import { sleep } from '../src/dev/process-utils';
import { GeneratorGauges, RequestTimes, kindOf, type GaugeReading, type Samples } from './fleet-gauges';

export interface ShardSpec {
  serviceUrl: string;
  /** The clusters of this share: k is the cluster's index in the whole fleet (its seed and its slice of the ramp). */
  clusters: Array<{ k: number; infraEnvId: string; count: number }>;
  totalClusters: number;
  hostsPerCluster: number;
  rampSeconds: number;
  /** Keep-alive sockets each cluster's fleet may open. */
  connectionsPerFleet: number;
  /** Agents post every result (the upstream agent), not only changed ones. */
  answerEveryStep: boolean;
}

export interface ShardWindow {
  samples: Samples;
  answers: Record<string, number>;
  gauges: GaugeReading;
}

export interface Shard {
  totals(): FleetTotals;
  startWindow(): void;
  endWindow(): ShardWindow;
  stop(): Promise<void>;
}

export function sumTotals(all: FleetTotals[]): FleetTotals {
  const acc: FleetTotals = { registered: 0, polls: 0, replies: 0, skipped: 0, failures: 0, steps: {} };
  for (const t of all) {
    acc.registered += t.registered;
    acc.polls += t.polls;
    acc.replies += t.replies;
    acc.skipped += t.skipped;
    acc.failures += t.failures;
    for (const [k, v] of Object.entries(t.steps)) acc.steps[k] = (acc.steps[k] ?? 0) + v;
  }
  return acc;
}

export function startShard(spec: ShardSpec): Shard {
  const stop = new AbortController();
  // One signal for every cluster's fleet: hundreds of listeners are expected, not a leak.
  setMaxListeners(0, stop.signal);
  const times = new RequestTimes('/api/assisted-install/v2');
  const gauges = new GeneratorGauges();
  const answers: Record<string, number> = {};
  const observe = (a: { method: string; path: string; status: number; ms: number }) => {
    times.observe(a);
    if (!times.recording) return;
    const key = `${kindOf(a.method, a.path)} ${a.status}`;
    answers[key] = (answers[key] ?? 0) + 1;
  };
  const readers: Array<() => FleetTotals> = [];
  const workers = spec.hostsPerCluster - 3;
  // The fleets run until the bench stops them (a boot slower than the ramp must not end them inside the window).
  const total = 24 * 3600;
  const fleets = spec.clusters.map(async ({ k, infraEnvId, count }) => {
    // Fleet k's hosts boot in the k-th slice of each ramp step, so the whole fleet's boots (and so its polls) are spread evenly.
    await sleep(((spec.rampSeconds * 1000) / spec.hostsPerCluster) * (k / spec.totalClusters));
    if (stop.signal.aborted) return;
    await runFleet(
      {
        serviceUrl: spec.serviceUrl,
        infraEnvId,
        count,
        mix: count > 3 ? `control-plane:3,worker:${Math.min(workers, count - 3)}` : 'control-plane',
        seed: `real-${k}`,
        durationSeconds: total,
        rampSeconds: spec.rampSeconds,
        observe,
        connections: spec.connectionsPerFleet,
        answerEveryStep: spec.answerEveryStep,
        onTotals: (r) => readers.push(r),
      },
      stop.signal,
    );
  });
  return {
    totals: () => sumTotals(readers.map((r) => r())),
    startWindow: () => {
      times.recording = true;
      gauges.start();
    },
    endWindow: () => {
      const reading = gauges.stop();
      times.recording = false;
      return { samples: times.samples, answers: { ...answers }, gauges: reading };
    },
    stop: async () => {
      stop.abort();
      await Promise.allSettled(fleets);
      times.close();
    },
  };
}

/** The IPC protocol between fleet-real.ts and a shard in its own process. */
export type ToShard = { type: 'start'; spec: ShardSpec } | { type: 'totals'; id: number } | { type: 'window-start' } | { type: 'window-end'; id: number } | { type: 'stop'; id: number };
export type FromShard = { type: 'started' } | { type: 'totals'; id: number; totals: FleetTotals } | { type: 'window'; id: number; window: ShardWindow } | { type: 'stopped'; id: number } | { type: 'failed'; message: string };

function serveOverIpc(): void {
  let shard: Shard | undefined;
  const send = (m: FromShard) => process.send!(m);
  process.on('message', (m: ToShard) => {
    switch (m.type) {
      case 'start':
        shard = startShard(m.spec);
        send({ type: 'started' });
        break;
      case 'totals':
        send({ type: 'totals', id: m.id, totals: shard!.totals() });
        break;
      case 'window-start':
        shard!.startWindow();
        break;
      case 'window-end':
        send({ type: 'window', id: m.id, window: shard!.endWindow() });
        break;
      case 'stop':
        void (shard?.stop() ?? Promise.resolve()).then(() => {
          send({ type: 'stopped', id: m.id });
          process.disconnect();
        });
        break;
    }
  });
  // The bench gone (killed, crashed): this share stops with it.
  process.on('disconnect', () => void (shard?.stop() ?? Promise.resolve()).finally(() => process.exit(0)));
}

if (require.main === module && process.send) serveOverIpc();

/**
 * The fleet's clusters shared out over processes: `probe` clusters spread
 * evenly over the fleet (so their boots, and so their polls, fall across the
 * ramp like everyone's) go to a process of their own; the rest in runs of
 * `perProcess`. Cluster indices, in order.
 */
export function shareClusters(clusters: number, perProcess: number, probe: number): { probe: number[]; shares: number[][] } {
  const n = Math.max(0, Math.min(probe, clusters - 1));
  const stride = n ? clusters / n : 0;
  const probes = Array.from({ length: n }, (_, i) => Math.floor(i * stride + stride / 2));
  const isProbe = new Set(probes);
  const rest = Array.from({ length: clusters }, (_, k) => k).filter((k) => !isProbe.has(k));
  const shares: number[][] = [];
  const size = Math.max(1, perProcess);
  for (let i = 0; i < rest.length; i += size) shares.push(rest.slice(i, i + size));
  return { probe: probes, shares };
}
