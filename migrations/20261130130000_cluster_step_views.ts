import type { Knex } from 'knex';

/**
 * What every poll's step arguments are built from per cluster (its hosts'
 * ids and addressed NICs, src/services/step-args.ts), stored by the refresh
 * that moves the cluster's step-view stamp, in the same transaction, under
 * that stamp. A serving process that does not hold a cluster's view read all
 * its hosts' inventories to build one (~50 × 11 KB, read and parsed): after
 * a start, or whenever stamps had moved, every cluster at once. With 20,000
 * hosts that was seconds of CPU in the first second of load and a p99 of 5–7 s
 * for the next dozen (bench/README.md, 2026-11-30, twelfth session). Now it is
 * one row of a few kilobytes.
 *
 * Clusters whose stamp has not moved since have no row: their polls build the
 * view from the inventories, as before, until it does.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE cluster_step_views (
      cluster_id uuid PRIMARY KEY REFERENCES clusters (id) ON DELETE CASCADE,
      stamp text NOT NULL,
      peers text NOT NULL
    )
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE cluster_step_views');
}
