import { randomUUID } from 'node:crypto';
import { call, PULL_SECRET, startApiHarness, type ApiHarness } from '../support/api-harness';

/** Every response names its request: the caller's sane X-Request-Id, or a fresh UUID, on logged and unlogged routes alike. */
let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(async () => {
  await h?.stop();
});

describe('request ids', () => {
  it('echoes a caller id and makes one up otherwise, on the agent poll as on other routes', async () => {
    const ie = await call('POST', `${h.base}/infra-envs`, { body: { name: 'rid-ie', pull_secret: PULL_SECRET, image_type: 'minimal-iso' } });
    expect(ie.status).toBe(201);
    const hostId = randomUUID();
    expect((await call('POST', `${h.base}/infra-envs/${ie.body.id}/hosts`, { body: { host_id: hostId } })).status).toBe(201);
    const poll = `${h.base}/infra-envs/${ie.body.id}/hosts/${hostId}/instructions`;
    for (const url of [poll, `${h.base}/infra-envs/${ie.body.id}`, `${h.url}/healthz`]) {
      const given = await call('GET', url, { headers: { 'x-request-id': 'trace-123' } });
      expect(given.status).toBe(200);
      expect(given.headers.get('x-request-id')).toBe('trace-123');
      const insane = await call('GET', url, { headers: { 'x-request-id': 'no spaces allowed' } });
      expect(insane.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
    const missing = await call('GET', `${h.base}/infra-envs/${ie.body.id}/hosts/${randomUUID()}/instructions`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});
