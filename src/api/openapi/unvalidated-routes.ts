/**
 * Routes the OpenAPI validator does not see (the streamed log upload and
 * download: the validator would buffer or misparse a multipart body) still
 * get what it gives every other route: their path parameters checked and the
 * security their operation declares, so authentication accepts exactly the
 * credentials the document names (an agent's X-Secret-Key to upload, a user's
 * token or ?api_key to download) and no default in their place.
 */
import type { RequestHandler } from 'express';
import { badRequest } from '../../errors';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface Route {
  pattern: RegExp;
  /** Path parameters in template order, each checked as a UUID. */
  params: string[];
  security: Record<string, Array<Record<string, unknown>>>;
}

type Spec = { paths?: Record<string, Record<string, { security?: Array<Record<string, unknown>> }>> };

export function unvalidatedRoutes(spec: Spec, basePath: string, isUnvalidated: (path: string) => boolean): RequestHandler {
  const routes: Route[] = [];
  for (const [template, ops] of Object.entries(spec.paths ?? {})) {
    if (!isUnvalidated(`${basePath}${template}`)) continue;
    const params: string[] = [];
    const pattern = new RegExp(`^${basePath}${template.replace(/\{([^}]+)\}/g, (_m, name: string) => (params.push(name), '([^/]+)'))}/?$`);
    const security: Route['security'] = {};
    for (const [method, op] of Object.entries(ops)) if (op && typeof op === 'object' && op.security) security[method.toUpperCase()] = op.security;
    routes.push({ pattern, params, security });
  }
  return (req, _res, next) => {
    const path = req.path;
    for (const r of routes) {
      const m = r.pattern.exec(path);
      if (!m) continue;
      for (const [i, name] of r.params.entries()) {
        if (!UUID.test(decodeURIComponent(m[i + 1]!))) return next(badRequest(`path.${name}: must be a UUID`, { field: name }));
      }
      const security = r.security[req.method === 'HEAD' ? 'GET' : req.method];
      if (security) Object.assign(req, { openapi: { schema: { security } } });
      break;
    }
    next();
  };
}
