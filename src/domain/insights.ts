/**
 * Install insights over a time window: how many installs started, how many
 * succeeded at the first attempt and in the end, where and why they failed
 * (stage, cause, release, host hardware), how long stages take, how long a
 * cluster takes from its first host to `ready`, and which validations block
 * hosts and for how long.
 *
 * Pure, and built only from what is already stored: the events (the same rows
 * the per-cluster install report reads) plus each cluster's release and each
 * host's inventory. Nothing is counted on the side, so the numbers cannot
 * drift from the events they summarise; the per-stage timelines come from
 * buildInstallReport itself, so a stage lasts here what it lasts in the report.
 *
 * Definitions (also in the OpenAPI description):
 * - An attempt runs from a cluster's `cluster_prepare_installation_started` to
 *   its next one. It counts in the window when it started in [from, to); its
 *   outcome is read from every event stored since, up to now.
 * - First-attempt success: the cluster's first attempt ever installed with no
 *   host retried. Eventual success: any attempt of the cluster installed.
 *   Rates divide by the clusters whose outcome is known (not in progress).
 * - A failure is a `cluster_installation_failed` or `cluster_preparation_failed`
 *   event, attributed to the first host that failed before it (its stage and
 *   what it reported), or to preparing/finalizing when no host failed.
 * - Percentiles are nearest-rank: the value at rank ceil(p/100 × n).
 * - Hosts added to an installed cluster (day 2, `host_day2_install_started`)
 *   are left out of its attempts: their installs are their own.
 */
import { buildInstallReport, type ReportEvent } from './install-report';
import { HOST_STAGES } from './install-stages';

export interface InsightsEvent {
  seq: string | number;
  name: string;
  severity: string;
  message: string;
  event_time: Date | string;
  cluster_id: string | null;
  host_id: string | null;
  props: Record<string, unknown> | null;
}

export interface InsightsInput {
  from: Date;
  to: Date;
  now: Date;
  /** Every stored event of the clusters and hosts in scope, any order (sorted here by time, then seq). */
  events: InsightsEvent[];
  /** Release of each cluster still stored; events of deleted clusters count under `unknown`. */
  releases: Record<string, string>;
  /** Name of each cluster still stored, to name the clusters behind a failure cause. */
  names?: Record<string, string>;
  /** Inventory JSON (as the agent posted it) and chosen install disk of each host still stored. */
  hosts: Record<string, { inventory: string | null; installation_disk_id?: string | undefined }>;
}

export type FailureKind = 'error' | 'timeout';
export type AttemptOutcome = 'installed' | 'failed' | 'cancelled' | 'in-progress';

export interface Percentiles {
  count: number;
  p50_seconds: number | null;
  p95_seconds: number | null;
}

export interface InsightsReport {
  from: string;
  to: string;
  generated_at: string;
  installs: { attempts_started: number; clusters: number; installed: number; failed: number; cancelled: number; in_progress: number; host_retries: number };
  first_attempt: { clusters: number; concluded: number; succeeded: number; success_rate: number | null };
  eventual: { clusters: number; concluded: number; succeeded: number; success_rate: number | null };
  failures: {
    total: number;
    by_stage: Array<{ stage: string; count: number }>;
    /** With the clusters whose attempts failed so (most recent first, at most MAX_CAUSE_CLUSTERS). */
    by_cause: Array<{ stage: string; kind: FailureKind; cause: string; count: number; clusters: Array<{ id: string; name: string | null }> }>;
  };
  by_release: Array<{ release: string; attempts: number; installed: number; failed: number; cancelled: number; in_progress: number; success_rate: number | null }>;
  by_host_profile: Array<{ profile: string; cpu: string; ram: string; disk: string; hosts: number; installed: number; failed: number; failure_rate: number | null }>;
  stage_durations: Array<{ stage: string } & Percentiles>;
  registration_to_ready: { clusters: number; ready: number } & Omit<Percentiles, 'count'>;
  validations: Array<{ validation_id: string; failures: number; hosts: number; resolved: number; unresolved: number; blocked_p50_seconds: number | null; blocked_p95_seconds: number | null; blocked_max_seconds: number | null }>;
}

