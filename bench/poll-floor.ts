/**
 * The floor under a poll's cost on this machine (not a timed test): a bare
 * node:http server in one process that answers each GET with one prepared
 * `UPDATE … RETURNING` of a 5,000-row table (a ~1.6 KB row, a poll's
 * check-in without its plan) and a ~1.2 KB JSON answer with Express's ETag,
 * driven open loop by the agent benches' own client (bench/lean-http.ts) from
 * a child process. Per rate it prints the server's CPU and PostgreSQL's per
 * request: what Node's HTTP server, pg and PostgreSQL cost before any of the
 * service's own work, to compare with agent-api's "CPU/request".
 *
 * `--processes N` serves from N node:cluster workers, as the API does by
 * default (their CPU and the primary's counted); `--pad N` pads each row
 * with N bytes (1,500 by default; 0: a narrow row).
 *
 *   npm run build && node dist/bench/poll-floor.js [--rates 800,1500] [--seconds 20] [--processes 1] [--pad 1500]
 */
import { fork } from 'node:child_process';
import cluster from 'node:cluster';
import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'pg';
import { startEmbeddedPostgres } from '../src/dev/embedded-postgres';
import { freePort } from '../src/dev/process-utils';
import { LeanPool } from './lean-http';
import { processCpuSeconds, treeCpuSeconds } from './proc-stats';
import { checkOptions, numberFlag, postmasterPid, stringFlag } from './support';

checkOptions('usage: node dist/bench/poll-floor.js [--rates 800,1500] [--seconds 20] [--processes 1] [--pad 1500]', { numbers: ['seconds', 'processes', 'pad'], strings: ['rates'], switches: ['generator', 'worker'] });

const ROWS = 5000;

/** The child: offers `rate` GETs a second for `seconds`, a random row each, and reports p50/p99 from each due time. */
function generator(): void {
  process.on('message', ({ port, rate, seconds }: { port: number; rate: number; seconds: number }) => {
    const pool = new LeanPool(port, 256, 10_000);
    const total = rate * seconds;
    const latencies: number[] = [];
    let sent = 0;
    let failed = 0;
    const t0 = performance.now();
    const tick = () => {
      const now = performance.now();
      while (sent < total && t0 + (sent * 1000) / rate <= now) {
        const due = t0 + (sent * 1000) / rate;
        sent++;
        const row = Math.floor(Math.random() * ROWS);
        pool.request(Buffer.from(`GET /poll/${row}?timestamp=${Math.floor(Date.now() / 1000)} HTTP/1.1\r\nHost: 127.0.0.1\r\naccept: application/json\r\n\r\n`, 'latin1'), (o) => {
          if (!('status' in o) || o.status !== 200) failed++;
          latencies.push(performance.now() - due);
          if (latencies.length === total) {
            latencies.sort((a, b) => a - b);
            pool.destroy();
            process.send!({ p50: latencies[Math.floor(total / 2)], p99: latencies[Math.floor(total * 0.99)], failed });
          }
        });
      }
      if (sent < total) setTimeout(tick, 1);
    };
    tick();
  });
}

