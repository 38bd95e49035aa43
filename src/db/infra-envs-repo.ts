import type { Knex } from 'knex';
import { PREPARED } from './database';
import type { Doc, InfraEnvRow } from './rows';

type Q = Knex | Knex.Transaction;

export function createInfraEnvsRepo(db: Knex) {
  const t = (q: Q = db) => q<InfraEnvRow>('infra_envs');
  return {
    async insert(row: Omit<InfraEnvRow, 'created_at' | 'updated_at'>, q: Q = db): Promise<InfraEnvRow> {
      const [r] = await t(q).insert({ ...row, doc: JSON.stringify(row.doc) as unknown as Doc }).returning('*');
      return r as InfraEnvRow;
    },
    /** The infra-env with its cluster's doc and status (null without one), in one read: what a registration needs of both. */
    getWithCluster(id: string, q: Q = db): Promise<(InfraEnvRow & { cluster_doc: Doc | null; cluster_status: string | null }) | undefined> {
      return q('infra_envs as ie')
        .leftJoin('clusters as c', 'c.id', 'ie.cluster_id')
        .where('ie.id', id)
        .first('ie.*', 'c.doc as cluster_doc', 'c.status as cluster_status')
        .options(PREPARED) as never;
    },
    get(id: string, q: Q = db): Promise<InfraEnvRow | undefined> {
      return t(q).where({ id }).first().options(PREPARED);
    },
    list(filter: { owner?: string; clusterId?: string }, q: Q = db): Promise<InfraEnvRow[]> {
      const query = t(q).orderBy('created_at', 'asc');
      if (filter.owner !== undefined) query.where({ owner: filter.owner });
      if (filter.clusterId !== undefined) query.where({ cluster_id: filter.clusterId });
      return query;
    },
    /**
     * The infra-env's discovery-image agent token: the kept one while `fresh`
     * says so, else a new one from `mint`, written with compare-and-swap so
     * that processes replacing it at once all end up with the one that won.
     */
    async discoveryAgentToken(id: string, mint: () => string, fresh: (token: string) => boolean, q: Q = db): Promise<string> {
      const read = async () => ((await q('infra_envs').where({ id }).first('discovery_agent_token')) as { discovery_agent_token: string | null } | undefined)?.discovery_agent_token ?? null;
      const kept = await read();
      if (kept && fresh(kept)) return kept;
      await q('infra_envs').where({ id }).andWhere((w) => (kept === null ? w.whereNull('discovery_agent_token') : w.where({ discovery_agent_token: kept }))).update({ discovery_agent_token: mint() });
      return (await read()) ?? mint();
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
    /**
     * Records a newly signed discovery-image URL without rewriting the rest of
     * the document (a concurrent update keeps its changes), and only while the
     * image version it was signed for is current: undefined when a change
     * retired it meanwhile. updated_at stays: the user changed nothing.
     */
    async setDownloadUrl(id: string, imageVersion: number, url: string, expiresAt: string, q: Q = db): Promise<InfraEnvRow | undefined> {
      const [r] = await t(q)
        .where({ id })
        .whereRaw("coalesce((doc->>'image_version')::int, 0) = ?", [imageVersion])
        .update({ doc: q.raw('doc || ?::jsonb', [JSON.stringify({ download_url: url, expires_at: expiresAt })]) as unknown as Doc })
        .returning('*');
      return r as InfraEnvRow | undefined;
    },
    delete(id: string, q: Q = db): Promise<number> {
      return t(q).where({ id }).delete();
    },
  };
}

export type InfraEnvsRepo = ReturnType<typeof createInfraEnvsRepo>;
