/**
 * The poll lane (src/db/poll-lane.ts) on a real PostgreSQL: check-ins go out
 * on its one pipelined connection; a held row is skipped there and checked
 * in through the pool once free, without holding back the polls behind it;
 * the statements of one turn of the event loop go out in one write;
 * a lane whose backend is killed is replaced while every poll is answered;
 * a missing host is missing; destroying the database ends the lane's
 * connection.
 */
import { randomUUID } from 'node:crypto';
import { Socket } from 'node:net';
import { createDb, laneQuery, type Db } from '../../src/db/database';
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
const sent: string[] = [];

beforeAll(async () => {
  pg = await startTestPostgres('poll_lane');
  db = createDb(pg.url, 4, undefined, undefined, { pollLane: true });
  other = createDb(pg.url, 2);
  await migrateLatest(other);
  await createInfraEnvsRepo(other).insert({ id: infraEnvId, owner: 'u', name: 'ie', cluster_id: null, pull_secret: null, doc: {} });
  for (const id of ids) await createHostsRepo(other).insert({ id, infra_env_id: infraEnvId, status: 'discovering', status_info: 'x', doc: {} });
  db.on('query', (q: { sql: string }) => {
    if (/^update hosts set\s+checked_in_at/.test(q.sql)) sent.push(/skip locked/.test(q.sql) ? 'lane' : 'pool');
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
  it('carries the check-in on its own connection, and writes what the pool statement writes', async () => {
    sent.length = 0;
    const answers = await Promise.all(ids.map((id, i) => checkIn(id, `v${i}`)));
    expect(answers.map((a) => a?.agentVersion)).toEqual(ids.map((_, i) => `v${i}`));
    expect(sent).toEqual(ids.map(() => 'lane'));
    const lanes = await laneBackends();
    expect(lanes).toHaveLength(1);
    expect(lanes[0]!.query).toMatch(/skip locked/);
    // Planned once per connection, as the pool's connections are (src/db/plan-cache-mode.ts).
    expect(await laneQuery<{ plan_cache_mode: string }>(db, 'show plan_cache_mode', [])).toEqual([{ plan_cache_mode: 'force_generic_plan' }]);
    const row = await other('hosts').where({ infra_env_id: infraEnvId, id: ids[0] }).first('discovery_agent_version', 'agent_timestamp');
    expect(row).toMatchObject({ discovery_agent_version: 'v0' });
    expect(Number(row.agent_timestamp)).toBe(1_700_000_000);
  });

  it('sends the statements of one turn of the event loop in one write', async () => {
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
      const answers = await Promise.all(ids.map((id) => checkIn(id, 'together')));
      expect(answers.map((a) => a?.agentVersion)).toEqual(ids.map(() => 'together'));
      expect(sent).toEqual(ids.map(() => 'lane'));
    } finally {
      Object.assign(proto, original);
    }
    // Six statements (each a bind, describe, execute and sync), one write; pg alone wrote once per statement.
    const perSocket = [...writes.values()];
    expect(perSocket).toHaveLength(1);
    expect(perSocket[0]).toHaveLength(1);
    expect(perSocket[0]![0]).toBeGreaterThanOrEqual(ids.length * 4);
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
    const answeredWhileHeld = await Promise.race([behind.then(() => true), new Promise((r) => setTimeout(() => r(false), 5000).unref())]);
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
    const deadline = Date.now() + 5000;
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

  it('ends its connection with the database', async () => {
    const mine = createDb(pg.url, 1, undefined, undefined, { pollLane: true });
    const before = (await laneBackends()).length;
    await createHostsRepo(mine).checkIn({ infraEnvId, hostId: ids[3]! }, undefined, 'mine', new Date());
    expect((await laneBackends()).length).toBe(before + 1);
    await mine.destroy();
    const deadline = Date.now() + 5000;
    while ((await laneBackends()).length !== before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect((await laneBackends()).length).toBe(before);
  });
});
