/**
 * The idle cost of the whole stack (not a timed test): `landfall dev` (what
 * `npm start` runs: Temporal dev server, embedded PostgreSQL, api, worker)
 * with N registered hosts, each with its inventory, in clusters of 50.
 *
 *   npm run bench:idle-fleet -- [--hosts 20000] [--poll-phase-seconds 120] [--idle-seconds 120]
 *                               [--disconnect-timeout-ms 60000] [--json FILE]
 *
 * Phase a, polling: every host polls `GET …/instructions` once per 60 s (an
 *   open-loop generator: N/60 polls/s, each host at its own fixed offset,
 *   latency from the poll's due time). Nobody runs or answers the steps the
 *   polls hand out (they are counted): what it measures is the poll and the
 *   background around it. Reports the API's CPU per poll and every other
 *   process's CPU.
 * Phase b, silent: no request at all. b1 runs until every host is
 *   `disconnected` (the worker's host-monitor schedule, with
 *   HOST_DISCONNECT_TIMEOUT_MS set short for the bench); the detection delay
 *   is read per host from PostgreSQL (status_updated_at - checked_in_at) and
 *   held against the timeout + 30 s; the monitor's transactions are sized by
 *   the host rows each one left behind (rows grouped by xmin) and by the
 *   longest transaction seen in pg_stat_activity. b2 then measures every
 *   process's CPU with nothing calling and nothing left to do: the stack's
 *   background cost.
 *
 * Everything runs on 127.0.0.1; everything it starts is stopped; a watchdog
 * bounds the run.
 */
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sleep } from '../src/dev/process-utils';
import { inventoryFor } from './inventory';
import {
  boundedNumber,
  AGENT_API,
  benchHostId,
  CpuMeter,
  createBenchClusters,
  fmtNum,
  forEachConcurrently,
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
  type Percentiles,
} from './support';

interface Options {
  hosts: number;
  hostsPerCluster: number;
  registerConcurrency: number;
  pollSeconds: number;
  pollPhaseSeconds: number;
  idleSeconds: number;
  disconnectTimeoutMs: number;
  json?: string;
}

const USAGE = `usage: node dist/bench/idle-fleet.js [options]
  --hosts N                  registered hosts (default 20000)
  --hosts-per-cluster N      hosts per cluster (default 50)
  --register-concurrency C   registrations at a time during set-up (default 64)
  --poll-seconds S           each host's poll interval in phase a (default 60, the service's)
  --poll-phase-seconds S     length of phase a (default 120)
  --idle-seconds S           length of phase b2, after every host is disconnected (default 120)
  --disconnect-timeout-ms MS HOST_DISCONNECT_TIMEOUT_MS of the stack (default 60000; the service's default is 180000)
  --json FILE                the result file (default bench/results/idle-fleet-<time>.json)
`;

function parseArgs(argv: string[]): Options {
  const o: Options = { hosts: 20_000, hostsPerCluster: 50, registerConcurrency: 64, pollSeconds: 60, pollPhaseSeconds: 120, idleSeconds: 120, disconnectTimeoutMs: 60_000 };
  const num = (name: string, v: string | undefined, min: number, max: number): number => boundedNumber(name, v, min, max, { whole: true, usage: USAGE });
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = () => argv[++i];
    switch (a) {
      case '--hosts': o.hosts = num(a, next(), 1, 65_000); break;
      case '--hosts-per-cluster': o.hostsPerCluster = num(a, next(), 1, 10_000); break;
      case '--register-concurrency': o.registerConcurrency = num(a, next(), 1, 1024); break;
      case '--poll-seconds': o.pollSeconds = num(a, next(), 1, 3600); break;
      case '--poll-phase-seconds': o.pollPhaseSeconds = num(a, next(), 5, 24 * 3600); break;
      case '--idle-seconds': o.idleSeconds = num(a, next(), 5, 24 * 3600); break;
      case '--disconnect-timeout-ms': o.disconnectTimeoutMs = num(a, next(), 1000, 24 * 3600_000); break;
      case '--json': o.json = next(); break;
      case '--help': case '-h': process.stdout.write(USAGE); process.exit(0); break;
      default: throw new Error(`unknown option ${a}\n${USAGE}`);
    }
  }
  return o;
}

