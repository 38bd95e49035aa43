/**
 * The reads behind GET /api/landfall/v1/insights: stored events, clusters'
 * releases and hosts' inventories, nothing else (src/domain/insights.ts
 * explains them). Whole histories of the clusters that were active in the
 * window are read, because an attempt's number and outcome can depend on
 * events outside it.
 */
import type { Knex } from 'knex';
import type { InsightsEvent } from '../domain/insights';
import { INSIGHTS_EVENT_NAMES } from '../domain/insights';

export interface InsightsScope {
  from: Date;
  to: Date;
  /** Only clusters and infra-envs of this owner; undefined: everything (an administrator). */
  owner?: string;
}

export interface InsightsRows {
  events: InsightsEvent[];
  releases: Record<string, string>;
  names: Record<string, string>;
  hosts: Record<string, { inventory: string | null; installation_disk_id?: string }>;
}

// No message: insights never show one, and at a week of a busy service the texts are most of the bytes read.
const COLUMNS = ['seq', 'name', 'severity', 'event_time', 'cluster_id', 'host_id', 'props'] as const;

export function createInsightsRepo(db: Knex) {
  /** Events the caller may see: of their clusters, or of their infra-envs' hosts not bound to a cluster. */
  const owned = (q: Knex.QueryBuilder, owner: string | undefined) => {
    if (owner === undefined) return q;
    return q.where((w) =>
      w.whereIn('events.cluster_id', db('clusters').select('id').where({ owner })).orWhere((x) => x.whereNull('events.cluster_id').whereIn('events.infra_env_id', db('infra_envs').select('id').where({ owner }))),
    );
  };

  return {
    async load(s: InsightsScope): Promise<InsightsRows> {
      const active = owned(
        db('events').distinct('cluster_id').whereNotNull('cluster_id').whereIn('name', ['cluster_prepare_installation_started', 'host_registration_succeeded']).where('event_time', '>=', s.from).where('event_time', '<', s.to),
        s.owner,
      );
      const clusterEvents = (await db('events').select(...COLUMNS, db.raw("'' as message")).whereIn('name', INSIGHTS_EVENT_NAMES).whereIn('cluster_id', active)) as InsightsEvent[];
      // Validations that started failing in the window, with the fixes that followed, on hosts with or without a cluster.
      const failingHosts = owned(db('events').distinct('host_id').where('name', 'host_validation_failed').where('event_time', '>=', s.from).where('event_time', '<', s.to), s.owner);
      const validationEvents = await owned(
        db('events').select(...COLUMNS.map((c) => `events.${c}`), db.raw("'' as message")).whereIn('name', ['host_validation_failed', 'host_validation_fixed']).whereIn('host_id', failingHosts).where('event_time', '>=', s.from),
        s.owner,
      );
      const seen = new Set(clusterEvents.map((e) => String(e.seq)));
      const events = [...clusterEvents, ...(validationEvents as InsightsEvent[]).filter((e) => !seen.has(String(e.seq)))];

      const clusterIds = [...new Set(events.map((e) => e.cluster_id).filter((x): x is string => Boolean(x)))];
      const hostIds = [...new Set(events.map((e) => e.host_id).filter((x): x is string => Boolean(x)))];
      const releases: InsightsRows['releases'] = {};
      const names: InsightsRows['names'] = {};
      if (clusterIds.length) {
        for (const r of await db('clusters').select('id', 'name', 'openshift_version').whereIn('id', clusterIds)) {
          releases[r.id as string] = r.openshift_version as string;
          names[r.id as string] = r.name as string;
        }
      }
      const hosts: InsightsRows['hosts'] = {};
      if (hostIds.length) {
        for (const r of await db('hosts').select('id', 'inventory', db.raw("doc->>'installation_disk_id' as installation_disk_id")).whereIn('id', hostIds)) {
          hosts[r.id as string] = { inventory: (r.inventory as string | null) ?? null, ...(r.installation_disk_id ? { installation_disk_id: r.installation_disk_id as string } : {}) };
        }
      }
      return { events, releases, names, hosts };
    },
  };
}

export type InsightsRepo = ReturnType<typeof createInsightsRepo>;
