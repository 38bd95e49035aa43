/** Rows → facts for the pure lifecycle code. The only place that parses stored agent reports. */
import { excusedSilenceMs, type ShedEpisode } from '../domain/lifecycle/silence';
import { createHash } from 'node:crypto';
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
 * One host's parsed reports, kept by the caller as long as it keeps the host
 * (the refresher's copy of its hosts), each with a digest of the text it was
 * parsed from: a report is parsed again only when its text changed, and the
 * text itself is not kept (keepReports). The shared text-keyed cache above is
 * bounded for every other caller and, with more hosts than its bound,
 * re-parsed every inventory of a cluster at each refresh.
 */
export type ReportMemo = Map<string, { digest: string; value: unknown }>;

/** The doc fields holding an agent's report as text that a refresh reads, parsed (hostFacts, freeAddresses). */
const PARSED_REPORTS = ['connectivity', 'free_addresses', 'ntp_sources', 'disks_info', 'images_status'] as const;
/** Reports stored on the host that no refresh reads (the API serves them as stored). */
const UNREAD_REPORTS = ['domain_name_resolutions', 'tang_connectivity', 'api_vip_connectivity'] as const;

const digestOf = (text: string) => createHash('sha1').update(text).digest('base64url');

/**
 * Takes a host's reports (its inventory and the doc's report fields) into
 * `memo`, parsing only those whose text changed, and returns the doc without
 * them: what a refresher keeps of a host. The texts were most of what it
 * kept (an 11 KB inventory, a connectivity report of ~400 bytes per peer),
 * each beside its own parse; with `memo` given, hostFacts and freeAddresses
 * read the reports from it alone.
 */
export function keepReports(inventory: string | null, doc: Json, memo: ReportMemo): Json {
  const slim: Json = { ...doc };
  const take = (field: string, text: unknown) => {
    if (typeof text !== 'string' || text === '') {
      memo.delete(field);
      return;
    }
    const digest = digestOf(text);
    if (memo.get(field)?.digest !== digest) memo.set(field, { digest, value: parseJson(text) });
  };
  take('inventory', inventory);
  for (const f of PARSED_REPORTS) {
    take(f, doc[f]);
    delete slim[f];
  }
  for (const f of UNREAD_REPORTS) delete slim[f];
  return slim;
}

/** A report the caller wrote itself (the service's disk decisions in the inventory), as keepReports would take it. */
export function rememberReport(memo: ReportMemo, field: string, text: string, value: unknown): void {
  memo.set(field, { digest: digestOf(text), value });
}

function report<T>(h: HostRow, field: string, memo: ReportMemo | undefined): T | undefined {
  if (memo) return memo.get(field)?.value as T | undefined;
  return parseCached<T>(field === 'inventory' ? h.inventory : ((h.doc as Json)[field] as string | undefined));
}

/** The free addresses a host reported, per network (the free-network-addresses step). */
export function freeAddresses(h: HostRow, memo?: ReportMemo): Array<{ network: string; free_addresses: string[] }> {
  const v = report<Array<{ network: string; free_addresses: string[] }>>(h, 'free_addresses', memo);
  return Array.isArray(v) ? v : [];
}

/**
 * A host's facts; with `memo`, its reports are the memo's (keepReports), not
 * the row's. `shedding`: the service's latest episode of turning agents away
 * or running late, whose share of the host's silence is not the host's
 * (silence.ts).
 */
export function hostFacts(h: HostRow, nowMs: number, memo?: ReportMemo, shedding?: ShedEpisode): HostFacts {
  const d = h.doc as Json;
  const inventory = report<Inventory>(h, 'inventory', memo);
  const disks = report<{ io_sync_duration?: number }>(h, 'disks_info', memo);
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
    connectivity: report<ConnectivityReport>(h, 'connectivity', memo),
    ntpSources: report(h, 'ntp_sources', memo),
    imagesStatus: report<{ images?: Array<{ name: string; result: string }> }>(h, 'images_status', memo)?.images ?? undefined,
    diskSyncMs: typeof disks?.io_sync_duration === 'number' ? disks.io_sync_duration : undefined,
    installationDiskId: d.installation_disk_id as string | undefined,
    sinceCheckInMs: checkedIn === undefined ? undefined : Math.max(0, nowMs - checkedIn),
    excusedSilenceMs: checkedIn === undefined ? 0 : excusedSilenceMs(checkedIn, nowMs, shedding),
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
