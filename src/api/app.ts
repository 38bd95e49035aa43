import express, { type Express } from 'express';
import { pinoHttp } from 'pino-http';
import * as OpenApiValidator from 'express-openapi-validator';
import type { Client } from '@temporalio/client';
import type { Logger } from '../logger';
import type { DependencyCheck } from '../readiness';
import type { SelfCheckRepo } from '../db/self-checks-repo';
import type { ServiceContext } from '../services/context';
import { healthRoutes } from './health-routes';
import { selfCheckRoutes } from './self-check-routes';
import { imageRoutes } from './image-routes';
import { webUiRoutes } from './web-ui';
import { errorHandler, notFoundHandler } from './errors';
import { rejectNulCharacters } from './nul-guard';
import { assistedRoutes } from './assisted/routes';
import { authenticate } from './assisted/auth';
import { BASE_PATH } from './assisted/presenters';
import { LANDFALL_API_BASE, loadOpenApiDocument, splitOpenApiDocument } from './openapi/spec';
import { insightsRoutes } from './landfall/insights.routes';
import { cacheValidatorRouteMatchers } from './openapi/route-matcher-cache';
import { isWarmup, stopWarmup, unlessWarmup } from './openapi/validator-warmup';
import { unvalidatedRoutes } from './openapi/unvalidated-routes';
import { requestShape } from './openapi/request-shape';
import { lazyRequestLogger, requestForLog, requestId } from './request-context';
import { jsonBodyParser } from './pre-read-body';

export interface ApiDeps {
  logger: Logger;
  temporal: Client;
  selfChecks: SelfCheckRepo;
  readinessChecks: DependencyCheck[];
  readinessTimeoutMs: number;
  services: ServiceContext;
  authType: 'none' | 'local';
  validateResponses: boolean;
  bodyLimitBytes: number;
  /** GET /metrics: its content type and text (with several API processes, summed over them: cluster.ts). */
  metrics?: { contentType: string; text(): Promise<string> };
}

