/**
 * A live stream of a cluster's (or infra-env's) events over Server-Sent
 * Events: GET /api/assisted-install/v2/events/stream?cluster_id=… (Landfall
 * extension). It reads the events table by sequence number, so it works with
 * any number of API processes and resumes from Last-Event-ID after a reconnect;
 * a PostgreSQL notification wakes it when an event is recorded (event-wakeups.ts).
 */
import type { Request, Response } from 'express';
import type { Knex } from 'knex';
import type { Principal } from '../auth/principal';
import type { ServiceContext } from '../services/context';
import { loadCluster, loadInfraEnv } from '../services/access';
import { badRequest } from '../errors';
import type { EventRow } from '../db/rows';
import { presentEvent } from './assisted/presenters';

const POLL_MS = 1000;
const HEARTBEAT_MS = 15000;
const BATCH = 500;
/** While a gap is held: a writer that rolls back sends no notification, so look again this soon. */
const HOLD_POLL_MS = 100;
/** A gap held this long is passed (and logged): a transaction idle that long must not stop every stream. */
const MAX_HOLD_MS = 30_000;
/** How far below the cursor of `after=latest` the events of a transaction in flight at the open are looked for. */
const LATE_WINDOW = 100_000;

type Db = ServiceContext['db'];

/** Top-level transactions in progress now (they may still commit events), as text xid8s. */
async function inFlight(db: Db): Promise<string[]> {
  const r = (await db.raw("select coalesce(array_agg(x::text), '{}') as xids from pg_snapshot_xip(pg_current_snapshot()) x")) as { rows: Array<{ xids: string[] }> };
  return r.rows[0]!.xids;
}

async function anyRunning(db: Db, xids: string[]): Promise<boolean> {
  if (!xids.length) return false;
  const r = (await db.raw("select coalesce(bool_or(pg_xact_status(x::xid8) = 'in progress'), false) as running from unnest(?::text[]) x", [xids])) as { rows: Array<{ running: boolean }> };
  return r.rows[0]!.running;
}

/**
 * Sequence numbers are allocated at insert and become visible at commit, so
 * seq 11 can be visible while seq 10's transaction is still running. The
 * stream passes a gap only once it is settled: every transaction in progress
 * just after the gap was seen has ended (the writer's transaction id is
 * assigned before its seq, migration 20261125153000, so the one holding the
 * gap is among them), and a read after that still lacks the seq (rolled back).
 * Later events wait meanwhile, so events go out in seq order, none skipped,
 * and Last-Event-ID resumes exactly.
 */
class Horizon {
  private hold: { upTo: number; xids: string[]; since: number } | undefined;

  constructor(
    private readonly db: Db,
    private readonly log?: { warn: (o: object, msg: string) => void },
  ) {}

  get holding(): boolean {
    return this.hold !== undefined;
  }

  /** A hold was just started: look at once whether its transactions have already ended (an old gap, a rollback). */
  fresh = false;

  /** Before a read: the seq up to which gaps are settled (their transactions have all ended), if any. */
  async settled(): Promise<number | undefined> {
    const h = this.hold;
    if (!h) return undefined;
    const overdue = Date.now() - h.since > MAX_HOLD_MS;
    if (!overdue && (await anyRunning(this.db, h.xids))) return undefined;
    if (overdue) this.log?.warn({ upTo: h.upTo, heldMs: Date.now() - h.since }, 'event stream passes a gap whose transaction has not ended');
    this.hold = undefined;
    return h.upTo;
  }

  /** After a read of the seqs above the cursor: how far the stream may go; a gap starts a hold. */
  async advance(cursor: number, seqs: number[], settledUpTo: number | undefined): Promise<number> {
    let end = cursor;
    for (const s of seqs) {
      if (s === end + 1 || (settledUpTo !== undefined && s <= settledUpTo)) end = s;
      else break;
    }
    if (end < (seqs.at(-1) ?? end) && !this.hold) {
      this.hold = { upTo: seqs.at(-1)!, xids: await inFlight(this.db), since: Date.now() };
      this.fresh = true;
    }
    return end;
  }

  /**
   * The same for a stream of one cluster or infra-env, without listing every other event's seq (a
   * replay from 0 would walk the whole table): its candidate rows may go when the seqs between the
   * cursor and the last of them are contiguous (one indexed count), or once a hold over them settled.
   */
  async passable(cursor: number, rows: EventRow[], settledUpTo: number | undefined): Promise<{ pass: EventRow[]; cursor: number }> {
    let ok = 0;
    let base = cursor;
    if (settledUpTo !== undefined) {
      while (ok < rows.length && Number(rows[ok]!.seq) <= settledUpTo) ok++;
      base = Math.max(base, settledUpTo);
    }
    if (ok < rows.length) {
      const last = Number(rows.at(-1)!.seq);
      const r = (await this.db('events').where('seq', '>', base).andWhere('seq', '<=', last).count({ n: '*' }).first()) as { n: string | number };
      if (Number(r.n) === last - base) ok = rows.length;
      else if (!this.hold) {
        this.hold = { upTo: last, xids: await inFlight(this.db), since: Date.now() };
        this.fresh = true;
      }
    }
    const pass = rows.slice(0, ok);
    return { pass, cursor: Math.max(base, pass.length ? Number(pass.at(-1)!.seq) : cursor) };
  }
}

