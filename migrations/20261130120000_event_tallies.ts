import type { Knex } from 'knex';

/**
 * The events counted for /metrics (installs by outcome, host validations
 * that started failing), kept as running totals: every scrape counted them
 * over the whole events table, which only grows (at 20,000 hosts after
 * registration, 61,608 rows and ~60 ms of PostgreSQL per scrape, idle; 80–190
 * ms of wall time under the agent mix, and more with every week of history).
 *
 * One row: `counts` holds the totals of every event with seq ≤ `upto`; a
 * scrape adds the events after it (an index range on the primary key). The
 * next `upto` waits as a candidate (`cand_upto`, with the snapshot taken just
 * after it was read) until every transaction that snapshot saw in progress
 * has ended: seq is given at insert but seen at commit, so a lower seq may
 * still appear after a higher one (the reason for events_commit_safe), and
 * only then is every event up to it final (src/db/event-tallies-repo.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE event_tallies (
      id smallint PRIMARY KEY CHECK (id = 1),
      upto bigint NOT NULL DEFAULT 0,
      counts jsonb NOT NULL DEFAULT '{}',
      cand_upto bigint,
      cand_snapshot pg_snapshot
    );
    INSERT INTO event_tallies (id) VALUES (1);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE event_tallies');
}
