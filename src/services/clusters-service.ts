import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal';
import { ownerOf } from '../auth/principal';
import { conflict } from '../errors';
import type { ClusterRow } from '../db/rows';
import type { ServiceContext } from './context';
import { loadCluster, ownerFilter } from './access';
import { normalizeClusterInput } from './cluster-input';
import { refreshCluster } from './refresh-service';
import { readsAsPerson, settleClusters } from './refresh-queue';
import { withBuiltinOperators } from '../domain/lifecycle/components';
import { signalCancelled, signalReset, startInstallWorkflow } from './install-signals';
import { AppError } from '../errors';
import type { HostRow } from '../db/rows';
import { CLUSTER_TRANSITIONS, nextClusterStatus, type ClusterEvent } from '../domain/lifecycle/cluster-state-machine';
import type { HostEvent } from '../domain/lifecycle/host-state-machine';
import { applyClusterEvent, applyHostEvent, createCluster as createClusterRow } from './status-writer';

/** Cluster states in which users may change the cluster and hosts may register (reference §4). */
export const CLUSTER_EDITABLE = ['insufficient', 'ready', 'pending-for-input', 'adding-hosts'] as const;
export const CLUSTER_DELETABLE_BLOCKED = ['preparing-for-installation', 'installing', 'installing-pending-user-action', 'finalizing'] as const;

export async function createCluster(ctx: ServiceContext, p: Principal, body: Record<string, unknown>, requestId?: string): Promise<ClusterRow> {
  const id = randomUUID();
  const f = normalizeClusterInput(body, {}, ctx.releases, id, true);
  return ctx.db.transaction(async (trx) => {
    const row = await createClusterRow(ctx, trx, {
      id,
      owner: ownerOf(p),
      name: f.name!,
      openshift_version: f.openshift_version!,
      pull_secret: f.pull_secret ?? null,
      doc: { ...f.doc, progress: { total_percentage: 0 }, validations_info: '{}', monitored_operators: withBuiltinOperators(id, []) },
    });
    await ctx.repos.events.add({ name: 'cluster_registration_succeeded', clusterId: id, props: { cluster_name: row.name }, requestId }, trx);
    return (await refreshCluster(ctx, trx, id, requestId)) ?? row;
  });
}

export async function listClusters(ctx: ServiceContext, p: Principal) {
  // Read as validated from every fact their agents were answered for (refresh-queue.ts): settled, then read.
  if (readsAsPerson(p)) await settleClusters(ctx, (await ctx.db('clusters').where(ownerFilter(p)).select('id')).map((c: { id: string }) => c.id));
  return ctx.repos.clusters.list(ownerFilter(p));
}

export async function getClusterWithHosts(ctx: ServiceContext, p: Principal, id: string, withHosts = true) {
  const cluster = await loadCluster(ctx, p, id);
  return { cluster, hosts: withHosts ? await ctx.repos.hosts.list({ clusterId: id }) : undefined };
}

export async function updateCluster(ctx: ServiceContext, p: Principal, id: string, body: Record<string, unknown>, requestId?: string) {
  await loadCluster(ctx, p, id);
  return ctx.db.transaction(async (trx) => {
    const current = (await ctx.repos.clusters.getForUpdate(id, trx))!;
    if (!(CLUSTER_EDITABLE as readonly string[]).includes(current.status)) {
      throw conflict(`cluster ${id} cannot be updated in status ${current.status}; allowed in ${CLUSTER_EDITABLE.join(', ')}`);
    }
    const f = normalizeClusterInput(body, current.doc, ctx.releases, id, false);
    // Report what really changed: clients resend unchanged fields (the Python client sends schedulable_masters every time).
    const before: Record<string, unknown> = { ...current.doc, name: current.name, openshift_version: current.openshift_version };
    const after: Record<string, unknown> = { ...f.doc, name: f.name ?? current.name, openshift_version: f.openshift_version ?? current.openshift_version };
    const changed = Object.keys(body).filter((k) => body[k] !== undefined && body[k] !== null && (k === 'pull_secret' ? Boolean(f.pull_secret) : JSON.stringify(before[k]) !== JSON.stringify(after[k])));
    const row = await ctx.repos.clusters.update(
      id,
      {
        ...(f.name ? { name: f.name } : {}),
        ...(f.openshift_version ? { openshift_version: f.openshift_version } : {}),
        ...(f.pull_secret ? { pull_secret: f.pull_secret } : {}),
        doc: f.doc,
      },
      trx,
    );
    if (changed.length) {
      await ctx.repos.events.add({ name: 'cluster_updated', clusterId: id, props: { cluster_name: row.name, fields: changed.sort().join(', ') }, requestId }, trx);
    }
    return (await refreshCluster(ctx, trx, id, requestId)) ?? row;
  });
}

export async function deleteCluster(ctx: ServiceContext, p: Principal, id: string, requestId?: string): Promise<void> {
  const c = await loadCluster(ctx, p, id);
  await ctx.db.transaction(async (trx) => {
    const current = await ctx.repos.clusters.getForUpdate(id, trx);
    if (!current) return;
    if ((CLUSTER_DELETABLE_BLOCKED as readonly string[]).includes(current.status)) {
      throw conflict(`cluster ${id} is ${current.status}; cancel the installation before deleting it`);
    }
    await ctx.repos.clusters.delete(id, trx);
    await ctx.repos.events.add({ name: 'cluster_deregistered', clusterId: id, props: { cluster_name: c.name }, requestId }, trx);
  });
}

