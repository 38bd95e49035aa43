/**
 * `landfall dev` (what `npm start` runs): Temporal with its UI, PostgreSQL,
 * migrations, then the api and the worker as child processes, exactly as they
 * would run in production (with LANDFALL_OPERATOR=1 also a local kube-apiserver
 * and `landfall operator`). A component that dies (api, worker, Temporal,
 * the embedded PostgreSQL) is started again with backoff and the log says so;
 * Ctrl-C stops them all in reverse order.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { configToEnv, passthroughEnv, type Config } from '../config';
import { createLogger, redactUrl, type Logger } from '../logger';
import { createDb } from '../db/database';
import { migrateLatest } from '../db/migrations';
import { startEmbeddedPostgres, type EmbeddedPg } from './embedded-postgres';
import { startTemporalDevServer, temporalBinary, type TemporalDevServer } from './temporal-dev-server';
import { canConnect, Restarter, sleep, stopProcess } from './process-utils';
import { existsSync, promises as fs } from 'node:fs';
import { generateEcKeyPair } from '../auth/jwt';
import { builtDiscoveryOsIso } from '../images/discovery-os';
import { localApiserverBuilt, startLocalApiserver, type LocalApiserver } from '../operator/local-apiserver';

/** AUTH_TYPE=local on one machine: a signing key generated once and kept in the state folder (0600). */
async function devSigningKey(stateDir: string): Promise<{ privateKeyPem: string; publicKeyPem: string }> {
  const file = path.join(stateDir, 'auth', 'ec-private.pem');
  if (!existsSync(file)) {
    await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    await fs.writeFile(file, generateEcKeyPair().privateKeyPem, { mode: 0o600 });
  }
  const privateKeyPem = await fs.readFile(file, 'utf8');
  const { createPublicKey } = await import('node:crypto');
  return { privateKeyPem, publicKeyPem: createPublicKey(privateKeyPem).export({ type: 'spki', format: 'pem' }).toString() };
}

const MAIN = path.join(__dirname, '..', 'cli', 'main.js');

function spawnComponent(name: 'api' | 'worker' | 'operator', cfg: Config): ChildProcess {
  // Children parse the same variables through parseConfig, like in production.
  const env = { ...passthroughEnv(), ...configToEnv(cfg) };
  const clean = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined)) as NodeJS.ProcessEnv;
  // Node's own flags for the children (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`, which NODE_OPTIONS refuses);
  // node:cluster's API processes inherit them from their primary.
  const nodeArgs = (process.env.LANDFALL_CHILD_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  return spawn(process.execPath, [...nodeArgs, MAIN, name], { env: clean, stdio: ['ignore', 'inherit', 'inherit'] });
}

async function waitReady(url: string, timeoutMs: number, children: ChildProcess[]): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    const dead = children.find((c) => c.exitCode !== null);
    if (dead) throw new Error(`a component exited with code ${dead.exitCode} during start-up`);
    try {
      const res = await fetch(`${url}/readyz`);
      if (res.status === 200) return;
      last = JSON.stringify(await res.json());
    } catch (err) {
      last = (err as Error).message;
    }
    await sleep(250);
  }
  throw new Error(`the API did not become ready within ${timeoutMs} ms: ${last}`);
}

