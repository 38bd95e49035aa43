/**
 * The poll's lane: one pipelined PostgreSQL connection per process for the
 * statement every agent poll sends (the check-in). Its statements go out as
 * they come, without waiting for the one before to be answered, and each is
 * its own transaction (a Sync after each); the check-ins of one turn of the
 * event loop travel as one batched statement (BatchedStatement). A poll takes
 * no pool connection. Measured in the agent-api mix at 1,700 req/s on the 2-core
 * machine (bench/README.md, 2026-11-29): poll p99 114–151 ms against
 * 399–469 ms through the pool, serving CPU 0.62 core against 0.70–0.79.
 *
 * A pipeline is answered in order, so one statement that waits holds back
 * every poll behind it. The statements sent here must never wait for a lock:
 * the check-in sent on the lane skips a row another transaction holds and
 * answers nothing, and its caller then sends it through the pool, where it
 * waits as before (hosts-repo checkIn). Whatever goes wrong on the lane (no
 * connection, a broken one, an error, a statement that does not come back
 * within STALL_MS) gives undefined, and the caller uses the pool: the lane
 * only ever saves work, the pool's answer is the authority. After a failure
 * to connect, the lane is left alone for RETRY_AFTER_MS, so a database that
 * is away costs each poll no extra connection attempt.
 *
 * Paced (`gatherMs`, DATABASE_POLL_LANE_GATHER_MS): a batched statement
 * leaves at most once per gatherMs. The rows of a turn that comes sooner
 * after the last one wait for the rest of that time, and whatever arrives
 * meanwhile rides along; after a quiet spell a turn's rows go at once. Per
 * turn alone, a process serving ~750 polls a second on an idle core sent
 * nearly one statement per poll, and each statement woke the lane's backend,
 * then this process, then every agent in it one by one. A poll waits at most
 * gatherMs more; polls alone at 1,530 a second (bench/README.md, twenty-third
 * session) cost 0.37 ms of API and 0.18 ms of PostgreSQL CPU each unpaced,
 * 0.28 / 0.12 paced at 4 ms and 0.23 / 0.09 at 8 ms; the 20,000-host agent
 * mix at 1,700 req/s kept 1.42 cores of 2 busy paced at 4 ms, 1.65 unpaced.
 */
import { Client } from 'pg';
import type { PlanCacheMode } from '../config';
import type { Logger } from '../logger';
import { applyPlanCacheMode } from './plan-cache-mode';

/** A statement still unanswered after this long: the connection is dropped (every statement on it goes to the pool). */
const STALL_MS = 10_000;
/** After a failed connection attempt, the lane is not tried again for this long. */
const RETRY_AFTER_MS = 1_000;
/** How the lane's backend shows in pg_stat_activity (tests find it by it). */
export const POLL_LANE_APPLICATION_NAME = 'landfall-poll-lane';

/**
 * A statement that carries many callers' rows at once: its parameters $1…$width
 * are arrays, the k-th holding every row's k-th value (unnest … with
 * ordinality makes them rows again), and each row it returns names in `n` the
 * 1-based position of the row it answers. Polls arriving together cost
 * PostgreSQL one statement instead of one each: a statement's own cost (its
 * bind, executor start, transaction and answer) was more than half of a
 * pipelined check-in's backend CPU, and of the client's (bench/README.md,
 * 2026-11-29, sixth session).
 */
export interface BatchedStatement {
  name: string;
  text: string;
  width: number;
  /** Runs when the statement is sent, with its parameters. */
  onSend?: (values: unknown[][]) => void;
}

