/* eslint-disable @typescript-eslint/no-explicit-any -- API bodies are read loosely in this test */
/**
 * An install never sits in an install phase with nothing driving it. The host
 * monitor's sweep (every 2 s here) starts the workflow of an install whose
 * API process died between committing it and starting it, and fails, with
 * the reason, an install whose workflow ended without finishing it.
 */
import { call } from '../support/api-harness';
import { readyCluster, startInstallHarness, waitClusterStatus, type InstallHarness } from '../support/install-harness';

let h: InstallHarness;
beforeAll(async () => {
  h = await startInstallHarness({ HOST_MONITOR_INTERVAL_MS: '2000' });
});
afterAll(async () => {
  await h?.stop();
});

it('starts the workflow of an install committed by an API process that died before starting it', async () => {
  const c = await readyCluster(h, 'unstarted', 'control-plane', 1, { control_plane_count: 1, high_availability_mode: 'None' });
  try {
    // What the API leaves behind when it dies between its commit and the workflow start.
    await h.api.db('clusters').where({ id: c.clusterId }).update({ status: 'preparing-for-installation', status_info: 'Preparing cluster for installation', install_attempt: 1, status_updated_at: new Date(Date.now() - 60_000) });
    const installed = await waitClusterStatus(h, c.clusterId, ['installed'], 120_000);
    expect(installed.hosts[0].status).toBe('installed');
    const events = (await call('GET', `${h.api.base}/events?cluster_id=${c.clusterId}`)).body.map((e: any) => e.name);
    expect(events).toContain('cluster_install_resumed');
  } finally {
    await c.report();
  }
});

it('fails, with the reason, an install whose workflow ended without finishing it', async () => {
  const c = await readyCluster(h, 'orphan', 'control-plane', 1, { control_plane_count: 1, high_availability_mode: 'None' });
  try {
    expect((await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/install`)).status).toBe(202);
    await waitClusterStatus(h, c.clusterId, ['installing'], 60_000);
    await h.client.workflow.getHandle(`install-cluster-${c.clusterId}-attempt-1`).terminate('an operator terminated it');
    const failed = await waitClusterStatus(h, c.clusterId, ['error'], 60_000);
    expect(failed.status_info).toMatch(/install workflow install-cluster-.*-attempt-1 ended \(TERMINATED\) without finishing the install/);
  } finally {
    await c.report();
  }
});
