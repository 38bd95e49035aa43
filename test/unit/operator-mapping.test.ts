/* eslint-disable @typescript-eslint/no-explicit-any -- custom resources are open documents */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { agentConditions, clusterConditions, clusterMayInstall, mergeConditions, type ClusterFacts } from '../../src/operator/conditions';
import { agentInventory, clusterDrift, clusterParams, hostDrift, infraEnvParams, pullSecretOf, selectsNmState, specHash, SpecError } from '../../src/operator/spec-mapping';
import { WorkQueue } from '../../src/operator/work-queue';
import { loadKubeconfig } from '../../src/operator/kube-client';
import { staticNetworkKeyfiles } from '../../src/domain/static-network';

const facts = (over: Partial<ClusterFacts>): ClusterFacts => ({ status: 'ready', statusInfo: '', failingValidations: [], requiredAgents: 5, agents: Array.from({ length: 5 }, () => ({ approved: true, ready: true })), holdInstallation: false, drift: [], ...over });
const reason = (cs: ReturnType<typeof clusterConditions>, type: string) => cs.find((c) => c.type === type)!.reason;

describe('AgentClusterInstall conditions (the reference kube-api-conditions table)', () => {
  it.each([
    ['insufficient', 'ClusterNotReady', 'ValidationsFailing', 'InstallationNotStarted', 'InstallationNotFailed', 'InstallationNotStopped'],
    ['pending-for-input', 'ClusterNotReady', 'ValidationsUserPending', 'InstallationNotStarted', 'InstallationNotFailed', 'InstallationNotStopped'],
    ['ready', 'ClusterIsReady', 'ValidationsPassing', 'InstallationNotStarted', 'InstallationNotFailed', 'InstallationNotStopped'],
    ['preparing-for-installation', 'ClusterAlreadyInstalling', 'ValidationsPassing', 'InstallationInProgress', 'InstallationNotFailed', 'InstallationNotStopped'],
    ['finalizing', 'ClusterAlreadyInstalling', 'ValidationsPassing', 'InstallationInProgress', 'InstallationNotFailed', 'InstallationNotStopped'],
    ['installed', 'ClusterInstallationStopped', 'ValidationsPassing', 'InstallationCompleted', 'InstallationNotFailed', 'InstallationCompleted'],
    ['error', 'ClusterInstallationStopped', 'ValidationsPassing', 'InstallationFailed', 'InstallationFailed', 'InstallationFailed'],
    ['cancelled', 'ClusterInstallationStopped', 'ValidationsPassing', 'InstallationNotStarted', 'InstallationNotFailed', 'InstallationCancelled'],
  ])('cluster %s', (status, requirements, validated, completed, failed, stopped) => {
    const cs = clusterConditions(facts({ status }));
    expect([reason(cs, 'RequirementsMet'), reason(cs, 'Validated'), reason(cs, 'Completed'), reason(cs, 'Failed'), reason(cs, 'Stopped')]).toEqual([requirements, validated, completed, failed, stopped]);
    expect(reason(cs, 'SpecSynced')).toBe('SyncOK');
  });

  it('a ready cluster waits for enough ready agents, exactly the count asked, and every approval, in that order', () => {
    expect(reason(clusterConditions(facts({ agents: [{ approved: true, ready: true }] })), 'RequirementsMet')).toBe('InsufficientAgents');
    expect(reason(clusterConditions(facts({ agents: Array.from({ length: 6 }, () => ({ approved: true, ready: true })) })), 'RequirementsMet')).toBe('AdditionalAgents');
    const unapproved = clusterConditions(facts({ agents: [...Array.from({ length: 4 }, () => ({ approved: true, ready: true })), { approved: false, ready: true }] }));
    expect(unapproved.find((c) => c.type === 'RequirementsMet')).toMatchObject({ status: 'False', reason: 'UnapprovedAgents', message: 'The installation is pending on the approval of 1 agents' });
    expect(clusterMayInstall(facts({ agents: [...Array.from({ length: 4 }, () => ({ approved: true, ready: true })), { approved: false, ready: true }] }))).toBe(false);
    expect(clusterMayInstall(facts({}))).toBe(true);
  });

  it('never installs on hold, with a sync error, or from any status but ready', () => {
    expect(reason(clusterConditions(facts({ holdInstallation: true })), 'Completed')).toBe('InstallationOnHold');
    expect(clusterMayInstall(facts({ holdInstallation: true }))).toBe(false);
    expect(clusterMayInstall(facts({ syncError: { kind: 'InputError', message: 'x' } }))).toBe(false);
    for (const status of ['insufficient', 'preparing-for-installation', 'installing', 'installed', 'error']) expect(clusterMayInstall(facts({ status }))).toBe(false);
  });

  it('SpecSynced says whose fault a failure was, and reports drift without being an error', () => {
    expect(clusterConditions(facts({ syncError: { kind: 'InputError', message: 'bad vip' } }))[0]).toMatchObject({ status: 'False', reason: 'InputError', message: 'The Spec could not be synced due to an input error: bad vip' });
    expect(clusterConditions(facts({ syncError: { kind: 'BackendError', message: 'HTTP 500' } }))[0]).toMatchObject({ reason: 'BackendError' });
    expect(clusterConditions(facts({ drift: ['api_vips'] }))[0]).toMatchObject({ status: 'False', reason: 'ChangedOutsideOperator' });
    expect(reason(clusterConditions(facts({ status: undefined })), 'Validated')).toBe('ValidationsUnknown');
  });

  it('keeps lastTransitionTime while a condition keeps its status', () => {
    const a = mergeConditions(undefined, clusterConditions(facts({ status: 'insufficient' })), 't1');
    const b = mergeConditions(a, clusterConditions(facts({ status: 'ready' })), 't2');
    expect(b.find((c) => c.type === 'Failed')!.lastTransitionTime).toBe('t1');
    expect(b.find((c) => c.type === 'RequirementsMet')!.lastTransitionTime).toBe('t2'); // False → True: it flipped
  });
});

