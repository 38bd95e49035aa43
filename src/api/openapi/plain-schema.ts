/**
 * A checker compiled from a schema of the OpenAPI document, for the agent fast
 * path (src/api/agent-fast-path.ts), which answers without the validator. It
 * knows a small subset of JSON Schema, the keywords the agent's operations
 * use, and refuses to compile a schema with any other keyword: a document
 * change the checker does not understand stops the API at start-up (and the
 * tests), rather than letting the fast path accept what the validator would
 * refuse.
 *
 * `closed` (requests): stricter than the validator, never looser. A property
 * the schema does not name fails the check, and a `default` (which the
 * validator would write into the body) does not compile. A failed check only
 * means "not decided here": the request goes to Express, whose validator
 * gives the reference answer.
 * `open` (responses): what the response validator checks; unknown properties
 * and defaults are allowed, as there.
 */

export type Schema = Record<string, unknown>;
export type Check = (value: unknown) => boolean;

const KNOWN = new Set(['type', 'properties', 'required', 'enum', 'items', 'format', 'minimum', 'maximum', 'description', 'default', '$ref', 'allOf']);
const INT_FORMATS: Record<string, [number, number]> = { int32: [-(2 ** 31), 2 ** 31 - 1], int64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER] };
/**
 * String formats, as the validator's (ajv-formats) in `open` mode; in `closed` mode a uuid is the plain
 * 8-4-4-4-12 form only (the validator also takes a `urn:uuid:` prefix: such a request goes to Express).
 */
const STRING_FORMATS: Record<string, Record<'open' | 'closed', RegExp>> = {
  uuid: { open: /^(?:urn:uuid:)?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$/i, closed: /^[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$/i },
  'date-time': {
    open: /^\d{4}-[01]\d-[0-3]\d[t\s](?:[0-2]\d:[0-5]\d:[0-5]\d|23:59:60)(?:\.\d+)?(?:z|[+-]\d\d(?::?\d\d)?)$/i,
    closed: /^\d{4}-[01]\d-[0-3]\dT[0-2]\d:[0-5]\d:[0-5]\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)$/,
  },
};

export class UnsupportedSchemaError extends Error {}

export function compileSchema(schema: Schema, doc: { components?: { schemas?: Record<string, Schema> } }, mode: 'closed' | 'open', at = '#'): Check {
  if (typeof schema.$ref === 'string') {
    if (Object.keys(schema).some((k) => k !== '$ref' && k !== 'description')) throw new UnsupportedSchemaError(`${at}: $ref with siblings`);
    const name = /^#\/components\/schemas\/(.+)$/.exec(schema.$ref)?.[1];
    const target = name ? doc.components?.schemas?.[name] : undefined;
    if (!target) throw new UnsupportedSchemaError(`${at}: unresolved ${schema.$ref}`);
    return compileSchema(target, doc, mode, schema.$ref);
  }
  for (const k of Object.keys(schema)) if (!KNOWN.has(k)) throw new UnsupportedSchemaError(`${at}: keyword ${k}`);
  if (mode === 'closed' && schema.default !== undefined) throw new UnsupportedSchemaError(`${at}: default (the validator would fill it in)`);
  const checks: Check[] = [];
  if (schema.allOf !== undefined) {
    // Each part closed would refuse the others' properties: only responses (open) use allOf.
    if (mode === 'closed') throw new UnsupportedSchemaError(`${at}: allOf in a request`);
    const parts = (schema.allOf as Schema[]).map((p, i) => compileSchema(p, doc, mode, `${at}.allOf[${i}]`));
    checks.push((v) => parts.every((c) => c(v)));
    if (schema.type === undefined) return checks.length === 1 ? checks[0]! : (v) => checks.every((c) => c(v));
  }
  const type = schema.type;
  switch (type) {
    case 'object': {
      const props = Object.entries((schema.properties ?? {}) as Record<string, Schema>).map(([k, s]) => [k, compileSchema(s, doc, mode, `${at}.${k}`)] as const);
      const byName = new Map(props);
      const required = (schema.required ?? []) as string[];
      checks.push((v) => {
        if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
        const o = v as Record<string, unknown>;
        // A property holding undefined is absent, as JSON.stringify and the validator (Ajv) see it.
        for (const r of required) if (o[r] === undefined) return false;
        for (const [k, val] of Object.entries(o)) {
          if (val === undefined) continue;
          const c = byName.get(k);
          if (!c) {
            if (mode === 'closed') return false;
            continue;
          }
          if (!c(val)) return false;
        }
        return true;
      });
      break;
    }
    case 'array': {
      const item = schema.items ? compileSchema(schema.items as Schema, doc, mode, `${at}[]`) : () => true;
      checks.push((v) => Array.isArray(v) && v.every((x) => item(x)));
      break;
    }
    case 'string':
      checks.push((v) => typeof v === 'string');
      break;
    case 'integer':
      checks.push((v) => typeof v === 'number' && Number.isInteger(v));
      break;
    case 'boolean':
      checks.push((v) => typeof v === 'boolean');
      break;
    default:
      throw new UnsupportedSchemaError(`${at}: type ${String(type)}`);
  }
  if (schema.format !== undefined) {
    if (type === 'string') {
      const re = STRING_FORMATS[String(schema.format)]?.[mode];
      if (!re) throw new UnsupportedSchemaError(`${at}: format ${String(schema.format)}`);
      checks.push((v) => re.test(v as string));
    } else {
      const range = type === 'integer' ? INT_FORMATS[String(schema.format)] : undefined;
      if (!range) throw new UnsupportedSchemaError(`${at}: format ${String(schema.format)}`);
      checks.push((v) => (v as number) >= range[0] && (v as number) <= range[1]);
    }
  }
  if (schema.minimum !== undefined || schema.maximum !== undefined) {
    if (type !== 'integer') throw new UnsupportedSchemaError(`${at}: minimum/maximum on ${String(type)}`);
    const min = (schema.minimum as number | undefined) ?? -Infinity;
    const max = (schema.maximum as number | undefined) ?? Infinity;
    checks.push((v) => (v as number) >= min && (v as number) <= max);
  }
  if (schema.enum !== undefined) {
    const allowed = new Set(schema.enum as unknown[]);
    checks.push((v) => allowed.has(v));
  }
  return checks.length === 1 ? checks[0]! : (v) => checks.every((c) => c(v));
}
