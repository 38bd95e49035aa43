import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { LeanPool, type Outcome } from '../../bench/lean-http';

/** The load generator's HTTP client against a real node:http server: framing, reuse, limits, failures. */
describe('bench/lean-http LeanPool', () => {
  let server: http.Server;
  let port: number;
  /** Requests served per connection, in the order connections were accepted. */
  const perSocket = new Map<Socket, number>();
  let handler: (req: http.IncomingMessage, res: http.ServerResponse) => void;
  let pool: LeanPool | undefined;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      perSocket.set(req.socket, (perSocket.get(req.socket) ?? 0) + 1);
      handler(req, res);
    });
    server.keepAliveTimeout = 5000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterEach(() => {
    pool?.destroy();
    pool = undefined;
    perSocket.clear();
    server.closeAllConnections();
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const ask = (p: LeanPool, text: string, body?: string): Promise<Outcome> =>
    new Promise((resolve) => {
      const head = `${text} HTTP/1.1\r\nHost: 127.0.0.1\r\n${body !== undefined ? `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` : ''}\r\n`;
      p.request(Buffer.concat([Buffer.from(head), Buffer.from(body ?? '')]), resolve);
    });

  it('reads a Content-Length answer, a 204 and a chunked answer to their end, all on one kept-alive connection', async () => {
    handler = (req, res) => {
      if (req.url === '/empty') {
        res.statusCode = 204;
        return res.end();
      }
      if (req.url === '/chunked') {
        res.write('{"a":');
        return setTimeout(() => res.end('1}'), 20);
      }
      let n = 0;
      req.on('data', (d: Buffer) => (n += d.length));
      req.on('end', () => res.end(JSON.stringify({ got: n })));
    };
    pool = new LeanPool(port, 4, 5000);
    expect(await ask(pool, 'POST /body', '{"x":"' + 'y'.repeat(20_000) + '"}')).toEqual({ status: 200 });
    expect(await ask(pool, 'GET /empty')).toEqual({ status: 204 });
    expect(await ask(pool, 'GET /chunked')).toEqual({ status: 200 });
    expect(await ask(pool, 'GET /after')).toEqual({ status: 200 });
    expect([...perSocket.values()]).toEqual([4]);
  });

  it('opens no more than maxSockets connections; requests beyond wait and are all answered', async () => {
    let open = 0;
    let most = 0;
    handler = (_req, res) => {
      most = Math.max(most, ++open);
      setTimeout(() => {
        open--;
        res.end('ok');
      }, 30);
    };
    pool = new LeanPool(port, 2, 5000);
    const p = pool;
    const outcomes = await Promise.all(Array.from({ length: 7 }, (_, i) => ask(p, `GET /r${i}`)));
    expect(outcomes).toEqual(Array.from({ length: 7 }, () => ({ status: 200 })));
    expect(most).toBe(2);
    expect(perSocket.size).toBe(2);
  });

  it('hands idle connections out first-in first-out, so each takes its share', async () => {
    handler = (_req, res) => setTimeout(() => res.end('ok'), 10);
    pool = new LeanPool(port, 4, 5000);
    const p = pool;
    await Promise.all(Array.from({ length: 4 }, () => ask(p, 'GET /open')));
    for (let i = 0; i < 8; i++) await ask(p, 'GET /next');
    expect([...perSocket.values()]).toEqual([3, 3, 3, 3]);
  });

  it('takes a new connection after the server says Connection: close', async () => {
    handler = (req, res) => {
      if (req.url === '/bye') res.setHeader('Connection', 'close');
      res.end('ok');
    };
    pool = new LeanPool(port, 4, 5000);
    expect(await ask(pool, 'GET /bye')).toEqual({ status: 200 });
    expect(await ask(pool, 'GET /again')).toEqual({ status: 200 });
    expect(perSocket.size).toBe(2);
  });

  it('reports a connection the server drops as a transport error, marked when the connection had served before', async () => {
    handler = (req, res) => (req.url === '/drop' ? req.socket.destroy() : res.end('ok'));
    pool = new LeanPool(port, 1, 5000);
    const first = await ask(pool, 'GET /drop');
    expect(first).toEqual({ error: 'error', code: 'ECONNRESET' });
    expect(await ask(pool, 'GET /fine')).toEqual({ status: 200 });
    expect(await ask(pool, 'GET /drop')).toEqual({ error: 'error', code: 'ECONNRESET (reused connection)' });
  });

  it('times out a request the server never answers, and the connection is not reused', async () => {
    handler = (req, res) => {
      if (req.url !== '/never') res.end('ok');
    };
    pool = new LeanPool(port, 1, 300);
    const started = Date.now();
    expect(await ask(pool, 'GET /never')).toEqual({ error: 'timeout' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(await ask(pool, 'GET /then')).toEqual({ status: 200 });
    expect(perSocket.size).toBe(2);
  });
});
