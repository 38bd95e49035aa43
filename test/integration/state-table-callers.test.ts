/**
 * Every rule of the host and cluster state tables fires from production code:
 * the service functions the API routes call and the activities the workflows
 * call, each run here against a real PostgreSQL, with the writer telling the
 * test which rule moved which row (ServiceContext.statusMoved). The static
 * test (test/unit/status-writers.test.ts) proves every *event* has a caller;
 * this proves every *rule* (its source states and guard) is reached by one.
 *
 * Rows are put in a rule's source status directly (a test fixture); the move
 * out of it is always made by the production function under test. Temporal is
 * a recording stand-in: what the workflow would decide is not under test here
 * (test/workflow/ does that), only that each call moves the rows by the table.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { parseConfig } from '../../src/config';
import { createDb, type Db } from '../../src/db/database';
import { migrateLatest } from '../../src/db/migrations';
import { createRepos, type ServiceContext, type StatusMove } from '../../src/services/context';
import { buildServiceContext } from '../../src/services/build-context';
import { LocalObjectStore } from '../../src/storage/local-object-store';
import { HOST_TRANSITIONS, type HostRule } from '../../src/domain/lifecycle/host-state-machine';
import { CLUSTER_TRANSITIONS, type ClusterRule } from '../../src/domain/lifecycle/cluster-state-machine';
import type { Principal } from '../../src/auth/principal';
import type { EmbeddedPg } from '../../src/dev/embedded-postgres';
import * as agents from '../../src/services/agent-service';
import * as clusters from '../../src/services/clusters-service';
import * as infraEnvs from '../../src/services/infra-envs-service';
import * as day2 from '../../src/services/day2-service';
import * as hostsService from '../../src/services/hosts-service';
import { watchDay2Installs } from '../../src/services/day2-watch';
import { refreshForHost } from '../../src/services/refresh-service';
import { createInstallActivities } from '../../activities/install';
import { createDay2Activities } from '../../activities/install-day2';
import { startTestPostgres, tempDir } from '../support/services';
import { PULL_SECRET } from '../support/api-harness';

let pg: EmbeddedPg;
let db: Db;
let ctx: ServiceContext;
const moves: StatusMove[] = [];
const user: Principal = { kind: 'admin', user: 'root' };
const agent = (infraEnvId: string): Principal => ({ kind: 'agent', infraEnvId });
const temporal = {
  down: false,
  calls: [] as string[],
};
const fakeTemporal = {
  workflow: {
    start: async (name: string) => {
      temporal.calls.push(`start ${name}`);
      if (temporal.down) throw new Error('14 UNAVAILABLE: connection refused');
      return {};
    },
    getHandle: (id: string) => ({
      signal: async () => void temporal.calls.push(`signal ${id}`),
      executeUpdate: async () => void temporal.calls.push(`update ${id}`),
      describe: async () => ({ status: { name: 'COMPLETED' } }),
    }),
  },
  withDeadline: <T>(_d: number, fn: () => Promise<T>) => fn(),
} as unknown as Client;

beforeAll(async () => {
  pg = await startTestPostgres(`rules_${Math.random().toString(36).slice(2, 8)}`);
  db = createDb(pg.url, 4);
  await migrateLatest(db);
  const cfg = parseConfig({ DATABASE_URL: pg.url, TEMPORAL_ADDRESS: '127.0.0.1:1', STORAGE_LOCAL_DIR: tempDir('rules-objects') });
  ctx = { ...buildServiceContext(cfg, { db, repos: createRepos(db), store: new LocalObjectStore(tempDir('rules-store')), temporal: fakeTemporal }), statusMoved: (m) => moves.push(m) };
}, 60_000);
afterAll(async () => {
  await db?.destroy();
  await pg?.stop();
});

const inventory = (hostname: string, ip: string, opts: { cpus?: number; memGiB?: number } = {}) =>
  JSON.stringify({
    hostname,
    cpu: { count: opts.cpus ?? 16, architecture: 'x86_64' },
    memory: { physical_bytes: (opts.memGiB ?? 64) * 1024 ** 3, usable_bytes: (opts.memGiB ?? 64) * 1024 ** 3 },
    disks: [{ id: `/dev/disk/by-id/${hostname}`, by_id: `/dev/disk/by-id/${hostname}`, name: 'sda', path: '/dev/sda', drive_type: 'SSD', size_bytes: 500e9, serial: hostname }],
    interfaces: [{ name: 'eth0', mac_address: `52:54:00:12:34:${ip.split('.')[3]!.padStart(2, '0').slice(-2)}`, ipv4_addresses: [`${ip}/24`], flags: ['up'], has_carrier: true, mtu: 1500, type: 'physical' }],
    routes: [{ family: 2, interface: 'eth0', destination: '0.0.0.0', gateway: '10.77.0.1' }],
    system_vendor: { manufacturer: 'QEMU', product_name: 'Standard PC', virtual: true },
  });

const acts = () => createInstallActivities(ctx);
const day2Acts = () => createDay2Activities(ctx);

/** A fixture: the row is put in a rule's source status (what production code then moves it out of). */
const put = (table: 'hosts' | 'clusters', id: string, status: string, extra: Record<string, unknown> = {}) => db(table).where({ id }).update({ status, status_info: 'put here by the test', ...extra });
const statusOf = async (table: 'hosts' | 'clusters', id: string) => ((await db(table).where({ id }).first('status')) as { status: string }).status;

