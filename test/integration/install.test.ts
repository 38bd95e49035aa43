/* eslint-disable @typescript-eslint/no-explicit-any -- API bodies are read loosely in this test */
/**
 * Installs through the durable workflow, end to end: real Temporal server,
 * API, worker and simulated agents (install stages, the in-cluster controller).
 */
import path from 'node:path';
import { getInstallProgress } from '../../workflows/install-cluster.messages';
import { call } from '../support/api-harness';
import { scrapeMetrics } from '../support/replicas';
import { eventually } from '../support/services';
import { bootFleet, FIXTURE_PROFILES, readyCluster, startInstallHarness, waitClusterStatus, waitWorkflowPhase, type InstallHarness } from '../support/install-harness';

let h: InstallHarness;
beforeAll(async () => {
  h = await startInstallHarness();
});
afterAll(async () => {
  await h?.stop();
});

const hostsOf = async (clusterId: string) => (await call('GET', `${h.api.base}/clusters/${clusterId}`)).body.hosts as any[];

describe('install orchestration', () => {
  it('installs 3 control planes + 2 workers and hands back a kubeconfig', async () => {
    const c = await readyCluster(h, 'three-two', 'control-plane:3,worker:2', 5);
    try {
      expect((await call('GET', `${h.api.base}/clusters/${c.clusterId}/downloads/credentials?file_name=kubeconfig`)).status).toBe(409);
      const started = await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/install`);
      expect(started.status).toBe(202);
      expect(started.body.status).toBe('preparing-for-installation');
      // The cluster's progress follows its hosts' stages and never goes back.
      const seen: number[] = [];
      for (let status = ''; status !== 'installed' && status !== 'error'; await new Promise((r) => setTimeout(r, 100))) {
        const now = (await call('GET', `${h.api.base}/clusters/${c.clusterId}`)).body;
        status = now.status;
        seen.push(now.progress?.total_percentage ?? 0);
      }
      expect(seen.at(-1)).toBe(100);
      expect(seen.some((p) => p > 0 && p < 100)).toBe(true);
      expect(seen.every((p, i) => i === 0 || p >= seen[i - 1]!)).toBe(true);
      const installed = await waitClusterStatus(h, c.clusterId, ['installed'], 90000);
      expect(installed.status_info).toBe('Cluster is installed');
      expect(installed.hosts.every((x: any) => x.status === 'installed' && x.progress.current_stage === 'Done')).toBe(true);
      expect(installed.hosts.filter((x: any) => x.bootstrap)).toHaveLength(1);

      // The workflow is findable by its business id and search attributes, and explains itself.
      const handle = h.client.workflow.getHandle(`install-cluster-${c.clusterId}-attempt-1`);
      // The activity commits `installed` before the workflow takes its next task, and visibility follows later still.
      await waitWorkflowPhase(handle, getInstallProgress, 'installed', 'the workflow installed');
      const listed = await eventually(async () => {
        const ids = [];
        for await (const wf of h.client.workflow.list({ query: `ClusterId = '${c.clusterId}' AND InstallStatus = 'installed'` })) ids.push(wf.workflowId);
        return ids.length > 0 ? ids : undefined;
      }, 20000, 'the workflow listed as installed');
      expect(listed).toEqual([`install-cluster-${c.clusterId}-attempt-1`]);
      const history = await handle.fetchHistory();
      expect(history.events!.length).toBeLessThan(1000);
      // Saved histories feed the replay test (test/unit/workflow-replay.test.ts): SAVE_HISTORY=1 refreshes them.
      if (process.env.SAVE_HISTORY === '1') {
        const { writeFileSync } = await import('node:fs');
        const { execFileSync } = await import('node:child_process');
        const { temporalBinary } = await import('../../src/dev/temporal-dev-server');
        const json = execFileSync(temporalBinary(), ['workflow', 'show', '--address', h.temporal.address, '-w', handle.workflowId, '-o', 'json'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
        writeFileSync(path.resolve(__dirname, '../fixtures/histories/install-cluster-3-2.json'), json);
      }

      const kubeconfig = await call('GET', `${h.api.base}/clusters/${c.clusterId}/downloads/credentials?file_name=kubeconfig`);
      expect(kubeconfig.status).toBe(200);
      expect(kubeconfig.text).toContain('server: https://192.168.127.250:6443');
      expect(kubeconfig.text).toContain('client-certificate-data:');
      const master = await call('GET', `${h.api.base}/clusters/${c.clusterId}/downloads/files?file_name=master.ign`);
      expect(master.status).toBe(200);
      expect(master.body.ignition.version).toBe('3.4.0');
      const events = (await call('GET', `${h.api.base}/events?cluster_id=${c.clusterId}`)).body.map((e: any) => e.name);
      expect(events).toEqual(expect.arrayContaining(['cluster_prepare_installation_started', 'cluster_installation_started', 'cluster_finalizing_started', 'cluster_installation_completed']));

      // /metrics: where installs stand, how long stages take, and promtool accepts the exposition.
      const metrics = await scrapeMetrics(h.api);
      expect(metrics).toMatch(/^landfall_installs_total\{outcome="succeeded",release="1\.31",failing_stage=""\} [1-9]/m);
      expect(metrics).toMatch(/^landfall_host_install_stage_duration_seconds_count\{stage="Installing",role="(master|worker|bootstrap)"\} [1-9]/m);
      expect(metrics).toMatch(/^landfall_host_registration_to_known_seconds_count [1-9]/m);
      // A time, not NaN: measured from the host's created_at as its refresh wrote it.
      const toKnown = Number(/^landfall_host_registration_to_known_seconds_sum (\S+)/m.exec(metrics)?.[1]);
      expect(Number.isFinite(toKnown) && toKnown >= 0).toBe(true);
      expect(metrics).toMatch(/^landfall_hosts\{status="installed"\} [1-9]/m);
      const { spawnSync } = await import('node:child_process');
      const promtool = spawnSync('promtool', ['check', 'metrics'], { input: metrics, encoding: 'utf8' });
      // promtool comes with Debian's prometheus package, which set-up installs: missing, this fails.
      expect(promtool.error?.message).toBeUndefined();
      expect([promtool.status, promtool.stdout + promtool.stderr]).toEqual([0, '']);
    } finally {
      await c.report();
    }
  });

  it('installs a single-node cluster', async () => {
    const c = await readyCluster(h, 'sno', 'control-plane', 1, { control_plane_count: 1, high_availability_mode: 'None' });
    try {
      expect((await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/install`)).status).toBe(202);
      const installed = await waitClusterStatus(h, c.clusterId, ['installed'], 60000);
      expect(installed.hosts[0].bootstrap).toBe(true);
    } finally {
      await c.report();
    }
  });

  it('fails the cluster when a worker fails writing the image, then retries that host in place', async () => {
    const c = await readyCluster(h, 'retry', `control-plane:3,worker:1,${path.join(FIXTURE_PROFILES, 'worker-fails-writing.yaml')}:1`, 5);
    try {
      expect((await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/install`)).status).toBe(202);
      const failed = await waitClusterStatus(h, c.clusterId, ['error'], 60000);
      const bad = failed.hosts.find((x: any) => x.status === 'error');
      expect(bad.status_info).toMatch(/simulated failure at Writing image to disk/);
      expect(failed.status_info).toMatch(/cannot reach its success rule.*failed/);
      // Retrying a host that did not fail is refused by the workflow's validator.
      const good = failed.hosts.find((x: any) => x.status !== 'error');
      expect((await call('POST', `${h.api.base}/infra-envs/${c.infraEnvId}/hosts/${good.id}/actions/retry-install`)).status).toBe(409);
      // Two retries at once (two people, two clicks): one is taken, the other refused, one install step queued.
      const both = await Promise.all([1, 2].map(() => call('POST', `${h.api.base}/infra-envs/${c.infraEnvId}/hosts/${bad.id}/actions/retry-install`)));
      expect(both.map((r) => r.status).sort()).toEqual([202, 409]);
      const retried = both.find((r) => r.status === 202)!;
      // As the retry left it, or already a stage on: its agent may take the new step before the answer is read.
      expect(['installing', 'installing-in-progress']).toContain(retried.body.status);
      const steps = await h.api.db('host_steps').where({ host_id: bad.id, step_type: 'install' }).pluck('step_id');
      expect(steps.sort()).toEqual(['install-a1', 'install-a1-r1']);
      await waitClusterStatus(h, c.clusterId, ['installed'], 60000);
      const metrics = await scrapeMetrics(h.api);
      expect(metrics).toMatch(/^landfall_installs_total\{outcome="failed",release="1\.31",failing_stage="Writing image to disk"\} 1/m);
    } finally {
      await c.report();
    }
  });

  it('cancels during install, resets, and installs again', async () => {
    let c = await readyCluster(h, 'cancel', 'control-plane:3,worker:2', 5);
    try {
      expect((await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/install`)).status).toBe(202);
      await waitClusterStatus(h, c.clusterId, ['installing'], 30000);
      const cancelled = await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/cancel`);
      expect(cancelled.status).toBe(202);
      expect(cancelled.body.status).toBe('cancelled');
      const wf = await h.client.workflow.getHandle(`install-cluster-${c.clusterId}-attempt-1`).result();
      expect(wf.phase).toBe('cancelled');
      // Cancel goes through each host's table rule: every installing host to cancelled, each with its own event.
      const statusEvents = async (to: string) =>
        (await h.api.db('events').where({ cluster_id: c.clusterId, name: 'host_status_updated' }).select('props')).filter((e: any) => (typeof e.props === 'string' ? JSON.parse(e.props) : e.props).new_status === to).length;
      expect((await hostsOf(c.clusterId)).map((x) => x.status)).toEqual(Array(5).fill('cancelled'));
      expect(await statusEvents('cancelled')).toBe(5);

      const reset = await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/reset`);
      expect(reset.status).toBe(202);
      expect((await hostsOf(c.clusterId)).every((x) => x.status === 'resetting-pending-user-action')).toBe(true);
      expect(await statusEvents('resetting-pending-user-action')).toBe(5);
      // The hosts boot the discovery image again: the same simulated hosts register, the cluster gets ready.
      await c.report();
      c = await bootFleet(h, c.clusterId, c.infraEnvId, 'cancel', 'control-plane:3,worker:2', 5);
      expect((await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/install`)).status).toBe(202);
      const installed = await waitClusterStatus(h, c.clusterId, ['installed'], 90000);
      expect(installed.install_started_at).toBeTruthy();
      await waitWorkflowPhase(h.client.workflow.getHandle(`install-cluster-${c.clusterId}-attempt-2`), getInstallProgress, 'installed', 'the second attempt\'s workflow installed');
    } finally {
      await c.report();
    }
  });

  it('a cancel that comes before the preparation ran moves no host: the cluster is ready, its hosts known', async () => {
    const c = await readyCluster(h, 'cancel-early', 'control-plane:3', 3);
    try {
      // No worker: the install's workflow is started but its preparation has not run when the cancel comes.
      await h.withoutWorker(async () => {
        expect((await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/install`)).status).toBe(202);
        const cancelled = await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/cancel`);
        expect([cancelled.status, cancelled.body.status]).toEqual([202, 'ready']);
      });
      // The worker comes back and runs the preparation the workflow had scheduled, then sees the cancel.
      const wf = await h.client.workflow.getHandle(`install-cluster-${c.clusterId}-attempt-1`).result();
      expect(wf.phase).toBe('cancelled');
      expect((await call('GET', `${h.api.base}/clusters/${c.clusterId}`)).body.status).toBe('ready');
      expect((await h.api.db('hosts').where({ cluster_id: c.clusterId }).pluck('status')).sort()).toEqual(['known', 'known', 'known']);
      expect(await h.api.db('host_steps').where({ step_type: 'install' }).whereIn('host_id', h.api.db('hosts').where({ cluster_id: c.clusterId }).select('id')).count('* as n').first()).toEqual({ n: '0' });
    } finally {
      await c.report();
    }
  });

  it('holds a host that boots the discovery image again after Rebooting, and follows it once fixed', async () => {
    const c = await readyCluster(h, 'boot-iso', `control-plane:3,worker:1,${path.join(FIXTURE_PROFILES, 'worker-boots-iso.yaml')}:1`, 5);
    try {
      expect((await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/install`)).status).toBe(202);
      const held = await waitClusterStatus(h, c.clusterId, ['installing', 'installing-pending-user-action'], 30000).then(async () => {
        const { eventually } = await import('../support/services');
        return eventually(async () => (await hostsOf(c.clusterId)).find((x) => x.status === 'installing-pending-user-action'), 60000, 'a host pending user action');
      });
      expect(held.status_info).toMatch(/boot order/);
      // The cluster says a host waits for the user.
      await waitClusterStatus(h, c.clusterId, ['installing-pending-user-action'], 30000);
      // The operator fixes the boot order: the host boots from disk and its installer reports the remaining stages.
      for (const stage of ['Configuring', 'Joined', 'Done']) {
        const r = await call('PUT', `${h.api.base}/infra-envs/${c.infraEnvId}/hosts/${held.id}/progress`, { body: { current_stage: stage } });
        expect([stage, r.status]).toEqual([stage, 200]);
      }
      await waitClusterStatus(h, c.clusterId, ['installed'], 60000);
    } finally {
      await c.report();
    }
  });
});
