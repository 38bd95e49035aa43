import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The web UI is built into dist/web, which the API process serves at `/`
// (src/api/web-ui.ts). Vite's built-in oxc transform compiles the TSX; no plugin.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  oxc: { jsx: { runtime: 'automatic' } },
  build: {
    outDir: '../dist/web',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 400,
  },
  server: {
    // `vite web` during UI work: the API of `npm start` answers the API paths.
    proxy: { '/api': 'http://localhost:8090' },
  },
});
