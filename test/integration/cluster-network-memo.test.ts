/**
 * A cluster's refresh keeps what it derived of its hosts' networks (the step
 * view's stamp, the machine network, majority groups, VIP suggestions) with
 * the inputs it derived them from (src/services/cluster-network-memo.ts),
 * and derives again only when those moved. What is stored must always be
 * what a process that kept nothing derives: each case below changes one
 * input, then checks the stored values against a refresh with nothing kept.
 */
import { randomUUID } from 'node:crypto';
import type { Db } from '../../src/db/database';
import type { ServiceContext } from '../../src/services/context';
import type { Principal } from '../../src/auth/principal';
import * as agents from '../../src/services/agent-service';
import * as clusters from '../../src/services/clusters-service';
import * as infraEnvs from '../../src/services/infra-envs-service';
import { drainRefreshRequests, requestRefresh } from '../../src/services/refresh-queue';
import { derivationsRun, forgetDerived } from '../../src/services/cluster-network-memo';
import { startTestServiceContext, type TestServiceContext } from '../support/service-context';
import { PULL_SECRET } from '../support/api-harness';
import { smallInventory } from '../support/small-inventory';

let t: TestServiceContext;
let db: Db;
let ctx: ServiceContext;
const user: Principal = { kind: 'admin', user: 'root' };

beforeAll(async () => {
  t = await startTestServiceContext('network-memo');
  ({ db, ctx } = t);
}, 60_000);
afterAll(async () => {
  await t?.stop();
});

let step = 0;
async function reply(f: { infraEnvId: string; agent: Principal }, id: string, stepType: string, output: string) {
  await agents.postStepReply(ctx, f.agent, f.infraEnvId, id, { step_type: stepType, step_id: `${stepType}-${++step}`, output });
}

async function cluster(n: number) {
  const c = await clusters.createCluster(ctx, user, { name: `nm${n}-${randomUUID().slice(0, 4)}`, openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com' });
  const ie = await infraEnvs.createInfraEnv(ctx, user, { name: `nm-ie-${randomUUID().slice(0, 4)}`, pull_secret: PULL_SECRET, cluster_id: c.id });
  const f = { clusterId: c.id, infraEnvId: ie.id, agent: { kind: 'agent', infraEnvId: ie.id } as Principal, ids: [] as string[] };
  for (let i = 0; i < n; i++) {
    const id = randomUUID();
    await agents.registerHost(ctx, f.agent, ie.id, { host_id: id });
    await reply(f, id, 'inventory', smallInventory(`nm${i}`, `10.45.0.${10 + i}`));
    await reply(f, id, 'free-network-addresses', JSON.stringify([{ network: '10.45.0.0/24', free_addresses: ['10.45.0.200', '10.45.0.201', '10.45.0.202'] }]));
    f.ids.push(id);
  }
  await drainRefreshRequests(ctx);
  // The refresh that stamped the view and derived the networks wrote them, so kept nothing; one more keeps them.
  await requestRefresh(db, { clusterId: c.id });
  await drainRefreshRequests(ctx);
  return f;
}

/** What the derivation stores on the cluster. */
async function derived(clusterId: string) {
  const row = (await db('clusters').where({ id: clusterId }).first('step_view_stamp', 'doc'))!;
  const doc = row.doc as Record<string, unknown>;
  return { stamp: row.step_view_stamp as string, suggestions: JSON.parse(String(doc.network_suggestions)) as Record<string, string | null>, groups: doc.connectivity_majority_groups };
}

/** The same cluster refreshed by a process that kept nothing of it: what it stores must be what is stored. */
async function expectAsDerivedAfresh(clusterId: string) {
  const stored = await derived(clusterId);
  forgetDerived(clusterId);
  const before = derivationsRun();
  await requestRefresh(db, { clusterId });
  await drainRefreshRequests(ctx);
  expect(derivationsRun()).toBeGreaterThan(before);
  expect(await derived(clusterId)).toEqual(stored);
}

describe("a cluster's derived networks, kept with their inputs", () => {
  it('are not derived again for a report that changes no network, and stay what a fresh derivation gives', async () => {
    const f = await cluster(3);
    const before = await derived(f.clusterId);
    expect(before.suggestions.machine_network).toBe('10.45.0.0/24');
    const derivations = derivationsRun();
    const version = (await db('hosts').where({ id: f.ids[1] }).first('facts_version'))!.facts_version;
    await reply(f, f.ids[1]!, 'inventory', smallInventory('nm1', '10.45.0.11', 48));
    await drainRefreshRequests(ctx);
    expect(derivationsRun()).toBe(derivations);
    // The report was stored and refreshed for (its write and the refresh's each move the facts version).
    expect(Number((await db('hosts').where({ id: f.ids[1] }).first('facts_version'))!.facts_version)).toBeGreaterThan(Number(version));
    expect(await derived(f.clusterId)).toEqual(before);
    await expectAsDerivedAfresh(f.clusterId);
  });

  it("are derived again when a host's address moves: the step view's stamp and the machine network follow it", async () => {
    const f = await cluster(3);
    const before = await derived(f.clusterId);
    // Every host moves to another network, one report at a time; the last report moves the majority.
    for (const [i, id] of f.ids.entries()) await reply(f, id, 'inventory', smallInventory(`nm${i}`, `10.46.0.${10 + i}`));
    await drainRefreshRequests(ctx);
    const after = await derived(f.clusterId);
    expect(after.stamp).not.toBe(before.stamp);
    expect(after.suggestions.machine_network).toBe('10.46.0.0/24');
    await expectAsDerivedAfresh(f.clusterId);
  });

  it('are derived again when a free-addresses report changes the VIPs every host saw free', async () => {
    const f = await cluster(2);
    expect((await derived(f.clusterId)).suggestions.api_vip).toBe('10.45.0.200');
    for (const id of f.ids) await reply(f, id, 'free-network-addresses', JSON.stringify([{ network: '10.45.0.0/24', free_addresses: ['10.45.0.202', '10.45.0.203'] }]));
    await drainRefreshRequests(ctx);
    const after = await derived(f.clusterId);
    expect(after.suggestions).toEqual({ machine_network: '10.45.0.0/24', api_vip: '10.45.0.202', ingress_vip: '10.45.0.203' });
    await expectAsDerivedAfresh(f.clusterId);
  });

  it('are derived again when what is stored was changed by someone else, and put back', async () => {
    const f = await cluster(2);
    const before = await derived(f.clusterId);
    // Another writer (an older process, a hand edit) left other suggestions: the next refresh derives and corrects them.
    await db('clusters')
      .where({ id: f.clusterId })
      .update({ doc: db.raw(`doc || jsonb_build_object('network_suggestions', ?::text)`, [JSON.stringify({ machine_network: null, api_vip: null, ingress_vip: null })]) });
    await requestRefresh(db, { clusterId: f.clusterId });
    await drainRefreshRequests(ctx);
    expect(await derived(f.clusterId)).toEqual(before);
  });
});
