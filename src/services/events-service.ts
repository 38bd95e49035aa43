import type { Principal } from '../auth/principal';
import { badRequest, notFound } from '../errors';
import type { EventFilter } from '../db/events-repo';
import type { ServiceContext } from './context';
import { loadCluster, loadInfraEnv } from './access';
import { readsAsPerson, settleInfraEnv } from './refresh-queue';
import type { Severity } from '../domain/event-catalogue';
import { nulProblem } from '../domain/input-rules';

export async function listEvents(ctx: ServiceContext, p: Principal, f: EventFilter) {
  // Scope first: a caller sees events of resources they can see, and must name one unless admin.
  if (f.clusterId) await loadCluster(ctx, p, f.clusterId);
  if (f.infraEnvId) await loadInfraEnv(ctx, p, f.infraEnvId);
  // The validation events of facts agents were already answered for are there (refresh-queue.ts).
  if (f.infraEnvId && readsAsPerson(p)) await settleInfraEnv(ctx, f.infraEnvId);
  if (!f.clusterId && !f.infraEnvId && p.kind !== 'admin') throw badRequest('cluster_id or infra_env_id is required');
  return ctx.repos.events.list(f);
}

export async function triggerEvent(
  ctx: ServiceContext,
  p: Principal,
  e: { name?: string; cluster_id?: string; host_id?: string; infra_env_id?: string; severity: Severity; category?: string; message: string; event_time?: string; props?: string },
  requestId?: string,
): Promise<void> {
  if (!e.cluster_id && !e.infra_env_id) throw badRequest('an event needs cluster_id or infra_env_id');
  if (e.cluster_id) await loadCluster(ctx, p, e.cluster_id);
  if (e.infra_env_id) await loadInfraEnv(ctx, p, e.infra_env_id);
  // A host named in an event must belong to what the caller named (and so may see): no event about another tenant's host.
  if (e.host_id) {
    const q = ctx.db('hosts').where({ id: e.host_id });
    if (e.infra_env_id) q.where({ infra_env_id: e.infra_env_id });
    if (e.cluster_id) q.where({ cluster_id: e.cluster_id });
    if (!(await q.first('id'))) throw notFound(`host ${e.host_id} in the ${e.infra_env_id ? 'infra-env' : 'cluster'} the event names`);
  }
  let props: Record<string, unknown> | null = null;
  if (e.props) {
    try {
      props = JSON.parse(e.props) as Record<string, unknown>;
    } catch {
      throw badRequest('props: must be a JSON object encoded as a string', { field: 'props' });
    }
    const nul = nulProblem(props, 'props');
    if (nul) throw badRequest(nul.reason, { field: nul.field });
  }
  await ctx.repos.events.addRaw({
    name: e.name ?? 'user_event',
    severity: e.severity,
    category: e.category ?? 'user',
    message: e.message,
    event_time: e.event_time ? new Date(e.event_time) : ctx.now(),
    cluster_id: e.cluster_id ?? null,
    host_id: e.host_id ?? null,
    infra_env_id: e.infra_env_id ?? null,
    request_id: requestId ?? null,
    props,
  });
}
