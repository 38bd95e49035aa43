/* eslint-disable @typescript-eslint/no-explicit-any -- API bodies are read loosely in this test */
/**
 * Day 2, end to end: real Temporal server, API, worker and simulated agents.
 * A 3+1 cluster is installed, opened for new hosts, and grows by two hosts
 * booted from a day-2 infra-env, each installed by its own workflow; one of
 * them fails writing its disk once and is retried alone. The simulated
 * executor plays the cluster's controller (it says so in its reports).
 */
import path from 'node:path';
import { spawn } from 'node:child_process';
import { X509Certificate, randomUUID } from 'node:crypto';
import { runFleet, type FleetReport } from '../../agent/fleet';
import { SimulatedNetwork } from '../../agent/executors/simulated';
import { getDay2HostProgress } from '../../workflows/install-day2-host.messages';
import { call, PULL_SECRET } from '../support/api-harness';
import { eventually } from '../support/services';
import { FIXTURE_PROFILES, startInstallHarness, waitClusterStatus, waitWorkflowPhase, type InstallHarness } from '../support/install-harness';

let h: InstallHarness;
beforeAll(async () => {
  // The host monitor sweeps every 2 s here: it starts or fails day-2 installs left without their workflow.
  h = await startInstallHarness({ HOST_MONITOR_INTERVAL_MS: '2000' });
});
afterAll(async () => {
  await h?.stop();
});

const get = async (url: string) => (await call('GET', url)).body;
const fleets: Array<{ stop: AbortController; done: Promise<FleetReport> }> = [];
afterEach(async () => {
  for (const f of fleets.splice(0)) {
    f.stop.abort();
    await f.done.catch(() => undefined);
  }
});

function boot(infraEnvId: string, seed: string, mix: string, count: number, network: SimulatedNetwork, firstIndex = 0) {
  const stop = new AbortController();
  const done = runFleet({ serviceUrl: h.api.url, infraEnvId, count, mix, seed, durationSeconds: 300, pollIntervalSeconds: 0.5, rampSeconds: 0, network, firstIndex }, stop.signal);
  fleets.push({ stop, done });
}

async function hostsWhere(clusterId: string, pred: (x: any) => boolean, n: number, what: string): Promise<any[]> {
  return eventually(async () => {
    const list = (await get(`${h.api.base}/clusters/${clusterId}`)).hosts.filter(pred);
    return list.length === n ? list : undefined;
  }, 90000, what).catch(async (e) => {
    const c = await get(`${h.api.base}/clusters/${clusterId}`);
    throw new Error(`${e.message}: ${c.hosts.map((x: any) => `${x.requested_hostname} ${x.kind} ${x.status}/${x.progress?.current_stage ?? '-'} ${x.status_info} ${x.validation_remediation ?? ''}`).join(' | ')}`);
  });
}

const MAIN = path.resolve(__dirname, '../../dist/src/cli/main.js');

/** The built CLI, spawned without blocking this process (the API under test runs in it). */
function landfall(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], { env: { PATH: process.env.PATH!, LANDFALL_URL: h.api.url }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90000);
    child.on('error', reject);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

const validation = (host: any, id: string) => (Object.values(JSON.parse(host.validations_info)) as any[][]).flat().find((v) => v.id === id);

