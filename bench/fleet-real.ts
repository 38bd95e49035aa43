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
 *                               [--duration-seconds 900] [--hosts-per-process 2000]
 *                               [--step-repeat-seconds S] [--json FILE]
 *
 * The fleet runs in child processes (bench/fleet-shard.ts), a share of the
 * clusters each (--hosts-per-process, 2,000 by default): 20,000 agents in one
 * process had its garbage collection and event-loop lag timed as the
 * service's latency (p99 1.1 s while the stack used 0.31 of 2 cores).
 *
 * After the ramp (hosts boot spread over it) and a warm-up (the first round
 * of every discovery step), it measures over a window of ≥ 3× the longest
 * step repeat interval: polls/s, replies/s, steps handed out per poll by
 * type against the cadence the intervals imply, poll and reply p50/p99 from
 * the moment the request was written to a socket to its answer (and as the
 * agents saw them, from their call), the generator's own event-loop lag, GC
 * pauses and CPU per process (a saturated generator is flagged: its
 * latencies overstate the service's), CPU of the api, worker, Temporal,
 * PostgreSQL and the fleet per 1,000 hosts, and RSS; then extrapolates to
 * 100,000 hosts against the budget of 2 cores (1.2 ms of CPU per host per
 * minute). Everything runs on 127.0.0.1; everything it starts is stopped.
 */
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import type { FleetTotals } from '../agent/fleet';
import { AGENT_VERSION } from '../agent/config';
import { skippedFor } from '../src/domain/host-steps';
import { repoRoot, sleep } from '../src/dev/process-utils';
import { formatSummary, summarizeCpuProfile } from './cpuprofile-summary';
import { emptySamples, expectedPerPoll, mergeSamples, parseServiceTimes, serviceTimesBetween, summarize, type GaugeReading } from './fleet-gauges';
import { shareClusters, startShard, sumTotals, type FromShard, type ShardSpec, type ShardWindow, type ToShard } from './fleet-shard';
import {
  boundedNumber,
  CpuMeter,
  createBenchClusters,
  fmtNum,
  keepAliveClient,
  latencyLine,
  loadAverage,
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
  /** Hosts per fleet process; 0: the whole fleet in the bench's own process (as measured before the split). */
  hostsPerProcess: number;
  /** Clusters whose agents run in a lightly loaded process of their own, above the stack's priority: the latency verdict's sample. */
  probeClusters: number;
  /** Agents hold back a success identical to the last one (Landfall's agent) instead of answering every step (the upstream agent). */
  holdBackUnchanged: boolean;
  /** More environment for the stack (`landfall dev` and so its API and worker processes), e.g. LANDFALL_CHILD_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/p' (NODE_OPTIONS refuses --cpu-prof). */
  stackEnv: Record<string, string>;
  /** More node options for each fleet process, e.g. --cpu-prof --cpu-prof-dir=/tmp/p (to see where the generator's own CPU goes). */
  fleetNodeArgs: string[];
  /** Profile the stack's Node processes (api, its workers and refresher, worker) and summarise each one's window. */
  cpuProf: boolean;
  json?: string;
}

const USAGE = `usage: node dist/bench/fleet-real.js [options]
  --hosts N                  simulated hosts (default 20000)
  --hosts-per-cluster N      hosts per cluster (default 50)
  --ramp-seconds S           hosts boot spread over this long (default 180)
  --warmup-seconds S         after the ramp, before measuring (default: the longest repeat interval + 30 s)
  --duration-seconds S       the measured window (default: 3x the longest repeat interval)
  --hosts-per-process N      simulated hosts per fleet process (default 2000); 0 runs the whole fleet inside
                             the bench's process (how it was measured before: its own GC and lag inflate latency)
  --probe-clusters N         clusters (spread over the fleet) whose agents run in a process of their own at a
                             priority above the stack's, as an agent alone on its machine (default 4: 200 hosts);
                             the poll p99 verdict is judged on them; 0: on the whole fleet
  --hold-back-unchanged      agents do not post a success identical to their last one (Landfall's own agent's
                             economy); by default every step handed out is answered, as the upstream agent does
  --step-repeat-seconds S    set every discovery step's repeat interval to S (STEP_REPEAT_<TYPE>_SECONDS; needs a tree with those settings)
  --stack-env K=V            more environment for the stack (repeatable), e.g. LANDFALL_CHILD_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/p'
  --fleet-node-args ARGS     more node options for each fleet process (space-separated), e.g. '--cpu-prof --cpu-prof-dir=/tmp/p'
  --cpu-prof                 profile the stack's Node processes (node --cpu-prof) and print each one's window, by area
                             and function (the files stay in .state/bench/fleet-real-prof-<time>/)
  --json FILE                the result file (default bench/results/fleet-real-<time>.json)
`;

function parseArgs(argv: string[]): Options {
  const o: Options = { hosts: 20_000, hostsPerCluster: 50, rampSeconds: 180, warmupSeconds: -1, hostsPerProcess: 2000, probeClusters: 4, holdBackUnchanged: false, stackEnv: {}, fleetNodeArgs: [], cpuProf: false };
  const num = (name: string, v: string | undefined, min: number, max: number): number => boundedNumber(name, v, min, max, { whole: true, usage: USAGE });
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
      case '--hosts-per-process': o.hostsPerProcess = num(a, next(), 0, 100_000); break;
      case '--probe-clusters': o.probeClusters = num(a, next(), 0, 1000); break;
      case '--hold-back-unchanged': o.holdBackUnchanged = true; break;
      case '--stack-env': {
        const kv = next() ?? '';
        const eq = kv.indexOf('=');
        if (eq < 1) throw new Error(`--stack-env takes K=V (got ${kv})\n${USAGE}`);
        o.stackEnv[kv.slice(0, eq)] = kv.slice(eq + 1);
        break;
      }
      case '--fleet-node-args': o.fleetNodeArgs = (next() ?? '').split(/\s+/).filter(Boolean); break;
      case '--cpu-prof': o.cpuProf = true; break;
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

/** How early a poll may come and still find a step due (src/services/step-cadence.ts; none in older trees). */
function earlyPollSlackMs(): number {
  try {
    return (require('../src/services/step-cadence') as { EARLY_POLL_SLACK_MS?: number }).EARLY_POLL_SLACK_MS ?? 0;
  } catch {
    return 0;
  }
}

const out = (s: string) => process.stdout.write(`${s}\n`);
const STACK = ['api', 'worker', 'temporal', 'postgres', 'supervisor'] as const;
const BUDGET_MS_PER_HOST_MINUTE = 1.2; // 2 cores for 100,000 hosts: 120 core-s per minute / 100,000

/** A share of the fleet, in a child process of its own or (hosts-per-process 0) in this one. */
interface ShardHandle {
  pid: number;
  hosts: number;
  /** The probe agents' process (--probe-clusters). */
  probe: boolean;
  totals(): Promise<FleetTotals>;
  startWindow(): void;
  endWindow(): Promise<ShardWindow>;
  stop(): Promise<void>;
}

function localShard(spec: ShardSpec, hosts: number): ShardHandle {
  const sh = startShard(spec);
  return { pid: process.pid, hosts, probe: false, totals: async () => sh.totals(), startWindow: () => sh.startWindow(), endWindow: async () => sh.endWindow(), stop: () => sh.stop() };
}

async function forkShard(spec: ShardSpec, hosts: number, nodeArgs: string[], probe: boolean): Promise<ShardHandle> {
  const child: ChildProcess = fork(path.join(__dirname, 'fleet-shard.js'), [], { execArgv: ['--max-old-space-size=4096', ...nodeArgs], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let next = 0;
  let gone: Error | undefined;
  const waiting = new Map<number, { resolve: (m: FromShard) => void; reject: (e: Error) => void }>();
  child.on('message', (m: FromShard) => {
    if (!('id' in m)) return;
    waiting.get(m.id)?.resolve(m);
    waiting.delete(m.id);
  });
  const started = new Promise<void>((resolve, reject) => {
    child.once('message', (m: FromShard) => (m.type === 'started' ? resolve() : reject(new Error(`fleet process ${child.pid}: ${JSON.stringify(m)}`))));
    child.once('exit', () => reject(new Error(`fleet process ${child.pid} exited before it started`)));
  });
  child.on('exit', (code, sig) => {
    // A share that died took its hosts with it: the run's figures would be wrong, so every question to it fails.
    gone = new Error(`fleet process ${child.pid} (${hosts} hosts) exited (${code ?? sig})`);
    for (const w of waiting.values()) w.reject(gone);
    waiting.clear();
  });
  const ask = (make: (id: number) => ToShard): Promise<FromShard> =>
    new Promise((resolve, reject) => {
      if (gone) return reject(gone);
      const id = next++;
      waiting.set(id, { resolve, reject });
      child.send(make(id));
    });
  // The stack is what is measured; the fleet stands in for 20,000 machines that are not on this box. Under a boot storm
  // ten fleet processes would otherwise take as much of the 2 cores as the stack (the one in-process fleet was held to
  // one): below the stack's priority they wait instead, and what they wait shows in their loop delay.
  try {
    os.setPriority(child.pid!, probe ? PROBE_NICE : FLEET_NICE);
  } catch {
    /* not allowed here: the fleet runs at the stack's priority */
  }
  child.send({ type: 'start', spec } satisfies ToShard);
  await started;
  return {
    pid: child.pid!,
    hosts,
    probe,
    totals: async () => ((await ask((id) => ({ type: 'totals', id }))) as Extract<FromShard, { type: 'totals' }>).totals,
    startWindow: () => void child.send({ type: 'window-start' } satisfies ToShard),
    endWindow: async () => ((await ask((id) => ({ type: 'window-end', id }))) as Extract<FromShard, { type: 'window' }>).window,
    stop: async () => {
      if (gone) return;
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      await Promise.race([ask((id) => ({ type: 'stop', id })).catch(() => undefined), sleep(60_000)]);
      if (!gone) {
        await Promise.race([exited, sleep(5_000)]);
        if (!gone) child.kill('SIGKILL');
      }
    },
  };
}

const FLEET_NICE = 10;
/**
 * The probe agents stand for machines of their own: an agent alone on its
 * host reads the service's answer as it arrives. Their process is a few
 * hundred agents (a few thousandths of a core), above the stack's priority so
 * that it is not the one waiting for a core when an answer comes in; the ten
 * shards below the stack do wait, and their timestamps carry it.
 */
const PROBE_NICE = -10;

/** A fleet process whose loop is this late, or this busy, delays its own timestamps: its latencies overstate the service's. */
const SATURATED = { loopP99Ms: 10, cpuCores: 0.8 };
const saturated = (g: GaugeReading) => g.loopDelayMs.p99 > SATURATED.loopP99Ms || g.cpuCores > SATURATED.cpuCores;

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
  const shards: ShardHandle[] = [];
  let stopping: Promise<void> | undefined;
  const stopAll = () =>
    (stopping ??= (async () => {
      await Promise.allSettled(shards.map((sh) => sh.stop()));
      await stack?.stop();
    })());
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void stopAll().finally(() => process.exit(130)));
  try {
    const load0 = loadAverage();
    const stepEnv = o.stepRepeatSeconds !== undefined ? Object.fromEntries(Object.keys(repeatMs).map((t) => [`STEP_REPEAT_${t.toUpperCase().replace(/-/g, '_')}_SECONDS`, String(o.stepRepeatSeconds)])) : {};
    const clusters = Math.ceil(o.hosts / o.hostsPerCluster);
    // Whole clusters per process, so a cluster's simulated network (its connectivity checks) stays in one process.
    const clustersPerProcess = o.hostsPerProcess === 0 ? clusters : Math.max(1, Math.round(o.hostsPerProcess / o.hostsPerCluster));
    const sharing = shareClusters(clusters, clustersPerProcess, o.hostsPerProcess === 0 ? 0 : o.probeClusters);
    const processes = sharing.shares.length + (sharing.probe.length ? 1 : 0);
    out(`fleet-real: ${fmtNum(o.hosts)} simulated hosts, clusters of ${o.hostsPerCluster}, service cadence; repeat intervals ${Object.entries(repeatMs).map(([k, v]) => `${k} ${v / 1000} s`).join(', ')}; ramp ${o.rampSeconds} s, warm-up ${warmup} s, window ${duration} s; ${o.hostsPerProcess === 0 ? 'the fleet in the bench process' : `${processes} fleet processes of ≤ ${fmtNum(clustersPerProcess * o.hostsPerCluster)} hosts${sharing.probe.length ? `, one of them the probe agents' (${sharing.probe.length} clusters, nice ${PROBE_NICE})` : ''}`}; load ${load0}`);
    const profDir = o.cpuProf ? path.join(repoRoot(), '.state', 'bench', `fleet-real-prof-${new Date().toISOString().replace(/[:.]/g, '-')}`) : undefined;
    if (profDir) mkdirSync(profDir, { recursive: true });
    const profEnv: Record<string, string> = profDir ? { LANDFALL_CHILD_NODE_ARGS: `${o.stackEnv.LANDFALL_CHILD_NODE_ARGS ?? ''} --cpu-prof --cpu-prof-dir=${profDir}`.trim() } : {};
    stack = await startDevStack({ env: { ...stepEnv, ...o.stackEnv, ...profEnv } });
    const s = stack;
    const port = Number(new URL(s.url).port);
    const client = keepAliveClient(port, 8);
    // The simulated network is 192.168.127.0/24 and up (agent/executors/simulated.ts): the machine network is derived from the hosts.
    const infraEnvs = await createBenchClusters(client, clusters, 'real', { api_vips: [{ ip: '192.168.127.250' }], ingress_vips: [{ ip: '192.168.127.251' }] });
    client.close();

    // ---- the fleet: whole clusters per process; 8,000 keep-alive sockets shared out over all of them
    // (64 per cluster passed the 20,000 open files allowed here at 400 clusters: EMFILE).
    const connectionsPerFleet = Math.max(2, Math.min(64, Math.floor(8000 / clusters)));
    const groups = [...sharing.shares.map((ks) => ({ ks, probe: false })), ...(sharing.probe.length ? [{ ks: sharing.probe, probe: true }] : [])];
    for (const { ks, probe } of groups) {
      const mine = ks.map((k) => ({ k, infraEnvId: infraEnvs[k]!, count: Math.min(o.hostsPerCluster, o.hosts - k * o.hostsPerCluster) }));
      const spec: ShardSpec = { serviceUrl: s.url, clusters: mine, totalClusters: clusters, hostsPerCluster: o.hostsPerCluster, rampSeconds: o.rampSeconds, connectionsPerFleet, answerEveryStep: !o.holdBackUnchanged };
      const hosts = mine.reduce((n, c) => n + c.count, 0);
      shards.push(o.hostsPerProcess === 0 ? localShard(spec, hosts) : await forkShard(spec, hosts, o.fleetNodeArgs, probe));
    }
    const totalsNow = async () => sumTotals(await Promise.all(shards.map((sh) => sh.totals())));
    const t0 = Date.now();
    let registered = 0;
    while (Date.now() - t0 < o.rampSeconds * 1000 || registered < o.hosts) {
      await sleep(10_000);
      const t = await totalsNow();
      registered = t.registered;
      out(`  ${fmtNum((Date.now() - t0) / 1000)} s: ${fmtNum(t.registered)}/${fmtNum(o.hosts)} registered, ${fmtNum(t.polls)} polls, ${fmtNum(t.replies)} replies, ${fmtNum(t.failures)} failures`);
      if (Date.now() - t0 > (o.rampSeconds + 1200) * 1000) throw new Error(`only ${registered} of ${o.hosts} hosts registered after ${o.rampSeconds + 1200} s`);
    }
    const bootSeconds = (Date.now() - t0) / 1000;
    out(`all ${fmtNum(o.hosts)} hosts registered after ${fmtNum(bootSeconds)} s; warming up for ${warmup} s`);
    await sleep(warmup * 1000);

    // ---- the window
    const pids = () => s.pids();
    const forked = shards.filter((sh) => sh.pid !== process.pid);
    const meter = new CpuMeter({
      api: () => pids().api,
      worker: () => pids().worker,
      temporal: () => pids().temporal,
      postgres: () => pids().postgres,
      supervisor: { only: s.pid },
      fleet: 'self',
      ...Object.fromEntries(forked.map((sh, i) => [`fleet-process-${i}`, { only: sh.pid }])),
    });
    const rssPeak: Record<string, number> = {};
    const sampleRss = () => {
      for (const [k, pid] of Object.entries(pids())) if (pid) rssPeak[k] = Math.max(rssPeak[k] ?? 0, k === 'supervisor' ? rssMb(pid) : treeRssKb(pid) / 1024);
      rssPeak.fleet = Math.max(rssPeak.fleet ?? 0, rssMb(process.pid) + forked.reduce((sum, sh) => sum + rssMb(sh.pid), 0));
    };
    const sampler = setInterval(sampleRss, 5_000);
    // The API's own time per agent request (its /metrics), beside the generator's view: the generator's lag is in its
    // latencies, not in these. A tree without the metric, or a scrape that fails, gives none.
    const scrapeServiceTimes = async () => {
      try {
        const r = await fetch(`${s.url}/metrics`, { signal: AbortSignal.timeout(30_000) });
        return r.ok ? parseServiceTimes(await r.text()) : undefined;
      } catch {
        return undefined;
      }
    };
    const serviceBefore = await scrapeServiceTimes();
    const loadW0 = loadAverage();
    const before = await totalsNow();
    const dbBefore = await dbWork(s.databaseUrl);
    const statusesBefore = await pgQuery<{ status: string; n: number }>(s.databaseUrl, 'select status, count(*)::int as n from hosts group by status order by n desc');
    out(`measuring ${duration} s; host statuses ${statusesBefore.map((x) => `${x.status} ${fmtNum(x.n)}`).join(', ')}`);
    for (const sh of shards) sh.startWindow();
    meter.start();
    // The profiles' clock is CLOCK_MONOTONIC in microseconds, as hrtime's.
    const windowFromUs = Number(process.hrtime.bigint() / 1000n);
    for (let left = duration; left > 0; left -= 60) {
      await sleep(Math.min(60, left) * 1000);
      const t = await totalsNow();
      out(`  window ${fmtNum(duration - left + Math.min(60, left))} s: ${fmtNum((t.polls - before.polls) / (duration - left + Math.min(60, left)), 1)} polls/s, ${fmtNum(t.failures - before.failures)} failures; load ${loadAverage()}`);
    }
    const cpu = meter.stop();
    const windowToUs = Number(process.hrtime.bigint() / 1000n);
    const serviceAfter = await scrapeServiceTimes();
    const windows = await Promise.all(shards.map((sh) => sh.endWindow()));
    clearInterval(sampler);
    sampleRss();
    const after = await totalsNow();
    const db = diffDbWork(dbBefore, await dbWork(s.databaseUrl));
    const statusesAfter = await pgQuery<{ status: string; n: number }>(s.databaseUrl, 'select status, count(*)::int as n from hosts group by status order by n desc');
    // The fleet's CPU: this process and every fleet process, one figure.
    for (let i = 0; i < forked.length; i++) {
      cpu.cores.fleet = (cpu.cores.fleet ?? 0) + (cpu.cores[`fleet-process-${i}`] ?? 0);
      delete cpu.cores[`fleet-process-${i}`];
    }

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
      // Never, if this agent is not asked for it.
      const expected = every === undefined ? undefined : skippedFor(AGENT_VERSION).includes(type) ? 0 : expectedPerPoll(every, pollPeriod, earlyPollSlackMs());
      const deviation = expected === undefined || expected === 0 ? undefined : perPoll / expected - 1;
      const within10 = expected === undefined ? undefined : expected === 0 ? n === 0 : Math.abs(deviation!) <= 0.1;
      // Hosts booted over the ramp share a phase band, so a window of fewer than three of a step's intervals can catch one round more or less of it.
      const windowCovers = every === undefined || expected === 0 || duration * 1000 >= 3 * every;
      return { type, handedOut: n, perPoll, expectedPerPoll: expected, deviation, within10, windowCovers };
    });
    const samples = windows.reduce((acc, w) => mergeSamples(acc, w.samples), emptySamples());
    const answers: Record<string, number> = {};
    for (const w of windows) for (const [k, v] of Object.entries(w.answers)) answers[k] = (answers[k] ?? 0) + v;
    const poll = summarize(samples.poll);
    const reply = summarize(samples.reply);
    const gen = windows.map((w, i) => ({ pid: shards[i]!.pid, hosts: shards[i]!.hosts, ...w.gauges, saturated: saturated(w.gauges) }));
    const generator = {
      processes: gen.length,
      saturatedProcesses: gen.filter((g) => g.saturated).length,
      thresholds: SATURATED,
      loopDelayP99MsWorst: Math.max(...gen.map((g) => g.loopDelayMs.p99)),
      loopDelayMaxMsWorst: Math.max(...gen.map((g) => g.loopDelayMs.max)),
      gcMaxPauseMs: Math.max(...gen.map((g) => g.gc.maxMs)),
      gcTotalMsPerProcessSecond: gen.reduce((sum, g) => sum + g.gc.totalMs / g.seconds, 0) / gen.length,
      cpuCoresBusiest: Math.max(...gen.map((g) => g.cpuCores)),
      perProcess: gen,
    };
    // The verdict's sample: the probe agents where there are some (a process of their own, above the stack), else everyone.
    const probeIdx = shards.flatMap((sh, i) => (sh.probe ? [i] : []));
    const probeSamples = probeIdx.length ? probeIdx.reduce((acc, i) => mergeSamples(acc, windows[i]!.samples), emptySamples()) : undefined;
    const probePoll = probeSamples ? summarize(probeSamples.poll) : undefined;
    const probeHosts = probeIdx.reduce((n, i) => n + shards[i]!.hosts, 0);
    const judged = probePoll ?? poll;
    const judgedBy = probeIdx.length ? gen.filter((_, i) => shards[i]!.probe) : gen;
    const trustworthy = judgedBy.every((g) => !g.saturated) && cpu.machineBusy < 1.8;
    const stackCores = STACK.reduce((sum, k) => sum + (cpu.cores[k] ?? 0), 0);
    const per1000 = Object.fromEntries(Object.entries(cpu.cores).map(([k, v]) => [k, (v * 1000) / o.hosts]));
    const msPerHostMinute = (stackCores * 60 * 1000) / o.hosts;
    const at100k = (stackCores * 100_000) / o.hosts;

    out('');
    out(`fleet-real: ${fmtNum(o.hosts)} simulated hosts in ${fmtNum(clusters)} clusters, ${secs.toFixed(0)} s window, ${os.cpus().length} CPUs; load ${load0} at start, ${loadW0} at the window's start, ${loadAverage()} at its end`);
    out(`  statuses    before ${statusesBefore.map((x) => `${x.status} ${fmtNum(x.n)}`).join(', ')}; after ${statusesAfter.map((x) => `${x.status} ${fmtNum(x.n)}`).join(', ')}`);
    out(`  polls       ${fmtNum(polls / secs, 1)}/s (a poll every ${fmtNum(pollPeriod, 1)} s per host), replies ${fmtNum(replies / secs, 1)}/s, replies held back as unchanged ${fmtNum(skipped / secs, 1)}/s, failures ${fmtNum(failures)}`);
    const verdict = `target p99 < 50 ms → ${judged.wire.p99 < 50 ? 'MET' : 'MISSED'}${trustworthy ? '' : `; NOT A VERDICT: ${probePoll ? 'the probe process' : 'the generator'} or the machine was saturated`}`;
    out(`  poll        ${latencyLine(poll.wire)}   written → answered, every agent${probePoll ? (generator.saturatedProcesses ? ` (${generator.saturatedProcesses} fleet process(es) saturated: their timestamps carry their lag)` : '') : `   (${verdict})`}`);
    out(`              ${latencyLine(poll.total)}   as the agent saw it (its call → the body read)`);
    out(`              ${latencyLine(poll.toWrite)}   its call → written to a socket (the generator's own wait)`);
    if (probePoll) {
      out(`  probe poll  ${latencyLine(probePoll.wire)}   written → answered, the ${fmtNum(probeHosts)} probe agents   (${verdict})`);
      out(`              ${latencyLine(probePoll.total)}   as they saw it`);
    }
    out(`  reply       ${latencyLine(reply.wire)}   written → answered`);
    const service = serviceBefore && serviceAfter && Object.keys(serviceAfter).length ? serviceTimesBetween(serviceBefore, serviceAfter) : undefined;
    const bound = (ms: number) => (Number.isFinite(ms) ? `≤ ${fmtNum(ms, ms < 10 ? 1 : 0)} ms` : '> 10 s');
    out(
      `  service     ${
        service
          ? ['poll', 'reply', 'register']
              .filter((op) => service[op]?.count)
              .map((op) => { const x = service[op]!; return `${op} n ${fmtNum(x.count)}, within 50 ms ${x.within50msShare === undefined ? '—' : `${fmtNum(x.within50msShare * 100, 2)} %`}, p50 ${bound(x.p50AtMostMs)}, p99 ${bound(x.p99AtMostMs)}`; })
              .join('; ') + "   the API's own time (its /metrics: headers read → answer written; bucket bounds)"
          : "the API's own time: not available (no landfall_agent_request_duration_seconds in this tree, or /metrics did not answer)"
      }`,
    );
    out(`  answers     ${Object.entries(answers).map(([k, v]) => `${k}: ${fmtNum(v)}`).join(', ')}`);
    out(`  generator   ${generator.processes} process(es); loop delay p99 worst ${fmtNum(generator.loopDelayP99MsWorst, 1)} ms, max ${fmtNum(generator.loopDelayMaxMsWorst, 1)} ms; GC pause max ${fmtNum(generator.gcMaxPauseMs, 1)} ms, ${fmtNum(generator.gcTotalMsPerProcessSecond, 1)} ms of GC per second per process; busiest ${fmtNum(generator.cpuCoresBusiest, 3)} cores → ${generator.saturatedProcesses === 0 ? 'not saturated' : `SATURATED in ${generator.saturatedProcesses} (loop p99 > ${SATURATED.loopP99Ms} ms or > ${SATURATED.cpuCores} core)`}; machine ${fmtNum(cpu.machineBusy, 2)} of ${os.cpus().length} cores busy`);
    out(`  steps per poll, by type (expected from the repeat interval and the measured poll period; target within 10 %):`);
    for (const c of cadence) {
      out(`    ${c.type.padEnd(30)} ${fmtNum(c.handedOut).padStart(9)}   ${fmtNum(c.perPoll, 3)}/poll   expected ${c.expectedPerPoll === undefined ? '—' : fmtNum(c.expectedPerPoll, 3)}   ${c.within10 === undefined ? '' : `${c.deviation === undefined ? '(not asked of this agent)' : `${c.deviation >= 0 ? '+' : ''}${fmtNum(c.deviation * 100, 1)} %`} → ${c.within10 ? 'MET' : 'MISSED'}${c.windowCovers ? '' : ' (window < 3 intervals: not a verdict)'}`}`);
    }
    const perRequest = (n: number) => fmtNum(n / Math.max(1, polls + replies), 2);
    out(`  database    per request (poll or reply): ${perRequest(db.transactions)} transactions, ${perRequest(db.hostRowWrites)} host row writes (${fmtNum((100 * db.hostHotWrites) / Math.max(1, db.hostRowWrites), 0)} % HOT: no index entry); per second: ${fmtNum(db.factChanges / secs, 1)} fact writes (facts_version), ${fmtNum(db.refreshRequests / secs, 1)} refresh requests, ${fmtNum(db.refreshesClaimed / secs, 1)} claimed; in the window ${fmtNum(db.hostStatusChanges)} host status changes, ${fmtNum(db.disconnections)} to disconnected`);
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
          // `poll`/`reply`: from the request's write to a socket to its answer's headers (the figure the target is judged on);
          // `*AsAgentSaw`: from the agent's call to the body read; `pollToWrite`: the generator's own wait before the write.
          serviceTimes: service ?? null,
          probe: probePoll ? { hosts: probeHosts, clusters: sharing.probe, nice: PROBE_NICE, poll: probePoll.wire, pollAsAgentSaw: probePoll.total } : null,
          // What the p99 < 50 ms verdict was judged on: the probe agents' poll, written → answered, or (no probes) every agent's.
          verdict: { on: probePoll ? 'probe' : 'all', p99Ms: judged.wire.p99, met: judged.wire.p99 < 50 },
          latencyMs: { poll: poll.wire, reply: reply.wire, pollAsAgentSaw: poll.total, replyAsAgentSaw: reply.total, pollToWrite: poll.toWrite, register: summarize(samples.register).total },
          verdictTrustworthy: trustworthy,
          generator,
          answers,
          cadence,
          database: db,
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
    if (profDir) {
      // A process writes its profile as it exits: stop the stack first.
      await stopAll();
      const files = readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile'));
      for (const f of files) {
        const summary = summarizeCpuProfile(JSON.parse(readFileSync(path.join(profDir, f), 'utf8')), { fromUs: windowFromUs, toUs: windowToUs }, 30);
        if (summary.totalMs < 1000) continue; // a process idle through the window (Temporal's client in the supervisor, a test hook)
        out(`\nCPU profile ${path.join(profDir, f)}, the window only:`);
        out(formatSummary(summary));
      }
      if (!files.length) out(`no CPU profile was written in ${profDir}`);
    }
  } finally {
    await stopAll();
  }
}