interface Env {
  clusterId: string;
  infraEnvId: string;
}

async function newCluster(name: string, body: Record<string, unknown>): Promise<Env> {
  const c = await clusters.createCluster(ctx, user, { name, openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com', ...body });
  const ie = await infraEnvs.createInfraEnv(ctx, user, { name: `${name}-ie`, pull_secret: PULL_SECRET, cluster_id: c.id });
  return { clusterId: c.id, infraEnvId: ie.id };
}

/** An agent's first minutes: registration, a poll, its inventory; then the refresh the queue would run. */
async function boot(env: Env, inv: string | undefined): Promise<string> {
  const hostId = randomUUID();
  await agents.registerHost(ctx, agent(env.infraEnvId), env.infraEnvId, { host_id: hostId });
  await agents.nextSteps(ctx, agent(env.infraEnvId), env.infraEnvId, hostId, Math.floor(Date.now() / 1000));
  if (inv) await agents.postStepReply(ctx, agent(env.infraEnvId), env.infraEnvId, hostId, { step_type: 'inventory', step_id: `inventory-${hostId}`, output: inv });
  await refresh(env, hostId);
  return hostId;
}
const refresh = (env: Env, hostId: string) => db.transaction((trx) => refreshForHost(ctx, trx, { infraEnvId: env.infraEnvId, hostId }));
const reregister = (env: Env, hostId: string) => agents.registerHost(ctx, agent(env.infraEnvId), env.infraEnvId, { host_id: hostId });
const progress = (env: Env, hostId: string, stage: string) => agents.updateProgress(ctx, agent(env.infraEnvId), env.infraEnvId, hostId, { current_stage: stage });
const diskSpeed = (env: Env, hostId: string, ms: number) =>
  agents.postStepReply(ctx, agent(env.infraEnvId), env.infraEnvId, hostId, { step_type: 'installation-disk-speed-check', step_id: `disk-${randomUUID()}`, output: JSON.stringify({ path: '/dev/sda', io_sync_duration: ms }) });

/** A single-node cluster whose one host is known and the cluster ready. */
async function readySno(name: string, n: number): Promise<Env & { hostId: string }> {
  const env = await newCluster(name, { high_availability_mode: 'None', control_plane_count: 1, machine_networks: [{ cidr: '10.77.0.0/24' }] });
  const hostId = await boot(env, inventory(`${name}-h1`, `10.77.0.${n}`));
  expect([await statusOf('hosts', hostId), await statusOf('clusters', env.clusterId)]).toEqual(['known', 'ready']);
  return { ...env, hostId };
}

/** Install requested, prepared, checked and dispatched, as the workflow's activities do it. */
async function toInstalling(env: Env & { hostId: string }, attempt: number) {
  await clusters.installCluster(ctx, user, env.clusterId);
  await acts().prepareInstallation({ clusterId: env.clusterId, attempt });
  await diskSpeed(env, env.hostId, 2);
  await acts().dispatchInstallSteps({ clusterId: env.clusterId, attempt, bootstrapHostId: env.hostId, hosts: [{ hostId: env.hostId, infraEnvId: env.infraEnvId, role: 'master', status: 'preparing-successful' }], controlPlaneCount: 1 });
  expect([await statusOf('hosts', env.hostId), await statusOf('clusters', env.clusterId)]).toEqual(['installing', 'installing']);
}

const fired = (kind: 'host' | 'cluster') => new Set(moves.filter((m) => m.aggregate === kind).map((m) => m.rule));
const describeRule = (r: HostRule | ClusterRule) => `${r.event}: ${r.from.join('|')} -> ${r.to} (${r.description})`;

describe('every state-table rule is reached from production code', () => {
  it('a day-1 install through every install activity, its pending-user, timeout, failure, retry and finish', async () => {
    const env = await readySno('one', 11);
    await toInstalling(env, 1);
    await progress(env, env.hostId, 'Starting installation');
    for (const stage of ['Installing', 'Waiting for bootkube', 'Writing image to disk', 'Rebooting']) await progress(env, env.hostId, stage);
    // Booted the discovery image again after Rebooting: the boot order is wrong.
    await reregister(env, env.hostId);
    expect(await statusOf('hosts', env.hostId)).toBe('installing-pending-user-action');
    await acts().markHostsPendingUser({ clusterId: env.clusterId, pending: true });
    expect(await statusOf('clusters', env.clusterId)).toBe('installing-pending-user-action');
    await progress(env, env.hostId, 'Joined');
    await acts().markHostsPendingUser({ clusterId: env.clusterId, pending: false });
    expect(await statusOf('clusters', env.clusterId)).toBe('installing');
    await acts().reportStageTimeout({ clusterId: env.clusterId, hostId: env.hostId, stage: 'Joined', minutes: 95, hard: true });
    expect(await statusOf('hosts', env.hostId)).toBe('error');
    await acts().markClusterFailed({ clusterId: env.clusterId, reason: 'the test failed it' });
    expect(await statusOf('clusters', env.clusterId)).toBe('error');
    await acts().retryHostInstall({ clusterId: env.clusterId, attempt: 1, hostId: env.hostId, retry: 1, bootstrapHostId: env.hostId, controlPlaneCount: 1 });
    expect([await statusOf('hosts', env.hostId), await statusOf('clusters', env.clusterId)]).toEqual(['installing', 'installing']);
    await progress(env, env.hostId, 'Done');
    expect(await statusOf('hosts', env.hostId)).toBe('installed');
    await acts().startFinalizing({ clusterId: env.clusterId });
    await acts().completeInstallation({ clusterId: env.clusterId });
    expect(await statusOf('clusters', env.clusterId)).toBe('installed');
    await day2.allowAddWorkers(ctx, user, env.clusterId);
    expect(await statusOf('clusters', env.clusterId)).toBe('adding-hosts');
  });

  it('an install that cannot start, is cancelled while preparing, fails its checks, and a host that reboots while preparing', async () => {
    const env = await readySno('two', 12);
    temporal.down = true;
    await expect(clusters.installCluster(ctx, user, env.clusterId)).rejects.toThrow(/Temporal is unavailable/);
    temporal.down = false;
    expect(await statusOf('clusters', env.clusterId)).toBe('ready');

    await clusters.installCluster(ctx, user, env.clusterId);
    await acts().prepareInstallation({ clusterId: env.clusterId, attempt: 1 });
    expect(await statusOf('hosts', env.hostId)).toBe('preparing-for-installation');
    await clusters.cancelInstallation(ctx, user, env.clusterId);
    expect([await statusOf('hosts', env.hostId), await statusOf('clusters', env.clusterId)]).toEqual(['known', 'ready']);

    await clusters.installCluster(ctx, user, env.clusterId);
    await acts().prepareInstallation({ clusterId: env.clusterId, attempt: 2 });
    await diskSpeed(env, env.hostId, 60_000);
    expect(await statusOf('hosts', env.hostId)).toBe('preparing-failed');
    await acts().abortPreparation({ clusterId: env.clusterId, reason: 'the install disk is too slow' });
    expect([await statusOf('hosts', env.hostId), await statusOf('clusters', env.clusterId)]).toEqual(['known', 'ready']);

    await diskSpeed(env, env.hostId, 2);
    await clusters.installCluster(ctx, user, env.clusterId);
    await acts().prepareInstallation({ clusterId: env.clusterId, attempt: 3 });
    await put('hosts', env.hostId, 'preparing-for-installation');
    await reregister(env, env.hostId);
    expect(await statusOf('hosts', env.hostId)).toBe('known');
  });

  it('a host that fails, restarts mid-install, is cancelled and reset, and registers again', async () => {
    const env = await readySno('three', 13);
    await toInstalling(env, 1);
    await progress(env, env.hostId, 'Starting installation');
    await progress(env, env.hostId, 'Failed');
    expect(await statusOf('hosts', env.hostId)).toBe('error');
    await acts().retryHostInstall({ clusterId: env.clusterId, attempt: 1, hostId: env.hostId, retry: 1, bootstrapHostId: env.hostId, controlPlaneCount: 1 });
    // Registered again before Rebooting: the host restarted in the middle of its install.
    await reregister(env, env.hostId);
    expect(await statusOf('hosts', env.hostId)).toBe('error');
    await clusters.cancelInstallation(ctx, user, env.clusterId);
    expect([await statusOf('hosts', env.hostId), await statusOf('clusters', env.clusterId)]).toEqual(['cancelled', 'cancelled']);
    await clusters.resetCluster(ctx, user, env.clusterId);
    expect([await statusOf('hosts', env.hostId), await statusOf('clusters', env.clusterId)]).toEqual(['resetting-pending-user-action', 'insufficient']);
    await reregister(env, env.hostId);
    expect(await statusOf('hosts', env.hostId)).toBe('discovering');
  });

  it('refreshes decide every pre-install status of hosts and clusters', async () => {
    const env = await newCluster('four', { machine_networks: [{ cidr: '10.77.0.0/24' }], api_vips: [{ ip: '10.77.0.250' }], ingress_vips: [{ ip: '10.77.0.251' }] });
    const small = await boot(env, inventory('four-small', '10.77.0.21', { cpus: 1, memGiB: 2 }));
    expect(await statusOf('hosts', small)).toBe('insufficient');
    const offNet = await boot(env, inventory('four-off', '10.88.0.22'));
    expect(await statusOf('hosts', offNet)).toBe('insufficient');
    // A host that stopped polling.
    await db('hosts').where({ id: offNet }).update({ checked_in_at: new Date(Date.now() - 3600_000) });
    await refresh(env, offNet);
    expect(await statusOf('hosts', offNet)).toBe('disconnected');
    // Connected, but its inventory is gone from the row (a host that registered again and has not sent one yet).
    await db('hosts').where({ id: small }).update({ inventory: null, facts_version: db.raw('facts_version + 1') });
    await refresh(env, small);
    expect(await statusOf('hosts', small)).toBe('discovering');
    // Ready with failing checks: insufficient.
    await put('clusters', env.clusterId, 'ready');
    await refresh(env, small);
    expect(await statusOf('clusters', env.clusterId)).toBe('insufficient');
    // No machine network: the hosts and the cluster wait for the user.
    const waiting = await newCluster('five', {});
    const good = await boot(waiting, inventory('five-good', '10.77.0.23'));
    expect([await statusOf('hosts', good), await statusOf('clusters', waiting.clusterId)]).toEqual(['pending-for-input', 'pending-for-input']);
  });

  it('day 2: an imported cluster, a host whose install cannot start, starts, fails to prepare, joins and is done', async () => {
    const imported = await day2.importCluster(ctx, user, { name: 'six', api_vip_dnsname: 'api.six.example.com' });
    expect(imported.status).toBe('adding-hosts');
    const ie = await infraEnvs.createInfraEnv(ctx, user, { name: 'six-ie', pull_secret: PULL_SECRET, cluster_id: imported.id });
    const env = { clusterId: imported.id, infraEnvId: ie.id };
    const hostId = await boot(env, inventory('six-w1', '10.77.0.31'));
    expect(await statusOf('hosts', hostId)).toBe('known');
    temporal.down = true;
    await expect(day2.installDay2Host(ctx, user, env.infraEnvId, hostId)).rejects.toThrow(/Temporal is unavailable/);
    temporal.down = false;
    expect(await statusOf('hosts', hostId)).toBe('known');
    await day2.installDay2Host(ctx, user, env.infraEnvId, hostId);
    await day2Acts().failDay2Host({ ...env, hostId, attempt: 2, reason: 'no CA to join with' });
    expect(await statusOf('hosts', hostId)).toBe('error');
    await put('hosts', hostId, 'installing-in-progress', { doc: db.raw(`doc || '{"progress": {"current_stage": "Configuring"}}'::jsonb`) });
    await progress(env, hostId, 'Joined');
    expect(await statusOf('hosts', hostId)).toBe('added-to-existing-cluster');
    await progress(env, hostId, 'Done');
    expect(await statusOf('hosts', hostId)).toBe('installed');
  });

  it('day 2: a host whose install workflow ended without finishing it is failed by the host monitor, and a retry starts a new attempt', async () => {
    const imported = await day2.importCluster(ctx, user, { name: 'seven', api_vip_dnsname: 'api.seven.example.com' });
    const ie = await infraEnvs.createInfraEnv(ctx, user, { name: 'seven-ie', pull_secret: PULL_SECRET, cluster_id: imported.id });
    const env = { clusterId: imported.id, infraEnvId: ie.id };
    const hostId = await boot(env, inventory('seven-w1', '10.77.0.41'));
    await day2.installDay2Host(ctx, user, env.infraEnvId, hostId);
    await put('hosts', hostId, 'installing-in-progress');
    // The fake Temporal describes every workflow as COMPLETED: ended, with the host still installing.
    expect((await watchDay2Installs(ctx)).failed).toEqual([hostId]);
    expect(await statusOf('hosts', hostId)).toBe('error');
    await hostsService.retryHostInstall(ctx, user, env.infraEnvId, hostId);
    expect(await statusOf('hosts', hostId)).toBe('installing');
    expect(temporal.calls.filter((c) => c === 'start installDay2HostWorkflow').length).toBeGreaterThanOrEqual(2);
  });

  // Last: what the cases above reached, against the tables.
  it.each([
    ['host', HOST_TRANSITIONS],
    ['cluster', CLUSTER_TRANSITIONS],
  ] as const)('every %s rule fired', (kind, table) => {
    const reached = fired(kind);
    expect((table as readonly (HostRule | ClusterRule)[]).filter((r) => !reached.has(r)).map(describeRule)).toEqual([]);
  });
});

describe('install progress reports', () => {
  it('records an agent\'s retried report (same stage, same info) once, and the same stage with new info again', async () => {
    const env = await readySno('retry', 14);
    await toInstalling(env, 1);
    const report = (stage: string, info?: string) => agents.updateProgress(ctx, agent(env.infraEnvId), env.infraEnvId, env.hostId, { current_stage: stage, ...(info ? { progress_info: info } : {}) });
    const updatedAt = async () => ((await db('hosts').where({ id: env.hostId }).first('doc')) as { doc: { progress: { stage_updated_at: string } } }).doc.progress.stage_updated_at;
    await report('Starting installation');
    await report('Installing');
    const first = await updatedAt();
    await new Promise((r) => setTimeout(r, 5));
    // Its answer lost in an outage, the agent sends the same report again: the stage's timer moves, the history does not.
    await report('Installing');
    expect(await updatedAt()).not.toBe(first);
    await report('Writing image to disk', '30%');
    await report('Writing image to disk', '30%');
    await report('Writing image to disk', '60%');
    const events = (await db('events').where({ host_id: env.hostId, name: 'host_install_progress_updated' }).orderBy('seq').select('props')) as Array<{ props: { stage: string; progress_info: string } }>;
    expect(events.map((e) => `${e.props.stage}${e.props.progress_info}`)).toEqual(['Starting installation', 'Installing', 'Writing image to disk (30%)', 'Writing image to disk (60%)']);
  });
});
