/**
 * Coalesced refreshes. An agent's new facts (a registration, an inventory, a
 * step reply that changed something) are stored and the agent is answered;
 * what the facts belong to is only marked as needing a refresh: one row in
 * `refresh_requests` per cluster (or per unbound host), however many facts
 * arrive before it is refreshed. So a boot storm of 50 hosts into one
 * cluster costs a handful of cluster refreshes, not 50 each holding an
 * agent's request and a lock on every host of the cluster.
 *
 * Who refreshes:
 * - each `landfall api` runs a refresher (startRefresher; with several
 *   processes, in one of its own: src/api/refresher-process.ts): woken by a
 *   notification at the marking transaction's commit, it claims requests
 *   (an advisory lock per target, tried, never waited for, so several
 *   refreshers share the work without doing it twice) and refreshes each
 *   target in its own transaction;
 * - a user's read of a cluster or host settles that target's request first
 *   (settle*), so a user never reads validations older than the facts an
 *   agent was already answered for — the same answer as when the refresh ran
 *   inside the agent's request;
 * - the host monitor (worker) drains what is left, so a fleet with no API
 *   process running a refresher is still refreshed.
 *
 * The request row, not the notification, is the request: a lost notification
 * costs the sweep interval, never a refresh. Rows are appended (no unique
 * key an agent's insert could wait on). A refresh takes a transaction-level
 * advisory lock on its target, deletes the target's rows and refreshes, all in
 * one transaction: facts committed before the delete are read by the refresh
 * (their rows are deleted with it), facts committed after leave a row for the
 * next round, and a refresh that fails rolls its delete back. Lock order:
 * advisory lock, request rows, cluster, hosts; an agent's transaction takes
 * only host rows and appends a request, so nothing waits in a circle.
 */
import { Client } from 'pg';
import type { Knex } from 'knex';
import { hotQuery, PREPARED, SOFT_COMMIT_SQL } from '../db/database';
import type { Logger } from '../logger';
import { REFRESH_BATCH_TARGETS } from '../config';
import type { ServiceContext } from './context';
import type { RefreshPath } from '../metrics';
import { lockedClustersSql, refreshCluster, refreshLockedClusters, refreshUnboundHost, type LockedClusterRow } from './refresh-service';
import { SHED_EPISODE_JOIN } from '../db/service-pressure-repo';

export const REFRESH_CHANNEL = 'landfall_refresh';

/**
 * A refresher takes a target once its first request is this old: facts of the
 * cluster that arrive within it share one refresh. It adds this much to how
 * soon validations follow a report (a person's read does not wait for it: it
 * settles the target itself), and it batches less than it seems: a
 * refresher that keeps up takes, at its turn, everything that came due since
 * its last one, and one that is behind batches by itself (a 150 ms window
 * gave 67.8 transactions a second against 70.9 at 50 ms). It was 50 ms.
 * Measured at 10 against 50 (bench/agent-api, 1,700 req/s, alternating,
 * bench/README.md, 2026-11-30, tenth session):
 * - 5,000 hosts: report → validations stored p50 34 / 37 against 76 / 72 ms,
 *   p99 158 / 243 against 384 / 331 ms; report → read p99 117 / 104 against
 *   137 / 132 ms; the refresher's CPU the same (0.36–0.40 core) for ~9 % more
 *   refreshes;
 * - 20,000 hosts, three pairs: stored p50 45 / 39 / 37 against 76 / 72 /
 *   76 ms, p99 364 / 422 / 414 against 489 / 586 / 527 ms; polls and reads
 *   moved both ways, within the runs' spread;
 * - a boot storm of 2,000 hosts (bench/boot-storm): settled 0.76 / 0.62 s
 *   after the last inventory against 0.86 / 1.06 s, API CPU per host 3.43 /
 *   3.58 against 3.75 / 3.61 ms.
 */
export const COALESCE_MS = 10;

export type RefreshTarget = { clusterId: string } | { infraEnvId: string; hostId: string };

export interface RequestRow {
  target: string;
  cluster_id: string | null;
  infra_env_id: string | null;
  host_id: string | null;
}

