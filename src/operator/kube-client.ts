/**
 * A small Kubernetes API client over undici: what the operator needs and no
 * more (CRUD, the status subresource, JSON merge patch, list + watch with
 * resourceVersion). Written here rather than taken from @kubernetes/client-node
 * to add no dependency: its 1.x line is the last that runs on Node 20, and the
 * operator uses a dozen calls of it.
 *
 * Protocol facts it handles (each bit someone once):
 * - a watch ends on its own (the apiserver's timeout, ~5-10 min): reopen from the last resourceVersion;
 * - 410 Gone (in the response or as an ERROR event in the stream): the resourceVersion is too old, list again;
 * - 429 with Retry-After: the apiserver is busy or, right after a CRD becomes Established,
 *   "storage is (re)initializing": wait and retry, never give up;
 * - BOOKMARK events carry only a resourceVersion (asked for with allowWatchBookmarks).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Agent, fetch, type Dispatcher } from 'undici';
import { parse as parseYaml } from 'yaml';

export interface KubeConnection {
  server: string;
  /** PEM of the CA that signed the apiserver's serving certificate (unset: the system's CAs). */
  caPem?: string;
  token?: string;
  /** A token file read again every minute: a pod's service-account token is rotated by the kubelet. */
  tokenFile?: string;
  insecureSkipTlsVerify?: boolean;
  /** Client certificate authentication (kubeconfigs of kind and kubeadm clusters). */
  clientCertPem?: string;
  clientKeyPem?: string;
}

/** A resource type: `{ group: '', version: 'v1', plural: 'secrets' }` for the core group. */
export interface ResourceType {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
}

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  deletionTimestamp?: string;
  creationTimestamp?: string;
  ownerReferences?: Array<{ apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }>;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- custom resources are open documents; each reconciler reads its own fields
  spec?: any;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see spec
  status?: any;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  type?: string;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export class KubeError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = 'KubeError';
  }
}

export const isNotFound = (e: unknown) => e instanceof KubeError && e.status === 404;
export const isConflict = (e: unknown) => e instanceof KubeError && e.status === 409;

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });

/** Seconds from a Retry-After header (a number, or anything else such as "retry": one second). */
function retryAfterMs(header: string | null): number {
  const n = Number(header);
  return Number.isFinite(n) && n > 0 ? Math.min(n, 30) * 1000 : 1000;
}

export class KubeClient {
  private readonly dispatcher: Dispatcher;

  constructor(readonly conn: KubeConnection) {
    this.dispatcher = new Agent({
      connect: {
        ca: conn.caPem,
        cert: conn.clientCertPem,
        key: conn.clientKeyPem,
        rejectUnauthorized: !conn.insecureSkipTlsVerify,
      },
      // Watches are long-lived requests: no body timeout, the apiserver ends them.
      bodyTimeout: 0,
      headersTimeout: 30_000,
    });
  }

  private fileToken: { value: string; readAt: number } | undefined;

  private authorization(): Record<string, string> {
    let token = this.conn.token;
    if (this.conn.tokenFile) {
      if (!this.fileToken || Date.now() - this.fileToken.readAt > 60_000) this.fileToken = { value: readFileSync(this.conn.tokenFile, 'utf8').trim(), readAt: Date.now() };
      token = this.fileToken.value;
    }
    return token ? { authorization: `Bearer ${token}` } : {};
  }

  async close(): Promise<void> {
    await this.dispatcher.close();
  }

  path(rt: ResourceType, namespace?: string, name?: string, subresource?: string): string {
    const base = rt.group ? `/apis/${rt.group}/${rt.version}` : `/api/${rt.version}`;
    const ns = rt.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
    return `${base}${ns}/${rt.plural}${name ? `/${encodeURIComponent(name)}` : ''}${subresource ? `/${subresource}` : ''}`;
  }

