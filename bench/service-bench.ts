/**
 * What the benches that call the service layer directly share (refresh-cost,
 * reply-cost): a migrated embedded PostgreSQL in a temporary folder, a
 * service context on it with no Temporal behind (nothing they call starts a
 * workflow), a watchdog, and everything removed afterwards, even on failure.
 */
import path from 'node:path';
import { rmSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import { parseConfig } from '../src/config';
import { createDb, type Db } from '../src/db/database';
import { createRepos } from '../src/services/context';
import { buildServiceContext } from '../src/services/build-context';
import { LocalObjectStore } from '../src/storage/local-object-store';
import { benchDatabase, postmasterPid, watchdog } from './support';

export interface ServiceBench {
  ctx: ReturnType<typeof buildServiceContext>;
  db: Db;
  /** PostgreSQL's postmaster: its process tree's CPU is the database's. */
  pgPid(): number;
}

/** Runs `body` against a fresh service context, then stops and removes everything; a failure exits 1 with its stack. */
export function runServiceBench(name: string, body: (b: ServiceBench) => Promise<void>, limitMs = 20 * 60_000): void {
  const run = async () => {
    const dog = watchdog(limitMs);
    const { dir, pg } = await benchDatabase(name);
    const db = createDb(pg.url, 4);
    const cfg = parseConfig({ DATABASE_URL: pg.url, TEMPORAL_ADDRESS: '127.0.0.1:1', STORAGE_LOCAL_DIR: path.join(dir, 'objects') });
    const noTemporal = { workflow: {}, withDeadline: <T>(_d: number, fn: () => Promise<T>) => fn() } as unknown as Client;
    const ctx = buildServiceContext(cfg, { db, repos: createRepos(db), store: new LocalObjectStore(path.join(dir, 'store')), temporal: noTemporal });
    try {
      await body({ ctx, db, pgPid: () => postmasterPid(path.join(dir, 'pg')) });
    } finally {
      await db.destroy();
      await pg.stop();
      rmSync(dir, { recursive: true, force: true });
      clearTimeout(dog);
    }
  };
  run().catch((err) => {
    process.stderr.write(`${(err as Error).stack}\n`);
    process.exit(1);
  });
}
