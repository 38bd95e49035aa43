/**
 * A host's last install report, taken while Temporal is down, still reaches
 * the install workflow once Temporal is back, with no further report from the
 * host: it is kept with the change in PostgreSQL (report_pending) and sent by
 * the host monitor's sweep. Before, the signal failed, the agent's repeat
 * changed nothing, and the workflow waited for a report that never came.
 */
import path from 'node:path';
import { getInstallProgress } from '../../workflows/install-cluster.messages';
import { call } from '../support/api-harness';
import { FIXTURE_PROFILES, readyCluster, startInstallHarness, waitClusterStatus, type InstallHarness } from '../support/install-harness';
import { eventually, startTestTemporal } from '../support/services';

let h: InstallHarness;
let restarted: Awaited<ReturnType<typeof startTestTemporal>> | undefined;
beforeAll(async () => {
  h = await startInstallHarness({ HOST_MONITOR_INTERVAL_MS: '2000' });
});
afterAll(async () => {
  await h?.stop();
  await restarted?.stop();
});

/** Starts the install of a one-host cluster whose agent then sits in its first stage (10 minutes): its host. */
async function installToFirstStage(c: { clusterId: string }): Promise<{ id: string }> {
  expect((await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/install`)).status).toBe(202);
  await waitClusterStatus(h, c.clusterId, ['installing'], 60_000);
  const host = (await call('GET', `${h.api.base}/clusters/${c.clusterId}`)).body.hosts[0] as { id: string };
  await eventually(async () => (await call('GET', `${h.api.base}/clusters/${c.clusterId}`)).body.hosts[0].progress?.current_stage === 'Starting installation', 30_000, 'the first stage');
  return host;
}

it('delivers the Done report the workflow missed while Temporal was down, by itself', async () => {
  const c = await readyCluster(h, 'missed', path.join(FIXTURE_PROFILES, 'control-plane-stalls.yaml'), 1, { control_plane_count: 1, high_availability_mode: 'None' });
  try {
    const host = await installToFirstStage(c);
    // The host's installer reports the rest (its agent sits in its first stage for 10 minutes).
    const progress = (stage: string) => call('PUT', `${h.api.base}/infra-envs/${c.infraEnvId}/hosts/${host.id}/progress`, { body: { current_stage: stage } });
    for (const stage of ['Installing', 'Waiting for bootkube', 'Writing image to disk', 'Rebooting', 'Joined']) expect([stage, (await progress(stage)).status]).toEqual([stage, 200]);
    const workflow = () => h.client.workflow.getHandle(`install-cluster-${c.clusterId}-attempt-1`);
    await eventually(async () => (await workflow().query(getInstallProgress)).hosts[0]?.stage === 'Joined', 30_000, 'the workflow at Joined');

    // Temporal goes away; the last report is taken (stored) but cannot be signalled: 503, try again.
    await h.temporal.stop();
    const done = await progress('Done');
    expect(done.status).toBe(503);
    expect(done.headers.get('retry-after')).toBe('5');
    expect((await call('GET', `${h.api.base}/clusters/${c.clusterId}`)).body.hosts[0].status).toBe('installed');
    expect((await h.api.db('hosts').where({ id: host.id }).first()).report_pending).toMatchObject({ report: { status: 'installed', stage: 'Done' } });

    // Temporal is back; nobody reports anything more: the sweep sends what the workflow missed.
    restarted = await startTestTemporal({ port: h.temporal.port, dbFile: h.temporal.dbFile });
    await eventually(async () => (await workflow().query(getInstallProgress)).hosts[0]?.status === 'installed', 90_000, 'the workflow hearing Done');
    await eventually(async () => (await h.api.db('hosts').where({ id: host.id }).first()).report_pending === null, 30_000, 'the pending report cleared');
    // The workflow moves the cluster on by an activity of its own, a moment after it heard Done.
    await waitClusterStatus(h, c.clusterId, ['finalizing', 'installed'], 30_000);
  } finally {
    await c.report();
  }
});

it('answers 201 to a registration it committed while Temporal is down, so the agent does not register again', async () => {
  const c = await readyCluster(h, 'reboots', path.join(FIXTURE_PROFILES, 'control-plane-stalls.yaml'), 1, { control_plane_count: 1, high_availability_mode: 'None' });
  try {
    const host = await installToFirstStage(c);

    // The host boots the discovery image again mid-install (its agent registers) while Temporal is away.
    // Whichever Temporal runs now: the harness's own, or the one the test above started in its place.
    await (restarted ?? h.temporal).stop();
    const register = () => call('POST', `${h.api.base}/infra-envs/${c.infraEnvId}/hosts`, { body: { host_id: host.id } });
    const first = await register();
    // Committed: the agent must not hear 503 and register a second time (the host's restart counted twice).
    expect(first.status).toBe(201);
    const row = await h.api.db('hosts').where({ id: host.id }).first();
    expect([row.status, row.status_info]).toEqual(['error', 'The host unexpectedly restarted during the installation']);
    expect(row.report_pending).toMatchObject({ report: { status: 'error' } });

    // Temporal is back: the report kept with the registration reaches the workflow without another request.
    restarted = await startTestTemporal({ port: h.temporal.port, dbFile: h.temporal.dbFile });
    const workflow = () => h.client.workflow.getHandle(`install-cluster-${c.clusterId}-attempt-1`);
    await eventually(async () => (await workflow().query(getInstallProgress)).hosts[0]?.status === 'error', 90_000, 'the workflow hearing of the restart');
    await eventually(async () => (await h.api.db('hosts').where({ id: host.id }).first()).report_pending === null, 30_000, 'the pending report cleared');
  } finally {
    await c.report();
  }
});
