import express, { type Express } from 'express';
import { randomUUID } from 'node:crypto';
import { pinoHttp } from 'pino-http';
import type { Client } from '@temporalio/client';
import type { Logger } from '../logger';
import type { DependencyCheck } from '../readiness';
import type { SelfCheckRepo } from '../db/self-checks-repo';
import { healthRoutes } from './health-routes';
import { selfCheckRoutes } from './self-check-routes';
import { errorHandler, notFoundHandler } from './errors';

export interface ApiDeps {
  logger: Logger;
  temporal: Client;
  selfChecks: SelfCheckRepo;
  readinessChecks: DependencyCheck[];
  readinessTimeoutMs: number;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function createApp(deps: ApiDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);

  app.use(
    pinoHttp({
      logger: deps.logger,
      // Keep a caller's request id (from a proxy or the CLI) when it is sane, so one id follows a request end to end.
      genReqId: (req, res) => {
        const given = req.headers['x-request-id'];
        const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
        res.setHeader('X-Request-Id', id);
        return id;
      },
      // Headers carry tokens (Authorization, X-Secret-Key); log the route, not the headers.
      serializers: {
        req: (req: { id: string; method: string; url: string }) => ({ id: req.id, method: req.method, url: req.url.split('?')[0] }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
      customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info'),
      autoLogging: { ignore: (req) => req.url === '/healthz' || req.url === '/readyz' },
    }),
  );
  app.use(express.json({ limit: '2mb' }));

  app.use(healthRoutes({ checks: deps.readinessChecks, timeoutMs: deps.readinessTimeoutMs }));
  app.use('/api/landfall/v1', selfCheckRoutes({ selfChecks: deps.selfChecks, temporal: deps.temporal }));

  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger));
  return app;
}
