/**
 * Install insights (src/domain/insights.ts), rule by rule, over event
 * sequences shaped as the service writes them.
 */
import { computeInsights, explainAttempt, hostProfile, percentile, type InsightsEvent } from '../../src/domain/insights';

const T0 = Date.parse('2026-11-20T10:00:00Z');
let seq = 0;
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
function ev(t: number, name: string, cluster: string | null, host: string | null, props: Record<string, unknown> = {}): InsightsEvent {
  return { seq: ++seq, name, severity: 'info', message: name, event_time: at(t), cluster_id: cluster, host_id: host, props };
}
const prepare = (t: number, c: string) => ev(t, 'cluster_prepare_installation_started', c, null);
const stage = (t: number, c: string, h: string, s: string, info = '') => ev(t, 'host_install_progress_updated', c, h, { stage: s, progress_info: info ? ` (${info})` : '' });
const done = (t: number, c: string) => ev(t, 'cluster_installation_completed', c, null, { cluster_name: c });
const clusterFailed = (t: number, c: string, failing_stage: string, reason = 'a host failed') => ev(t, 'cluster_installation_failed', c, null, { reason, failing_stage });
const retried = (t: number, c: string, h: string) => ev(t, 'host_install_retried', c, h, { retry: 1 });

/** A host walking stages from `t`, one every `step` seconds, ending in Done. */
function walk(t: number, c: string, h: string, stages: string[], step = 10): InsightsEvent[] {
  return [...stages, 'Done'].map((s, i) => stage(t + i * step, c, h, s));
}
const WORKER = ['Starting installation', 'Installing', 'Writing image to disk', 'Rebooting', 'Joined'];

const WINDOW = { from: new Date(T0), to: new Date(T0 + 24 * 3600 * 1000), now: new Date(T0 + 48 * 3600 * 1000) };
const run = (events: InsightsEvent[], releases: Record<string, string> = {}, hosts: Record<string, { inventory: string | null }> = {}) => computeInsights({ ...WINDOW, events, releases, hosts });

describe('percentile (nearest rank)', () => {
  it.each([
    [[], 50, null],
    [[7], 50, 7],
    [[7], 95, 7],
    [[2, 1], 50, 1],
    [[2, 1], 95, 2],
    [[5, 1, 4, 2, 3], 50, 3],
    [Array.from({ length: 20 }, (_, i) => 20 - i), 50, 10],
    [Array.from({ length: 20 }, (_, i) => 20 - i), 95, 19],
    [Array.from({ length: 100 }, (_, i) => i + 1), 95, 95],
  ])('of %j at p%d is %p', (values, p, expected) => {
    expect(percentile(values, p)).toBe(expected);
  });
});

describe('hostProfile buckets', () => {
  const inv = (cpu: number, ramGiB: number, disks: Array<{ id?: string; size_gb: number; type: string; eligible?: boolean }>) =>
    JSON.stringify({ cpu: { count: cpu }, memory: { physical_bytes: ramGiB * 1024 ** 3 }, disks: disks.map((d) => ({ id: d.id, size_bytes: d.size_gb * 1e9, drive_type: d.type, installation_eligibility: { eligible: d.eligible ?? true } })) });
  it.each([
    ['control-plane', inv(8, 32, [{ size_gb: 480, type: 'SSD' }]), undefined, '8-15 cores / 32-63 GiB / 120-499 GB SSD'],
    ['worker: the install disk chosen, not the larger one', inv(4, 16, [{ id: 'a', size_gb: 240, type: 'SSD' }, { id: 'b', size_gb: 960, type: 'HDD' }]), 'a', '4-7 cores / 16-31 GiB / 120-499 GB SSD'],
    ['worker: the chosen disk is the large HDD', inv(4, 16, [{ id: 'a', size_gb: 240, type: 'SSD' }, { id: 'b', size_gb: 960, type: 'HDD' }]), 'b', '4-7 cores / 16-31 GiB / 500-999 GB HDD'],
    ['undersized: first eligible disk, else the first', inv(1, 4, [{ size_gb: 16, type: 'HDD', eligible: false }]), undefined, '1-3 cores / <16 GiB / <120 GB HDD'],
    ['big', inv(64, 512, [{ size_gb: 100, type: 'SSD', eligible: false }, { size_gb: 3840, type: 'SSD' }]), undefined, '16+ cores / 64+ GiB / 1 TB+ SSD'],
    ['no inventory', null, undefined, 'unknown'],
    ['not JSON', '{', undefined, 'unknown'],
  ])('%s', (_name, inventory, diskId, expected) => {
    expect(hostProfile(inventory, diskId).profile).toBe(expected);
  });
});