export async function runDev(cfgIn: Config): Promise<void> {
  const logger: Logger = createLogger(cfgIn, 'dev');
  let cfg = cfgIn;
  let temporal: TemporalDevServer | undefined;
  let pg: EmbeddedPg | undefined;
  const children: ChildProcess[] = [];
  const fleetAbort = new AbortController();
  let stopping = false;
  let localKube: LocalApiserver | undefined;

  /** Runs a component as a child process, started again with backoff whenever it dies (until stopping). */
  const supervise = (name: 'api' | 'worker' | 'operator', componentCfg: Config) => {
    const restarter = new Restarter(name, logger, () => stopping, async () => launch());
    const launch = () => {
      const child = spawnComponent(name, componentCfg);
      children.push(child);
      child.once('exit', (code, signal) => {
        children.splice(children.indexOf(child), 1);
        void restarter.died({ code, signal });
      });
    };
    launch();
    restarter.started();
  };

  /**
   * LANDFALL_OPERATOR=1: a local kube-apiserver (built by scripts/install-kube-apiserver.sh), the
   * CRDs, and `landfall operator` as one more restarted child, with an administrator token.
   */
  const startDevOperator = async (): Promise<LocalApiserver | undefined> => {
    if (!localApiserverBuilt()) {
      logger.warn('LANDFALL_OPERATOR is set but no kube-apiserver is built: run "bash scripts/install-kube-apiserver.sh" (about 7 CPU-minutes once)');
      return undefined;
    }
    localKube = await startLocalApiserver({ dir: path.join(cfg.stateDir, 'kube'), onOutput: (component, line) => logger.debug({ component }, line) });
    // The CRDs Established before the banner: a `kubectl apply -k` right after it must find its kinds
    // (left to the operator's own start, it raced the user: "no matches for kind InfraEnv").
    const { KubeClient } = await import('../operator/kube-client');
    const { installCrds } = await import('../operator/operator');
    const kube = new KubeClient(localKube.connection);
    try {
      logger.info({ crds: await installCrds(kube) }, 'CRDs installed');
    } finally {
      await kube.close();
    }
    let token: string | undefined;
    if (cfg.auth.type === 'local') {
      const { TokenSigner } = await import('../auth/jwt');
      token = new TokenSigner({ privateKeyPem: cfg.auth.privateKeyPem }).sign({ use: 'user', sub: 'landfall-operator', admin: true });
    }
    const opCfg: Config = { ...cfg, operator: { ...cfg.operator, kubeconfig: localKube.kubeconfigPath, landfallUrl: `http://localhost:${cfg.api.port}`, landfallToken: token, installCrds: false } };
    supervise('operator', opCfg);
    return localKube;
  };

  const shutdown = async (code: number): Promise<never> => {
    if (stopping) return new Promise<never>(() => undefined);
    stopping = true;
    logger.info('stopping landfall');
    fleetAbort.abort();
    // Reverse order of start: the api and worker first, so they do not log a burst of connection errors.
    await Promise.all(children.map((c) => stopProcess(c, cfg.shutdownTimeoutMs)));
    await localKube?.stop();
    await temporal?.stop(cfg.shutdownTimeoutMs);
    await pg?.stop().catch((err: Error) => logger.warn({ err: err.message }, 'postgres stop failed'));
    logger.info('stopped');
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));

  try {
    const [tHost, tPort] = cfg.temporal.address.split(':') as [string, string];
    if (await canConnect(tHost, Number(tPort))) {
      throw new Error(`port ${tPort} is already in use (another Temporal server?); stop it or set TEMPORAL_ADDRESS`);
    }
    logger.info({ address: cfg.temporal.address, uiPort: cfg.temporal.uiPort }, 'starting temporal dev server');
    // Temporal keeps its state in a SQLite file: a restarted server picks every workflow up where it was.
    const temporalRestarter = new Restarter('temporal', logger, () => stopping, async () => startTemporal());
    const startTemporal = async () => {
      temporal = await startTemporalDevServer({
        binary: temporalBinary(cfg.temporal.cliPath),
        port: Number(tPort),
        uiPort: cfg.temporal.uiPort,
        dbFile: path.join(cfg.stateDir, 'temporal', 'temporal.sqlite'),
        namespace: cfg.temporal.namespace,
        retentionHours: cfg.temporal.retentionHours,
        onOutput: (line) => logger.debug({ component: 'temporal' }, line),
      });
      temporal.process.once('exit', (code, signal) => void temporalRestarter.died({ code, signal }));
    };
    await startTemporal();
    temporalRestarter.started();

    if (!cfg.database.url) {
      logger.info({ port: cfg.database.embeddedPort }, 'starting embedded postgresql');
      const pgRestarter = new Restarter('postgres', logger, () => stopping, async () => pg!.start());
      pg = await startEmbeddedPostgres({
        dir: path.join(cfg.stateDir, 'postgres'),
        port: cfg.database.embeddedPort,
        database: 'landfall',
        onLog: (line) => logger.debug({ component: 'postgres' }, line),
        onExit: (code, signal) => void pgRestarter.died({ code, signal }),
      });
      pgRestarter.started();
      cfg = { ...cfg, database: { ...cfg.database, url: pg.url } };
    }

    if (cfg.auth.type === 'local' && !cfg.auth.privateKeyPem) {
      cfg = { ...cfg, auth: { ...cfg.auth, ...(await devSigningKey(cfg.stateDir)) } };
    }

    // Landfall's own discovery OS (built by set-up) is the x86_64 base image unless one is configured.
    if (!cfg.images.discoveryOsIso) cfg = { ...cfg, images: { ...cfg.images, discoveryOsIso: builtDiscoveryOsIso() } };
    if (!cfg.images.discoveryOsIso && !cfg.images.baseIsoPath) logger.warn('no discovery OS was built (scripts/build-discovery-os.sh): discovery ISO downloads answer 404 unless RELEASES_FILE names base images');

    const db = createDb(cfg.database.url!, 2, undefined, logger);
    try {
      const applied = await migrateLatest(db);
      logger.info({ applied }, 'migrations up to date');
    } finally {
      await db.destroy();
    }

    for (const name of ['api', 'worker'] as const) supervise(name, cfg);
    const apiUrl = `http://localhost:${cfg.api.port}`;
    await waitReady(apiUrl, 60000, children);
    const kube = cfg.operator.devEnabled ? await startDevOperator() : undefined;
    const demo = cfg.demoFleetHosts > 0 ? await startDemoFleet(cfg, apiUrl, fleetAbort.signal, logger) : undefined;
    if (cfg.demoInsightsClusters > 0) startInsightsDemo(cfg, apiUrl, fleetAbort.signal, logger);

    process.stdout.write(
      [
        '',
        'Landfall is running',
        `  Web UI        ${apiUrl}/`,
        `  API           ${apiUrl}   (liveness ${apiUrl}/healthz, readiness ${apiUrl}/readyz)`,
        `  Temporal UI   ${temporal!.uiUrl}`,
        `  Temporal      ${temporal!.address} (namespace ${cfg.temporal.namespace})`,
        `  PostgreSQL    ${redactUrl(cfg.database.url!)}${pg ? ' (embedded)' : ''}`,
        `  Storage       ${cfg.storage.backend === 'local' ? `local:${cfg.storage.dir}` : `s3:${cfg.storage.endpoint}/${cfg.storage.bucket}`}`,
        `  State         ${cfg.stateDir}`,
        ...(cfg.images.discoveryOsIso ? [`  Discovery OS  ${cfg.images.discoveryOsIso} (x86_64 base image; hosts reach the API at ${cfg.api.baseUrl})`] : []),
        ...(demo ? [`  Demo fleet    ${cfg.demoFleetHosts} simulated hosts in cluster "demo" (infra-env ${demo.infraEnvId})`] : []),
        ...(cfg.demoInsightsClusters > 0 ? [`  Insights demo ${cfg.demoInsightsClusters} clusters of simulated hosts installing (insights-*), see ${apiUrl}/insights`] : []),
        ...(kube ? [`  Kubernetes    ${kube.url} (local kube-apiserver + landfall operator; KUBECONFIG=${kube.kubeconfigPath})`] : []),
        'Press Ctrl-C to stop.',
        '',
      ].join('\n'),
    );
  } catch (err) {
    logger.error({ err: (err as Error).message }, 'start-up failed');
    await shutdown(1);
  }
}

