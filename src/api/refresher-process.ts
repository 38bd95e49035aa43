/**
 * The API's refresher in a process of its own: with API_PROCESSES > 1 the
 * primary forks it beside the serving workers (src/api/cluster.ts), and the
 * serving workers run none.
 *
 * Why not in every serving process, as before: a refresh is a dozen
 * statements awaited one after another, and in a process answering
 * 1,700 agent requests a second each await queues behind the requests on its
 * event loop, so a 4 ms refresh took ~40 ms and the refreshes of a hundred
 * dirty clusters fell seconds behind the reports (bench/agent-api). Here the
 * awaits wait only for PostgreSQL, and the process runs below the serving
 * ones' priority (REFRESHER_NICE). It is also the only process holding the
 * refresher's copy of every host's large columns (refresh-service.ts), which
 * each serving process held for its share of the clusters.
 *
 * What it keeps in memory changes no answer: it is a cache of rows, and any
 * process (a serving one settling a read, the worker's backup refresher)
 * refreshes the same targets with the same result.
 */
import { promises as fs, readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { REFRESHER_MAIN_NICE, REFRESHER_NICE, type Config } from '../config';
import type { Logger } from '../logger';
import { createDb } from '../db/database';
import { createRepos } from '../services/context';
import { buildServiceContext } from '../services/build-context';
import { createMetrics } from '../metrics';
import { createObjectStore } from '../storage';
import { closeTemporalClient, createTemporalClient } from '../temporal/client';
import { startRefresher } from '../services/refresh-queue';
import { joinApiCluster } from './cluster';

/**
 * The refresher's scheduling priority by default (a nice value; raising
 * one's own needs no privilege; API_REFRESHER_NICE sets another). At normal
 * priority it refreshed as fast as the CPU let it: on a saturated machine it
 * took CPU from the polls and, coalescing less, made more refreshes. Below
 * the serving processes it runs on what they leave, and coalesces more when
 * they leave little. Measured (bench/agent-api, 5,000 hosts, 1,700 req/s, 60 s
 * windows, two rounds in one session, 2026-11-27): poll p99 548/337 ms at nice
 * 0 against 122/56 ms at nice 10; report → stored p50 873/456 against 114/117
 * ms, p99 3,287/2,658 against 2,365/677 ms; PostgreSQL 0.53 against 0.35 ms per
 * request.
 *
 * Since then a refresh costs a fraction of what it did, and nice 0 is a
 * trade rather than a loss (bench/README.md, 2026-11-30, eleventh session,
 * 45 s windows, nice 0 against 10, alternating): at 5,000 hosts report →
 * stored p99 93 / 143 / 110 against 330 / 375 / 207 ms, poll p99 39 / 47 /
 * 24 against 37 / 34 / 23 ms; at 20,000 hosts, in the two pairs the machine
 * left undisturbed, stored 360 / 295 against 447 / 683 ms but poll p99 89 /
 * 88 against 36 / 46 ms. So 10 stays the default (the polls' target holds at
 * both sizes), and a machine with fewer hosts, or cores to spare, can choose
 * fresher validations with 0.
 *
 * The threads differ: the main one runs the refreshes, short and
 * latency-bound (a report waits for them), V8's helper threads run the
 * collections' bursts of marking and sweeping. API_REFRESHER_MAIN_NICE
 * sets the main thread's value alone (unset, it is this one).
 */
export { REFRESHER_NICE };

/**
 * The main thread above the serving processes (API_REFRESHER_MAIN_NICE=-5),
 * its helpers still at 10: a refresh runs as soon as its window ends, not
 * when the serving processes leave a core free; one thread takes at most
 * one core. A trade, so not the default (bench/README.md, 2026-12-01,
 * eighteenth session, 120 s windows): in the agent mix at 20,000 hosts,
 * 1,700 requests/s, report → stored p99 71 / 91 ms against 248 / 276 with
 * every thread at 10 on a fast hour, 131 / 308 against 530 / 410 on a slow
 * one, poll p99 30 / 32 against 25 / 26 ms and 60 / 137 against 53 / 65; but
 * in a boot storm (5,000 hosts, 16 agents at a time) 380 / 277 hosts/s
 * against 450 / 368, the refreshes running during the storm instead of
 * after it and coalescing less (API CPU per host 2.96 / 4.26 ms against
 * 2.64 / 3.36), though every host was validated 0.3 s after the last
 * inventory against 1.2 / 2.0 s. Below 0 needs the privilege to raise a
 * priority (root, or CAP_SYS_NICE); without it the main thread stays at
 * the process's own priority, with a line in the log.
 */
export { REFRESHER_MAIN_NICE };

/**
 * Every thread of this process below the serving processes, not only the
 * main one. On Linux a nice value belongs to a thread (setpriority on the
 * process id sets the calling thread's only), and the threads V8 starts with
 * the process, which run its collections' parallel marking, compaction and
 * sweeping, kept nice 0. The refresher's full collections of its large heap
 * (~0.4–0.5 s each at 5,000 hosts) then competed with the serving processes
 * at their priority; sampled every 0.27 s, the refresher took up to three
 * quarters of a core in the polls' worst seconds (bench/README.md,
 * 2026-11-29, fifth session). A thread started later takes its creator's
 * value, so this is done once, at start. Elsewhere the process id names the
 * whole process.
 */
export function lowerEveryThread(nice: number, except?: number): void {
  for (const tid of threadIds()) {
    if (tid === except) continue;
    try {
      setPriority(tid, Math.max(getPriority(tid), nice));
    } catch (err) {
      // A thread that ended meanwhile has nothing left to lower.
      // (Node reports it as ERR_SYSTEM_ERROR naming ESRCH.)
      if (!/\bESRCH\b/.test((err as Error).message)) throw err;
    }
  }
}

/** This process's threads (Linux: /proc/self/task); elsewhere 0, the process itself. */
function threadIds(): number[] {
  try {
    return readdirSync('/proc/self/task').map(Number).filter((n) => Number.isInteger(n) && n > 0);
  } catch {
    return [0];
  }
}

/**
 * The refresher's priorities (REFRESHER_MAIN_NICE, REFRESHER_NICE): the
 * main thread's first, while it can still be raised (lowering it later is
 * for good without privilege), then every other thread's. libuv's pool
 * threads are started before, by a use of the pool: a thread takes its
 * creator's value, and the pool's are started by the main thread on first
 * use, so later they would have taken the main thread's raised one.
 */
async function setPriorities(cfg: Pick<Config, 'apiRefresherNice' | 'apiRefresherMainNice'>, logger: Logger): Promise<void> {
  await fs.stat('.').catch(() => undefined);
  const own = getPriority(0);
  if (cfg.apiRefresherMainNice !== own) {
    try {
      setPriority(0, cfg.apiRefresherMainNice);
    } catch (err) {
      logger.info({ err: (err as Error).message, nice: cfg.apiRefresherMainNice, own }, "could not set the refresher's main thread priority; it stays at the process's own");
    }
  }
  if (cfg.apiRefresherNice <= 0) return;
  try {
    lowerEveryThread(cfg.apiRefresherNice, process.pid);
  } catch (err) {
    logger.warn({ err: (err as Error).message }, "could not lower the refresher's helper threads' priority; its collections compete with the serving processes for CPU");
  }
}

export interface RunningRefresher {
  close(): Promise<void>;
}

export function startRefresherProcess(cfg: Config, logger: Logger): RunningRefresher {
  if (!cfg.database.url) throw new Error('DATABASE_URL is required for the API (landfall dev starts an embedded PostgreSQL)');
  const db = createDb(cfg.database.url, cfg.database.poolMax, cfg.database.planCacheMode, logger);
  const temporal = createTemporalClient(cfg.temporal);
  const repos = createRepos(db);
  // Its refreshes record metrics (registration → known); the primary sums them with the serving processes'.
  const metrics = createMetrics(db);
  const services = { ...buildServiceContext(cfg, { db, repos, store: createObjectStore(cfg.storage), temporal }), metrics: metrics.port };
  joinApiCluster(metrics.registry, logger);
  const refresher = setPriorities(cfg, logger).then(() => startRefresher(services, cfg.database.url!, logger, { batchTargets: cfg.refreshBatchTargets }));
  logger.info('api refresher running');
  return {
    async close() {
      await (await refresher).close();
      await Promise.allSettled([db.destroy(), closeTemporalClient(temporal)]);
    },
  };
}
