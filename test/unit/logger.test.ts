import { createLogger, redactUrl } from '../../src/logger';
import { captureLog } from '../support/log-capture';

function capture() {
  const log = captureLog();
  return { log, logger: createLogger({ log: { level: 'info', format: 'json' } }, 'test', log.sink) };
}

describe('logger redaction', () => {
  it('never writes secrets, at the top level or nested', () => {
    const { log, logger } = capture();
    logger.info(
      {
        pull_secret: '{"auths":{"x":{"auth":"TOPSECRET1"}}}',
        body: { pull_secret: 'TOPSECRET2', name: 'c1' },
        req: { headers: { authorization: 'Bearer TOPSECRET3', 'x-secret-key': 'TOPSECRET4' } },
        S3_SECRET_KEY: 'TOPSECRET5',
      },
      'cluster created',
    );
    const out = log.text();
    expect(out).toContain('cluster created');
    expect(out).toContain('"name":"c1"');
    for (let i = 1; i <= 5; i++) expect(out).not.toContain(`TOPSECRET${i}`);
    expect(out).toContain('[redacted]');
  });

  it('hides the password in connection URLs', () => {
    expect(redactUrl('postgres://landfall:hunter2@db:5432/landfall')).toBe('postgres://landfall:redacted@db:5432/landfall');
  });
});
