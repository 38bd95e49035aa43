/**
 * The agent loop: register, then GET instructions → run the batch
 * concurrently → POST each result, at the pace the service sets. Registration
 * failures are diagnosed (diagnostics.ts) and retried forever; the diagnosis is
 * uploaded as an event once the service is reachable.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AgentConfig } from './config';
import { diagnose, formatDiagnosis, type Diagnosis } from './diagnostics';
import { NetworkError, ServiceClient, backoffMs, sleep, type HttpAnswer } from './service-client';
import { InstallStopped, resumeInstall, runStep, type StepContext } from './steps';
import { Outbox, type OutboxItem } from './outbox';
import { StartedSteps } from './started-steps';
import type { Executor, StepResult, Steps } from './types';

export interface AgentLog {
  info(msg: string, data?: Record<string, unknown>): void;
  warn(msg: string, data?: Record<string, unknown>): void;
}

/** How many of its own recent log lines an agent keeps for its logs archive (the fleet keeps fewer: thousands of agents share one process). */
export const RECENT_LOG_LINES = 500;

/** The service keeps the last result of each step type, so an identical success need not be sent again for an hour. */
export const REPLY_CACHE_MS = 3600_000;

export interface AgentStats {
  polls: number;
  replies: number;
  repliesSkipped: number;
  registrations: number;
  failures: number;
  /** Steps handed out to this agent, by type (what the benches compare with the service's cadence). */
  steps: Record<string, number>;
}

export class HostAgent {
  readonly stats: AgentStats = { polls: 0, replies: 0, repliesSkipped: 0, registrations: 0, failures: 0, steps: {} };
  private hostId = '';
  private readonly replyCache = new Map<string, { digest: string; at: number }>();
  private pendingDiagnosis: { diagnosis: Diagnosis; since: number; attempts: number } | undefined;
  /** The agent's own recent log lines (and the steps it ran): what its logs archive says about it. */
  private readonly recent: string[] = [];
  private readonly log: AgentLog;

  constructor(
    private readonly cfg: AgentConfig,
    private readonly executor: Executor,
    private readonly client: ServiceClient,
    log: AgentLog,
    private readonly opts: {
      proxy?: string;
      writeStatus?: boolean;
      now?: () => number;
      recentLogLines?: number;
      /**
       * Post every step's result, as the upstream assisted-installer-agent does, instead of holding back a
       * success identical to one the service already has (this agent's economy). The benches of real agent
       * behaviour set it: a load model counts only if every step handed out is answered.
       */
      answerEveryStep?: boolean;
    } = {},
  ) {
    const keep = (level: string, msg: string, data?: Record<string, unknown>) => this.remember(`${level} ${msg}${data ? ` ${JSON.stringify(data)}` : ''}`);
    this.log = {
      info: (msg, data) => (keep('info', msg, data), log.info(msg, data)),
      warn: (msg, data) => (keep('warn', msg, data), log.warn(msg, data)),
    };
  }

  private remember(line: string): void {
    this.recent.push(`${new Date(this.now()).toISOString()} ${line}`);
    const keep = this.opts.recentLogLines ?? RECENT_LOG_LINES;
    if (this.recent.length > keep) this.recent.splice(0, this.recent.length - keep);
  }

  /** A copy of the recent log lines, oldest first. */
  recentLog(): string[] {
    return [...this.recent];
  }

  private now(): number {
    return this.opts.now?.() ?? Date.now();
  }

  get id(): string {
    return this.hostId;
  }

  private writeStatus(status: Record<string, unknown>): void {
    if (this.opts.writeStatus === false || !this.cfg.statusFile) return;
    try {
      mkdirSync(path.dirname(this.cfg.statusFile), { recursive: true });
      writeFileSync(this.cfg.statusFile, JSON.stringify({ ...status, host_id: this.hostId, updated_at: new Date().toISOString() }, null, 2));
    } catch {
      /* the status file is a convenience; never let it stop the agent */
    }
  }

  private recordFailure(failure: { error?: unknown; status?: number; body?: string }): Diagnosis {
    const diagnosis = diagnose(this.cfg.serviceUrl, failure, this.opts.proxy);
    const prev = this.pendingDiagnosis;
    this.pendingDiagnosis = { diagnosis, since: prev?.since ?? this.now(), attempts: (prev?.attempts ?? 0) + 1 };
    if (!prev || prev.diagnosis.code !== diagnosis.code) this.log.warn(formatDiagnosis(diagnosis), { code: diagnosis.code });
    this.writeStatus({ state: 'cannot-reach-service', attempts: this.pendingDiagnosis.attempts, since: new Date(this.pendingDiagnosis.since).toISOString(), diagnosis });
    return diagnosis;
  }

