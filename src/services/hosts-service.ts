import type { Principal } from '../auth/principal';
import { badRequest, conflict, notFound } from '../errors';
import { hostnameProblem } from '../domain/input-rules';
import { hostnameFromInventory } from '../api/assisted/presenters';
import type { HostRow } from '../db/rows';
import type { ServiceContext } from './context';
import { loadCluster, loadHost, loadInfraEnv } from './access';
import { refreshCluster, refreshForHost } from './refresh-service';
import { readsAsPerson, settleInfraEnv } from './refresh-queue';
import { requestHostRetry } from './install-signals';
import { isDay2Host, retryDay2HostInstall } from './day2-service';
import { unavailableDependency } from '../api/dependency-errors';

/** Host states in which a user may edit role, hostname and disks (reference §1a). */
export const HOST_EDITABLE = ['discovering', 'known', 'disconnected', 'insufficient', 'pending-for-input'];

export async function listInfraEnvHosts(ctx: ServiceContext, p: Principal, infraEnvId: string) {
  await loadInfraEnv(ctx, p, infraEnvId);
  // Read as validated from every fact their agents were answered for (refresh-queue.ts).
  if (readsAsPerson(p)) await settleInfraEnv(ctx, infraEnvId);
  return ctx.repos.hosts.list({ infraEnvId });
}

export async function listClusterHosts(ctx: ServiceContext, p: Principal, clusterId: string, filter: { role?: string; status?: string }) {
  await loadCluster(ctx, p, clusterId);
  return ctx.repos.hosts.list({ clusterId, ...filter });
}

export async function getHost(ctx: ServiceContext, p: Principal, infraEnvId: string, hostId: string): Promise<HostRow> {
  return (await loadHost(ctx, p, infraEnvId, hostId)).host;
}

interface DiskConfig {
  id: string;
  role: 'install' | 'none';
}

function diskIds(inventory: string | null): string[] {
  if (!inventory) return [];
  try {
    const disks = (JSON.parse(inventory) as { disks?: Array<{ id?: string; by_id?: string; path?: string }> }).disks ?? [];
    return disks.flatMap((d) => [d.id, d.by_id, d.path].filter((x): x is string => typeof x === 'string' && x !== ''));
  } catch {
    return [];
  }
}

export async function updateHost(ctx: ServiceContext, p: Principal, infraEnvId: string, hostId: string, body: Record<string, unknown>, requestId?: string): Promise<HostRow> {
  const { host: peek } = await loadHost(ctx, p, infraEnvId, hostId);
  return ctx.db.transaction(async (trx) => {
    // Lock order everywhere: cluster, then its hosts.
    if (peek.cluster_id) await ctx.repos.clusters.getForUpdate(peek.cluster_id, trx);
    const host = (await ctx.repos.hosts.getForUpdate({ infraEnvId, hostId }, trx))!;
    if (!HOST_EDITABLE.includes(host.status)) throw conflict(`host ${hostId} cannot be updated in status ${host.status}; allowed in ${HOST_EDITABLE.join(', ')}`);
    const patch: Partial<HostRow> = {};
    const doc = { ...host.doc };
    const fields: string[] = [];
    if (body.host_role !== undefined && body.host_role !== null) {
      if (body.host_role === 'bootstrap') throw badRequest('host_role: bootstrap is chosen by the service, not set by users', { field: 'host_role' });
      patch.role = body.host_role as string;
      fields.push('role');
    }
    if (body.host_name !== undefined && body.host_name !== null) {
      const problem = hostnameProblem(body.host_name as string);
      if (problem) throw badRequest(`host_name: ${problem}`, { field: 'host_name' });
      patch.requested_hostname = body.host_name as string;
      fields.push('hostname');
    }
    if (Array.isArray(body.disks_selected_config)) {
      const configs = body.disks_selected_config as DiskConfig[];
      const known = diskIds(host.inventory);
      for (const [i, d] of configs.entries()) {
        if (!known.includes(d.id)) throw badRequest(`disks_selected_config[${i}].id: no disk "${d.id}" in the host's inventory`, { field: `disks_selected_config[${i}].id` });
      }
      const install = configs.filter((d) => d.role === 'install');
      if (install.length > 1) throw badRequest('disks_selected_config: only one disk can have the install role', { field: 'disks_selected_config' });
      if (install[0]) {
        doc.installation_disk_id = install[0].id;
        doc.installation_disk_path = install[0].id;
        fields.push('installation disk');
      }
    }
    for (const k of ['machine_config_pool_name', 'node_labels', 'disks_skip_formatting'] as const) {
      if (body[k] !== undefined && body[k] !== null) {
        doc[k === 'disks_skip_formatting' ? 'skip_formatting_disks' : k] = k === 'machine_config_pool_name' ? body[k] : JSON.stringify(body[k]);
        fields.push(k);
      }
    }
    const row = await ctx.repos.hosts.update({ infraEnvId, hostId }, { ...patch, doc }, trx);
    await ctx.repos.events.add(
      { name: 'host_updated', hostId, infraEnvId, clusterId: row.cluster_id, props: { host_name: row.requested_hostname ?? hostnameFromInventory(row.inventory) ?? hostId, fields: fields.join(', ') || 'nothing' }, requestId },
      trx,
    );
    // Role and hostname feed validations of this host and its peers.
    await refreshForHost(ctx, trx, { infraEnvId, hostId }, requestId);
    return (await ctx.repos.hosts.get({ infraEnvId, hostId }, trx)) ?? row;
  });
}

