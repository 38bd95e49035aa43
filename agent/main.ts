/**
 * landfall-agent: the program the discovery image runs (bundled to one file,
 * dist/agent/landfall-agent.js, run with plain node).
 *   landfall-agent [--config FILE]     register and serve steps until stopped
 *   landfall-agent inventory           print this machine's inventory JSON
 */
import { AgentConfigError, loadAgentConfig } from './config';
import { HostAgent } from './agent';
import { LinuxExecutor } from './executors/linux';
import { ServiceClient, createDispatcher } from './service-client';

async function main(argv: string[]): Promise<void> {
  if (argv[0] === 'inventory') {
    process.stdout.write(JSON.stringify(await new LinuxExecutor().inventory(), null, 2) + '\n');
    return;
  }
  const cfgIdx = argv.indexOf('--config');
  const cfg = loadAgentConfig({ file: cfgIdx >= 0 ? argv[cfgIdx + 1] : undefined });
  const { dispatcher, proxy } = createDispatcher(cfg);
  const client = new ServiceClient(cfg, dispatcher);
  let hostId = '';
  const executor = new LinuxExecutor(async () => {
    const r = await client.request('GET', `/infra-env/${cfg.infraEnvId}/hosts/${hostId}/downloads/ignition`);
    if (r.status !== 200) throw new Error(`could not download this host's Ignition: HTTP ${r.status}`);
    return Buffer.from(r.text);
  });
  hostId = await executor.hostId();
  const log = {
    info: (msg: string, data?: Record<string, unknown>) => process.stdout.write(`${new Date().toISOString()} ${msg} ${data ? JSON.stringify(data) : ''}\n`),
    warn: (msg: string, data?: Record<string, unknown>) => process.stderr.write(`${new Date().toISOString()} ${msg} ${data ? JSON.stringify(data) : ''}\n`),
  };
  const abort = new AbortController();
  process.once('SIGINT', () => abort.abort());
  process.once('SIGTERM', () => abort.abort());
  await new HostAgent(cfg, executor, client, log, { proxy }).run(abort.signal);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`landfall-agent: ${err instanceof AgentConfigError ? err.message : (err as Error)?.message ?? String(err)}\n`);
  process.exit(err instanceof AgentConfigError ? 2 : 1);
});