describe('explainAttempt: outcome and failure cause', () => {
  const cases: Array<{ rule: string; events: InsightsEvent[]; outcome: string; retries: number; failures: Array<{ stage: string; kind: string; cause: string }>; hosts: Record<string, string> }> = [
    {
      rule: 'a clean install is installed, no failures',
      events: [prepare(0, 'c'), ...walk(5, 'c', 'h1', WORKER), done(100, 'c')],
      outcome: 'installed',
      retries: 0,
      failures: [],
      hosts: { h1: 'installed' },
    },
    {
      rule: 'a host reporting Failed names the stage before it and its words',
      events: [prepare(0, 'c'), stage(5, 'c', 'h1', 'Starting installation'), stage(6, 'c', 'h1', 'Writing image to disk'), stage(9, 'c', 'h1', 'Failed', 'disk write error'), ev(9, 'host_step_failed', 'c', 'h1', { step_type: 'install', error: 'exit 1' }), clusterFailed(10, 'c', 'Writing image to disk')],
      outcome: 'failed',
      retries: 0,
      failures: [{ stage: 'Writing image to disk', kind: 'error', cause: 'disk write error' }],
      hosts: { h1: 'failed' },
    },
    {
      rule: 'a failed host retried to the end: installed, one retry, the failure still counted',
      events: [prepare(0, 'c'), stage(5, 'c', 'h1', 'Installing'), stage(9, 'c', 'h1', 'Failed', 'boom'), clusterFailed(10, 'c', 'Installing'), retried(20, 'c', 'h1'), ...walk(25, 'c', 'h1', WORKER), done(100, 'c')],
      outcome: 'installed',
      retries: 1,
      failures: [{ stage: 'Installing', kind: 'error', cause: 'boom' }],
      hosts: { h1: 'installed' },
    },
    {
      rule: 'a retried host that has not finished is in progress',
      events: [prepare(0, 'c'), stage(5, 'c', 'h1', 'Installing'), stage(9, 'c', 'h1', 'Failed', 'boom'), clusterFailed(10, 'c', 'Installing'), retried(20, 'c', 'h1'), stage(25, 'c', 'h1', 'Installing')],
      outcome: 'in-progress',
      retries: 1,
      failures: [{ stage: 'Installing', kind: 'error', cause: 'boom' }],
      hosts: { h1: 'other' },
    },
    {
      rule: 'a hard stage timeout is a timeout in that stage',
      events: [prepare(0, 'c'), stage(5, 'c', 'h1', 'Rebooting'), ev(60, 'host_stage_timed_out', 'c', 'h1', { stage: 'Rebooting', kind: 'hard' }), ev(60, 'host_status_updated', 'c', 'h1', { new_status: 'error', info: 'Host failed to install' }), clusterFailed(61, 'c', 'Rebooting')],
      outcome: 'failed',
      retries: 0,
      failures: [{ stage: 'Rebooting', kind: 'timeout', cause: 'stage Rebooting ran past its hard timeout' }],
      hosts: { h1: 'failed' },
    },
    {
      rule: 'a soft stage timeout is only a warning',
      events: [prepare(0, 'c'), stage(5, 'c', 'h1', 'Rebooting'), ev(60, 'host_stage_timed_out', 'c', 'h1', { stage: 'Rebooting', kind: 'soft' }), stage(70, 'c', 'h1', 'Done'), done(80, 'c')],
      outcome: 'installed',
      retries: 0,
      failures: [],
      hosts: { h1: 'installed' },
    },
    {
      rule: 'a host that restarted mid-install (status error) fails with the state machine info',
      events: [prepare(0, 'c'), stage(5, 'c', 'h1', 'Installing'), ev(9, 'host_status_updated', 'c', 'h1', { new_status: 'error', info: 'The host unexpectedly restarted during the installation' }), clusterFailed(10, 'c', 'Installing')],
      outcome: 'failed',
      retries: 0,
      failures: [{ stage: 'Installing', kind: 'error', cause: 'The host unexpectedly restarted during the installation' }],
      hosts: { h1: 'failed' },
    },
    {
      rule: 'the first host to fail is the cause, not the ones after it',
      events: [prepare(0, 'c'), stage(5, 'c', 'h1', 'Installing'), stage(5, 'c', 'h2', 'Rebooting'), stage(9, 'c', 'h2', 'Failed', 'first'), stage(10, 'c', 'h1', 'Failed', 'second'), clusterFailed(11, 'c', 'Rebooting')],
      outcome: 'failed',
      retries: 0,
      failures: [{ stage: 'Rebooting', kind: 'error', cause: 'first' }],
      hosts: { h1: 'failed', h2: 'failed' },
    },
    {
      rule: 'no host failed: finalizing, kind from the reason',
      events: [prepare(0, 'c'), ...walk(5, 'c', 'h1', WORKER), clusterFailed(300, 'c', 'finalizing', 'finalizing timed out after 300 s')],
      outcome: 'failed',
      retries: 0,
      failures: [{ stage: 'finalizing', kind: 'timeout', cause: 'finalizing timed out after 300 s' }],
      hosts: { h1: 'installed' },
    },
    {
      rule: 'preparation failed: stage preparing',
      events: [prepare(0, 'c'), ev(2, 'host_status_updated', 'c', 'h1', { new_status: 'preparing-for-installation' }), ev(30, 'cluster_preparation_failed', 'c', null, { reason: 'host h1 failed the disk speed check' })],
      outcome: 'failed',
      retries: 0,
      failures: [{ stage: 'preparing', kind: 'error', cause: 'host h1 failed the disk speed check' }],
      hosts: { h1: 'other' },
    },
    {
      rule: 'cancelled',
      events: [prepare(0, 'c'), stage(5, 'c', 'h1', 'Installing'), ev(9, 'cluster_installation_canceled', 'c', null), ev(20, 'cluster_installation_reset', 'c', null)],
      outcome: 'cancelled',
      retries: 0,
      failures: [],
      hosts: { h1: 'other' },
    },
    {
      rule: 'what hosts report after a cancel ("installation stopped") is not a failure',
      events: [prepare(0, 'c'), stage(5, 'c', 'h1', 'Installing'), stage(5, 'c', 'h2', 'Installing'), ev(9, 'host_status_updated', 'c', 'h1', { new_status: 'cancelled' }), ev(9, 'cluster_installation_canceled', 'c', null), ev(9.1, 'host_step_failed', 'c', 'h1', { step_type: 'install', error: 'installation stopped' }), ev(9.2, 'host_step_failed', 'c', 'h2', { step_type: 'install', error: 'installation stopped' })],
      outcome: 'cancelled',
      retries: 0,
      failures: [],
      hosts: { h1: 'other', h2: 'other' },
    },
    {
      rule: 'reset of a running attempt ends it as cancelled; a failed one stays failed',
      events: [prepare(0, 'c'), stage(5, 'c', 'h1', 'Failed', 'x'), clusterFailed(6, 'c', 'Starting installation'), ev(20, 'cluster_installation_reset', 'c', null)],
      outcome: 'failed',
      retries: 0,
      failures: [{ stage: 'Starting installation', kind: 'error', cause: 'x' }],
      hosts: { h1: 'failed' },
    },
    {
      rule: 'nothing ended yet: in progress',
      events: [prepare(0, 'c'), stage(5, 'c', 'h1', 'Installing')],
      outcome: 'in-progress',
      retries: 0,
      failures: [],
      hosts: { h1: 'other' },
    },
  ];
  it.each(cases)('$rule', ({ events, outcome, retries, failures, hosts }) => {
    const a = explainAttempt('c', 1, events);
    expect(a.outcome).toBe(outcome);
    expect(a.hostRetries).toBe(retries);
    expect(a.failures).toEqual(failures);
    expect(Object.fromEntries(a.hosts)).toEqual(hosts);
  });
});