const out = (s: string) => process.stdout.write(`${s}\n`);
type Cpu = ReturnType<CpuMeter['stop']>;
const coresLine = (c: Cpu) => `${Object.entries(c.cores).map(([k, v]) => `${k} ${fmtNum(v, 3)}`).join('   ')}   other processes ${fmtNum(c.other, 2)}   (machine busy ${fmtNum(c.machineBusy, 2)})`;
const STACK = ['api', 'worker', 'temporal', 'postgres', 'supervisor'] as const;
const stackCores = (c: Cpu) => STACK.reduce((s, k) => s + (c.cores[k] ?? 0), 0);

/**
 * Each registered host polls every `pollSeconds` from the moment it registered, as an agent does (so
 * none goes silent while the rest register), open loop: a poll goes out when due whatever the API's
 * latency, and its latency runs from that due time. Figures are kept only while `recording`.
 */
class Poller {
  private readonly queue: Array<{ k: number; due: number }> = [];
  private head = 0;
  private timer: NodeJS.Timeout | undefined;
  private inFlight = 0;
  recording = false;
  stats = Poller.empty();

  constructor(
    private readonly client: ReturnType<typeof keepAliveClient>,
    private readonly paths: string[],
    private readonly pollSeconds: number,
  ) {}

  static empty() {
    return { scheduled: 0, answered: 0, errors: 0, skipped: 0, maxInFlight: 0, statuses: {} as Record<string, number>, steps: {} as Record<string, number>, latency: [] as number[] };
  }

  /** Far more polls waiting than sockets means the API is far behind: further polls are counted as skipped, not piled up (and silence can begin when asked). */
  private static readonly IN_FLIGHT_CAP = 1024;

  /** Host k registered now: its first poll is due one interval later. */
  add(k: number): void {
    this.queue.push({ k, due: performance.now() + this.pollSeconds * 1000 });
  }

  start(): void {
    this.timer = setInterval(() => this.tick(), 5);
  }

