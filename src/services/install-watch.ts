/**
 * An install must end, installed or failed with a reason, never sit in
 * `installing` because the thing driving it is gone. The host monitor's sweep
 * looks at every cluster in an install phase and asks Temporal for its
 * install workflow:
 * - not there while the cluster is `preparing-for-installation`: the API
 *   process died between committing the install and starting the workflow.
 *   It is started now (same workflow id: a start that did happen is not
 *   repeated), and the install goes on by itself.
 * - ended without finishing it (failed, terminated, timed out, cancelled):
 *   the cluster fails with that reason, in the table's own rule.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import type { ServiceContext } from './context';
import { workflowIds } from '../temporal/names';
import { startInstallWorkflow } from './install-signals';
import { applyClusterEvent } from './status-writer';
import type { ClusterRow } from '../db/rows';
import { watchDay2Installs } from './day2-watch';

const INSTALL_PHASES = ['preparing-for-installation', 'installing', 'installing-pending-user-action', 'finalizing'];
const ENDED = ['FAILED', 'TERMINATED', 'TIMED_OUT', 'CANCELLED'];
/** How long after its install was requested a cluster may be without its workflow (the API starts it right after the commit). */
const START_GRACE_MS = 30_000;

export interface InstallWatchResult {
  started: string[];
  failed: string[];
}

export async function watchInstalls(ctx: ServiceContext): Promise<InstallWatchResult> {
  const result: InstallWatchResult = { started: [], failed: [] };
  const clusters = (await ctx.db('clusters').whereIn('status', INSTALL_PHASES).where('install_attempt', '>', 0).select('*')) as ClusterRow[];
  for (const c of clusters) {
    const workflowId = workflowIds.installCluster(c.id, c.install_attempt);
    const status = await workflowStatus(ctx, workflowId);
    if (status === 'NOT_FOUND' && c.status === 'preparing-for-installation') {
      if (ctx.now().getTime() - new Date(c.status_updated_at).getTime() < START_GRACE_MS) continue;
      try {
        await startInstallWorkflow(ctx, c, ctx.installTimeouts);
        await ctx.repos.events.add({ name: 'cluster_install_resumed', clusterId: c.id, props: { workflow_id: workflowId, reason: 'its install workflow had not been started (the API stopped before starting it)' } });
        result.started.push(c.id);
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError) && (err as Error).name !== 'WorkflowExecutionAlreadyStartedError') throw err;
      }
      continue;
    }
    if (status !== 'NOT_FOUND' && !ENDED.includes(status)) continue;
    const reason = status === 'NOT_FOUND' ? `its install workflow ${workflowId} no longer exists in Temporal` : `its install workflow ${workflowId} ended (${status}) without finishing the install`;
    await ctx.db.transaction(async (trx) => {
      const current = await ctx.repos.clusters.getForUpdate(c.id, trx);
      if (!current || current.status !== c.status || current.install_attempt !== c.install_attempt) return;
      const event = current.status === 'preparing-for-installation' ? ({ type: 'PreparationFailed' } as const) : ({ type: 'InstallFailed', reason } as const);
      const m = await applyClusterEvent(ctx, trx, current, event);
      if (!m.moved) return;
      await ctx.repos.events.add({ name: current.status === 'preparing-for-installation' ? 'cluster_preparation_failed' : 'cluster_installation_failed', clusterId: c.id, props: { reason, failing_stage: 'unknown' } }, trx);
      result.failed.push(c.id);
    });
  }
  // Day-2 hosts, each installed by its own workflow: the same promise, per host (day2-watch.ts).
  const day2 = await watchDay2Installs(ctx);
  result.started.push(...day2.started);
  result.failed.push(...day2.failed);
  return result;
}

/** A workflow's status name as Temporal describes it, or NOT_FOUND when Temporal has no such workflow. */
export async function workflowStatus(ctx: ServiceContext, workflowId: string): Promise<string> {
  try {
    return (await ctx.temporal.workflow.getHandle(workflowId).describe()).status.name;
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError) && (err as Error).name !== 'WorkflowNotFoundError') throw err;
    return 'NOT_FOUND';
  }
}
