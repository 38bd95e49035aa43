/**
 * Turns cluster create/update params (already schema-checked at the edge) into
 * stored fields, applying the semantic rules a schema cannot express. Every
 * rejection names the field and the rule.
 */
import { badRequest } from '../errors';
import {
  baseDomainProblem,
  cidrProblem,
  cidrsOverlap,
  clusterNameProblem,
  ipInCidr,
  ipProblem,
  pullSecretProblem,
  sshKeyProblem,
} from '../domain/input-rules';
import { resolveRelease, type ReleaseCatalogue } from '../domain/releases';

type Json = Record<string, unknown>;

export const DEFAULT_CLUSTER_NETWORK = { cidr: '10.128.0.0/14', host_prefix: 23 };
export const DEFAULT_SERVICE_NETWORK = { cidr: '172.30.0.0/16' };

function check(field: string, problem: string | undefined): void {
  if (problem) throw badRequest(`${field}: ${problem}`, { field });
}

/** Fields copied into the stored document as they are (after the checks below). */
const PASSTHROUGH = [
  'base_dns_domain',
  'ssh_public_key',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'additional_ntp_source',
  'hyperthreading',
  'network_type',
  'user_managed_networking',
  'vip_dhcp_allocation',
  'schedulable_masters',
  'tags',
  'cpu_architecture',
  'platform',
] as const;

export interface ClusterFields {
  name?: string;
  openshift_version?: string;
  pull_secret?: string;
  doc: Json;
}

