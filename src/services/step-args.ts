/**
 * Arguments of the steps handed out on a poll (reference §6). The poll is the
 * hot path, so what every host of a cluster needs (its peers' addresses) is
 * kept per cluster in this process instead of loaded on every poll of every
 * host. It is a cache whose loss changes no answer: each use compares the
 * cluster's step-view stamp, which the refresh writes when anything the view
 * is built from changed and the poll's check-in returns with the host's status
 * (no query of its own), so every API process hands out the same arguments as
 * soon as the refresh that follows a change committed.
 */
import { createHash } from 'node:crypto';
import type { ClusterRow, HostRow } from '../db/rows';
import { parseJson } from '../domain/lifecycle/facts';
import { networkOf } from '../domain/lifecycle/network';
import type { Inventory } from '../../agent/types';
import type { ServiceContext } from './context';
import { DEFAULT_INSTALL_IMAGES } from '../install/install-request';

interface ClusterView {
  fingerprint: string;
  name: string;
  baseDomain?: string;
  ntp: string;
  machineNetworks: string[];
  peers: Array<{ host_id: string; nics: Array<{ name: string; mac: string; ip_addresses: string[] }> }>;
  /**
   * The connectivity check's parts, made once per view on first use: each
   * peer's JSON (undefined for a peer without IPv4 NICs) and a digest of them
   * all. A host's arguments are its peers' parts joined, built only when the
   * step goes out; what the poll compares is the digest. Per host, the
   * arguments were kept whole before: ~6.7 KB a host, all of its cluster's
   * peers again, which made a process's memory grow with the square of the
   * cluster (114 of a serving process's 189 MB heap at 20,000 hosts).
   */
  connectivity?: { digest: string; parts: Array<string | undefined>; count: number };
  /** The peers by host id with their place in `peers` (a poll looks itself up for several step types). */
  byId: Map<string, { peer: ClusterView['peers'][number]; index: number }>;
  /**
   * Arguments every host of the view gets alike (NTP, DNS, free addresses of
   * its machine networks), by step type: one array per view, so their
   * digests are memoised too (step-cadence.ts) instead of hashed per poll.
   */
  shared: Map<string, string[] | undefined>;
  /** Per host without machine networks, its own free-network-addresses arguments (one array per view, digest memoised too). */
  ownFree: Map<string, string[] | undefined>;
}

/** Above this many peers a host probes a rotating sample (AS admits at most 150 connectivity steps a minute past 150 hosts). */
const MAX_PEERS = 150;
const cache = new Map<string, ClusterView>();

async function clusterView(ctx: ServiceContext, clusterId: string, viewStamp: string | null | undefined): Promise<ClusterView | undefined> {
  let fingerprint = viewStamp ? `s:${viewStamp}` : undefined;
  if (!fingerprint) {
    // A cluster no refresh has stamped yet: a fingerprint of its rows (any change moves updated_at, a host leaving the count).
    const stamp = (await ctx.db.raw(
      // As text: microseconds, which a JavaScript Date would round away.
      `select (select updated_at::text from clusters where id = ?) as c, max(updated_at)::text as h, count(*)::text as n from hosts where cluster_id = ?`,
      [clusterId, clusterId],
    )) as { rows: Array<{ c: string | null; h: string | null; n: string }> };
    const s = stamp.rows[0]!;
    if (!s.c) return undefined;
    fingerprint = `f:${s.c}/${s.h ?? ''}/${s.n}`;
  }
  const hit = cache.get(clusterId);
  if (hit?.fingerprint === fingerprint) return hit;
  // With a stamp, the cluster comes with the view the refresh stored under it: one row, not every host's inventory.
  const stored = viewStamp ? await ctx.repos.clusters.getWithStepView(clusterId, viewStamp) : { cluster: await ctx.repos.clusters.get(clusterId), peers: null };
  if (!stored?.cluster) return undefined;
  let peers = stored.peers ? (JSON.parse(stored.peers) as ClusterView['peers']) : undefined;
  if (!peers) {
    const hosts = await ctx.db<HostRow>('hosts').where({ cluster_id: clusterId }).whereNotNull('inventory').select('id', 'inventory');
    peers = stepViewPeers(hosts.map((h) => ({ id: h.id, interfaces: parseJson<Inventory>(h.inventory)?.interfaces ?? [] })));
  }
  const view = buildClusterView(fingerprint, stored.cluster, peers);
  cache.set(clusterId, view);
  if (cache.size > 10000) cache.delete(cache.keys().next().value!);
  return view;
}

