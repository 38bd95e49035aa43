/* eslint-disable @typescript-eslint/no-explicit-any -- API bodies are read loosely in this test */
/**
 * A retried host is not failed again by the late reply of its failed try: the
 * agent reports Failed, then its install step's non-zero reply; when that
 * reply arrives after the user retried the host (seen with simulated hosts on
 * a loaded machine), it belongs to the old install step and must not end the
 * new one.
 */
import path from 'node:path';
import { call } from '../support/api-harness';
import { FIXTURE_PROFILES, readyCluster, startInstallHarness, waitClusterStatus, type InstallHarness } from '../support/install-harness';

let h: InstallHarness;
beforeAll(async () => {
  h = await startInstallHarness();
});
afterAll(async () => {
  await h?.stop();
});

it('a stale install-step failure after retry-install leaves the retried host installing', async () => {
  // Two workers: a failure fails the install whatever role the failing host is given (one failed worker of one is allowed).
  const c = await readyCluster(h, 'stale-reply', `control-plane:3,worker:1,${path.join(FIXTURE_PROFILES, 'worker-slow-fails-once.yaml')}:1`, 5);
  try {
    expect((await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/install`)).status).toBe(202);
    const failed = await waitClusterStatus(h, c.clusterId, ['error'], 120000);
    const bad = failed.hosts.find((x: any) => x.status === 'error');
    const steps = `${h.api.base}/infra-envs/${c.infraEnvId}/hosts/${bad.id}/instructions`;
    expect((await call('POST', `${h.api.base}/infra-envs/${c.infraEnvId}/hosts/${bad.id}/actions/retry-install`)).status).toBe(202);
    // The first try's install step (install-a1) answers now, after the retry sent install-a1-r1.
    const late = await call('POST', steps, { body: { step_id: 'install-a1', step_type: 'install', exit_code: 1, output: '', error: 'simulated failure at stage Writing image to disk (late reply)' } });
    expect(late.status).toBe(204);
    const host = (await call('GET', `${h.api.base}/infra-envs/${c.infraEnvId}/hosts/${bad.id}`)).body;
    expect([host.status, host.status_info]).not.toEqual(['error', expect.stringContaining('late reply')]);
    expect(['installing', 'installing-in-progress', 'installed']).toContain(host.status);
    const done = await waitClusterStatus(h, c.clusterId, ['installed', 'error'], 120000);
    expect([done.status, done.status_info]).toEqual(['installed', expect.any(String)]);
  } finally {
    await c.report();
  }
});
