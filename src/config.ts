/**
 * The one place that reads the environment. Every process parses it once at
 * start-up and passes the typed result down; nothing else touches process.env.
 *
 * Units live in names (`_MS`, `_HOURS`) because a bare `TIMEOUT=30` has bitten
 * every operator who ever had to guess whether it meant seconds.
 */
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { z } from 'zod';

/**
 * At most this many clusters in one refresh transaction, by default
 * (REFRESH_BATCH_TARGETS; why this many: src/services/refresh-queue.ts).
 */
export const REFRESH_BATCH_TARGETS = 8;

/**
 * The API refresher process's nice value, by default (API_REFRESHER_NICE;
 * why this much: src/api/refresher-process.ts).
 */
export const REFRESHER_NICE = 10;

/**
 * A nice value for the API refresher's main thread that puts it above the
 * serving processes (API_REFRESHER_MAIN_NICE=-5; not the default, why:
 * src/api/refresher-process.ts).
 */
export const REFRESHER_MAIN_NICE = -5;

const port = z.coerce
  .number({ message: 'must be a port number' })
  .int('must be a whole number')
  .min(1, 'must be between 1 and 65535')
  .max(65535, 'must be between 1 and 65535');
const stepRepeat = (seconds: number) => z.coerce.number().int().min(0).max(86_400).default(seconds);
const positiveMs = z.coerce
  .number({ message: 'must be a number of milliseconds' })
  .int('must be a whole number of milliseconds')
  .positive('must be greater than 0');
const httpUrl = z
  .string()
  .refine((v) => /^https?:\/\/[^\s/]+/.test(v), 'must be an http:// or https:// URL');
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v === '' ? undefined : v));

/**
 * Every variable Landfall understands, with its default. The README table and
 * the docker-compose test are checked against these keys.
 */
/** PostgreSQL's plan_cache_mode values the service's connections may be set to (DATABASE_PLAN_CACHE_MODE, src/db/database.ts). */
export const PLAN_CACHE_MODES = ['force_generic_plan', 'auto', 'force_custom_plan'] as const;
export type PlanCacheMode = (typeof PLAN_CACHE_MODES)[number];

