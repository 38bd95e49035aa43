/**
 * Durability: the worker process is killed with SIGKILL in the middle of an
 * install and started again; the install still completes, and no host gets
 * its install step twice.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { call, startApiHarness, type ApiHarness } from '../support/api-harness';
import { readyCluster, waitClusterStatus, type InstallHarness } from '../support/install-harness';
import { startTestTemporal, tempDir } from '../support/services';

const MAIN = path.resolve(__dirname, '../../dist/src/cli/main.js');
let temporal: Awaited<ReturnType<typeof startTestTemporal>>;
let api: ApiHarness;
let worker: ChildProcess | undefined;
const objects = tempDir('crash-objects');

function startWorkerProcess(): ChildProcess {
  return spawn(process.execPath, [MAIN, 'worker'], {
    env: { PATH: process.env.PATH!, DATABASE_URL: api.pg.url, TEMPORAL_ADDRESS: temporal.address, STORAGE_LOCAL_DIR: objects, LOG_LEVEL: 'warn', HOST_MONITOR_INTERVAL_MS: '60000' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

beforeAll(async () => {
  temporal = await startTestTemporal();
  api = await startApiHarness({ env: { TEMPORAL_ADDRESS: temporal.address, STORAGE_LOCAL_DIR: objects } });
});
afterAll(async () => {
  if (worker && worker.exitCode === null) worker.kill('SIGKILL');
  await api?.stop();
  await temporal?.stop();
});

describe('a worker killed mid-install', () => {
  it('resumes the install after a restart without dispatching any install step twice', async () => {
    worker = startWorkerProcess();
    const h = { api } as InstallHarness;
    const c = await readyCluster(h, 'crash', 'control-plane:3,worker:2', 5);
    try {
      expect((await call('POST', `${api.base}/clusters/${c.clusterId}/actions/install`)).status).toBe(202);
      await waitClusterStatus(h, c.clusterId, ['installing'], 60000);
      // Kill it while hosts are reporting stages.
      await new Promise((r) => setTimeout(r, 1500));
      const killed = new Promise((r) => worker!.once('exit', r));
      worker.kill('SIGKILL');
      await killed;
      await new Promise((r) => setTimeout(r, 2000));
      worker = startWorkerProcess();
      await waitClusterStatus(h, c.clusterId, ['installed'], 120000);
      const installSteps = await api.db('host_steps').where({ step_type: 'install' }).whereIn('host_id', (await call('GET', `${api.base}/clusters/${c.clusterId}`)).body.hosts.map((x: { id: string }) => x.id)).select('host_id', 'step_id');
      expect(installSteps).toHaveLength(5);
      expect(new Set(installSteps.map((s: { host_id: string }) => s.host_id)).size).toBe(5);
    } finally {
      await c.report();
    }
  });
});
