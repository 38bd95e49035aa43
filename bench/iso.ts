/**
 * Discovery ISO benchmark (not a timed test), in one run:
 *   - read the base ISO from disk, then download the discovery ISO over loopback: throughput ratio (target ≥ 0.9);
 *   - RSS the API process adds while serving 20 parallel downloads (target < 64 MB);
 *   - time to first byte of a download (target < 50 ms).
 *
 *   npm run bench:iso -- [--size-mb 512] [--parallel 20]
 *
 * The base ISO is a synthetic CoreOS-style live ISO built with xorriso (nothing is downloaded).
 */
import { spawn } from 'node:child_process';
import { createReadStream, readFileSync } from 'node:fs';
import path from 'node:path';
import { buildSyntheticLiveIso } from '../test/support/live-iso';
import { freePort, repoRoot, stopProcess, waitForPort } from '../src/dev/process-utils';
import { benchDatabase, numberFlag, watchdog } from './support';

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

async function drain(url: string): Promise<{ bytes: number; ttfbMs: number; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(url);
  if (res.status !== 200 || !res.body) throw new Error(`download answered ${res.status}`);
  let ttfb = 0;
  let bytes = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    if (!ttfb) ttfb = performance.now() - t0;
    bytes += chunk.length;
  }
  return { bytes, ttfbMs: ttfb, ms: performance.now() - t0 };
}

async function main(): Promise<void> {
  const sizeMb = numberFlag('size-mb', 512);
  const parallel = numberFlag('parallel', 20);
  const dog = watchdog(15 * 60_000);
  const iso = await buildSyntheticLiveIso({ fillerBytes: sizeMb * 1024 * 1024, name: 'bench.iso' });
  const { dir, pg } = await benchDatabase('iso');
  const port = await freePort();
  const api = spawn(process.execPath, [path.join(repoRoot(), 'dist/src/cli/main.js'), 'api'], {
    env: { PATH: process.env.PATH, DATABASE_URL: pg.url, API_PORT: String(port), API_HOST: '127.0.0.1', TEMPORAL_ADDRESS: '127.0.0.1:1', STORAGE_LOCAL_DIR: path.join(dir, 'objects'), LOG_LEVEL: 'warn', BASE_ISO_PATH: iso.path, SERVICE_BASE_URL: `http://127.0.0.1:${port}` },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  try {
    await waitForPort('127.0.0.1', port, 30000, 'api', api);
    const base = `http://127.0.0.1:${port}/api/assisted-install/v2`;
    const ie = (await (await fetch(`${base}/infra-envs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bench', pull_secret: '{"auths":{}}', image_type: 'full-iso' }) })).json()) as { id: string };
    const url = ((await (await fetch(`${base}/infra-envs/${ie.id}/downloads/image-url`)).json()) as { url: string }).url;

    // Disk: the base image read once to warm the page cache, then timed.
    const readDisk = async () => {
      const t = performance.now();
      for await (const _ of createReadStream(iso.path, { highWaterMark: 1024 * 1024 })) void _;
      return performance.now() - t;
    };
    await readDisk();
    const diskMs = await readDisk();
    await drain(url);
    const one = await drain(url);
    if (one.bytes !== iso.size) throw new Error(`downloaded ${one.bytes} bytes, the image has ${iso.size}`);

    const idle = rssMb(api.pid!);
    let peak = idle;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb(api.pid!))), 50);
    const many = await Promise.all(Array.from({ length: parallel }, () => drain(url)));
    clearInterval(sampler);
    const ttfbs = many.map((m) => m.ttfbMs).sort((a, b) => a - b);
    const diskMBs = sizeMb / (diskMs / 1000);
    const netMBs = sizeMb / (one.ms / 1000);
    console.log(`\ndiscovery ISO benchmark: ${sizeMb} MiB synthetic live ISO, one API process, loopback`);
    console.log(`read from disk          ${diskMBs.toFixed(0)} MiB/s`);
    console.log(`download (one)          ${netMBs.toFixed(0)} MiB/s   ratio ${(netMBs / diskMBs).toFixed(2)}   target ≥ 0.9: ${netMBs / diskMBs >= 0.9 ? 'met' : 'MISSED'}`);
    console.log(`time to first byte      one ${one.ttfbMs.toFixed(1)} ms; ${parallel} parallel p50 ${ttfbs[Math.floor(parallel / 2)]!.toFixed(1)} ms, max ${ttfbs.at(-1)!.toFixed(1)} ms   target < 50 ms`);
    console.log(`RSS added by ${parallel} parallel downloads   ${(peak - idle).toFixed(1)} MB (idle ${idle.toFixed(0)} MB, peak ${peak.toFixed(0)} MB)   target < 64 MB: ${peak - idle < 64 ? 'met' : 'MISSED'}`);
  } finally {
    await stopProcess(api, 5000);
    await pg.stop();
    clearTimeout(dog);
  }
}

main().catch((err) => {
  console.error(`bench: ${(err as Error).message}`);
  process.exit(1);
});
