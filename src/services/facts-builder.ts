/** Rows → facts for the pure lifecycle code. The only place that parses stored agent reports. */
import { excusedSilenceMs, type ShedEpisode } from '../domain/lifecycle/silence';
import { createHash } from 'node:crypto';
import type { Inventory } from '../../agent/types';
import type { ClusterRow, HostRow } from '../db/rows';
import type { ReleaseCatalogue } from '../domain/releases';
import { parseJson, viewOfInventory, type ClusterFacts, type ConnectivityReport, type HostFacts, type InventoryView } from '../domain/lifecycle/facts';

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
 * parsed from: a report is parsed again only when its text changed (keepReports).
 * The inventory is kept as a KeptInventory, the others parsed. The shared
 * text-keyed cache above is bounded for every other caller and, with more
 * hosts than its bound, re-parsed every inventory of a cluster at each refresh.
 */
export type ReportMemo = Map<string, { digest: string; value: unknown }>;

/**
 * An inventory as the refresher keeps it: the view every refresh reads of
 * every host (InventoryView), parsed, and the rest as its text in a Buffer,
 * outside V8's heap. Kept parsed whole, each inventory was ~140 objects and
 * ~10 KB of the heap, three quarters of what the refresher kept per host, and
 * its full collections marked and moved all of them: 170–300 ms at 5,000 hosts
 * on this machine, every ~11 s, each stalling the refreshes in flight
 * (bench/README.md, 2026-11-29, seventh session). The whole is parsed again
 * only for a host whose own checks run.
 *
 * The parse made when the text was read is handed to the first facts built
 * from it (takeFresh): the refresh that read a changed inventory is the one
 * that checks it, and would otherwise parse it twice. Nothing else holds a
 * parse past the refresh that made it.
 */
export class KeptInventory {
  private constructor(private readonly text: Buffer, readonly view: InventoryView, private fresh: Inventory | undefined) {}

  /** Undefined for a text that is not an inventory (as a parse of it gives nothing). `parsed`: its parse, already made, for the view only. */
  static of(text: string, parsed?: Inventory): KeptInventory | undefined {
    const inv = parsed ?? parseJson<Inventory>(text);
    if (!inv || typeof inv !== 'object') return undefined;
    return new KeptInventory(Buffer.from(text), viewOfInventory(inv), parsed ? undefined : inv);
  }

  /** The parse made when the text was read, once; undefined after. */
  takeFresh(): Inventory | undefined {
    const inv = this.fresh;
    this.fresh = undefined;
    return inv;
  }

  /** The whole inventory, parsed from the text. */
  whole(): Inventory {
    return JSON.parse(this.text.toString('utf8')) as Inventory;
  }
}

const ownInventory = (facts: HostFacts, value: Inventory | undefined) =>
  Object.defineProperty(facts, 'inventory', { value, writable: true, enumerable: false, configurable: true });

/**
 * Facts built from a kept inventory: their `inventory` is parsed on first
 * read, then is the facts' own value, not enumerable, so a spread of the
 * facts does not parse it. A class, so that every refresh's fifty facts share
 * one shape and one accessor: they were made as an object literal copied
 * onto a prototype with Object.assign and given the kept inventory with
 * Object.defineProperty, each step on V8's slow path (hostFacts was 5 % of a
 * refresh's CPU, bench/refresh-cost profiled).
 */
// Its fields are HostFacts' own, declared by merging (not restated): the constructor sets each, in one order.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging, @typescript-eslint/no-empty-object-type
interface KeptHostFacts extends Omit<HostFacts, 'inventory'> {}
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
class KeptHostFacts implements HostFacts {
  /** A private field: not enumerable, so a spread of the facts copies neither it nor the accessor (its `inventory` is undefined). */
  readonly #kept: KeptInventory;

