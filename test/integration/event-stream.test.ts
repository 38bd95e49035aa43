/* eslint-disable @typescript-eslint/no-explicit-any -- SSE payloads are read loosely */
import http from 'node:http';
import { call, PULL_SECRET, startApiHarness, type ApiHarness } from '../support/api-harness';
import { EventWakeups } from '../../src/api/event-wakeups';
import { eventually } from '../support/services';

/** The live event stream: new events arrive as SSE, and a reconnect resumes after Last-Event-ID. */
let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(async () => {
  await h?.stop();
});

type StreamEvent = { id: string; name: string; data: any };

/**
 * Reads a stream until `until` holds. `opened` settles when the response
 * starts: the service sends its headers only after it has fixed the stream's
 * cursor, so a change made after it is one the stream must deliver.
 */
function readStream(url: string, headers: Record<string, string>, until: (events: StreamEvent[]) => boolean, timeoutMs = 15000): Promise<StreamEvent[]> & { opened: Promise<void> } {
  let opened!: () => void;
  const open = new Promise<void>((r) => (opened = r));
  const done = new Promise<StreamEvent[]>((resolve, reject) => {
    const events: StreamEvent[] = [];
    let buf = '';
    const req = http.get(url, { headers }, (res) => {
      opened();
      if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
      expect(res.headers['content-type']).toMatch(/text\/event-stream/);
      res.on('data', (chunk: Buffer) => {
        buf += chunk.toString();
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const id = /^id: (.*)$/m.exec(block)?.[1];
          const name = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (id && name && data) events.push({ id, name, data: JSON.parse(data) });
          if (until(events)) {
            req.destroy();
            resolve(events);
          }
        }
      });
    });
    req.on('error', (e) => (events.length && until(events) ? undefined : reject(e)));
    setTimeout(() => {
      req.destroy();
      reject(new Error(`stream: got ${events.length} events`));
    }, timeoutMs);
  });
  // A stream that fails before it starts settles `opened` too (its failure is the awaited stream's).
  return Object.assign(done, { opened: Promise.race([open, done.then(() => undefined, () => undefined)]) });
}

