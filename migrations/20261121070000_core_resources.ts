import type { Knex } from 'knex';

/**
 * The resources of the assisted-service v2 API. Columns hold what is queried,
 * filtered or compare-and-swapped (ids, ownership, status, role); the rest of
 * each API object lives in `doc` (jsonb) so new API fields need no migration.
 * Pull secrets sit in their own column and never enter `doc`, which is what
 * the presenters serialise.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('clusters', (t) => {
    t.uuid('id').primary();
    t.text('owner').notNullable();
    t.text('name').notNullable();
    t.text('openshift_version').notNullable();
    t.text('status').notNullable();
    t.text('status_info').notNullable();
    t.timestamp('status_updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.text('pull_secret');
    t.integer('install_attempt').notNullable().defaultTo(0);
    t.jsonb('doc').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['owner']);
  });

  await knex.schema.createTable('infra_envs', (t) => {
    t.uuid('id').primary();
    t.text('owner').notNullable();
    t.text('name').notNullable();
    t.uuid('cluster_id').references('id').inTable('clusters').onDelete('SET NULL');
    t.text('pull_secret');
    t.jsonb('doc').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['owner']);
    t.index(['cluster_id']);
  });

  await knex.schema.createTable('hosts', (t) => {
    t.uuid('id').notNullable();
    t.uuid('infra_env_id').notNullable().references('id').inTable('infra_envs').onDelete('CASCADE');
    t.uuid('cluster_id').references('id').inTable('clusters').onDelete('CASCADE');
    t.text('status').notNullable();
    t.text('status_info').notNullable();
    t.timestamp('status_updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.text('role').notNullable().defaultTo('auto-assign');
    t.text('suggested_role').notNullable().defaultTo('auto-assign');
    t.boolean('bootstrap').notNullable().defaultTo(false);
    t.text('requested_hostname');
    /** The agent's inventory JSON exactly as posted: the API returns it as a string. */
    t.text('inventory');
    t.jsonb('doc').notNullable().defaultTo('{}');
    t.timestamp('checked_in_at', { useTz: true });
    t.bigInteger('agent_timestamp');
    t.text('discovery_agent_version');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['infra_env_id', 'id']);
    t.index(['cluster_id']);
  });

  /** The per-host step queue: steps the service asked for, handed out on GET instructions. */
  await knex.schema.createTable('host_steps', (t) => {
    t.bigIncrements('seq').primary();
    t.uuid('infra_env_id').notNullable();
    t.uuid('host_id').notNullable();
    t.text('step_id').notNullable();
    t.text('step_type').notNullable();
    t.jsonb('args').notNullable().defaultTo('[]');
    t.text('state').notNullable().defaultTo('pending');
    t.integer('exit_code');
    t.text('output');
    t.text('error');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('sent_at', { useTz: true });
    t.timestamp('replied_at', { useTz: true });
    t.foreign(['infra_env_id', 'host_id']).references(['infra_env_id', 'id']).inTable('hosts').onDelete('CASCADE');
    t.unique(['infra_env_id', 'host_id', 'step_id']);
    t.index(['infra_env_id', 'host_id', 'state']);
  });
  await knex.raw("alter table host_steps add constraint host_steps_state_check check (state in ('pending', 'sent', 'replied'))");

  /** Events outlive what they describe (deleted hosts stay searchable), so no foreign keys. */
  await knex.schema.createTable('events', (t) => {
    t.bigIncrements('seq').primary();
    t.text('name').notNullable();
    t.text('severity').notNullable();
    t.text('category').notNullable().defaultTo('user');
    t.text('message').notNullable();
    t.timestamp('event_time', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.uuid('cluster_id');
    t.uuid('host_id');
    t.uuid('infra_env_id');
    t.text('request_id');
    t.jsonb('props');
    t.index(['cluster_id', 'event_time']);
    t.index(['infra_env_id', 'event_time']);
    t.index(['host_id']);
  });
  await knex.raw(
    "alter table events add constraint events_severity_check check (severity in ('info', 'warning', 'error', 'critical'))",
  );

  await knex.schema.createTable('manifests', (t) => {
    t.uuid('cluster_id').notNullable().references('id').inTable('clusters').onDelete('CASCADE');
    t.text('folder').notNullable();
    t.text('file_name').notNullable();
    /** Base64, as the API carries it. */
    t.text('content').notNullable();
    t.text('manifest_source').notNullable().defaultTo('user');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['cluster_id', 'folder', 'file_name']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const t of ['manifests', 'events', 'host_steps', 'hosts', 'infra_envs', 'clusters']) await knex.schema.dropTable(t);
}
