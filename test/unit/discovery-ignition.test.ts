/* eslint-disable @typescript-eslint/no-explicit-any -- Ignition JSON is read loosely here */
import { discoveryIgnition, mergeIgnition } from '../../src/domain/discovery-ignition';

const fileText = (cfg: any, path: string): string | undefined => {
  const f = cfg.storage.files.find((x: { path: string }) => x.path === path);
  return f ? decodeURIComponent(f.contents.source.replace(/^data:,/, '')) : undefined;
};

describe('discovery Ignition', () => {
  const base = { serviceBaseUrl: 'https://landfall.example.com', infraEnvId: 'ie-1', agentToken: 'tok.en.sig' };

  it('configures the agent from a 0600 file and enables its unit', () => {
    const cfg: any = discoveryIgnition(base);
    expect(cfg.ignition.version).toBe('3.4.0');
    const env = fileText(cfg, '/etc/landfall/agent.env')!;
    expect(env).toContain('LANDFALL_SERVICE_URL=https://landfall.example.com');
    expect(env).toContain('LANDFALL_INFRA_ENV_ID=ie-1');
    expect(env).toContain('LANDFALL_AGENT_TOKEN=tok.en.sig');
    expect(cfg.storage.files.find((f: { path: string }) => f.path === '/etc/landfall/agent.env').mode).toBe(0o600);
    const unit = cfg.systemd.units.find((u: { name: string }) => u.name === 'landfall-agent.service');
    expect(unit.enabled).toBe(true);
    // The token is never in the unit file, which any user can read.
    expect(unit.contents).not.toContain('tok.en.sig');
  });

  it('carries SSH key, proxy, NTP sources and CA bundle', () => {
    const cfg: any = discoveryIgnition({
      ...base,
      sshAuthorizedKey: 'ssh-ed25519 AAAA a@b\nssh-rsa BBBB c@d',
      proxy: { http_proxy: 'http://proxy:3128', no_proxy: '.local' },
      additionalNtpSources: 'ntp1.example.com, 10.0.0.1',
      additionalTrustBundle: '-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----',
    });
    expect(cfg.passwd.users[0]).toEqual({ name: 'core', sshAuthorizedKeys: ['ssh-ed25519 AAAA a@b', 'ssh-rsa BBBB c@d'] });
    expect(fileText(cfg, '/etc/landfall/agent.env')).toContain('HTTP_PROXY=http://proxy:3128');
    expect(fileText(cfg, '/etc/landfall/agent.env')).toContain('NO_PROXY=.local');
    expect(fileText(cfg, '/etc/chrony.d/landfall-ntp.conf')).toBe('server ntp1.example.com iburst\nserver 10.0.0.1 iburst\n');
    expect(fileText(cfg, '/etc/pki/ca-trust/source/anchors/landfall-additional.pem')).toContain('BEGIN CERTIFICATE');
  });

  it('merges an override: same path replaced, new entries added, version kept', () => {
    const over = JSON.stringify({
      ignition: { version: '3.1.0' },
      storage: { files: [{ path: '/etc/chrony.d/landfall-ntp.conf', contents: { source: 'data:,x' } }, { path: '/etc/motd', contents: { source: 'data:,hi' } }] },
    });
    const cfg: any = discoveryIgnition({ ...base, additionalNtpSources: 'a', ignitionConfigOverride: over });
    expect(cfg.ignition.version).toBe('3.4.0');
    expect(fileText(cfg, '/etc/chrony.d/landfall-ntp.conf')).toBe('x');
    expect(fileText(cfg, '/etc/motd')).toBe('hi');
    expect(fileText(cfg, '/etc/landfall/agent.env')).toContain('ie-1');
  });

  it('merges scalars and nested objects', () => {
    expect(mergeIgnition({ ignition: { version: '3.4.0' }, a: { b: 1, c: 2 } }, { a: { c: 3 }, d: 4 })).toEqual({ ignition: { version: '3.4.0' }, a: { b: 1, c: 3 }, d: 4 });
  });
});
