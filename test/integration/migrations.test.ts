import { createDb, type Db } from '../../src/db/database';
import { listMigrations, migrateLatest, migrateRollbackAll } from '../../src/db/migrations';
import { startTestPostgres } from '../support/services';
import type { EmbeddedPg } from '../../src/dev/embedded-postgres';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { MIGRATIONS_DIR } from '../../src/db/migrations';

let pg: EmbeddedPg;
let db: Db;

beforeAll(async () => {
  pg = await startTestPostgres('migrations_test');
  db = createDb(pg.url, 2);
});
afterAll(async () => {
  await db?.destroy();
  await pg?.stop();
});

const tables = async () =>
  (await db('information_schema.tables').where({ table_schema: 'public' }).pluck('table_name')).filter((t: string) => !t.startsWith('knex_')).sort();

describe('migrations on a real PostgreSQL', () => {
  it('are timestamp-named and each has up and down', async () => {
    const files = (await fs.readdir(MIGRATIONS_DIR)).filter((f) => f.endsWith('.ts'));
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      expect(f).toMatch(/^\d{14}_[a-z0-9_]+\.ts$/);
      const mod = require(path.join(MIGRATIONS_DIR, f));
      expect(typeof mod.up).toBe('function');
      expect(typeof mod.down).toBe('function');
    }
  });

  it('go up, down and up again', async () => {
    const all = (await listMigrations(db)).pending;
    expect(all.length).toBeGreaterThan(0);

    const up1 = await migrateLatest(db);
    expect(up1).toEqual(all);
    const afterUp = await tables();
    expect(afterUp).toContain('self_checks');
    expect((await listMigrations(db)).pending).toEqual([]);

    const down = await migrateRollbackAll(db);
    expect([...down].sort()).toEqual([...all].sort());
    expect(await tables()).toEqual([]);

    const up2 = await migrateLatest(db);
    expect(up2).toEqual(all);
    expect(await tables()).toEqual(afterUp);
    // A second latest is a no-op.
    expect(await migrateLatest(db)).toEqual([]);
  });

  it('enforces the self-check status values in the database', async () => {
    await migrateLatest(db);
    await expect(
      db('self_checks').insert({ id: '00000000-0000-4000-8000-000000000001', status: 'bogus', message: 'm', workflow_id: 'w' }),
    ).rejects.toThrow(/self_checks_status_check/);
  });

  it('stores a host\'s inventory and doc uncompressed (pglz was a seventh of PostgreSQL\'s CPU at fleet scale)', async () => {
    await migrateLatest(db);
    const storage = async () =>
      Object.fromEntries(
        (await db.raw(`select attname, attstorage from pg_attribute where attrelid = 'hosts'::regclass and attname in ('inventory', 'doc')`)).rows.map((r: { attname: string; attstorage: string }) => [r.attname, r.attstorage]),
      );
    expect(await storage()).toEqual({ inventory: 'e', doc: 'e' });
    const ie = '00000000-0000-4000-8000-0000000000e1';
    const host = '00000000-0000-4000-8000-0000000000e2';
    // Far above the 2 KB at which PostgreSQL toasts a row, and highly compressible: pglz would take it.
    const big = JSON.stringify({ disks: Array.from({ length: 400 }, (_, i) => ({ id: `/dev/disk/by-id/wwn-${i}`, size_bytes: 1e12 })) });
    await db('infra_envs').insert({ id: ie, owner: 'o', name: 'storage' });
    await db('hosts').insert({ id: host, infra_env_id: ie, status: 'discovering', status_info: '', inventory: big, doc: { connectivity: big } });
    const row = (await db.raw('select pg_column_compression(inventory) as inventory, pg_column_compression(doc) as doc, inventory = ? as same from hosts where id = ?', [big, host])).rows[0];
    expect(row).toEqual({ inventory: null, doc: null, same: true });
    await db('infra_envs').where({ id: ie }).delete();

    // Its down migration gives the default back, and up again EXTERNAL.
    const name = (await listMigrations(db)).completed.find((n) => n.endsWith('_hosts_uncompressed_reports'));
    expect(name).toBeDefined();
    const mod = require(path.join(MIGRATIONS_DIR, `${name}.ts`)) as { up(k: Db): Promise<void>; down(k: Db): Promise<void> };
    await mod.down(db);
    expect(await storage()).toEqual({ inventory: 'x', doc: 'x' });
    await mod.up(db);
    expect(await storage()).toEqual({ inventory: 'e', doc: 'e' });
  });
});
