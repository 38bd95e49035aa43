/**
 * One cluster install, from `preparing-for-installation` to `installed`.
 * Activities do the I/O (activities/install.ts); agent reports arrive as
 * signals from the API, once per host status or stage change; the user's
 * retry of one host is a validated update. The workflow holds only small
 * facts (host ids, roles, statuses, stages): Ignition and keys stay in
 * object storage.
 *
 * The logic lives in a plain class, ClusterInstall, that holds those facts;
 * the workflow function registers its handlers and runs it. The steps that
 * await activities (the retryHost update and each decision pass of the
 * install loop) take one lock, as in Temporal's safe-message-handlers sample:
 * a retry never runs between the loop's verdict and the activity acting on it
 * (the cluster marked failed while its retried host installs again), and two
 * retries never run their activities side by side.
 */
import { ActivityFailure, ApplicationFailure, allHandlersFinished, condition, continueAsNew, log, patched, proxyActivities, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
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
  type InstallTimeouts,
  type RetryHostResult,
} from './install-cluster.messages';

const acts = proxyActivities<InstallActivities>({
  startToCloseTimeout: '2 minutes',
  // Activities heartbeat as they run (activities/heartbeat.ts): one on a killed worker is retried after this, not after 2 minutes.
  heartbeatTimeout: '15 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 10, nonRetryableErrorTypes: ['not_found', 'no_bootstrap_host'] },
});

// A host's BMC is driven between its own reboot and the ISO coming back: a few quick attempts, then the user path.
const bmcActs = proxyActivities<BmcActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '5 seconds', maximumAttempts: 3, nonRetryableErrorTypes: ['bmc_refused', 'bmc_unconfigured', 'not_found'] },
});

/**
 * Runs started before the lock existed replay without it: their histories may
 * interleave a retry with the loop, and replaying them under the lock would
 * schedule activities in another order.
 */
export const SERIALISED_STEPS_PATCH = 'install-steps-serialised';

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
export interface Carried {
  phase: InstallProgress['phase'];
  hosts: HostState[];
  bootstrapHostId?: string;
  controlPlaneCount: number;
  error?: string;
}

/**
 * A lock for workflow coroutines, first come first served. Tickets rather than
 * a flag: conditions are re-evaluated together after an activation, and two
 * waiters that both saw "free" would both enter.
 */
class Mutex {
  private issued = 0;
  private serving = 0;
  constructor(private readonly enabled: boolean) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (!this.enabled) return fn();
    const ticket = this.issued++;
    await condition(() => this.serving === ticket);
    try {
      return await fn();
    } finally {
      this.serving++;
    }
  }
}

type Phase = InstallProgress['phase'];

export class ClusterInstall {
  private readonly timeouts: InstallTimeouts;
  private readonly state: Carried;
  private readonly lock: Mutex;
  private readonly serialised: boolean;
  private componentsAvailable = false;
  /** The controller's complete-installation with is_success false arrives as available: false with its error. */
  private completionFailure: string | undefined;
  private cancelled = false;
  private reset = false;
  private waitingFor = 'preparation';
  private pendingUser = false;
  /** Reports that arrive while prepare is still running (before the host list is known) wait here. */
  private readonly early = new Map<string, HostReport>();

  constructor(
    private readonly input: InstallInput,
    private readonly carried?: Carried,
  ) {
    this.timeouts = { ...DEFAULT_TIMEOUTS, ...input.timeouts };
    this.state = carried ?? { phase: 'preparing', hosts: [], controlPlaneCount: 3 };
    // Decided once per run: a replayed old run says false throughout, a new run true throughout.
    this.serialised = patched(SERIALISED_STEPS_PATCH);
    this.lock = new Mutex(this.serialised);
  }

  /** Handlers first: a signal that arrives before them is buffered, an update would be rejected. */
  registerHandlers(): void {
    setHandler(hostInstallReported, (r) => this.applyReport(r));
    setHandler(clusterComponentsReported, (r) => {
      this.componentsAvailable = r.available;
      if (!r.available && r.detail) this.completionFailure = r.detail;
    });
    setHandler(installCancelled, () => {
      this.cancelled = true;
    });
    setHandler(installReset, () => {
      this.reset = true;
    });
    setHandler(getInstallProgress, () => this.progress());
    setHandler(retryHost, ({ hostId }) => this.retryHost(hostId), { validator: ({ hostId }) => this.validateRetry(hostId) });
  }

  async run(): Promise<InstallProgress> {
    if (!this.carried) {
      const outcome = await this.prepare();
      if (outcome) return outcome;
    }
    const stopped = await this.followInstall();
    if (stopped) return stopped;
    return this.finalize();
  }

  // ---- messages -------------------------------------------------------------------------------

  private host(id: string): HostState | undefined {
    return this.state.hosts.find((h) => h.hostId === id);
  }

  private progress(): InstallProgress {
    const { phase, bootstrapHostId, error } = this.state;
    return { phase, bootstrapHostId, waitingFor: this.waitingFor, hosts: this.state.hosts.map((h) => ({ ...h })), error };
  }

