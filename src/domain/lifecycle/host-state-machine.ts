/**
 * The host state machine as a table (reference §3, day-1 scope). Each rule:
 * the event it answers, the states it applies in, a guard on the event's
 * facts, the destination and a description that the docs are generated from.
 * A test proves no two rules can fire in the same situation, so order never
 * matters.
 */
export const HOST_STATES = {
  discovering: 'Registered; waiting for the inventory.',
  known: 'Every blocking validation passes: ready to install.',
  insufficient: 'A blocking validation fails (hardware, network, time).',
  'pending-for-input': 'Waiting for the user: the cluster has no machine network yet.',
  disconnected: 'The agent stopped polling.',
  'preparing-for-installation': 'The cluster is preparing; the host runs pre-install checks.',
  'preparing-successful': 'Pre-install checks passed.',
  'preparing-failed': 'A pre-install check failed (slow install disk).',
  installing: 'The install step was handed to the host.',
  'installing-in-progress': 'The host reports install stages.',
  'installing-pending-user-action': 'The host booted the discovery image again during install; fix the boot order.',
  installed: 'The host reported Done.',
  error: 'The install failed on this host.',
  cancelled: 'The install was cancelled.',
  'resetting-pending-user-action': 'Reset: reboot the host into the discovery image.',
  'added-to-existing-cluster': "Day 2: the cluster's controller reported the node joined; waiting for it to report the node ready.",
} as const;

export type HostStatus = keyof typeof HOST_STATES;

/** What a refresh found, reduced to the questions the state machine asks. */
export interface HostRefreshSummary {
  connected: boolean;
  hasInventory: boolean;
  /** has-min-cpu-cores, has-min-memory, has-min-valid-disks pass. */
  hardwareOk: boolean;
  /** The cluster has a machine network. */
  machineCidrOk: boolean;
  /** No other blocking validation fails. */
  blockingOk: boolean;
}

export type HostEvent =
  | { type: 'RegisterHost'; currentStage?: string }
  | { type: 'Refresh'; summary: HostRefreshSummary }
  /** day2: the host joins an installed cluster (its cluster is an AddHostsCluster). */
  | { type: 'ProgressReported'; stage: string; info?: string; day2?: boolean }
  | { type: 'CancelInstallation' }
  | { type: 'ResetInstallation' }
  | { type: 'InstallStarted' }
  | { type: 'DiskSpeedReported'; ok: boolean }
  | { type: 'InstallDispatched' }
  | { type: 'PreparationAborted' }
  | { type: 'StageTimedOut'; stage: string }
  | { type: 'RetryRequested' }
  | { type: 'Day2InstallRequested' }
  | { type: 'Day2InstallAborted' }
  | { type: 'Day2PreparationFailed'; reason: string }
  | { type: 'Day2WorkflowEnded'; reason: string };

export interface HostRule<E extends HostEvent['type'] = HostEvent['type']> {
  event: E;
  from: readonly HostStatus[];
  to: HostStatus;
  guard?: (e: Extract<HostEvent, { type: E }>) => boolean;
  info: string | ((e: Extract<HostEvent, { type: E }>) => string);
  description: string;
}

const PRE_INSTALL: readonly HostStatus[] = ['discovering', 'known', 'insufficient', 'pending-for-input', 'disconnected'];
const INSTALLING: readonly HostStatus[] = ['installing', 'installing-in-progress', 'installing-pending-user-action'];
/** A day-2 host the controller saw join: still on its way to installed (the node must become ready). */
const JOINED: readonly HostStatus[] = ['added-to-existing-cluster'];
const day2Joined = (e: { stage: string; day2?: boolean }) => Boolean(e.day2) && e.stage === 'Joined';
const rule = <E extends HostEvent['type']>(r: HostRule<E>): HostRule => r as unknown as HostRule;

