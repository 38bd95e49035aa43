import type { Knex } from 'knex';
import type { Doc, HostRow } from './rows';
import { hotQuery, laneBatched, PREPARED, SOFT_COMMIT_SQL } from './database';
import type { eventRow } from './events-repo';

type Q = Knex | Knex.Transaction;

/**
 * A statement's own transaction commits without waiting for the WAL flush
 * (set_config(…, true) lasts to the end of the transaction, which is when
 * PostgreSQL reads it). Only for a poll's soft state, written in a statement
 * of its own: the check-in time and the digests of steps handed out. A
 * PostgreSQL crash can lose the last fraction of a second of them, which means
 * a host looks as if it polled a moment earlier, or is handed a step once
 * more; nothing an agent reported is written this way. It takes the poll off
 * the disk's flush latency (p99 of a durable commit here: tens of ms).
 */
const SOFT_COMMIT = `${SOFT_COMMIT_SQL} is not null`;
export type HostKey = { infraEnvId: string; hostId: string };
/** Per repeating step type: a digest of the arguments last handed out, and when (ms). */
export type StepSends = Record<string, { d: string; at: number }>;

/** What a poll's check-in returns of the host row. */
export interface CheckedIn {
  status: string;
  clusterId: string | null;
  stepsDue: boolean;
  agentVersion: string | null;
  stepSends: StepSends;
  reportPending: boolean;
  viewStamp: string | null;
}

/**
 * The repeating steps a poll would hand out, planned before its check-in for
 * a host in one of `statuses` (all with that plan), bound to `clusterId`
 * whose step view carries `viewStamp`: per step type its argument digest and
 * the instant at or before which a send of the same arguments is stale (now
 * minus the repeat interval and the early-poll slack). `at`: this poll's
 * instant, recorded for each step handed out.
 */
export interface StepPlanGuess {
  statuses: readonly string[];
  clusterId: string;
  viewStamp: string;
  at: number;
  candidates: Array<{ t: string; d: string; stale: number }>;
}

function checkInSql(p: (i: number) => string, from: string, key: string, returning: string): string {
  return `update hosts set
    checked_in_at = ${p(1)},
    agent_timestamp = coalesce(${p(2)}, agent_timestamp),
    discovery_agent_version = coalesce(${p(3)}, discovery_agent_version),
    step_sends = case
      when ${p(4)}::text[] @> array[status::text] and cluster_id = ${p(5)}::uuid
           and (select c.step_view_stamp from clusters c where c.id = hosts.cluster_id) = ${p(6)}
      then coalesce(step_sends, '{}'::jsonb) || coalesce(
        (select jsonb_object_agg(c.t, jsonb_build_object('d', c.d, 'at', ${p(7)}::bigint))
           from jsonb_to_recordset(${p(8)}::jsonb) as c(t text, d text, stale bigint)
          where step_sends->c.t->>'d' is distinct from c.d or (step_sends->c.t->>'at')::bigint <= c.stale),
        '{}'::jsonb)
      else step_sends end
  ${from}where ${key} and ${SOFT_COMMIT}
  returning ${returning}status, cluster_id, discovery_agent_version, step_sends,
    exists (select 1 from host_steps s where s.infra_env_id = hosts.infra_env_id and s.host_id = hosts.id and (s.state = 'pending' or (s.state = 'sent' and s.sent_at < ${p(11)} and (s.step_type <> 'install' or hosts.doc->'progress'->>'current_stage' is null)))) as steps_due,
    (report_pending is not null) as report_pending,
    (select c.step_view_stamp from clusters c where c.id = hosts.cluster_id) as view_stamp`;
}

/**
 * The check-in (see checkIn), through the pool. Parameters: 1 time, 2 agent
 * timestamp, 3 agent version, 4–8 the plan (statuses, cluster, step-view
 * stamp, instant, candidates; all null without one), 9–10 the key, 11 the
 * resend bound of queued steps handed out and never answered. Column
 * references in SET are the row before this update; a step is due as
 * step-cadence.ts dueNow says: never sent, sent with other arguments, or sent
 * at or before its stale mark.
 */
const CHECK_IN_SQL = checkInSql((i) => `$${i}`, '', 'infra_env_id = $9 and id = $10', '');

