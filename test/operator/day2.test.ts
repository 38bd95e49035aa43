/* eslint-disable @typescript-eslint/no-explicit-any -- API bodies and custom resources are read loosely in this test */
/**
 * Day 2 through the declarative API, against a real kube-apiserver + etcd and
 * a real Landfall (API, worker, Temporal, PostgreSQL), the operator its own
 * process, the hosts simulated (`landfall fleet`'s agent loop; the simulated
 * executor plays the cluster's controller and says so). As the reference's
 * ClusterDeployment controller:
 * - a cluster installed from resources accepts new hosts afterwards
 *   (adding-hosts): a host booted from the same InfraEnv gets an Agent, and
 *   approving it installs that host alone;
 * - a ClusterDeployment that says `installed: true` is imported, and its
 *   approved Agents' hosts are installed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { runFleet } from '../../agent/fleet';
import { SimulatedNetwork } from '../../agent/executors/simulated';
import { KubeClient, type KubeObject } from '../../src/operator/kube-client';
import { startLocalApiserver, type LocalApiserver } from '../../src/operator/local-apiserver';
import { installCrds } from '../../src/operator/operator';
import { RT } from '../../src/operator/resources';
import { clusterTag } from '../../src/operator/spec-mapping';
import { call, PULL_SECRET } from '../support/api-harness';
import { startInstallHarness, type InstallHarness } from '../support/install-harness';
import { applyObjects } from '../support/kube-apply';
import { eventually, tempDir } from '../support/services';

const MAIN = path.resolve(__dirname, '../../dist/src/cli/main.js');

let h: InstallHarness;
let apiserver: LocalApiserver;
let kube: KubeClient;
let operator: ChildProcess | undefined;
const operatorLog: Array<{ msg: string; [k: string]: unknown }> = [];
const fleets = new AbortController();

function startOperator(): ChildProcess {
  const child = spawn(process.execPath, [MAIN, 'operator'], {
    env: { PATH: process.env.PATH!, HOME: process.env.HOME!, OPERATOR_KUBECONFIG: apiserver.kubeconfigPath, OPERATOR_LANDFALL_URL: h.api.url, OPERATOR_RESYNC_MS: '3600000', LOG_LEVEL: 'info', LOG_FORMAT: 'json' },
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
      } catch {
        operatorLog.push({ msg: line });
      }
    }
  });
  child.stderr!.on('data', (d: Buffer) => operatorLog.push({ msg: `stderr: ${d.toString()}` }));
  return child;
}

beforeAll(async () => {
  [h, apiserver] = await Promise.all([startInstallHarness(), startLocalApiserver({ dir: tempDir('kube-day2') })]);
  kube = new KubeClient(apiserver.connection);
  await installCrds(kube);
  operator = startOperator();
});
afterAll(async () => {
  fleets.abort();
  operator?.kill('SIGTERM');
  await kube?.close();
  await apiserver?.stop();
  await h?.stop();
});

const cond = (o: KubeObject | undefined, type: string) => (o?.status?.conditions ?? []).find((c: any) => c.type === type);
const condOf = (o: KubeObject | undefined, type: string) => `${cond(o, type)?.status}/${cond(o, type)?.reason}`;
const boot = (infraEnvId: string, seed: string, mix: string, firstIndex: number, network: SimulatedNetwork) =>
  void runFleet({ serviceUrl: h.api.url, infraEnvId, count: 1, mix, seed, durationSeconds: 300, pollIntervalSeconds: 0.5, rampSeconds: 0, firstIndex, network }, fleets.signal);

/** The namespace, pull secret, ClusterDeployment, AgentClusterInstall and InfraEnv of one cluster (the ZTP shape, Landfall's groups). */
function resources(ns: string, name: string, o: { installed?: boolean; controlPlaneAgents: number; workerAgents?: number }): KubeObject[] {
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'pull-secret', namespace: ns }, type: 'kubernetes.io/dockerconfigjson', stringData: { '.dockerconfigjson': PULL_SECRET } },
    {
      apiVersion: 'hive.landfall.io/v1',
      kind: 'ClusterDeployment',
      metadata: { name, namespace: ns },
      spec: { clusterName: name, baseDomain: 'example.org', ...(o.installed ? { installed: true } : {}), clusterInstallRef: { group: 'extensions.hive.landfall.io', kind: 'AgentClusterInstall', name, version: 'v1beta1' }, platform: { agentBareMetal: {} }, pullSecretRef: { name: 'pull-secret' } },
    },
    {
      apiVersion: 'extensions.hive.landfall.io/v1beta1',
      kind: 'AgentClusterInstall',
      metadata: { name, namespace: ns },
      spec: { clusterDeploymentRef: { name }, imageSetRef: { name: 'kubernetes-1.31' }, provisionRequirements: { controlPlaneAgents: o.controlPlaneAgents, workerAgents: o.workerAgents ?? 0 }, networking: { machineNetwork: [{ cidr: '192.168.127.0/24' }] } },
    },
    { apiVersion: 'agent-install.landfall.io/v1beta1', kind: 'InfraEnv', metadata: { name, namespace: ns }, spec: { clusterRef: { name, namespace: ns }, pullSecretRef: { name: 'pull-secret' } } },
  ];
}

