import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { startApi, type RunningApi } from '../../src/api/server';
import { freePort } from '../../src/dev/process-utils';
import type { EmbeddedPg } from '../../src/dev/embedded-postgres';
import { eventually, startTestPostgres, startTestTemporal, tempDir } from '../support/services';
import { IN_PROCESS_API_ENV } from '../support/api-harness';

type Temporal = Awaited<ReturnType<typeof startTestTemporal>>;
let temporal: Temporal;
let pg: EmbeddedPg;
let api: RunningApi;
const silent = createLogger({ log: { level: 'silent', format: 'json' } }, 'test');

async function readyz(url: string) {
  const res = await fetch(`${url}/readyz`);
  return { status: res.status, body: (await res.json()) as { status: string; failing: string[]; checks: Record<string, { ok: boolean; error?: string }> } };
}

async function apiWith(env: Record<string, string>): Promise<RunningApi> {
  const cfg = parseConfig({
    API_HOST: '127.0.0.1',
    API_PORT: String(await freePort()),
    DATABASE_URL: pg.url,
    TEMPORAL_ADDRESS: temporal.address,
    STORAGE_LOCAL_DIR: tempDir('objects'),
    // Short enough that a stopped dependency shows within the tests' waits, long
    // enough that a loaded CI machine (jest workers on 2 cores) answers in time.
    READINESS_TIMEOUT_MS: '5000',
    ...IN_PROCESS_API_ENV,
    ...env,
  });
  return startApi(cfg, silent);
}

beforeAll(async () => {
  [temporal, pg] = await Promise.all([startTestTemporal(), startTestPostgres('readyz_test')]);
  api = await apiWith({});
});
afterAll(async () => {
  await api?.close();
  await Promise.allSettled([temporal?.stop(), pg?.stop()]);
});

describe('/healthz and /readyz', () => {
  it('are 200 when every dependency answers', async () => {
    expect((await fetch(`${api.url}/healthz`)).status).toBe(200);
    const r = await readyz(api.url);
    // The whole answer on failure: which check failed, and how.
    expect({ status: r.status, failing: r.body.failing, checks: r.body.checks }).toMatchObject({ status: 200, failing: [] });
    expect(Object.keys(r.body.checks).sort()).toEqual(['postgresql', 'storage', 'temporal']);
  });

  it('turns 503 naming Temporal while it is down, and 200 again when it is back, without a restart', async () => {
    await temporal.stop();
    const down = await eventually(async () => {
      const r = await readyz(api.url);
      return r.status === 503 ? r : undefined;
    }, 20000, 'readyz 503');
    expect(down.body.status).toBe('unready');
    expect(down.body.failing).toEqual(['temporal']);
    expect(down.body.checks.temporal!.error).toBeTruthy();
    // Liveness does not depend on Temporal.
    expect((await fetch(`${api.url}/healthz`)).status).toBe(200);

    temporal = await startTestTemporal({ port: temporal.port, dbFile: temporal.dbFile });
    await eventually(async () => (await readyz(api.url)).status === 200, 60000, 'readyz 200 after Temporal restart');
  });

  it('turns 503 naming PostgreSQL while it is down, and 200 again when it is back', async () => {
    await pg.stop();
    const down = await eventually(async () => {
      const r = await readyz(api.url);
      return r.status === 503 ? r : undefined;
    }, 20000, 'readyz 503');
    expect(down.body.failing).toEqual(['postgresql']);
    // The error names no connection string (it holds the password).
    expect(JSON.stringify(down.body)).not.toContain(new URL(pg.url).password);

    await pg.start();
    await eventually(async () => (await readyz(api.url)).status === 200, 30000, 'readyz 200 after PostgreSQL restart');
  });

  it('names storage when the object store cannot be used', async () => {
    const file = path.join(tempDir('bad-storage'), 'file');
    writeFileSync(file, 'not a directory');
    const other = await apiWith({ STORAGE_LOCAL_DIR: file });
    try {
      const r = await readyz(other.url);
      expect(r.status).toBe(503);
      expect(r.body.failing).toEqual(['storage']);
    } finally {
      await other.close();
    }
  });
});