describe('Agent conditions', () => {
  const of = (status: string, approved = true) => Object.fromEntries(agentConditions({ status, statusInfo: 'info', approved, failingValidations: [], drift: [] }).map((c) => [c.type, `${c.status}/${c.reason}`]));
  it.each([
    ['known', false, 'False/AgentIsNotApproved', 'False/InstallationNotStarted', 'True/AgentIsConnected'],
    ['known', true, 'True/AgentIsReady', 'False/InstallationNotStarted', 'True/AgentIsConnected'],
    ['insufficient', true, 'False/AgentNotReady', 'False/InstallationNotStarted', 'True/AgentIsConnected'],
    ['disconnected', true, 'False/AgentNotReady', 'False/InstallationNotStarted', 'False/AgentIsDisconnected'],
    ['installing-in-progress', true, 'True/AgentAlreadyInstalling', 'False/InstallationInProgress', 'True/AgentIsConnected'],
    ['installed', true, 'True/AgentInstallationStopped', 'True/InstallationCompleted', 'True/AgentIsConnected'],
    ['error', true, 'True/AgentInstallationStopped', 'False/InstallationFailed', 'True/AgentIsConnected'],
  ])('host %s (approved %s)', (status, approved, requirements, installed, connected) => {
    const c = of(status, approved);
    expect([c.RequirementsMet, c.Installed, c.Connected]).toEqual([requirements, installed, connected]);
  });
});