export class PollLane {
  private client: Promise<Client> | undefined;
  private retryAt = 0;
  private closed = false;
  /** Whether the last connection attempt failed: a failure is logged once, and the connection that ends it. */
  private down = false;
  /** When the last batch left (performance.now()): the next leaves gatherMs after it at the earliest. */
  private lastSentAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly url: string,
    private readonly planCacheMode: PlanCacheMode,
    private readonly logger?: Logger,
    /** The least time between two batches (ms); 0: each turn's rows leave at the end of that turn. */
    private readonly gatherMs = 0,
  ) {}

  /**
   * The statement's rows, or undefined when the lane could not run it (the
   * caller then uses the pool). `onSend` runs only when it is sent.
   */
  async query<R>(name: string, text: string, values: unknown[], onSend?: () => void): Promise<R[] | undefined> {
    if (this.closed || Date.now() < this.retryAt) return undefined;
    let client: Client;
    try {
      client = await (this.client ??= this.connect());
    } catch (err) {
      // Not connected: the pool's for RETRY_AFTER_MS (every caller that waited on this attempt lands here alike).
      this.client = undefined;
      this.retryAt = Date.now() + RETRY_AFTER_MS;
      if (!this.down && !this.closed) this.logger?.warn({ err: (err as Error).message }, 'poll lane cannot connect; polls use the pool until it can');
      this.down = true;
      return undefined;
    }
    if (this.down) {
      this.down = false;
      this.logger?.info('poll lane connected again');
    }
    onSend?.();
    try {
      return (await client.query<R & Record<string, unknown>>({ name, text, values })).rows;
    } catch {
      return undefined;
    }
  }

  /**
   * One row of a batched statement (see BatchedStatement): the row's answer,
   * or undefined when the lane could not run it or the statement returned no
   * row for it (the caller then uses the pool). The rows given in one turn of
   * the event loop go out as one statement when the turn's I/O callbacks are
   * done (setImmediate), or, when the last batch left less than gatherMs ago,
   * gatherMs after it with every row given meanwhile; pg writes a statement's
   * messages in one write.
   */
  batched<R>(statement: BatchedStatement, row: unknown[]): Promise<R | undefined> {
    if (this.closed || Date.now() < this.retryAt) return Promise.resolve(undefined);
    let batch = this.batches.get(statement.name);
    if (!batch) {
      batch = { statement, rows: [], answers: [] };
      this.batches.set(statement.name, batch);
      if (this.batches.size === 1) {
        const wait = this.lastSentAt + this.gatherMs - performance.now();
        if (wait > 0) setTimeout(() => this.sendBatches(), wait);
        else setImmediate(() => this.sendBatches());
      }
    }
    const b = batch;
    b.rows.push(row);
    return new Promise<R | undefined>((resolve) => b.answers.push(resolve as (row: unknown) => void));
  }

  private batches = new Map<string, { statement: BatchedStatement; rows: unknown[][]; answers: Array<(row: unknown) => void> }>();

  private sendBatches(): void {
    this.lastSentAt = performance.now();
    const batches = [...this.batches.values()];
    this.batches.clear();
    for (const { statement, rows, answers } of batches) {
      // Column-wise: parameter k is the array of every row's k-th value.
      const columns = Array.from({ length: statement.width }, (_, k) => rows.map((r) => r[k]));
      void this.query<{ n: string | number }>(statement.name, statement.text, columns, () => statement.onSend?.(columns)).then((result) => {
        const byRow = new Map<number, unknown>();
        for (const r of result ?? []) if (!byRow.has(Number(r.n))) byRow.set(Number(r.n), r);
        answers.forEach((answer, i) => answer(byRow.get(i + 1)));
      });
    }
  }

  /** Ends the connection; statements on it still get their answers first. */
  async close(): Promise<void> {
    this.closed = true;
    const c = this.client;
    this.client = undefined;
    await c?.then((client) => client.end()).catch(() => undefined);
  }

  private connect(): Promise<Client> {
    // pg's pipeline mode (8.23): statements are written without waiting; query_timeout drops the connection when one
    // does not come back, which fails every statement on it (pg cannot take one out of a pipeline).
    const client = new Client({ connectionString: this.url, application_name: POLL_LANE_APPLICATION_NAME, connectionTimeoutMillis: 5000, query_timeout: STALL_MS, pipeline: true } as ConstructorParameters<typeof Client>[0]);
    const attempt: Promise<Client> = (async () => {
      try {
        await client.connect();
        // As every pool connection (createDb): a hot statement planned once per connection.
        await applyPlanCacheMode(client, this.planCacheMode);
        return client;
      } catch (err) {
        await client.end().catch(() => undefined);
        throw err;
      }
    })();
    const drop = () => {
      if (this.client === attempt) this.client = undefined;
    };
    // A broken connection: the next statement opens another. Without a listener, pg's error event would end the process.
    client.on('error', (err) => {
      drop();
      this.logger?.warn({ err: err.message }, 'poll lane connection lost; polls use the pool until it is back');
    });
    client.on('end', drop);
    return attempt;
  }
}
