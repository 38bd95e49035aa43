/* eslint-disable @typescript-eslint/no-explicit-any -- SSE payloads are read loosely */
import http from 'node:http';
import { call, PULL_SECRET, startApiHarness, type ApiHarness } from '../support/api-harness';

/** The live event stream: new events arrive as SSE, and a reconnect resumes after Last-Event-ID. */
let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(async () => {
  await h?.stop();
});

function readStream(url: string, headers: Record<string, string>, until: (events: Array<{ id: string; name: string; data: any }>) => boolean, timeoutMs = 15000) {
  return new Promise<Array<{ id: string; name: string; data: any }>>((resolve, reject) => {
    const events: Array<{ id: string; name: string; data: any }> = [];
    let buf = '';
    const req = http.get(url, { headers }, (res) => {
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
}

describe('GET /v2/events/stream', () => {
  it('streams a cluster\'s events as they happen and resumes after Last-Event-ID', async () => {
    const c = (await call('POST', `${h.base}/clusters`, { body: { name: 'sse', openshift_version: '1.31', pull_secret: PULL_SECRET } })).body;
    const first = readStream(`${h.base}/events/stream?cluster_id=${c.id}`, {}, (ev) => ev.some((e) => e.name === 'cluster_updated'));
    await new Promise((r) => setTimeout(r, 300));
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
    const delays: number[] = [];
    let sentAt = 0;
    const stream = readStream(`${h.base}/events/stream?after=latest`, {}, (ev) => {
      if (ev.length && ev.at(-1)!.name === 'cluster_updated' && sentAt) delays.push(Date.now() - sentAt);
      return ev.filter((e) => e.name === 'cluster_updated').length >= 5;
    }, 30000);
    await new Promise((r) => setTimeout(r, 300));
    const other = (await call('POST', `${h.base}/clusters`, { body: { name: 'sse-all-b', openshift_version: '1.31', pull_secret: PULL_SECRET } })).body;
    for (let i = 0; i < 5; i++) {
      // Spaced so each change waits in a fresh poll interval: a stream that only polled (every 1 s) would average 500 ms.
      await new Promise((r) => setTimeout(r, 1100));
      sentAt = Date.now();
      await call('PATCH', `${h.base}/clusters/${before.id}`, { body: { base_dns_domain: `example${i}.com` } });
    }
    const events = await stream;
    expect(events.some((e) => e.data.cluster_id === other.id && e.name === 'cluster_registration_succeeded')).toBe(true);
    expect(events.some((e) => e.data.cluster_id === before.id && e.name === 'cluster_registration_succeeded')).toBe(false);
    delays.sort((a, b) => a - b);
    expect(delays[2]).toBeLessThan(300);
  });
});
