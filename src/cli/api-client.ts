/**
 * The CLI's only way to the service: the public REST API
 * (`/api/assisted-install/v2`), with the user's bearer token. Every failure
 * becomes a CliError carrying the API's own `reason` and the documented exit
 * code, so commands never format HTTP errors themselves.
 */
import { CliError, exitKindOfStatus } from './exit-codes';

export const API_PATH = '/api/assisted-install/v2';
/** Landfall's own API (insights), beside the assisted-service one. */
export const LANDFALL_API_PATH = '/api/landfall/v1';

export interface ClientOptions {
  url: string;
  token?: string;
}

type Query = Record<string, string | number | boolean | undefined>;

export class ApiClient {
  readonly base: URL;

  constructor(private readonly opts: ClientOptions) {
    try {
      this.base = new URL(opts.url.replace(/\/+$/, '') + API_PATH);
    } catch {
      throw new CliError('usage', `--url: "${opts.url}" is not a URL`);
    }
    if (!/^https?:$/.test(this.base.protocol)) throw new CliError('usage', `--url: "${opts.url}" is not an http(s) URL`);
  }

  /** A path under the assisted-service API, or one of Landfall's own (`/api/landfall/v1/…`) taken from the root. */
  url(path: string, query: Query = {}): URL {
    const u = path.startsWith(LANDFALL_API_PATH) ? new URL(this.opts.url.replace(/\/+$/, '') + path) : new URL(this.base.href + path);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) u.searchParams.set(k, String(v));
    return u;
  }

  /** fetch with auth; throws CliError for an unreachable service or a non-2xx answer. */
  async fetch(path: string, init: { method?: string; query?: Query; body?: unknown; headers?: Record<string, string>; signal?: AbortSignal } = {}): Promise<Response> {
    const headers: Record<string, string> = { ...init.headers };
    if (this.opts.token) headers.Authorization = `Bearer ${this.opts.token}`;
    if (init.body !== undefined) headers['Content-Type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(this.url(path, init.query), { method: init.method ?? 'GET', headers, body: init.body !== undefined ? JSON.stringify(init.body) : undefined, signal: init.signal });
    } catch (err) {
      throw unreachable(err, this.opts.url);
    }
    if (!res.ok) throw await httpError(res);
    return res;
  }

  async json<T = Json>(method: string, path: string, opts: { query?: Query; body?: unknown } = {}): Promise<{ body: T; headers: Headers }> {
    const res = await this.fetch(path, { method, ...opts });
    const text = await res.text().catch((err: unknown) => {
      throw unreachable(err, this.opts.url);
    });
    if (!text) return { body: undefined as T, headers: res.headers };
    try {
      return { body: JSON.parse(text) as T, headers: res.headers };
    } catch {
      throw new CliError('serviceError', `${method} ${path}: the API answered something that is not JSON`);
    }
  }

  get<T = Json>(path: string, query?: Query): Promise<T> {
    return this.json<T>('GET', path, { query }).then((r) => r.body);
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- API objects are read loosely; the OpenAPI document is the contract
export type Json = any;

/** A failed fetch (not an HTTP answer): the service is down, unresolvable or the connection dropped. */
export function unreachable(err: unknown, url: string): CliError {
  if (err instanceof CliError) return err;
  if (err instanceof Error && err.name === 'AbortError') return new CliError('interrupted', 'interrupted');
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const why = cause?.code ?? cause?.message ?? (err as Error).message;
  return new CliError('unreachable', `cannot reach the Landfall API at ${url} (${why})`);
}

/** The API error body's reason (kind Error, code, reason) as one line. */
export async function httpError(res: Response): Promise<CliError> {
  const text = await res.text().catch(() => '');
  let reason = '';
  try {
    const body = JSON.parse(text) as { reason?: unknown; message?: unknown };
    reason = String(body.reason ?? body.message ?? '');
  } catch {
    reason = text.slice(0, 200);
  }
  const line = (reason || res.statusText || 'no reason given').replace(/\s*\n\s*/g, ' ');
  return new CliError(exitKindOfStatus(res.status), `${line} (HTTP ${res.status})`);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A cluster by id or by its (unique) name. */
export async function resolveCluster(api: ApiClient, ref: string): Promise<Json> {
  if (UUID.test(ref)) {
    try {
      return await api.get(`/clusters/${ref}`);
    } catch (err) {
      if (err instanceof CliError && err.kind === 'notFound') throw new CliError('notFound', `no cluster ${ref}`);
      throw err;
    }
  }
  const all = (await api.get<Json[]>('/clusters')).filter((c) => c.name === ref);
  if (all.length === 0) throw new CliError('notFound', `no cluster named "${ref}"`);
  if (all.length > 1) throw new CliError('usage', `${all.length} clusters are named "${ref}"; give an id: ${all.map((c) => c.id).join(', ')}`);
  return api.get(`/clusters/${all[0].id}`);
}

/** An infra-env by id or by its (unique) name. */
export async function resolveInfraEnv(api: ApiClient, ref: string): Promise<Json> {
  if (UUID.test(ref)) {
    try {
      return await api.get(`/infra-envs/${ref}`);
    } catch (err) {
      if (err instanceof CliError && err.kind === 'notFound') throw new CliError('notFound', `no infra-env ${ref}`);
      throw err;
    }
  }
  const all = (await api.get<Json[]>('/infra-envs')).filter((c) => c.name === ref);
  if (all.length === 0) throw new CliError('notFound', `no infra-env named "${ref}"`);
  if (all.length > 1) throw new CliError('usage', `${all.length} infra-envs are named "${ref}"; give an id: ${all.map((c) => c.id).join(', ')}`);
  return all[0];
}
