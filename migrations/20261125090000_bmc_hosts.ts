import type { Knex } from 'knex';

/**
 * BMCs Landfall drives (issue #16): one row per machine, enrolled by its BMC
 * before it booted (host_id empty until its agent registers) or given for a
 * host that already registered. Credentials are AES-256-GCM ciphertext
 * (src/bmc/credentials.ts); nothing else in the row is secret.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('bmc_hosts', (t) => {
    t.uuid('id').primary();
    t.uuid('infra_env_id').notNullable().references('id').inTable('infra_envs').onDelete('CASCADE');
    t.uuid('host_id');
    t.text('address').notNullable();
    t.text('credentials_sealed').notNullable();
    t.boolean('disable_certificate_verification').notNullable().defaultTo(false);
    t.text('boot_mac_address');
    t.text('system_uuid');
    t.text('status').notNullable();
    t.text('status_info').notNullable();
    t.timestamp('status_updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    /** The last call Landfall made and what came of it, for people: {action, at, result}. */
    t.jsonb('last_action');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['infra_env_id', 'status']);
  });
  // A host carries at most one BMC; a MAC or system names at most one enrolment per infra-env.
  await knex.raw('CREATE UNIQUE INDEX bmc_hosts_host ON bmc_hosts (infra_env_id, host_id) WHERE host_id IS NOT NULL');
  await knex.raw('CREATE UNIQUE INDEX bmc_hosts_mac ON bmc_hosts (infra_env_id, boot_mac_address) WHERE boot_mac_address IS NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('bmc_hosts');
}
