import { createHash } from 'node:crypto';
import knex, { type Knex } from 'knex';
import type { PlanCacheMode } from '../config';
import type { Logger } from '../logger';
import { applyPlanCacheMode } from './plan-cache-mode';
import { PollLane, type BatchedStatement } from './poll-lane';

export type Db = Knex;

/**
 * `.options({ prepare: true })` on a hot statement runs it as a named prepared
 * statement: parsed once per connection instead of once per call, and planned
 * once too under the pool's plan_cache_mode (createDb), which is half of a
 * one-row statement's PostgreSQL CPU. The name is a digest
 * of the SQL text, so a builder whose text varies with its arguments is simply
 * several statements. Only for statements of a bounded set of shapes (each
 * name stays prepared for the life of its connection).
 */
export const PREPARED = { prepare: true } as const;

/**
 * An expression that makes the statement's transaction commit without waiting
 * for its WAL to reach the disk (synchronous_commit off, for this transaction
 * only), evaluated inside a statement the transaction sends anyway. Only for
 * writes whose loss in a crash is harmless: soft state (a poll's check-in), or
 * derived state whose request is lost with it (a refresh).
 */
export const SOFT_COMMIT_SQL = "set_config('synchronous_commit', 'off', true)";

interface CompiledQuery {
  sql: string;
  bindings?: unknown[];
  options?: { prepare?: boolean } & Record<string, unknown>;
}
type PgClientClass = new (config: Knex.Config) => { _query(connection: unknown, obj: CompiledQuery): Promise<unknown> };

// knex's own PostgreSQL client, which knex lets a caller subclass and pass as `client` (it ships no typings for it).
const ClientPG = require('knex/lib/dialects/postgres/index.js') as PgClientClass;

/**
 * Statement names by text: the shapes are few (PREPARED's contract), and a
 * digest per execution was a visible share of a poll's CPU. Bounded all the
 * same, in case a caller breaks the contract.
 */
const statementNames = new Map<string, string>();
function statementName(sql: string): string {
  let name = statementNames.get(sql);
  if (name === undefined) {
    name = `lf_${createHash('sha1').update(sql).digest('base64url').slice(0, 20)}`;
    if (statementNames.size >= 1000) statementNames.clear();
    statementNames.set(sql, name);
  }
  return name;
}

class PreparingClient extends ClientPG {
  override _query(connection: unknown, obj: CompiledQuery): Promise<unknown> {
    if (obj.options?.prepare) {
      const { prepare: _prepare, ...rest } = obj.options;
      obj = { ...obj, options: { ...rest, name: statementName(obj.sql) } };
    }
    return super._query(connection, obj);
  }
}

interface PooledPgConnection {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[]; rowCount: number | null }>;
}
interface PoolingClient {
  acquireConnection(): Promise<PooledPgConnection>;
  releaseConnection(c: PooledPgConnection): Promise<void>;
}

/**
 * A hot statement (the poll's check-in, a step reply's facts, a refresh's
 * reads) run on a pooled connection, or a transaction's, as a named prepared
 * statement, without knex's query building and runner: their share of a poll's API CPU was about a tenth (profile in
 * bench/README.md, 2026-11-27). The text is PostgreSQL's own (`$1`, a
 * parameter used twice is sent once), fixed, so one name per text. The same
 * pool as every other statement, and the same `query` event (tests count
 * statements by it); errors are pg's, as knex passes them on.
 */
export async function hotQuery<R>(db: Db | Knex.Transaction, text: string, values: unknown[]): Promise<R[]> {
  // In a transaction, knex's transaction client hands out the transaction's own connection and releases nothing.
  const client = db.client as unknown as PoolingClient & { transacting?: boolean; emit(event: string, arg: unknown): void };
  const connection = await client.acquireConnection();
  try {
    // A transaction's client passes the event on to the transaction and the root, as knex's own statements do.
    if (client.transacting) client.emit('query', { sql: text, bindings: values, method: 'raw' });
    else db.emit('query', { sql: text, bindings: values, method: 'raw' });
    return (await connection.query({ name: statementName(text), text, values })).rows as R[];
  } finally {
    await client.releaseConnection(connection);
  }
}

