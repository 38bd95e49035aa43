/**
 * Runs one step from the service through the executor and turns the outcome
 * into a step reply. The agent never decides anything; it only does what a
 * step asks and reports what happened. Bad input from the service (unknown
 * type, unparsable args) becomes a non-zero exit code with an error text, and
 * every step is cut off by its timeout so one hung command cannot stall a host.
 */
import type { Executor, InstallIo, Step, StepResult } from './types';

export interface StepContext {
  executor: Executor;
  reportProgress(stage: string, info?: string): Promise<void>;
  /** Uploads this host's logs archive for the cluster in `meta.cluster_id`; throws when the service refuses it. */
  uploadLogs(tarGz: Buffer, meta: Record<string, unknown>): Promise<void>;
  /** PUT …/hosts/{id}/logs-progress. */
  logsProgress?(state: 'requested' | 'collecting' | 'completed'): Promise<void>;
  /** Uploads controller logs for a cluster (logs-progress `requested` first). */
  uploadControllerLogs?(clusterId: string, tarGz: Buffer): Promise<void>;
  /** The agent's recent log lines, for the logs archive. */
  agentLog?(): string[];
  /** The agent's log, for what a step does on the side (a logs upload that failed). */
  warn?(msg: string, data?: Record<string, unknown>): void;
  clusterStatus?(clusterId: string): Promise<string | undefined>;
  reportComponent?(clusterId: string, name: string, status: string): Promise<void>;
  monitoredOperators?(clusterId: string): Promise<string[]>;
  /** An install step entered a stage, and got past the host's reboot: kept in the agent's ledger of started steps. */
  installStage?(stepId: string, stage: string): void;
  installRebooted?(stepId: string, args: Record<string, unknown>): void;
}

/** Timeouts per step type (AS: disk speed 8 min, image availability 16 min). */
export const STEP_TIMEOUT_MS: Record<string, number> = {
  inventory: 60_000,
  'connectivity-check': 120_000,
  'free-network-addresses': 180_000,
  'ntp-synchronizer': 60_000,
  'domain-resolution': 60_000,
  'installation-disk-speed-check': 480_000,
  install: 3 * 3600_000,
  'logs-gather': 600_000,
  'stop-installation': 120_000,
};
const DEFAULT_TIMEOUT_MS = 60_000;

export class StepInputError extends Error {}

/** The install was stopped on the service's request (stop-installation), not failed. */
export class InstallStopped extends Error {
  constructor() {
    super('installation stopped');
    this.name = 'InstallStopped';
  }
}

function jsonArg<T>(step: Step, index = 0): T {
  const raw = step.args?.[index];
  if (raw === undefined) throw new StepInputError(`${step.step_type} needs an argument`);
  try {
    return JSON.parse(raw) as T;
  } catch {
    throw new StepInputError(`argument ${index} of ${step.step_type} is not JSON`);
  }
}

type Handler = (step: Step, ctx: StepContext, signal: AbortSignal) => Promise<unknown>;

/** Gather and upload, announcing it on the way (requested → collecting; the upload itself completes it). */
export async function gatherAndUploadLogs(ctx: StepContext, args: Record<string, unknown>, signal: AbortSignal, announce: boolean): Promise<void> {
  if (announce) await ctx.logsProgress?.('requested');
  await ctx.logsProgress?.('collecting');
  await ctx.executor.logsGather(args, (tgz) => ctx.uploadLogs(tgz, args), signal, { agentLog: ctx.agentLog?.() ?? [] });
}

/** What an install step's executor reaches the service and the agent's ledger through. */
function installIo(stepId: string, args: Record<string, unknown>, ctx: StepContext, sig: AbortSignal): InstallIo {
  const clusterId = String(args.cluster_id ?? '');
  return {
    report: async (stage, info) => {
      ctx.installStage?.(stepId, stage);
      await ctx.reportProgress(stage, info);
    },
    clusterStatus: async () => ctx.clusterStatus?.(clusterId),
    reportComponent: async (name, status) => ctx.reportComponent?.(clusterId, name, status),
    monitoredOperators: async () => (await ctx.monitoredOperators?.(clusterId)) ?? [],
    // Logs are best effort: an install never fails because its logs could not be uploaded.
    uploadHostLogs: () => gatherAndUploadLogs(ctx, { ...args, reason: 'before-reboot' }, sig, true).catch((e: Error) => ctx.warn?.('logs upload before reboot failed', { error: e.message })),
    uploadControllerLogs: async (tgz) => ctx.uploadControllerLogs?.(clusterId, tgz).catch((e: Error) => ctx.warn?.('controller logs upload failed', { error: e.message })),
    rebooted: () => ctx.installRebooted?.(stepId, args),
  };
}

