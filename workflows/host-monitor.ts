import { proxyActivities, log } from '@temporalio/workflow';
import type { HostMonitorActivities } from '../activities/host-monitor';

const { markSilentHosts } = proxyActivities<HostMonitorActivities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '15 seconds',
  retry: { maximumAttempts: 3 },
});

/**
 * One run of the disconnect monitor. The `host-monitor` Temporal Schedule
 * starts it every HOST_MONITOR_INTERVAL_MS (overlap: skip), so exactly one
 * runs at a time however many workers there are, and each run is visible in
 * the Temporal UI.
 */
export async function hostMonitorWorkflow(): Promise<{ silentHosts: number; clustersRefreshed: number; disconnected: number }> {
  const result = await markSilentHosts();
  if (result.silentHosts) log.info('silent hosts refreshed', result);
  return result;
}