/**
 * The insights demo (DEMO_INSIGHTS_CLUSTERS): clusters of simulated hosts that
 * install, fail, get fixed and retried through the API, in the background.
 */
function startInsightsDemo(cfg: Config, apiUrl: string, signal: AbortSignal, logger: Logger): void {
  void (async () => {
    const { seedInsightsDemo } = await import('./demo-insights');
    let headers: Record<string, string> = {};
    let agentToken = (_ie: string) => '';
    if (cfg.auth.type === 'local') {
      const { TokenSigner } = await import('../auth/jwt');
      const signer = new TokenSigner({ privateKeyPem: cfg.auth.privateKeyPem });
      headers = { Authorization: `Bearer ${signer.sign({ use: 'user', sub: 'demo' })}` };
      agentToken = (ie) => signer.sign({ use: 'agent', infra_env_id: ie });
    }
    const r = await seedInsightsDemo({ apiUrl, headers, agentToken, clusters: cfg.demoInsightsClusters, logger }, signal);
    logger.info({ component: 'demo-insights', created: r.created.length, skipped: r.skipped.length }, 'insights demo seeded');
  })().catch((err: Error) => logger.warn({ component: 'demo-insights', err: err.message }, 'insights demo not seeded'));
}

/**
 * The demo: a cluster named "demo" (created once, found again on the next
 * start) and a simulated fleet booted into its infra-env, so the UI and the
 * API show hosts arriving. The fleet runs in this process until Ctrl-C.
 */
