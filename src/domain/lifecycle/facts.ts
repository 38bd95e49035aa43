/**
 * The facts validations and state machines decide on: plain data parsed from
 * what agents reported and users set. Built by the refresh use-case from rows;
 * everything downstream is pure.
 */
import type { Interface, Inventory } from '../../../agent/types';

export interface L3Result {
  remote_ip_address: string;
  successful: boolean;
  average_rtt_ms?: number;
  packet_loss_percentage?: number;
  outgoing_nic?: string;
}
export interface L2Result {
  remote_ip_address: string;
  successful: boolean;
  outgoing_nic?: string;
}
export interface ConnectivityReport {
  remote_hosts: Array<{ host_id: string; l2_connectivity?: L2Result[]; l3_connectivity?: L3Result[] }>;
}

export interface HostFacts {
  id: string;
  status: string;
  /** Day 2: the host joins an installed cluster (kind AddToExistingClusterHost). */
  day2: boolean;
  role: string;
  suggestedRole: string;
  bootstrap: boolean;
  /** requested_hostname, else the inventory's. */
  hostname: string | undefined;
  requestedHostname: string | undefined;
  /**
   * The whole inventory. Built by the refresher from its kept copy, it is
   * parsed on first read and is not enumerable (a spread of the facts does
   * not parse it): read it for this host's own checks; what every refresh
   * reads of every host is in inventoryView.
   */
  inventory: Inventory | undefined;
  /** The refresher's kept view of the inventory (InventoryView); absent, inventoryView derives it from `inventory`. */
  view?: InventoryView;
  connectivity: ConnectivityReport | undefined;
  ntpSources: Array<{ source_name: string; source_state: string }> | undefined;
  /** From container-image-availability: each image the install runs, and whether the host could pull it. */
  imagesStatus: Array<{ name: string; result: string }> | undefined;
  /** From the disk-speed step: the install disk's fdatasync p99 in ms. */
  diskSyncMs: number | undefined;
  installationDiskId: string | undefined;
  /** ms since the last poll; undefined when it never polled. */
  sinceCheckInMs: number | undefined;
  /** The part of that silence the service spent overloaded (turning agents away, running late; silence.ts): not counted against the host. */
  excusedSilenceMs?: number;
  /** The host's clock (unix seconds) at its last poll, and the service's at the same moment. */
  agentTimestampS: number | undefined;
  serviceTimestampS: number | undefined;
}

export interface ClusterFacts {
  id: string;
  name: string;
  status: string;
  baseDnsDomain: string | undefined;
  pullSecretSet: boolean;
  controlPlaneCount: number;
  userManagedNetworking: boolean;
  machineNetworks: string[];
  clusterNetworks: Array<{ cidr: string; hostPrefix: number }>;
  serviceNetworks: string[];
  apiVips: string[];
  ingressVips: string[];
  networkType: string | undefined;
  /** Day 2: an AddHostsCluster (installed, then opened with allow-add-workers, or imported): new hosts join it. */
  day2: boolean;
  /** The cluster's release and the CPU architectures Landfall ships it for (undefined: not in the catalogue). */
  release: { version: string; cpuArchitectures: string[] | undefined };
  hosts: HostFacts[];
}

/** Statuses of a node that is part of the running cluster (day 1 installed, or day 2 joined). */
export const CLUSTER_NODE_STATUSES = ['installed', 'added-to-existing-cluster'];

export function parseJson<T>(text: string | null | undefined): T | undefined {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}

/**
 * What a refresh reads of every host's inventory at every refresh: the
 * peers' side of host checks, cluster checks, derived networks, suggested
 * roles, the step view. The refresher keeps this view of each host parsed,
 * and of the rest only the text (facts-builder KeptInventory): a parsed
 * inventory is ~140 objects, and the refresher's full collections of
 * thousands of them were its longest pauses, each a report's refresh held
 * that long (bench/README.md, 2026-11-29, seventh session).
 * A check that reads more of a peer's inventory reads it here, after adding it.
 */
export interface InventoryView {
  hostname: string | undefined;
  cpuCount: number;
  physicalBytes: number;
  /** The largest disk eligible for installation as stored (0: none): role ordering. */
  largestEligibleDiskBytes: number;
  /** Each NIC's name, MAC and IPv4 addresses: what peers' checks, networks and the step view read of a NIC. */
  interfaces: Array<Pick<Interface, 'name' | 'mac_address' | 'ipv4_addresses'>>;
}

export function viewOfInventory(inv: Inventory): InventoryView {
  const eligible = inv.disks.filter((d) => d.installation_eligibility.eligible).map((d) => d.size_bytes);
  return {
    hostname: inv.hostname,
    cpuCount: inv.cpu.count,
    physicalBytes: inv.memory.physical_bytes,
    largestEligibleDiskBytes: Math.max(0, ...eligible),
    interfaces: (inv.interfaces ?? []).map((i) => ({ name: i.name, mac_address: i.mac_address, ipv4_addresses: i.ipv4_addresses ?? [] })),
  };
}

const derivedViews = new WeakMap<Inventory, InventoryView>();

/** The host's inventory view: the kept one, else derived from its inventory (once per parsed inventory); undefined without an inventory. */
export function inventoryView(h: HostFacts): InventoryView | undefined {
  if (h.view) return h.view;
  const inv = h.inventory;
  if (!inv) return undefined;
  let v = derivedViews.get(inv);
  if (!v) derivedViews.set(inv, (v = viewOfInventory(inv)));
  return v;
}

/** The role a host is checked against: its set role, or the suggestion while auto-assign. */
export function effectiveRole(h: HostFacts, cluster?: ClusterFacts): 'master' | 'worker' | 'arbiter' | 'sno' {
  // A host added to a running cluster joins it as a worker, a single-node one too (assisted-service installs day-2 hosts as workers).
  if (h.day2) return 'worker';
  if (cluster?.controlPlaneCount === 1) return 'sno';
  const r = h.role === 'auto-assign' ? h.suggestedRole : h.role;
  return r === 'worker' ? 'worker' : r === 'arbiter' ? 'arbiter' : 'master';
}
