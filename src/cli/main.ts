/**
 * `landfall <command>`: one binary for every process. Production runs
 * `landfall migrate`, `landfall api` and `landfall worker` pointed at external
 * services; `landfall dev` runs the whole stack on one machine.
 */
import { loadConfigOrExit } from '../config';
import { createLogger } from '../logger';

const USAGE = `usage: landfall <command>

commands:
  dev                 run everything locally: Temporal + UI, PostgreSQL, migrations, api, worker
  api                 serve the REST API (needs DATABASE_URL, TEMPORAL_ADDRESS)
  worker              run the Temporal worker (needs DATABASE_URL, TEMPORAL_ADDRESS)
  token user <name> [--admin] [--ttl-hours N]
  token agent <infra-env-id> [--ttl-hours N]
                      print a signed token for AUTH_TYPE=local (needs EC_PRIVATE_KEY_PEM)
  inventory           print this machine's inventory JSON (what the agent reports)
  replay FILE...      replay saved workflow histories (temporal workflow show -o json) against this code
  fleet --infra-env ID [--url URL] [--count N] [--profiles control-plane:3,worker:2]
        [--duration-seconds S] [--poll-seconds S] [--token T] [--netns]
                      run N simulated hosts (agent loop + simulated executor) against a service
  migrate [latest|rollback|list]
                      apply (default), roll back all, or list database migrations
`;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(USAGE);
    return;
  }
  // These two talk only to the machine or to a service URL; they need no service configuration.
  if (command === 'inventory') {
    const { LinuxExecutor } = await import('../../agent/executors/linux');
    process.stdout.write(JSON.stringify(await new LinuxExecutor().inventory(), null, 2) + '\n');
    return;
  }
  if (command === 'replay') {
    await runReplay(rest);
    return;
  }
  if (command === 'fleet') {
    await runFleetCommand(rest);
    return;
  }
  const cfg = loadConfigOrExit();
  switch (command) {
    case 'dev': {
      const { runDev } = await import('../dev/supervisor');
      await runDev(cfg);
      return;
    }
    case 'api': {
      const { startApi } = await import('../api/server');
      const logger = createLogger(cfg, 'api');
      const api = await startApi(cfg, logger);
      const stop = async () => {
        logger.info('api stopping');
        const force = setTimeout(() => process.exit(1), cfg.shutdownTimeoutMs).unref();
        await api.close();
        clearTimeout(force);
        process.exit(0);
      };
      process.once('SIGINT', () => void stop());
      process.once('SIGTERM', () => void stop());
      return;
    }
    case 'worker': {
      const { startWorker } = await import('../worker/worker');
      const worker = await startWorker(cfg);
      // The Temporal runtime already turns SIGINT/SIGTERM into a graceful worker shutdown.
      await worker.done;
      process.exit(0);
      return;
    }
    case 'migrate': {
      const { createDb } = await import('../db/database');
      const m = await import('../db/migrations');
      if (!cfg.database.url) throw new Error('DATABASE_URL is required for migrate');
      const db = createDb(cfg.database.url, 1);
      try {
        const sub = rest[0] ?? 'latest';
        if (sub === 'latest') process.stdout.write(`applied: ${JSON.stringify(await m.migrateLatest(db))}\n`);
        else if (sub === 'rollback') process.stdout.write(`rolled back: ${JSON.stringify(await m.migrateRollbackAll(db))}\n`);
        else if (sub === 'list') process.stdout.write(`${JSON.stringify(await m.listMigrations(db), null, 2)}\n`);
        else throw new Error(`unknown migrate subcommand "${sub}" (latest, rollback, list)`);
      } finally {
        await db.destroy();
      }
      return;
    }
    case 'token': {
      const { TokenSigner } = await import('../auth/jwt');
      if (!cfg.auth.privateKeyPem) throw new Error('EC_PRIVATE_KEY_PEM is required to sign tokens');
      const signer = new TokenSigner({ privateKeyPem: cfg.auth.privateKeyPem });
      const [kind, subject] = rest;
      const ttlIdx = rest.indexOf('--ttl-hours');
      const ttl = ttlIdx >= 0 ? Number(rest[ttlIdx + 1]) * 3600 : undefined;
      if (ttl !== undefined && !(ttl > 0)) throw new Error('--ttl-hours takes a positive number');
      if (!subject || (kind !== 'user' && kind !== 'agent')) throw new Error('usage: landfall token user <name> | landfall token agent <infra-env-id>');
      const token =
        kind === 'user'
          ? signer.sign({ use: 'user', sub: subject, ...(rest.includes('--admin') ? { admin: true } : {}) }, ttl)
          : signer.sign({ use: 'agent', infra_env_id: subject }, ttl);
      process.stdout.write(token + '\n');
      return;
    }
    default:
      process.stderr.write(`landfall: unknown command "${command}"\n${USAGE}`);
      process.exit(2);
  }
}

/** Replays histories against the workflow code of this build: a determinism break shows before a deploy. */
async function runReplay(files: string[]): Promise<void> {
  if (!files.length) throw new Error('replay needs one or more history JSON files');
  const { readFileSync } = await import('node:fs');
  const { DefaultLogger, Runtime, Worker } = await import('@temporalio/worker');
  Runtime.install({ logger: new DefaultLogger('WARN') });
  let failed = 0;
  for (const file of files) {
    const history = JSON.parse(readFileSync(file, 'utf8'));
    try {
      await Worker.runReplayHistory({ workflowsPath: require.resolve('../../workflows') }, history);
      process.stdout.write(`replay ok: ${file}\n`);
    } catch (err) {
      failed++;
      process.stdout.write(`replay FAILED: ${file}: ${(err as Error).message.split('\n')[0]}\n`);
    }
  }
  if (failed) process.exit(1);
}

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

async function runFleetCommand(args: string[]): Promise<void> {
  const { runFleet } = await import('../../agent/fleet');
  const infraEnvId = flag(args, '--infra-env');
  if (!infraEnvId) throw new Error('fleet needs --infra-env ID');
  const abort = new AbortController();
  process.once('SIGINT', () => abort.abort());
  process.once('SIGTERM', () => abort.abort());
  const count = Number(flag(args, '--count') ?? 5);
  process.stderr.write(`fleet: starting ${count} simulated hosts\n`);
  const report = await runFleet(
    {
      serviceUrl: flag(args, '--url') ?? 'http://localhost:8090',
      infraEnvId,
      agentToken: flag(args, '--token'),
      count,
      mix: flag(args, '--profiles') ?? 'control-plane:3,worker:2',
      durationSeconds: Number(flag(args, '--duration-seconds') ?? 600),
      pollIntervalSeconds: flag(args, '--poll-seconds') ? Number(flag(args, '--poll-seconds')) : undefined,
      netns: args.includes('--netns'),
      onProgress: (line) => process.stderr.write(line + '\n'),
    },
    abort.signal,
  );
  process.stdout.write(JSON.stringify(report, null, 2) + '\n');
}

main(process.argv.slice(2)).catch((err: unknown) => {
  // One readable line, never a stack trace, for anything that reaches the top.
  process.stderr.write(`landfall: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
