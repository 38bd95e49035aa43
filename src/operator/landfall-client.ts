/**
 * The operator's only way into Landfall: the public REST API and its event
 * stream, with a bearer token, exactly like any other client. The operator
 * never opens Landfall's database, so it runs wherever it can reach the API
 * (inside the Kubernetes cluster it watches, or beside Landfall).
 */
import { parseSse } from '../cli/event-stream';

export const API_PATH = '/api/assisted-install/v2';

export class LandfallError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'LandfallError';
  }
  /** The request was refused for what it asked (4xx other than 404): the spec is wrong, not the service. */
  get isInput(): boolean {
    return this.status >= 400 && this.status < 500 && this.status !== 404 && this.status !== 409;
  }
}

export const isLandfallNotFound = (e: unknown) => e instanceof LandfallError && e.status === 404;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- API objects are read loosely; the OpenAPI document is the contract
export type Json = any;

export interface LandfallEvent {
  seq: number;
  name: string;
  cluster_id?: string;
  host_id?: string;
  infra_env_id?: string;
}

export class LandfallClient {
  constructor(
    readonly url: string,
    private readonly token?: string,
  ) {}

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return { ...(this.token ? { authorization: `Bearer ${this.token}` } : {}), ...extra };
  }

  async request<T = Json>(method: string, path: string, body?: unknown, query: Record<string, string> = {}): Promise<T> {
    const qs = new URLSearchParams(query).toString();
    const res = await fetch(`${this.url.replace(/\/+$/, '')}${API_PATH}${path}${qs ? `?${qs}` : ''}`, {
      method,
      headers: this.headers(body !== undefined ? { 'content-type': 'application/json' } : {}),
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    if (!res.ok) {
      let reason = text.slice(0, 300);
      try {
        const b = JSON.parse(text) as { reason?: string; message?: string };
        reason = b.reason ?? b.message ?? reason;
      } catch {
        /* not JSON: keep the text */
      }
      throw new LandfallError(res.status, `${method} ${path}: HTTP ${res.status}: ${reason}`);
    }
    if (!text) return undefined as T;
    const type = res.headers.get('content-type') ?? '';
    return (type.includes('json') ? JSON.parse(text) : text) as T;
  }

  listClusters(): Promise<Json[]> {
    return this.request('GET', '/clusters');
  }
  /** Without its hosts when asked (their inventories make a large cluster's answer heavy). */
  getCluster(id: string, opts: { hosts?: boolean } = {}): Promise<Json> {
    return this.request('GET', `/clusters/${id}`, undefined, opts.hosts === false ? { 'exclude-hosts': 'true' } : {});
  }
  createCluster(body: Json): Promise<Json> {
    return this.request('POST', '/clusters', body);
  }
  updateCluster(id: string, body: Json): Promise<Json> {
    return this.request('PATCH', `/clusters/${id}`, body);
  }
  async deleteCluster(id: string): Promise<void> {
    try {
      await this.request('DELETE', `/clusters/${id}`);
    } catch (err) {
      if (!isLandfallNotFound(err)) throw err;
    }
  }
  installCluster(id: string): Promise<Json> {
    return this.request('POST', `/clusters/${id}/actions/install`);
  }
  kubeconfig(id: string): Promise<string> {
    return this.request('GET', `/clusters/${id}/downloads/credentials`, undefined, { file_name: 'kubeconfig' });
  }
  credentials(id: string): Promise<{ username: string; password: string; console_url?: string }> {
    return this.request('GET', `/clusters/${id}/credentials`);
  }
  versions(): Promise<Record<string, { default?: boolean }>> {
    return this.request('GET', '/openshift-versions');
  }
  listInfraEnvs(): Promise<Json[]> {
    return this.request('GET', '/infra-envs');
  }
  getInfraEnv(id: string): Promise<Json> {
    return this.request('GET', `/infra-envs/${id}`);
  }
  createInfraEnv(body: Json): Promise<Json> {
    return this.request('POST', '/infra-envs', body);
  }
  updateInfraEnv(id: string, body: Json): Promise<Json> {
    return this.request('PATCH', `/infra-envs/${id}`, body);
  }
  async deleteInfraEnv(id: string): Promise<void> {
    try {
      await this.request('DELETE', `/infra-envs/${id}`);
    } catch (err) {
      if (!isLandfallNotFound(err)) throw err;
    }
  }
  imageUrl(id: string): Promise<{ url: string; expires_at?: string }> {
    return this.request('GET', `/infra-envs/${id}/downloads/image-url`);
  }
  listHosts(infraEnvId: string): Promise<Json[]> {
    return this.request('GET', `/infra-envs/${infraEnvId}/hosts`);
  }
  getHost(infraEnvId: string, hostId: string): Promise<Json> {
    return this.request('GET', `/infra-envs/${infraEnvId}/hosts/${hostId}`);
  }
  updateHost(infraEnvId: string, hostId: string, body: Json): Promise<Json> {
    return this.request('PATCH', `/infra-envs/${infraEnvId}/hosts/${hostId}`, body);
  }
  async deleteHost(infraEnvId: string, hostId: string): Promise<void> {
    try {
      await this.request('DELETE', `/infra-envs/${infraEnvId}/hosts/${hostId}`);
    } catch (err) {
      if (!isLandfallNotFound(err)) throw err;
    }
  }
  events(query: Record<string, string>): Promise<Json[]> {
    return this.request('GET', '/events', undefined, query);
  }

  /**
   * Every event Landfall records, as it is recorded (the unfiltered event
   * stream, for administrators), resuming after the last one seen when the
   * connection drops. `onConnected` fires each time the stream is (re)opened:
   * events may have been missed while it was down, so the caller resyncs.
   */
  async followEvents(onEvent: (e: LandfallEvent) => void, signal: AbortSignal, hooks: { onConnected?: () => void; onError?: (err: Error) => void } = {}): Promise<void> {
    let cursor: string = 'latest';
    while (!signal.aborted) {
      try {
        const res = await fetch(`${this.url.replace(/\/+$/, '')}${API_PATH}/events/stream?after=${cursor}`, { headers: this.headers({ accept: 'text/event-stream' }), signal });
        if (!res.ok) throw new LandfallError(res.status, `event stream: HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`);
        hooks.onConnected?.();
        for await (const msg of parseSse(res.body!, signal)) {
          if (msg.id) cursor = msg.id;
          if (!msg.data) continue;
          const e = JSON.parse(msg.data) as Omit<LandfallEvent, 'seq'>;
          onEvent({ ...e, seq: Number(msg.id) });
        }
      } catch (err) {
        if (signal.aborted) return;
        hooks.onError?.(err as Error);
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}
