/**
 * What one step reply costs, alone (not a timed test): the reply real agents
 * send most, a connectivity report on a 50-host cluster (the simulated
 * executor's own report: l2, l3 and MTU results for 49 peers, ~20 KB, the
 * pings moved since the last one, so every reply is a new fact), stored by
 * the service call the API's fast path makes (agent-service postStepReply),
 * each into a step row the poll handed out, as in a fleet. Per reply it
 * prints this process's CPU (the service's JavaScript and pg) and
 * PostgreSQL's CPU (postmaster and backends): the reply half of
 * bench/fleet-real's per-host cost, without HTTP around it.
 *
 *   npm run build && node dist/bench/reply-cost.js [--hosts 50] [--rounds 3000] [--lz4 | --uncompressed]
 *
 * --lz4 first sets lz4 compression on the columns a reply writes (where this
 * PostgreSQL has lz4; the embedded one has not), --uncompressed stores them
 * out of line without compression (STORAGE EXTERNAL): how much of
 * PostgreSQL's share is pglz compressing ~20 KB twice (the step's output, the
 * host's doc).
 */
import { randomUUID } from 'node:crypto';
import type { Principal } from '../src/auth/principal';
import * as agents from '../src/services/agent-service';
import * as clusters from '../src/services/clusters-service';
import * as infraEnvs from '../src/services/infra-envs-service';
import { drainRefreshRequests } from '../src/services/refresh-queue';
import { SimulatedExecutor, SimulatedNetwork } from '../agent/executors/simulated';
import { loadProfile } from '../agent/profiles';
import { checkOptions, fmtNum, numberFlag, treeCpuSeconds } from './support';
import { runServiceBench } from './service-bench';
import { inventoryFor } from './inventory';

checkOptions('usage: node dist/bench/reply-cost.js [--hosts 50] [--rounds 3000] [--lz4 | --uncompressed]', { numbers: ['hosts', 'rounds'], switches: ['lz4', 'uncompressed'] });

const PULL_SECRET = JSON.stringify({ auths: { 'quay.io': { auth: 'eDp5' } } });
/** The address inventoryFor gives host i on its first NIC. */
const ip4 = (i: number) => `10.${20 + ((i >> 16) & 0xff)}.${(i >> 8) & 0xff}.${i & 0xff}`;

runServiceBench('reply-cost', async ({ ctx, db, pgPid: postmaster }) => {
  const hosts = numberFlag('hosts', 50);
  const rounds = numberFlag('rounds', 3000);
  const lz4 = process.argv.includes('--lz4');
  const uncompressed = process.argv.includes('--uncompressed');
  const user: Principal = { kind: 'admin', user: 'root' };
  if (lz4) {
    await db.raw('alter table host_steps alter column output set compression lz4');
    await db.raw('alter table hosts alter column doc set compression lz4');
  }
  if (uncompressed) {
    await db.raw('alter table host_steps alter column output set storage external');
    await db.raw('alter table hosts alter column doc set storage external');
  }
  const c = await clusters.createCluster(ctx, user, { name: 'reply', openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com' });
  const ie = await infraEnvs.createInfraEnv(ctx, user, { name: 'reply-ie', pull_secret: PULL_SECRET, cluster_id: c.id });
  const agent: Principal = { kind: 'agent', infraEnvId: ie.id };
  const network = new SimulatedNetwork('10.20.0.0/16', '10.20.0.1');
  const profile = loadProfile('worker');
  const members: Array<{ id: string; mac: string; ip: string; executor: SimulatedExecutor }> = [];
  for (let i = 0; i < hosts; i++) {
    const id = randomUUID();
    const inv = JSON.parse(inventoryFor(`reply-${i}`, i + 1)) as { interfaces: Array<{ mac_address: string }> };
    const mac = inv.interfaces[0]!.mac_address;
    members.push({ id, mac, ip: ip4(i + 1), executor: new SimulatedExecutor(profile, { id, mac, ip: ip4(i + 1), hostname: `reply-${i}` }, network) });
    await agents.registerHost(ctx, agent, ie.id, { host_id: id });
    await agents.postStepReply(ctx, agent, ie.id, id, { step_type: 'inventory', step_id: `inventory-${randomUUID()}`, output: JSON.stringify(inv) });
  }
  const peersOf = (i: number) => members.filter((_, j) => j !== i).map((m) => ({ host_id: m.id, nics: [{ mac: m.mac, ip_addresses: [`${m.ip}/16`] }] }));
  let bytes = 0;
  const reply = async (i: number) => {
    const m = members[i]!;
    const output = JSON.stringify(await m.executor.connectivityCheck(peersOf(i)));
    bytes += output.length;
    const stepId = `connectivity-check-${randomUUID()}`;
    // The step row the poll's check-in records, before the agent answers it.
    await ctx.repos.steps.enqueue({ infraEnvId: ie.id, hostId: m.id }, { step_id: stepId, step_type: 'connectivity-check', args: [] });
    return { m, stepId, output };
  };
  const send = (r: Awaited<ReturnType<typeof reply>>) => agents.postStepReply(ctx, agent, ie.id, r.m.id, { step_type: 'connectivity-check', step_id: r.stepId, output: r.output });
  // Every host's first report (its reach: this one asks for a refresh), then warm-up.
  for (let i = 0; i < hosts; i++) await send(await reply(i));
  await drainRefreshRequests(ctx);
  for (let r = 0; r < Math.min(300, rounds); r++) await send(await reply(r % hosts));
  await drainRefreshRequests(ctx);
  const pgPid = postmaster();
  bytes = 0;
  let cpu = 0;
  let pgCpu = 0;
  const wall: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const next = await reply(r % hosts);
    const pg0 = treeCpuSeconds(pgPid);
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    await send(next);
    wall.push(Number(process.hrtime.bigint() - t0) / 1e6);
    const c1 = process.cpuUsage(c0);
    cpu += (c1.user + c1.system) / 1000;
    pgCpu += (treeCpuSeconds(pgPid) - pg0) * 1000;
  }
  const refreshes = await drainRefreshRequests(ctx);
  wall.sort((a, b) => a - b);
  const per = (x: number) => fmtNum(x / rounds, 3);
  const compression = ((await db.raw("select attname, attcompression, attstorage from pg_attribute where attrelid in ('hosts'::regclass, 'host_steps'::regclass) and attname in ('doc', 'output')")).rows as Array<{ attname: string; attcompression: string; attstorage: string }>)
    .map((a) => `${a.attname} ${a.attstorage === 'e' ? 'uncompressed' : a.attcompression || 'default'}`)
    .join(', ');
  process.stdout.write(
    `reply-cost: ${rounds} connectivity replies in a cluster of ${hosts} (${fmtNum(bytes / rounds / 1024, 1)} KB each; compression ${compression}; ${refreshes} refreshes asked for by them)\n` +
      `per reply: service CPU ${per(cpu)} ms, PostgreSQL CPU ${per(pgCpu)} ms; wall p50 ${fmtNum(wall[Math.floor(rounds / 2)]!, 2)} ms, p99 ${fmtNum(wall[Math.floor(rounds * 0.99)]!, 2)} ms\n`,
  );
});
