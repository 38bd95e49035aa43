/**
 * Day 2: growing a cluster that already runs. A cluster becomes an
 * AddHostsCluster in one of two ways, as in assisted-service: an installed
 * cluster is opened with allow-add-workers, or an existing one is imported.
 * Hosts booted from an infra-env bound to it register as
 * AddToExistingClusterHost workers, are validated against the running
 * cluster (host-validations.ts), and each is installed on its own by the
 * user: its own durable workflow (workflows/install-day2-host.ts) mints its
 * join credential, hands it the install step and follows it until the
 * cluster's controller reports the node. Nothing here touches the cluster's
 * other hosts.
 */
import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal';
import { ownerOf } from '../auth/principal';
import { AppError, badRequest, conflict } from '../errors';
import type { ClusterRow, HostRow } from '../db/rows';
import type { ServiceContext } from './context';
import { loadCluster, loadHost } from './access';
import { clusterNameProblem } from '../domain/input-rules';
import { nextHostStatus } from '../domain/lifecycle/host-state-machine';
import { applyClusterEvent, applyHostEvent, createCluster } from './status-writer';
import { withBuiltinOperators } from '../domain/lifecycle/components';
import { hostDisplayName } from '../api/assisted/presenters';
import { refreshForHost } from './refresh-service';
import { TASK_QUEUE, SEARCH_ATTRIBUTES, workflowIds } from '../temporal/names';
import { WorkflowNotFoundError } from '@temporalio/client';
import { day2HostReported, day2HostReset, retryDay2Host, type Day2HostReport, type Day2InstallInput } from '../../workflows/install-day2-host.messages';
import type { installDay2HostWorkflow } from '../../workflows/install-day2-host';

type Json = Record<string, unknown>;

export const ADD_HOSTS_CLUSTER = 'AddHostsCluster';
export const DAY2_HOST_KIND = 'AddToExistingClusterHost';

export const isDay2Cluster = (c: Pick<ClusterRow, 'doc'> | undefined): boolean => (c?.doc as Json | undefined)?.kind === ADD_HOSTS_CLUSTER;
export const isDay2Host = (h: Pick<HostRow, 'doc'>): boolean => (h.doc as Json).kind === DAY2_HOST_KIND;

/** "api.<name>.<base domain>" → its base domain and cluster name (assisted-service derives both from the API name). */
export function importedNames(apiDnsName: string): { baseDomain?: string; name?: string } {
  if (/^[\d.]+$/.test(apiDnsName) || apiDnsName.includes(':')) return {};
  const parts = apiDnsName.split('.');
  if (parts.length < 3 || parts[0] !== 'api') return {};
  return { name: parts[1], baseDomain: parts.slice(2).join('.') };
}

