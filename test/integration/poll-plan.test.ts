/**
 * A poll's steps planned before its check-in (poll-memo.ts, hosts-repo.ts
 * CHECK_IN_SQL): when the row matches the plan, the check-in decides which
 * steps are due and records them in its one statement; when it does not (the
 * cluster's view moved, the host's status did, another process recorded a
 * send), the poll is answered from the row as before. Either way a host is
 * handed exactly what a process that never saw the cluster would hand it.
 */
import { randomUUID } from 'node:crypto';
import type { Db } from '../../src/db/database';
import type { ServiceContext } from '../../src/services/context';
import type { Principal } from '../../src/auth/principal';
import * as agents from '../../src/services/agent-service';
import * as clusters from '../../src/services/clusters-service';
import * as infraEnvs from '../../src/services/infra-envs-service';
import { drainRefreshRequests } from '../../src/services/refresh-queue';
import { forgetViews, viewHint } from '../../src/services/poll-memo';
import { startTestServiceContext, type TestServiceContext } from '../support/service-context';
import { PULL_SECRET } from '../support/api-harness';
import { smallInventory } from '../support/small-inventory';

let t: TestServiceContext;
let db: Db;
let ctx: ServiceContext;
const user: Principal = { kind: 'admin', user: 'root' };
/** Every statement that writes a host row, in order. */
const hostWrites: string[] = [];
const onQuery = (q: { sql: string }) => {
  if (/^update "?hosts"? set/.test(q.sql)) hostWrites.push(q.sql);
};
const VERSION = 'upstream-agent/1.0';

beforeAll(async () => {
  t = await startTestServiceContext('poll-plan');
  ({ db, ctx } = t);
  db.on('query', onQuery);
}, 60_000);
afterAll(async () => {
  await t?.stop();
});

