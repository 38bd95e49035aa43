import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ConfigError, ENV_NAMES, configToEnv, parseConfig } from '../../src/config';

describe('parseConfig', () => {
  it('gives working defaults for one laptop', () => {
    const c = parseConfig({});
    expect(c.api.port).toBe(8090);
    expect(c.temporal.address).toBe('127.0.0.1:7233');
    expect(c.temporal.uiPort).toBe(8233);
    expect(c.temporal.retentionHours).toBe(720);
    expect(c.storage).toEqual({ backend: 'local', dir: path.resolve('.state', 'objects') });
    expect(c.database.url).toBeUndefined();
    expect(c.log.format).toBe('json');
  });

  it('is pretty on a TTY only when LOG_FORMAT is auto', () => {
    expect(parseConfig({}, { isTty: true }).log.format).toBe('pretty');
    expect(parseConfig({ LOG_FORMAT: 'json' }, { isTty: true }).log.format).toBe('json');
  });

  it.each([
    ['API_PORT', 'abc', /API_PORT .*port number.*"abc"/],
    ['API_PORT', '70000', /API_PORT must be between 1 and 65535/],
    ['DATABASE_URL', 'mysql://x', /DATABASE_URL must be a postgres/],
    ['TEMPORAL_ADDRESS', 'temporal', /TEMPORAL_ADDRESS must be host:port/],
    ['LOG_LEVEL', 'loud', /LOG_LEVEL/],
    ['STORAGE_BACKEND', 'ftp', /STORAGE_BACKEND/],
    ['READINESS_TIMEOUT_MS', '-5', /READINESS_TIMEOUT_MS must be greater than 0/],
    ['S3_BUCKET', 'Bad_Bucket', /S3_BUCKET must be a valid S3 bucket name/],
    ['API_REFRESHER_NICE', '20', /API_REFRESHER_NICE/],
    ['API_REFRESHER_NICE', '-1', /API_REFRESHER_NICE/],
    ['API_REFRESHER_MAIN_NICE', '-21', /API_REFRESHER_MAIN_NICE/],
    ['API_REFRESHER_MAIN_NICE', '20', /API_REFRESHER_MAIN_NICE/],
  ])('rejects %s=%s naming the variable', (name, value, pattern) => {
    let err: unknown;
    try {
      parseConfig({ [name]: value });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).variable).toBe(name);
    expect((err as Error).message).toMatch(pattern);
  });

  it("runs the API's refresher at nice 10 unless told otherwise; 0 is its own setting, not the default", () => {
    expect(parseConfig({}).apiRefresherNice).toBe(10);
    expect(parseConfig({ API_REFRESHER_NICE: '0' }).apiRefresherNice).toBe(0);
    expect(parseConfig({ API_REFRESHER_NICE: '19' }).apiRefresherNice).toBe(19);
    // Unset, the main thread's follows API_REFRESHER_NICE.
    expect(parseConfig({}).apiRefresherMainNice).toBe(10);
    expect(parseConfig({ API_REFRESHER_NICE: '3' }).apiRefresherMainNice).toBe(3);
    expect(parseConfig({ API_REFRESHER_MAIN_NICE: '-20' }).apiRefresherMainNice).toBe(-20);
    expect(parseConfig({ API_REFRESHER_MAIN_NICE: '0' }).apiRefresherMainNice).toBe(0);
  });

  it('requires the S3 settings when STORAGE_BACKEND=s3', () => {
    expect(() => parseConfig({ STORAGE_BACKEND: 's3', S3_ENDPOINT: 'http://minio:9000' })).toThrow(/S3_ACCESS_KEY is required/);
    const c = parseConfig({ STORAGE_BACKEND: 's3', S3_ENDPOINT: 'http://minio:9000', S3_ACCESS_KEY: 'a', S3_SECRET_KEY: 'b' });
    expect(c.storage).toMatchObject({ backend: 's3', endpoint: 'http://minio:9000', bucket: 'landfall' });
  });

  it('round-trips through configToEnv, so children see what the parent resolved', () => {
    const env = {
      API_PORT: '9999',
      DATABASE_URL: 'postgres://u:p@db:5432/x',
      TEMPORAL_ADDRESS: 'temporal:7233',
      STORAGE_BACKEND: 's3',
      S3_ENDPOINT: 'http://minio:9000',
      S3_ACCESS_KEY: 'ak',
      S3_SECRET_KEY: 'sk',
      READINESS_TIMEOUT_MS: '1234',
      API_REFRESHER_NICE: '3',
      API_REFRESHER_MAIN_NICE: '-2',
    };
    const c = parseConfig(env);
    const again = parseConfig(configToEnv(c) as Record<string, string>);
    expect(again).toEqual(c);
    expect(Object.keys(configToEnv(c)).sort()).toEqual([...ENV_NAMES].sort());
  });
});

describe('landfall with a bad variable', () => {
  it('prints one line naming the variable and exits non-zero', () => {
    const main = path.resolve(__dirname, '../../dist/src/cli/main.js');
    const r = spawnSync(process.execPath, [main, 'api'], { env: { PATH: process.env.PATH, API_PORT: 'eighty' }, encoding: 'utf8' });
    expect(r.status).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^landfall: invalid configuration: API_PORT /);
    expect(r.stdout).toBe('');
  });
});
