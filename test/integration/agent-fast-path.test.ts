/**
 * The agent fast path (src/api/agent-fast-path.ts) answers exactly as Express
 * does. Two API processes on one database, one with API_AGENT_FAST_PATH on
 * and one with it off, each get the same battery of valid and invalid poll
 * and reply requests against twin worlds (a cluster, an infra-env and hosts
 * built the same way, one world per API, so neither's side effects reach the
 * other's). Status, body and client-visible headers must be identical once
 * the world's ids and request ids are written as placeholders; the ETag is
 * checked to be Express's weak ETag of the very bytes received.
 */
import { createHash, randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { gzipSync } from 'node:zlib';
import pino from 'pino';
import { parseConfig } from '../../src/config';
import { startApi, type RunningApi } from '../../src/api/server';
import { createDb, type Db } from '../../src/db/database';
import { migrateLatest } from '../../src/db/migrations';
import { generateEcKeyPair, TokenSigner } from '../../src/auth/jwt';
import { freePort } from '../../src/dev/process-utils';
import type { EmbeddedPg } from '../../src/dev/embedded-postgres';
import { IN_PROCESS_API_ENV, PULL_SECRET } from '../support/api-harness';
import { eventually, startTestPostgres, tempDir } from '../support/services';
import { captureLog, type LogCapture } from '../support/log-capture';

type LogRecord = { msg: string; level: number; req?: { id: string; method: string; url: string }; dependency?: string };

const BODY_LIMIT = 8192;
const TTL = 3600;

interface Api {
  name: 'fast' | 'express';
  running: RunningApi;
  port: number;
  logs: LogCapture<LogRecord>;
}

interface World {
  clusterId: string;
  infraEnvId: string;
  hosts: string[];
  otherInfraEnvId: string;
}

let pg: EmbeddedPg;
let db: Db;
let signer: TokenSigner;
const apis: Api[] = [];
const worlds = new Map<string, World>();

async function startOne(name: Api['name'], authType: 'local' | 'none', privateKeyPem: string): Promise<Api> {
  const port = await freePort();
  const logs = captureLog<LogRecord>();
  const cfg = parseConfig({
    API_HOST: '127.0.0.1',
    API_PORT: String(port),
    DATABASE_URL: pg.url,
    TEMPORAL_ADDRESS: '127.0.0.1:1',
    STORAGE_LOCAL_DIR: tempDir(`fast-path-${name}`),
    AUTH_TYPE: authType,
    EC_PRIVATE_KEY_PEM: privateKeyPem,
    AGENT_TOKEN_TTL_SECONDS: String(TTL),
    API_VALIDATE_RESPONSES: 'true',
    API_BODY_LIMIT_BYTES: String(BODY_LIMIT),
    API_AGENT_FAST_PATH: name === 'fast' ? 'true' : 'false',
    SERVICE_BASE_URL: 'http://127.0.0.1:8090',
    ...IN_PROCESS_API_ENV,
  });
  const running = await startApi(cfg, pino({ level: 'info' }, logs.sink));
  return { name, running, port, logs };
}

interface Sent {
  method: string;
  path: string;
  headers?: Record<string, string | string[]>;
  body?: string | Buffer;
}
interface Got {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function send(port: number, s: Sent): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: s.method, path: s.path, headers: s.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (s.body !== undefined) req.end(s.body);
    else req.end();
  });
}

/** Headers a client can see, without the ones that name a moment (Date) or a request. */
const VISIBLE = ['content-type', 'content-length', 'etag', 'retry-after', 'allow', 'x-landfall-agent-token', 'x-request-id', 'connection', 'transfer-encoding', 'cache-control', 'vary', 'content-encoding'];

function etagOf(body: Buffer): string {
  return `W/"${body.length.toString(16)}-${createHash('sha1').update(body).digest('base64').slice(0, 27)}"`;
}

