/**
 * The custom resources the operator serves, one Landfall API group per group
 * of the Assisted Installer (agent-install.openshift.io → agent-install.landfall.io,
 * extensions.hive.openshift.io → extensions.hive.landfall.io, hive.openshift.io →
 * hive.landfall.io, metal3.io → metal3.landfall.io), so a ZTP manifest needs only its apiVersion changed.
 * Their CRDs are deploy/crds/*.yaml.
 */
import type { ResourceType } from './kube-client';

export const GROUP = {
  agentInstall: 'agent-install.landfall.io',
  hiveExtensions: 'extensions.hive.landfall.io',
  hive: 'hive.landfall.io',
  metal3: 'metal3.landfall.io',
} as const;

export const RT = {
  infraEnv: { group: GROUP.agentInstall, version: 'v1beta1', plural: 'infraenvs', kind: 'InfraEnv', namespaced: true },
  nmStateConfig: { group: GROUP.agentInstall, version: 'v1beta1', plural: 'nmstateconfigs', kind: 'NMStateConfig', namespaced: true },
  agent: { group: GROUP.agentInstall, version: 'v1beta1', plural: 'agents', kind: 'Agent', namespaced: true },
  agentClusterInstall: { group: GROUP.hiveExtensions, version: 'v1beta1', plural: 'agentclusterinstalls', kind: 'AgentClusterInstall', namespaced: true },
  clusterDeployment: { group: GROUP.hive, version: 'v1', plural: 'clusterdeployments', kind: 'ClusterDeployment', namespaced: true },
  bareMetalHost: { group: GROUP.metal3, version: 'v1alpha1', plural: 'baremetalhosts', kind: 'BareMetalHost', namespaced: true },
  secret: { group: '', version: 'v1', plural: 'secrets', kind: 'Secret', namespaced: true },
  namespace: { group: '', version: 'v1', plural: 'namespaces', kind: 'Namespace', namespaced: false },
  crd: { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', kind: 'CustomResourceDefinition', namespaced: false },
} as const satisfies Record<string, ResourceType>;

/** Finalizers: the Landfall resource behind the custom resource is deleted before the custom resource goes. */
export const FINALIZER = {
  clusterDeployment: 'clusterdeployments.hive.landfall.io/deprovision',
  infraEnv: 'infraenvs.agent-install.landfall.io/deprovision',
  agent: 'agents.agent-install.landfall.io/deregister',
  bareMetalHost: 'baremetalhosts.metal3.landfall.io/unenroll',
} as const;

/** The label that ties an Agent to its InfraEnv (the reference's infraenvs.agent-install.openshift.io). */
export const INFRAENV_LABEL = 'infraenvs.agent-install.landfall.io';

export const key = (o: { metadata: { namespace?: string; name: string } }) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
