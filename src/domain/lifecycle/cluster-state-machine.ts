/**
 * The cluster state machine as a table (reference §4, day-1 pre-install and
 * user actions; the install workflow adds its own events). Same contract as
 * the host table: typed events, mutually exclusive guards, descriptions.
 */
export const CLUSTER_STATES = {
  'pending-for-input': 'The user must provide something (networks, VIPs, base domain, pull secret).',
  insufficient: 'Inputs are there, but a required check fails (hosts not ready, wrong counts, bad VIPs).',
  ready: 'Every check passes: install can start.',
  'preparing-for-installation': 'Install requested: generating configs and checking hosts.',
  installing: 'Hosts are installing.',
  'installing-pending-user-action': 'A host needs the user (wrong boot order).',
  finalizing: 'Hosts are installed; waiting for the cluster to settle.',
  installed: 'The cluster is installed.',
  error: 'The install failed.',
  cancelled: 'The install was cancelled.',
  'adding-hosts': 'Day 2: the cluster is installed (or imported) and accepts new hosts, each installed on its own.',
} as const;

export type ClusterStatus = keyof typeof CLUSTER_STATES;

export interface ClusterRefreshSummary {
  /** Some `input` validation fails (reference §5b pending-for-input group). */
  inputMissing: boolean;
  /** Some required validation fails. */
  requiredFailing: boolean;
}

export type ClusterEvent =
  | { type: 'Refresh'; summary: ClusterRefreshSummary }
  | { type: 'InstallRequested' }
  | { type: 'InstallNotStarted' }
  | { type: 'CancelRequested' }
  | { type: 'ResetRequested' }
  | { type: 'HostsPrepared' }
  | { type: 'PreparationFailed' }
  | { type: 'SuccessRuleMet' }
  | { type: 'InstallFailed'; reason?: string }
  | { type: 'ComponentsAvailable' }
  | { type: 'HostRetried' }
  | { type: 'HostNeedsUser'; pending: boolean }
  | { type: 'AddHostsAllowed' }
  | { type: 'ClusterImported' };

export interface ClusterRule<E extends ClusterEvent['type'] = ClusterEvent['type']> {
  event: E;
  from: readonly ClusterStatus[];
  to: ClusterStatus;
  guard?: (e: Extract<ClusterEvent, { type: E }>) => boolean;
  info: string | ((e: Extract<ClusterEvent, { type: E }>) => string);
  description: string;
}

const PRE_INSTALL: readonly ClusterStatus[] = ['pending-for-input', 'insufficient', 'ready'];
const rule = <E extends ClusterEvent['type']>(r: ClusterRule<E>): ClusterRule => r as unknown as ClusterRule;

export const CLUSTER_CANCELLABLE: readonly ClusterStatus[] = ['preparing-for-installation', 'installing', 'installing-pending-user-action', 'finalizing', 'error'];
export const CLUSTER_RESETTABLE: readonly ClusterStatus[] = [...CLUSTER_CANCELLABLE, 'cancelled'];