/**
 * Install is accepted only from `ready`. Until the lifecycle computes readiness
 * (validations), the 409 names the current status and its info.
 */
export async function installCluster(ctx: ServiceContext, p: Principal, id: string, requestId?: string): Promise<ClusterRow> {
  await loadCluster(ctx, p, id);
  const row = await ctx.db.transaction(async (trx) => {
    // Readiness is checked on fresh facts, not on the last refresh.
    const current = (await refreshCluster(ctx, trx, id, requestId))!;
    if (current.status !== 'ready') {
      const failing = failingValidations(current.doc.validation_remediation as string | undefined);
      throw conflict(`cluster ${id} is not ready to be installed: status ${current.status} (${current.status_info})${failing ? `; failing validations: ${failing}` : ''}`, { status: current.status });
    }
    // The attempt's first event says what the user did; the status event follows it.
    await ctx.repos.events.add({ name: 'cluster_prepare_installation_started', clusterId: id, requestId }, trx);
    const { row } = await applyClusterEvent(ctx, trx, current, { type: 'InstallRequested' }, { requestId, patch: { install_attempt: current.install_attempt + 1, doc: { ...current.doc, install_started_at: ctx.now().toISOString() } } });
    return row;
  });
  try {
    await startInstallWorkflow(ctx, row, ctx.installTimeouts);
  } catch (err) {
    // Without its workflow the install would hang in preparing: undo the transition and say why.
    await ctx.db.transaction(async (trx) => {
      const current = await ctx.repos.clusters.getForUpdate(id, trx);
      if (current) await applyClusterEvent(ctx, trx, current, { type: 'InstallNotStarted' }, { requestId, patch: { install_attempt: row.install_attempt - 1 } });
    });
    throw new AppError('dependency_unavailable', `the install could not start: Temporal is unavailable (${(err as Error).message.split('\n')[0]})`);
  }
  return row;
}

function failingValidations(remediation: string | undefined): string {
  try {
    return Object.entries(JSON.parse(remediation ?? '{}') as Record<string, { hint: string; blocking: boolean }>)
      .filter(([, r]) => r.blocking)
      .map(([id, r]) => `${id} (${r.hint})`)
      .join('; ');
  } catch {
    return '';
  }
}

/**
 * A user action on the cluster (cancel, reset): the cluster's table rule
 * decides whether it is allowed now, then every host gets its own event,
 * each through its table (hosts the table has no rule for stay as they are).
 */
async function userAction(
  ctx: ServiceContext,
  p: Principal,
  id: string,
  event: { cluster: ClusterEvent; host: HostEvent },
  verb: string,
  requestId: string | undefined,
  after: (row: ClusterRow, trx: import('knex').Knex.Transaction) => Promise<void>,
): Promise<ClusterRow> {
  await loadCluster(ctx, p, id);
  return ctx.db.transaction(async (trx) => {
    const current = (await ctx.repos.clusters.getForUpdate(id, trx))!;
    const allowed = CLUSTER_TRANSITIONS.filter((r) => r.event === event.cluster.type).flatMap((r) => r.from);
    if (!nextClusterStatus(current.status, event.cluster)) throw conflict(`cluster ${id} cannot be ${verb} in status ${current.status}; allowed in ${allowed.join(', ')}`);
    const { row } = await applyClusterEvent(ctx, trx, current, event.cluster, { requestId });
    for (const h of await trx<HostRow>('hosts').where({ cluster_id: id }).orderBy('id').forUpdate()) await applyHostEvent(ctx, trx, h, event.host, { requestId });
    await after(row, trx);
    return row;
  });
}

/** POST …/clusters/{id}/actions/refresh: re-check the cluster and all its hosts now. */
export async function refreshClusterNow(ctx: ServiceContext, p: Principal, id: string, requestId?: string): Promise<ClusterRow> {
  await loadCluster(ctx, p, id);
  return ctx.db.transaction(async (trx) => (await refreshCluster(ctx, trx, id, requestId))!);
}

export async function cancelInstallation(ctx: ServiceContext, p: Principal, id: string, requestId?: string) {
  const row = await userAction(ctx, p, id, { cluster: { type: 'CancelRequested' }, host: { type: 'CancelInstallation' } }, 'cancelled', requestId, async (_row, trx) => {
    await ctx.repos.events.add({ name: 'cluster_installation_canceled', clusterId: id, requestId }, trx);
  });
  await signalCancelled(ctx, id);
  return row;
}

export async function resetCluster(ctx: ServiceContext, p: Principal, id: string, requestId?: string) {
  // The hosts must boot the discovery image again; their next registration moves them to discovering.
  const row = await userAction(ctx, p, id, { cluster: { type: 'ResetRequested' }, host: { type: 'ResetInstallation' } }, 'reset', requestId, async (row, trx) => {
    // A reset cluster chooses its bootstrap host again on the next install.
    await trx('hosts').where({ cluster_id: row.id }).update({ bootstrap: false });
    await ctx.repos.events.add({ name: 'cluster_installation_reset', clusterId: id, requestId }, trx);
  });
  await signalReset(ctx, id);
  return row;
}
