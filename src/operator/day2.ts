/**
 * Day 2 through the resources: growing an installed cluster by approving
 * Agents, as the reference's ClusterDeployment controller does it (its
 * createNewDay2Cluster, TransformClusterToDay2 and installDay2Hosts):
 * - a ClusterDeployment that says `spec.installed: true` and has no Landfall
 *   cluster is an existing cluster to grow: it is imported
 *   (POST /v2/clusters/import, API name api.<clusterName>.<baseDomain>);
 * - a cluster the operator installed accepts new hosts once its credentials
 *   are published and its ClusterDeployment says installed
 *   (POST …/actions/allow-add-workers), so the same InfraEnv boots new hosts;
 * - while the cluster is adding hosts, every Agent of the ClusterDeployment
 *   that is approved and whose host is `known` is installed on its own
 *   (POST /v2/infra-envs/{ie}/hosts/{id}/actions/install). Approval is the
 *   gate, as for the first install.
 * Decided from what is observed: the import is found again by its tag (set
 * right after it) or, after a crash in between, by its API name; Landfall's
 * compare-and-swap refuses a second install of a host (409), so a repeated
 * reconcile starts nothing twice.
 */
import type { KubeObject } from './kube-client';
import { LandfallError, type Json } from './landfall-client';
import type { OperatorContext } from './context';

export const ADD_HOSTS_CLUSTER = 'AddHostsCluster';

/** A Landfall cluster that accepts new hosts (imported, or opened after its install). */
export const isDay2Cluster = (c: Json | undefined): boolean => c?.kind === ADD_HOSTS_CLUSTER;

/** The reference imports a ClusterDeployment it finds already installed instead of creating it. */
export const wantsImport = (cd: KubeObject): boolean => cd.spec?.installed === true;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * POST /v2/clusters/import body from what the resources ask (`desired`, the
 * day-1 body clusterParams made: name, base domain, release). The cluster's id
 * is the AgentClusterInstall's (or ClusterDeployment's) clusterMetadata.clusterID
 * when it is one; the reference lets it be empty, Landfall's API wants one, so
 * the ClusterDeployment's uid stands in.
 */
export function importParams(cd: KubeObject, aci: KubeObject, desired: Json): Json {
  const given = [aci.spec?.clusterMetadata?.clusterID, cd.spec?.clusterMetadata?.clusterID].find((v) => typeof v === 'string' && UUID.test(v));
  return {
    name: desired.name,
    api_vip_dnsname: `api.${desired.name}.${desired.base_dns_domain}`,
    openshift_cluster_id: given ?? cd.metadata.uid,
    openshift_version: desired.openshift_version,
  };
}

/** An imported cluster left untagged by a crash between the import and its tag: the one with this API name. */
export function findUntaggedImport(clusters: Json[], cd: KubeObject, aci: KubeObject, desired: Json): Json | undefined {
  const want = importParams(cd, aci, desired).api_vip_dnsname;
  return clusters.find((c) => c.imported === true && c.api_vip_dnsname === want && !String(c.tags ?? '').trim());
}

/** Imports the ClusterDeployment's cluster and tags it (so it is found again), with the machine networks the resources name. */
export async function importCluster(ctx: OperatorContext, cd: KubeObject, aci: KubeObject, desired: Json): Promise<Json> {
  const found = findUntaggedImport(await ctx.landfall.listClusters(), cd, aci, desired);
  const imported = found ?? (await ctx.landfall.request('POST', '/clusters/import', importParams(cd, aci, desired)));
  // Machine networks let Landfall check new hosts against the running nodes (belongs-to-machine-cidr, reaches-cluster-nodes).
  return ctx.landfall.updateCluster(imported.id, { tags: desired.tags, ...(desired.machine_networks ? { machine_networks: desired.machine_networks } : {}) });
}

/** installed → adding-hosts; a 400 means it is not installed (any more): what Landfall says now is returned. */
export async function openForNewHosts(ctx: OperatorContext, cluster: Json): Promise<Json> {
  try {
    const opened = await ctx.landfall.request('POST', `/clusters/${cluster.id}/actions/allow-add-workers`);
    ctx.log.info({ clusterId: cluster.id }, 'cluster accepts new hosts');
    return opened;
  } catch (err) {
    if (!(err instanceof LandfallError && err.status === 400)) throw err;
    return ctx.landfall.getCluster(cluster.id);
  }
}

/** The Agents whose hosts may be installed now: approved, and known as their last reconcile copied it. */
export function day2HostsToInstall(agents: KubeObject[]): Array<{ infraEnvId: string; hostId: string }> {
  return agents
    .filter((a) => a.spec?.approved === true && a.status?.debugInfo?.state === 'known' && a.status?.landfall?.infraEnvID)
    .map((a) => ({ infraEnvId: a.status.landfall.infraEnvID as string, hostId: a.metadata.name }));
}

/** Installs each approved, known host of an adding-hosts cluster; a 409 (installing already, or no longer known) is not an error. */
export async function installApprovedHosts(ctx: OperatorContext, cluster: Json, agents: KubeObject[]): Promise<void> {
  for (const { infraEnvId, hostId } of day2HostsToInstall(agents)) {
    try {
      await ctx.landfall.request('POST', `/infra-envs/${infraEnvId}/hosts/${hostId}/actions/install`);
      ctx.log.info({ clusterId: cluster.id, hostId }, 'day-2 host installation started');
    } catch (err) {
      if (!(err instanceof LandfallError && err.status === 409)) throw err;
    }
  }
}
