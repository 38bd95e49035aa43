/**
 * One root pino logger per process; everything else takes a child bound to
 * the ids it works on ({ clusterId, hostId, workflowId }).
 */
import pino, { type Logger } from 'pino';
import type { Config } from './config';

export type { Logger };

/**
 * Secrets are redacted by key wherever they appear in the first levels of a
 * log object, so a handler that logs a whole request body cannot leak them.
 */
const SECRET_KEYS = [
  'pull_secret',
  'pullSecret',
  'password',
  'secret',
  'secretKey',
  'token',
  'accessToken',
  'api_key',
  'image_token',
  'authorization',
  'x-secret-key',
  'cookie',
  'S3_SECRET_KEY',
  'EC_PRIVATE_KEY_PEM',
  'DATABASE_URL',
];

export const REDACT_PATHS = [
  ...SECRET_KEYS.map((k) => `["${k}"]`),
  ...SECRET_KEYS.map((k) => `*["${k}"]`),
  ...SECRET_KEYS.map((k) => `*.*["${k}"]`),
];

export function createLogger(
  cfg: Pick<Config, 'log'>,
  name: string,
  destination?: pino.DestinationStream,
): Logger {
  const options: pino.LoggerOptions = {
    name,
    level: cfg.log.level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  if (destination) return pino(options, destination);
  if (cfg.log.format === 'pretty') {
    return pino({
      ...options,
      transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } },
    });
  }
  return pino(options);
}

/** Hides the password of a connection URL so it can be printed or logged. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = 'redacted';
    return u.toString();
  } catch {
    return '[unparseable url]';
  }
}