describe('spec mapping', () => {
  const cd: any = { metadata: { name: 'edge', namespace: 'ns', uid: 'u-1' }, spec: { clusterName: 'edge', baseDomain: 'example.com', pullSecretRef: { name: 'ps' } } };
  const aci: any = { metadata: { name: 'edge', namespace: 'ns' }, spec: { imageSetRef: { name: 'img-1.31' }, provisionRequirements: { controlPlaneAgents: 3, workerAgents: 2 }, apiVIP: '10.0.0.5', ingressVIPs: ['10.0.0.6'], networking: { clusterNetwork: [{ cidr: '10.128.0.0/14', hostPrefix: 23 }], serviceNetwork: ['172.30.0.0/16'], machineNetwork: [{ cidr: '10.0.0.0/24' }] } } };

  it('maps ClusterDeployment + AgentClusterInstall to cluster params; an unknown release is the spec\'s error', () => {
    expect(clusterParams(cd, aci, '{}', ['1.31', '1.32'], '1.32')).toMatchObject({
      name: 'edge', openshift_version: '1.31', base_dns_domain: 'example.com', control_plane_count: 3,
      api_vips: [{ ip: '10.0.0.5' }], ingress_vips: [{ ip: '10.0.0.6' }],
      cluster_networks: [{ cidr: '10.128.0.0/14', host_prefix: 23 }], service_networks: [{ cidr: '172.30.0.0/16' }], machine_networks: [{ cidr: '10.0.0.0/24' }],
    });
    expect(() => clusterParams(cd, { ...aci, spec: { ...aci.spec, imageSetRef: { name: 'openshift-v4.14.0' } } }, '{}', ['1.31'], '1.31')).toThrow(SpecError);
    expect(() => clusterParams({ ...cd, spec: { ...cd.spec, baseDomain: undefined } }, aci, '{}', ['1.31'], '1.31')).toThrow(/baseDomain/);
  });

  it('drift lists what Landfall has that the spec did not ask for', () => {
    const want = clusterParams(cd, aci, '{}', ['1.31'], '1.31');
    expect(clusterDrift(want, { name: 'edge', base_dns_domain: 'example.com', control_plane_count: 3, api_vips: [{ ip: '10.0.0.5' }], ingress_vips: [{ ip: '10.0.0.6' }] })).toEqual([]);
    expect(clusterDrift(want, { name: 'edge', base_dns_domain: 'example.com', control_plane_count: 3, api_vips: [{ ip: '10.0.0.9' }], ingress_vips: [{ ip: '10.0.0.6' }] })).toEqual(['api_vips (Landfall "10.0.0.9", spec "10.0.0.5")']);
    expect(hostDrift({ host_role: 'worker' }, { role: 'master' })).toEqual(['role (Landfall "master", spec "worker")']);
  });

  it('NMStateConfigs chosen by label become static network config Landfall accepts', () => {
    const ie: any = { metadata: { name: 'ie', namespace: 'ns', uid: 'abcdef12-0000' }, spec: { nmStateConfigLabelSelector: { matchLabels: { c: 'edge' } } } };
    const n: any = { metadata: { name: 'h1', namespace: 'ns', labels: { c: 'edge' } }, spec: { config: { interfaces: [{ name: 'eth0', type: 'ethernet', state: 'up', ipv4: { enabled: true, address: [{ ip: '10.0.0.10', 'prefix-length': 24 }] } }] }, interfaces: [{ name: 'eth0', macAddress: '52:54:00:00:00:01' }] } };
    expect(selectsNmState(ie, n)).toBe(true);
    expect(selectsNmState(ie, { ...n, metadata: { ...n.metadata, labels: { c: 'other' } } })).toBe(false);
    const body = infraEnvParams(ie, '{}', 'cid', [n]);
    expect(body).toMatchObject({ name: 'ns-ie-abcdef12', cluster_id: 'cid', static_network_config: [{ mac_interface_map: [{ mac_address: '52:54:00:00:00:01', logical_nic_name: 'eth0' }] }] });
    expect(staticNetworkKeyfiles(body.static_network_config).length).toBeGreaterThan(0);
    // With a selector and none selected (the last one deleted or relabelled), an empty list clears it in Landfall.
    expect(infraEnvParams(ie, '{}', 'cid', []).static_network_config).toEqual([]);
    expect(infraEnvParams({ ...ie, spec: {} }, '{}', 'cid', []).static_network_config).toBeUndefined();
  });

  it('reads the pull secret of a dockerconfigjson Secret, and names what is missing', () => {
    expect(pullSecretOf({ metadata: { name: 'ps' }, data: { '.dockerconfigjson': Buffer.from('{"auths":{}}').toString('base64') } }, 'ns/ps')).toBe('{"auths":{}}');
    expect(() => pullSecretOf(undefined, 'ns/ps')).toThrow('pull secret ns/ps not found');
  });

  it('inventory in the reference Agent shape; spec digests ignore key order', () => {
    const inv = agentInventory(JSON.stringify({ hostname: 'h', cpu: { count: 4, model_name: 'x' }, interfaces: [{ mac_address: 'm', ipv4_addresses: ['1.2.3.4/24'] }], system_vendor: { product_name: 'p' } }));
    expect(inv).toEqual({ hostname: 'h', cpu: { count: 4, modelName: 'x' }, interfaces: [{ macAddress: 'm', ipV4Addresses: ['1.2.3.4/24'] }], systemVendor: { productName: 'p' } });
    expect(specHash({ a: 1, b: [1, { c: 2, d: 3 }] })).toBe(specHash({ b: [1, { d: 3, c: 2 }], a: 1 }));
  });
});

describe('WorkQueue', () => {
  it('runs a key once however often it was added, and again when added while running', async () => {
    const q = new WorkQueue();
    const runs: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const firstStarted = new Promise<void>((r) => (started = r));
    const until = async (cond: () => boolean) => {
      for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
    };
    const done = q.run(2, async (k) => {
      runs.push(k);
      if (runs.length === 1) {
        started();
        await gate;
      }
    });
    q.add('a');
    q.add('a'); // merged with the first: still pending, not yet taken? either way 'a' runs once now
    await firstStarted;
    q.add('a'); // while running: once more after
    q.add('b');
    await until(() => runs.includes('b'));
    expect(runs).toEqual(['a', 'b']);
    release();
    await until(() => runs.length === 3);
    q.stop();
    await done;
    expect(runs).toEqual(['a', 'b', 'a']);
  });
});

describe('loadKubeconfig', () => {
  it('reads the current context: server, inline CA, and a token file kept as a path (a rotated token is read again)', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'kubeconfig-'));
    writeFileSync(`${dir}/token`, 'tok-1\n');
    writeFileSync(
      `${dir}/config`,
      ['apiVersion: v1', 'kind: Config', 'current-context: b', 'contexts:', '- {name: a, context: {cluster: ca, user: ua}}', '- {name: b, context: {cluster: cb, user: ub}}',
        'clusters:', '- {name: ca, cluster: {server: "https://a:6443"}}', `- {name: cb, cluster: {server: "https://b:6443", certificate-authority-data: ${Buffer.from('PEM').toString('base64')}}}`,
        'users:', '- {name: ua, user: {token: x}}', '- {name: ub, user: {tokenFile: token}}'].join('\n'),
    );
    expect(loadKubeconfig(`${dir}/config`)).toMatchObject({ server: 'https://b:6443', caPem: 'PEM', tokenFile: `${dir}/token` });
  });
});
