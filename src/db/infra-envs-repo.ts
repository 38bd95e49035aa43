import type { Knex } from 'knex';
import type { Doc, InfraEnvRow } from './rows';

type Q = Knex | Knex.Transaction;

export function createInfraEnvsRepo(db: Knex) {
  const t = (q: Q = db) => q<InfraEnvRow>('infra_envs');
  return {
    async insert(row: Omit<InfraEnvRow, 'created_at' | 'updated_at'>, q: Q = db): Promise<InfraEnvRow> {
      const [r] = await t(q).insert({ ...row, doc: JSON.stringify(row.doc) as unknown as Doc }).returning('*');
      return r as InfraEnvRow;
    },
    get(id: string, q: Q = db): Promise<InfraEnvRow | undefined> {
      return t(q).where({ id }).first();
    },
    list(filter: { owner?: string; clusterId?: string }, q: Q = db): Promise<InfraEnvRow[]> {
      const query = t(q).orderBy('created_at', 'asc');
      if (filter.owner !== undefined) query.where({ owner: filter.owner });
      if (filter.clusterId !== undefined) query.where({ cluster_id: filter.clusterId });
      return query;
    },
    async idsBoundTo(clusterId: string, q: Q = db): Promise<string[]> {
      return t(q).where({ cluster_id: clusterId }).pluck('id');
    },
    async update(id: string, patch: Partial<Omit<InfraEnvRow, 'id' | 'created_at'>>, q: Q = db): Promise<InfraEnvRow> {
      const values: Record<string, unknown> = { ...patch, updated_at: new Date() };
      if (patch.doc) values.doc = JSON.stringify(patch.doc);
      const [r] = await t(q).where({ id }).update(values).returning('*');
      return r as InfraEnvRow;
    },
    delete(id: string, q: Q = db): Promise<number> {
      return t(q).where({ id }).delete();
    },
  };
}

export type InfraEnvsRepo = ReturnType<typeof createInfraEnvsRepo>;