/** POST /v2/clusters/import: an existing cluster, to add hosts to (assisted-service's V2ImportCluster). */
export async function importCluster(ctx: ServiceContext, p: Principal, body: Json, requestId?: string): Promise<ClusterRow> {
  const apiDnsName = String(body.api_vip_dnsname ?? '').trim();
  if (!apiDnsName) throw badRequest('api_vip_dnsname: the name or address the cluster API answers at is required', { field: 'api_vip_dnsname' });
  const derived = importedNames(apiDnsName);
  // As assisted-service: the name in the API domain wins (DNS validations depend on it).
  const name = derived.name ?? String(body.name ?? '');
  const nameProblem = clusterNameProblem(name);
  if (nameProblem) throw badRequest(`name: ${nameProblem}`, { field: 'name' });
  const requested = body.openshift_version as string | undefined;
  // Own keys only: "constructor" is no release.
  if (requested !== undefined && !Object.hasOwn(ctx.releases, requested)) throw badRequest(`openshift_version: ${requested} is not a release this service has (${Object.keys(ctx.releases).join(', ')})`, { field: 'openshift_version' });
  const version = requested ?? Object.entries(ctx.releases).find(([, r]) => r.default)?.[0] ?? Object.keys(ctx.releases)[0]!;
  const id = randomUUID();
  return ctx.db.transaction(async (trx) => {
    const created = await createCluster(ctx, trx, {
        id,
        owner: ownerOf(p),
        name,
        openshift_version: version,
        pull_secret: null,
        doc: {
          kind: ADD_HOSTS_CLUSTER,
          imported: true,
          api_vip_dnsname: apiDnsName,
          ...(derived.baseDomain ? { base_dns_domain: derived.baseDomain } : {}),
          ...(body.openshift_cluster_id ? { openshift_cluster_id: body.openshift_cluster_id } : {}),
          platform: { type: 'baremetal' },
          progress: { total_percentage: 0 },
          validations_info: '{}',
          monitored_operators: withBuiltinOperators(id, []),
        },
      });
    await ctx.repos.events.add({ name: 'cluster_registration_succeeded', clusterId: id, props: { cluster_name: name }, requestId }, trx);
    // Straight on into adding-hosts, as assisted-service registers an imported cluster (RegisterAddHostsCluster).
    const row = (await applyClusterEvent(ctx, trx, created, { type: 'ClusterImported' }, { requestId })).row;
    await ctx.repos.events.add({ name: 'cluster_imported', clusterId: id, props: { cluster_name: name, api_vip_dnsname: apiDnsName }, requestId }, trx);
    return row;
  });
}

/** POST /v2/clusters/{id}/actions/allow-add-workers: installed → adding-hosts, kind AddHostsCluster (400 otherwise, as assisted-service). */
export async function allowAddWorkers(ctx: ServiceContext, p: Principal, id: string, requestId?: string): Promise<ClusterRow> {
  await loadCluster(ctx, p, id);
  return ctx.db.transaction(async (trx) => {
    const c = (await ctx.repos.clusters.getForUpdate(id, trx))!;
    const kind = ((c.doc as Json).kind as string | undefined) ?? 'Cluster';
    if (c.status !== 'installed') throw badRequest(`cannot transform cluster ${id} to day2. Expected cluster status: installed, but cluster status is: ${c.status}`);
    if (kind !== 'Cluster') throw badRequest(`cannot transform cluster ${id} to day2. Expected cluster kind: Cluster, but cluster kind is: ${kind}`);
    const d = c.doc as Json;
    const apiDnsName = d.base_dns_domain ? `api.${c.name}.${String(d.base_dns_domain)}` : ((d.api_vips as Array<{ ip: string }> | undefined) ?? [])[0]?.ip;
    const { row } = await applyClusterEvent(ctx, trx, c, { type: 'AddHostsAllowed' }, { patch: { doc: { ...d, kind: ADD_HOSTS_CLUSTER, ...(apiDnsName ? { api_vip_dnsname: apiDnsName } : {}) } }, requestId });
    await ctx.repos.events.add({ name: 'cluster_add_hosts_allowed', clusterId: id, props: { cluster_name: c.name }, requestId }, trx);
    return row;
  });
}

/** Which workflow follows a day-2 host's current install: one per host and attempt. */
export function day2WorkflowId(h: Pick<HostRow, 'id' | 'doc'>): string | undefined {
  const attempt = Number((h.doc as Json).day2_attempt ?? 0);
  return attempt > 0 ? workflowIds.installDay2Host(h.id, attempt) : undefined;
}

/**
 * POST /v2/infra-envs/{ie}/hosts/{id}/actions/install (assisted-service's
 * v2InstallHost): a known day-2 host starts installing; 409 for a day-1 host
 * or a host that is not known (after a fresh refresh).
 */
