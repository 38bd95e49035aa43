/**
 * HTTP to the service: the agent token as X-Secret-Key, an optional CA bundle
 * and proxy, retries with jittered exponential backoff on 5xx and network
 * errors. It returns every HTTP answer (the caller decides what a 404 means)
 * and throws only when the network itself failed after its retries.
 */
import { readFileSync } from 'node:fs';
import { Agent, ProxyAgent, fetch, type Dispatcher } from 'undici';
import type { AgentConfig } from './config';

export interface HttpAnswer {
  status: number;
  text: string;
  json<T>(): T;
}

export class NetworkError extends Error {
  constructor(override readonly cause: unknown) {
    super((cause as Error)?.message ?? String(cause));
    this.name = 'NetworkError';
  }
}

const BASE = '/api/assisted-install/v2';
/** Set by the service (src/api/assisted/auth.ts) on answers to a token past half its life. */
const RENEWED_TOKEN_HEADER = 'x-landfall-agent-token';

function bypassProxy(host: string, noProxy: string | undefined): boolean {
  if (!noProxy) return false;
  return noProxy.split(',').map((s) => s.trim()).filter(Boolean).some((rule) => rule === '*' || host === rule || (rule.startsWith('.') ? host.endsWith(rule) : host.endsWith(`.${rule}`)));
}

export function createDispatcher(cfg: AgentConfig): { dispatcher: Dispatcher; proxy: string | undefined } {
  const ca = cfg.caBundleFile ? readFileSync(cfg.caBundleFile, 'utf8') : undefined;
  const url = new URL(cfg.serviceUrl);
  const proxy = url.protocol === 'https:' ? cfg.httpsProxy : cfg.httpProxy;
  if (proxy && !bypassProxy(url.hostname, cfg.noProxy)) {
    return { dispatcher: new ProxyAgent({ uri: proxy, requestTls: ca ? { ca } : undefined, connectTimeout: 10000 }), proxy };
  }
  return { dispatcher: new Agent({ connect: { ...(ca ? { ca } : {}), timeout: 10000 }, keepAliveTimeout: 30000 }), proxy: undefined };
}

/** A sleep that an abort ends early. The listener is removed when the timer fires, so thousands of agents sharing one signal do not pile up listeners. */
export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = () => {
      clearTimeout(t);
      resolve();
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** Full jitter: a random wait up to min(cap, base·2^attempt), so a fleet does not retry in lock-step. */
export function backoffMs(attempt: number, baseMs = 1000, capMs = 60000, random = Math.random): number {
  return Math.floor(random() * Math.min(capMs, baseMs * 2 ** attempt));
}

/** Retry-After in seconds (the only form the service sends), capped at 2 minutes; 0 when absent or another form. */
export function retryAfterMsOf(header: string | null): number {
  return header && /^[0-9]{1,6}$/.test(header) ? Math.min(Number(header), 120) * 1000 : 0;
}

/** One header of an answer (undici gives a repeated header as an array: the first is taken). */
function headerOf(headers: Record<string, string | string[] | undefined>, name: string): string | null {
  const v = headers[name];
  return (Array.isArray(v) ? v[0] : v) ?? null;
}

/** Told of every HTTP answer (each attempt), with the time it took: how the fleet benches see per-request latency. */
export type RequestObserver = (a: { method: string; path: string; status: number; ms: number }) => void;

export class ServiceClient {
  constructor(
    private readonly cfg: AgentConfig,
    private readonly dispatcher: Dispatcher,
    private readonly retries = 3,
    private readonly observe?: RequestObserver,
  ) {}

  private split: { origin: string; prefix: string } | undefined;
  /** The service's origin and any path before the API's (a service behind a proxy's prefix), split on first use: it is on every request. */
  private target(): { origin: string; prefix: string } {
    if (this.split) return this.split;
    const url = new URL(this.cfg.serviceUrl);
    return (this.split = { origin: url.origin, prefix: url.pathname.replace(/\/+$/, '') });
  }

  async request(method: string, path: string, body?: unknown, signal?: AbortSignal, extraHeaders: Record<string, string> = {}): Promise<HttpAnswer> {
    let lastErr: unknown;
    let retryAfterMs = 0;
    const { origin, prefix } = this.target();
    const headers: Record<string, string> = {
      ...(this.cfg.agentToken ? { 'X-Secret-Key': this.cfg.agentToken } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      discovery_agent_version: this.cfg.agentVersion,
      ...extraHeaders,
    };
    const payload = body !== undefined ? JSON.stringify(body) : undefined;
    for (let attempt = 0; attempt <= this.retries; attempt++) {
      // A service at capacity says when to come back (Retry-After); sooner would only be turned away again.
      if (attempt > 0) await sleep(Math.max(backoffMs(attempt, 500, 10000), retryAfterMs), signal);
      retryAfterMs = 0;
      try {
        const started = this.observe ? performance.now() : 0;
        // The dispatcher's own request, not fetch: fetch builds WHATWG Request/Response objects, streams and an
        // abort signal of its own per call, which was half of a simulated fleet's CPU (a profile of bench/fleet-real).
        const res = await this.dispatcher.request({ origin, path: `${prefix}${BASE}${path}`, method: method as Dispatcher.HttpMethod, headers, body: payload, signal });
        this.takeRenewedToken(headerOf(res.headers, RENEWED_TOKEN_HEADER));
        const text = await res.body.text();
        this.observe?.({ method, path, status: res.statusCode, ms: performance.now() - started });
        if (res.statusCode >= 500 && attempt < this.retries) {
          lastErr = new Error(`HTTP ${res.statusCode}`);
          retryAfterMs = retryAfterMsOf(headerOf(res.headers, 'retry-after'));
          continue;
        }
        return { status: res.statusCode, text, json: <T>() => JSON.parse(text) as T };
      } catch (err) {
        if (signal?.aborted) throw err;
        lastErr = err;
      }
    }
    throw new NetworkError(lastErr);
  }

  async upload(path: string, fileName: string, data: Buffer, signal?: AbortSignal): Promise<HttpAnswer> {
    const form = new FormData();
    form.append('upfile', new Blob([data]), fileName);
    const res = await fetch(`${this.cfg.serviceUrl}${BASE}${path}`, {
      method: 'POST',
      dispatcher: this.dispatcher,
      signal,
      headers: this.cfg.agentToken ? { 'X-Secret-Key': this.cfg.agentToken } : {},
      body: form as unknown as import('undici').FormData,
    });
    this.takeRenewedToken(res.headers.get(RENEWED_TOKEN_HEADER));
    const text = await res.text();
    return { status: res.status, text, json: <T>() => JSON.parse(text) as T };
  }

  /**
   * The service renews an agent token past half its life on any call. The
   * config object is shared with the executors, so what they hand on (the
   * installed system's credentials) is the renewed token too.
   */
  private takeRenewedToken(token: string | null): void {
    if (token && /^[\w-]+\.[\w-]+\.[\w-]+$/.test(token)) this.cfg.agentToken = token;
  }
}
