import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { ENV_NAMES, PRODUCTION_REQUIRED_ENV, parseConfig } from '../../src/config';

/**
 * No Docker engine runs here, so the production topology is checked by
 * reading it: the app's containers set only variables the config knows, set
 * every one production needs, and point at services that exist.
 */
interface Service {
  image?: string;
  build?: unknown;
  environment?: Record<string, string | number | boolean>;
  depends_on?: string[] | Record<string, unknown>;
}

const file = readFileSync(path.resolve(__dirname, '../../docker-compose.yml'), 'utf8');
const compose = parse(file, { merge: true }) as { services: Record<string, Service> };
const services = compose.services;

/** Compose interpolation: ${VAR:-default} takes the default, ${VAR} a placeholder. */
function interpolate(v: string): string {
  return v.replace(/\$\{(\w+)(?::?-([^}]*))?\}/g, (_m, _name: string, def?: string) => def ?? 'placeholder');
}

const landfall = Object.entries(services).filter(([, s]) => s.build !== undefined);

describe('docker-compose.yml', () => {
  it('has the production topology', () => {
    expect(Object.keys(services)).toEqual(
      expect.arrayContaining(['postgresql', 'temporal', 'temporal-ui', 'minio', 'landfall-api', 'landfall-worker']),
    );
    expect(landfall.map(([n]) => n).sort()).toEqual(['landfall-api', 'landfall-operator', 'landfall-worker']);
    expect(services.temporal!.environment!.DB).toMatch(/^postgres/);
  });

  it.each(landfall.map(([n]) => n))('%s sets only variables the config knows', (name) => {
    const env = services[name]!.environment ?? {};
    const unknown = Object.keys(env).filter((k) => !(ENV_NAMES as string[]).includes(k));
    expect(unknown).toEqual([]);
  });

  it('landfall-operator drives the API service of this file, with a kubeconfig mounted where it reads it', () => {
    const op = services['landfall-operator'] as Service & { volumes?: string[] };
    const env = Object.fromEntries(Object.entries(op.environment ?? {}).map(([k, v]) => [k, interpolate(String(v))]));
    const cfg = parseConfig(env);
    expect(Object.keys(services)).toContain(new URL(cfg.operator.landfallUrl).hostname);
    expect(op.volumes?.some((v) => v.endsWith(`:${env.OPERATOR_KUBECONFIG}:ro`))).toBe(true);
  });

  it.each(landfall.map(([n]) => n).filter((n) => n !== 'landfall-operator'))('%s sets every variable production requires, with values the config accepts', (name) => {
    const env = Object.fromEntries(Object.entries(services[name]!.environment ?? {}).map(([k, v]) => [k, interpolate(String(v))]));
    for (const required of PRODUCTION_REQUIRED_ENV) expect(env).toHaveProperty(required);
    const cfg = parseConfig(env);
    expect(cfg.storage.backend).toBe('s3');
    // Every address points at a service of this file.
    const hosts = [
      new URL(cfg.database.url!).hostname,
      cfg.temporal.address.split(':')[0]!,
      cfg.storage.backend === 's3' ? new URL(cfg.storage.endpoint).hostname : '',
    ];
    for (const h of hosts) expect(Object.keys(services)).toContain(h);
  });

  it('depends only on services that exist', () => {
    for (const [, s] of Object.entries(services)) {
      const deps = Array.isArray(s.depends_on) ? s.depends_on : Object.keys(s.depends_on ?? {});
      for (const d of deps) expect(Object.keys(services)).toContain(d);
    }
  });

  it('registers the search attributes the workflows use', () => {
    const { SEARCH_ATTRIBUTES } = jest.requireActual('../../src/temporal/names') as typeof import('../../src/temporal/names');
    for (const key of Object.values(SEARCH_ATTRIBUTES)) expect(file).toContain(key.name);
  });
});