/** The one Agent of the namespace (besides those named) once its host is known and it waits for approval. */
async function newAgent(ns: string, except: string[] = []): Promise<KubeObject> {
  return eventually(async () => {
    const a = (await kube.list(RT.agent, ns)).items.find((x) => !except.includes(x.metadata.name));
    return a && cond(a, 'RequirementsMet')?.reason === 'AgentIsNotApproved' && a.status?.debugInfo?.state === 'known' ? a : undefined;
  }, 90000, `a new Agent in ${ns} known and unapproved`).catch(async (e) => {
    const failing = (a: KubeObject) => Object.values(a.status?.validationsInfo ?? {}).flat().filter((v: any) => v.status !== 'success').map((v: any) => `${v.id}: ${v.message}`);
    throw new Error(`${e.message}: ${JSON.stringify((await kube.list(RT.agent, ns)).items.map((x) => [x.metadata.name, x.status?.debugInfo?.state, failing(x)]))}`);
  });
}

async function approveAndWaitInstalled(ns: string, agent: KubeObject, clusterId: string): Promise<any> {
  await kube.mergePatch(RT.agent, ns, agent.metadata.name, { spec: { approved: true } });
  const done = await eventually(async () => {
    const a = await kube.find(RT.agent, ns, agent.metadata.name);
    // Installed=True already once the node joined (added-to-existing-cluster, as the reference); then the controller's Done.
    return cond(a, 'Installed')?.status === 'True' && a?.status?.debugInfo?.state === 'installed' ? a : undefined;
  }, 90000, `Agent ${agent.metadata.name} Installed`).catch(async (e) => {
    const c = (await call('GET', `${h.api.base}/clusters/${clusterId}`)).body;
    throw new Error(`${e.message}: ${c.hosts.map((x: any) => `${x.id} ${x.kind} ${x.status}/${x.progress?.current_stage ?? '-'} ${x.status_info}`).join(' | ')}; operator log tail ${JSON.stringify(operatorLog.slice(-5))}`);
  });
  return done;
}

