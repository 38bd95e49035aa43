/**
 * What every reconciler gets: the two APIs, the watch cache of custom
 * resources, the queue, and the index from Landfall ids to resource keys
 * (so a Landfall event wakes the right resource). The index is rebuilt from
 * observation after a restart; nothing in it decides an action on its own.
 */
import type { Logger } from '../logger';
import { KubeError, type KubeClient, type KubeObject, type ResourceType } from './kube-client';
import type { LandfallClient } from './landfall-client';
import type { HostReads } from './host-reads';
import type { WorkQueue } from './work-queue';
import { key as keyOf } from './resources';

export type QueueKind = 'cluster' | 'infraenv' | 'agent' | 'host' | 'bmh';
export const qkey = (kind: QueueKind, key: string) => `${kind}:${key}`;

export class Cache {
  private readonly byType = new Map<string, Map<string, KubeObject>>();

  private bucket(rt: ResourceType): Map<string, KubeObject> {
    let m = this.byType.get(rt.plural);
    if (!m) this.byType.set(rt.plural, (m = new Map()));
    return m;
  }
  replaceAll(rt: ResourceType, items: KubeObject[], namespace?: string): void {
    const m = this.bucket(rt);
    for (const k of [...m.keys()]) if (namespace === undefined || k.startsWith(`${namespace}/`)) m.delete(k);
    for (const o of items) m.set(keyOf(o), o);
  }
  /**
   * Keeps the newer of two versions: the answer to our own write can come before the watch event of
   * an earlier one. resourceVersions are opaque, but etcd's are revision numbers, compared as such.
   */
  put(rt: ResourceType, o: KubeObject): void {
    const m = this.bucket(rt);
    const have = m.get(keyOf(o))?.metadata.resourceVersion;
    const next = o.metadata.resourceVersion;
    if (have && next && /^\d+$/.test(have) && /^\d+$/.test(next) && BigInt(next) < BigInt(have)) return;
    m.set(keyOf(o), o);
  }
  remove(rt: ResourceType, o: KubeObject): void {
    this.bucket(rt).delete(keyOf(o));
  }
  get(rt: ResourceType, key: string): KubeObject | undefined {
    return this.bucket(rt).get(key);
  }
  list(rt: ResourceType, namespace?: string): KubeObject[] {
    return [...this.bucket(rt).values()].filter((o) => namespace === undefined || o.metadata.namespace === namespace);
  }
}

/** Landfall id ↔ resource key, both ways. */
export class BiIndex {
  private readonly byId = new Map<string, string>();
  private readonly byKey = new Map<string, string>();
  set(id: string, key: string): void {
    this.byId.set(id, key);
    this.byKey.set(key, id);
  }
  keyOf(id: string): string | undefined {
    return this.byId.get(id);
  }
  idOf(key: string): string | undefined {
    return this.byKey.get(key);
  }
  drop(key: string): void {
    const id = this.byKey.get(key);
    if (id) this.byId.delete(id);
    this.byKey.delete(key);
  }
}

/**
 * One queue per kind of reconcile, each with its own workers: a slow cluster reconcile
 * (a large cluster's answer) never holds up the Agents' status behind it.
 */
export class KindQueues {
  constructor(private readonly queues: Record<QueueKind, WorkQueue>) {}
  private of(item: string): WorkQueue {
    return this.queues[item.slice(0, item.indexOf(':')) as QueueKind];
  }
  add(item: string): void {
    this.of(item).add(item);
  }
  addAfter(item: string, ms: number): void {
    this.of(item).addAfter(item, ms);
  }
  retry(item: string): void {
    this.of(item).retry(item);
  }
  forget(item: string): void {
    this.of(item).forget(item);
  }
  run(concurrency: Record<QueueKind, number>, handle: (item: string) => Promise<void>): Promise<void> {
    return Promise.all((Object.keys(this.queues) as QueueKind[]).map((k) => this.queues[k].run(concurrency[k], handle))).then(() => undefined);
  }
  stop(): void {
    for (const q of Object.values(this.queues)) q.stop();
  }
}

export interface OperatorContext {
  kube: KubeClient;
  landfall: LandfallClient;
  /** The Agents' host reads, one in flight per infra-env (host-reads.ts). */
  hostReads: HostReads;
  cache: Cache;
  queue: KindQueues;
  /** Landfall cluster id ↔ ClusterDeployment key. */
  clusters: BiIndex;
  /** Landfall infra-env id ↔ InfraEnv key. */
  infraEnvs: BiIndex;
  log: Logger;
  /** The Landfall URL users reach (for the events and logs links in status.debugInfo). */
  publicUrl: string;
  now: () => Date;
}

/** Writes `status` only when it differs from what the resource already shows (a no-op reconcile writes nothing). */
export async function writeStatus(ctx: OperatorContext, rt: ResourceType, obj: KubeObject, status: Record<string, unknown>): Promise<void> {
  const clean = JSON.parse(JSON.stringify(status)) as Record<string, unknown>;
  const before = obj.status ?? {};
  const changed = Object.keys(clean).some((k) => JSON.stringify(before[k]) !== JSON.stringify(clean[k]));
  if (!changed) return;
  const updated = await ctx.kube.mergePatch(rt, obj.metadata.namespace, obj.metadata.name, { status: clean }, 'status');
  ctx.cache.put(rt, { ...updated, apiVersion: obj.apiVersion, kind: obj.kind });
}

/** Adds our finalizer (optimistic: a concurrent change makes it 409, and the reconcile runs again). */
export async function ensureFinalizer(ctx: OperatorContext, rt: ResourceType, obj: KubeObject, finalizer: string): Promise<KubeObject> {
  const list = obj.metadata.finalizers ?? [];
  if (list.includes(finalizer)) return obj;
  const updated = await ctx.kube.mergePatch(rt, obj.metadata.namespace, obj.metadata.name, { metadata: { finalizers: [...list, finalizer], resourceVersion: obj.metadata.resourceVersion } });
  ctx.cache.put(rt, updated);
  return updated;
}

export async function removeFinalizer(ctx: OperatorContext, rt: ResourceType, obj: KubeObject, finalizer: string): Promise<void> {
  const list = obj.metadata.finalizers ?? [];
  if (!list.includes(finalizer)) return;
  try {
    await ctx.kube.mergePatch(rt, obj.metadata.namespace, obj.metadata.name, { metadata: { finalizers: list.filter((f) => f !== finalizer), resourceVersion: obj.metadata.resourceVersion } });
  } catch (err) {
    if (!(err instanceof KubeError && err.status === 404)) throw err;
  }
}
