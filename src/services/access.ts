import type { Principal } from '../auth/principal';
import { canSeeCluster, canSeeInfraEnv, canSeeInfraEnvById } from '../auth/principal';
import { notFound } from '../errors';
import type { ClusterRow, HostRow, InfraEnvRow } from '../db/rows';
import type { ServiceContext } from './context';
import { readsAsPerson, settleClusters, settleHosts } from './refresh-queue';

/**
 * Loaders that return a resource only when the caller may see it. Everything
 * else is "not found", whether it does not exist or belongs to someone else.
 */
export async function loadCluster(ctx: ServiceContext, p: Principal, id: string): Promise<ClusterRow> {
  // A person reads the cluster as validated from every fact its agents were answered for (refresh-queue.ts).
  if (readsAsPerson(p)) await settleClusters(ctx, [id]);
  const c = await ctx.repos.clusters.get(id);
  if (!c || !(await canSeeCluster(p, c, () => ctx.repos.infraEnvs.idsBoundTo(id)))) throw notFound(`cluster ${id}`);
  return c;
}

export async function loadInfraEnv(ctx: ServiceContext, p: Principal, id: string): Promise<InfraEnvRow> {
  const ie = await ctx.repos.infraEnvs.get(id);
  if (!ie || !canSeeInfraEnv(p, ie)) throw notFound(`infra-env ${id}`);
  return ie;
}

/** loadInfraEnv with its cluster's doc and status, in the same read. */
export async function loadInfraEnvWithCluster(ctx: ServiceContext, p: Principal, id: string) {
  const ie = await ctx.repos.infraEnvs.getWithCluster(id);
  if (!ie || !canSeeInfraEnv(p, ie)) throw notFound(`infra-env ${id}`);
  return ie;
}

/**
 * The access check of loadInfraEnv without reading the row when the principal
 * alone decides it (an administrator, or the agent token of this infra-env).
 * The caller must then tell a missing infra-env from a missing child itself:
 * when its own query finds nothing, calling loadInfraEnv reports the former.
 */
export async function checkInfraEnvAccess(ctx: ServiceContext, p: Principal, id: string): Promise<void> {
  if (canSeeInfraEnvById(p, id) !== true) await loadInfraEnv(ctx, p, id);
}

export async function loadHost(ctx: ServiceContext, p: Principal, infraEnvId: string, hostId: string): Promise<{ infraEnv: InfraEnvRow; host: HostRow }> {
  const infraEnv = await loadInfraEnv(ctx, p, infraEnvId);
  const key = { infraEnvId, hostId };
  // A person reads the host as validated from every fact its agent was answered for (refresh-queue.ts):
  // settled (or a refresh in flight waited for) first, then read.
  if (readsAsPerson(p)) {
    const where = (await ctx.db('hosts').where({ infra_env_id: infraEnvId, id: hostId }).first('id', 'infra_env_id', 'cluster_id')) as { id: string; infra_env_id: string; cluster_id: string | null } | undefined;
    if (where) await settleHosts(ctx, [where]);
  }
  const host = await ctx.repos.hosts.get(key);
  if (!host) throw notFound(`host ${hostId}`);
  return { infraEnv, host };
}

/** Users list only their own; agents and image tokens list nothing through user endpoints. */
export function ownerFilter(p: Principal): { owner?: string } {
  return p.kind === 'admin' ? {} : { owner: p.kind === 'user' ? p.user : '\u0000none' };
}
