/**
 * A live stream of a cluster's (or infra-env's) events over Server-Sent
 * Events: GET /api/assisted-install/v2/events/stream?cluster_id=… (Landfall
 * extension). It reads the events table by sequence number, so it works with
 * any number of API processes and resumes from Last-Event-ID after a reconnect;
 * a PostgreSQL notification wakes it when an event is recorded (event-wakeups.ts).
 */
import type { Request, Response } from 'express';
import type { Principal } from '../auth/principal';
import type { ServiceContext } from '../services/context';
import { loadCluster, loadInfraEnv } from '../services/access';
import { badRequest } from '../errors';
import type { EventRow } from '../db/rows';
import { presentEvent } from './assisted/presenters';

const POLL_MS = 1000;
const HEARTBEAT_MS = 15000;

export async function streamEvents(ctx: ServiceContext, p: Principal, req: Request, res: Response): Promise<void> {
  const clusterId = typeof req.query.cluster_id === 'string' ? req.query.cluster_id : undefined;
  const infraEnvId = typeof req.query.infra_env_id === 'string' ? req.query.infra_env_id : undefined;
  // Everything, unfiltered, only for an administrator (the operator follows every cluster with it).
  if (!clusterId && !infraEnvId && p.kind !== 'admin') throw badRequest('cluster_id or infra_env_id is required (only an administrator may follow every event)');
  if (clusterId) await loadCluster(ctx, p, clusterId);
  if (infraEnvId) await loadInfraEnv(ctx, p, infraEnvId);
  // An empty Last-Event-ID is no cursor (an EventSource that has seen no id sends none at all).
  const rawHeader = req.headers['last-event-id'];
  const header = (typeof rawHeader === 'string' ? rawHeader.trim() : undefined) || undefined;
  const given = String(header ?? req.query.after ?? '0').trim();
  let cursor: number;
  if (given === 'latest') {
    const row = (await ctx.db('events').max('seq as seq').first()) as { seq: string | number | null } | undefined;
    cursor = Number(row?.seq ?? 0);
  } else {
    cursor = Number(given);
    // Checked before the 200 goes out: a cursor PostgreSQL's bigint cannot hold would fail the first query after it.
    if (!/^\d{1,15}$/.test(given) || !Number.isSafeInteger(cursor)) throw badRequest(`${header !== undefined ? 'Last-Event-ID' : 'after'}: must be an event id (a non-negative integer below 2^53) or "latest"`, { field: 'after' });
  }

  res.status(200).set({ 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' });
  res.flushHeaders();
  let closed = false;
  req.on('close', () => {
    closed = true;
  });
  let lastWrite = Date.now();
  while (!closed) {
    const q = ctx.db<EventRow>('events').where('seq', '>', cursor).orderBy('seq').limit(500);
    if (clusterId) q.where({ cluster_id: clusterId });
    if (infraEnvId) q.where({ infra_env_id: infraEnvId });
    const rows = await q;
    for (const e of rows) {
      res.write(`id: ${e.seq}\nevent: ${e.name}\ndata: ${JSON.stringify(presentEvent(e))}\n\n`);
      cursor = Number(e.seq);
      lastWrite = Date.now();
    }
    if (Date.now() - lastWrite > HEARTBEAT_MS) {
      // A comment line keeps proxies from closing an idle stream.
      res.write(': keep-alive\n\n');
      lastWrite = Date.now();
    }
    // Woken as soon as any process records an event (PostgreSQL NOTIFY); the poll is the fallback.
    if (rows.length < 500) await (ctx.eventWakeups ? ctx.eventWakeups.wait(POLL_MS) : new Promise((r) => setTimeout(r, POLL_MS)));
  }
}
