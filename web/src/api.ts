/**
 * The UI's only door to the service: the public REST API (and, in events.ts,
 * the SSE stream). Errors become ApiError with the service's own message, so a
 * page can always say what went wrong; a 401 sends the user to token entry.
 */
import type { components } from '../../src/api/openapi/schema.generated';

export type Cluster = components['schemas']['cluster'];
export type Host = components['schemas']['host'];
export type InfraEnv = components['schemas']['infra-env'];
export type EventRecord = components['schemas']['event'];
export type OpenshiftVersions = components['schemas']['openshift-versions'];
export type ClusterCreateParams = components['schemas']['cluster-create-params'];
export type ClusterUpdateParams = components['schemas']['v2-cluster-update-params'];
export type InfraEnvCreateParams = components['schemas']['infra-env-create-params'];
export type InfraEnvUpdateParams = components['schemas']['infra-env-update-params'];
export type HostUpdateParams = components['schemas']['host-update-params'];
export type PresignedUrl = components['schemas']['presigned-url'];
export type Credentials = components['schemas']['credentials'];
export type Insights = components['schemas']['insights'];

export const API_BASE = '/api/assisted-install/v2';
/** Landfall's own API (insights), beside the assisted-service one. */
export const LANDFALL_API_BASE = '/api/landfall/v1';
const TOKEN_KEY = 'landfall.token';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The token lives in sessionStorage: it dies with the tab and is sent only to this origin. */
export const auth = {
  token(): string | undefined {
    return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
  },
  setToken(token: string): void {
    sessionStorage.setItem(TOKEN_KEY, token);
  },
  clear(): void {
    sessionStorage.removeItem(TOKEN_KEY);
  },
};

type UnauthorizedListener = () => void;
const unauthorizedListeners = new Set<UnauthorizedListener>();
export function onUnauthorized(fn: UnauthorizedListener): () => void {
  unauthorizedListeners.add(fn);
  return () => unauthorizedListeners.delete(fn);
}

export function authHeaders(): Record<string, string> {
  const t = auth.token();
  return t ? { Authorization: `Bearer ${t}` } : {};
}

/** The message of an error body: `reason` (the AS error shape) or `message` (401/403 infra errors). */
async function errorFrom(res: Response): Promise<ApiError> {
  const text = await res.text().catch(() => '');
  let message = text.trim() || res.statusText || `HTTP ${res.status}`;
  try {
    const body = JSON.parse(text) as { reason?: unknown; message?: unknown };
    if (typeof body.reason === 'string') message = body.reason;
    else if (typeof body.message === 'string') message = body.message;
  } catch {
    /* not JSON: keep the text */
  }
  return new ApiError(res.status, message);
}

export async function request(method: string, path: string, body?: unknown, base = API_BASE): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(`${base}${path}`, {
      method,
      headers: { Accept: 'application/json', ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...authHeaders() },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
  } catch {
    throw new ApiError(0, 'The service cannot be reached. Is Landfall running?');
  }
  if (res.status === 401) {
    const err = await errorFrom(res);
    unauthorizedListeners.forEach((fn) => fn());
    throw err;
  }
  if (!res.ok) throw await errorFrom(res);
  return res;
}

async function json<T>(method: string, path: string, body?: unknown, base = API_BASE): Promise<T> {
  const res = await request(method, path, body, base);
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

const enc = encodeURIComponent;

export const api = {
  listClusters: () => json<Cluster[]>('GET', '/clusters?with_hosts=true'),
  getCluster: (id: string) => json<Cluster>('GET', `/clusters/${enc(id)}`),
  createCluster: (p: ClusterCreateParams) => json<Cluster>('POST', '/clusters', p),
  updateCluster: (id: string, p: ClusterUpdateParams) => json<Cluster>('PATCH', `/clusters/${enc(id)}`, p),
  installCluster: (id: string) => json<Cluster>('POST', `/clusters/${enc(id)}/actions/install`),
  cancelCluster: (id: string) => json<Cluster>('POST', `/clusters/${enc(id)}/actions/cancel`),
  resetCluster: (id: string) => json<Cluster>('POST', `/clusters/${enc(id)}/actions/reset`),
  credentials: (id: string) => json<Credentials>('GET', `/clusters/${enc(id)}/credentials`),
  installReport: (id: string) => json<unknown>('GET', `/clusters/${enc(id)}/install-report`),
  downloadCredential: (id: string, file: 'kubeconfig' | 'kubeconfig-noingress' | 'kubeadmin-password') => request('GET', `/clusters/${enc(id)}/downloads/credentials?file_name=${enc(file)}`),
  versions: () => json<OpenshiftVersions>('GET', '/openshift-versions'),
  infraEnvsOf: (clusterId: string) => json<InfraEnv[]>('GET', `/infra-envs?cluster_id=${enc(clusterId)}`),
  createInfraEnv: (p: InfraEnvCreateParams) => json<InfraEnv>('POST', '/infra-envs', p),
  updateInfraEnv: (id: string, p: InfraEnvUpdateParams) => json<InfraEnv>('PATCH', `/infra-envs/${enc(id)}`, p),
  imageUrl: (id: string) => json<PresignedUrl>('GET', `/infra-envs/${enc(id)}/downloads/image-url`),
  updateHost: (infraEnvId: string, hostId: string, p: HostUpdateParams) => json<Host>('PATCH', `/infra-envs/${enc(infraEnvId)}/hosts/${enc(hostId)}`, p),
  retryHost: (infraEnvId: string, hostId: string) => json<Host>('POST', `/infra-envs/${enc(infraEnvId)}/hosts/${enc(hostId)}/actions/retry-install`),
  allowAddWorkers: (id: string) => json<Cluster>('POST', `/clusters/${enc(id)}/actions/allow-add-workers`),
  installHost: (infraEnvId: string, hostId: string) => json<Host>('POST', `/infra-envs/${enc(infraEnvId)}/hosts/${enc(hostId)}/actions/install`),
  resetHost: (infraEnvId: string, hostId: string) => json<Host>('POST', `/infra-envs/${enc(infraEnvId)}/hosts/${enc(hostId)}/actions/reset`),
  events: (clusterId: string) => json<EventRecord[]>('GET', `/events?cluster_id=${enc(clusterId)}`),
  insights: (from: string, to: string) => json<Insights>('GET', `/insights?from=${enc(from)}&to=${enc(to)}`, undefined, LANDFALL_API_BASE),
};

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
