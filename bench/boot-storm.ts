/**
 * Boot storm (not a timed test): N hosts power on together; each registers
 * (`POST …/infra-envs/{id}/hosts`) and posts its first inventory (a ~10 KB
 * reply to the inventory step, bench/inventory.ts), C agents at a time, 50
 * hosts per cluster, into clusters that have everything a host needs to leave
 * `discovering` (machine network, API and ingress VIPs).
 *
 *   npm run bench:boot-storm -- [--hosts 1000] [--concurrency 16] [--hosts-per-cluster 50]
 *                               [--repo DIR] [--baseline DIR] [--api-processes N] [--api-env K=V] [--json FILE]
 *
 * Measures: hosts/s over the storm, p50/p99 of each request type, the time
 * from the last host's inventory answer until no host is `discovering` and
 * every host's validations show its inventory (read from PostgreSQL directly,
 * as nobody's GET may trigger the refresh), the API's and PostgreSQL's CPU,
 * the API's peak RSS, and the hosts in the database checked id by id against
 * the N that registered (none lost, none twice).
 *
 * `--repo DIR` runs migrations and the API from another checkout's build
 * (`DIR/dist/src/cli/main.js`); `--baseline DIR` runs this checkout first,
 * then DIR, the same way, and prints the ratio. Everything runs on 127.0.0.1;
 * everything it starts is stopped; a watchdog bounds the run.
 */
import { mkdtempSync, promises as fs, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres, type EmbeddedPg } from '../src/dev/embedded-postgres';
import { freePort, repoRoot, sleep } from '../src/dev/process-utils';
import { inventoryFor } from './inventory';
import {
  boundedNumber,
  keyValue,
  AGENT_API,
  benchHostId,
  createBenchClusters,
  keepAliveClient,
  CpuMeter,
  fmtNum,
  forEachConcurrently,
  latencyLine,
  loadAverage,
  migrateWithCli,
  percentiles,
  pgQuery,
  postmasterPid,
  resultFile,
  spawnLandfall,
  treeRssKb,
  waitHttpOk,
  type LandfallChild,
  type Percentiles,
} from './support';

const BASE = AGENT_API;
const SETTLE_TARGET_S = 5;

interface Options {
  hosts: number;
  concurrency: number;
  hostsPerCluster: number;
  repo: string;
  baseline?: string;
  apiProcesses?: number;
  /** More environment of the API processes (a setting under study), for this checkout's run and the baseline's alike. */
  apiEnv: Record<string, string>;
  settleTimeoutS: number;
  json?: string;
}

const USAGE = `usage: node dist/bench/boot-storm.js [options]
  --hosts N               hosts in the storm (default 1000)
  --concurrency C         agents registering at a time (default 16)
  --hosts-per-cluster N   hosts per cluster (default 50)
  --repo DIR              run migrations and the API from DIR's build (default: this checkout)
  --baseline DIR          after this checkout, run the same storm against DIR's build and print the ratio
  --api-processes N       API_PROCESSES of the API (only for a build that has it)
  --api-env K=V           another environment variable of the API processes (repeatable), e.g. API_REFRESHER_MAIN_NICE=-5
  --settle-timeout S      longest wait for every host to leave discovering (default 120)
  --json FILE             the result file (default bench/results/boot-storm-<time>.json)
`;