  /** One request; 429 is retried here (the apiserver asked us to), everything else is the caller's. */
  async request(method: string, urlPath: string, opts: { body?: unknown; contentType?: string; signal?: AbortSignal } = {}): Promise<unknown> {
    for (;;) {
      const res = await fetch(`${this.conn.server.replace(/\/+$/, '')}${urlPath}`, {
        method,
        dispatcher: this.dispatcher,
        signal: opts.signal,
        headers: {
          accept: 'application/json',
          ...this.authorization(),
          ...(opts.body !== undefined ? { 'content-type': opts.contentType ?? 'application/json' } : {}),
        },
        body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
      });
      if (res.status === 429) {
        await res.body?.cancel();
        await sleep(retryAfterMs(res.headers.get('retry-after')), opts.signal);
        if (opts.signal?.aborted) throw new Error('aborted');
        continue;
      }
      const text = await res.text();
      let body: Record<string, unknown> | undefined;
      try {
        body = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
      } catch {
        body = { message: text }; // /readyz and friends answer plain text
      }
      if (!res.ok) throw new KubeError(res.status, String(body?.reason ?? res.statusText), `${method} ${urlPath}: ${res.status} ${String(body?.message ?? text).slice(0, 300)}`);
      return body;
    }
  }

  get(rt: ResourceType, namespace: string | undefined, name: string): Promise<KubeObject> {
    return this.request('GET', this.path(rt, namespace, name)) as Promise<KubeObject>;
  }

