import { DefaultLogger, NativeConnection, Runtime, Worker, type LogLevel } from '@temporalio/worker';
import type { Config } from '../config';
import { createLogger, type Logger } from '../logger';
import { createDb } from '../db/database';
import { createSelfCheckRepo } from '../db/self-checks-repo';
import { createObjectStore } from '../storage';
import { TASK_QUEUE } from '../temporal/names';
import { createActivities } from '../../activities';
import { sleep } from '../dev/process-utils';

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
  const db = createDb(cfg.database.url, cfg.database.poolMax);
  const store = createObjectStore(cfg.storage);
  const connection = await connectWithRetry(cfg.temporal.address, logger, abort.signal);
  const worker = await Worker.create({
    connection,
    namespace: cfg.temporal.namespace,
    taskQueue: TASK_QUEUE.install,
    workflowsPath: require.resolve('../../workflows'),
    activities: createActivities({ selfChecks: createSelfCheckRepo(db), store }),
  });
  logger.info({ taskQueue: TASK_QUEUE.install, temporal: cfg.temporal.address, storage: store.description }, 'worker running');
  const done = worker.run().finally(async () => {
    await Promise.allSettled([connection.close(), db.destroy()]);
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
