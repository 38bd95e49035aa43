/**
 * The install report builder on hand-made event histories: which attempt it
 * tells, the outcome, stage timings, and the failure with its remediation.
 */
import { buildInstallReport, type ReportEvent, type ReportInput } from '../../src/domain/install-report';
import { STAGE_REMEDIATION, remediationFor } from '../../src/domain/install-failure-remediation';
import { HOST_STAGES } from '../../src/domain/install-stages';

const T0 = Date.parse('2026-11-21T10:00:00Z');
let seq = 0;
const ev = (sec: number, name: string, props: Record<string, unknown> = {}, host: string | null = null, severity = 'info', message = name): ReportEvent => ({ seq: ++seq, name, severity, message, event_time: new Date(T0 + sec * 1000), host_id: host, props });
const stage = (sec: number, host: string, s: string, info = '') => ev(sec, 'host_install_progress_updated', { stage: s, progress_info: info ? ` (${info})` : '' }, host);

const base = (over: Partial<ReportInput['cluster']>, hosts: ReportInput['hosts'], events: ReportEvent[], nowSec = 1000): ReportInput => ({
  cluster: { id: 'c', name: 'demo', status: 'installing', status_info: '', openshift_version: '1.31', install_attempt: 1, ...over },
  hosts,
  events,
  now: new Date(T0 + nowSec * 1000),
});
const host = (id: string, over: Partial<ReportInput['hosts'][number]> = {}) => ({ id, hostname: `h-${id}`, role: 'master', bootstrap: false, status: 'installing-in-progress', status_info: '', ...over });

