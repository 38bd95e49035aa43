import { proxyActivities, log } from '@temporalio/workflow';
import type { SelfCheckActivities } from '../activities/self-check';

const { writeSelfCheckArtifact } = proxyActivities<SelfCheckActivities>({
  startToCloseTimeout: '30 seconds',
  // A self-check that cannot finish in a couple of minutes is itself the answer.
  retry: { maximumAttempts: 5, initialInterval: '1 second' },
});

export interface SelfCheckResult {
  objectKey: string;
  storage: string;
}

/** Proves Temporal → worker → activity → storage + PostgreSQL for one self-check row. */
export async function selfCheckWorkflow(checkId: string): Promise<SelfCheckResult> {
  log.info('self-check started', { checkId });
  const result = await writeSelfCheckArtifact(checkId);
  log.info('self-check completed', { checkId, objectKey: result.objectKey });
  return result;
}
