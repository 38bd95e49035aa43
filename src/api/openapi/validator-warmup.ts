/**
 * The OpenAPI validator compiled for every documented operation when a
 * serving process starts, not by the first person who calls each one.
 *
 * express-openapi-validator loads its document on the first request it sees
 * and compiles an operation's schemas (ajv) the first time that operation is
 * called. Measured on an idle machine, a fresh process answered its first
 * GET of a host (an unknown id, a 404) in 48 ms and the next in 5 ms, and its
 * first GET of a cluster in 36 ms; under the agent mix (bench/agent-api,
 * 1,700 req/s) such a first read took ~250 ms and held the polls queued
 * behind it in that process: the slowest report → read samples of a window
 * were its first reads.
 *
 * How: each operation is called once, with placeholder ids and an empty body,
 * through the Express app on a private loopback server (an ephemeral port of
 * this process alone, closed afterwards). Such a request carries WARMUP, a
 * symbol no client can set; the middleware after each validator (stopWarmup)
 * answers it 204, so no handler, authentication or database is reached. A
 * request the validator turns away (400: the placeholder is not a valid value)
 * has compiled the operation all the same.
 */
import { once } from 'node:events';
import { createServer, request, type IncomingMessage, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '../../logger';

export const WARMUP = Symbol('validator warm-up request');

/** Whether a request is one of the warm-up's own (set only by warmValidators' private server). */
export function isWarmup(req: IncomingMessage): boolean {
  return (req as IncomingMessage & { [WARMUP]?: boolean })[WARMUP] === true;
}

/** After a validator: the warm-up's requests end here, validated, before anything acts on them. */
export function stopWarmup(req: Request, res: Response, next: NextFunction): void {
  if (isWarmup(req)) {
    res.status(204).end();
    return;
  }
  next();
}

/** A middleware mounted ahead of a validator on a documented path, passed over by the warm-up's requests. */
export function unlessWarmup(mw: (req: Request, res: Response, next: NextFunction) => void): (req: Request, res: Response, next: NextFunction) => void {
  return (req, res, next) => (isWarmup(req) ? next() : mw(req, res, next));
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
const ZERO_UUID = '00000000-0000-0000-0000-000000000000';

type Operation = { method: string; url: string; body: boolean };

/** Every documented operation as a request the validator matches: path parameters filled with placeholders. */
export function warmupRequests(spec: Record<string, unknown>, base: string): Operation[] {
  const servers = (s: unknown) => ((s as Array<{ url?: string }> | undefined) ?? [])[0]?.url;
  const docBase = servers(spec.servers) ?? base;
  const out: Operation[] = [];
  for (const [p, item] of Object.entries((spec.paths ?? {}) as Record<string, Record<string, unknown>>)) {
    const prefix = servers(item.servers) ?? docBase;
    // Any value matches a path segment; an id-shaped one passes most parameters' formats too.
    const filled = p.replace(/\{([^}]+)\}/g, (_m, name: string) => (name.endsWith('_id') || name === 'id' ? ZERO_UUID : 'x'));
    for (const m of METHODS) if (item[m]) out.push({ method: m.toUpperCase(), url: `${prefix}${filled}`, body: m !== 'get' && m !== 'delete' });
  }
  return out;
}

export interface WarmupSummary {
  operations: number;
  /** How the operations were answered: 204 (validated, stopped by stopWarmup) or 400 (turned away by the validator). */
  statuses: Record<string, number>;
  /** Operations answered otherwise (not stopped after their validation: something ahead of the validator answered). */
  others: string[];
  ms: number;
}

/**
 * Calls every operation of `spec` once through `app` (see above); resolves
 * when all were answered, with how they were answered and how long it took.
 * Never rejects: a warm-up that fails leaves the compiling to the first
 * callers, as before (undefined).
 */
export async function warmValidators(app: RequestListener, spec: Record<string, unknown>, base: string, logger: Logger): Promise<WarmupSummary | undefined> {
  const started = performance.now();
  const ops = warmupRequests(spec, base);
  const server = createServer((req, res) => {
    (req as IncomingMessage & { [WARMUP]?: boolean })[WARMUP] = true;
    app(req, res);
  });
  try {
    server.listen({ host: '127.0.0.1', port: 0, exclusive: true });
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const statuses = new Map<number, number>();
    const others: string[] = [];
    // One at a time: the compiling is CPU, and the process may already be answering its first requests.
    for (const op of ops) {
      const status = await new Promise<number>((resolve) => {
        const body = op.body ? '{}' : undefined;
        const req = request({ host: '127.0.0.1', port, method: op.method, path: op.url, headers: body ? { 'content-type': 'application/json', 'content-length': '2' } : {} }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
          res.on('error', () => resolve(0));
        });
        req.on('error', () => resolve(0));
        req.end(body);
      });
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (status !== 204 && status !== 400) others.push(`${op.method} ${op.url} ${status}`);
    }
    const summary = { operations: ops.length, statuses: Object.fromEntries(statuses), others, ms: Math.round(performance.now() - started) };
    logger.debug(summary, 'openapi validator compiled for every operation');
    return summary;
  } catch (err) {
    logger.warn({ err: (err as Error).message }, 'openapi validator warm-up failed; operations compile on first use');
    return undefined;
  } finally {
    server.closeAllConnections();
    server.close();
  }
}