export const ENV_SCHEMA = z.object({
  LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
  LOG_FORMAT: z.enum(['auto', 'json', 'pretty']).default('auto'),
  STATE_DIR: z.string().min(1).default('.state'),
  API_HOST: z.string().min(1).default('0.0.0.0'),
  API_PORT: port.default(8090),
  // `landfall api` serves from this many processes sharing the port (node:cluster); unset: one per CPU.
  API_PROCESSES: z.coerce.number().int().min(1).max(256).optional(),
  // Set by the API's primary on each process it forks (src/api/cluster.ts): serving, or its refresher (src/api/refresher-process.ts).
  API_PROCESS_ROLE: z.enum(['serve', 'refresh']).optional(),
  // The agent's poll and step reply answered ahead of Express (src/api/agent-fast-path.ts); same answers, less CPU.
  API_AGENT_FAST_PATH: z.enum(['true', 'false']).default('true'),
  // Compile the OpenAPI validator for every operation when a serving process starts (src/api/openapi/validator-warmup.ts).
  API_WARM_VALIDATORS: z.enum(['true', 'false']).default('true'),
  // Past these, an API process turns agents' requests away with 503 + Retry-After (src/api/admission.ts); 0: no limit.
  // Agent requests in flight in the process (replies and registrations at half), and the wait of its oldest poll.
  API_AGENT_MAX_IN_FLIGHT: z.coerce.number().int().min(0).max(100000).default(1000),
  API_AGENT_MAX_POLL_WAIT_MS: z.coerce.number().int().min(0).max(600000).default(2000),
  // ... and while the process itself runs this late (a timer's lateness: starved of CPU, a long GC).
  API_AGENT_MAX_LOOP_LAG_MS: z.coerce.number().int().min(0).max(600000).default(1000),
  // How long an API process keeps an idle connection open. Longer than an agent's 60 s poll, so each agent keeps one
  // connection (no TCP or TLS handshake per poll), and longer than Go's default client idle timeout (90 s), so the
  // upstream agent closes an idle connection before the service does, never while sending on it.
  API_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(1000).max(600000).default(100000),
  SERVICE_BASE_URL: httpUrl.optional(),
  DATABASE_URL: optionalString.pipe(
    z
      .string()
      .refine((v) => /^postgres(ql)?:\/\//.test(v), 'must be a postgres:// or postgresql:// URL')
      .optional(),
  ),
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  DATABASE_PLAN_CACHE_MODE: z.enum(PLAN_CACHE_MODES).default('force_generic_plan'),
  // The API's agent polls send their check-in on one pipelined connection per process (src/db/poll-lane.ts).
  DATABASE_POLL_LANE: z.enum(['true', 'false']).default('true'),
  // The least time between two of a process's batched check-in statements on the lane: a poll waits at most this long for others to share one.
  DATABASE_POLL_LANE_GATHER_MS: z.coerce.number().min(0).max(100).default(4),
  EMBEDDED_POSTGRES_PORT: port.default(5433),
  TEMPORAL_ADDRESS: z
    .string()
    .regex(/^[^\s:/]+:\d{1,5}$/, 'must be host:port, for example 127.0.0.1:7233')
    .default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_UI_PORT: port.default(8233),
  TEMPORAL_RETENTION_HOURS: z.coerce.number().int().min(24).max(24 * 365).default(720),
  TEMPORAL_CLI_PATH: optionalString,
  STORAGE_BACKEND: z.enum(['local', 's3']).default('local'),
  STORAGE_LOCAL_DIR: optionalString,
  S3_ENDPOINT: optionalString.pipe(httpUrl.optional()),
  S3_ACCESS_KEY: optionalString,
  S3_SECRET_KEY: optionalString,
  S3_BUCKET: z
    .string()
    .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be a valid S3 bucket name')
    .default('landfall'),
  S3_REGION: z.string().min(1).default('us-east-1'),
  AUTH_TYPE: z.enum(['none', 'local']).default('none'),
  EC_PRIVATE_KEY_PEM: optionalString,
  EC_PUBLIC_KEY_PEM: optionalString,
  IMAGE_URL_TTL_SECONDS: z.coerce.number().int().min(60).max(7 * 24 * 3600).default(4 * 3600),
  // Agent tokens (in discovery images, on installed hosts) expire after this long; an agent that
  // polls is handed a renewed token past half of it (X-Landfall-Agent-Token). 0: never expire, as in AS.
  AGENT_TOKEN_TTL_SECONDS: z.coerce.number().int().refine((v) => v === 0 || (v >= 600 && v <= 365 * 24 * 3600), 'must be 0 (never) or between 600 and 31536000').default(30 * 24 * 3600),
  IMAGE_URL_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  BMC_CREDENTIALS_KEY: optionalString.pipe(
    z
      .string()
      .refine((v) => /^[0-9a-f]{64}$/i.test(v) || Buffer.from(v, 'base64').length === 32, 'must be 32 bytes, as 64 hex digits or base64 (openssl rand -base64 32)')
      .optional(),
  ),
  BMC_IMAGE_BASE_URL: optionalString.pipe(httpUrl.optional()),
  RELEASES_FILE: optionalString,
  BASE_ISO_PATH: optionalString,
  DISCOVERY_OS_ISO: optionalString,
  IMAGE_CACHE_DIR: optionalString,
  API_VALIDATE_RESPONSES: z.enum(['true', 'false']).default('false'),
  API_BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).max(100 * 1024 * 1024).default(2 * 1024 * 1024),
  DEMO_FLEET_HOSTS: z.coerce.number().int().min(0).max(1000).default(5),
  DEMO_INSIGHTS_CLUSTERS: z.coerce.number().int().min(0).max(100).default(0),
  HOST_DISCONNECT_TIMEOUT_MS: positiveMs.default(180000),
  // 20 s: a silent host is marked disconnected within its timeout + 30 s, the monitor's own run included.
  HOST_MONITOR_INTERVAL_MS: positiveMs.default(20000),
  // How often each repeating discovery step is asked again with unchanged arguments (src/services/step-cadence.ts); 0: every poll.
  // Whether API processes refresh what agents reported (the worker always does; src/services/refresh-queue.ts).
  API_REFRESHER: z.enum(['true', 'false']).default('true'),
  // At most this many clusters in one refresh transaction (src/services/refresh-queue.ts, REFRESH_BATCH_TARGETS).
  REFRESH_BATCH_TARGETS: z.coerce.number().int().min(1).max(64).default(REFRESH_BATCH_TARGETS),
  // The API refresher process's nice value (src/api/refresher-process.ts, REFRESHER_NICE): 0 runs it beside the serving processes.
  API_REFRESHER_NICE: z.coerce.number().int().min(0).max(19).default(REFRESHER_NICE),
  // Its main thread's, the one that runs the refreshes (unset: API_REFRESHER_NICE's; src/api/refresher-process.ts): below 0 needs the privilege to raise a priority, else it stays at the process's own.
  API_REFRESHER_MAIN_NICE: z.coerce.number().int().min(-20).max(19).optional(),
  STEP_REPEAT_INVENTORY_SECONDS: stepRepeat(300),
  STEP_REPEAT_CONNECTIVITY_CHECK_SECONDS: stepRepeat(120),
  STEP_REPEAT_FREE_NETWORK_ADDRESSES_SECONDS: stepRepeat(300),
  STEP_REPEAT_NTP_SYNCHRONIZER_SECONDS: stepRepeat(120),
  STEP_REPEAT_DOMAIN_RESOLUTION_SECONDS: stepRepeat(300),
  STEP_REPEAT_CONTAINER_IMAGE_AVAILABILITY_SECONDS: stepRepeat(300),
  HOST_REQUIREMENTS_FILE: optionalString,
  INSTALL_PREPARING_TIMEOUT_MS: positiveMs.default(10 * 60_000),
  INSTALL_STAGE_SOFT_TIMEOUT_MS: positiveMs.default(30 * 60_000),
  INSTALL_STAGE_HARD_TIMEOUT_MS: positiveMs.default(90 * 60_000),
  INSTALL_FINALIZING_TIMEOUT_MS: positiveMs.default(5 * 3600_000),
  // What the install step names for the host to run (assisted-service's InstallCmdRequest requires both).
  INSTALLER_IMAGE: z.string().min(1).default('quay.io/edge-infrastructure/assisted-installer:latest'),
  CONTROLLER_IMAGE: z.string().min(1).default('quay.io/edge-infrastructure/assisted-installer-controller:latest'),
  HOST_LOGS_PENDING_TIMEOUT_MS: positiveMs.default(2 * 60_000),
  HOST_LOGS_COLLECTION_TIMEOUT_MS: positiveMs.default(10 * 60_000),
  LOGS_UPLOAD_MAX_BYTES: z.coerce.number().int().min(1024).max(16 * 1024 ** 3).default(100 * 1024 * 1024),
  READINESS_TIMEOUT_MS: positiveMs.default(2000),
  SHUTDOWN_TIMEOUT_MS: positiveMs.default(15000),
  // `landfall operator` (src/operator) and `landfall dev` starting it with a local kube-apiserver.
  LANDFALL_OPERATOR: z.enum(['0', '1', 'true', 'false']).default('0'),
  OPERATOR_KUBECONFIG: optionalString,
  KUBERNETES_SERVICE_HOST: optionalString,
  KUBERNETES_SERVICE_PORT: optionalString,
  OPERATOR_LANDFALL_URL: optionalString.pipe(httpUrl.optional()),
  OPERATOR_LANDFALL_TOKEN: optionalString,
  OPERATOR_NAMESPACES: optionalString.pipe(z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(,[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, 'must be namespace names separated by commas').optional()),
  OPERATOR_RESYNC_MS: positiveMs.default(10 * 60_000),
  OPERATOR_INSTALL_CRDS: z.enum(['true', 'false']).default('false'),
});

export type EnvName = keyof z.infer<typeof ENV_SCHEMA>;
export const ENV_NAMES = Object.keys(ENV_SCHEMA.shape) as EnvName[];

export type StorageConfig =
  | { backend: 'local'; dir: string }
  | {
      backend: 's3';
      endpoint: string;
      accessKey: string;
      secretKey: string;
      bucket: string;
      region: string;
    };

export interface Config {
  log: { level: string; format: 'json' | 'pretty' };
  stateDir: string;
  /** `processes`: `landfall api` forks this many workers sharing the port (1: serves in the one process). */
  api: { host: string; port: number; baseUrl: string; processes: number; agentFastPath: boolean; warmValidators: boolean; admission: { maxInFlight: number; maxPollWaitMs: number; maxLoopLagMs: number }; role: 'serve' | 'refresh'; keepAliveTimeoutMs: number };
  database: { url: string | undefined; poolMax: number; planCacheMode: PlanCacheMode; pollLane: boolean; pollLaneGatherMs: number; embeddedPort: number };
  temporal: {
    address: string;
    namespace: string;
    uiPort: number;
    retentionHours: number;
    cliPath: string | undefined;
  };
  storage: StorageConfig;
  auth: { type: 'none' | 'local'; privateKeyPem: string | undefined; publicKeyPem: string | undefined; imageUrlTtlSeconds: number; imageUrlSecret: string | undefined; agentTokenTtlSeconds: number };
  /** BMC credentials key (unset: one kept in the database) and the base URL BMCs fetch discovery ISOs from. */
  bmc: { credentialsKey: string | undefined; imageBaseUrl: string | undefined };
  releasesFile: string | undefined;
  /** The base live ISO (CoreOS layout, with an Ignition embed area) discovery images are made from; unset: none served. */
  images: { baseIsoPath: string | undefined; cacheDir: string; discoveryOsIso?: string };
  /** Check every response against the OpenAPI document (tests; costs CPU in production). */
  validateResponses: boolean;
  bodyLimitBytes: number;
  /** Simulated hosts `landfall dev` starts for the demo (0: none). */
  demoFleetHosts: number;
  /** Clusters of the insights demo (src/dev/demo-insights.ts) `landfall dev` installs through the API; 0: none. */
  demoInsightsClusters: number;
  lifecycle: { disconnectTimeoutMs: number; monitorIntervalMs: number; requirementsFile: string | undefined };
  /** Whether API processes run a refresher (the worker always does). */
  apiRefresher: boolean;
  /** At most this many clusters a refresher refreshes in one transaction (refresh-queue.ts). */
  refreshBatchTargets: number;
  /** The nice value of the API's refresher process, when it has one of its own (refresher-process.ts). */
  apiRefresherNice: number;
  /** The nice value of that process's main thread alone (API_REFRESHER_MAIN_NICE; unset, apiRefresherNice). */
  apiRefresherMainNice: number;
  /** Per repeating discovery step type, seconds between asks with unchanged arguments (src/services/step-cadence.ts). */
  stepRepeatSeconds: Record<string, number>;
  install: { preparingMs: number; stageSoftMs: number; stageHardMs: number; finalizingMs: number };
  /** Images the install step names: the installer a host runs, and the controller it starts in the new cluster. */
  installImages: { installer: string; controller: string };
  /** Log uploads and collection (logs-service.ts). */
  logs: { uploadMaxBytes: number; pendingTimeoutMs: number; collectionTimeoutMs: number };
  readinessTimeoutMs: number;
  shutdownTimeoutMs: number;
  /**
   * `landfall operator`: where the Kubernetes API is (a kubeconfig, else the pod's service account
   * when KUBERNETES_SERVICE_HOST is set), where Landfall is, what to watch and how often to resync.
   * `devEnabled`: `landfall dev` also starts a local kube-apiserver and the operator.
   */
  operator: {
    devEnabled: boolean;
    kubeconfig: string | undefined;
    inCluster: { host: string; port: string } | undefined;
    landfallUrl: string;
    landfallToken: string | undefined;
    namespaces: string[];
    resyncMs: number;
    installCrds: boolean;
  };
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    readonly problem: string,
  ) {
    super(`invalid configuration: ${variable} ${problem}`);
    this.name = 'ConfigError';
  }
}

