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
