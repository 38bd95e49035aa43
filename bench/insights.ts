/**
 * GET /api/landfall/v1/insights at scale: how long the reads
 * (src/db/insights-repo.ts) and the computation (src/domain/insights.ts)
 * take over a week of installs, and over a day of it.
 *
 *   npm run bench:insights                         # 1,000 clusters × 5 hosts over 7 days
 *   npm run bench:insights -- --clusters 5000      # more
 *
 * The history is written straight into a temporary embedded PostgreSQL, shaped
 * as the service writes it (per cluster: registrations, validation failures
 * and fixes, ready, an attempt with eight stages per host; one cluster in four
 * fails writing a disk, half of those are retried, one in ten needs a second
 * attempt). It measures; it asserts nothing.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { createDb } from '../src/db/database';
import { createInsightsRepo } from '../src/db/insights-repo';
import { computeInsights, type InsightsEvent } from '../src/domain/insights';
import { benchDatabase, checkOptions, numberFlag, watchdog } from './support';

checkOptions('usage: node dist/bench/insights.js [--clusters 1000] [--hosts 5]', { numbers: ['clusters', 'hosts'] });

const CLUSTERS = numberFlag('clusters', 1000);
const HOSTS = numberFlag('hosts', 5);
const DAYS = 7;
const STAGES = ['Starting installation', 'Installing', 'Writing image to disk', 'Rebooting', 'Configuring', 'Joined', 'Done'];

type Row = Omit<InsightsEvent, 'seq' | 'props'> & { category: string; infra_env_id: string | null; request_id: null; props: string };

async function main() {
  const guard = watchdog(30 * 60_000);
  const { dir, pg } = await benchDatabase('insights');
  const db = createDb(pg.url, 4);
  try {
    const now = Date.now();
    const t0 = now - DAYS * 24 * 3600_000;
    let rows: Row[] = [];
    let total = 0;
    const flush = async () => {
      for (let i = 0; i < rows.length; i += 2000) await db('events').insert(rows.slice(i, i + 2000));
      total += rows.length;
      rows = [];
    };
    const started = Date.now();
    for (let c = 0; c < CLUSTERS; c++) {
      const clusterId = randomUUID();
      const ie = randomUUID();
      await db('clusters').insert({ id: clusterId, owner: 'bench', name: `c${c}`, openshift_version: ['1.30', '1.31', '1.32'][c % 3], status: 'installed', status_info: '', doc: '{}' });
      await db('infra_envs').insert({ id: ie, owner: 'bench', name: `c${c}`, cluster_id: clusterId, doc: '{}' });
      const hosts = Array.from({ length: HOSTS }, () => randomUUID());
      const inventory = JSON.stringify({ cpu: { count: 8 }, memory: { physical_bytes: 32 * 1024 ** 3 }, disks: [{ id: 'sda', size_bytes: 480e9, drive_type: 'SSD' }] });
      await db('hosts').insert(hosts.map((id) => ({ id, infra_env_id: ie, cluster_id: clusterId, status: 'installed', status_info: '', inventory, doc: '{}' })));
      let t = t0 + Math.floor((c / CLUSTERS) * (DAYS * 24 * 3600_000 - 3600_000));
      const ev = (name: string, hostId: string | null, props: Record<string, unknown> = {}, dt = 1000) => {
        t += dt;
        rows.push({ name, severity: 'info', category: 'user', message: name, event_time: new Date(t), cluster_id: clusterId, host_id: hostId, infra_env_id: ie, request_id: null, props: JSON.stringify(props) });
      };
      for (const h of hosts) ev('host_registration_succeeded', h);
      for (const h of hosts.slice(0, 2)) ev('host_validation_failed', h, { validation_id: 'belongs-to-majority-group' });
      for (const h of hosts.slice(0, 2)) ev('host_validation_fixed', h, { validation_id: 'belongs-to-majority-group' }, 5000);
      ev('cluster_status_updated', null, { new_status: 'ready' });
      const attempts = c % 10 === 0 ? 2 : 1;
      for (let a = 1; a <= attempts; a++) {
        ev('cluster_prepare_installation_started', null);
        const fails = a < attempts || c % 4 === 1;
        for (const h of hosts) ev('host_status_updated', h, { new_status: 'installing' });
        for (const s of STAGES) {
          for (const [i, h] of hosts.entries()) {
            // The failing host stops at Writing image to disk.
            if (fails && i === 0 && STAGES.indexOf(s) > 2) continue;
            ev('host_install_progress_updated', h, { stage: s, progress_info: '' }, 3000);
          }
          if (fails && s === 'Writing image to disk') {
            ev('host_install_progress_updated', hosts[0]!, { stage: 'Failed', progress_info: ' (disk write error)' });
            ev('cluster_installation_failed', null, { reason: 'a host failed', failing_stage: s });
          }
        }
        if (fails && a === attempts && c % 8 === 1) {
          ev('host_install_retried', hosts[0]!, { retry: 1 });
          for (const s of STAGES) ev('host_install_progress_updated', hosts[0]!, { stage: s, progress_info: '' }, 3000);
          ev('cluster_installation_completed', null);
        } else if (!fails) ev('cluster_installation_completed', null);
        else if (a < attempts) ev('cluster_installation_reset', null, {}, 60_000);
      }
      if (rows.length > 20_000) await flush();
    }
    await flush();
    await db.raw('analyze events');
    console.log(`bench: wrote ${total} events for ${CLUSTERS} clusters × ${HOSTS} hosts over ${DAYS} days in ${((Date.now() - started) / 1000).toFixed(1)} s`);

    const repo = createInsightsRepo(db);
    for (const [label, fromMs] of [['7 days', now - DAYS * 24 * 3600_000], ['1 day', now - 24 * 3600_000]] as const) {
      const times: Array<{ load: number; compute: number; events: number }> = [];
      let summary = '';
      for (let i = 0; i < 5; i++) {
        const a = performance.now();
        const rowsRead = await repo.load({ from: new Date(fromMs), to: new Date(now + 1000) });
        const b = performance.now();
        const r = computeInsights({ from: new Date(fromMs), to: new Date(now + 1000), now: new Date(now + 1000), ...rowsRead });
        const c = performance.now();
        times.push({ load: b - a, compute: c - b, events: rowsRead.events.length });
        summary = `attempts ${r.installs.attempts_started}, first-attempt ${r.first_attempt.success_rate}, eventual ${r.eventual.success_rate}, failures ${r.failures.total}`;
      }
      const med = (k: 'load' | 'compute') => [...times].sort((x, y) => x[k] - y[k])[2]![k].toFixed(0);
      console.log(`bench: window ${label}: ${times[0]!.events} events read; median of 5: read ${med('load')} ms, compute ${med('compute')} ms (${summary}); RSS ${(process.memoryUsage().rss / 1e6).toFixed(0)} MB`);
    }
  } finally {
    await db.destroy();
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
    clearTimeout(guard);
  }
}

main().catch((err: Error) => {
  console.error(`bench: ${err.stack ?? err.message}`);
  process.exit(1);
});
