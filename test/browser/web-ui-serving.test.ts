/**
 * How the API process serves the built UI (src/api/web-ui.ts), on a small
 * express app with a throwaway dist/web: pages fall back to index.html,
 * assets are cached for good, reserved paths pass through, and a missing
 * build answers with how to make it.
 */
import express from 'express';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { webUiRoutes } from '../../src/api/web-ui';

async function serve(dir: string): Promise<{ url: string; server: Server }> {
  const app = express();
  app.use(webUiRoutes(dir));
  app.use((req, res) => {
    res.status(404).json({ reason: `no route for ${req.method} ${req.path}` });
  });
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'web-ui-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('web UI serving', () => {
  it('serves index.html for page paths, assets with a long cache, and leaves reserved paths alone', async () => {
    const dir = path.join(tmp, 'built');
    mkdirSync(path.join(dir, 'assets'), { recursive: true });
    writeFileSync(path.join(dir, 'index.html'), '<!doctype html><div id="root"></div>');
    writeFileSync(path.join(dir, 'assets', 'index-abc123.js'), 'console.log(1)');
    const { url, server } = await serve(dir);
    try {
      for (const page of ['/', '/clusters', '/clusters/0b5a4c1e-0000-4000-8000-000000000000/progress', '/token']) {
        const res = await fetch(`${url}${page}`);
        expect([page, res.status, await res.text()]).toEqual([page, 200, '<!doctype html><div id="root"></div>']);
        expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
        expect(res.headers.get('cache-control')).toBe('no-cache');
      }
      const asset = await fetch(`${url}/assets/index-abc123.js`);
      expect(asset.status).toBe(200);
      expect(asset.headers.get('cache-control')).toContain('immutable');
      expect((await fetch(`${url}/assets/gone-123.js`)).status).toBe(404);
      for (const reserved of ['/api/assisted-install/v2/clusters', '/api', '/images/x/full.iso', '/healthz', '/readyz', '/metrics']) {
        const res = await fetch(`${url}${reserved}`);
        expect([reserved, res.status, ((await res.json()) as { reason: string }).reason]).toEqual([reserved, 404, `no route for GET ${reserved}`]);
      }
      expect((await fetch(`${url}/clusters`, { method: 'POST' })).status).toBe(404);
    } finally {
      server.close();
    }
  });

  it('says how to build the UI when dist/web is missing', async () => {
    const { url, server } = await serve(path.join(tmp, 'never-built'));
    try {
      const res = await fetch(`${url}/`);
      expect(res.status).toBe(503);
      expect(await res.text()).toMatch(/web UI is not built.*npx vite build web/);
      expect((await fetch(`${url}/healthz`)).status).toBe(404);
    } finally {
      server.close();
    }
  });
});