  /** Stops polling and waits (up to 30 s) for the polls in flight. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    const until = performance.now() + 30_000;
    while (this.inFlight > 0 && performance.now() < until) await sleep(20);
  }

  private tick(): void {
    const now = performance.now();
    // Due times only grow along the queue (each host goes back one interval later), so the head is always next.
    while (this.head < this.queue.length && this.queue[this.head]!.due <= now) {
      const { k, due } = this.queue[this.head++]!;
      this.queue.push({ k, due: due + this.pollSeconds * 1000 });
      this.fire(k, due);
    }
    if (this.head > 100_000) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
  }

  private fire(k: number, due: number): void {
    const rec = this.recording;
    const st = this.stats;
    if (rec) st.scheduled++;
    if (this.inFlight >= Poller.IN_FLIGHT_CAP) {
      if (rec) st.skipped++;
      return;
    }
    this.inFlight++;
    st.maxInFlight = Math.max(st.maxInFlight, this.inFlight);
    this.client
      .request('GET', `${this.paths[k]}?timestamp=${Math.floor(Date.now() / 1000)}`)
      .then((r) => {
        if (!rec) return;
        st.latency.push(performance.now() - due);
        st.answered++;
        st.statuses[r.status] = (st.statuses[r.status] ?? 0) + 1;
        if (r.status === 200) for (const x of (JSON.parse(r.text) as { instructions?: Array<{ step_type: string }> }).instructions ?? []) st.steps[x.step_type] = (st.steps[x.step_type] ?? 0) + 1;
      })
      .catch(() => void (rec && st.errors++))
      .finally(() => this.inFlight--);
  }
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const dog = setTimeout(() => {
    process.stderr.write('idle-fleet: watchdog expired\n');
    process.exit(2);
  }, 600_000 + o.hosts * 100 + (o.pollPhaseSeconds + o.idleSeconds) * 1000 + o.disconnectTimeoutMs + 1_800_000);
  dog.unref();
  let stack: DevStack | undefined;
  const stopAll = async () => stack?.stop();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void stopAll().finally(() => process.exit(130)));
  try {
    const load0 = loadAverage();
    out(`idle-fleet: starting the stack (landfall dev, HOST_DISCONNECT_TIMEOUT_MS=${o.disconnectTimeoutMs}); load ${load0}`);
    stack = await startDevStack({ env: { HOST_DISCONNECT_TIMEOUT_MS: String(o.disconnectTimeoutMs) } });
    const s = stack;
    const pids = () => s.pids();
    const meter = () =>
      new CpuMeter({
        api: () => pids().api,
        worker: () => pids().worker,
        temporal: () => pids().temporal,
        postgres: () => pids().postgres,
        supervisor: { only: s.pid },
        'load generator': 'self',
      });
    const port = Number(new URL(s.url).port);
    const client = keepAliveClient(port, Math.max(64, o.registerConcurrency));

    // ---- at rest with no hosts: the floor
    await sleep(5_000);
    const empty = meter();
    empty.start();
    await sleep(30_000);
    const emptyCpu = empty.stop();
    out(`empty stack, 30 s: ${coresLine(emptyCpu)}`);

    // ---- set-up: N hosts register and post their inventory, through the API
    const clusters = Math.ceil(o.hosts / o.hostsPerCluster);
    const infraEnvs = await createBenchClusters(client, clusters, 'idle');
    const ids = Array.from({ length: o.hosts }, (_, i) => benchHostId(i, 'c0000000'));
    const ie = (i: number) => infraEnvs[Math.floor(i / o.hostsPerCluster)]!;
    const paths = ids.map((id, i) => `${AGENT_API}/infra-envs/${ie(i)}/hosts/${id}/instructions`);
    // A separate pool for the polls, as many sockets as an open loop at this rate needs.
    const pollClient = keepAliveClient(port, 256);
    const poller = new Poller(pollClient, paths, o.pollSeconds);
    poller.start();
    const t0 = performance.now();
    let done = 0;
    let last = Date.now();
    // As an agent does: a 503 (or no answer) is tried again after a pause; anything else unexpected ends the run.
    let retried = 0;
    const send = async (what: string, p: string, body: string, expected: number) => {
      for (let attempt = 0; ; attempt++) {
        const r = await client.request('POST', p, body).catch((e: Error) => ({ status: 0, ms: 0, text: e.message }));
        if (r.status === expected) return;
        if ((r.status !== 503 && r.status !== 0) || attempt >= 20) throw new Error(`${what}: HTTP ${r.status} ${r.text.slice(0, 200)}`);
        retried++;
        await sleep(1000 + Math.random() * 2000);
      }
    };
    await forEachConcurrently(o.hosts, o.registerConcurrency, async (i) => {
      await send(`registration of host ${i}`, `${AGENT_API}/infra-envs/${ie(i)}/hosts`, JSON.stringify({ host_id: ids[i], discovery_agent_version: 'bench-agent:1.0' }), 201);
      const inv = JSON.stringify({ step_type: 'inventory', step_id: `inventory-${i.toString(16)}`, exit_code: 0, output: inventoryFor(`idle-${String(i).padStart(6, '0')}`, i) });
      await send(`inventory of host ${i}`, `${AGENT_API}/infra-envs/${ie(i)}/hosts/${ids[i]}/instructions`, inv, 204);
      poller.add(i);
      done++;
      if (Date.now() - last > 10_000) {
        last = Date.now();
        out(`  set-up: ${fmtNum(done)}/${fmtNum(o.hosts)} hosts (${fmtNum(done / ((performance.now() - t0) / 1000))}/s)`);
      }
    });
    const setupSeconds = (performance.now() - t0) / 1000;
    const statusesAfterSetup = await pgQuery<{ status: string; n: number }>(s.databaseUrl, 'select status, count(*)::int as n from hosts group by status order by n desc');
    out(`set-up: ${fmtNum(o.hosts)} hosts registered with inventories in ${fmtNum(setupSeconds)} s (${fmtNum(retried)} requests tried again after a 503 or no answer); ${statusesAfterSetup.map((x) => `${x.status} ${fmtNum(x.n)}`).join(', ')}`);

    // ---- phase a: polling at the cadence, answering nothing (every host polls from its registration on)
    out(`phase a: one more round (${o.pollSeconds} s) after the last registration, then ${o.pollPhaseSeconds} s measured, ${fmtNum(o.hosts / o.pollSeconds)} polls/s offered`);
    await sleep(o.pollSeconds * 1000);
    const statusesA = await pgQuery<{ status: string; n: number }>(s.databaseUrl, 'select status, count(*)::int as n from hosts group by status order by n desc');
    out(`  host statuses as it starts: ${statusesA.map((x) => `${x.status} ${fmtNum(x.n)}`).join(', ')}`);
    const ma = meter();
    const loadA0 = loadAverage();
    poller.stats = Poller.empty();
    poller.recording = true;
    ma.start();
    await sleep(o.pollPhaseSeconds * 1000);
    const aCpu = ma.stop();
    poller.recording = false;
    await poller.stop();
    pollClient.close();
    const pst = poller.stats;
    const polled = { seconds: aCpu.seconds, scheduled: pst.scheduled, answered: pst.answered, errors: pst.errors, skipped: pst.skipped, statuses: pst.statuses, steps: pst.steps, maxInFlight: pst.maxInFlight, latency: percentiles(pst.latency) };
    const apiMsPerPoll = ((aCpu.cores.api ?? 0) * aCpu.seconds * 1000) / Math.max(1, polled.answered);
    out(`phase a: ${fmtNum(polled.answered)} of ${fmtNum(polled.scheduled)} polls due answered in ${fmtNum(polled.seconds, 1)} s (${fmtNum(polled.answered / polled.seconds, 1)}/s), ${polled.errors} errors, ${polled.skipped} not sent (over ${fmtNum(1024)} waiting: the API fell behind), status ${JSON.stringify(polled.statuses)}, most in flight ${polled.maxInFlight}`);
    out(`  latency     ${latencyLine(polled.latency)} (from each poll's due time)`);
    out(`  steps handed out (not answered): ${Object.entries(polled.steps).map(([k, v]) => `${k} ${fmtNum(v)} (${fmtNum(v / Math.max(1, polled.answered), 3)}/poll)`).join(', ') || 'none'}`);
    out(`  CPU (cores) ${coresLine(aCpu)}`);
    out(`  API CPU per poll ${fmtNum(apiMsPerPoll, 3)} ms; everything but the API ${fmtNum(stackCores(aCpu) - (aCpu.cores.api ?? 0), 3)} cores`);

    // ---- phase b1: silence until every host is disconnected
    const silentAt = Date.now();
    out(`phase b1: silent; waiting for ${fmtNum(o.hosts)} hosts to be disconnected (timeout ${o.disconnectTimeoutMs / 1000} s + the monitor's interval)`);
    const mb1 = meter();
    mb1.start();
    let longestXactMs = 0;
    let remaining = o.hosts;
    const deadline = silentAt + o.disconnectTimeoutMs + 15 * 60_000;
    let firstDisconnectAt: number | undefined;
    while (remaining > 0 && Date.now() < deadline) {
      await sleep(500);
      const [row] = await pgQuery<{ remaining: number; longest: number | null }>(
        s.databaseUrl,
        `select (select count(*)::int from hosts where status <> 'disconnected') as remaining,
                (select extract(epoch from max(now() - xact_start)) * 1000 from pg_stat_activity
                  where backend_type = 'client backend' and state <> 'idle' and pid <> pg_backend_pid() and xact_start is not null) as longest`,
      );
      remaining = row!.remaining;
      longestXactMs = Math.max(longestXactMs, Number(row!.longest ?? 0));
      if (firstDisconnectAt === undefined && remaining < o.hosts) firstDisconnectAt = Date.now();
    }
    const allDisconnectedAt = Date.now();
    const b1Cpu = mb1.stop();
    const [delay] = await pgQuery<{ max: number; p50: number; min: number; n: number }>(
      s.databaseUrl,
      `select max(d)::float8 as max, percentile_cont(0.5) within group (order by d)::float8 as p50, min(d)::float8 as min, count(*)::int as n
         from (select extract(epoch from status_updated_at - checked_in_at) as d from hosts where status = 'disconnected') x`,
    );
    // The transactions that marked hosts disconnected, by the host rows each one last wrote.
    const xacts = await pgQuery<{ n: number }>(s.databaseUrl, "select count(*)::int as n from hosts where status = 'disconnected' group by xmin::text");
    const perXact = percentiles(xacts.map((x) => x.n));
    const limitS = o.disconnectTimeoutMs / 1000 + 30;
    const detectedOk = remaining === 0 && (delay?.max ?? Infinity) <= limitS;
    out(`phase b1: ${remaining === 0 ? 'all' : `NOT all (${fmtNum(remaining)} left)`} disconnected ${fmtNum((allDisconnectedAt - silentAt) / 1000)} s after the silence began (first seen at ${firstDisconnectAt ? fmtNum((firstDisconnectAt - silentAt) / 1000) : '—'} s)`);
    out(`  detection per host (status_updated_at - checked_in_at): min ${fmtNum(delay?.min ?? NaN, 1)} s, p50 ${fmtNum(delay?.p50 ?? NaN, 1)} s, max ${fmtNum(delay?.max ?? NaN, 1)} s; limit timeout + 30 s = ${limitS} s → ${detectedOk ? 'MET' : 'MISSED'}`);
    out(`  transactions that marked hosts disconnected: ${fmtNum(xacts.length)}; host rows per transaction p50 ${fmtNum(perXact.p50)}, max ${fmtNum(perXact.max)}; longest open transaction seen ${fmtNum(longestXactMs)} ms`);
    out(`  CPU (cores) ${coresLine(b1Cpu)}`);

    // ---- phase b2: silence with nothing left to do
    out(`phase b2: ${o.idleSeconds} s with nothing calling`);
    const mb2 = meter();
    mb2.start();
    await sleep(o.idleSeconds * 1000);
    const b2Cpu = mb2.stop();
    const rss = Object.fromEntries(Object.entries(pids()).map(([k, pid]) => [k, !pid ? 0 : k === 'supervisor' ? rssMb(pid) : treeRssKb(pid) / 1024]));
    const bg = stackCores(b2Cpu);
    out(`  CPU (cores) ${coresLine(b2Cpu)}`);
    out(`  whole stack ${fmtNum(bg, 3)} cores at ${fmtNum(o.hosts)} hosts (target < 0.1) → ${bg < 0.1 ? 'MET' : 'MISSED'}; empty stack ${fmtNum(stackCores(emptyCpu), 3)}; per 10,000 hosts above the empty stack ${fmtNum(((bg - stackCores(emptyCpu)) * 10_000) / o.hosts, 4)}`);
    out(`  RSS (MB)    ${Object.entries(rss).map(([k, v]) => `${k} ${fmtNum(v)}`).join('   ')}`);
    out(`load average ${load0} at start, ${loadAverage()} at the end; ${os.cpus().length} CPUs`);

    const file = o.json ?? resultFile(`idle-fleet-${o.hosts}h`);
    writeFileSync(
      file,
      JSON.stringify(
        {
          options: o,
          load: { start: load0, phaseA: loadA0, end: loadAverage() },
          setup: { seconds: setupSeconds, retried, statuses: statusesAfterSetup },
          empty: emptyCpu,
          phaseA: { ...polled, latency: polled.latency as Percentiles, statusesAtStart: statusesA, cpu: aCpu, apiMsPerPoll },
          phaseB1: { remaining, secondsToAllDisconnected: (allDisconnectedAt - silentAt) / 1000, detectionSeconds: delay, limitSeconds: limitS, detectedOk, transactions: xacts.length, hostRowsPerTransaction: perXact, longestTransactionMs: longestXactMs, cpu: b1Cpu },
          phaseB2: { cpu: b2Cpu, stackCores: bg, met: bg < 0.1 },
          rssMb: rss,
        },
        null,
        2,
      ) + '\n',
    );
    out(`result file: ${path.relative(process.cwd(), file)}`);
    client.close();
  } finally {
    await stopAll();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`idle-fleet bench failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