/** The event names insights read; the service loads only these. */
export const INSIGHTS_EVENT_NAMES = [
  'cluster_prepare_installation_started',
  'cluster_installation_failed',
  'cluster_preparation_failed',
  'cluster_installation_completed',
  'cluster_installation_canceled',
  'cluster_installation_reset',
  'cluster_status_updated',
  'host_registration_succeeded',
  'host_install_progress_updated',
  'host_install_retried',
  'host_stage_timed_out',
  'host_status_updated',
  'host_step_failed',
  'host_validation_failed',
  'host_validation_fixed',
  'host_day2_install_started',
] as const;

/** How many clusters a failure cause names: enough to open a few install reports. */
export const MAX_CAUSE_CLUSTERS = 5;

const TERMINAL: Record<string, Exclude<AttemptOutcome, 'in-progress'>> = {
  cluster_installation_completed: 'installed',
  cluster_installation_failed: 'failed',
  cluster_preparation_failed: 'failed',
  cluster_installation_canceled: 'cancelled',
};
/** Events that belong to a host's part in an attempt (validation and registration events do not). */
const HOST_INSTALL_EVENTS = new Set(['host_install_progress_updated', 'host_install_retried', 'host_stage_timed_out', 'host_status_updated', 'host_step_failed']);

const ms = (t: Date | string) => new Date(t).getTime();
const str = (v: unknown) => (v === undefined || v === null ? '' : String(v));
const secondsBetween = (a: Date | string, b: Date | string) => Math.max(0, Math.round((ms(b) - ms(a)) / 100) / 10);
const rate = (num: number, den: number) => (den > 0 ? Math.round((num / den) * 10000) / 10000 : null);

