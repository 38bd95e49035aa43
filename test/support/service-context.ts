/**
 * A ServiceContext on a real, migrated PostgreSQL of its own, without
 * Temporal (a stand-in whose workflows nobody calls) and with local storage:
 * for tests that call the services directly and watch the statements they
 * send (`db.on('query', …)`).
 */
import type { Client } from '@temporalio/client';
import { parseConfig } from '../../src/config';
import { createDb, type Db } from '../../src/db/database';
import { migrateLatest } from '../../src/db/migrations';
import { createRepos, type ServiceContext } from '../../src/services/context';
import { buildServiceContext } from '../../src/services/build-context';
import { LocalObjectStore } from '../../src/storage/local-object-store';
import type { EmbeddedPg } from '../../src/dev/embedded-postgres';
import { startTestPostgres, tempDir } from './services';

export interface TestServiceContext {
  pg: EmbeddedPg;
  db: Db;
  ctx: ServiceContext;
  stop(): Promise<void>;
}

export async function startTestServiceContext(name: string, poolMax = 8): Promise<TestServiceContext> {
  const pg = await startTestPostgres(`${name.replace(/-/g, '_')}_${Math.random().toString(36).slice(2, 8)}`);
  let db: Db | undefined;
  let ctx: ServiceContext;
  try {
    const cfg = parseConfig({ DATABASE_URL: pg.url, TEMPORAL_ADDRESS: '127.0.0.1:1', STORAGE_LOCAL_DIR: tempDir(`${name}-objects`) });
    // As the API opens it: with the poll lane (src/db/poll-lane.ts), paced as by default, so check-ins here take the path they take in service.
    db = createDb(pg.url, poolMax, undefined, undefined, { pollLane: true, pollLaneGatherMs: cfg.database.pollLaneGatherMs });
    await migrateLatest(db);
    const noTemporal = { workflow: {}, withDeadline: <T>(_d: number, fn: () => Promise<T>) => fn() } as unknown as Client;
    ctx = buildServiceContext(cfg, { db, repos: createRepos(db), store: new LocalObjectStore(tempDir(`${name}-store`)), temporal: noTemporal });
  } catch (err) {
    // The PostgreSQL started above would otherwise outlive the test run (no stop() is ever handed back to call).
    await db?.destroy().catch(() => undefined);
    await pg.stop();
    throw err;
  }
  return {
    pg,
    db,
    ctx,
    stop: async () => {
      await db.destroy();
      await pg.stop();
    },
  };
}
