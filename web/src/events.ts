/**
 * The live event stream (GET /v2/events/stream, Server-Sent Events) read with
 * fetch rather than EventSource: EventSource cannot send the Authorization
 * header that AUTH_TYPE=local needs, and a token in the query string would
 * end up in proxy logs. Reconnects resume after the last id seen.
 */
import { API_BASE, authHeaders, type EventRecord } from './api';

export interface StreamHandle {
  close(): void;
}

export interface StreamCallbacks {
  onEvent(e: EventRecord, id: number): void;
  onState?(state: 'live' | 'reconnecting'): void;
}

/** Splits an SSE byte stream into messages; returns the leftover partial message. */
export function parseSse(buffer: string, emit: (m: { id?: string; event?: string; data: string }) => void): string {
  const blocks = buffer.split(/\r?\n\r?\n/);
  const rest = blocks.pop() ?? '';
  for (const block of blocks) {
    let id: string | undefined;
    let event: string | undefined;
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      if (!line || line.startsWith(':')) continue;
      const at = line.indexOf(':');
      const field = at < 0 ? line : line.slice(0, at);
      const value = at < 0 ? '' : line.slice(at + 1).replace(/^ /, '');
      if (field === 'id') id = value;
      else if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length) emit({ id, event, data: data.join('\n') });
  }
  return rest;
}

export function streamClusterEvents(clusterId: string, cb: StreamCallbacks): StreamHandle {
  let lastId = 0;
  let closed = false;
  let controller: AbortController | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const connect = async (): Promise<void> => {
    controller = new AbortController();
    try {
      const res = await fetch(`${API_BASE}/events/stream?cluster_id=${encodeURIComponent(clusterId)}${lastId ? `&after=${lastId}` : ''}`, {
        headers: { Accept: 'text/event-stream', ...authHeaders() },
        signal: controller.signal,
      });
      if (!res.ok || !res.body) throw new Error(`event stream: HTTP ${res.status}`);
      cb.onState?.('live');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer = parseSse(buffer + value, (m) => {
          const id = Number(m.id);
          if (Number.isFinite(id) && id > lastId) lastId = id;
          try {
            cb.onEvent(JSON.parse(m.data) as EventRecord, id);
          } catch {
            /* a malformed message is skipped, the stream goes on */
          }
        });
      }
    } catch {
      /* closed, or the network dropped: reconnect below */
    }
    if (!closed) {
      cb.onState?.('reconnecting');
      timer = setTimeout(() => void connect(), 2000);
    }
  };
  void connect();
  return {
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      controller?.abort();
    },
  };
}
