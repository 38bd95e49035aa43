/**
 * The poll lane (src/db/poll-lane.ts) on a real PostgreSQL: check-ins go out
 * on its one pipelined connection; a held row is skipped there and checked
 * in through the pool once free, without holding back the polls behind it;
 * the check-ins of one turn of the event loop go out as one statement in one write;
 * a host polled twice in a turn is answered twice;
 * a lane whose backend is killed is replaced while every poll is answered;
 * a missing host is missing; a paced lane (gatherMs) sends at most one
 * batch per gatherMs, and at once after a quiet spell; destroying the
 * database ends the lane's connection.
 */
import { randomUUID } from 'node:crypto';
import { Socket } from 'node:net';
import { createDb, laneBatched, type Db } from '../../src/db/database';
import { migrateLatest } from '../../src/db/migrations';
import { createHostsRepo } from '../../src/db/hosts-repo';
import { createInfraEnvsRepo } from '../../src/db/infra-envs-repo';
import { POLL_LANE_APPLICATION_NAME } from '../../src/db/poll-lane';
import { startTestPostgres } from '../support/services';
import type { EmbeddedPg } from '../../src/dev/embedded-postgres';

let pg: EmbeddedPg;
let db: Db;
/** Another pool, no lane: the observer (pg_stat_activity) and the lock holder. */
let other: Db;
const infraEnvId = randomUUID();
const ids = Array.from({ length: 6 }, () => randomUUID());
/** Per check-in sent, where it went ('lane' once for each row a lane statement carried). */
const sent: string[] = [];
/** Rows per lane statement, in order. */
const laneStatements: number[] = [];

beforeAll(async () => {
  pg = await startTestPostgres('poll_lane');
  db = createDb(pg.url, 4, undefined, undefined, { pollLane: true });
  other = createDb(pg.url, 2);
  await migrateLatest(other);
  await createInfraEnvsRepo(other).insert({ id: infraEnvId, owner: 'u', name: 'ie', cluster_id: null, pull_secret: null, doc: {} });
  for (const id of ids) await createHostsRepo(other).insert({ id, infra_env_id: infraEnvId, status: 'discovering', status_info: 'x', doc: {} });
  db.on('query', (q: { sql: string; bindings: unknown[] }) => {
    if (!/^update hosts set\s+checked_in_at/.test(q.sql)) return;
    if (!/skip locked/.test(q.sql)) return void sent.push('pool');
    // The lane's statement carries a turn's check-ins, its parameters one array per column.
    const rows = (q.bindings[0] as unknown[]).length;
    laneStatements.push(rows);
    for (let i = 0; i < rows; i++) sent.push('lane');
  });
}, 120_000);
afterAll(async () => {
  await db?.destroy();
  await other?.destroy();
  await pg?.stop();
});

const laneBackends = async () => (await other.raw<{ rows: Array<{ pid: number; query: string }> }>('select pid, query from pg_stat_activity where application_name = ?', [POLL_LANE_APPLICATION_NAME])).rows;
const checkIn = (id: string, version: string) => createHostsRepo(db).checkIn({ infraEnvId, hostId: id }, 1_700_000_000, version, new Date());

