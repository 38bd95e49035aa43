import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { HOST_STATES, HOST_TRANSITIONS, nextHostStatus, type HostEvent } from '../../src/domain/lifecycle/host-state-machine';
import { CLUSTER_STATES, CLUSTER_TRANSITIONS, nextClusterStatus, type ClusterEvent } from '../../src/domain/lifecycle/cluster-state-machine';
import { HOST_STAGES } from '../../src/domain/install-stages';
import { clusterStateMachineDoc, hostStateMachineDoc } from '../../src/domain/lifecycle/state-machine-docs';
import { validationsDoc } from '../../src/domain/lifecycle/validations-docs';
import { eventsDoc } from '../../src/domain/events-docs';

const bools = [true, false];
const hostSituations: HostEvent[] = [
  ...[undefined, 'Rebooting', 'Installing', 'Done'].map((currentStage) => ({ type: 'RegisterHost' as const, currentStage })),
  ...bools.flatMap((connected) => bools.flatMap((hasInventory) => bools.flatMap((hardwareOk) => bools.flatMap((machineCidrOk) => bools.map((blockingOk) => ({ type: 'Refresh' as const, summary: { connected, hasInventory, hardwareOk, machineCidrOk, blockingOk } })))))),
  ...HOST_STAGES.flatMap((stage) => bools.map((day2) => ({ type: 'ProgressReported' as const, stage, day2 }))),
  { type: 'Day2InstallRequested' },
  { type: 'Day2InstallAborted' },
  { type: 'Day2PreparationFailed', reason: 'no CA' },
  { type: 'Day2WorkflowEnded', reason: 'its install workflow ended (TERMINATED) without finishing the install' },
  { type: 'CancelInstallation' },
  { type: 'ResetInstallation' },
  { type: 'InstallStarted' },
  ...bools.map((ok) => ({ type: 'DiskSpeedReported' as const, ok })),
  { type: 'InstallDispatched' },
  { type: 'PreparationAborted' },
  { type: 'StageTimedOut', stage: 'Installing' },
  { type: 'RetryRequested' },
];
const clusterSituations: ClusterEvent[] = [
  ...bools.flatMap((inputMissing) => bools.map((requiredFailing) => ({ type: 'Refresh' as const, summary: { inputMissing, requiredFailing } }))),
  { type: 'InstallRequested' },
  { type: 'InstallNotStarted' },
  { type: 'CancelRequested' },
  { type: 'ResetRequested' },
  { type: 'HostsPrepared' },
  { type: 'PreparationFailed' },
  { type: 'SuccessRuleMet' },
  { type: 'InstallFailed' },
  { type: 'ComponentsAvailable' },
  { type: 'HostRetried' },
  ...bools.map((pending) => ({ type: 'HostNeedsUser' as const, pending })),
  { type: 'AddHostsAllowed' },
  { type: 'ClusterImported' },
];

const matching = <R extends { event: string; from: readonly string[]; guard?: unknown }>(rules: readonly R[], state: string, e: { type: string }) =>
  rules.filter((r) => r.event === e.type && r.from.includes(state) && (!r.guard || (r.guard as (x: unknown) => boolean)(e)));

