/**
 * The service away mid-install (an API restart, a database failover: to the
 * agent, connections refused) for longer than the agent's request retries:
 * nothing the agent reports is dropped. Its outbox keeps the progress
 * reports and the logs it uploads before rebooting, and sends them, in
 * order, once the service is back, and the install finishes with no person
 * acting.
 */
import net from 'node:net';
import path from 'node:path';
import { runFleet } from '../../agent/fleet';
import { STAGES_BY_ROLE } from '../../src/domain/install-stages';
import { freePort } from '../../src/dev/process-utils';
import { call, PULL_SECRET } from '../support/api-harness';
import { FIXTURE_PROFILES, startInstallHarness, waitClusterStatus, type InstallHarness } from '../support/install-harness';
import { eventually } from '../support/services';

let h: InstallHarness;
beforeAll(async () => {
  h = await startInstallHarness();
});
afterAll(async () => {
  await h?.stop();
});

/** A TCP front for the API that can refuse every connection, as a dead API process does. */
async function switchableFront(target: URL) {
  const port = await freePort();
  let down = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (down) return client.destroy();
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${port}`,
    setDown(v: boolean) {
      down = v;
      if (v) for (const s of sockets) s.destroy();
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

it('keeps the progress reports of a service outage longer than the request retries, and the install finishes', async () => {
  const front = await switchableFront(new URL(h.api.url));
  const stop = new AbortController();
  let fleet: Promise<unknown> | undefined;
  try {
    const cluster = (await call('POST', `${h.api.base}/clusters`, { body: { name: 'outage', openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com', control_plane_count: 1, high_availability_mode: 'None', machine_networks: [{ cidr: '192.168.127.0/24' }] } })).body;
    const ie = (await call('POST', `${h.api.base}/infra-envs`, { body: { name: 'outage-ie', pull_secret: PULL_SECRET, cluster_id: cluster.id } })).body;
    fleet = runFleet({ serviceUrl: front.url, infraEnvId: ie.id, count: 1, mix: path.join(FIXTURE_PROFILES, 'worker-slow-stages.yaml'), seed: 'outage', durationSeconds: 300, pollIntervalSeconds: 0.5, rampSeconds: 0 }, stop.signal);
    await waitClusterStatus(h, cluster.id, ['ready'], 60000);
    expect((await call('POST', `${h.api.base}/clusters/${cluster.id}/actions/install`)).status).toBe(202);
    await eventually(async () => ((await call('GET', `${h.api.base}/clusters/${cluster.id}`)).body.hosts[0]?.progress?.current_stage === 'Installing' ? true : undefined), 60000, 'the host installing');
    // Away for 20 s: past the agent's three request retries (about 7 s), while it goes through more stages,
    // Rebooting among them (at most 10 s in), and 7 s of retries of what it sends then (its logs) after that.
    front.setDown(true);
    await new Promise((r) => setTimeout(r, 20000));
    const during = (await call('GET', `${h.api.base}/clusters/${cluster.id}`)).body.hosts[0].progress.current_stage;
    front.setDown(false);
    const installed = await waitClusterStatus(h, cluster.id, ['installed'], 120000);
    expect(installed.hosts[0].status).toBe('installed');
    // Every stage the host went through reached the service, in order, including those reported while it was away.
    const events = (await call('GET', `${h.api.base}/events?cluster_id=${cluster.id}&host_id=${installed.hosts[0].id}&limit=-1&order=ascending`)).body as Array<{ name: string; message: string }>;
    const stages = events.filter((e) => e.name === 'host_install_progress_updated').map((e) => /reached installation stage ([^(]+?)(?: \(|$)/.exec(e.message)?.[1] ?? e.message);
    expect(stages).toEqual(STAGES_BY_ROLE.sno.filter((s) => s !== 'Copying registry data to disk'));
    // The outage covered stages: the service's view had stopped short of the end while the host went on.
    expect(stages.indexOf(during)).toBeLessThan(stages.length - 2);
    // Rebooting, and the logs upload that goes before it, fell in the outage: the logs arrived all the same.
    expect(stages.indexOf(during)).toBeLessThan(stages.indexOf('Rebooting'));
    expect(installed.hosts[0].logs_info).toBe('completed');
  } finally {
    stop.abort();
    front.setDown(false);
    await fleet?.catch(() => undefined);
    await front.close();
  }
}, 240000);
