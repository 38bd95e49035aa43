/**
 * An API process in-process against a real PostgreSQL and a local object
 * store, with response validation on: every response a test sees has also
 * been checked against the OpenAPI document.
 */
import type { Server } from 'node:http';
import { parseConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { createDb, type Db } from '../../src/db/database';
import { migrateLatest } from '../../src/db/migrations';
import { startApi, type RunningApi } from '../../src/api/server';
import { generateEcKeyPair, TokenSigner } from '../../src/auth/jwt';
import { freePort } from '../../src/dev/process-utils';
import type { EmbeddedPg } from '../../src/dev/embedded-postgres';
import { startTestPostgres, tempDir } from './services';
import { startApiReplicas, testReplicas, type Balancer } from './replicas';

export interface ApiHarness {
  url: string;
  base: string;
  db: Db;
  pg: EmbeddedPg;
  api: RunningApi;
  signer: TokenSigner;
  server: Server;
  /** With LANDFALL_TEST_REPLICAS=N (N >= 2): the balancer in front of N API processes. */
  balancer?: Balancer;
  stop(): Promise<void>;
}

/**
 * For an API started inside the test process: it shares its event loop with the test runner, whose own stalls
 * (compiling a module on its first import, a loaded CI machine) are not the service's lateness. Admission's time
 * gauges are off there (its in-flight limit stays); test/integration/admission.test.ts tests them. So is the
 * validator's warm-up (~1.5 s of compiling in the test runner's process; test/integration/validator-warmup.test.ts
 * tests it, and every spawned `landfall api` runs it). Every test that calls startApi in-process spreads this into its config.
 */
export const IN_PROCESS_API_ENV = { API_AGENT_MAX_LOOP_LAG_MS: '0', API_AGENT_MAX_POLL_WAIT_MS: '0', API_WARM_VALIDATORS: 'false' } as const;

/** The configuration of a test's API on `port` against `databaseUrl`: no Temporal, local storage, responses validated. */
export function testApiConfig(databaseUrl: string, port: number, env: Record<string, string> = {}) {
  return parseConfig({
    API_HOST: '127.0.0.1',
    API_PORT: String(port),
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: '127.0.0.1:1',
    STORAGE_LOCAL_DIR: tempDir('api-objects'),
    AUTH_TYPE: 'none',
    EC_PRIVATE_KEY_PEM: generateEcKeyPair().privateKeyPem,
    API_VALIDATE_RESPONSES: 'true',
    SERVICE_BASE_URL: `http://127.0.0.1:${port}`,
    ...IN_PROCESS_API_ENV,
    ...env,
  });
}

export async function startApiHarness(opts: { authType?: 'none' | 'local'; env?: Record<string, string> } = {}): Promise<ApiHarness> {
  const pg = await startTestPostgres(`api_${Math.random().toString(36).slice(2, 8)}`);
  const db = createDb(pg.url, 4);
  await migrateLatest(db);
  const port = await freePort();
  const cfg = testApiConfig(pg.url, port, { AUTH_TYPE: opts.authType ?? 'none', ...opts.env });
  const replicas = testReplicas();
  // N processes (the production topology) behind a round-robin balancer on the same port, or one in this process.
  const group = replicas > 1 ? await startApiReplicas({ ...cfg, log: { level: 'info', format: 'json' } }, replicas, new URL(pg.url).pathname.slice(1)) : undefined;
  const api: RunningApi = group ? { server: group.balancer.server, url: group.balancer.url, close: () => group.close() } : await startApi(cfg, createLogger({ log: { level: 'silent', format: 'json' } }, 'test'));
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    base: `${url}/api/assisted-install/v2`,
    db,
    pg,
    api,
    balancer: group?.balancer,
    server: api.server,
    signer: new TokenSigner({ privateKeyPem: cfg.auth.privateKeyPem! }),
    async stop() {
      await api.close();
      await db.destroy();
      await pg.stop();
    },
  };
}

export interface Res<T = unknown> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

/** fetch with JSON in and out; `raw` sends the body string as is (malformed JSON tests). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read loosely-typed JSON bodies
export async function call<T = any>(method: string, url: string, opts: { body?: unknown; raw?: string; headers?: Record<string, string> } = {}): Promise<Res<T>> {
  const res = await fetch(url, {
    method,
    headers: { ...(opts.body !== undefined || opts.raw !== undefined ? { 'content-type': 'application/json' } : {}), ...opts.headers },
    body: opts.raw ?? (opts.body !== undefined ? JSON.stringify(opts.body) : undefined),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON */
  }
  return { status: res.status, body: body as T, headers: res.headers, text };
}

export const PULL_SECRET = JSON.stringify({ auths: { 'registry.example.com': { auth: 'c2VjcmV0LXB1bGwtc2VjcmV0LXZhbHVl' } } });
export const SSH_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx4l8jTj2tUiX4lUzTnI6FvR2d1eI8kXoW7hSg2gq1m test@landfall';
