/**
 * Running totals of the events /metrics counts (installs by outcome, host
 * validations that started failing), so a scrape reads the events recorded
 * since the totals were last moved on, not the whole table, which only grows
 * (migrations/20261130120000_event_tallies.ts says why and what it cost).
 *
 * The totals cover every event with seq ≤ `upto`. Moving `upto` on must not
 * pass an event still to appear: seq is given at insert and seen at commit,
 * so a transaction in flight may hold a seq below one already visible. Hence
 * the next `upto` is taken as a candidate: the last seq given out, then a
 * snapshot. Whoever holds a seq up to the candidate took its transaction id
 * before taking that seq (landfall_event_seq(), events_commit_safe), so before
 * the snapshot: if it is still running it is in that snapshot's in-progress
 * list. Once none of those is running, every event up to the candidate is
 * final, and a later scrape counts them into the totals. (The events sequence
 * hands out one value at a time, CACHE 1: a session holding values it took in
 * advance would break this.)
 *
 * One process moves the totals at a time (the row's lock, skipped when held:
 * a scrape never waits for another); any process reads them. Nothing is kept
 * in process memory.
 */
import type { Knex } from 'knex';
import type { Db } from './database';

type Q = Knex | Knex.Transaction;

/** One series of a tally: its labels, in the tally's order, and its count. */
export interface TallyRow {
  tally: TallyName;
  labels: [string, string, string];
  n: number;
}
export type TallyName = 'installs' | 'host_validation_failures';

/** The events the installs tally counts, and the outcome each stands for (landfall_installs_total's label). */
export const INSTALL_OUTCOMES: Readonly<Record<string, 'started' | 'succeeded' | 'failed'>> = {
  cluster_prepare_installation_started: 'started',
  cluster_installation_completed: 'succeeded',
  cluster_installation_failed: 'failed',
};

/**
 * Every tally's series over the events with after < seq ≤ upTo, by seq on
 * the primary key. Installs: event name, the cluster's release, the failing
 * stage; validation failures: the validation id.
 */
const RANGE_SQL = `
  select 'installs' as tally, e.name as a, coalesce(c.openshift_version, 'unknown') as b, coalesce(e.props->>'failing_stage', '') as c, count(*)::bigint as n
    from events e left join clusters c on c.id = e.cluster_id
   where e.seq > ? and e.seq <= ? and e.name in (${Object.keys(INSTALL_OUTCOMES).map((n) => `'${n}'`).join(', ')})
   group by 1, 2, 3, 4
  union all
  select 'host_validation_failures', coalesce(e.props->>'validation_id', 'unknown'), '', '', count(*)::bigint
    from events e
   where e.seq > ? and e.seq <= ? and e.name = 'host_validation_failed'
   group by 1, 2, 3, 4`;
const SEQ_MAX = '9223372036854775807';

/** Totals as stored: a JSON object keyed by [tally, ...labels] as JSON text (jsonb keys cannot hold a NUL separator). */
type Counts = Record<string, number>;

async function countRange(q: Q, after: string, upTo: string): Promise<Counts> {
  const rows = (await q.raw(RANGE_SQL, [after, upTo, after, upTo])).rows as Array<{ tally: string; a: string; b: string; c: string; n: string }>;
  const out: Counts = {};
  for (const r of rows) out[JSON.stringify([r.tally, r.a, r.b, r.c])] = Number(r.n);
  return out;
}

function add(into: Counts, more: Counts): Counts {
  for (const [k, n] of Object.entries(more)) into[k] = (into[k] ?? 0) + n;
  return into;
}

/**
 * Moves the totals on to the candidate when it has settled, and takes the
 * next candidate. Skipped when another process holds the row.
 */
async function moveOn(db: Db): Promise<void> {
  await db.transaction(async (trx) => {
    const row = (
      await trx.raw(
        `select upto::text, counts, cand_upto::text,
                cand_snapshot is null or not exists (select 1 from pg_snapshot_xip(cand_snapshot) x where pg_xact_status(x) = 'in progress') as settled
           from event_tallies where id = 1 for update skip locked`,
      )
    ).rows[0] as { upto: string; counts: Counts; cand_upto: string | null; settled: boolean } | undefined;
    if (!row || !row.settled) return;
    let { upto, counts } = row;
    if (row.cand_upto !== null && BigInt(row.cand_upto) > BigInt(upto)) {
      counts = add(counts, await countRange(trx, upto, row.cand_upto));
      upto = row.cand_upto;
    }
    // In this order, in two statements: the snapshot must be taken after the last seq was read.
    const last = String((await trx.raw(`select coalesce(pg_sequence_last_value(pg_get_serial_sequence('events', 'seq')::regclass), 0)::text as l`)).rows[0].l);
    if (last === row.cand_upto && upto === row.upto) return;
    const snapshot = String((await trx.raw('select pg_current_snapshot()::text as s')).rows[0].s);
    await trx.raw('update event_tallies set upto = ?, counts = ?::jsonb, cand_upto = ?, cand_snapshot = ?::pg_snapshot where id = 1', [upto, JSON.stringify(counts), last, snapshot]);
  });
}

/** Every tally's series now: the stored totals plus the events after them. */
export async function eventTallies(db: Db): Promise<TallyRow[]> {
  await moveOn(db);
  const row = (await db.raw('select upto::text, counts from event_tallies where id = 1')).rows[0] as { upto: string; counts: Counts } | undefined;
  const counts = add({ ...(row?.counts ?? {}) }, await countRange(db, row?.upto ?? '0', SEQ_MAX));
  return Object.entries(counts).map(([k, n]) => {
    const [tally, a, b, c] = JSON.parse(k) as [TallyName, string, string, string];
    return { tally, labels: [a, b, c], n };
  });
}
