/**
 * Log collection: hosts and the in-cluster controller upload tar.gz archives
 * into object storage (one object per source, the latest upload wins); the
 * service asks a host in error or cancelled for its logs once per failure;
 * `logs_info` walks requested → collecting → completed, or timeout when the
 * logs do not arrive in time; downloads bundle what was asked for into one
 * tar.gz, streamed with constant memory however many hosts there are.
 */
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { pack as tarPack } from 'tar-stream';
import type { Principal } from '../auth/principal';
import { AppError, badRequest, conflict, notFound } from '../errors';
import type { HostRow } from '../db/rows';
import { hostDisplayName } from '../api/assisted/presenters';
import type { ServiceContext } from './context';
import { loadCluster, loadHost } from './access';

type Json = Record<string, unknown>;

export interface LogsSettings {
  /** Largest accepted upload (LOGS_UPLOAD_MAX_BYTES). */
  uploadMaxBytes: number;
  /** requested but the agent did not start collecting (AS: 2 min). */
  pendingTimeoutMs: number;
  /** requested or collecting but nothing uploaded (AS: 10 min). */
  collectionTimeoutMs: number;
}

export const DEFAULT_LOGS_SETTINGS: LogsSettings = { uploadMaxBytes: 100 * 1024 * 1024, pendingTimeoutMs: 2 * 60_000, collectionTimeoutMs: 10 * 60_000 };

export const logsSettings = (ctx: ServiceContext): LogsSettings => ctx.logs ?? DEFAULT_LOGS_SETTINGS;

const hostKey = (clusterId: string, hostId: string) => `clusters/${clusterId}/logs/host/${hostId}.tar.gz`;
const controllerKey = (clusterId: string) => `clusters/${clusterId}/logs/controller/controller.tar.gz`;

/** Passes bytes through, refusing a body that is not gzip or is larger than the limit (the store then drops what it wrote). */
class UploadGuard extends Transform {
  private seen = 0;
  constructor(private readonly maxBytes: number) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    if (this.seen === 0 && chunk.length >= 2 && (chunk[0] !== 0x1f || chunk[1] !== 0x8b)) return done(badRequest('upfile: the logs must be a gzip-compressed tar archive (.tar.gz)', { field: 'upfile' }));
    this.seen += chunk.length;
    if (this.seen > this.maxBytes) return done(new AppError('payload_too_large', `upfile: the logs archive is larger than ${this.maxBytes} bytes`, { field: 'upfile', max_bytes: this.maxBytes }));
    done(null, chunk);
  }
  override _flush(done: TransformCallback): void {
    done(this.seen === 0 ? badRequest('upfile: the logs archive is empty', { field: 'upfile' }) : null);
  }
}

/** Checks who may upload what before a byte is read: a host of another cluster is not found. */
export async function checkUpload(ctx: ServiceContext, p: Principal, clusterId: string, q: { logs_type: string; host_id?: string; infra_env_id?: string }): Promise<void> {
  await loadCluster(ctx, p, clusterId);
  if (q.logs_type !== 'host') return;
  if (!q.host_id || !q.infra_env_id) throw badRequest('host_id and infra_env_id are required for host logs');
  const { host } = await loadHost(ctx, p, q.infra_env_id, q.host_id);
  if (host.cluster_id !== clusterId) throw notFound(`host ${q.host_id}`);
}

