/**
 * Migrations are named without their file extension, so a database migrated by
 * the compiled service (`.js`) and by the test runner (`.ts`) agrees on what
 * has run. knex would otherwise call the other set "missing" and refuse.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import type { Db } from './database';

export const MIGRATIONS_DIR = path.resolve(__dirname, '..', '..', 'migrations');
const EXT = path.extname(__filename); // '.ts' under the test runner, '.js' when compiled

interface MigrationModule {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

class ExtensionlessSource implements Knex.MigrationSource<string> {
  async getMigrations(): Promise<string[]> {
    const files = await fs.readdir(MIGRATIONS_DIR);
    return files
      .filter((f) => f.endsWith(EXT) && !f.endsWith('.d.ts') && /^\d{14}_/.test(f))
      .map((f) => f.slice(0, -EXT.length))
      .sort();
  }
  getMigrationName(name: string): string {
    return name;
  }
  async getMigration(name: string): Promise<Knex.Migration> {
    const mod = require(path.join(MIGRATIONS_DIR, name + EXT)) as MigrationModule;
    return { up: mod.up, down: mod.down };
  }
}

const config = (): Knex.MigratorConfig => ({ migrationSource: new ExtensionlessSource(), tableName: 'knex_migrations' });

export async function migrateLatest(db: Db): Promise<string[]> {
  const [, names] = (await db.migrate.latest(config())) as [number, string[]];
  return names;
}

export async function migrateRollbackAll(db: Db): Promise<string[]> {
  const [, names] = (await db.migrate.rollback(config(), true)) as [number, string[]];
  return names;
}

export async function listMigrations(db: Db): Promise<{ completed: string[]; pending: string[] }> {
  const [completed, pending] = (await db.migrate.list(config())) as [Array<{ name: string }>, Array<{ file: string } | string>];
  return {
    completed: completed.map((c) => c.name),
    pending: pending.map((p) => (typeof p === 'string' ? p : p.file)),
  };
}