function targetKey(t: RefreshTarget): string {
  return 'clusterId' in t ? `c:${t.clusterId}` : `h:${t.infraEnvId}/${t.hostId}`;
}

/** Marks a target as needing a refresh, in the caller's transaction (so the mark commits with the facts). */
export async function requestRefresh(q: Knex | Knex.Transaction, target: RefreshTarget): Promise<void> {
  const row = refreshRequestRow(target);
  // One statement: the row, and the wake-up PostgreSQL sends at commit (identical ones in a transaction are sent once).
  await q.raw(`with r as (insert into refresh_requests (target, cluster_id, infra_env_id, host_id) values (?, ?, ?, ?) returning 1) select pg_notify(?, '') from r`, [
    row.target,
    row.cluster_id,
    row.infra_env_id,
    row.host_id,
    REFRESH_CHANNEL,
  ]).options(PREPARED);
}

/** The request row of a target (a statement that writes one as part of a larger write uses it, with REFRESH_CHANNEL). */
export function refreshRequestRow(target: RefreshTarget): RequestRow {
  return 'clusterId' in target
    ? { target: targetKey(target), cluster_id: target.clusterId, infra_env_id: null, host_id: null }
    : { target: targetKey(target), cluster_id: null, infra_env_id: target.infraEnvId, host_id: target.hostId };
}

/**
 * storeReplyFacts's statement. Parameters: 1–3 the step's exit code, output
 * and error, 4–5 the host's key, 6 the step id, 7 the doc field the reply sets
 * (null: none), 8 its value (null: the output), 9 the inventory (null: none,
 * or the output when 10), 10 whether the inventory is the output, 11 whether
 * a waiting BMC enrolment leaves the facts to the locking path, 12 the
 * refresh channel, 13–14 a doc field holding the digest of what a refresh
 * reads of the reply and its new value (null: none; every change of the fact
 * asks for a refresh). With 13, the fact is stored when it changed, but a
 * refresh is asked for only when that digest changed (`o` reads it as it was
 * before this statement: every part of one statement sees the same snapshot).
 */
const STORE_REPLY_SQL = `with s as (update host_steps set state = 'replied', replied_at = now(), exit_code = $1, output = $2, error = $3
                         where infra_env_id = $4 and host_id = $5 and step_id = $6 returning 1),
     o as (select doc->>$13::text as digest from hosts where infra_env_id = $4 and id = $5 and $13::text is not null),
     u as (update hosts set doc = case when $7::text is null then doc
                                       when $13::text is null then doc || jsonb_build_object($7::text, coalesce($8::text, $2::text))
                                       else doc || jsonb_build_object($7::text, coalesce($8::text, $2::text), $13::text, $14::text) end,
                            inventory = case when $10::boolean then $2::text else coalesce($9::text, inventory) end,
                            updated_at = now(), facts_version = facts_version + 1
           where infra_env_id = $4 and id = $5
             and not (($7::text is null or doc->>$7::text is not distinct from coalesce($8::text, $2::text))
                      and (($9::text is null and not $10::boolean) or inventory is not null))
             and not ($11::boolean and exists (select 1 from bmc_hosts where infra_env_id = $4))
           returning infra_env_id, id, cluster_id),
     r as (insert into refresh_requests (target, cluster_id, infra_env_id, host_id)
           select case when u.cluster_id is not null then 'c:' || u.cluster_id else 'h:' || u.infra_env_id || '/' || u.id end,
                  u.cluster_id, case when u.cluster_id is null then u.infra_env_id end, case when u.cluster_id is null then u.id end
           from u where $13::text is null or (select digest from o) is distinct from $14::text returning 1)
     select exists (select 1 from hosts where infra_env_id = $4 and id = $5) as host,
            (select count(*) from (select pg_notify($12, '') from r) n) > 0 as changed,
            $11::boolean and exists (select 1 from bmc_hosts where infra_env_id = $4) as enrolment`;