  /** The object, or undefined when there is none. */
  async find(rt: ResourceType, namespace: string | undefined, name: string): Promise<KubeObject | undefined> {
    try {
      return await this.get(rt, namespace, name);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async list(rt: ResourceType, namespace?: string, opts: { labelSelector?: string } = {}): Promise<{ items: KubeObject[]; resourceVersion: string }> {
    const q = opts.labelSelector ? `?labelSelector=${encodeURIComponent(opts.labelSelector)}` : '';
    const body = (await this.request('GET', this.path(rt, namespace) + q)) as { items: KubeObject[]; metadata: { resourceVersion: string } };
    return { items: body.items.map((o) => ({ ...o, apiVersion: rt.group ? `${rt.group}/${rt.version}` : rt.version, kind: rt.kind })), resourceVersion: body.metadata.resourceVersion };
  }

  create(rt: ResourceType, namespace: string | undefined, obj: KubeObject): Promise<KubeObject> {
    return this.request('POST', this.path(rt, namespace), { body: { apiVersion: rt.group ? `${rt.group}/${rt.version}` : rt.version, kind: rt.kind, ...obj } }) as Promise<KubeObject>;
  }

  replace(rt: ResourceType, namespace: string | undefined, obj: KubeObject): Promise<KubeObject> {
    return this.request('PUT', this.path(rt, namespace, obj.metadata.name), { body: { apiVersion: rt.group ? `${rt.group}/${rt.version}` : rt.version, kind: rt.kind, ...obj } }) as Promise<KubeObject>;
  }

  /** RFC 7386 merge patch of the object or of its status subresource. */
  mergePatch(rt: ResourceType, namespace: string | undefined, name: string, patch: unknown, subresource?: 'status'): Promise<KubeObject> {
    return this.request('PATCH', this.path(rt, namespace, name, subresource), { body: patch, contentType: 'application/merge-patch+json' }) as Promise<KubeObject>;
  }

  /** Deletes; a missing object is already deleted. */
  async delete(rt: ResourceType, namespace: string | undefined, name: string): Promise<void> {
    try {
      await this.request('DELETE', this.path(rt, namespace, name));
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /**
   * One watch request from `resourceVersion`, calling onEvent per change until
   * the server ends it. Returns the last resourceVersion seen; throws
   * KubeError 410 when that version is too old (the caller lists again).
   */
  async watchOnce(rt: ResourceType, namespace: string | undefined, resourceVersion: string, onEvent: (type: WatchEventType, obj: KubeObject) => void, signal: AbortSignal): Promise<string> {
    const url = `${this.conn.server.replace(/\/+$/, '')}${this.path(rt, namespace)}?watch=1&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(resourceVersion)}&timeoutSeconds=300`;
    const res = await fetch(url, { dispatcher: this.dispatcher, signal, headers: { accept: 'application/json', ...this.authorization() } });
    if (res.status === 429) {
      await res.body?.cancel();
      await sleep(retryAfterMs(res.headers.get('retry-after')), signal);
      return resourceVersion;
    }
    if (!res.ok) {
      const text = await res.text();
      throw new KubeError(res.status, res.statusText, `watch ${rt.plural}: ${res.status} ${text.slice(0, 300)}`);
    }
    let rv = resourceVersion;
    let buf = '';
    const decoder = new TextDecoder();
    for await (const chunk of res.body!) {
      buf += decoder.decode(chunk as Uint8Array, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line) continue;
        const ev = JSON.parse(line) as { type: string; object: KubeObject & { code?: number; message?: string } };
        if (ev.type === 'ERROR') {
          const code = ev.object.code ?? 500;
          throw new KubeError(code, 'WatchError', `watch ${rt.plural}: ${code} ${ev.object.message ?? ''}`);
        }
        rv = ev.object.metadata?.resourceVersion ?? rv;
        if (ev.type === 'BOOKMARK') continue;
        onEvent(ev.type as WatchEventType, { ...ev.object, apiVersion: rt.group ? `${rt.group}/${rt.version}` : rt.version, kind: rt.kind });
      }
    }
    return rv;
  }

  /**
   * List, then watch from the list's resourceVersion, forever (until signal):
   * onList gets every object of each (re)list (after a 410 or an error the
   * watch cannot resume from), onEvent each change in between.
   */
  async listWatch(
    rt: ResourceType,
    namespace: string | undefined,
    handlers: { onList: (items: KubeObject[]) => void; onEvent: (type: WatchEventType, obj: KubeObject) => void; onError?: (err: Error) => void },
    signal: AbortSignal,
  ): Promise<void> {
    let rv: string | undefined;
    let backoffMs = 500;
    while (!signal.aborted) {
      try {
        if (rv === undefined) {
          const l = await this.list(rt, namespace);
          handlers.onList(l.items);
          rv = l.resourceVersion;
        }
        rv = await this.watchOnce(rt, namespace, rv, handlers.onEvent, signal);
        backoffMs = 500;
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof KubeError && err.status === 410) {
          rv = undefined; // too old: list again, no wait
          continue;
        }
        handlers.onError?.(err as Error);
        await sleep(backoffMs, signal);
        backoffMs = Math.min(backoffMs * 2, 10_000);
        // A broken connection may have lost events: the safe resume is a fresh list.
        rv = undefined;
      }
    }
  }
}

/**
 * Reads a kubeconfig (its current context), as kubectl would: server, CA
 * (inline or a file relative to the kubeconfig), bearer token (inline or
 * tokenFile) or client certificate.
 */
export function loadKubeconfig(file: string): KubeConnection {
  const dir = path.dirname(file);
  const doc = parseYaml(readFileSync(file, 'utf8')) as {
    'current-context'?: string;
    contexts?: Array<{ name: string; context: { cluster: string; user: string } }>;
    clusters?: Array<{ name: string; cluster: Record<string, string | boolean> }>;
    users?: Array<{ name: string; user: Record<string, string> }>;
  };
  const ctx = doc.contexts?.find((c) => c.name === doc['current-context']) ?? doc.contexts?.[0];
  if (!ctx) throw new Error(`${file}: no context`);
  const cluster = doc.clusters?.find((c) => c.name === ctx.context.cluster)?.cluster;
  const user = doc.users?.find((u) => u.name === ctx.context.user)?.user ?? {};
  if (!cluster?.server) throw new Error(`${file}: context ${ctx.name} names no cluster with a server`);
  const fileOrData = (data: unknown, fileRef: unknown) =>
    typeof data === 'string' ? Buffer.from(data, 'base64').toString('utf8') : typeof fileRef === 'string' ? readFileSync(path.resolve(dir, fileRef), 'utf8') : undefined;
  return {
    server: String(cluster.server),
    caPem: fileOrData(cluster['certificate-authority-data'], cluster['certificate-authority']),
    insecureSkipTlsVerify: cluster['insecure-skip-tls-verify'] === true,
    token: user.token,
    tokenFile: user.tokenFile ? path.resolve(dir, user.tokenFile) : undefined,
    clientCertPem: fileOrData(user['client-certificate-data'], user['client-certificate']),
    clientKeyPem: fileOrData(user['client-key-data'], user['client-key']),
  };
}

/** The pod's service account, when the operator runs inside the cluster it watches. */
export function inClusterConnection(host: string, port: string, saDir = '/var/run/secrets/kubernetes.io/serviceaccount'): KubeConnection {
  return {
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    caPem: readFileSync(path.join(saDir, 'ca.crt'), 'utf8'),
    tokenFile: path.join(saDir, 'token'),
  };
}