  private applyReport(r: HostReport): void {
    const h = this.host(r.hostId);
    if (!h) {
      this.early.set(r.hostId, r);
      return;
    }
    if (r.stage && r.stage !== h.stage) {
      h.stage = r.stage;
      h.stageSince = Date.now();
    }
    h.status = r.status;
  }

  private validateRetry(hostId: string): void {
    const h = this.host(hostId);
    if (!h) throw new Error(`host ${hostId} is not part of this install`);
    if (h.status !== 'error') throw new Error(`host ${hostId} is ${h.status}; only a host in error can be retried`);
    if (this.state.phase !== 'installing' && this.state.phase !== 'error') throw new Error(`the install is ${this.state.phase}; hosts can be retried while installing or failed`);
  }

  private async retryHost(hostId: string): Promise<RetryHostResult> {
    const h = this.host(hostId)!;
    h.retries += 1;
    // Claimed before the first await: a second retry of this host, validated while this one waits
    // for the lock or its activity, must see it is no longer in error (or it would queue a second install step).
    h.status = 'retrying';
    return this.lock.run(async () => {
      // While this retry waited for the lock, the loop may have ended the install.
      if (this.serialised && (this.stopped() || (this.state.phase !== 'installing' && this.state.phase !== 'error'))) {
        h.status = 'error';
        throw ApplicationFailure.create({ message: `the install is ${this.stopped() ? (this.cancelled ? 'cancelled' : 'reset') : this.state.phase}; host ${hostId} was not retried`, type: 'install_not_running', nonRetryable: true });
      }
      try {
        await acts.retryHostInstall({ clusterId: this.input.clusterId, attempt: this.input.attempt, hostId, retry: h.retries, bootstrapHostId: this.state.bootstrapHostId ?? '', controlPlaneCount: this.state.controlPlaneCount });
      } catch (err) {
        h.status = 'error';
        throw err;
      }
      h.status = 'installing';
      h.stage = undefined;
      h.stageSince = undefined;
      h.softWarned = undefined;
      h.diskBoot = undefined;
      this.state.error = undefined;
      if (this.state.phase === 'error') this.setPhase('installing');
      return { hostId, retry: h.retries };
    });
  }

  // ---- phases ---------------------------------------------------------------------------------