/** Parses an environment (process.env by default) into a Config or throws ConfigError. */
export function parseConfig(
  env: Record<string, string | undefined> = process.env,
  opts: { isTty?: boolean } = {},
): Config {
  const parsed = ENV_SCHEMA.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const variable = String(issue.path[0] ?? 'environment');
    const got = env[variable];
    throw new ConfigError(variable, `${issue.message}${got === undefined ? '' : ` (got "${got}")`}`);
  }
  const e = parsed.data;
  const stateDir = path.resolve(e.STATE_DIR);

  let storage: StorageConfig;
  if (e.STORAGE_BACKEND === 's3') {
    for (const name of ['S3_ENDPOINT', 'S3_ACCESS_KEY', 'S3_SECRET_KEY'] as const) {
      if (!e[name]) throw new ConfigError(name, 'is required when STORAGE_BACKEND=s3');
    }
    storage = {
      backend: 's3',
      endpoint: e.S3_ENDPOINT!,
      accessKey: e.S3_ACCESS_KEY!,
      secretKey: e.S3_SECRET_KEY!,
      bucket: e.S3_BUCKET,
      region: e.S3_REGION,
    };
  } else {
    storage = { backend: 'local', dir: path.resolve(e.STORAGE_LOCAL_DIR ?? path.join(stateDir, 'objects')) };
  }

  // PEM in an env variable often arrives with literal "\n"; accept both forms.
  const pem = (v: string | undefined) => v?.replace(/\\n/g, '\n');
  const pretty = e.LOG_FORMAT === 'pretty' || (e.LOG_FORMAT === 'auto' && (opts.isTty ?? false));
  return {
    log: { level: e.LOG_LEVEL, format: pretty ? 'pretty' : 'json' },
    stateDir,
    api: {
      host: e.API_HOST,
      port: e.API_PORT,
      baseUrl: (e.SERVICE_BASE_URL ?? `http://localhost:${e.API_PORT}`).replace(/\/+$/, ''),
      processes: e.API_PROCESSES ?? availableParallelism(),
      role: e.API_PROCESS_ROLE ?? 'serve',
      agentFastPath: e.API_AGENT_FAST_PATH === 'true',
      warmValidators: e.API_WARM_VALIDATORS === 'true',
      admission: { maxInFlight: e.API_AGENT_MAX_IN_FLIGHT, maxPollWaitMs: e.API_AGENT_MAX_POLL_WAIT_MS, maxLoopLagMs: e.API_AGENT_MAX_LOOP_LAG_MS },
      keepAliveTimeoutMs: e.API_KEEP_ALIVE_TIMEOUT_MS,
    },
    database: { url: e.DATABASE_URL, poolMax: e.DATABASE_POOL_MAX, planCacheMode: e.DATABASE_PLAN_CACHE_MODE, pollLane: e.DATABASE_POLL_LANE === 'true', pollLaneGatherMs: e.DATABASE_POLL_LANE_GATHER_MS, embeddedPort: e.EMBEDDED_POSTGRES_PORT },
    temporal: {
      address: e.TEMPORAL_ADDRESS,
      namespace: e.TEMPORAL_NAMESPACE,
      uiPort: e.TEMPORAL_UI_PORT,
      retentionHours: e.TEMPORAL_RETENTION_HOURS,
      cliPath: e.TEMPORAL_CLI_PATH,
    },
    storage,
    auth: { type: e.AUTH_TYPE, privateKeyPem: pem(e.EC_PRIVATE_KEY_PEM), publicKeyPem: pem(e.EC_PUBLIC_KEY_PEM), imageUrlTtlSeconds: e.IMAGE_URL_TTL_SECONDS, imageUrlSecret: e.IMAGE_URL_SECRET, agentTokenTtlSeconds: e.AGENT_TOKEN_TTL_SECONDS },
    bmc: { credentialsKey: e.BMC_CREDENTIALS_KEY, imageBaseUrl: e.BMC_IMAGE_BASE_URL?.replace(/\/+$/, '') },
    releasesFile: e.RELEASES_FILE,
    images: {
      baseIsoPath: e.BASE_ISO_PATH ? path.resolve(e.BASE_ISO_PATH) : undefined,
      cacheDir: path.resolve(e.IMAGE_CACHE_DIR ?? path.join(stateDir, 'image-cache')),
      discoveryOsIso: e.DISCOVERY_OS_ISO ? path.resolve(e.DISCOVERY_OS_ISO) : undefined,
    },
    validateResponses: e.API_VALIDATE_RESPONSES === 'true',
    bodyLimitBytes: e.API_BODY_LIMIT_BYTES,
    demoFleetHosts: e.DEMO_FLEET_HOSTS,
    demoInsightsClusters: e.DEMO_INSIGHTS_CLUSTERS,
    install: { preparingMs: e.INSTALL_PREPARING_TIMEOUT_MS, stageSoftMs: e.INSTALL_STAGE_SOFT_TIMEOUT_MS, stageHardMs: e.INSTALL_STAGE_HARD_TIMEOUT_MS, finalizingMs: e.INSTALL_FINALIZING_TIMEOUT_MS },
    installImages: { installer: e.INSTALLER_IMAGE, controller: e.CONTROLLER_IMAGE },
    logs: { uploadMaxBytes: e.LOGS_UPLOAD_MAX_BYTES, pendingTimeoutMs: e.HOST_LOGS_PENDING_TIMEOUT_MS, collectionTimeoutMs: e.HOST_LOGS_COLLECTION_TIMEOUT_MS },
    lifecycle: { disconnectTimeoutMs: e.HOST_DISCONNECT_TIMEOUT_MS, monitorIntervalMs: e.HOST_MONITOR_INTERVAL_MS, requirementsFile: e.HOST_REQUIREMENTS_FILE },
    apiRefresher: e.API_REFRESHER === 'true',
    refreshBatchTargets: e.REFRESH_BATCH_TARGETS,
    apiRefresherNice: e.API_REFRESHER_NICE,
    apiRefresherMainNice: e.API_REFRESHER_MAIN_NICE ?? e.API_REFRESHER_NICE,
    stepRepeatSeconds: {
      inventory: e.STEP_REPEAT_INVENTORY_SECONDS,
      'connectivity-check': e.STEP_REPEAT_CONNECTIVITY_CHECK_SECONDS,
      'free-network-addresses': e.STEP_REPEAT_FREE_NETWORK_ADDRESSES_SECONDS,
      'ntp-synchronizer': e.STEP_REPEAT_NTP_SYNCHRONIZER_SECONDS,
      'domain-resolution': e.STEP_REPEAT_DOMAIN_RESOLUTION_SECONDS,
      'container-image-availability': e.STEP_REPEAT_CONTAINER_IMAGE_AVAILABILITY_SECONDS,
    } as Record<string, number>,
    readinessTimeoutMs: e.READINESS_TIMEOUT_MS,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    operator: {
      devEnabled: e.LANDFALL_OPERATOR === '1' || e.LANDFALL_OPERATOR === 'true',
      kubeconfig: e.OPERATOR_KUBECONFIG ? path.resolve(e.OPERATOR_KUBECONFIG) : undefined,
      inCluster: e.KUBERNETES_SERVICE_HOST ? { host: e.KUBERNETES_SERVICE_HOST, port: e.KUBERNETES_SERVICE_PORT ?? '443' } : undefined,
      landfallUrl: (e.OPERATOR_LANDFALL_URL ?? `http://localhost:${e.API_PORT}`).replace(/\/+$/, ''),
      landfallToken: e.OPERATOR_LANDFALL_TOKEN,
      namespaces: e.OPERATOR_NAMESPACES ? e.OPERATOR_NAMESPACES.split(',') : [],
      resyncMs: e.OPERATOR_RESYNC_MS,
      installCrds: e.OPERATOR_INSTALL_CRDS === 'true',
    },
  };
}

