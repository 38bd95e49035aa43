/**
 * Reads the service's live event stream (`GET /v2/events/stream`, Server-Sent
 * Events). The stream resumes after Last-Event-ID, so a dropped connection is
 * reopened where it stopped instead of replaying or losing events.
 */
import { CliError } from './exit-codes';
import type { ApiClient, Json } from './api-client';

const RECONNECT_MS = 1000;
/** A connection that keeps failing this long means the service is gone. */
const GIVE_UP_MS = 30000;

export interface StreamedEvent {
  seq: number;
  event: Json;
}

export async function* followEvents(api: ApiClient, clusterId: string, signal: AbortSignal, after = 0): AsyncGenerator<StreamedEvent> {
  let cursor = after;
  let failingSince: number | undefined;
  while (!signal.aborted) {
    try {
      const res = await api.fetch('/events/stream', { query: { cluster_id: clusterId }, headers: { Accept: 'text/event-stream', ...(cursor ? { 'Last-Event-ID': String(cursor) } : {}) }, signal });
      failingSince = undefined;
      for await (const msg of parseSse(res.body!, signal)) {
        if (!msg.data) continue;
        const seq = Number(msg.id);
        if (Number.isFinite(seq)) cursor = seq;
        yield { seq, event: JSON.parse(msg.data) };
      }
    } catch (err) {
      if (signal.aborted) return;
      // An HTTP refusal (unknown cluster, bad token) will not fix itself.
      if (err instanceof CliError && err.kind !== 'unreachable') throw err;
      failingSince ??= Date.now();
      if (Date.now() - failingSince > GIVE_UP_MS) throw err instanceof CliError ? err : new CliError('unreachable', `event stream lost: ${(err as Error).message}`);
    }
    await new Promise((r) => setTimeout(r, RECONNECT_MS));
  }
}

interface SseMessage {
  id?: string;
  event?: string;
  data: string;
}

export async function* parseSse(body: ReadableStream<Uint8Array>, signal: AbortSignal): AsyncGenerator<SseMessage> {
  const decoder = new TextDecoder();
  let buf = '';
  let msg: SseMessage = { data: '' };
  const reader = body.getReader();
  const onAbort = () => void reader.cancel().catch(() => undefined);
  signal.addEventListener('abort', onAbort);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buf += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).replace(/\r$/, '');
        buf = buf.slice(nl + 1);
        if (line === '') {
          if (msg.data || msg.id) yield msg;
          msg = { data: '' };
        } else if (!line.startsWith(':')) {
          const i = line.indexOf(':');
          const field = i < 0 ? line : line.slice(0, i);
          const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
          if (field === 'data') msg.data = msg.data ? `${msg.data}\n${value}` : value;
          else if (field === 'id') msg.id = value;
          else if (field === 'event') msg.event = value;
        }
      }
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