/** Whether this process holds the cluster's view at that stamp (a poll planned before its check-in uses no other). */
export function viewCached(clusterId: string, viewStamp: string): boolean {
  return cache.get(clusterId)?.fingerprint === `s:${viewStamp}`;
}

/**
 * The peers of a cluster's view: every host with an inventory, by id, with
 * its NICs that have IPv4 addresses. Built from the rows, in whatever order
 * the database returned them, or by the refresh from its facts
 * (refresh-service.ts, stored with the stamp). The peer list is the
 * connectivity step's argument, and a step whose argument changed goes out
 * again at once: sorted here, so a list that reordered with every row update
 * never looks changed (it did, when it came unordered from the query: every
 * reply re-sent the check to every peer).
 */
export function stepViewPeers(hosts: Array<{ id: string; interfaces: Array<{ name: string; mac_address: string; ipv4_addresses?: string[] }> }>): ClusterView['peers'] {
  return [...hosts]
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((h) => ({ host_id: h.id, nics: h.interfaces.filter((i) => i.ipv4_addresses?.length).map((i) => ({ name: i.name, mac: i.mac_address, ip_addresses: i.ipv4_addresses! })) }));
}

export function buildClusterView(fingerprint: string, cluster: Pick<ClusterRow, 'name' | 'doc'>, peers: ClusterView['peers']): ClusterView {
  const d = cluster.doc as Record<string, unknown>;
  return {
    fingerprint,
    name: cluster.name,
    baseDomain: (d.base_dns_domain as string | undefined) || undefined,
    ntp: (d.additional_ntp_source as string | undefined) ?? '',
    machineNetworks: ((d.machine_networks as Array<{ cidr: string }> | undefined) ?? []).map((n) => n.cidr),
    peers,
    byId: new Map(),
    shared: new Map(),
    ownFree: new Map(),
  };
}

function sharedArgs(view: ClusterView | undefined, type: string, build: () => string[] | undefined): string[] | undefined {
  if (!view) return build();
  if (!view.shared.has(type)) view.shared.set(type, build());
  return view.shared.get(type);
}

/**
 * The poll knows only the host's id and cluster; the row (with its ~10 KB
 * inventory) is loaded only when a step needs what the cluster view lacks.
 */
export interface PollingHost {
  id: string;
  cluster_id: string | null;
  /** The cluster's step-view stamp, as the check-in returned it. */
  view_stamp?: string | null;
  row(): Promise<HostRow | undefined>;
}

/** Only small networks are swept (a /24 at most), so a host never probes thousands of addresses. */
function smallNetworks(nets: string[]): string[] | undefined {
  const small = nets.filter((n) => Number(n.split('/')[1]) >= 24 && n.includes('.'));
  return small.length ? [JSON.stringify(small)] : undefined;
}

/**
 * The inventory step's arguments by host: the same array for a host's every
 * poll, so its digest (step-cadence.ts) is made once, not per poll. Its
 * content is the host's id alone: losing an entry changes no answer.
 */
const inventoryArgs = new Map<string, string[]>();
const INVENTORY_ARGS_HOSTS = 100_000;

/**
 * Arguments known by their digest before they are built: a poll that finds
 * the step not due (most of them) never builds them.
 */
export interface DeferredArgs {
  digest: string;
  build(): string[];
}

/**
 * Each peer's part of the connectivity check's arguments, and their digest.
 * Bare addresses: the upstream agent validates ip_addresses as IPs and
 * refuses the inventory's CIDR form. The digest covers every peer, the host
 * itself too: a host whose own NICs changed is asked again at once, which
 * it was not when the digest was of its arguments alone (they leave it out).
 */
function connectivityParts(peers: ClusterView['peers']): NonNullable<ClusterView['connectivity']> {
  const parts = peers.map((p) =>
    p.nics.length ? JSON.stringify({ host_id: p.host_id, nics: p.nics.map((n) => ({ ...n, ip_addresses: n.ip_addresses.map((a) => a.split('/')[0]!) })) }) : undefined,
  );
  const hash = createHash('sha1');
  for (const p of parts) if (p !== undefined) hash.update(p).update('\u0000');
  return { digest: `c${hash.digest('base64url').slice(0, 16)}`, parts, count: parts.filter((p) => p !== undefined).length };
}