describe('GET /v2/events/stream', () => {
  it('streams a cluster\'s events as they happen and resumes after Last-Event-ID', async () => {
    const c = (await call('POST', `${h.base}/clusters`, { body: { name: 'sse', openshift_version: '1.31', pull_secret: PULL_SECRET } })).body;
    const first = readStream(`${h.base}/events/stream?cluster_id=${c.id}`, {}, (ev) => ev.some((e) => e.name === 'cluster_updated'));
    await first.opened;
    await call('PATCH', `${h.base}/clusters/${c.id}`, { body: { base_dns_domain: 'example.com' } });
    const events = await first;
    expect(events[0]!.name).toBe('cluster_registration_succeeded');
    expect(events.find((e) => e.name === 'cluster_updated')!.data.message).toMatch(/base_dns_domain/);
    const lastId = events.at(-1)!.id;
    await call('PATCH', `${h.base}/clusters/${c.id}`, { body: { base_dns_domain: 'example.org' } });
    const resumed = await readStream(`${h.base}/events/stream?cluster_id=${c.id}`, { 'Last-Event-ID': lastId }, (ev) => ev.some((e) => e.name === 'cluster_updated'));
    expect(Number(resumed[0]!.id)).toBeGreaterThan(Number(lastId));
    expect(resumed.every((e) => e.data.cluster_id === c.id)).toBe(true);
  });

  it('takes an empty Last-Event-ID as no cursor (it was a 400) and refuses one that is not an event id', async () => {
    const c = (await call('POST', `${h.base}/clusters`, { body: { name: 'sse-empty-id', openshift_version: '1.31', pull_secret: PULL_SECRET } })).body;
    const events = await readStream(`${h.base}/events/stream?cluster_id=${c.id}`, { 'Last-Event-ID': '' }, (ev) => ev.length > 0);
    expect(events[0]!.name).toBe('cluster_registration_succeeded');
    const bad = await call('GET', `${h.base}/events/stream?cluster_id=${c.id}`, { headers: { 'Last-Event-ID': 'abc' } });
    expect(bad.status).toBe(400);
    expect(bad.body.reason).toMatch(/last-event-id/i);
  });

  it('needs a cluster or infra-env the caller can see; only an administrator may follow everything', async () => {
    expect((await call('GET', `${h.base}/events/stream?cluster_id=00000000-0000-4000-8000-000000000000`)).status).toBe(404);
    expect((await call('GET', `${h.base}/events/stream?cluster_id=00000000-0000-4000-8000-000000000000&after=soon`)).status).toBe(400);
    const local = await startApiHarness({ authType: 'local' });
    try {
      const token = local.signer.sign({ use: 'user', sub: 'alice' });
      const r = await call('GET', `${local.base}/events/stream`, { headers: { Authorization: `Bearer ${token}` } });
      expect(r.status).toBe(400);
      expect(r.body.reason).toMatch(/cluster_id or infra_env_id is required \(only an administrator may follow every event\)/);
    } finally {
      await local.stop();
    }
  });

  it('an administrator follows every event from now on (after=latest), woken by PostgreSQL NOTIFY rather than the poll', async () => {
    const before = (await call('POST', `${h.base}/clusters`, { body: { name: 'sse-all-a', openshift_version: '1.31', pull_secret: PULL_SECRET } })).body;
    // When each update arrived, and when its PATCH was answered (its event committed before that answer).
    const arrived: number[] = [];
    const answered: number[] = [];
    const stream = readStream(`${h.base}/events/stream?after=latest`, {}, (ev) => {
      const updates = ev.filter((e) => e.name === 'cluster_updated').length;
      while (arrived.length < updates) arrived.push(Date.now());
      return updates >= 5;
    }, 30000);
    await stream.opened;
    const other = (await call('POST', `${h.base}/clusters`, { body: { name: 'sse-all-b', openshift_version: '1.31', pull_secret: PULL_SECRET } })).body;
    for (let i = 0; i < 5; i++) {
      // Spaced so each change waits in a fresh poll interval: a stream that only polled (every 1 s) would average 500 ms.
      await new Promise((r) => setTimeout(r, 1100));
      await call('PATCH', `${h.base}/clusters/${before.id}`, { body: { base_dns_domain: `example${i}.com` } });
      answered.push(Date.now());
    }
    const events = await stream;
    expect(events.some((e) => e.data.cluster_id === other.id && e.name === 'cluster_registration_succeeded')).toBe(true);
    expect(events.some((e) => e.data.cluster_id === before.id && e.name === 'cluster_registration_succeeded')).toBe(false);
    // Measured from the PATCH's answer, so a slow PATCH on a loaded machine does not count: only the delivery does.
    const delays = arrived.map((t, i) => t - answered[i]!).sort((a, b) => a - b);
    expect(delays).toHaveLength(5);
    expect(delays[2]).toBeLessThan(300);
  });

  // A user event of a cluster, written straight into the table (as any transaction of the service writes one).
  const userEvent = (q: any, clusterId: string, message: string) => q('events').insert({ name: 'user_event', severity: 'info', category: 'user', message, cluster_id: clusterId });
  const messages = (events: Array<{ name: string; data: any }>) => events.filter((e) => e.name === 'user_event').map((e) => e.data.message);

  it('never skips an event whose transaction commits after a later seq was seen, and does not stall on one rolled back', async () => {
    const c = (await call('POST', `${h.base}/clusters`, { body: { name: 'sse-gap', openshift_version: '1.31', pull_secret: PULL_SECRET } })).body;
    const stream = readStream(`${h.base}/events/stream?cluster_id=${c.id}`, {}, (ev) => messages(ev).includes('last'), 20000);
    await stream.opened;
    const slow = await h.db.transaction();
    await userEvent(slow, c.id, 'slow'); // seq n, visible only at its commit
    await userEvent(h.db, c.id, 'fast'); // seq n+1, visible now
    const doomed = await h.db.transaction();
    await userEvent(doomed, c.id, 'rolled back'); // seq n+2, never visible
    await userEvent(h.db, c.id, 'after the rollback');
    await new Promise((r) => setTimeout(r, 500));
    await doomed.rollback();
    await slow.commit();
    await userEvent(h.db, c.id, 'last');
    const events = await stream;
    expect(messages(events)).toEqual(['slow', 'fast', 'after the rollback', 'last']);
    const ids = events.map((e) => Number(e.id));
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
  });

  it('after=latest also delivers the events of a transaction in flight at the open, which commit later with a lower seq', async () => {
    const c = (await call('POST', `${h.base}/clusters`, { body: { name: 'sse-late', openshift_version: '1.31', pull_secret: PULL_SECRET } })).body;
    const inFlight = await h.db.transaction();
    await userEvent(inFlight, c.id, 'in flight at the open');
    await userEvent(h.db, c.id, 'before the open');
    const stream = readStream(`${h.base}/events/stream?after=latest`, {}, (ev) => messages(ev).includes('after the open'), 20000);
    await stream.opened;
    await inFlight.commit();
    await userEvent(h.db, c.id, 'after the open');
    expect(messages(await stream)).toEqual(['in flight at the open', 'after the open']);
  });

  it('a wake-up that came while the stream was reading is not lost (the stream does not sleep until the poll)', async () => {
    const w = new EventWakeups(h.pg.url);
    w.start();
    try {
      await eventually(async () => w.generation > 0, 10000, 'LISTEN connected');
      const before = w.generation;
      await h.db.raw('notify landfall_events');
      await eventually(async () => w.generation > before, 10000, 'notification');
      const t0 = Date.now();
      await w.wait(5000, before);
      expect(Date.now() - t0).toBeLessThan(2500);
    } finally {
      await w.close();
    }
  });

  it("an event's time is when it was recorded, not when its transaction began", async () => {
    const c = (await call('POST', `${h.base}/clusters`, { body: { name: 'sse-time', openshift_version: '1.31', pull_secret: PULL_SECRET } })).body;
    const trx = await h.db.transaction();
    await trx.raw('select pg_sleep(0.4)'); // a transaction that waited (a lock) before deciding
    const decided = Date.now();
    await userEvent(trx, c.id, 'decided late');
    await trx.commit();
    const row = await h.db('events').where({ cluster_id: c.id, message: 'decided late' }).first();
    expect(new Date(row.event_time).getTime()).toBeGreaterThanOrEqual(decided - 50);
  });
});