export function normalizeClusterInput(input: Json, existingDoc: Json, releases: ReleaseCatalogue, clusterId: string, creating: boolean): ClusterFields {
  let body = input;
  const out: ClusterFields = { doc: { ...existingDoc } };
  const has = (k: string) => body[k] !== undefined && body[k] !== null;

  if (has('name')) {
    check('name', clusterNameProblem(body.name as string));
    out.name = body.name as string;
  }
  if (has('openshift_version')) {
    const r = resolveRelease(releases, body.openshift_version as string);
    if (!r) throw badRequest(`openshift_version: "${body.openshift_version}" is not a release Landfall installs (known: ${Object.keys(releases).join(', ')})`, { field: 'openshift_version' });
    out.openshift_version = r;
  }
  if (has('pull_secret')) {
    check('pull_secret', pullSecretProblem(body.pull_secret as string));
    out.pull_secret = body.pull_secret as string;
  }
  if (has('base_dns_domain')) check('base_dns_domain', baseDomainProblem(body.base_dns_domain as string));
  if (has('ssh_public_key') && body.ssh_public_key !== '') check('ssh_public_key', sshKeyProblem(body.ssh_public_key as string));
  // Landfall installs no disk encryption (Tang/TPM is not in scope yet): asking for it is refused, never silently dropped.
  if (has('disk_encryption')) {
    const enableOn = (body.disk_encryption as Json).enable_on;
    if (enableOn !== undefined && enableOn !== 'none') throw badRequest(`disk_encryption.enable_on: "${String(enableOn)}" is not supported; Landfall does not encrypt installation disks (only "none")`, { field: 'disk_encryption.enable_on' });
  }
  // null means "not given", as for assisted-service: storing it would put a null the response schema refuses on every later GET.
  for (const k of PASSTHROUGH) if (has(k)) out.doc[k] = body[k];

  // Topology: high_availability_mode None means a single node; control_plane_count wins when both are given.
  if (has('high_availability_mode') || has('control_plane_count') || creating) {
    let ha = (body.high_availability_mode as string | undefined) ?? (existingDoc.high_availability_mode as string | undefined) ?? 'Full';
    let cp = (body.control_plane_count as number | undefined) ?? (has('high_availability_mode') ? undefined : (existingDoc.control_plane_count as number | undefined));
    if (cp === undefined) cp = ha === 'None' ? 1 : 3;
    if (has('control_plane_count')) ha = cp === 1 ? 'None' : 'Full';
    if (ha === 'None' && cp !== 1) throw badRequest('control_plane_count: must be 1 when high_availability_mode is None', { field: 'control_plane_count' });
    if (![1, 2, 3, 4, 5].includes(cp)) throw badRequest('control_plane_count: must be 1 to 5', { field: 'control_plane_count' });
    out.doc.high_availability_mode = ha;
    out.doc.control_plane_count = cp;
  }
  // A single node has no VIPs to manage: assisted-service makes it user-managed networking unless told otherwise.
  if (creating) out.doc.user_managed_networking ??= out.doc.control_plane_count === 1;

  const nets = (key: string, withPrefix: boolean) => {
    if (!has(key)) return;
    const list = body[key] as Json[];
    list.forEach((n, i) => {
      check(`${key}[${i}].cidr`, cidrProblem(String(n.cidr)));
      if (withPrefix && n.host_prefix !== undefined) {
        const bits = String(n.cidr).includes(':') ? 128 : 32;
        const prefix = Number(String(n.cidr).split('/')[1]);
        const hp = Number(n.host_prefix);
        if (!(hp > prefix && hp <= bits)) throw badRequest(`${key}[${i}].host_prefix: must be longer than the network prefix /${prefix} and at most /${bits}`, { field: `${key}[${i}].host_prefix` });
      }
    });
    out.doc[key] = list.map((n) => ({ cluster_id: clusterId, cidr: n.cidr, ...(withPrefix ? { host_prefix: n.host_prefix ?? 23 } : {}) }));
  };
  // The deprecated single-network fields still arrive from older clients; they mean a one-element list.
  if (!has('cluster_networks') && has('cluster_network_cidr') && (creating || body.cluster_network_cidr !== DEFAULT_CLUSTER_NETWORK.cidr)) {
    body = { ...body, cluster_networks: [{ cidr: body.cluster_network_cidr, host_prefix: body.cluster_network_host_prefix ?? DEFAULT_CLUSTER_NETWORK.host_prefix }] };
  }
  if (!has('service_networks') && has('service_network_cidr') && (creating || body.service_network_cidr !== DEFAULT_SERVICE_NETWORK.cidr)) {
    body = { ...body, service_networks: [{ cidr: body.service_network_cidr }] };
  }
  nets('cluster_networks', true);
  nets('service_networks', false);
  nets('machine_networks', false);
  if (creating) {
    out.doc.cluster_networks ??= [{ cluster_id: clusterId, ...DEFAULT_CLUSTER_NETWORK }];
    out.doc.service_networks ??= [{ cluster_id: clusterId, ...DEFAULT_SERVICE_NETWORK }];
    out.doc.machine_networks ??= [];
  }

  for (const key of ['api_vips', 'ingress_vips'] as const) {
    if (!has(key)) continue;
    const list = body[key] as Json[];
    list.forEach((v, i) => check(`${key}[${i}].ip`, ipProblem(String(v.ip))));
    out.doc[key] = list.map((v) => ({ cluster_id: clusterId, ip: v.ip }));
  }
  if (creating) {
    out.doc.api_vips ??= [];
    out.doc.ingress_vips ??= [];
  }

  // Cross-field rules on the resulting configuration.
  const doc = out.doc;
  const machine = (doc.machine_networks as Json[] | undefined) ?? [];
  for (const key of ['api_vips', 'ingress_vips'] as const) {
    const vips = (doc[key] as Json[] | undefined) ?? [];
    vips.forEach((v, i) => {
      if (machine.length && !machine.some((m) => ipInCidr(String(v.ip), String(m.cidr)))) {
        throw badRequest(`${key}[${i}].ip: ${v.ip} is not inside any machine network (${machine.map((m) => m.cidr).join(', ')})`, { field: `${key}[${i}].ip` });
      }
    });
  }
  const api = ((doc.api_vips as Json[] | undefined) ?? []).map((v) => v.ip);
  const ingress = ((doc.ingress_vips as Json[] | undefined) ?? []).map((v) => v.ip);
  const clash = api.find((ip) => ingress.includes(ip));
  if (clash) throw badRequest(`ingress_vips: ${clash} is also an API VIP; they must differ`, { field: 'ingress_vips' });
  const all = [
    ...((doc.cluster_networks as Json[] | undefined) ?? []).map((n) => ['cluster_networks', String(n.cidr)] as const),
    ...((doc.service_networks as Json[] | undefined) ?? []).map((n) => ['service_networks', String(n.cidr)] as const),
    ...machine.map((n) => ['machine_networks', String(n.cidr)] as const),
  ];
  for (let i = 0; i < all.length; i++) {
    for (let j = i + 1; j < all.length; j++) {
      if (all[i]![0] !== all[j]![0] && cidrsOverlap(all[i]![1], all[j]![1])) {
        throw badRequest(`${all[j]![0]}: ${all[j]![1]} overlaps ${all[i]![0]} ${all[i]![1]}`, { field: all[j]![0] });
      }
    }
  }
  return out;
}
