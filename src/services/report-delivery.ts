/**
 * What the install workflow must be told (a host's new status or stage, the
 * controller's components verdict) is written to PostgreSQL in the same
 * transaction as the change, and only then signalled. The signal can fail
 * (Temporal restarting) or never be sent (this API process killed between
 * the commit and the signal); the agent then repeats its report, which
 * changes nothing in the database, so without this record nothing would ever
 * be signalled and the install would wait for its hard timeout. With it, the
 * next request about that host (its repeat, its next poll) or the monitor's
 * sweep sends what is still pending.
 *
 * Delivery holds the row's lock while it signals, so two processes delivering
 * reports of one host do so one after the other, in the order they were
 * written: an older report never lands after a newer one. Signals are
 * idempotent in the workflow (it keeps the latest status and stage).
 */
import type { Knex } from 'knex';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { HostKey } from '../db/hosts-repo';
import type { ServiceContext } from './context';
import { clusterComponentsReported, hostInstallReported, type HostReport } from '../../workflows/install-cluster.messages';
import { day2HostReported } from '../../workflows/install-day2-host.messages';
import { workflowIds } from '../temporal/names';
import type { HostRow } from '../db/rows';
import { day2WorkflowId, isDay2Host } from './day2-service';

/** Which workflow follows a host's install, and by which signal: a day-2 host's own, else its cluster's. */
export interface ReportTarget {
  workflowId: string;
  signal: 'hostInstallReported' | 'day2HostReported';
}

export interface PendingHostReport extends ReportTarget {
  report: HostReport;
}

export interface PendingComponents {
  workflowId: string;
  available: boolean;
  detail?: string;
}

/**
 * How long a signal may take before the request gives up on it (the report
 * stays pending). The client would otherwise retry an unreachable Temporal
 * for tens of seconds while the agent's request waits.
 */
const SIGNAL_DEADLINE_MS = 5000;

const notRunning = (err: unknown) => err instanceof WorkflowNotFoundError || (err as Error)?.name === 'WorkflowNotFoundError';

export function reportTarget(host: Pick<HostRow, 'id' | 'doc'>, cluster: { id: string; install_attempt: number } | undefined): ReportTarget | undefined {
  if (isDay2Host(host)) {
    const workflowId = day2WorkflowId(host);
    return workflowId ? { workflowId, signal: 'day2HostReported' } : undefined;
  }
  return cluster && cluster.install_attempt > 0 ? { workflowId: workflowIds.installCluster(cluster.id, cluster.install_attempt), signal: 'hostInstallReported' } : undefined;
}

/** The `report_pending` value, for a caller that writes it in its own UPDATE of the host. */
export function pendingHostReport(target: ReportTarget, report: HostReport): PendingHostReport {
  return { ...target, report };
}

/**
 * Records, inside the transaction that changed the host, the report its
 * install workflow must get. The caller holds the cluster's lock: a second
 * UPDATE of a row in one transaction makes PostgreSQL check its foreign key,
 * which locks the cluster (the lock order everywhere is cluster, then host).
 */
export async function keepHostReport(trx: Knex.Transaction, key: HostKey, target: ReportTarget | undefined, report: HostReport): Promise<boolean> {
  if (!target) return false;
  const pending = pendingHostReport(target, report);
  await trx('hosts').where({ infra_env_id: key.infraEnvId, id: key.hostId }).update({ report_pending: JSON.stringify(pending) });
  return true;
}

/**
 * Signals the host's pending report, if it has one, and clears it once
 * Temporal took it (or the workflow is no longer running). Throws when
 * Temporal is unreachable: the report stays pending for the next try.
 */
export async function deliverHostReport(ctx: ServiceContext, key: HostKey): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    const row = (await trx('hosts').where({ infra_env_id: key.infraEnvId, id: key.hostId }).forUpdate().first('report_pending')) as { report_pending: PendingHostReport | null } | undefined;
    const pending = row?.report_pending;
    if (!pending) return;
    try {
      const handle = ctx.temporal.workflow.getHandle(pending.workflowId);
      await ctx.temporal.withDeadline(Date.now() + SIGNAL_DEADLINE_MS, () => (pending.signal === 'day2HostReported' ? handle.signal(day2HostReported, pending.report) : handle.signal(hostInstallReported, pending.report)));
    } catch (err) {
      if (!notRunning(err)) throw err;
    }
    await trx('hosts').where({ infra_env_id: key.infraEnvId, id: key.hostId }).update({ report_pending: null });
  });
}

/** Records, inside the transaction that took the controller's report, the verdict the workflow must get. */
export async function keepComponents(trx: Knex.Transaction, cluster: { id: string; install_attempt: number }, verdict: { available: boolean; detail?: string }): Promise<boolean> {
  if (cluster.install_attempt === 0) return false;
  const pending: PendingComponents = { workflowId: workflowIds.installCluster(cluster.id, cluster.install_attempt), ...verdict };
  await trx('clusters').where({ id: cluster.id }).update({ components_pending: JSON.stringify(pending) });
  return true;
}

export async function deliverComponents(ctx: ServiceContext, clusterId: string): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    const row = (await trx('clusters').where({ id: clusterId }).forUpdate().first('components_pending')) as { components_pending: PendingComponents | null } | undefined;
    const pending = row?.components_pending;
    if (!pending) return;
    try {
      const handle = ctx.temporal.workflow.getHandle(pending.workflowId);
      await ctx.temporal.withDeadline(Date.now() + SIGNAL_DEADLINE_MS, () => handle.signal(clusterComponentsReported, { available: pending.available, ...(pending.detail !== undefined ? { detail: pending.detail } : {}) }));
    } catch (err) {
      if (!notRunning(err)) throw err;
    }
    await trx('clusters').where({ id: clusterId }).update({ components_pending: null });
  });
}

/**
 * The sweep (the host monitor runs it): everything still pending, however it
 * came to be left, is delivered. Failures are counted, not thrown: what could
 * not go now stays for the next sweep.
 */
export async function deliverAllPending(ctx: ServiceContext): Promise<{ delivered: number; failed: number }> {
  const hosts = (await ctx.db('hosts').whereNotNull('report_pending').select('infra_env_id', 'id')) as Array<{ infra_env_id: string; id: string }>;
  const clusters = (await ctx.db('clusters').whereNotNull('components_pending').pluck('id')) as string[];
  let delivered = 0;
  let failed = 0;
  for (const h of hosts) {
    await deliverHostReport(ctx, { infraEnvId: h.infra_env_id, hostId: h.id }).then(() => delivered++, () => failed++);
  }
  for (const id of clusters) await deliverComponents(ctx, id).then(() => delivered++, () => failed++);
  return { delivered, failed };
}