  /** Registers, retrying forever (with backoff) until the service accepts the host. */
  async register(signal: AbortSignal): Promise<boolean> {
    this.hostId ||= await this.executor.hostId();
    for (let attempt = 0; !signal.aborted; attempt++) {
      let answer: HttpAnswer | undefined;
      try {
        answer = await this.client.request('POST', `/infra-envs/${this.cfg.infraEnvId}/hosts`, { host_id: this.hostId, discovery_agent_version: this.cfg.agentVersion }, signal);
      } catch (err) {
        if (signal.aborted) return false;
        this.recordFailure({ error: err instanceof NetworkError ? err.cause : err });
      }
      if (answer && answer.status === 201) {
        this.stats.registrations++;
        this.log.info('registered', { hostId: this.hostId });
        this.writeStatus({ state: 'registered' });
        await this.uploadDiagnosis(signal);
        return true;
      }
      if (answer) {
        // 409: the cluster is installing and does not accept hosts; keep trying without a diagnosis.
        if (answer.status !== 409) this.recordFailure({ status: answer.status, body: answer.text });
      }
      await sleep(backoffMs(Math.min(attempt, 6), 1000, 60000), signal);
    }
    return false;
  }

  /** The other half of two-sided diagnostics: what went wrong reaches the service as an event on this host. */
  private async uploadDiagnosis(signal: AbortSignal): Promise<void> {
    const pending = this.pendingDiagnosis;
    if (!pending) return;
    this.pendingDiagnosis = undefined;
    const seconds = Math.round((this.now() - pending.since) / 1000);
    const d = pending.diagnosis;
    try {
      const r = await this.client.request(
        'POST',
        '/events',
        {
          name: 'host_registration_diagnosis',
          infra_env_id: this.cfg.infraEnvId,
          host_id: this.hostId,
          severity: 'warning',
          category: 'user',
          event_time: new Date(this.now()).toISOString(),
          message: `Host ${this.hostId}: could not reach the service for ${seconds} s (${pending.attempts} attempts): ${d.what}. Fix: ${d.fix}`,
          props: JSON.stringify({ code: d.code, detail: d.detail, attempts: pending.attempts, seconds }),
        },
        signal,
      );
      if (r.status !== 201) this.log.warn('the service refused the registration diagnosis', { status: r.status, body: r.text.slice(0, 300) });
    } catch {
      /* best effort: the local status file still has it */
    }
  }

  private startedStepsLedger: StartedSteps | undefined;
  private get startedSteps(): StartedSteps {
    return (this.startedStepsLedger ??= StartedSteps.inDir(this.cfg.outboxDir, `started-${this.cfg.infraEnvId}`));
  }

  private box: Outbox | undefined;
  /** One outbox for the agent's life (made on first use, with the run's signal so it stops with the agent). */
  private outbox(signal: AbortSignal): Outbox {
    const send = (item: OutboxItem, sig?: AbortSignal) => (item.file ? this.client.upload(item.path, item.file.name, item.file.bytes!, sig) : this.client.request(item.method, item.path, item.body, sig));
    return (this.box ??= new Outbox(send, { dir: this.cfg.outboxDir, name: `outbox-${this.cfg.infraEnvId}`, signal, log: (msg, data) => this.log.warn(msg, data) }));
  }

  /** Reports not yet delivered (kept on disk when the agent has an outbox directory). */
  get undelivered(): number {
    return this.box?.pending ?? 0;
  }

  private isDuplicate(stepType: string, exitCode: number, output: string): boolean {
    if (exitCode !== 0 || this.opts.answerEveryStep) return false;
    const digest = createHash('sha256').update(output).digest('base64');
    const hit = this.replyCache.get(stepType);
    if (hit && hit.digest === digest && this.now() - hit.at < REPLY_CACHE_MS) return true;
    this.replyCache.set(stepType, { digest, at: this.now() });
    return false;
  }