/**
 * What the database did: transactions committed (an agent request's statements
 * are each their own, a refresh one), host row writes, fact changes (every
 * stored fact bumps facts_version), refresh requests queued and claimed.
 */
async function dbWork(url: string) {
  const [r] = await pgQuery<{ transactions: string; host_row_writes: string; host_hot_writes: string; fact_changes: string; refresh_requests: string; refreshes_claimed: string; status_changes: string; disconnections: string }>(
    url,
    `select (select xact_commit from pg_stat_database where datname = current_database()) as transactions,
            (select n_tup_upd from pg_stat_user_tables where relname = 'hosts') as host_row_writes,
            (select n_tup_hot_upd from pg_stat_user_tables where relname = 'hosts') as host_hot_writes,
            (select coalesce(sum(facts_version), 0) from hosts) as fact_changes,
            (select n_tup_ins from pg_stat_user_tables where relname = 'refresh_requests') as refresh_requests,
            (select n_tup_del from pg_stat_user_tables where relname = 'refresh_requests') as refreshes_claimed,
            -- A fleet that flaps (known → disconnected → known) shows here: each change is a refresh's write.
            (select count(*) from events where name = 'host_status_updated') as status_changes,
            (select count(*) from events where name = 'host_status_updated' and props->>'new_status' = 'disconnected') as disconnections`,
  );
  return Object.fromEntries(Object.entries(r!).map(([k, v]) => [k, Number(v)])) as Record<'transactions' | 'host_row_writes' | 'host_hot_writes' | 'fact_changes' | 'refresh_requests' | 'refreshes_claimed' | 'status_changes' | 'disconnections', number>;
}

function diffDbWork(a: Awaited<ReturnType<typeof dbWork>>, b: Awaited<ReturnType<typeof dbWork>>) {
  // Statistics reach pg_stat_* within about a second of a commit: close enough for a window of minutes.
  return { transactions: b.transactions - a.transactions, hostRowWrites: b.host_row_writes - a.host_row_writes, hostHotWrites: b.host_hot_writes - a.host_hot_writes, factChanges: b.fact_changes - a.fact_changes, refreshRequests: b.refresh_requests - a.refresh_requests, refreshesClaimed: b.refreshes_claimed - a.refreshes_claimed, hostStatusChanges: b.status_changes - a.status_changes, disconnections: b.disconnections - a.disconnections };
}

/** With the whole fleet in this process (--hosts-per-process 0), thousands of agents: give the heap room (a host's agent, executor and caches take ~160 KB). */
function ensureHeap(): boolean {
  const wantMb = 8192;
  const inProcess = process.argv.some((a, i) => a === '--hosts-per-process' && process.argv[i + 1] === '0');
  if (!inProcess || v8.getHeapStatistics().heap_size_limit / 1024 / 1024 >= wantMb * 0.9 || process.env.LANDFALL_BENCH_CHILD) return false;
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
