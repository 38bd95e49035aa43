import type { Knex } from 'knex';

/**
 * Delivery that survives a dependency being away, and step history:
 * - `hosts.report_pending`: the host report (status, stage) the install
 *   workflow has not been told yet. Written in the same transaction as the
 *   change, cleared once the signal is accepted; if Temporal or the API process
 *   was away in between, the next request about the host (or the monitor's
 *   sweep) sends it. Before, a signal lost that way was lost for good: the
 *   agent's repeat of the report changed nothing, so nothing was signalled.
 * - `clusters.components_pending`: the same for the controller's "components
 *   available" / completion verdict.
 * - `host_steps.attempts`: how many times a step was handed out (the first
 *   send and every resend), so a resent step keeps its history on its row.
 * - `infra_envs.discovery_agent_token`: the agent token embedded in the
 *   discovery image, minted once: every API process serves the same image
 *   bytes (an ECDSA signature differs at each signing).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('hosts', (t) => {
    t.jsonb('report_pending').nullable();
  });
  await knex.schema.alterTable('clusters', (t) => {
    t.jsonb('components_pending').nullable();
  });
  await knex.schema.alterTable('host_steps', (t) => {
    t.integer('attempts').notNullable().defaultTo(0);
  });
  await knex.schema.alterTable('infra_envs', (t) => {
    t.text('discovery_agent_token').nullable();
  });
  // Steps already handed out were handed out at least once.
  await knex('host_steps').whereNot({ state: 'pending' }).update({ attempts: 1 });
  await knex.raw("create index hosts_report_pending on hosts ((1)) where report_pending is not null");
  await knex.raw("create index clusters_components_pending on clusters ((1)) where components_pending is not null");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists hosts_report_pending');
  await knex.raw('drop index if exists clusters_components_pending');
  await knex.schema.alterTable('infra_envs', (t) => {
    t.dropColumn('discovery_agent_token');
  });
  await knex.schema.alterTable('host_steps', (t) => {
    t.dropColumn('attempts');
  });
  await knex.schema.alterTable('clusters', (t) => {
    t.dropColumn('components_pending');
  });
  await knex.schema.alterTable('hosts', (t) => {
    t.dropColumn('report_pending');
  });
}