/** Stores the archive, then records it: the database changes only once the whole archive is stored. */
export async function uploadLogs(ctx: ServiceContext, p: Principal, clusterId: string, q: { logs_type: string; host_id?: string; infra_env_id?: string }, body: Readable, requestId?: string): Promise<void> {
  await checkUpload(ctx, p, clusterId, q);
  const key = q.logs_type === 'host' ? hostKey(clusterId, q.host_id!) : controllerKey(clusterId);
  const guard = new UploadGuard(logsSettings(ctx).uploadMaxBytes);
  // The guard's error is the one to report; the store sees only "stream failed".
  let failure: unknown;
  guard.on('error', (err) => (failure ??= err));
  body.on('error', (err) => guard.destroy(err));
  try {
    await ctx.store.put(key, body.pipe(guard), 'application/gzip');
  } catch (err) {
    throw failure ?? err;
  }
  const now = ctx.now().toISOString();
  await ctx.db.transaction(async (trx) => {
    const cluster = (await ctx.repos.clusters.getForUpdate(clusterId, trx))!;
    if (q.logs_type === 'host') {
      const host = (await ctx.repos.hosts.getForUpdate({ infraEnvId: q.infra_env_id!, hostId: q.host_id! }, trx))!;
      const doc = host.doc as Json;
      await ctx.repos.hosts.update({ infraEnvId: host.infra_env_id, hostId: host.id }, { doc: { ...doc, logs_info: 'completed', logs_collected_at: now, logs_started_at: doc.logs_started_at ?? now } }, trx);
      await ctx.repos.events.add({ name: 'host_logs_uploaded', clusterId, hostId: host.id, infraEnvId: host.infra_env_id, props: { host_name: hostDisplayName(host) }, requestId }, trx);
    } else {
      const doc = cluster.doc as Json;
      await ctx.repos.clusters.update(clusterId, { doc: { ...doc, logs_info: 'completed', controller_logs_collected_at: now, controller_logs_started_at: doc.controller_logs_started_at ?? now } }, trx);
      await ctx.repos.events.add({ name: 'controller_logs_uploaded', clusterId, props: { cluster_name: cluster.name }, requestId }, trx);
    }
  });
}

export interface LogsDownload {
  fileName: string;
  stream: Readable;
}

/**
 * One host's archive is sent as stored; anything else is a tar.gz of the
 * stored archives, one entry each (`<hostname>_<host id>.tar.gz`,
 * `controller.tar.gz`), read one at a time from the store.
 */
export async function downloadLogs(ctx: ServiceContext, p: Principal, clusterId: string, logsType: string, hostId?: string): Promise<LogsDownload> {
  const c = await loadCluster(ctx, p, clusterId);
  const prefix = `clusters/${clusterId}/logs/`;
  let objects = await ctx.store.list(prefix);
  if (logsType === 'host' || hostId) objects = objects.filter((o) => o.key.startsWith(`${prefix}host/`) && (!hostId || o.key === hostKey(clusterId, hostId)));
  if (logsType === 'controller') objects = objects.filter((o) => o.key.startsWith(`${prefix}controller/`));
  const none = () => conflict(`no ${hostId ? `logs of host ${hostId}` : `${logsType} logs`} have been uploaded for cluster ${clusterId} yet`);
  if (!objects.length) throw none();
  const fileName = `${c.name}_${clusterId}_${logsType}.tar.gz`;
  if (objects.length === 1 && logsType !== 'all') {
    const opened = await ctx.store.open(objects[0]!.key);
    if (!opened) throw none(); // removed since the listing (a reset)
    return { fileName, stream: opened.stream };
  }

  const hosts = new Map((await ctx.db<HostRow>('hosts').where({ cluster_id: clusterId }).select('id', 'requested_hostname', 'inventory')).map((h) => [h.id, h]));
  const entryName = (key: string) => {
    if (key.startsWith(`${prefix}controller/`)) return 'controller.tar.gz';
    const id = key.slice(`${prefix}host/`.length).replace(/\.tar\.gz$/, '');
    const h = hosts.get(id);
    const name = h ? hostDisplayName(h as HostRow) : 'deleted-host';
    return `${name.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 50)}_${id}.tar.gz`;
  };
  const archive = tarPack();
  const gzip = createGzip();
  // Entries are written one after another; each object is streamed from the store into its entry.
  void (async () => {
    for (const o of objects) {
      // The size is the one of the version being read, not the listed one: a host may upload again meanwhile.
      const opened = await ctx.store.open(o.key);
      if (!opened) continue; // removed since the listing
      const entry = archive.entry({ name: entryName(o.key), size: opened.sizeBytes, mtime: o.modifiedAt, mode: 0o644 });
      await pipeline(opened.stream, entry);
    }
    archive.finalize();
  })().catch((err: unknown) => archive.destroy(err as Error));
  archive.on('error', (err) => gzip.destroy(err));
  // tar-stream's pipe destroys the archive when gzip closes early (a client that went away): the store read stops with it.
  return { fileName, stream: archive.pipe(gzip) };
}

