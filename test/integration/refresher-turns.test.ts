/**
 * When the refresher drains (src/services/refresh-queue.ts startRefresher):
 * a request's notification sets a timer for its turn (its coalescing window
 * passed) instead of reading the queue at once, so a stream of reports does
 * not cost a queue read each; every request is still refreshed, never before
 * its window, and requests made while a drain runs are not left behind.
 */
import { randomUUID } from 'node:crypto';
import { requestRefresh, startRefresher, type Refresher } from '../../src/services/refresh-queue';
import { startTestServiceContext, type TestServiceContext } from '../support/service-context';
import { eventually } from '../support/services';

const WINDOW_MS = 1000;

let t: TestServiceContext;
let refresher: Refresher | undefined;
/** When each queue read of a drain (its grouped select) was sent. */
const drains: number[] = [];
const onQuery = (q: { sql: string }) => {
  if (/from "?refresh_requests"?/.test(q.sql) && /group by/.test(q.sql)) drains.push(Date.now());
};

beforeAll(async () => {
  t = await startTestServiceContext('refresher-turns');
  t.db.on('query', onQuery);
});
afterAll(async () => {
  await refresher?.close();
  t?.db.off('query', onQuery);
  await t?.stop();
});

/** Makes a request (its own commit and notification); when it was made, by this clock, before its row's clock_timestamp(). */
async function request(): Promise<{ target: string; made: number }> {
  const clusterId = randomUUID();
  const made = Date.now();
  await requestRefresh(t.db, { clusterId });
  return { target: `c:${clusterId}`, made };
}

it('drains at a request’s turn, not at its notification, and refreshes every request after its window', async () => {
  // A sweep that never comes in this test: only notifications and turns start a drain.
  refresher = startRefresher(t.ctx, t.pg.url, undefined, { minAgeMs: WINDOW_MS, sweepMs: 600_000 });
  await refresher.idle();
  // The LISTEN connection is up once a notification of ours reaches it: a request made until one is refreshed.
  const probe = await request();
  await eventually(async () => !(await t.db('refresh_requests').where({ target: probe.target }).first()), 10_000, 'the first request refreshed');
  // The row is gone at the refresh's commit; the drain around it reads the queue once more after that. Counted from here.
  await refresher.idle();
  drains.length = 0;

  // Twenty reports 20 ms apart, all inside the first one's window.
  const made: Array<{ target: string; made: number }> = [];
  for (let i = 0; i < 20; i++) {
    made.push(await request());
    await new Promise((r) => setTimeout(r, 20));
  }
  const gone = new Map<string, number>();
  await eventually(
    async () => {
      const left = new Set(((await t.db('refresh_requests').select('target')) as Array<{ target: string }>).map((r) => r.target));
      for (const m of made) if (!left.has(m.target) && !gone.has(m.target)) gone.set(m.target, Date.now());
      return gone.size === made.length;
    },
    15_000,
    'every request refreshed',
  );
  // No queue read before the first request's turn: a notification alone reads nothing (it used to read at once, each).
  expect(drains.length).toBeGreaterThan(0);
  expect(Math.min(...drains)).toBeGreaterThanOrEqual(made[0]!.made + WINDOW_MS - 5);
  // Never refreshed before its window passed.
  for (const m of made) expect(gone.get(m.target)! - m.made).toBeGreaterThanOrEqual(WINDOW_MS - 5);
});

it('refreshes a request made around its predecessor’s turn (while that drain may run), without a sweep', async () => {
  drains.length = 0;
  // Two requests close together: the second is made while the first one's turn drains, or just after it.
  const first = await request();
  const wait = first.made + WINDOW_MS - Date.now();
  await new Promise((r) => setTimeout(r, Math.max(0, wait)));
  const second = await request();
  await eventually(async () => !(await t.db('refresh_requests').where({ target: second.target }).first()), 10_000, 'the request made at the drain refreshed');
  expect(await t.db('refresh_requests').where({ target: first.target }).first()).toBeUndefined();
});