/**
 * The inverse of parseConfig for the variables a child process needs: the dev
 * supervisor uses it to hand its resolved settings to the api and worker it
 * starts, so both read them through parseConfig like in production.
 */
export function configToEnv(c: Config): Record<EnvName, string | undefined> {
  return {
    LOG_LEVEL: c.log.level,
    LOG_FORMAT: c.log.format,
    STATE_DIR: c.stateDir,
    API_HOST: c.api.host,
    API_PORT: String(c.api.port),
    API_PROCESSES: String(c.api.processes),
    // Each worker's own: never handed on (the primary sets it per fork).
    API_PROCESS_ROLE: undefined,
    API_AGENT_FAST_PATH: String(c.api.agentFastPath),
    API_WARM_VALIDATORS: String(c.api.warmValidators),
    API_AGENT_MAX_IN_FLIGHT: String(c.api.admission.maxInFlight),
    API_AGENT_MAX_POLL_WAIT_MS: String(c.api.admission.maxPollWaitMs),
    API_AGENT_MAX_LOOP_LAG_MS: String(c.api.admission.maxLoopLagMs),
    API_KEEP_ALIVE_TIMEOUT_MS: String(c.api.keepAliveTimeoutMs),
    SERVICE_BASE_URL: c.api.baseUrl,
    DATABASE_URL: c.database.url,
    DATABASE_POOL_MAX: String(c.database.poolMax),
    DATABASE_PLAN_CACHE_MODE: c.database.planCacheMode,
    DATABASE_POLL_LANE: String(c.database.pollLane),
    DATABASE_POLL_LANE_GATHER_MS: String(c.database.pollLaneGatherMs),
    EMBEDDED_POSTGRES_PORT: String(c.database.embeddedPort),
    TEMPORAL_ADDRESS: c.temporal.address,
    TEMPORAL_NAMESPACE: c.temporal.namespace,
    TEMPORAL_UI_PORT: String(c.temporal.uiPort),
    TEMPORAL_RETENTION_HOURS: String(c.temporal.retentionHours),
    TEMPORAL_CLI_PATH: c.temporal.cliPath,
    STORAGE_BACKEND: c.storage.backend,
    STORAGE_LOCAL_DIR: c.storage.backend === 'local' ? c.storage.dir : undefined,
    S3_ENDPOINT: c.storage.backend === 's3' ? c.storage.endpoint : undefined,
    S3_ACCESS_KEY: c.storage.backend === 's3' ? c.storage.accessKey : undefined,
    S3_SECRET_KEY: c.storage.backend === 's3' ? c.storage.secretKey : undefined,
    S3_BUCKET: c.storage.backend === 's3' ? c.storage.bucket : undefined,
    S3_REGION: c.storage.backend === 's3' ? c.storage.region : undefined,
    AUTH_TYPE: c.auth.type,
    EC_PRIVATE_KEY_PEM: c.auth.privateKeyPem,
    EC_PUBLIC_KEY_PEM: c.auth.publicKeyPem,
    IMAGE_URL_TTL_SECONDS: String(c.auth.imageUrlTtlSeconds),
    AGENT_TOKEN_TTL_SECONDS: String(c.auth.agentTokenTtlSeconds),
    IMAGE_URL_SECRET: c.auth.imageUrlSecret,
    BMC_CREDENTIALS_KEY: c.bmc.credentialsKey,
    BMC_IMAGE_BASE_URL: c.bmc.imageBaseUrl,
    RELEASES_FILE: c.releasesFile,
    BASE_ISO_PATH: c.images.baseIsoPath,
    DISCOVERY_OS_ISO: c.images.discoveryOsIso,
    IMAGE_CACHE_DIR: c.images.cacheDir,
    API_VALIDATE_RESPONSES: String(c.validateResponses),
    API_BODY_LIMIT_BYTES: String(c.bodyLimitBytes),
    DEMO_FLEET_HOSTS: String(c.demoFleetHosts),
    DEMO_INSIGHTS_CLUSTERS: String(c.demoInsightsClusters),
    HOST_DISCONNECT_TIMEOUT_MS: String(c.lifecycle.disconnectTimeoutMs),
    HOST_MONITOR_INTERVAL_MS: String(c.lifecycle.monitorIntervalMs),
    HOST_REQUIREMENTS_FILE: c.lifecycle.requirementsFile,
    API_REFRESHER: String(c.apiRefresher),
    REFRESH_BATCH_TARGETS: String(c.refreshBatchTargets),
    API_REFRESHER_NICE: String(c.apiRefresherNice),
    API_REFRESHER_MAIN_NICE: String(c.apiRefresherMainNice),
    STEP_REPEAT_INVENTORY_SECONDS: String(c.stepRepeatSeconds.inventory),
    STEP_REPEAT_CONNECTIVITY_CHECK_SECONDS: String(c.stepRepeatSeconds['connectivity-check']),
    STEP_REPEAT_FREE_NETWORK_ADDRESSES_SECONDS: String(c.stepRepeatSeconds['free-network-addresses']),
    STEP_REPEAT_NTP_SYNCHRONIZER_SECONDS: String(c.stepRepeatSeconds['ntp-synchronizer']),
    STEP_REPEAT_DOMAIN_RESOLUTION_SECONDS: String(c.stepRepeatSeconds['domain-resolution']),
    STEP_REPEAT_CONTAINER_IMAGE_AVAILABILITY_SECONDS: String(c.stepRepeatSeconds['container-image-availability']),
    INSTALL_PREPARING_TIMEOUT_MS: String(c.install.preparingMs),
    INSTALL_STAGE_SOFT_TIMEOUT_MS: String(c.install.stageSoftMs),
    INSTALL_STAGE_HARD_TIMEOUT_MS: String(c.install.stageHardMs),
    INSTALL_FINALIZING_TIMEOUT_MS: String(c.install.finalizingMs),
    INSTALLER_IMAGE: c.installImages.installer,
    CONTROLLER_IMAGE: c.installImages.controller,
    HOST_LOGS_PENDING_TIMEOUT_MS: String(c.logs.pendingTimeoutMs),
    HOST_LOGS_COLLECTION_TIMEOUT_MS: String(c.logs.collectionTimeoutMs),
    LOGS_UPLOAD_MAX_BYTES: String(c.logs.uploadMaxBytes),
    READINESS_TIMEOUT_MS: String(c.readinessTimeoutMs),
    SHUTDOWN_TIMEOUT_MS: String(c.shutdownTimeoutMs),
    LANDFALL_OPERATOR: c.operator.devEnabled ? '1' : '0',
    OPERATOR_KUBECONFIG: c.operator.kubeconfig,
    KUBERNETES_SERVICE_HOST: c.operator.inCluster?.host,
    KUBERNETES_SERVICE_PORT: c.operator.inCluster?.port,
    OPERATOR_LANDFALL_URL: c.operator.landfallUrl,
    OPERATOR_LANDFALL_TOKEN: c.operator.landfallToken,
    OPERATOR_NAMESPACES: c.operator.namespaces.length ? c.operator.namespaces.join(',') : undefined,
    OPERATOR_RESYNC_MS: String(c.operator.resyncMs),
    OPERATOR_INSTALL_CRDS: String(c.operator.installCrds),
  };
}

/** Parses process.env, or prints one line naming the bad variable and exits 2. */
export function loadConfigOrExit(): Config {
  try {
    return parseConfig(process.env, { isTty: Boolean(process.stdout.isTTY) });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`landfall: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

/** Variables a child process may inherit from its parent untouched (PATH and friends). */
export function passthroughEnv(): Record<string, string | undefined> {
  const keep = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR', 'NODE_OPTIONS', 'NODE_EXTRA_CA_CERTS'];
  return Object.fromEntries(keep.map((k) => [k, process.env[k]]));
}

/**
 * What `landfall api` and `landfall worker` need set when they run against
 * external services (the defaults only make sense on one laptop). The
 * docker-compose test holds the production topology to this list.
 */
export const PRODUCTION_REQUIRED_ENV: readonly EnvName[] = ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'STORAGE_BACKEND', 'SERVICE_BASE_URL'];