/** POST …/hosts/{id}/actions/refresh: re-check now. */
export async function refreshHostNow(ctx: ServiceContext, p: Principal, infraEnvId: string, hostId: string, requestId?: string): Promise<HostRow> {
  const { host } = await loadHost(ctx, p, infraEnvId, hostId);
  return ctx.db.transaction(async (trx) => {
    if (host.cluster_id) await ctx.repos.clusters.getForUpdate(host.cluster_id, trx);
    await refreshForHost(ctx, trx, { infraEnvId, hostId }, requestId);
    return (await ctx.repos.hosts.get({ infraEnvId, hostId }, trx))!;
  });
}

export async function deleteHost(ctx: ServiceContext, p: Principal, infraEnvId: string, hostId: string, requestId?: string): Promise<void> {
  const { host } = await loadHost(ctx, p, infraEnvId, hostId);
  if (['installing', 'installing-in-progress', 'preparing-for-installation', 'preparing-successful'].includes(host.status)) {
    throw conflict(`host ${hostId} is ${host.status}; cancel the installation before deleting it`);
  }
  await ctx.db.transaction(async (trx) => {
    if (host.cluster_id) await ctx.repos.clusters.getForUpdate(host.cluster_id, trx);
    const n = await ctx.repos.hosts.delete({ infraEnvId, hostId }, trx);
    if (!n) throw notFound(`host ${hostId}`);
    // The remaining hosts lose a peer (hostname clash, majority group, counts).
    if (host.cluster_id) await refreshCluster(ctx, trx, host.cluster_id, requestId);
    await ctx.repos.events.add({ name: 'host_deregistered', hostId, infraEnvId, clusterId: host.cluster_id, props: { host_name: host.requested_hostname ?? hostnameFromInventory(host.inventory) ?? hostId }, requestId }, trx);
  });
}

/** Landfall extension: retry one failed host in place (the install workflow's retryHost update). */
export async function retryHostInstall(ctx: ServiceContext, p: Principal, infraEnvId: string, hostId: string): Promise<HostRow> {
  const { host } = await loadHost(ctx, p, infraEnvId, hostId);
  if (!host.cluster_id) throw conflict(`host ${hostId} is not part of a cluster`);
  const cluster = (await ctx.repos.clusters.get(host.cluster_id))!;
  try {
    // A day-2 host is followed by its own workflow, never by the cluster's install.
    if (isDay2Host(host)) await retryDay2HostInstall(ctx, host);
    else await requestHostRetry(ctx, cluster, hostId);
  } catch (err) {
    // Temporal away is an outage to wait out (503), not a refusal.
    if (unavailableDependency(err)) throw err;
    // The workflow's validator explains why (host not in error, install not running).
    const cause = (err as { cause?: { message?: string } }).cause?.message ?? (err as Error).message;
    throw conflict(`host ${hostId} cannot be retried: ${cause.split('\n')[0]}`);
  }
  return (await ctx.repos.hosts.get({ infraEnvId, hostId }))!;
}
