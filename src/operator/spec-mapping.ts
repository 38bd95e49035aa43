/**
 * From custom resources to REST API bodies and back, without I/O: what a
 * ClusterDeployment + AgentClusterInstall, an InfraEnv (+ its NMStateConfigs)
 * and an Agent ask of Landfall, which of Landfall's current values differ from
 * that (drift), and a host's inventory in the Agent's status shape.
 */
import { createHash } from 'node:crypto';
import { stringify as toYaml } from 'yaml';
import type { KubeObject } from './kube-client';
import type { Json } from './landfall-client';

/** The resource asks for something Landfall cannot do; reported as SpecSynced=False/InputError. */
export class SpecError extends Error {}

/** A stable digest of what was applied: a new one means the resource changed since (so it is applied again). */
export function specHash(v: unknown): string {
  const sorted = (x: unknown): unknown =>
    Array.isArray(x) ? x.map(sorted) : x && typeof x === 'object' ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, sorted((x as Record<string, unknown>)[k])])) : x;
  return createHash('sha256').update(JSON.stringify(sorted(v))).digest('hex').slice(0, 16);
}

/** The pull secret from a Secret of type kubernetes.io/dockerconfigjson (key .dockerconfigjson). */
export function pullSecretOf(secret: KubeObject | undefined, ref: string): string {
  if (!secret) throw new SpecError(`pull secret ${ref} not found`);
  const b64 = secret.data?.['.dockerconfigjson'];
  if (!b64) throw new SpecError(`secret ${ref} has no .dockerconfigjson key`);
  return Buffer.from(b64, 'base64').toString('utf8');
}

/** The tag that finds the Landfall cluster of a ClusterDeployment again (after a crash between create and status write). */
export const clusterTag = (cdUid: string) => `k8s_${cdUid.replace(/-/g, '_')}`;

/** The Landfall name of an InfraEnv's infra-env: unique per resource (its uid), so it is found again by name. */
export const infraEnvName = (ie: KubeObject) => `${ie.metadata.namespace}-${ie.metadata.name}-${(ie.metadata.uid ?? '').slice(0, 8)}`;

const vipList = (many: unknown, one: unknown): string[] =>
  Array.isArray(many) && many.length ? many.map(String) : typeof one === 'string' && one ? [one] : [];

/** POST/PATCH /v2/clusters body from a ClusterDeployment and its AgentClusterInstall. */
export function clusterParams(cd: KubeObject, aci: KubeObject, pullSecret: string, versions: string[], defaultVersion: string): Json {
  const s = cd.spec ?? {};
  const a = aci.spec ?? {};
  if (!s.clusterName) throw new SpecError('spec.clusterName of the ClusterDeployment is required');
  if (!s.baseDomain) throw new SpecError('spec.baseDomain of the ClusterDeployment is required');
  const image = a.imageSetRef?.name as string | undefined;
  let version = defaultVersion;
  if (image) {
    const found = versions.find((v) => image === v || image.endsWith(`-${v}`) || image.endsWith(`-v${v}`));
    if (!found) throw new SpecError(`imageSetRef.name "${image}" names no Landfall release (known: ${versions.join(', ')}; a name may end with "-<release>")`);
    version = found;
  }
  const n = a.networking ?? {};
  const cp = a.provisionRequirements?.controlPlaneAgents ?? 3;
  const body: Json = {
    name: s.clusterName,
    openshift_version: version,
    pull_secret: pullSecret,
    base_dns_domain: s.baseDomain,
    control_plane_count: cp,
    api_vips: vipList(a.apiVIPs, a.apiVIP).map((ip) => ({ ip })),
    ingress_vips: vipList(a.ingressVIPs, a.ingressVIP).map((ip) => ({ ip })),
  };
  if (a.sshPublicKey) body.ssh_public_key = a.sshPublicKey;
  if (Array.isArray(n.clusterNetwork)) body.cluster_networks = n.clusterNetwork.map((c: Json) => ({ cidr: c.cidr, host_prefix: c.hostPrefix }));
  if (Array.isArray(n.serviceNetwork)) body.service_networks = n.serviceNetwork.map((c: Json) => ({ cidr: typeof c === 'string' ? c : c.cidr }));
  if (Array.isArray(n.machineNetwork)) body.machine_networks = n.machineNetwork.map((c: Json) => ({ cidr: c.cidr }));
  if (typeof n.userManagedNetworking === 'boolean') body.user_managed_networking = n.userManagedNetworking;
  return body;
}

/** The fields whose Landfall value no longer matches what the resources asked for, "field (Landfall X, spec Y)". */
export function clusterDrift(desired: Json, cluster: Json): string[] {
  const ips = (v: Json) => (Array.isArray(v) ? v.map((x: Json) => x.ip).sort().join(',') : '');
  const pairs: Array<[string, unknown, unknown]> = [
    ['name', cluster.name, desired.name],
    ['base_dns_domain', cluster.base_dns_domain, desired.base_dns_domain],
    ['api_vips', ips(cluster.api_vips), ips(desired.api_vips)],
    ['ingress_vips', ips(cluster.ingress_vips), ips(desired.ingress_vips)],
    ['control_plane_count', cluster.control_plane_count, desired.control_plane_count],
  ];
  if (desired.ssh_public_key !== undefined) pairs.push(['ssh_public_key', cluster.ssh_public_key, desired.ssh_public_key]);
  return pairs.filter(([, have, want]) => String(have ?? '') !== String(want ?? '')).map(([f, have, want]) => `${f} (Landfall "${String(have ?? '')}", spec "${String(want ?? '')}")`);
}

