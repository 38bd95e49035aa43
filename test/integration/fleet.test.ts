import { runFleet } from '../../agent/fleet';
import { call, PULL_SECRET, startApiHarness, type ApiHarness } from '../support/api-harness';
import { eventually } from '../support/services';

/**
 * Simulated agents (the real agent loop with the simulated executor) register
 * against the API and complete the discovery loop; each fault profile shows up
 * in what the service stores.
 */
let h: ApiHarness;
let infraEnvId: string;
beforeAll(async () => {
  // The inventory asked on every poll (the setting at 0), so the agents' reply cache has something to hold back.
  h = await startApiHarness({ env: { STEP_REPEAT_INVENTORY_SECONDS: '0' } });
  const cluster = (await call('POST', `${h.base}/clusters`, { body: { name: 'fleet', openshift_version: '1.31', pull_secret: PULL_SECRET } })).body;
  infraEnvId = (await call('POST', `${h.base}/infra-envs`, { body: { name: 'fleet-ie', pull_secret: PULL_SECRET, cluster_id: cluster.id } })).body.id;
});
afterAll(async () => {
  await h?.stop();
});

describe('fleet simulator against the API', () => {
  it('registers every profile and stores what each reports', async () => {
    const profiles = ['control-plane', 'worker', 'undersized', 'slow-disk', 'skewed-clock', 'isolated'];
    const report = await runFleet(
      { serviceUrl: h.url, infraEnvId, count: profiles.length, mix: profiles.join(','), durationSeconds: 4, pollIntervalSeconds: 1, rampSeconds: 0 },
      new AbortController().signal,
    );
    expect(report.registered).toBe(6);
    expect(report.polls).toBeGreaterThanOrEqual(12);
    expect(report.failures).toBe(0);
    // The inventory is identical on every poll: sent once, then the reply cache holds it back.
    expect(report.skipped).toBeGreaterThan(0);

    const hosts = (await call('GET', `${h.base}/infra-envs/${infraEnvId}/hosts`)).body as Array<{ id: string; inventory?: string; timestamp?: number; requested_hostname?: string }>;
    expect(hosts).toHaveLength(6);
    const byProfile = Object.fromEntries(report.hosts.map((x) => [x.profile, hosts.find((y) => y.id === x.id)!]));
    for (const p of profiles) expect(typeof byProfile[p]!.inventory).toBe('string');
    const inv = (p: string) => JSON.parse(byProfile[p]!.inventory!);
    expect(inv('control-plane').cpu.count).toBe(8);
    expect(inv('worker').disks).toHaveLength(2);
    expect(inv('undersized').memory.physical_bytes).toBe(4 * 1024 ** 3);
    expect(inv('undersized').disks[0].installation_eligibility.eligible).toBe(false);
    // The skewed clock shows in the agent timestamp the service records.
    const skew = byProfile['skewed-clock']!.timestamp! - Math.floor(Date.now() / 1000);
    expect(skew).toBeGreaterThan(2600);
    expect(byProfile['control-plane']!.requested_hostname).toBe('control-plane-0');
  });

  it('answers every step handed out when asked to behave like the upstream agent', async () => {
    const report = await runFleet(
      { serviceUrl: h.url, infraEnvId, count: 2, mix: 'worker', seed: 'every-step', firstIndex: 20, durationSeconds: 4, pollIntervalSeconds: 1, rampSeconds: 0, answerEveryStep: true },
      new AbortController().signal,
    );
    expect(report.registered).toBe(2);
    expect(report.failures).toBe(0);
    // The inventory is handed out on every poll here (its interval is 0) and identical each time: all of it posted.
    expect(report.steps.inventory).toBeGreaterThanOrEqual(4);
    expect(report.skipped).toBe(0);
    // Every step handed out was answered, but for one poll's steps per host cut short by the stop.
    const handedOut = Object.values(report.steps).reduce((a, b) => a + b, 0);
    expect(report.replies).toBeLessThanOrEqual(handedOut);
    expect(report.replies).toBeGreaterThanOrEqual(handedOut - 2 * Object.keys(report.steps).length);
  });

  it('answers queued steps through the same loop: disk speed, connectivity, NTP', async () => {
    const hosts = (await call('GET', `${h.base}/infra-envs/${infraEnvId}/hosts`)).body as Array<{ id: string; inventory: string }>;
    const slow = hosts.find((x) => JSON.parse(x.inventory).hostname.startsWith('slow-disk'))!;
    const isolated = hosts.find((x) => JSON.parse(x.inventory).hostname.startsWith('isolated'))!;
    const good = hosts.find((x) => JSON.parse(x.inventory).hostname.startsWith('control-plane'))!;
    const peer = (x: { id: string; inventory: string }) => ({ host_id: x.id, nics: JSON.parse(x.inventory).interfaces.map((n: { name: string; mac_address: string; ipv4_addresses: string[] }) => ({ name: n.name, mac: n.mac_address, ip_addresses: n.ipv4_addresses })) });
    const { createStepsRepo } = await import('../../src/db/steps-repo');
    const steps = createStepsRepo(h.db);
    await steps.enqueue({ infraEnvId, hostId: slow.id }, { step_id: 'installation-disk-speed-check-1', step_type: 'installation-disk-speed-check', args: [JSON.stringify({ path: '/dev/sda' })] });
    await steps.enqueue({ infraEnvId, hostId: good.id }, { step_id: 'connectivity-check-1', step_type: 'connectivity-check', args: [JSON.stringify([peer(isolated), peer(slow)])] });
    await steps.enqueue({ infraEnvId, hostId: good.id }, { step_id: 'ntp-synchronizer-1', step_type: 'ntp-synchronizer', args: [JSON.stringify({ ntp_source: 'ntp.example.com' })] });
    // The fleet runs until every queued step is answered (or 60 s pass), however slow the machine.
    const stop = new AbortController();
    const run = runFleet({ serviceUrl: h.url, infraEnvId, count: 6, mix: 'control-plane,worker,undersized,slow-disk,skewed-clock,isolated', durationSeconds: 60, pollIntervalSeconds: 1, rampSeconds: 0 }, stop.signal);
    const answered = async () => (await steps.list({ infraEnvId, hostId: good.id })).every((s) => s.state === 'replied') && (await steps.list({ infraEnvId, hostId: slow.id })).every((s) => s.state === 'replied');
    try {
      await eventually(answered, 60_000, 'the queued steps answered');
    } finally {
      stop.abort();
      await run;
    }

    const get = async (id: string) => (await call('GET', `${h.base}/infra-envs/${infraEnvId}/hosts/${id}`)).body;
    expect(JSON.parse((await get(slow.id)).disks_info)).toEqual({ path: '/dev/sda', io_sync_duration: 35 });
    const conn = JSON.parse((await get(good.id)).connectivity);
    const toIsolated = conn.remote_hosts.find((r: { host_id: string }) => r.host_id === isolated.id);
    const toSlow = conn.remote_hosts.find((r: { host_id: string }) => r.host_id === slow.id);
    expect(toIsolated.l3_connectivity[0].successful).toBe(false);
    expect(toSlow.l3_connectivity[0].successful).toBe(true);
    expect(JSON.parse((await get(good.id)).ntp_sources)[0].source_state).toBe('synced');
    const queue = await steps.list({ infraEnvId, hostId: good.id });
    expect(queue.every((s) => s.state === 'replied')).toBe(true);
  });

  it('registers again when the service forgets the host', async () => {
    const { HostAgent } = await import('../../agent/agent');
    const { SimulatedExecutor, SimulatedNetwork, simulatedIdentity } = await import('../../agent/executors/simulated');
    const { loadProfile } = await import('../../agent/profiles');
    const { ServiceClient } = await import('../../agent/service-client');
    const { Agent } = await import('undici');
    const cfg = { serviceUrl: h.url, infraEnvId, agentToken: '', agentVersion: 'test', pollIntervalSeconds: 0.3 };
    const ident = simulatedIdentity('forget', 0);
    const agent = new HostAgent(cfg, new SimulatedExecutor(loadProfile('worker'), { ...ident, hostname: 'forgotten' }, new SimulatedNetwork()), new ServiceClient(cfg, new Agent()), { info: () => undefined, warn: () => undefined }, { writeStatus: false });
    const stop = new AbortController();
    const running = agent.run(stop.signal);
    const hostUrl = `${h.base}/infra-envs/${infraEnvId}/hosts/${ident.id}`;
    try {
      await eventually(async () => (await call('GET', hostUrl)).status === 200, 30_000, 'the host registered');
      expect((await call('DELETE', hostUrl)).status).toBe(204);
      await eventually(async () => agent.stats.registrations >= 2, 30_000, 'the agent registered again');
    } finally {
      stop.abort();
      await running;
    }
    expect(agent.stats.registrations).toBe(2);
    expect((await call('GET', hostUrl)).status).toBe(200);
  });
});
