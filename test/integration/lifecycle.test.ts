/* eslint-disable @typescript-eslint/no-explicit-any -- API bodies are read loosely in this test */
/**
 * The lifecycle with the fleet simulator: a good 3+2 fleet reaches `ready`
 * once VIPs are given (the machine network is derived); each fault profile
 * ends in the right status with the right validation failing and a
 * remediation that names the host, the peer and the fix.
 */
import { runFleet, type FleetReport } from '../../agent/fleet';
import { createStepsRepo } from '../../src/db/steps-repo';
import { call, PULL_SECRET, startApiHarness, type ApiHarness } from '../support/api-harness';
import { eventually } from '../support/services';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(async () => {
  await h?.stop();
});

async function clusterWithFleet(name: string, body: Record<string, unknown>, mix: string, count: number) {
  const cluster = (await call('POST', `${h.base}/clusters`, { body: { name, openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com', ...body } })).body;
  const ie = (await call('POST', `${h.base}/infra-envs`, { body: { name: `${name}-ie`, pull_secret: PULL_SECRET, cluster_id: cluster.id } })).body;
  const stop = new AbortController();
  const fleet: Promise<FleetReport> = runFleet({ serviceUrl: h.url, infraEnvId: ie.id, count, mix, seed: name, durationSeconds: 60, pollIntervalSeconds: 1, rampSeconds: 0 }, stop.signal);
  return { cluster, ie, stop, fleet };
}

const getCluster = async (id: string) => (await call('GET', `${h.base}/clusters/${id}`)).body;
const validation = (infoJson: string, id: string) => Object.values(JSON.parse(infoJson) as Record<string, Array<{ id: string; status: string; message: string }>>).flat().find((v) => v.id === id);

describe('lifecycle with simulated hosts', () => {
  it('brings a good 3 control-plane + 2 worker fleet to ready once VIPs are given', async () => {
    const { cluster, stop, fleet } = await clusterWithFleet('good', {}, 'control-plane:3,worker:2', 5);
    try {
      // Without a machine network the cluster waits for input, and suggests VIPs from the free addresses hosts report.
      const suggested = await eventually(async () => {
        const c = await getCluster(cluster.id);
        const s = c.network_suggestions ? JSON.parse(c.network_suggestions) : {};
        return c.hosts.length === 5 && s.api_vip && s.ingress_vip ? { c, s } : undefined;
      }, 30000, 'VIP suggestions');
      expect(suggested.c.status).toBe('pending-for-input');
      expect(suggested.s.machine_network).toBe('192.168.127.0/24');
      expect(validation(suggested.c.validations_info, 'api-vips-defined')?.status).toBe('failure');

      const patched = await call('PATCH', `${h.base}/clusters/${cluster.id}`, { body: { api_vips: [{ ip: suggested.s.api_vip }], ingress_vips: [{ ip: suggested.s.ingress_vip }] } });
      expect(patched.status).toBe(201);
      expect(patched.body.machine_networks).toEqual([{ cluster_id: cluster.id, cidr: '192.168.127.0/24' }]);

      const ready = await eventually(async () => {
        const c = await getCluster(cluster.id);
        return c.status === 'ready' ? c : undefined;
      }, 30000, 'cluster ready').catch(async (e) => {
        const c = await getCluster(cluster.id);
        throw new Error(`${e.message}: ${c.status} ${c.validations_info} ${c.hosts.map((x: { status: string; validations_info: string }) => `${x.status} ${x.validations_info}`).join('\n')}`);
      });
      expect(ready.hosts.every((x: { status: string }) => x.status === 'known')).toBe(true);
      const roles = ready.hosts.map((x: { suggested_role: string }) => x.suggested_role).sort();
      expect(roles).toEqual(['master', 'master', 'master', 'worker', 'worker']);
      const events = (await call('GET', `${h.base}/events?cluster_id=${cluster.id}`)).body.map((e: { name: string }) => e.name);
      expect(events).toEqual(expect.arrayContaining(['cluster_status_updated', 'host_status_updated', 'cluster_validation_fixed']));
    } finally {
      stop.abort();
      await fleet;
    }
  });

  it('puts each fault profile in the right status with the right failing validation and remediation', async () => {
    const mix = 'control-plane,control-plane,control-plane,undersized,slow-disk,skewed-clock,isolated';
    const { cluster, ie, stop, fleet } = await clusterWithFleet('faults', { machine_networks: [{ cidr: '192.168.127.0/24' }], api_vips: [{ ip: '192.168.127.250' }], ingress_vips: [{ ip: '192.168.127.251' }] }, mix, 7);
    try {
      const byName = async () => {
        const c = await getCluster(cluster.id);
        return { c, hosts: Object.fromEntries(c.hosts.map((x: { requested_hostname?: string }) => [String(x.requested_hostname).replace(/-\d+$/, ''), x])) as Record<string, any> };
      };
      // The disk speed is measured when asked; ask the slow-disk host now.
      const slow = await eventually(async () => (await byName()).hosts['slow-disk'], 20000, 'slow-disk host');
      await createStepsRepo(h.db).enqueue({ infraEnvId: ie.id, hostId: slow.id }, { step_id: 'installation-disk-speed-check-x', step_type: 'installation-disk-speed-check', args: [JSON.stringify({ path: '/dev/sda' }), '480.00'] });

      const settled = await eventually(async () => {
        const s = await byName();
        // The good hosts settle too (connectivity from every peer takes a few polls, longer on a loaded machine).
        const goodKnown = s.c.hosts.filter((x: { requested_hostname?: string }) => /^control-plane-/.test(String(x.requested_hostname))).map((x: { status: string }) => x.status);
        const ok = goodKnown.length === 3 && goodKnown.every((st: string) => st === 'known') && ['undersized', 'slow-disk', 'skewed-clock', 'isolated'].every((n) => s.hosts[n]?.status === 'insufficient') && s.hosts.isolated && validation(s.hosts.isolated.validations_info, 'belongs-to-majority-group')?.status === 'failure' && validation(s.hosts['slow-disk'].validations_info, 'sufficient-installation-disk-speed')?.status === 'failure' && validation(s.hosts['skewed-clock'].validations_info, 'ntp-synced')?.status === 'failure';
        return ok ? s : undefined;
      }, 40000, 'fault hosts insufficient').catch(async (e) => {
        const s = await byName();
        throw new Error(`${e.message}: ${Object.entries(s.hosts).map(([n, x]) => `${n}=${x.status} ${x.validation_remediation}`).join('\n')}`);
      });
      const rem = (name: string) => JSON.parse(settled.hosts[name].validation_remediation);

      const undersized = rem('undersized');
      expect(Object.keys(undersized)).toEqual(expect.arrayContaining(['has-min-cpu-cores', 'has-min-memory', 'has-min-valid-disks']));
      expect(undersized['has-min-cpu-cores'].hint).toContain('undersized-3');

      const slowDisk = rem('slow-disk')['sufficient-installation-disk-speed'];
      expect(slowDisk).toMatchObject({ cause: 'disk-sync-too-slow', blocking: true });
      expect(slowDisk.hint).toMatch(/SSD or NVMe .* slow-disk-4/);

      const skew = rem('skewed-clock')['time-synced-between-host-and-service'];
      expect(skew.cause).toBe('clock-skew');
      expect(skew.hint).toMatch(/skewed-clock-5 .* 90 minutes ahead/);
      expect(validation(settled.hosts['skewed-clock'].validations_info, 'ntp-synced')?.status).toBe('failure');

      const cut = rem('isolated')['belongs-to-majority-group'];
      expect(cut.cause).toBe('not-in-majority-group');
      expect(cut.peers.length).toBeGreaterThanOrEqual(3);
      expect(cut.peers[0]).toMatchObject({ host_id: expect.any(String), hostname: expect.stringMatching(/control-plane-\d/), address: expect.stringMatching(/^192\.168\.127\./) });
      expect(cut.hint).toMatch(/eth0 on isolated-6.*control-plane-\d \(192\.168\.127\.\d+\)/);

      // The good hosts are unaffected by the bad ones.
      for (const n of ['control-plane']) expect(settled.hosts[n].status).toBe('known');
      // The cluster is not ready, and says which hosts hold it back.
      expect(settled.c.status).toBe('insufficient');
      const clusterRem = JSON.parse(settled.c.validation_remediation);
      expect(clusterRem['all-hosts-are-ready-to-install'].peers.map((p: { hostname: string }) => p.hostname).sort()).toEqual(['isolated-6', 'skewed-clock-5', 'slow-disk-4', 'undersized-3']);
      expect(clusterRem['ntp-server-configured'].cause).toBe('host-clocks-differ');
    } finally {
      stop.abort();
      await fleet;
    }
  });
});