  constructor(f: Omit<HostFacts, 'inventory'>, kept: KeptInventory) {
    this.id = f.id;
    this.status = f.status;
    this.day2 = f.day2;
    this.role = f.role;
    this.suggestedRole = f.suggestedRole;
    this.bootstrap = f.bootstrap;
    this.hostname = f.hostname;
    this.requestedHostname = f.requestedHostname;
    this.view = f.view;
    this.connectivity = f.connectivity;
    this.ntpSources = f.ntpSources;
    this.imagesStatus = f.imagesStatus;
    this.diskSyncMs = f.diskSyncMs;
    this.installationDiskId = f.installationDiskId;
    this.sinceCheckInMs = f.sinceCheckInMs;
    this.excusedSilenceMs = f.excusedSilenceMs;
    this.agentTimestampS = f.agentTimestampS;
    this.serviceTimestampS = f.serviceTimestampS;
    this.#kept = kept;
  }

  get inventory(): Inventory | undefined {
    const value = this.#kept.whole();
    ownInventory(this, value);
    return value;
  }

  set inventory(value: Inventory | undefined) {
    ownInventory(this, value);
    // An inventory assigned before any read is not the kept one: the view is derived from it from now on. (Once read,
    // `inventory` is the facts' own value and this setter no longer runs: refresh-service's decideDisks clears the view itself.)
    this.view = undefined;
  }
}

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
    if (memo.get(field)?.digest !== digest) memo.set(field, { digest, value: field === 'inventory' ? KeptInventory.of(text) : parseJson(text) });
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
  memo.set(field, { digest: digestOf(text), value: field === 'inventory' ? KeptInventory.of(text, value as Inventory | undefined) : value });
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
  const kept = memo ? (memo.get('inventory')?.value as KeptInventory | undefined) : undefined;
  const inventory = memo ? undefined : report<Inventory>(h, 'inventory', undefined);
  const disks = report<{ io_sync_duration?: number }>(h, 'disks_info', memo);
  // pg's rows hold a Date already; other callers' may hold the text.
  const checkedIn = h.checked_in_at ? (h.checked_in_at instanceof Date ? h.checked_in_at.getTime() : new Date(h.checked_in_at).getTime()) : undefined;
  const facts = {
    id: h.id,
    status: h.status,
    day2: d.kind === 'AddToExistingClusterHost',
    role: h.role,
    suggestedRole: h.suggested_role,
    bootstrap: h.bootstrap,
    hostname: h.requested_hostname ?? (kept ? kept.view.hostname : inventory?.hostname),
    requestedHostname: h.requested_hostname ?? undefined,
    view: kept?.view,
    connectivity: report<ConnectivityReport>(h, 'connectivity', memo),
    ntpSources: report<HostFacts['ntpSources']>(h, 'ntp_sources', memo),
    imagesStatus: report<{ images?: Array<{ name: string; result: string }> }>(h, 'images_status', memo)?.images ?? undefined,
    diskSyncMs: typeof disks?.io_sync_duration === 'number' ? disks.io_sync_duration : undefined,
    installationDiskId: d.installation_disk_id as string | undefined,
    sinceCheckInMs: checkedIn === undefined ? undefined : Math.max(0, nowMs - checkedIn),
    excusedSilenceMs: checkedIn === undefined ? 0 : excusedSilenceMs(checkedIn, nowMs, shedding),
    // The agent's clock at its last poll, against the service's clock at the same moment.
    agentTimestampS: h.agent_timestamp !== null ? Number(h.agent_timestamp) : undefined,
    serviceTimestampS: checkedIn === undefined ? undefined : Math.floor(checkedIn / 1000),
  };
  if (!kept) return { ...facts, inventory };
  // Facts of a kept inventory: its whole parsed on first read (KeptHostFacts), or the parse made when it was read.
  const lazy = new KeptHostFacts(facts, kept);
  const fresh = kept.takeFresh();
  if (fresh) ownInventory(lazy, fresh);
  return lazy;
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
