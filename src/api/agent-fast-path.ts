/**
 * The agent's poll and step reply (GET and POST …/instructions), and its
 * registration (POST …/infra-envs/{id}/hosts), answered ahead of Express.
 * Every booted host polls every minute: at fleet scale the first two are
 * nearly all the API's traffic, and Express's router, the OpenAPI validator,
 * body parser and request logger were about 45 % of a poll's CPU
 * (bench/README.md); a rack powering on together is registrations.
 *
 * The rule that keeps the guarantees: this path answers only a request it can
 * decide completely, the well-formed request of a genuine agent, and hands
 * every other one, untouched, to Express, which gives the reference answer
 * (400 naming the field, 401, 404, 405, 413, 415 …). "Well-formed" is checked
 * against the OpenAPI document itself, read at start-up: the operations'
 * parameters, security and body schema must be the ones this module knows
 * (assertContract), or the API does not start, and the reply body is checked
 * by a checker compiled from the document's schema that is stricter than the
 * validator (plain-schema.ts). What it then does is what the Express route
 * does: the same service call, the same status, body, headers (X-Request-Id,
 * the renewed agent token, Content-Type, ETag), the same error answer for a
 * thrown error (errorAnswer: 404 for an unknown host, 503 + Retry-After while
 * a dependency is away) logged with the same request-bound logger.
 * test/integration/agent-fast-path.test.ts sends a battery of requests with
 * this path on and off and compares the answers.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { Counter, type Registry } from 'prom-client';
import type { Principal } from '../auth/principal';
import type { TokenSigner } from '../auth/jwt';
import type { Logger } from '../logger';
import type { ServiceContext } from '../services/context';
import * as agent from '../services/agent-service';
import { agentPrincipal, RENEWED_AGENT_TOKEN_HEADER } from './assisted/auth';
import { BASE_PATH, presentRegistration } from './assisted/presenters';
import { errorAnswer } from './errors';
import { nulField } from './nul-guard';
import { compileSchema, type Check, type Schema } from './openapi/plain-schema';
import { keepPreReadBody } from './pre-read-body';
import { lazyRequestLogger, requestId } from './request-context';

export interface AgentFastPathDeps {
  logger: Logger;
  services: ServiceContext;
  authType: 'none' | 'local';
  signer: TokenSigner | undefined;
  agentTokenTtlSeconds: number | undefined;
  bodyLimitBytes: number;
  validateResponses: boolean;
  /** The OpenAPI document (loadOpenApiDocument()). */
  document: Record<string, unknown>;
  metricsRegistry?: Registry;
}

/** Process-local: how many agent requests this path served and how many it handed to Express (irregular ones). */
export const FAST_PATH_METRIC = 'landfall_agent_fast_path_requests_total';

const HEX_UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';
/** The exact spelling only: a trailing slash, other case or percent-encoding is Express's to judge. */
const INSTRUCTIONS = new RegExp(`^${BASE_PATH}/v2/infra-envs/(${HEX_UUID})/hosts/(${HEX_UUID})/instructions(?:\\?(.*))?$`);
const REGISTER = new RegExp(`^${BASE_PATH}/v2/infra-envs/(${HEX_UUID})/hosts(?:\\?(.*))?$`);
/** A plain decimal with no sign, leading zero, exponent or fraction; the range is checked against the document. */
const TIMESTAMP = /^timestamp=(0|[1-9][0-9]{0,14})$/;
/** body-parser's JSON type with the charset it reads by default; any other media type or charset goes to Express. */
const JSON_MEDIA_TYPE = /^application\/json(?:\s*;\s*charset=(?:utf-8|"utf-8"))?$/i;
const DECIMAL = /^[0-9]{1,12}$/;

interface Contract {
  timestampMax: number;
  reply: Check;
  steps: Check;
  registration: Check;
  registered: Check;
}

/**
 * The request listener for the HTTP server: the fast path for the two agent
 * operations, Express (`fallback`) for everything else.
 */
