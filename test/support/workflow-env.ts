/**
 * The install workflow under Temporal's time-skipping test server, with the
 * activities replaced by recording stubs of their interface: the workflow is
 * the unit under test, and what it decides shows as the activity calls it
 * makes. The server is the Java one from Maven Central
 * (scripts/install-temporal-test-server.sh); the SDK's default would download
 * a native build from GitHub.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, makeTelemetryFilterString, Runtime, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import type { InstallActivities, PreparedHost } from '../../activities/install';
import type { installClusterWorkflow } from '../../workflows/install-cluster';
import { getInstallProgress, hostInstallReported, type InstallInput, type InstallProgress } from '../../workflows/install-cluster.messages';
import { SEARCH_ATTRIBUTES } from '../../src/temporal/names';

const ROOT = path.resolve(__dirname, '../..');

/** The server scripts/install-temporal-test-server.sh put in the cache, at the version scripts/versions.sh pins. */
export function testServerPath(): string {
  const version = /^TEMPORAL_TEST_SERVER_VERSION=(\S+)/m.exec(readFileSync(path.join(ROOT, 'scripts/versions.sh'), 'utf8'))?.[1];
  const bin = path.join(os.homedir(), '.cache', 'landfall', `temporal-test-server-${version}`, 'temporal-test-server');
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run bash scripts/install-temporal-test-server.sh (setup.sh --test does)`);
  return bin;
}

/**
 * The SDK gives the test server a fixed 5 s to accept connections, with no option to wait longer. On a machine
 * busy with the rest of the suite it once took longer (a CI run on a fresh clone: "ephemeral server … did not
 * start within 5s", every test of the file failed). A start that timed out is tried again; any other error is not.
 */
async function createTimeSkippingServer(): Promise<TestWorkflowEnvironment> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: testServerPath() } } });
    } catch (err) {
      if (attempt >= 3 || !/did not start within/.test(String((err as Error)?.message))) throw err;
    }
  }
}

export async function startTimeSkipping(): Promise<{ env: TestWorkflowEnvironment; bundle: WorkflowBundleWithSourceMap }> {
  try {
    // Core's warnings about this server's missing capabilities (heartbeat details on failure) are expected.
    Runtime.install({ logger: new DefaultLogger('ERROR'), telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'ERROR' }), forward: {} } } });
  } catch {
    // Another test file in this jest process installed it first.
  }
  const [env, bundle] = await Promise.all([
    createTimeSkippingServer(),
    bundleWorkflowCode({ workflowsPath: require.resolve('../../workflows'), logger: new DefaultLogger('WARN') }),
  ]);
  // The workflow keeps InstallStatus up to date; the server accepts only attributes it knows.
  await env.connection.operatorService.addSearchAttributes({ namespace: env.namespace ?? 'default', searchAttributes: Object.fromEntries(Object.values(SEARCH_ATTRIBUTES).map((k) => [k.name, 2 /* KEYWORD */])) });
  return { env, bundle };
}

export interface Call {
  name: keyof InstallActivities;
  input: Record<string, unknown>;
}

/** A gate an activity stub waits at, so a test can act while the workflow awaits that activity. */
export class Gate {
  private release!: () => void;
  readonly opened: Promise<void> = new Promise((r) => (this.release = r));
  entered = 0;
  private enteredWaiters: Array<() => void> = [];
  open(): void {
    this.release();
  }
  async pass(): Promise<void> {
    this.entered++;
    for (const w of this.enteredWaiters.splice(0)) w();
    await this.opened;
  }
  async waitEntered(n = 1): Promise<void> {
    while (this.entered < n) await new Promise<void>((r) => this.enteredWaiters.push(r));
  }
}

export const MASTERS = ['m1', 'm2', 'm3'];
export const WORKERS = ['w1', 'w2'];
export const HOSTS = [...MASTERS, ...WORKERS];

export interface Stubs {
  calls: Call[];
  activities: InstallActivities;
  /** Calls of one activity, in order. */
  of(name: keyof InstallActivities): Array<Record<string, unknown>>;
  /** Most activities running at once (the lock's witness). */
  maxConcurrent: number;
  retryGate?: Gate;
}

/** Stubs of every install activity: each records its input and answers as the real one would for a 3+2 cluster. */
export function installStubs(opts: { retryGate?: Gate } = {}): Stubs {
  const calls: Call[] = [];
  let running = 0;
  const stubs: Stubs = {
    calls,
    of: (name) => calls.filter((c) => c.name === name).map((c) => c.input),
    maxConcurrent: 0,
    retryGate: opts.retryGate,
    activities: undefined as unknown as InstallActivities,
  };
  const rec = async <T>(name: keyof InstallActivities, input: object, body: () => Promise<T> | T): Promise<T> => {
    calls.push({ name, input: input as Record<string, unknown> });
    running++;
    stubs.maxConcurrent = Math.max(stubs.maxConcurrent, running);
    try {
      return await body();
    } finally {
      running--;
    }
  };
  const prepared: PreparedHost[] = HOSTS.map((id) => ({ hostId: id, infraEnvId: 'ie', role: id.startsWith('m') ? 'master' : 'worker', status: 'preparing-for-installation' }));
  stubs.activities = {
    prepareInstallation: (i) => rec('prepareInstallation', i, () => ({ hosts: prepared, controlPlaneCount: 3, artifacts: [] })),
    abortPreparation: (i) => rec('abortPreparation', i, () => undefined),
    selectBootstrapHost: (i) => rec('selectBootstrapHost', i, () => [...i.candidates].sort().at(-1)!),
    dispatchInstallSteps: (i) => rec('dispatchInstallSteps', i, () => ({ dispatched: i.hosts.length })),
    reportStageTimeout: (i) => rec('reportStageTimeout', i, () => undefined),
    markClusterFailed: (i) => rec('markClusterFailed', i, () => undefined),
    markHostsPendingUser: (i) => rec('markHostsPendingUser', i, () => undefined),
    startFinalizing: (i) => rec('startFinalizing', i, () => undefined),
    completeInstallation: (i) => rec('completeInstallation', i, () => undefined),
    retryHostInstall: (i) => rec('retryHostInstall', i, () => opts.retryGate?.pass()),
  };
  return stubs;
}

let seq = 0;

export interface Run {
  handle: WorkflowHandle<typeof installClusterWorkflow>;
  stubs: Stubs;
  progress(): Promise<InstallProgress>;
  /** Polls the query until `ok` holds (the workflow processes signals and timers asynchronously). */
  until(ok: (p: InstallProgress) => boolean, what: string, timeoutMs?: number): Promise<InstallProgress>;
  report(hostIds: string[], status: string, stage?: string): Promise<void>;
}

/** Starts one install on its own task queue and runs `body` while a worker with the stubs serves it. */
export async function withInstall<T>(
  ctx: { env: TestWorkflowEnvironment; bundle: WorkflowBundleWithSourceMap },
  name: string,
  opts: { input?: Partial<InstallInput>; stubs?: Stubs },
  body: (run: Run) => Promise<T>,
): Promise<T> {
  const taskQueue = `wf-${name}-${++seq}`;
  const stubs = opts.stubs ?? installStubs();
  const worker = await Worker.create({ connection: ctx.env.nativeConnection, taskQueue, workflowBundle: ctx.bundle, activities: stubs.activities });
  return worker.runUntil(async () => {
    const handle = await ctx.env.client.workflow.start<typeof installClusterWorkflow>('installClusterWorkflow', {
      workflowId: `install-cluster-${name}-attempt-1`,
      taskQueue,
      args: [{ clusterId: `cluster-${name}`, attempt: 1, clusterName: name, release: '4.19', ...opts.input }],
    });
    const progress = () => handle.query(getInstallProgress);
    const run: Run = {
      handle,
      stubs,
      progress,
      async until(ok, what, timeoutMs = 30_000) {
        const deadline = Date.now() + timeoutMs;
        let last: InstallProgress | undefined;
        while (Date.now() < deadline) {
          last = await progress();
          if (ok(last)) return last;
          await new Promise((r) => setTimeout(r, 50));
        }
        throw new Error(`timed out waiting for ${what}; last progress: ${JSON.stringify(last)}`);
      },
      async report(hostIds, status, stage) {
        for (const hostId of hostIds) await handle.signal(hostInstallReported, { hostId, status, ...(stage ? { stage } : {}) });
      },
    };
    try {
      return await body(run);
    } finally {
      // An activity held at a gate would hold the worker's shutdown too.
      stubs.retryGate?.open();
      // A run left going (a failed test) keeps workflow tasks pending with no worker, and the
      // server skips no time while any task is pending: every later test would wait in real time.
      await handle.terminate('test over').catch(() => undefined);
    }
  });
}

/** Brings an install to `installing` (every host passed its checks, install steps dispatched). */
export async function toInstalling(run: Run): Promise<void> {
  await run.until((p) => p.hosts.length === HOSTS.length, 'prepare');
  await run.report(HOSTS, 'preparing-successful');
  await run.until((p) => p.phase === 'installing', 'installing');
}

/**
 * Saved histories feed the replay test (test/unit/workflow-replay.test.ts). SAVE_HISTORY=1 refreshes
 * them; otherwise the saved one must exist, so a path without a history fails here.
 */
export async function saveHistory(handle: WorkflowHandle, file: string): Promise<void> {
  const target = path.join(ROOT, 'test/fixtures/histories', file);
  if (process.env.SAVE_HISTORY === '1') writeFileSync(target, historyToJSON(await handle.fetchHistory()) + '\n');
  expect(existsSync(target)).toBe(true);
}