/**
 * The rest of an install step an earlier run of the agent started and left
 * past the host's reboot: the installed cluster's side, resumed (see
 * Executor.resumeInstalled). Its answer is the step's.
 */
export async function resumeInstall(stepId: string, args: Record<string, unknown>, lastStage: string | undefined, ctx: StepContext, signal: AbortSignal): Promise<StepResult> {
  try {
    await ctx.executor.resumeInstalled!(args, lastStage, installIo(stepId, args, ctx, signal), signal);
    return { exit_code: 0, output: '', error: '' };
  } catch (err) {
    return { exit_code: 1, output: '', error: ((err as Error)?.message ?? String(err)).slice(0, 2000) };
  }
}

const HANDLERS: Record<string, Handler> = {
  inventory: (_s, ctx) => ctx.executor.inventory(),
  'connectivity-check': (s, ctx, sig) => ctx.executor.connectivityCheck(jsonArg(s), sig),
  'free-network-addresses': (s, ctx, sig) => ctx.executor.freeNetworkAddresses(jsonArg<string[]>(s), sig),
  'ntp-synchronizer': (s, ctx, sig) => ctx.executor.ntpSynchronizer(jsonArg(s), sig),
  'domain-resolution': (s, ctx, sig) => ctx.executor.domainResolution(jsonArg(s), sig),
  'installation-disk-speed-check': (s, ctx, sig) => ctx.executor.diskSpeedCheck(jsonArg(s), sig),
  install: async (s, ctx, sig) => {
    const args = jsonArg<Record<string, unknown>>(s);
    try {
      await ctx.executor.install(args, installIo(s.step_id, args, ctx, sig), sig);
    } catch (err) {
      // A failed install uploads its logs at once, so the person at the console need not ask; a stopped one is asked by the service.
      if (!sig.aborted && !(err instanceof InstallStopped)) {
        await gatherAndUploadLogs(ctx, { ...args, reason: 'install-failed', error: (err as Error)?.message }, sig, true).catch((e: Error) => ctx.warn?.('logs upload after the failed install failed', { error: e.message }));
      }
      throw err;
    }
    return undefined;
  },
  'logs-gather': async (s, ctx, sig) => {
    const args = jsonArg<Record<string, unknown>>(s);
    await gatherAndUploadLogs(ctx, { ...args, reason: 'logs-gather' }, sig, false);
    return undefined;
  },
  'stop-installation': async (_s, ctx, sig) => {
    await ctx.executor.stopInstallation(sig);
    return undefined;
  },
};

export const SUPPORTED_STEPS = Object.keys(HANDLERS);

export async function runStep(step: Step, ctx: StepContext, outerSignal?: AbortSignal): Promise<StepResult> {
  const handler = HANDLERS[step.step_type];
  if (!handler) return { exit_code: 2, output: '', error: `unsupported step type "${step.step_type}" (this agent runs ${SUPPORTED_STEPS.join(', ')})` };
  const timeoutMs = Number(step.args?.[1]) > 0 && step.step_type === 'installation-disk-speed-check' ? Number(step.args![1]) * 1000 : (STEP_TIMEOUT_MS[step.step_type] ?? DEFAULT_TIMEOUT_MS);
  const controller = new AbortController();
  const onOuter = () => controller.abort(outerSignal?.reason);
  outerSignal?.addEventListener('abort', onOuter, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort(new Error('timeout'));
      reject(new Error(`step ${step.step_type} timed out after ${Math.round(timeoutMs / 1000)} s`));
    }, timeoutMs);
  });
  try {
    const out = await Promise.race([handler(step, ctx, controller.signal), timedOut]);
    return { exit_code: 0, output: out === undefined ? '' : JSON.stringify(out), error: '' };
  } catch (err) {
    const message = (err as Error)?.message ?? String(err);
    return { exit_code: err instanceof StepInputError ? 2 : /timed out/.test(message) ? 124 : 1, output: '', error: message.slice(0, 2000) };
  } finally {
    clearTimeout(timer);
    outerSignal?.removeEventListener('abort', onOuter);
  }
}