describe('the poll lane', () => {
  it('carries the check-ins of a turn on its own connection in one statement, and writes what the pool statement writes', async () => {
    sent.length = 0;
    laneStatements.length = 0;
    const answers = await Promise.all(ids.map((id, i) => checkIn(id, `v${i}`)));
    expect(answers.map((a) => a?.agentVersion)).toEqual(ids.map((_, i) => `v${i}`));
    expect(sent).toEqual(ids.map(() => 'lane'));
    expect(laneStatements).toEqual([ids.length]);
    const lanes = await laneBackends();
    expect(lanes).toHaveLength(1);
    // The lane's backend last ran the check-in (pg_stat_activity keeps the first 1 KB of it).
    expect(lanes[0]!.query).toMatch(/^update hosts set\s+checked_in_at = v.c1/);
    // Planned once per connection, as the pool's connections are (src/db/plan-cache-mode.ts).
    expect(await laneBatched<{ plan_cache_mode: string }>(db, "select n, current_setting('plan_cache_mode') as plan_cache_mode from unnest($1::int[]) with ordinality as u(c1, n)", 1, [1])).toMatchObject({ plan_cache_mode: 'force_generic_plan' });
    // Each host its own values: the rows of the batch were not mixed up.
    const rows = await other('hosts').whereIn('id', ids).select('id', 'discovery_agent_version', 'agent_timestamp');
    expect(Object.fromEntries(rows.map((r: { id: string; discovery_agent_version: string }) => [r.id, r.discovery_agent_version]))).toEqual(Object.fromEntries(ids.map((id, i) => [id, `v${i}`])));
    for (const r of rows) expect(Number(r.agent_timestamp)).toBe(1_700_000_000);
  });

  it('answers a host polled twice in one turn twice: one row on the lane, the other through the pool', async () => {
    sent.length = 0;
    laneStatements.length = 0;
    const before = await other('hosts').where({ id: ids[2] }).first('checked_in_at');
    const [a, b] = await Promise.all([checkIn(ids[2]!, 'first'), checkIn(ids[2]!, 'second')]);
    expect(a?.status).toBe('discovering');
    expect(b?.status).toBe('discovering');
    expect(laneStatements).toEqual([2]);
    expect(sent.filter((s) => s === 'pool')).toHaveLength(1);
    const after = await other('hosts').where({ id: ids[2] }).first('checked_in_at', 'discovery_agent_version');
    expect(['first', 'second']).toContain(after.discovery_agent_version);
    expect(new Date(after.checked_in_at).getTime()).toBeGreaterThan(new Date(before.checked_in_at).getTime());
  });

  it('answers each row of a batched statement with its own row, in whatever order they come back', async () => {
    const text = 'select n, c1 from unnest($1::text[]) with ordinality as u(c1, n) order by n desc';
    const answers = await Promise.all(['a', 'b', 'c'].map((v) => laneBatched<{ c1: string }>(db, text, 1, [v])));
    expect(answers.map((a) => a?.c1)).toEqual(['a', 'b', 'c']);
  });

  it('answers every row of a batched statement that fails with nothing (each then goes to the pool)', async () => {
    const text = 'select n, c1::int as v from unnest($1::text[]) with ordinality as u(c1, n)';
    const answers = await Promise.all(['1', 'two', '3'].map((v) => laneBatched<{ v: number }>(db, text, 1, [v])));
    expect(answers).toEqual([undefined, undefined, undefined]);
    // The lane itself still works: the next turn's batch is answered.
    expect((await laneBatched<{ v: number }>(db, text, 1, ['4']))?.v).toBe(4);
  });

  it('sends the check-ins of one turn of the event loop as one statement in one write', async () => {
    await checkIn(ids[0]!, 'warm');
    // Every write to any socket, counted where Node hands it to the system: only the lane's is written to meanwhile.
    const writes = new Map<Socket, number[]>();
    const proto = Socket.prototype as unknown as Record<'_writev' | '_write', (...args: unknown[]) => unknown>;
    const original = { _writev: proto._writev, _write: proto._write };
    for (const k of ['_writev', '_write'] as const) {
      proto[k] = function (this: Socket, ...args: unknown[]) {
        writes.set(this, [...(writes.get(this) ?? []), k === '_writev' ? (args[0] as unknown[]).length : 1]);
        return original[k].apply(this, args);
      };
    }
    try {
      sent.length = 0;
      laneStatements.length = 0;
      const answers = await Promise.all(ids.map((id) => checkIn(id, 'together')));
      expect(answers.map((a) => a?.agentVersion)).toEqual(ids.map(() => 'together'));
      expect(sent).toEqual(ids.map(() => 'lane'));
      expect(laneStatements).toEqual([ids.length]);
    } finally {
      Object.assign(proto, original);
    }
    // One statement (a bind, describe, execute and sync), one write.
    const perSocket = [...writes.values()];
    expect(perSocket).toHaveLength(1);
    expect(perSocket[0]).toHaveLength(1);
  });

  it('skips a held row, answers the polls behind it, and checks the held host in through the pool once free', async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holder = other.transaction(async (trx) => {
      await trx('hosts').where({ id: ids[0] }).forNoKeyUpdate().first('id');
      locked();
      await released;
    });
    await isLocked;
    sent.length = 0;
    const held = checkIn(ids[0]!, 'held');
    // Sent after the held one on the same pipeline: answered while the row is still held.
    const behind = Promise.all(ids.slice(1).map((id) => checkIn(id, 'behind')));
    const answeredWhileHeld = await Promise.race([behind.then(() => true), new Promise((r) => setTimeout(() => r(false), 30_000).unref())]);
    expect(answeredWhileHeld).toBe(true);
    let heldDone = false;
    void held.then(() => (heldDone = true));
    await new Promise((r) => setTimeout(r, 200));
    expect(heldDone).toBe(false);
    release();
    await holder;
    expect((await held)?.agentVersion).toBe('held');
    // The held host: the lane first (nothing), then the pool; every other host on the lane alone.
    expect(sent.filter((s) => s === 'pool')).toHaveLength(1);
    expect(sent.filter((s) => s === 'lane')).toHaveLength(ids.length);
  });

  it('answers a missing host with nothing, through the pool', async () => {
    sent.length = 0;
    expect(await checkIn(randomUUID(), 'ghost')).toBeUndefined();
    expect(sent).toEqual(['lane', 'pool']);
  });

  it('answers every poll while its backend is killed, and comes back on a new connection', async () => {
    const [before] = await laneBackends();
    expect(before).toBeDefined();
    await other.raw('select pg_terminate_backend(?)', [before!.pid]);
    // Each poll is answered, by the lane or the pool, while the lane notices and reconnects.
    for (let i = 0; i < 20; i++) expect((await checkIn(ids[i % ids.length]!, `k${i}`))?.agentVersion).toBe(`k${i}`);
    const deadline = Date.now() + 30_000;
    let after = await laneBackends();
    while (!(after.length === 1 && after[0]!.pid !== before!.pid) && Date.now() < deadline) {
      await checkIn(ids[1]!, 'again');
      await new Promise((r) => setTimeout(r, 100));
      after = await laneBackends();
    }
    expect(after).toHaveLength(1);
    expect(after[0]!.pid).not.toBe(before!.pid);
    sent.length = 0;
    expect((await checkIn(ids[2]!, 'back'))?.agentVersion).toBe('back');
    expect(sent).toEqual(['lane']);
  });

  it('paced: a batch that comes sooner than gatherMs after the last waits for the rest of it and carries every check-in given meanwhile; after a quiet spell one goes at once', async () => {
    const GATHER_MS = 300;
    const paced = createDb(pg.url, 2, undefined, undefined, { pollLane: true, pollLaneGatherMs: GATHER_MS });
    // When each lane statement left, and how many check-ins it carried.
    const statements: Array<{ at: number; rows: number }> = [];
    paced.on('query', (q: { sql: string; bindings: unknown[] }) => {
      if (/skip locked/.test(q.sql)) statements.push({ at: performance.now(), rows: (q.bindings[0] as unknown[]).length });
    });
    const pacedCheckIn = (id: string, version: string) => createHostsRepo(paced).checkIn({ infraEnvId, hostId: id }, 1_700_000_000, version, new Date());
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    try {
      // The lane connected (its first statement waits for the connection, which would blur the times below).
      expect((await pacedCheckIn(ids[5]!, 'warm'))?.agentVersion).toBe('warm');
      // A quiet spell longer than GATHER_MS: the next poll's statement leaves in its own turn, not GATHER_MS later.
      await sleep(GATHER_MS + 50);
      statements.length = 0;
      const asked = performance.now();
      expect((await pacedCheckIn(ids[0]!, 'p0'))?.agentVersion).toBe('p0');
      expect(statements.map((s) => s.rows)).toEqual([1]);
      expect(statements[0]!.at - asked).toBeLessThan(GATHER_MS / 2);
      // Three polls in three turns, 20 ms apart, all sooner than GATHER_MS after it: one statement for the three,
      // GATHER_MS after the last (setTimeout counts whole milliseconds: a millisecond of slack).
      const later: Array<Promise<unknown>> = [];
      for (const [k, id] of ids.slice(1, 4).entries()) {
        later.push(pacedCheckIn(id, `p${k + 1}`));
        await sleep(20);
      }
      const answers = (await Promise.all(later)) as Array<{ agentVersion: string } | undefined>;
      expect(answers.map((a) => a?.agentVersion)).toEqual(['p1', 'p2', 'p3']);
      expect(statements.map((s) => s.rows)).toEqual([1, 3]);
      expect(statements[1]!.at - statements[0]!.at).toBeGreaterThanOrEqual(GATHER_MS - 1);
      // What each poll wrote is its own.
      const rows = await other('hosts').whereIn('id', ids.slice(0, 4)).select('id', 'discovery_agent_version');
      expect(Object.fromEntries(rows.map((r: { id: string; discovery_agent_version: string }) => [r.id, r.discovery_agent_version]))).toEqual(Object.fromEntries(ids.slice(0, 4).map((id, i) => [id, `p${i}`])));
    } finally {
      await paced.destroy();
    }
  });

  it('ends its connection with the database', async () => {
    const mine = createDb(pg.url, 1, undefined, undefined, { pollLane: true });
    const before = (await laneBackends()).length;
    await createHostsRepo(mine).checkIn({ infraEnvId, hostId: ids[3]! }, undefined, 'mine', new Date());
    expect((await laneBackends()).length).toBe(before + 1);
    await mine.destroy();
    const deadline = Date.now() + 30_000;
    while ((await laneBackends()).length !== before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect((await laneBackends()).length).toBe(before);
  });
});
