/**
 * The one way a host or a cluster changes status. Each function looks the
 * event up in its aggregate's transition table, writes the row with
 * compare-and-swap on the status it was read with (`WHERE … AND status = ?`)
 * and records the status event in the caller's transaction. Nothing else in
 * the code base writes `status` or `status_info` (test/unit/status-writers.test.ts
 * greps for it), so the tables in src/domain/lifecycle are the machine that
 * runs, and the docs generated from them describe it.
 *
 * The database is the source of truth for status; the install workflow keeps
 * only a projection (the statuses these functions return to its activities
 * and the API's signals), never writes one of its own.
 */
import type { Knex } from 'knex';
import { AppError } from '../errors';
import type { ClusterRow, HostRow } from '../db/rows';
import { nextHostStatus, type HostEvent, type HostStatus, type HostTransition } from '../domain/lifecycle/host-state-machine';
import { nextClusterStatus, type ClusterEvent, type ClusterRule, type ClusterStatus } from '../domain/lifecycle/cluster-state-machine';
import { hostDisplayName } from '../api/assisted/presenters';
import type { ServiceContext } from './context';

import type { HostPatch } from '../db/hosts-repo';
import { eventRow, type NewEvent } from '../db/events-repo';
import { REFRESH_CHANNEL, refreshRequestRow, targetOfHost } from './refresh-queue';
import type { ClusterPatch } from '../db/clusters-repo';

/** Where a new host starts, and why: registration is the only way in. */
export const NEW_HOST_STATUS: { status: HostStatus; status_info: string } = { status: 'discovering', status_info: 'Waiting for host to send hardware details' };
/** Where a new cluster starts: nothing validated yet. */
export const NEW_CLUSTER_STATUS: { status: ClusterStatus; status_info: string } = { status: 'insufficient', status_info: 'Cluster is not ready for install' };

export interface HostMove {
  row: HostRow;
  /** The rule that fired, or undefined when the event changes nothing in this status. */
  transition?: HostTransition;
  /** The status itself changed (not only its info). */
  moved: boolean;
}

export interface ClusterMove {
  row: ClusterRow;
  transition?: { to: ClusterStatus; info: string; rule: ClusterRule };
  moved: boolean;
}

/** Another writer moved the row between the caller's read and this write: nothing was written. */
function lostRace(kind: string, id: string, from: string): AppError {
  return new AppError('conflict', `${kind} ${id} changed status while this request ran (it was ${from}); try again`, { status: from });
}

/** Inserts a registering host in its initial status and records the registration. */
export async function createHost(ctx: ServiceContext, trx: Knex.Transaction, row: Omit<Parameters<ServiceContext['repos']['hosts']['insert']>[0], 'status' | 'status_info'>, requestId?: string): Promise<HostRow> {
  const host = await ctx.repos.hosts.insert({ ...row, ...NEW_HOST_STATUS }, trx);
  await ctx.repos.events.add({ name: 'host_registration_succeeded', hostId: host.id, infraEnvId: host.infra_env_id, clusterId: host.cluster_id, props: { host_name: host.id }, requestId }, trx);
  return host;
}

/**
 * createHost as one statement of its own, for the common registration (a new
 * host into a cluster in one of `admitting`): the row in its initial status,
 * the same registration event, and its refresh request. Undefined when it
 * wrote nothing (see hosts.insertRegistered); the caller then registers
 * through createHost in a transaction.
 */
export async function createHostAtOnce(ctx: ServiceContext, row: Omit<Parameters<ServiceContext['repos']['hosts']['insert']>[0], 'status' | 'status_info'>, admitting: readonly string[], requestId?: string): Promise<HostRow | undefined> {
  const event = eventRow({ name: 'host_registration_succeeded', hostId: row.id, infraEnvId: row.infra_env_id, clusterId: row.cluster_id ?? null, props: { host_name: row.id }, requestId });
  const refresh = refreshRequestRow(targetOfHost({ id: row.id, infra_env_id: row.infra_env_id, cluster_id: row.cluster_id ?? null }));
  return ctx.repos.hosts.insertRegistered({ ...row, cluster_id: row.cluster_id ?? null, ...NEW_HOST_STATUS }, admitting, event, { ...refresh }, REFRESH_CHANNEL);
}