  /** What a step reaches the service (and this agent's ledger) through; reports go through the outbox. */
  private stepContext(signal: AbortSignal): StepContext {
    return {
      executor: this.executor,
      reportProgress: async (stage: string, info?: string) => {
        // Through the outbox: a report the service cannot take now is kept and sent later, in order, never dropped.
        const { answer: r } = await this.outbox(signal).post({ kind: 'progress', method: 'PUT', path: `/infra-envs/${this.cfg.infraEnvId}/hosts/${this.hostId}/progress`, body: { current_stage: stage, progress_info: info ?? '' } });
        // The service no longer follows this host's install (cancelled, reset): stop, so the next poll brings what it wants instead.
        if (r?.status === 409 && /is not installing/.test(r.text)) throw new InstallStopped();
      },
      clusterStatus: async (clusterId: string) => {
        const r = await this.client.request('GET', `/clusters/${clusterId}?exclude-hosts=true`, undefined, signal);
        return r.status === 200 ? r.json<{ status: string }>().status : undefined;
      },
      monitoredOperators: async (clusterId: string) => {
        const r = await this.client.request('GET', `/clusters/${clusterId}/monitored-operators`, undefined, signal);
        if (r.status !== 200) throw new Error(`monitored-operators answered HTTP ${r.status}`);
        return r.json<Array<{ name: string }>>().map((o) => o.name);
      },
      reportComponent: async (clusterId: string, name: string, status: string) => {
        // A report like any other: through the outbox, kept until the service takes it.
        await this.outbox(signal).post({ kind: 'operator', method: 'PUT', path: `/clusters/${clusterId}/monitored-operators`, body: { name, version: '', status, status_info: '' } });
      },
      // Logs and their progress go through the outbox too, in order with the rest: the archive made
      // before the reboot is the only copy of the discovery system's journal.
      uploadLogs: async (tgz: Buffer, meta: Record<string, unknown>) => {
        const cluster = String(meta.cluster_id ?? '');
        if (!cluster) throw new Error('logs need a cluster_id to be uploaded to');
        const logsPath = `/clusters/${cluster}/logs?logs_type=host&infra_env_id=${this.cfg.infraEnvId}&host_id=${this.hostId}`;
        const { answer: r } = await this.outbox(signal).post({ kind: 'logs', method: 'POST', path: logsPath, body: undefined, file: { name: `${this.hostId}.tar.gz`, bytes: tgz } });
        if (!r) return this.log.warn('logs kept in the outbox until the service takes them', { bytes: tgz.length, reason: meta.reason });
        if (r.status !== 204) throw new Error(`the service refused the logs upload (HTTP ${r.status}): ${r.text.slice(0, 300)}`);
        this.log.info('logs uploaded', { bytes: tgz.length, reason: meta.reason });
      },
      logsProgress: async (state: string) => {
        await this.outbox(signal).post({ kind: 'logs-progress', method: 'PUT', path: `/infra-envs/${this.cfg.infraEnvId}/hosts/${this.hostId}/logs-progress`, body: { logs_state: state } });
      },
      uploadControllerLogs: async (clusterId: string, tgz: Buffer) => {
        await this.outbox(signal).post({ kind: 'logs-progress', method: 'PUT', path: `/clusters/${clusterId}/logs-progress`, body: { logs_state: 'requested' } });
        const { answer: r } = await this.outbox(signal).post({ kind: 'logs', method: 'POST', path: `/clusters/${clusterId}/logs?logs_type=controller`, body: undefined, file: { name: 'controller.tar.gz', bytes: tgz } });
        if (!r) return this.log.warn('controller logs kept in the outbox until the service takes them', { bytes: tgz.length });
        if (r.status !== 204) throw new Error(`the service refused the controller logs upload (HTTP ${r.status}): ${r.text.slice(0, 300)}`);
        this.log.info('controller logs uploaded', { bytes: tgz.length });
      },
      agentLog: () => this.recentLog(),
      warn: (msg: string, data?: Record<string, unknown>) => this.log.warn(msg, data),
      installStage: (stepId: string, stage: string) => this.startedSteps.stage(stepId, stage),
      installRebooted: (stepId: string, args: Record<string, unknown>) => this.startedSteps.rebooted(stepId, args),
    };
  }

