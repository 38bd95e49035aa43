import path from 'node:path';
import { cacheValidatorRouteMatchers } from '../../src/api/openapi/route-matcher-cache';

type Matcher = { regexp: RegExp; keys: Array<{ name: string }> };
const validatorCopy = () =>
  require(require.resolve('path-to-regexp', { paths: [path.dirname(require.resolve('express-openapi-validator'))] })) as {
    pathToRegexp: (route: unknown, options?: Record<string, unknown>) => Matcher;
  };

describe('the validator route matcher cache', () => {
  beforeAll(() => cacheValidatorRouteMatchers());

  it('compiles a route once per options and matches as before', () => {
    const { pathToRegexp } = validatorCopy();
    const a = pathToRegexp('/v2/infra-envs/:infra_env_id/hosts/:host_id/instructions', { sensitive: false, strict: false });
    const b = pathToRegexp('/v2/infra-envs/:infra_env_id/hosts/:host_id/instructions', { sensitive: false, strict: false });
    expect(b).toBe(a);
    expect(a.keys.map((k) => k.name)).toEqual(['infra_env_id', 'host_id']);
    expect(a.regexp.exec('/v2/infra-envs/ie/hosts/h1/instructions')?.slice(1)).toEqual(['ie', 'h1']);
    expect(a.regexp.exec('/v2/infra-envs/ie/hosts/h1/progress')).toBeNull();
    expect(pathToRegexp('/v2/infra-envs/:infra_env_id/hosts/:host_id/instructions', { sensitive: true, strict: false })).not.toBe(a);
  });

  it('passes through what it cannot key safely', () => {
    const { pathToRegexp } = validatorCopy();
    const encode = (s: string) => s;
    expect(pathToRegexp('/x/:y', { encodePath: encode })).not.toBe(pathToRegexp('/x/:y', { encodePath: encode }));
  });
});