async function main(): Promise<void> {
  const rates = stringFlag('rates', '800,1500')!.split(',').map(Number);
  const seconds = numberFlag('seconds', 20);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'poll-floor-'));
  // As root, PostgreSQL runs as its own user and must reach its data folder.
  chmodSync(dir, 0o755);
  const pg = await startEmbeddedPostgres({ dir: path.join(dir, 'data'), port: await freePort(), database: 'poll_floor' });
  const db = new Pool({ connectionString: pg.url, max: 10 });
  // An idle connection that PostgreSQL's shutdown ends is no failure of the measurement.
  db.on('error', () => undefined);
  const processes = numberFlag('processes', 1);
  const pad = numberFlag('pad', 1500);
  const child = fork(__filename, ['--generator']);
  const port = await freePort();
  let server: http.Server | undefined;
  const workers: number[] = [];
  try {
    await db.query('create table h (id int primary key, checked_in_at timestamptz, agent_timestamp bigint, status text, step_sends jsonb, pad text)');
    await db.query(`insert into h select g, now(), 0, 'pending-for-input', '{"inventory":{"d":"x","at":1}}', repeat('x', ${pad}) from generate_series(0, ${ROWS - 1}) g`);
    if (processes === 1) server = await pollServer(pg.url, port);
    else {
      // node:cluster, as the API's default: the primary accepts and hands connections out; its CPU counts too.
      cluster.setupPrimary({ exec: __filename, args: ['--worker'] });
      for (let k = 0; k < processes; k++) {
        const w = cluster.fork({ POLL_FLOOR_PG: pg.url, POLL_FLOOR_PORT: String(port) });
        await new Promise<void>((resolve) => w.once('message', () => resolve()));
        workers.push(w.process.pid!);
      }
    }
    const serverCpu = () => processCpuSeconds(process.pid) + workers.reduce((t, pid) => t + processCpuSeconds(pid), 0);
    const pgPid = postmasterPid(path.join(dir, 'data'));
    process.stdout.write(`poll-floor: node:http + pg, ${processes === 1 ? 'one process' : `${processes} node:cluster workers`}, one prepared UPDATE … RETURNING per GET (${ROWS} rows padded with ${pad} bytes), a ${Buffer.byteLength(ANSWER)}-byte JSON answer with ETag; ${seconds} s per rate\n`);
    for (const rate of rates) {
      const c0 = serverCpu();
      const pg0 = treeCpuSeconds(pgPid);
      const r = await new Promise<{ p50: number; p99: number; failed: number }>((resolve) => {
        child.once('message', resolve);
        child.send({ port, rate, seconds });
      });
      const n = rate * seconds;
      const serverMs = ((serverCpu() - c0) * 1000) / n;
      const pgMs = ((treeCpuSeconds(pgPid) - pg0) * 1000) / n;
      process.stdout.write(`rate ${rate}/s: server ${serverMs.toFixed(3)} ms, PostgreSQL ${pgMs.toFixed(3)} ms of CPU per request; p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms; ${r.failed} failed\n`);
    }
  } finally {
    child.kill();
    for (const w of Object.values(cluster.workers ?? {})) w?.kill();
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server!.close(() => resolve()));
    }
    await db.end();
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A discovery poll's answer in size and shape: six steps with short JSON arguments. */
const ANSWER = JSON.stringify({
  next_instruction_seconds: 60,
  post_step_action: 'continue',
  instructions: Array.from({ length: 6 }, (_, k) => ({ step_type: 'connectivity-check', step_id: `step-${k}`, args: [JSON.stringify({ a: 'y'.repeat(150) })] })),
});

/** The server: one prepared UPDATE … RETURNING per GET, then the fixed answer. */
async function pollServer(url: string, port: number): Promise<http.Server> {
  const db = new Pool({ connectionString: url, max: 10 });
  db.on('error', () => undefined);
  const server = http.createServer((req, res) => {
    const m = /^\/poll\/(\d+)\?timestamp=(\d+)$/.exec(req.url ?? '');
    if (!m) {
      res.statusCode = 404;
      return res.end();
    }
    db.query({ name: 'check-in', text: 'update h set checked_in_at = $1, agent_timestamp = $2 where id = $3 returning status, step_sends', values: [new Date().toISOString(), Number(m[2]), Number(m[1])] }).then(
      () => {
        const body = Buffer.from(ANSWER);
        res.setHeader('Content-Type', 'application/json; charset=utf-8');
        res.setHeader('Content-Length', body.length);
        res.setHeader('ETag', `W/"${body.length.toString(16)}-${createHash('sha1').update(body).digest('base64').slice(0, 27)}"`);
        res.end(body);
      },
      () => {
        res.statusCode = 503;
        res.end();
      },
    );
  });
  // Its pool ends with it (an idle pool would keep the process alive for its idle timeout).
  server.on('close', () => void db.end());
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}

if (process.argv.includes('--generator')) generator();
else if (process.argv.includes('--worker'))
  void pollServer(process.env.POLL_FLOOR_PG!, Number(process.env.POLL_FLOOR_PORT)).then(() => process.send!('listening'));
else
  main().catch((err: unknown) => {
    process.stderr.write(`poll-floor failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
