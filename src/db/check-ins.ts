/**
 * Polls' check-ins, several in one statement when they arrive together. A
 * poll is one UPDATE of its host row (check-in time, agent clock and
 * version) that returns what the poll needs (hosts-repo checkIn). Each
 * statement has a fixed cost on both sides of the connection (protocol,
 * planning, a wake-up each way) that on this kind of machine is most of the
 * poll's database cost. So: while a check-in statement is in flight, the
 * polls that arrive meanwhile wait for it and then go out together, in one
 * statement. An idle service sends each poll's statement at once (a batch of
 * one); a busy one sends fewer, larger ones, without a timer and without
 * holding a poll longer than one statement's round trip.
 *
 * Nothing here changes an answer: each poll gets the row as its own
 * statement would have returned it, and a lost process loses only polls it
 * had not answered.
 *
 * Locks: a batch locks its rows `SKIP LOCKED` and never waits, so it cannot
 * deadlock with a transaction that holds one of its hosts and wants another
 * (a refresh writes several hosts in one transaction), and never holds the
 * polls queued behind it longer than its own round trip; a host it skipped
 * is checked in by the single statement on its own, which waits for the row
 * as a poll always did.
 */
import type { Knex } from 'knex';
import { PREPARED, SOFT_COMMIT_SQL } from './database';

export interface CheckIn {
  infraEnvId: string;
  hostId: string;
  at: Date;
  agentTimestamp?: number;
  agentVersion?: string;
  /** Steps sent before this are due again. */
  resendBefore: Date;
}

export interface CheckInRow {
  status: string;
  cluster_id: string | null;
  discovery_agent_version: string | null;
  step_sends: Record<string, { d: string; at: number }> | null;
  steps_due: boolean;
  report_pending: boolean;
  view_stamp: string | null;
}

/** What both statements return of the checked-in row: the poll never reads the row's large columns. */
const RETURNING = (resend: string) => `hosts.status, hosts.cluster_id, hosts.discovery_agent_version, hosts.step_sends,
  exists (select 1 from host_steps s where s.infra_env_id = hosts.infra_env_id and s.host_id = hosts.id
          and (s.state = 'pending' or (s.state = 'sent' and s.sent_at < ${resend} and (s.step_type <> 'install' or hosts.doc->'progress'->>'current_stage' is null)))) as steps_due,
  (hosts.report_pending is not null) as report_pending,
  (select c.step_view_stamp from clusters c where c.id = hosts.cluster_id) as view_stamp`;

/** One host; waits for its row lock like any update. Committed as soft state (its own statement's transaction). */
const SINGLE_SQL = `update hosts set checked_in_at = ?, agent_timestamp = coalesce(?::bigint, agent_timestamp), discovery_agent_version = coalesce(?::text, discovery_agent_version)
  where infra_env_id = ? and id = ? and ${SOFT_COMMIT_SQL} is not null
  returning ${RETURNING('?::timestamptz')}`;

/** Several hosts; `n` says whose row is whose. Rows another transaction holds are skipped (left to SINGLE_SQL). */
const BATCH_SQL = `with v as (select * from unnest(?::uuid[], ?::uuid[], ?::timestamptz[], ?::bigint[], ?::text[], ?::timestamptz[], ?::int[]) as v(ie, id, at, ts, ver, resend, n)),
  l as (select v.ie, v.id, v.at, v.ts, v.ver, v.resend, v.n from hosts h join v on h.infra_env_id = v.ie and h.id = v.id
        order by v.ie, v.id for no key update of h skip locked)
  update hosts set checked_in_at = l.at, agent_timestamp = coalesce(l.ts, hosts.agent_timestamp), discovery_agent_version = coalesce(l.ver, hosts.discovery_agent_version)
  from l where hosts.infra_env_id = l.ie and hosts.id = l.id and ${SOFT_COMMIT_SQL} is not null
  returning l.n, ${RETURNING('l.resend')}`;