/** The check-in's parameters, in order; the batched statement takes each as an array of this type. */
export const CHECK_IN_TYPES = ['timestamptz', 'bigint', 'text', 'text', 'uuid', 'text', 'bigint', 'text', 'uuid', 'uuid', 'timestamptz'] as const;

/**
 * The check-ins of one turn of the event loop, for the poll lane, in one
 * statement (src/db/poll-lane.ts BatchedStatement): parameter k is every
 * check-in's k-th CHECK_IN_SQL parameter. The lane must never wait: a row is
 * taken only if no other transaction holds it (a refresh writing its hosts
 * holds theirs until it commits), and a held or missing host gets no row
 * back (its caller then sends CHECK_IN_SQL through the pool). A host twice in
 * one batch is written once and answered once; its other poll goes through
 * the pool.
 */
export const CHECK_IN_BATCH_SQL = checkInSql(
  (i) => `v.c${i}`,
  `from (select l.infra_env_id as lie, l.id as lid, u.*
           from unnest(${CHECK_IN_TYPES.map((type, k) => `$${k + 1}::${type}[]`).join(', ')}) with ordinality as u(${CHECK_IN_TYPES.map((_, k) => `c${k + 1}`).join(', ')}, n)
           join hosts l on l.infra_env_id = u.c9 and l.id = u.c10
            for no key update of l skip locked) v
  `,
  'hosts.infra_env_id = v.lie and hosts.id = v.lid',
  'v.n, ',
);

/** CHECK_IN_SQL's parameters (CHECK_IN_BATCH_SQL's k-th array holds the k-th of each check-in). */
export function checkInValues(k: HostKey, agentTimestamp: number | undefined, agentVersion: string | undefined, resendBefore: Date, plan?: StepPlanGuess): unknown[] {
  // Instants as ISO text: pg's own Date serialiser (local time with its offset) was a visible share of a poll's CPU.
  return [
    new Date().toISOString(),
    agentTimestamp ?? null,
    agentVersion ?? null,
    plan ? `{${plan.statuses.join(',')}}` : null,
    plan?.clusterId ?? null,
    plan?.viewStamp ?? null,
    plan?.at ?? null,
    plan ? JSON.stringify(plan.candidates) : null,
    k.infraEnvId,
    k.hostId,
    resendBefore.toISOString(),
  ];
}

type CheckInRow = { status: string; cluster_id: string | null; discovery_agent_version: string | null; step_sends: StepSends | null; steps_due: boolean; report_pending: boolean; view_stamp: string | null };

/**
 * Whether the check-in applied the plan: the row returned matches it (this
 * statement changes none of what the plan is checked against, so the row
 * after it says what the guard saw), and then which candidates it recorded
 * as handed out now.
 */
export function planHeld(plan: StepPlanGuess, row: CheckedIn): { sent: StepSends } | undefined {
  if (!plan.statuses.includes(row.status) || row.clusterId !== plan.clusterId || row.viewStamp !== plan.viewStamp) return undefined;
  const sent: StepSends = {};
  for (const c of plan.candidates) {
    const s = row.stepSends[c.t];
    if (s && s.at === plan.at && s.d === c.d) sent[c.t] = s;
  }
  return { sent };
}

export type HostPatch = Partial<Omit<HostRow, 'id' | 'infra_env_id' | 'created_at' | 'status' | 'status_info' | 'status_updated_at' | 'facts_version'>>;

/** Every column but the large ones (inventory, doc): what a refresh reads on every round and a refresh's write returns. */
export const HOST_LIGHT_COLUMNS = ['id', 'infra_env_id', 'cluster_id', 'status', 'status_info', 'status_updated_at', 'role', 'suggested_role', 'bootstrap', 'requested_hostname', 'checked_in_at', 'agent_timestamp', 'discovery_agent_version', 'created_at', 'updated_at', 'facts_version'] as const;

function columns(db: Knex, patch: HostPatch): Record<string, unknown> {
  const values: Record<string, unknown> = { ...patch, updated_at: new Date(), facts_version: db.raw('facts_version + 1') };
  if (patch.doc) values.doc = JSON.stringify(patch.doc);
  if (patch.step_sends) values.step_sends = JSON.stringify(patch.step_sends);
  return values;
}

