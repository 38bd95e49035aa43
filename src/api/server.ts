import cluster from 'node:cluster';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { Config } from '../config';
import { createLogger, type Logger } from '../logger';
import { createDb, pingDb } from '../db/database';
import { createRepos } from '../services/context';
import { buildServiceContext } from '../services/build-context';
import { EventWakeups } from './event-wakeups';
import { createMetrics } from '../metrics';
import { createObjectStore } from '../storage';
import { closeTemporalClient, createTemporalClient, pingTemporal } from '../temporal/client';
import { createApp } from './app';
import { agentFastPath } from './agent-fast-path';
import { agentAdmission, ADMISSION_RETRY_AFTER_S } from './admission';
import { loadOpenApiDocument } from './openapi/spec';
import { warmValidators, type WarmupSummary } from './openapi/validator-warmup';
import { BASE_PATH } from './assisted/presenters';
import { startRefresher } from '../services/refresh-queue';
import { OCCASIONAL_REFRESH_CACHE_HOSTS, setRefreshCacheHosts } from '../services/refresh-service';
import { clusterMetricsText, isApiWorker, joinApiCluster } from './cluster';

/** While closing, how often connections that have gone idle (their last answer written) are closed. */
const CLOSE_SWEEP_MS = 50;

export interface RunningApi {
  server: Server;
  url: string;
  /** Every operation's request validation compiled (validator-warmup.ts); a process started elsewhere (tests' replicas) has none here. */
  warmed?: Promise<WarmupSummary | undefined>;
  close(): Promise<void>;
}

/** Builds every port once and serves the API; `landfall api` and `landfall dev` both come here. */
export async function startApi(cfg: Config, logger: Logger = createLogger(cfg, 'api')): Promise<RunningApi> {
  if (!cfg.database.url) throw new Error('DATABASE_URL is required for the API (landfall dev starts an embedded PostgreSQL)');
  if (cfg.auth.type === 'local' && !cfg.auth.privateKeyPem) throw new Error('EC_PRIVATE_KEY_PEM is required when AUTH_TYPE=local (landfall dev generates one)');
  const db = createDb(cfg.database.url, cfg.database.poolMax, cfg.database.planCacheMode, logger, { pollLane: cfg.database.pollLane, pollLaneGatherMs: cfg.database.pollLaneGatherMs });
  const store = createObjectStore(cfg.storage);
  const temporal = createTemporalClient(cfg.temporal);
  const repos = createRepos(db);
  const metrics = createMetrics(db);
  const eventWakeups = new EventWakeups(cfg.database.url, logger);
  eventWakeups.start();
  const services = { ...buildServiceContext(cfg, { db, repos, store, temporal }), metrics: metrics.port, eventWakeups };
  // Validates what agents reported, coalesced per cluster, off their requests (src/services/refresh-queue.ts); in a
  // process of its own when the API runs several (refresher-process.ts), so a serving process runs it only alone.
  const refresher = cfg.apiRefresher && !isApiWorker() ? startRefresher(services, cfg.database.url, logger, { batchTargets: cfg.refreshBatchTargets }) : undefined;
  // A serving process beside a refresher refreshes only to settle a person's read.
  if (isApiWorker()) setRefreshCacheHosts(OCCASIONAL_REFRESH_CACHE_HOSTS);
  const app = createApp({
    logger,
    temporal,
    selfChecks: repos.selfChecks,
    authType: cfg.auth.type,
    validateResponses: cfg.validateResponses,
    bodyLimitBytes: cfg.bodyLimitBytes,
    services,
    metrics: { contentType: metrics.registry.contentType, text: () => (isApiWorker() ? clusterMetricsText(metrics.registry) : metrics.registry.metrics()) },
    readinessTimeoutMs: cfg.readinessTimeoutMs,
    readinessChecks: [
      { name: 'postgresql', check: () => pingDb(db) },
      { name: 'temporal', check: () => pingTemporal(temporal, cfg.temporal.namespace, cfg.readinessTimeoutMs) },
      { name: 'storage', check: () => store.ping() },
    ],
  });
  // The agent's poll and reply are answered ahead of Express when they are well-formed; everything else is Express's.
  const served = cfg.api.agentFastPath
    ? agentFastPath(
        {
          logger,
          services,
          authType: cfg.auth.type,
          signer: services.signer,
          agentTokenTtlSeconds: services.agentTokenTtlSeconds,
          bodyLimitBytes: cfg.bodyLimitBytes,
          validateResponses: cfg.validateResponses,
          document: loadOpenApiDocument(),
          metricsRegistry: metrics.registry,
        },
        app,
      )
    : app;
  // Ahead of both: past its capacity the process turns agents away at once rather than queueing them (admission.ts).
  const handler = agentAdmission({ logger, db, settings: { ...cfg.api.admission, retryAfterSeconds: ADMISSION_RETRY_AFTER_S }, metricsRegistry: metrics.registry }, served);
  if (isApiWorker()) joinApiCluster(metrics.registry, logger);
  // Once closing, each answer ends its connection (Connection: close), so that a client does not send its next
  // request on a connection about to be closed under it. Requests being answered when the close begins are
  // known here, so that their answers, not yet written, say so too.
  let closing = false;
  const answering = new Set<ServerResponse>();
  function answered(this: ServerResponse) {
    answering.delete(this);
  }
  const server = await new Promise<Server>((resolve, reject) => {
    const s = createServer((req, res) => {
      metrics.countRequest();
      if (closing) res.setHeader('Connection', 'close');
      else {
        answering.add(res);
        res.on('close', answered);
      }
      handler(req, res);
    });
    s.keepAliveTimeout = cfg.api.keepAliveTimeoutMs;
    s.once('error', reject);
    s.listen(cfg.api.port, cfg.api.host, () => resolve(s));
  });
  const url = `http://${cfg.api.host === '0.0.0.0' ? 'localhost' : cfg.api.host}:${cfg.api.port}`;
  logger.info({ url, storage: store.description, temporal: cfg.temporal.address }, 'api listening');
  // Catalogued base images are fetched now rather than by the first person who downloads an ISO: by one
  // process of a cluster (the first worker), not by each (every process would fetch the same files).
  if (!isApiWorker() || cluster.worker?.id === 1) services.baseImages.warm(logger);
  // Every operation's request validation compiled now, not in a person's first call of it (validator-warmup.ts).
  const warmed = cfg.api.warmValidators ? warmValidators(app, loadOpenApiDocument(), BASE_PATH, logger) : undefined;
  return {
    server,
    url,
    warmed,
    async close() {
      closing = true;
      for (const res of answering) if (!res.headersSent) res.setHeader('Connection', 'close');
      answering.clear();
      await new Promise<void>((resolve) => {
        // A connection busy at the close (a poll, a reply) goes idle once its answer is written, and would then
        // be kept until its keep-alive timeout (100 s): idle ones are closed as they appear. Requests that are
        // still running after half the shutdown time (an event stream, a slow download) are cut, so the process
        // ends by itself before it is forced to.
        const sweep = setInterval(() => server.closeIdleConnections(), CLOSE_SWEEP_MS);
        const cut = setTimeout(() => server.closeAllConnections(), cfg.shutdownTimeoutMs / 2);
        server.close(() => {
          clearInterval(sweep);
          clearTimeout(cut);
          resolve();
        });
        server.closeIdleConnections();
      });
      // The warm-up serves itself on a loopback server of its own: the close does not wait for it, only the end.
      await warmed;
      await refresher?.close();
      await Promise.allSettled([eventWakeups.close(), db.destroy(), closeTemporalClient(temporal)]);
    },
  };
}

