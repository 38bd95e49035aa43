/**
 * A connection's plan_cache_mode, set as it opens: every pool connection
 * (createDb) and the poll lane's. A hot prepared statement is then planned
 * once per connection instead of on every run (PlanCacheMode in config.ts).
 */
import type { PlanCacheMode } from '../config';

/** The connection as pg opens it (the pool's raw client or the lane's): only its promise form of query is used. */
interface Queryable {
  query(sql: string): Promise<unknown>;
}

export async function applyPlanCacheMode(conn: Queryable, mode: PlanCacheMode): Promise<void> {
  if (mode === 'auto') return;
  try {
    await conn.query(`set plan_cache_mode = ${mode}`);
  } catch (err) {
    // A server before PostgreSQL 12 has no such setting (42704): it plans as it always did.
    if ((err as { code?: string }).code !== '42704') throw err;
  }
}