/** Nearest-rank percentile of `values` (unsorted), null when there are none. */
export function percentile(values: number[], p: number): number | null {
  if (!values.length) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const percentiles = (values: number[]): Percentiles => ({ count: values.length, p50_seconds: percentile(values, 50), p95_seconds: percentile(values, 95) });

// ---- host profiles ---------------------------------------------------------

const GIB = 1024 ** 3;
const GB = 1000 ** 3;
/** Lower bounds of each class, largest first; the labels are what the API returns. */
const CPU_CLASSES: Array<[number, string]> = [[16, '16+ cores'], [8, '8-15 cores'], [4, '4-7 cores'], [0, '1-3 cores']];
const RAM_CLASSES: Array<[number, string]> = [[64, '64+ GiB'], [32, '32-63 GiB'], [16, '16-31 GiB'], [0, '<16 GiB']];
const DISK_CLASSES: Array<[number, string]> = [[1000, '1 TB+'], [500, '500-999 GB'], [120, '120-499 GB'], [0, '<120 GB']];
const classOf = (v: number, classes: Array<[number, string]>) => classes.find(([min]) => v >= min)![1];

/** CPU, RAM and install-disk class of a host from its stored inventory; `unknown` when it has none (deleted, never reported). */
export function hostProfile(inventory: string | null | undefined, installationDiskId?: string): { profile: string; cpu: string; ram: string; disk: string } {
  const unknown = { profile: 'unknown', cpu: 'unknown', ram: 'unknown', disk: 'unknown' };
  if (!inventory) return unknown;
  let inv: { cpu?: { count?: number }; memory?: { physical_bytes?: number }; disks?: Array<{ id?: string; size_bytes?: number; drive_type?: string; installation_eligibility?: { eligible?: boolean } }> };
  try {
    inv = JSON.parse(inventory) as typeof inv;
  } catch {
    return unknown;
  }
  const cpu = typeof inv.cpu?.count === 'number' ? classOf(inv.cpu.count, CPU_CLASSES) : 'unknown';
  const ram = typeof inv.memory?.physical_bytes === 'number' ? classOf(inv.memory.physical_bytes / GIB, RAM_CLASSES) : 'unknown';
  const disks = inv.disks ?? [];
  // The disk the host installs to: the one chosen at refresh, else its first eligible disk, else its first.
  const d = disks.find((x) => installationDiskId && x.id === installationDiskId) ?? disks.find((x) => x.installation_eligibility?.eligible) ?? disks[0];
  const disk = d && typeof d.size_bytes === 'number' ? `${classOf(d.size_bytes / GB, DISK_CLASSES)} ${d.drive_type || 'disk'}` : 'unknown';
  return { profile: `${cpu} / ${ram} / ${disk}`, cpu, ram, disk };
}

// ---- attempts --------------------------------------------------------------

interface HostIncident {
  hostId: string;
  at: number;
  stage: string;
  kind: FailureKind;
  cause: string;
}

interface Failure {
  stage: string;
  kind: FailureKind;
  cause: string;
}

export interface Attempt {
  clusterId: string;
  /** 1 for the cluster's first attempt ever. */
  number: number;
  startedAt: number;
  outcome: AttemptOutcome;
  hostRetries: number;
  failures: Failure[];
  /** Hosts that took part, and whether each installed or failed (its last try). */
  hosts: Map<string, 'installed' | 'failed' | 'other'>;
  events: InsightsEvent[];
}

const timeoutReason = (reason: string) => /timed out|did not complete within|timeout/i.test(reason);

/** One attempt's events (oldest first, starting with its prepare event) → outcome, failures and host results. */
export function explainAttempt(clusterId: string, number: number, events: InsightsEvent[]): Attempt {
  let outcome: AttemptOutcome = 'in-progress';
  let hostRetries = 0;
  const failures: Failure[] = [];
  const hosts = new Map<string, 'installed' | 'failed' | 'other'>();
  const lastStage = new Map<string, string>();
  /** The failure of each host's current try, once it has one (the first signal wins: it carries the installer's words). */
  const currentIncident = new Map<string, HostIncident>();
  /** Host failures not yet attributed to a cluster failure, oldest first. */
  let unattributed: HostIncident[] = [];

  /** Hosts stopped by a cancel: what they report afterwards ("installation stopped") is not a failure. */
  const stopped = new Set<string>();
  let cancelled = false;
  const hostFailed = (e: InsightsEvent, stage: string, kind: FailureKind, cause: string) => {
    const hostId = e.host_id!;
    if (currentIncident.has(hostId) || stopped.has(hostId) || cancelled) return;
    const incident = { hostId, at: ms(e.event_time), stage: stage || 'Starting installation', kind, cause: cause || 'the host reported a failure without details' };
    currentIncident.set(hostId, incident);
    unattributed.push(incident);
    hosts.set(hostId, 'failed');
  };

  for (const e of events) {
    const p = e.props ?? {};
    if (e.host_id && HOST_INSTALL_EVENTS.has(e.name) && !hosts.has(e.host_id)) hosts.set(e.host_id, 'other');
    switch (e.name) {
      case 'host_install_progress_updated': {
        const stage = str(p.stage);
        if (stage === 'Failed') hostFailed(e, lastStage.get(e.host_id!) ?? '', 'error', str(p.progress_info).replace(/^ \((.*)\)$/, '$1'));
        else {
          lastStage.set(e.host_id!, stage);
          if (stage === 'Done') hosts.set(e.host_id!, 'installed');
        }
        break;
      }
      case 'host_stage_timed_out':
        if (p.kind === 'hard') hostFailed(e, str(p.stage), 'timeout', `stage ${str(p.stage)} ran past its hard timeout`);
        break;
      case 'host_status_updated':
        if (p.new_status === 'cancelled') stopped.add(e.host_id!);
        if (p.new_status === 'error') hostFailed(e, lastStage.get(e.host_id!) ?? '', 'error', str(p.info).replace(/^Failed - ?/, ''));
        if (p.new_status === 'installed') hosts.set(e.host_id!, 'installed');
        break;
      case 'host_step_failed':
        if (p.step_type === 'install') hostFailed(e, lastStage.get(e.host_id!) ?? '', 'error', str(p.error));
        break;
      case 'host_install_retried':
        hostRetries++;
        currentIncident.delete(e.host_id!);
        hosts.set(e.host_id!, 'other');
        outcome = 'in-progress';
        break;
      case 'cluster_installation_failed': {
        const first = unattributed[0];
        if (first) failures.push({ stage: first.stage, kind: first.kind, cause: first.cause });
        else {
          const reason = str(p.reason);
          failures.push({ stage: str(p.failing_stage) || 'finalizing', kind: timeoutReason(reason) ? 'timeout' : 'error', cause: reason || 'no reason given' });
        }
        unattributed = [];
        outcome = 'failed';
        break;
      }
      case 'cluster_preparation_failed': {
        const reason = str(p.reason);
        failures.push({ stage: 'preparing', kind: timeoutReason(reason) ? 'timeout' : 'error', cause: reason || 'no reason given' });
        outcome = 'failed';
        break;
      }
      case 'cluster_installation_reset':
        if (outcome === 'in-progress') outcome = 'cancelled';
        cancelled = true;
        break;
      case 'cluster_installation_canceled':
        outcome = 'cancelled';
        cancelled = true;
        break;
      default:
        if (TERMINAL[e.name]) outcome = TERMINAL[e.name]!;
    }
  }
  return { clusterId, number, startedAt: ms(events[0]!.event_time), outcome, hostRetries, failures, hosts, events };
}

/** Stage durations of one attempt, from the install report's own timelines (completed stages only). */
function stageDurations(a: Attempt): Array<{ stage: string; seconds: number }> {
  const report = buildInstallReport({
    // Only the stage timelines are read: status and hosts' states are placeholders that keep the report's failure logic out.
    cluster: { id: a.clusterId, name: '', status: 'installing', status_info: '', openshift_version: '', install_attempt: a.number },
    hosts: [...a.hosts.keys()].map((id) => ({ id, hostname: id, role: '', bootstrap: false, status: 'installing', status_info: '' })),
    events: a.events.filter((e) => e.host_id === null || HOST_INSTALL_EVENTS.has(e.name)) as ReportEvent[],
    now: new Date(a.startedAt),
  });
  return report.hosts.flatMap((h) => h.stages.filter((s) => s.result === 'completed' && s.stage !== 'Done').map((s) => ({ stage: s.stage, seconds: s.duration_seconds })));
}

const byTime = (a: InsightsEvent, b: InsightsEvent) => ms(a.event_time) - ms(b.event_time) || Number(a.seq) - Number(b.seq);

function tally<K>(keys: K[], key: (k: K) => string): Map<string, { item: K; count: number }> {
  const out = new Map<string, { item: K; count: number }>();
  for (const k of keys) {
    const id = key(k);
    const cur = out.get(id);
    if (cur) cur.count++;
    else out.set(id, { item: k, count: 1 });
  }
  return out;
}

export function computeInsights(input: InsightsInput): InsightsReport {
  const from = input.from.getTime();
  const to = input.to.getTime();
  const inWindow = (t: number) => t >= from && t < to;
  // Sorted once with each time parsed once (a comparator that parses is most of the cost at 50,000 events).
  const events = input.events
    .map((e) => ({ e, t: ms(e.event_time), s: Number(e.seq) }))
    .sort((a, b) => a.t - b.t || a.s - b.s)
    .map((x) => x.e);

  // Attempts, per cluster, in order.
  const byCluster = new Map<string, InsightsEvent[]>();
  const push = <T>(m: Map<string, T[]>, k: string, v: T) => (m.get(k) ?? m.set(k, []).get(k)!).push(v);
  for (const e of events) if (e.cluster_id) push(byCluster, e.cluster_id, e);
  const attemptsByCluster = new Map<string, Attempt[]>();
  for (const [clusterId, list] of byCluster) {
    const attempts: Attempt[] = [];
    let current: InsightsEvent[] | undefined;
    const close = () => current && attempts.push(explainAttempt(clusterId, attempts.length + 1, current));
    // Hosts added to the installed cluster (day 2) run their own installs: not part of the cluster's attempt.
    const day2 = new Set<string>();
    for (const e of list) {
      if (e.name === 'host_day2_install_started' && e.host_id) day2.add(e.host_id);
      if (e.host_id && day2.has(e.host_id)) continue;
      if (e.name === 'cluster_prepare_installation_started') {
        close();
        current = [e];
      } else current?.push(e);
    }
    close();
    attemptsByCluster.set(clusterId, attempts);
  }
  const windowAttempts = [...attemptsByCluster.values()].flat().filter((a) => inWindow(a.startedAt));
  const count = (list: Attempt[], o: AttemptOutcome) => list.filter((a) => a.outcome === o).length;

  // First attempt and eventual success, over the clusters whose first attempt started in the window.
  const cohort = [...attemptsByCluster.entries()].filter(([, list]) => list[0] && inWindow(list[0].startedAt));
  const firstConcluded = cohort.filter(([, list]) => list[0]!.outcome !== 'in-progress');
  const firstClean = firstConcluded.filter(([, list]) => list[0]!.outcome === 'installed' && list[0]!.hostRetries === 0);
  const everInstalled = cohort.filter(([, list]) => list.some((a) => a.outcome === 'installed'));
  const eventualConcluded = cohort.filter(([, list]) => list.some((a) => a.outcome === 'installed') || list.at(-1)!.outcome !== 'in-progress');

  // Failures.
  const failures = windowAttempts.flatMap((a) => a.failures.map((f) => ({ ...f, clusterId: a.clusterId, startedAt: a.startedAt })));
  const byStage = tally(failures, (f) => f.stage);
  const causeKey = (f: Failure) => `${f.stage}\u0000${f.kind}\u0000${f.cause}`;
  const byCause = tally(failures, causeKey);
  const causeClusters = (key: string) => {
    const ids = [...new Set(failures.filter((f) => causeKey(f) === key).sort((a, b) => b.startedAt - a.startedAt).map((f) => f.clusterId))];
    return ids.slice(0, MAX_CAUSE_CLUSTERS).map((id) => ({ id, name: input.names?.[id] ?? null }));
  };

  // By release.
  const releaseOf = (clusterId: string) => input.releases[clusterId] ?? 'unknown';
  const releases = new Map<string, Attempt[]>();
  for (const a of windowAttempts) push(releases, releaseOf(a.clusterId), a);

  // By host profile: one entry per host per attempt.
  const profiles = new Map<string, { p: ReturnType<typeof hostProfile>; hosts: number; installed: number; failed: number }>();
  for (const a of windowAttempts) {
    for (const [hostId, result] of a.hosts) {
      const h = input.hosts[hostId];
      const p = hostProfile(h?.inventory, h?.installation_disk_id);
      const cur = profiles.get(p.profile) ?? { p, hosts: 0, installed: 0, failed: 0 };
      cur.hosts++;
      if (result === 'installed') cur.installed++;
      if (result === 'failed') cur.failed++;
      profiles.set(p.profile, cur);
    }
  }

  // Stage durations.
  const stageSeconds = new Map<string, number[]>();
  for (const a of windowAttempts) for (const s of stageDurations(a)) push(stageSeconds, s.stage, s.seconds);
  const stageOrder = (s: string) => {
    const i = (HOST_STAGES as readonly string[]).indexOf(s);
    return i < 0 ? HOST_STAGES.length : i;
  };

  // First host registration → ready, for clusters whose first host registered in the window.
  const toReady: number[] = [];
  let registered = 0;
  for (const list of byCluster.values()) {
    const first = list.find((e) => e.name === 'host_registration_succeeded');
    if (!first || !inWindow(ms(first.event_time))) continue;
    registered++;
    const ready = list.find((e) => e.name === 'cluster_status_updated' && e.props?.new_status === 'ready' && byTime(e, first) > 0);
    if (ready) toReady.push(secondsBetween(first.event_time, ready.event_time));
  }

  // Validations: each failure that started in the window, until the same host's same validation is fixed.
  const validations = new Map<string, { failures: number; hosts: Set<string>; blocked: number[]; unresolved: number }>();
  const openFailures = new Map<string, InsightsEvent>();
  for (const e of events) {
    if (e.name !== 'host_validation_failed' && e.name !== 'host_validation_fixed') continue;
    const id = str(e.props?.validation_id) || 'unknown';
    const key = `${e.host_id}\u0000${id}`;
    if (e.name === 'host_validation_failed') {
      if (!openFailures.has(key)) openFailures.set(key, e);
      continue;
    }
    const failed = openFailures.get(key);
    openFailures.delete(key);
    if (!failed || !inWindow(ms(failed.event_time))) continue;
    const v = validations.get(id) ?? { failures: 0, hosts: new Set<string>(), blocked: [], unresolved: 0 };
    v.failures++;
    v.hosts.add(str(e.host_id));
    v.blocked.push(secondsBetween(failed.event_time, e.event_time));
    validations.set(id, v);
  }
  for (const [key, failed] of openFailures) {
    if (!inWindow(ms(failed.event_time))) continue;
    const id = key.split('\u0000')[1]!;
    const v = validations.get(id) ?? { failures: 0, hosts: new Set<string>(), blocked: [], unresolved: 0 };
    v.failures++;
    v.unresolved++;
    v.hosts.add(str(failed.host_id));
    validations.set(id, v);
  }

  const desc = <T>(list: T[], n: (t: T) => number, name: (t: T) => string) => list.sort((a, b) => n(b) - n(a) || name(a).localeCompare(name(b)));
  return {
    from: input.from.toISOString(),
    to: input.to.toISOString(),
    generated_at: input.now.toISOString(),
    installs: {
      attempts_started: windowAttempts.length,
      clusters: new Set(windowAttempts.map((a) => a.clusterId)).size,
      installed: count(windowAttempts, 'installed'),
      failed: count(windowAttempts, 'failed'),
      cancelled: count(windowAttempts, 'cancelled'),
      in_progress: count(windowAttempts, 'in-progress'),
      host_retries: windowAttempts.reduce((n, a) => n + a.hostRetries, 0),
    },
    first_attempt: { clusters: cohort.length, concluded: firstConcluded.length, succeeded: firstClean.length, success_rate: rate(firstClean.length, firstConcluded.length) },
    eventual: { clusters: cohort.length, concluded: eventualConcluded.length, succeeded: everInstalled.length, success_rate: rate(everInstalled.length, eventualConcluded.length) },
    failures: {
      total: failures.length,
      by_stage: desc([...byStage.values()].map((v) => ({ stage: v.item.stage, count: v.count })), (x) => x.count, (x) => x.stage),
      by_cause: desc([...byCause.entries()].map(([key, v]) => ({ stage: v.item.stage, kind: v.item.kind, cause: v.item.cause, count: v.count, clusters: causeClusters(key) })), (x) => x.count, (x) => `${x.stage} ${x.cause}`),
    },
    by_release: [...releases.entries()]
      .map(([release, list]) => {
        const installed = count(list, 'installed');
        const failed = count(list, 'failed');
        const cancelled = count(list, 'cancelled');
        return { release, attempts: list.length, installed, failed, cancelled, in_progress: count(list, 'in-progress'), success_rate: rate(installed, installed + failed + cancelled) };
      })
      .sort((a, b) => a.release.localeCompare(b.release, undefined, { numeric: true })),
    by_host_profile: desc(
      [...profiles.values()].map((v) => ({ ...v.p, hosts: v.hosts, installed: v.installed, failed: v.failed, failure_rate: rate(v.failed, v.installed + v.failed) })),
      (x) => x.hosts,
      (x) => x.profile,
    ),
    stage_durations: [...stageSeconds.entries()].map(([stage, values]) => ({ stage, ...percentiles(values) })).sort((a, b) => stageOrder(a.stage) - stageOrder(b.stage)),
    registration_to_ready: { clusters: registered, ready: toReady.length, p50_seconds: percentile(toReady, 50), p95_seconds: percentile(toReady, 95) },
    validations: desc(
      [...validations.entries()].map(([validation_id, v]) => ({
        validation_id,
        failures: v.failures,
        hosts: v.hosts.size,
        resolved: v.blocked.length,
        unresolved: v.unresolved,
        blocked_p50_seconds: percentile(v.blocked, 50),
        blocked_p95_seconds: percentile(v.blocked, 95),
        blocked_max_seconds: v.blocked.length ? Math.max(...v.blocked) : null,
      })),
      (x) => x.failures,
      (x) => x.validation_id,
    ),
  };
}