export async function installDay2Host(ctx: ServiceContext, p: Principal, infraEnvId: string, hostId: string, requestId?: string): Promise<HostRow> {
  const { host: peek } = await loadHost(ctx, p, infraEnvId, hostId);
  if (!peek.cluster_id) throw conflict(`host ${hostId} is not bound to a cluster`);
  if (!isDay2Host(peek)) throw conflict('method only allowed when adding hosts to an existing cluster');
  const key = { infraEnvId, hostId };
  const { row, cluster } = await ctx.db.transaction(async (trx) => {
    const cluster = (await ctx.repos.clusters.getForUpdate(peek.cluster_id!, trx))!;
    const before = (await ctx.repos.hosts.getForUpdate(key, trx))!;
    if (before.status !== 'known') throw conflict(`cannot install host in state ${before.status}`);
    // Decided on fresh facts, as assisted-service refreshes the host before it installs it.
    await refreshForHost(ctx, trx, key, requestId);
    const h = (await ctx.repos.hosts.getForUpdate(key, trx))!;
    if (h.status !== 'known') throw conflict(`cannot install host in state ${h.status} after refresh`);
    const attempt = Number((h.doc as Json).day2_attempt ?? 0) + 1;
    const { row: moved } = await applyHostEvent(ctx, trx, h, { type: 'Day2InstallRequested' }, { patch: { role: 'worker', doc: { ...(h.doc as Json), day2_attempt: attempt, progress: {} } }, requestId });
    await ctx.repos.events.add({ name: 'host_day2_install_started', hostId, infraEnvId, clusterId: cluster.id, props: { host_name: hostDisplayName(h), cluster_name: cluster.name, attempt }, requestId }, trx);
    return { row: moved, cluster };
  });
  try {
    await startDay2Workflow(ctx, cluster, row);
  } catch (err) {
    // Without its workflow the host would wait in installing forever: put it back and say why.
    await ctx.db.transaction(async (trx) => {
      const h = await ctx.repos.hosts.getForUpdate(key, trx);
      if (h) await applyHostEvent(ctx, trx, h, { type: 'Day2InstallAborted' }, { requestId });
    });
    throw new AppError('dependency_unavailable', `the install could not start: Temporal is unavailable (${(err as Error).message.split('\n')[0]})`);
  }
  return row;
}

/** Starts the workflow of a day-2 host's current attempt (day2_attempt), with the id that attempt always has. */
export async function startDay2Workflow(ctx: ServiceContext, cluster: Pick<ClusterRow, 'id' | 'name' | 'openshift_version'>, host: Pick<HostRow, 'id' | 'infra_env_id' | 'doc'>): Promise<void> {
  const attempt = Number((host.doc as Json).day2_attempt);
  await ctx.temporal.workflow.start<typeof installDay2HostWorkflow>('installDay2HostWorkflow', {
    workflowId: workflowIds.installDay2Host(host.id, attempt),
    taskQueue: TASK_QUEUE.install,
    args: [{ clusterId: cluster.id, infraEnvId: host.infra_env_id, hostId: host.id, attempt, timeouts: ctx.installTimeouts } satisfies Day2InstallInput],
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.clusterId, value: cluster.id },
      { key: SEARCH_ATTRIBUTES.clusterName, value: cluster.name },
      { key: SEARCH_ATTRIBUTES.installStatus, value: 'installing' },
      { key: SEARCH_ATTRIBUTES.kubernetesRelease, value: cluster.openshift_version },
    ],
    memo: { clusterName: cluster.name, hostId: host.id, attempt },
  });
}

/** POST /v2/infra-envs/{ie}/hosts/{id}/actions/reset (assisted-service's v2ResetHost, day-2 hosts only). */
export async function resetDay2Host(ctx: ServiceContext, p: Principal, infraEnvId: string, hostId: string, requestId?: string): Promise<HostRow> {
  const { host: peek } = await loadHost(ctx, p, infraEnvId, hostId);
  if (!isDay2Host(peek) || !peek.cluster_id) throw conflict(`host ${hostId} is not a host added to an existing cluster: reset the cluster instead`);
  const key = { infraEnvId, hostId };
  const row = await ctx.db.transaction(async (trx) => {
    await ctx.repos.clusters.getForUpdate(peek.cluster_id!, trx);
    const h = (await ctx.repos.hosts.getForUpdate(key, trx))!;
    if (!nextHostStatus(h.status, { type: 'ResetInstallation' })) throw conflict(`host ${hostId} cannot be reset in status ${h.status}`);
    const { row: moved } = await applyHostEvent(ctx, trx, h, { type: 'ResetInstallation' }, { requestId });
    await ctx.repos.events.add({ name: 'host_day2_install_reset', hostId, infraEnvId, clusterId: h.cluster_id, props: { host_name: hostDisplayName(h) }, requestId }, trx);
    return moved;
  });
  await signalDay2(ctx, row, (handle) => handle.signal(day2HostReset));
  return row;
}