/** The answer with the world's ids as placeholders, so the two worlds compare. */
function normalise(g: Got, w: World, sentRequestId: string | undefined) {
  const ids: Array<[string, string]> = [
    [w.clusterId, '<cluster>'],
    [w.infraEnvId, '<infra-env>'],
    [w.otherInfraEnvId, '<other-infra-env>'],
    ...w.hosts.map((h, i) => [h, `<host-${i}>`] as [string, string]),
  ];
  // Step ids end in a random suffix (inventory-1a2b3c4d).
  let text = g.body
    .toString('utf8')
    .replace(/("step_id":"[a-z-]+-)[0-9a-f]{8}"/g, '$1<random>"')
    // A registration answer names moments (created, checked in): each world's own.
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g, '<time>');
  for (const [id, name] of ids) text = text.split(id).join(name).split(id.toUpperCase()).join(name);
  const headers: Record<string, unknown> = {};
  for (const k of VISIBLE) if (g.headers[k] !== undefined) headers[k] = g.headers[k];
  // content-length and the ETag depend on the ids' spelling only through the body, compared above.
  // (A HEAD answer has the GET's ETag and no body.)
  if (headers['etag'] !== undefined) {
    if (g.body.length > 0) expect(headers['etag']).toBe(etagOf(g.body));
    headers['etag'] = '<etag of the body>';
  }
  const rid = g.headers['x-request-id'];
  if (typeof rid === 'string') headers['x-request-id'] = sentRequestId && rid === sentRequestId ? '<as sent>' : /^[0-9a-f-]{36}$/.test(rid) ? '<generated>' : rid;
  const renewed = g.headers['x-landfall-agent-token'];
  if (typeof renewed === 'string') {
    const claims = signer.verify(renewed);
    headers['x-landfall-agent-token'] = { use: claims.use, infra_env_id: claims.infra_env_id === w.infraEnvId ? '<infra-env>' : claims.infra_env_id, life: (claims.exp ?? 0) - (claims.iat ?? 0) };
  }
  return { status: g.status, headers, body: text };
}

type Case = { name: string; make: (w: World, key: 'fast' | 'express') => Sent };