export function agentFastPath(deps: AgentFastPathDeps, fallback: RequestListener): RequestListener {
  const contract = assertContract(deps.document);
  if (deps.authType === 'local' && !deps.signer) throw new Error('the agent fast path needs the token signer when AUTH_TYPE=local');

  const principalOf = (req: IncomingMessage): { principal: Principal; renewed?: string } | undefined => {
    if (deps.authType === 'none') return { principal: { kind: 'admin', user: '' } };
    const key = req.headers['x-secret-key'];
    // A missing, repeated or refused token: Express answers the 401 (or, first, the validator's 400).
    if (typeof key !== 'string' || !key) return undefined;
    return agentPrincipal(key, deps.signer!, deps.agentTokenTtlSeconds, Date.now());
  };

  const counter = new Counter({
    name: FAST_PATH_METRIC,
    help: 'Agent poll and step-reply requests the agent fast path served, or handed to the general path (irregular requests, answered there)',
    labelNames: ['operation', 'outcome'],
    registers: deps.metricsRegistry ? [deps.metricsRegistry] : [],
  });
  const operation = { GET: 'poll', POST: 'reply' } as const;

  /** A POST with a JSON body the parser reads as is, of a length the limit allows, from an agent: its body, or Express's. */
  const readJsonPost = (req: IncomingMessage, query: string | undefined, handOver: () => void, then: (raw: Buffer, auth: { principal: Principal; renewed?: string }) => void): void => {
    if (query !== undefined || !JSON_MEDIA_TYPE.test(req.headers['content-type'] ?? '')) return handOver();
    const length = req.headers['content-length'];
    if (length === undefined || !DECIMAL.test(length) || Number(length) === 0 || Number(length) > deps.bodyLimitBytes) return handOver();
    const auth = principalOf(req);
    if (!auth) return handOver();
    readBody(req, (raw) => then(raw, auth));
  };

  return (req, res) => {
    const r = req.method === 'POST' ? REGISTER.exec(req.url ?? '') : null;
    if (r) {
      const handOver = () => {
        counter.inc({ operation: 'register', outcome: 'handed_over' });
        fallback(req, res);
      };
      if (req.headers['content-encoding'] !== undefined || req.headers['transfer-encoding'] !== undefined) return handOver();
      const [, infraEnvId, query] = r as unknown as [string, string, string | undefined];
      return readJsonPost(req, query, handOver, (raw, auth) => {
        const body = parseBody<{ host_id: string; discovery_agent_version?: string }>(raw, contract.registration);
        if (body === undefined) {
          keepPreReadBody(req, raw);
          return handOver();
        }
        counter.inc({ operation: 'register', outcome: 'served' });
        void serve(req, res, auth.renewed, async (id) => {
          const answer = presentRegistration(await agent.registerHost(deps.services, auth.principal, infraEnvId, body, id));
          if (deps.validateResponses && !contract.registered(answer)) throw new Error('the registration answer does not match the OpenAPI document (response validation)');
          return { status: 201, body: answer };
        });
      });
    }
    const m = req.method === 'GET' || req.method === 'POST' ? INSTRUCTIONS.exec(req.url ?? '') : null;
    if (!m) return fallback(req, res);
    const op = operation[req.method as 'GET' | 'POST'];
    const handOver = () => {
      counter.inc({ operation: op, outcome: 'handed_over' });
      fallback(req, res);
    };
    const served = () => counter.inc({ operation: op, outcome: 'served' });
    if (req.headers['content-encoding'] !== undefined || req.headers['transfer-encoding'] !== undefined) return handOver();
    const [, infraEnvId, hostId, query] = m as unknown as [string, string, string, string | undefined];
    if (req.method === 'GET') {
      // A conditional GET (Express would answer 304 from the ETag) or a GET with a body: Express's.
      if (req.headers['if-none-match'] !== undefined || req.headers['if-modified-since'] !== undefined) return handOver();
      if (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0') return handOver();
      let timestamp: number | undefined;
      if (query !== undefined) {
        const t = TIMESTAMP.exec(query);
        if (!t || Number(t[1]) > contract.timestampMax) return handOver();
        timestamp = Number(t[1]);
      }
      const auth = principalOf(req);
      if (!auth) return handOver();
      served();
      void serve(req, res, auth.renewed, async () => {
        const steps = await agent.nextSteps(deps.services, auth.principal, infraEnvId, hostId, timestamp, agentVersion(req));
        if (deps.validateResponses && !contract.steps(steps)) throw new Error('the steps do not match the OpenAPI document (response validation)');
        return { status: 200, body: steps };
      });
      return;
    }
    // POST: no query is documented; the body must be JSON the parser reads as is, of a length the limit allows.
    readJsonPost(req, query, handOver, (raw, auth) => {
      const reply = parseBody<agent.StepReply>(raw, contract.reply);
      if (reply === undefined) {
        // Not ours to judge (malformed, a schema violation, a NUL): Express parses the same bytes.
        keepPreReadBody(req, raw);
        return handOver();
      }
      served();
      void serve(req, res, auth.renewed, async (id) => {
        await agent.postStepReply(deps.services, auth.principal, infraEnvId, hostId, reply, id);
        return { status: 204 };
      });
    });
  };

  /** Runs the operation and answers as the Express route and error handler do. */
  async function serve(req: IncomingMessage, res: ServerResponse, renewedToken: string | undefined, run: (id: string) => Promise<{ status: number; body?: unknown }>) {
    const id = requestId(req, res);
    if (renewedToken) res.setHeader(RENEWED_AGENT_TOKEN_HEADER, renewedToken);
    let answer: { status: number; body?: unknown; headers?: Record<string, string> };
    try {
      answer = await run(id);
    } catch (err) {
      if (res.headersSent) {
        req.socket.destroy();
        return;
      }
      answer = errorAnswer(err, lazyRequestLogger(deps.logger, { id, method: req.method, url: req.url }));
    }
    for (const [k, v] of Object.entries(answer.headers ?? {})) res.setHeader(k, v);
    res.statusCode = answer.status;
    if (answer.body === undefined) {
      res.end();
      return;
    }
    sendJson(res, answer.body);
  }
}

/** The discovery agent version, from either spelling of the header (the route reads both). */
function agentVersion(req: IncomingMessage): string | undefined {
  const v = req.headers['discovery_agent_version'] ?? req.headers['discovery-agent-version'];
  return typeof v === 'string' ? v : undefined;
}

/** The body as what the fast path may act on, or undefined when Express must judge it. */
function parseBody<T>(raw: Buffer, check: Check): T | undefined {
  const text = raw.toString('utf8');
  // Invalid UTF-8 (decoded to U+FFFD) and a byte-order mark are decoded by body-parser's own rules.
  if (text.includes('\uFFFD') || text.charCodeAt(0) === 0xfeff) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!check(value) || nulField(value, 'body') !== undefined) return undefined;
  return value as T;
}

