/**
 * The install workflow drives the BMCs of the hosts that have one, at the
 * right stages, and leaves the others alone: real Temporal, API and worker,
 * simulated hosts (the agent loop of the simulated fleet) and
 * SimulatedBmcDriver BMCs (`simulated://`), which record the calls they are
 * given in this process and power nothing. What a real BMC does with those
 * calls is tested in redfish-vm.test.ts.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- API JSON is read loosely here */
import { call } from '../support/api-harness';
import { readyCluster, startInstallHarness, waitClusterStatus, type InstallHarness } from '../support/install-harness';
import { simulatedMachine } from '../../src/bmc/simulated';

let h: InstallHarness;
beforeAll(async () => {
  h = await startInstallHarness();
});
afterAll(async () => {
  await h?.stop();
});

describe('install with simulated BMCs', () => {
  it('switches a BMC host to disk after its image is written and restarts it at Rebooting; a host without one gets no call', async () => {
    const c = await readyCluster(h, 'bmc-sim', 'control-plane:3,worker:1', 4);
    try {
      const hosts = (await call('GET', `${h.api.base}/clusters/${c.clusterId}`)).body.hosts as any[];
      const withBmc = hosts.filter((x) => x.role !== 'worker' && x.suggested_role !== 'worker').slice(0, 2);
      const without = hosts.filter((x) => !withBmc.includes(x));
      const name = (x: any) => `bmc-sim-${x.id.slice(0, 8)}`;
      for (const x of withBmc) {
        const r = await call('PUT', `${h.api.base}/infra-envs/${c.infraEnvId}/hosts/${x.id}/bmc`, { body: { bmc_address: `simulated://${name(x)}`, bmc_credentials: { username: 'admin', password: 'simulated-pw' } } });
        expect(r.status).toBe(200);
      }
      expect((await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/install`)).status).toBe(202);
      const installed = await waitClusterStatus(h, c.clusterId, ['installed'], 120_000);
      expect(installed.hosts.every((x: any) => x.status === 'installed')).toBe(true);

      for (const x of withBmc) {
        expect(simulatedMachine(name(x)).calls).toEqual(['setBootDevice Hdd Continuous', 'reset On']);
        // In the host's own event order: the switch after the image was written, the restart at Rebooting.
        const msgs = ((await call('GET', `${h.api.base}/events?cluster_id=${c.clusterId}&host_id=${x.id}`)).body as any[]).map((e) => e.message as string);
        const at = (re: RegExp) => msgs.findIndex((m) => re.test(m));
        const written = at(/reached installation stage Writing image to disk/);
        const switched = at(/\(simulated BMC\): boot host .* from disk done \(boot override Hdd continuous, no virtual media was inserted\)/);
        const rebooting = at(/reached installation stage Rebooting/);
        const restarted = at(/\(simulated BMC\): restart host .* from disk done \(power was Off; its logs were uploaded\)/);
        expect([written, switched, rebooting, restarted].every((i) => i >= 0)).toBe(true);
        expect(written).toBeLessThan(switched);
        expect(rebooting).toBeLessThan(restarted);
      }
      for (const x of without) {
        const msgs = ((await call('GET', `${h.api.base}/events?cluster_id=${c.clusterId}&host_id=${x.id}`)).body as any[]).map((e) => e.message as string);
        expect(msgs.filter((m) => /^BMC /.test(m))).toEqual([]);
      }
    } finally {
      await c.report();
    }
  });
});
