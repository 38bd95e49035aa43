/**
 * The refresh queue's metrics (src/metrics.ts, src/services/refresh-queue.ts):
 * each refresh transaction that claimed requests reports every target's age
 * (its first pending request to the commit) and the transaction's duration,
 * by who ran it (the refresher, a person's read, an agent's request); the
 * queue's backlog and its oldest request's age are read from PostgreSQL.
 */
import { randomUUID } from 'node:crypto';
import type { Registry } from 'prom-client';
import type { Principal } from '../../src/auth/principal';
import { createMetrics } from '../../src/metrics';
import * as clusters from '../../src/services/clusters-service';
import { drainRefreshRequests, refreshNowOrRequest, requestRefresh, settleClusters } from '../../src/services/refresh-queue';
import type { ServiceContext } from '../../src/services/context';
import { startTestServiceContext, type TestServiceContext } from '../support/service-context';
import { PULL_SECRET } from '../support/api-harness';

let t: TestServiceContext;
let registry: Registry;
let ctx: ServiceContext;

beforeAll(async () => {
  t = await startTestServiceContext('refresh-metrics');
  const m = createMetrics(t.db);
  registry = m.registry;
  ctx = { ...t.ctx, metrics: m.port };
});
afterAll(async () => {
  await t?.stop();
});

type Value = { labels: Record<string, string | number>; value: number; metricName?: string };
async function values(name: string): Promise<Value[]> {
  return (await registry.getSingleMetric(name)!.get()).values as Value[];
}
/** A histogram's count and sum for one path. */
async function histogram(name: string, path: string): Promise<{ count: number; sum: number }> {
  const v = await values(name);
  const pick = (suffix: string) => v.find((x) => x.metricName === `${name}_${suffix}` && x.labels.path === path)?.value ?? 0;
  return { count: pick('count'), sum: pick('sum') };
}
const gauge = async (name: string) => (await values(name))[0]!.value;

/** A request for a cluster (none needs to exist: the refresh finds nothing and commits), made `ageS` seconds ago. */
async function pendingFor(ageS: number): Promise<string> {
  const clusterId = randomUUID();
  await requestRefresh(t.db, { clusterId });
  await t.db.raw("update refresh_requests set requested_at = clock_timestamp() - make_interval(secs => ?) where cluster_id = ?", [ageS, clusterId]);
  return clusterId;
}

it('reports the backlog and its oldest request, then each refreshed target’s age and its transaction, by who refreshed it', async () => {
  expect(await gauge('landfall_refresh_pending_targets')).toBe(0);
  expect(await gauge('landfall_refresh_oldest_request_age_seconds')).toBe(0);

  // Two requests for one target (the older counts) and one for another.
  const a = await pendingFor(3);
  await requestRefresh(t.db, { clusterId: a });
  await pendingFor(1);
  expect(await gauge('landfall_refresh_pending_targets')).toBe(2);
  const oldest = await gauge('landfall_refresh_oldest_request_age_seconds');
  expect(oldest).toBeGreaterThanOrEqual(3);
  expect(oldest).toBeLessThan(30);

  expect(await drainRefreshRequests(ctx)).toBe(2);
  const ages = await histogram('landfall_refresh_request_age_seconds', 'refresher');
  expect(ages.count).toBe(2);
  // 3 s and 1 s old when claimed, plus the time to the commit.
  expect(ages.sum).toBeGreaterThanOrEqual(4);
  expect(ages.sum).toBeLessThan(30);
  // Both in one batch: one transaction.
  expect((await histogram('landfall_refresh_transaction_duration_seconds', 'refresher')).count).toBe(1);
  expect(await gauge('landfall_refresh_pending_targets')).toBe(0);
  expect(await gauge('landfall_refresh_oldest_request_age_seconds')).toBe(0);

  // Nothing pending: a drain reports nothing.
  await drainRefreshRequests(ctx);
  expect((await histogram('landfall_refresh_transaction_duration_seconds', 'refresher')).count).toBe(1);
});

it('counts a refresh a person’s read settled, and one an agent’s request ran, apart from the refresher’s', async () => {
  const read = await pendingFor(2);
  expect(await settleClusters(ctx, [read])).toBe(true);
  const byRead = await histogram('landfall_refresh_request_age_seconds', 'read');
  expect(byRead.count).toBe(1);
  expect(byRead.sum).toBeGreaterThanOrEqual(2);
  expect((await histogram('landfall_refresh_transaction_duration_seconds', 'read')).count).toBe(1);

  // An agent's request refreshes only a cluster that exists and nobody holds.
  const admin: Principal = { kind: 'admin', user: 'root' };
  const agent = (await clusters.createCluster(ctx, admin, { name: `rm-${randomUUID().slice(0, 6)}`, openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com' })).id;
  await t.db('refresh_requests').delete();
  await requestRefresh(t.db, { clusterId: agent });
  await t.db.raw('update refresh_requests set requested_at = clock_timestamp() - make_interval(secs => 5)');
  expect(await refreshNowOrRequest(ctx, { clusterId: agent })).toBe(true);
  const byAgent = await histogram('landfall_refresh_request_age_seconds', 'agent');
  expect(byAgent.count).toBe(1);
  expect(byAgent.sum).toBeGreaterThanOrEqual(5);
  // With nothing pending it still refreshes: a transaction, no target's age.
  expect(await refreshNowOrRequest(ctx, { clusterId: agent })).toBe(true);
  expect((await histogram('landfall_refresh_request_age_seconds', 'agent')).count).toBe(1);
  expect((await histogram('landfall_refresh_transaction_duration_seconds', 'agent')).count).toBe(2);
  // The refresher's figures did not move.
  expect((await histogram('landfall_refresh_request_age_seconds', 'refresher')).count).toBe(2);
});
