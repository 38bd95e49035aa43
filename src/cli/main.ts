/**
 * `landfall <command>`: one binary for every process and for the people who
 * drive it. Production runs `landfall migrate`, `landfall api` and `landfall
 * worker` pointed at external services; `landfall dev` runs the whole stack on
 * one machine. The client commands (cluster, hosts, install, …) talk only to
 * the public REST API, so they work against any Landfall (--url).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Command, CommanderError } from 'commander';
import { CliError, EXIT, exitCodesHelp } from './exit-codes';
import { registerServiceCommands } from './service-commands';
import { clusterCommand } from './commands/clusters';
import { infraEnvCommand, isoCommand } from './commands/infra-envs';
import { hostsCommand } from './commands/hosts';
import { installCommand } from './commands/install';
import { eventsCommand } from './commands/events';
import { kubeconfigCommand, logsCommand } from './commands/downloads';
import { reportCommand } from './commands/report';
import { insightsCommand } from './commands/insights';

const CLIENT_HELP = `
Client commands take --url (env LANDFALL_URL, default http://127.0.0.1:8090),
--token (env LANDFALL_TOKEN, sent as "Authorization: Bearer") and
-o/--output table|json, before or after the command. A cluster is named by
its id or its unique name.

Watch the demo cluster of \`npm start\` install:
  landfall hosts --cluster demo
  landfall install --cluster demo --wait
  landfall report --cluster demo
  landfall insights --since 24h
`;

export function buildProgram(): Command {
  const program = new Command('landfall')
    .description('Landfall: an assisted installer for bare-metal Kubernetes clusters, driven by Temporal')
    .version(packageVersion())
    .showSuggestionAfterError()
    .configureOutput({
      // Commander's own errors ("error: unknown option") become our one line.
      outputError: (str, write) => write(`landfall: ${str.replace(/^error: /, '').trim().replace(/\s*\n\s*/g, ' ')}\n`),
    })
    .exitOverride()
    .addHelpText('after', `${CLIENT_HELP}\n${exitCodesHelp()}\n`);
  // Subcommands inherit exitOverride and configureOutput from the program as they are added.
  program.commandsGroup('Client commands (talk to the REST API at --url):');
  for (const cmd of [clusterCommand(), infraEnvCommand(), isoCommand(), hostsCommand(), installCommand(), eventsCommand(), logsCommand(), kubeconfigCommand(), reportCommand(), insightsCommand()]) {
    program.addCommand(inheritSettings(cmd, program));
  }
  program.commandsGroup('Service commands (run Landfall itself; read the environment, see README "Configuration"):');
  registerServiceCommands(program);
  return program;
}

/** addCommand (unlike .command) does not copy the parent's settings; copy them down the tree. */
function inheritSettings(cmd: Command, parent: Command): Command {
  cmd.copyInheritedSettings(parent);
  for (const sub of cmd.commands) inheritSettings(sub, cmd);
  return cmd;
}

/** The version in package.json, found from src/cli or dist/src/cli alike. */
function packageVersion(): string {
  for (let dir = __dirname; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
  }
  return 'unknown';
}

/** Processes that serve until signalled; every other command exits when its action ends. */
const SERVING = new Set(['dev', 'api', 'worker', 'operator']);

const CLIENT_OPTIONS_WITH_VALUE = new Set(['--url', '--token', '-o', '--output']);

/**
 * `landfall --url X -o json cluster list` reads naturally; commander wants
 * options after the (sub)command that declares them, so options given before
 * the command move to the end.
 */
export function hoistClientOptions(argv: string[]): string[] {
  const leading: string[] = [];
  let i = 0;
  while (i < argv.length) {
    const a = argv[i]!;
    if (CLIENT_OPTIONS_WITH_VALUE.has(a) && i + 1 < argv.length) {
      leading.push(a, argv[i + 1]!);
      i += 2;
    } else if (/^--(url|token|output)=/.test(a) || /^-o./.test(a)) {
      leading.push(a);
      i += 1;
    } else break;
  }
  return [...argv.slice(i), ...leading];
}

export async function run(argvIn: string[]): Promise<{ code: number; serving: boolean }> {
  const argv = hoistClientOptions(argvIn);
  const program = buildProgram();
  let serving = false;
  program.hook('preAction', (_program, action) => {
    serving = SERVING.has(action.name());
  });
  const code = await runProgram(program, argv);
  return { code, serving };
}

async function runProgram(program: Command, argv: string[]): Promise<number> {
  try {
    if (argv.length === 0) {
      program.outputHelp();
      return EXIT.ok.code;
    }
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.ok.code;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version are successes; everything else commander refuses is bad usage (already printed).
      return ['commander.helpDisplayed', 'commander.version', 'commander.help'].includes(err.code) ? EXIT.ok.code : EXIT.usage.code;
    }
    // One readable line, never a stack trace, for anything that reaches the top.
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`landfall: ${message.split('\n')[0]}\n`);
    return err instanceof CliError ? err.exitCode : EXIT.failed.code;
  }
}

export function main(): void {
  // `landfall … | head` closes the pipe early: that is the reader's choice, not an error.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
  void run(process.argv.slice(2)).then(({ code, serving }) => {
    // A finished client command exits now rather than when idle keep-alive sockets close.
    if (code !== 0 || !serving) process.exit(code);
  });
}

if (require.main === module) main();
