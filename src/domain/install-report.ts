/**
 * The install report: one cluster's latest install attempt told as a
 * timeline, built only from what is stored (the cluster row, its host rows,
 * its events). Pure: the service loads, this explains. An attempt begins at
 * its `cluster_prepare_installation_started` event; everything before it
 * belongs to earlier attempts and is left out.
 */
import { remediationFor, type FailureKind } from './install-failure-remediation';

export interface ReportEvent {
  seq: string | number;
  name: string;
  severity: string;
  message: string;
  event_time: Date | string;
  host_id: string | null;
  props: Record<string, unknown> | null;
}

export interface ReportHostInput {
  id: string;
  hostname: string;
  role: string;
  bootstrap: boolean;
  status: string;
  status_info: string;
  progress?: { current_stage?: string; failed_at_stage?: string } | undefined;
}

export interface ReportInput {
  cluster: { id: string; name: string; status: string; status_info: string; openshift_version: string; install_attempt: number };
  hosts: ReportHostInput[];
  /** The cluster's events, oldest first. */
  events: ReportEvent[];
  now: Date;
}

export type Outcome = 'installed' | 'failed' | 'cancelled' | 'in-progress' | 'not-started';

export interface StageEntry {
  stage: string;
  started_at: string;
  ended_at: string | null;
  duration_seconds: number;
  info: string;
  /** Landfall addition: which try of the host this stage belongs to (0 = first, n = after the n-th retry). */
  retry: number;
  /** Landfall addition: completed, failed, interrupted (cancelled) or in-progress. */
  result: 'completed' | 'failed' | 'interrupted' | 'in-progress';
}

export interface HostFailure {
  stage: string;
  cause: string;
  remediation: string;
  /** Landfall addition: error (the installer reported it) or timeout (the stage ran past its hard timeout). */
  kind: FailureKind;
}

export interface HostReport {
  host_id: string;
  hostname: string;
  role: string;
  bootstrap: boolean;
  status: string;
  status_info: string;
  stages: StageEntry[];
  retries: number;
  warnings: Array<{ at: string; message: string }>;
  failure: HostFailure | null;
}

export interface InstallReport {
  cluster_id: string;
  cluster_name: string;
  status: string;
  status_info: string;
  openshift_version: string;
  install_attempt: number;
  outcome: Outcome;
  started_at: string | null;
  completed_at: string | null;
  duration_seconds: number | null;
  failure: ({ host_id: string | null; hostname: string | null; role: string | null } & Omit<HostFailure, 'kind'> & { kind: FailureKind }) | null;
  hosts: HostReport[];
  warnings: Array<{ at: string; host_id: string | null; message: string }>;
  timeline: Array<{ at: string; name: string; severity: string; message: string; host_id: string | null }>;
  generated_at: string;
}

const IN_PROGRESS = ['preparing-for-installation', 'installing', 'installing-pending-user-action', 'finalizing'];
/** Events that close an attempt, and the outcome each means. A reset closes it too, but only says what came before it. */
const TERMINAL: Record<string, Outcome> = {
  cluster_installation_completed: 'installed',
  cluster_installation_failed: 'failed',
  cluster_preparation_failed: 'failed',
  cluster_installation_canceled: 'cancelled',
};

const iso = (t: Date | string) => new Date(t).toISOString();
const ms = (t: Date | string) => new Date(t).getTime();
const seconds = (from: Date | string, to: Date | string) => Math.max(0, Math.round((ms(to) - ms(from)) / 100) / 10);
const str = (v: unknown) => (v === undefined || v === null ? '' : String(v));

function outcomeOf(input: ReportInput, attempt: ReportEvent[]): { outcome: Outcome; closing?: ReportEvent } {
  const c = input.cluster;
  if (c.install_attempt === 0 || !attempt.length) return { outcome: 'not-started' };
  const closing = [...attempt].reverse().find((e) => TERMINAL[e.name]);
  if (c.status === 'installed') return { outcome: 'installed', closing };
  if (c.status === 'error') return { outcome: 'failed', closing };
  if (c.status === 'cancelled') return { outcome: 'cancelled', closing };
  if (IN_PROGRESS.includes(c.status)) return { outcome: 'in-progress' };
  // Back to a pre-install status: preparation failed, or the attempt was reset after it ended.
  if (closing) return { outcome: TERMINAL[closing.name]!, closing };
  const reset = attempt.find((e) => e.name === 'cluster_installation_reset');
  return reset ? { outcome: 'cancelled', closing: reset } : { outcome: 'in-progress' };
}

