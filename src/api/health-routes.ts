import { Router } from 'express';
import { checkReadiness, type DependencyCheck } from '../readiness';

export function healthRoutes(deps: { checks: DependencyCheck[]; timeoutMs: number }): Router {
  const r = Router();
  // Liveness says only that the process serves HTTP; dependencies belong to readiness.
  r.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  r.get('/readyz', async (_req, res) => {
    const report = await checkReadiness(deps.checks, deps.timeoutMs);
    res
      .status(report.ready ? 200 : 503)
      .json({ status: report.ready ? 'ready' : 'unready', failing: report.failing, checks: report.checks });
  });
  return r;
}
