import type { Knex } from 'knex';

/**
 * What the live event stream (src/api/event-stream.ts) needs to never skip an
 * event, and an event time that is when the event was recorded.
 *
 * - `events.seq` is allocated at insert but becomes visible at commit, so two
 *   transactions can commit their events out of sequence order. A stream that
 *   has read seq 11 must know whether seq 10 may still appear. The writer's
 *   transaction id is now assigned before its seq (`landfall_event_seq()`), so
 *   any transaction that holds an unseen seq is in the in-progress list of
 *   every snapshot taken after a later seq was seen; the stream waits for
 *   those to end before passing the gap.
 * - `events.xact`: the top-level transaction that wrote the row (a savepoint's
 *   rows too, unlike `xmin`), so a stream opened with `after=latest` can still
 *   deliver the events of a transaction in flight at that moment, which commit
 *   after it and carry a lower seq.
 * - `event_time` defaults to the time of the insert (`clock_timestamp()`), not
 *   the start of its transaction (`now()`): a refresh that waited on locks for
 *   a second stamped its status changes a second before they were decided,
 *   earlier even than the agent's facts that caused them.
 *
 * Columns are altered without rewriting the table: old rows keep `xact` null.
 */
export async function up(knex: Knex): Promise<void> {
  const seq = ((await knex.raw("select pg_get_serial_sequence('events', 'seq') as s")) as { rows: Array<{ s: string }> }).rows[0]!.s;
  await knex.raw(`
    CREATE FUNCTION landfall_event_seq() RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
    BEGIN
      PERFORM pg_current_xact_id();
      RETURN nextval('${seq}'::regclass);
    END $$;
    ALTER TABLE events ALTER COLUMN seq SET DEFAULT landfall_event_seq();
    ALTER TABLE events ADD COLUMN xact xid8;
    ALTER TABLE events ALTER COLUMN xact SET DEFAULT pg_current_xact_id();
    ALTER TABLE events ALTER COLUMN event_time SET DEFAULT clock_timestamp();
  `);
}

export async function down(knex: Knex): Promise<void> {
  const seq = ((await knex.raw("select pg_get_serial_sequence('events', 'seq') as s")) as { rows: Array<{ s: string }> }).rows[0]!.s;
  await knex.raw(`
    ALTER TABLE events ALTER COLUMN event_time SET DEFAULT now();
    ALTER TABLE events DROP COLUMN xact;
    ALTER TABLE events ALTER COLUMN seq SET DEFAULT nextval('${seq}'::regclass);
    DROP FUNCTION landfall_event_seq();
  `);
}
