/**
 * Fleet simulator capacity (not a timed test): how many simulated agents one
 * `landfall fleet` process sustains, at what CPU and memory.
 *
 *   npm run bench:fleet -- [--hosts 2000] [--poll-seconds 10] [--duration 40]
 *
 * One API child process against an embedded PostgreSQL, one fleet child
 * process; the fleet's CPU time and RSS come from /proc. Figures are reported
 * per 1,000 hosts at the service's real 60 s poll (scaled linearly from the
 * faster poll the run uses to get enough samples).
 */
import { benchDatabase, numberFlag, rssMb, watchdog } from './support';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { freePort, repoRoot, sleep, stopProcess, waitForPort } from '../src/dev/process-utils';

const arg = numberFlag;
const TICK = 100; // USER_HZ on Linux
function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / TICK;
}

async function main(): Promise<void> {
  const hosts = arg('hosts', 2000);
  const poll = arg('poll-seconds', 10);
  const duration = arg('duration', 40);
  const dog = watchdog((duration + 120) * 1000);
  const { dir, pg } = await benchDatabase('fleet');
  const port = await freePort();
  const main = path.join(repoRoot(), 'dist/src/cli/main.js');
  const api = spawn(process.execPath, [main, 'api'], {
    env: { PATH: process.env.PATH, DATABASE_URL: pg.url, DATABASE_POOL_MAX: '20', API_PORT: String(port), API_HOST: '127.0.0.1', TEMPORAL_ADDRESS: '127.0.0.1:1', STORAGE_LOCAL_DIR: path.join(dir, 'objects'), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  try {
    await waitForPort('127.0.0.1', port, 30000, 'api', api);
    const r = await fetch(`http://127.0.0.1:${port}/api/assisted-install/v2/infra-envs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'fleet', pull_secret: '{"auths":{}}' }) });
    const ie = (await r.json()) as { id: string };
    const fleet = spawn(process.execPath, [main, 'fleet', '--url', `http://127.0.0.1:${port}`, '--infra-env', ie.id, '--count', String(hosts), '--profiles', 'control-plane:3,worker:2', '--poll-seconds', String(poll), '--duration-seconds', String(duration)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let report = '';
    fleet.stdout!.on('data', (d: Buffer) => (report += d.toString()));
    // Measure after the ramp: the steady state of polling.
    const ramp = Math.min(10, hosts / 200) + 5;
    await sleep(ramp * 1000);
    const c0 = cpuSeconds(fleet.pid!);
    const a0 = cpuSeconds(api.pid!);
    const t0 = Date.now();
    let peakRss = 0;
    while (fleet.exitCode === null && Date.now() - t0 < (duration - ramp - 2) * 1000) {
      peakRss = Math.max(peakRss, rssMb(fleet.pid!));
      await sleep(1000);
    }
    const secs = (Date.now() - t0) / 1000;
    const fleetCpu = (cpuSeconds(fleet.pid!) - c0) / secs;
    const apiCpu = (cpuSeconds(api.pid!) - a0) / secs;
    await new Promise((res) => (fleet.exitCode !== null ? res(undefined) : fleet.once('exit', res)));
    const out = JSON.parse(report) as { registered: number; polls: number; replies: number; failures: number };
    const perThousandAt60 = (fleetCpu / hosts) * 1000 * (poll / 60);
    console.log(`\nfleet benchmark: ${hosts} simulated hosts in one process, polling every ${poll} s for ${duration} s`);
    console.log(`registered ${out.registered}/${hosts}, ${out.polls} polls (${(out.polls / duration).toFixed(0)}/s), ${out.replies} replies, ${out.failures} failures`);
    console.log(`fleet process: ${(fleetCpu * 100).toFixed(1)}% of one core, peak RSS ${peakRss.toFixed(0)} MB (${((peakRss * 1024) / hosts).toFixed(0)} KB per host)`);
    console.log(`api process:   ${(apiCpu * 100).toFixed(1)}% of one core while serving them`);
    console.log(`at the real 60 s poll: ${(perThousandAt60 * 100).toFixed(2)}% of a core per 1,000 simulated hosts → one core drives ~${Math.floor(1000 / perThousandAt60).toLocaleString()} hosts`);
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
