/**
 * express-openapi-validator 5.6 finds the operation of a request by compiling
 * every documented route with path-to-regexp's `pathToRegexp`, on every
 * request, until one matches (lookupRoute in openapi.metadata.js). On the
 * agent poll that was about a tenth of the API process's CPU
 * (bench/agent-api). Upstream has a fix under review (cdimascio/
 * express-openapi-validator#1217, "perf: cache route matchers"); until a
 * release carries it, the validator's copy of `pathToRegexp` is memoised here.
 *
 * Safe because `pathToRegexp` is a pure function of its arguments, the
 * regular expressions it returns carry no `g`/`y` flag (so `exec` keeps no
 * state), and callers only read the result. Only string paths with
 * primitive options are cached, and the cache is bounded: route templates are
 * few, request paths never reach it. Express's own router calls path-to-regexp's
 * `match`, which does not go through this export.
 */
import path from 'node:path';

type PathToRegexp = (route: unknown, options?: Record<string, unknown>) => unknown;

const MAX_ENTRIES = 2000;
let installed = false;

export function cacheValidatorRouteMatchers(): void {
  if (installed) return;
  installed = true;
  const validatorDir = path.dirname(require.resolve('express-openapi-validator'));
  const mod = require(require.resolve('path-to-regexp', { paths: [validatorDir] })) as { pathToRegexp: PathToRegexp };
  const original = mod.pathToRegexp;
  const cache = new Map<string, unknown>();
  mod.pathToRegexp = function cachedPathToRegexp(route, options) {
    if (typeof route !== 'string') return original(route, options);
    // The validator passes { sensitive, strict }: a key of name=value pairs is cheap; anything not a primitive is not cached.
    let key = route;
    for (const name in options) {
      const v = options[name];
      if (v !== null && (typeof v === 'object' || typeof v === 'function')) return original(route, options);
      key += `\u0000${name}=${String(v)}`;
    }
    let hit = cache.get(key);
    if (hit === undefined) {
      hit = original(route, options);
      if (cache.size < MAX_ENTRIES) cache.set(key, hit);
    }
    return hit;
  };
}
