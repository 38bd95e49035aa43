/**
 * Refresh: facts → validations (pure) → state machine → store status and
 * validations, with events only for what changed. Always inside the caller's
 * transaction, with the cluster row locked, so two refreshes of one cluster
 * never interleave; its hosts are read without a lock, all computed, then
 * written together in one statement at the end, each with compare-and-swap on
 * its status and facts version (one status writer per aggregate; nobody waits
 * on a refresh's reads or computing, only from its write to its commit).
 */
import { createHash } from 'node:crypto';
import { getHeapStatistics } from 'node:v8';
import type { Knex } from 'knex';
import type { ClusterRow, HostRow } from '../db/rows';
import { HOST_VALIDATIONS, HOST_VALIDATION_CATEGORY, HARDWARE_MINIMUM, clockVerdict } from '../domain/lifecycle/host-validations';
import { CLUSTER_VALIDATIONS, CLUSTER_VALIDATION_CATEGORY, CLUSTER_INPUT_VALIDATIONS } from '../domain/lifecycle/cluster-validations';
import { nextHostStatus, type HostRefreshSummary } from '../domain/lifecycle/host-state-machine';
import { nextClusterStatus } from '../domain/lifecycle/cluster-state-machine';
import { remediation, validationsInfo, type ValidationResult } from '../domain/lifecycle/validation-types';
import { deriveMachineNetwork, hostNetworks, knownMajorityGroup, suggestRoles, vipSuggestions } from '../domain/lifecycle/network';
import { majorityGroupKept, reachDigest } from './connectivity-facts';
import { addressedNics, derivedFor, forgetDerived, keepDerived, networkInputs } from './cluster-network-memo';
import { ipInCidr } from '../domain/input-rules';
import { effectiveRole, inventoryView, type ClusterFacts, type HostFacts } from '../domain/lifecycle/facts';
import { chooseInstallationDisk, withDiskEligibility } from '../domain/inventory';
import { DEFAULT_LIFECYCLE_SETTINGS, type LifecycleSettings } from '../domain/lifecycle/requirements';
import { clusterFacts, freeAddresses, hostFacts, keepReports, rememberReport, type ReportMemo } from './facts-builder';
import { HOST_LIGHT_COLUMNS } from '../db/hosts-repo';
import { latestShedEpisode, SHED_EPISODE_JOIN, shedEpisodeOf } from '../db/service-pressure-repo';
import { isConnected, type ShedEpisode } from '../domain/lifecycle/silence';
import { hotQuery } from '../db/database';
import { applyClusterEvent, applyHostRefreshes, type HostMove, type HostRefresh } from './status-writer';
import type { NewEvent } from '../db/events-repo';
import { requestRefresh } from './refresh-queue';
import { stepViewPeers } from './step-args';
import type { ServiceContext } from './context';

type Json = Record<string, unknown>;


export function lifecycleSettings(ctx: ServiceContext): LifecycleSettings {
  return ctx.lifecycle ?? DEFAULT_LIFECYCLE_SETTINGS;
}

function hostSummary(results: ValidationResult[]): HostRefreshSummary {
  const failed = (id: string) => results.some((r) => r.id === id && r.status !== 'success');
  const blocking = results.filter((r) => r.blocking && r.status !== 'success' && !['connected', 'has-inventory', 'machine-cidr-defined', ...HARDWARE_MINIMUM].includes(r.id));
  return {
    connected: !failed('connected'),
    hasInventory: !failed('has-inventory'),
    hardwareOk: !HARDWARE_MINIMUM.some(failed),
    machineCidrOk: !failed('machine-cidr-defined'),
    blockingOk: blocking.length === 0,
  };
}

function statusesOf(info: unknown): Map<string, string> {
  const out = new Map<string, string>();
  try {
    const parsed = JSON.parse(String(info ?? '{}')) as Record<string, Array<{ id: string; status: string }>>;
    for (const list of Object.values(parsed)) for (const v of list) out.set(v.id, v.status);
  } catch {
    /* first refresh */
  }
  return out;
}

/**
 * Validation events: a validation that was passing fails, or one that failed
 * passes. Never computed before counts as pending (what every validation is
 * until a host reports), for hosts: a host whose registration and first
 * inventory share one coalesced refresh still says which validations its
 * report fails. (A cluster is validated at its creation, in the request.)
 */
function validationChanges(before: Map<string, string>, after: ValidationResult[], firstAsPending = false) {
  const failed: ValidationResult[] = [];
  const fixed: ValidationResult[] = [];
  for (const r of after) {
    const prev = before.get(r.id) ?? (firstAsPending && before.size === 0 ? 'pending' : undefined);
    if (r.status === 'failure' && prev !== undefined && prev !== 'failure') failed.push(r);
    if (r.status === 'success' && prev === 'failure') fixed.push(r);
  }
  return { failed, fixed };
}

/**
 * The service's disk decisions for one host (assisted-service decides both
 * on the service side): eligibility of every disk against the role's minimum,
 * and the install disk, kept while still eligible. Updates the facts in place
 * so validations see them, and returns what to store when anything changed.
 */
