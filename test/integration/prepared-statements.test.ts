/**
 * The hot statements' two PostgreSQL-side economies (src/db/database.ts,
 * src/db/hosts-repo.ts): named prepared statements, and the poll's soft-state
 * commit. What could go wrong is what this checks: a prepared statement that
 * is not reused (no saving), one name for two texts (a wrong answer), and the
 * soft commit leaking into the connection's later transactions (a durable
 * write silently made asynchronous).
 */
import { randomUUID } from 'node:crypto';
import { createDb, type Db } from '../../src/db/database';
import { migrateLatest } from '../../src/db/migrations';
import { createHostsRepo } from '../../src/db/hosts-repo';
import { createInfraEnvsRepo } from '../../src/db/infra-envs-repo';
import { storeReplyFacts } from '../../src/services/refresh-queue';
import { startTestPostgres } from '../support/services';
import type { EmbeddedPg } from '../../src/dev/embedded-postgres';

let pg: EmbeddedPg;
let db: Db;
const infraEnvId = randomUUID();
const hostId = randomUUID();
const key = { infraEnvId, hostId };

beforeAll(async () => {
  pg = await startTestPostgres('prepared_test');
  // One connection: every statement below runs on the same backend, so its prepared statements and settings are visible.
  db = createDb(pg.url, 1);
  await migrateLatest(db);
  await createInfraEnvsRepo(db).insert({ id: infraEnvId, owner: 'u', name: 'ie', cluster_id: null, pull_secret: null, doc: {} });
  await createHostsRepo(db).insert({ id: hostId, infra_env_id: infraEnvId, status: 'discovering', status_info: 'x', doc: {} });
}, 120_000);
afterAll(async () => {
  await db?.destroy();
  await pg?.stop();
});

const prepared = async () => (await db.raw<{ rows: Array<{ statement: string; generic_plans: string; custom_plans: string }> }>('select statement, generic_plans, custom_plans from pg_prepared_statements')).rows;

describe('hot statements on a real PostgreSQL', () => {
  it('are prepared once per connection and reused, one name per text', async () => {
    const hosts = createHostsRepo(db);
    for (let i = 0; i < 3; i++) expect((await hosts.get(key))?.id).toBe(hostId);
    const gets = (await prepared()).filter((p) => /^select \* from "hosts" where "infra_env_id" = \$1 and "id" = \$2 limit \$3$/.test(p.statement));
    expect(gets).toHaveLength(1);
    expect(Number(gets[0]!.generic_plans) + Number(gets[0]!.custom_plans)).toBe(3);
    // With and without the agent's timestamp, one text (the absent one keeps the column), each call its own answer.
    const a = await hosts.checkIn(key, 5, undefined, new Date());
    const b = await hosts.checkIn(key, undefined, 'v2', new Date());
    expect([a?.status, b?.status]).toEqual(['discovering', 'discovering']);
    const row = await hosts.get(key);
    expect([Number(row?.agent_timestamp), row?.discovery_agent_version]).toEqual([5, 'v2']);
    const checkIns = (await prepared()).filter((p) => /^update hosts set\s+checked_in_at/.test(p.statement));
    expect(checkIns).toHaveLength(1);
    expect(Number(checkIns[0]!.generic_plans) + Number(checkIns[0]!.custom_plans)).toBe(2);
  });

  it('commit the check-in as soft state without leaving the setting on the connection', async () => {
    const hosts = createHostsRepo(db);
    await hosts.checkIn(key, 7, undefined, new Date());
    await hosts.recordStepSends(key, { inventory: { d: 'x', at: 1 } });
    // The same (only) connection: a later transaction commits durably again.
    expect((await db.raw<{ rows: Array<{ synchronous_commit: string }> }>('show synchronous_commit')).rows[0]!.synchronous_commit).toBe('on');
    await db.transaction(async (trx) => {
      expect((await trx.raw<{ rows: Array<{ synchronous_commit: string }> }>('show synchronous_commit')).rows[0]!.synchronous_commit).toBe('on');
    });
    // And the check-in's own statement did run with it off (it carries the setting in its text).
    expect((await prepared()).some((p) => /^update hosts set\s+checked_in_at/.test(p.statement) && p.statement.includes("set_config('synchronous_commit', 'off', true)"))).toBe(true);
    expect((await hosts.get(key))?.step_sends).toEqual({ inventory: { d: 'x', at: 1 } });
  });
});

