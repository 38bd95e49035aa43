/**
 * Closing an API process (SIGTERM, a rolling restart) while agents hold kept
 * connections: a connection busy at the close goes idle once its answer is
 * written, and must then be closed at once, not kept until its keep-alive
 * timeout (100 s by default; here 10 minutes, so a close that waits for it
 * cannot pass). Seen as a test's API taking 97 s to stop after a boot storm.
 */
import http from 'node:http';
import { parseConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { migrateLatest } from '../../src/db/migrations';
import { createDb } from '../../src/db/database';
import { startApi, type RunningApi } from '../../src/api/server';
import { generateEcKeyPair } from '../../src/auth/jwt';
import { freePort } from '../../src/dev/process-utils';
import type { EmbeddedPg } from '../../src/dev/embedded-postgres';
import { IN_PROCESS_API_ENV, PULL_SECRET } from '../support/api-harness';
import { startTestPostgres, tempDir } from '../support/services';

let pg: EmbeddedPg;
afterAll(async () => {
  await pg?.stop();
});

async function start(shutdownMs: number): Promise<{ api: RunningApi; port: number }> {
  pg ??= await startTestPostgres('api_close');
  const db = createDb(pg.url, 1);
  await migrateLatest(db);
  await db.destroy();
  const port = await freePort();
  const cfg = parseConfig({
    API_HOST: '127.0.0.1',
    API_PORT: String(port),
    DATABASE_URL: pg.url,
    TEMPORAL_ADDRESS: '127.0.0.1:1',
    STORAGE_LOCAL_DIR: tempDir('api-close'),
    AUTH_TYPE: 'none',
    EC_PRIVATE_KEY_PEM: generateEcKeyPair().privateKeyPem,
    SERVICE_BASE_URL: `http://127.0.0.1:${port}`,
    API_KEEP_ALIVE_TIMEOUT_MS: '600000',
    SHUTDOWN_TIMEOUT_MS: String(shutdownMs),
    ...IN_PROCESS_API_ENV,
  });
  return { api: await startApi(cfg, createLogger({ log: { level: 'silent', format: 'json' } }, 'test')), port };
}

/** A request on a kept connection whose body is sent in two halves; `finish` sends the second. */
function halfSent(agent: http.Agent, port: number, body: string) {
  const req = http.request({ agent, host: '127.0.0.1', port, method: 'POST', path: '/api/assisted-install/v2/clusters', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
  const answer = new Promise<{ status: number; connection?: string; body: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, body: text }));
    });
    req.on('error', reject);
  });
  req.write(body.slice(0, 10));
  return { answer, finish: () => req.end(body.slice(10)) };
}

it('answers the request in flight at the close, then closes its kept connection at once', async () => {
  const { api, port } = await start(600_000);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    // The request is in the service (its headers read) before the close begins.
    const arrived = new Promise<void>((r) => api.server.once('request', () => r()));
    const inFlight = halfSent(agent, port, JSON.stringify({ name: 'closing', openshift_version: '1.31', pull_secret: PULL_SECRET }));
    await arrived;
    const t0 = Date.now();
    const closed = api.close().then(() => Date.now() - t0);
    await new Promise((r) => setTimeout(r, 200));
    inFlight.finish();
    const answer = await inFlight.answer;
    // Answered in full: the close lets a request in flight finish.
    expect(answer.status).toBe(201);
    expect(JSON.parse(answer.body).name).toBe('closing');
    // Closed well before the 10-minute keep-alive timeout would have let it.
    const took = await Promise.race([closed, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 30_000).unref())]);
    expect(took).not.toBe('hung');
  } finally {
    agent.destroy();
  }
});

it('cuts a request still running after half the shutdown time, so the process ends by itself', async () => {
  const { api, port } = await start(2000);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const arrived = new Promise<void>((r) => api.server.once('request', () => r()));
    // Its body never completes: a stuck client.
    const stuck = halfSent(agent, port, JSON.stringify({ name: 'stuck', openshift_version: '1.31', pull_secret: PULL_SECRET }));
    stuck.answer.catch(() => undefined);
    await arrived;
    const t0 = Date.now();
    const took = await Promise.race([api.close().then(() => Date.now() - t0), new Promise<'hung'>((r) => setTimeout(() => r('hung'), 30_000).unref())]);
    expect(took).not.toBe('hung');
    // Not before half the shutdown time: the request had that long to finish.
    expect(took).toBeGreaterThanOrEqual(900);
    await expect(stuck.answer).rejects.toThrow();
  } finally {
    agent.destroy();
  }
});
