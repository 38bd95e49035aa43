/* eslint-disable @typescript-eslint/no-explicit-any -- API bodies are read loosely in this test */
/**
 * The in-cluster controller played over the assisted-service protocol, as
 * assisted-installer-controller does it: it reports exactly what
 * GET monitored-operators lists, uploads the ingress CA, reports its
 * finalizing stage and ends with complete-installation. The simulated hosts
 * here do their install stages only (profile install.no_controller).
 */
import path from 'node:path';
import { call } from '../support/api-harness';
import { FIXTURE_PROFILES, readyCluster, startInstallHarness, waitClusterStatus, type InstallHarness } from '../support/install-harness';
import { generateClusterPki } from '../../src/install/pki';

let h: InstallHarness;
beforeAll(async () => {
  h = await startInstallHarness();
});
afterAll(async () => {
  await h?.stop();
});

const mix = `${path.join(FIXTURE_PROFILES, 'control-plane-no-controller.yaml')}:3,${path.join(FIXTURE_PROFILES, 'worker-no-controller.yaml')}:2`;

describe('a controller that follows the assisted-service protocol', () => {
  it('takes a 3+2 cluster from finalizing to installed', async () => {
    const c = await readyCluster(h, 'ctl-3-2', mix, 5);
    try {
      // The install step is an InstallCmdRequest the upstream agent accepts.
      expect((await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/install`)).status).toBe(202);
      const finalizing = await waitClusterStatus(h, c.clusterId, ['finalizing'], 90000);
      const steps = await h.api.db('host_steps').where({ step_type: 'install' }).whereIn('host_id', finalizing.hosts.map((x: any) => x.id));
      expect(steps).toHaveLength(5);
      for (const s of steps) {
        const req = JSON.parse((typeof s.args === 'string' ? JSON.parse(s.args) : s.args)[0]);
        for (const k of ['boot_device', 'cluster_id', 'controller_image', 'host_id', 'infra_env_id', 'installer_image', 'role']) expect(typeof req[k]).toBe('string');
        expect(JSON.parse(req.installer_args)).toEqual([]);
        expect(['bootstrap', 'master', 'worker']).toContain(req.role);
        expect(req.boot_device).toMatch(/^\/dev\//);
      }

      // Nothing reported yet: finalizing waits.
      const ops = (await call('GET', `${h.api.base}/clusters/${c.clusterId}/monitored-operators`)).body as Array<{ name: string; status?: string }>;
      expect(ops.map((o) => o.name).sort()).toEqual(['cni', 'etcd', 'kube-apiserver']);
      expect(ops.every((o) => o.status === undefined)).toBe(true);

      const pki = generateClusterPki();
      expect((await call('POST', `${h.api.base}/clusters/${c.clusterId}/uploads/ingress-cert`, { body: pki.ca.certPem })).status).toBe(201);
      expect((await call('PUT', `${h.api.base}/clusters/${c.clusterId}/progress`, { body: { finalizing_stage: 'Waiting for cluster operators' } })).status).toBe(200);
      for (const o of ops) {
        expect((await call('PUT', `${h.api.base}/clusters/${c.clusterId}/monitored-operators`, { body: { name: o.name, status: 'available', status_info: 'ready', version: '1.31.4' } })).status).toBe(200);
      }
      const done = await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/complete-installation`, { body: { is_success: true } });
      expect(done.status).toBe(202);
      const installed = await waitClusterStatus(h, c.clusterId, ['installed'], 60000);
      expect(installed.monitored_operators.every((o: any) => o.status === 'available')).toBe(true);
      expect((await call('GET', `${h.api.base}/clusters/${c.clusterId}/downloads/credentials?file_name=kubeconfig`)).status).toBe(200);
      // No install step is left `sent` once its host is done.
      await new Promise((r) => setTimeout(r, 1000));
      const open = await h.api.db('host_steps').whereIn('host_id', installed.hosts.map((x: any) => x.id)).where({ step_type: 'install', state: 'sent' });
      expect(open).toEqual([]);
    } finally {
      await c.report();
    }
  }, 180000);

  it('fails the install with the controller\'s error when it reports failure', async () => {
    const c = await readyCluster(h, 'ctl-fail', `${path.join(FIXTURE_PROFILES, 'control-plane-no-controller.yaml')}:1`, 1, { control_plane_count: 1, high_availability_mode: 'None' });
    try {
      expect((await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/install`)).status).toBe(202);
      await waitClusterStatus(h, c.clusterId, ['finalizing'], 90000);
      await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/complete-installation`, { body: { is_success: false, error_info: 'cni never became available' } });
      const failed = await waitClusterStatus(h, c.clusterId, ['error'], 60000);
      expect(failed.status_info).toContain('cni never became available');
    } finally {
      await c.report();
    }
  }, 180000);
});
