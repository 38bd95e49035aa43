import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { searchAttributeFlags } from '../temporal/names';
import { stopProcess, toolsDir, waitForPort } from './process-utils';

const execFileP = promisify(execFile);

/** The CLI installed by scripts/install-temporal.sh, unless TEMPORAL_CLI_PATH names another. */
export function temporalBinary(override?: string): string {
  const bin = override ?? path.join(toolsDir(), 'bin', 'temporal');
  if (!existsSync(bin)) {
    throw new Error(`Temporal CLI not found at ${bin}; run "bash scripts/install-temporal.sh" (npm start and npm test do)`);
  }
  return bin;
}

export interface TemporalDevServerOptions {
  binary: string;
  port: number;
  /** undefined runs headless (tests); the UI is what an operator debugs installs with. */
  uiPort?: number;
  dbFile: string;
  namespace: string;
  retentionHours: number;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  onOutput?: (line: string) => void;
}

export interface TemporalDevServer {
  address: string;
  uiUrl: string | undefined;
  process: ChildProcess;
  stop(graceMs?: number): Promise<void>;
}

export async function startTemporalDevServer(o: TemporalDevServerOptions): Promise<TemporalDevServer> {
  mkdirSync(path.dirname(o.dbFile), { recursive: true });
  const args = [
    'server',
    'start-dev',
    '--ip', '127.0.0.1',
    '--port', String(o.port),
    '--namespace', o.namespace,
    '--db-filename', o.dbFile,
    // WAL keeps file persistence fast enough (the SDK's own CI does the same);
    // NORMAL rather than OFF so a power cut cannot corrupt the file.
    '--sqlite-pragma', 'journal_mode=WAL',
    '--sqlite-pragma', 'synchronous=NORMAL',
    '--log-level', o.logLevel ?? 'warn',
    ...searchAttributeFlags().flatMap((sa) => ['--search-attribute', sa]),
    ...(o.uiPort ? ['--ui-port', String(o.uiPort), '--ui-ip', '127.0.0.1'] : ['--headless']),
  ];
  const proc = spawn(o.binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  // The last lines it printed, so a server that exits at start says why (a port taken, a locked file).
  const recent: string[] = [];
  const forward = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line.trim()) continue;
      recent.push(line);
      if (recent.length > 5) recent.shift();
      o.onOutput?.(line);
    }
  };
  proc.stdout?.on('data', forward);
  proc.stderr?.on('data', forward);
  const stop = (graceMs = 10000) => stopProcess(proc, graceMs);
  try {
    await waitForPort('127.0.0.1', o.port, 60000, 'temporal server', proc);
    const address = `127.0.0.1:${o.port}`;
    await setNamespaceRetention(o.binary, address, o.namespace, o.retentionHours);
    return { address, uiUrl: o.uiPort ? `http://localhost:${o.uiPort}` : undefined, process: proc, stop };
  } catch (err) {
    await stop(2000);
    if (err instanceof Error && recent.length) err.message += `; it printed: ${recent.join(' | ')}`;
    throw err;
  }
}

/**
 * start-dev gives namespaces 24 h retention, after which finished installs vanish
 * from the UI; raise it. Retried because the frontend accepts connections a
 * moment before the namespace registry answers.
 */
export async function setNamespaceRetention(binary: string, address: string, namespace: string, hours: number): Promise<void> {
  let lastErr: unknown;
  for (let i = 0; i < 40; i++) {
    try {
      await execFileP(binary, ['operator', 'namespace', 'update', '--address', address, '--namespace', namespace, '--retention', `${hours}h`]);
      return;
    } catch (err) {
      lastErr = err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(`could not set retention of namespace ${namespace}: ${(lastErr as Error).message}`);
}