const LOGS_STATES = ['requested', 'collecting', 'completed', 'timeout', ''];

export async function updateHostLogsProgress(ctx: ServiceContext, p: Principal, infraEnvId: string, hostId: string, logsState: string): Promise<void> {
  if (!LOGS_STATES.includes(logsState)) throw badRequest(`logs_state: must be one of ${LOGS_STATES.filter(Boolean).join(', ')} or ""`, { field: 'logs_state' });
  await loadHost(ctx, p, infraEnvId, hostId);
  const now = ctx.now().toISOString();
  // Read and written under the row's lock: the agent's progress reports write the same doc meanwhile.
  await ctx.db.transaction(async (trx) => {
    const host = (await ctx.repos.hosts.getForUpdate({ infraEnvId, hostId }, trx))!;
    const doc = { ...host.doc, logs_info: logsState, ...(logsState === 'requested' ? { logs_started_at: now } : {}), ...(logsState === 'completed' ? { logs_collected_at: now } : {}) };
    await ctx.repos.hosts.update({ infraEnvId, hostId }, { doc }, trx);
  });
}

export async function updateClusterLogsProgress(ctx: ServiceContext, p: Principal, clusterId: string, logsState: string): Promise<void> {
  if (!LOGS_STATES.includes(logsState)) throw badRequest(`logs_state: must be one of ${LOGS_STATES.filter(Boolean).join(', ')} or ""`, { field: 'logs_state' });
  await loadCluster(ctx, p, clusterId);
  const now = ctx.now().toISOString();
  // Under the row's lock, as every doc write: the install workflow writes the same doc meanwhile.
  await ctx.db.transaction(async (trx) => {
    const c = (await ctx.repos.clusters.getForUpdate(clusterId, trx))!;
    await ctx.repos.clusters.update(clusterId, { doc: { ...c.doc, logs_info: logsState, ...(logsState === 'requested' ? { controller_logs_started_at: now } : {}), ...(logsState === 'completed' ? { controller_logs_collected_at: now } : {}) } }, trx);
  });
}

/** Host statuses in which the service asks for the host's logs (reference §host steps). */
export const LOGS_WANTED_STATUSES = ['error', 'cancelled'];

/**
 * The logs-gather step (and stop-installation with it) for a host in error or
 * cancelled, at most once each time the host enters that status: not when
 * logs were requested or uploaded since (the agent gathers its own when its
 * install step fails). Marks logs `requested` in the same transaction, which
 * is what keeps the next poll from asking again.
 */
