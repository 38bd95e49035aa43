/**
 * The running totals behind /metrics' event counters
 * (src/db/event-tallies-repo.ts): a scrape counts each event once, the totals
 * move on only past events that are final, and an event whose transaction
 * commits after a later one's is still counted, once.
 */
import type { Registry } from 'prom-client';
import { eventTallies } from '../../src/db/event-tallies-repo';
import { createMetrics } from '../../src/metrics';
import { startTestServiceContext, type TestServiceContext } from '../support/service-context';
import type { Db } from '../../src/db/database';

let t: TestServiceContext;
let registry: Registry;

beforeAll(async () => {
  t = await startTestServiceContext('event-tallies');
  registry = createMetrics(t.db).registry;
});
afterAll(async () => {
  await t?.stop();
});

/** An event as the service records one (the sequence's default, the writer's transaction id), its seq. */
async function record(q: Db, name: string, props: Record<string, string>, clusterId: string | null = null): Promise<number> {
  const r = await q.raw("insert into events (name, severity, message, props, cluster_id) values (?, 'warning', 'x', ?::jsonb, ?) returning seq", [name, JSON.stringify(props), clusterId]);
  return Number(r.rows[0].seq);
}
const failed = (id: string) => ({ validation_id: id });
async function validationFailures(): Promise<Record<string, number>> {
  const v = (await registry.getSingleMetric('landfall_host_validation_failures_total')!.get()).values;
  return Object.fromEntries(v.map((x) => [String(x.labels.validation_id), x.value]));
}
const tallyRow = async () => (await t.db.raw('select upto::int as upto, cand_upto::int as cand from event_tallies')).rows[0] as { upto: number; cand: number | null };

it('counts every event once, scrape after scrape, while the totals move on', async () => {
  expect(await validationFailures()).toEqual({});
  for (const id of ['ntp-synced', 'ntp-synced', 'has-min-memory']) await record(t.db, 'host_validation_failed', failed(id));
  await record(t.db, 'cluster_installation_failed', { failing_stage: 'Writing image to disk' });
  // Events the counters do not count stay out.
  await record(t.db, 'host_validation_fixed', failed('ntp-synced'));
  for (let i = 0; i < 4; i++) expect(await validationFailures()).toEqual({ 'ntp-synced': 2, 'has-min-memory': 1 });
  // By now the totals hold them: a scrape reads only what came after.
  expect((await tallyRow()).upto).toBeGreaterThanOrEqual(5);
  const installs = (await registry.getSingleMetric('landfall_installs_total')!.get()).values;
  expect(installs.map((x) => [x.labels, x.value])).toEqual([[{ outcome: 'failed', release: 'unknown', failing_stage: 'Writing image to disk' }, 1]]);
  await record(t.db, 'host_validation_failed', failed('has-min-memory'));
  expect(await validationFailures()).toEqual({ 'ntp-synced': 2, 'has-min-memory': 2 });
});

it('never moves past an event still in flight, and counts it once its transaction commits', async () => {
  const before = await validationFailures();
  const trx = await t.db.transaction();
  let later = 0;
  try {
    // This transaction takes the lower seq, a later one commits first.
    const held = await record(trx as unknown as Db, 'host_validation_failed', failed('in-flight'));
    later = await record(t.db, 'host_validation_failed', failed('committed-first'));
    expect(later).toBeGreaterThan(held);
    for (let i = 0; i < 4; i++) {
      expect(await validationFailures()).toEqual({ ...before, 'committed-first': 1 });
      // The totals stop short of the event in flight, whatever candidate waits.
      expect((await tallyRow()).upto).toBeLessThan(held);
    }
    await trx.commit();
  } catch (e) {
    await trx.rollback();
    throw e;
  }
  for (let i = 0; i < 4; i++) expect(await validationFailures()).toEqual({ ...before, 'committed-first': 1, 'in-flight': 1 });
  expect((await tallyRow()).upto).toBeGreaterThanOrEqual(later);
  // Moved past both once they were final, and still counted once each (the loop above read it four times).
  const total = (await eventTallies(t.db)).filter((r) => r.tally === 'host_validation_failures').reduce((a, r) => a + r.n, 0);
  expect(total).toBe(Object.values(before).reduce((a, n) => a + n, 0) + 2);
});