describe('computeInsights over a window', () => {
  const DAY = 24 * 3600;
  // a: clean first attempt (1.31). b: fails at writing, host retried, installed (1.32).
  // c: attempt 1 fails, reset, attempt 2 installs (1.31). d: first attempt before the window, second inside (1.30).
  // e: in progress (1.32). f: after the window.
  const events = [
    prepare(100, 'a'), ...walk(110, 'a', 'a1', WORKER, 10), ...walk(110, 'a', 'a2', WORKER, 20), done(300, 'a'),
    prepare(200, 'b'), stage(210, 'b', 'b1', 'Writing image to disk'), stage(230, 'b', 'b1', 'Failed', 'simulated failure at Writing image to disk'), clusterFailed(231, 'b', 'Writing image to disk'), retried(300, 'b', 'b1'), ...walk(310, 'b', 'b1', WORKER, 10), done(400, 'b'),
    prepare(500, 'c'), stage(510, 'c', 'c1', 'Installing'), stage(520, 'c', 'c1', 'Failed', 'boom'), clusterFailed(521, 'c', 'Installing'), ev(600, 'cluster_installation_reset', 'c', null),
    prepare(700, 'c'), ...walk(710, 'c', 'c1', WORKER, 10), done(800, 'c'),
    prepare(-DAY, 'd'), stage(-DAY + 10, 'd', 'd1', 'Failed', 'old'), clusterFailed(-DAY + 11, 'd', 'Starting installation'), prepare(900, 'd'), ...walk(910, 'd', 'd1', WORKER, 10), done(1000, 'd'),
    prepare(1100, 'e'), stage(1110, 'e', 'e1', 'Installing'),
    prepare(2 * DAY, 'f'), ...walk(2 * DAY + 10, 'f', 'f1', WORKER, 10), done(2 * DAY + 100, 'f'),
  ];
  const releases = { a: '1.31', b: '1.32', c: '1.31', d: '1.30', e: '1.32', f: '1.31' };
  const cp = JSON.stringify({ cpu: { count: 8 }, memory: { physical_bytes: 32 * 1024 ** 3 }, disks: [{ size_bytes: 480e9, drive_type: 'SSD' }] });
  const wk = JSON.stringify({ cpu: { count: 4 }, memory: { physical_bytes: 16 * 1024 ** 3 }, disks: [{ size_bytes: 240e9, drive_type: 'SSD' }] });
  const hosts = { a1: { inventory: cp }, a2: { inventory: cp }, b1: { inventory: wk }, c1: { inventory: wk }, d1: { inventory: cp } };
  const r = run(events, releases, hosts);

  it('counts the attempts that started in the window, by outcome', () => {
    // a, b, c#1, c#2, d#2, e: six attempts of five clusters; f is after, d#1 before.
    expect(r.installs).toEqual({ attempts_started: 6, clusters: 5, installed: 4, failed: 1, cancelled: 0, in_progress: 1, host_retries: 1 });
  });

  it('first-attempt and eventual success over the clusters whose first attempt is in the window', () => {
    // Cohort a, b, c, e (d's first attempt was before). Concluded first attempts: a, b, c. Clean: a only.
    expect(r.first_attempt).toEqual({ clusters: 4, concluded: 3, succeeded: 1, success_rate: 0.3333 });
    // Eventually: a, b, c installed; e still running.
    expect(r.eventual).toEqual({ clusters: 4, concluded: 3, succeeded: 3, success_rate: 1 });
  });

  it('failures by stage and cause', () => {
    expect(r.failures.total).toBe(2);
    expect(r.failures.by_stage).toEqual([
      { stage: 'Installing', count: 1 },
      { stage: 'Writing image to disk', count: 1 },
    ]);
    expect(r.failures.by_cause).toEqual([
      { stage: 'Installing', kind: 'error', cause: 'boom', count: 1, clusters: [{ id: 'c', name: null }] },
      { stage: 'Writing image to disk', kind: 'error', cause: 'simulated failure at Writing image to disk', count: 1, clusters: [{ id: 'b', name: null }] },
    ]);
  });

  it('a cause names its clusters, most recent attempt first, each once, at most five', () => {
    const failAt = (t: number, c: string) => [prepare(t, c), stage(t + 1, c, `${c}1`, 'Installing'), stage(t + 2, c, `${c}1`, 'Failed', 'same'), clusterFailed(t + 3, c, 'Installing')];
    const ids = ['p', 'q', 'r', 's', 't', 'u'];
    const evs = [...ids.flatMap((c, i) => failAt(100 * (i + 1), c)), ...failAt(1000, 'p')];
    const names = Object.fromEntries(ids.map((c) => [c, `cluster-${c}`]));
    const cause = computeInsights({ ...WINDOW, events: evs, releases: {}, names, hosts: {} }).failures.by_cause;
    expect(cause).toHaveLength(1);
    expect(cause[0]!.count).toBe(7);
    expect(cause[0]!.clusters).toEqual(['p', 'u', 't', 's', 'r'].map((id) => ({ id, name: `cluster-${id}` })));
  });

  it('by release, deleted clusters under unknown', () => {
    expect(r.by_release).toEqual([
      { release: '1.30', attempts: 1, installed: 1, failed: 0, cancelled: 0, in_progress: 0, success_rate: 1 },
      { release: '1.31', attempts: 3, installed: 2, failed: 1, cancelled: 0, in_progress: 0, success_rate: 0.6667 },
      { release: '1.32', attempts: 2, installed: 1, failed: 0, cancelled: 0, in_progress: 1, success_rate: 1 },
    ]);
    const { e: _e, ...withoutE } = releases;
    expect(run(events, withoutE, hosts).by_release.find((x) => x.release === 'unknown')).toMatchObject({ attempts: 1, in_progress: 1 });
  });

  it('by host profile, one entry per host per attempt', () => {
    expect(r.by_host_profile).toEqual([
      // Most hosts first, then by name. b1 (retried, installed), c1#1 failed, c1#2 installed.
      { profile: '4-7 cores / 16-31 GiB / 120-499 GB SSD', cpu: '4-7 cores', ram: '16-31 GiB', disk: '120-499 GB SSD', hosts: 3, installed: 2, failed: 1, failure_rate: 0.3333 },
      // a1, a2, d1#2 installed.
      { profile: '8-15 cores / 32-63 GiB / 120-499 GB SSD', cpu: '8-15 cores', ram: '32-63 GiB', disk: '120-499 GB SSD', hosts: 3, installed: 3, failed: 0, failure_rate: 0 },
      // e1: no inventory stored.
      { profile: 'unknown', cpu: 'unknown', ram: 'unknown', disk: 'unknown', hosts: 1, installed: 0, failed: 0, failure_rate: null },
    ]);
  });

  it('stage durations p50/p95 from completed stages only', () => {
    const byStage = Object.fromEntries(r.stage_durations.map((s) => [s.stage, s]));
    // Completed 'Installing' stages: a1 10, a2 20, b1 10, c1#2 10, d1 10 (c1#1 failed in it; e1 still in it).
    expect(byStage.Installing).toEqual({ stage: 'Installing', count: 5, p50_seconds: 10, p95_seconds: 20 });
    // b1's first Writing image to disk ended in Failed: not a completed stage.
    expect(byStage['Writing image to disk']).toEqual({ stage: 'Writing image to disk', count: 5, p50_seconds: 10, p95_seconds: 20 });
    expect(r.stage_durations.map((s) => s.stage)).toEqual(WORKER);
  });

  it('hosts added to the installed cluster later (day 2) are not part of its attempt', () => {
    const day2 = run(
      [prepare(100, 'a'), ...walk(110, 'a', 'a1', WORKER, 10), done(200, 'a'), ev(300, 'host_day2_install_started', 'a', 'a9', { attempt: 1 }), ...walk(310, 'a', 'a9', WORKER, 60), stage(700, 'a', 'a9', 'Failed', 'day-2 failure')],
      { a: '1.31' },
      hosts,
    );
    expect(day2.installs).toMatchObject({ attempts_started: 1, installed: 1, failed: 0 });
    expect(day2.by_host_profile.map((p) => p.hosts)).toEqual([1]);
    expect(day2.stage_durations.find((x) => x.stage === 'Installing')).toMatchObject({ count: 1, p95_seconds: 10 });
    expect(day2.failures.total).toBe(0);
  });

  it('an empty window says zero and null, not NaN', () => {
    const empty = run([]);
    expect(empty.installs).toEqual({ attempts_started: 0, clusters: 0, installed: 0, failed: 0, cancelled: 0, in_progress: 0, host_retries: 0 });
    expect(empty.first_attempt.success_rate).toBeNull();
    expect(empty.eventual.success_rate).toBeNull();
    expect(empty.registration_to_ready).toEqual({ clusters: 0, ready: 0, p50_seconds: null, p95_seconds: null });
    expect(empty.validations).toEqual([]);
  });
});