/**
 * Landfall's retry-install for a day-2 host: the retryDay2Host update of its
 * workflow; when that workflow is gone or ended (the host monitor failed the
 * host for it, day2-watch.ts), a new attempt with a workflow of its own.
 */
export async function retryDay2HostInstall(ctx: ServiceContext, host: HostRow, requestId?: string): Promise<void> {
  const id = day2WorkflowId(host);
  if (!id) throw conflict(`host ${host.id} has not been installed yet: install it (actions/install)`);
  if (await day2WorkflowRunning(ctx, id)) {
    await ctx.temporal.workflow.getHandle(id).executeUpdate(retryDay2Host, { args: [{ hostId: host.id }] });
    return;
  }
  const key = { infraEnvId: host.infra_env_id, hostId: host.id };
  const { row, cluster } = await ctx.db.transaction(async (trx) => {
    const cluster = (await ctx.repos.clusters.getForUpdate(host.cluster_id!, trx))!;
    const h = (await ctx.repos.hosts.getForUpdate(key, trx))!;
    if (h.status !== 'error') throw conflict(`host ${host.id} is ${h.status}; only a host in error can be retried`);
    const attempt = Number((h.doc as Json).day2_attempt ?? 0) + 1;
    const { row } = await applyHostEvent(ctx, trx, h, { type: 'RetryRequested' }, { patch: { doc: { ...(h.doc as Json), day2_attempt: attempt, progress: {} } }, requestId });
    await ctx.repos.events.add({ name: 'host_day2_install_started', hostId: h.id, infraEnvId: h.infra_env_id, clusterId: cluster.id, props: { host_name: hostDisplayName(h), cluster_name: cluster.name, attempt }, requestId }, trx);
    return { row, cluster };
  });
  // Should Temporal fail this start, the host monitor starts it (day2-watch.ts): the host is installing by then.
  await startDay2Workflow(ctx, cluster, row);
}

/** Whether a day-2 workflow still runs (and so can take an update or a signal). */
export async function day2WorkflowRunning(ctx: ServiceContext, workflowId: string): Promise<boolean> {
  try {
    return (await ctx.temporal.workflow.getHandle(workflowId).describe()).status.name === 'RUNNING';
  } catch (err) {
    if (err instanceof WorkflowNotFoundError || (err as Error).name === 'WorkflowNotFoundError') return false;
    throw err;
  }
}

type Handle = ReturnType<ServiceContext['temporal']['workflow']['getHandle']>;

async function signalDay2(ctx: ServiceContext, host: Pick<HostRow, 'id' | 'doc'>, send: (h: Handle) => Promise<void>): Promise<void> {
  const id = day2WorkflowId(host);
  if (!id) return;
  try {
    await send(ctx.temporal.workflow.getHandle(id));
  } catch (err) {
    // A finished workflow (an old attempt) is not the reporter's problem: the report is stored either way.
    if (!(err instanceof WorkflowNotFoundError) && (err as Error).name !== 'WorkflowNotFoundError') throw err;
  }
}

/** A day-2 host's status or stage changed: its own workflow hears of it (never the cluster's). */
export async function signalDay2HostReport(ctx: ServiceContext, infraEnvId: string, report: Day2HostReport): Promise<void> {
  const h = await ctx.repos.hosts.get({ infraEnvId, hostId: report.hostId });
  if (h) await signalDay2(ctx, h, (handle) => handle.signal(day2HostReported, report));
}
