/**
 * The refresher's economies on a real PostgreSQL (src/services/refresh-service.ts,
 * src/services/refresh-queue.ts): a refresh re-reads the large columns only of
 * hosts an agent reported on since the last refresh (its own writes leave the
 * process's copy current), the copy never hides a change made elsewhere, and
 * one refresher works on several clusters at a time.
 */
import { randomUUID } from 'node:crypto';
import type { Db } from '../../src/db/database';
import type { ServiceContext } from '../../src/services/context';
import type { Principal } from '../../src/auth/principal';
import * as agents from '../../src/services/agent-service';
import * as clusters from '../../src/services/clusters-service';
import * as infraEnvs from '../../src/services/infra-envs-service';
import { REFRESH_CACHE_HOSTS, refreshCluster, setRefreshCacheHosts } from '../../src/services/refresh-service';
import { HOST_VALIDATIONS } from '../../src/domain/lifecycle/host-validations';
import { DEFAULT_LIFECYCLE_SETTINGS } from '../../src/domain/lifecycle/requirements';
import { presentHost } from '../../src/api/assisted/presenters';
import type { HostRow } from '../../src/db/rows';
import { drainRefreshRequests, requestRefresh } from '../../src/services/refresh-queue';
import { startTestServiceContext, type TestServiceContext } from '../support/service-context';
import { PULL_SECRET } from '../support/api-harness';

/** The heap the refresher sees (its copy is trimmed above half the limit); the real one unless a test sets it. */
let mockHeap: { used_heap_size: number; heap_size_limit: number } | undefined;
jest.mock('node:v8', () => {
  const actual = jest.requireActual<typeof import('node:v8')>('node:v8');
  return { ...actual, getHeapStatistics: () => ({ ...actual.getHeapStatistics(), ...mockHeap }) };
});

let t: TestServiceContext;
let db: Db;
let ctx: ServiceContext;
const user: Principal = { kind: 'admin', user: 'root' };
const agent = (infraEnvId: string): Principal => ({ kind: 'agent', infraEnvId });

/** Every statement text sent, with its bindings, while `fn` runs. */
const sent: Array<{ sql: string; bindings: unknown[] }> = [];
const onQuery = (q: { sql: string; bindings?: unknown[] }) => sent.push({ sql: q.sql, bindings: q.bindings ?? [] });

beforeAll(async () => {
  t = await startTestServiceContext('refresh-cache');
  ({ db, ctx } = t);
  db.on('query', onQuery);
}, 60_000);
afterAll(async () => {
  await t?.stop();
});

const inventory = (hostname: string, ip: string, memGiB: number) =>
  JSON.stringify({
    hostname,
    cpu: { count: 16, architecture: 'x86_64' },
    memory: { physical_bytes: memGiB * 1024 ** 3, usable_bytes: memGiB * 1024 ** 3 },
    disks: [{ id: `/dev/disk/by-id/${hostname}`, by_id: `/dev/disk/by-id/${hostname}`, name: 'sda', path: '/dev/sda', drive_type: 'SSD', size_bytes: 500e9, serial: hostname }],
    interfaces: [{ name: 'eth0', mac_address: `52:54:00:12:34:${ip.split('.')[3]!.padStart(2, '0').slice(-2)}`, ipv4_addresses: [`${ip}/24`], flags: ['up'], has_carrier: true, mtu: 1500, type: 'physical' }],
    routes: [{ family: 2, interface: 'eth0', destination: '0.0.0.0', gateway: '10.78.0.1' }],
    system_vendor: { manufacturer: 'QEMU', product_name: 'Standard PC', virtual: true },
  });

interface Env {
  clusterId: string;
  infraEnvId: string;
  hostIds: string[];
}