function parseArgs(argv: string[]): Options {
  const o: Options = { hosts: 1000, concurrency: 16, hostsPerCluster: 50, repo: repoRoot(), apiEnv: {}, settleTimeoutS: 120 };
  const num = (name: string, v: string | undefined, min: number, max: number): number => boundedNumber(name, v, min, max, { whole: true, usage: USAGE });
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = () => argv[++i];
    switch (a) {
      case '--hosts': o.hosts = num(a, next(), 1, 50_000); break;
      case '--concurrency': o.concurrency = num(a, next(), 1, 1024); break;
      case '--hosts-per-cluster': o.hostsPerCluster = num(a, next(), 1, 10_000); break;
      case '--repo': o.repo = path.resolve(next() ?? ''); break;
      case '--baseline': o.baseline = path.resolve(next() ?? ''); break;
      case '--api-processes': o.apiProcesses = num(a, next(), 1, 64); break;
      case '--api-env': {
        const [k, v] = keyValue(a, next(), USAGE);
        o.apiEnv[k] = v;
        break;
      }
      case '--settle-timeout': o.settleTimeoutS = num(a, next(), 1, 3600); break;
      case '--json': o.json = next(); break;
      case '--help': case '-h': process.stdout.write(USAGE); process.exit(0); break;
      default: throw new Error(`unknown option ${a}\n${USAGE}`);
    }
  }
  if (o.hosts > 65_000) throw new Error('--hosts above 65,000 leaves the bench inventories\' machine network');
  return o;
}

interface StormResult {
  repo: string;
  commit: string;
  hosts: number;
  concurrency: number;
  clusters: number;
  stormSeconds: number;
  hostsPerSecond: number;
  latencyMs: { register: Percentiles; inventory: Percentiles };
  errors: Record<string, number>;
  settle: { seconds: number | null; met: boolean; timedOut: boolean; statuses: Record<string, number>; refreshQueue: number | null };
  database: { hosts: number; distinctIds: number; missing: number; unexpected: number; ok: boolean };
  cpuCores: { storm: Record<string, number>; settle: Record<string, number> };
  /** CPU per host over storm and settling (API and PostgreSQL): steadier than hosts/s on a machine others load. */
  cpuMsPerHost: { api: number; postgres: number };
  apiRssMb: { idle: number; peak: number; end: number };
  load: { before: string; after: string };
}

async function gitCommit(repo: string): Promise<string> {
  const { execFileSync } = await import('node:child_process');
  try {
    return execFileSync('git', ['-C', repo, 'rev-parse', '--short', 'HEAD']).toString().trim();
  } catch {
    return 'unknown';
  }
}

/** The settled condition, read from PostgreSQL: no host discovering, and each host's validations computed from its inventory. */
async function settledState(url: string, queueTable: boolean) {
  const statuses = await pgQuery<{ status: string; n: number }>(url, 'select status, count(*)::int as n from hosts group by status');
  const byStatus = Object.fromEntries(statuses.map((s) => [s.status, s.n]));
  const queue = queueTable ? (await pgQuery<{ n: number }>(url, 'select count(*)::int as n from refresh_requests'))[0]!.n : null;
  let unvalidated = -1;
  if (!byStatus.discovering && !queue) {
    // Only when nothing is discovering: this one parses every host's validations (a few KB each).
    unvalidated = (
      await pgQuery<{ n: number }>(
        url,
        `select count(*)::int as n from hosts
          where not coalesce(jsonb_path_exists((doc->>'validations_info')::jsonb, '$.*[*] ? (@.id == "has-inventory" && @.status == "success")'), false)`,
      )
    )[0]!.n;
  }
  return { byStatus, queue, settled: !byStatus.discovering && !queue && unvalidated === 0 };
}

