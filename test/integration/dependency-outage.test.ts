/**
 * While PostgreSQL is away the API answers 503 with Retry-After, never 500,
 * and answers again by itself once it is back: no restart of the API.
 */
import { call, PULL_SECRET, startApiHarness, type ApiHarness } from '../support/api-harness';
import { eventually } from '../support/services';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(async () => {
  await h?.stop();
});

it('answers 503 with Retry-After while PostgreSQL is down, and 2xx once it is back', async () => {
  const c = await call('POST', `${h.base}/clusters`, { body: { name: 'outage', openshift_version: '1.31', pull_secret: PULL_SECRET } });
  expect(c.status).toBe(201);
  await h.pg.stop();
  try {
    for (const [method, url, body] of [
      ['GET', `${h.base}/clusters/${c.body.id}`],
      ['GET', `${h.base}/clusters`],
      ['POST', `${h.base}/clusters`, { name: 'during', openshift_version: '1.31', pull_secret: PULL_SECRET }],
      ['POST', `${h.base}/infra-envs/${c.body.id}/hosts`, { host_id: c.body.id }],
    ] as const) {
      const r = await call(method, url, { body });
      expect([method, url, r.status, r.headers.get('retry-after')]).toEqual([method, url, 503, '5']);
      expect(r.body).toMatchObject({ code: '503', reason: expect.stringMatching(/unavailable; try again/) });
    }
    expect((await fetch(`${h.url}/readyz`)).status).toBe(503);
  } finally {
    await h.pg.start();
  }
  await eventually(async () => (await call('GET', `${h.base}/clusters/${c.body.id}`)).status === 200, 30000, 'the API answering again');
  expect((await call('GET', `${h.base}/clusters`)).body.map((x: { name: string }) => x.name)).toEqual(['outage']);
});