function hostReport(h: ReportHostInput, events: ReportEvent[], end: Date | string): HostReport {
  const stages: StageEntry[] = [];
  const warnings: HostReport['warnings'] = [];
  let retry = 0;
  let hardTimeout: { stage: string; at: string; retry: number } | undefined;
  const open = () => {
    const last = stages.at(-1);
    return last && last.ended_at === null && last.result === 'in-progress' ? last : undefined;
  };
  const close = (at: Date | string, result: StageEntry['result']) => {
    const last = open();
    if (!last) return;
    last.ended_at = iso(at);
    last.duration_seconds = seconds(last.started_at, at);
    last.result = result;
  };
  for (const e of events) {
    const props = e.props ?? {};
    switch (e.name) {
      case 'host_install_progress_updated': {
        const stage = str(props.stage);
        const info = str(props.progress_info).replace(/^ \((.*)\)$/, '$1');
        if (stage === 'Failed') {
          close(e.event_time, 'failed');
          break;
        }
        const last = open();
        if (last && last.stage === stage && last.retry === retry) {
          if (info) last.info = info;
          break;
        }
        close(e.event_time, 'completed');
        if (stage === 'Done') {
          stages.push({ stage, started_at: iso(e.event_time), ended_at: iso(e.event_time), duration_seconds: 0, info, retry, result: 'completed' });
          break;
        }
        stages.push({ stage, started_at: iso(e.event_time), ended_at: null, duration_seconds: 0, info, retry, result: 'in-progress' });
        break;
      }
      case 'host_install_retried':
        close(e.event_time, 'failed');
        retry += 1;
        hardTimeout = undefined;
        break;
      case 'host_stage_timed_out':
        if (props.kind === 'hard') hardTimeout = { stage: str(props.stage), at: iso(e.event_time), retry };
        else warnings.push({ at: iso(e.event_time), message: e.message });
        break;
      case 'host_status_updated':
        // Leaving the install for error or cancelled ends whatever stage was running.
        if (props.new_status === 'error' || props.new_status === 'cancelled') {
          close(e.event_time, props.new_status === 'error' ? 'failed' : 'interrupted');
        }
        break;
      default:
        if (e.severity === 'warning') warnings.push({ at: iso(e.event_time), message: e.message });
    }
  }
  const running = open();
  if (running) running.duration_seconds = seconds(running.started_at, end);

  let failure: HostFailure | null = null;
  if (h.status === 'error') {
    const lastTry = stages.filter((s) => s.retry === retry);
    const failedEntry = [...lastTry].reverse().find((s) => s.result === 'failed');
    const kind: FailureKind = hardTimeout && hardTimeout.retry === retry ? 'timeout' : 'error';
    const stage = (kind === 'timeout' ? hardTimeout!.stage : undefined) ?? h.progress?.failed_at_stage ?? failedEntry?.stage ?? lastTry.at(-1)?.stage ?? h.progress?.current_stage ?? 'Starting installation';
    const cause = h.status_info.replace(/^Failed - /, '').trim() || (kind === 'timeout' ? `stage ${stage} exceeded its timeout` : 'the host reported a failure without details');
    failure = { stage, cause, remediation: remediationFor(stage, kind, cause), kind };
  }
  return { host_id: h.id, hostname: h.hostname, role: h.role, bootstrap: h.bootstrap, status: h.status, status_info: h.status_info, stages, retries: retry, warnings, failure };
}

export function buildInstallReport(input: ReportInput): InstallReport {
  const c = input.cluster;
  let startIdx = -1;
  input.events.forEach((e, i) => {
    if (e.name === 'cluster_prepare_installation_started') startIdx = i;
  });
  const attempt = startIdx < 0 ? [] : input.events.slice(startIdx);
  const { outcome, closing } = outcomeOf(input, attempt);
  const startedAt = attempt[0] ? iso(attempt[0].event_time) : null;
  const completedAt = closing && outcome !== 'in-progress' && outcome !== 'not-started' ? iso(closing.event_time) : null;
  const end = completedAt ?? input.now;
  const byHost = new Map<string, ReportEvent[]>();
  for (const e of attempt) if (e.host_id) byHost.set(e.host_id, [...(byHost.get(e.host_id) ?? []), e]);
  const hosts = input.hosts.map((h) => hostReport(h, byHost.get(h.id) ?? [], end));

  let failure: InstallReport['failure'] = null;
  if (outcome === 'failed') {
    // The host that failed first is the cause; the others may have failed because of it.
    const failedAt = (r: HostReport) => r.stages.filter((s) => s.result === 'failed').at(-1)?.ended_at ?? '9999';
    const first = hosts.filter((r) => r.failure).sort((a, b) => failedAt(a).localeCompare(failedAt(b)))[0];
    if (first) failure = { host_id: first.host_id, hostname: first.hostname, role: first.bootstrap ? 'bootstrap' : first.role, ...first.failure! };
    else {
      const stage = closing?.name === 'cluster_preparation_failed' ? 'preparing' : 'finalizing';
      const reason = str(closing?.props?.reason) || c.status_info;
      const kind: FailureKind = /timed out|did not complete within/.test(reason) ? 'timeout' : 'error';
      failure = { host_id: null, hostname: null, role: null, stage, cause: reason, remediation: remediationFor(stage, kind, reason), kind };
    }
  }

  return {
    cluster_id: c.id,
    cluster_name: c.name,
    status: c.status,
    status_info: c.status_info,
    openshift_version: c.openshift_version,
    install_attempt: c.install_attempt,
    outcome,
    started_at: startedAt,
    completed_at: completedAt,
    duration_seconds: startedAt ? seconds(startedAt, end) : null,
    failure,
    hosts,
    warnings: attempt.filter((e) => e.severity === 'warning').map((e) => ({ at: iso(e.event_time), host_id: e.host_id, message: e.message })),
    timeline: attempt.map((e) => ({ at: iso(e.event_time), name: e.name, severity: e.severity, message: e.message, host_id: e.host_id })),
    generated_at: iso(input.now),
  };
}
