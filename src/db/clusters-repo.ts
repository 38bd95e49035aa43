import type { Knex } from 'knex';
import type { ClusterRow, Doc } from './rows';

type Q = Knex | Knex.Transaction;

export function createClustersRepo(db: Knex) {
  const t = (q: Q = db) => q<ClusterRow>('clusters');
  return {
    async insert(row: Omit<ClusterRow, 'created_at' | 'updated_at' | 'status_updated_at' | 'install_attempt'>, q: Q = db): Promise<ClusterRow> {
      const [r] = await t(q).insert({ ...row, doc: JSON.stringify(row.doc) as unknown as Doc }).returning('*');
      return r as ClusterRow;
    },
    get(id: string, q: Q = db): Promise<ClusterRow | undefined> {
      return t(q).where({ id }).first();
    },
    /** Locks the row for the rest of the transaction: writers of one cluster go one at a time. */
    getForUpdate(id: string, trx: Knex.Transaction): Promise<ClusterRow | undefined> {
      return t(trx).where({ id }).forUpdate().first();
    },
    list(filter: { owner?: string; ids?: string[] }, q: Q = db): Promise<ClusterRow[]> {
      const query = t(q).orderBy('created_at', 'asc');
      if (filter.owner !== undefined) query.where({ owner: filter.owner });
      if (filter.ids) query.whereIn('id', filter.ids);
      return query;
    },
    async update(id: string, patch: Partial<Omit<ClusterRow, 'id' | 'created_at'>>, q: Q = db): Promise<ClusterRow> {
      const values: Record<string, unknown> = { ...patch, updated_at: new Date() };
      if (patch.doc) values.doc = JSON.stringify(patch.doc);
      if (patch.status) values.status_updated_at = new Date();
      const [r] = await t(q).where({ id }).update(values).returning('*');
      return r as ClusterRow;
    },
    /** Compare-and-swap on status: returns undefined when another writer moved the cluster first. */
    async updateStatusIf(id: string, from: readonly string[], to: { status: string; status_info: string }, extra: Partial<ClusterRow> = {}, q: Q = db) {
      const values: Record<string, unknown> = { ...extra, ...to, status_updated_at: new Date(), updated_at: new Date() };
      if (extra.doc) values.doc = JSON.stringify(extra.doc);
      const [r] = await t(q).where({ id }).whereIn('status', from as string[]).update(values).returning('*');
      return r as ClusterRow | undefined;
    },
    async delete(id: string, q: Q = db): Promise<number> {
      return t(q).where({ id }).delete();
    },
  };
}

export type ClustersRepo = ReturnType<typeof createClustersRepo>;
