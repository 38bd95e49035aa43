import type { Knex } from 'knex';

/**
 * Self-checks prove a deployment end to end: the API writes a row, a Temporal
 * workflow runs an activity that writes an object to storage and completes the
 * row. Operators run one after an upgrade; the wiring test runs one per backend.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('self_checks', (t) => {
    t.uuid('id').primary();
    t.text('status').notNullable().defaultTo('pending');
    t.text('message').notNullable();
    t.text('workflow_id').notNullable();
    t.text('object_key');
    t.text('storage');
    t.text('error');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('completed_at', { useTz: true });
  });
  await knex.raw(
    "alter table self_checks add constraint self_checks_status_check check (status in ('pending', 'completed', 'failed'))",
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('self_checks');
}
