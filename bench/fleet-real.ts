/**
 * Real agent behaviour as the benchmark of record (not a timed test): N
 * simulated hosts (agent/fleet.ts, the simulated executor: the agent loop of
 * agent/agent.ts, replies shaped like the real agent's) against the whole
 * stack as `npm start` runs it (`landfall dev`: api, worker, Temporal,
 * PostgreSQL), at the service's own cadence (the poll interval the service
 * answers, 60 s; nothing compressed), in clusters of 50 (3 control-plane + 47
 * workers, API and ingress VIPs given, so hosts become known and are handed
 * the discovery checks with 49 peers).
 *
 *   npm run bench:fleet-real -- [--hosts 20000] [--ramp-seconds 180] [--warmup-seconds 330]
 *                               [--duration-seconds 900] [--step-repeat-seconds S] [--json FILE]
 *
 * After the ramp (hosts boot spread over it) and a warm-up (the first round
 * of every discovery step), it measures over a window of ≥ 3× the longest
 * step repeat interval: polls/s, replies/s, steps handed out per poll by
 * type against the cadence the intervals imply, poll and reply p50/p99 (as
 * the agents saw them), CPU of the api, worker, Temporal, PostgreSQL and the
 * fleet (this process) per 1,000 hosts, and RSS; then extrapolates to
 * 100,000 hosts against the budget of 2 cores (1.2 ms of CPU per host per
 * minute). Everything runs on 127.0.0.1; everything it starts is stopped.
 */
import { spawnSync } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import { runFleet, type FleetReport, type FleetTotals } from '../agent/fleet';
import { AGENT_VERSION } from '../agent/config';
import { skippedFor } from '../src/domain/host-steps';
import { sleep } from '../src/dev/process-utils';
import {
  CpuMeter,
  createBenchClusters,
  fmtNum,
  keepAliveClient,
  latencyLine,
  loadAverage,
  percentiles,
  pgQuery,
  resultFile,
  rssMb,
  startDevStack,
  treeRssKb,
  type DevStack,
} from './support';

interface Options {
  hosts: number;
  hostsPerCluster: number;
  rampSeconds: number;
  warmupSeconds: number;
  durationSeconds?: number;
  stepRepeatSeconds?: number;
  json?: string;
}

const USAGE = `usage: node dist/bench/fleet-real.js [options]
  --hosts N                  simulated hosts (default 20000)
  --hosts-per-cluster N      hosts per cluster (default 50)
  --ramp-seconds S           hosts boot spread over this long (default 180)
  --warmup-seconds S         after the ramp, before measuring (default: the longest repeat interval + 30 s)
  --duration-seconds S       the measured window (default: 3x the longest repeat interval)
  --step-repeat-seconds S    set every discovery step's repeat interval to S (STEP_REPEAT_<TYPE>_SECONDS; needs a tree with those settings)
  --json FILE                the result file (default bench/results/fleet-real-<time>.json)
`;