/** At most this many check-in statements of one process in flight at once; more polls wait for the next batch. */
const IN_FLIGHT = 2;
/** At most this many hosts in one statement. */
const MAX_BATCH = 128;

export async function checkInOne(db: Knex, c: CheckIn): Promise<CheckInRow | undefined> {
  const { rows } = (await db
    .raw(SINGLE_SQL, [c.at, c.agentTimestamp ?? null, c.agentVersion ?? null, c.infraEnvId, c.hostId, c.resendBefore])
    .options(PREPARED)) as { rows: CheckInRow[] };
  return rows[0];
}

export async function checkInMany(db: Knex, batch: CheckIn[]): Promise<Map<number, CheckInRow>> {
  const col = <T>(f: (c: CheckIn) => T) => batch.map(f);
  const { rows } = (await db
    .raw(BATCH_SQL, [
      col((c) => c.infraEnvId),
      col((c) => c.hostId),
      col((c) => c.at),
      col((c) => c.agentTimestamp ?? null),
      col((c) => c.agentVersion ?? null),
      col((c) => c.resendBefore),
      batch.map((_, i) => i),
    ] as unknown as readonly Knex.Value[])
    .options(PREPARED)) as { rows: Array<CheckInRow & { n: number }> };
  return new Map(rows.map((r) => [r.n, r]));
}

type Waiter = { c: CheckIn; done: Array<{ resolve: (r: CheckInRow | undefined) => void; reject: (e: unknown) => void }> };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** What a batch's array parameters take: anything else goes in a statement of its own, whose failure is its own. */
const batchable = (c: CheckIn) => UUID.test(c.infraEnvId) && UUID.test(c.hostId) && (c.agentTimestamp === undefined || Number.isSafeInteger(c.agentTimestamp));

/** The batching front of checkInOne / checkInMany for one database handle. */
export function checkInBatcher(db: Knex): (c: CheckIn) => Promise<CheckInRow | undefined> {
  let inFlight = 0;
  /** Waiting polls by host, in arrival order: two polls of one host share one row. */
  const queue = new Map<string, Waiter>();

  const send = async (waiters: Waiter[]): Promise<void> => {
    // Only statements that never wait hold a place in flight: one that waited for a row lock (a refresh holding
    // a host it wrote) would hold back every poll of this process behind it.
    inFlight++;
    let found: Map<number, CheckInRow>;
    try {
      found = await checkInMany(db, waiters.map((w) => w.c));
    } catch (err) {
      for (const w of waiters) for (const d of w.done) d.reject(err);
      return;
    } finally {
      inFlight--;
      next();
    }
    for (const [i, w] of waiters.entries()) {
      const row = found.get(i);
      if (row) settle(w, row);
      // Skipped (its row held by another transaction) or missing: on its own, outside the batches, which waits
      // for the row as a poll always did, or says it is gone.
      else checkInOne(db, w.c).then((r) => settle(w, r), (err: unknown) => w.done.forEach((d) => d.reject(err)));
    }
  };
  const settle = (w: Waiter, row: CheckInRow | undefined) => {
    for (const d of w.done) d.resolve(row);
  };
  const next = (): void => {
    while (inFlight < IN_FLIGHT && queue.size) {
      const waiters: Waiter[] = [];
      for (const [k, w] of queue) {
        queue.delete(k);
        waiters.push(w);
        if (waiters.length >= MAX_BATCH) break;
      }
      void send(waiters);
    }
  };

  return (c) =>
    new Promise((resolve, reject) => {
      if (!batchable(c)) {
        checkInOne(db, c).then(resolve, reject);
        return;
      }
      const k = `${c.infraEnvId}/${c.hostId}`;
      const waiting = queue.get(k);
      if (waiting) {
        // The later poll's clock and version are the ones to keep.
        waiting.c = c;
        waiting.done.push({ resolve, reject });
      } else queue.set(k, { c, done: [{ resolve, reject }] });
      next();
    });
}
