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
import { execFile, spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { promisify } from 'node:util';
import path from 'node:path';
import { buildSyntheticLiveIso } from '../test/support/live-iso';
import { freePort, repoRoot, stopProcess, waitForPort } from '../src/dev/process-utils';
import { apiCaller, benchDatabase, checkOptions, numberFlag, rssMb, watchdog } from './support';

checkOptions('usage: node dist/bench/iso.js [--size-mb 512] [--parallel 20]', { numbers: ['size-mb', 'parallel'] });

/**
 * A download by curl, the client a person or a provisioning script would use
 * (Node's fetch spends more CPU per byte than the server does, and on two
 * cores it would be measuring itself).
 */
async function curl(url: string, parallel = 1): Promise<Array<{ bytes: number; ttfbMs: number; ms: number }>> {
  // One curl process runs all the parallel transfers (--parallel-immediate opens every connection at once),
  // so the measurement is not of twenty process start-ups.
  const args = ['-sS', '-w', '%{http_code} %{size_download} %{time_starttransfer} %{time_total}\\n'];
  if (parallel > 1) args.push('--parallel', '--parallel-immediate', '--parallel-max', String(parallel));
  for (let i = 0; i < parallel; i++) args.push('-o', '/dev/null', url);
  const { stdout } = await promisify(execFile)('curl', args, { maxBuffer: 1 << 20 });
  return stdout
    .trim()
    .split('\n')
    .map((line) => {
      const [code, size, ttfb, total] = line.split(' ');
      if (code !== '200') throw new Error(`download answered ${code}`);
      return { bytes: Number(size), ttfbMs: Number(ttfb) * 1000, ms: Number(total) * 1000 };
    });
}

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
    const call = apiCaller(base);
    const ie = (await call('POST', '/infra-envs', { name: 'bench', pull_secret: '{"auths":{}}', image_type: 'full-iso' })) as { id: string };
    const { url } = (await call('GET', `/infra-envs/${ie.id}/downloads/image-url`)) as { url: string };

    // Disk: the base image read once to warm the page cache, then timed.
    const readDisk = async () => {
      const t = performance.now();
      for await (const _ of createReadStream(iso.path, { highWaterMark: 1024 * 1024 })) void _;
      return performance.now() - t;
    };
    await readDisk();
    const diskMs = await readDisk();
    await curl(url);
    const [one] = (await curl(url)) as [{ bytes: number; ttfbMs: number; ms: number }];
    const oneFetch = await drain(url);
    if (one.bytes !== iso.size) throw new Error(`downloaded ${one.bytes} bytes, the image has ${iso.size}`);

    const idle = rssMb(api.pid!);
    let peak = idle;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb(api.pid!))), 50);
    const running = curl(url, parallel);
    // A download that starts while the others are in full flow (a BMC arriving late).
    await new Promise((r) => setTimeout(r, 300));
    const late: number[] = [];
    for (let i = 0; i < 5; i++) late.push((await curl(url.replace('full.iso', 'full.iso'), 1))[0]!.ttfbMs);
    const many = await running;
    clearInterval(sampler);
    const ttfbs = many.map((m) => m.ttfbMs).sort((a, b) => a - b);
    const diskMBs = sizeMb / (diskMs / 1000);
    const netMBs = sizeMb / (one.ms / 1000);
    console.log(`\ndiscovery ISO benchmark: ${sizeMb} MiB synthetic live ISO, one API process, loopback`);
    console.log(`read from disk          ${diskMBs.toFixed(0)} MiB/s`);
    console.log(`download (one, curl)    ${netMBs.toFixed(0)} MiB/s   ratio ${(netMBs / diskMBs).toFixed(2)}   target ≥ 0.9: ${netMBs / diskMBs >= 0.9 ? 'met' : 'MISSED'}`);
    console.log(`download (one, fetch)   ${(sizeMb / (oneFetch.ms / 1000)).toFixed(0)} MiB/s   (Node's fetch as the client, for comparison)`);
    console.log(`time to first byte      one ${one.ttfbMs.toFixed(1)} ms; ${parallel} parallel p50 ${ttfbs[Math.floor(parallel / 2)]!.toFixed(1)} ms, max ${ttfbs.at(-1)!.toFixed(1)} ms   target < 50 ms`);
    console.log(`time to first byte      of a download started while ${parallel} others run: median of 5 ${late.sort((a, b) => a - b)[2]!.toFixed(1)} ms`);
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
