/**
 * The install workflow's decisions under Temporal's time-skipping test server:
 * every timeout at its production value (the server skips the wait), cancel,
 * reset, retryHost (two at once included) and continue-as-new. Activities are
 * recording stubs of their interface (test/support/workflow-env.ts). Each path
 * leaves its history in test/fixtures/histories for the replay test.
 */
import { WorkflowFailedError, WorkflowUpdateFailedError, WorkflowUpdateStage } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { DEFAULT_TIMEOUTS, clusterComponentsReported, installCancelled, installReset, retryHost } from '../../workflows/install-cluster.messages';
import { Gate, HOSTS, MASTERS, WORKERS, installStubs, saveHistory, startTimeSkipping, toInstalling, withInstall } from '../support/workflow-env';

let ctx: { env: TestWorkflowEnvironment; bundle: WorkflowBundleWithSourceMap };
beforeAll(async () => {
  ctx = await startTimeSkipping();
}, 120_000);
afterAll(async () => {
  await ctx?.env.teardown();
});

const MIN = 60_000;
const now = () => ctx.env.currentTimeMs();

describe('install workflow (time-skipping)', () => {
  it('installs: prepare, checks, dispatch, every host installed, components available', async () => {
    await withInstall(ctx, 'installed', {}, async (run) => {
      await toInstalling(run);
      await run.report(HOSTS, 'installed', 'Done');
      await run.until((p) => p.phase === 'finalizing', 'finalizing');
      await run.handle.signal(clusterComponentsReported, { available: true });
      const result = await run.handle.result();
      expect(result.phase).toBe('installed');
      expect(result.bootstrapHostId).toBe('m3');
      expect(run.stubs.calls.map((c) => c.name)).toEqual(['prepareInstallation', 'selectBootstrapHost', 'dispatchInstallSteps', 'startFinalizing', 'completeInstallation']);
      expect(run.stubs.of('dispatchInstallSteps')[0]).toMatchObject({ bootstrapHostId: 'm3', controlPlaneCount: 3 });
      await saveHistory(run.handle, 'install-cluster-installed.json');
    });
  });

  it('fails preparation when the hosts have not all passed their checks after 10 minutes', async () => {
    await withInstall(ctx, 'preparing-timeout', {}, async (run) => {
      await run.until((p) => p.hosts.length === HOSTS.length, 'prepare');
      await run.report(MASTERS, 'preparing-successful');
      const t0 = await now();
      const result = await run.handle.result(); // the server skips the 10 minutes
      // The timer started a moment before t0 (the query that saw the phase): allow that moment.
      expect((await now()) - t0).toBeGreaterThanOrEqual(DEFAULT_TIMEOUTS.preparingMs - 10_000);
      expect(result.phase).toBe('preparation-failed');
      expect(run.stubs.of('abortPreparation')).toEqual([{ clusterId: 'cluster-preparing-timeout', reason: 'preparation timed out after 600 s' }]);
      expect(run.stubs.of('dispatchInstallSteps')).toEqual([]);
      await saveHistory(run.handle, 'install-cluster-preparing-timeout.json');
    });
  });

  it('fails preparation at once when a host fails its checks', async () => {
    await withInstall(ctx, 'preparing-failed', {}, async (run) => {
      await run.until((p) => p.hosts.length === HOSTS.length, 'prepare');
      await run.report(['m1', 'm2', 'm3', 'w1'], 'preparing-successful');
      await run.report(['w2'], 'preparing-failed');
      const result = await run.handle.result();
      expect(result.phase).toBe('preparation-failed');
      expect(run.stubs.of('abortPreparation')).toEqual([{ clusterId: 'cluster-preparing-failed', reason: 'hosts failed their pre-install checks: w2' }]);
      await saveHistory(run.handle, 'install-cluster-preparing-failed.json');
    });
  });

  it('warns once past the soft stage timeout, fails the host past the hard one, and a retry installs it', async () => {
    await withInstall(ctx, 'stage-timeouts', {}, async (run) => {
      await toInstalling(run);
      await run.report(['m2', 'm3', 'w1', 'w2'], 'installed', 'Done');
      await run.report(['m1'], 'installing-in-progress', 'Writing image to disk');
      await ctx.env.sleep(95 * MIN);
      const failed = await run.until((p) => p.phase === 'error', 'the hard timeout');
      expect(failed.hosts.find((h) => h.hostId === 'm1')?.status).toBe('error');
      // One warning per stage, sent on the first minute tick past 30 minutes; the failure past 90.
      const timeouts = run.stubs.of('reportStageTimeout');
      expect(timeouts.map((t) => [t.hostId, t.stage, t.hard])).toEqual([
        ['m1', 'Writing image to disk', false],
        ['m1', 'Writing image to disk', true],
      ]);
      // Ages in whole seconds, so "past 30 minutes" reads as at least 1800 s.
      const [soft, hard] = timeouts.map((t) => (t.seconds as number) * 1000);
      expect(soft).toBeGreaterThanOrEqual(DEFAULT_TIMEOUTS.stageSoftMs);
      expect(soft).toBeLessThanOrEqual(DEFAULT_TIMEOUTS.stageSoftMs + MIN + 1000);
      expect(hard).toBeGreaterThanOrEqual(DEFAULT_TIMEOUTS.stageHardMs);
      expect(hard).toBeLessThanOrEqual(DEFAULT_TIMEOUTS.stageHardMs + MIN + 1000);
      expect(run.stubs.of('markClusterFailed')).toEqual([{ clusterId: 'cluster-stage-timeouts', reason: 'the cluster cannot reach its success rule: host(s) m1 failed' }]);

      expect(await run.handle.executeUpdate(retryHost, { args: [{ hostId: 'm1' }] })).toEqual({ hostId: 'm1', retry: 1 });
      expect(run.stubs.of('retryHostInstall')).toEqual([{ clusterId: 'cluster-stage-timeouts', attempt: 1, hostId: 'm1', retry: 1, bootstrapHostId: 'm3', controlPlaneCount: 3 }]);
      const retried = await run.progress();
      expect(retried.phase).toBe('installing');
      expect(retried.hosts.find((h) => h.hostId === 'm1')).toMatchObject({ status: 'installing', retries: 1 });
      await run.report(['m1'], 'installed', 'Done');
      await run.until((p) => p.phase === 'finalizing', 'finalizing');
      await run.handle.signal(clusterComponentsReported, { available: true });
      expect((await run.handle.result()).phase).toBe('installed');
      await saveHistory(run.handle, 'install-cluster-stage-timeouts-retry.json');
    });
  });

  it('fails the install when finalizing has not completed after 5 hours', async () => {
    await withInstall(ctx, 'finalizing-timeout', {}, async (run) => {
      await toInstalling(run);
      await run.report(HOSTS, 'installed', 'Done');
      await run.until((p) => p.phase === 'finalizing', 'finalizing');
      const t0 = await now();
      const err = await run.handle.result().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(WorkflowFailedError);
      expect((err as WorkflowFailedError).cause).toMatchObject({ type: 'finalizing_timeout', message: 'finalizing did not complete within 300 minutes' });
      expect((await now()) - t0).toBeGreaterThanOrEqual(DEFAULT_TIMEOUTS.finalizingMs - 10_000);
      expect(run.stubs.of('markClusterFailed')).toEqual([{ clusterId: 'cluster-finalizing-timeout', reason: 'finalizing did not complete within 300 minutes' }]);
      expect(run.stubs.of('completeInstallation')).toEqual([]);
      await saveHistory(run.handle, 'install-cluster-finalizing-timeout.json');
    });
  });

  it("fails the install when the cluster's controller reports the installation failed", async () => {
    await withInstall(ctx, 'completion-failed', {}, async (run) => {
      await toInstalling(run);
      await run.report(HOSTS, 'installed', 'Done');
      await run.until((p) => p.phase === 'finalizing', 'finalizing');
      await run.handle.signal(clusterComponentsReported, { available: false, detail: 'operator console degraded' });
      const err = await run.handle.result().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((err as WorkflowFailedError).cause).toMatchObject({ type: 'completion_failed' });
      expect(run.stubs.of('markClusterFailed')).toEqual([{ clusterId: 'cluster-completion-failed', reason: "the cluster's controller reported the installation failed: operator console degraded" }]);
      await saveHistory(run.handle, 'install-cluster-completion-failed.json');
    });
  });

  it('stops on cancel while preparing, dispatching nothing', async () => {
    await withInstall(ctx, 'cancel-preparing', {}, async (run) => {
      await run.until((p) => p.hosts.length === HOSTS.length, 'prepare');
      await run.handle.signal(installCancelled);
      expect((await run.handle.result()).phase).toBe('cancelled');
      expect(run.stubs.calls.map((c) => c.name)).toEqual(['prepareInstallation']);
      await saveHistory(run.handle, 'install-cluster-cancel-preparing.json');
    });
  });

  it('stops on cancel while installing, and a retry after it is refused', async () => {
    await withInstall(ctx, 'cancel-installing', {}, async (run) => {
      await toInstalling(run);
      await run.report(['m1'], 'error');
      await run.until((p) => p.phase === 'error', 'the cluster to fail');
      await run.handle.signal(installCancelled);
      expect((await run.handle.result()).phase).toBe('cancelled');
      expect(run.stubs.of('startFinalizing')).toEqual([]);
      await expect(run.handle.executeUpdate(retryHost, { args: [{ hostId: 'm1' }] })).rejects.toThrow();
      expect(run.stubs.of('retryHostInstall')).toEqual([]);
      await saveHistory(run.handle, 'install-cluster-cancel-installing.json');
    });
  });

  it('stops on reset while finalizing', async () => {
    await withInstall(ctx, 'reset-finalizing', {}, async (run) => {
      await toInstalling(run);
      await run.report(HOSTS, 'installed', 'Done');
      await run.until((p) => p.phase === 'finalizing', 'finalizing');
      await run.handle.signal(installReset);
      expect((await run.handle.result()).phase).toBe('reset');
      expect(run.stubs.of('completeInstallation')).toEqual([]);
      expect(run.stubs.of('markClusterFailed')).toEqual([]);
      await saveHistory(run.handle, 'install-cluster-reset-finalizing.json');
    });
  });

  it('refuses a second retry of a host whose first retry is still running its activity', async () => {
    const gate = new Gate();
    await withInstall(ctx, 'retry-same-host', { stubs: installStubs({ retryGate: gate }) }, async (run) => {
      await toInstalling(run);
      await run.report(['m1'], 'error');
      await run.until((p) => p.phase === 'error', 'the cluster to fail');
      const first = await run.handle.startUpdate(retryHost, { args: [{ hostId: 'm1' }], waitForStage: WorkflowUpdateStage.ACCEPTED });
      await gate.waitEntered(1);
      const second = await run.handle.executeUpdate(retryHost, { args: [{ hostId: 'm1' }] }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(second).toBeInstanceOf(WorkflowUpdateFailedError);
      expect((second as WorkflowUpdateFailedError).cause?.message).toBe('host m1 is retrying; only a host in error can be retried');
      gate.open();
      expect(await first.result()).toEqual({ hostId: 'm1', retry: 1 });
      expect(run.stubs.of('retryHostInstall')).toHaveLength(1);
      await run.handle.signal(installCancelled);
      expect((await run.handle.result()).phase).toBe('cancelled');
      await saveHistory(run.handle, 'install-cluster-retry-same-host.json');
    });
  });

  it('runs two retries of different hosts one after the other, never side by side', async () => {
    const gate = new Gate();
    await withInstall(ctx, 'retry-two-hosts', { stubs: installStubs({ retryGate: gate }) }, async (run) => {
      await toInstalling(run);
      await run.report(MASTERS, 'installed', 'Done');
      await run.report(WORKERS, 'error');
      await run.until((p) => p.phase === 'error', 'the cluster to fail');
      const [a, b] = await Promise.all(WORKERS.map((hostId) => run.handle.startUpdate(retryHost, { args: [{ hostId }], waitForStage: WorkflowUpdateStage.ACCEPTED })));
      await gate.waitEntered(1);
      // Both retries are accepted; the second waits for the lock, so its activity has not started.
      await new Promise((r) => setTimeout(r, 1500));
      expect(gate.entered).toBe(1);
      gate.open();
      expect([await a!.result(), await b!.result()]).toEqual([
        { hostId: 'w1', retry: 1 },
        { hostId: 'w2', retry: 1 },
      ]);
      expect(run.stubs.of('retryHostInstall').map((i) => i.hostId).sort()).toEqual(['w1', 'w2']);
      expect(run.stubs.maxConcurrent).toBe(1);
      // The loop saw the second host still retrying (not alive) but took its verdict only after that retry:
      // the cluster was failed once, when both workers had failed, not again mid-retry.
      expect(run.stubs.of('markClusterFailed')).toHaveLength(1);
      await run.report(WORKERS, 'installed', 'Done');
      await run.until((p) => p.phase === 'finalizing', 'finalizing');
      await run.handle.signal(clusterComponentsReported, { available: true });
      expect((await run.handle.result()).phase).toBe('installed');
      await saveHistory(run.handle, 'install-cluster-retry-two-hosts.json');
    });
  });

  it('refuses a retry still waiting for the lock when the install is reset, and finishes the running one first', async () => {
    const gate = new Gate();
    await withInstall(ctx, 'reset-during-retry', { stubs: installStubs({ retryGate: gate }) }, async (run) => {
      await toInstalling(run);
      await run.report(MASTERS, 'installed', 'Done');
      await run.report(WORKERS, 'error');
      await run.until((p) => p.phase === 'error', 'the cluster to fail');
      const first = await run.handle.startUpdate(retryHost, { args: [{ hostId: 'w1' }], waitForStage: WorkflowUpdateStage.ACCEPTED });
      await gate.waitEntered(1);
      const second = await run.handle.startUpdate(retryHost, { args: [{ hostId: 'w2' }], waitForStage: WorkflowUpdateStage.ACCEPTED });
      await run.handle.signal(installReset);
      await run.until((p) => p.phase === 'reset', 'the reset');
      gate.open();
      expect(await first.result()).toEqual({ hostId: 'w1', retry: 1 });
      const refused = await second.result().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
      expect((refused as WorkflowUpdateFailedError).cause).toMatchObject({ type: 'install_not_running', message: 'the install is reset; host w2 was not retried' });
      // The result waited for the running retry (allHandlersFinished) and only it reached its activity.
      const result = await run.handle.result();
      expect(result.phase).toBe('reset');
      expect(result.hosts.find((h) => h.hostId === 'w2')?.status).toBe('error');
      expect(run.stubs.of('retryHostInstall').map((i) => i.hostId)).toEqual(['w1']);
      await saveHistory(run.handle, 'install-cluster-reset-during-retry.json');
    });
  });

  it('continues as new carrying only the facts, and the next run finishes the install', async () => {
    await withInstall(ctx, 'continue-as-new', { input: { continueAsNewAfterEvents: 60 } }, async (run) => {
      await toInstalling(run);
      const firstRunId = (await run.handle.describe()).runId;
      const stages = ['Starting installation', 'Installing', 'Writing image to disk', 'Rebooting', 'Configuring'];
      for (const stage of stages) await run.report(HOSTS, 'installing-in-progress', stage);
      await ctx.env.sleep(3 * MIN);
      const first = ctx.env.client.workflow.getHandle(run.handle.workflowId, firstRunId);
      const last = (await first.fetchHistory()).events?.at(-1);
      expect(last?.workflowExecutionContinuedAsNewEventAttributes).toBeTruthy();
      const carried = await run.until((p) => p.hosts.length === HOSTS.length, 'the next run to answer');
      expect((await run.handle.describe()).runId).not.toBe(firstRunId);
      expect(carried).toMatchObject({ phase: 'installing', bootstrapHostId: 'm3' });
      expect(carried.hosts.map((h) => [h.hostId, h.status, h.stage])).toEqual(HOSTS.map((id) => [id, 'installing-in-progress', 'Configuring']));
      await run.report(HOSTS, 'installed', 'Done');
      await run.until((p) => p.phase === 'finalizing', 'finalizing');
      await run.handle.signal(clusterComponentsReported, { available: true });
      expect((await run.handle.result()).phase).toBe('installed');
      expect(run.stubs.of('prepareInstallation')).toHaveLength(1);
      expect(run.stubs.of('dispatchInstallSteps')).toHaveLength(1);
      await saveHistory(first, 'install-cluster-continue-as-new.json');
    });
  });
});
