/**
 * A request body the agent fast path read and then handed to Express
 * (src/api/agent-fast-path.ts): the request stream is spent, so body-parser
 * would see a finished request and leave `req.body` unset. The bytes are kept
 * on the request and parsed here by the very same express.json middleware,
 * fed from a message carrying the same headers and bytes: a malformed, empty
 * or oversized body gets exactly the error it gets when Express reads the
 * socket itself.
 */
import { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';

const PRE_READ = Symbol('landfall.preReadBody');

/** Keeps the bytes read off `req` for the JSON parser. */
export function keepPreReadBody(req: IncomingMessage, body: Buffer): void {
  (req as IncomingMessage & { [PRE_READ]?: Buffer })[PRE_READ] = body;
}

export function jsonBodyParser(json: RequestHandler): RequestHandler {
  return (req, res, next) => {
    const body = (req as unknown as { [PRE_READ]?: Buffer })[PRE_READ];
    if (!body) return json(req, res, next);
    const replay = new IncomingMessage(req.socket);
    replay.headers = req.headers;
    replay.method = req.method;
    replay.url = req.url;
    // Complete, as the parser marks a message it read to the end: an incomplete message that ends counts as
    // aborted and, destroyed, takes the shared socket (and the answer) with it.
    replay.complete = true;
    replay.push(body);
    replay.push(null);
    json(replay as typeof req, res, (err?: unknown) => {
      if (err) return next(err);
      req.body = (replay as unknown as { body?: unknown }).body;
      next();
    });
  };
}