describe('day 2: adding hosts to an installed cluster', () => {
  it('installs a 3+1 cluster, then two day-2 hosts validate, join through their own workflows, and one that fails writing its disk is retried alone', async () => {
    const network = new SimulatedNetwork();
    const cluster = (await call('POST', `${h.api.base}/clusters`, { body: { name: 'grow', openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com', machine_networks: [{ cidr: '192.168.127.0/24' }], api_vips: [{ ip: '192.168.127.250' }], ingress_vips: [{ ip: '192.168.127.251' }] } })).body;
    const ie1 = (await call('POST', `${h.api.base}/infra-envs`, { body: { name: 'grow-day1', pull_secret: PULL_SECRET, cluster_id: cluster.id } })).body;

    // Not installed yet: allow-add-workers is refused as assisted-service refuses it (400).
    const early = await call('POST', `${h.api.base}/clusters/${cluster.id}/actions/allow-add-workers`);
    expect([early.status, early.body.reason]).toEqual([400, expect.stringMatching(/Expected cluster status: installed/)]);

    boot(ie1.id, 'grow', 'control-plane:3,worker:1', 4, network);
    await waitClusterStatus(h, cluster.id, ['ready'], 60000);
    expect((await call('POST', `${h.api.base}/clusters/${cluster.id}/actions/install`)).status).toBe(202);
    const installed = await waitClusterStatus(h, cluster.id, ['installed'], 120000);
    const originals: string[] = installed.hosts.map((x: any) => x.id).sort();
    expect(originals).toHaveLength(4);
    const day1Done = new Date();
    const stepsOf = async (ids: string[]) => (await h.api.db('host_steps').whereIn('host_id', ids).orderBy(['host_id', 'step_id']).select('host_id', 'step_id', 'state')).map((r: any) => `${r.host_id}/${r.step_id}`);
    const originalSteps = await stepsOf(originals);
    const originalSends = await h.api.db('hosts').whereIn('id', originals).orderBy('id').pluck('step_sends');

    // Open the installed cluster for new hosts.
    const opened = await call('POST', `${h.api.base}/clusters/${cluster.id}/actions/allow-add-workers`);
    expect(opened.status).toBe(202);
    expect([opened.body.status, opened.body.kind, opened.body.api_vip_dnsname]).toEqual(['adding-hosts', 'AddHostsCluster', 'api.grow.example.com']);
    // Its twin (assisted-service keeps both names) refuses it too now: adding-hosts is not installed.
    const twin = await call('POST', `${h.api.base}/clusters/${cluster.id}/actions/allow-add-hosts`);
    expect([twin.status, twin.body.reason]).toEqual([400, expect.stringMatching(/Expected cluster status: installed, but cluster status is: adding-hosts/)]);

    // A day-2 infra-env bound to it; two hosts boot from it, one of which fails writing its disk once.
    const ie2 = (await call('POST', `${h.api.base}/infra-envs`, { body: { name: 'grow-day2', pull_secret: PULL_SECRET, cluster_id: cluster.id } })).body;
    boot(ie2.id, 'grow-day2', `worker:1,${path.join(FIXTURE_PROFILES, 'worker-fails-writing.yaml')}:1`, 2, network, 4);
    const known = await hostsWhere(cluster.id, (x) => x.kind === 'AddToExistingClusterHost' && x.status === 'known', 2, 'two day-2 hosts known');
    for (const x of known) {
      expect(x.role).toBe('worker');
      expect(validation(x, 'reaches-cluster-nodes')).toMatchObject({ status: 'success', message: 'Host reaches all 4 nodes of the cluster' });
      expect(validation(x, 'belongs-to-machine-cidr').status).toBe('success');
      expect(validation(x, 'compatible-with-cluster-release')).toMatchObject({ status: 'success', message: expect.stringContaining('1.31') });
    }
    // A day-1 host cannot be installed or reset on its own.
    const day1 = installed.hosts[0];
    expect((await call('POST', `${h.api.base}/infra-envs/${ie1.id}/hosts/${day1.id}/actions/install`)).body.reason).toMatch(/only allowed when adding hosts/);
    expect((await call('POST', `${h.api.base}/infra-envs/${ie1.id}/hosts/${day1.id}/actions/reset`)).status).toBe(409);

    const good = known.find((x) => !x.requested_hostname.startsWith('worker-fails-writing'))!;
    const bad = known.find((x) => x.requested_hostname.startsWith('worker-fails-writing'))!;
    for (const x of [good, bad]) {
      const r = await call('POST', `${h.api.base}/infra-envs/${ie2.id}/hosts/${x.id}/actions/install`);
      expect(r.status).toBe(202);
      expect(['installing', 'installing-in-progress']).toContain(r.body.status);
    }
    expect((await call('POST', `${h.api.base}/infra-envs/${ie2.id}/hosts/${good.id}/actions/install`)).status).toBe(409);

    await hostsWhere(cluster.id, (x) => x.id === good.id && x.status === 'installed', 1, 'the good day-2 host installed');
    const [failed] = await hostsWhere(cluster.id, (x) => x.id === bad.id && x.status === 'error', 1, 'the failing day-2 host in error');
    expect(failed.status_info).toMatch(/simulated failure at Writing image to disk/);
    const badWf = h.client.workflow.getHandle(`install-day2-host-${bad.id}-attempt-1`);
    // The row commits before the workflow hears of it by its signal.
    await waitWorkflowPhase(badWf, getDay2HostProgress, 'error', 'the bad host\'s workflow in error');
    // The cluster goes on accepting hosts: one failed day-2 host fails nothing else.
    expect((await get(`${h.api.base}/clusters/${cluster.id}`)).status).toBe('adding-hosts');

    const retried = await call('POST', `${h.api.base}/infra-envs/${ie2.id}/hosts/${bad.id}/actions/retry-install`);
    // The answer is the host read after the retry took: installing, or already a stage further on when its
    // simulated agent reported before the read (seen on a loaded CI machine).
    expect(retried.status).toBe(202);
    expect(['installing', 'installing-in-progress']).toContain(retried.body.status);
    await hostsWhere(cluster.id, (x) => x.id === bad.id && x.status === 'installed', 1, 'the retried day-2 host installed');

    const grown = await get(`${h.api.base}/clusters/${cluster.id}`);
    expect(grown.hosts).toHaveLength(6);
    expect(grown.hosts.filter((x: any) => x.status === 'installed')).toHaveLength(6);
    expect(grown.status).toBe('adding-hosts');
    for (const id of [good.id, bad.id]) {
      const host = grown.hosts.find((x: any) => x.id === id);
      // The controller's reports brought it there: Joined, then Done.
      expect(host.progress.current_stage).toBe('Done');
      const wf = h.client.workflow.getHandle(`install-day2-host-${id}-attempt-1`);
      expect((await waitWorkflowPhase(wf, getDay2HostProgress, 'installed', `${id}'s workflow installed`)).retries).toBe(id === bad.id ? 1 : 0);
    }
    // Saved histories feed the replay test (test/unit/workflow-replay.test.ts): SAVE_HISTORY=1 refreshes this one (a failure, a retry, the controller's reports).
    if (process.env.SAVE_HISTORY === '1') {
      const { writeFileSync } = await import('node:fs');
      const { execFileSync } = await import('node:child_process');
      const { temporalBinary } = await import('../../src/dev/temporal-dev-server');
      const json = execFileSync(temporalBinary(), ['workflow', 'show', '--address', h.temporal.address, '-w', `install-day2-host-${bad.id}-attempt-1`, '-o', 'json'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
      writeFileSync(path.resolve(__dirname, '../fixtures/histories/install-day2-host-retried.json'), json);
    }
    // Only the bad host got a second install step; each day-2 host only its own.
    const day2Steps = (await h.api.db('host_steps').whereIn('host_id', [good.id, bad.id]).where({ step_type: 'install' }).select('host_id', 'step_id')).map((r: any) => `${r.host_id === bad.id ? 'bad' : 'good'}/${r.step_id}`).sort();
    expect(day2Steps).toEqual(['bad/install-day2-a1', 'bad/install-day2-a1-r1', 'good/install-day2-a1']);

    // The original hosts are untouched: no step queued or handed out to them, no event about them since day 1.
    expect(await stepsOf(originals)).toEqual(originalSteps);
    expect(await h.api.db('hosts').whereIn('id', originals).orderBy('id').pluck('step_sends')).toEqual(originalSends);
    expect(await h.api.db('events').whereIn('host_id', originals).where('event_time', '>', day1Done).pluck('name')).toEqual([]);
    expect((await h.api.db('hosts').whereIn('id', originals).pluck('status')).every((s: string) => s === 'installed')).toBe(true);

    const events = (await get(`${h.api.base}/events?cluster_id=${cluster.id}`)).map((e: any) => e.name);
    expect(events.filter((n: string) => n === 'host_join_credential_minted')).toHaveLength(3);
    // Accepting hosts, it is still a cluster installed at its first attempt (the only one Landfall installed here), on the Grafana board too.
    const metrics = await (await fetch(`${h.api.url}/metrics`)).text();
    expect(/^landfall_installed_clusters_first_attempt_ratio (\S+)$/m.exec(metrics)?.[1]).toBe('1');
    expect(events.filter((n: string) => n === 'host_joined_cluster').length).toBeGreaterThanOrEqual(4);
    expect(events).toContain('cluster_add_hosts_allowed');

    // The good host's Ignition joins this cluster with a credential signed by its CA, for an hour at most.
    const ign = await call('GET', `${h.api.base}/infra-env/${ie2.id}/hosts/${good.id}/downloads/ignition`);
    expect(ign.status).toBe(200);
    const file = (p: string) => Buffer.from(ign.body.storage.files.find((f: any) => f.path === p).contents.source.split(',')[1], 'base64').toString();
    const joinKubeconfig = file('/etc/landfall/join-kubeconfig.yaml');
    expect(joinKubeconfig).toContain('server: https://192.168.127.250:6443');
    expect(file('/etc/landfall/kubeadm.yaml')).toMatch(/kind: JoinConfiguration[\s\S]*kubeConfigPath: \/etc\/landfall\/join-kubeconfig.yaml/);
    const admin = (await call('GET', `${h.api.base}/clusters/${cluster.id}/downloads/credentials?file_name=kubeconfig`)).text as string;
    const pem = (text: string, key: string) => Buffer.from(new RegExp(`${key}: (\\S+)`).exec(text)![1]!, 'base64').toString();
    const ca = new X509Certificate(pem(admin, 'certificate-authority-data'));
    const cred = new X509Certificate(pem(joinKubeconfig, 'client-certificate-data'));
    expect(cred.verify(ca.publicKey)).toBe(true);
    expect(cred.subject).toMatch(/CN=system:bootstrap:[a-z0-9]{6}/);
    expect(cred.subject).toContain('O=system:bootstrappers:kubeadm:default-node-token');
    expect(new Date(cred.validTo).getTime() - Date.now()).toBeLessThanOrEqual(3600_000);
    expect(new Date(cred.validTo).getTime()).toBeGreaterThan(Date.now());
  }, 300000);

  it('imports a cluster by its API name and adds a host to it with the pointer Ignition the cluster serves', async () => {
    const bad = await call('POST', `${h.api.base}/clusters/import`, { body: { name: 'x', openshift_cluster_id: randomUUID() } });
    expect(bad.status).toBe(400);
    const badVersion = await call('POST', `${h.api.base}/clusters/import`, { body: { name: 'x', api_vip_dnsname: 'api.x.example.com', openshift_cluster_id: randomUUID(), openshift_version: '9.99' } });
    expect([badVersion.status, badVersion.body.reason]).toEqual([400, expect.stringMatching(/openshift_version/)]);
    // A name every object has is no release either.
    expect((await call('POST', `${h.api.base}/clusters/import`, { body: { name: 'x', api_vip_dnsname: 'api.x.example.com', openshift_cluster_id: randomUUID(), openshift_version: 'constructor' } })).status).toBe(400);

    const osId = randomUUID();
    const imported = await call('POST', `${h.api.base}/clusters/import`, { body: { name: 'scale-up-prod', api_vip_dnsname: 'api.prod.example.org', openshift_cluster_id: osId, openshift_version: '1.31' } });
    expect(imported.status).toBe(201);
    expect(imported.body).toMatchObject({ kind: 'AddHostsCluster', status: 'adding-hosts', name: 'prod', base_dns_domain: 'example.org', imported: true, openshift_cluster_id: osId, openshift_version: '1.31' });
    // Not installed by Landfall: allow-add-workers does not apply.
    expect((await call('POST', `${h.api.base}/clusters/${imported.body.id}/actions/allow-add-workers`)).status).toBe(400);

    // The CLI makes the day-2 infra-env and says where the image is; the hosts boot from it.
    const listed = await landfall(['hosts', 'add', '--cluster', 'prod', '-o', 'json']);
    expect([listed.status, listed.stderr]).toEqual([0, '']);
    const ie = JSON.parse(listed.stdout).infra_env;
    expect([ie.name, ie.cluster_id]).toEqual(['prod-day2', imported.body.id]);
    boot(ie.id, 'prod-day2', 'worker', 1, new SimulatedNetwork(), 20);
    const [host] = await hostsWhere(imported.body.id, (x) => x.status === 'known', 1, 'the day-2 host known');
    expect(validation(host, 'reaches-cluster-nodes').message).toMatch(/No node addresses are known/);
    const table = await landfall(['hosts', 'add', '--cluster', 'prod']);
    expect(table.stdout).toMatch(/worker-20\s+worker\s+known/);
    expect(table.stdout).toContain('1 new host(s) ready: landfall hosts add --cluster prod --install --wait');
    // --install --wait installs it and follows it to installed (one line per change off a terminal), exit 0.
    const added = await landfall(['hosts', 'add', '--cluster', 'prod', '--install', '--wait']);
    expect([added.status, added.stderr]).toEqual([0, '']);
    expect(added.stdout).toContain('installing worker-20 into prod');
    expect(added.stdout).toMatch(/worker-20.*(Rebooting|Joined|Done|installed)/);
    expect(added.stdout).toContain('1 host(s) joined prod; it now has 1 installed hosts');
    await hostsWhere(imported.body.id, (x) => x.status === 'installed', 1, 'the day-2 host installed');
    const ign = await call('GET', `${h.api.base}/infra-env/${ie.id}/hosts/${host.id}/downloads/ignition`);
    expect(ign.body.ignition.config.merge[0].source).toBe('https://api.prod.example.org:22624/config/worker');

    // Reset one day-2 host: it must boot the discovery image again, and its workflow ends.
    const reset = await call('POST', `${h.api.base}/infra-envs/${ie.id}/hosts/${host.id}/actions/reset`);
    expect([reset.status, reset.body.status]).toEqual([200, 'resetting-pending-user-action']);
    // A cluster that is neither installed nor accepting hosts: one line, usage exit code.
    const notYet = (await call('POST', `${h.api.base}/clusters`, { body: { name: 'not-yet', openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com' } })).body;
    const refused = await landfall(['hosts', 'add', '--cluster', notYet.id]);
    expect([refused.status, refused.stdout]).toEqual([2, '']);
    expect(refused.stderr.trim()).toMatch(/^landfall: cluster not-yet is (insufficient|pending-for-input): hosts can be added once it is installed/);
  }, 180000);

  it('the host monitor starts a day-2 workflow an API process died before starting, and fails, with the reason, a host whose workflow ended; a retry is a new attempt', async () => {
    const c = (await call('POST', `${h.api.base}/clusters/import`, { body: { name: 'resume', api_vip_dnsname: 'api.resume.example.org', openshift_cluster_id: randomUUID() } })).body;
    const ie = (await call('POST', `${h.api.base}/infra-envs`, { body: { name: 'resume-day2', pull_secret: PULL_SECRET, cluster_id: c.id } })).body;
    boot(ie.id, 'resume-day2', 'worker', 2, new SimulatedNetwork(), 40);
    const [unstarted, orphan] = await hostsWhere(c.id, (x) => x.status === 'known', 2, 'two day-2 hosts known');

    // What the API leaves behind when it dies between committing the install and starting the workflow.
    await h.api.db('hosts').where({ id: unstarted.id }).update({ status: 'installing', status_info: 'Installation is in progress', status_updated_at: new Date(Date.now() - 60_000), doc: h.api.db.raw(`doc || '{"day2_attempt": 1, "progress": {}}'::jsonb`) });
    await hostsWhere(c.id, (x) => x.id === unstarted.id && x.status === 'installed', 1, 'the unstarted host installed by the workflow the sweep started');
    // The row says installed when the report commits; the workflow hears of it by its signal just after.
    await waitWorkflowPhase(h.client.workflow.getHandle(`install-day2-host-${unstarted.id}-attempt-1`), getDay2HostProgress, 'installed', 'the unstarted host\'s workflow installed');

    // A workflow ended under the host (terminated before it handed out the install step: no worker ran it).
    await h.withoutWorker(async () => {
      expect((await call('POST', `${h.api.base}/infra-envs/${ie.id}/hosts/${orphan.id}/actions/install`)).status).toBe(202);
      await h.client.workflow.getHandle(`install-day2-host-${orphan.id}-attempt-1`).terminate('an operator terminated it');
    });
    const [failed] = await hostsWhere(c.id, (x) => x.id === orphan.id && x.status === 'error', 1, 'the orphaned host failed by the sweep');
    expect(failed.status_info).toMatch(/^Failed - its install workflow install-day2-host-.*-attempt-1 ended \(TERMINATED\) without finishing the install$/);
    // Its workflow cannot take the retry: the retry is a new attempt with a workflow of its own.
    const retried = await call('POST', `${h.api.base}/infra-envs/${ie.id}/hosts/${orphan.id}/actions/retry-install`);
    // Installing, or a stage further on when its agent reported before the read.
    expect(retried.status).toBe(202);
    expect(['installing', 'installing-in-progress']).toContain(retried.body.status);
    await hostsWhere(c.id, (x) => x.id === orphan.id && x.status === 'installed', 1, 'the orphaned host installed at its second attempt');
    // The row says installed when the report commits; the workflow hears of it by its signal just after.
    await waitWorkflowPhase(h.client.workflow.getHandle(`install-day2-host-${orphan.id}-attempt-2`), getDay2HostProgress, 'installed', 'the orphan host\'s workflow installed');
    expect(await h.api.db('host_steps').where({ host_id: orphan.id, step_type: 'install' }).pluck('step_id')).toEqual(['install-day2-a2']);
    const events = (await get(`${h.api.base}/events?cluster_id=${c.id}`)).map((e: any) => `${e.host_id === unstarted.id ? 'unstarted' : 'orphan'}:${e.name}`);
    expect(events).toEqual(expect.arrayContaining(['unstarted:host_day2_install_resumed', 'orphan:host_day2_install_failed']));
    expect(events.filter((e: string) => e === 'orphan:host_day2_install_started')).toHaveLength(2);
  }, 180000);

  it('fails a day-2 host whose install cannot be prepared, with the reason, and resets it', async () => {
    const osId = randomUUID();
    const c = (await call('POST', `${h.api.base}/clusters/import`, { body: { name: 'nodns', api_vip_dnsname: 'api.nodns.example.org', openshift_cluster_id: osId } })).body;
    // A cluster with neither a CA Landfall holds nor an API name to fetch a worker config from (the name removed behind the API's back).
    await h.api.db('clusters').where({ id: c.id }).update({ doc: h.api.db.raw(`doc - 'api_vip_dnsname'`) });
    const ie = (await call('POST', `${h.api.base}/infra-envs`, { body: { name: 'nodns-day2', pull_secret: PULL_SECRET, cluster_id: c.id } })).body;
    boot(ie.id, 'nodns-day2', 'worker', 1, new SimulatedNetwork(), 30);
    const [host] = await hostsWhere(c.id, (x) => x.status === 'known', 1, 'the day-2 host known');
    expect((await call('POST', `${h.api.base}/infra-envs/${ie.id}/hosts/${host.id}/actions/install`)).status).toBe(202);
    const [failed] = await hostsWhere(c.id, (x) => x.status === 'error', 1, 'the day-2 host failed');
    expect(failed.status_info).toMatch(/^Failed - the install could not be prepared: .*neither a CA Landfall holds nor an API name/);
    const wf = h.client.workflow.getHandle(`install-day2-host-${host.id}-attempt-1`);
    await waitWorkflowPhase(wf, getDay2HostProgress, 'error', 'the workflow in error');
    // No install step was handed out; a reset ends the workflow.
    expect(await h.api.db('host_steps').where({ host_id: host.id, step_type: 'install' }).count('* as n').first()).toEqual({ n: '0' });
    expect((await call('POST', `${h.api.base}/infra-envs/${ie.id}/hosts/${host.id}/actions/reset`)).status).toBe(200);
    expect((await wf.result()).phase).toBe('reset');
  }, 120000);
});