function decideDisks(row: HostRow, facts: HostFacts, cluster: ClusterFacts | undefined, settings: LifecycleSettings): { inventory?: string; doc?: Json } | undefined {
  if (!facts.inventory) return undefined;
  const req = settings.requirements;
  const minGb = cluster ? req[effectiveRole(facts, cluster)].diskGb : Math.min(req.master.diskGb, req.worker.diskGb);
  const before = facts.inventory;
  const inventory = withDiskEligibility(before, minGb);
  const doc = row.doc as Json;
  const disk = chooseInstallationDisk(inventory, doc.installation_disk_id as string | undefined);
  const diskPatch: Json = {};
  if ((disk?.id ?? undefined) !== doc.installation_disk_id) diskPatch.installation_disk_id = disk?.id;
  const path = disk ? disk.by_id || disk.path : undefined;
  if (path !== doc.installation_disk_path) diskPatch.installation_disk_path = path;
  facts.inventory = inventory;
  // A changed disk decision changes the view's eligible disks: derived again from the inventory now held.
  if (inventory !== before) facts.view = undefined;
  facts.installationDiskId = disk?.id;
  const out: { inventory?: string; doc?: Json } = {};
  // withDiskEligibility returns its input when no disk's decision changed.
  if (inventory !== before) out.inventory = JSON.stringify(inventory);
  if (Object.keys(diskPatch).length) out.doc = diskPatch;
  return out.inventory !== undefined || out.doc ? out : undefined;
}

/**
 * A host's refresh, computed: the validations of its facts, the state
 * machine's event, and what to write, if anything (a host whose status,
 * validations, disks and suggested role are as stored is not written).
 */
interface HostPlan {
  row: HostRow;
  facts: HostFacts;
  kept?: KeptValidation;
  v: Validated;
  /** Undefined: nothing to write. */
  write?: HostRefresh;
  disks?: { inventory?: string; doc?: Json };
  becomesKnown: boolean;
}

function planHost(ctx: ServiceContext, row: HostRow, facts: HostFacts, cluster: ClusterFacts | undefined, settings: LifecycleSettings, kept?: KeptValidation, requestId?: string): HostPlan {
  const last = kept?.entry.validated;
  const same = last !== undefined && sameInputs(last.inputs, kept!.inputs);
  // The same inputs as at the last refresh: the disk decision too is the one it made (and wrote, moving the facts version).
  const disks = same ? undefined : decideDisks(row, facts, cluster, settings);
  let v = same ? last : undefined;
  const doc = row.doc as Json;
  const check = () => HOST_VALIDATIONS.map((spec) => ({ id: spec.id, ...spec.check(facts, { cluster, settings }) }));
  let results: ValidationResult[] | undefined;
  if (!v) {
    results = check();
    const info = validationsInfo(results, (id) => HOST_VALIDATION_CATEGORY[id]!);
    const details = remediation(results);
    // Kept as the doc's own strings when equal: a host's copy holds each text once.
    v = { inputs: kept?.inputs ?? NO_INPUTS, summary: hostSummary(results), info: info === doc.validations_info ? doc.validations_info : info, details: details === doc.validation_remediation ? doc.validation_remediation : details };
    if (kept) kept.entry.validated = v;
  }
  const { info, details } = v;
  // Only pre-install statuses have Refresh rules: for the others the table answers undefined.
  const event = { type: 'Refresh' as const, summary: v.summary };
  const transition = nextHostStatus(row.status, event);
  const statusChanged = transition !== undefined && (transition.to !== row.status || transition.info !== row.status_info);
  if (!disks && !statusChanged && doc.validations_info === info && doc.validation_remediation === details && row.suggested_role === facts.suggestedRole) {
    if (kept?.entry.validated === v) v.settled = true;
    return { row, facts, kept, v, becomesKnown: false };
  }
  // Kept validations carry no results (see Validated): the same inputs give the same results, computed again for the events.
  results ??= check();
  const becomesKnown = statusChanged && transition!.to === 'known' && !doc.known_at;
  const hostName = facts.hostname ?? row.id;
  // Its validation events, recorded with its write, only if it is written.
  const base = { hostId: row.id, infraEnvId: row.infra_env_id, clusterId: row.cluster_id, requestId };
  const { failed, fixed } = validationChanges(statusesOf(doc.validations_info), results, true);
  const events: NewEvent[] = [
    ...failed.map((r): NewEvent => ({ ...base, name: 'host_validation_failed', props: { host_name: hostName, validation_id: r.id, message: r.hint ? `${r.message}. Fix: ${r.hint}` : r.message } })),
    ...fixed.map((r): NewEvent => ({ ...base, name: 'host_validation_fixed', props: { host_name: hostName, validation_id: r.id } })),
  ];
  const write: HostRefresh = {
    host: row,
    event,
    ...(disks?.inventory !== undefined ? { inventory: disks.inventory } : {}),
    suggested_role: facts.suggestedRole,
    docFields: { ...disks?.doc, validations_info: info, validation_remediation: details, ...(becomesKnown ? { known_at: ctx.now().toISOString() } : {}) },
    hostName,
    events,
  };
  return { row, facts, kept, v, write, disks, becomesKnown };
}

