/**
 * The commands that run Landfall's own processes (dev, api, worker, migrate)
 * or act on this machine (token, inventory, replay, fleet). These read the
 * service configuration (src/config.ts); the client commands never do.
 */
import { Argument, Option, type Command } from 'commander';
import { loadConfigOrExit } from '../config';
import { createLogger } from '../logger';
import { CliError } from './exit-codes';
import { positiveInt } from './output';

export function registerServiceCommands(program: Command): void {
  program
    .command('dev')
    .description('run everything locally: Temporal + UI, PostgreSQL, migrations, api, worker, demo fleet (what `npm start` runs)')
    .action(async () => {
      const cfg = loadConfigOrExit();
      const { runDev } = await import('../dev/supervisor');
      await runDev(cfg);
    });

  program
    .command('api')
    .description('serve the REST API (needs DATABASE_URL, TEMPORAL_ADDRESS); API_PROCESSES processes share the port')
    .action(async () => {
      const cfg = loadConfigOrExit();
      const logger = createLogger(cfg, 'api');
      const { isApiWorker, runApiPrimary } = await import('../api/cluster');
      // The primary of API_PROCESSES > 1 only forks, restarts and stops its workers; each worker is a whole API.
      if (cfg.api.processes > 1 && !isApiWorker()) return runApiPrimary(cfg, logger);
      let api: { close(): Promise<void> };
      if (isApiWorker() && cfg.api.role === 'refresh') {
        const { startRefresherProcess } = await import('../api/refresher-process');
        api = startRefresherProcess(cfg, logger);
      } else {
        const { startApi } = await import('../api/server');
        api = await startApi(cfg, logger);
      }
      let stopping = false;
      const stop = async () => {
        // A terminal's Ctrl-C reaches a worker twice (from the terminal and from its primary).
        if (stopping) return;
        stopping = true;
        logger.info('api stopping');
        const force = setTimeout(() => process.exit(1), cfg.shutdownTimeoutMs).unref();
        await api.close();
        clearTimeout(force);
        process.exit(0);
      };
      process.once('SIGINT', () => void stop());
      process.once('SIGTERM', () => void stop());
    });

  program
    .command('worker')
    .description('run the Temporal worker (needs DATABASE_URL, TEMPORAL_ADDRESS)')
    .action(async () => {
      const cfg = loadConfigOrExit();
      const { startWorker } = await import('../worker/worker');
      const worker = await startWorker(cfg);
      // The Temporal runtime already turns SIGINT/SIGTERM into a graceful worker shutdown.
      await worker.done;
      process.exit(0);
    });

  program
    .command('operator')
    .description('reconcile Kubernetes custom resources (InfraEnv, Agent, AgentClusterInstall, ClusterDeployment, …) into Landfall through its REST API (needs OPERATOR_KUBECONFIG or an in-cluster service account)')
    .option('--install-crds', 'create or update the CRDs of deploy/crds first (also OPERATOR_INSTALL_CRDS=true)')
    .action(async (o: { installCrds?: boolean }) => {
      const cfg = loadConfigOrExit();
      const { startOperator } = await import('../operator/operator');
      const { inClusterConnection, loadKubeconfig } = await import('../operator/kube-client');
      const op = cfg.operator;
      const kube = op.kubeconfig ? loadKubeconfig(op.kubeconfig) : op.inCluster ? inClusterConnection(op.inCluster.host, op.inCluster.port) : undefined;
      if (!kube) throw new CliError('usage', 'OPERATOR_KUBECONFIG is required (or run in a pod, where KUBERNETES_SERVICE_HOST is set)');
      const logger = createLogger(cfg, 'operator');
      const running = await startOperator({ kube, landfallUrl: op.landfallUrl, landfallToken: op.landfallToken, publicUrl: cfg.api.baseUrl, namespaces: op.namespaces, resyncMs: op.resyncMs, installCrds: o.installCrds || op.installCrds, logger });
      const stop = async () => {
        logger.info('operator stopping');
        const force = setTimeout(() => process.exit(1), cfg.shutdownTimeoutMs).unref();
        await running.stop();
        clearTimeout(force);
        process.exit(0);
      };
      process.once('SIGINT', () => void stop());
      process.once('SIGTERM', () => void stop());
    });

  program
    .command('migrate')
    .description('apply (default), roll back all, or list database migrations')
    .addArgument(new Argument('[action]').choices(['latest', 'rollback', 'list']).default('latest'))
    .action(async (action: string) => {
      const cfg = loadConfigOrExit();
      const { createDb } = await import('../db/database');
      const m = await import('../db/migrations');
      if (!cfg.database.url) throw new CliError('usage', 'DATABASE_URL is required for migrate');
      const db = createDb(cfg.database.url, 1);
      try {
        if (action === 'latest') process.stdout.write(`applied: ${JSON.stringify(await m.migrateLatest(db))}\n`);
        else if (action === 'rollback') process.stdout.write(`rolled back: ${JSON.stringify(await m.migrateRollbackAll(db))}\n`);
        else process.stdout.write(`${JSON.stringify(await m.listMigrations(db), null, 2)}\n`);
      } finally {
        await db.destroy();
      }
    });

  program
    .command('token')
    .description('print a signed token for AUTH_TYPE=local (needs EC_PRIVATE_KEY_PEM): `token user <name>` or `token agent <infra-env-id>`')
    .addArgument(new Argument('<kind>').choices(['user', 'agent']))
    .argument('<subject>', 'user name, or infra-env id')
    .option('--admin', 'a user token with administrator rights')
    .option('--ttl-hours <n>', 'lifetime in hours', (v) => {
      const n = Number(v);
      if (!(n > 0)) throw new CliError('usage', '--ttl-hours takes a positive number');
      return n;
    })
    .action(async (kind: 'user' | 'agent', subject: string, o: { admin?: boolean; ttlHours?: number }) => {
      const cfg = loadConfigOrExit();
      const { TokenSigner } = await import('../auth/jwt');
      if (!cfg.auth.privateKeyPem) throw new CliError('usage', 'EC_PRIVATE_KEY_PEM is required to sign tokens');
      const signer = new TokenSigner({ privateKeyPem: cfg.auth.privateKeyPem });
      const ttl = o.ttlHours !== undefined ? o.ttlHours * 3600 : undefined;
      const token = kind === 'user' ? signer.sign({ use: 'user', sub: subject, ...(o.admin ? { admin: true } : {}) }, ttl) : signer.sign({ use: 'agent', infra_env_id: subject }, ttl);
      process.stdout.write(token + '\n');
    });

  program
    .command('inventory')
    .description("print this machine's inventory JSON (what the agent reports)")
    .action(async () => {
      const { LinuxExecutor } = await import('../../agent/executors/linux');
      process.stdout.write(JSON.stringify(await new LinuxExecutor().inventory(), null, 2) + '\n');
    });

  program
    .command('replay')
    .description('replay saved workflow histories (temporal workflow show -o json) against this code')
    .argument('<files...>', 'history JSON files')
    .action(runReplay);

  program
    .command('fleet')
    .description('run N simulated hosts (agent loop + simulated executor) against a service; prints a JSON report')
    .requiredOption('--infra-env <id>', 'infra-env the hosts boot into')
    .option('--url <url>', 'service URL the agents call', 'http://localhost:8090')
    .option('--token <token>', 'agent token (AUTH_TYPE=local: `landfall token agent <infra-env-id>`)')
    .option('--count <n>', 'number of hosts', positiveInt('--count'), 5)
    .option('--profiles <mix>', 'profile mix: name:count,… or profile YAML paths', 'control-plane:3,worker:2')
    .option('--duration-seconds <s>', 'stop after this long', Number, 600)
    .addOption(new Option('--poll-seconds <s>', 'agent poll interval').argParser(Number))
    .option('--netns', 'give each host its own network namespace (root)')
    .option('--first-index <n>', 'index of the first host (addresses and names): a second fleet on the same simulated network starts after the first', (v) => Number(v), 0)
    .option('--joins-running-cluster', 'day 2: the hosts join a running cluster whose nodes another fleet simulated; those nodes answer their connectivity checks')
    .option('--state-dir <dir>', "keep each host's outbox and started install steps under <dir>/<host id>, so a restarted fleet resumes as restarted agents")
    .action(async (o: { infraEnv: string; url: string; token?: string; count: number; profiles: string; durationSeconds: number; pollSeconds?: number; netns?: boolean; firstIndex: number; joinsRunningCluster?: boolean; stateDir?: string }) => {
      const { runFleet } = await import('../../agent/fleet');
      const abort = new AbortController();
      process.once('SIGINT', () => abort.abort());
      process.once('SIGTERM', () => abort.abort());
      process.stderr.write(`fleet: starting ${o.count} simulated hosts\n`);
      const report = await runFleet(
        {
          serviceUrl: o.url,
          infraEnvId: o.infraEnv,
          agentToken: o.token,
          count: o.count,
          mix: o.profiles,
          durationSeconds: o.durationSeconds,
          pollIntervalSeconds: o.pollSeconds,
          netns: Boolean(o.netns),
          firstIndex: o.firstIndex,
          joinsRunningCluster: Boolean(o.joinsRunningCluster),
          stateDir: o.stateDir,
          onProgress: (line) => process.stderr.write(line + '\n'),
        },
        abort.signal,
      );
      process.stdout.write(JSON.stringify(report, null, 2) + '\n');
    });
}

/** Replays histories against the workflow code of this build: a determinism break shows before a deploy. */
async function runReplay(files: string[]): Promise<void> {
  const { readFileSync } = await import('node:fs');
  const { DefaultLogger, Runtime, Worker, bundleWorkflowCode } = await import('@temporalio/worker');
  Runtime.install({ logger: new DefaultLogger('WARN') });
  // One bundle for every history: bundling takes seconds, a replay milliseconds.
  const workflowBundle = await bundleWorkflowCode({ workflowsPath: require.resolve('../../workflows'), logger: new DefaultLogger('WARN') });
  let failed = 0;
  for (const file of files) {
    const history = JSON.parse(readFileSync(file, 'utf8'));
    try {
      await Worker.runReplayHistory({ workflowBundle }, history);
      process.stdout.write(`replay ok: ${file}\n`);
    } catch (err) {
      failed++;
      process.stdout.write(`replay FAILED: ${file}: ${(err as Error).message.split('\n')[0]}\n`);
    }
  }
  if (failed) process.exit(1);
}