async function startDemoFleet(cfg: Config, apiUrl: string, signal: AbortSignal, logger: Logger): Promise<{ infraEnvId: string } | undefined> {
  const base = `${apiUrl}/api/assisted-install/v2`;
  let headers: Record<string, string> = { 'content-type': 'application/json' };
  if (cfg.auth.type === 'local') {
    const { TokenSigner } = await import('../auth/jwt');
    headers = { ...headers, Authorization: `Bearer ${new TokenSigner({ privateKeyPem: cfg.auth.privateKeyPem }).sign({ use: 'user', sub: 'demo' })}` };
  }
  const json = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(`${base}${path}`, { method, headers, body: body ? JSON.stringify(body) : undefined });
    if (!r.ok) throw new Error(`${method} ${path}: HTTP ${r.status} ${await r.text()}`);
    return r.json() as Promise<Record<string, unknown> & Array<Record<string, unknown>>>;
  };
  try {
    const pullSecret = JSON.stringify({ auths: { 'registry.demo.invalid': { auth: 'ZGVtbzpkZW1v' } } });
    const clusters = (await json('GET', '/clusters')) as Array<Record<string, unknown>>;
    const cluster = clusters.find((c) => c.name === 'demo') ?? (await json('POST', '/clusters', {
        name: 'demo',
        openshift_version: '1.31',
        pull_secret: pullSecret,
        base_dns_domain: 'demo.landfall.test',
        // Free addresses in the simulated hosts' network (192.168.127.0/24), so the demo is ready to install once its hosts are known.
        api_vips: [{ ip: '192.168.127.250' }],
        ingress_vips: [{ ip: '192.168.127.251' }],
      }));
    const envs = (await json('GET', `/infra-envs?cluster_id=${cluster.id}`)) as Array<Record<string, unknown>>;
    const ie = envs[0] ?? (await json('POST', '/infra-envs', { name: 'demo', pull_secret: pullSecret, cluster_id: cluster.id }));
    let token = '';
    if (cfg.auth.type === 'local') {
      const { TokenSigner } = await import('../auth/jwt');
      token = new TokenSigner({ privateKeyPem: cfg.auth.privateKeyPem }).sign({ use: 'agent', infra_env_id: String(ie.id) }, cfg.auth.agentTokenTtlSeconds || undefined);
    }
    const { runFleet } = await import('../../agent/fleet');
    const workers = Math.max(0, cfg.demoFleetHosts - 3);
    void runFleet(
      {
        serviceUrl: apiUrl,
        infraEnvId: String(ie.id),
        agentToken: token,
        count: cfg.demoFleetHosts,
        mix: workers ? `control-plane:${cfg.demoFleetHosts - workers},worker:${workers}` : 'control-plane',
        durationSeconds: 24 * 3600,
        pollIntervalSeconds: 10,
        onProgress: (line) => logger.debug({ component: 'demo-fleet' }, line),
      },
      signal,
    ).catch((err: Error) => logger.warn({ err: err.message }, 'demo fleet stopped'));
    return { infraEnvId: String(ie.id) };
  } catch (err) {
    logger.warn({ err: (err as Error).message }, 'demo fleet not started');
    return undefined;
  }
}