export async function logsGatherSteps(ctx: ServiceContext, key: { infraEnvId: string; hostId: string }, stepId: (type: string) => string): Promise<Array<{ step_type: string; step_id: string; args: string[] }>> {
  const peek = await ctx.repos.hosts.get(key);
  if (!peek?.cluster_id || !LOGS_WANTED_STATUSES.includes(peek.status)) return [];
  const handledSince = (h: HostRow) => {
    const d = h.doc as Json;
    const since = new Date(h.status_updated_at).getTime();
    return [d.logs_started_at, d.logs_collected_at].some((at) => typeof at === 'string' && Date.parse(at) >= since);
  };
  if (handledSince(peek)) return [];
  return ctx.db.transaction(async (trx) => {
    // Lock order everywhere: cluster, then its hosts.
    const cluster = await ctx.repos.clusters.getForUpdate(peek.cluster_id!, trx);
    const host = await ctx.repos.hosts.getForUpdate(key, trx);
    if (!cluster || !host || !LOGS_WANTED_STATUSES.includes(host.status) || handledSince(host)) return [];
    const doc = host.doc as Json;
    // hosts.update leaves status_updated_at alone when the status is not part of the patch.
    await ctx.repos.hosts.update(key, { doc: { ...doc, logs_info: 'requested', logs_started_at: ctx.now().toISOString() } }, trx);
    await ctx.repos.events.add({ name: 'host_logs_requested', clusterId: cluster.id, hostId: host.id, infraEnvId: host.infra_env_id, props: { host_name: hostDisplayName(host), host_status: host.status } }, trx);
    const masters = await trx<HostRow>('hosts').where({ cluster_id: cluster.id, role: 'master' }).select('inventory');
    const masterIps = masters.flatMap((m) => {
      try {
        const inv = JSON.parse(m.inventory ?? '{}') as { interfaces?: Array<{ ipv4_addresses?: string[] }> };
        return (inv.interfaces ?? []).flatMap((i) => (i.ipv4_addresses ?? []).map((a) => a.split('/')[0]!)).slice(0, 1);
      } catch {
        return [];
      }
    });
    const args = { cluster_id: cluster.id, infra_env_id: host.infra_env_id, host_id: host.id, bootstrap: host.bootstrap, installer_gather: true, master_ips: masterIps };
    return [
      { step_type: 'stop-installation', step_id: stepId('stop-installation'), args: [] },
      { step_type: 'logs-gather', step_id: stepId('logs-gather'), args: [JSON.stringify(args)] },
    ];
  });
}

/**
 * Requested or collecting for too long: the logs are not coming. Run by the
 * host monitor; idempotent (a host already in timeout is not touched again).
 */
export async function expireLogCollection(ctx: ServiceContext): Promise<{ hosts: number; clusters: number }> {
  const s = logsSettings(ctx);
  const now = ctx.now().getTime();
  const late = (state: unknown, startedAt: unknown) => {
    if (state !== 'requested' && state !== 'collecting') return false;
    const age = now - Date.parse(String(startedAt ?? ''));
    return Number.isFinite(age) && (age > s.collectionTimeoutMs || (state === 'requested' && age > s.pendingTimeoutMs));
  };
  let hosts = 0;
  const candidates = await ctx.db<HostRow>('hosts').whereRaw("doc->>'logs_info' in ('requested', 'collecting')").select('id', 'infra_env_id', 'cluster_id');
  for (const c of candidates) {
    await ctx.db.transaction(async (trx) => {
      if (c.cluster_id) await ctx.repos.clusters.getForUpdate(c.cluster_id, trx);
      const h = await ctx.repos.hosts.getForUpdate({ infraEnvId: c.infra_env_id, hostId: c.id }, trx);
      const doc = (h?.doc ?? {}) as Json;
      if (!h || !late(doc.logs_info, doc.logs_started_at)) return;
      await ctx.repos.hosts.update({ infraEnvId: h.infra_env_id, hostId: h.id }, { doc: { ...doc, logs_info: 'timeout' } }, trx);
      await ctx.repos.events.add({ name: 'host_logs_timed_out', clusterId: h.cluster_id, hostId: h.id, infraEnvId: h.infra_env_id, props: { host_name: hostDisplayName(h), logs_state: String(doc.logs_info), seconds: Math.round((now - Date.parse(String(doc.logs_started_at))) / 1000) } }, trx);
      hosts++;
    });
  }
  let clusters = 0;
  const clusterCandidates = await ctx.db('clusters').whereRaw("doc->>'logs_info' in ('requested', 'collecting')").select('id');
  for (const { id } of clusterCandidates as Array<{ id: string }>) {
    await ctx.db.transaction(async (trx) => {
      const c = await ctx.repos.clusters.getForUpdate(id, trx);
      const doc = (c?.doc ?? {}) as Json;
      if (!c || !late(doc.logs_info, doc.controller_logs_started_at)) return;
      await ctx.repos.clusters.update(id, { doc: { ...doc, logs_info: 'timeout' } }, trx);
      clusters++;
    });
  }
  return { hosts, clusters };
}