  private setPhase(phase: Phase): void {
    this.state.phase = phase;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.installStatus, value: phase }]);
  }

  private stopped(): boolean {
    return this.cancelled || this.reset;
  }

  private async finish(phase: Phase): Promise<InstallProgress> {
    if (phase !== this.state.phase) this.setPhase(phase);
    await condition(allHandlersFinished);
    return this.progress();
  }

  private finishStopped(): Promise<InstallProgress> {
    return this.finish(this.cancelled ? 'cancelled' : 'reset');
  }

  /** Prepare, wait for every host's pre-install checks, dispatch the install. An outcome means the install ended here. */
  private async prepare(): Promise<InstallProgress | undefined> {
    const { input, state, timeouts } = this;
    this.setPhase('preparing');
    const prepared = await acts.prepareInstallation({ clusterId: input.clusterId, attempt: input.attempt });
    state.controlPlaneCount = prepared.controlPlaneCount;
    state.hosts = prepared.hosts.map((h: PreparedHost) => ({ hostId: h.hostId, role: h.role, status: h.status, retries: 0, ...(h.bmc ? { bmc: true } : {}) }));
    // Reports committed after prepare's own reads: newer than what prepare returned.
    for (const r of this.early.values()) this.applyReport(r);
    this.early.clear();

    this.waitingFor = 'every host to pass its pre-install checks (install disk speed)';
    const settled = () => state.hosts.every((h) => h.status === 'preparing-successful' || h.status === 'preparing-failed');
    const inTime = await condition(() => this.stopped() || settled(), timeouts.preparingMs);
    if (this.stopped()) return this.finishStopped();
    const failed = state.hosts.filter((h) => h.status === 'preparing-failed').map((h) => h.hostId);
    if (!inTime || failed.length) {
      state.error = inTime ? `hosts failed their pre-install checks: ${failed.join(', ')}` : `preparation timed out after ${Math.round(timeouts.preparingMs / 1000)} s`;
      await acts.abortPreparation({ clusterId: input.clusterId, reason: state.error });
      return this.finish('preparation-failed');
    }

    state.bootstrapHostId = await acts.selectBootstrapHost({ clusterId: input.clusterId, candidates: state.hosts.filter((h) => h.role === 'master').map((h) => h.hostId) });
    await acts.dispatchInstallSteps({ clusterId: input.clusterId, attempt: input.attempt, bootstrapHostId: state.bootstrapHostId, hosts: state.hosts.map((h) => ({ hostId: h.hostId, infraEnvId: '', role: h.role, status: h.status })), controlPlaneCount: state.controlPlaneCount });
    for (const h of state.hosts) {
      h.status = 'installing';
      h.stageSince = Date.now();
    }
    this.setPhase('installing');
    return undefined;
  }

  /** Installing: follow every host until the success rule is met (undefined) or the install is stopped (its outcome). */
  private async followInstall(): Promise<InstallProgress | undefined> {
    const { state } = this;
    const verdict = () => successRule(state.controlPlaneCount, state.hosts);
    const pendingUserChanged = () => state.hosts.some((h) => h.status === 'installing-pending-user-action') !== this.pendingUser;
    const diskBootsDue = () => state.hosts.some((h) => diskBootDue(h, state) !== undefined);
    while (state.phase === 'installing' || state.phase === 'error') {
      if (state.phase === 'installing' && pendingUserChanged()) {
        const pending = !this.pendingUser;
        await acts.markHostsPendingUser({ clusterId: this.input.clusterId, pending });
        this.pendingUser = pending;
      }
      this.waitingFor = state.phase === 'error' ? 'a retry of the failed host (retryHost), a cancel or a reset' : 'hosts to report their install stages';
      const tick = Math.min(60_000, this.timeouts.stageSoftMs);
      await condition(() => this.stopped() || diskBootsDue() || (state.phase === 'installing' && (verdict() !== 'pending' || pendingUserChanged())), tick);
      if (this.stopped()) return this.finishStopped();
      // The verdict is taken again under the lock: a retry that held it has changed the hosts.
      const pass = await this.lock.run(() => this.decide());
      if (pass === 'met') break;
      if (pass === 'failed') continue;
      // Long installs with many reports: start a fresh history carrying only the facts.
      if (this.continueAsNewDue()) {
        await condition(allHandlersFinished);
        await continueAsNew<typeof installClusterWorkflow>(this.input, state);
      }
    }
    return undefined;
  }

  /** One pass of the install loop: BMC disk boots, the success rule, stage timeouts. */
  private async decide(): Promise<'wait' | 'met' | 'failed'> {
    const { input, state, timeouts } = this;
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
    const verdict = successRule(state.controlPlaneCount, state.hosts);
    if (state.phase === 'installing' && verdict === 'met') return 'met';
    if (state.phase === 'installing' && verdict === 'impossible') {
      const failed = state.hosts.filter((h) => h.status === 'error').map((h) => h.hostId);
      state.error = `the cluster cannot reach its success rule: host(s) ${failed.join(', ')} failed`;
      await acts.markClusterFailed({ clusterId: input.clusterId, reason: state.error });
      this.setPhase('error');
      return 'failed';
    }
    // Stage timeouts, soft first: a warning event and keep waiting; hard: the host fails.
    const now = Date.now();
    for (const h of state.hosts) {
      if (!h.stageSince || !['installing', 'installing-in-progress'].includes(h.status)) continue;
      const age = now - h.stageSince;
      const stage = h.stage ?? 'Starting installation';
      const timing = { clusterId: input.clusterId, hostId: h.hostId, stage, minutes: Math.round(age / 60_000), seconds: Math.round(age / 1000) };
      if (age > timeouts.stageHardMs) {
        await acts.reportStageTimeout({ ...timing, hard: true });
        h.status = 'error';
      } else if (age > timeouts.stageSoftMs && h.softWarned !== stage) {
        await acts.reportStageTimeout({ ...timing, hard: false });
        h.softWarned = stage;
      }
    }
    return 'wait';
  }

  /** The server's suggestion, or the input's own bound on history length (tests; very chatty installs). */
  private continueAsNewDue(): boolean {
    const info = workflowInfo();
    if (info.continueAsNewSuggested) return true;
    const limit = this.input.continueAsNewAfterEvents;
    return limit !== undefined && info.historyLength >= limit;
  }

  /** Finalizing: the in-cluster side reports the core components available. */
  private async finalize(): Promise<InstallProgress> {
    const { input, state } = this;
    await acts.startFinalizing({ clusterId: input.clusterId });
    this.setPhase('finalizing');
    this.waitingFor = 'the cluster to report its core components available (monitored-operators)';
    const done = await condition(() => this.stopped() || this.componentsAvailable || this.completionFailure !== undefined, this.timeouts.finalizingMs);
    if (this.stopped()) return this.finishStopped();
    if (this.completionFailure !== undefined && !this.componentsAvailable) {
      state.error = `the cluster's controller reported the installation failed: ${this.completionFailure}`;
      await acts.markClusterFailed({ clusterId: input.clusterId, reason: state.error });
      throw ApplicationFailure.nonRetryable(state.error, 'completion_failed');
    }
    if (!done) {
      state.error = `finalizing did not complete within ${Math.round(this.timeouts.finalizingMs / 60_000)} minutes`;
      await acts.markClusterFailed({ clusterId: input.clusterId, reason: state.error });
      throw ApplicationFailure.nonRetryable(state.error, 'finalizing_timeout');
    }
    await acts.completeInstallation({ clusterId: input.clusterId });
    log.info('cluster installed', { clusterId: input.clusterId });
    return this.finish('installed');
  }
}

export async function installClusterWorkflow(input: InstallInput, carried?: Carried): Promise<InstallProgress> {
  const install = new ClusterInstall(input, carried);
  install.registerHandlers();
  return install.run();
}
