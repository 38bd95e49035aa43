import type { Knex } from 'knex';

/**
 * When each repeating discovery step last went to a host, and with which
 * arguments (a digest): the poll decides from this whether a step is due.
 * It lived in the API process's memory, so the answer depended on which
 * replica the host reached; on the host row, every replica gives the same one.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('hosts', (t) => {
    t.jsonb('step_sends').notNullable().defaultTo('{}');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('hosts', (t) => {
    t.dropColumn('step_sends');
  });
}
