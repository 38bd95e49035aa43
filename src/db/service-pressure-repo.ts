import type { Knex } from 'knex';
import { PREPARED } from './database';
import { SHED_GRACE_MS, type ShedEpisode } from '../domain/lifecycle/silence';

/** The pressure this module records: agent polls turned away by the API's admission, or an API process running late (src/api/admission.ts). */
const AGENT_API = 'agent-api';

/**
 * Records a moment of pressure (a refused poll, the process late) at `atMs`:
 * the API's clock then, not when this statement runs, since under pressure
 * it may wait for a connection. A moment more than SHED_GRACE_MS after the
 * last one starts a new episode.
 */
export async function recordShedding(db: Knex, atMs: number): Promise<void> {
  const at = new Date(atMs);
  await db.raw(
    `insert into service_pressure (name, started_at, last_at) values (?, ?, ?)
     on conflict (name) do update set
       started_at = case when service_pressure.last_at < excluded.last_at - make_interval(secs => ?) then excluded.started_at else service_pressure.started_at end,
       last_at = greatest(service_pressure.last_at, excluded.last_at)`,
    [AGENT_API, at, at, SHED_GRACE_MS / 1000],
  );
}

/** The latest shedding episode, if any (one small row: read at each refresh and monitor run). */
export async function latestShedEpisode(db: Knex | Knex.Transaction): Promise<ShedEpisode | undefined> {
  const row = (await db('service_pressure').where({ name: AGENT_API }).first('started_at', 'last_at').options(PREPARED)) as { started_at: Date; last_at: Date } | undefined;
  return row ? shedEpisodeOf(row.started_at, row.last_at) : undefined;
}

/**
 * The latest episode read by another statement in the same round trip (the
 * refresh's cluster read joins it: one statement fewer per refresh): the
 * join's condition, with the row's name as its parameter, and the episode
 * from the two columns it selected.
 */
export const SHED_EPISODE_JOIN = { table: 'service_pressure', name: AGENT_API } as const;
export function shedEpisodeOf(startedAt: Date | string | null, lastAt: Date | string | null): ShedEpisode | undefined {
  return startedAt !== null && lastAt !== null ? { startedAtMs: new Date(startedAt).getTime(), lastAtMs: new Date(lastAt).getTime() } : undefined;
}
