/**
 * What one poll's check-in costs PostgreSQL, with the pool's plan_cache_mode
 * `auto` (PostgreSQL's default) and `force_generic_plan` (the service's
 * default, DATABASE_PLAN_CACHE_MODE), alternating, on one connection each: the
 * backend's CPU per check-in read from /proc, the client's, and the wall time.
 * `auto` planned this statement again on every call (pg_stat_statements), so
 * the difference is its planning.
 *
 *   node dist/bench/checkin-cost.js [--calls 20000] [--rounds 2]
 */
import { rmSync } from 'node:fs';
import type { PlanCacheMode } from '../src/config';
import { createDb } from '../src/db/database';
import { createHostsRepo } from '../src/db/hosts-repo';
import { benchDatabase, checkOptions, numberFlag, treeCpuSeconds } from './support';

checkOptions('usage: node dist/bench/checkin-cost.js [--calls 20000] [--rounds 2]', { numbers: ['calls', 'rounds'] });

async function main(): Promise<void> {
  const calls = Math.floor(numberFlag('calls', 20_000));
  const rounds = Math.floor(numberFlag('rounds', 2));
  const { dir, pg } = await benchDatabase('checkin-cost');
  try {
    // A key with no row: the statement is parsed, planned and run all the same, and no row's growth is measured.
    const key = { infraEnvId: '00000000-0000-4000-8000-000000000001', hostId: '00000000-0000-4000-8000-000000000002' };
    const modes: PlanCacheMode[] = [];
    for (let r = 0; r < rounds; r++) modes.push('auto', 'force_generic_plan');
    for (const mode of modes) {
      const db = createDb(pg.url, 1, mode);
      try {
        const hosts = createHostsRepo(db);
        const pid = Number(((await db.raw('select pg_backend_pid() as pid')).rows[0] as { pid: number }).pid);
        for (let i = 0; i < 500; i++) await hosts.checkIn(key, 1_700_000_000, 'v1', new Date());
        const b0 = treeCpuSeconds(pid);
        const c0 = process.cpuUsage();
        const t0 = process.hrtime.bigint();
        for (let i = 0; i < calls; i++) await hosts.checkIn(key, 1_700_000_000 + i, 'v1', new Date());
        const wallUs = Number(process.hrtime.bigint() - t0) / 1000 / calls;
        const c = process.cpuUsage(c0);
        const backendUs = ((treeCpuSeconds(pid) - b0) * 1e6) / calls;
        process.stdout.write(`${mode.padEnd(19)} PostgreSQL backend ${backendUs.toFixed(1)} µs per check-in, client ${((c.user + c.system) / calls).toFixed(1)} µs, wall ${wallUs.toFixed(1)} µs (${calls} calls)\n`);
      } finally {
        await db.destroy();
      }
    }
  } finally {
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`checkin-cost: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
