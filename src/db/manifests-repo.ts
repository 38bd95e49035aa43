import type { Knex } from 'knex';
import type { ManifestRow } from './rows';

type Q = Knex | Knex.Transaction;

export function createManifestsRepo(db: Knex) {
  const t = (q: Q = db) => q<ManifestRow>('manifests');
  return {
    list(clusterId: string, q: Q = db): Promise<ManifestRow[]> {
      return t(q).where({ cluster_id: clusterId }).orderBy(['folder', 'file_name']);
    },
    get(clusterId: string, folder: string, fileName: string, q: Q = db): Promise<ManifestRow | undefined> {
      return t(q).where({ cluster_id: clusterId, folder, file_name: fileName }).first();
    },
    async upsert(row: Pick<ManifestRow, 'cluster_id' | 'folder' | 'file_name' | 'content'>, q: Q = db): Promise<ManifestRow> {
      const [r] = await t(q)
        .insert({ ...row, manifest_source: 'user' })
        .onConflict(['cluster_id', 'folder', 'file_name'])
        .merge({ content: row.content, updated_at: new Date() })
        .returning('*');
      return r as ManifestRow;
    },
    delete(clusterId: string, folder: string, fileName: string, q: Q = db): Promise<number> {
      return t(q).where({ cluster_id: clusterId, folder, file_name: fileName }).delete();
    },
  };
}

export type ManifestsRepo = ReturnType<typeof createManifestsRepo>;
