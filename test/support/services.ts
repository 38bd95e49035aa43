/**
 * Real dependencies for tests, each on a free loopback port with its state in a
 * temporary folder: Temporal (the installed CLI), PostgreSQL (embedded
 * binaries) and MinIO (built by scripts/install-minio.sh).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTemporalDevServer, temporalBinary, type TemporalDevServer } from '../../src/dev/temporal-dev-server';
import { startEmbeddedPostgres, type EmbeddedPg } from '../../src/dev/embedded-postgres';
import { freePort, stopProcess, toolsDir, waitForPort } from '../../src/dev/process-utils';

export function tempDir(prefix: string): string {
  return mkdtempSync(path.join(os.tmpdir(), `landfall-${prefix}-`));
}

export async function startTestTemporal(opts: { port?: number; dbFile?: string } = {}): Promise<TemporalDevServer & { port: number; dbFile: string }> {
  const dbFile = opts.dbFile ?? path.join(tempDir('temporal'), 'temporal.sqlite');
  // A port from freePort is free when asked, not when the server binds it: the dev server of a
  // test running in parallel picks random free ports for its own services and may take it first.
  // With no port asked for, a server that exits before listening is tried again on another.
  for (let attempt = 1; ; attempt++) {
    const port = opts.port ?? (await freePort());
    try {
      const server = await startTemporalDevServer({ binary: temporalBinary(), port, dbFile, namespace: 'default', retentionHours: 72 });
      return { ...server, port, dbFile };
    } catch (err) {
      if (opts.port !== undefined || attempt >= 3 || !/exited with code/.test((err as Error).message)) throw err;
    }
  }
}

export async function startTestPostgres(database = 'landfall_test'): Promise<EmbeddedPg> {
  return startEmbeddedPostgres({ dir: path.join(tempDir('pg'), 'data'), port: await freePort(), database });
}

export interface TestMinio {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

export function minioBinary(): string {
  const bin = path.join(toolsDir(), 'bin', 'minio');
  if (!existsSync(bin)) throw new Error(`MinIO not installed at ${bin}; run "bash scripts/install-minio.sh" (npm test does)`);
  return bin;
}

export async function startTestMinio(): Promise<TestMinio> {
  const port = await freePort();
  const consolePort = await freePort();
  const accessKey = 'landfall-test';
  const secretKey = 'landfall-test-secret-key';
  const proc = spawn(minioBinary(), ['server', tempDir('minio'), '--address', `127.0.0.1:${port}`, '--console-address', `127.0.0.1:${consolePort}`, '--quiet'], {
    env: { ...process.env, MINIO_ROOT_USER: accessKey, MINIO_ROOT_PASSWORD: secretKey, MINIO_BROWSER: 'off', MINIO_UPDATE: 'off' },
    stdio: 'ignore',
  });
  await waitForPort('127.0.0.1', port, 60000, 'minio', proc);
  // The port opens a moment before the S3 API answers; wait for its health endpoint.
  const deadline = Date.now() + 30000;
  while (Date.now() < deadline) {
    const ok = await fetch(`http://127.0.0.1:${port}/minio/health/live`).then((r) => r.ok, () => false);
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { endpoint: `http://127.0.0.1:${port}`, accessKey, secretKey, process: proc, stop: () => stopProcess(proc, 5000) };
}

/** Polls `fn` until it returns a truthy value or the time is up. */
export async function eventually<T>(fn: () => Promise<T | undefined | null | false>, timeoutMs = 30000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      lastErr = err;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}${lastErr ? `: ${(lastErr as Error).message}` : ''}`);
}
