/**
 * What batching the poll lane's check-ins saves (src/db/poll-lane.ts
 * BatchedStatement): K check-ins of distinct hosts sent together on the lane,
 * either as K pipelined statements of one row each (the lane before batching)
 * or as one statement of K rows (the lane now), alternating, on one lane
 * connection each. Per check-in: the lane backend's CPU (from /proc), this
 * process's CPU (pg's encoding and parsing, the lane's bookkeeping) and the
 * wall time. The hosts carry a 10 KB inventory, as a discovered host does.
 *
 *   node dist/bench/checkin-batch.js [--hosts 2000] [--calls 30000] [--k 3] [--rounds 2]
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { createDb } from '../src/db/database';
import { CHECK_IN_BATCH_SQL, CHECK_IN_TYPES, checkInValues, createHostsRepo } from '../src/db/hosts-repo';
import { createInfraEnvsRepo } from '../src/db/infra-envs-repo';
import { POLL_LANE_APPLICATION_NAME, PollLane } from '../src/db/poll-lane';
import { inventoryFor } from './inventory';
import { benchDatabase, checkOptions, numberFlag, treeCpuSeconds } from './support';

checkOptions('usage: node dist/bench/checkin-batch.js [--hosts 2000] [--calls 30000] [--k 3] [--rounds 2]', { numbers: ['hosts', 'calls', 'k', 'rounds'] });

type Mode = 'one statement each' | 'one batched statement';

async function main(): Promise<void> {
  const hostCount = Math.floor(numberFlag('hosts', 2000));
  const calls = Math.floor(numberFlag('calls', 30_000));
  const k = Math.max(1, Math.floor(numberFlag('k', 3)));
  const rounds = Math.floor(numberFlag('rounds', 2));
  const { dir, pg } = await benchDatabase('checkin-batch');
  try {
    const db = createDb(pg.url, 2);
    const infraEnvId = randomUUID();
    const ids: string[] = [];
    try {
      await createInfraEnvsRepo(db).insert({ id: infraEnvId, owner: 'bench', name: 'ie', cluster_id: null, pull_secret: null, doc: {} });
      const hosts = createHostsRepo(db);
      for (let i = 0; i < hostCount; i++) {
        const id = randomUUID();
        ids.push(id);
        await hosts.insert({ id, infra_env_id: infraEnvId, status: 'known', status_info: 'bench', doc: {}, inventory: inventoryFor(`h${i}`, i) } as never);
      }
      await db.raw('vacuum analyze hosts');
    } finally {
      await db.destroy();
    }
    const modes: Mode[] = [];
    for (let r = 0; r < rounds; r++) modes.push('one statement each', 'one batched statement');
    const statement = { name: 'checkin_batch', text: CHECK_IN_BATCH_SQL, width: CHECK_IN_TYPES.length };
    let next = 0;
    const values = () => checkInValues({ infraEnvId, hostId: ids[next++ % ids.length]! }, 1_700_000_000, 'bench', new Date(Date.now() - 60_000));
    process.stdout.write(`${hostCount} hosts, ${calls} check-ins per mode, ${k} sent together\n`);
    for (const mode of modes) {
      const lane = new PollLane(pg.url, 'force_generic_plan');
      try {
        // Every group of k answered before the next is sent, as polls that arrive together in one turn.
        const group = async () => {
          const rows = Array.from({ length: k }, values);
          const answers =
            mode === 'one batched statement'
              ? await Promise.all(rows.map((row) => lane.batched(statement, row)))
              : await Promise.all(rows.map((row) => lane.query(statement.name, statement.text, row.map((v) => [v])).then((r) => r?.[0])));
          if (answers.some((a) => a === undefined)) throw new Error(`${mode}: a check-in came back without its row`);
        };
        for (let i = 0; i < 500; i += k) await group();
        const pid = await laneBackend(pg.url);
        const b0 = treeCpuSeconds(pid);
        const c0 = process.cpuUsage();
        const t0 = process.hrtime.bigint();
        for (let i = 0; i < calls; i += k) await group();
        const done = Math.ceil(calls / k) * k;
        const wallUs = Number(process.hrtime.bigint() - t0) / 1000 / done;
        const c = process.cpuUsage(c0);
        const backendUs = ((treeCpuSeconds(pid) - b0) * 1e6) / done;
        process.stdout.write(`${mode.padEnd(22)} PostgreSQL backend ${backendUs.toFixed(1)} µs per check-in, client ${((c.user + c.system) / done).toFixed(1)} µs, wall ${wallUs.toFixed(1)} µs\n`);
      } finally {
        await lane.close();
      }
    }
  } finally {
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The lane's backend: the only connection with the lane's application name once it has run a statement. */
async function laneBackend(url: string): Promise<number> {
  const db = createDb(url, 1);
  try {
    const rows = (await db.raw<{ rows: Array<{ pid: number }> }>('select pid from pg_stat_activity where application_name = ?', [POLL_LANE_APPLICATION_NAME])).rows;
    if (rows.length !== 1) throw new Error(`expected one lane backend, found ${rows.length}`);
    return rows[0]!.pid;
  } finally {
    await db.destroy();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`checkin-batch: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
