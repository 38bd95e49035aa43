/**
 * GET /api/landfall/v1/insights: checks the window, loads what is stored
 * (src/db/insights-repo.ts) and lets src/domain/insights.ts compute. A user
 * sees their own clusters; an administrator (or AUTH_TYPE=none) sees all.
 */
import type { Principal } from '../auth/principal';
import { badRequest } from '../errors';
import { computeInsights, type InsightsReport } from '../domain/insights';
import { createInsightsRepo } from '../db/insights-repo';
import type { ServiceContext } from './context';

const DAY_MS = 24 * 3600 * 1000;
export const DEFAULT_WINDOW_DAYS = 7;
export const MAX_WINDOW_DAYS = 366;

function parseTime(name: string, v: string | undefined): Date | undefined {
  if (v === undefined || v === '') return undefined;
  const d = new Date(v);
  if (Number.isNaN(d.getTime())) throw badRequest(`query.${name}: must be an RFC 3339 date-time`, { field: name });
  return d;
}

/** The window asked for, with defaults: [to - 7 days, now). */
export function insightsWindow(now: Date, q: { from?: string | undefined; to?: string | undefined }): { from: Date; to: Date } {
  const to = parseTime('to', q.to) ?? now;
  const from = parseTime('from', q.from) ?? new Date(to.getTime() - DEFAULT_WINDOW_DAYS * DAY_MS);
  if (from.getTime() >= to.getTime()) throw badRequest(`query.from must be before query.to (got from=${from.toISOString()}, to=${to.toISOString()})`, { field: 'from' });
  if (to.getTime() - from.getTime() > MAX_WINDOW_DAYS * DAY_MS) throw badRequest(`the window may span at most ${MAX_WINDOW_DAYS} days`, { field: 'from' });
  return { from, to };
}

export async function getInsights(ctx: ServiceContext, p: Principal, q: { from?: string | undefined; to?: string | undefined }): Promise<InsightsReport> {
  const now = ctx.now();
  const window = insightsWindow(now, q);
  const owner = p.kind === 'admin' ? undefined : p.kind === 'user' ? p.user : '\u0000none';
  const rows = await createInsightsRepo(ctx.db).load({ ...window, ...(owner !== undefined ? { owner } : {}) });
  return computeInsights({ ...window, now, ...rows });
}
