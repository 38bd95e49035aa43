import type { Knex } from 'knex';

/**
 * A step can be closed without a reply: an install step whose host finished
 * (it rebooted into the installed system and never answers that step). Before,
 * such steps stayed `sent` for ever and the poll kept finding them "due".
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table host_steps drop constraint host_steps_state_check');
  await knex.raw("alter table host_steps add constraint host_steps_state_check check (state in ('pending', 'sent', 'replied', 'closed'))");
}

export async function down(knex: Knex): Promise<void> {
  await knex('host_steps').where({ state: 'closed' }).update({ state: 'replied' });
  await knex.raw('alter table host_steps drop constraint host_steps_state_check');
  await knex.raw("alter table host_steps add constraint host_steps_state_check check (state in ('pending', 'sent', 'replied'))");
}
