import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import { parse } from 'yaml';

const root = path.resolve(__dirname, '../..');
const specPath = path.join(root, 'src/api/openapi/openapi.yaml');
const generatedPath = path.join(root, 'src/api/openapi/schema.generated.ts');

const METHODS = ['get', 'put', 'post', 'patch', 'delete', 'options', 'head', 'trace'] as const;
const ERROR_SCHEMAS = ['#/components/schemas/error', '#/components/schemas/infra_error'];

type Json = Record<string, unknown>;

interface Operation {
  method: string;
  path: string;
  op: Json;
}

function loadRaw(): Json {
  return parse(readFileSync(specPath, 'utf8')) as Json;
}

function operations(doc: Json): Operation[] {
  const out: Operation[] = [];
  for (const [p, item] of Object.entries(doc.paths as Record<string, Json>)) {
    for (const method of METHODS) {
      const op = item[method] as Json | undefined;
      if (op) out.push({ method, path: p, op });
    }
  }
  return out;
}

/** Follows a local `#/a/b/c` reference in the raw (not dereferenced) document. */
function resolveLocal(doc: Json, ref: string): Json {
  if (!ref.startsWith('#/')) throw new Error(`not a local reference: ${ref}`);
  let node: unknown = doc;
  for (const part of ref.slice(2).split('/')) {
    node = (node as Json)[part.replace(/~1/g, '/').replace(/~0/g, '~')];
    if (node === undefined) throw new Error(`dangling reference: ${ref}`);
  }
  return node as Json;
}

describe('OpenAPI document', () => {
  it('is a valid OpenAPI 3.0 document', async () => {
    const api = (await SwaggerParser.validate(specPath)) as unknown as Json;
    expect(api.openapi).toBe('3.0.3');
    expect(api.servers).toEqual([{ url: '/api/assisted-install' }]);
  });

  it('has committed TypeScript types that match the document', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'landfall-openapi-'));
    try {
      const out = path.join(dir, 'schema.generated.ts');
      execFileSync('bash', [path.join(root, 'scripts/gen-openapi-types.sh'), out], { cwd: root, stdio: 'pipe' });
      const fresh = readFileSync(out, 'utf8');
      const committed = readFileSync(generatedPath, 'utf8');
      // On failure: run scripts/gen-openapi-types.sh and commit the result.
      expect(committed === fresh).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('gives every operation a unique operationId, /v2 paths under the root server, /v1 paths under /api/landfall', () => {
    const doc = loadRaw();
    const ops = operations(doc);
    expect(ops.length).toBeGreaterThan(0);
    const missing = ops.filter(({ op }) => typeof op.operationId !== 'string' || op.operationId === '');
    expect(missing.map(({ method, path: p }) => `${method.toUpperCase()} ${p}`)).toEqual([]);
    const ids = ops.map(({ op }) => op.operationId as string);
    expect(new Set(ids).size).toBe(ids.length);
    const landfall = (item: Json) => (item.servers as Array<{ url: string }> | undefined)?.map((x) => x.url);
    const paths = Object.entries(doc.paths as Record<string, Json>);
    expect(paths.filter(([p, item]) => !landfall(item) && !p.startsWith('/v2/')).map(([p]) => p)).toEqual([]);
    // Landfall's own API (GET /api/landfall/v1/insights) names its base path on the path item.
    expect(paths.filter(([, item]) => landfall(item)).map(([p, item]) => [p, landfall(item)])).toEqual([['/v1/insights', ['/api/landfall']]]);
  });

  it('gives every nullable schema a type (Ajv refuses `nullable` without one)', () => {
    const offenders: string[] = [];
    const walk = (node: unknown, where: string): void => {
      if (Array.isArray(node)) {
        node.forEach((child, i) => walk(child, `${where}/${i}`));
      } else if (node !== null && typeof node === 'object') {
        const obj = node as Json;
        if (obj.nullable === true && typeof obj.type !== 'string') offenders.push(where);
        for (const [key, child] of Object.entries(obj)) walk(child, `${where}/${key}`);
      }
    };
    walk(loadRaw(), '#');
    expect(offenders).toEqual([]);
  });

  it('describes every 4xx and 5xx answer with the error or infra_error schema', () => {
    const doc = loadRaw();
    const wrong: string[] = [];
    for (const { method, path: p, op } of operations(doc)) {
      for (const [status, raw] of Object.entries(op.responses as Record<string, Json>)) {
        if (!/^[45]/.test(status)) continue;
        const response = typeof raw.$ref === 'string' ? resolveLocal(doc, raw.$ref) : raw;
        const content = response.content as Record<string, Json> | undefined;
        const ref = (content?.['application/json']?.schema as Json | undefined)?.$ref;
        const expected = status === '401' || status === '403' ? ERROR_SCHEMAS[1] : ERROR_SCHEMAS[0];
        if (ref !== expected) wrong.push(`${method.toUpperCase()} ${p} ${status}: ${String(ref)}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