  /** One poll: fetch steps, run them concurrently, post results. Returns seconds to wait, or null to exit. */
  async pollOnce(signal: AbortSignal): Promise<number | null> {
    const ts = Math.floor(this.now() / 1000 + this.executor.clockOffsetSeconds());
    let answer: HttpAnswer;
    try {
      answer = await this.client.request('GET', `/infra-envs/${this.cfg.infraEnvId}/hosts/${this.hostId}/instructions?timestamp=${ts}`, undefined, signal);
    } catch (err) {
      // A failed poll may have lost our replies in flight: forget what we think the service has.
      this.replyCache.clear();
      this.stats.failures++;
      this.recordFailure({ error: err instanceof NetworkError ? err.cause : err });
      return -1;
    }
    this.stats.polls++;
    if (answer.status === 404) {
      this.log.warn('the service no longer knows this host; registering again', { hostId: this.hostId });
      this.replyCache.clear();
      return (await this.register(signal)) ? 0 : null;
    }
    if (answer.status !== 200) {
      this.stats.failures++;
      this.recordFailure({ status: answer.status, body: answer.text });
      return -1;
    }
    await this.uploadDiagnosis(signal);
    const steps = answer.json<Steps>();
    for (const step of steps.instructions ?? []) this.stats.steps[step.step_type] = (this.stats.steps[step.step_type] ?? 0) + 1;
    const ctx = this.stepContext(signal);
    await Promise.all(
      (steps.instructions ?? []).map(async (step) => {
        // An install step runs once per step id, even when the service sends it again.
        if (step.step_type === 'install' && !this.startedSteps.claim(step.step_id)) {
          this.log.warn('install step already started by this agent; not running it again', { step: step.step_id });
          return;
        }
        const started = this.now();
        const result = await runStep(step, ctx, signal);
        // Stopped with the agent (the run's signal): not finished; the next run of this agent reports it.
        const cutShort = signal.aborted && step.step_type === 'install';
        this.remember(`step ${step.step_type} ${step.step_id}: exit ${result.exit_code} after ${this.now() - started} ms${result.error ? `: ${result.error.slice(0, 200)}` : ''}`);
        if (this.isDuplicate(step.step_type, result.exit_code, result.output)) {
          this.stats.repliesSkipped++;
          return;
        }
        // Through the outbox: a reply the service cannot take now is sent again until it is (the step id keys it).
        if (cutShort) return;
        const { answer: r } = await this.outbox(signal).post({ kind: 'reply', method: 'POST', path: `/infra-envs/${this.cfg.infraEnvId}/hosts/${this.hostId}/instructions`, body: { step_type: step.step_type, step_id: step.step_id, ...result } });
        // Its reply is in the outbox (on disk): the step is over for this agent.
        if (step.step_type === 'install') this.startedSteps.finish(step.step_id);
        if (r?.status === 204) this.stats.replies++;
        else if (r) {
          this.replyCache.delete(step.step_type);
          this.log.warn('step reply refused', { step: step.step_type, status: r.status, body: r.text.slice(0, 300) });
        }
      }),
    );
    if (this.executor.takeRebootIntoDiscovery?.()) {
      this.log.warn('the host booted the discovery image again; registering again', { hostId: this.hostId });
      this.replyCache.clear();
      return (await this.register(signal)) ? 0 : null;
    }
    if (steps.post_step_action === 'exit') return null;
    return this.cfg.pollIntervalSeconds ?? steps.next_instruction_seconds ?? 60;
  }

  /**
   * An install step an earlier run of this agent started and never finished
   * was cut short by the agent stopping (killed, crashed, restarted) while the
   * host stayed up: the disk may be half-written. It is not run again (the
   * service's resend, if any, finds it claimed); its failure is reported with
   * the reason, so the host shows why and a retry (a new step id) installs it.
   * A step that got past the host's reboot did write the disk whole: where the
   * executor plays the installed cluster's side, that side carries on, as a
   * restarted in-cluster controller does, and the step is answered as it ends.
   */
  private async settleInterruptedInstalls(signal: AbortSignal): Promise<void> {
    for (const step of this.startedSteps.unfinished()) {
      let result: StepResult;
      if (step.rebooted && this.executor.resumeInstalled) {
        this.log.warn('an install step past the host reboot was cut short by an agent restart; the installed side carries on', { step: step.id });
        result = await resumeInstall(step.id, step.rebooted, step.stage, this.stepContext(signal), signal);
        if (signal.aborted) return;
      } else {
        const where = step.stage ? `at stage "${step.stage}"` : 'before it reported a stage';
        const error = `the agent stopped while running install step ${step.id} ${where} (the agent process was killed or crashed; the host did not reboot) and does not run a step twice: the disk may be half-written; retry the host to install it again`;
        this.log.warn('an install step was cut short by an agent restart; reporting it failed', { step: step.id, stage: step.stage });
        result = { exit_code: 1, output: '', error };
      }
      await this.outbox(signal).post({ kind: 'reply', method: 'POST', path: `/infra-envs/${this.cfg.infraEnvId}/hosts/${this.hostId}/instructions`, body: { step_type: 'install', step_id: step.id, ...result } });
      this.startedSteps.finish(step.id);
    }
  }

  async run(signal: AbortSignal): Promise<void> {
    if (!(await this.register(signal))) return;
    await this.settleInterruptedInstalls(signal);
    let failures = 0;
    while (!signal.aborted) {
      const wait = await this.pollOnce(signal);
      if (wait === null) return;
      if (wait < 0) {
        failures++;
        await sleep(backoffMs(Math.min(failures, 6), 1000, 120000), signal);
        continue;
      }
      failures = 0;
      await sleep(wait * 1000, signal);
    }
  }
}
