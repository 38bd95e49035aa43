/* eslint-disable @typescript-eslint/no-explicit-any -- API bodies are read loosely in this test */
/**
 * The install report of real installs (Temporal, API, worker, simulated
 * fleet): a successful 3+2 install, one that fails writing the image, a
 * cluster that never installed, and the access rules.
 */
import path from 'node:path';
import { STAGES_BY_ROLE } from '../../src/domain/install-stages';
import { call, PULL_SECRET, startApiHarness } from '../support/api-harness';
import { FIXTURE_PROFILES, readyCluster, startInstallHarness, waitClusterStatus, type InstallHarness } from '../support/install-harness';

let h: InstallHarness;
beforeAll(async () => {
  h = await startInstallHarness();
});
afterAll(async () => {
  await h?.stop();
});

const report = async (clusterId: string) => {
  const r = await call('GET', `${h.api.base}/clusters/${clusterId}/install-report`);
  expect(r.status).toBe(200);
  return r.body as any;
};

describe('install report', () => {
  it('tells a successful 3+2 install host by host, stage by stage', async () => {
    const c = await readyCluster(h, 'report-ok', 'control-plane:3,worker:2', 5);
    try {
      expect((await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/install`)).status).toBe(202);
      await waitClusterStatus(h, c.clusterId, ['installed'], 90000);
      const r = await report(c.clusterId);
      expect(r).toMatchObject({ cluster_id: c.clusterId, cluster_name: 'report-ok', status: 'installed', outcome: 'installed', install_attempt: 1, failure: null, openshift_version: '1.31' });
      expect(Date.parse(r.completed_at)).toBeGreaterThanOrEqual(Date.parse(r.started_at));
      expect(r.duration_seconds).toBeCloseTo((Date.parse(r.completed_at) - Date.parse(r.started_at)) / 1000, 0);
      expect(r.hosts).toHaveLength(5);
      expect(r.hosts.filter((x: any) => x.bootstrap)).toHaveLength(1);
      expect(r.hosts.filter((x: any) => x.role === 'worker')).toHaveLength(2);
      for (const host of r.hosts) {
        // The simulated installer walks its role's stages (no mirrored registry, so no registry copy).
        const role = host.bootstrap ? 'bootstrap' : host.role === 'worker' ? 'worker' : 'master';
        const expected = STAGES_BY_ROLE[role].filter((s) => s !== 'Copying registry data to disk');
        expect([host.hostname, host.stages.map((s: any) => s.stage)]).toEqual([host.hostname, expected]);
        expect(host.status).toBe('installed');
        expect(host.failure).toBeNull();
        expect(host.retries).toBe(0);
        for (const s of host.stages) {
          expect(s.duration_seconds).toBeGreaterThanOrEqual(0);
          expect(s.result).toBe('completed');
          expect(Date.parse(s.ended_at)).toBeGreaterThanOrEqual(Date.parse(s.started_at));
        }
        // Stages follow one another: each starts when the one before ended.
        for (let i = 1; i < host.stages.length; i++) expect(host.stages[i].started_at).toBe(host.stages[i - 1].ended_at);
        expect(Date.parse(host.stages[0].started_at)).toBeGreaterThanOrEqual(Date.parse(r.started_at));
        // Stage durations add up to the time from the first stage to Done.
        const total = host.stages.reduce((a: number, s: any) => a + s.duration_seconds, 0);
        expect(total).toBeCloseTo((Date.parse(host.stages.at(-1).started_at) - Date.parse(host.stages[0].started_at)) / 1000, 0);
      }
      const names = r.timeline.map((e: any) => e.name);
      expect(names[0]).toBe('cluster_prepare_installation_started');
      expect(names).toEqual(expect.arrayContaining(['cluster_installation_started', 'cluster_finalizing_started', 'cluster_installation_completed']));
      // Validation and registration events from before the install are not part of the attempt.
      expect(names).not.toContain('host_registration_succeeded');

      const dl = await call('GET', `${h.api.base}/clusters/${c.clusterId}/install-report?download=true`);
      expect(dl.status).toBe(200);
      expect(dl.headers.get('content-disposition')).toBe(`attachment; filename="report-ok_${c.clusterId}_install-report.json"`);
      expect(dl.body.outcome).toBe('installed');
    } finally {
      await c.report();
    }
  });

  it('names the failed host, its stage, the cause and what to do', async () => {
    const c = await readyCluster(h, 'report-fail', `control-plane:3,worker:1,${path.join(FIXTURE_PROFILES, 'worker-fails-writing.yaml')}:1`, 5);
    try {
      expect((await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/install`)).status).toBe(202);
      const failed = await waitClusterStatus(h, c.clusterId, ['error'], 60000);
      const bad = failed.hosts.find((x: any) => x.status === 'error');
      const r = await report(c.clusterId);
      expect(r.outcome).toBe('failed');
      expect(r.completed_at).toBeTruthy();
      expect(r.failure).toMatchObject({ host_id: bad.id, hostname: bad.requested_hostname, role: bad.bootstrap ? 'bootstrap' : bad.role, stage: 'Writing image to disk', kind: 'error' });
      expect(r.failure.cause).toMatch(/simulated failure at Writing image to disk/);
      expect(r.failure.remediation).toMatch(/coreos-installer/);
      expect(r.failure.remediation).toMatch(/retry the host/);
      const host = r.hosts.find((x: any) => x.host_id === bad.id);
      expect(host.failure).toMatchObject({ stage: 'Writing image to disk' });
      expect(host.stages.map((s: any) => s.stage)).toEqual(['Starting installation', 'Installing', 'Writing image to disk']);
      expect(host.stages.at(-1).result).toBe('failed');
      // The healthy hosts carry no failure of their own.
      expect(r.hosts.filter((x: any) => x.failure)).toHaveLength(1);
      expect(r.timeline.map((e: any) => e.name)).toContain('cluster_installation_failed');

      // A retry shows in the report: the host's retries, and its new stages after the failed try.
      expect((await call('POST', `${h.api.base}/infra-envs/${c.infraEnvId}/hosts/${bad.id}/actions/retry-install`)).status).toBe(202);
      await waitClusterStatus(h, c.clusterId, ['installed'], 60000);
      const after = await report(c.clusterId);
      expect(after.outcome).toBe('installed');
      expect(after.failure).toBeNull();
      const retried = after.hosts.find((x: any) => x.host_id === bad.id);
      expect(retried.retries).toBe(1);
      expect(retried.failure).toBeNull();
      expect(retried.stages.filter((s: any) => s.retry === 0).at(-1)).toMatchObject({ stage: 'Writing image to disk', result: 'failed' });
      expect(retried.stages.filter((s: any) => s.retry === 1).map((s: any) => s.stage).at(-1)).toBe('Done');
    } finally {
      await c.report();
    }
  });

  it('says not-started for a cluster that never installed, and 404 for unknown ids', async () => {
    const created = await call('POST', `${h.api.base}/clusters`, { body: { name: 'never', openshift_version: '1.31', pull_secret: PULL_SECRET } });
    const r = await report(created.body.id);
    expect(r).toMatchObject({ outcome: 'not-started', install_attempt: 0, started_at: null, completed_at: null, duration_seconds: null, failure: null, hosts: [], timeline: [] });
    const missing = await call('GET', `${h.api.base}/clusters/00000000-0000-4000-8000-000000000000/install-report`);
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ kind: 'Error', code: '404', reason: expect.stringMatching(/cluster .* not found/) });
    expect((await call('GET', `${h.api.base}/clusters/not-a-uuid/install-report`)).status).toBe(400);
  });
});

describe('install report access', () => {
  it("is another tenant's 404, like the cluster itself", async () => {
    const a = await startApiHarness({ authType: 'local' });
    try {
      const user = (name: string) => ({ Authorization: `Bearer ${a.signer.sign({ use: 'user', sub: name })}` });
      const cluster = (await call('POST', `${a.base}/clusters`, { headers: user('alice'), body: { name: 'mine', openshift_version: '1.31', pull_secret: PULL_SECRET } })).body;
      expect((await call('GET', `${a.base}/clusters/${cluster.id}/install-report`, { headers: user('alice') })).body.outcome).toBe('not-started');
      const bob = await call('GET', `${a.base}/clusters/${cluster.id}/install-report`, { headers: user('bob') });
      expect(bob.status).toBe(404);
      expect(bob.body).toMatchObject({ kind: 'Error', code: '404' });
      expect((await call('GET', `${a.base}/clusters/${cluster.id}/install-report`)).status).toBe(401);
    } finally {
      await a.stop();
    }
  });
});
