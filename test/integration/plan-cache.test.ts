/**
 * The service's connections plan a hot prepared statement once, not on every
 * call (DATABASE_PLAN_CACHE_MODE, src/db/database.ts): counted by
 * PostgreSQL itself (pg_stat_statements with track_planning) for the poll's
 * check-in, the statement every agent poll runs.
 */
import { Client } from 'pg';
import type { PlanCacheMode } from '../../src/config';
import { createDb } from '../../src/db/database';
import { migrateLatest } from '../../src/db/migrations';
import { createHostsRepo } from '../../src/db/hosts-repo';
import type { EmbeddedPg } from '../../src/dev/embedded-postgres';
import { startTestPostgres } from '../support/services';

let pg: EmbeddedPg;

async function sql<T = Record<string, unknown>>(text: string): Promise<T[]> {
  const c = new Client({ connectionString: pg.url });
  await c.connect();
  try {
    return (await c.query(text)).rows as T[];
  } finally {
    await c.end();
  }
}

beforeAll(async () => {
  pg = await startTestPostgres('landfall_plans');
  await sql("alter system set shared_preload_libraries = 'pg_stat_statements'");
  await sql('alter system set pg_stat_statements.track_planning = on');
  await pg.stop();
  await pg.start();
  await sql('create extension if not exists pg_stat_statements');
  const db = createDb(pg.url, 1);
  await migrateLatest(db);
  await db.destroy();
}, 120_000);

afterAll(async () => {
  await pg?.stop();
});

/** Ten check-ins on one pooled connection in this mode: how often PostgreSQL planned the statement, and what the connection's setting is. */
async function checkIns(mode: PlanCacheMode | undefined): Promise<{ calls: number; plans: number; setting: string }> {
  await sql('select pg_stat_statements_reset()');
  const db = mode ? createDb(pg.url, 1, mode) : createDb(pg.url, 1);
  try {
    const hosts = createHostsRepo(db);
    const key = { infraEnvId: '00000000-0000-4000-8000-000000000001', hostId: '00000000-0000-4000-8000-000000000002' };
    for (let i = 0; i < 10; i++) expect(await hosts.checkIn(key, 1_700_000_000 + i, 'v1', new Date())).toBeUndefined();
    const setting = String(((await db.raw('show plan_cache_mode')).rows[0] as { plan_cache_mode: string }).plan_cache_mode);
    const [row] = await sql<{ calls: string; plans: string }>("select calls::text, plans::text from pg_stat_statements where regexp_replace(query, '\\s+', ' ', 'g') like 'update hosts set checked_in_at%'");
    return { calls: Number(row?.calls ?? 0), plans: Number(row?.plans ?? 0), setting };
  } finally {
    await db.destroy();
  }
}

it('plans the check-in once per connection by default, where PostgreSQL auto planned it on every call', async () => {
  const forced = await checkIns(undefined);
  expect(forced).toEqual({ calls: 10, plans: 1, setting: 'force_generic_plan' });
  // What the default saves: left to PostgreSQL, the statement is planned again on (nearly) every call.
  const auto = await checkIns('auto');
  expect(auto.setting).toBe('auto');
  expect(auto.calls).toBe(10);
  expect(auto.plans).toBeGreaterThan(5);
}, 60_000);
