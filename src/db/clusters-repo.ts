import type { Knex } from 'knex';
import { PREPARED } from './database';
import type { ClusterRow, Doc } from './rows';

type Q = Knex | Knex.Transaction;

export type ClusterPatch = Partial<Omit<ClusterRow, 'id' | 'created_at' | 'status' | 'status_info' | 'status_updated_at'>>;

function columns(patch: ClusterPatch): Record<string, unknown> {
  const values: Record<string, unknown> = { ...patch, updated_at: new Date() };
  if (patch.doc) values.doc = JSON.stringify(patch.doc);
  return values;
}

export function createClustersRepo(db: Knex) {
  const t = (q: Q = db) => q<ClusterRow>('clusters');
  return {
    async insert(row: Omit<ClusterRow, 'created_at' | 'updated_at' | 'status_updated_at' | 'install_attempt'>, q: Q = db): Promise<ClusterRow> {
      const [r] = await t(q).insert({ ...row, doc: JSON.stringify(row.doc) as unknown as Doc }).returning('*');
      return r as ClusterRow;
    },
    get(id: string, q: Q = db): Promise<ClusterRow | undefined> {
      return t(q).where({ id }).first().options(PREPARED);
    },
    /** Locks the row for the rest of the transaction: writers of one cluster go one at a time. */
    getForUpdate(id: string, trx: Knex.Transaction): Promise<ClusterRow | undefined> {
      return t(trx).where({ id }).forUpdate().first().options(PREPARED);
    },
    /** A registration's lock: the cluster cannot start installing meanwhile, but refreshes go on. */
    getForKeyShare(id: string, trx: Knex.Transaction): Promise<ClusterRow | undefined> {
      return t(trx).where({ id }).forKeyShare().first().options(PREPARED);
    },
    list(filter: { owner?: string; ids?: string[] }, q: Q = db): Promise<ClusterRow[]> {
      const query = t(q).orderBy('created_at', 'asc');
      if (filter.owner !== undefined) query.where({ owner: filter.owner });
      if (filter.ids) query.whereIn('id', filter.ids);
      return query;
    },
    /** Any column but the status, which only src/services/status-writer.ts changes (through compareAndSet). */
    async update(id: string, patch: ClusterPatch, q: Q = db): Promise<ClusterRow> {
      const [r] = await t(q).where({ id }).update(columns(patch)).returning('*').options(PREPARED);
      return r as ClusterRow;
    },
    /** Compare-and-swap on the status the caller read; undefined when another writer moved the cluster first. */
    async compareAndSet(id: string, fromStatus: string, patch: ClusterPatch, status: { status: string; status_info: string } | undefined, q: Q = db): Promise<ClusterRow | undefined> {
      const values = columns(patch);
      if (status) Object.assign(values, status, { status_updated_at: values.updated_at });
      const [r] = await t(q).where({ id, status: fromStatus }).update(values).returning('*').options(PREPARED);
      return r as ClusterRow | undefined;
    },
    /**
     * The cluster's step view (its peers as JSON text) stored under its stamp, by the refresh that moved the stamp,
     * in that refresh's transaction (migrations/20261130130000_cluster_step_views.ts).
     */
    async putStepView(id: string, stamp: string, peers: string, q: Q = db): Promise<void> {
      await q.raw('insert into cluster_step_views (cluster_id, stamp, peers) values (?, ?, ?) on conflict (cluster_id) do update set stamp = excluded.stamp, peers = excluded.peers', [id, stamp, peers]);
    },
    /** The cluster with its step view's peers as stored under `stamp` (null when none is stored under it), in one statement. */
    async getWithStepView(id: string, stamp: string, q: Q = db): Promise<{ cluster: ClusterRow; peers: string | null } | undefined> {
      const r = await q.raw('select c.*, v.peers as lf_step_view_peers from clusters c left join cluster_step_views v on v.cluster_id = c.id and v.stamp = ? where c.id = ?', [stamp, id]);
      const row = r.rows[0] as (ClusterRow & { lf_step_view_peers: string | null }) | undefined;
      if (!row) return undefined;
      const { lf_step_view_peers: peers, ...cluster } = row;
      return { cluster: cluster as ClusterRow, peers };
    },
    async delete(id: string, q: Q = db): Promise<number> {
      return t(q).where({ id }).delete();
    },
  };
}

export type ClustersRepo = ReturnType<typeof createClustersRepo>;