describe('day 2 through the operator', () => {
  it('a cluster installed from resources accepts new hosts; approving a new Agent installs its host alone; an installed ClusterDeployment is imported and grown the same way', async () => {
    const network = new SimulatedNetwork(undefined, undefined, true);

    const grow = async () => {
      const ns = 'day2-grow';
      await applyObjects(kube, resources(ns, 'grow', { controlPlaneAgents: 1 }));
      const ie = await eventually(async () => (await kube.find(RT.infraEnv, ns, 'grow'))?.status?.landfall?.infraEnvID as string | undefined, 60000, 'InfraEnv in Landfall');
      boot(ie, 'day2-grow', 'control-plane', 0, network);
      const first = await newAgent(ns);
      // Day 1: the approval starts the install; the operator publishes the kubeconfig and marks the ClusterDeployment installed.
      await approveAndWaitInstalled(ns, first, '');
      const aci = await eventually(async () => {
        const o = await kube.find(RT.agentClusterInstall, ns, 'grow');
        return o?.status?.debugInfo?.state === 'adding-hosts' ? o : undefined;
      }, 60000, 'the installed cluster opened for new hosts');
      const clusterId = aci.status.landfall.clusterID as string;
      expect(['Completed', 'Stopped', 'Failed', 'RequirementsMet'].map((t) => condOf(aci, t))).toEqual(['True/InstallationCompleted', 'True/InstallationCompleted', 'False/InstallationNotFailed', 'True/ClusterAlreadyInstalling']);
      expect((await kube.find(RT.clusterDeployment, ns, 'grow'))!.spec.installed).toBe(true);
      expect(await kube.find(RT.secret, ns, 'grow-admin-kubeconfig')).toBeDefined();
      const opened = (await call('GET', `${h.api.base}/clusters/${clusterId}`)).body;
      expect([opened.kind, opened.status, opened.hosts.map((x: any) => x.status)]).toEqual(['AddHostsCluster', 'adding-hosts', ['installed']]);
      const day1Done = new Date();
      const stepsBefore = await h.api.db('host_steps').where({ host_id: first.metadata.name }).count('* as n').first();

      // A new machine boots the same InfraEnv: a day-2 host, validated against the running node, not installed until approved.
      boot(ie, 'day2-grow', 'worker', 1, network);
      const second = await newAgent(ns, [first.metadata.name]);
      const host = (await call('GET', `${h.api.base}/infra-envs/${ie}/hosts/${second.metadata.name}`)).body;
      expect([host.kind, host.status]).toEqual(['AddToExistingClusterHost', 'known']);
      expect(host.validations_info).toContain('"id":"reaches-cluster-nodes","status":"success","message":"Host reaches all 1 nodes of the cluster"');
      expect((await call('GET', `${h.api.base}/events?cluster_id=${clusterId}`)).body.filter((e: any) => e.name === 'host_day2_install_started')).toEqual([]);
      const joined = await approveAndWaitInstalled(ns, second, clusterId);
      expect([condOf(joined, 'Installed'), joined.status.progress.currentStage, joined.status.role]).toEqual(['True/InstallationCompleted', 'Done', 'worker']);

      const grown = (await call('GET', `${h.api.base}/clusters/${clusterId}`)).body;
      expect([grown.status, grown.hosts.map((x: any) => `${x.kind}:${x.status}`).sort()]).toEqual(['adding-hosts', ['AddToExistingClusterHost:installed', 'Host:installed']]);
      // The first node untouched: no step, no event since day 1.
      expect(await h.api.db('host_steps').where({ host_id: first.metadata.name }).count('* as n').first()).toEqual(stepsBefore);
      expect(await h.api.db('events').where({ host_id: first.metadata.name }).where('event_time', '>', day1Done).pluck('name')).toEqual([]);
      const events = (await call('GET', `${h.api.base}/events?cluster_id=${clusterId}`)).body.map((e: any) => e.name);
      expect(events.filter((n: string) => n === 'cluster_add_hosts_allowed')).toHaveLength(1);
      expect(events.filter((n: string) => n === 'host_day2_install_started')).toHaveLength(1);
    };

    const imported = async () => {
      const ns = 'day2-import';
      await applyObjects(kube, resources(ns, 'prod', { installed: true, controlPlaneAgents: 3 }));
      const aci = await eventually(async () => {
        const o = await kube.find(RT.agentClusterInstall, ns, 'prod');
        return o?.status?.debugInfo?.state ? o : undefined;
      }, 60000, 'the imported cluster');
      const clusterId = aci.status.landfall.clusterID as string;
      const cd = (await kube.find(RT.clusterDeployment, ns, 'prod'))!;
      const c = (await call('GET', `${h.api.base}/clusters/${clusterId}`)).body;
      expect(c).toMatchObject({ kind: 'AddHostsCluster', status: 'adding-hosts', imported: true, name: 'prod', base_dns_domain: 'example.org', api_vip_dnsname: 'api.prod.example.org', openshift_cluster_id: cd.metadata.uid, openshift_version: '1.31', machine_networks: [expect.objectContaining({ cidr: '192.168.127.0/24' })] });
      expect(String(c.tags).split(',')).toContain(clusterTag(cd.metadata.uid!));
      expect(['SpecSynced', 'Completed', 'Stopped'].map((t) => condOf(aci, t))).toEqual(['True/SyncOK', 'True/InstallationCompleted', 'True/InstallationCompleted']);

      const ie = await eventually(async () => (await kube.find(RT.infraEnv, ns, 'prod'))?.status?.landfall?.infraEnvID as string | undefined, 60000, 'InfraEnv in Landfall');
      boot(ie, 'day2-import', 'worker', 20, new SimulatedNetwork());
      const agent = await newAgent(ns);
      await approveAndWaitInstalled(ns, agent, clusterId);
      const ign = await call('GET', `${h.api.base}/infra-env/${ie}/hosts/${agent.metadata.name}/downloads/ignition`);
      expect(ign.body.ignition.config.merge[0].source).toBe('https://api.prod.example.org:22624/config/worker');
      expect((await call('GET', `${h.api.base}/clusters`)).body.filter((x: any) => x.name === 'prod')).toHaveLength(1);
    };

    await Promise.all([grow(), imported()]);
    expect(operatorLog.filter((l) => l.msg === 'cluster imported')).toHaveLength(1);
    expect(operatorLog.filter((l) => l.msg === 'cluster accepts new hosts')).toHaveLength(1);
    expect(operatorLog.filter((l) => l.msg === 'day-2 host installation started')).toHaveLength(2);
  }, 240_000);
});