describe('computeInsights: registration to ready', () => {
  it('measures from the first host registration to the first ready after it', () => {
    const r = run([
      ev(10, 'host_registration_succeeded', 'a', 'a1'),
      ev(20, 'host_registration_succeeded', 'a', 'a2'),
      ev(70, 'cluster_status_updated', 'a', null, { new_status: 'ready' }),
      ev(90, 'cluster_status_updated', 'a', null, { new_status: 'ready' }),
      ev(100, 'host_registration_succeeded', 'b', 'b1'),
      ev(400, 'cluster_status_updated', 'b', null, { new_status: 'ready' }),
      // c never ready; d registered before the window.
      ev(100, 'host_registration_succeeded', 'c', 'c1'),
      ev(-100, 'host_registration_succeeded', 'd', 'd1'),
      ev(10, 'cluster_status_updated', 'd', null, { new_status: 'ready' }),
    ]);
    expect(r.registration_to_ready).toEqual({ clusters: 3, ready: 2, p50_seconds: 60, p95_seconds: 300 });
  });
});

describe('computeInsights: failing validations and how long they block', () => {
  it('pairs each failure with the next fix of the same host and validation', () => {
    const failed = (t: number, h: string, id: string) => ev(t, 'host_validation_failed', 'c', h, { validation_id: id });
    const fixed = (t: number, h: string, id: string) => ev(t, 'host_validation_fixed', 'c', h, { validation_id: id });
    const r = run([
      failed(10, 'h1', 'hostname-valid'), fixed(40, 'h1', 'hostname-valid'),
      failed(50, 'h1', 'hostname-valid'), fixed(150, 'h1', 'hostname-valid'),
      failed(20, 'h2', 'hostname-valid'), fixed(30, 'h2', 'hostname-valid'),
      failed(10, 'h3', 'ntp-synced'),
      // A repeated failure event without a fix in between is the same blocked span.
      failed(10, 'h4', 'has-min-cpu-cores'), failed(20, 'h4', 'has-min-cpu-cores'), fixed(70, 'h4', 'has-min-cpu-cores'),
      // Failed before the window: not counted, even if fixed inside it.
      failed(-50, 'h5', 'ntp-synced'), fixed(20, 'h5', 'ntp-synced'),
    ]);
    expect(r.validations).toEqual([
      { validation_id: 'hostname-valid', failures: 3, hosts: 2, resolved: 3, unresolved: 0, blocked_p50_seconds: 30, blocked_p95_seconds: 100, blocked_max_seconds: 100 },
      { validation_id: 'has-min-cpu-cores', failures: 1, hosts: 1, resolved: 1, unresolved: 0, blocked_p50_seconds: 60, blocked_p95_seconds: 60, blocked_max_seconds: 60 },
      { validation_id: 'ntp-synced', failures: 1, hosts: 1, resolved: 0, unresolved: 1, blocked_p50_seconds: null, blocked_p95_seconds: null, blocked_max_seconds: null },
    ]);
  });
});
