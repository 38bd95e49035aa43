/** Rows → facts for the pure lifecycle code. The only place that parses stored agent reports. */
import type { Inventory } from '../../agent/types';
import type { ClusterRow, HostRow } from '../db/rows';
import type { ReleaseCatalogue } from '../domain/releases';
import { parseJson, type ClusterFacts, type ConnectivityReport, type HostFacts } from '../domain/lifecycle/facts';

type Json = Record<string, unknown>;

/** Parsed agent reports by the exact text stored: a refresh re-parses only what changed. */
const parsed = new Map<string, unknown>();
function parseCached<T>(text: string | null | undefined): T | undefined {
  if (!text) return undefined;
  if (parsed.has(text)) return parsed.get(text) as T | undefined;
  const v = parseJson<T>(text);
  if (parsed.size > 2_000) parsed.clear();
  parsed.set(text, v);
  return v;
}

/**
 * One host's parsed reports, each with the text it was parsed from, kept by
 * the caller as long as it keeps the host (the refresher's cache of its
 * hosts): a report is parsed again only when its text changed. The shared
 * text-keyed cache above is bounded for every other caller and, with more
 * hosts than its bound, re-parsed every inventory of a cluster at each
 * refresh.
 */
export type ReportMemo = Map<string, { text: string; value: unknown }>;

function parseReport<T>(memo: ReportMemo | undefined, field: string, text: string | null | undefined): T | undefined {
  if (!memo) return parseCached<T>(text);
  if (!text) return undefined;
  const m = memo.get(field);
  // The same string object again costs nothing; a re-read equal text, one comparison.
  if (m && m.text === text) return m.value as T;
  const value = parseJson<T>(text);
  memo.set(field, { text, value });
  return value;
}

/** The free addresses a host reported, per network (the free-network-addresses step). */
export function freeAddresses(h: HostRow, memo?: ReportMemo): Array<{ network: string; free_addresses: string[] }> {
  const v = parseReport<Array<{ network: string; free_addresses: string[] }>>(memo, 'free_addresses', (h.doc as Json).free_addresses as string | undefined);
  return Array.isArray(v) ? v : [];
}

export function hostFacts(h: HostRow, nowMs: number, memo?: ReportMemo): HostFacts {
  const d = h.doc as Json;
  const inventory = parseReport<Inventory>(memo, 'inventory', h.inventory);
  const disks = parseReport<{ io_sync_duration?: number }>(memo, 'disks_info', d.disks_info as string | undefined);
  const checkedIn = h.checked_in_at ? new Date(h.checked_in_at).getTime() : undefined;
  return {
    id: h.id,
    status: h.status,
    day2: d.kind === 'AddToExistingClusterHost',
    role: h.role,
    suggestedRole: h.suggested_role,
    bootstrap: h.bootstrap,
    hostname: h.requested_hostname ?? inventory?.hostname,
    requestedHostname: h.requested_hostname ?? undefined,
    inventory,
    connectivity: parseReport<ConnectivityReport>(memo, 'connectivity', d.connectivity as string | undefined),
    ntpSources: parseReport(memo, 'ntp_sources', d.ntp_sources as string | undefined),
    imagesStatus: parseReport<{ images?: Array<{ name: string; result: string }> }>(memo, 'images_status', d.images_status as string | undefined)?.images ?? undefined,
    diskSyncMs: typeof disks?.io_sync_duration === 'number' ? disks.io_sync_duration : undefined,
    installationDiskId: d.installation_disk_id as string | undefined,
    sinceCheckInMs: checkedIn === undefined ? undefined : Math.max(0, nowMs - checkedIn),
    // The agent's clock at its last poll, against the service's clock at the same moment.
    agentTimestampS: h.agent_timestamp !== null ? Number(h.agent_timestamp) : undefined,
    serviceTimestampS: checkedIn === undefined ? undefined : Math.floor(checkedIn / 1000),
  };
}

export function clusterFacts(c: ClusterRow, hosts: HostFacts[], releases?: ReleaseCatalogue): ClusterFacts {
  const d = c.doc as Json;
  const list = <T>(k: string) => ((d[k] as T[] | undefined) ?? []);
  return {
    id: c.id,
    name: c.name,
    status: c.status,
    baseDnsDomain: (d.base_dns_domain as string | undefined) || undefined,
    pullSecretSet: Boolean(c.pull_secret),
    controlPlaneCount: (d.control_plane_count as number | undefined) ?? 3,
    userManagedNetworking: Boolean(d.user_managed_networking),
    machineNetworks: list<{ cidr: string }>('machine_networks').map((n) => n.cidr),
    clusterNetworks: list<{ cidr: string; host_prefix: number }>('cluster_networks').map((n) => ({ cidr: n.cidr, hostPrefix: n.host_prefix })),
    serviceNetworks: list<{ cidr: string }>('service_networks').map((n) => n.cidr),
    apiVips: list<{ ip: string }>('api_vips').map((v) => v.ip),
    ingressVips: list<{ ip: string }>('ingress_vips').map((v) => v.ip),
    networkType: d.network_type as string | undefined,
    day2: d.kind === 'AddHostsCluster',
    release: { version: c.openshift_version, cpuArchitectures: releases?.[c.openshift_version]?.cpu_architectures },
    hosts,
  };
}
