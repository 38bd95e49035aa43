/**
 * Routes the OpenAPI validator does not see (the streamed log upload and
 * download: the validator would buffer or misparse a multipart body) still
 * get what it gives every other route: their path and query parameters
 * checked against the document (a repeated, unknown or malformed parameter is
 * a 400 naming it, never a default or a 500 from the database) and the
 * security their operation declares, so authentication accepts exactly the
 * credentials the document names (an agent's X-Secret-Key to upload, a user's
 * token or ?api_key to download) and no default in their place.
 */
import type { RequestHandler } from 'express';
import { badRequest } from '../../errors';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface QuerySchema {
  type?: string;
  enum?: unknown[];
  format?: string;
}

interface Route {
  pattern: RegExp;
  /** Path parameters in template order, each checked as a UUID. */
  params: string[];
  security: Record<string, Array<Record<string, unknown>>>;
  /** Query parameters by method: their schema and whether they are required; security's own query keys are allowed too. */
  query: Record<string, Map<string, { schema: QuerySchema; required: boolean }>>;
}

type Spec = {
  security?: Array<Record<string, unknown>>;
  paths?: Record<string, Record<string, { security?: Array<Record<string, unknown>>; parameters?: Array<{ in?: string; name?: string; required?: boolean; schema?: QuerySchema }> }>>;
  components?: { securitySchemes?: Record<string, { in?: string; name?: string }> };
};

function queryProblem(name: string, value: unknown, schema: QuerySchema): string | undefined {
  if (typeof value !== 'string') return `query.${name}: must be given once, as a single value`;
  if (schema.enum && !schema.enum.includes(value)) return `query.${name}: must be one of ${schema.enum.join(', ')}`;
  if (schema.format === 'uuid' && !UUID.test(value)) return `query.${name}: must be a UUID`;
  if (schema.type === 'boolean' && !['true', 'false'].includes(value)) return `query.${name}: must be true or false`;
  return undefined;
}

export function unvalidatedRoutes(spec: Spec, basePath: string, isUnvalidated: (path: string) => boolean): RequestHandler {
  const routes: Route[] = [];
  for (const [template, ops] of Object.entries(spec.paths ?? {})) {
    if (!isUnvalidated(`${basePath}${template}`)) continue;
    const params: string[] = [];
    const pattern = new RegExp(`^${basePath}${template.replace(/\{([^}]+)\}/g, (_m, name: string) => (params.push(name), '([^/]+)'))}/?$`);
    const security: Route['security'] = {};
    const query: Route['query'] = {};
    for (const [method, op] of Object.entries(ops)) {
      if (method === 'parameters' || !op || typeof op !== 'object') continue;
      if (op.security) security[method.toUpperCase()] = op.security;
      const q = new Map<string, { schema: QuerySchema; required: boolean }>();
      for (const p of op.parameters ?? []) if (p.in === 'query' && p.name) q.set(p.name, { schema: p.schema ?? {}, required: p.required === true });
      // Credentials carried in the query (api_key, image_token) by the schemes the operation accepts.
      for (const s of op.security ?? spec.security ?? []) {
        for (const scheme of Object.keys(s)) {
          const def = spec.components?.securitySchemes?.[scheme];
          if (def?.in === 'query' && def.name) q.set(def.name, { schema: { type: 'string' }, required: false });
        }
      }
      query[method.toUpperCase()] = q;
    }
    routes.push({ pattern, params, security, query });
  }
  return (req, _res, next) => {
    const path = req.path;
    for (const r of routes) {
      const m = r.pattern.exec(path);
      if (!m) continue;
      for (const [i, name] of r.params.entries()) {
        if (!UUID.test(decodeURIComponent(m[i + 1]!))) return next(badRequest(`path.${name}: must be a UUID`, { field: name }));
      }
      const method = req.method === 'HEAD' ? 'GET' : req.method;
      const declared = r.query[method];
      if (declared) {
        for (const [name, value] of Object.entries(req.query)) {
          const d = declared.get(name);
          const problem = d ? queryProblem(name, value, d.schema) : `query.${name}: unknown parameter`;
          if (problem) return next(badRequest(problem, { field: name }));
        }
        for (const [name, d] of declared) if (d.required && req.query[name] === undefined) return next(badRequest(`query.${name}: required`, { field: name }));
      }
      const security = r.security[method];
      if (security) Object.assign(req, { openapi: { schema: { security } } });
      break;
    }
    next();
  };
}
