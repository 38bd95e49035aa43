import { DefaultLogger, NativeConnection, Runtime, Worker, type LogLevel } from '@temporalio/worker';
import type { Config } from '../config';
import { createLogger, type Logger } from '../logger';
import { createDb } from '../db/database';
import { createSelfCheckRepo } from '../db/self-checks-repo';
import { createObjectStore } from '../storage';
import { TASK_QUEUE } from '../temporal/names';
import { createActivities } from '../../activities';
import { sleep } from '../dev/process-utils';
import { Client, Connection, ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import { createRepos } from '../services/context';
import { buildServiceContext } from '../services/build-context';
import { COALESCE_MS, startRefresher } from '../services/refresh-queue';
import { OCCASIONAL_REFRESH_CACHE_HOSTS, setRefreshCacheHosts } from '../services/refresh-service';
import { SCHEDULE_IDS, workflowIds } from '../temporal/names';

/**
 * The disconnect monitor as a Temporal Schedule: one schedule however many
 * workers start, visible (and pausable) in the Temporal UI. A second worker
 * finds it in place and only brings its interval up to date.
 */
export async function ensureHostMonitorSchedule(client: Client, intervalMs: number, logger: Logger): Promise<void> {
  const spec = { intervals: [{ every: intervalMs }] };
  try {
    await client.schedule.create({
      scheduleId: SCHEDULE_IDS.hostMonitor,
      spec,
      action: { type: 'startWorkflow', workflowType: 'hostMonitorWorkflow', taskQueue: TASK_QUEUE.install, workflowId: workflowIds.hostMonitor, workflowExecutionTimeout: '5 minutes' },
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' },
      memo: { purpose: 'Marks hosts disconnected when their agent stops polling' },
    });
    logger.info({ scheduleId: SCHEDULE_IDS.hostMonitor, intervalMs }, 'host monitor schedule created');
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning) && (err as Error).name !== 'ScheduleAlreadyRunning') throw err;
    await client.schedule.getHandle(SCHEDULE_IDS.hostMonitor).update((prev) => ({ ...prev, spec }));
  }
}

const PINO_LEVEL: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

let runtimeInstalled = false;

/** Routes the SDK's and the Rust core's logs into our pino logger (once per process). */
function installRuntime(logger: Logger): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  Runtime.install({
    logger: new DefaultLogger('INFO', (entry) => {
      logger[PINO_LEVEL[entry.level]]({ ...entry.meta }, entry.message);
    }),
  });
}

/** The worker waits for Temporal rather than crash-looping while it starts. */
async function connectWithRetry(address: string, logger: Logger, signal: AbortSignal): Promise<NativeConnection> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await NativeConnection.connect({ address });
    } catch (err) {
      if (signal.aborted) throw err;
      logger.warn({ attempt, address, err: (err as Error).message }, 'temporal not reachable yet, retrying');
      await sleep(Math.min(5000, 250 * attempt));
    }
  }
}

export interface RunningWorker {
  /** Resolves when the worker has stopped (after shutdown() or a fatal error). */
  done: Promise<void>;
  shutdown(): Promise<void>;
}

export async function startWorker(cfg: Config, logger: Logger = createLogger(cfg, 'worker')): Promise<RunningWorker> {
  if (!cfg.database.url) throw new Error('DATABASE_URL is required for the worker (landfall dev starts an embedded PostgreSQL)');
  installRuntime(logger);
  const abort = new AbortController();
  const db = createDb(cfg.database.url, cfg.database.poolMax, cfg.database.planCacheMode, logger);
  const store = createObjectStore(cfg.storage);
  const connection = await connectWithRetry(cfg.temporal.address, logger, abort.signal);
  const client = new Client({ connection: await Connection.connect({ address: cfg.temporal.address }), namespace: cfg.temporal.namespace });
  const services = buildServiceContext(cfg, { db, repos: createRepos(db), store, temporal: client });
  const worker = await Worker.create({
    connection,
    namespace: cfg.temporal.namespace,
    taskQueue: TASK_QUEUE.install,
    workflowsPath: require.resolve('../../workflows'),
    activities: createActivities({ selfChecks: createSelfCheckRepo(db), store, services }),
  });
  await ensureHostMonitorSchedule(client, cfg.lifecycle.monitorIntervalMs, logger);
  // Refreshes what agents reported when no API process does (API_REFRESHER=false, or none running): it takes a
  // request only once it waited a second, so with API refreshers about, they take it (and their process records the
  // refresh's metrics, such as registration → known, which the worker does not export) (src/services/refresh-queue.ts).
  const refresher = startRefresher(services, cfg.database.url, logger, { minAgeMs: cfg.apiRefresher ? 1000 : COALESCE_MS, batchTargets: cfg.refreshBatchTargets });
  // Beside the API's refresher this one takes little (what is left a second, the host monitor's marks): a small copy of hosts.
  if (cfg.apiRefresher) setRefreshCacheHosts(OCCASIONAL_REFRESH_CACHE_HOSTS);
  logger.info({ taskQueue: TASK_QUEUE.install, temporal: cfg.temporal.address, storage: store.description }, 'worker running');
  const done = worker.run().finally(async () => {
    await refresher.close();
    await Promise.allSettled([connection.close(), client.connection.close(), db.destroy()]);
    logger.info('worker stopped');
  });
  return {
    done,
    async shutdown() {
      abort.abort();
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
    },
  };
}
