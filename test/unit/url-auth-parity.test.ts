/**
 * A token has the same rights in ?api_key as in its own header (fuzzing found
 * an agent token in ?api_key reading what the same token in X-Secret-Key could
 * not). src/api/assisted/auth.ts reads a ?api_key token as the header its kind
 * belongs in, which gives that parity only if every operation that takes
 * ?api_key (urlAuth) also takes both headers: held here for the whole document.
 */
import { loadOpenApiDocument } from '../../src/api/openapi/spec';

type Operation = { operationId?: string; security?: Array<Record<string, unknown>> };

const doc = loadOpenApiDocument() as { security?: Array<Record<string, unknown>>; paths: Record<string, Record<string, Operation>> };
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
const operations = Object.entries(doc.paths).flatMap(([p, item]) =>
  Object.entries(item)
    .filter(([m]) => METHODS.includes(m))
    .map(([m, op]) => ({ name: op.operationId ?? `${m.toUpperCase()} ${p}`, schemes: (op.security ?? doc.security ?? []).flatMap((s) => Object.keys(s)) })),
);

it('every operation that takes a token in ?api_key takes it in the user and the agent header too', () => {
  const urlAuth = operations.filter((o) => o.schemes.includes('urlAuth'));
  expect(urlAuth.length).toBeGreaterThanOrEqual(7);
  expect(urlAuth.filter((o) => !o.schemes.includes('userAuth') || !o.schemes.includes('agentAuth')).map((o) => `${o.name}: ${o.schemes.join(', ')}`)).toEqual([]);
});