function parseArgs(argv: string[]): Options {
  const o: Options = { hosts: 20_000, hostsPerCluster: 50, rampSeconds: 180, warmupSeconds: -1 };
  const num = (name: string, v: string | undefined, min: number, max: number) => {
    const n = Number(v);
    if (v === undefined || !Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be a whole number in [${min}, ${max}] (got ${v ?? 'nothing'})\n${USAGE}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = () => argv[++i];
    switch (a) {
      case '--hosts': o.hosts = num(a, next(), 1, 100_000); break;
      case '--hosts-per-cluster': o.hostsPerCluster = num(a, next(), 5, 200); break;
      case '--ramp-seconds': o.rampSeconds = num(a, next(), 0, 3600); break;
      case '--warmup-seconds': o.warmupSeconds = num(a, next(), 0, 3600); break;
      case '--duration-seconds': o.durationSeconds = num(a, next(), 10, 24 * 3600); break;
      case '--step-repeat-seconds': o.stepRepeatSeconds = num(a, next(), 1, 24 * 3600); break;
      case '--json': o.json = next(); break;
      case '--help': case '-h': process.stdout.write(USAGE); process.exit(0); break;
      default: throw new Error(`unknown option ${a}\n${USAGE}`);
    }
  }
  return o;
}

/** The service's repeat intervals (ms by step type): the settings module where the tree has one, else the older constant. */
function defaultRepeatMs(): Record<string, number> {
  try {
    return { ...(require('../src/services/step-cadence') as { DEFAULT_STEP_REPEAT_MS: Record<string, number> }).DEFAULT_STEP_REPEAT_MS };
  } catch {
    return { ...(require('../src/services/step-args') as { STEP_REPEAT_MS: Record<string, number> }).STEP_REPEAT_MS };
  }
}

const out = (s: string) => process.stdout.write(`${s}\n`);
const STACK = ['api', 'worker', 'temporal', 'postgres', 'supervisor'] as const;
const BUDGET_MS_PER_HOST_MINUTE = 1.2; // 2 cores for 100,000 hosts: 120 core-s per minute / 100,000

type Kind = 'poll' | 'reply' | 'register' | 'other';
function kindOf(method: string, p: string): Kind {
  if (p.includes('/instructions')) return method === 'GET' ? 'poll' : 'reply';
  if (method === 'POST' && p.endsWith('/hosts')) return 'register';
  return 'other';
}

function sumTotals(readers: Array<() => FleetTotals>): FleetTotals {
  const acc: FleetTotals = { registered: 0, polls: 0, replies: 0, skipped: 0, failures: 0, steps: {} };
  for (const read of readers) {
    const t = read();
    acc.registered += t.registered;
    acc.polls += t.polls;
    acc.replies += t.replies;
    acc.skipped += t.skipped;
    acc.failures += t.failures;
    for (const [k, v] of Object.entries(t.steps)) acc.steps[k] = (acc.steps[k] ?? 0) + v;
  }
  return acc;
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const repeatMs = defaultRepeatMs();
  if (o.stepRepeatSeconds !== undefined) for (const k of Object.keys(repeatMs)) repeatMs[k] = o.stepRepeatSeconds * 1000;
  const longestS = Math.max(...Object.values(repeatMs)) / 1000;
  const duration = o.durationSeconds ?? 3 * longestS;
  const warmup = o.warmupSeconds >= 0 ? o.warmupSeconds : longestS + 30;
  const dog = setTimeout(() => {
    process.stderr.write('fleet-real: watchdog expired\n');
    process.exit(2);
  }, (o.rampSeconds + warmup + duration + 900) * 1000 + o.hosts * 50);
  dog.unref();
  let stack: DevStack | undefined;
  const stopFleet = new AbortController();
  // One signal for every cluster's fleet: hundreds of listeners are expected, not a leak.
  setMaxListeners(0, stopFleet.signal);
  const fleets: Array<Promise<FleetReport>> = [];
  const stopAll = async () => {
    stopFleet.abort();
    await Promise.allSettled(fleets);
    await stack?.stop();
  };
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void stopAll().finally(() => process.exit(130)));
  try {
    const load0 = loadAverage();
    const stepEnv = o.stepRepeatSeconds !== undefined ? Object.fromEntries(Object.keys(repeatMs).map((t) => [`STEP_REPEAT_${t.toUpperCase().replace(/-/g, '_')}_SECONDS`, String(o.stepRepeatSeconds)])) : {};
    out(`fleet-real: ${fmtNum(o.hosts)} simulated hosts, clusters of ${o.hostsPerCluster}, service cadence; repeat intervals ${Object.entries(repeatMs).map(([k, v]) => `${k} ${v / 1000} s`).join(', ')}; ramp ${o.rampSeconds} s, warm-up ${warmup} s, window ${duration} s; load ${load0}`);
    stack = await startDevStack({ env: stepEnv });
    const s = stack;
    const port = Number(new URL(s.url).port);
    const client = keepAliveClient(port, 8);
    const clusters = Math.ceil(o.hosts / o.hostsPerCluster);
    // The simulated network is 192.168.127.0/24 and up (agent/executors/simulated.ts): the machine network is derived from the hosts.
    const infraEnvs = await createBenchClusters(client, clusters, 'real', { api_vips: [{ ip: '192.168.127.250' }], ingress_vips: [{ ip: '192.168.127.251' }] });
    client.close();

    // ---- what the agents saw, per request kind, recorded only inside the window
    let recording = false;
    const lat: Record<Kind, number[]> = { poll: [], reply: [], register: [], other: [] };
    const statuses: Record<string, number> = {};
    const observe = (a: { method: string; path: string; status: number; ms: number }) => {
      if (!recording) return;
      const k = kindOf(a.method, a.path);
      lat[k].push(a.ms);
      const key = `${k} ${a.status}`;
      statuses[key] = (statuses[key] ?? 0) + 1;
    };
    const readers: Array<() => FleetTotals> = [];
    // The fleets run until this bench stops them (a boot slower than the ramp must not end them inside the window).
    const total = 24 * 3600;
    const workers = o.hostsPerCluster - 3;
    for (let k = 0; k < clusters; k++) {
      const count = Math.min(o.hostsPerCluster, o.hosts - k * o.hostsPerCluster);
      fleets.push(
        (async () => {
          // Fleet k's hosts boot in the k-th slice of each ramp step, so the whole fleet's boots (and so its polls) are spread evenly.
          await sleep(((o.rampSeconds * 1000) / o.hostsPerCluster) * (k / clusters));
          return runFleet(
            { serviceUrl: s.url, infraEnvId: infraEnvs[k]!, count, mix: count > 3 ? `control-plane:3,worker:${Math.min(workers, count - 3)}` : 'control-plane', seed: `real-${k}`, durationSeconds: total, rampSeconds: o.rampSeconds, observe,
              // One process runs every fleet: 64 sockets each would pass the open-file limit (20,000 here) at 400 clusters.
              connections: Math.max(2, Math.floor(8000 / clusters)), onTotals: (r) => readers.push(r) },
            stopFleet.signal,
          );
        })(),
      );
    }
    const t0 = Date.now();
    let registered = 0;
    while (Date.now() - t0 < o.rampSeconds * 1000 || registered < o.hosts) {
      await sleep(10_000);
      const t = sumTotals(readers);
      registered = t.registered;
      out(`  ${fmtNum((Date.now() - t0) / 1000)} s: ${fmtNum(t.registered)}/${fmtNum(o.hosts)} registered, ${fmtNum(t.polls)} polls, ${fmtNum(t.replies)} replies, ${fmtNum(t.failures)} failures`);
      if (Date.now() - t0 > (o.rampSeconds + 1200) * 1000) throw new Error(`only ${registered} of ${o.hosts} hosts registered after ${o.rampSeconds + 1200} s`);
    }
    const bootSeconds = (Date.now() - t0) / 1000;
    out(`all ${fmtNum(o.hosts)} hosts registered after ${fmtNum(bootSeconds)} s; warming up for ${warmup} s`);
    await sleep(warmup * 1000);

    // ---- the window
    const pids = () => s.pids();
    const meter = new CpuMeter({ api: () => pids().api, worker: () => pids().worker, temporal: () => pids().temporal, postgres: () => pids().postgres, supervisor: { only: s.pid }, fleet: 'self' });
    const rssPeak: Record<string, number> = {};
    const sampleRss = () => {
      for (const [k, pid] of Object.entries(pids())) if (pid) rssPeak[k] = Math.max(rssPeak[k] ?? 0, k === 'supervisor' ? rssMb(pid) : treeRssKb(pid) / 1024);
      rssPeak.fleet = Math.max(rssPeak.fleet ?? 0, rssMb(process.pid));
    };
    const sampler = setInterval(sampleRss, 5_000);
    const loadW0 = loadAverage();
    const before = sumTotals(readers);
    const statusesBefore = await pgQuery<{ status: string; n: number }>(s.databaseUrl, 'select status, count(*)::int as n from hosts group by status order by n desc');
    out(`measuring ${duration} s; host statuses ${statusesBefore.map((x) => `${x.status} ${fmtNum(x.n)}`).join(', ')}`);
    recording = true;
    meter.start();
    for (let left = duration; left > 0; left -= 60) {
      await sleep(Math.min(60, left) * 1000);
      const t = sumTotals(readers);
      out(`  window ${fmtNum(duration - left + Math.min(60, left))} s: ${fmtNum((t.polls - before.polls) / (duration - left + Math.min(60, left)), 1)} polls/s, ${fmtNum(t.failures - before.failures)} failures; load ${loadAverage()}`);
    }
    const cpu = meter.stop();
    recording = false;
    clearInterval(sampler);
    sampleRss();
    const after = sumTotals(readers);
    const statusesAfter = await pgQuery<{ status: string; n: number }>(s.databaseUrl, 'select status, count(*)::int as n from hosts group by status order by n desc');

    // ---- figures
    const secs = cpu.seconds;
    const polls = after.polls - before.polls;
    const replies = after.replies - before.replies;
    const skipped = after.skipped - before.skipped;
    const failures = after.failures - before.failures;
    const pollPeriod = (secs * o.hosts) / Math.max(1, polls);
    const steps = Object.fromEntries(Object.keys({ ...after.steps, ...repeatMs }).map((k) => [k, (after.steps[k] ?? 0) - (before.steps[k] ?? 0)]));
    const cadence = Object.entries(steps).map(([type, n]) => {
      const perPoll = n / Math.max(1, polls);
      const every = repeatMs[type];
      // With a poll every P s, a step repeated every R s goes out on every ceil(R/P)-th poll; never, if this agent is not asked for it.
      const expected = every === undefined ? undefined : skippedFor(AGENT_VERSION).includes(type) ? 0 : 1 / Math.max(1, Math.ceil(every / 1000 / pollPeriod - 1e-9));
      const deviation = expected === undefined || expected === 0 ? undefined : perPoll / expected - 1;
      const within10 = expected === undefined ? undefined : expected === 0 ? n === 0 : Math.abs(deviation!) <= 0.1;
      return { type, handedOut: n, perPoll, expectedPerPoll: expected, deviation, within10 };
    });
    const pollLat = percentiles(lat.poll);
    const replyLat = percentiles(lat.reply);
    const stackCores = STACK.reduce((sum, k) => sum + (cpu.cores[k] ?? 0), 0);
    const per1000 = Object.fromEntries(Object.entries(cpu.cores).map(([k, v]) => [k, (v * 1000) / o.hosts]));
    const msPerHostMinute = (stackCores * 60 * 1000) / o.hosts;
    const at100k = (stackCores * 100_000) / o.hosts;

    out('');
    out(`fleet-real: ${fmtNum(o.hosts)} simulated hosts in ${fmtNum(clusters)} clusters, ${secs.toFixed(0)} s window, ${os.cpus().length} CPUs; load ${load0} at start, ${loadW0} at the window's start, ${loadAverage()} at its end`);
    out(`  statuses    before ${statusesBefore.map((x) => `${x.status} ${fmtNum(x.n)}`).join(', ')}; after ${statusesAfter.map((x) => `${x.status} ${fmtNum(x.n)}`).join(', ')}`);
    out(`  polls       ${fmtNum(polls / secs, 1)}/s (a poll every ${fmtNum(pollPeriod, 1)} s per host), replies ${fmtNum(replies / secs, 1)}/s, replies held back as unchanged ${fmtNum(skipped / secs, 1)}/s, failures ${fmtNum(failures)}`);
    out(`  poll        ${latencyLine(pollLat)}   (target p99 < 50 ms → ${pollLat.p99 < 50 ? 'MET' : 'MISSED'})`);
    out(`  reply       ${latencyLine(replyLat)}`);
    out(`  answers     ${Object.entries(statuses).map(([k, v]) => `${k}: ${fmtNum(v)}`).join(', ')}`);
    out(`  steps per poll, by type (expected from the repeat interval and the measured poll period; target within 10 %):`);
    for (const c of cadence) {
      out(`    ${c.type.padEnd(30)} ${fmtNum(c.handedOut).padStart(9)}   ${fmtNum(c.perPoll, 3)}/poll   expected ${c.expectedPerPoll === undefined ? '—' : fmtNum(c.expectedPerPoll, 3)}   ${c.within10 === undefined ? '' : `${c.deviation === undefined ? '(not asked of this agent)' : `${c.deviation >= 0 ? '+' : ''}${fmtNum(c.deviation * 100, 1)} %`} → ${c.within10 ? 'MET' : 'MISSED'}`}`);
    }
    out(`  CPU (cores) ${Object.entries(cpu.cores).map(([k, v]) => `${k} ${fmtNum(v, 3)}`).join('   ')}   other processes ${fmtNum(cpu.other, 2)}`);
    out(`  per 1,000 hosts (cores) ${Object.entries(per1000).map(([k, v]) => `${k} ${fmtNum(v, 4)}`).join('   ')}`);
    out(`  service stack (all but the fleet): ${fmtNum(stackCores, 3)} cores = ${fmtNum(msPerHostMinute, 2)} ms of CPU per host per minute (budget ${BUDGET_MS_PER_HOST_MINUTE}) → 100,000 hosts ≈ ${fmtNum(at100k, 2)} cores of 2 (${at100k <= 2 ? 'within' : `misses by ${fmtNum(at100k / 2, 1)}x`})`);
    out(`  RSS peak (MB) ${Object.entries(rssPeak).map(([k, v]) => `${k} ${fmtNum(v)}`).join('   ')}`);
    const file = o.json ?? resultFile(`fleet-real-${o.hosts}h`);
    writeFileSync(
      file,
      JSON.stringify(
        {
          options: { ...o, durationSeconds: duration, warmupSeconds: warmup },
          repeatMs,
          load: { start: load0, windowStart: loadW0, end: loadAverage() },
          bootSeconds,
          statuses: { before: statusesBefore, after: statusesAfter },
          window: { seconds: secs, polls, replies, skipped, failures, pollsPerSecond: polls / secs, repliesPerSecond: replies / secs, pollPeriodSeconds: pollPeriod },
          latencyMs: { poll: pollLat, reply: replyLat, register: percentiles(lat.register) },
          answers: statuses,
          cadence,
          cpu,
          cpuPer1000Hosts: per1000,
          stackCores,
          msPerHostMinute,
          coresAt100k: at100k,
          rssPeakMb: rssPeak,
        },
        null,
        2,
      ) + '\n',
    );
    out(`result file: ${path.relative(process.cwd(), file)}`);
  } finally {
    await stopAll();
  }
}

/** Thousands of agents in this process: give the heap room (a host's agent, executor and caches take ~160 KB). */
function ensureHeap(): boolean {
  const wantMb = 8192;
  if (v8.getHeapStatistics().heap_size_limit / 1024 / 1024 >= wantMb * 0.9 || process.env.LANDFALL_BENCH_CHILD) return false;
  const r = spawnSync(process.execPath, [`--max-old-space-size=${wantMb}`, ...process.argv.slice(1)], { stdio: 'inherit', env: { ...process.env, LANDFALL_BENCH_CHILD: '1' } });
  process.exit(r.status ?? 1);
}

if (!ensureHeap()) {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`fleet-real bench failed: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