describe('buildInstallReport', () => {
  it('tells only the latest attempt', () => {
    const r = buildInstallReport(
      base({ install_attempt: 2, status: 'installing' }, [host('a')], [
        ev(0, 'cluster_prepare_installation_started'),
        stage(1, 'a', 'Starting installation'),
        ev(5, 'cluster_installation_canceled'),
        ev(6, 'cluster_installation_reset'),
        ev(100, 'cluster_prepare_installation_started'),
        stage(110, 'a', 'Starting installation'),
        stage(130, 'a', 'Installing', 'master'),
      ]),
    );
    expect(r.outcome).toBe('in-progress');
    expect(r.started_at).toBe(new Date(T0 + 100_000).toISOString());
    expect(r.completed_at).toBeNull();
    expect(r.timeline).toHaveLength(3);
    expect(r.hosts[0]!.stages).toEqual([
      expect.objectContaining({ stage: 'Starting installation', duration_seconds: 20, result: 'completed' }),
      // The running stage counts up to now.
      expect.objectContaining({ stage: 'Installing', ended_at: null, duration_seconds: 870, info: 'master', result: 'in-progress' }),
    ]);
  });

  it.each([
    ['installed', 'installed', 'cluster_installation_completed'],
    ['error', 'failed', 'cluster_installation_failed'],
    ['cancelled', 'cancelled', 'cluster_installation_canceled'],
    ['ready', 'failed', 'cluster_preparation_failed'],
    ['insufficient', 'cancelled', 'cluster_installation_canceled'],
  ])('cluster %s → outcome %s (attempt closed by %s)', (status, outcome, closing) => {
    const r = buildInstallReport(base({ status }, [], [ev(0, 'cluster_prepare_installation_started'), ev(42, closing, { reason: 'x' })]));
    expect(r.outcome).toBe(outcome);
    expect(r.completed_at).toBe(new Date(T0 + 42_000).toISOString());
    expect(r.duration_seconds).toBe(42);
  });

  it('is not-started before the first install', () => {
    expect(buildInstallReport(base({ install_attempt: 0, status: 'ready' }, [host('a', { status: 'known' })], [ev(0, 'host_registration_succeeded', {}, 'a')])).outcome).toBe('not-started');
  });

  it('a reported failure names the stage before Failed and the host status_info as the cause', () => {
    const r = buildInstallReport(
      base({ status: 'error' }, [host('a', { status: 'error', status_info: 'Failed - coreos-installer exited 1: disk /dev/sda is read-only', progress: { current_stage: 'Failed', failed_at_stage: 'Writing image to disk' } }), host('b')], [
        ev(0, 'cluster_prepare_installation_started'),
        stage(1, 'a', 'Starting installation'),
        stage(2, 'a', 'Writing image to disk'),
        stage(9, 'a', 'Failed', 'disk is read-only'),
        ev(10, 'cluster_installation_failed', { reason: 'host a failed' }),
      ]),
    );
    expect(r.failure).toEqual({ host_id: 'a', hostname: 'h-a', role: 'master', stage: 'Writing image to disk', kind: 'error', cause: 'coreos-installer exited 1: disk /dev/sda is read-only', remediation: expect.stringMatching(/^The install disk cannot be written/) });
    expect(r.hosts[0]!.stages.at(-1)).toMatchObject({ stage: 'Writing image to disk', result: 'failed', duration_seconds: 7 });
    expect(r.hosts[1]!.failure).toBeNull();
  });

  it('a hard stage timeout is a timeout failure; a soft one is a warning', () => {
    const r = buildInstallReport(
      base({ status: 'error' }, [host('a', { status: 'error', status_info: 'Host failed to install because its installation stage Rebooting took longer than expected' })], [
        ev(0, 'cluster_prepare_installation_started'),
        stage(1, 'a', 'Rebooting'),
        ev(1801, 'host_stage_timed_out', { stage: 'Rebooting', kind: 'soft' }, 'a', 'warning', 'soft timeout'),
        ev(5401, 'host_stage_timed_out', { stage: 'Rebooting', kind: 'hard' }, 'a', 'error', 'hard timeout'),
        ev(5401, 'host_status_updated', { new_status: 'error' }, 'a'),
        ev(5402, 'cluster_installation_failed', { reason: 'host a failed' }),
      ]),
    );
    expect(r.failure).toMatchObject({ host_id: 'a', stage: 'Rebooting', kind: 'timeout', remediation: remediationFor('Rebooting', 'timeout') });
    expect(r.hosts[0]!.warnings).toEqual([{ at: new Date(T0 + 1_801_000).toISOString(), message: 'soft timeout' }]);
    expect(r.warnings).toEqual([{ at: new Date(T0 + 1_801_000).toISOString(), host_id: 'a', message: 'soft timeout' }]);
    expect(r.hosts[0]!.stages[0]).toMatchObject({ stage: 'Rebooting', result: 'failed', duration_seconds: 5400 });
  });

  it('the first host to fail is the cluster failure', () => {
    const r = buildInstallReport(
      base({ status: 'error' }, [host('a', { status: 'error', status_info: 'Failed - late' }), host('b', { status: 'error', status_info: 'Failed - early', role: 'worker' })], [
        ev(0, 'cluster_prepare_installation_started'),
        stage(1, 'a', 'Installing'),
        stage(1, 'b', 'Installing'),
        stage(3, 'b', 'Failed'),
        stage(8, 'a', 'Failed'),
        ev(9, 'cluster_installation_failed', { reason: 'x' }),
      ]),
    );
    expect(r.failure).toMatchObject({ host_id: 'b', role: 'worker', cause: 'early', stage: 'Installing' });
  });

  it('a cluster-level failure (finalizing) has no host', () => {
    const r = buildInstallReport(base({ status: 'error', status_info: 'Cluster installation failed: finalizing did not complete within 300 minutes' }, [], [ev(0, 'cluster_prepare_installation_started'), ev(9, 'cluster_installation_failed', { reason: 'finalizing did not complete within 300 minutes' })]));
    expect(r.failure).toEqual({ host_id: null, hostname: null, role: null, stage: 'finalizing', kind: 'timeout', cause: 'finalizing did not complete within 300 minutes', remediation: remediationFor('finalizing', 'timeout') });
  });

  it('a retried host counts its retries and keeps the failed try', () => {
    const r = buildInstallReport(
      base({ status: 'installed' }, [host('a', { status: 'installed' })], [
        ev(0, 'cluster_prepare_installation_started'),
        stage(1, 'a', 'Installing'),
        stage(2, 'a', 'Failed'),
        ev(3, 'host_install_retried', { retry: 1 }, 'a'),
        stage(4, 'a', 'Installing'),
        stage(6, 'a', 'Done'),
        ev(7, 'cluster_installation_completed'),
      ]),
    );
    expect(r.hosts[0]!.retries).toBe(1);
    expect(r.hosts[0]!.stages.map((s) => [s.retry, s.stage, s.result])).toEqual([
      [0, 'Installing', 'failed'],
      [1, 'Installing', 'completed'],
      [1, 'Done', 'completed'],
    ]);
    expect(r.failure).toBeNull();
  });
});

describe('remediation table', () => {
  it.each([
    ['The host unexpectedly restarted during the installation', 'Configuring', /rebooted in the middle of the install/],
    ['Failed - pulling quay.io/x: unauthorized: access denied', 'Installing', /refused the pull secret/],
    ['coreos-installer exited 1: No space left on device', 'Writing image to disk', /disk is full/],
    ['coreos-installer exited 1: blk_update_request: I/O error, dev sda', 'Writing image to disk', /I\/O errors/],
    ['simulated failure at Writing image to disk', 'Writing image to disk', /coreos-installer failed writing/],
  ])('cause "%s" at %s → %s', (cause, stage, advice) => {
    expect(remediationFor(stage, 'error', cause)).toMatch(advice);
  });

  it('has advice for every stage a host can fail in, for errors and timeouts', () => {
    for (const s of HOST_STAGES.filter((x) => x !== 'Done' && x !== 'Failed')) {
      expect([s, Boolean(STAGE_REMEDIATION[s]?.error), Boolean(STAGE_REMEDIATION[s]?.timeout)]).toEqual([s, true, true]);
    }
    expect(remediationFor('Writing image to disk', 'error')).not.toBe(remediationFor('Writing image to disk', 'timeout'));
    expect(remediationFor('no such stage', 'error')).toMatch(/retry the host/);
  });
});