function readBody(req: IncomingMessage, done: (raw: Buffer) => void): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  // A client that goes away mid-body gets no answer either way; Node closes the socket.
  req.on('error', () => {});
  req.on('end', () => done(Buffer.concat(chunks)));
}

/**
 * As Express 5's res.json: JSON.stringify, `application/json; charset=utf-8`,
 * Content-Length, and its default weak ETag (the `etag` package's form:
 * W/"<length in hex>-<first 27 characters of the base64 SHA-1>").
 */
function sendJson(res: ServerResponse, value: unknown): void {
  const body = Buffer.from(JSON.stringify(value), 'utf8');
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', body.length);
  res.setHeader('ETag', `W/"${body.length.toString(16)}-${createHash('sha1').update(body).digest('base64').slice(0, 27)}"`);
  res.end(body);
}

type Operation = { security?: unknown; parameters?: Array<Record<string, unknown>>; requestBody?: { required?: boolean; content?: Record<string, { schema?: Schema }> }; responses?: Record<string, { content?: Record<string, { schema?: Schema }> }> };

/**
 * What the fast path assumes about the two operations, checked against the
 * document: if the document says otherwise (a new query parameter, another
 * security scheme, a body with another media type), the API refuses to start
 * with the fast path on, instead of answering from stale assumptions.
 */
