/**
 * Serves the web UI (built by Vite into dist/web) at `/`: static files, and
 * index.html for any other page path so a reload of /clusters/<id>/hosts
 * opens the app there. API, image, probe and metrics paths are never
 * answered here: a typo under /api/ stays a JSON 404, not an HTML page.
 */
import express, { type RequestHandler, Router } from 'express';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../dev/process-utils';

const RESERVED = /^\/(api|images)(\/|$)|^\/(healthz|readyz|metrics)$/;

// The app loads and calls only its own origin. React sets styles through the CSSOM, which CSP does not
// restrict, so no 'unsafe-inline' is needed; the favicon is a data: URI.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

export function webUiDir(): string {
  return path.join(repoRoot(), 'dist', 'web');
}

export function webUiRoutes(dir: string = webUiDir()): Router {
  const router = Router();
  const index = path.join(dir, 'index.html');
  const isPage = (p: string) => !RESERVED.test(p) && !path.posix.extname(p);

  const assets = express.static(dir, {
    index: false,
    fallthrough: true,
    setHeaders: (res, file) => {
      res.setHeader('X-Content-Type-Options', 'nosniff');
      // Vite puts a content hash in every asset name: they never change under one name.
      if (file.includes(`${path.sep}assets${path.sep}`)) res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
    },
  });
  const page: RequestHandler = (req, res, next) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !isPage(req.path)) return next();
    if (!existsSync(index)) {
      res
        .status(503)
        .type('text/plain')
        .send('The Landfall web UI is not built. Build it with `npx vite build web` (scripts/setup.sh, which `npm start` runs, does this), then reload. The REST API is at /api/assisted-install/v2.\n');
      return;
    }
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('Content-Security-Policy', CSP);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'same-origin');
    res.sendFile(index);
  };
  router.use((req, res, next) => (RESERVED.test(req.path) ? next() : assets(req, res, next)));
  router.use(page);
  return router;
}