async function runStorm(o: Options, repo: string): Promise<StormResult> {
  const work = mkdtempSync(path.join(os.tmpdir(), 'landfall-bench-boot-storm-'));
  let pg: EmbeddedPg | undefined;
  let api: LandfallChild | undefined;
  try {
    const pgDir = path.join(work, 'pgdata');
    pg = await startEmbeddedPostgres({ dir: pgDir, port: await freePort(), database: 'landfall_bench' });
    await migrateWithCli(repo, pg.url);
    const pmPid = postmasterPid(pgDir);
    const queueTable = (await pgQuery<{ t: string | null }>(pg.url, "select to_regclass('refresh_requests')::text as t"))[0]!.t !== null;

    const port = await freePort();
    api = spawnLandfall(repo, ['api'], {
      API_HOST: '127.0.0.1',
      API_PORT: String(port),
      SERVICE_BASE_URL: `http://127.0.0.1:${port}`,
      DATABASE_URL: pg.url,
      // Nothing on the agent path talks to Temporal; the client connects lazily.
      TEMPORAL_ADDRESS: '127.0.0.1:1',
      STORAGE_BACKEND: 'local',
      STORAGE_LOCAL_DIR: path.join(work, 'objects'),
      STATE_DIR: path.join(work, 'state'),
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
      AUTH_TYPE: 'none',
      API_VALIDATE_RESPONSES: 'false',
      ...(o.apiProcesses ? { API_PROCESSES: String(o.apiProcesses) } : {}),
      ...o.apiEnv,
    });
    await waitHttpOk(`http://127.0.0.1:${port}/healthz`, 60_000, api);
    await sleep(500);
    const rssIdle = treeRssKb(api.pid) / 1024;
    const http1 = keepAliveClient(port, Math.max(16, o.concurrency));
    const clusters = Math.ceil(o.hosts / o.hostsPerCluster);
    const infraEnvs = await createBenchClusters(http1, clusters, 'storm');

    // ---- the requests, built before the storm so the load generator stays cheap during it
    const ids = Array.from({ length: o.hosts }, (_, i) => benchHostId(i));
    const ie = (i: number) => infraEnvs[Math.floor(i / o.hostsPerCluster)]!;
    const inventories = ids.map((_, i) =>
      JSON.stringify({ step_type: 'inventory', step_id: `inventory-${i.toString(16).padStart(8, '0')}`, exit_code: 0, output: inventoryFor(`storm-${String(i).padStart(6, '0')}`, i) }),
    );
    const inventoryKb = inventories.reduce((s, b) => s + b.length, 0) / inventories.length / 1024;

    // ---- the storm
    const load0 = loadAverage();
    const lat = { register: [] as number[], inventory: [] as number[] };
    const errors: Record<string, number> = {};
    const fail = (what: string) => (errors[what] = (errors[what] ?? 0) + 1);
    let rssPeak = 0;
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, treeRssKb(api!.pid) / 1024)), 200);
    const meter = new CpuMeter({ api: api.pid, postgres: pmPid, 'load generator': 'self' });
    let done = 0;
    let lastPrint = Date.now();
    process.stdout.write(`storm: ${fmtNum(o.hosts)} hosts, ${o.concurrency} at a time, into ${fmtNum(clusters)} clusters (${commitLabel(repo)}), inventory ${fmtNum(inventoryKb, 1)} KB\n`);
    meter.start();
    const t0 = performance.now();
    let lastInventoryAt = t0;
    await forEachConcurrently(o.hosts, o.concurrency, async (i) => {
      const reg = await http1.request('POST', `${BASE}/infra-envs/${ie(i)}/hosts`, JSON.stringify({ host_id: ids[i], discovery_agent_version: 'bench-agent:1.0' })).catch((e: Error) => ({ status: 0, ms: 0, text: e.message }));
      if (reg.status !== 201) return void fail(`register ${reg.status}`);
      lat.register.push(reg.ms);
      const inv = await http1.request('POST', `${BASE}/infra-envs/${ie(i)}/hosts/${ids[i]}/instructions`, inventories[i]!).catch((e: Error) => ({ status: 0, ms: 0, text: e.message }));
      if (inv.status !== 204) return void fail(`inventory ${inv.status}`);
      lat.inventory.push(inv.ms);
      lastInventoryAt = performance.now();
      done++;
      if (Date.now() - lastPrint > 5000) {
        lastPrint = Date.now();
        process.stdout.write(`  ${fmtNum(done)}/${fmtNum(o.hosts)} (${fmtNum(done / ((performance.now() - t0) / 1000))}/s)\n`);
      }
    });
    const stormSeconds = (lastInventoryAt - t0) / 1000;
    const stormCpu = meter.stop();

    // ---- settling: until no host is discovering and every validation is computed, read from PostgreSQL
    meter.start();
    let settleSeconds: number | null = null;
    let state = await settledState(pg.url, queueTable);
    const settleDeadline = lastInventoryAt + o.settleTimeoutS * 1000;
    while (!state.settled && performance.now() < settleDeadline) {
      await sleep(100);
      state = await settledState(pg.url, queueTable);
    }
    if (state.settled) settleSeconds = (performance.now() - lastInventoryAt) / 1000;
    const settleCpu = meter.stop();
    clearInterval(sampler);
    const rssEnd = treeRssKb(api.pid) / 1024;
    rssPeak = Math.max(rssPeak, rssEnd);
    http1.close();

    // ---- no host lost, none twice: the database's ids against the N that registered
    const rows = await pgQuery<{ id: string }>(pg.url, 'select id::text as id from hosts');
    const inDb = new Set(rows.map((r) => r.id));
    const expected = new Set(ids);
    const missing = ids.filter((id) => !inDb.has(id)).length;
    const unexpected = [...inDb].filter((id) => !expected.has(id)).length;
    const database = { hosts: rows.length, distinctIds: inDb.size, missing, unexpected, ok: rows.length === o.hosts && inDb.size === o.hosts && missing === 0 && unexpected === 0 };
    if (api.lines() > 0) process.stdout.write(`API log: ${api.lines()} lines at warn or above; last: ${api.recent.slice(-3).join(' | ').slice(0, 600)}\n`);
    return {
      repo,
      commit: await gitCommit(repo),
      hosts: o.hosts,
      concurrency: o.concurrency,
      clusters,
      stormSeconds,
      hostsPerSecond: done / stormSeconds,
      latencyMs: { register: percentiles(lat.register), inventory: percentiles(lat.inventory) },
      errors,
      settle: { seconds: settleSeconds, met: settleSeconds !== null && settleSeconds <= SETTLE_TARGET_S, timedOut: settleSeconds === null, statuses: state.byStatus, refreshQueue: state.queue },
      database,
      cpuCores: { storm: { ...stormCpu.cores, other: stormCpu.other }, settle: { ...settleCpu.cores, other: settleCpu.other } },
      cpuMsPerHost: {
        api: (((stormCpu.cores.api ?? 0) * stormCpu.seconds + (settleCpu.cores.api ?? 0) * settleCpu.seconds) * 1000) / Math.max(1, done),
        postgres: (((stormCpu.cores.postgres ?? 0) * stormCpu.seconds + (settleCpu.cores.postgres ?? 0) * settleCpu.seconds) * 1000) / Math.max(1, done),
      },
      apiRssMb: { idle: rssIdle, peak: rssPeak, end: rssEnd },
      load: { before: load0, after: loadAverage() },
    };
  } finally {
    await api?.stop();
    await pg?.stop().catch(() => undefined);
    await fs.rm(work, { recursive: true, force: true }).catch(() => undefined);
  }
}

