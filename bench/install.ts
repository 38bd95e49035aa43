/**
 * Install benchmark (not a timed test):
 *   1. install action → `installed` for one 3+2 cluster of instant simulated hosts polling every second (target < 15 s);
 *   2. N concurrent 3+2 installs on one worker (default 50): all must reach `installed`; reports the
 *      wall time and the largest workflow history (target < 1,000 events).
 *
 *   npm run bench:install -- [--clusters 50]
 *
 * Real Temporal dev server, one API process and one worker process (children), embedded PostgreSQL;
 * the fleets run in this process.
 */
import { apiCaller, benchDatabase, numberFlag, watchdog } from './support';
import { spawn, type ChildProcess } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { runFleet } from '../agent/fleet';
import { startTemporalDevServer, temporalBinary } from '../src/dev/temporal-dev-server';
import { freePort, repoRoot, sleep, stopProcess, waitForPort } from '../src/dev/process-utils';

const arg = numberFlag;
const PROFILES = path.join(repoRoot(), 'bench', 'profiles');
const MIX = `${path.join(PROFILES, 'instant-control-plane.yaml')}:3,${path.join(PROFILES, 'instant-worker.yaml')}:2`;

async function main(): Promise<void> {
  const clusters = arg('clusters', 50);
  const dog = watchdog(20 * 60_000);
  const { dir, pg } = await benchDatabase('install');
  const temporal = await startTemporalDevServer({ binary: temporalBinary(), port: await freePort(), dbFile: path.join(dir, 'temporal.sqlite'), namespace: 'default', retentionHours: 24 });
  const port = await freePort();
  const env = { PATH: process.env.PATH, DATABASE_URL: pg.url, DATABASE_POOL_MAX: '20', TEMPORAL_ADDRESS: temporal.address, STORAGE_LOCAL_DIR: path.join(dir, 'objects'), LOG_LEVEL: 'warn', HOST_MONITOR_INTERVAL_MS: '60000' };
  const main = path.join(repoRoot(), 'dist/src/cli/main.js');
  const procs: ChildProcess[] = [
    spawn(process.execPath, [main, 'api'], { env: { ...env, API_PORT: String(port), API_HOST: '127.0.0.1' }, stdio: ['ignore', 'inherit', 'inherit'] }),
    spawn(process.execPath, [main, 'worker'], { env, stdio: ['ignore', 'ignore', 'inherit'] }),
  ];
  const client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
  const stop = new AbortController();
  // One fleet per cluster listens on this signal.
  setMaxListeners(0, stop.signal);
  try {
    await waitForPort('127.0.0.1', port, 30000, 'api', procs[0]);
    const base = `http://127.0.0.1:${port}/api/assisted-install/v2`;
    const call = apiCaller(base);
    const status = async (id: string) => (await call('GET', `/clusters/${id}?exclude-hosts=true`)).status as string;
    const waitFor = async (id: string, want: string, timeoutMs: number) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const s = await status(id);
        if (s === want) return;
        if (s === 'error' || Date.now() > deadline) throw new Error(`cluster ${id} is ${s}, waited for ${want}`);
        await sleep(200);
      }
    };
    const makeReady = async (name: string) => {
      const c = await call('POST', '/clusters', { name, openshift_version: '1.31', pull_secret: '{"auths":{}}', base_dns_domain: 'example.com', machine_networks: [{ cidr: '192.168.127.0/24' }], api_vips: [{ ip: '192.168.127.250' }], ingress_vips: [{ ip: '192.168.127.251' }] });
      const ie = await call('POST', '/infra-envs', { name, pull_secret: '{"auths":{}}', cluster_id: c.id });
      void runFleet({ serviceUrl: `http://127.0.0.1:${port}`, infraEnvId: ie.id, count: 5, mix: MIX, seed: name, durationSeconds: 900, pollIntervalSeconds: 1, rampSeconds: 0.5 }, stop.signal);
      await waitFor(c.id, 'ready', 120000);
      return c.id as string;
    };

    // 1. One install, alone.
    const solo = await makeReady('solo');
    let t = performance.now();
    await call('POST', `/clusters/${solo}/actions/install`);
    await waitFor(solo, 'installed', 120000);
    const soloS = (performance.now() - t) / 1000;

    // 2. Many at once on the one worker.
    process.stderr.write(`bench: preparing ${clusters} clusters of 5 hosts\n`);
    const ids: string[] = [];
    for (let i = 0; i < clusters; i += 10) ids.push(...(await Promise.all(Array.from({ length: Math.min(10, clusters - i) }, (_, j) => makeReady(`c${i + j}`)))));
    process.stderr.write(`bench: installing ${clusters} clusters concurrently\n`);
    t = performance.now();
    await Promise.all(ids.map((id) => call('POST', `/clusters/${id}/actions/install`)));
    await Promise.all(ids.map((id) => waitFor(id, 'installed', 600000)));
    const manyS = (performance.now() - t) / 1000;
    let maxEvents = 0;
    for (const id of [solo, ...ids]) {
      const h = await client.workflow.getHandle(`install-cluster-${id}-attempt-1`).fetchHistory();
      maxEvents = Math.max(maxEvents, h.events?.length ?? 0);
    }
    console.log(`\ninstall benchmark (3 control planes + 2 workers per cluster, instant simulated hosts polling every 1 s)`);
    console.log(`one install, action → installed:             ${soloS.toFixed(1)} s   target < 15 s: ${(15 / soloS).toFixed(2)}x headroom`);
    console.log(`${clusters} concurrent installs on one worker:      all installed in ${manyS.toFixed(1)} s`);
    console.log(`largest workflow history:                    ${maxEvents} events   target < 1000: ${(1000 / maxEvents).toFixed(2)}x headroom`);
  } finally {
    stop.abort();
    await client.connection.close();
    for (const p of procs) await stopProcess(p, 10000);
    await pg.stop();
    await temporal.stop();
    clearTimeout(dog);
  }
}

main().catch((err) => {
  console.error(`bench: ${(err as Error).message}`);
  process.exit(1);
});
