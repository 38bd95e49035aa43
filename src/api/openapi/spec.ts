import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { repoRoot } from '../../dev/process-utils';

/** The OpenAPI document: the single source of truth for the REST API, validated at the edge. */
export const OPENAPI_PATH = path.join(repoRoot(), 'src', 'api', 'openapi', 'openapi.yaml');

let cached: Record<string, unknown> | undefined;
export function loadOpenApiDocument(): Record<string, unknown> {
  cached ??= parse(readFileSync(OPENAPI_PATH, 'utf8')) as Record<string, unknown>;
  // Callers (the validator) annotate what they get; hand each a copy.
  return structuredClone(cached);
}

/** Landfall's own API: the base path of operations whose path item names it as its server. */
export const LANDFALL_API_BASE = '/api/landfall';

type PathItem = { servers?: Array<{ url?: string }> } & Record<string, unknown>;

/**
 * The document as two validators see it: assisted-service's paths under the
 * root server (/api/assisted-install), and the paths whose own `servers` is
 * /api/landfall, with that as their root (express-openapi-validator reads
 * only root servers).
 */
export function splitOpenApiDocument(doc: Record<string, unknown>): { assisted: Record<string, unknown>; landfall: Record<string, unknown> } {
  const paths = (doc.paths ?? {}) as Record<string, PathItem>;
  const assisted: Record<string, PathItem> = {};
  const landfall: Record<string, PathItem> = {};
  for (const [p, item] of Object.entries(paths)) {
    if (item.servers?.some((s) => s.url === LANDFALL_API_BASE)) {
      const { servers: _servers, ...rest } = item;
      landfall[p] = rest;
    } else assisted[p] = item;
  }
  return { assisted: { ...doc, paths: assisted }, landfall: { ...doc, servers: [{ url: LANDFALL_API_BASE }], paths: landfall } };
}
