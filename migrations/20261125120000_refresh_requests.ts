import type { Knex } from 'knex';

/**
 * Coalesced refreshes (src/services/refresh-queue.ts): an agent's new facts
 * mark what they belong to (a cluster, or an unbound host) as needing a
 * refresh; a refresher takes every row of a target at once and refreshes it
 * once. Rows are appended, never upserted: a unique target would make an
 * agent's transaction wait for a refresher's lock on it. A notification on
 * `landfall_refresh` at commit wakes the refreshers (the row, not the
 * notification, is the request).
 *
 * hosts.facts_version moves with every write of a host row, so a cache of its
 * large columns can tell a stale copy without comparing them.
 * clusters.step_view_stamp is a digest of what the poll's step arguments are
 * built from (peers' addresses, names, NTP, networks), written by the refresh:
 * the poll compares it and rebuilds its per-cluster view only when it moved.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('refresh_requests', (t) => {
    t.bigIncrements('id').primary();
    t.text('target').notNullable();
    t.uuid('cluster_id');
    t.uuid('infra_env_id');
    t.uuid('host_id');
    t.timestamp('requested_at', { useTz: true }).notNullable().defaultTo(knex.raw('clock_timestamp()'));
  });
  await knex.raw('create index refresh_requests_target on refresh_requests (target)');
  await knex.schema.alterTable('hosts', (t) => {
    t.bigInteger('facts_version').notNullable().defaultTo(0);
  });
  await knex.schema.alterTable('clusters', (t) => {
    t.text('step_view_stamp');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('refresh_requests');
  await knex.schema.alterTable('hosts', (t) => t.dropColumn('facts_version'));
  await knex.schema.alterTable('clusters', (t) => t.dropColumn('step_view_stamp'));
}