describe('host state machine table', () => {
  it('never has two rules that fire in the same situation', () => {
    for (const state of Object.keys(HOST_STATES)) for (const e of hostSituations) expect([state, e, matching(HOST_TRANSITIONS, state, e).length <= 1]).toEqual([state, e, true]);
  });
  it('has no rule that can never fire, and only known states', () => {
    for (const r of HOST_TRANSITIONS) {
      expect(Object.keys(HOST_STATES)).toEqual(expect.arrayContaining([...r.from, r.to]));
      expect(r.from.some((s) => hostSituations.some((e) => matching([r], s, e).length === 1))).toBe(true);
      expect(r.description.length).toBeGreaterThan(10);
    }
  });
  it.each([
    ['disconnected', { connected: false, hasInventory: true, hardwareOk: true, machineCidrOk: true, blockingOk: true }],
    ['discovering', { connected: true, hasInventory: false, hardwareOk: false, machineCidrOk: false, blockingOk: false }],
    ['insufficient', { connected: true, hasInventory: true, hardwareOk: false, machineCidrOk: true, blockingOk: true }],
    ['pending-for-input', { connected: true, hasInventory: true, hardwareOk: true, machineCidrOk: false, blockingOk: true }],
    ['insufficient', { connected: true, hasInventory: true, hardwareOk: true, machineCidrOk: true, blockingOk: false }],
    ['known', { connected: true, hasInventory: true, hardwareOk: true, machineCidrOk: true, blockingOk: true }],
  ])('refresh leads a discovering host to %s', (to, summary) => {
    expect(nextHostStatus('discovering', { type: 'Refresh', summary })?.to).toBe(to);
  });
  it('sends a host that booted the discovery image after Rebooting to pending-user-action', () => {
    expect(nextHostStatus('installing-in-progress', { type: 'RegisterHost', currentStage: 'Rebooting' })?.to).toBe('installing-pending-user-action');
    expect(nextHostStatus('installing-in-progress', { type: 'RegisterHost', currentStage: 'Installing' })?.to).toBe('error');
    expect(nextHostStatus('installed', { type: 'RegisterHost' })).toBeUndefined();
  });
  it('walks a day-2 host: known → installing → (controller) Joined → added-to-existing-cluster → Done → installed', () => {
    expect(nextHostStatus('known', { type: 'Day2InstallRequested' })?.to).toBe('installing');
    expect(nextHostStatus('installing', { type: 'Day2PreparationFailed', reason: 'object storage unavailable' })).toMatchObject({ to: 'error', info: 'Failed - the install could not be prepared: object storage unavailable' });
    expect(nextHostStatus('installing-in-progress', { type: 'ProgressReported', stage: 'Rebooting', day2: true })?.to).toBe('installing-in-progress');
    expect(nextHostStatus('installing-in-progress', { type: 'ProgressReported', stage: 'Joined', day2: true })?.to).toBe('added-to-existing-cluster');
    // A day-1 host's Joined is just another stage.
    expect(nextHostStatus('installing-in-progress', { type: 'ProgressReported', stage: 'Joined' })?.to).toBe('installing-in-progress');
    expect(nextHostStatus('added-to-existing-cluster', { type: 'ProgressReported', stage: 'Done', day2: true })?.to).toBe('installed');
    expect(nextHostStatus('added-to-existing-cluster', { type: 'StageTimedOut', stage: 'Joined' })?.to).toBe('error');
    expect(nextHostStatus('error', { type: 'RetryRequested' })?.to).toBe('installing');
    expect(nextHostStatus('added-to-existing-cluster', { type: 'ResetInstallation' })?.to).toBe('resetting-pending-user-action');
  });
});

describe('cluster state machine table', () => {
  it('never has two rules that fire in the same situation, and every rule can fire', () => {
    for (const state of Object.keys(CLUSTER_STATES)) for (const e of clusterSituations) expect(matching(CLUSTER_TRANSITIONS, state, e).length).toBeLessThanOrEqual(1);
    for (const r of CLUSTER_TRANSITIONS) expect(r.from.some((s) => clusterSituations.some((e) => matching([r], s, e).length === 1))).toBe(true);
  });
  it('cancels a preparing cluster back to ready (nothing written yet) and an installing one to cancelled, as assisted-service does', () => {
    expect(nextClusterStatus('preparing-for-installation', { type: 'CancelRequested' })?.to).toBe('ready');
    expect(nextHostStatus('preparing-successful', { type: 'CancelInstallation' })?.to).toBe('known');
    expect(nextClusterStatus('installing', { type: 'CancelRequested' })?.to).toBe('cancelled');
    expect(nextClusterStatus('ready', { type: 'CancelRequested' })).toBeUndefined();
  });
  it('goes to pending-for-input before insufficient before ready', () => {
    expect(nextClusterStatus('ready', { type: 'Refresh', summary: { inputMissing: true, requiredFailing: true } })?.to).toBe('pending-for-input');
    expect(nextClusterStatus('ready', { type: 'Refresh', summary: { inputMissing: false, requiredFailing: true } })?.to).toBe('insufficient');
    expect(nextClusterStatus('insufficient', { type: 'Refresh', summary: { inputMissing: false, requiredFailing: false } })?.to).toBe('ready');
    expect(nextClusterStatus('installing', { type: 'Refresh', summary: { inputMissing: false, requiredFailing: false } })).toBeUndefined();
  });
  it('opens only an installed cluster for new hosts, and never refreshes it out of adding-hosts', () => {
    expect(nextClusterStatus('installed', { type: 'AddHostsAllowed' })?.to).toBe('adding-hosts');
    expect(nextClusterStatus('ready', { type: 'AddHostsAllowed' })).toBeUndefined();
    expect(nextClusterStatus('adding-hosts', { type: 'Refresh', summary: { inputMissing: true, requiredFailing: true } })).toBeUndefined();
  });
});

describe('generated state-machine docs', () => {
  it.each([
    ['host-state-machine.md', hostStateMachineDoc],
    ['cluster-state-machine.md', clusterStateMachineDoc],
    ['validations.md', validationsDoc],
    ['events.md', eventsDoc],
  ])('docs/%s is current', (file, render) => {
    const target = path.resolve(__dirname, '../../docs', file);
    if (process.env.UPDATE_DOCS === '1') writeFileSync(target, render());
    expect(readFileSync(target, 'utf8')).toBe(render());
  });
});
