/**
 * --netns: each simulated host lives in its own network namespace, joined to a
 * bridge by a veth pair, and connectivity checks are real pings. One host's
 * link is cut; its peers must see it unreachable and each other reachable.
 */
import { execFileSync } from 'node:child_process';
import { runFleet } from '../../agent/fleet';
import { netnsAvailable } from '../../agent/netns';
import { createStepsRepo } from '../../src/db/steps-repo';
import { call, PULL_SECRET, startApiHarness, type ApiHarness } from '../support/api-harness';

let available: { ok: boolean; reason?: string } = { ok: false };
let h: ApiHarness | undefined;

beforeAll(async () => {
  available = await netnsAvailable();
  if (available.ok) h = await startApiHarness();
});
afterAll(async () => {
  await h?.stop();
});

const namespaces = () => execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });

describe('fleet --netns', () => {
  it('measures real connectivity, with one link cut', async () => {
    // Network namespaces need root and iproute2, which the test machines (and CI) have: without them this fails, naming why.
    expect(available).toEqual({ ok: true });
    const api = h!;
    const ie = (await call('POST', `${api.base}/infra-envs`, { body: { name: 'netns', pull_secret: PULL_SECRET } })).body.id;
    const opts = { serviceUrl: api.url, infraEnvId: ie, count: 3, mix: 'control-plane,worker,isolated', durationSeconds: 2, pollIntervalSeconds: 1, rampSeconds: 0, netns: true };
    const first = await runFleet(opts, new AbortController().signal);
    expect(first.netns).toEqual({ used: true, reason: undefined });
    expect(first.registered).toBe(3);
    const [cp, worker, isolated] = first.hosts;
    const peer = (x: { id: string; ip: string }) => ({ host_id: x.id, nics: [{ name: 'eth0', ip_addresses: [`${x.ip}/24`] }] });
    await createStepsRepo(api.db).enqueue({ infraEnvId: ie, hostId: cp!.id }, { step_id: 'connectivity-check-netns', step_type: 'connectivity-check', args: [JSON.stringify([peer(worker!), peer(isolated!)])] });

    await runFleet({ ...opts, durationSeconds: 8 }, new AbortController().signal);
    const host = (await call('GET', `${api.base}/infra-envs/${ie}/hosts/${cp!.id}`)).body;
    const report = JSON.parse(host.connectivity);
    const to = (id: string) => report.remote_hosts.find((r: { host_id: string }) => r.host_id === id);
    expect(to(worker!.id).l3_connectivity[0]).toMatchObject({ remote_ip_address: worker!.ip, successful: true, packet_loss_percentage: 0 });
    expect(to(worker!.id).l3_connectivity[0].average_rtt_ms).toBeGreaterThan(0);
    expect(to(worker!.id).l2_connectivity[0].remote_mac).toMatch(/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/);
    expect(to(isolated!.id).l3_connectivity[0]).toMatchObject({ remote_ip_address: isolated!.ip, successful: false, packet_loss_percentage: 100 });
    // Every namespace the fleet made is gone.
    expect(namespaces()).not.toMatch(/lf\d+-/);
  });
});
