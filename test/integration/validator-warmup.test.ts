import { parseConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { createDb, type Db } from '../../src/db/database';
import { migrateLatest } from '../../src/db/migrations';
import { startApi, type RunningApi } from '../../src/api/server';
import { generateEcKeyPair } from '../../src/auth/jwt';
import { freePort } from '../../src/dev/process-utils';
import type { EmbeddedPg } from '../../src/dev/embedded-postgres';
import { loadOpenApiDocument } from '../../src/api/openapi/spec';
import { warmupRequests } from '../../src/api/openapi/validator-warmup';
import { BASE_PATH } from '../../src/api/assisted/presenters';
import { startTestPostgres, tempDir } from '../support/services';
import { call, IN_PROCESS_API_ENV } from '../support/api-harness';

/**
 * A serving process compiles the OpenAPI validator for every operation when it
 * starts (src/api/openapi/validator-warmup.ts): each operation called once on
 * a private server, stopped right after validation. With local auth on, an
 * operation that reached authentication or a handler would answer 401 or 404;
 * the warm-up's may only be validated (204) or turned away by the validator
 * (400), and must leave nothing written.
 */
let pg: EmbeddedPg;
let db: Db;
let api: RunningApi;
let url: string;

beforeAll(async () => {
  pg = await startTestPostgres(`warm_${Math.random().toString(36).slice(2, 8)}`);
  db = createDb(pg.url, 2);
  await migrateLatest(db);
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  const cfg = parseConfig({
    API_HOST: '127.0.0.1',
    API_PORT: String(port),
    DATABASE_URL: pg.url,
    TEMPORAL_ADDRESS: '127.0.0.1:1',
    STORAGE_LOCAL_DIR: tempDir('warm-objects'),
    AUTH_TYPE: 'local',
    EC_PRIVATE_KEY_PEM: generateEcKeyPair().privateKeyPem,
    SERVICE_BASE_URL: url,
    ...IN_PROCESS_API_ENV,
    API_WARM_VALIDATORS: 'true',
  });
  api = await startApi(cfg, createLogger({ log: { level: 'silent', format: 'json' } }, 'test'));
});
afterAll(async () => {
  await api?.close();
  await db?.destroy();
  await pg?.stop();
});

describe('validator warm-up', () => {
  it('calls every documented operation, and each is stopped at or by its validation', async () => {
    const spec = loadOpenApiDocument();
    const ops = warmupRequests(spec, BASE_PATH);
    const documented = Object.values(spec.paths as Record<string, Record<string, unknown>>).reduce((n, item) => n + ['get', 'post', 'put', 'patch', 'delete'].filter((m) => item[m]).length, 0);
    expect(ops).toHaveLength(documented);
    // Both documents: the assisted-service API and Landfall's own (its path-level server).
    expect(ops.some((o) => o.url.startsWith(`${BASE_PATH}/v2/`))).toBe(true);
    expect(ops.some((o) => o.url.startsWith('/api/landfall/v1/'))).toBe(true);

    const summary = await api.warmed;
    expect(summary).toBeDefined();
    expect(summary!.operations).toBe(documented);
    expect(Object.values(summary!.statuses).reduce((a, b) => a + b, 0)).toBe(documented);
    // Nothing got past the validator into authentication (401), a handler (404, 2xx other than 204) or a failure (5xx).
    expect(summary!.others).toEqual([]);
    expect(Object.keys(summary!.statuses).sort()).toEqual(expect.arrayContaining(['204']));
    for (const status of Object.keys(summary!.statuses)) expect(['204', '400']).toContain(status);
  });

  it('writes nothing, and a client cannot take the warm-up path', async () => {
    await api.warmed;
    for (const table of ['clusters', 'infra_envs', 'hosts', 'events']) expect(Number((await db(table).count({ n: '*' }))[0]!.n)).toBe(0);
    // The same operations from a client go on to authentication as always.
    const zero = '00000000-0000-0000-0000-000000000000';
    expect((await call('GET', `${url}${BASE_PATH}/v2/clusters/${zero}`)).status).toBe(401);
    expect((await call('POST', `${url}${BASE_PATH}/v2/clusters/${zero}/actions/install`)).status).toBe(401);
  });
});
