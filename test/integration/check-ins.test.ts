/**
 * Polls' check-ins (hosts-repo checkIn) arriving together, on a real
 * PostgreSQL: each poll gets its own host's answer and writes its own clock
 * and version, a host whose row another transaction holds is checked in once
 * it is free without holding back any other poll, a missing host is missing.
 * (Written for a batched check-in that was tried and left out: see
 * docs/architecture.md; what it asserts holds for any check-in.)
 */
import { randomUUID } from 'node:crypto';
import type { Db } from '../../src/db/database';
import type { ServiceContext } from '../../src/services/context';
import type { Principal } from '../../src/auth/principal';
import * as agents from '../../src/services/agent-service';
import * as clusters from '../../src/services/clusters-service';
import * as infraEnvs from '../../src/services/infra-envs-service';
import { startTestServiceContext, type TestServiceContext } from '../support/service-context';
import { PULL_SECRET } from '../support/api-harness';

let t: TestServiceContext;
let db: Db;
let ctx: ServiceContext;
const user: Principal = { kind: 'admin', user: 'root' };
const checkIns: string[] = [];
const onQuery = (q: { sql: string }) => {
  if (/^update hosts set\s+checked_in_at/.test(q.sql)) checkIns.push(q.sql);
};

beforeAll(async () => {
  t = await startTestServiceContext('check-ins');
  ({ db, ctx } = t);
  db.on('query', onQuery);
}, 60_000);
afterAll(async () => {
  await t?.stop();
});

async function fleet(n: number) {
  const c = await clusters.createCluster(ctx, user, { name: `ci${n}`, openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com' });
  const ie = await infraEnvs.createInfraEnv(ctx, user, { name: `ci${n}-ie`, pull_secret: PULL_SECRET, cluster_id: c.id });
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = randomUUID();
    await agents.registerHost(ctx, { kind: 'agent', infraEnvId: ie.id }, ie.id, { host_id: id });
    ids.push(id);
  }
  return { clusterId: c.id, infraEnvId: ie.id, ids };
}

const row = (infraEnvId: string, id: string) => db('hosts').where({ infra_env_id: infraEnvId, id }).first('checked_in_at', 'agent_timestamp', 'discovery_agent_version', 'status');

describe('check-ins that arrive together', () => {
  it('answers each poll with its own host, and writes each host its own clock and version', async () => {
    const f = await fleet(20);
    // One host gets a different status, so a mixed-up answer would show.
    await db('hosts').where({ id: f.ids[3] }).update({ status: 'disconnected' });
    const before = new Date(Date.now() - 1000);
    checkIns.length = 0;
    const answers = await Promise.all(f.ids.map((id, i) => ctx.repos.hosts.checkIn({ infraEnvId: f.infraEnvId, hostId: id }, 1_700_000_000 + i, `v${i}`, new Date(Date.now() - 60_000))));
    expect(checkIns.length).toBeGreaterThan(0);
    answers.forEach((a, i) => {
      expect(a).toBeDefined();
      expect(a!.clusterId).toBe(f.clusterId);
      expect(a!.agentVersion).toBe(`v${i}`);
      expect(a!.status).toBe(i === 3 ? 'disconnected' : 'discovering');
    });
    for (const [i, id] of f.ids.entries()) {
      const r = (await row(f.infraEnvId, id)) as { checked_in_at: Date; agent_timestamp: string; discovery_agent_version: string };
      expect(Number(r.agent_timestamp)).toBe(1_700_000_000 + i);
      expect(r.discovery_agent_version).toBe(`v${i}`);
      expect(r.checked_in_at.getTime()).toBeGreaterThan(before.getTime());
    }
  });

  it('keeps what a poll leaves out (no timestamp, no version), and answers a missing host with nothing', async () => {
    const f = await fleet(4);
    await Promise.all(f.ids.map((id) => ctx.repos.hosts.checkIn({ infraEnvId: f.infraEnvId, hostId: id }, 42, 'keep', new Date())));
    const ghost = randomUUID();
    const answers = await Promise.all([
      ...f.ids.map((id) => ctx.repos.hosts.checkIn({ infraEnvId: f.infraEnvId, hostId: id }, undefined, undefined, new Date())),
      ctx.repos.hosts.checkIn({ infraEnvId: f.infraEnvId, hostId: ghost }, undefined, undefined, new Date()),
    ]);
    expect(answers.slice(0, 4).every((a) => a?.agentVersion === 'keep')).toBe(true);
    expect(answers[4]).toBeUndefined();
    for (const id of f.ids) expect(Number(((await row(f.infraEnvId, id)) as { agent_timestamp: string }).agent_timestamp)).toBe(42);
  });

  it('checks in a host whose row another transaction holds, once it lets go, without holding back the others', async () => {
    const f = await fleet(6);
    const held = f.ids[2]!;
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    // A transaction (as a refresh writing several hosts) holds one host's row.
    const holder = db.transaction(async (trx) => {
      await trx('hosts').where({ id: held }).forNoKeyUpdate().first('id');
      locked();
      await released;
    });
    await isLocked;
    const polls = f.ids.map((id) => ctx.repos.hosts.checkIn({ infraEnvId: f.infraEnvId, hostId: id }, 7, 'held', new Date()));
    const others = polls.filter((_, i) => i !== 2);
    // Every other host is answered while the row is still held.
    const answeredWhileHeld = await Promise.race([Promise.all(others).then(() => true), new Promise((r) => setTimeout(() => r(false), 30_000).unref())]);
    expect(answeredWhileHeld).toBe(true);
    release();
    await holder;
    expect((await polls[2])?.agentVersion).toBe('held');
  });
});

describe('a check-in that waits for its row holds back no other poll', () => {
  it('answers every other host while two polled hosts wait for rows another transaction holds', async () => {
    const f = await fleet(8);
    const held = f.ids.slice(0, 2);
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holder = db.transaction(async (trx) => {
      await trx('hosts').whereIn('id', held).forNoKeyUpdate().select('id');
      locked();
      await released;
    });
    await isLocked;
    // The held hosts poll first (each alone in its statement, as on an idle service), then the rest, one after another.
    const waiting = held.map((id) => ctx.repos.hosts.checkIn({ infraEnvId: f.infraEnvId, hostId: id }, 1, 'w', new Date()));
    const others = async () => {
      for (const id of f.ids.slice(2)) await ctx.repos.hosts.checkIn({ infraEnvId: f.infraEnvId, hostId: id }, 1, 'o', new Date());
      return true;
    };
    const answered = await Promise.race([others(), new Promise((r) => setTimeout(() => r(false), 30_000).unref())]);
    release();
    await holder;
    expect(answered).toBe(true);
    expect((await Promise.all(waiting)).map((a) => a?.agentVersion)).toEqual(['w', 'w']);
  });
});
