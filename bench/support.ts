/** What the lifecycle, fleet and install benchmarks share: flags, a watchdog, a migrated embedded PostgreSQL. */
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres, type EmbeddedPg } from '../src/dev/embedded-postgres';
import { freePort } from '../src/dev/process-utils';
import { createDb } from '../src/db/database';
import { migrateLatest } from '../src/db/migrations';

/** `--name N` from the command line, or the default. */
export function numberFlag(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}

/** Bounds a benchmark: it exits by itself even if something it waits for never comes. */
export function watchdog(ms: number): NodeJS.Timeout {
  return setTimeout(() => {
    console.error('bench: watchdog expired');
    process.exit(2);
  }, ms);
}

/** A temporary folder and a migrated embedded PostgreSQL in it. */
export async function benchDatabase(name: string): Promise<{ dir: string; pg: EmbeddedPg }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `landfall-bench-${name}-`));
  const pg = await startEmbeddedPostgres({ dir: path.join(dir, 'pg'), port: await freePort(), database: 'bench' });
  const db = createDb(pg.url, 2);
  try {
    await migrateLatest(db);
  } finally {
    await db.destroy();
  }
  return { dir, pg };
}

/** Resident memory of a process, in MB, from /proc. */
export function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
}

/** A JSON caller for the REST API at `base`: parses the answer, and throws with the body on a 4xx or 5xx. */
export function apiCaller(base: string) {
  return async (method: string, p: string, body?: unknown) => {
    const r = await fetch(`${base}${p}`, { method, headers: body !== undefined ? { 'content-type': 'application/json' } : {}, body: body !== undefined ? JSON.stringify(body) : undefined });
    const text = await r.text();
    if (r.status >= 400) throw new Error(`${method} ${p}: ${r.status} ${text.slice(0, 300)}`);
    return text ? JSON.parse(text) : undefined;
  };
}
