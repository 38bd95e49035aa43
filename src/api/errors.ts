import type { ErrorRequestHandler, RequestHandler } from 'express';
import { AppError, ERROR_STATUS } from '../errors';
import type { Logger } from '../logger';
import { unavailableDependency } from './dependency-errors';

/** Seconds a client is told to wait before trying again while a dependency is away. */
const RETRY_AFTER_SECONDS = 5;

/**
 * The error body of the assisted-service API (kind, id, href, code, reason), so
 * its generated clients can read our errors. `id` is the status as a number,
 * `code` the same status as a string, as AS does.
 */
export function errorBody(status: number, reason: string, details?: Record<string, unknown>) {
  return { kind: 'Error', id: status, href: '', code: String(status), reason, ...(details ? { details } : {}) };
}

export const notFoundHandler: RequestHandler = (req, res) => {
  res.status(404).json(errorBody(404, `no route for ${req.method} ${req.path}`));
};

interface HttpishError {
  errors?: Array<{ path?: string; message?: string }>;
  status?: number;
  statusCode?: number;
  type?: string;
  expose?: boolean;
  message?: string;
  /** The validator's 405 carries `Allow`, which RFC 9110 requires on a 405. */
  headers?: Record<string, string>;
}

export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    if (res.headersSent) {
      req.socket.destroy();
      return;
    }
    const answer = errorAnswer(err, () => (req as { log?: Logger }).log ?? logger);
    if (answer.headers) res.set(answer.headers);
    res.status(answer.status).json(answer.body);
  };
}

/** What the API answers for an error: status, error body, headers (Retry-After, a 405's Allow). Logs 503s and 500s. */
export interface ErrorAnswer {
  status: number;
  body: ReturnType<typeof errorBody>;
  headers?: Record<string, string>;
}

/**
 * The one mapping from a thrown error to the answer, shared by Express's error
 * handler and the agent fast path (src/api/agent-fast-path.ts). `log` is the
 * request-bound logger, asked for only when something is logged.
 */
export function errorAnswer(err: unknown, log: () => Logger): ErrorAnswer {
  if (err instanceof AppError) return { status: err.status, body: errorBody(err.status, err.message, err.details) };
  // body-parser and friends raise http-errors with a 4xx status and a safe message.
  const h = err as HttpishError;
  const status = h.status ?? h.statusCode;
  if (status && status >= 400 && status < 500) {
    const headers = h.headers;
    if (Array.isArray(h.errors) && h.errors.length) {
      // OpenAPI validation: name each field ("body.name", "query.limit") and the rule it broke.
      const reason = h.errors
        .slice(0, 5)
        .map((e) => `${(e.path ?? '').replace(/^\//, '').replace(/\//g, '.')}: ${e.message ?? 'invalid'}`)
        .join('; ');
      return { status, body: errorBody(status, reason), headers };
    }
    const reason =
      h.type === 'entity.parse.failed'
        ? 'request body is not valid JSON'
        : h.type === 'entity.too.large'
          ? 'request body is too large'
          : h.expose && h.message
            ? h.message
            : 'bad request';
    return { status, body: errorBody(status, reason), headers };
  }
  const away = unavailableDependency(err);
  if (away) {
    // A dependency restarting is an outage to wait out, not a bug: 503 and when to come back.
    log().warn({ dependency: away, err: (err as Error)?.message?.split('\n')[0] }, 'dependency unavailable');
    return {
      status: ERROR_STATUS.dependency_unavailable,
      body: errorBody(503, `${away === 'a dependency' ? 'a dependency of the service' : away} is unavailable; try again shortly`),
      headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
    };
  }
  log().error({ err }, 'unhandled error');
  return { status: ERROR_STATUS.internal, body: errorBody(500, 'internal error; see the service log for this request id') };
}