describe('a step reply stored in one statement (storeReplyFacts)', () => {
  const requests = async () => (await db('refresh_requests').select('target', 'infra_env_id', 'host_id')) as Array<{ target: string; infra_env_id: string | null; host_id: string | null }>;
  const addStep = (stepId: string, type: string) => db('host_steps').insert({ infra_env_id: infraEnvId, host_id: hostId, step_id: stepId, step_type: type, state: 'sent' });

  it('writes new facts with their refresh request, the same facts again only as the step, and knows a missing host', async () => {
    await db('refresh_requests').delete();
    await addStep('inv-1', 'inventory');
    const step = (id: string) => ({ id, exit_code: 0, output: '{"cpu":{}}', error: '' });
    expect(await storeReplyFacts(db, key, step('inv-1'), { inventory_digest: 'd1' }, '{"cpu":{}}')).toEqual({ changed: true, enrolment: false });
    // A host without a cluster is its own refresh target, as requestRefresh writes it.
    expect(await requests()).toEqual([{ target: `h:${infraEnvId}/${hostId}`, infra_env_id: infraEnvId, host_id: hostId }]);
    const row = await createHostsRepo(db).get(key);
    expect([row?.inventory, (row?.doc as Record<string, unknown>).inventory_digest]).toEqual(['{"cpu":{}}', 'd1']);
    expect(await db('host_steps').where({ step_id: 'inv-1' }).first('state', 'exit_code')).toEqual({ state: 'replied', exit_code: 0 });

    // The same report again: the step is recorded, nothing else written, nothing to refresh.
    await addStep('inv-2', 'inventory');
    const version = (await db('hosts').where({ id: hostId }).first('facts_version')).facts_version;
    expect(await storeReplyFacts(db, key, step('inv-2'), { inventory_digest: 'd1' }, '{"cpu":{}}')).toEqual({ changed: false, enrolment: false });
    expect(await requests()).toHaveLength(1);
    expect((await db('hosts').where({ id: hostId }).first('facts_version')).facts_version).toBe(version);
    expect((await db('host_steps').where({ step_id: 'inv-2' }).first('state')).state).toBe('replied');

    // Another fact merges into the doc and keeps what is there.
    expect(await storeReplyFacts(db, key, step('ntp-1'), { ntp_sources: '[]' }, undefined)).toEqual({ changed: true, enrolment: false });
    const doc = (await createHostsRepo(db).get(key))?.doc as Record<string, unknown>;
    expect([doc.inventory_digest, doc.ntp_sources]).toEqual(['d1', '[]']);
    expect(await requests()).toHaveLength(2);

    expect(await storeReplyFacts(db, { infraEnvId, hostId: randomUUID() }, step('x'), { ntp_sources: '[]' }, undefined)).toBeUndefined();
    expect(await requests()).toHaveLength(2);

    // Where a BMC enrolment waits, a new inventory is left to the locking path (it may be the enrolled machine's).
    await db('bmc_hosts').insert({ id: randomUUID(), infra_env_id: infraEnvId, address: 'redfish://y', credentials_sealed: 's', status: 'enrolled', status_info: 'x' });
    expect(await storeReplyFacts(db, key, step('inv-3'), { inventory_digest: 'd2' }, '{"cpu":{"count":2}}', true)).toEqual({ changed: false, enrolment: true });
    expect(((await createHostsRepo(db).get(key))?.doc as Record<string, unknown>).inventory_digest).toBe('d1');
    // Without the guard (not an inventory) the facts go in as always.
    expect(await storeReplyFacts(db, key, step('ntp-2'), { ntp_sources: '["a"]' }, undefined, false)).toEqual({ changed: true, enrolment: false });
    await db('bmc_hosts').where({ infra_env_id: infraEnvId }).delete();
  });

  it('compares a report that is the output itself as text, and stores an inventory given apart from the output', async () => {
    const report = JSON.stringify({ remote_hosts: Array.from({ length: 49 }, (_, i) => ({ host_id: `peer-${i}`, l3_connectivity: [{ remote_ip_address: `10.0.0.${i}`, successful: true }] })) });
    const step = (id: string, output: string) => ({ id, exit_code: 0, output, error: '' });
    const connectivity = async () => ((await createHostsRepo(db).get(key))?.doc as Record<string, unknown>).connectivity;
    expect(await storeReplyFacts(db, key, step('conn-1', report), { connectivity: report }, undefined)).toEqual({ changed: true, enrolment: false });
    expect(await connectivity()).toBe(report);
    // The same report: no new fact. One peer's address differs: a new fact, stored as sent.
    expect(await storeReplyFacts(db, key, step('conn-2', report), { connectivity: report }, undefined)).toEqual({ changed: false, enrolment: false });
    const other = report.replace('"10.0.0.7"', '"10.0.0.77"');
    expect(await storeReplyFacts(db, key, step('conn-3', other), { connectivity: other }, undefined)).toEqual({ changed: true, enrolment: false });
    expect(await connectivity()).toBe(other);
    // A field whose value is not the output (NTP sources taken out of it) keeps its own value.
    expect(await storeReplyFacts(db, key, step('ntp-9', '{"ntp_sources":[{"source_name":"a"}]}'), { ntp_sources: '[{"source_name":"a"}]' }, undefined)).toEqual({ changed: true, enrolment: false });
    expect(((await createHostsRepo(db).get(key))?.doc as Record<string, unknown>).ntp_sources).toBe('[{"source_name":"a"}]');
    // An inventory as the service stores it, not as the agent sent it.
    expect(await storeReplyFacts(db, key, step('inv-9', '{"raw":1}'), { inventory_digest: 'd9' }, '{"normalised":1}')).toEqual({ changed: true, enrolment: false });
    expect((await createHostsRepo(db).get(key))?.inventory).toBe('{"normalised":1}');
    await expect(storeReplyFacts(db, key, step('two', ''), { a: '1', b: '2' }, undefined)).rejects.toThrow(/one field/);
  });
});

