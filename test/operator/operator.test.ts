/* eslint-disable @typescript-eslint/no-explicit-any -- API bodies and custom resources are read loosely in this test */
/**
 * `landfall operator` against a real kube-apiserver + etcd (built and cached
 * by scripts/install-kube-apiserver.sh, which `npm test`'s set-up runs; a
 * missing binary fails this suite) and a real Landfall (API, worker, Temporal,
 * PostgreSQL). The operator is its own process, talking to both through their
 * APIs, as in production; the hosts are simulated (`landfall fleet`'s agent loop).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { runFleet } from '../../agent/fleet';
import { KubeClient, type KubeObject } from '../../src/operator/kube-client';
import { localApiserverBinaries, startLocalApiserver, type LocalApiserver } from '../../src/operator/local-apiserver';
import { installCrds } from '../../src/operator/operator';
import { RT } from '../../src/operator/resources';
import { call } from '../support/api-harness';
import { startInstallHarness, type InstallHarness } from '../support/install-harness';
import { applyObjects, readKustomization } from '../support/kube-apply';
import { eventually, tempDir } from '../support/services';
import { buildSyntheticLiveIso } from '../support/live-iso';
import { simulatedIdentity } from '../../agent/executors/simulated';

const MAIN = path.resolve(__dirname, '../../dist/src/cli/main.js');
const EXAMPLE = path.resolve(__dirname, '../../deploy/examples/ztp-3-2');
const NS = 'ztp-demo';

let h: InstallHarness;
let apiserver: LocalApiserver;
let kube: KubeClient;
let operator: ChildProcess | undefined;
/** Every log line of every operator process this suite started, in order. */
const operatorLog: Array<{ msg: string; [k: string]: unknown }> = [];
const watches = new AbortController();

function startOperator(landfallUrl = h.api.url, extraEnv: Record<string, string> = {}): ChildProcess {
  const child = spawn(process.execPath, [MAIN, 'operator'], {
    env: {
      PATH: process.env.PATH!,
      HOME: process.env.HOME!,
      OPERATOR_KUBECONFIG: apiserver.kubeconfigPath,
      OPERATOR_LANDFALL_URL: landfallUrl,
      // An hour: anything this suite sees happen was woken by an event, not by the resync.
      OPERATOR_RESYNC_MS: '3600000',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      ...extraEnv,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        operatorLog.push(JSON.parse(line));
        if (process.env.DEBUG_OPERATOR) process.stderr.write(line + '\n');
      } catch {
        operatorLog.push({ msg: line });
      }
    }
  });
  child.stderr!.on('data', (d: Buffer) => operatorLog.push({ msg: `stderr: ${d.toString()}` }));
  return child;
}

/** The real kubectl (built beside the apiserver by scripts/install-kube-apiserver.sh), as the README's walk-through runs it. */
async function kubectl(...args: string[]): Promise<string> {
  const bin = localApiserverBinaries().kubectl;
  try {
    return (await promisify(execFile)(bin, args, { env: { PATH: process.env.PATH!, HOME: process.env.HOME!, KUBECONFIG: apiserver.kubeconfigPath }, timeout: 240_000 })).stdout;
  } catch (err) {
    throw new Error(`kubectl ${args.join(' ')}: ${(err as Error & { stderr?: string }).stderr ?? (err as Error).message}`);
  }
}

const get = (rt: (typeof RT)[keyof typeof RT], ns: string, name: string) => kube.find(rt, ns, name);
const cond = (o: KubeObject | undefined, type: string) => (o?.status?.conditions ?? []).find((c: any) => c.type === type);

/** Records each condition's (status, reason) every time it changes, per resource of a kind. */
function recordTransitions(ns: string, rt: (typeof RT)[keyof typeof RT] = RT.agentClusterInstall): Map<string, string[]> {
  const seen = new Map<string, string[]>();
  const last = new Map<string, string>();
  const record = (o: KubeObject) => {
    for (const c of o.status?.conditions ?? []) {
      const k = `${o.metadata.name}/${c.type}`;
      const v = `${c.status}/${c.reason}`;
      if (last.get(k) === v) continue;
      last.set(k, v);
      seen.set(k, [...(seen.get(k) ?? []), v]);
    }
  };
  void kube.listWatch(rt, ns, { onList: (items) => items.forEach(record), onEvent: (_t, o) => record(o) }, watches.signal);
  return seen;
}

/** A proxy to Landfall that records every request and holds the event stream's until released. */
async function holdingProxy(target: string) {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    void (req.url!.includes('/events/stream') ? released : Promise.resolve()).then(() => {
      const up = http.request(`${target}${req.url}`, { method: req.method, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode!, r.headers);
        r.pipe(res);
      });
      up.on('error', () => res.destroy());
      res.on('close', () => up.destroy());
      req.pipe(up);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests, release, close: () => new Promise((r) => server.close(r)).then(() => server.closeAllConnections()) };
}

