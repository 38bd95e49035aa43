/**
 * A small HTTP/1.1 client for the load generator (bench/agent-load.ts): keep-alive
 * connections to one server, one request at a time on each (no pipelining, as
 * an agent sends), requests written as prepared bytes and answers read only as
 * far as the status, the framing and `Connection: close`.
 *
 * Why not node:http: the generator shares the two cores with the API and
 * PostgreSQL, and Node's client cost ~165 µs of CPU per request there (its
 * request and response objects, header handling, streams), CPU the API under
 * test did not get. What this keeps of it: every answer read to its end before
 * the connection takes another request, the server's keep-alive honoured (a
 * connection idle for IDLE_CLOSE_MS is closed, well before the server's
 * API_KEEP_ALIVE_TIMEOUT_MS would close it, and before Node's default 5 s),
 * a request waiting when every connection is busy and the limit is reached,
 * and transport errors reported by code, marked when the connection had
 * served before (a race with the server closing it, not the API failing).
 */
import net from 'node:net';

/** How a request ended: its status, or a transport error (`code`) or timeout. */
export type Outcome = { status: number } | { error: 'error' | 'timeout'; code?: string };

interface Pending {
  bytes: Buffer;
  done: (o: Outcome) => void;
  /** performance.now() when it was written, for the timeout sweep. */
  sentAt: number;
}

const CRLF2 = Buffer.from('\r\n\r\n');
const LAST_CHUNK = Buffer.from('0\r\n\r\n');
/** Below any server's keep-alive (Node's default is 5 s, the API's 100 s): a connection idle this long is closed, not reused. */
const IDLE_CLOSE_MS = 4000;

class Connection {
  readonly socket: net.Socket;
  current: Pending | undefined;
  idleSince = 0;
  served = 0;
  closed = false;
  private buf: Buffer | undefined;
  /** Once the head is read: where the body starts and how it ends. */
  private head: { bodyAt: number; length?: number; chunked: boolean; close: boolean; status: number } | undefined;

  constructor(port: number, private readonly pool: LeanPool) {
    this.socket = net.connect({ host: '127.0.0.1', port, noDelay: true });
    this.socket.on('data', (d: Buffer) => this.onData(d));
    this.socket.on('error', (e: NodeJS.ErrnoException) => this.fail(e.code ?? e.message));
    this.socket.on('close', () => this.fail('ECONNRESET'));
  }

  send(p: Pending): void {
    this.current = p;
    this.buf = undefined;
    this.head = undefined;
    this.socket.write(p.bytes);
  }

  private onData(d: Buffer): void {
    if (!this.current) {
      // Bytes nobody asked for: the connection is not in a state to reuse.
      this.socket.destroy();
      return;
    }
    const buf = (this.buf = this.buf ? Buffer.concat([this.buf, d]) : d);
    if (!this.head) {
      const end = buf.indexOf(CRLF2);
      if (end < 0) return;
      const text = buf.toString('latin1', 0, end);
      const status = Number(text.slice(9, 12));
      const length = /\r\ncontent-length:[ \t]*(\d+)/i.exec(text);
      this.head = {
        bodyAt: end + 4,
        status,
        chunked: /\r\ntransfer-encoding:[^\r]*chunked/i.test(text),
        close: /\r\nconnection:[ \t]*close/i.test(text),
        // No body: 204 and 304 (a HEAD is never sent here); otherwise its length, or to the last chunk.
        ...(status === 204 || status === 304 ? { length: 0 } : length ? { length: Number(length[1]) } : {}),
      };
    }
    const h = this.head;
    if (h.length !== undefined) {
      if (buf.length - h.bodyAt < h.length) return;
    } else if (h.chunked) {
      // Ends with the last chunk (one request at a time: nothing follows it), right after the head or a chunk's CRLF.
      const n = buf.length;
      if (n - h.bodyAt < 5 || !buf.subarray(n - 5).equals(LAST_CHUNK) || (n - 5 !== h.bodyAt && buf[n - 6] !== 0x0a)) return;
    } else {
      // Neither: the body ends when the server closes the connection ('close' ends it).
      return;
    }
    const p = this.current;
    this.current = undefined;
    this.served++;
    if (h.close) this.close();
    p.done({ status: h.status });
    if (!this.closed) this.pool.idle(this);
  }

  /** The connection failed or closed: its request, if any, fails (or ends, for a body delimited by the close). */
  private fail(code: string): void {
    const wasClosed = this.closed;
    this.closed = true;
    this.pool.gone(this);
    const p = this.current;
    this.current = undefined;
    if (!p) return;
    if (this.head && this.head.length === undefined && !this.head.chunked && !wasClosed) p.done({ status: this.head.status });
    else p.done({ error: 'error', code: `${code}${this.served > 0 ? ' (reused connection)' : ''}` });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.pool.gone(this);
    this.socket.destroy();
  }
}

export class LeanPool {
  private readonly idleList: Connection[] = [];
  private readonly waiting: Pending[] = [];
  private readonly all = new Set<Connection>();
  private readonly sweep: NodeJS.Timeout;

  constructor(
    private readonly port: number,
    private readonly maxSockets: number,
    private readonly timeoutMs: number,
  ) {
    // One timer for every request's timeout, not one per request.
    this.sweep = setInterval(() => {
      const now = performance.now();
      for (const c of this.all) {
        if (c.current && now - c.current.sentAt > this.timeoutMs) {
          const p = c.current;
          c.current = undefined;
          c.close();
          p.done({ error: 'timeout' });
        }
      }
    }, 250);
    this.sweep.unref();
  }

  /** Sends a request (its whole bytes) on an idle connection, a new one, or when one frees up. */
  request(bytes: Buffer, done: (o: Outcome) => void): void {
    const p: Pending = { bytes, done, sentAt: 0 };
    const c = this.take();
    if (c) this.start(c, p);
    else this.waiting.push(p);
  }

  /**
   * An idle connection in first-in first-out order (every connection takes its
   * share, so the server's processes, which each own some, share the load as
   * they would many agents'), dropping those idle too long; or a new one while
   * under the limit.
   */
  private take(): Connection | undefined {
    const now = performance.now();
    while (this.idleList.length) {
      const c = this.idleList.shift()!;
      if (c.closed) continue;
      if (now - c.idleSince < IDLE_CLOSE_MS) return c;
      c.close();
    }
    if (this.all.size >= this.maxSockets) return undefined;
    const c = new Connection(this.port, this);
    this.all.add(c);
    return c;
  }

  private start(c: Connection, p: Pending): void {
    p.sentAt = performance.now();
    c.send(p);
  }

  /** Called by a connection that finished a request and stays open. */
  idle(c: Connection): void {
    const next = this.waiting.shift();
    if (next) return this.start(c, next);
    c.idleSince = performance.now();
    this.idleList.push(c);
  }

  /** Called by a connection that closed: a waiting request gets a new one. */
  gone(c: Connection): void {
    this.all.delete(c);
    if (this.waiting.length) {
      const n = this.take();
      if (n) this.start(n, this.waiting.shift()!);
    }
  }

  destroy(): void {
    clearInterval(this.sweep);
    for (const c of [...this.all]) c.close();
    for (const p of this.waiting.splice(0)) p.done({ error: 'error', code: 'destroyed' });
  }
}
