/**
 * PostgreSQL cannot store U+0000 in text or jsonb: a NUL anywhere in a body,
 * query or path would reach the database and come back as a 500. No field of
 * the API has a use for it, so it is refused at the edge, naming the field.
 */
import type { RequestHandler } from 'express';
import { badRequest } from '../errors';

/** The dotted path of the first string holding a NUL character, or undefined. */
export function nulField(value: unknown, at: string, depth = 0): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? at : undefined;
  if (depth > 64 || value === null || typeof value !== 'object') return undefined;
  for (const [k, v] of Object.entries(value)) {
    if (k.includes('\u0000')) return `${at}.${k.split('\u0000').join('\\u0000')}`;
    const found = nulField(v, Array.isArray(value) ? `${at}[${k}]` : `${at}.${k}`, depth + 1);
    if (found) return found;
  }
  return undefined;
}

export const rejectNulCharacters: RequestHandler = (req, _res, next) => {
  const field = req.path.includes('\u0000') || /%00/i.test(req.url.split('?')[0]!) ? 'path' : (nulField(req.query, 'query') ?? nulField(req.body, 'body'));
  if (field) return next(badRequest(`${field}: must not contain a NUL (\\u0000) character`, { field }));
  next();
};
