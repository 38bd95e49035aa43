import type { Knex } from 'knex';
import { PREPARED } from './database';
import { EVENT_CATALOGUE, renderEvent, type EventName, type Severity } from '../domain/event-catalogue';
import type { EventRow } from './rows';

type Q = Knex | Knex.Transaction;

export interface EventFilter {
  clusterId?: string;
  hostIds?: string[];
  infraEnvId?: string;
  severities?: Severity[];
  categories?: string[];
  message?: string;
  clusterLevel?: boolean;
  deletedHosts?: boolean;
  limit?: number;
  offset?: number;
  order?: 'ascending' | 'descending';
}

export interface EventPage {
  events: EventRow[];
  total: number;
  bySeverity: Record<Severity, number>;
}

export interface NewEvent {
  name: EventName;
  clusterId?: string | null;
  hostId?: string | null;
  infraEnvId?: string | null;
  props?: Record<string, string | number | boolean | undefined>;
  requestId?: string;
  /** Overrides the catalogue severity (user-posted events). */
  severity?: Severity;
  message?: string;
}

/** The row an event is stored as: its catalogue severity and category, and its rendered message. */
export function eventRow(e: NewEvent) {
  const spec = EVENT_CATALOGUE[e.name];
  return {
    name: e.name,
    severity: e.severity ?? spec.severity,
    category: spec.category,
    message: e.message ?? renderEvent(e.name, e.props ?? {}),
    cluster_id: e.clusterId ?? null,
    host_id: e.hostId ?? null,
    infra_env_id: e.infraEnvId ?? null,
    request_id: e.requestId ?? null,
    props: (e.props ? JSON.stringify(e.props) : null) as unknown as EventRow['props'],
  };
}

/** `message` is a case-insensitive substring match; LIKE's wildcards are escaped. */
const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

export function createEventsRepo(db: Knex) {
  const t = (q: Q = db) => q<EventRow>('events');

  function filtered(f: EventFilter, q: Q, withSeverity: boolean) {
    const query = t(q);
    if (f.clusterId) query.where('cluster_id', f.clusterId);
    if (f.infraEnvId) query.where('infra_env_id', f.infraEnvId);
    if (f.hostIds && f.hostIds.length) {
      query.where((w) => {
        w.whereIn('host_id', f.hostIds!);
        if (f.clusterLevel) w.orWhereNull('host_id');
      });
    } else if (f.clusterLevel === false) {
      query.whereNotNull('host_id');
    }
    query.whereIn('category', f.categories && f.categories.length ? f.categories : ['user']);
    if (f.message) query.whereRaw("message ilike ? escape '\\'", [`%${escapeLike(f.message)}%`]);
    if (!f.deletedHosts) {
      // Events of hosts that were deleted stay stored but are left out unless asked for.
      query.where((w) => w.whereNull('host_id').orWhereExists(db.select(db.raw('1')).from('hosts').whereRaw('hosts.id = events.host_id')));
    }
    if (withSeverity && f.severities && f.severities.length) query.whereIn('severity', f.severities);
    return query;
  }

  return {
    async add(e: NewEvent, q: Q = db): Promise<void> {
      await t(q).insert(eventRow(e)).options(PREPARED);
    },
    /** Several events in one statement, in this order (their sequence numbers follow it); none is no statement. */
    async addMany(events: NewEvent[], q: Q = db): Promise<void> {
      if (events.length) await t(q).insert(events.map(eventRow));
    },
    async addRaw(e: Omit<EventRow, 'seq'>, q: Q = db): Promise<void> {
      await t(q).insert({ ...e, props: (e.props ? JSON.stringify(e.props) : null) as unknown as EventRow['props'] });
    },
    async list(f: EventFilter, q: Q = db): Promise<EventPage> {
      const counts = (await filtered(f, q, false).select('severity').count<{ severity: Severity; count: string }[]>('* as count').groupBy('severity')) as { severity: Severity; count: string }[];
      const bySeverity: Record<Severity, number> = { info: 0, warning: 0, error: 0, critical: 0 };
      for (const c of counts) bySeverity[c.severity] = Number(c.count);
      const total = f.severities && f.severities.length ? f.severities.reduce((n, s) => n + bySeverity[s], 0) : Object.values(bySeverity).reduce((a, b) => a + b, 0);
      const limit = f.limit ?? 5000;
      if (limit === 0) return { events: [], total, bySeverity };
      const dir = f.order === 'descending' ? 'desc' : 'asc';
      const page = filtered(f, q, true).orderBy([{ column: 'event_time', order: dir }, { column: 'seq', order: dir }]).offset(Math.max(0, f.offset ?? 0));
      if (limit > 0) page.limit(limit);
      return { events: await page, total, bySeverity };
    },
  };
}

export type EventsRepo = ReturnType<typeof createEventsRepo>;
