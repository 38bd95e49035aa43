/**
 * Landfall's own API under /api/landfall/v1 that the OpenAPI document
 * describes (paths whose `servers` is /api/landfall): install insights.
 */
import { Router, type Request, type Response } from 'express';
import type { Principal } from '../../auth/principal';
import type { ServiceContext } from '../../services/context';
import { getInsights } from '../../services/insights-service';

const text = (req: Request, name: string): string | undefined => {
  const v = req.query[name];
  return typeof v === 'string' ? v : undefined;
};

export function insightsRoutes(ctx: ServiceContext): Router {
  const r = Router();
  r.get('/insights', async (req: Request, res: Response) => {
    res.json(await getInsights(ctx, res.locals.principal as Principal, { from: text(req, 'from'), to: text(req, 'to') }));
  });
  return r;
}
