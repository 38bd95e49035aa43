/**
 * The agent takes the renewed token the service hands it (X-Landfall-Agent-Token)
 * and sends that one from then on; the config it shares with its executors
 * carries it too (the installed system's credentials are copied from there).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ServiceClient, createDispatcher } from '../../agent/service-client';
import type { AgentConfig } from '../../agent/config';

it('sends the renewed token on every later call, and ignores a malformed one', async () => {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(String(req.headers['x-secret-key']));
    if (seen.length === 1) res.setHeader('X-Landfall-Agent-Token', 'aaa.bbb.ccc');
    if (seen.length === 2) res.setHeader('X-Landfall-Agent-Token', 'not a token');
    res.end('{}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const cfg = { serviceUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, infraEnvId: 'ie', agentToken: 'old.token.x', agentVersion: 'test', pollIntervalSeconds: 1 } as AgentConfig;
    const client = new ServiceClient(cfg, createDispatcher(cfg).dispatcher, 0);
    for (let i = 0; i < 3; i++) expect((await client.request('GET', '/x')).status).toBe(200);
    expect(seen).toEqual(['old.token.x', 'aaa.bbb.ccc', 'aaa.bbb.ccc']);
    expect(cfg.agentToken).toBe('aaa.bbb.ccc');
  } finally {
    server.close();
  }
});