/**
 * A step reply's record and facts in one statement (its own transaction, one
 * round trip instead of six): the step marked replied; the host's `fields`
 * merged into its doc (and its inventory replaced, when given) only when they
 * differ from what the row holds; and then, in the same commit, its refresh
 * request with its wake-up, exactly the row requestRefresh writes. A reply
 * whose facts did not change writes only the step. Undefined when the host
 * does not exist.
 */
export async function storeReplyFacts(
  db: Knex,
  key: { infraEnvId: string; hostId: string },
  step: { id: string; exit_code: number; output: string; error: string },
  fields: Record<string, unknown>,
  inventory: string | undefined,
  /** Leave the facts unwritten when a BMC enrolment waits in the infra-env (matching it takes the caller's locking path). */
  unlessEnrolment = false,
  /** The doc field holding a digest of what a refresh reads of this fact, and its value: a refresh only when it changed. */
  refreshKey?: { field: string; value: string },
): Promise<{ changed: boolean; enrolment: boolean } | undefined> {
  const { infraEnvId: ie, hostId: id } = key;
  // Every reply sets one field of the doc (a string); an inventory also replaces the inventory column.
  const entries = Object.entries(fields);
  if (entries.length > 1) throw new Error('a step reply stores one field');
  const [field, value] = (entries[0] ?? [null, null]) as [string | null, string | null];
  // The field compared as text (`doc->>field`), not as a JSON document: a connectivity report is ~20 KB, and
  // parsing it as jsonb to test containment cost PostgreSQL ~4x this statement's CPU (bench/README.md, 2026-11-27).
  // A value or inventory that is the step's output itself is sent once, as the output.
  const rows = await hotQuery<{ host: boolean; changed: boolean; enrolment: boolean }>(db, STORE_REPLY_SQL, [
    step.exit_code,
    step.output,
    step.error,
    ie,
    id,
    step.id,
    field,
    value === step.output ? null : value,
    inventory === undefined || inventory === step.output ? null : inventory,
    inventory !== undefined && inventory === step.output,
    unlessEnrolment,
    REFRESH_CHANNEL,
    refreshKey?.field ?? null,
    refreshKey?.value ?? null,
  ]);
  const r = rows[0]!;
  return r.host ? { changed: r.changed, enrolment: r.enrolment } : undefined;
}

/** The target a host's facts belong to: its cluster, or the host itself when it has none. */
export function targetOfHost(host: { id: string; infra_env_id: string; cluster_id: string | null }): RefreshTarget {
  return host.cluster_id ? { clusterId: host.cluster_id } : { infraEnvId: host.infra_env_id, hostId: host.id };
}

/** Advisory-lock key space of refresh targets (the second key is the target's hash). */
const LOCK_SPACE = 0x4c46_5246; // 'LFRF'

/** How long a claimed request row had waited, by the database's clock (a claim returns it with the row). */
const WAITED_SQL = "date_part('epoch', clock_timestamp() - requested_at) as waited_s";
type Claimed = { target?: string; waited_s?: number | null };

/**
 * A refresh transaction, reported to the metrics when it commits
 * (MetricsPort.refreshed): `claimed` is told the request rows the
 * transaction claimed (an empty list: it refreshed with nothing pending),
 * and each target's age at the commit is its oldest row's wait plus the time
 * from the claim to the commit. Nothing is reported for a transaction that
 * claimed nothing, or one that failed (its requests stay).
 */
async function reported<T>(ctx: ServiceContext, path: RefreshPath, body: (trx: Knex.Transaction, claimed: (rows: Claimed[]) => void) => Promise<T>): Promise<T> {
  const started = performance.now();
  let claimedAt: number | undefined;
  const oldest = new Map<string, number>();
  const out = await ctx.db.transaction((trx) =>
    body(trx, (rows) => {
      claimedAt = performance.now();
      for (const r of rows) {
        const k = r.target ?? '';
        oldest.set(k, Math.max(oldest.get(k) ?? 0, Number(r.waited_s ?? 0)));
      }
    }),
  );
  if (claimedAt !== undefined && ctx.metrics) {
    const committed = performance.now();
    ctx.metrics.refreshed(path, [...oldest.values()].map((w) => w + (committed - claimedAt!) / 1000), (committed - started) / 1000);
  }
  return out;
}