/** Requests the fast path served so far (its own counter, on /metrics). */
async function servedSoFar(api: Api): Promise<number> {
  const text = (await send(api.port, { method: 'GET', path: '/metrics' })).body.toString();
  return [...text.matchAll(/^landfall_agent_fast_path_requests_total\{[^}]*outcome="served"[^}]*\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
}

/**
 * Sends each case to both APIs (fast first, then Express) against their twin worlds and compares.
 * With `served`, also which cases the fast path served itself (the rest it handed to Express).
 */
async function compare(cases: Case[], label: string, served?: Set<string>, dbUp = true): Promise<Map<string, ReturnType<typeof normalise>>> {
  const out = new Map<string, ReturnType<typeof normalise>>();
  const [fast, express] = [apis.find((a) => a.name === 'fast')!, apis.find((a) => a.name === 'express')!];
  const servedByFast: string[] = [];
  for (const c of cases) {
    // Every refresh asked for so far has run: an answer that shows a host row (a second registration) must not
    // depend on whether a refresher got to it between the two APIs' requests.
    if (dbUp) await eventually(async () => Number((await db('refresh_requests').count<Array<{ n: string }>>('* as n'))[0]!.n) === 0, 10_000, 'refresh queue drained');
    const before = served ? await servedSoFar(fast) : 0;
    const answers = [];
    for (const api of [fast, express]) {
      const w = worlds.get(`${label}:${api.name}`)!;
      const s = c.make(w, api.name);
      const rid = typeof s.headers?.['x-request-id'] === 'string' ? s.headers['x-request-id'] : undefined;
      const got = await send(api.port, s).catch((err: Error) => {
        throw new Error(`${c.name} (${api.name}): ${err.message}`);
      });
      answers.push(normalise(got, w, rid));
    }
    expect({ case: c.name, ...answers[0]! }).toEqual({ case: c.name, ...answers[1]! });
    out.set(c.name, answers[0]!);
    if (served && (await servedSoFar(fast)) > before) servedByFast.push(c.name);
  }
  if (served) expect(servedByFast.sort()).toEqual([...served].sort());
  return out;
}

const admin = () => `Bearer ${signer.sign({ use: 'user', sub: 'admin', admin: true })}`;
const agentToken = (infraEnvId: string, opts: { ttl?: number; now?: number } = {}) => signer.sign({ use: 'agent', infra_env_id: infraEnvId }, opts.ttl ?? TTL, opts.now);

async function json(port: number, method: string, path: string, body: unknown, headers: Record<string, string>) {
  const g = await send(port, { method, path, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: g.status, body: g.body.length ? (JSON.parse(g.body.toString()) as Record<string, string>) : {} };
}

/** A cluster, its infra-env with two registered hosts (one with an inventory), and a second infra-env. */
async function buildWorld(port: number, label: string, auth: boolean): Promise<World> {
  const user: Record<string, string> = auth ? { authorization: admin() } : {};
  const base = '/api/assisted-install/v2';
  const cluster = await json(port, 'POST', `${base}/clusters`, { name: `fp-${label}`, openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com' }, user);
  expect(cluster.status).toBe(201);
  const ie = await json(port, 'POST', `${base}/infra-envs`, { name: `fp-${label}-ie`, pull_secret: PULL_SECRET, cluster_id: cluster.body.id }, user);
  const other = await json(port, 'POST', `${base}/infra-envs`, { name: `fp-${label}-other`, pull_secret: PULL_SECRET }, user);
  expect([ie.status, other.status]).toEqual([201, 201]);
  const hosts = [randomUUID(), randomUUID()];
  const key: Record<string, string> = auth ? { "x-secret-key": agentToken(ie.body.id!) } : {};
  for (const [i, h] of hosts.entries()) {
    expect((await json(port, 'POST', `${base}/infra-envs/${ie.body.id}/hosts`, { host_id: h }, key)).status).toBe(201);
    if (i === 0) {
      const inventory = JSON.stringify({ hostname: `fp-${i}`, cpu: { count: 8 }, memory: { physical_bytes: 32 * 1024 ** 3 }, disks: [{ id: '/dev/disk/by-id/fp', name: 'sda', path: '/dev/sda', drive_type: 'SSD', size_bytes: 200e9 }], interfaces: [{ name: 'eth0', mac_address: '52:54:00:00:00:11', ipv4_addresses: ['10.9.0.11/24'] }] });
      expect((await json(port, 'POST', `${base}/infra-envs/${ie.body.id}/hosts/${h}/instructions`, { step_type: 'inventory', step_id: 'inventory-setup', output: inventory }, key)).status).toBe(204);
    }
  }
  // Validated off the agents' requests: a person's read settles the refresh, so both worlds start alike.
  expect((await send(port, { method: 'GET', path: `${base}/clusters/${cluster.body.id}`, headers: user })).status).toBe(200);
  return { clusterId: cluster.body.id!, infraEnvId: ie.body.id!, hosts, otherInfraEnvId: other.body.id! };
}

const steps = (w: World, host = 0, suffix = '') => `/api/assisted-install/v2/infra-envs/${w.infraEnvId}/hosts/${w.hosts[host]}/instructions${suffix}`;
const jsonBody = (v: unknown, headers: Record<string, string> = {}) => ({ headers: { 'content-type': 'application/json', ...headers }, body: typeof v === 'string' ? v : JSON.stringify(v) });

/** The cases of the battery the fast path answers itself; it hands every other one to Express. */
const SERVED = [
  'poll',
  'poll again (nothing due)',
  'poll of the host without inventory',
  'poll with timestamp',
  'poll with timestamp 0',
  'poll with the largest timestamp',
  'poll with the agent version header',
  'poll with the dashed agent version header',
  'poll with a sane request id',
  'poll with an insane request id',
  'poll with upper-case ids',
  'poll of an unknown host',
  'poll of an unknown infra-env',
  'poll of a host under another infra-env',
  'poll with a body',
  'reply',
  'reply with a failure',
  'reply without exit code',
  'reply with charset',
  'reply with a negative exit code',
  'reply with an inventory that is not JSON',
  'reply to an unknown host',
  'reply with a request id',
  'reply just under the body limit',
  'register a new host',
  'register the same host again',
  'register with the agent version',
  'register with an upper-case host id',
  'register with a request id',
  'register into an unknown infra-env',
];
const SERVED_WITH_TOKENS = ['register with a token of another infra-env', 'poll with a token past half its life (renewed)', 'poll with a token of another infra-env', 'poll with a cluster-scoped agent token', 'poll with a user token and the agent key', 'reply with a renewed token'];

/** The battery: what a genuine agent sends, and every irregularity we could think of. */
function battery(auth: boolean): Case[] {
  const key = (w: World): Record<string, string> => (auth ? { 'x-secret-key': agentToken(w.infraEnvId) } : {});
  const get = (name: string, path: (w: World) => string, headers: (w: World) => Record<string, string | string[]> = key): Case => ({ name, make: (w) => ({ method: 'GET', path: path(w), headers: headers(w) }) });
  const post = (name: string, body: unknown, extra: (w: World) => Record<string, string> = () => ({}), path: (w: World) => string = (w) => steps(w)): Case => ({
    name,
    make: (w) => {
      const b = jsonBody(body);
      return { method: 'POST', path: path(w), headers: { ...b.headers, ...key(w), ...extra(w) }, body: b.body };
    },
  });
  const ok = { step_type: 'execute', step_id: 'execute-1', exit_code: 0, output: 'done' };
  const cases: Case[] = [
    // ---- the poll
    get('poll', (w) => steps(w)),
    get('poll again (nothing due)', (w) => steps(w)),
    get('poll of the host without inventory', (w) => steps(w, 1)),
    get('poll with timestamp', (w) => steps(w, 0, '?timestamp=1700000000')),
    get('poll with timestamp 0', (w) => steps(w, 0, '?timestamp=0')),
    get('poll with the largest timestamp', (w) => steps(w, 0, '?timestamp=253402300799')),
    get('poll with a timestamp past the maximum', (w) => steps(w, 0, '?timestamp=253402300800')),
    get('poll with a negative timestamp', (w) => steps(w, 0, '?timestamp=-1')),
    get('poll with a non-numeric timestamp', (w) => steps(w, 0, '?timestamp=abc')),
    get('poll with a fractional timestamp', (w) => steps(w, 0, '?timestamp=1.5')),
    get('poll with an exponent timestamp', (w) => steps(w, 0, '?timestamp=1e3')),
    get('poll with a leading-zero timestamp', (w) => steps(w, 0, '?timestamp=0123')),
    get('poll with an empty timestamp', (w) => steps(w, 0, '?timestamp=')),
    get('poll with a repeated timestamp', (w) => steps(w, 0, '?timestamp=1&timestamp=2')),
    get('poll with an unknown query parameter', (w) => steps(w, 0, '?foo=1')),
    get('poll with api_key in the query', (w) => steps(w, 0, `?api_key=${agentToken(w.infraEnvId)}`)),
    get('poll with an empty query', (w) => steps(w, 0, '?')),
    get('poll with a NUL in the query', (w) => steps(w, 0, '?timestamp=%00')),
    get('poll with the agent version header', (w) => steps(w), (w) => ({ ...key(w), discovery_agent_version: 'v2.40.1' })),
    get('poll with the dashed agent version header', (w) => steps(w), (w) => ({ ...key(w), 'discovery-agent-version': 'v2.40.2' })),
    get('poll with a sane request id', (w) => steps(w), (w) => ({ ...key(w), 'x-request-id': 'trace-fast-1' })),
    get('poll with an insane request id', (w) => steps(w), (w) => ({ ...key(w), 'x-request-id': 'has spaces' })),
    get('poll with a trailing slash', (w) => `${steps(w)}/`),
    get('poll with upper-case ids', (w) => steps(w).replace(w.infraEnvId, w.infraEnvId.toUpperCase()).replace(w.hosts[0]!, w.hosts[0]!.toUpperCase())),
    get('poll with a malformed infra-env id', (w) => steps(w).replace(w.infraEnvId, 'not-a-uuid')),
    get('poll with a malformed host id', (w) => steps(w).replace(w.hosts[0]!, '12345')),
    get('poll with a percent-encoded id', (w) => steps(w).replace(w.hosts[0]!, encodeURIComponent(w.hosts[0]!).replace('-', '%2D'))),
    get('poll with a NUL in the path', (w) => steps(w).replace(w.hosts[0]!, `${w.hosts[0]}%00`)),
    get('poll of an unknown host', (w) => steps(w).replace(w.hosts[0]!, '00000000-0000-4000-8000-000000000001')),
    get('poll of an unknown infra-env', (w) => steps(w).replace(w.infraEnvId, '00000000-0000-4000-8000-000000000002'), () => (auth ? { 'x-secret-key': agentToken('00000000-0000-4000-8000-000000000002') } : ({} as Record<string, string>))),
    get('poll of a host under another infra-env', (w) => steps(w).replace(w.infraEnvId, w.otherInfraEnvId), (w) => (auth ? { 'x-secret-key': agentToken(w.otherInfraEnvId) } : ({} as Record<string, string>))),
    get('poll with a body', (w) => steps(w), (w) => ({ ...key(w), 'content-type': 'application/json', 'content-length': '0' })),
    { name: 'HEAD poll', make: (w) => ({ method: 'HEAD', path: steps(w), headers: key(w) }) },
    { name: 'PUT on the instructions', make: (w) => ({ method: 'PUT', path: steps(w), headers: { ...key(w), 'content-type': 'application/json' }, body: '{}' }) },
    { name: 'DELETE on the instructions', make: (w) => ({ method: 'DELETE', path: steps(w), headers: key(w) }) },
    // ---- the reply
    post('reply', ok),
    post('reply with a failure', { step_type: 'free-network-addresses', step_id: 'free-1', exit_code: 1, error: 'it broke' }),
    post('reply without exit code', { step_type: 'execute', step_id: 'execute-2' }),
    post('reply with charset', ok, () => ({ 'content-type': 'application/json; charset=utf-8' })),
    post('reply with a latin-1 charset', ok, () => ({ 'content-type': 'application/json; charset=iso-8859-1' })),
    post('reply as text/plain', ok, () => ({ 'content-type': 'text/plain' })),
    post('reply as application/merge-patch+json', ok, () => ({ 'content-type': 'application/merge-patch+json' })),
    post('reply with malformed JSON', '{"step_type": "execute",'),
    post('reply with a byte-order mark', `\uFEFF${JSON.stringify(ok)}`),
    post('reply as a JSON array', [ok]),
    post('reply as a JSON string', '"execute"'),
    post('reply as null', 'null'),
    post('reply without step_id', { step_type: 'execute' }),
    post('reply without step_type', { step_id: 'x' }),
    post('reply with an unknown step type', { ...ok, step_type: 'dance' }),
    post('reply with a string exit code', { ...ok, exit_code: '0' }),
    post('reply with a fractional exit code', { ...ok, exit_code: 1.5 }),
    post('reply with an exit code past int32', { ...ok, exit_code: 2 ** 31 }),
    post('reply with a negative exit code', { ...ok, exit_code: -1 }),
    post('reply with a numeric step id', { ...ok, step_id: 7 }),
    post('reply with a null output', { ...ok, output: null }),
    post('reply with an extra property', { ...ok, colour: 'blue' }),
    post('reply with a NUL in the output', { ...ok, output: 'a\u0000b' }),
    post('reply with a NUL in a key', { ...ok, ['x\u0000y']: 1 }),
    post('reply with an inventory that is not JSON', { step_type: 'inventory', step_id: 'inventory-x', output: 'not json' }),
    post('reply with a query', ok, () => ({}), (w) => steps(w, 0, '?timestamp=1')),
    post('reply to an unknown host', ok, () => ({}), (w) => steps(w).replace(w.hosts[0]!, '00000000-0000-4000-8000-000000000001')),
    post('reply with a malformed host id', ok, () => ({}), (w) => steps(w).replace(w.hosts[0]!, 'zzz')),
    post('reply with a request id', ok, () => ({ 'x-request-id': 'trace-fast-2' })),
    { name: 'reply with an empty body', make: (w) => ({ method: 'POST', path: steps(w), headers: { 'content-type': 'application/json', ...key(w) }, body: '' }) },
    { name: 'reply without a body or content type', make: (w) => ({ method: 'POST', path: steps(w), headers: key(w) }) },
    { name: 'reply over the body limit', make: (w) => ({ method: 'POST', path: steps(w), headers: { 'content-type': 'application/json', ...key(w) }, body: JSON.stringify({ ...ok, output: 'x'.repeat(BODY_LIMIT) }) }) },
    { name: 'reply just under the body limit', make: (w) => ({ method: 'POST', path: steps(w), headers: { 'content-type': 'application/json', ...key(w) }, body: JSON.stringify({ ...ok, output: 'x'.repeat(BODY_LIMIT - 200) }) }) },
    { name: 'reply gzipped', make: (w) => ({ method: 'POST', path: steps(w), headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', ...key(w) }, body: gzipSync(JSON.stringify(ok)) }) },
    { name: 'reply chunked', make: (w) => ({ method: 'POST', path: steps(w), headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked', ...key(w) }, body: JSON.stringify(ok) }) },
    { name: 'reply with invalid UTF-8', make: (w) => ({ method: 'POST', path: steps(w), headers: { 'content-type': 'application/json', ...key(w) }, body: Buffer.concat([Buffer.from('{"step_type":"execute","step_id":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]) }) },
  ];
  // ---- the registration (last: it adds hosts to the world)
  const hostsPath = (w: World) => `/api/assisted-install/v2/infra-envs/${w.infraEnvId}/hosts`;
  const register = (name: string, body: unknown, extra: (w: World) => Record<string, string> = () => ({}), path: (w: World) => string = hostsPath): Case => post(name, body, extra, path);
  const newHost = (n: number) => `0000000${n}-0000-4000-8000-${String(n).padStart(12, '0')}`;
  cases.push(
    register('register a new host', { host_id: newHost(1) }),
    register('register the same host again', { host_id: newHost(1) }),
    register('register with the agent version', { host_id: newHost(2), discovery_agent_version: 'v2.40.3' }),
    register('register with an upper-case host id', { host_id: newHost(3).toUpperCase().replace('0000003', '000000A') }),
    register('register with a request id', { host_id: newHost(4) }, () => ({ 'x-request-id': 'trace-fast-3' })),
    register('register into an unknown infra-env', { host_id: newHost(5) }, () => ({}), () => '/api/assisted-install/v2/infra-envs/00000000-0000-4000-8000-000000000003/hosts'),
    register('register without a host id', { discovery_agent_version: 'v2' }),
    register('register with a malformed host id', { host_id: 'host-1' }),
    register('register with a urn host id', { host_id: `urn:uuid:${newHost(6)}` }),
    register('register with a numeric host id', { host_id: 7 }),
    register('register with an extra property', { host_id: newHost(8), colour: 'blue' }),
    register('register with a NUL in the agent version', { host_id: newHost(9), discovery_agent_version: 'v\u00002' }),
    register('register with a query', { host_id: newHost(1) }, () => ({}), (w) => `${hostsPath(w)}?x=1`),
    register('register as text/plain', { host_id: newHost(1) }, () => ({ 'content-type': 'text/plain' })),
    register('register with malformed JSON', '{"host_id":'),
    register('register with a trailing slash', { host_id: newHost(1) }, () => ({}), (w) => `${hostsPath(w)}/`),
  );
  if (!auth) return cases;
  // ---- credentials (AUTH_TYPE=local)
  const now = Date.now();
  return [
    ...cases,
    register('register without a token', { host_id: newHost(1) }, () => ({ 'x-secret-key': '' })),
    register('register with a token of another infra-env', { host_id: newHost(1) }, (w) => ({ 'x-secret-key': agentToken(w.otherInfraEnvId) })),
    register('register with a user token', { host_id: newHost(1) }, () => ({ 'x-secret-key': '', authorization: admin() })),
    get('poll without a token', (w) => steps(w), () => ({})),
    get('poll with an empty token', (w) => steps(w), () => ({ 'x-secret-key': '' })),
    get('poll with a garbage token', (w) => steps(w), () => ({ 'x-secret-key': 'not.a.token' })),
    get('poll with a tampered token', (w) => steps(w), (w) => ({ 'x-secret-key': `${agentToken(w.infraEnvId).slice(0, -4)}AAAA` })),
    get('poll with an expired token', (w) => steps(w), (w) => ({ 'x-secret-key': agentToken(w.infraEnvId, { ttl: 600, now: now - 3600_000 }) })),
    get('poll with a token past half its life (renewed)', (w) => steps(w), (w) => ({ 'x-secret-key': agentToken(w.infraEnvId, { now: now - (TTL * 1000 * 2) / 3 }) })),
    get('poll with a token of another infra-env', (w) => steps(w), (w) => ({ 'x-secret-key': agentToken(w.otherInfraEnvId) })),
    get('poll with a cluster-scoped agent token', (w) => steps(w), (w) => ({ 'x-secret-key': signer.sign({ use: 'agent', cluster_id: w.clusterId }, TTL) })),
    get('poll with a user token as the agent key', (w) => steps(w), () => ({ 'x-secret-key': signer.sign({ use: 'user', sub: 'admin', admin: true }) })),
    get('poll with an image token as the agent key', (w) => steps(w), (w) => ({ 'x-secret-key': signer.sign({ use: 'image', infra_env_id: w.infraEnvId }) })),
    get('poll with only a user token', (w) => steps(w), () => ({ authorization: admin() })),
    get('poll with a user token and the agent key', (w) => steps(w), (w) => ({ authorization: admin(), 'x-secret-key': agentToken(w.infraEnvId) })),
    get('poll with two agent keys', (w) => steps(w), (w) => ({ 'x-secret-key': [agentToken(w.infraEnvId), agentToken(w.infraEnvId)] })),
    get('poll with a bad timestamp and no token', (w) => steps(w, 0, '?timestamp=x'), () => ({})),
    { name: 'reply without a token', make: (w) => ({ method: 'POST', path: steps(w), ...jsonBody({ step_type: 'execute', step_id: 'e' }) }) },
    { name: 'reply with an expired token', make: (w) => ({ method: 'POST', path: steps(w), headers: { ...jsonBody({}).headers, 'x-secret-key': agentToken(w.infraEnvId, { ttl: 600, now: now - 3600_000 }) }, body: JSON.stringify({ step_type: 'execute', step_id: 'e' }) }) },
    { name: 'reply with a renewed token', make: (w) => ({ method: 'POST', path: steps(w), headers: { ...jsonBody({}).headers, 'x-secret-key': agentToken(w.infraEnvId, { now: now - (TTL * 1000 * 2) / 3 }) }, body: JSON.stringify({ step_type: 'execute', step_id: 'e' }) }) },
    { name: 'reply with a user token', make: (w) => ({ method: 'POST', path: steps(w), headers: { ...jsonBody({}).headers, authorization: admin() }, body: JSON.stringify({ step_type: 'execute', step_id: 'e' }) }) },
    { name: 'reply with an invalid body and no token', make: (w) => ({ method: 'POST', path: steps(w), headers: jsonBody({}).headers, body: '{' }) },
  ];
}

beforeAll(async () => {
  pg = await startTestPostgres(`fastpath_${Math.random().toString(36).slice(2, 8)}`);
  db = createDb(pg.url, 2);
  await migrateLatest(db);
}, 120_000);

afterAll(async () => {
  for (const a of apis.splice(0)) await a.running.close();
  await db?.destroy();
  await pg?.stop();
});

describe.each([
  ['local', true],
  ['none', false],
] as const)('AUTH_TYPE=%s', (authType, auth) => {
  beforeAll(async () => {
    for (const a of apis.splice(0)) await a.running.close();
    const keys = generateEcKeyPair();
    signer = new TokenSigner({ privateKeyPem: keys.privateKeyPem });
    apis.push(await startOne('fast', authType, keys.privateKeyPem), await startOne('express', authType, keys.privateKeyPem));
    for (const a of apis) worlds.set(`${authType}:${a.name}`, await buildWorld(a.port, authType, auth));
  }, 60_000);

  it('answers every request of the battery as Express does', async () => {
    const seen = await compare(battery(auth), authType, new Set([...SERVED, ...(auth ? SERVED_WITH_TOKENS : [])]));
    // The battery means something only if it reached both outcomes: served and refused.
    expect(seen.get('poll')!.status).toBe(200);
    expect(JSON.parse(seen.get('poll')!.body).instructions.length).toBeGreaterThan(0);
    expect(seen.get('reply')!.status).toBe(204);
    expect(seen.get('poll of an unknown host')!.status).toBe(404);
    expect(seen.get('reply with a NUL in the output')!.status).toBe(400);
    expect(seen.get('reply over the body limit')!.status).toBe(413);
    expect(seen.get('register a new host')!.status).toBe(201);
    expect(JSON.parse(seen.get('register a new host')!.body).next_step_runner_command.args).toHaveLength(1);
    expect(seen.get('register with a malformed host id')!.status).toBe(400);
    if (auth) {
      expect(seen.get('poll with an expired token')!.status).toBe(401);
      expect(seen.get('poll with a token past half its life (renewed)')!.headers['x-landfall-agent-token']).toEqual({ use: 'agent', infra_env_id: '<infra-env>', life: TTL });
    }
  }, 120_000);

  it('answers a conditional poll with the ETag as Express does (304)', async () => {
    await compare(
      [
        {
          name: 'conditional poll',
          make: (w) => ({ method: 'GET', path: steps(w, 1).replace(w.hosts[1]!, '00000000-0000-4000-8000-000000000009'), headers: { ...(auth ? { 'x-secret-key': agentToken(w.infraEnvId) } : {}), 'if-none-match': etagOf(Buffer.from(JSON.stringify({ kind: 'Error', id: 404, href: '', code: '404', reason: 'host not found' }))) } }),
        },
      ],
      authType,
    );
  });
});

describe('while PostgreSQL is away', () => {
  it('answers the poll and the reply 503 with Retry-After, logged with the request id, as Express does', async () => {
    for (const a of apis) a.logs.clear();
    await pg.stop();
    try {
      const seen = await compare(
        [
          { name: 'poll during the outage', make: (w) => ({ method: 'GET', path: steps(w), headers: { 'x-request-id': 'outage-poll' } }) },
          { name: 'reply during the outage', make: (w) => ({ method: 'POST', path: steps(w), ...jsonBody({ step_type: 'execute', step_id: 'e' }, { 'x-request-id': 'outage-reply' }) }) },
        ],
        'none',
        undefined,
        false,
      );
      expect(seen.get('poll during the outage')).toMatchObject({ status: 503, headers: { 'retry-after': '5' } });
      expect(seen.get('reply during the outage')).toMatchObject({ status: 503, headers: { 'retry-after': '5' } });
      const logged = (a: Api) =>
        a.logs.records
          .filter((l) => l.msg === 'dependency unavailable')
          .map((l) => ({ level: l.level, dependency: l.dependency, id: l.req?.id, method: l.req?.method, url: l.req?.url?.replace(/[0-9a-f-]{36}/g, '<id>') }));
      const [fast, express] = apis;
      expect(logged(fast!)).toEqual(logged(express!));
      expect(logged(fast!).map((l) => l.id)).toEqual(['outage-poll', 'outage-reply']);
    } finally {
      await pg.start();
    }
  }, 60_000);
});
