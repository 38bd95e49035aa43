import { ApplicationFailure } from '@temporalio/common';
import type { SelfCheckRepo } from '../src/db/self-checks-repo';
import type { ObjectStore } from '../src/storage';

export interface SelfCheckDeps {
  selfChecks: SelfCheckRepo;
  store: ObjectStore;
}

export function createSelfCheckActivities(deps: SelfCheckDeps) {
  return {
    /** Idempotent: the key is derived from the check id, so a retry overwrites the same object. */
    async writeSelfCheckArtifact(checkId: string): Promise<{ objectKey: string; storage: string }> {
      const check = await deps.selfChecks.get(checkId);
      if (!check) throw ApplicationFailure.nonRetryable(`self-check ${checkId} does not exist`, 'not_found');
      const objectKey = `self-checks/${checkId}.json`;
      const body = JSON.stringify({ id: check.id, message: check.message, written_at: new Date().toISOString() });
      await deps.store.put(objectKey, body, 'application/json');
      await deps.selfChecks.complete(checkId, objectKey, deps.store.description);
      return { objectKey, storage: deps.store.description };
    },
  };
}

export type SelfCheckActivities = ReturnType<typeof createSelfCheckActivities>;