export const CLUSTER_TRANSITIONS: readonly ClusterRule[] = [
  rule({ event: 'Refresh', from: PRE_INSTALL, guard: (e) => e.summary.inputMissing, to: 'pending-for-input', info: 'User input required', description: 'Some input validation fails.' }),
  rule({ event: 'Refresh', from: PRE_INSTALL, guard: (e) => !e.summary.inputMissing && e.summary.requiredFailing, to: 'insufficient', info: 'Cluster is not ready for install', description: 'Inputs are complete but a required validation fails.' }),
  rule({ event: 'Refresh', from: PRE_INSTALL, guard: (e) => !e.summary.inputMissing && !e.summary.requiredFailing, to: 'ready', info: 'Cluster ready to be installed', description: 'Every validation passes.' }),
  rule({ event: 'InstallRequested', from: ['ready'], to: 'preparing-for-installation', info: 'Preparing cluster for installation', description: 'The user started the install (POST actions/install).' }),
  rule({ event: 'InstallNotStarted', from: ['preparing-for-installation'], to: 'ready', info: 'Cluster ready to be installed', description: 'The install workflow could not be started (Temporal unavailable): the install request is undone.' }),
  rule({ event: 'HostsPrepared', from: ['preparing-for-installation'], to: 'installing', info: 'Installation in progress', description: 'Every host passed the pre-install checks; install steps are dispatched.' }),
  rule({ event: 'PreparationFailed', from: ['preparing-for-installation'], to: 'ready', info: 'Cluster failed to prepare for installation', description: 'A host failed its pre-install checks, or preparing timed out.' }),
  rule({ event: 'SuccessRuleMet', from: ['installing', 'installing-pending-user-action'], to: 'finalizing', info: 'Finalizing cluster installation', description: 'Enough hosts are installed (reference §4 success rule).' }),
  rule({ event: 'InstallFailed', from: ['installing', 'installing-pending-user-action', 'finalizing'], to: 'error', info: (e) => (e.reason ? `Cluster installation failed: ${e.reason}` : 'Cluster installation failed'), description: 'The success rule can no longer be met, or finalizing timed out.' }),
  rule({ event: 'ComponentsAvailable', from: ['finalizing'], to: 'installed', info: 'Cluster is installed', description: 'The in-cluster controller reported the core components available.' }),
  rule({ event: 'HostRetried', from: ['error'], to: 'installing', info: 'Installation in progress: a host is being retried', description: 'The user retried a failed host in place.' }),
  rule({ event: 'HostNeedsUser', from: ['installing'], guard: (e) => e.pending, to: 'installing-pending-user-action', info: 'Cluster has hosts pending user action', description: 'A host booted the discovery image instead of its disk; the user must fix its boot order.' }),
  rule({ event: 'HostNeedsUser', from: ['installing-pending-user-action'], guard: (e) => !e.pending, to: 'installing', info: 'Installation in progress', description: 'No host waits for the user any more.' }),
  rule({ event: 'ClusterImported', from: ['insufficient'], to: 'adding-hosts', info: 'cluster is adding hosts to existing OCP cluster', description: 'Day 2: an existing cluster was imported (POST /v2/clusters/import); it goes from its initial status straight to accepting hosts, as assisted-service registers it.' }),
  rule({ event: 'AddHostsAllowed', from: ['installed'], to: 'adding-hosts', info: 'Cluster is installed and accepts new hosts', description: 'Day 2: the user allowed adding hosts to the installed cluster (POST actions/allow-add-workers); its kind becomes AddHostsCluster.' }),
  rule({ event: 'CancelRequested', from: CLUSTER_CANCELLABLE.filter((s) => s !== 'preparing-for-installation'), to: 'cancelled', info: 'Canceled cluster installation', description: 'The user cancelled the install.' }),
  // As in assisted-service: nothing was written to a disk yet, so cancelling only stops the preparation (the hosts go back to known).
  rule({ event: 'CancelRequested', from: ['preparing-for-installation'], to: 'ready', info: 'Cluster ready to be installed', description: 'The user cancelled while the cluster was preparing: back to ready.' }),
  rule({ event: 'ResetRequested', from: CLUSTER_RESETTABLE, to: 'insufficient', info: 'Reset cluster installation', description: 'The user reset the cluster; hosts must boot the discovery image again.' }),
];

export function nextClusterStatus(from: string, event: ClusterEvent): { to: ClusterStatus; info: string; rule: ClusterRule } | undefined {
  const matches = CLUSTER_TRANSITIONS.filter((r) => r.event === event.type && r.from.includes(from as ClusterStatus) && (!r.guard || (r.guard as (e: ClusterEvent) => boolean)(event)));
  if (matches.length > 1) throw new Error(`ambiguous cluster transitions from ${from} on ${event.type}`);
  const r = matches[0];
  return r ? { to: r.to, info: typeof r.info === 'function' ? (r.info as (e: ClusterEvent) => string)(event) : r.info, rule: r } : undefined;
}
