/**
 * The chaos lab: concurrent installs of simulated clusters on the production
 * topology (PostgreSQL, Temporal, two API processes behind a round-robin
 * balancer, two workers, one `landfall fleet` process per cluster as its
 * hosts' agents), while components are SIGKILLed at seeded random moments and
 * brought back after a seeded random pause. Then it checks the promise: every
 * install reaches `installed` with no person acting (except a host whose own
 * agent was killed mid-write: it reports why, and one retry installs it), no
 * install step executed twice (counted from the agents' own journals), no
 * stage report lost, and the API answered 503, never another 5xx, while a
 * dependency was away.
 *
 * Used by the bounded test (test/e2e/chaos.test.ts) and the long run
 * (bench/chaos.ts). The agents are simulated hosts (agent/executors/simulated.ts);
 * everything else is the real service.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, createWriteStream, existsSync, mkdirSync, readFileSync, readdirSync, type WriteStream } from 'node:fs';
import path from 'node:path';
import { parseConfig, type Config } from '../src/config';
import { createDb, type Db } from '../src/db/database';
import { migrateLatest } from '../src/db/migrations';
import { startEmbeddedPostgres, type EmbeddedPg } from '../src/dev/embedded-postgres';
import { startTemporalDevServer, temporalBinary, type TemporalDevServer } from '../src/dev/temporal-dev-server';
import { freePort, sleep } from '../src/dev/process-utils';
import { STAGES_BY_ROLE, stageRole } from '../src/domain/install-stages';
import { StartedSteps } from '../agent/started-steps';
import { MAIN, startApiReplicas, startWorkerReplicas, type ApiReplicas, type ServiceProcess } from './replica-lab';

export type Component = 'api' | 'worker' | 'temporal' | 'postgres' | 'agent';

export interface ChaosOptions {
  seed: string;
  /** Clusters of 3 control planes + 2 workers. */
  clusters: number;
  /** Single-node clusters whose agent is killed while it writes the image. */
  agentVictims: number;
  /** Installs running at once. */
  concurrency: number;
  /** Kills of each of api, worker, Temporal and PostgreSQL. */
  killsPerComponent: number;
  /** Pause between kills, and how long a killed component stays down (ms, uniform in [min, max]). */
  gapMs: [number, number];
  downMs: [number, number];
  dir: string;
  log: (line: string) => void;
  /** Bound on the whole run. */
  deadlineMs: number;
}

export interface KillRecord {
  component: Component;
  target: string;
  atMs: number;
  downMs: number;
  /** Installs in flight when it happened, by cluster status. */
  inFlight: Record<string, number>;
}

export interface ChaosReport {
  seed: string;
  durationMs: number;
  installs: number;
  installed: number;
  /** With its hosts and its last events: enough to tell a stranded install from a slow one. */
  notInstalled: Array<{ cluster: string; status: string; info: string; hosts: string[]; lastEvents: string[] }>;
  personActions: Array<{ cluster: string; host: string; action: string; reason: string; allowed: boolean }>;
  duplicateExecutions: Array<{ host: string; stepId: string; times: number }>;
  /** Install step executions counted from the agents' journals, and install steps the service dispatched. */
  executions: number;
  installStepsDispatched: number;
  /** Sends of those install steps (a resend when the answer carrying one was lost). */
  installStepSends: number;
  /** Steps of installed hosts still `sent` at the end (none should be). */
  stepsLeftSent: number;
  lostStageReports: Array<{ host: string; missing: string[] }>;
  lostEvents: string[];
  undeliveredAtEnd: number;
  kills: KillRecord[];
  /** Components that died without being killed (the lab's supervisor started them again). */
  selfDeaths: string[];
  answers: { total: number; by5xx: Record<string, number>; during: { dependencyDown503: number; dependencyDownOther5xx: number } };
  serverErrors: Array<{ status: number; method: string; url: string; body: string }>;
}

