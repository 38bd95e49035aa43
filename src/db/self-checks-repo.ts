import type { Db } from './database';

export interface SelfCheckRow {
  id: string;
  status: 'pending' | 'completed' | 'failed';
  message: string;
  workflow_id: string;
  object_key: string | null;
  storage: string | null;
  error: string | null;
  created_at: Date;
  completed_at: Date | null;
}

export function createSelfCheckRepo(db: Db) {
  const table = () => db<SelfCheckRow>('self_checks');
  return {
    async insert(row: Pick<SelfCheckRow, 'id' | 'message' | 'workflow_id'>): Promise<SelfCheckRow> {
      const [created] = await table().insert(row).returning('*');
      return created as SelfCheckRow;
    },
    async get(id: string): Promise<SelfCheckRow | undefined> {
      return table().where({ id }).first();
    },
    async complete(id: string, objectKey: string, storage: string): Promise<void> {
      await table()
        .where({ id })
        .update({ status: 'completed', object_key: objectKey, storage, completed_at: db.fn.now() as unknown as Date });
    },
    async fail(id: string, error: string): Promise<void> {
      await table().where({ id, status: 'pending' }).update({ status: 'failed', error, completed_at: db.fn.now() as unknown as Date });
    },
  };
}

export type SelfCheckRepo = ReturnType<typeof createSelfCheckRepo>;