/** A cluster of n hosts, each with its inventory, refreshed (so they are past discovering and the view is stamped). */
async function cluster(n: number) {
  const c = await clusters.createCluster(ctx, user, { name: `pp${n}-${randomUUID().slice(0, 4)}`, openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com' });
  const ie = await infraEnvs.createInfraEnv(ctx, user, { name: `pp-ie-${randomUUID().slice(0, 4)}`, pull_secret: PULL_SECRET, cluster_id: c.id });
  const agent: Principal = { kind: 'agent', infraEnvId: ie.id };
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = randomUUID();
    await agents.registerHost(ctx, agent, ie.id, { host_id: id });
    await agents.postStepReply(ctx, agent, ie.id, id, { step_type: 'inventory', step_id: `inventory-${i}`, output: smallInventory(`pp${i}`, `10.44.0.${10 + i}`) });
    ids.push(id);
  }
  await drainRefreshRequests(ctx);
  return { clusterId: c.id, infraEnvId: ie.id, ids, agent };
}

type Answer = Awaited<ReturnType<typeof agents.nextSteps>>;
const types = (a: Answer) => a.instructions.map((s) => s.step_type).sort();
const argsOf = (a: Answer) => Object.fromEntries(a.instructions.map((s) => [s.step_type, s.args]));
const sends = async (infraEnvId: string, id: string) => (await db('hosts').where({ infra_env_id: infraEnvId, id }).first('step_sends'))!.step_sends as Record<string, { d: string; at: number }>;

/** One poll, and the host-row writes it made. */
async function poll(f: { infraEnvId: string; agent: Principal }, id: string, version: string | null = VERSION) {
  hostWrites.length = 0;
  const answer = await agents.nextSteps(ctx, f.agent, f.infraEnvId, id, undefined, version ?? undefined);
  return { answer, writes: [...hostWrites] };
}

describe('a poll planned before its check-in', () => {
  it('hands out the due steps and records them in the check-in alone, as a process that never saw the cluster would', async () => {
    const f = await cluster(3);
    forgetViews();
    // The first poll of this process: no hint yet, so the row decides and the sends are a second write.
    const first = await poll(f, f.ids[0]!);
    expect(first.writes).toHaveLength(2);
    expect(types(first.answer)).toEqual(expect.arrayContaining(['connectivity-check', 'ntp-synchronizer']));
    expect(viewHint(f.infraEnvId)?.clusterId).toBe(f.clusterId);
    // The next host of the infra-env is planned from the hint: one write, the same steps and arguments.
    const second = await poll(f, f.ids[1]!);
    expect(second.writes).toHaveLength(1);
    // The reference: the third host polled by a process with no hint at all.
    forgetViews();
    const third = await poll(f, f.ids[2]!);
    expect(third.writes).toHaveLength(2);
    expect(types(second.answer)).toEqual(types(third.answer));
    expect(Object.keys(argsOf(second.answer)).sort()).toEqual(types(first.answer));
    // Its sends are on the row, with this poll's digests, exactly as the second statement records them.
    const recorded = await sends(f.infraEnvId, f.ids[1]!);
    const reference = await sends(f.infraEnvId, f.ids[2]!);
    expect(Object.keys(recorded).sort()).toEqual(Object.keys(reference).sort());
    expect(recorded['ntp-synchronizer']!.d).toBe(reference['ntp-synchronizer']!.d);
    // Within their intervals nothing repeats: one write, nothing handed out.
    const again = await poll(f, f.ids[1]!);
    expect(again.writes).toHaveLength(1);
    expect(again.answer.instructions).toEqual([]);
  });

  it('hands a step out again once its interval has passed, decided by the check-in from the row', async () => {
    const f = await cluster(2);
    await poll(f, f.ids[0]!);
    const before = await sends(f.infraEnvId, f.ids[1]!);
    expect(before).toEqual({});
    await poll(f, f.ids[1]!);
    // The NTP check was sent 10 minutes ago (its interval is 2 minutes); the connectivity check just now.
    const s = await sends(f.infraEnvId, f.ids[1]!);
    await db('hosts').where({ id: f.ids[1] }).update({ step_sends: JSON.stringify({ ...s, 'ntp-synchronizer': { ...s['ntp-synchronizer'], at: Date.now() - 10 * 60_000 } }) });
    const due = await poll(f, f.ids[1]!);
    expect(due.writes).toHaveLength(1);
    expect(types(due.answer)).toEqual(['ntp-synchronizer']);
    expect((await sends(f.infraEnvId, f.ids[1]!))['ntp-synchronizer']!.at).toBeGreaterThan(Date.now() - 60_000);
    // A send recorded with other arguments (another process's older view) is due again too.
    await db('hosts').where({ id: f.ids[1] }).update({ step_sends: db.raw(`jsonb_set(step_sends, '{connectivity-check,d}', '"elsewhere"')`) });
    expect(types((await poll(f, f.ids[1]!)).answer)).toEqual(['connectivity-check']);
  });

  it('answers from the row when the cluster view moved since the hint (a host joined elsewhere)', async () => {
    const f = await cluster(2);
    await poll(f, f.ids[0]!);
    const hint = viewHint(f.infraEnvId)!;
    // A third host joins through another process: its refresh moves the stamp; this process's hint is older.
    const id = randomUUID();
    await agents.registerHost(ctx, f.agent, f.infraEnvId, { host_id: id });
    await agents.postStepReply(ctx, f.agent, f.infraEnvId, id, { step_type: 'inventory', step_id: 'inventory-late', output: smallInventory('late', '10.44.0.99') });
    await drainRefreshRequests(ctx);
    const stamp = (await db('clusters').where({ id: f.clusterId }).first('step_view_stamp'))!.step_view_stamp;
    expect(stamp).not.toBe(hint.viewStamp);
    const answer = await poll(f, f.ids[1]!);
    // Planned from the hint, refused by the check-in, planned again from the row: two writes, the new peer in the list.
    expect(answer.writes).toHaveLength(2);
    const peers = JSON.parse(argsOf(answer.answer)['connectivity-check']![0]!) as Array<{ host_id: string }>;
    expect(peers.map((p) => p.host_id)).toContain(id);
    expect(viewHint(f.infraEnvId)?.viewStamp).toBe(stamp);
    expect(Object.keys(await sends(f.infraEnvId, f.ids[1]!))).toEqual(expect.arrayContaining(['connectivity-check']));
  });

  it('answers from the row when the host is not in a checking status, and leaves its sends alone', async () => {
    const f = await cluster(2);
    await poll(f, f.ids[0]!);
    await db('hosts').where({ id: f.ids[1] }).update({ status: 'preparing-successful' });
    const answer = await poll(f, f.ids[1]!);
    expect(answer.answer.instructions).toEqual([]);
    expect(answer.writes).toHaveLength(1);
    expect(await sends(f.infraEnvId, f.ids[1]!)).toEqual({});
  });

  it('plans after the check-in when the agent does not say its version (the stored one decides what it is asked)', async () => {
    const f = await cluster(2);
    await poll(f, f.ids[0]!);
    await db('hosts').where({ id: f.ids[1] }).update({ discovery_agent_version: 'landfall-agent/0.1' });
    const answer = await poll(f, f.ids[1]!, null);
    expect(answer.writes).toHaveLength(2);
    expect(types(answer.answer)).not.toContain('container-image-availability');
    // The same host saying an upstream version is asked for the images (planned before, one write).
    await db('hosts').where({ id: f.ids[1] }).update({ step_sends: '{}' });
    const upstream = await poll(f, f.ids[1]!);
    expect(upstream.writes).toHaveLength(1);
    expect(types(upstream.answer)).toContain('container-image-availability');
  });
});