/**
 * Refreshes one target in one transaction, if `wait` is false only when no
 * other refresher holds it; whether any request was pending.
 */
async function refreshTarget(ctx: ServiceContext, target: string, wait: boolean, path: RefreshPath): Promise<boolean> {
  return reported(ctx, path, async (trx, claimed) => {
    let rows: Array<RequestRow & Claimed>;
    // A refresh writes only what its facts derive (validations, statuses, their events), and its request's
    // delete commits with it: a crash that loses its last moment loses both, and the request is refreshed again.
    // So it commits without waiting for the WAL flush (set in its first statement: no round trip of its own);
    // any later durable commit (an install's start) flushes it first, WAL being written in order.
    if (wait) {
      await trx.raw(`select pg_advisory_xact_lock(?, hashtext(?)), ${SOFT_COMMIT_SQL}`, [LOCK_SPACE, target]);
      rows = ((await trx.raw(`delete from refresh_requests where target = ? returning cluster_id, infra_env_id, host_id, ${WAITED_SQL}`, [target])) as { rows: Array<RequestRow & Claimed> }).rows;
    } else {
      // Lock and claim in one round trip: a row is deleted only where the lock was had. Held by another
      // refresher, the condition fails before any row lock is taken (nothing waits) and nothing comes back,
      // as when nothing is pending: either way this round leaves the target.
      const taken = (await trx.raw(
        `delete from refresh_requests where target = ? and pg_try_advisory_xact_lock(?, hashtext(?)) and ${SOFT_COMMIT_SQL} is not null returning cluster_id, infra_env_id, host_id, ${WAITED_SQL}`,
        [target, LOCK_SPACE, target],
      )) as { rows: Array<RequestRow & Claimed> };
      rows = taken.rows;
    }
    const r = rows[0];
    if (!r) return false;
    claimed(rows);
    if (r.cluster_id) await refreshCluster(ctx, trx, r.cluster_id);
    else {
      const host = await ctx.repos.hosts.getForUpdate({ infraEnvId: r.infra_env_id!, hostId: r.host_id! }, trx);
      // Bound to a cluster since it was marked: the binding marked (or refreshed) the cluster.
      if (host && !host.cluster_id) await refreshUnboundHost(ctx, trx, host);
    }
    return true;
  });
}

// CASE orders the evaluation: PostgreSQL sorts plain conditions by cost, and an array match costs more
// than the lock function, so without it a scan could try the lock of every pending target, not only these.
// Run without knex's builder (hotQuery): one of the statements every refresh makes.
// With the claim, the same statement reads and locks the claimed clusters (as refreshCluster's own read would): one
// round trip fewer in every batch, whose refresher waits for a core after each (bench/README.md, 2026-11-30).
// The claimed rows come as one JSON text on every row (a row with only that when no cluster was claimed).
const CLAIM_BATCH_SQL = `with claimed as (delete from refresh_requests where target = any($1::text[])
                           and case when target = any($1::text[]) then pg_try_advisory_xact_lock($2, hashtext(target)) and ${SOFT_COMMIT_SQL} is not null else false end
                         returning target, cluster_id, infra_env_id, host_id, ${WAITED_SQL})
                         select cl.j::text as lf_claimed, k.*
                           from (select json_agg(claimed) as j from claimed) cl
                           left join (${lockedClustersSql('c.id in (select cluster_id from claimed)', '$3')}) k on true`;

/**
 * Refreshes several targets in one transaction: claims those no other
 * refresher holds (each its advisory lock, as refreshTarget), then reads and
 * refreshes their clusters together (refreshLockedClusters: a handful of
 * statements for the batch instead of a handful per target). The targets
 * claimed. A failure rolls the whole batch back; its requests stay.
 */