/** One host of a refresh's write (compareAndSetRefreshes). */
export interface HostRefreshWrite {
  key: HostKey;
  /** The status and facts version the refresh computed from: the row is written only while it still has both. */
  fromStatus: string;
  factsVersion: string;
  status?: { status: string; status_info: string };
  suggestedRole?: string;
  inventory?: string;
  /** Merged into the doc (`doc || fields`), never replacing it: an agent's fact stored meanwhile is kept. */
  docFields: Record<string, unknown>;
}

/**
 * A refresh's writes of any number of hosts as one statement (one shape for
 * any count: the writes are a jsonb array), with the events of the hosts it
 * wrote. Each row is a compare-and-swap as compareAndSet's, also on the facts
 * version: written only while its status and facts version are those the
 * refresh read, the doc's fields merged, the facts version moved. Each event
 * ($3, in order) is recorded only if its host was written: one statement
 * where a refresh of a booting cluster made hundreds, and the rows it writes
 * are locked from it to the commit, not through an insert after it. Returns
 * the light columns of the rows written.
 */
const COMPARE_AND_SET_REFRESHES_SQL = `with w as (
  update hosts h set
    status = case when w.status is null then h.status else w.status end,
    status_info = case when w.status is null then h.status_info else w.status_info end,
    status_updated_at = case when w.status is null then h.status_updated_at else $2::timestamptz end,
    suggested_role = coalesce(w.suggested_role, h.suggested_role),
    inventory = case when w.set_inventory then w.inventory else h.inventory end,
    doc = h.doc || w.doc,
    updated_at = $2::timestamptz,
    facts_version = h.facts_version + 1
  from jsonb_to_recordset($1::jsonb) as w(ie uuid, id uuid, from_status text, facts_version bigint, status text, status_info text,
                                          suggested_role text, set_inventory boolean, inventory text, doc jsonb)
  -- The keys again as arrays ($4, $5): the planner looks them up in the primary key (joined to the function's rows
  -- alone, a generic plan made while the table was small scanned every host).
  where h.infra_env_id = any($4::uuid[]) and h.id = any($5::uuid[])
    and h.infra_env_id = w.ie and h.id = w.id and h.status = w.from_status and h.facts_version = w.facts_version
  returning ${HOST_LIGHT_COLUMNS.map((c) => `h.${c}`).join(', ')}),
e as (
  insert into events (name, severity, category, message, cluster_id, host_id, infra_env_id, request_id, props)
  select e.name, e.severity, e.category, e.message, e.cluster_id, e.host_id, e.infra_env_id, e.request_id, e.props::jsonb
    from jsonb_to_recordset($3::jsonb) as e(name text, severity text, category text, message text, cluster_id uuid,
                                            host_id uuid, infra_env_id uuid, request_id text, props text, n int)
   where exists (select 1 from w where w.infra_env_id = e.infra_env_id and w.id = e.host_id)
   order by e.n
  returning 1)
select w.*, (select count(*) from e) as lf_events from w`;

