/**
 * The agent's HTTP client against a real server on loopback: a service URL
 * with a path before the API's (a service behind a proxy's prefix) keeps it,
 * the request's body, headers and method arrive as sent, and an HTTP proxy
 * (HTTP_PROXY) is used when the config names one.
 */
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { ServiceClient, createDispatcher } from '../../agent/service-client';
import type { AgentConfig } from '../../agent/config';

async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

describe('ServiceClient', () => {
  it('keeps the service URL path, and sends the method, headers and JSON body', async () => {
    const seen: Array<{ method?: string; url?: string; version?: unknown; type?: unknown; body: string }> = [];
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ method: req.method, url: req.url, version: req.headers['discovery_agent_version'], type: req.headers['content-type'], body });
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end('{"ok":true}');
      });
    });
    const port = await listen(server);
    try {
      const cfg = { serviceUrl: `http://127.0.0.1:${port}/landfall`, infraEnvId: 'ie', agentToken: '', agentVersion: 'v-test' } as AgentConfig;
      const answer = await new ServiceClient(cfg, createDispatcher(cfg).dispatcher, 0).request('POST', '/infra-envs/ie/hosts', { host_id: 'h1' });
      expect(answer.status).toBe(201);
      expect(answer.json<{ ok: boolean }>().ok).toBe(true);
      expect(seen).toEqual([{ method: 'POST', url: '/landfall/api/assisted-install/v2/infra-envs/ie/hosts', version: 'v-test', type: 'application/json', body: '{"host_id":"h1"}' }]);
    } finally {
      server.close();
    }
  });

  it('goes through the HTTP proxy the config names', async () => {
    const service = http.createServer((req, res) => res.end(JSON.stringify({ url: req.url })));
    const servicePort = await listen(service);
    // A CONNECT proxy that records where it was asked to go.
    const tunnels: string[] = [];
    const proxy = http.createServer((_req, res) => res.writeHead(405).end());
    proxy.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
      tunnels.push(String(req.url));
      const [host, port] = String(req.url).split(':');
      const upstream = net.connect(Number(port), host!, () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
    });
    const proxyPort = await listen(proxy);
    try {
      const cfg = { serviceUrl: `http://127.0.0.1:${servicePort}`, infraEnvId: 'ie', agentToken: '', agentVersion: 't', httpProxy: `http://127.0.0.1:${proxyPort}` } as AgentConfig;
      const { dispatcher, proxy: used } = createDispatcher(cfg);
      expect(used).toBe(cfg.httpProxy);
      const answer = await new ServiceClient(cfg, dispatcher, 0).request('GET', '/x?timestamp=1');
      expect(answer.status).toBe(200);
      expect(answer.json<{ url: string }>().url).toBe('/api/assisted-install/v2/x?timestamp=1');
      expect(tunnels).toEqual([`127.0.0.1:${servicePort}`]);
      await dispatcher.close();
    } finally {
      service.closeAllConnections();
      service.close();
      proxy.closeAllConnections();
      proxy.close();
    }
  });
});
