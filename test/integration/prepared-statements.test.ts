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
    // Two shapes of one builder (with and without the agent's timestamp) are two statements with their own answers.
    const a = await hosts.checkIn(key, 5, undefined, new Date());
    const b = await hosts.checkIn(key, undefined, 'v2', new Date());
    expect([a?.status, b?.status]).toEqual(['discovering', 'discovering']);
    const row = await hosts.get(key);
    expect([Number(row?.agent_timestamp), row?.discovery_agent_version]).toEqual([5, 'v2']);
    const checkIns = (await prepared()).filter((p) => p.statement.startsWith('update "hosts" set "checked_in_at"'));
    expect(checkIns).toHaveLength(2);
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
    expect((await prepared()).some((p) => p.statement.startsWith('update "hosts" set "checked_in_at"') && p.statement.includes("set_config('synchronous_commit', 'off', true)"))).toBe(true);
    expect((await hosts.get(key))?.step_sends).toEqual({ inventory: { d: 'x', at: 1 } });
  });
});