beforeAll(async () => {
  // A discovery image to boot (a BareMetalHost's enrolment needs one), from the synthetic live ISO.
  h = await startInstallHarness({ BASE_ISO_PATH: (await buildSyntheticLiveIso({ fillerBytes: 1024 * 1024, name: 'operator.iso' })).path });
  // Fails (does not skip) when the binaries are missing: set-up builds them.
  if (!existsSync(localApiserverBinaries().kubectl)) throw new Error(`${localApiserverBinaries().kubectl} missing: run scripts/install-kube-apiserver.sh`);
  apiserver = await startLocalApiserver({ dir: tempDir('kube') });
  kube = new KubeClient(apiserver.connection);
  await installCrds(kube);
  operator = startOperator();
});

afterAll(async () => {
  watches.abort();
  operator?.kill('SIGTERM');
  await kube?.close();
  await apiserver?.stop();
  await h?.stop();
});

describe('landfall operator on a real kube-apiserver', () => {
  let clusterId: string;
  let infraEnvId: string;
  const fleetStop = new AbortController();

  afterAll(() => fleetStop.abort());

  it('installs the 3+2 cluster of deploy/examples/ztp-3-2 as the README walks through it with kubectl: approval gates it, a SIGKILLed operator finishes it once, the kubeconfig lands in a Secret', async () => {
    const transitions = recordTransitions(NS);
    const agentTransitions = recordTransitions(NS, RT.agent);
    const infraEnvTransitions = recordTransitions(NS, RT.infraEnv);
    expect(await kubectl('apply', '-k', EXAMPLE)).toMatch(/agentclusterinstall\.extensions\.hive\.landfall\.io\/edge-1 created/);

    // The InfraEnv gets its ISO URL, and the cluster exists in Landfall, readable through REST.
    const ie = await eventually(async () => {
      const o = await get(RT.infraEnv, NS, 'edge-1');
      return o?.status?.isoDownloadURL && cond(o, 'ImageCreated')?.status === 'True' ? o : undefined;
    }, 60000, 'InfraEnv image');
    infraEnvId = ie.status.landfall.infraEnvID;
    expect(ie.status.isoDownloadURL).toContain(infraEnvId);
    expect(await kubectl('-n', NS, 'get', 'infraenv', 'edge-1', '-o', 'jsonpath={.status.isoDownloadURL}')).toBe(ie.status.isoDownloadURL);
    expect(ie.metadata.finalizers).toContain('infraenvs.agent-install.landfall.io/deprovision');
    const aci0 = await eventually(async () => (await get(RT.agentClusterInstall, NS, 'edge-1'))?.status?.landfall?.clusterID && get(RT.agentClusterInstall, NS, 'edge-1'), 30000, 'cluster id');
    clusterId = aci0!.status.landfall.clusterID;
    const rest = (await call('GET', `${h.api.base}/clusters/${clusterId}`)).body;
    expect(rest).toMatchObject({ name: 'edge-1', base_dns_domain: 'example.com', openshift_version: '1.32', control_plane_count: 3, api_vips: [expect.objectContaining({ ip: '192.168.127.250' })], ingress_vips: [expect.objectContaining({ ip: '192.168.127.251' })] });
    expect((await call('GET', `${h.api.base}/infra-envs/${infraEnvId}`)).body.cluster_id).toBe(clusterId);

    // Simulated hosts boot the infra-env: one Agent each, unapproved, and the install waits for approval.
    void runFleet({ serviceUrl: h.api.url, infraEnvId, count: 5, mix: 'control-plane:3,worker:2', seed: 'ztp-3-2', durationSeconds: 600, pollIntervalSeconds: 0.5, rampSeconds: 0 }, fleetStop.signal);
    const agents = await eventually(async () => {
      const l = (await kube.list(RT.agent, NS)).items;
      return l.length === 5 && l.every((a) => cond(a, 'RequirementsMet')?.reason === 'AgentIsNotApproved') ? l : undefined;
    }, 90000, '5 agents known and unapproved');
    for (const a of agents) {
      expect(a.metadata.labels).toMatchObject({ 'infraenvs.agent-install.landfall.io': 'edge-1', 'cluster-name': 'edge-1' });
      expect(a.spec).toMatchObject({ approved: false, clusterDeploymentName: { name: 'edge-1', namespace: NS } });
      expect(a.status.inventory.hostname).toBe((await call('GET', `${h.api.base}/infra-envs/${infraEnvId}/hosts/${a.metadata.name}`)).body.requested_hostname);
      expect(a.status.inventory.cpu.count).toBeGreaterThan(0);
      expect(cond(a, 'Validated')).toMatchObject({ status: 'True', reason: 'ValidationsPassing' });
      // The host's validations, grouped as Landfall (and the reference) groups them, none failing.
      const validations = Object.values(a.status.validationsInfo as Record<string, Array<{ id: string; status: string }>>).flat();
      expect(validations.map((v) => v.id)).toEqual(expect.arrayContaining(['has-inventory', 'has-min-cpu-cores']));
      expect(validations.filter((v) => v.status === 'failure')).toEqual([]);
    }
    await eventually(async () => cond(await get(RT.agentClusterInstall, NS, 'edge-1'), 'RequirementsMet')?.reason === 'UnapprovedAgents', 30000, 'UnapprovedAgents');
    expect(await kubectl('-n', NS, 'get', 'agentclusterinstall', 'edge-1', '-o', 'jsonpath={.status.conditions[?(@.type=="RequirementsMet")].message}')).toBe('The installation is pending on the approval of 5 agents');
    expect((await kubectl('-n', NS, 'get', 'agents', '-o', 'name')).trim().split('\n').sort()).toEqual(agents.map((a) => `agent.agent-install.landfall.io/${a.metadata.name}`).sort());

    // An Agent's spec reaches its Landfall host: role, hostname, installation disk (a worker's second disk).
    const w = agents.find((a) => a.status.inventory.disks.length === 2)!;
    const second = w.status.inventory.disks.find((d: any) => d.id !== w.status.installation_disk_id && d.installationEligibility.eligible);
    expect(second).toBeDefined();
    await kube.mergePatch(RT.agent, NS, w.metadata.name, { spec: { role: w.status.role, hostname: 'edge-1-worker-a', installation_disk_id: second.id } });
    const hostOfW = await eventually(async () => {
      const x = (await call('GET', `${h.api.base}/infra-envs/${infraEnvId}/hosts/${w.metadata.name}`)).body;
      return x.requested_hostname === 'edge-1-worker-a' && x.installation_disk_id === second.id ? x : undefined;
    }, 30000, 'Agent spec in Landfall');
    expect(hostOfW.role).toBe(w.status.role);
    await eventually(async () => (await get(RT.agent, NS, w.metadata.name))?.status?.installation_disk_id === second.id, 30000, 'Agent status shows the disk');
    expect(cond(await get(RT.agent, NS, w.metadata.name), 'SpecSynced')).toMatchObject({ status: 'True', reason: 'SyncOK' });
    for (const a of agents.slice(0, 4)) await kubectl('-n', NS, 'patch', `agent/${a.metadata.name}`, '--type', 'merge', '-p', '{"spec":{"approved":true}}');
    await eventually(async () => cond(await get(RT.agentClusterInstall, NS, 'edge-1'), 'RequirementsMet')?.message === 'The installation is pending on the approval of 1 agents', 30000, 'one agent left to approve');
    expect((await call('GET', `${h.api.base}/clusters/${clusterId}`)).body.status).toBe('ready');

    // The last approval starts the install; the operator is killed as soon as it has, and restarted.
    await kubectl('-n', NS, 'patch', `agent/${agents[4]!.metadata.name}`, '--type', 'merge', '-p', '{"spec":{"approved":true}}');
    await eventually(async () => (await call('GET', `${h.api.base}/clusters/${clusterId}`)).body.status !== 'ready', 30000, 'install started', );
    operator!.kill('SIGKILL');
    await new Promise((r) => operator!.once('exit', r));
    operator = startOperator();

    await kubectl('-n', NS, 'wait', '--for=condition=Completed', 'agentclusterinstall/edge-1', '--timeout=180s').catch(async (e) => {
      const c = (await call('GET', `${h.api.base}/clusters/${clusterId}`)).body;
      throw new Error(`${e.message}: cluster ${c.status} (${c.status_info}); operator log tail ${JSON.stringify(operatorLog.slice(-5))}`);
    });
    const done = (await get(RT.agentClusterInstall, NS, 'edge-1'))!;
    expect(cond(done, 'Completed')).toMatchObject({ status: 'True', reason: 'InstallationCompleted' });
    expect(['installed', 'adding-hosts']).toContain(done.status.debugInfo.state);
    expect(done.status.progress.totalPercentage).toBe(100);
    // As the reference, an installed cluster then accepts new hosts (test/operator/day2.test.ts grows one).
    await eventually(async () => (await get(RT.agentClusterInstall, NS, 'edge-1'))?.status?.debugInfo?.state === 'adding-hosts', 30000, 'adding-hosts');

    // Every condition's transitions, in order (the reasons are the reference's).
    const t = (type: string) => transitions.get(`edge-1/${type}`);
    await eventually(async () => t('Stopped')?.at(-1) === 'True/InstallationCompleted' && t('RequirementsMet')?.at(-2) === 'True/ClusterInstallationStopped', 10000, 'last transitions seen');
    expect(t('SpecSynced')).toEqual(['True/SyncOK']);
    expect(t('Completed')).toEqual(['False/InstallationNotStarted', 'False/InstallationInProgress', 'True/InstallationCompleted']);
    expect(t('Failed')).toEqual(['False/InstallationNotFailed']);
    expect(t('Stopped')).toEqual(['False/InstallationNotStopped', 'True/InstallationCompleted']);
    const req = t('RequirementsMet')!;
    expect(req[0]).toBe('False/ClusterNotReady');
    // ClusterIsReady shows only if the install call found Landfall not ready after all (then the next event installs).
    const main = req.filter((v) => v !== 'True/ClusterIsReady');
    expect(main.slice(-4)).toEqual(['False/UnapprovedAgents', 'True/ClusterAlreadyInstalling', 'True/ClusterInstallationStopped', 'True/ClusterAlreadyInstalling']);
    // Before them only what hosts arriving one by one can show: not ready, too few ready agents.
    for (const v of main.slice(1, -4)) expect(['False/ClusterNotReady', 'False/InsufficientAgents', 'False/UnapprovedAgents']).toContain(v);
    const val = t('Validated')!;
    expect(val[0]).toMatch(/^False\/(ValidationsFailing|ValidationsUserPending)$/);
    expect(val.at(-1)).toBe('True/ValidationsPassing');
    for (const v of val) expect(['False/ValidationsFailing', 'False/ValidationsUserPending', 'True/ValidationsPassing']).toContain(v);

    // Every Agent's conditions, in order.
    await eventually(async () => agents.every((a) => agentTransitions.get(`${a.metadata.name}/Installed`)?.at(-1) === 'True/InstallationCompleted'), 30000, 'Agents Installed');
    for (const a of agents) {
      const at = (type: string) => agentTransitions.get(`${a.metadata.name}/${type}`);
      expect(at('SpecSynced')).toEqual(['True/SyncOK']);
      expect(at('Connected')).toEqual(['True/AgentIsConnected']);
      expect(at('Bound')).toEqual(['True/Bound']);
      expect(at('Installed')).toEqual(['False/InstallationNotStarted', 'False/InstallationInProgress', 'True/InstallationCompleted']);
      const rm = at('RequirementsMet')!;
      // Discovery, then the approval gate, then (if the Agent was written between approval and the install) ready, then the install.
      expect(rm.slice(-2)).toEqual(['True/AgentAlreadyInstalling', 'True/AgentInstallationStopped']);
      expect(rm).toContain('False/AgentIsNotApproved');
      const before = rm.slice(0, -2);
      for (const v of before) expect(['False/AgentNotReady', 'False/AgentIsNotApproved', 'True/AgentIsReady']).toContain(v);
      // Ready, when shown, only after approval: never followed by an unapproved state.
      if (before.includes('True/AgentIsReady')) expect(before.slice(before.indexOf('True/AgentIsReady') + 1).every((v) => v === 'True/AgentIsReady')).toBe(true);
      const av = at('Validated')!;
      for (const v of av) expect(['Unknown/ValidationsUnknown', 'False/ValidationsFailing', 'False/ValidationsUserPending', 'True/ValidationsPassing']).toContain(v);
      expect(av.at(-1)).toBe('True/ValidationsPassing');
    }
    // The InfraEnv: its image waits for the cluster at most, then exists.
    const img = infraEnvTransitions.get('edge-1/ImageCreated')!;
    expect(img.at(-1)).toBe('True/ImageCreated');
    for (const v of img.slice(0, -1)) expect(v).toBe('False/ImageCreationError');

    // No duplicate action across the kill: one install start in Landfall, at most one in the operators' logs.
    const events = (await call('GET', `${h.api.base}/events?cluster_id=${clusterId}`)).body as any[];
    expect(events.filter((e) => e.name === 'cluster_prepare_installation_started')).toHaveLength(1);
    expect(events.filter((e) => e.name === 'cluster_installation_started')).toHaveLength(1);
    // At most one line: the kill comes as soon as Landfall has the install, and may land before the operator that
    // asked has its answer and logs it (then none did; the restarted one finds it installing and starts nothing).
    expect(operatorLog.filter((l) => l.msg === 'installation started').length).toBeLessThanOrEqual(1);
    expect(operatorLog.filter((l) => l.msg === 'cluster created')).toHaveLength(1);
    expect((await call('GET', `${h.api.base}/clusters`)).body.filter((c: any) => c.name === 'edge-1')).toHaveLength(1);

    // The kubeconfig and admin password in Secrets, named as the reference names them; the ClusterDeployment points at them.
    const kc = await eventually(() => get(RT.secret, NS, 'edge-1-admin-kubeconfig'), 30000, 'kubeconfig Secret');
    const restKubeconfig = (await call('GET', `${h.api.base}/clusters/${clusterId}/downloads/credentials?file_name=kubeconfig`)).text;
    expect(Buffer.from(kc.data!.kubeconfig!, 'base64').toString()).toBe(restKubeconfig);
    expect(Buffer.from(await kubectl('-n', NS, 'get', 'secret', 'edge-1-admin-kubeconfig', '-o', 'jsonpath={.data.kubeconfig}'), 'base64').toString()).toBe(restKubeconfig);
    expect(restKubeconfig).toContain('server: https://192.168.127.250:6443');
    // A kubeadm cluster has no kubeadmin password (Landfall answers 409): no password Secret, no reference to one.
    expect((await call('GET', `${h.api.base}/clusters/${clusterId}/credentials`)).status).toBe(409);
    expect(await get(RT.secret, NS, 'edge-1-admin-password')).toBeUndefined();
    const cd = (await get(RT.clusterDeployment, NS, 'edge-1'))!;
    expect(cd.spec).toMatchObject({ installed: true, clusterMetadata: { clusterID: clusterId, adminKubeconfigSecretRef: { name: 'edge-1-admin-kubeconfig' } } });
    expect(cd.spec.clusterMetadata.adminPasswordSecretRef).toBeUndefined();

    // The same cluster through REST: installed and accepting hosts, its five hosts installed with the roles the Agents show.
    const installed = (await call('GET', `${h.api.base}/clusters/${clusterId}`)).body;
    expect([installed.status, installed.kind]).toEqual(['adding-hosts', 'AddHostsCluster']);
    expect(installed.hosts).toHaveLength(5);
    await eventually(async () => {
      const l = (await kube.list(RT.agent, NS)).items;
      return l.every((a) => cond(a, 'Installed')?.status === 'True');
    }, 30000, 'agents Installed');
    for (const a of (await kube.list(RT.agent, NS)).items) {
      const host = installed.hosts.find((x: any) => x.id === a.metadata.name);
      expect(host.status).toBe('installed');
      expect(a.status.role).toBe(host.role === 'auto-assign' ? host.suggested_role : host.role);
      expect(a.status.progress.currentStage).toBe(host.progress.current_stage);
      expect(a.status.debugInfo.state).toBe('installed');
    }
    expect(installed.hosts.filter((x: any) => x.role === 'master' || x.suggested_role === 'master')).toHaveLength(3);
  }, 300_000);

  it('reports a missing pull secret and a bad VIP on SpecSynced, and recovers once the manifests are fixed', async () => {
    const ns = 'ztp-bad';
    const objects = readKustomization(EXAMPLE)
      .filter((o) => o.kind !== 'Secret')
      .map((o) => JSON.parse(JSON.stringify(o).replaceAll(`"${NS}"`, `"${ns}"`).replaceAll('edge-1', 'edge-2')) as KubeObject);
    const aci = objects.find((o) => o.kind === 'AgentClusterInstall')!;
    aci.spec.apiVIPs = ['192.168.200.5']; // outside the machine network
    await applyObjects(kube, objects);
    const synced = async () => cond(await get(RT.agentClusterInstall, ns, 'edge-2'), 'SpecSynced');

    await eventually(async () => (await synced())?.reason === 'InputError', 30000, 'InputError for the pull secret');
    expect((await synced())!).toMatchObject({ status: 'False', reason: 'InputError', message: expect.stringContaining(`pull secret ${ns}/pull-secret not found`) });
    expect(cond(await get(RT.agentClusterInstall, ns, 'edge-2'), 'Validated')).toMatchObject({ status: 'Unknown', reason: 'ValidationsUnknown' });

    // The Secret appears (its watch wakes the operator): the next problem is the VIP, as Landfall's API words it.
    const secret = readKustomization(EXAMPLE).find((o) => o.kind === 'Secret')!;
    await applyObjects(kube, [{ ...secret, metadata: { ...secret.metadata, namespace: ns } }]);
    await eventually(async () => /api_vips\[0\]\.ip: 192\.168\.200\.5 is not inside any machine network/.test((await synced())?.message ?? ''), 30000, 'InputError for the VIP');
    expect((await synced())!).toMatchObject({ status: 'False', reason: 'InputError' });
    expect((await call('GET', `${h.api.base}/clusters`)).body.filter((c: any) => c.name === 'edge-2')).toHaveLength(0);

    // Fixing the manifest recovers: SyncOK, and the cluster exists with the fixed VIP.
    await kube.mergePatch(RT.agentClusterInstall, ns, 'edge-2', { spec: { apiVIPs: ['192.168.127.240'] } });
    await eventually(async () => (await synced())?.reason === 'SyncOK', 30000, 'SyncOK');
    const id = (await get(RT.agentClusterInstall, ns, 'edge-2'))!.status.landfall.clusterID;
    expect((await call('GET', `${h.api.base}/clusters/${id}`)).body.api_vips.map((v: any) => v.ip)).toEqual(['192.168.127.240']);

    // A change made through REST is reported, not reverted.
    await call('PATCH', `${h.api.base}/clusters/${id}`, { body: { api_vips: [{ ip: '192.168.127.241' }] } });
    await eventually(async () => (await synced())?.reason === 'ChangedOutsideOperator', 30000, 'drift reported');
    expect((await synced())!.message).toContain('api_vips (Landfall "192.168.127.241", spec "192.168.127.240")');
    expect((await call('GET', `${h.api.base}/clusters/${id}`)).body.api_vips.map((v: any) => v.ip)).toEqual(['192.168.127.241']);
  });

  it('NMStateConfigs chosen by the InfraEnv\'s label selector become its static network; relabelled or deleted ones leave it', async () => {
    const ns = 'ztp-nmstate';
    const secret = readKustomization(EXAMPLE).find((o) => o.kind === 'Secret')!;
    const nmstate = (name: string, site: string, mac: string, ip: string): KubeObject => ({
      apiVersion: 'agent-install.landfall.io/v1beta1',
      kind: 'NMStateConfig',
      metadata: { name, namespace: ns, labels: { site } },
      spec: { config: { interfaces: [{ name: 'eth0', type: 'ethernet', state: 'up', ipv4: { enabled: true, dhcp: false, address: [{ ip, 'prefix-length': 24 }] } }] }, interfaces: [{ name: 'eth0', macAddress: mac }] },
    });
    await applyObjects(kube, [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
      { ...secret, metadata: { ...secret.metadata, namespace: ns } },
      nmstate('host-a', 'a', '52:54:00:aa:00:01', '192.168.127.31'),
      nmstate('host-b', 'b', '52:54:00:bb:00:02', '192.168.127.32'),
      { apiVersion: 'agent-install.landfall.io/v1beta1', kind: 'InfraEnv', metadata: { name: 'site-a', namespace: ns }, spec: { pullSecretRef: { name: 'pull-secret' }, nmStateConfigLabelSelector: { matchLabels: { site: 'a' } } } },
    ]);
    const ieId = await eventually(async () => (await get(RT.infraEnv, ns, 'site-a'))?.status?.landfall?.infraEnvID as string | undefined, 60000, 'infra-env');
    const macs = async () => {
      const raw = (await call('GET', `${h.api.base}/infra-envs/${ieId}`)).body.static_network_config as string | undefined;
      return (raw ? (JSON.parse(raw) as any[]) : []).flatMap((c) => c.mac_interface_map.map((m: any) => m.mac_address)).sort().join(',');
    };
    // Only the labelled one; its nmstate YAML as the resource has it.
    await eventually(async () => (await macs()) === '52:54:00:aa:00:01', 30000, 'static network of host-a');
    expect(JSON.parse((await call('GET', `${h.api.base}/infra-envs/${ieId}`)).body.static_network_config)[0].network_yaml).toContain('192.168.127.31');
    // Relabelled into the selector: its watch wakes the InfraEnv, which applies both.
    await kube.mergePatch(RT.nmStateConfig, ns, 'host-b', { metadata: { labels: { site: 'a' } } });
    await eventually(async () => (await macs()) === '52:54:00:aa:00:01,52:54:00:bb:00:02', 30000, 'static network of both');
    // Deleted, then relabelled out: the last one leaving empties it (it was kept).
    await kube.delete(RT.nmStateConfig, ns, 'host-a');
    await eventually(async () => (await macs()) === '52:54:00:bb:00:02', 30000, 'host-a gone');
    await kube.mergePatch(RT.nmStateConfig, ns, 'host-b', { metadata: { labels: { site: 'b' } } });
    await eventually(async () => (await macs()) === '', 30000, 'no static network left');
    expect(cond(await get(RT.infraEnv, ns, 'site-a'), 'ImageCreated')).toMatchObject({ status: 'True', reason: 'ImageCreated' });
    await kube.delete(RT.infraEnv, ns, 'site-a');
    await eventually(async () => !(await get(RT.infraEnv, ns, 'site-a')), 30000, 'InfraEnv gone');
    expect((await call('GET', `${h.api.base}/infra-envs/${ieId}`)).status).toBe(404);
  });

  it('a BareMetalHost enrols its machine by its BMC; the host that boots from it gets an approved Agent, whose fields changed through REST are reported, not reverted; deleting it unenrols', async () => {
    const ns = 'ztp-bmh';
    const machine = simulatedIdentity('ztp-bmh', 0);
    const secret = readKustomization(EXAMPLE).find((o) => o.kind === 'Secret')!;
    await applyObjects(kube, [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
      { ...secret, metadata: { ...secret.metadata, namespace: ns } },
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'bmc-creds', namespace: ns }, stringData: { username: 'admin', password: 'bmc-pw' } },
      { apiVersion: 'agent-install.landfall.io/v1beta1', kind: 'InfraEnv', metadata: { name: 'bm', namespace: ns }, spec: { pullSecretRef: { name: 'pull-secret' } } },
      {
        apiVersion: 'metal3.landfall.io/v1alpha1',
        kind: 'BareMetalHost',
        metadata: { name: 'machine-0', namespace: ns, labels: { 'infraenvs.agent-install.landfall.io': 'bm' } },
        spec: { online: true, bootMACAddress: machine.mac, bmc: { address: 'simulated://ztp-bmh-0', credentialsName: 'bmc-creds' } },
      },
    ]);
    const enrolled = await eventually(async () => {
      const b = await get(RT.bareMetalHost, ns, 'machine-0');
      return b?.status?.landfall?.bmcHostID ? b : undefined;
    }, 60000, 'enrolment').catch(async (e) => {
      throw new Error(`${e.message}: ${JSON.stringify((await get(RT.bareMetalHost, ns, 'machine-0'))?.status)}`);
    });
    const ieId = (await get(RT.infraEnv, ns, 'bm'))!.status.landfall.infraEnvID;
    const list = (await call('GET', `${h.api.base}/infra-envs/${ieId}/bmc-hosts`)).body as any[];
    expect(list).toEqual([expect.objectContaining({ id: enrolled.status.landfall.bmcHostID, bmc_address: 'simulated://ztp-bmh-0', bmc_credentials_set: true, boot_mac_address: machine.mac })]);
    expect(JSON.stringify(enrolled)).not.toContain('bmc-pw');

    // The machine "boots" (a simulated host with the BareMetalHost's MAC): attached, provisioned, its Agent approved.
    const stop = new AbortController();
    void runFleet({ serviceUrl: h.api.url, infraEnvId: ieId, count: 1, mix: 'worker', seed: 'ztp-bmh', durationSeconds: 120, pollIntervalSeconds: 0.5, rampSeconds: 0 }, stop.signal);
    try {
      await eventually(async () => (await get(RT.bareMetalHost, ns, 'machine-0'))?.status?.provisioning?.state === 'provisioned', 60000, 'provisioned');
      const agent = await eventually(async () => {
        const a = await get(RT.agent, ns, machine.id);
        return a?.spec?.approved === true ? a : undefined;
      }, 30000, 'agent approved');
      expect(agent.metadata.labels).toMatchObject({ 'agent-install.landfall.io/bmh': 'machine-0' });
      expect((await get(RT.bareMetalHost, ns, 'machine-0'))!.status).toMatchObject({ operationalStatus: 'OK', landfall: { status: 'attached', hostID: machine.id } });

      // An Agent's field changed through REST is reported on SpecSynced, not reverted; editing the resource applies it again.
      const hostUrl = `${h.api.base}/infra-envs/${ieId}/hosts/${machine.id}`;
      const synced = async () => cond(await get(RT.agent, ns, machine.id), 'SpecSynced');
      await kube.mergePatch(RT.agent, ns, machine.id, { spec: { hostname: 'bm-0' } });
      await eventually(async () => (await call('GET', hostUrl)).body.requested_hostname === 'bm-0', 30000, 'hostname applied');
      expect((await call('PATCH', hostUrl, { body: { host_name: 'bm-by-hand' } })).status).toBe(201);
      await eventually(async () => (await synced())?.reason === 'ChangedOutsideOperator', 30000, 'drift reported');
      expect((await synced())!).toMatchObject({ status: 'False', message: expect.stringContaining('hostname (Landfall "bm-by-hand", spec "bm-0")') });
      expect((await call('GET', hostUrl)).body.requested_hostname).toBe('bm-by-hand');
      await kube.mergePatch(RT.agent, ns, machine.id, { spec: { hostname: 'bm-1' } });
      await eventually(async () => (await synced())?.reason === 'SyncOK', 30000, 'applied again');
      expect((await call('GET', hostUrl)).body.requested_hostname).toBe('bm-1');
    } finally {
      stop.abort();
    }

    await kube.delete(RT.bareMetalHost, ns, 'machine-0');
    await eventually(async () => !(await get(RT.bareMetalHost, ns, 'machine-0')), 30000, 'BareMetalHost gone');
    expect((await call('GET', `${h.api.base}/infra-envs/${ieId}/bmc-hosts`)).body).toEqual([]);
    await kube.delete(RT.infraEnv, ns, 'bm');
    await eventually(async () => !(await get(RT.infraEnv, ns, 'bm')), 30000, 'InfraEnv gone');
    expect((await call('GET', `${h.api.base}/infra-envs/${ieId}`)).status).toBe(404);
  });

  it('watches only the namespaces it is given (OPERATOR_NAMESPACES)', async () => {
    const secret = readKustomization(EXAMPLE).find((o) => o.kind === 'Secret')!;
    const infraEnvIn = (ns: string): KubeObject[] => [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
      { ...secret, metadata: { ...secret.metadata, namespace: ns } },
      { apiVersion: 'agent-install.landfall.io/v1beta1', kind: 'InfraEnv', metadata: { name: 'scoped', namespace: ns }, spec: { pullSecretRef: { name: 'pull-secret' } } },
    ];
    operator!.kill('SIGKILL');
    await new Promise((r) => operator!.once('exit', r));
    operator = startOperator(h.api.url, { OPERATOR_NAMESPACES: 'ztp-scope-a' });
    try {
      await applyObjects(kube, [...infraEnvIn('ztp-scope-a'), ...infraEnvIn('ztp-scope-b')]);
      await eventually(async () => (await get(RT.infraEnv, 'ztp-scope-a', 'scoped'))?.status?.landfall?.infraEnvID, 60000, 'the watched namespace reconciled');
      // The other one is left alone (no finalizer, no status) while only this operator runs.
      await new Promise((r) => setTimeout(r, 2000));
      const b = (await get(RT.infraEnv, 'ztp-scope-b', 'scoped'))!;
      expect(b.status).toBeUndefined();
      expect(b.metadata.finalizers ?? []).toEqual([]);
    } finally {
      operator!.kill('SIGKILL');
      await new Promise((r) => operator!.once('exit', r));
      operator = startOperator();
    }
    // An operator of every namespace takes it up.
    await eventually(async () => (await get(RT.infraEnv, 'ztp-scope-b', 'scoped'))?.status?.landfall?.infraEnvID, 60000, 'all namespaces again');
    for (const ns of ['ztp-scope-a', 'ztp-scope-b']) await kube.delete(RT.infraEnv, ns, 'scoped');
    await eventually(async () => !(await get(RT.infraEnv, 'ztp-scope-a', 'scoped')) && !(await get(RT.infraEnv, 'ztp-scope-b', 'scoped')), 30000, 'InfraEnvs gone');
  });

  it('a restarted operator catches up with what changed before its event stream opened (it resyncs on connecting)', async () => {
    const ns = 'ztp-restart';
    const secret = readKustomization(EXAMPLE).find((o) => o.kind === 'Secret')!;
    await applyObjects(kube, [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
      { ...secret, metadata: { ...secret.metadata, namespace: ns } },
      { apiVersion: 'agent-install.landfall.io/v1beta1', kind: 'InfraEnv', metadata: { name: 'r', namespace: ns }, spec: { pullSecretRef: { name: 'pull-secret' } } },
    ]);
    const ieId = await eventually(async () => (await get(RT.infraEnv, ns, 'r'))?.status?.landfall?.infraEnvID as string | undefined, 60000, 'infra-env');
    const stop = new AbortController();
    void runFleet({ serviceUrl: h.api.url, infraEnvId: ieId, count: 1, mix: 'worker', seed: 'ztp-restart', durationSeconds: 120, pollIntervalSeconds: 0.5, rampSeconds: 0 }, stop.signal);
    const hostId = simulatedIdentity('ztp-restart', 0).id;
    try {
      await eventually(async () => (await get(RT.agent, ns, hostId))?.status?.debugInfo?.state, 60000, 'Agent with its host status');
    } finally {
      stop.abort();
    }

    // Restarted, its event stream held back: it lists and reconciles everything first (the Agent among them).
    operator!.kill('SIGKILL');
    await new Promise((r) => operator!.once('exit', r));
    const proxy = await holdingProxy(h.api.url);
    try {
      operator = startOperator(proxy.url);
      const read = (path: string) => proxy.requests.some((r) => r.startsWith(`GET /api/assisted-install/v2${path}`));
      await eventually(async () => read(`/infra-envs/${ieId}/hosts/${hostId}`) && read(`/infra-envs/${ieId}/hosts`), 60000, 'first reconcile of the Agent and its InfraEnv').catch((e: Error) => {
        throw new Error(`${e.message}; requests ${JSON.stringify(proxy.requests.slice(-10))}; operator log ${JSON.stringify(operatorLog.slice(-5))}`);
      });
      await new Promise((r) => setTimeout(r, 500));
      // The host goes while the stream is not open yet: its event is older than the stream's "latest".
      expect((await call('DELETE', `${h.api.base}/infra-envs/${ieId}/hosts/${hostId}`)).status).toBe(204);
      proxy.release();
      await eventually(async () => !(await get(RT.agent, ns, hostId)), 30000, 'the Agent of the deleted host gone');
    } finally {
      operator!.kill('SIGKILL');
      await new Promise((r) => operator!.once('exit', r));
      await proxy.close();
      operator = startOperator();
    }
    await kube.delete(RT.infraEnv, ns, 'r');
    await eventually(async () => !(await get(RT.infraEnv, ns, 'r')), 30000, 'InfraEnv gone');
  });

  it('deleting the resources deletes the Landfall clusters and infra-env (finalizers)', async () => {
    fleetStop.abort();
    const bad = (await get(RT.agentClusterInstall, 'ztp-bad', 'edge-2'))!.status.landfall.clusterID;
    // As the README: the folder deleted with kubectl. No namespace controller runs beside a bare apiserver, so the
    // Namespace itself stays Terminating: hence --wait=false; the resources in it go through their finalizers.
    await kubectl('delete', '-k', EXAMPLE, '--wait=false');
    await kube.delete(RT.infraEnv, 'ztp-bad', 'edge-2');
    await kube.delete(RT.agentClusterInstall, 'ztp-bad', 'edge-2');
    await kube.delete(RT.clusterDeployment, 'ztp-bad', 'edge-2');
    await eventually(async () => !(await get(RT.clusterDeployment, NS, 'edge-1')) && !(await get(RT.infraEnv, NS, 'edge-1')) && !(await get(RT.clusterDeployment, 'ztp-bad', 'edge-2')), 60000, 'resources gone');
    expect((await call('GET', `${h.api.base}/clusters/${clusterId}`)).status).toBe(404);
    expect((await call('GET', `${h.api.base}/clusters/${bad}`)).status).toBe(404);
    expect((await call('GET', `${h.api.base}/infra-envs/${infraEnvId}`)).status).toBe(404);
    expect(await get(RT.secret, NS, 'edge-1-admin-kubeconfig')).toBeUndefined();
    await eventually(async () => (await kube.list(RT.agent, NS)).items.length === 0, 30000, 'agents gone');
  });
});
