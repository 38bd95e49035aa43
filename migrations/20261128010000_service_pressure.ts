import type { Knex } from 'knex';

/**
 * `service_pressure`: when the API last turned agent polls away to stay
 * within its capacity, or ran late itself (src/api/admission.ts), one row per
 * kind of pressure. `started_at` is the start of the latest episode (moments
 * closer together than the grace are one), `last_at` its latest moment. The disconnect rule
 * does not count a host's silence during an episode as the host's
 * (src/domain/lifecycle/silence.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('service_pressure', (t) => {
    t.text('name').primary();
    t.timestamp('started_at', { useTz: true }).notNullable();
    t.timestamp('last_at', { useTz: true }).notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('service_pressure');
}
