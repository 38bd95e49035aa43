/* eslint-disable @typescript-eslint/no-explicit-any -- API bodies are read loosely in this test */
/**
 * Log collection through real installs: hosts upload before rebooting, a
 * failed host's logs arrive by themselves, cancelled hosts are asked for
 * theirs, the controller uploads its own, a host whose logs never come times
 * out, and the download is one tar.gz with an entry per source.
 */
import path from 'node:path';
import { call, type Res } from '../support/api-harness';
import { FIXTURE_PROFILES, readyCluster, startInstallHarness, waitClusterStatus, type InstallHarness, type ReadyCluster } from '../support/install-harness';
import { eventually } from '../support/services';
import { readTarGz } from '../support/tar-read';

const UPLOAD_MAX = 65536;
let h: InstallHarness;
beforeAll(async () => {
  // Short log timeouts and a fast monitor so a collection that never completes times out within the test.
  h = await startInstallHarness({ HOST_LOGS_PENDING_TIMEOUT_MS: '3000', HOST_LOGS_COLLECTION_TIMEOUT_MS: '5000', HOST_MONITOR_INTERVAL_MS: '1000', LOGS_UPLOAD_MAX_BYTES: String(UPLOAD_MAX) });
});
afterAll(async () => {
  await h?.stop();
});

const clusterOf = async (id: string) => (await call('GET', `${h.api.base}/clusters/${id}`)).body;
const eventsOf = async (id: string) => (await call('GET', `${h.api.base}/events?cluster_id=${id}`)).body as any[];

async function download(url: string): Promise<{ status: number; name: string | null; body: Buffer }> {
  const r = await fetch(url);
  return { status: r.status, name: r.headers.get('content-disposition'), body: Buffer.from(await r.arrayBuffer()) };
}

