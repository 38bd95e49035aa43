/**
 * One day-2 host, from `installing` to `installed` in a running cluster.
 * The host is installed alone: no other host of the cluster is asked to do
 * anything. Activities do the I/O (activities/install-day2.ts): mint the
 * host's join credential, write its Ignition, hand it the install step. The
 * host's installer reports stages up to Rebooting; the cluster's controller
 * then reports the node Joined (→ added-to-existing-cluster) and Done
 * (→ installed). Reports arrive as signals from the API; a retry of the
 * failed host is a validated update, a reset a signal.
 */
import { ActivityFailure, condition, continueAsNew, log, proxyActivities, setHandler, upsertSearchAttributes, workflowInfo, allHandlersFinished, type RetryPolicy } from '@temporalio/workflow';
import type { Day2Activities } from '../activities/install-day2';
import type { InstallActivities } from '../activities/install';
import { SEARCH_ATTRIBUTES } from '../src/temporal/names';
import { DEFAULT_TIMEOUTS } from './install-cluster.messages';
import { day2HostReported, day2HostReset, getDay2HostProgress, retryDay2Host, type Day2InstallInput, type Day2Progress } from './install-day2-host.messages';

const retry: RetryPolicy = { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 10, nonRetryableErrorTypes: ['not_found', 'no_cluster_ca', 'not_retryable'] };
// Activities heartbeat as they run (activities/heartbeat.ts): one on a killed worker is retried after 15 s, not after 2 minutes.
// (Timeouts are not part of the determinism check: saved histories replay unchanged.)
const acts = proxyActivities<Day2Activities>({ startToCloseTimeout: '2 minutes', heartbeatTimeout: '15 seconds', retry });
const installActs = proxyActivities<Pick<InstallActivities, 'reportStageTimeout'>>({ startToCloseTimeout: '2 minutes', heartbeatTimeout: '15 seconds', retry });

/** Statuses in which the host is on its way and its stage clock runs. */
const FOLLOWED = ['installing', 'installing-in-progress', 'added-to-existing-cluster'];

interface Carried {
  phase: Day2Progress['phase'];
  status: string;
  stage?: string;
  stageSince?: number;
  softWarned?: string;
  retries: number;
  credentialExpiresAt?: string;
  error?: string;
}

export async function installDay2HostWorkflow(input: Day2InstallInput, carried?: Carried): Promise<Day2Progress> {
  const timeouts = { ...DEFAULT_TIMEOUTS, ...input.timeouts };
  const s: Carried = carried ?? { phase: 'installing', status: 'installing', retries: 0 };
  let reset = false;
  let waitingFor = 'the host to take its install step';
  const progress = (): Day2Progress => ({ phase: s.phase, hostId: input.hostId, status: s.status, stage: s.stage, retries: s.retries, waitingFor, credentialExpiresAt: s.credentialExpiresAt, error: s.error });
  const setPhase = (phase: Day2Progress['phase']) => {
    s.phase = phase;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.installStatus, value: phase }]);
  };

  // Handlers first: a signal that arrives before them is buffered, an update would be rejected.
  setHandler(day2HostReported, (r) => {
    if (r.hostId !== input.hostId) return;
    if (r.stage && r.stage !== s.stage) {
      s.stage = r.stage;
      s.stageSince = Date.now();
    }
    s.status = r.status;
  });
  setHandler(day2HostReset, () => {
    reset = true;
  });
  setHandler(getDay2HostProgress, progress);
  setHandler(
    retryDay2Host,
    async ({ hostId }) => {
      s.retries += 1;
      // Claimed before the first await, so a second retry validated meanwhile is refused.
      s.status = 'retrying';
      try {
        const r = await acts.retryDay2HostInstall({ clusterId: input.clusterId, infraEnvId: input.infraEnvId, hostId, attempt: input.attempt, retry: s.retries });
        s.credentialExpiresAt = r.credentialExpiresAt;
      } catch (err) {
        s.status = 'error';
        throw err;
      }
      s.status = 'installing';
      s.stage = undefined;
      s.stageSince = Date.now();
      s.softWarned = undefined;
      s.error = undefined;
      setPhase('installing');
      return { hostId, retry: s.retries };
    },
    {
      validator: ({ hostId }) => {
        if (hostId !== input.hostId) throw new Error(`host ${hostId} is not the host of this install (${input.hostId})`);
        if (s.status !== 'error') throw new Error(`host ${hostId} is ${s.status}; only a host in error can be retried`);
        if (reset) throw new Error(`host ${hostId} was reset; install it again instead`);
      },
    },
  );

  const finish = async (phase: Day2Progress['phase']) => {
    if (phase !== s.phase) setPhase(phase);
    await condition(allHandlersFinished);
    return progress();
  };

  if (!carried) {
    try {
      const prepared = await acts.prepareDay2Host({ clusterId: input.clusterId, infraEnvId: input.infraEnvId, hostId: input.hostId, attempt: input.attempt });
      s.credentialExpiresAt = prepared.credentialExpiresAt;
      s.stageSince = Date.now();
    } catch (err) {
      // Retries are spent or it can never work: the host says why, and waits for a retry or a reset like any failed host.
      const reason = err instanceof ActivityFailure && err.cause ? err.cause.message : (err as Error).message;
      await acts.failDay2Host({ clusterId: input.clusterId, infraEnvId: input.infraEnvId, hostId: input.hostId, attempt: input.attempt, reason });
      s.status = 'error';
    }
  }

  for (;;) {
    if (s.phase === 'error') {
      waitingFor = 'a retry of the host (retry-install) or a reset';
      // Not while a retry's activity runs ('retrying'): that would spin; the update moves the phase on when it is done.
      await condition(() => reset || (s.status !== 'error' && s.status !== 'retrying'));
    } else {
      waitingFor = s.status === 'added-to-existing-cluster' ? "the cluster's controller to report the node ready (Done)" : ['Rebooting', 'Waiting for ignition', 'Configuring'].includes(s.stage ?? '') ? "the node to join, reported by the cluster's controller (Joined)" : 'the host to report its install stages';
      await condition(() => reset || s.status === 'installed' || s.status === 'error', Math.min(60_000, timeouts.stageSoftMs));
    }
    if (reset) return finish('reset');
    if (s.status === 'installed') {
      await acts.completeDay2Host({ clusterId: input.clusterId, infraEnvId: input.infraEnvId, hostId: input.hostId });
      log.info('day-2 host installed', { clusterId: input.clusterId, hostId: input.hostId });
      return finish('installed');
    }
    if (s.status === 'error' && s.phase !== 'error') {
      s.error = `host ${input.hostId} failed to install`;
      setPhase('error');
      continue;
    }
    // Stage timeouts, soft first: a warning event and keep waiting; hard: the host fails.
    if (s.stageSince !== undefined && FOLLOWED.includes(s.status)) {
      const age = Date.now() - s.stageSince;
      const stage = s.stage ?? 'Starting installation';
      if (age > timeouts.stageHardMs) {
        await installActs.reportStageTimeout({ clusterId: input.clusterId, hostId: input.hostId, stage, minutes: Math.round(age / 60_000), seconds: Math.round(age / 1000), hard: true });
        s.status = 'error';
      } else if (age > timeouts.stageSoftMs && s.softWarned !== stage) {
        await installActs.reportStageTimeout({ clusterId: input.clusterId, hostId: input.hostId, stage, minutes: Math.round(age / 60_000), seconds: Math.round(age / 1000), hard: false });
        s.softWarned = stage;
      }
    }
    if (workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof installDay2HostWorkflow>(input, s);
    }
  }
}
