import { diagnose } from '../../agent/diagnostics';

const err = (code: string, message = code) => Object.assign(new Error('fetch failed'), { cause: Object.assign(new Error(message), { code }) });

describe('registration diagnostics', () => {
  const url = 'https://landfall.example.com:8443';
  it.each([
    [err('ENOTFOUND'), 'dns', /resolve landfall\.example\.com/],
    [err('ECONNREFUSED'), 'refused', /landfall\.example\.com:8443 refused/],
    [err('UND_ERR_CONNECT_TIMEOUT'), 'timeout', /no route or no answer/],
    [err('SELF_SIGNED_CERT_IN_CHAIN'), 'tls-ca', /does not trust/],
    [err('CERT_NOT_YET_VALID'), 'tls-clock', /not valid yet/],
    [err('ERR_TLS_CERT_ALTNAME_INVALID'), 'tls-name', /does not name/],
  ])('names the cause of %s', (e, code, what) => {
    const d = diagnose(url, { error: e }, undefined);
    expect(d.code).toBe(code);
    expect(d.what).toMatch(what);
    expect(d.fix.length).toBeGreaterThan(20);
  });
  it('reads HTTP answers', () => {
    expect(diagnose(url, { status: 401, body: 'bad token' }, undefined).code).toBe('unauthorized');
    expect(diagnose(url, { status: 404 }, undefined).code).toBe('not-found');
    expect(diagnose(url, { status: 407 }, 'http://proxy:3128').what).toMatch(/proxy http:\/\/proxy:3128 requires authentication/);
    expect(diagnose(url, { status: 503 }, undefined).code).toBe('server-error');
  });
});