/**
 * After the write of planned hosts (applyHostRefreshes, all in one
 * statement, with their events): each host as written, or undefined where it
 * was not written because it changed since it was read.
 */
function recordHost(ctx: ServiceContext, plan: HostPlan, move: HostMove | undefined): HostRow | undefined {
  if (!plan.write) return plan.row;
  if (!move) return undefined;
  // The inventory as written (the disk decisions in it) is the one the next refresh sees, parsed: facts.inventory.
  if (plan.disks?.inventory !== undefined && plan.kept) rememberReport(plan.kept.entry.memo, 'inventory', plan.disks.inventory, plan.facts.inventory);
  // The row as written has created_at; the one the refresh read does not (REFRESH_COLUMNS).
  if (plan.becomesKnown) ctx.metrics?.registrationToKnown((ctx.now().getTime() - new Date(move.row.created_at).getTime()) / 1000);
  return move.row;
}

/**
 * When the user gave VIPs but no machine network, the machine network is the
 * host network that contains the API VIP (what AS calls the calculated CIDR).
 */
function deriveNetworks(c: ClusterFacts, doc: Json, free: Array<Array<{ network: string; free_addresses: string[] }>>): { patch: Json | undefined; groups: Array<[string, string[]]> } {
  const patch: Json = {};
  if (!c.machineNetworks.length && !c.userManagedNetworking && c.apiVips[0]) {
    const nets = [...new Set(c.hosts.flatMap(hostNetworks))];
    const net = nets.find((n) => ipInCidr(c.apiVips[0]!, n));
    if (net) {
      patch.machine_networks = [{ cluster_id: c.id, cidr: net }];
      c.machineNetworks = [net];
    }
  }
  const target = c.machineNetworks[0] ?? deriveMachineNetwork(c.hosts);
  // AS's connectivity_majority_groups: per network, the hosts that all reach each other (a JSON string).
  const groups: Record<string, string[]> = {};
  for (const cidr of c.machineNetworks.length ? c.machineNetworks : target ? [target] : []) groups[cidr] = majorityGroupKept(c.hosts, cidr);
  const groupsText = JSON.stringify(groups);
  if (groupsText !== (doc.connectivity_majority_groups ?? '{}')) patch.connectivity_majority_groups = groupsText;
  const vips = target ? vipSuggestions(free, target) : [];
  const suggestions = JSON.stringify({ machine_network: target ?? null, api_vip: vips[0] ?? null, ingress_vip: vips[1] ?? null });
  if (suggestions !== doc.network_suggestions) patch.network_suggestions = suggestions;
  return { patch: Object.keys(patch).length ? patch : undefined, groups: Object.entries(groups) };
}

/**
 * What a host's validations are computed from: a host whose inputs
 * are the same as at its last refresh keeps its results without running the
 * checks (a cluster refresh after one host's report re-validates that host,
 * not all fifty). Two parts:
 * - its own facts: everything the row's writes move (facts_version: every
 *   write of a host moves it), the columns read fresh, and what time changes
 *   (whether it is connected, and its clock's verdict: clockVerdict);
 * - what it sees of the cluster (sharedInputs): the cluster's facts and,
 *   of every host, what checks read of a peer (id, name, role, status, its
 *   addresses, whom it reached).
 * A check that starts reading something else of a peer must be added here.
 */
function ownInputs(row: HostRow, f: HostFacts, settings: LifecycleSettings, shared: string): Inputs {
  const connected = isConnected(f, settings.disconnectTimeoutMs);
  // Disconnected, its message counts the seconds since its last poll (and those excused).
  const silence = connected ? 'c' : f.sinceCheckInMs === undefined ? 'never' : `${Math.round(f.sinceCheckInMs / 1000)}/${Math.round((f.excusedSilenceMs ?? 0) / 1000)}`;
  return [String(row.facts_version), f.status, f.role, f.suggestedRole, f.bootstrap, f.requestedHostname ?? null, silence, clockVerdict(f, settings), shared];
}

/**
 * The inputs as a tuple of primitives, compared item by item: as one JSON
 * text joined to the shared digest, their making and comparing was ~6 % of a
 * refresh's CPU (bench/refresh-cost, profiled: 50 hosts a refresh, each
 * stringified, concatenated, then flattened to be compared).
 */