export async function streamEvents(ctx: ServiceContext, p: Principal, req: Request, res: Response): Promise<void> {
  const clusterId = typeof req.query.cluster_id === 'string' ? req.query.cluster_id : undefined;
  const infraEnvId = typeof req.query.infra_env_id === 'string' ? req.query.infra_env_id : undefined;
  // Everything, unfiltered, only for an administrator (the operator follows every cluster with it).
  if (!clusterId && !infraEnvId && p.kind !== 'admin') throw badRequest('cluster_id or infra_env_id is required (only an administrator may follow every event)');
  if (clusterId) await loadCluster(ctx, p, clusterId);
  if (infraEnvId) await loadInfraEnv(ctx, p, infraEnvId);
  // An empty Last-Event-ID is no cursor (an EventSource that has seen no id sends none at all).
  const rawHeader = req.headers['last-event-id'];
  const header = (typeof rawHeader === 'string' ? rawHeader.trim() : undefined) || undefined;
  const given = String(header ?? req.query.after ?? '0').trim();
  let cursor: number;
  let late: { below: number; xids: string[] } | undefined;
  if (given === 'latest') {
    // "From now on" includes what the transactions in flight now commit later, with a lower seq: one statement, one snapshot.
    const r = (await ctx.db.raw("select (select max(seq) from events) as seq, (select coalesce(array_agg(x::text), '{}') from pg_snapshot_xip(pg_current_snapshot()) x) as xids")) as {
      rows: Array<{ seq: string | number | null; xids: string[] }>;
    };
    cursor = Number(r.rows[0]!.seq ?? 0);
    if (r.rows[0]!.xids.length) late = { below: cursor, xids: r.rows[0]!.xids };
  } else {
    cursor = Number(given);
    // Checked before the 200 goes out: a cursor PostgreSQL's bigint cannot hold would fail the first query after it.
    if (!/^\d{1,15}$/.test(given) || !Number.isSafeInteger(cursor)) throw badRequest(`${header !== undefined ? 'Last-Event-ID' : 'after'}: must be an event id (a non-negative integer below 2^53) or "latest"`, { field: 'after' });
  }

  // No Connection header of its own: Node keeps the connection, or closes it after a stream opened while the process stops.
  res.status(200).set({ 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' });
  res.flushHeaders();
  let closed = false;
  req.on('close', () => {
    closed = true;
  });
  let lastWrite = Date.now();
  const send = (e: EventRow) => {
    res.write(`id: ${e.seq}\nevent: ${e.name}\ndata: ${JSON.stringify(presentEvent(e))}\n\n`);
    lastWrite = Date.now();
  };
  const filtered = Boolean(clusterId || infraEnvId);
  const scoped = (q: Knex.QueryBuilder<EventRow, EventRow[]>) => {
    if (clusterId) q.where({ cluster_id: clusterId });
    if (infraEnvId) q.where({ infra_env_id: infraEnvId });
    return q;
  };
  const horizon = new Horizon(ctx.db, (req as Request & { log?: { warn: (o: object, msg: string) => void } }).log);
  while (!closed) {
    const generation = ctx.eventWakeups?.generation;
    if (late) {
      // The transactions in flight at the open: once all have ended, their events (seq at or below the cursor) go first.
      if (!(await anyRunning(ctx.db, late.xids))) {
        const rows = await scoped(ctx.db<EventRow>('events').where('seq', '<=', late.below).andWhere('seq', '>', late.below - LATE_WINDOW).whereRaw('xact = any(?::xid8[])', [late.xids])).orderBy('seq');
        for (const e of rows) send(e);
        // Back to the cursor of the open, for a client that resumes (an id-only message dispatches nothing).
        if (rows.length) res.write(`id: ${cursor}\n\n`);
        late = undefined;
      }
    } else {
      const settledUpTo = await horizon.settled();
      let rows: EventRow[];
      let more: boolean;
      if (filtered) {
        const candidates = await scoped(ctx.db<EventRow>('events').where('seq', '>', cursor)).orderBy('seq').limit(BATCH);
        const r = await horizon.passable(cursor, candidates, settledUpTo);
        rows = r.pass;
        more = candidates.length === BATCH && rows.length === BATCH;
        cursor = r.cursor;
      } else {
        const all = await ctx.db<EventRow>('events').where('seq', '>', cursor).orderBy('seq').limit(BATCH);
        const end = await horizon.advance(cursor, all.map((e) => Number(e.seq)), settledUpTo);
        rows = all.filter((e) => Number(e.seq) <= end);
        more = all.length === BATCH && end === Number(all.at(-1)!.seq);
        cursor = end;
      }
      for (const e of rows) send(e);
      if (more) continue;
      if (horizon.fresh) {
        horizon.fresh = false;
        continue;
      }
    }
    if (Date.now() - lastWrite > HEARTBEAT_MS) {
      // A comment line keeps proxies from closing an idle stream.
      res.write(': keep-alive\n\n');
      lastWrite = Date.now();
    }
    // Woken as soon as any process records an event (PostgreSQL NOTIFY); the poll is the fallback.
    // A held gap or open is looked at again soon: a writer that rolls back notifies no one.
    const ms = late || horizon.holding ? HOLD_POLL_MS : POLL_MS;
    await (ctx.eventWakeups ? ctx.eventWakeups.wait(ms, generation) : new Promise((r) => setTimeout(r, ms)));
  }
}