export function assertContract(doc: Record<string, unknown>): Contract {
  const d = doc as { paths?: Record<string, Record<string, unknown>>; components?: { parameters?: Record<string, Record<string, unknown>>; schemas?: Record<string, Schema>; securitySchemes?: Record<string, Record<string, unknown>> } };
  const fail = (what: string): never => {
    throw new Error(`agent fast path: the OpenAPI document no longer matches what it assumes (${what}); update src/api/agent-fast-path.ts or set API_AGENT_FAST_PATH=false`);
  };
  const item = d.paths?.['/v2/infra-envs/{infra_env_id}/hosts/{host_id}/instructions'] ?? fail('no instructions path');
  const resolve = (p: Record<string, unknown>) => (typeof p.$ref === 'string' ? (d.components?.parameters?.[p.$ref.split('/').pop()!] ?? fail(`unresolved ${p.$ref}`)) : p);
  const describe = (p: Record<string, unknown>) => JSON.stringify({ in: p.in, name: p.name, required: p.required ?? false, schema: p.schema });
  const pathParams = ((item.parameters ?? []) as Array<Record<string, unknown>>).map(resolve).map(describe).sort();
  const uuidParam = (name: string) => JSON.stringify({ in: 'path', name, required: true, schema: { type: 'string', format: 'uuid' } });
  if (JSON.stringify(pathParams) !== JSON.stringify([uuidParam('host_id'), uuidParam('infra_env_id')])) fail('path parameters');
  const scheme = d.components?.securitySchemes?.agentAuth;
  if (scheme?.type !== 'apiKey' || scheme.in !== 'header' || scheme.name !== 'X-Secret-Key') fail('agentAuth is not the X-Secret-Key header');
  const versionHeader = JSON.stringify({ in: 'header', name: 'discovery_agent_version', required: false, schema: { type: 'string' } });

  const get = (item.get ?? fail('no GET')) as Operation;
  if (JSON.stringify(get.security) !== JSON.stringify([{ agentAuth: [] }])) fail('GET security');
  if (get.requestBody) fail('GET body');
  let timestampMax: number | undefined;
  for (const p of (get.parameters ?? []).map(resolve)) {
    if (describe(p) === versionHeader) continue;
    const s = p.schema as Record<string, unknown> | undefined;
    if (p.in === 'query' && p.name === 'timestamp' && p.required === false && s?.type === 'integer' && s.minimum === 0 && typeof s.maximum === 'number' && Object.keys(s).every((k) => ['type', 'format', 'minimum', 'maximum'].includes(k)) && ['int64', undefined].includes(s.format as string | undefined)) {
      timestampMax = s.maximum;
      continue;
    }
    fail(`GET parameter ${String(p.name)}`);
  }
  if (timestampMax === undefined) fail('GET timestamp');
  const stepsSchema = get.responses?.['200']?.content?.['application/json']?.schema ?? fail('GET 200 schema');
  if (Object.keys(get.responses?.['200']?.content ?? {}).length !== 1) fail('GET 200 media types');

  const post = (item.post ?? fail('no POST')) as Operation;
  if (JSON.stringify(post.security) !== JSON.stringify([{ agentAuth: [] }])) fail('POST security');
  for (const p of (post.parameters ?? []).map(resolve)) if (describe(p) !== versionHeader) fail(`POST parameter ${String(p.name)}`);
  const content = post.requestBody?.content ?? {};
  if (post.requestBody?.required !== true || Object.keys(content).join() !== 'application/json') fail('POST body media type');
  if (!post.responses?.['204'] || post.responses['204'].content) fail('POST 204');
  // The registration: POST …/infra-envs/{infra_env_id}/hosts, the same agent key, a JSON body, 201 with the host.
  const hosts = d.paths?.['/v2/infra-envs/{infra_env_id}/hosts'] ?? fail('no hosts path');
  const hostsParams = ((hosts.parameters ?? []) as Array<Record<string, unknown>>).map(resolve).map(describe);
  if (JSON.stringify(hostsParams) !== JSON.stringify([uuidParam('infra_env_id')])) fail('registration path parameters');
  const register = (hosts.post ?? fail('no registration POST')) as Operation;
  if (JSON.stringify(register.security) !== JSON.stringify([{ agentAuth: [] }])) fail('registration security');
  for (const p of (register.parameters ?? []).map(resolve)) if (describe(p) !== versionHeader) fail(`registration parameter ${String(p.name)}`);
  const registerContent = register.requestBody?.content ?? {};
  if (register.requestBody?.required !== true || Object.keys(registerContent).join() !== 'application/json') fail('registration body media type');
  const registeredSchema = register.responses?.['201']?.content?.['application/json']?.schema ?? fail('registration 201 schema');
  return {
    timestampMax: timestampMax!,
    reply: compileSchema(content['application/json']!.schema ?? fail('POST body schema'), d, 'closed'),
    steps: compileSchema(stepsSchema, d, 'open'),
    registration: compileSchema(registerContent['application/json']!.schema ?? fail('registration body schema'), d, 'closed'),
    registered: compileSchema(registeredSchema, d, 'open'),
  };
}
