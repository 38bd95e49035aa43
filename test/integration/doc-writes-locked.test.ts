/**
 * A row's doc is read and written under the row's lock by every writer. A
 * writer that read the doc first and wrote it back later undid what another
 * wrote in between: the controller's last finalizing report, read before the
 * workflow completed the install and written after it, erased
 * install_completed_at, and aicli's `wait cluster` (which waits for that field)
 * never returned on an installed cluster (CI, aicli flow, 1 run in 2 here).
 *
 * Each test holds the row's lock in a transaction that stands for the other
 * writer, starts the API's call, lets it run until it waits on the lock, then
 * writes and commits: the call must see that write.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import { parseConfig } from '../../src/config';
import { createDb, type Db } from '../../src/db/database';
import { migrateLatest } from '../../src/db/migrations';
import { createRepos, type ServiceContext } from '../../src/services/context';
import { buildServiceContext } from '../../src/services/build-context';
import { LocalObjectStore } from '../../src/storage/local-object-store';
import type { Principal } from '../../src/auth/principal';
import type { EmbeddedPg } from '../../src/dev/embedded-postgres';
import * as agents from '../../src/services/agent-service';
import * as clusters from '../../src/services/clusters-service';
import * as infraEnvs from '../../src/services/infra-envs-service';
import * as files from '../../src/services/cluster-files-service';
import * as logs from '../../src/services/logs-service';
import { startTestPostgres, tempDir } from '../support/services';
import { PULL_SECRET } from '../support/api-harness';

let pg: EmbeddedPg;
let db: Db;
let ctx: ServiceContext;
const user: Principal = { kind: 'admin', user: 'root' };
const noTemporal = { workflow: { start: async () => ({}), getHandle: () => ({ signal: async () => undefined }) }, withDeadline: <T>(_d: number, fn: () => Promise<T>) => fn() } as unknown as Client;

beforeAll(async () => {
  pg = await startTestPostgres(`doclock_${Math.random().toString(36).slice(2, 8)}`);
  db = createDb(pg.url, 6);
  await migrateLatest(db);
  const cfg = parseConfig({ DATABASE_URL: pg.url, TEMPORAL_ADDRESS: '127.0.0.1:1', STORAGE_LOCAL_DIR: tempDir('doclock-objects') });
  ctx = buildServiceContext(cfg, { db, repos: createRepos(db), store: new LocalObjectStore(tempDir('doclock-store')), temporal: noTemporal });
}, 60_000);
afterAll(async () => {
  await db?.destroy();
  await pg?.stop();
});

async function newCluster(name: string): Promise<{ clusterId: string; infraEnvId: string }> {
  const c = await clusters.createCluster(ctx, user, { name, openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com' });
  const ie = await infraEnvs.createInfraEnv(ctx, user, { name: `${name}-ie`, pull_secret: PULL_SECRET, cluster_id: c.id });
  return { clusterId: c.id, infraEnvId: ie.id };
}

const docOf = async (table: 'clusters' | 'hosts' | 'infra_envs', id: string) => ((await db(table).where({ id }).first('doc')) as { doc: Record<string, unknown> }).doc;

/**
 * The other writer: holds the row's lock while `call` starts and reaches the lock (or, unlocked, reads and
 * then waits to write), then writes `patch` into the doc (and the status, if given) and commits.
 */
async function racing<T>(table: 'clusters' | 'hosts' | 'infra_envs', id: string, call: () => Promise<T>, patch: Record<string, unknown>, status?: string): Promise<PromiseSettledResult<T>> {
  let settled!: Promise<PromiseSettledResult<T>>;
  await db.transaction(async (trx: Knex.Transaction) => {
    await trx(table).where({ id }).forUpdate().first('id');
    settled = Promise.allSettled([call()]).then((r) => r[0]);
    // Until the call waits on this lock: it has made its reads by then, locked or not (a fixed pause was a race on a
    // loaded machine). Every version of these calls, right or wrong, ends up waiting here to write.
    await untilWaitingOnLock(settled);
    await trx(table)
      .where({ id })
      .update({ doc: trx.raw('doc || ?::jsonb', [JSON.stringify(patch)]), ...(status ? { status } : {}) });
  });
  return settled;
}

