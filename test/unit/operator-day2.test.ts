/**
 * The operator's day-2 decisions, pure: the conditions of a cluster adding
 * hosts (as the reference's ClusterDeployment controller writes them), the
 * import body of an installed ClusterDeployment, and which Agents' hosts are
 * installed. The whole path runs against a real kube-apiserver in
 * test/operator/day2.test.ts.
 */
import { clusterConditions, type ClusterFacts } from '../../src/operator/conditions';
import { day2HostsToInstall, findUntaggedImport, importParams, wantsImport } from '../../src/operator/day2';
import type { KubeObject } from '../../src/operator/kube-client';

const facts = (o: Partial<ClusterFacts>): ClusterFacts => ({ status: 'adding-hosts', statusInfo: 'cluster is adding hosts to existing OCP cluster', failingValidations: [], requiredAgents: 1, agents: [], holdInstallation: false, drift: [], ...o });
const reason = (type: string, o: Partial<ClusterFacts> = {}) => {
  const c = clusterConditions(facts(o)).find((x) => x.type === type)!;
  return `${c.status}/${c.reason}`;
};

describe('operator day 2', () => {
  it('a cluster adding hosts is installed on Completed and Stopped, requirements met, validations passing (the reference: clusterCompleted, clusterStopped, clusterRequirementsMet)', () => {
    expect(['SpecSynced', 'Validated', 'RequirementsMet', 'Completed', 'Failed', 'Stopped'].map((t) => reason(t))).toEqual([
      'True/SyncOK',
      'True/ValidationsPassing',
      'True/ClusterAlreadyInstalling',
      'True/InstallationCompleted',
      'False/InstallationNotFailed',
      'True/InstallationCompleted',
    ]);
    // Not the day-1 approval count: more Agents than the AgentClusterInstall asked for change nothing.
    expect(reason('RequirementsMet', { agents: Array.from({ length: 6 }, () => ({ approved: false, ready: true })) })).toBe('True/ClusterAlreadyInstalling');
  });

  const cd = (spec: Record<string, unknown>): KubeObject => ({ metadata: { name: 'prod', namespace: 'ns', uid: '0f6c3a4e-9a53-4c1e-8d3e-2b7f0c1d2e3f' }, spec });
  const aci = (spec: Record<string, unknown> = {}): KubeObject => ({ metadata: { name: 'prod', namespace: 'ns' }, spec });
  const desired = { name: 'prod', base_dns_domain: 'example.org', openshift_version: '1.31', tags: 'k8s_x' };

  it('imports an installed ClusterDeployment by its API name; the cluster id is the one the metadata gives, else the resource uid', () => {
    expect(wantsImport(cd({ installed: true }))).toBe(true);
    expect(wantsImport(cd({ installed: false }))).toBe(false);
    expect(wantsImport(cd({}))).toBe(false);
    expect(importParams(cd({ installed: true }), aci(), desired)).toEqual({ name: 'prod', api_vip_dnsname: 'api.prod.example.org', openshift_cluster_id: '0f6c3a4e-9a53-4c1e-8d3e-2b7f0c1d2e3f', openshift_version: '1.31' });
    const id = '7d0c8b2a-1111-4222-8333-444455556666';
    expect(importParams(cd({ installed: true }), aci({ clusterMetadata: { clusterID: id } }), desired).openshift_cluster_id).toBe(id);
    expect(importParams(cd({ installed: true, clusterMetadata: { clusterID: id } }), aci(), desired).openshift_cluster_id).toBe(id);
    // The reference's import example leaves clusterID empty: not an id.
    expect(importParams(cd({ installed: true, clusterMetadata: { clusterID: '' } }), aci(), desired).openshift_cluster_id).toBe('0f6c3a4e-9a53-4c1e-8d3e-2b7f0c1d2e3f');
  });

  it('finds an import a crash left untagged by its API name, never a tagged one or one it did not import', () => {
    const untagged = { id: 'a', imported: true, api_vip_dnsname: 'api.prod.example.org', tags: '' };
    expect(findUntaggedImport([untagged], cd({ installed: true }), aci(), desired)).toBe(untagged);
    expect(findUntaggedImport([{ ...untagged, tags: 'k8s_other' }], cd({ installed: true }), aci(), desired)).toBeUndefined();
    expect(findUntaggedImport([{ ...untagged, imported: undefined }], cd({ installed: true }), aci(), desired)).toBeUndefined();
    expect(findUntaggedImport([{ ...untagged, api_vip_dnsname: 'api.other.example.org' }], cd({ installed: true }), aci(), desired)).toBeUndefined();
  });

  it('installs the hosts of approved Agents that are known, and no other', () => {
    const agent = (name: string, approved: boolean, state: string): KubeObject => ({ metadata: { name, namespace: 'ns' }, spec: { approved }, status: { debugInfo: { state }, landfall: { infraEnvID: 'ie-1' } } });
    expect(day2HostsToInstall([agent('h1', true, 'known'), agent('h2', false, 'known'), agent('h3', true, 'insufficient'), agent('h4', true, 'installing'), agent('h5', true, 'installed')])).toEqual([{ infraEnvId: 'ie-1', hostId: 'h1' }]);
    // An Agent whose reconcile has not yet copied its host's infra-env waits for it.
    expect(day2HostsToInstall([{ metadata: { name: 'h6', namespace: 'ns' }, spec: { approved: true }, status: { debugInfo: { state: 'known' } } }])).toEqual([]);
  });
});