async function refreshBatch(ctx: ServiceContext, targets: string[]): Promise<string[]> {
  return reported(ctx, 'refresher', async (trx, claimed) => {
    const read = await hotQuery<Partial<LockedClusterRow> & { lf_claimed: string | null }>(trx, CLAIM_BATCH_SQL, [targets, LOCK_SPACE, SHED_EPISODE_JOIN.name]);
    const rows = JSON.parse(read[0]?.lf_claimed ?? '[]') as Array<RequestRow & Claimed>;
    if (rows.length) claimed(rows);
    // Each row a claimed cluster, locked (none: the one row has only the claim).
    const locked = read.flatMap(({ lf_claimed: _c, ...cluster }) => (cluster.id ? [cluster as LockedClusterRow] : []));
    if (locked.length) await refreshLockedClusters(ctx, trx, locked);
    const unbound = new Map(rows.filter((r) => !r.cluster_id).map((r) => [r.target, r]));
    for (const r of unbound.values()) {
      const host = await ctx.repos.hosts.getForUpdate({ infraEnvId: r.infra_env_id!, hostId: r.host_id! }, trx);
      if (host && !host.cluster_id) await refreshUnboundHost(ctx, trx, host);
    }
    return [...new Set(rows.map((r) => r.target))];
  });
}

/**
 * Refreshes a target now if nothing holds it (no refresher, no other
 * transaction on its cluster row), never waiting; otherwise asks for its
 * refresh, which whoever holds it covers or the refresher runs next. Whether
 * it ran. For a request that would like the refresh before it answers (a
 * disconnected host polling again) but must not queue behind one: under a
 * boot storm those waits, each holding a pooled connection, took the pool.
 */
export async function refreshNowOrRequest(ctx: ServiceContext, target: RefreshTarget): Promise<boolean> {
  const key = targetKey(target);
  return reported(ctx, 'agent', async (trx, claimed) => {
    // The lock and the claim of what is pending in one statement, as a refresher claims (refreshTarget).
    const { rows } = (await trx.raw(
      `with l as (select pg_try_advisory_xact_lock(?, hashtext(?)) as ok), d as (delete from refresh_requests where target = ? and (select ok from l) returning requested_at) select (select ok from l) as ok, (select max(date_part('epoch', clock_timestamp() - requested_at)) from d) as waited_s`,
      [LOCK_SPACE, key, key],
    )) as { rows: Array<{ ok: boolean; waited_s: number | null }> };
    const free = rows[0]!.ok && ('clusterId' in target ? ((await trx.raw('select 1 from clusters where id = ? for no key update skip locked', [target.clusterId])) as { rows: unknown[] }).rows.length > 0 : true);
    if (!free) {
      // Rolled back with it is only what this transaction did (its claim); the request goes in on its own.
      await requestRefresh(trx, target);
      return false;
    }
    claimed(rows[0]!.waited_s === null ? [] : [{ waited_s: rows[0]!.waited_s }]);
    if ('clusterId' in target) await refreshCluster(ctx, trx, target.clusterId);
    else {
      const host = await ctx.repos.hosts.getForUpdate({ infraEnvId: target.infraEnvId, hostId: target.hostId }, trx);
      if (host && !host.cluster_id) await refreshUnboundHost(ctx, trx, host);
    }
    return true;
  });
}

/**
 * How many targets one refresher refreshes at a time, each in its own
 * transaction on its own connection (targets are independent: an advisory
 * lock each). One, measured: at 5,000 hosts and 1,700 agent requests/s on
 * two cores (bench/agent-api), 1 lane gave poll p99 54 ms and report →
 * validations p50 163 / p99 526 ms; 2 lanes 102 ms and 108 / 673 ms; 4
 * lanes 195 ms and 336 / 1,383 ms. More lanes refresh sooner but coalesce
 * less (more refreshes for the same reports) and their bursts of work hold
 * the event loop that answers polls.
 */
export const REFRESH_CONCURRENCY = 1;

