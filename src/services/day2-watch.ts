/**
 * A day-2 host's install must end, installed or failed with a reason, never
 * sit in an install status because its workflow is gone: the same promise the
 * first install keeps (install-watch.ts), per host. The host monitor's sweep
 * looks at every day-2 host being installed and asks Temporal for the
 * workflow of its current attempt (install-day2-host-<id>-attempt-<n>):
 * - not there while the host is `installing`: the API process died between
 *   committing the install (or a retry) and starting the workflow. It is
 *   started now, with the attempt's own id (a start that did happen is not
 *   repeated), and the host installs by itself.
 * - not there later on, or ended without finishing (failed, terminated, timed
 *   out, cancelled, or completed while the host still installs): the host
 *   fails with that reason, in the table's own rule. A retry then starts a
 *   new attempt (day2-service.ts), or the host is reset.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { ServiceContext } from './context';
import { workflowStatus } from './install-watch';
import type { HostRow } from '../db/rows';
import { DAY2_HOST_KIND, day2WorkflowId, startDay2Workflow } from './day2-service';
import { applyHostEvent } from './status-writer';
import { hostDisplayName } from '../api/assisted/presenters';

/** The statuses a day-2 host's workflow drives it through (error waits in the workflow for a retry). */
const DRIVEN = ['installing', 'installing-in-progress', 'added-to-existing-cluster'];
/** How long after it was set installing a host may be without its workflow (the API starts it right after the commit). */
const START_GRACE_MS = 30_000;

export async function watchDay2Installs(ctx: ServiceContext): Promise<{ started: string[]; failed: string[] }> {
  const result = { started: [] as string[], failed: [] as string[] };
  const hosts = (await ctx.db('hosts').whereIn('status', DRIVEN).whereRaw(`doc->>'kind' = ?`, [DAY2_HOST_KIND]).whereNotNull('cluster_id').select('*')) as HostRow[];
  for (const h of hosts) {
    const workflowId = day2WorkflowId(h);
    if (!workflowId) continue;
    const status = await workflowStatus(ctx, workflowId);
    if (status === 'RUNNING' || status === 'CONTINUED_AS_NEW') continue;
    if (status === 'NOT_FOUND' && h.status === 'installing') {
      if (ctx.now().getTime() - new Date(h.status_updated_at).getTime() < START_GRACE_MS) continue;
      const cluster = await ctx.repos.clusters.get(h.cluster_id!);
      if (!cluster) continue;
      try {
        await startDay2Workflow(ctx, cluster, h);
        await ctx.repos.events.add({ name: 'host_day2_install_resumed', hostId: h.id, infraEnvId: h.infra_env_id, clusterId: h.cluster_id, props: { host_name: hostDisplayName(h), reason: `its install workflow ${workflowId} had not been started (the API stopped before starting it)` } });
        result.started.push(h.id);
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError) && (err as Error).name !== 'WorkflowExecutionAlreadyStartedError') throw err;
      }
      continue;
    }
    const reason = status === 'NOT_FOUND' ? `its install workflow ${workflowId} no longer exists in Temporal` : `its install workflow ${workflowId} ended (${status}) without finishing the install`;
    await ctx.db.transaction(async (trx) => {
      const current = await ctx.repos.hosts.getForUpdate({ infraEnvId: h.infra_env_id, hostId: h.id }, trx);
      // Moved on meanwhile (a report, a reset, a new attempt): not this sweep's to fail.
      if (!current || current.status !== h.status || day2WorkflowId(current) !== workflowId) return;
      const m = await applyHostEvent(ctx, trx, current, { type: 'Day2WorkflowEnded', reason });
      if (!m.moved) return;
      await ctx.repos.events.add({ name: 'host_day2_install_failed', hostId: h.id, infraEnvId: h.infra_env_id, clusterId: h.cluster_id, props: { host_name: hostDisplayName(h), reason } }, trx);
      result.failed.push(h.id);
    });
  }
  return result;
}
