/**
 * The road from simulated hosts to the API, with a record of every exchange:
 * an HTTP proxy on a Unix socket in the root namespace that forwards to the
 * API on loopback. A socket file is reachable from every network namespace,
 * so a byte pipe in the test network (see upstream-agents.ts) can hand the
 * hosts' connections to it without giving the root namespace an address on
 * the test network.
 *
 * The record lets a test assert what the agents sent and what they were
 * answered (no 4xx/5xx, the replies' shapes). `maxPollSeconds` shortens the
 * poll interval the service asks for (60 s) so a test is not minutes of
 * waiting; it changes nothing else in any answer.
 */
import http from 'node:http';
import { rmSync } from 'node:fs';

export interface Exchange {
  at: number;
  method: string;
  url: string;
  status: number;
  requestBody: string;
  responseBody: string;
}

export interface AgentApiProxy {
  socketPath: string;
  exchanges: Exchange[];
  close(): Promise<void>;
}

/** Bodies bigger than this are kept cut short (log uploads). */
const KEEP_BYTES = 64 * 1024;

export async function startAgentApiProxy(opts: { socketPath: string; target: string; maxPollSeconds?: number }): Promise<AgentApiProxy> {
  const target = new URL(opts.target);
  const exchanges: Exchange[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const headers = { ...req.headers, host: target.host };
      const up = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers }, (upRes) => {
        const out: Buffer[] = [];
        upRes.on('data', (c: Buffer) => out.push(c));
        upRes.on('end', () => {
          let resBody: Buffer = Buffer.concat(out);
          const resHeaders = { ...upRes.headers };
          if (opts.maxPollSeconds !== undefined && req.method === 'GET' && /\/instructions(\?|$)/.test(req.url ?? '') && upRes.statusCode === 200) {
            resBody = capPollInterval(resBody, opts.maxPollSeconds);
            resHeaders['content-length'] = String(resBody.length);
          }
          exchanges.push({
            at: Date.now(),
            method: req.method ?? '',
            url: req.url ?? '',
            status: upRes.statusCode ?? 0,
            requestBody: body.subarray(0, KEEP_BYTES).toString('utf8'),
            responseBody: resBody.subarray(0, KEEP_BYTES).toString('utf8'),
          });
          res.writeHead(upRes.statusCode ?? 502, resHeaders);
          res.end(resBody);
        });
      });
      up.on('error', (err) => {
        // The API not answering is recorded like any failure the agent would have seen.
        exchanges.push({ at: Date.now(), method: req.method ?? '', url: req.url ?? '', status: 502, requestBody: body.toString('utf8').slice(0, KEEP_BYTES), responseBody: err.message });
        res.writeHead(502).end();
      });
      up.end(body);
    });
  });
  rmSync(opts.socketPath, { force: true });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(opts.socketPath, resolve));
  return {
    socketPath: opts.socketPath,
    exchanges,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function capPollInterval(body: Buffer, maxSeconds: number): Buffer {
  try {
    const steps = JSON.parse(body.toString('utf8')) as { next_instruction_seconds?: number };
    if (typeof steps.next_instruction_seconds === 'number' && steps.next_instruction_seconds > maxSeconds) {
      steps.next_instruction_seconds = maxSeconds;
      return Buffer.from(JSON.stringify(steps));
    }
  } catch {
    /* not JSON: passed on untouched, the agent reports it */
  }
  return body;
}