/**
 * The pool. Each connection is set to `planCacheMode` (DATABASE_PLAN_CACHE_MODE)
 * as it is opened. Why the default is force_generic_plan: PostgreSQL's `auto`
 * plans a prepared statement again on every execution when a plan made for
 * the parameters at hand looks cheaper than the generic one, and it did for
 * the poll's check-in (a null plan folds its CASE away): counted with
 * pg_stat_statements.track_planning, 45,841 plans for 45,841 check-ins, so
 * "prepared" saved the parse but not the planning. Forced generic, each hot
 * statement is planned once per connection: the check-in's backend CPU went
 * from 167 to 58 µs (bench/checkin-cost.ts; bench/README.md, 2026-11-28).
 * The statements here look rows up by key, where a generic plan
 * is the plan a custom one would be.
 */
export function createDb(url: string, poolMax = 10, planCacheMode: PlanCacheMode = 'force_generic_plan', logger?: Logger, options: { pollLane?: boolean; pollLaneGatherMs?: number } = {}): Db {
  const log = logger?.child({ component: 'db' });
  const db = knex({
    // knex's own messages (a connection lost, a pool that cannot connect) go to the service's log, structured, instead
    // of knex's console.log: with PostgreSQL away they were bare lines beside the JSON log. Without a logger: knex's.
    ...(log ? { log: knexLog(log) } : {}),
    client: PreparingClient as unknown as typeof knex.Client,
    connection: { connectionString: url, connectionTimeoutMillis: 5000 },
    pool: {
      min: 0,
      max: poolMax,
      afterCreate: (conn: { query(sql: string): Promise<unknown> }, done: (err: Error | null, conn: unknown) => void) => {
        applyPlanCacheMode(conn, planCacheMode).then(
          () => done(null, conn),
          (err: Error) => done(err, conn),
        );
      },
    },
    acquireConnectionTimeout: 10000,
  });
  if (options.pollLane) {
    const lane = new PollLane(url, planCacheMode, log, options.pollLaneGatherMs);
    lanes.set(db, lane);
    // The lane's connection ends with the pool's (knex's destroy is its client's; the knex object's own is read-only).
    const client = db.client as { destroy(callback?: unknown): Promise<void> };
    const destroy = client.destroy.bind(client);
    client.destroy = async (callback?: unknown) => {
      await lane.close();
      return destroy(callback);
    };
  }
  return db;
}

const lanes = new WeakMap<Db, PollLane>();

/**
 * One row of a batched statement on the poll lane (PollLane.batched): its
 * answer, or undefined when the database has no lane, the lane could not run
 * it, or no row came back for it (then the caller sends its pool statement).
 * The `query` event once per statement sent, with its array parameters.
 */
export async function laneBatched<R>(db: Db, text: string, width: number, row: unknown[]): Promise<R | undefined> {
  const lane = lanes.get(db);
  if (!lane) return undefined;
  let statements = batchedStatements.get(db);
  if (!statements) batchedStatements.set(db, (statements = new Map()));
  let statement = statements.get(text);
  if (!statement) statements.set(text, (statement = { name: statementName(text), text, width, onSend: (values) => db.emit('query', { sql: text, bindings: values, method: 'raw' }) }));
  return lane.batched<R>(statement, row);
}
const batchedStatements = new WeakMap<Db, Map<string, BatchedStatement>>();

/** knex's logger interface onto ours: its warnings and errors keep their level; debug goes to debug. */
function knexLog(log: Logger): Knex.Config['log'] {
  const text = (m: unknown) => (m instanceof Error ? m.message : typeof m === 'string' ? m : JSON.stringify(m));
  return {
    warn: (m: unknown) => log.warn({ knex: text(m) }, 'database client warning'),
    error: (m: unknown) => log.error({ knex: text(m) }, 'database client error'),
    deprecate: (method: string, alternative: string) => log.warn({ knex: `${method} is deprecated, use ${alternative}` }, 'database client warning'),
    debug: (m: unknown) => log.debug({ knex: text(m) }, 'database client debug'),
  };
}

/** Round trip used by /readyz; a timeout counts as a failure. */
export async function pingDb(db: Db): Promise<void> {
  await db.raw('select 1');
}