describe('a new host registered in one statement (hosts.insertRegistered)', () => {
  const clusterId = randomUUID();
  const ieId = randomUUID();
  const admitting = ['insufficient', 'ready', 'pending-for-input', 'adding-hosts'];
  const register = (id: string) =>
    createHostsRepo(db).insertRegistered(
      { id, infra_env_id: ieId, cluster_id: clusterId, status: 'discovering', status_info: 'new', doc: { progress: {} } },
      admitting,
      { name: 'host_registration_succeeded', severity: 'info', category: 'user', message: `host ${id} registered`, cluster_id: clusterId, host_id: id, infra_env_id: ieId, request_id: null, props: null },
      { target: `c:${clusterId}`, cluster_id: clusterId, infra_env_id: null, host_id: null },
      'landfall_refresh',
    );
  const count = async (table: string, where: Record<string, unknown>) => Number((await db(table).where(where).count<Array<{ n: string }>>('* as n'))[0]!.n);

  beforeAll(async () => {
    await db('clusters').insert({ id: clusterId, owner: 'u', name: 'c', openshift_version: '4.18', status: 'insufficient', status_info: 'x' });
    await createInfraEnvsRepo(db).insert({ id: ieId, owner: 'u', name: 'ie2', cluster_id: clusterId, pull_secret: null, doc: {} });
  });

  it('writes the host, its event and its refresh request together, and nothing when it may not', async () => {
    await db('refresh_requests').delete();
    const first = randomUUID();
    const host = await register(first);
    expect(host).toMatchObject({ id: first, infra_env_id: ieId, cluster_id: clusterId, status: 'discovering' });
    expect(host!.created_at).toBeInstanceOf(Date);
    expect([await count('events', { host_id: first }), await count('refresh_requests', { target: `c:${clusterId}` })]).toEqual([1, 1]);

    // The same host again: no second row, event or request (the general path handles a host registering again).
    expect(await register(first)).toBeUndefined();
    expect([await count('hosts', { id: first }), await count('events', { host_id: first }), await count('refresh_requests', {})]).toEqual([1, 1, 1]);

    // A cluster that no longer takes hosts, or an infra-env where a BMC enrolment waits: nothing written.
    await db('clusters').where({ id: clusterId }).update({ status: 'installing' });
    const refused = randomUUID();
    expect(await register(refused)).toBeUndefined();
    await db('clusters').where({ id: clusterId }).update({ status: 'ready' });
    await db('bmc_hosts').insert({ id: randomUUID(), infra_env_id: ieId, address: 'redfish://x', credentials_sealed: 's', status: 'enrolled', status_info: 'x' });
    expect(await register(refused)).toBeUndefined();
    expect([await count('hosts', { id: refused }), await count('events', { host_id: refused }), await count('refresh_requests', {})]).toEqual([0, 0, 1]);
    await db('bmc_hosts').where({ infra_env_id: ieId }).delete();
    expect(await register(refused)).toMatchObject({ id: refused });
  });
});