async function newCluster(name: string, hosts: number, net: number): Promise<Env> {
  const c = await clusters.createCluster(ctx, user, { name, openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com', machine_networks: [{ cidr: `10.${net}.0.0/24` }] });
  const ie = await infraEnvs.createInfraEnv(ctx, user, { name: `${name}-ie`, pull_secret: PULL_SECRET, cluster_id: c.id });
  const env = { clusterId: c.id, infraEnvId: ie.id, hostIds: [] as string[] };
  for (let i = 1; i <= hosts; i++) {
    const hostId = randomUUID();
    await agents.registerHost(ctx, agent(ie.id), ie.id, { host_id: hostId });
    await report(env, hostId, `${name}-h${i}`, `10.${net}.0.${10 + i}`, 64);
    env.hostIds.push(hostId);
  }
  return env;
}
const report = (env: { infraEnvId: string }, hostId: string, hostname: string, ip: string, memGiB: number) =>
  agents.postStepReply(ctx, agent(env.infraEnvId), env.infraEnvId, hostId, { step_type: 'inventory', step_id: `inventory-${randomUUID()}`, output: inventory(hostname, ip, memGiB) });
const refresh = (env: Env) => db.transaction((trx) => refreshCluster(ctx, trx, env.clusterId));

/** The hosts whose large columns a statement of `sent` read again (the refresh's second read). */
const heavyReads = () =>
  sent
    .filter((s) => /^select h\.id, h\.infra_env_id, h\.inventory, h\.doc, h\.facts_version from hosts h/.test(s.sql))
    .flatMap((s) => s.bindings[1] as string[]);
/** Hosts a refresh wrote: its write is one statement for all of them, a jsonb array of the writes. */
const hostWrites = () => sent.filter((s) => /update hosts h set/.test(s.sql)).reduce((n, s) => n + (JSON.parse(String(s.bindings[0])) as unknown[]).length, 0);
const validation = async (hostId: string, id: string) => {
  const doc = ((await db('hosts').where({ id: hostId }).first('doc')) as { doc: { validations_info: string } }).doc;
  return Object.values(JSON.parse(doc.validations_info) as Record<string, Array<{ id: string; status: string }>>)
    .flat()
    .find((v) => v.id === id)?.status;
};

describe('the refresher keeps its copy of a cluster\'s hosts current', () => {
  it('re-reads only hosts reported on meanwhile, not the ones it wrote itself, and sees every change', async () => {
    const env = await newCluster('cache', 3, 78);
    await refresh(env);
    expect(await validation(env.hostIds[0]!, 'has-memory-for-role')).toBe('success');

    // Host 1 reports too little memory: the refresh reads that host again (and only it) and writes its failing validation.
    await report(env, env.hostIds[0]!, 'cache-h1', '10.78.0.11', 1);
    sent.length = 0;
    await refresh(env);
    expect(heavyReads()).toEqual([env.hostIds[0]]);
    expect(hostWrites()).toBeGreaterThanOrEqual(1);
    expect(await validation(env.hostIds[0]!, 'has-memory-for-role')).toBe('failure');

    // Nothing reported since: the refresh's own write did not make its copy stale, so nothing is read again or written.
    sent.length = 0;
    await refresh(env);
    expect(heavyReads()).toEqual([]);
    expect(hostWrites()).toBe(0);

    // A change made outside this refresher (an agent's reply in another process) is still seen.
    await report(env, env.hostIds[0]!, 'cache-h1', '10.78.0.11', 64);
    sent.length = 0;
    await refresh(env);
    expect(heavyReads()).toEqual([env.hostIds[0]]);
    expect(await validation(env.hostIds[0]!, 'has-memory-for-role')).toBe('success');
  });
});

describe('the refresher keeps a host\'s reports parsed and its inventory as text with a parsed view', () => {
  const ntp = (env: Env, hostId: string, state: string) =>
    agents.postStepReply(ctx, agent(env.infraEnvId), env.infraEnvId, hostId, {
      step_type: 'ntp-synchronizer',
      step_id: `ntp-synchronizer-${randomUUID()}`,
      output: JSON.stringify({ ntp_sources: [{ source_name: '10.75.0.1', source_state: state }] }),
    });
  /** The host's validations as a refresher with no copy at all computes them (it reads every report as stored). */
  const uncached = async (env: Env, hostId: string) => {
    setRefreshCacheHosts(0);
    try {
      await refresh(env);
    } finally {
      setRefreshCacheHosts(REFRESH_CACHE_HOSTS);
    }
    return validation(hostId, 'ntp-synced');
  };

  it('follows a report that changed or went away, as a refresher reading the texts would', async () => {
    const env = await newCluster('reports', 2, 75);
    const [h1] = env.hostIds as [string, string];
    await refresh(env);
    expect(await validation(h1, 'ntp-synced')).toBe('success'); // not reported yet

    await ntp(env, h1, 'unreachable');
    sent.length = 0;
    await refresh(env);
    expect(heavyReads()).toEqual([h1]);
    expect(await validation(h1, 'ntp-synced')).toBe('failure');

    await ntp(env, h1, 'synced');
    await refresh(env);
    expect(await validation(h1, 'ntp-synced')).toBe('success');
    expect(await uncached(env, h1)).toBe('success');

    // The report goes away (as a reset clears it) while another stays: the copy forgets it.
    await ntp(env, h1, 'unreachable');
    await refresh(env);
    expect(await validation(h1, 'ntp-synced')).toBe('failure');
    await db('hosts').where({ id: h1 }).update({ doc: db.raw("doc - 'ntp_sources'"), facts_version: db.raw('facts_version + 1') });
    await refresh(env);
    expect(await validation(h1, 'ntp-synced')).toBe('success');
    expect(await uncached(env, h1)).toBe('success');
    // The inventory, kept as its text and view, still counts (its checks pass as before).
    expect(await validation(h1, 'has-memory-for-role')).toBe('success');
    expect(await validation(h1, 'has-inventory')).toBe('success');
  });

  it('keeps the inventory it wrote itself (its disk decisions) and writes it once', async () => {
    const env = await newCluster('disks', 2, 74);
    const [h1] = env.hostIds as [string, string];
    await refresh(env);
    // Workers need more disk than the hosts' 500 GB: making host 1 a worker makes its disk ineligible, in its stored inventory.
    const strict = { ...ctx, lifecycle: { ...DEFAULT_LIFECYCLE_SETTINGS, requirements: { ...DEFAULT_LIFECYCLE_SETTINGS.requirements, worker: { ...DEFAULT_LIFECYCLE_SETTINGS.requirements.worker, diskGb: 600 } } } };
    await db('hosts').where({ id: h1 }).update({ role: 'worker' });
    const strictRefresh = () => db.transaction((trx) => refreshCluster(strict, trx, env.clusterId));
    sent.length = 0;
    await strictRefresh();
    expect(hostWrites()).toBeGreaterThanOrEqual(1);
    const stored = JSON.parse(((await db('hosts').where({ id: h1 }).first('inventory')) as { inventory: string }).inventory) as { disks: Array<{ installation_eligibility: { eligible: boolean } }> };
    expect(stored.disks[0]!.installation_eligibility.eligible).toBe(false);
    // Its next refreshes see the inventory it wrote, also once a peer's report makes it decide again: never written twice.
    const inventoryWrites = () => sent.filter((s) => /^update "hosts" set "inventory" = /.test(s.sql) && s.bindings.includes(h1)).length;
    sent.length = 0;
    await strictRefresh();
    expect(hostWrites()).toBe(0);
    await report(env, env.hostIds[1]!, 'disks-h2-renamed', '10.74.0.12', 64);
    sent.length = 0;
    await strictRefresh();
    expect(inventoryWrites()).toBe(0);
  });
});

describe('a connectivity reply asks for a refresh only when what the checks read of it changed', () => {
  it('stores every report, and refreshes for new reach or figures above what a role tolerates, not for moving latencies', async () => {
    const env = await newCluster('reach', 3, 73);
    const ip = (i: number) => `10.73.0.${11 + i}`;
    const connectivity = (from: number, rtt: number, cut: number[] = [], loss = 0) =>
      agents.postStepReply(ctx, agent(env.infraEnvId), env.infraEnvId, env.hostIds[from]!, {
        step_type: 'connectivity-check',
        step_id: `connectivity-check-${randomUUID()}`,
        output: JSON.stringify({
          remote_hosts: env.hostIds.flatMap((id, j) => (j === from ? [] : [{ host_id: id, l3_connectivity: [{ remote_ip_address: ip(j), successful: !cut.includes(j), average_rtt_ms: rtt + j / 100, packet_loss_percentage: loss }] }])),
        }),
      });
    const pending = async () => Number((await db('refresh_requests').where({ cluster_id: env.clusterId }).count<Array<{ n: string }>>('* as n'))[0]!.n);
    const stored = async () => JSON.parse(((await db('hosts').where({ id: env.hostIds[0] }).first('doc')) as { doc: { connectivity: string } }).doc.connectivity) as { remote_hosts: Array<{ l3_connectivity: Array<{ average_rtt_ms: number }> }> };
    for (let i = 0; i < 3; i++) await connectivity(i, 0.4);
    await refresh(env);
    await db('refresh_requests').where({ cluster_id: env.clusterId }).delete();

    // New latencies, the same hosts reached, all below every role's threshold: stored, no refresh asked for.
    await connectivity(0, 0.9);
    expect(await pending()).toBe(0);
    expect((await stored()).remote_hosts[0]!.l3_connectivity[0]!.average_rtt_ms).toBe(0.91);
    // Host 3 no longer reached: a refresh.
    await connectivity(0, 0.9, [2]);
    expect(await pending()).toBe(1);
    await refresh(env);
    await db('refresh_requests').where({ cluster_id: env.clusterId }).delete();
    // Reached again; then above the master's 100 ms: the checks quote the figures, so each new figure asks for a refresh.
    await connectivity(0, 0.5);
    expect(await pending()).toBe(1);
    await db('refresh_requests').where({ cluster_id: env.clusterId }).delete();
    await connectivity(0, 150);
    expect(await pending()).toBe(1);
    await db('refresh_requests').where({ cluster_id: env.clusterId }).delete();
    await connectivity(0, 160);
    expect(await pending()).toBe(1);
    // Loss above what the master tolerates (0 %) counts as well.
    await connectivity(0, 0.5);
    await db('refresh_requests').where({ cluster_id: env.clusterId }).delete();
    await connectivity(0, 0.5, [], 2);
    expect(await pending()).toBe(1);
    // The digest is the service's bookkeeping: not part of the host as the API shows it.
    const row = (await db('hosts').where({ id: env.hostIds[0] }).first()) as HostRow;
    expect(typeof (row.doc as Record<string, unknown>).connectivity_facts).toBe('string');
    expect(JSON.stringify(presentHost(row))).not.toContain('connectivity_facts');
  });
});

describe('a process that refreshes now and then keeps a small copy', () => {
  it('refreshes a cluster larger than its bound correctly, reading the large columns of hosts it no longer holds', async () => {
    const env = await newCluster('small', 3, 77);
    await refresh(env);
    try {
      // One host fits: a refresh of three reads the two it dropped again, and still sees every host.
      setRefreshCacheHosts(1);
      await report(env, env.hostIds[1]!, 'small-h2', '10.77.0.12', 1);
      sent.length = 0;
      await refresh(env);
      expect(heavyReads().length).toBeGreaterThanOrEqual(2);
      expect(await validation(env.hostIds[1]!, 'has-memory-for-role')).toBe('failure');
      // None at all: still correct (every refresh reads every host).
      setRefreshCacheHosts(0);
      await report(env, env.hostIds[1]!, 'small-h2', '10.77.0.12', 64);
      sent.length = 0;
      await refresh(env);
      expect(heavyReads().sort()).toEqual([...env.hostIds].sort());
      expect(await validation(env.hostIds[1]!, 'has-memory-for-role')).toBe('success');
      expect(await validation(env.hostIds[0]!, 'hostname-unique')).toBe('success');
    } finally {
      setRefreshCacheHosts(REFRESH_CACHE_HOSTS);
    }
  });
});

describe('the refresher\'s copy gives way when the heap fills', () => {
  it('drops its least recently refreshed hosts above half the heap limit, and reads them again when needed', async () => {
    const env = await newCluster('heap', 3, 76);
    await refresh(env);
    // Enough stores for several heap checks: only host 1 reports, hosts 2 and 3 stay the least recently stored.
    const churn = async (rounds: number) => {
      for (let i = 0; i < rounds; i++) {
        await report(env, env.hostIds[0]!, 'heap-h1', '10.76.0.11', 64 + (i % 2));
        await refresh(env);
      }
    };
    const others = () => heavyReads().filter((id) => id !== env.hostIds[0]);
    sent.length = 0;
    await churn(140);
    expect(others()).toEqual([]);
    try {
      mockHeap = { used_heap_size: 900, heap_size_limit: 1000 };
      sent.length = 0;
      await churn(140);
      // A host nobody reported on was dropped at a heap check, so a later refresh read it again.
      expect(others()).not.toEqual([]);
    } finally {
      mockHeap = undefined;
    }
    expect(await validation(env.hostIds[2]!, 'has-memory-for-role')).toBe('success');
  }, 60_000);
});

describe('a refresh re-validates only hosts whose inputs changed', () => {
  it('keeps the others\' results, yet follows what a peer or the clock changes for them', async () => {
    const env = await newCluster('inputs', 3, 79);
    // Twice: the first refresh moves the hosts' statuses, which every host's checks see.
    await refresh(env);
    await refresh(env);
    const spec = HOST_VALIDATIONS.find((v) => v.id === 'has-min-memory')!;
    const spy = jest.spyOn(spec, 'check');
    try {
      // One host reports more memory (its status and role stay): its checks run, the other two keep theirs.
      await report(env, env.hostIds[0]!, 'inputs-h1', '10.79.0.11', 65);
      await refresh(env);
      expect(spy.mock.calls.map(([facts]) => facts.id)).toEqual([env.hostIds[0]]);
      spy.mockClear();
      // Its own write moved its facts version, not what its checks read: nobody's checks run again.
      await refresh(env);
      await refresh(env);
      expect(spy.mock.calls.map(([facts]) => facts.id)).toEqual([]);
    } finally {
      spy.mockRestore();
    }

    // A peer takes host 3's name: host 3 reported nothing, and still its hostname-unique fails.
    expect(await validation(env.hostIds[2]!, 'hostname-unique')).toBe('success');
    await report(env, env.hostIds[1]!, 'inputs-h3', '10.79.0.12', 64);
    await refresh(env);
    expect(await validation(env.hostIds[2]!, 'hostname-unique')).toBe('failure');

    // Host 3 stops polling (a check-in is not a facts write): the clock alone makes it disconnected.
    await db('hosts').where({ id: env.hostIds[2] }).update({ checked_in_at: new Date(Date.now() - 3_600_000) });
    await refresh(env);
    expect(await validation(env.hostIds[2]!, 'connected')).toBe('failure');
  });

  it('follows time alone: a host whose row did not change since the last refresh goes disconnected when its silence passes the limit', async () => {
    const env = await newCluster('clock', 2, 83);
    const versions = async () => ((await db('hosts').whereIn('id', env.hostIds).orderBy('id').select('facts_version')) as Array<{ facts_version: string }>).map((r) => r.facts_version);
    // Refreshed until a refresh writes nothing: the next one finds every row as this process last read it.
    let before = await versions();
    for (let i = 0; i < 4; i++) {
      await refresh(env);
      const after = await versions();
      if (after.join() === before.join()) break;
      before = after;
    }
    await refresh(env);
    expect(await versions()).toEqual(before);
    expect(await validation(env.hostIds[1]!, 'connected')).toBe('success');
    // The same rows, read an hour later by the service's clock: the refresh keeps no facts that stop time.
    const later = { ...ctx, now: () => new Date(Date.now() + 3_600_000) };
    await db.transaction((trx) => refreshCluster(later, trx, env.clusterId));
    expect(await validation(env.hostIds[1]!, 'connected')).toBe('failure');
    // And back: polled now, it is connected again.
    await db('hosts').where({ id: env.hostIds[1] }).update({ checked_in_at: new Date() });
    await refresh(env);
    expect(await validation(env.hostIds[1]!, 'connected')).toBe('success');
  });
});

describe('a refresh keys a host\'s clock on what its check makes of it', () => {
  it('validates nobody again for a clock that moved a second, fails the host once it leaves the tolerance, and names each minute more', async () => {
    const env = await newCluster('skew', 2, 87);
    const host = env.hostIds[0]!;
    // A poll's check-in as the agent's own clock stamps it, `aheadS` seconds from the service's.
    const polled = async (aheadS: number) => {
      const now = Date.now();
      await db('hosts').where({ id: host }).update({ checked_in_at: new Date(now), agent_timestamp: String(Math.floor(now / 1000) + aheadS) });
    };
    const hint = async () => {
      const doc = ((await db('hosts').where({ id: host }).first('doc')) as { doc: { validation_remediation: string } }).doc;
      return (JSON.parse(doc.validation_remediation) as Record<string, { hint?: string } | undefined>)['time-synced-between-host-and-service']?.hint;
    };
    await polled(0);
    await refresh(env);
    await refresh(env);
    expect(await validation(host, 'time-synced-between-host-and-service')).toBe('success');
    const spy = jest.spyOn(HOST_VALIDATIONS.find((v) => v.id === 'has-min-memory')!, 'check');
    try {
      // A poll and the service's stamp of it either side of a second's boundary: the same verdict, nothing checked.
      await polled(1);
      await refresh(env);
      await polled(-1);
      await refresh(env);
      expect(spy.mock.calls).toEqual([]);
    } finally {
      spy.mockRestore();
    }
    await polled(2 * 3600);
    await refresh(env);
    expect(await validation(host, 'time-synced-between-host-and-service')).toBe('failure');
    expect(await hint()).toMatch(/120 minutes ahead/);
    await polled(2 * 3600 + 5 * 60);
    await refresh(env);
    expect(await hint()).toMatch(/125 minutes ahead/);
    await polled(-30 * 60);
    await refresh(env);
    expect(await hint()).toMatch(/30 minutes behind/);
    await polled(0);
    await refresh(env);
    expect(await validation(host, 'time-synced-between-host-and-service')).toBe('success');
  });
});

describe('a refresher works on several clusters at a time', () => {
  it('overlaps up to its concurrency and refreshes every pending cluster', async () => {
    const envs: Env[] = [];
    for (let i = 0; i < 6; i++) envs.push(await newCluster(`lane${i}`, 1, 80 + i));
    const drain = async (concurrency: number) => {
      await db('refresh_requests').delete();
      for (const e of envs) await requestRefresh(db, { clusterId: e.clusterId });
      let inFlight = 0;
      let most = 0;
      // The refresher's own handle on the database, counting the transactions open at once.
      const counted = new Proxy(db, {
        get: (target, prop, receiver) =>
          prop === 'transaction'
            ? (fn: (trx: unknown) => Promise<unknown>) => {
                inFlight++;
                most = Math.max(most, inFlight);
                return (target.transaction(fn as never) as Promise<unknown>).finally(() => inFlight--);
              }
            : Reflect.get(target, prop, receiver),
      });
      const done = await drainRefreshRequests({ ...ctx, db: counted }, Infinity, undefined, 0, concurrency);
      return { done, most, left: Number((await db('refresh_requests').count<Array<{ n: string }>>('* as n'))[0]!.n) };
    };
    expect(await drain(1)).toEqual({ done: 6, most: 1, left: 0 });
    expect(await drain(4)).toEqual({ done: 6, most: 4, left: 0 });
  });

  it('commits a refresh without waiting for the WAL flush, and leaves its connection as it was', async () => {
    const env = await newCluster('soft', 1, 89);
    await db('refresh_requests').delete();
    await requestRefresh(db, { clusterId: env.clusterId });
    const seen: string[] = [];
    const show = async (q: { raw: Db['raw'] }) => ((await q.raw('show synchronous_commit')) as { rows: Array<{ synchronous_commit: string }> }).rows[0]!.synchronous_commit;
    const watched = new Proxy(db, {
      get: (target, prop, receiver) =>
        prop === 'transaction'
          ? (fn: (trx: Db) => Promise<unknown>) =>
              target.transaction(async (trx) => {
                const out = await fn(trx as unknown as Db);
                seen.push(await show(trx));
                return out;
              })
          : Reflect.get(target, prop, receiver),
    });
    expect(await drainRefreshRequests({ ...ctx, db: watched }, Infinity)).toBe(1);
    expect(seen).toEqual(['off']);
    // Every pooled connection commits durably again afterwards.
    const after = await Promise.all(Array.from({ length: 8 }, () => db.transaction((trx) => show(trx as unknown as Db))));
    expect(new Set(after)).toEqual(new Set(['on']));
  });

  it('claims each target once when two refreshers drain the same queue', async () => {
    const envs: Env[] = [];
    for (let i = 0; i < 8; i++) envs.push(await newCluster(`pair${i}`, 1, 90 + i));
    await db('refresh_requests').delete();
    // Two requests per target, as two replies into one cluster leave: one claim takes both.
    for (const e of envs) for (let k = 0; k < 2; k++) await requestRefresh(db, { clusterId: e.clusterId });
    const [a, b] = await Promise.all([drainRefreshRequests(ctx, Infinity, undefined, 0, 4), drainRefreshRequests(ctx, Infinity, undefined, 0, 4)]);
    expect(a + b).toBe(8);
    expect(Number((await db('refresh_requests').count<Array<{ n: string }>>('* as n'))[0]!.n)).toBe(0);
  });
});

describe('a refresher claims and reads a batch of targets together', () => {
  it('refreshes several pending clusters in one transaction with one claim and one read of their clusters and hosts', async () => {
    const envs: Env[] = [];
    // Batches of 4, asked for explicitly (the default is REFRESH_BATCH_TARGETS).
    for (let i = 0; i < 4; i++) envs.push(await newCluster(`batch${i}`, 2, 100 + i));
    await drainRefreshRequests(ctx);
    // Each cluster gets a report that changes a validation, then all are refreshed in one drain.
    for (const [i, e] of envs.entries()) await report(e, e.hostIds[0]!, `batch${i}-h1`, `10.${100 + i}.0.11`, 1);
    sent.length = 0;
    let transactions = 0;
    const counted = new Proxy(db, {
      get: (target, prop, receiver) =>
        prop === 'transaction'
          ? (fn: (trx: unknown) => Promise<unknown>) => {
              transactions++;
              return target.transaction(fn as never);
            }
          : Reflect.get(target, prop, receiver),
    });
    expect(await drainRefreshRequests({ ...ctx, db: counted }, Infinity, undefined, 0, 1, 4)).toBe(4);
    expect(transactions).toBe(1);
    const count = (re: RegExp) => sent.filter((s) => re.test(s.sql)).length;
    expect(count(/delete from refresh_requests/)).toBe(1);
    expect(count(/from "?clusters"?[\s\S]*for no key update/)).toBe(1);
    // The claim and the clusters' locking read are one statement (one round trip fewer).
    expect(count(/delete from refresh_requests[\s\S]*from clusters c[\s\S]*for no key update/)).toBe(1);
    expect(count(/^select "?id"?, "?infra_env_id"?, "?cluster_id"?, "?status"?.* from "?hosts"?/)).toBe(1);
    // The service's shed episode came with the clusters' read, not in a statement of its own.
    expect(count(/service_pressure/)).toBe(1);
    expect(count(/from "?clusters"?[\s\S]*service_pressure[\s\S]*for no key update/)).toBe(1);
    // The hosts of all four clusters written in one statement, after every read: rows are locked only from there to the commit.
    expect(count(/update hosts h set/)).toBe(1);
    expect(hostWrites()).toBeGreaterThanOrEqual(4);
    // Their events (each reporting host's failed memory check) came with that statement, not in inserts of their own.
    expect(count(/insert into "?events"?/)).toBe(1);
    expect(count(/^insert into "?events"?/)).toBe(0);
    const writeAt = sent.findIndex((s) => /update hosts h set/.test(s.sql));
    const commitAt = sent.findIndex((s, i) => i > writeAt && /^commit/i.test(s.sql));
    expect(commitAt).toBeGreaterThan(writeAt);
    expect(sent.slice(writeAt + 1, commitAt).filter((s) => /^select/i.test(s.sql))).toEqual([]);
    // Every cluster's reporting host got its own verdict, and its event.
    for (const e of envs) expect(await validation(e.hostIds[0]!, 'has-memory-for-role')).toBe('failure');
    for (const e of envs) expect(await db('events').where({ host_id: e.hostIds[0], name: 'host_validation_failed' }).whereRaw("props->>'validation_id' = 'has-memory-for-role'")).toHaveLength(1);
    expect(Number((await db('refresh_requests').count<Array<{ n: string }>>('* as n'))[0]!.n)).toBe(0);
  });

  it('refreshes the others of a batch one at a time when one of them fails, and keeps the failed one pending', async () => {
    const envs: Env[] = [];
    for (let i = 0; i < 3; i++) envs.push(await newCluster(`poison${i}`, 1, 110 + i));
    await drainRefreshRequests(ctx);
    await db('refresh_requests').delete();
    for (const e of envs) await requestRefresh(db, { clusterId: e.clusterId });
    // The second cluster's refresh fails (as a bug or a broken row would): its lock statement throws.
    const poisoned = envs[1]!.clusterId;
    const poisonedRead = (q: { sql: string; bindings?: unknown[] }) => {
      // Its clusters' read: alone (ids), or with the batch's claim (targets).
      const named = (q.bindings?.[0] as string[] | undefined) ?? [];
      if (/from clusters c left join/.test(q.sql) && (named.includes(poisoned) || named.includes(`c:${poisoned}`))) throw new Error('poisoned cluster');
    };
    db.on('query', poisonedRead);
    try {
      await expect(drainRefreshRequests(ctx, Infinity, undefined, 0, 1, 4)).rejects.toThrow('poisoned cluster');
    } finally {
      db.removeListener('query', poisonedRead);
    }
    const left = ((await db('refresh_requests').select('cluster_id')) as Array<{ cluster_id: string }>).map((r) => r.cluster_id);
    expect(left).toEqual([poisoned]);
  });
});

describe('a refresh writes its hosts at the end, each only if unchanged since it read it', () => {
  it('leaves a host that got new facts while it computed as it is, writes the others, and asks for another refresh', async () => {
    const env = await newCluster('race', 2, 120);
    await drainRefreshRequests(ctx);
    // Both hosts report too little memory; the refresh will want to write both.
    await report(env, env.hostIds[0]!, 'race-h1', '10.120.0.11', 1);
    await report(env, env.hostIds[1]!, 'race-h2', '10.120.0.12', 1);
    await db('refresh_requests').delete();
    // Between the refresh's reads and its write, an agent's fact lands on host 2 (another connection: the refresh
    // holds no lock on the host rows yet, so this neither waits nor is waited for).
    const hosts = ctx.repos.hosts;
    const racing = {
      ...hosts,
      compareAndSetRefreshes: async (...args: Parameters<typeof hosts.compareAndSetRefreshes>) => {
        await db('hosts').where({ id: env.hostIds[1] }).update({ doc: db.raw(`doc || '{"ntp_sources":"[]"}'::jsonb`), facts_version: db.raw('facts_version + 1') });
        return hosts.compareAndSetRefreshes(...args);
      },
    };
    const eventsBefore = Number((await db('events').where({ host_id: env.hostIds[1], name: 'host_validation_failed' }).count<Array<{ n: string }>>('* as n'))[0]!.n);
    await db.transaction((trx) => refreshCluster({ ...ctx, repos: { ...ctx.repos, hosts: racing } }, trx, env.clusterId));
    expect(await validation(env.hostIds[0]!, 'has-memory-for-role')).toBe('failure');
    expect(await db('events').where({ host_id: env.hostIds[0], name: 'host_validation_failed' }).whereRaw("props->>'validation_id' = 'has-memory-for-role'")).toHaveLength(1);
    // Host 2 kept what it had: its new fact is there, its validations are not the refresh's (computed from older facts).
    expect(await validation(env.hostIds[1]!, 'has-memory-for-role')).toBe('success');
    expect(((await db('hosts').where({ id: env.hostIds[1] }).first('doc')) as { doc: Record<string, unknown> }).doc.ntp_sources).toBe('[]');
    expect(Number((await db('events').where({ host_id: env.hostIds[1], name: 'host_validation_failed' }).count<Array<{ n: string }>>('* as n'))[0]!.n)).toBe(eventsBefore);
    // The cluster is asked for again, and that refresh writes host 2's verdict.
    expect((await db('refresh_requests').where({ cluster_id: env.clusterId })).length).toBeGreaterThan(0);
    await drainRefreshRequests(ctx);
    expect(await validation(env.hostIds[1]!, 'has-memory-for-role')).toBe('failure');
  });
});

describe('a batch of refreshes is bounded by the hosts it writes', () => {
  it('takes no more clusters once it writes a cluster\'s worth of hosts, and refreshes the rest in the next round', async () => {
    const envs: Env[] = [];
    for (let i = 0; i < 3; i++) envs.push(await newCluster(`bound${i}`, 30, 140 + i));
    await drainRefreshRequests(ctx);
    // Every host of every cluster reports too little memory: each cluster's refresh writes all 30 of its hosts.
    for (const e of envs) for (const [j, id] of e.hostIds.entries()) await report(e, id, `bound-h${j}`, `10.${140 + envs.indexOf(e)}.0.${11 + j}`, 1);
    sent.length = 0;
    expect(await drainRefreshRequests(ctx, Infinity, undefined, 0, 1, 8)).toBeGreaterThanOrEqual(3);
    const writes = sent.filter((s) => /update hosts h set/.test(s.sql)).map((s) => (JSON.parse(String(s.bindings[0])) as unknown[]).length);
    // 30 + 30 reach the bound (50): the third cluster waited for a write of its own.
    expect(writes).toEqual([60, 30]);
    for (const e of envs) for (const id of e.hostIds) expect(await validation(id, 'has-memory-for-role')).toBe('failure');
    expect(Number((await db('refresh_requests').count<Array<{ n: string }>>('* as n'))[0]!.n)).toBe(0);
  });
});