export function createApp(deps: ApiDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  // Repeated query keys (host_ids=a&host_ids=b) become arrays; nothing deeper.
  app.set('query parser', 'extended');

  // Probes and the agent poll and reply (every host, every minute) are not logged per request.
  const unlogged = (url: string | undefined) => url === '/healthz' || url === '/readyz' || /\/instructions(\?|$)/.test(url ?? '');
  const httpLogger = pinoHttp({
    logger: deps.logger,
    genReqId: requestId,
    serializers: {
      req: requestForLog,
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
    customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info'),
    autoLogging: { ignore: (req) => unlogged(req.url) },
  });
  app.use((req, res, next) => {
    if (!unlogged(req.url) && !isWarmup(req)) return httpLogger(req, res, next);
    // What pino-http gives a request it does not log (its id, X-Request-Id, a request-bound req.log for the
    // error handler), without building that child logger on every poll: only if something logs.
    const id = requestId(req, res);
    const log = lazyRequestLogger(deps.logger, { id, method: req.method, url: req.url });
    Object.assign(req, { id });
    Object.defineProperty(req, 'log', { configurable: true, get: log });
    next();
  });
  // strict: false because some AS operations take a bare JSON string (install-config, ingress-cert).
  // A body the agent fast path already read and handed on is parsed from its bytes, by the same parser.
  app.use(jsonBodyParser(express.json({ limit: deps.bodyLimitBytes, strict: false })));
  app.use(rejectNulCharacters);

  app.use(healthRoutes({ checks: deps.readinessChecks, timeoutMs: deps.readinessTimeoutMs }));
  const metrics = deps.metrics;
  if (metrics) {
    app.get('/metrics', async (_req, res) => {
      res.set('Content-Type', metrics.contentType).send(await metrics.text());
    });
  }
  // A self-check writes a row, starts a workflow and stores an object: a user's token is needed as for the API.
  // (Mounted ahead of the validator of Landfall's own operations: the validator's warm-up passes it over.)
  app.use('/api/landfall/v1', unlessWarmup(authenticate(deps.authType, deps.services.signer, [{ userAuth: [] }])), unlessWarmup(selfCheckRoutes({ selfChecks: deps.selfChecks, temporal: deps.temporal })));
  // Landfall's own operations in the OpenAPI document (path-level server /api/landfall): validated like the rest.
  app.use(
    LANDFALL_API_BASE,
    OpenApiValidator.middleware({
      apiSpec: splitOpenApiDocument(loadOpenApiDocument()).landfall as never,
      validateRequests: { allowUnknownQueryParameters: false },
      validateResponses: deps.validateResponses ? { removeAdditional: false } : false,
      validateSecurity: false,
      validateFormats: true,
      fileUploader: false,
      // The self-checks above are not in the document; anything else under /api/landfall is a 404 from the validator.
      ignoreUndocumented: false,
    }),
    stopWarmup,
  );
  app.use('/api/landfall/v1', authenticate(deps.authType, deps.services.signer, [{ userAuth: [] }]), insightsRoutes(deps.services));
  // Presigned image downloads (not part of the OpenAPI document): before its validator.
  app.use(imageRoutes({ services: deps.services }));
  // The web UI (dist/web) at `/`; it passes API, image, probe and metrics paths on.
  app.use(webUiRoutes());

  const spec = loadOpenApiDocument();
  app.get(`${BASE_PATH}/v2/openapi.json`, (_req, res) => {
    res.json(spec);
  });
  // The generated Python client sends booleans as "True"/"False", in the query
  // and in header parameters (get_unregistered_clusters); the validator only
  // coerces lower case.
  const boolHeaders = booleanHeaderNames(spec);
  app.use(BASE_PATH, (req, _res, next) => {
    if (req.url.includes('True') || req.url.includes('False')) {
      req.url = req.url.replace(/=(True|False)(?=&|$)/g, (_m, v: string) => `=${v.toLowerCase()}`);
    }
    for (const name of boolHeaders) {
      const v = req.headers[name];
      if (v === 'True' || v === 'False') req.headers[name] = v.toLowerCase();
    }
    next();
  });
  app.use(BASE_PATH, requestShape(spec as never, BASE_PATH));
  cacheValidatorRouteMatchers();
  // Log uploads are streamed by their handler (busboy), not buffered by the validator.
  const unvalidated = (p: string) => /\/v2\/clusters\/[^/]+\/logs$/.test(p) || p.endsWith('/v2/openapi.json');
  app.use(
    OpenApiValidator.middleware({
      apiSpec: splitOpenApiDocument(loadOpenApiDocument()).assisted as never,
      validateRequests: { allowUnknownQueryParameters: false },
      validateResponses: deps.validateResponses ? { removeAdditional: false } : false,
      validateSecurity: false,
      validateFormats: true,
      fileUploader: false,
      ignorePaths: unvalidated,
      ignoreUndocumented: false,
    }),
    stopWarmup,
  );
  // After the validator: a request that carries req.openapi is one the validator takes as matched.
  app.use(unvalidatedRoutes(spec as never, BASE_PATH, unvalidated));
  const defaultSecurity = (spec.security as Array<Record<string, unknown>> | undefined) ?? [{ userAuth: [] }];
  app.use(BASE_PATH, authenticate(deps.authType, deps.services.signer, defaultSecurity, { agentTokenTtlSeconds: deps.services.agentTokenTtlSeconds }), assistedRoutes(deps.services));

  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger));
  return app;
}

/** Names (lower case, as Node keys headers) of the header parameters the document types as boolean. */
function booleanHeaderNames(spec: Record<string, unknown>): string[] {
  const names = new Set<string>();
  const visit = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(visit);
    if (!v || typeof v !== 'object') return;
    const o = v as { in?: unknown; name?: unknown; schema?: { type?: unknown } };
    if (o.in === 'header' && typeof o.name === 'string' && o.schema?.type === 'boolean') names.add(o.name.toLowerCase());
    Object.values(v).forEach(visit);
  };
  visit(spec);
  return [...names];
}
