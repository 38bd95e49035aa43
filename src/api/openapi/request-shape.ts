/**
 * What a request means before the OpenAPI validator judges it, where
 * assisted-service (go-swagger) gives a shape a meaning the validator would
 * refuse:
 * - an empty query value (`?status=`) of a parameter whose schema admits the
 *   empty string, or has a default, is a parameter not given: go-swagger's binders skip an empty
 *   raw value, so a filter left empty lists everything. Where the schema does
 *   not admit it (a boolean, an enum, a UUID, a number) the validator still
 *   refuses it with a 400 naming the parameter.
 * - `+` in a query is a space, as in form encoding, and a reserved character
 *   left unencoded is that character (normalizeQuery).
 * - a request with no body and no Content-Type is a request whose body is
 *   absent: a 400 naming the body where the operation requires one (not a 415
 *   about a media type nobody sent); otherwise JSON with no value.
 */
import type { RequestHandler } from 'express';
import { badRequest } from '../../errors';

type Schema = { type?: string; enum?: unknown[]; format?: string; pattern?: string; minLength?: number; items?: Schema; default?: unknown; $ref?: string };
type Parameter = { name: string; in: string; schema?: Schema; $ref?: string };
type Operation = { parameters?: Parameter[]; requestBody?: { required?: boolean } };
type Spec = { paths: Record<string, Record<string, unknown>>; components?: { parameters?: Record<string, Parameter>; schemas?: Record<string, Schema> } };

interface RouteShape {
  pattern: RegExp;
  methods: Map<string, OperationShape>;
}

interface OperationShape {
  emptyQueryAllowed: Set<string>;
  /** Array parameters, whose items a raw comma separates. */
  arrayQuery: Set<string>;
  bodyRequired: boolean;
}

function admitsEmpty(s: Schema | undefined, spec: Spec): boolean {
  if (!s) return true;
  if (s.$ref) return admitsEmpty(spec.components?.schemas?.[s.$ref.split('/').pop()!], spec);
  // With a default, an empty value is the default (go-swagger leaves it in place).
  if (s.default !== undefined) return true;
  // An empty list (go-swagger splits an empty value into none).
  if (s.type === 'array') return true;
  return (s.type === undefined || s.type === 'string') && !s.enum && !s.format && !s.pattern && !(s.minLength && s.minLength > 0);
}

function shapes(spec: Spec, basePath: string): RouteShape[] {
  const param = (p: Parameter) => (p.$ref ? spec.components!.parameters![p.$ref.split('/').pop()!]! : p);
  // Literal paths before templated ones (/v2/clusters/import before /v2/clusters/{cluster_id}), as routers match.
  const templates = Object.entries(spec.paths).sort(([a], [b]) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0));
  return templates.map(([template, ops]) => {
    const common = ((ops.parameters as Parameter[] | undefined) ?? []).map(param);
    const methods = new Map<string, OperationShape>();
    for (const [method, raw] of Object.entries(ops)) {
      if (method === 'parameters') continue;
      const op = raw as Operation;
      const query = [...common, ...(op.parameters ?? []).map(param)].filter((p) => p.in === 'query');
      methods.set(method.toUpperCase(), {
        emptyQueryAllowed: new Set(query.filter((p) => admitsEmpty(p.schema, spec)).map((p) => p.name)),
        arrayQuery: new Set(query.filter((p) => p.schema?.type === 'array').map((p) => p.name)),
        bodyRequired: op.requestBody?.required === true,
      });
    }
    return { pattern: new RegExp(`^${basePath}${template.replace(/\{[^}]+\}/g, '[^/]+')}/?$`), methods };
  });
}

export function requestShape(spec: Spec, basePath: string): RequestHandler {
  const routes = shapes(spec, basePath);
  return (req, _res, next) => {
    const path = req.originalUrl.split('?')[0]!;
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    const op = routes.find((r) => r.methods.has(method) && r.pattern.test(path))?.methods.get(method);
    if (!op) return next();
    const q = req.url.indexOf('?');
    if (q >= 0) {
      const raw = req.url.slice(q + 1);
      const query = normalizeQuery(raw, op);
      if (query !== raw) {
        // The validator reads the query from originalUrl (its reserved-character check), Express from url.
        req.url = query ? `${req.url.slice(0, q)}?${query}` : req.url.slice(0, q);
        const o = req.originalUrl.indexOf('?');
        req.originalUrl = query ? `${req.originalUrl.slice(0, o)}?${query}` : req.originalUrl.slice(0, o);
      }
    }
    const noBody = !req.headers['transfer-encoding'] && (req.headers['content-length'] === undefined || req.headers['content-length'] === '0');
    if (noBody && !req.headers['content-type'] && ['POST', 'PUT', 'PATCH'].includes(req.method)) {
      if (op.bodyRequired) return next(badRequest('body: required', { field: 'body' }));
      req.headers['content-type'] = 'application/json';
    }
    next();
  };
}

/**
 * Drops empty values the operation reads as "not given", and spells every name and value in one
 * encoding: a space as %20 (not `+`), and every reserved character percent-encoded, but the commas
 * between an array's items. The validator refuses a value with an unencoded reserved character
 * (`+`, `'`, `(`, `!` …, which form encoding and encodeURIComponent leave as they are), where
 * assisted-service reads the value as decoded; the meaning does not change.
 */
function normalizeQuery(raw: string, op: OperationShape): string {
  const out: string[] = [];
  for (const pair of raw.split('&')) {
    const eq = pair.indexOf('=');
    const name = decodeURIComponentSafe(eq < 0 ? pair : pair.slice(0, eq));
    const value = eq < 0 ? '' : decodeURIComponentSafe(pair.slice(eq + 1));
    // Undecodable: left for the validator to refuse as it is.
    if (name === undefined || value === undefined) {
      out.push(pair);
      continue;
    }
    if (value === '' && op.emptyQueryAllowed.has(name)) continue;
    if (eq < 0) {
      out.push(pair);
      continue;
    }
    const encoded = strictEncode(value);
    out.push(`${strictEncode(name)}=${op.arrayQuery.has(name) ? encoded.replace(/%2C/g, ',') : encoded}`);
  }
  return out.join('&');
}

function strictEncode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function decodeURIComponentSafe(s: string): string | undefined {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}
