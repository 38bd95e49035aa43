/**
 * The API's side of the install workflow: start it, signal cancel and reset,
 * and ask it to retry a host. Agent reports reach it through
 * report-delivery.ts (kept in PostgreSQL until the signal is taken). A workflow that is not running (an old attempt, a finished
 * install) is not an error for the reporter: the report is stored either way.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import type { ServiceContext } from './context';
import { TASK_QUEUE, SEARCH_ATTRIBUTES, workflowIds } from '../temporal/names';
import { installCancelled, installReset, retryHost, type InstallInput } from '../../workflows/install-cluster.messages';
import type { installClusterWorkflow } from '../../workflows/install-cluster';
import type { ClusterRow } from '../db/rows';

/** Host statuses the install workflow follows. */
export const INSTALL_PHASE_HOST_STATUSES = ['preparing-for-installation', 'preparing-successful', 'preparing-failed', 'installing', 'installing-in-progress', 'installing-pending-user-action', 'installed', 'error'];

export async function startInstallWorkflow(ctx: ServiceContext, cluster: ClusterRow, timeouts?: InstallInput['timeouts']): Promise<string> {
  const workflowId = workflowIds.installCluster(cluster.id, cluster.install_attempt);
  await ctx.temporal.workflow.start<typeof installClusterWorkflow>('installClusterWorkflow', {
    workflowId,
    taskQueue: TASK_QUEUE.install,
    args: [{ clusterId: cluster.id, attempt: cluster.install_attempt, clusterName: cluster.name, release: cluster.openshift_version, timeouts }],
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.clusterId, value: cluster.id },
      { key: SEARCH_ATTRIBUTES.clusterName, value: cluster.name },
      { key: SEARCH_ATTRIBUTES.installStatus, value: 'preparing' },
      { key: SEARCH_ATTRIBUTES.kubernetesRelease, value: cluster.openshift_version },
    ],
    memo: { clusterName: cluster.name, attempt: cluster.install_attempt },
  });
  return workflowId;
}

async function signal(ctx: ServiceContext, clusterId: string, send: (id: string) => Promise<void>): Promise<void> {
  const c = await ctx.repos.clusters.get(clusterId);
  if (!c || c.install_attempt === 0) return;
  try {
    await send(workflowIds.installCluster(clusterId, c.install_attempt));
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError) && (err as Error).name !== 'WorkflowNotFoundError') throw err;
  }
}

export function signalCancelled(ctx: ServiceContext, clusterId: string): Promise<void> {
  return signal(ctx, clusterId, (id) => ctx.temporal.workflow.getHandle(id).signal(installCancelled));
}

export function signalReset(ctx: ServiceContext, clusterId: string): Promise<void> {
  return signal(ctx, clusterId, (id) => ctx.temporal.workflow.getHandle(id).signal(installReset));
}

export async function requestHostRetry(ctx: ServiceContext, cluster: ClusterRow, hostId: string) {
  return ctx.temporal.workflow.getHandle(workflowIds.installCluster(cluster.id, cluster.install_attempt)).executeUpdate(retryHost, { args: [{ hostId }] });
}
