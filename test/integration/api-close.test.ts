/**
 * Closing an API process (SIGTERM, a rolling restart) while agents hold kept
 * connections: a connection busy at the close goes idle once its answer is
 * written, and must then be closed at once, not kept until its keep-alive
 * timeout (100 s by default; here 10 minutes, so a close that waits for it
 * cannot pass). Seen as a test's API taking 97 s to stop after a boot storm.
 */
import http from 'node:http';
import { createLogger } from '../../src/logger';
import { migrateLatest } from '../../src/db/migrations';
import { createDb } from '../../src/db/database';
import { startApi, type RunningApi } from '../../src/api/server';
import { freePort } from '../../src/dev/process-utils';
import type { EmbeddedPg } from '../../src/dev/embedded-postgres';
import { PULL_SECRET, testApiConfig } from '../support/api-harness';
import { startTestPostgres } from '../support/services';

let pg: EmbeddedPg;
afterAll(async () => {
  await pg?.stop();
});

/** An API in this process whose kept connections last 10 minutes, and which stops within `shutdownMs`. */
async function start(shutdownMs: number): Promise<{ api: RunningApi; port: number }> {
  pg ??= await startTestPostgres('api_close');
  const db = createDb(pg.url, 1);
  await migrateLatest(db);
  await db.destroy();
  const port = await freePort();
  const cfg = testApiConfig(pg.url, port, { API_KEEP_ALIVE_TIMEOUT_MS: '600000', SHUTDOWN_TIMEOUT_MS: String(shutdownMs) });
  return { api: await startApi(cfg, createLogger({ log: { level: 'silent', format: 'json' } }, 'test')), port };
}

/**
 * A cluster's creation on a kept connection, in the service (its headers read) but its body only half sent;
 * `finish` sends the rest.
 */
async function halfSent(api: RunningApi, port: number, agent: http.Agent, name: string) {
  const body = JSON.stringify({ name, openshift_version: '1.31', pull_secret: PULL_SECRET });
  const arrived = new Promise<void>((r) => api.server.once('request', () => r()));
  const req = http.request({ agent, host: '127.0.0.1', port, method: 'POST', path: '/api/assisted-install/v2/clusters', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
  const answer = new Promise<{ status: number; connection?: string; body: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, body: text }));
    });
    req.on('error', reject);
  });
  answer.catch(() => undefined);
  req.write(body.slice(0, 10));
  await arrived;
  return { answer, finish: () => req.end(body.slice(10)) };
}

/** How long `api.close()` took, or 'hung' past 30 s. */
async function closeTime(api: RunningApi): Promise<number | 'hung'> {
  const t0 = Date.now();
  return Promise.race([api.close().then(() => Date.now() - t0), new Promise<'hung'>((r) => setTimeout(() => r('hung'), 30_000).unref())]);
}

it('answers the request in flight at the close, then closes its kept connection at once', async () => {
  const { api, port } = await start(600_000);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const inFlight = await halfSent(api, port, agent, 'closing');
    const closed = closeTime(api);
    await new Promise((r) => setTimeout(r, 200));
    inFlight.finish();
    const answer = await inFlight.answer;
    // Answered in full: the close lets a request in flight finish, and tells the client not to send another.
    expect(answer.status).toBe(201);
    expect(JSON.parse(answer.body).name).toBe('closing');
    expect(answer.connection).toBe('close');
    // Closed at once, not at the 10-minute keep-alive timeout.
    const took = await closed;
    expect(took).not.toBe('hung');
    expect(took).toBeLessThan(5_000);
  } finally {
    agent.destroy();
    api.server.closeAllConnections();
  }
});

it('cuts a request still running after half the shutdown time, so the process ends by itself', async () => {
  const { api, port } = await start(2000);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    // Its body never completes: a stuck client.
    const stuck = await halfSent(api, port, agent, 'stuck');
    const took = await closeTime(api);
    expect(took).not.toBe('hung');
    // Not before half the shutdown time: the request had that long to finish.
    expect(took).toBeGreaterThanOrEqual(900);
    await expect(stuck.answer).rejects.toThrow();
  } finally {
    agent.destroy();
    api.server.closeAllConnections();
  }
});