/**
 * At most this many targets in one refresh transaction (REFRESH_BATCH_TARGETS,
 * a setting; src/config.ts has its default, 8). A batch shares its
 * statements: one claim, one read of its clusters, one of their hosts' light
 * columns, one of the large ones that changed, one write of every host it
 * changes (bench/refresh-cost, 8 clusters pending, same session: API CPU per
 * refresh 3.25 ms → 2.33 ms, PostgreSQL 1.56 → 0.74 ms, 7.3 → 1.1
 * statements). A batch forms only when targets wait (the refresher is
 * behind); alone, a target is refreshed alone. It was 1 while a refresh
 * wrote each host as it computed it: a batch then held the rows it wrote
 * until it committed, and polls of those hosts waited (at 20,000 hosts,
 * batches of 4 made most hosts go disconnected in bench/fleet-real). Now the
 * hosts are written together at the end (refresh-service.ts), so a row is
 * locked only from that one statement to the commit, and a batch takes no
 * more clusters once it writes 50 hosts (BATCH_HOST_WRITES): booting
 * clusters, which write most of their hosts, are refreshed about one at a
 * time still.
 */
export { REFRESH_BATCH_TARGETS };

/**
 * A drain's read of the queue: up to 16 targets whose first request has
 * waited its window (`$2` ms; the facts that arrive meanwhile share the
 * refresh), oldest first, leaving out those another refresher holds (`$1`);
 * and, in the same round trip, how long until the oldest pending request's
 * window ends (≤ 0: due now), counting held targets too — what the refresher
 * reads when a drain ends, to know its next turn (it was a statement of its
 * own, after every drain). A fixed text without knex's builder (hotQuery).
 */
const DRAIN_READ_SQL = `with g as (select target, min(id) as first, (extract(epoch from min(requested_at) - clock_timestamp()) * 1000)::float8 + $2 as wait_ms
                                  from refresh_requests group by target)
                        select (select min(wait_ms) from g) as next_ms,
                               (select array_agg(target order by first) from (select target, first from g where wait_ms <= 0 and not (target = any($1::text[]))
                                                                               order by first limit 16) d) as due`;

/** Refreshes pending targets, oldest first, until none is left or `budget` were done; how many were done. */
export async function drainRefreshRequests(ctx: ServiceContext, budget = Infinity, logger?: Logger, minAgeMs = 0, concurrency = 1, batchTargets = REFRESH_BATCH_TARGETS): Promise<number> {
  return (await drainQueue(ctx, { budget, logger, minAgeMs, concurrency, batchTargets })).done;
}

/**
 * drainRefreshRequests, also saying when the next request's window ends as
 * the last read of the queue found it (ms from that read; ≤ 0: one was due
 * but held by another refresher; undefined: none pending, or the budget
 * ended the drain). `beforeRead` runs before each read of the queue.
 */
async function drainQueue(
  ctx: ServiceContext,
  o: { budget: number; logger?: Logger; minAgeMs: number; concurrency: number; batchTargets: number; beforeRead?: () => void },
): Promise<{ done: number; nextMs: number | undefined }> {
  const { budget, logger, minAgeMs, concurrency, batchTargets } = o;
  let done = 0;
  let nextMs: number | undefined;
  const busy = new Set<string>();
  while (done < budget) {
    o.beforeRead?.();
    const read = (await hotQuery<{ next_ms: number | null; due: string[] | null }>(ctx.db, DRAIN_READ_SQL, [[...busy], minAgeMs]))[0];
    const batch = (read?.due ?? []).slice(0, Math.max(0, budget - done));
    if (!batch.length) {
      nextMs = read?.next_ms ?? undefined;
      break;
    }
    // Each lane refreshes its share of the batch in one transaction (refreshBatch).
    const laneCount = Math.min(Math.max(1, concurrency), batch.length);
    const shares = Array.from({ length: laneCount }, (_, i) => batch.filter((_, j) => j % laneCount === i));
    const lane = async (share: string[]): Promise<void> => {
      for (let i = 0; i < share.length; i += batchTargets) await refreshChunk(share.slice(i, i + batchTargets));
    };
    const refreshChunk = async (targets: string[]): Promise<void> => {
      let claimed: string[];
      try {
        claimed = await refreshBatch(ctx, targets);
      } catch (err) {
        // One target that fails must not hold back the others of its batch: one at a time, then the failure is passed on.
        logger?.warn({ err: (err as Error).message, targets: targets.length }, 'batched refresh failed; refreshing its targets one at a time');
        claimed = [];
        let failure: unknown;
        for (const target of targets) {
          try {
            if (await refreshTarget(ctx, target, false, 'refresher')) claimed.push(target);
          } catch (e) {
            logger?.warn({ err: (e as Error).message, target }, 'refresh failed; its request stays for the next round');
            failure ??= e;
          }
        }
        if (failure) throw failure;
      }
      done += claimed.length;
      // Not claimed: held by another refresher, which covers it; leave it for this round.
      for (const t of targets) if (!claimed.includes(t)) busy.add(t);
    };
    const lanes = shares.map(lane);
    // Every lane ends before a failure is passed on: no refresh is left running behind the caller.
    const outcomes = await Promise.allSettled(lanes);
    const failed = outcomes.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }
  return { done, nextMs };
}