/** POST/PATCH /v2/infra-envs body from an InfraEnv and the NMStateConfigs its selector picks. */
export function infraEnvParams(ie: KubeObject, pullSecret: string, clusterId: string | undefined, nmStateConfigs: KubeObject[]): Json {
  const s = ie.spec ?? {};
  const body: Json = { name: infraEnvName(ie), pull_secret: pullSecret, image_type: s.imageType ?? 'full-iso' };
  if (clusterId) body.cluster_id = clusterId;
  if (s.sshAuthorizedKey) body.ssh_authorized_key = s.sshAuthorizedKey;
  if (s.cpuArchitecture) body.cpu_architecture = s.cpuArchitecture;
  if (Array.isArray(s.additionalNTPSources) && s.additionalNTPSources.length) body.additional_ntp_sources = s.additionalNTPSources.join(',');
  if (s.proxy) body.proxy = { http_proxy: s.proxy.httpProxy, https_proxy: s.proxy.httpsProxy, no_proxy: s.proxy.noProxy };
  if (Array.isArray(s.kernelArguments) && s.kernelArguments.length) body.kernel_arguments = s.kernelArguments.map((k: Json) => ({ operation: k.operation ?? 'append', value: k.value }));
  if (s.additionalTrustBundle) body.additional_trust_bundle = s.additionalTrustBundle;
  // With a selector, always sent: when the last selected NMStateConfig goes, the empty list clears what it set.
  if (nmStateConfigs.length || Object.keys(s.nmStateConfigLabelSelector?.matchLabels ?? {}).length) {
    body.static_network_config = [...nmStateConfigs]
      .sort((x, y) => x.metadata.name.localeCompare(y.metadata.name))
      .map((n) => ({
        network_yaml: toYaml(n.spec?.config ?? {}),
        mac_interface_map: (n.spec?.interfaces ?? []).map((i: Json) => ({ mac_address: i.macAddress, logical_nic_name: i.name })),
      }));
  }
  return body;
}

/** Does an NMStateConfig carry every label of the InfraEnv's nmStateConfigLabelSelector.matchLabels? */
export function selectsNmState(ie: KubeObject, n: KubeObject): boolean {
  const want = (ie.spec?.nmStateConfigLabelSelector?.matchLabels ?? {}) as Record<string, string>;
  const keys = Object.keys(want);
  return keys.length > 0 && n.metadata.namespace === ie.metadata.namespace && keys.every((k) => n.metadata.labels?.[k] === want[k]);
}

/** PATCH …/hosts/{id} body from an Agent's spec (only what it sets). */
export function hostParams(agent: KubeObject): Json {
  const s = agent.spec ?? {};
  const body: Json = {};
  if (s.role) body.host_role = s.role;
  if (s.hostname) body.host_name = s.hostname;
  if (s.installation_disk_id) body.disks_selected_config = [{ id: s.installation_disk_id, role: 'install' }];
  return body;
}

export function hostDrift(desired: Json, host: Json): string[] {
  const out: string[] = [];
  if (desired.host_role && host.role !== desired.host_role) out.push(`role (Landfall "${host.role}", spec "${desired.host_role}")`);
  if (desired.host_name && host.requested_hostname !== desired.host_name) out.push(`hostname (Landfall "${host.requested_hostname}", spec "${desired.host_name}")`);
  if (desired.disks_selected_config && host.installation_disk_id && host.installation_disk_id !== desired.disks_selected_config[0].id) out.push(`installation_disk_id (Landfall "${host.installation_disk_id}", spec "${desired.disks_selected_config[0].id}")`);
  return out;
}

const camel = (k: string) => k.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase()).replace(/^ipv([46])Addresses$/, 'ipV$1Addresses');

function camelDeep(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(camelDeep);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [camel(k), camelDeep(x)]));
  return v;
}

/** The host's inventory (the agent's JSON, snake_case) as the Agent's status.inventory (camelCase, as the reference). */
export function agentInventory(inventory: string | undefined): Json {
  if (!inventory) return undefined;
  try {
    const inv = JSON.parse(inventory) as Json;
    const out = camelDeep({
      hostname: inv.hostname,
      bmc_address: inv.bmc_address,
      system_vendor: inv.system_vendor,
      cpu: inv.cpu,
      memory: inv.memory,
      disks: inv.disks,
      interfaces: inv.interfaces,
      boot: inv.boot,
    }) as Json;
    return JSON.parse(JSON.stringify(out)) as Json; // drops undefined
  } catch {
    return undefined;
  }
}

/** "id: message" of every validation that is not passing, from a validations_info JSON string. */
export function failingValidations(validationsInfo: string | undefined): string[] {
  if (!validationsInfo) return [];
  try {
    const groups = JSON.parse(validationsInfo) as Record<string, Array<{ id: string; status: string; message: string }>>;
    return Object.values(groups)
      .flat()
      .filter((v) => v.status === 'failure' || v.status === 'pending')
      .map((v) => v.message || v.id);
  } catch {
    return [];
  }
}

export function parseJson(s: string | undefined): Json {
  if (!s) return undefined;
  try {
    return JSON.parse(s) as Json;
  } catch {
    return undefined;
  }
}