type Inputs = readonly [version: string, status: string, role: string, suggestedRole: string, bootstrap: boolean, requestedHostname: string | null, silence: string, clock: string | null, shared: string];
const NO_INPUTS: Inputs = ['', '', '', '', false, null, '', null, ''];
function sameInputs(a: Inputs, b: Inputs): boolean {
  if (a === b) return true;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * As a digest: every host's kept inputs end with it, and fifty copies of a
 * fifty-host text per refresh (compared, then kept per host) were most of
 * what a process kept per host and a share of the refresh's time.
 */
function sharedInputs(c: ClusterFacts): string {
  const peers = c.hosts.map((h) => [h.id, h.hostname ?? null, h.role, h.suggestedRole, h.status, h.day2, addressedNics(h), reachDigest(h)]);
  return createHash('sha1').update(JSON.stringify([{ ...c, hosts: undefined }, peers])).digest('base64url');
}

/**
 * Host rows of a cluster, not locked: the cluster's lock keeps refreshes of
 * it one at a time, and each host is written with compare-and-swap on the
 * facts it was read with (applyHostRefreshes), so a poll's check-in or an
 * agent's reply never waits for a refresh to finish. The large columns (inventory, and the doc
 * with its O(n) connectivity report) are read again only for hosts whose
 * facts_version moved since this process last read them (every write of the
 * row moves it, in SQL, so two writes in one millisecond are still told
 * apart); with 100 hosts that is megabytes per refresh otherwise. Poll-time
 * columns (checked_in_at, the agent's timestamp) are always read fresh, since
 * a poll does not write the large columns. A refresh's own write leaves the
 * cache current (rememberWritten), so the next refresh of the cluster reads
 * again only the hosts agents reported on meanwhile; and each host's parsed
 * reports stay with it (ReportMemo), so only a changed report is parsed.
 */
interface CachedHost {
  /** The host's infra-env: the copy is keyed by the host's id (heldFor). */
  ie: string;
  version: string;
  /** The doc without the agent's reports, which are in `memo`, parsed (keepReports); the inventory too is only there. */
  doc: HostRow['doc'];
  memo: ReportMemo;
  /** The host's validations at its last refresh, and the inputs they were computed from (ownInputs, sharedInputs). */
  validated?: Validated;
}
interface Validated {
  inputs: Inputs;
  /**
   * What the state machine reads of the results, not the results: about
   * thirty objects and their message texts per host, kept for every host of
   * the fleet, were a third of the copy's heap (7.1 against 4.8 KB a host,
   * bench/refresh-cost; bench/README.md, seventeenth session). A write that
   * reuses these computes the results again for its events (same inputs,
   * same results).
   */
  summary: HostRefreshSummary;
  info: string;
  details: string;
  /**
   * The refresh with these inputs found nothing to write (status, validations
   * and suggested role as stored): with the same inputs again, so will this
   * one, and the host is passed over without computing anything.
   */
  settled?: boolean;
}
interface KeptValidation {
  inputs: Inputs;
  entry: CachedHost;
}
/**
 * Bounded: the least recently refreshed hosts leave first. The bound is per
 * process: the process that refreshes for the API keeps the whole fleet it
 * refreshes (REFRESH_CACHE_HOSTS); a process that only refreshes now and then
 * (a serving process settling a person's read, the worker taking what the
 * API left) keeps few (setRefreshCacheHosts), since a host's entry (its
 * inventory's text and view, its doc and reports) is ~17 KB and at 20,000
 * hosts each such process held hundreds of megabytes it seldom used.
 */
export const REFRESH_CACHE_HOSTS = 30_000;
/** The bound of a process that refreshes only now and then: twenty 50-host clusters. */
export const OCCASIONAL_REFRESH_CACHE_HOSTS = 1_000;
let cacheBound = REFRESH_CACHE_HOSTS;

/** This process's bound on the refresher's copy of hosts, from now on (the copy is trimmed to it at once). */
export function setRefreshCacheHosts(hosts: number): void {
  cacheBound = Math.max(0, Math.floor(hosts));
  dropOldest(heavyCache.size - cacheBound);
}
/**
 * What a refresh reads of every host each time: what facts and the status
 * writer use. Not the other timestamps: parsing dates is a noticeable share
 * of a refresh's CPU (four per host, fifty hosts; postgres-date was 4 % of
 * the refresher live at 20,000 hosts with two). created_at serves only the
 * registration → known metric, from the row as written (recordHost).
 */
const REFRESH_COLUMNS = HOST_LIGHT_COLUMNS.filter((c) => c !== 'status_updated_at' && c !== 'updated_at' && c !== 'created_at' && c !== 'discovery_agent_version');
const heavyCache = new Map<string, CachedHost>();
/**
 * The refresh's reads, as fixed texts run without knex's builder (hotQuery):
 * knex's query building and runner were about a tenth of the refresher's CPU
 * (bench/refresh-cost, profiled). One shape for one cluster or many (array
 * parameters); (cluster_id, id) order is each cluster's id order.
 */
// checked_in_at as epoch milliseconds (float8), made a Date without parsing text: pg's timestamp parser was 2 % of a refresh's CPU.
const LIGHT_HOSTS_SQL = `select ${REFRESH_COLUMNS.map((c) => (c === 'checked_in_at' ? `date_part('epoch', checked_in_at) * 1000 as checked_in_at` : c)).join(', ')} from hosts where cluster_id = any($1::uuid[]) order by cluster_id, id`;
// Keys as two arrays joined to the primary key: one prepared shape for any count (a list of pairs planned a scan of every host).
const HEAVY_HOSTS_SQL = 'select h.id, h.infra_env_id, h.inventory, h.doc, h.facts_version from hosts h join unnest($1::uuid[], $2::uuid[]) as k(ie, id) on h.infra_env_id = k.ie and h.id = k.id';
/**
 * The clusters, locked in id order (as every batch of them is, so two never
 * wait on each other in a circle), with the service's latest shed episode
 * joined in: one statement where there were two (the episode was read on its
 * own at every refresh). Only the clusters' rows are locked, FOR NO KEY UPDATE:
 * that excludes other refreshes and every FOR UPDATE (an install starting, a
 * user's edit), but not a host registering (its insert only needs the
 * cluster's key), so a registration never waits for a refresh to finish.
 */
const CLUSTERS_SQL = lockedClustersSql('c.id = any($1::uuid[])', '$2');

/**
 * The locking read of clusters (CLUSTERS_SQL), for those `where` names: each
 * cluster's row with the service's latest shed episode (`shedName`, the
 * parameter that holds SHED_EPISODE_JOIN.name), locked in id order. A
 * statement may put it in its own (the refresher's claim: refresh-queue.ts),
 * and hands the rows to refreshLockedClusters.
 */
export function lockedClustersSql(where: string, shedName: string): string {
  return `select c.*, s.started_at as lf_shed_started_at, s.last_at as lf_shed_last_at
            from clusters c left join ${SHED_EPISODE_JOIN.table} s on s.name = ${shedName}
           where ${where} order by c.id for no key update of c`;
}
export type LockedClusterRow = ClusterRow & { lf_shed_started_at: Date | null; lf_shed_last_at: Date | null };
/**
 * The copy is keyed by the host's id alone, its infra-env checked on the
 * entry (`ie`): a key made of both was a new concatenated string per host per
 * refresh, flattened and hashed at every lookup (~0.9 µs a host, bench/refresh-cost
 * profiled). Two hosts of one id in two infra-envs (one machine booted from two
 * images) take the entry from each other: each is read again when refreshed.
 */
const heldFor = (r: { infra_env_id: string; id: string }): CachedHost | undefined => {
  const e = heavyCache.get(r.id);
  return e?.ie === r.infra_env_id ? e : undefined;
};

/** Drops the `count` least recently stored hosts of the copy (a Map keeps insertion order; remember re-inserts). */
function dropOldest(count: number): void {
  for (let i = 0; i < count && heavyCache.size > 0; i++) heavyCache.delete(heavyCache.keys().next().value!);
}

/**
 * A host's entry is 8 KB of heap with the bench's inventories (their ~9 KB
 * text is kept outside the heap) and 33 KB with 50-host connectivity reports
 * (`node --expose-gc dist/bench/refresh-cost.js [--connectivity]`); with
 * larger reports or clusters the copy could outgrow V8's heap limit and the
 * process die of it. Every
 * HEAP_CHECK_EVERY entries stored, the process's heap
 * is looked at, and above HEAP_SHARE of its limit the oldest eighth of the
 * copy is dropped: a dropped host is read again when next refreshed, never
 * answered wrongly. (Heap in use counts garbage not yet collected, so this
 * may drop more than needed, which costs reads, not answers.)
 */
const HEAP_SHARE = 0.5;
const HEAP_CHECK_EVERY = 256;
let storedSinceCheck = 0;

function remember(k: string, entry: CachedHost): void {
  heavyCache.delete(k);
  heavyCache.set(k, entry);
  dropOldest(heavyCache.size - cacheBound);
  if (++storedSinceCheck >= HEAP_CHECK_EVERY) {
    storedSinceCheck = 0;
    const heap = getHeapStatistics();
    if (heap.used_heap_size > HEAP_SHARE * heap.heap_size_limit) dropOldest(Math.ceil(heavyCache.size / 8));
  }
}

/** After the refresh's own write: the row it wrote is what the next refresh reads, without reading it again. */
function rememberWritten(row: HostRow): void {
  const had = heldFor(row);
  // Its validations stay with it: the caller re-keys them to the version just written (finishCluster).
  if (had) remember(row.id, { ie: row.infra_env_id, version: String(row.facts_version), doc: row.doc, memo: had.memo, validated: had.validated });
}

type ReadHost = { row: HostRow; entry: CachedHost };

/** The hosts of these clusters (light columns always, large ones only where this process's copy is stale), by cluster, each in id order. */
async function clusterHosts(trx: Knex.Transaction, clusterIds: string[]): Promise<Map<string, ReadHost[]>> {
  const light = await hotQuery<Omit<HostRow, 'inventory' | 'doc'>>(trx, LIGHT_HOSTS_SQL, [clusterIds]);
  // This refresh's entries, apart from the cache: a cache bound below a cluster's size may drop one before it is used.
  const entries: Array<CachedHost | undefined> = new Array(light.length);
  const stale: number[] = [];
  for (let i = 0; i < light.length; i++) {
    const e = heldFor(light[i]!);
    if (e?.version === String(light[i]!.facts_version)) entries[i] = e;
    else stale.push(i);
  }
  if (stale.length) {
    const heavy = await hotQuery<Pick<HostRow, 'id' | 'infra_env_id' | 'inventory' | 'doc' | 'facts_version'>>(trx, HEAVY_HOSTS_SQL, [stale.map((i) => light[i]!.infra_env_id), stale.map((i) => light[i]!.id)]);
    const read = new Map<string, CachedHost>();
    for (const h of heavy) {
      const memo: ReportMemo = heldFor(h)?.memo ?? new Map();
      const e = { ie: h.infra_env_id, version: String(h.facts_version), doc: keepReports(h.inventory, h.doc as Json, memo), memo };
      read.set(`${h.infra_env_id}/${h.id}`, e);
      remember(h.id, e);
    }
    for (const i of stale) entries[i] = read.get(`${light[i]!.infra_env_id}/${light[i]!.id}`);
  }
  const out = new Map<string, ReadHost[]>(clusterIds.map((id) => [id, []]));
  for (let i = 0; i < light.length; i++) {
    const h = entries[i];
    // Deleted between the two reads: not this refresh's host any more.
    if (!h) continue;
    // The light row itself becomes the host's row (it is this read's own object): no inventory text, the refresh
    // reads the host's reports from its memo (hostFacts, freeAddresses with the memo).
    const row = light[i] as HostRow;
    if (row.checked_in_at !== null) row.checked_in_at = new Date(row.checked_in_at as unknown as number);
    row.inventory = null;
    row.doc = h.doc;
    out.get(row.cluster_id!)?.push({ row, entry: h });
  }
  return out;
}

/**
 * Clusters locked for their refresh (in id order, as every batch of them is,
 * so two never wait on each other in a circle) with their hosts: three
 * statements however many clusters, which is what a batch of refreshes
 * saves (bench/refresh-cost: the statements, not the computing, were most of
 * a refresh's cost).
 */
async function readClusters(trx: Knex.Transaction, ids: string[]): Promise<ClusterRead[]> {
  return withHosts(trx, await hotQuery<LockedClusterRow>(trx, CLUSTERS_SQL, [[...new Set(ids)].sort(), SHED_EPISODE_JOIN.name]));
}

/** Clusters read locked (lockedClustersSql), with their hosts. */
async function withHosts(trx: Knex.Transaction, rows: LockedClusterRow[]): Promise<ClusterRead[]> {
  if (!rows.length) return [];
  const shedding = shedEpisodeOf(rows[0]!.lf_shed_started_at, rows[0]!.lf_shed_last_at);
  // The row as the cluster's own columns: it is written back and presented.
  const clusters = rows.map(({ lf_shed_started_at: _s, lf_shed_last_at: _l, ...cluster }) => cluster as ClusterRow);
  const hosts = await clusterHosts(trx, clusters.map((c) => c.id));
  return clusters.map((cluster) => ({ cluster, hosts: hosts.get(cluster.id) ?? [], shedding }));
}

/**
 * A digest of everything the poll's per-cluster step view is built from
 * (step-args.ts): the cluster's name, domain, NTP source and networks, and
 * each host's id and addressed NICs (hosts in id order, as the rows come). The poll reads it with its check-in and
 * rebuilds its view only when it moved.
 */
function stepViewStamp(cluster: ClusterRow, hosts: HostFacts[]): string {
  const d = cluster.doc as Json;
  const h = createHash('sha1').update(JSON.stringify([cluster.name, d.base_dns_domain ?? null, d.additional_ntp_source ?? null, d.machine_networks ?? null]));
  // Only the peers' addressed NICs: an inventory whose memory or disks changed leaves every host's view as it was.
  for (const f of hosts) {
    if (!inventoryView(f)) continue;
    h.update(`\u0000${f.id}${addressedNics(f)}`);
  }
  return h.digest('base64url').slice(0, 22);
}

export async function refreshCluster(ctx: ServiceContext, trx: Knex.Transaction, clusterId: string, requestId?: string): Promise<ClusterRow | undefined> {
  const [read] = await readClusters(trx, [clusterId]);
  return read ? (await refreshReads(ctx, trx, [read], requestId))[0] : undefined;
}

/**
 * Several clusters in the caller's transaction, which its own statement
 * already read and locked (lockedClustersSql's rows, in id order): their
 * hosts read together, then each refreshed as refreshCluster would. How many
 * were found.
 */
export async function refreshLockedClusters(ctx: ServiceContext, trx: Knex.Transaction, rows: LockedClusterRow[]): Promise<number> {
  const reads = await withHosts(trx, rows);
  await refreshReads(ctx, trx, reads);
  return reads.length;
}

/**
 * The refresh of clusters read: every host computed first (planCluster),
 * then the hosts of all of them written in one statement, then each
 * cluster's own checks on the statuses written (finishCluster). The host
 * rows are locked only from that write to the commit: a poll of one of
 * them (its check-in writes the row) never waits for the computing.
 */
async function refreshReads(ctx: ServiceContext, trx: Knex.Transaction, reads: ClusterRead[], requestId?: string): Promise<ClusterRow[]> {
  const planned: PlannedCluster[] = [];
  let writing = 0;
  for (const [i, r] of reads.entries()) {
    // A batch that already writes a cluster's worth of hosts takes no more: the rest are asked for again, and
    // refreshed in the next round (their rows were only read). A booting cluster writes most of its hosts at each
    // refresh, and a batch of eight such held 400 rows (and a reply waiting on any of them) until it committed.
    if (writing >= BATCH_HOST_WRITES && i > 0) {
      for (const rest of reads.slice(i)) await requestRefresh(trx, { clusterId: rest.cluster.id });
      break;
    }
    const p = await planCluster(ctx, trx, r, requestId);
    writing += p.hosts.filter((h) => h.write).length;
    planned.push(p);
  }
  const writes = planned.flatMap((p) => p.hosts.filter((h) => h.write));
  const moves = writes.length ? await applyHostRefreshes(ctx, trx, writes.map((h) => h.write!), { requestId }) : [];
  const moveOf = new Map(writes.map((h, i) => [h, moves[i]]));
  const done = planned.map((p) => ({ p, rows: p.hosts.map((h) => recordHost(ctx, h, moveOf.get(h))) }));
  const out: ClusterRow[] = [];
  for (const { p, rows } of done) out.push(await finishCluster(ctx, trx, p, rows, requestId));
  return out;
}

/**
 * A batch of clusters stops taking more once its host writes reach this many
 * (refreshReads). In the agent-api mix a refresh writes one host of fifty
 * and a batch of eight stays whole; in a 20,000-host boot (bench/fleet-real)
 * batches of eight booting clusters made the boot slower and answered more
 * replies 503 than one cluster at a time.
 */
const BATCH_HOST_WRITES = 50;

type ClusterRead = { cluster: ClusterRow; hosts: ReadHost[]; shedding: ShedEpisode | undefined };

interface PlannedCluster {
  cluster: ClusterRow;
  facts: ClusterFacts;
  hostList: HostFacts[];
  hosts: HostPlan[];
  /** Each host's inputs (ownInputs and the cluster's shared ones) as planned. */
  shared: string;
  settings: LifecycleSettings;
}

/** A cluster's refresh up to its hosts' writes: its derived networks and step view written (seldom), its hosts planned. */
async function planCluster(ctx: ServiceContext, trx: Knex.Transaction, read: ClusterRead, requestId?: string): Promise<PlannedCluster> {
  const settings = lifecycleSettings(ctx);
  let cluster = read.cluster;
  const clusterId = cluster.id;
  const now = ctx.now().getTime();
  const hostList = read.hosts.map((r) => hostFacts(r.row, now, r.entry.memo, read.shedding));
  // The stamp and networks as derived from the same inputs at an earlier refresh that changed neither (cluster-network-memo.ts).
  const inputs = networkInputs(cluster, hostList, read.hosts.map((r) => r.entry.memo.get('free_addresses')?.digest));
  const known = derivedFor(clusterId, inputs);
  // The facts read nothing the stamp's write below changes.
  const facts = clusterFacts(cluster, hostList, ctx.releases);
  if (known) {
    for (const [cidr, group] of known) knownMajorityGroup(facts.hosts, cidr, group);
  } else {
    const stamp = stepViewStamp(cluster, hostList);
    const stampMoved = stamp !== cluster.step_view_stamp;
    if (stampMoved) {
      cluster = await ctx.repos.clusters.update(clusterId, { step_view_stamp: stamp }, trx);
      // The view the stamp stands for, with it: a serving process reads this row, not every host's inventory.
      const withNics = hostList.flatMap((f) => {
        const v = inventoryView(f);
        return v ? [{ id: f.id, interfaces: v.interfaces }] : [];
      });
      await ctx.repos.clusters.putStepView(clusterId, stamp, JSON.stringify(stepViewPeers(withNics)), trx);
    }
    const derived = deriveNetworks(facts, cluster.doc as Json, read.hosts.map((r) => freeAddresses(r.row, r.entry.memo)));
    if (derived.patch) cluster = await ctx.repos.clusters.update(clusterId, { doc: { ...(cluster.doc as Json), ...derived.patch } }, trx);
    if (stampMoved || derived.patch) forgetDerived(clusterId);
    else keepDerived(clusterId, inputs, derived.groups);
  }
  const suggested = suggestRoles(facts, settings.requirements.master);
  // By id, one pass: a lookup per suggestion was a scan of the list (fifty by fifty).
  if (suggested.size) for (const h of hostList) h.suggestedRole = suggested.get(h.id) ?? h.suggestedRole;
  const shared = sharedInputs(facts);
  const hosts = read.hosts.map(({ row, entry }, i) => {
    const kept = { inputs: ownInputs(row, hostList[i]!, settings, shared), entry };
    if (entry.validated?.settled && sameInputs(entry.validated.inputs, kept.inputs)) return { row, facts: hostList[i]!, kept, v: entry.validated, becomesKnown: false };
    return planHost(ctx, row, hostList[i]!, facts, settings, kept, requestId);
  });
  return { cluster, facts, hostList, hosts, shared, settings };
}

/** The rest of a cluster's refresh, on its hosts as written (undefined: not written, changed since read). */
async function finishCluster(ctx: ServiceContext, trx: Knex.Transaction, p: PlannedCluster, written: Array<HostRow | undefined>, requestId?: string): Promise<ClusterRow> {
  const { cluster, facts, hostList, shared, settings } = p;
  const clusterId = cluster.id;
  let lost = false;
  p.hosts.forEach((h, i) => {
    const w = written[i];
    lost ||= !w;
    if (!w || w === h.row) return;
    rememberWritten(w);
    // This write moved the host's facts version but not what its checks read: the results just written are
    // those of its next refresh too, unless what it sees changes (its new status changes every host's shared
    // inputs). Without this, each refresh that wrote a host validated it once more in the next.
    const v = h.kept?.entry.validated;
    if (v && sameInputs(v.inputs, h.kept!.inputs)) v.inputs = ownInputs(w, { ...hostList[i]!, status: w.status, suggestedRole: w.suggested_role }, settings, shared);
  });
  // A host that changed while this refresh computed was left as it was; its change asked for a refresh, and so does this.
  if (lost) await requestRefresh(trx, { clusterId });
  // Cluster checks see the host statuses this refresh produced.
  written.forEach((r, i) => (hostList[i]!.status = (r ?? p.hosts[i]!.row).status));

  const results = CLUSTER_VALIDATIONS.map((v) => ({ id: v.id, ...v.check(facts, { settings, hostResults: new Map() }) }));
  const info = validationsInfo(results, (id) => CLUSTER_VALIDATION_CATEGORY[id]!);
  const details = remediation(results);
  const failing = (ids: (r: ValidationResult) => boolean) => results.some((r) => r.status !== 'success' && r.blocking && ids(r));
  const summary = { inputMissing: failing((r) => CLUSTER_INPUT_VALIDATIONS.includes(r.id)), requiredFailing: failing((r) => !CLUSTER_INPUT_VALIDATIONS.includes(r.id)) };
  const event = { type: 'Refresh' as const, summary };
  const transition = nextClusterStatus(cluster.status, event);
  const doc = cluster.doc as Json;
  const statusChanged = transition !== undefined && (transition.to !== cluster.status || transition.info !== cluster.status_info);
  if (!statusChanged && doc.validations_info === info && doc.validation_remediation === details) return cluster;
  const { row: updated } = await applyClusterEvent(ctx, trx, cluster, event, { requestId, patch: { doc: { ...doc, validations_info: info, validation_remediation: details } } });
  const { failed, fixed } = validationChanges(statusesOf(doc.validations_info), results);
  await ctx.repos.events.addMany(
    [
      ...failed.map((r): NewEvent => ({ name: 'cluster_validation_failed', clusterId, props: { validation_id: r.id, message: r.hint ? `${r.message}. Fix: ${r.hint}` : r.message }, requestId })),
      ...fixed.map((r): NewEvent => ({ name: 'cluster_validation_fixed', clusterId, props: { validation_id: r.id }, requestId })),
    ],
    trx,
  );
  return updated;
}

/** A host without a cluster is validated alone (no network or role context). */
export async function refreshUnboundHost(ctx: ServiceContext, trx: Knex.Transaction, row: HostRow, requestId?: string): Promise<HostRow> {
  const facts = hostFacts(row, ctx.now().getTime(), undefined, await latestShedEpisode(trx));
  const plan = planHost(ctx, row, facts, undefined, lifecycleSettings(ctx), undefined, requestId);
  const [move] = plan.write ? await applyHostRefreshes(ctx, trx, [plan.write], { requestId }) : [];
  const written = recordHost(ctx, plan, move);
  if (!written) await requestRefresh(trx, { infraEnvId: row.infra_env_id, hostId: row.id });
  return written ?? row;
}

/** Refreshes whatever a host belongs to: its cluster (all hosts) or the host alone. */
export async function refreshForHost(ctx: ServiceContext, trx: Knex.Transaction, key: { infraEnvId: string; hostId: string }, requestId?: string): Promise<void> {
  const row = await ctx.repos.hosts.get(key, trx);
  if (!row) return;
  if (row.cluster_id) await refreshCluster(ctx, trx, row.cluster_id, requestId);
  else await refreshUnboundHost(ctx, trx, (await ctx.repos.hosts.getForUpdate(key, trx))!, requestId);
}