/**
 * Waits out any refresh of these targets in flight (a shared advisory lock,
 * taken and released in one statement, waits for a refresher's exclusive
 * one), then runs what is still pending. Keys in sorted order everywhere, so
 * readers settling overlapping sets never wait in a circle.
 */
async function settle(ctx: ServiceContext, keys: string[]): Promise<boolean> {
  if (!keys.length) return false;
  const sorted = [...new Set(keys)].sort();
  await ctx.db.raw('select count(pg_advisory_xact_lock_shared(?, hashtext(t))) from (select t from unnest(?::text[]) as t order by t) s', [LOCK_SPACE, sorted]);
  const pending = ((await ctx.db('refresh_requests').whereIn('target', sorted).distinct('target')) as Array<{ target: string }>).map((r) => r.target).sort();
  for (const t of pending) await refreshTarget(ctx, t, true, 'read');
  return pending.length > 0;
}

/**
 * A user reading these clusters sees their agents' facts validated: pending
 * refreshes run now, one in flight is waited for. Nothing pending costs two
 * indexed queries.
 */
export function settleClusters(ctx: ServiceContext, clusterIds: string[]): Promise<boolean> {
  return settle(ctx, clusterIds.map((id) => targetKey({ clusterId: id })));
}

/** The same for hosts: their clusters, or the hosts themselves when unbound. */
export function settleHosts(ctx: ServiceContext, hosts: Array<{ id: string; infra_env_id: string; cluster_id: string | null }>): Promise<boolean> {
  return settle(ctx, hosts.map((h) => targetKey(targetOfHost(h))));
}

/** Every target an infra-env's hosts belong to. */
export async function settleInfraEnv(ctx: ServiceContext, infraEnvId: string): Promise<boolean> {
  const hosts = (await ctx.db('hosts').where({ infra_env_id: infraEnvId }).select('id', 'infra_env_id', 'cluster_id')) as Array<{ id: string; infra_env_id: string; cluster_id: string | null }>;
  return settleHosts(ctx, hosts);
}

/** Whether this caller reads as a person (a user or an administrator: the UI, the CLI, the operator), not as an agent. */
export function readsAsPerson(p: { kind: string }): boolean {
  return p.kind === 'user' || p.kind === 'admin';
}