/** A host's entry in its cluster's view, with its place in `peers` (the index is built on first use). */
function peerOf(view: ClusterView, hostId: string): { peer: ClusterView['peers'][number]; index: number } | undefined {
  if (!view.byId.size) view.peers.forEach((peer, index) => view.byId.set(peer.host_id, { peer, index }));
  return view.byId.get(hostId);
}

/** A host's connectivity check in its cluster's view: its peers with IPv4 NICs, past MAX_PEERS a sample that rotates each minute. */
export function connectivityArgs(view: ClusterView, hostId: string, nowMs: number): DeferredArgs | undefined {
  const own = peerOf(view, hostId);
  if (!own) return undefined;
  const parts = (view.connectivity ??= connectivityParts(view.peers));
  const count = parts.count - (parts.parts[own.index] === undefined ? 0 : 1);
  if (!count) return undefined;
  // The minute is part of what a host with a rotating sample was sent.
  const minute = count > MAX_PEERS ? Math.floor(nowMs / 60000) : 0;
  return {
    digest: count > MAX_PEERS ? `${parts.digest}.${minute}` : parts.digest,
    build: () => {
      let mine = parts.parts.filter((p, i): p is string => p !== undefined && i !== own.index);
      if (count > MAX_PEERS) {
        const start = minute % count;
        mine = [...mine.slice(start), ...mine.slice(0, start)].slice(0, MAX_PEERS);
      }
      return [`[${mine.join(',')}]`];
    },
  };
}

export async function stepArgs(ctx: ServiceContext, type: string, host: PollingHost): Promise<string[] | DeferredArgs | undefined> {
  if (type === 'inventory') {
    let args = inventoryArgs.get(host.id);
    if (!args) {
      if (inventoryArgs.size >= INVENTORY_ARGS_HOSTS) inventoryArgs.delete(inventoryArgs.keys().next().value!);
      inventoryArgs.set(host.id, (args = [host.id]));
    }
    return args;
  }
  if (type === 'installation-disk-speed-check') {
    const row = await host.row();
    const inventory = parseJson<Inventory>(row?.inventory);
    const disk = ((row?.doc as Record<string, unknown> | undefined)?.installation_disk_path as string | undefined) ?? inventory?.disks?.find((d) => d.installation_eligibility?.eligible)?.path;
    return disk ? [JSON.stringify({ path: disk }), '480.00'] : undefined;
  }
  const view = host.cluster_id ? await clusterView(ctx, host.cluster_id, host.view_stamp) : undefined;
  const self = view ? peerOf(view, host.id)?.peer : undefined;
  switch (type) {
    case 'ntp-synchronizer':
      return sharedArgs(view, type, () => [JSON.stringify({ ntp_source: view?.ntp ?? '' })]);
    case 'connectivity-check':
      return view ? connectivityArgs(view, host.id, ctx.now().getTime()) : undefined;
    case 'free-network-addresses': {
      // With machine networks every host sweeps the same ones; without, each its own.
      if (view?.machineNetworks.length) return sharedArgs(view, type, () => smallNetworks(view.machineNetworks));
      const ownNetworks = (addresses: string[]) => smallNetworks([...new Set(addresses.map(networkOf))]);
      if (view && self) {
        // From the view, the same array for every poll of the host while the view holds.
        if (!view.ownFree.has(host.id)) view.ownFree.set(host.id, ownNetworks(self.nics.flatMap((n) => n.ip_addresses)));
        return view.ownFree.get(host.id);
      }
      return ownNetworks((parseJson<Inventory>((await host.row())?.inventory)?.interfaces ?? []).flatMap((i) => i.ipv4_addresses ?? []));
    }
    case 'container-image-availability': {
      // The images the install step names (InstallCmdRequest); timeout in seconds, as assisted-service sends it.
      const images = ctx.installImages ?? DEFAULT_INSTALL_IMAGES;
      return sharedArgs(view, type, () => [JSON.stringify({ images: [images.installer, images.controller], timeout: 960 })]);
    }
    case 'domain-resolution': {
      if (!view?.baseDomain) return undefined;
      const d = `${view.name}.${view.baseDomain}`;
      return sharedArgs(view, type, () => [JSON.stringify({ domains: [`api.${d}`, `api-int.${d}`, `console.apps.${d}`, `validateNoWildcardDNS.${d}`, `validateNoWildcardDNS.${d}.`].map((domain_name) => ({ domain_name })) })]);
    }
    default:
      return undefined;
  }
}
