/**
 * What one coalesced cluster refresh costs, alone (not a timed test): a
 * cluster of N hosts with the bench's 10.9 KB inventories, then K rounds of
 * "one host posts an inventory whose memory size changed, the refresher
 * drains the request" — the reply half of the agent-api mix, without HTTP or
 * polls around it. Per refresh it prints this process's CPU (the refresher's
 * JavaScript, knex and pg), PostgreSQL's CPU (postmaster and backends), and
 * the statements sent. What `agent-api` shows at 1,700 req/s as "the
 * refresher is the whole cost of the reply mix" is this, times ~170 a second.
 *
 *   npm run build && node dist/bench/refresh-cost.js [--hosts 50] [--clusters 1] [--rounds 2000] [--connectivity] [--batch N]
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof dist/bench/refresh-cost.js --no-pg-cpu   # and bench/cpuprofile-summary
 *   node --expose-gc dist/bench/refresh-cost.js --clusters 20 --rounds 200   # also the heap each cached host holds
 *   node dist/bench/refresh-cost.js --cold --rounds 200   # with no copy of the hosts kept: a serving process settling a person's read
 *
 * --connectivity also gives every host a full-mesh connectivity report, and
 * each round's reply is then a connectivity report with new latencies (the
 * reply real agents send most often; fleet-real's mix). Such a reply, whose
 * latencies moved but whose reach did not, no longer asks for a refresh by
 * itself (connectivityFactsDigest): the bench asks for one after it, to
 * measure what a refresh after a new report costs. With --clusters C,
 * each round has one reply in each of C clusters before the drain: C
 * refreshes pending at once, as under load, which a refresher batches.
 */
import { randomUUID } from 'node:crypto';
import type { Principal } from '../src/auth/principal';
import * as agents from '../src/services/agent-service';
import * as clusters from '../src/services/clusters-service';
import * as infraEnvs from '../src/services/infra-envs-service';
import { drainRefreshRequests, REFRESH_BATCH_TARGETS, requestRefresh } from '../src/services/refresh-queue';
import { REFRESH_CACHE_HOSTS, setRefreshCacheHosts } from '../src/services/refresh-service';
import { checkOptions, fmtNum, numberFlag, treeCpuSeconds } from './support';
import { runServiceBench } from './service-bench';
import { inventoryFor } from './inventory';

checkOptions('usage: node dist/bench/refresh-cost.js [--hosts 50] [--clusters 1] [--rounds 2000] [--batch N] [--connectivity] [--cold] [--no-pg-cpu]', { numbers: ['hosts', 'clusters', 'rounds', 'batch'], switches: ['connectivity', 'cold', 'no-pg-cpu'] });

const GIB = 1024 ** 3;
const PULL_SECRET = JSON.stringify({ auths: { 'quay.io': { auth: 'eDp5' } } });

function inventory(i: number, gib: number): string {
  const inv = JSON.parse(inventoryFor(`rc-${i}`, i)) as { memory: { physical_bytes: number; usable_bytes: number } };
  inv.memory.physical_bytes = gib * GIB;
  inv.memory.usable_bytes = (gib - 9) * GIB;
  return JSON.stringify(inv);
}

/** The addresses inventoryFor gives host i on its first NIC: the connectivity report names peers by them. */
const ip4 = (i: number) => `10.${20 + ((i >> 16) & 0xff)}.${(i >> 8) & 0xff}.${i & 0xff}`;

function connectivity(ids: string[], self: number, round: number): string {
  const remote_hosts = ids.flatMap((id, j) =>
    j === self ? [] : [{ host_id: id, l2_connectivity: [], l3_connectivity: [{ remote_ip_address: ip4(j + 1), successful: true, average_rtt_ms: 0.2 + ((round + j) % 7) / 10, packet_loss_percentage: 0 }] }],
  );
  return JSON.stringify({ remote_hosts });
}

