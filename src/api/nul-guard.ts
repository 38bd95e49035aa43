/**
 * PostgreSQL cannot store U+0000 in text or jsonb: a NUL anywhere in a body,
 * query or path would reach the database and come back as a 500. No field of
 * the API has a use for it, so it is refused at the edge, naming the field.
 * A field that holds a JSON document (a step's output, an event's props) is
 * checked again once parsed (src/domain/input-rules.ts, nulProblem): there a
 * NUL arrives escaped, as \u0000, and passes this guard.
 */
import type { RequestHandler } from 'express';
import { badRequest } from '../errors';
import { nulField } from '../domain/input-rules';

export { nulField };

export const rejectNulCharacters: RequestHandler = (req, _res, next) => {
  const field = req.path.includes('\u0000') || /%00/i.test(req.url.split('?')[0]!) ? 'path' : (nulField(req.query, 'query') ?? nulField(req.body, 'body'));
  if (field) return next(badRequest(`${field}: must not contain a NUL (\\u0000) character`, { field }));
  next();
};
