/**
 * The facts validations and state machines decide on: plain data parsed from
 * what agents reported and users set. Built by the refresh use-case from rows;
 * everything downstream is pure.
 */
import type { Inventory } from '../../../agent/types';

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
  inventory: Inventory | undefined;
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

/** The role a host is checked against: its set role, or the suggestion while auto-assign. */
export function effectiveRole(h: HostFacts, cluster?: ClusterFacts): 'master' | 'worker' | 'arbiter' | 'sno' {
  // A host added to a running cluster joins it as a worker, a single-node one too (assisted-service installs day-2 hosts as workers).
  if (h.day2) return 'worker';
  if (cluster?.controlPlaneCount === 1) return 'sno';
  const r = h.role === 'auto-assign' ? h.suggestedRole : h.role;
  return r === 'worker' ? 'worker' : r === 'arbiter' ? 'arbiter' : 'master';
}
