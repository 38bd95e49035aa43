/**
 * Enrols a machine by its BMC: the discovery ISO goes in as virtual media and
 * the machine powers on from it (activities/bmc.ts). Its agent then registers
 * and the API attaches the BMC to that host; this workflow does not wait for
 * that, since nothing here could hurry it.
 */
import { ActivityFailure, proxyActivities } from '@temporalio/workflow';
import type { BmcActivities } from '../activities/bmc';

const acts = proxyActivities<BmcActivities>({
  // Some BMCs (sushy-tools among them) fetch the whole ISO inside InsertMedia.
  startToCloseTimeout: '6 minutes',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 5, nonRetryableErrorTypes: ['bmc_refused', 'not_found', 'bmc_unconfigured'] },
});

export interface EnrollBmcHostInput {
  bmcId: string;
}

export async function enrollBmcHostWorkflow(input: EnrollBmcHostInput): Promise<{ status: string; reason?: string }> {
  try {
    const r = await acts.bootBmcHostFromIso({ bmcId: input.bmcId });
    return { status: r.status };
  } catch (err) {
    const reason = err instanceof ActivityFailure && err.cause ? err.cause.message : (err as Error).message;
    await acts.markBmcHostFailed({ bmcId: input.bmcId, reason });
    return { status: 'failed', reason };
  }
}