export function createHostsRepo(db: Knex) {
  const t = (q: Q = db) => q<HostRow>('hosts');
  const byKey = (k: HostKey) => ({ infra_env_id: k.infraEnvId, id: k.hostId });
  return {
    async insert(row: Partial<HostRow> & Pick<HostRow, 'id' | 'infra_env_id' | 'status' | 'status_info'>, q: Q = db): Promise<HostRow> {
      const [r] = await t(q)
        .insert({ ...row, doc: JSON.stringify(row.doc ?? {}) as unknown as Doc })
        .returning('*')
        .options(PREPARED);
      return r as HostRow;
    },
    /**
     * A new host's registration in one statement, its own transaction: the
     * row, its registration event and its refresh request (with the wake-up),
     * only if its cluster (key-share locked, as every registration locks it)
     * is in one of `admitting` and no BMC enrolment waits in the infra-env
     * (matching one is the locking path's work). Undefined when it wrote
     * nothing: the host exists, the cluster refused, or a BMC may claim it;
     * the caller then takes the general path, which says which.
     */
    async insertRegistered(
      row: Partial<HostRow> & Pick<HostRow, 'id' | 'infra_env_id' | 'cluster_id' | 'status' | 'status_info'>,
      admitting: readonly string[],
      event: Record<string, unknown>,
      refresh: Record<string, unknown>,
      channel: string,
    ): Promise<HostRow | undefined> {
      const values: Record<string, unknown> = { ...row, doc: JSON.stringify(row.doc ?? {}) };
      const cols = Object.keys(values);
      const eventCols = Object.keys(event);
      const refreshCols = Object.keys(refresh);
      const list = (names: string[]) => names.map((c) => `"${c}"`).join(', ');
      const marks = (n: number) => Array.from({ length: n }, () => '?').join(', ');
      const { rows } = await db.raw<{ rows: Array<HostRow & { notified: string }> }>(
        `with c as (select status from clusters where id = ? for key share),
         ok as (select 1 where (?::uuid is null or exists (select 1 from c where status = any(?::text[])))
                  and not exists (select 1 from bmc_hosts where infra_env_id = ?)),
         h as (insert into hosts (${list(cols)}) select ${marks(cols.length)} from ok on conflict do nothing returning *),
         e as (insert into events (${list(eventCols)}) select ${marks(eventCols.length)} from h returning 1),
         r as (insert into refresh_requests (${list(refreshCols)}) select ${marks(refreshCols.length)} from h returning 1)
         select h.*, (select count(*) from (select pg_notify(?, '') from r) n) as notified from h`,
        [row.cluster_id, row.cluster_id, [...admitting], row.infra_env_id, ...Object.values(values), ...Object.values(event), ...Object.values(refresh), channel] as Knex.RawBinding[],
      ).options(PREPARED);
      const r = rows[0];
      if (!r) return undefined;
      const { notified: _notified, ...host } = r;
      return host as HostRow;
    },
    get(k: HostKey, q: Q = db): Promise<HostRow | undefined> {
      return t(q).where(byKey(k)).first().options(PREPARED);
    },
    /** What a step reply compares its facts with: the row without its ~10 KB inventory (only whether it has one). */
    getFacts(k: HostKey, q: Q = db): Promise<(Pick<HostRow, 'id' | 'infra_env_id' | 'cluster_id' | 'doc'> & { has_inventory: boolean }) | undefined> {
      return t(q).where(byKey(k)).first('id', 'infra_env_id', 'cluster_id', 'doc', db.raw('inventory is not null as has_inventory')).options(PREPARED) as never;
    },
    getForUpdate(k: HostKey, trx: Knex.Transaction): Promise<HostRow | undefined> {
      return t(trx).where(byKey(k)).forUpdate().first().options(PREPARED);
    },
    list(filter: { infraEnvId?: string; clusterId?: string; role?: string; status?: string }, q: Q = db): Promise<HostRow[]> {
      const query = t(q).orderBy([{ column: 'created_at', order: 'asc' }, { column: 'id', order: 'asc' }]);
      if (filter.infraEnvId) query.where({ infra_env_id: filter.infraEnvId });
      if (filter.clusterId) query.where({ cluster_id: filter.clusterId });
      if (filter.role) query.where({ role: filter.role });
      if (filter.status) query.where({ status: filter.status });
      return query;
    },
    /** Any column but the status, which only src/services/status-writer.ts changes (through compareAndSet). */
    async update(k: HostKey, patch: HostPatch, q: Q = db): Promise<HostRow> {
      const [r] = await t(q).where(byKey(k)).update(columns(db, patch)).returning('*').options(PREPARED);
      return r as HostRow;
    },
    /**
     * Compare-and-swap on the status the caller read: writes `patch` (and the
     * new status, if given) only while the row still has `fromStatus`;
     * undefined when another writer moved it first.
     */
    async compareAndSet(
      k: HostKey,
      fromStatus: string,
      patch: HostPatch,
      status: { status: string; status_info: string } | undefined,
      q: Q = db,
    ): Promise<HostRow | undefined> {
      const values = columns(db, patch);
      if (status) Object.assign(values, status, { status_updated_at: values.updated_at });
      const [r] = await t(q)
        .where({ ...byKey(k), status: fromStatus })
        .update(values)
        .returning('*')
        .options(PREPARED);
      return r as HostRow | undefined;
    },
    /**
     * A refresh's writes (HostRefreshWrite) in one statement, in the caller's
     * transaction, with the events of the hosts written (each event's host_id
     * and infra_env_id name its host; in their order); the rows written,
     * without their large columns (the caller knows them: what it read with
     * what it wrote). A host missing from the answer moved or got new facts
     * since it was read, and its events were not recorded.
     */
    async compareAndSetRefreshes(writes: HostRefreshWrite[], trx: Knex.Transaction, events: Array<ReturnType<typeof eventRow>> = []): Promise<Array<Omit<HostRow, 'inventory' | 'doc'>>> {
      if (!writes.length) return [];
      const list = writes.map((w) => ({
        ie: w.key.infraEnvId,
        id: w.key.hostId,
        from_status: w.fromStatus,
        facts_version: w.factsVersion,
        status: w.status?.status ?? null,
        status_info: w.status?.status_info ?? null,
        suggested_role: w.suggestedRole ?? null,
        set_inventory: w.inventory !== undefined,
        inventory: w.inventory ?? null,
        doc: w.docFields,
      }));
      const rows = await hotQuery<Omit<HostRow, 'inventory' | 'doc'> & { lf_events?: string }>(trx, COMPARE_AND_SET_REFRESHES_SQL, [
        JSON.stringify(list),
        new Date(),
        JSON.stringify(events.map((e, n) => ({ ...e, n }))),
        list.map((w) => w.ie),
        list.map((w) => w.id),
      ]);
      for (const r of rows) delete r.lf_events;
      return rows;
    },
    /**
     * The poll path in one round trip: records the check-in and returns the
     * host's status, and whether its step queue holds a step to hand out
     * (pending, or sent before `resendBefore`), so the caller skips the queue
     * query when it is empty. Only the status leaves the database, never the
     * row (its inventory is ~10 KB). Undefined when the host does not exist.
     * A statement of its own, committed as soft state (SOFT_COMMIT).
     * With `plan` (the repeating steps a poll would hand out to a host of that
     * status, cluster and step-view stamp, planned before the check-in), the
     * statement also decides which of them are due from the row's own step
     * sends and records them, if the row matches the plan (planHeld says
     * whether it did, from the row returned).
     */
    async checkIn(k: HostKey, agentTimestamp: number | undefined, agentVersion: string | undefined, resendBefore: Date, plan?: StepPlanGuess): Promise<CheckedIn | undefined> {
      const values = checkInValues(k, agentTimestamp, agentVersion, resendBefore, plan);
      // The poll lane first (src/db/poll-lane.ts), batched with the turn's other check-ins; nothing from it (no lane,
      // the row held, no such host, the host twice in the batch, the lane failing) sends the statement through the
      // pool, which waits for a held row and says whether the host exists.
      const r = (await laneBatched<CheckInRow>(db, CHECK_IN_BATCH_SQL, CHECK_IN_TYPES.length, values)) ?? (await hotQuery<CheckInRow>(db, CHECK_IN_SQL, values))[0];
      return r ? { status: r.status, clusterId: r.cluster_id, stepsDue: r.steps_due, agentVersion: r.discovery_agent_version, stepSends: r.step_sends ?? {}, reportPending: r.report_pending, viewStamp: r.view_stamp } : undefined;
    },
    /**
     * An agent's new facts in one statement: `fields` merged into the doc in
     * SQL (a refresh writing the doc meanwhile keeps its part, and this keeps
     * its own), the inventory replaced when given. No row lock is taken first:
     * a reply holds no lock a refresh waits for (refresh-queue.ts).
     */
    async mergeFacts(k: HostKey, fields: Record<string, unknown>, inventory: string | undefined, q: Q = db): Promise<void> {
      await t(q)
        .where(byKey(k))
        .update({
          doc: db.raw('doc || ?::jsonb', [JSON.stringify(fields)]),
          ...(inventory !== undefined ? { inventory } : {}),
          updated_at: new Date(),
          facts_version: db.raw('facts_version + 1'),
        } as never)
        .options(PREPARED);
    },
    /** Records the repeating steps just handed out (merged into what the row holds); soft state, as checkIn. */
    async recordStepSends(k: HostKey, sent: StepSends): Promise<void> {
      await t(db)
        .where(byKey(k))
        .whereRaw(SOFT_COMMIT)
        .update({ step_sends: db.raw('step_sends || ?::jsonb', [JSON.stringify(sent)]) } as never)
        .options(PREPARED);
    },
    delete(k: HostKey, q: Q = db): Promise<number> {
      return t(q).where(byKey(k)).delete();
    },
    countByCluster(clusterId: string, q: Q = db) {
      return t(q).where({ cluster_id: clusterId }).select('status').count<{ status: string; count: string }[]>('* as count').groupBy('status');
    },
  };
}

export type HostsRepo = ReturnType<typeof createHostsRepo>;