/** A small seeded generator (mulberry32), so a run's moments can be replayed from its seed. */
export function seededRandom(seed: string): () => number {
  let a = [...seed].reduce((h, c) => Math.imul(h ^ c.charCodeAt(0), 2654435761) >>> 0, 1779033703);
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PROFILES = path.resolve(__dirname, 'profiles').replace(`${path.sep}dist${path.sep}bench`, `${path.sep}bench`);
const PULL_SECRET = JSON.stringify({ auths: { 'registry.example.com': { auth: 'Y2hhb3M6Y2hhb3M=' } } });

interface Fleet {
  name: string;
  clusterId: string;
  infraEnvId: string;
  single: boolean;
  stateDir: string;
  proc?: ChildProcess;
  log: WriteStream;
  mix: string;
  count: number;
}

/** The stack under test, each part restartable. */
class Stack {
  pg!: EmbeddedPg;
  pgDir!: string;
  temporal!: TemporalDevServer;
  temporalPort!: number;
  temporalDb!: string;
  apis!: ApiReplicas;
  workers!: ServiceProcess[];
  db!: Db;
  cfg!: Config;
  /** Components the lab holds down on purpose; the supervisor leaves them be. */
  readonly held = new Set<string>();
  readonly selfDeaths: string[] = [];
  private supervising: NodeJS.Timeout | undefined;
  private restarting = new Set<string>();

  constructor(private readonly dir: string, private readonly log: (line: string) => void) {}

  async start(): Promise<void> {
    this.pgDir = path.join(this.dir, 'pg', 'data');
    this.pg = await startEmbeddedPostgres({ dir: this.pgDir, port: await freePort(), database: 'chaos' });
    this.db = createDb(this.pg.url, 4);
    await migrateLatest(this.db);
    this.temporalPort = await freePort();
    this.temporalDb = path.join(this.dir, 'temporal', 'temporal.sqlite');
    await this.startTemporal();
    const apiPort = await freePort();
    this.cfg = parseConfig({
      API_HOST: '127.0.0.1',
      API_PORT: String(apiPort),
      SERVICE_BASE_URL: `http://127.0.0.1:${apiPort}`,
      DATABASE_URL: this.pg.url,
      TEMPORAL_ADDRESS: `127.0.0.1:${this.temporalPort}`,
      STORAGE_LOCAL_DIR: path.join(this.dir, 'objects'),
      // The monitor's sweep delivers install reports whose signal failed; often, for a short run.
      HOST_MONITOR_INTERVAL_MS: '5000',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
    });
    const logs = path.join(this.dir, 'logs');
    this.apis = await startApiReplicas(this.cfg, 2, 'chaos', logs);
    this.workers = (await startWorkerReplicas(this.cfg, 2, 'chaos', logs)).processes;
    // The lab's supervisor: what `landfall dev` or Kubernetes does for api and worker processes.
    this.supervising = setInterval(() => void this.supervise(), 500);
  }

  get url(): string {
    return this.apis.balancer.url;
  }

  private async startTemporal(): Promise<void> {
    this.temporal = await startTemporalDevServer({ binary: temporalBinary(), port: this.temporalPort, dbFile: this.temporalDb, namespace: 'default', retentionHours: 24 });
  }

  private async supervise(): Promise<void> {
    for (const p of [...this.apis.apis, ...this.workers]) {
      if (p.alive || this.held.has(p.name) || this.restarting.has(p.name)) continue;
      this.restarting.add(p.name);
      const code = p.proc?.exitCode ?? p.proc?.signalCode;
      this.selfDeaths.push(`${p.name} exited (${code}) at ${new Date().toISOString()}`);
      this.log(`supervisor: ${p.name} exited on its own (${code}); starting it again`);
      try {
        await p.start();
      } catch (err) {
        this.log(`supervisor: ${p.name} did not start: ${(err as Error).message}`);
      } finally {
        this.restarting.delete(p.name);
      }
    }
  }

  /** SIGKILLs the component (for api and worker: the replicas named) and returns how to bring it back. */
  async kill(component: Exclude<Component, 'agent'>, which: number[]): Promise<{ target: string; revive: () => Promise<void> }> {
    if (component === 'postgres') {
      const pid = Number(readFileSync(path.join(this.pgDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      process.kill(pid, 'SIGKILL');
      return {
        target: `postgres pid ${pid}`,
        revive: async () => {
          // Backends orphaned by the kill exit when they notice; until then the shared memory is in use.
          for (let attempt = 1; ; attempt++) {
            try {
              await this.pg.start();
              return;
            } catch (err) {
              if (attempt >= 40) throw err;
              await sleep(500);
            }
          }
        },
      };
    }
    if (component === 'temporal') {
      const p = this.temporal.process;
      const gone = new Promise((r) => p.once('exit', r));
      p.kill('SIGKILL');
      await gone;
      return { target: `temporal pid ${p.pid}`, revive: () => this.startTemporal() };
    }
    const set = component === 'api' ? this.apis.apis : this.workers;
    const victims = which.map((i) => set[i % set.length]!);
    for (const v of victims) this.held.add(v.name);
    await Promise.all(victims.map((v) => v.kill()));
    return {
      target: victims.map((v) => v.name).join('+'),
      revive: async () => {
        await Promise.all(victims.map((v) => (v.alive ? undefined : v.start())));
        for (const v of victims) this.held.delete(v.name);
      },
    };
  }

  async stop(): Promise<void> {
    clearInterval(this.supervising);
    await this.apis?.close();
    await Promise.all((this.workers ?? []).map((w) => w.stop()));
    await this.temporal?.stop().catch(() => undefined);
    await this.db?.destroy().catch(() => undefined);
    await this.pg?.stop().catch(() => undefined);
  }
}

/** The lab's own calls (it plays the user): through the balancer, patient with outages, never counted as a person acting. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the lab reads API bodies loosely
async function api<T = any>(base: string, method: string, p: string, body?: unknown, deadlineMs = 120_000): Promise<{ status: number; body: T }> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    try {
      const r = await fetch(`${base}/api/assisted-install/v2${p}`, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined, signal: AbortSignal.timeout(30_000) });
      const text = await r.text();
      if (r.status < 500 || Date.now() > until) return { status: r.status, body: (text ? JSON.parse(text) : undefined) as T };
    } catch (err) {
      if (Date.now() > until) throw err;
    }
    await sleep(500);
  }
}

/**
 * The fleet's agent is writing its image, by its own ledger on disk (read as
 * the agent reads it): an install step started, unfinished, last at that
 * stage and not past the reboot. The service's view lags behind whenever the
 * API is away (the stage reports wait in the agent's outbox), so it cannot
 * tell when the write is under way.
 */
function agentWriting(f: { stateDir: string; infraEnvId: string }): boolean {
  const hostDirs = existsSync(f.stateDir) ? readdirSync(f.stateDir) : [];
  return hostDirs.some((hostDir) =>
    StartedSteps.inDir(path.join(f.stateDir, hostDir), `started-${f.infraEnvId}`)
      .unfinished()
      .some((e) => e.stage === 'Writing image to disk' && !e.rebooted),
  );
}

/** What a run must stop if its process is interrupted (Ctrl-C on the bench): its fleets and its stack. */
const running = new Set<() => Promise<void>>();

export async function stopChaos(): Promise<void> {
  await Promise.all([...running].map((stop) => stop()));
}

export async function runChaos(o: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  const rand = seededRandom(o.seed);
  const between = ([a, b]: [number, number]) => Math.round(a + rand() * (b - a));
  mkdirSync(o.dir, { recursive: true });
  // Embedded PostgreSQL runs as the postgres user when we are root: it must be able to reach its folder.
  chmodSync(o.dir, 0o711);
  const stack = new Stack(o.dir, o.log);
  const fleets: Fleet[] = [];
  const kills: KillRecord[] = [];
  const personActions: ChaosReport['personActions'] = [];
  const downWindows: Array<{ from: number; to: number; component: string }> = [];
  let finished = false;
  const teardown = async () => {
    finished = true;
    for (const f of fleets) {
      if (f.proc && f.proc.exitCode === null) f.proc.kill('SIGKILL');
      f.log.end();
    }
    await stack.stop();
  };
  running.add(teardown);
  try {
    await stack.start();
    o.log(`stack up in ${Date.now() - started} ms: api ${stack.url} (2 processes), 2 workers, temporal :${stack.temporalPort}, postgres :${stack.pg.port}`);

    const startFleet = (f: Fleet) => {
      const args = [MAIN, 'fleet', '--infra-env', f.infraEnvId, '--url', stack.url, '--count', String(f.count), '--profiles', f.mix, '--duration-seconds', '3600', '--poll-seconds', '1', '--state-dir', f.stateDir];
      f.log.write(`--- fleet start at ${new Date().toISOString()}\n`);
      f.proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      f.proc.stdout!.pipe(f.log, { end: false });
      f.proc.stderr!.pipe(f.log, { end: false });
    };

    const newCluster = async (i: number, single: boolean): Promise<Fleet> => {
      const name = `${single ? 'sno' : 'chaos'}-${i}`;
      const body = single
        ? { name, openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com', control_plane_count: 1, high_availability_mode: 'None' }
        : { name, openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com', machine_networks: [{ cidr: '192.168.127.0/24' }], api_vips: [{ ip: '192.168.127.250' }], ingress_vips: [{ ip: '192.168.127.251' }] };
      const c = (await api(stack.url, 'POST', '/clusters', body)).body;
      const ie = (await api(stack.url, 'POST', '/infra-envs', { name: `${name}-ie`, pull_secret: PULL_SECRET, cluster_id: c.id })).body;
      if (!c?.id || !ie?.id) throw new Error(`could not create cluster ${name}: ${JSON.stringify(c)} ${JSON.stringify(ie)}`);
      const stateDir = path.join(o.dir, 'agents', name);
      mkdirSync(stateDir, { recursive: true });
      const f: Fleet = {
        name,
        clusterId: c.id,
        infraEnvId: ie.id,
        single,
        stateDir,
        log: createWriteStream(path.join(o.dir, 'logs', `fleet-${name}.log`), { flags: 'a' }),
        mix: single ? `${path.join(PROFILES, 'chaos-single-node.yaml')}:1` : `${path.join(PROFILES, 'chaos-control-plane.yaml')}:3,${path.join(PROFILES, 'chaos-worker.yaml')}:2`,
        count: single ? 1 : 5,
      };
      fleets.push(f);
      startFleet(f);
      return f;
    };

    const clusterStatus = async (f: Fleet) => (await api(stack.url, 'GET', `/clusters/${f.clusterId}`)).body as { status: string; status_info: string; hosts: Array<{ id: string; status: string; status_info: string; progress?: { current_stage?: string } }> };

    /** One install, from an empty cluster to its end; the only person acting is the retry of a victim host. */
    const install = async (f: Fleet): Promise<void> => {
      const until = started + o.deadlineMs;
      // The user presses Install once the cluster is ready. A 409 means it was not ready on the
      // service's fresh look (a validation flapping on a loaded machine): wait for ready and press again.
      for (;;) {
        const c = await clusterStatus(f);
        if (Date.now() > until) throw new Error(`${f.name} never started installing: ${c.status} ${c.status_info}`);
        if (c.status !== 'ready') {
          await sleep(500);
          continue;
        }
        const r = await api(stack.url, 'POST', `/clusters/${f.clusterId}/actions/install`);
        if (r.status === 202) break;
        // The answer to an accepted install may have been lost with its API process; the cluster says.
        const after = await clusterStatus(f);
        if (['preparing-for-installation', 'installing', 'installing-in-progress', 'finalizing', 'installed'].includes(after.status)) break;
        o.log(`${f.name}: install refused (${r.status}): ${JSON.stringify(r.body).slice(0, 300)}; pressed again once ready`);
      }
      o.log(`${f.name}: install started`);
      // The victim: its agent is killed while it writes the image (a 4 s stage), and started again after a pause.
      // Watched on the agent's own ledger every 100 ms, apart from the sampling of the service below.
      let watching = f.single;
      const victim = (async () => {
        while (watching && Date.now() < until) {
          if (agentWriting(f)) {
            await sleep(between([200, 2000]));
            const at = Date.now() - started;
            const pid = f.proc?.pid;
            const stillWriting = agentWriting(f);
            f.proc?.kill('SIGKILL');
            const down = between([1000, 3000]);
            // PostgreSQL may be the one away at this moment: then what is in flight is what the agent's own ledger said.
            const flight = await inFlight();
            kills.push({ component: 'agent', target: `fleet ${f.name} pid ${pid}`, atMs: at, downMs: down, inFlight: Object.keys(flight).length || !stillWriting ? flight : { installing: 1 } });
            o.log(`kill agent of ${f.name} (pid ${pid}) at ${at} ms, ${stillWriting ? 'mid-write' : 'NOT mid-write any more (the machine was too slow)'} by its own ledger; back in ${down} ms`);
            await sleep(down);
            startFleet(f);
            return;
          }
          await sleep(100);
        }
      })();
      try {
        await followInstall(f, until);
      } finally {
        watching = false;
        await victim;
      }
    };

    /** Follows one started install to installed; a person retries a host in error once. */
    const followInstall = async (f: Fleet, until: number): Promise<void> => {
      const retried = new Set<string>();
      while (Date.now() < until) {
        const c = await clusterStatus(f);
        if (c.status === 'installed') {
          o.log(`${f.name}: installed`);
          return;
        }
        for (const h of c.hosts.filter((x) => x.status === 'error' && !retried.has(x.id))) {
          // The person's one retry; refused (409) while the install has not yet taken in the failure: tried again next round.
          const r = await api(stack.url, 'POST', `/infra-envs/${f.infraEnvId}/hosts/${h.id}/actions/retry-install`);
          if (r.status !== 202) {
            // The retry's answer may have been lost with its API process (api() then asks again and hears 409:
            // the host is no longer in error). Only a retry moves a host out of error: the host says whether it was taken.
            const now = (await clusterStatus(f)).hosts.find((x) => x.id === h.id);
            if (!now || now.status === 'error') continue;
            o.log(`${f.name}: host ${h.id}'s retry was answered ${r.status}, yet the host left error (${now.status}): the first answer was lost`);
          }
          const allowed = f.single && kills.some((k) => k.component === 'agent' && k.target.startsWith(`fleet ${f.name} `));
          personActions.push({ cluster: f.name, host: h.id, action: 'retry-install', reason: h.status_info, allowed });
          o.log(`${f.name}: host ${h.id} in error (${h.status_info}); a person retried it (${allowed ? 'its agent was killed mid-write' : 'NOT expected'})`);
          retried.add(h.id);
        }
        await sleep(500);
      }
      const c = await clusterStatus(f);
      throw new Error(`${f.name} not installed by the deadline: ${c.status} (${c.status_info}); hosts ${c.hosts.map((h) => `${h.status}/${h.progress?.current_stage ?? '-'}`).join(', ')}`);
    };

    const inFlight = async (): Promise<Record<string, number>> => {
      const rows = (await stack.db('clusters').select('status').count('* as n').groupBy('status').catch(() => [])) as Array<{ status: string; n: string }>;
      return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
    };

    // The kills: each of api, worker, Temporal and PostgreSQL, killsPerComponent times, in a seeded order.
    const plan: Array<Exclude<Component, 'agent'>> = [];
    for (let k = 0; k < o.killsPerComponent; k++) plan.push('api', 'worker', 'temporal', 'postgres');
    for (let i = plan.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [plan[i], plan[j]] = [plan[j]!, plan[i]!];
    }
    const chaos = (async () => {
      // Wait for the first install to be under way: kills land mid-install, not during discovery.
      while (!finished && !Object.keys(await inFlight()).some((s) => ['preparing-for-installation', 'installing', 'finalizing'].includes(s))) await sleep(250);
      for (const component of plan) {
        if (finished) return;
        await sleep(between(o.gapMs));
        // Api and worker: one replica, or (one time in three) every replica: the whole tier away.
        const all = rand() < 1 / 3;
        const which = all ? [0, 1] : [Math.floor(rand() * 2)];
        const atMs = Date.now() - started;
        const down = between(o.downMs);
        const flight = await inFlight();
        const { target, revive } = await stack.kill(component, which);
        kills.push({ component, target, atMs, downMs: down, inFlight: flight });
        o.log(`kill ${component} (${target}) at ${atMs} ms; installs ${JSON.stringify(flight)}; back in ${down} ms`);
        const from = Date.now();
        await sleep(down);
        await revive();
        downWindows.push({ from, to: Date.now(), component: all || component === 'postgres' || component === 'temporal' ? component : `one ${component}` });
        o.log(`${component} back after ${Date.now() - from} ms`);
      }
    })();

    // The installs: `concurrency` at a time; the victims are among them.
    const queue: Array<{ i: number; single: boolean }> = [];
    for (let i = 0; i < o.clusters; i++) queue.push({ i, single: false });
    for (let v = 0; v < o.agentVictims; v++) queue.splice(Math.min(queue.length, Math.floor(((v + 1) * queue.length) / (o.agentVictims + 1))), 0, { i: v, single: true });
    const results: Array<PromiseSettledResult<void>> = [];
    await Promise.all(
      Array.from({ length: o.concurrency }, async () => {
        for (let next = queue.shift(); next; next = queue.shift()) {
          const f = await newCluster(next.i, next.single);
          results.push(await install(f).then(() => ({ status: 'fulfilled' as const, value: undefined }), (reason: unknown) => ({ status: 'rejected' as const, reason })));
        }
      }),
    );
    finished = true;
    await chaos;
    for (const r of results) if (r.status === 'rejected') o.log(`install failed: ${(r.reason as Error).message}`);

    // Reports still queued on the agents' disks get a moment to go out before the outboxes are read.
    await sleep(3000);
    return await check(stack, fleets, { seed: o.seed, started, kills, personActions, downWindows });
  } finally {
    running.delete(teardown);
    await teardown();
  }
}

async function check(
  stack: Stack,
  fleets: Fleet[],
  run: { seed: string; started: number; kills: KillRecord[]; personActions: ChaosReport['personActions']; downWindows: Array<{ from: number; to: number; component: string }> },
): Promise<ChaosReport> {
  const db = stack.db;
  const clusters = (await db('clusters').whereIn('id', fleets.map((f) => f.clusterId)).select('id', 'name', 'status', 'status_info', 'doc')) as Array<{ id: string; name: string; status: string; status_info: string; doc: Record<string, unknown> }>;
  const hosts = (await db('hosts').whereIn('cluster_id', fleets.map((f) => f.clusterId)).select('id', 'infra_env_id', 'cluster_id', 'role', 'bootstrap', 'status', 'status_info')) as Array<{ id: string; infra_env_id: string; cluster_id: string; role: string; bootstrap: boolean; status: string; status_info: string }>;

  // Executions, from each agent's journal (one line per install step it ran).
  const duplicateExecutions: ChaosReport['duplicateExecutions'] = [];
  let executions = 0;
  for (const f of fleets) {
    for (const hostDir of existsSync(f.stateDir) ? readdirSync(f.stateDir) : []) {
      const journal = path.join(f.stateDir, hostDir, `started-${f.infraEnvId}.log`);
      if (!existsSync(journal)) continue;
      const counts = new Map<string, number>();
      for (const line of readFileSync(journal, 'utf8').split('\n').filter(Boolean)) {
        const id = line.split(' ')[2]!;
        counts.set(id, (counts.get(id) ?? 0) + 1);
        executions++;
      }
      for (const [stepId, times] of counts) if (times > 1) duplicateExecutions.push({ host: hostDir, stepId, times });
    }
  }
  const installSteps = (await db('host_steps').whereIn('host_id', hosts.map((h) => h.id)).where({ step_type: 'install' }).whereNot({ state: 'pending' }).select('attempts')) as Array<{ attempts: number }>;
  const installStepsDispatched = installSteps.length;
  const installStepSends = installSteps.reduce((n, s) => n + s.attempts, 0);
  const stepsLeftSent = Number((await db('host_steps').whereIn('host_id', hosts.filter((h) => h.status === 'installed').map((h) => h.id)).where({ state: 'sent' }).count('* as n'))[0]!.n);

  // Every stage each installed host went through is recorded (its reports reached the service).
  const lostStageReports: ChaosReport['lostStageReports'] = [];
  const events = (await db('events').whereIn('cluster_id', fleets.map((f) => f.clusterId)).select('name', 'host_id', 'cluster_id', 'props')) as Array<{ name: string; host_id: string | null; cluster_id: string; props: Record<string, unknown> }>;
  for (const h of hosts.filter((x) => x.status === 'installed')) {
    const c = clusters.find((x) => x.id === h.cluster_id)!;
    const cp = (c.doc.control_plane_count as number | undefined) ?? 3;
    const expected = STAGES_BY_ROLE[stageRole(h.role, h.bootstrap, cp)].filter((s) => s !== 'Copying registry data to disk');
    const seen = new Set(events.filter((e) => e.host_id === h.id && e.name === 'host_install_progress_updated').map((e) => String(e.props.stage)));
    const missing = expected.filter((s) => !seen.has(s));
    if (missing.length) lostStageReports.push({ host: h.id, missing });
  }
  const lostEvents = clusters.filter((c) => c.status === 'installed' && !events.some((e) => e.cluster_id === c.id && e.name === 'cluster_installation_completed')).map((c) => `${c.name}: no cluster_installation_completed`);

  // Reports still in an agent's outbox at the end were never accepted.
  let undeliveredAtEnd = 0;
  for (const f of fleets) {
    for (const hostDir of existsSync(f.stateDir) ? readdirSync(f.stateDir) : []) {
      const box = path.join(f.stateDir, hostDir, `outbox-${f.infraEnvId}.json`);
      if (existsSync(box)) undeliveredAtEnd += (JSON.parse(readFileSync(box, 'utf8') || '[]') as unknown[]).length;
    }
  }

  const stats = stack.apis.balancer.stats;
  const by5xx: Record<string, number> = {};
  let total = 0;
  for (const counts of stats.byReplica) {
    for (const [status, n] of Object.entries(counts)) {
      total += n;
      if (Number(status) >= 500) by5xx[status] = (by5xx[status] ?? 0) + n;
    }
  }
  const depDown = (at: number) => run.downWindows.some((w) => (w.component === 'postgres' || w.component === 'temporal') && at >= w.from && at <= w.to + 2000);
  const during = { dependencyDown503: stats.serverErrors.filter((e) => e.status === 503 && depDown(e.at)).length, dependencyDownOther5xx: stats.serverErrors.filter((e) => e.status !== 503 && depDown(e.at)).length };

  return {
    seed: run.seed,
    durationMs: Date.now() - run.started,
    installs: fleets.length,
    installed: clusters.filter((c) => c.status === 'installed').length,
    notInstalled: await Promise.all(
      clusters
        .filter((c) => c.status !== 'installed')
        .map(async (c) => ({
          cluster: c.name,
          status: c.status,
          info: c.status_info,
          hosts: hosts.filter((h) => h.cluster_id === c.id).map((h) => `${h.id} ${h.role} ${h.status}: ${h.status_info}`),
          lastEvents: ((await db('events').where({ cluster_id: c.id }).orderBy('seq', 'desc').limit(12).select('event_time', 'name', 'message')) as Array<{ event_time: string | Date; name: string; message: string }>)
            .reverse()
            .map((e) => `${new Date(e.event_time).toISOString()} ${e.name}: ${e.message}`),
        })),
    ),
    personActions: run.personActions,
    duplicateExecutions,
    executions,
    installStepsDispatched,
    installStepSends,
    stepsLeftSent,
    lostStageReports,
    lostEvents,
    undeliveredAtEnd,
    kills: run.kills,
    selfDeaths: stack.selfDeaths,
    answers: { total, by5xx, during },
    serverErrors: stats.serverErrors.filter((e) => e.status !== 503).map((e) => ({ status: e.status, method: e.method, url: e.url, body: e.body })),
  };
}

