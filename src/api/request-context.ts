/**
 * What every request carries whichever handler answers it (Express or the
 * agent fast path): its id, echoed in X-Request-Id, and a logger bound to it
 * that is built only if something logs. One definition, so the two paths
 * cannot drift apart.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../logger';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Keep a caller's request id (from a proxy or the CLI) when it is sane, so one id follows a request end to end. */
export function requestId(req: IncomingMessage, res: ServerResponse): string {
  const given = req.headers['x-request-id'];
  const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
  res.setHeader('X-Request-Id', id);
  return id;
}

/** Headers and query strings carry tokens (Authorization, X-Secret-Key, api_key); log the route only. */
export function requestForLog(req: { id: string; method?: string; url?: string }) {
  return { id: req.id, method: req.method, url: (req.url ?? '').split('?')[0] };
}

/** A child logger bound to the request, made on first use: most requests never log. */
export function lazyRequestLogger(root: Logger, bound: { id: string; method?: string; url?: string }): () => Logger {
  let log: Logger | undefined;
  return () => (log ??= root.child({ req: requestForLog(bound) }));
}
