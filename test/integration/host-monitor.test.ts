/**
 * The disconnect monitor: a Temporal Schedule on a real server runs the
 * monitor workflow on the worker; a host whose agent stops becomes
 * disconnected after the configured time and comes back when it polls again.
 */
import { Agent } from 'undici';
import { Client, Connection } from '@temporalio/client';
import { HostAgent } from '../../agent/agent';
import { SimulatedExecutor, SimulatedNetwork, simulatedIdentity } from '../../agent/executors/simulated';
import { loadProfile } from '../../agent/profiles';
import { ServiceClient } from '../../agent/service-client';
import { parseConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { startWorker, type RunningWorker } from '../../src/worker/worker';
import { call, PULL_SECRET, startApiHarness, type ApiHarness } from '../support/api-harness';
import { eventually, startTestTemporal, tempDir } from '../support/services';

let h: ApiHarness;
let temporal: Awaited<ReturnType<typeof startTestTemporal>>;
let worker: RunningWorker;

beforeAll(async () => {
  temporal = await startTestTemporal();
  h = await startApiHarness({ env: { HOST_DISCONNECT_TIMEOUT_MS: '3000', TEMPORAL_ADDRESS: temporal.address } });
  const cfg = parseConfig({ DATABASE_URL: h.pg.url, TEMPORAL_ADDRESS: temporal.address, STORAGE_LOCAL_DIR: tempDir('monitor-objects'), HOST_DISCONNECT_TIMEOUT_MS: '3000', HOST_MONITOR_INTERVAL_MS: '1000' });
  worker = await startWorker(cfg, createLogger({ log: { level: 'silent', format: 'json' } }, 'worker'));
});
afterAll(async () => {
  await worker?.shutdown();
  await h?.stop();
  await temporal?.stop();
});

describe('host monitor', () => {
  it('marks a silent host disconnected and brings it back when it polls', async () => {
    const cluster = (await call('POST', `${h.base}/clusters`, { body: { name: 'mon', openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com' } })).body;
    const ie = (await call('POST', `${h.base}/infra-envs`, { body: { name: 'mon-ie', pull_secret: PULL_SECRET, cluster_id: cluster.id } })).body;
    const ident = simulatedIdentity('monitor', 0);
    const cfg = { serviceUrl: h.url, infraEnvId: ie.id, agentToken: '', agentVersion: 'test', pollIntervalSeconds: 0.5 };
    const mkAgent = () => new HostAgent(cfg, new SimulatedExecutor(loadProfile('control-plane'), { ...ident, hostname: 'mon-0' }, new SimulatedNetwork()), new ServiceClient(cfg, new Agent()), { info: () => undefined, warn: () => undefined }, { writeStatus: false });
    const hostUrl = `${h.base}/infra-envs/${ie.id}/hosts/${ident.id}`;

    let stop = new AbortController();
    let run = mkAgent().run(stop.signal);
    await eventually(async () => (await call('GET', hostUrl)).body.inventory, 15000, 'inventory');
    stop.abort();
    await run;

    const silent = await eventually(async () => {
      const b = (await call('GET', hostUrl)).body;
      return b.status === 'disconnected' ? b : undefined;
    }, 20000, 'disconnected');
    expect(silent.status_info).toMatch(/stopped communicating/);
    expect(JSON.parse(silent.validation_remediation).connected.hint).toMatch(/mon-0/);

    stop = new AbortController();
    run = mkAgent().run(stop.signal);
    const back = await eventually(async () => {
      const b = (await call('GET', hostUrl)).body;
      return b.status !== 'disconnected' ? b : undefined;
    }, 15000, 'reconnected');
    stop.abort();
    await run;
    expect(['discovering', 'pending-for-input', 'insufficient', 'known']).toContain(back.status);

    // The schedule is one object in Temporal, and its runs are ordinary workflows an operator can open.
    const client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
    try {
      const d = await client.schedule.getHandle('host-monitor').describe();
      expect(d.action.type).toBe('startWorkflow');
      expect(d.info.recentActions.length).toBeGreaterThan(0);
      const events = (await call('GET', `${h.base}/events?cluster_id=${cluster.id}`)).body.map((e: { message: string }) => e.message);
      expect(events.some((m: string) => /updated status from \S+ to disconnected/.test(m))).toBe(true);
    } finally {
      await client.connection.close();
    }
  });
});