function commitLabel(repo: string): string {
  return repo === repoRoot() ? 'this checkout' : repo;
}

const cores = (c: Record<string, number>) => Object.entries(c).map(([k, v]) => `${k} ${fmtNum(v, 2)}`).join('   ');

function report(r: StormResult): void {
  const out = (s: string) => process.stdout.write(`${s}\n`);
  out('');
  out(`boot storm: ${fmtNum(r.hosts)} hosts, ${r.concurrency} agents at a time, ${fmtNum(r.clusters)} clusters of ≤ 50 — ${r.commit} (${r.repo}); ${os.cpus().length} CPUs, load ${r.load.before} → ${r.load.after}`);
  out(`  rate          ${fmtNum(r.hostsPerSecond)} hosts/s (registration + first inventory), storm ${fmtNum(r.stormSeconds, 1)} s`);
  out(`  register      ${latencyLine(r.latencyMs.register)}`);
  out(`  inventory     ${latencyLine(r.latencyMs.inventory)}`);
  out(`  errors        ${Object.keys(r.errors).length ? Object.entries(r.errors).map(([k, v]) => `${k}: ${v}`).join(', ') : 'none'}`);
  out(
    `  settled       ${r.settle.seconds === null ? `NOT within the timeout` : `${fmtNum(r.settle.seconds, 2)} s`} after the last inventory (target ≤ ${SETTLE_TARGET_S} s → ${r.settle.met ? 'MET' : 'MISSED'}); statuses ${Object.entries(r.settle.statuses).map(([k, v]) => `${k} ${fmtNum(v)}`).join(', ')}${r.settle.refreshQueue !== null ? `; refresh queue ${r.settle.refreshQueue}` : ''}`,
  );
  out(`  database      ${fmtNum(r.database.hosts)} host rows, ${fmtNum(r.database.distinctIds)} distinct ids, ${r.database.missing} missing, ${r.database.unexpected} unexpected → ${r.database.ok ? 'OK' : 'WRONG'}`);
  out(`  CPU storm     ${cores(r.cpuCores.storm)}   (cores; worker: not started, nothing on this path runs in it)`);
  out(`  CPU settling  ${cores(r.cpuCores.settle)}   (PostgreSQL includes this bench's polling of it)`);
  out(`  CPU per host  API ${fmtNum(r.cpuMsPerHost.api, 2)} ms, PostgreSQL ${fmtNum(r.cpuMsPerHost.postgres, 2)} ms (storm and settling)`);
  out(`  API RSS       idle ${fmtNum(r.apiRssMb.idle)} MB, peak ${fmtNum(r.apiRssMb.peak)} MB, end ${fmtNum(r.apiRssMb.end)} MB`);
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const runs = o.baseline ? 2 : 1;
  const dog = setTimeout(() => {
    process.stderr.write('boot-storm: watchdog expired\n');
    process.exit(2);
  }, runs * (300_000 + o.hosts * 100 + o.settleTimeoutS * 1000));
  dog.unref();
  const results: StormResult[] = [await runStorm(o, o.repo)];
  report(results[0]!);
  if (o.baseline) {
    results.push(await runStorm(o, o.baseline));
    report(results[1]!);
    const [cur, base] = results as [StormResult, StormResult];
    process.stdout.write(`\nratio: ${fmtNum(cur.hostsPerSecond)} / ${fmtNum(base.hostsPerSecond)} hosts/s = ${fmtNum(cur.hostsPerSecond / base.hostsPerSecond, 2)}x (${cur.commit} over ${base.commit}; target ≥ 5x); API CPU per host ${fmtNum(base.cpuMsPerHost.api / Math.max(1e-9, cur.cpuMsPerHost.api), 2)}x less, API + PostgreSQL ${fmtNum((base.cpuMsPerHost.api + base.cpuMsPerHost.postgres) / Math.max(1e-9, cur.cpuMsPerHost.api + cur.cpuMsPerHost.postgres), 2)}x less\n`);
  }
  const file = o.json ?? resultFile(`boot-storm-${o.hosts}h-c${o.concurrency}`);
  const ratio = results.length === 2 ? results[0]!.hostsPerSecond / results[1]!.hostsPerSecond : undefined;
  writeFileSync(file, JSON.stringify({ options: { ...o, repo: undefined }, results, ratio, settleTargetSeconds: SETTLE_TARGET_S }, null, 2) + '\n');
  process.stdout.write(`result file: ${path.relative(process.cwd(), file)}\n`);
  const bad = results.some((r) => !r.database.ok || Object.keys(r.errors).length > 0);
  process.exitCode = bad ? 1 : 0;
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (err: unknown) => {
    process.stderr.write(`boot-storm bench failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