export const HOST_TRANSITIONS: readonly HostRule[] = [
  // Registration
  rule({ event: 'RegisterHost', from: [...PRE_INSTALL, 'resetting-pending-user-action', 'cancelled'], to: 'discovering', info: 'Waiting for host to send hardware details', description: 'A host that registers (again) starts discovery over.' }),
  rule({ event: 'RegisterHost', from: ['preparing-for-installation', 'preparing-successful'], to: 'known', info: 'Host registered again while the cluster was preparing', description: 'A host that rebooted while preparing goes back to known.' }),
  rule({ event: 'RegisterHost', from: ['installing-in-progress', 'installing-pending-user-action'], guard: (e) => e.currentStage === 'Rebooting', to: 'installing-pending-user-action', info: 'Expected the host to boot from disk, but it booted the installation image - please reboot and fix boot order to boot from disk', description: 'After Rebooting, the host booted the discovery image instead of its disk.' }),
  rule({ event: 'RegisterHost', from: ['installing', 'installing-in-progress'], guard: (e) => e.currentStage !== 'Rebooting', to: 'error', info: 'The host unexpectedly restarted during the installation', description: 'A host that registers in the middle of installing has restarted: the install failed.' }),
  // Refresh (pre-install), one rule per outcome; the guards partition the summary space.
  rule({ event: 'Refresh', from: PRE_INSTALL, guard: (e) => !e.summary.connected, to: 'disconnected', info: 'Host has stopped communicating with the installation service', description: 'No poll within the disconnect timeout.' }),
  rule({ event: 'Refresh', from: PRE_INSTALL, guard: (e) => e.summary.connected && !e.summary.hasInventory, to: 'discovering', info: 'Waiting for host to send hardware details', description: 'Connected, but no inventory yet.' }),
  rule({ event: 'Refresh', from: PRE_INSTALL, guard: (e) => e.summary.connected && e.summary.hasInventory && !e.summary.hardwareOk, to: 'insufficient', info: 'Host does not meet the minimum hardware requirements', description: 'CPU, memory or disks below the minimum for any role.' }),
  rule({ event: 'Refresh', from: PRE_INSTALL, guard: (e) => e.summary.connected && e.summary.hasInventory && e.summary.hardwareOk && !e.summary.machineCidrOk, to: 'pending-for-input', info: 'Waiting for user input: the cluster needs a machine network', description: 'Hardware is fine; the cluster has no machine network yet.' }),
  rule({ event: 'Refresh', from: PRE_INSTALL, guard: (e) => e.summary.connected && e.summary.hasInventory && e.summary.hardwareOk && e.summary.machineCidrOk && !e.summary.blockingOk, to: 'insufficient', info: 'Host cannot be installed due to following failing validation(s)', description: 'A blocking validation fails.' }),
  rule({ event: 'Refresh', from: PRE_INSTALL, guard: (e) => e.summary.connected && e.summary.hasInventory && e.summary.hardwareOk && e.summary.machineCidrOk && e.summary.blockingOk, to: 'known', info: 'Host is ready to be installed', description: 'Every blocking validation passes.' }),
  // Install progress
  rule({ event: 'ProgressReported', from: [...INSTALLING, ...JOINED], guard: (e) => e.stage === 'Done', to: 'installed', info: 'Done', description: 'The host (day 2: the cluster\'s controller, once the node is ready) reported the Done stage.' }),
  rule({ event: 'ProgressReported', from: [...INSTALLING, ...JOINED], guard: (e) => e.stage === 'Failed', to: 'error', info: (e) => `Failed - ${e.info ?? ''}`.trim(), description: 'The host reported the Failed stage.' }),
  rule({ event: 'ProgressReported', from: INSTALLING, guard: (e) => e.stage !== 'Done' && e.stage !== 'Failed' && !day2Joined(e), to: 'installing-in-progress', info: (e) => e.stage, description: 'The host reported another install stage.' }),
  rule({ event: 'ProgressReported', from: INSTALLING, guard: day2Joined, to: 'added-to-existing-cluster', info: 'Host joined the existing cluster (reported by the cluster\'s controller)', description: 'Day 2: the cluster\'s controller saw the new node register with the cluster.' }),
  // The install workflow
  rule({ event: 'InstallStarted', from: ['known'], to: 'preparing-for-installation', info: 'Host is preparing for installation', description: 'The cluster started installing: pre-install checks run (disk speed).' }),
  rule({ event: 'DiskSpeedReported', from: ['preparing-for-installation'], guard: (e) => e.ok, to: 'preparing-successful', info: 'Host finished successfully to prepare for installation', description: 'The install disk passed the speed check.' }),
  rule({ event: 'DiskSpeedReported', from: ['preparing-for-installation'], guard: (e) => !e.ok, to: 'preparing-failed', info: 'Host failed to prepare for installation: the installation disk is too slow', description: 'The install disk failed the speed check.' }),
  rule({ event: 'PreparationAborted', from: ['preparing-for-installation', 'preparing-successful', 'preparing-failed'], to: 'known', info: 'Host is ready to be installed', description: 'Preparation failed or timed out for the cluster: hosts go back to known.' }),
  rule({ event: 'InstallDispatched', from: ['preparing-successful'], to: 'installing', info: 'Installation is in progress', description: 'The install step is in the host\'s queue.' }),
  rule({ event: 'StageTimedOut', from: [...INSTALLING, ...JOINED], to: 'error', info: (e) => `Host failed to install because its installation stage ${e.stage} took longer than expected`, description: 'A stage exceeded its hard timeout.' }),
  rule({ event: 'RetryRequested', from: ['error'], to: 'installing', info: 'Installation is being retried', description: 'The user retried this host (retryHost update).' }),
  rule({ event: 'Day2InstallAborted', from: ['installing'], to: 'known', info: 'Host is ready to be installed', description: 'Day 2: the host\'s install workflow could not be started (Temporal unavailable); the host is known again.' }),
  rule({ event: 'Day2PreparationFailed', from: ['installing'], to: 'error', info: (e) => `Failed - the install could not be prepared: ${e.reason}`, description: 'Day 2: the host\'s Ignition or install step could not be made (no CA or API name to join with); retry or reset the host.' }),
  rule({ event: 'Day2WorkflowEnded', from: [...INSTALLING, ...JOINED], to: 'error', info: (e) => `Failed - ${e.reason}`, description: 'Day 2: the host monitor found the host\'s install workflow gone or ended without finishing it; retry (a new attempt) or reset the host.' }),
  rule({ event: 'Day2InstallRequested', from: ['known'], to: 'installing', info: 'Installation is in progress', description: 'Day 2: the user installed this known host into its installed cluster (POST …/hosts/{id}/actions/install).' }),
  // User actions
  rule({ event: 'CancelInstallation', from: [...INSTALLING, ...JOINED, 'installed', 'error'], to: 'cancelled', info: 'Installation cancelled by user', description: 'The user cancelled the install.' }),
  rule({ event: 'CancelInstallation', from: ['preparing-for-installation', 'preparing-successful', 'preparing-failed'], to: 'known', info: 'Installation cancelled by user before it started', description: 'Cancelled while preparing: back to known.' }),
  rule({ event: 'ResetInstallation', from: [...INSTALLING, ...JOINED, 'installed', 'error', 'cancelled', 'preparing-for-installation', 'preparing-successful', 'preparing-failed'], to: 'resetting-pending-user-action', info: 'Host requires booting into the discovery image to complete resetting the installation', description: 'The user reset the cluster: the host must boot the discovery image again.' }),
];

export interface HostTransition {
  to: HostStatus;
  info: string;
  rule: HostRule;
}

/** The one rule that fires for this event in this state, or undefined (the event changes nothing). */
export function nextHostStatus(from: string, event: HostEvent): HostTransition | undefined {
  const matches = HOST_TRANSITIONS.filter((r) => r.event === event.type && r.from.includes(from as HostStatus) && (!r.guard || (r.guard as (e: HostEvent) => boolean)(event)));
  if (matches.length > 1) throw new Error(`ambiguous host transitions from ${from} on ${event.type}`);
  const r = matches[0];
  if (!r) return undefined;
  return { to: r.to, info: typeof r.info === 'function' ? (r.info as (e: HostEvent) => string)(event) : r.info, rule: r };
}