runServiceBench('refresh-cost', async ({ ctx, db, pgPid: postmaster }) => {
  const hosts = numberFlag('hosts', 50);
  const clusterCount = numberFlag('clusters', 1);
  const rounds = numberFlag('rounds', 2000);
  const withConnectivity = process.argv.includes('--connectivity');
  // At most this many clusters per refresh transaction (REFRESH_BATCH_TARGETS; default the service's).
  const batch = numberFlag('batch', REFRESH_BATCH_TARGETS);
  // Under --cpu-prof: the per-round reads of PostgreSQL's CPU from /proc were nearly half of the profile.
  const noPgCpu = process.argv.includes('--no-pg-cpu');
  // No copy of the hosts kept between refreshes: every refresh reads and validates its clusters' hosts from the rows,
  // as a process that refreshes only now and then does for a cluster it has not refreshed lately.
  const cold = process.argv.includes('--cold');
  const user: Principal = { kind: 'admin', user: 'root' };
  const fleet: Array<{ clusterId: string; infraEnvId: string; agent: Principal; ids: string[] }> = [];
  for (let k = 0; k < clusterCount; k++) {
    const c = await clusters.createCluster(ctx, user, { name: `rc${k}`, openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com' });
    const ie = await infraEnvs.createInfraEnv(ctx, user, { name: `rc${k}-ie`, pull_secret: PULL_SECRET, cluster_id: c.id });
    const agent: Principal = { kind: 'agent', infraEnvId: ie.id };
    const ids: string[] = [];
    for (let i = 0; i < hosts; i++) {
      const id = randomUUID();
      ids.push(id);
      await agents.registerHost(ctx, agent, ie.id, { host_id: id });
      await agents.postStepReply(ctx, agent, ie.id, id, { step_type: 'inventory', step_id: `inventory-${randomUUID()}`, output: inventory(i + 1, 512) });
    }
    fleet.push({ clusterId: c.id, infraEnvId: ie.id, agent, ids });
  }
  const replyOne = (f: (typeof fleet)[number], i: number, round: number) =>
    withConnectivity
      ? agents.postStepReply(ctx, f.agent, f.infraEnvId, f.ids[i]!, { step_type: 'connectivity-check', step_id: `connectivity-check-${randomUUID()}`, output: connectivity(f.ids, i, round) })
      : agents.postStepReply(ctx, f.agent, f.infraEnvId, f.ids[i]!, { step_type: 'inventory', step_id: `inventory-${randomUUID()}`, output: inventory(i + 1, 512 + (round % 16)) });
  const reply = async (i: number, round: number) => {
    for (const f of fleet) {
      await replyOne(f, i, round);
      if (withConnectivity) await requestRefresh(db, { clusterId: f.clusterId });
    }
  };
  if (withConnectivity) for (let i = 0; i < hosts; i++) await reply(i, 0);
  await drainRefreshRequests(ctx);
  await drainRefreshRequests(ctx);
  let statements = 0;
  let trace = false;
  db.on('query', (q: { sql: string }) => {
    statements++;
    // TRACE_SQL=1: the statements of the first measured drain (knex's; hotQuery's own statements are not seen here).
    if (trace) process.stdout.write(`  sql: ${q.sql.replace(/\s+/g, ' ').slice(0, 150)}\n`);
  });
  const pgPid = postmaster();
  // Warm-up: JIT and the refresher's copy of the hosts.
  for (let r = 0; r < Math.min(200, rounds); r++) {
    await reply(r % hosts, r + 1);
    await drainRefreshRequests(ctx, Infinity, undefined, 0, 1, batch);
  }
  if (cold) setRefreshCacheHosts(0);
  let cpu = 0;
  let pgCpu = 0;
  let refreshStatements = 0;
  let refreshed = 0;
  const wall: number[] = [];
  for (let r = 0; r < rounds; r++) {
    await reply(r % hosts, r + 201);
    const pg0 = noPgCpu ? 0 : treeCpuSeconds(pgPid);
    const s0 = statements;
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    trace = r === 0 && !!process.env.TRACE_SQL;
    refreshed += await drainRefreshRequests(ctx, Infinity, undefined, 0, 1, batch);
    trace = false;
    wall.push(Number(process.hrtime.bigint() - t0) / 1e6);
    const c1 = process.cpuUsage(c0);
    cpu += (c1.user + c1.system) / 1000;
    pgCpu += noPgCpu ? 0 : (treeCpuSeconds(pgPid) - pg0) * 1000;
    refreshStatements += statements - s0;
  }
  wall.sort((a, b) => a - b);
  // With --expose-gc: the refresher's copy of the hosts, measured as the heap it frees when emptied.
  const gc = (globalThis as { gc?: () => void }).gc;
  let heapLine = '';
  if (gc) {
    const used = () => {
      gc();
      gc();
      return process.memoryUsage().heapUsed;
    };
    const full = used();
    setRefreshCacheHosts(0);
    const empty = used();
    setRefreshCacheHosts(REFRESH_CACHE_HOSTS);
    heapLine = `heap held by the refresher's copy: ${fmtNum((full - empty) / 1024 / (hosts * clusterCount), 1)} KB per host (${fmtNum((full - empty) / 1024 ** 2, 1)} MB for ${hosts * clusterCount} hosts)\n`;
  }
  const per = (x: number) => fmtNum(x / refreshed, 2);
  process.stdout.write(
    `refresh-cost: ${clusterCount} cluster(s) of ${hosts} hosts, ${rounds} rounds (${withConnectivity ? 'connectivity' : 'inventory'} replies), ${refreshed} refreshes, batches of up to ${batch}${cold ? ', no copy of the hosts kept (--cold)' : ''}\n` +
      `per refresh: API CPU ${per(cpu)} ms, PostgreSQL CPU ${per(pgCpu)} ms, ${per(refreshStatements)} statements; drain wall p50 ${fmtNum(wall[Math.floor(rounds / 2)]!, 2)} ms, p99 ${fmtNum(wall[Math.floor(rounds * 0.99)]!, 2)} ms\n` +
      heapLine,
  );
});
