/**
 * One cluster install, from `preparing-for-installation` to `installed`.
 * Activities do the I/O (activities/install.ts); agent reports arrive as
 * signals from the API, once per host status or stage change; the user's
 * retry of one host is a validated update. The workflow holds only small
 * facts (host ids, roles, statuses, stages): Ignition and keys stay in
 * object storage.
 */
import { ActivityFailure, ApplicationFailure, condition, continueAsNew, log, proxyActivities, setHandler, upsertSearchAttributes, workflowInfo, allHandlersFinished } from '@temporalio/workflow';
import type { InstallActivities, PreparedHost } from '../activities/install';
import type { BmcActivities } from '../activities/bmc';
import { diskBootDue } from '../src/domain/bmc-disk-boot';
import { successRule } from '../src/domain/lifecycle/success-rule';
import { SEARCH_ATTRIBUTES } from '../src/temporal/names';
import {
  DEFAULT_TIMEOUTS,
  clusterComponentsReported,
  getInstallProgress,
  hostInstallReported,
  installCancelled,
  installReset,
  retryHost,
  type HostReport,
  type InstallInput,
  type InstallProgress,
} from './install-cluster.messages';

const acts = proxyActivities<InstallActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 10, nonRetryableErrorTypes: ['not_found', 'no_bootstrap_host'] },
});

// A host's BMC is driven between its own reboot and the ISO coming back: a few quick attempts, then the user path.
const bmcActs = proxyActivities<BmcActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '5 seconds', maximumAttempts: 3, nonRetryableErrorTypes: ['bmc_refused', 'bmc_unconfigured', 'not_found'] },
});

interface HostState {
  hostId: string;
  role: 'master' | 'worker';
  status: string;
  stage?: string;
  stageSince?: number;
  softWarned?: string;
  retries: number;
  /** The host has a BMC (prepare said so): the install boots it from disk after the image is written. */
  bmc?: boolean;
  diskBoot?: 'switched' | 'restarted' | 'failed';
}

/** What survives continue-as-new: the install's facts, never its history. */
interface Carried {
  phase: InstallProgress['phase'];
  hosts: HostState[];
  bootstrapHostId?: string;
  controlPlaneCount: number;
  error?: string;
}

