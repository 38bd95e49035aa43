import knex, { type Knex } from 'knex';

export type Db = Knex;

export function createDb(url: string, poolMax = 10): Db {
  return knex({
    client: 'pg',
    connection: { connectionString: url, connectionTimeoutMillis: 5000 },
    pool: { min: 0, max: poolMax },
    acquireConnectionTimeout: 10000,
  });
}

/** Round trip used by /readyz; a timeout counts as a failure. */
export async function pingDb(db: Db): Promise<void> {
  await db.raw('select 1');
}
