import type { Knex } from 'knex';

/**
 * A notification on channel `landfall_events` whenever events are recorded
 * (once per statement: it carries nothing, it only wakes the API's event
 * streams, src/api/event-wakeups.ts). Sent at commit, so a woken reader sees the rows.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE FUNCTION landfall_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('landfall_events', '');
      RETURN NULL;
    END $$;
    CREATE TRIGGER events_notify AFTER INSERT ON events FOR EACH STATEMENT EXECUTE FUNCTION landfall_events_notify();
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TRIGGER IF EXISTS events_notify ON events; DROP FUNCTION IF EXISTS landfall_events_notify();');
}
