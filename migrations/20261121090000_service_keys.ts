import type { Knex } from 'knex';

/**
 * Keys the service makes for itself and every replica must share, such as the
 * HMAC key that signs discovery-image URLs when no IMAGE_URL_SECRET is
 * configured. Kept in PostgreSQL because that is what all replicas already share.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('service_keys', (t) => {
    t.text('name').primary();
    t.text('value').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('service_keys');
}