/** Inserts a cluster in its initial status (the first refresh, in the same transaction, decides the real one). */
export async function createCluster(ctx: ServiceContext, trx: Knex.Transaction, row: Omit<Parameters<ServiceContext['repos']['clusters']['insert']>[0], 'status' | 'status_info'>): Promise<ClusterRow> {
  return ctx.repos.clusters.insert({ ...row, ...NEW_CLUSTER_STATUS }, trx);
}

/**
 * Applies a host event. `host` is the row as the caller read it (locked, in
 * `trx`); `patch` is written in the same UPDATE whether or not the status
 * moves. An event with no rule in this status writes only the patch.
 */
export async function applyHostEvent(ctx: ServiceContext, trx: Knex.Transaction, host: HostRow, event: HostEvent, opts: { patch?: HostPatch; requestId?: string; hostName?: string } = {}): Promise<HostMove> {
  const move = await writeHostEvent(ctx, trx, host, event, opts.patch ?? {}, opts);
  if (!move) throw lostRace('host', host.id, host.status);
  return move;
}

/** A refresh's decision for one host: the event its validations make and what to write with it. */
export interface HostRefresh {
  host: HostRow;
  event: HostEvent;
  docFields: Record<string, unknown>;
  inventory?: string;
  suggested_role?: string;
  hostName?: string;
  /** More events of this host, recorded after its status event only if it is written (the refresh's validation events). */
  events?: NewEvent[];
}

/**
 * A refresh's writes of its hosts (refresh-service.ts reads hosts without
 * locking them, so a poll or a reply never waits for a refresh's computing):
 * all in one statement at the end of the refresh (compareAndSetRefreshes), so
 * the rows are locked only from there to its commit. Each is applyHostEvent's
 * compare-and-swap, also on the facts version the refresh computed from, the
 * doc's fields merged (`doc || fields`) instead of the doc replaced, so an
 * agent's fact stored meanwhile is never lost. Per refresh, in its order: the
 * move, or undefined when the host moved or got new facts since it was read
 * (those facts' own refresh request covers it). The status events of the
 * hosts that moved, and each host's own events, are recorded by that same
 * statement, for the hosts it wrote.
 */
export async function applyHostRefreshes(ctx: ServiceContext, trx: Knex.Transaction, refreshes: HostRefresh[], opts: { requestId?: string } = {}): Promise<Array<HostMove | undefined>> {
  const plans = refreshes.map((r) => {
    const t = nextHostStatus(r.host.status, r.event);
    const statusWrite = t !== undefined && (t.to !== r.host.status || t.info !== r.host.status_info);
    // The doc as it will be once written (no large columns come back: they are what the caller read, with what it wrote).
    const doc = { ...(r.host.doc as Record<string, unknown>), ...r.docFields };
    return { r, t, statusWrite, doc };
  });
  // Every event a write would record, in order (each host's status event, then its own), sent with the writes:
  // the statement records those of the hosts it wrote.
  const events = plans.flatMap(({ r, t, doc }) => {
    const moved = t !== undefined && t.to !== r.host.status;
    const asWritten = { ...r.host, doc } as HostRow;
    return [...(moved ? [hostStatusEvent(r.host, asWritten, t, r.hostName, opts.requestId)] : []), ...(r.events ?? [])].map(eventRow);
  });
  const written = await ctx.repos.hosts.compareAndSetRefreshes(
    plans.map(({ r, t, statusWrite }) => ({
      key: { infraEnvId: r.host.infra_env_id, hostId: r.host.id },
      fromStatus: r.host.status,
      factsVersion: String(r.host.facts_version),
      ...(t && statusWrite ? { status: { status: t.to, status_info: t.info } } : {}),
      ...(r.suggested_role !== undefined ? { suggestedRole: r.suggested_role } : {}),
      ...(r.inventory !== undefined ? { inventory: r.inventory } : {}),
      docFields: r.docFields,
    })),
    trx,
    events,
  );
  const byKey = new Map(written.map((w) => [`${w.infra_env_id}/${w.id}`, w]));
  return plans.map(({ r, t, doc }): HostMove | undefined => {
    const w = byKey.get(`${r.host.infra_env_id}/${r.host.id}`);
    if (!w) return undefined;
    const row: HostRow = { ...w, inventory: r.inventory !== undefined ? r.inventory : r.host.inventory, doc } as HostRow;
    const moved = t !== undefined && t.to !== r.host.status;
    if (moved) ctx.statusMoved?.({ aggregate: 'host', id: r.host.id, from: r.host.status, rule: t.rule });
    return { row, transition: t, moved };
  });
}