export async function installClusterWorkflow(input: InstallInput, carried?: Carried): Promise<InstallProgress> {
  const timeouts = { ...DEFAULT_TIMEOUTS, ...input.timeouts };
  const state: Carried = carried ?? { phase: 'preparing', hosts: [], controlPlaneCount: 3 };
  let componentsAvailable = false;
  let cancelled = false;
  let reset = false;
  let waitingFor = 'preparation';

  const host = (id: string) => state.hosts.find((h) => h.hostId === id);
  const progress = (): InstallProgress => ({ phase: state.phase, bootstrapHostId: state.bootstrapHostId, waitingFor, hosts: state.hosts.map((h) => ({ ...h })), error: state.error });
  const setPhase = (phase: InstallProgress['phase']) => {
    state.phase = phase;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.installStatus, value: phase }]);
  };

  // Handlers first: a signal that arrives before them is buffered, an update would be rejected.
  // Reports that arrive while prepare is still running (before the host list is known) wait here.
  const early = new Map<string, HostReport>();
  const apply = (r: HostReport) => {
    const h = host(r.hostId);
    if (!h) {
      early.set(r.hostId, r);
      return;
    }
    if (r.stage && r.stage !== h.stage) {
      h.stage = r.stage;
      h.stageSince = Date.now();
    }
    h.status = r.status;
  };
  setHandler(hostInstallReported, apply);
  // The controller's complete-installation with is_success false arrives as available: false with its error.
  let completionFailure: string | undefined;
  setHandler(clusterComponentsReported, (r) => {
    componentsAvailable = r.available;
    if (!r.available && r.detail) completionFailure = r.detail;
  });
  setHandler(installCancelled, () => {
    cancelled = true;
  });
  setHandler(installReset, () => {
    reset = true;
  });
  setHandler(getInstallProgress, progress);
  setHandler(
    retryHost,
    async ({ hostId }) => {
      const h = host(hostId)!;
      h.retries += 1;
      // Claimed before the first await: a second retry of this host, validated while this one waits
      // for its activity, must see it is no longer in error (or it would queue a second install step).
      h.status = 'retrying';
      try {
        await acts.retryHostInstall({ clusterId: input.clusterId, attempt: input.attempt, hostId, retry: h.retries, bootstrapHostId: state.bootstrapHostId ?? '', controlPlaneCount: state.controlPlaneCount });
      } catch (err) {
        h.status = 'error';
        throw err;
      }
      h.status = 'installing';
      h.stage = undefined;
      h.stageSince = undefined;
      h.softWarned = undefined;
      h.diskBoot = undefined;
      state.error = undefined;
      if (state.phase === 'error') setPhase('installing');
      return { hostId, retry: h.retries };
    },
    {
      validator: ({ hostId }) => {
        const h = host(hostId);
        if (!h) throw new Error(`host ${hostId} is not part of this install`);
        if (h.status !== 'error') throw new Error(`host ${hostId} is ${h.status}; only a host in error can be retried`);
        if (state.phase !== 'installing' && state.phase !== 'error') throw new Error(`the install is ${state.phase}; hosts can be retried while installing or failed`);
      },
    },
  );

  const stopped = () => cancelled || reset;
  const finish = async (phase: InstallProgress['phase']) => {
    if (phase !== state.phase) setPhase(phase);
    await condition(allHandlersFinished);
    return progress();
  };

  if (!carried) {
    setPhase('preparing');
    const prepared = await acts.prepareInstallation({ clusterId: input.clusterId, attempt: input.attempt });
    state.controlPlaneCount = prepared.controlPlaneCount;
    state.hosts = prepared.hosts.map((h: PreparedHost) => ({ hostId: h.hostId, role: h.role, status: h.status, retries: 0, ...(h.bmc ? { bmc: true } : {}) }));
    // Reports committed after prepare's own reads: newer than what prepare returned.
    for (const r of early.values()) apply(r);
    early.clear();

    waitingFor = 'every host to pass its pre-install checks (install disk speed)';
    const settled = () => state.hosts.every((h) => h.status === 'preparing-successful' || h.status === 'preparing-failed');
    const inTime = await condition(() => stopped() || settled(), timeouts.preparingMs);
    if (stopped()) return finish(cancelled ? 'cancelled' : 'reset');
    const failed = state.hosts.filter((h) => h.status === 'preparing-failed').map((h) => h.hostId);
    if (!inTime || failed.length) {
      state.error = inTime ? `hosts failed their pre-install checks: ${failed.join(', ')}` : `preparation timed out after ${Math.round(timeouts.preparingMs / 1000)} s`;
      await acts.abortPreparation({ clusterId: input.clusterId, reason: state.error });
      return finish('preparation-failed');
    }

    state.bootstrapHostId = await acts.selectBootstrapHost({ clusterId: input.clusterId, candidates: state.hosts.filter((h) => h.role === 'master').map((h) => h.hostId) });
    await acts.dispatchInstallSteps({ clusterId: input.clusterId, attempt: input.attempt, bootstrapHostId: state.bootstrapHostId, hosts: state.hosts.map((h) => ({ hostId: h.hostId, infraEnvId: '', role: h.role, status: h.status })), controlPlaneCount: state.controlPlaneCount });
    for (const h of state.hosts) {
      h.status = 'installing';
      h.stageSince = Date.now();
    }
    setPhase('installing');
  }

  // Installing: follow every host until the success rule is met or cannot be.
  let pendingUser = false;
  const diskBootsDue = () => state.hosts.some((h) => diskBootDue(h, state) !== undefined);
  while (state.phase === 'installing' || state.phase === 'error') {
    const anyPending = state.hosts.some((h) => h.status === 'installing-pending-user-action');
    if (anyPending !== pendingUser && state.phase === 'installing') {
      await acts.markHostsPendingUser({ clusterId: input.clusterId, pending: anyPending });
      pendingUser = anyPending;
    }
    const verdict = () => successRule(state.controlPlaneCount, state.hosts);
    waitingFor = state.phase === 'error' ? 'a retry of the failed host (retryHost), a cancel or a reset' : 'hosts to report their install stages';
    const tick = Math.min(60_000, timeouts.stageSoftMs);
    await condition(() => stopped() || diskBootsDue() || (state.phase === 'installing' && (verdict() !== 'pending' || state.hosts.some((h) => h.status === 'installing-pending-user-action') !== pendingUser)), tick);
    if (stopped()) return finish(cancelled ? 'cancelled' : 'reset');
    // Hosts with a BMC: after the image is written, disk as boot device and the ISO out; at Rebooting, a restart.
    for (const h of state.hosts) {
      const step = diskBootDue(h, state);
      if (!step) continue;
      const action = step === 'switch' ? 'boot from disk after the image was written' : 'restart from disk';
      try {
        const r = step === 'switch' ? await bmcActs.bootHostFromDisk({ clusterId: input.clusterId, hostId: h.hostId }) : await bmcActs.restartHostFromDisk({ clusterId: input.clusterId, hostId: h.hostId });
        h.diskBoot = !r.done ? 'failed' : step === 'switch' ? 'switched' : 'restarted';
      } catch (err) {
        h.diskBoot = 'failed';
        const reason = err instanceof ActivityFailure && err.cause ? err.cause.message : (err as Error).message;
        await bmcActs.reportBmcFailure({ clusterId: input.clusterId, hostId: h.hostId, action, reason });
      }
    }
    if (state.phase === 'installing' && verdict() === 'met') break;
    if (state.phase === 'installing' && verdict() === 'impossible') {
      const failed = state.hosts.filter((h) => h.status === 'error').map((h) => h.hostId);
      state.error = `the cluster cannot reach its success rule: host(s) ${failed.join(', ')} failed`;
      await acts.markClusterFailed({ clusterId: input.clusterId, reason: state.error });
      setPhase('error');
      continue;
    }
    // Stage timeouts, soft first: a warning event and keep waiting; hard: the host fails.
    const now = Date.now();
    for (const h of state.hosts) {
      if (!h.stageSince || !['installing', 'installing-in-progress'].includes(h.status)) continue;
      const age = now - h.stageSince;
      const stage = h.stage ?? 'Starting installation';
      if (age > timeouts.stageHardMs) {
        await acts.reportStageTimeout({ clusterId: input.clusterId, hostId: h.hostId, stage, minutes: Math.round(age / 60_000), seconds: Math.round(age / 1000), hard: true });
        h.status = 'error';
      } else if (age > timeouts.stageSoftMs && h.softWarned !== stage) {
        await acts.reportStageTimeout({ clusterId: input.clusterId, hostId: h.hostId, stage, minutes: Math.round(age / 60_000), seconds: Math.round(age / 1000), hard: false });
        h.softWarned = stage;
      }
    }
    // Long installs with many reports: start a fresh history carrying only the facts.
    if (workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof installClusterWorkflow>(input, state);
    }
  }

  // Finalizing: the in-cluster side reports the core components available.
  await acts.startFinalizing({ clusterId: input.clusterId });
  setPhase('finalizing');
  waitingFor = 'the cluster to report its core components available (monitored-operators)';
  const done = await condition(() => stopped() || componentsAvailable || completionFailure !== undefined, timeouts.finalizingMs);
  if (stopped()) return finish(cancelled ? 'cancelled' : 'reset');
  if (completionFailure !== undefined && !componentsAvailable) {
    state.error = `the cluster's controller reported the installation failed: ${completionFailure}`;
    await acts.markClusterFailed({ clusterId: input.clusterId, reason: state.error });
    throw ApplicationFailure.nonRetryable(state.error, 'completion_failed');
  }
  if (!done) {
    state.error = `finalizing did not complete within ${Math.round(timeouts.finalizingMs / 60_000)} minutes`;
    await acts.markClusterFailed({ clusterId: input.clusterId, reason: state.error });
    throw ApplicationFailure.nonRetryable(state.error, 'finalizing_timeout');
  }
  await acts.completeInstallation({ clusterId: input.clusterId });
  log.info('cluster installed', { clusterId: input.clusterId });
  return finish('installed');
}