async function untilWaitingOnLock(settled: Promise<unknown>): Promise<void> {
  let done = false;
  void settled.then(() => (done = true));
  for (const until = Date.now() + 10_000; Date.now() < until && !done; ) {
    const rows = (await db.raw('select count(*)::int as n from pg_locks where not granted')).rows as Array<{ n: number }>;
    if (rows[0]!.n > 0) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(done ? 'the call ended without waiting on the row lock' : 'the call did not reach the row lock within 10 s');
}

describe('doc writes take the row lock', () => {
  it("the controller's finalizing report does not undo the install's completion", async () => {
    const { clusterId } = await newCluster('fin');
    await db('clusters').where({ id: clusterId }).update({ status: 'finalizing' });
    const completedAt = new Date().toISOString();
    const r = await racing('clusters', clusterId, () => files.updateFinalizingProgress(ctx, user, clusterId, 'Waiting for olm operators'), { install_completed_at: completedAt, progress: { total_percentage: 100 } }, 'installed');
    const doc = await docOf('clusters', clusterId);
    expect(doc.install_completed_at).toBe(completedAt);
    expect(doc.progress).toEqual({ total_percentage: 100 });
    // The report arrived after the cluster left finalizing: refused, in the API's shape.
    expect(r.status).toBe('rejected');
    expect(((r as PromiseRejectedResult).reason as { status: number }).status).toBe(409);
  });

  it("install-config overrides keep a refresh's validations written meanwhile", async () => {
    const { clusterId } = await newCluster('icfg');
    const r = await racing('clusters', clusterId, () => files.patchInstallConfig(ctx, user, clusterId, JSON.stringify({ fips: true })), { validations_info: '{"marker":[]}' });
    expect(r.status).toBe('fulfilled');
    const doc = await docOf('clusters', clusterId);
    expect(doc.validations_info).toBe('{"marker":[]}');
    expect(doc.install_config_overrides).toBe('{"fips":true}');
  });

  it("the controller's logs progress keeps the cluster doc written meanwhile", async () => {
    const { clusterId } = await newCluster('clogs');
    const r = await racing('clusters', clusterId, () => logs.updateClusterLogsProgress(ctx, user, clusterId, 'collecting'), { install_completed_at: '2026-11-27T00:00:00.000Z' });
    expect(r.status).toBe('fulfilled');
    const doc = await docOf('clusters', clusterId);
    expect(doc).toMatchObject({ logs_info: 'collecting', install_completed_at: '2026-11-27T00:00:00.000Z' });
  });

  it("a host's logs progress keeps the install progress its agent reported meanwhile", async () => {
    const { infraEnvId } = await newCluster('hlogs');
    const hostId = randomUUID();
    await agents.registerHost(ctx, { kind: 'agent', infraEnvId }, infraEnvId, { host_id: hostId });
    await db('hosts').where({ id: hostId }).update({ doc: db.raw('doc || ?::jsonb', [JSON.stringify({ progress: { current_stage: 'Installing', installation_percentage: 30 } })]) });
    const progress = { current_stage: 'Writing image to disk', installation_percentage: 50 };
    const r = await racing('hosts', hostId, () => logs.updateHostLogsProgress(ctx, { kind: 'agent', infraEnvId }, infraEnvId, hostId, 'requested'), { progress });
    expect(r.status).toBe('fulfilled');
    const doc = await docOf('hosts', hostId);
    expect(doc.progress).toEqual(progress);
    expect(doc.logs_info).toBe('requested');
  });

  it('an infra-env update built from a copy another update changed meanwhile is refused, not written over it', async () => {
    const { infraEnvId } = await newCluster('ie');
    const before = await docOf('infra_envs', infraEnvId);
    const version = Number(before.image_version ?? 0);
    const r = await racing('infra_envs', infraEnvId, () => infraEnvs.updateInfraEnv(ctx, user, infraEnvId, { additional_ntp_sources: 'ntp.example.org' }), { image_version: version + 1, additional_ntp_sources: 'other.example.org' });
    expect(r.status).toBe('rejected');
    expect(((r as PromiseRejectedResult).reason as { status: number }).status).toBe(409);
    expect(await docOf('infra_envs', infraEnvId)).toMatchObject({ image_version: version + 1, additional_ntp_sources: 'other.example.org' });
    // Read again, the same update goes through.
    await infraEnvs.updateInfraEnv(ctx, user, infraEnvId, { additional_ntp_sources: 'ntp.example.org' });
    expect(await docOf('infra_envs', infraEnvId)).toMatchObject({ image_version: version + 2, additional_ntp_sources: 'ntp.example.org' });
  });
});