function hostStatusEvent(before: HostRow, row: HostRow, t: HostTransition, hostName: string | undefined, requestId: string | undefined): NewEvent {
  return { name: 'host_status_updated', hostId: before.id, infraEnvId: before.infra_env_id, clusterId: row.cluster_id, props: { host_name: hostName ?? hostDisplayName(row), src_status: before.status, new_status: t.to, info: t.info }, requestId };
}

async function writeHostEvent(ctx: ServiceContext, trx: Knex.Transaction, host: HostRow, event: HostEvent, patch: HostPatch, opts: { requestId?: string; hostName?: string }): Promise<HostMove | undefined> {
  const t = nextHostStatus(host.status, event);
  const statusWrite = t !== undefined && (t.to !== host.status || t.info !== host.status_info);
  if (!statusWrite && Object.keys(patch).length === 0) return { row: host, transition: t, moved: false };
  const row = await ctx.repos.hosts.compareAndSet({ infraEnvId: host.infra_env_id, hostId: host.id }, host.status, patch, t && statusWrite ? { status: t.to, status_info: t.info } : undefined, trx);
  if (!row) return undefined;
  const moved = t !== undefined && t.to !== host.status;
  if (moved) {
    ctx.statusMoved?.({ aggregate: 'host', id: host.id, from: host.status, rule: t.rule });
    await ctx.repos.events.add(hostStatusEvent(host, row, t, opts.hostName, opts.requestId), trx);
  }
  return { row, transition: t, moved };
}

/** Applies a cluster event: the cluster twin of applyHostEvent. */
export async function applyClusterEvent(ctx: ServiceContext, trx: Knex.Transaction, cluster: ClusterRow, event: ClusterEvent, opts: { patch?: ClusterPatch; requestId?: string } = {}): Promise<ClusterMove> {
  const t = nextClusterStatus(cluster.status, event);
  const statusWrite = t !== undefined && (t.to !== cluster.status || t.info !== cluster.status_info);
  const patch = opts.patch ?? {};
  if (!statusWrite && Object.keys(patch).length === 0) return { row: cluster, transition: t, moved: false };
  const row = await ctx.repos.clusters.compareAndSet(cluster.id, cluster.status, patch, t && statusWrite ? { status: t.to, status_info: t.info } : undefined, trx);
  if (!row) throw lostRace('cluster', cluster.id, cluster.status);
  const moved = t !== undefined && t.to !== cluster.status;
  if (moved) ctx.statusMoved?.({ aggregate: 'cluster', id: cluster.id, from: cluster.status, rule: t.rule });
  if (moved) await ctx.repos.events.add({ name: 'cluster_status_updated', clusterId: cluster.id, props: { new_status: t.to }, requestId: opts.requestId }, trx);
  return { row, transition: t, moved };
}