async function upload(url: string, data: Buffer | string, opts: { field?: string; multipart?: boolean } = {}): Promise<Res<any>> {
  let res: Response;
  if (opts.multipart === false) {
    res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/gzip' }, body: data });
  } else {
    const form = new FormData();
    form.append(opts.field ?? 'upfile', new Blob([data]), 'logs.tar.gz');
    res = await fetch(url, { method: 'POST', body: form });
  }
  const text = await res.text();
  return { status: res.status, text, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

let installed: ReadyCluster;
let failedCluster: ReadyCluster;

describe('log collection', () => {
  it('every host uploads its logs before rebooting, the controller its own; GET logs bundles one entry each', async () => {
    installed = await readyCluster(h, 'logs-ok', 'control-plane:3,worker:2', 5);
    try {
      const none = await call('GET', `${h.api.base}/clusters/${installed.clusterId}/logs?logs_type=all`);
      expect(none.status).toBe(409);
      expect(none.body).toMatchObject({ kind: 'Error', code: '409', reason: expect.stringMatching(/no all logs have been uploaded/) });

      expect((await call('POST', `${h.api.base}/clusters/${installed.clusterId}/actions/install`)).status).toBe(202);
      await waitClusterStatus(h, installed.clusterId, ['installed'], 90000);
      // The controller uploads after it reported the components, which may be just after installed.
      const cluster = await eventually(async () => {
        const c = await clusterOf(installed.clusterId);
        return c.logs_info === 'completed' ? c : undefined;
      }, 20000, 'controller logs');
      expect(Date.parse(cluster.controller_logs_collected_at)).toBeGreaterThanOrEqual(Date.parse(cluster.controller_logs_started_at));

      const events = await eventsOf(installed.clusterId);
      for (const host of cluster.hosts) {
        expect([host.requested_hostname, host.logs_info]).toEqual([host.requested_hostname, 'completed']);
        expect(Date.parse(host.logs_collected_at)).toBeGreaterThanOrEqual(Date.parse(host.logs_started_at));
        // Uploaded after the host reported Rebooting and before the next stage: before the reboot.
        const mine = events.filter((e) => e.host_id === host.id).map((e) => e.message as string);
        const rebooting = mine.findIndex((m) => /reached installation stage Rebooting/.test(m));
        const uploaded = mine.findIndex((m) => /uploaded logs/.test(m));
        const next = mine.findIndex((m, i) => i > rebooting && /reached installation stage /.test(m));
        expect([host.requested_hostname, rebooting >= 0, uploaded > rebooting, uploaded < next]).toEqual([host.requested_hostname, true, true, true]);
      }
      expect(events.filter((e) => e.name === 'controller_logs_uploaded')).toHaveLength(1);
      // Nobody was asked for logs: nothing failed.
      expect(events.filter((e) => e.name === 'host_logs_requested')).toHaveLength(0);

      const all = await download(`${h.api.base}/clusters/${installed.clusterId}/logs?logs_type=all`);
      expect(all.status).toBe(200);
      expect(all.name).toBe(`attachment; filename="logs-ok_${installed.clusterId}_all.tar.gz"`);
      const entries = await readTarGz(all.body);
      expect([...entries.keys()].sort()).toEqual(['controller.tar.gz', ...cluster.hosts.map((x: any) => `${x.requested_hostname}_${x.id}.tar.gz`)].sort());
      for (const host of cluster.hosts) {
        const inner = await readTarGz(entries.get(`${host.requested_hostname}_${host.id}.tar.gz`)!);
        expect(JSON.parse(inner.get('host.json')!.toString())).toMatchObject({ simulated: true, host_id: host.id, hostname: host.requested_hostname, reason: 'before-reboot' });
        expect(inner.get('README.txt')!.toString()).toMatch(/^SIMULATED HOST LOGS/);
        expect(inner.get('agent.log')!.toString()).toMatch(/ (info registered|step [a-z-]+ [a-z-]+-?[0-9a-f]*: exit \d+)/);
      }
      const controller = await readTarGz(entries.get('controller.tar.gz')!);
      expect(controller.get('README.txt')!.toString()).toMatch(/^SIMULATED CONTROLLER LOGS/);
      expect(JSON.parse(controller.get('controller.json')!.toString())).toMatchObject({ cluster_id: installed.clusterId, reason: 'finalizing completed' });

      // One host: its archive as uploaded; the controller alone likewise.
      const one = cluster.hosts[0];
      const single = await download(`${h.api.base}/clusters/${installed.clusterId}/logs?logs_type=host&host_id=${one.id}`);
      expect(single.status).toBe(200);
      expect(JSON.parse((await readTarGz(single.body)).get('host.json')!.toString()).host_id).toBe(one.id);
      const ctl = await download(`${h.api.base}/clusters/${installed.clusterId}/logs?logs_type=controller`);
      expect((await readTarGz(ctl.body)).has('controller.json')).toBe(true);
      const hostsOnly = await readTarGz((await download(`${h.api.base}/clusters/${installed.clusterId}/logs?logs_type=host`)).body);
      expect(hostsOnly.size).toBe(5);
    } finally {
      await installed.report();
    }
  });

  it('a failed host uploads its logs unasked; one whose logs never come times out', async () => {
    failedCluster = await readyCluster(h, 'logs-fail', `control-plane:3,${path.join(FIXTURE_PROFILES, 'worker-fails-writing.yaml')}:1,${path.join(FIXTURE_PROFILES, 'worker-fails-no-logs.yaml')}:1`, 5);
    try {
      // The failing hosts are workers: the control plane (and the bootstrap host, which plays the controller) stays healthy.
      for (const x of (await clusterOf(failedCluster.clusterId)).hosts) {
        const role = x.requested_hostname.startsWith('control-plane') ? 'master' : 'worker';
        expect((await call('PATCH', `${h.api.base}/infra-envs/${x.infra_env_id}/hosts/${x.id}`, { body: { host_role: role } })).status).toBe(201);
      }
      await waitClusterStatus(h, failedCluster.clusterId, ['ready'], 30000);
      expect((await call('POST', `${h.api.base}/clusters/${failedCluster.clusterId}/actions/install`)).status).toBe(202);
      await waitClusterStatus(h, failedCluster.clusterId, ['error'], 60000);
      const hosts = await eventually(async () => {
        const c = await clusterOf(failedCluster.clusterId);
        const byProfile = (p: string) => c.hosts.find((x: any) => x.requested_hostname.startsWith(p));
        const [good, silent] = [byProfile('worker-fails-writing'), byProfile('worker-fails-no-logs')];
        return good?.status === 'error' && good.logs_info === 'completed' && silent?.status === 'error' && silent.logs_info === 'timeout' ? { good, silent } : undefined;
      }, 40000, 'logs completed for the failed host and timed out for the silent one');
      const events = await eventsOf(failedCluster.clusterId);
      const of = (hostId: string, name: string) => events.filter((e) => e.host_id === hostId && e.name === name);
      expect(of(hosts.good.id, 'host_logs_uploaded')).toHaveLength(1);
      // It uploaded when its install failed, so the service did not need to ask.
      expect(of(hosts.good.id, 'host_logs_requested')).toHaveLength(0);
      // The silent host started gathering on its own when its install failed (so the service did not ask), then timed out once.
      expect(of(hosts.silent.id, 'host_logs_requested')).toHaveLength(0);
      expect(of(hosts.silent.id, 'host_logs_timed_out')).toHaveLength(1);
      expect(of(hosts.silent.id, 'host_logs_timed_out')[0].severity).toBe('warning');
      const archive = await readTarGz((await download(`${h.api.base}/clusters/${failedCluster.clusterId}/logs?logs_type=host&host_id=${hosts.good.id}`)).body);
      expect(JSON.parse(archive.get('host.json')!.toString()).reason).toBe('install-failed');
      expect(archive.get('activity.log')!.toString()).toMatch(/simulated failure at Writing image to disk/);
      expect((await download(`${h.api.base}/clusters/${failedCluster.clusterId}/logs?logs_type=host&host_id=${hosts.silent.id}`)).status).toBe(409);
      // The controller uploads its logs when the install fails too.
      await eventually(async () => (await clusterOf(failedCluster.clusterId)).logs_info === 'completed', 20000, 'controller logs after the failure');
      const ctl = await readTarGz((await download(`${h.api.base}/clusters/${failedCluster.clusterId}/logs?logs_type=controller`)).body);
      expect(JSON.parse(ctl.get('controller.json')!.toString()).reason).toBe('the installation failed');
    } finally {
      await failedCluster.report();
    }
  });

  it('cancelled hosts are asked for their logs and send them', async () => {
    const c = await readyCluster(h, 'logs-cancel', 'control-plane:3,worker:2', 5);
    try {
      expect((await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/install`)).status).toBe(202);
      await waitClusterStatus(h, c.clusterId, ['installing'], 30000);
      expect((await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/cancel`)).status).toBe(202);
      const cluster = await eventually(async () => {
        const x = await clusterOf(c.clusterId);
        return x.hosts.every((y: any) => y.status === 'cancelled' && y.logs_info === 'completed') ? x : undefined;
      }, 40000, 'logs of every cancelled host');
      const events = await eventsOf(c.clusterId);
      for (const host of cluster.hosts) {
        const requested = events.filter((e) => e.host_id === host.id && e.name === 'host_logs_requested');
        // Asked once, although the host polled many times (every 0.5 s) while cancelled.
        expect([host.id, requested.length, requested[0]?.message]).toEqual([host.id, 1, expect.stringMatching(/logs requested because the host is cancelled/)]);
        const archive = await readTarGz((await download(`${h.api.base}/clusters/${c.clusterId}/logs?logs_type=host&host_id=${host.id}`)).body);
        expect(JSON.parse(archive.get('host.json')!.toString())).toMatchObject({ host_id: host.id, reason: 'logs-gather' });
      }
    } finally {
      await c.report();
    }
  });
});

describe('log uploads that are refused', () => {
  it('refuses bad uploads with 4xx in the error shape and changes nothing', async () => {
    const cluster = await clusterOf(installed.clusterId);
    const host = cluster.hosts[0];
    const other = (await clusterOf(failedCluster.clusterId)).hosts[0];
    const url = (clusterId: string, h2: any) => `${h.api.base}/clusters/${clusterId}/logs?logs_type=host&infra_env_id=${h2.infra_env_id}&host_id=${h2.id}`;
    const before = { events: (await eventsOf(installed.clusterId)).length, host: JSON.stringify(host), archive: (await download(`${h.api.base}/clusters/${installed.clusterId}/logs?logs_type=host&host_id=${host.id}`)).body };
    const { gzipSync } = await import('node:zlib');

    const notMultipart = await upload(url(installed.clusterId, host), gzipSync('x'), { multipart: false });
    expect([notMultipart.status, notMultipart.body.code]).toEqual([400, '400']);
    const noFile = await upload(url(installed.clusterId, host), gzipSync('x'), { field: 'other' });
    expect([noFile.status, noFile.body.reason]).toEqual([400, expect.stringMatching(/no "upfile" part/)]);
    const notGzip = await upload(url(installed.clusterId, host), 'plain text, not an archive');
    expect([notGzip.status, notGzip.body.reason]).toEqual([400, expect.stringMatching(/gzip/)]);
    const big = Buffer.concat([gzipSync('header'), Buffer.alloc(UPLOAD_MAX * 2, 7)]);
    const tooLarge = await upload(url(installed.clusterId, host), big);
    expect([tooLarge.status, tooLarge.body.code, tooLarge.body.reason]).toEqual([413, '413', expect.stringMatching(/larger than 65536 bytes/)]);
    // A host of another cluster, and one that does not exist.
    const wrongHost = await upload(url(installed.clusterId, other), gzipSync('x'));
    expect([wrongHost.status, wrongHost.body.kind]).toEqual([404, 'Error']);
    const noHost = await upload(url(installed.clusterId, { ...host, id: '00000000-0000-4000-8000-000000000000' }), gzipSync('x'));
    expect(noHost.status).toBe(404);
    const missingIds = await upload(`${h.api.base}/clusters/${installed.clusterId}/logs?logs_type=host`, gzipSync('x'));
    expect(missingIds.status).toBe(400);
    const badState = await call('PUT', `${h.api.base}/infra-envs/${host.infra_env_id}/hosts/${host.id}/logs-progress`, { body: { logs_state: 'exploded' } });
    expect(badState.status).toBe(400);

    expect((await eventsOf(installed.clusterId)).length).toBe(before.events);
    expect(JSON.stringify((await clusterOf(installed.clusterId)).hosts[0])).toBe(before.host);
    expect((await download(`${h.api.base}/clusters/${installed.clusterId}/logs?logs_type=host&host_id=${host.id}`)).body.equals(before.archive)).toBe(true);
    expect((await call('GET', `${h.api.base}/clusters/${installed.clusterId}/logs?logs_type=everything`)).status).toBe(400);
  });
});