export interface Refresher {
  /** Resolves when nothing was pending at some moment after the call (tests, benchmarks). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The refresher of one API process: LISTENs on REFRESH_CHANNEL and drains the
 * queue when a request's turn comes (its coalescing window, `minAgeMs`, has
 * passed), and every `sweepMs` in case a notification was missed (a LISTEN
 * connection lost, a request put back after a failure).
 *
 * A notification only says "a request was made": its turn is `minAgeMs` from
 * now, so it sets a timer, and none when one is set already for an earlier
 * turn. It used to drain at once, find the request too young and drain again
 * later: at 1,700 agent requests/s (170 replies/s that ask for a refresh)
 * that was two queue reads per reply that refreshed nothing. After a drain
 * the next turn is read from the queue (its oldest request), so requests that
 * arrived while it ran are not left waiting for a notification.
 */
export function startRefresher(ctx: ServiceContext, databaseUrl: string, logger?: Logger, opts: { sweepMs?: number; minAgeMs?: number; concurrency?: number; batchTargets?: number } = {}): Refresher {
  const sweepMs = opts.sweepMs ?? 1000;
  const minAgeMs = opts.minAgeMs ?? COALESCE_MS;
  let closed = false;
  let running: Promise<void> | undefined;
  let again = false;
  /** A notification came while the next turn was being read. */
  let woken = false;
  let listener: Client | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let turnTimer: NodeJS.Timeout | undefined;
  let turnAt = Infinity;
  const idleWaiters: Array<() => void> = [];

  /** A drain at `at` (epoch ms), unless one is due sooner. */
  const schedule = (at: number): void => {
    if (closed || at >= turnAt) return;
    clearTimeout(turnTimer);
    turnAt = at;
    turnTimer = setTimeout(
      () => {
        turnTimer = undefined;
        turnAt = Infinity;
        run();
      },
      Math.max(0, at - Date.now()),
    );
  };

  /**
   * The next turn after a drain: when the oldest pending request's window
   * ends, by the database's clock as the drain's last read found it (nextMs;
   * undefined: none pending).
   */
  const nextTurn = (inMs: number | undefined): number | undefined => {
    if (inMs === undefined) return undefined;
    // Past its window after a drain: it came due while the drain ended, or another refresher holds it (and covers it).
    // Either way soon, but not at once: a target held for a while must not make this refresher spin.
    return Date.now() + (inMs > 0 ? inMs + 1 : Math.max(10, minAgeMs / 5));
  };

  const run = (): void => {
    if (closed) return;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        try {
          const { nextMs } = await drainQueue(ctx, {
            budget: Infinity,
            logger,
            minAgeMs,
            concurrency: opts.concurrency ?? REFRESH_CONCURRENCY,
            batchTargets: opts.batchTargets ?? REFRESH_BATCH_TARGETS,
            // A notification counts from the read that may not have seen its request: the last one, which ends the drain.
            beforeRead: () => (woken = false),
          });
          // Requests younger than the window, some made while the drain ran: a drain when the oldest one's turn comes.
          const at = nextTurn(nextMs);
          if (at !== undefined) schedule(at);
          // One made while the queue was read comes due a window from now at the latest (a turn set sooner covers it).
          // Not read again: under a stream of reports that would loop here, and a turn that came due could not drain.
          if (woken) schedule(Date.now() + minAgeMs);
        } catch (err) {
          // Put back by refreshClaimed; the sweep retries (a dependency outage must not spin).
          logger?.warn({ err: (err as Error).message }, 'refresher round failed; retrying at the next sweep');
          break;
        }
      } while (again && !closed);
    })().finally(() => {
      running = undefined;
      if (!again) for (const w of idleWaiters.splice(0)) w();
      else run();
    });
  };

  /** A request was made: its turn is a window from now (a drain running reads the next turn when it ends). */
  const wake = (): void => {
    if (closed) return;
    if (running) woken = true;
    else schedule(Date.now() + minAgeMs);
  };

  const connect = async (): Promise<void> => {
    if (closed) return;
    const client = new Client({ connectionString: databaseUrl });
    client.on('notification', wake);
    const retry = () => {
      if (listener === client) listener = undefined;
      client.end().catch(() => undefined);
      if (!closed) retryTimer = setTimeout(() => void connect(), 2000);
    };
    client.on('error', (err) => {
      logger?.warn({ err: err.message }, 'refresh wake-up connection lost; the refresher sweeps until it is back');
      retry();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${REFRESH_CHANNEL}`);
      listener = client;
      run();
    } catch (err) {
      logger?.warn({ err: (err as Error).message }, 'refresh wake-up connection failed; the refresher sweeps until it is back');
      retry();
    }
  };
  void connect();
  const sweep = setInterval(run, sweepMs);
  sweep.unref();

  return {
    idle() {
      return new Promise((resolve) => {
        idleWaiters.push(resolve);
        run();
      });
    },
    async close() {
      closed = true;
      clearInterval(sweep);
      clearTimeout(turnTimer);
      clearTimeout(retryTimer);
      await running?.catch(() => undefined);
      await listener?.end().catch(() => undefined);
      for (const w of idleWaiters.splice(0)) w();
    },
  };
}
