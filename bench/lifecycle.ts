/**
 * Lifecycle benchmark (not a timed test): how long from an agent's report to
 * the new validations being visible through the API, and what a refresh of a
 * cluster with N hosts costs when connectivity is a full mesh (O(n²) probes).
 *
 *   npm run bench:lifecycle -- [--hosts 100] [--samples 200]
 *
 * One `landfall api` child process against an embedded PostgreSQL; hosts are
 * simulated (the agent's simulated executor makes their inventories and full
 * connectivity reports). Targets: report → visible p99 under 200 ms.
 */
import { apiCaller, benchDatabase, checkOptions, numberFlag, watchdog } from './support';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { SimulatedExecutor, SimulatedNetwork, simulatedIdentity } from '../agent/executors/simulated';
import { loadProfile } from '../agent/profiles';
import { freePort, repoRoot, stopProcess, waitForPort } from '../src/dev/process-utils';

checkOptions('usage: node dist/bench/lifecycle.js [--hosts 100] [--samples 200] [--cpu-prof]', { numbers: ['hosts', 'samples'], switches: ['cpu-prof'] });

const arg = numberFlag;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

async function main(): Promise<void> {
  const hosts = arg('hosts', 100);
  const samples = arg('samples', 200);
  const dog = watchdog(15 * 60_000);
  const { dir, pg } = await benchDatabase('lifecycle');
  const port = await freePort();
  const profDir = path.join(dir, 'prof');
  const cpuProf = process.argv.includes('--cpu-prof') ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [];
  const api = spawn(process.execPath, [...cpuProf, path.join(repoRoot(), 'dist/src/cli/main.js'), 'api'], {
    env: { PATH: process.env.PATH, DATABASE_URL: pg.url, API_PORT: String(port), API_HOST: '127.0.0.1', TEMPORAL_ADDRESS: '127.0.0.1:1', STORAGE_LOCAL_DIR: path.join(dir, 'objects'), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  try {
    await waitForPort('127.0.0.1', port, 30000, 'api', api);
    const base = `http://127.0.0.1:${port}/api/assisted-install/v2`;
    const call = apiCaller(base);
    const pullSecret = JSON.stringify({ auths: { x: { auth: 'eDp5' } } });
    const cluster = await call('POST', '/clusters', { name: 'bench', openshift_version: '1.31', pull_secret: pullSecret, base_dns_domain: 'example.com', machine_networks: [{ cidr: '192.168.127.0/24' }], api_vips: [{ ip: '192.168.127.250' }], ingress_vips: [{ ip: '192.168.127.251' }] });
    const ie = await call('POST', '/infra-envs', { name: 'bench', pull_secret: pullSecret, cluster_id: cluster.id });

    const network = new SimulatedNetwork();
    const profile = loadProfile('control-plane');
    const sims = Array.from({ length: hosts }, (_, i) => {
      const id = simulatedIdentity('bench', i);
      return { id: id.id, exec: new SimulatedExecutor(profile, { ...id, hostname: `h-${i}` }, network) };
    });
    process.stderr.write(`bench: registering ${hosts} hosts with inventory\n`);
    for (const s of sims) {
      await call('POST', `/infra-envs/${ie.id}/hosts`, { host_id: s.id });
      await call('POST', `/infra-envs/${ie.id}/hosts/${s.id}/instructions`, { step_type: 'inventory', step_id: 'inventory-0', exit_code: 0, output: JSON.stringify(await s.exec.inventory()) });
    }
    const peersOf = async (self: string) =>
      Promise.all(sims.filter((s) => s.id !== self).map(async (s) => ({ host_id: s.id, nics: (await s.exec.inventory()).interfaces.map((n) => ({ name: n.name, mac: n.mac_address, ip_addresses: n.ipv4_addresses })) })));

    // Full-mesh connectivity: each report names every other host; each reply refreshes the whole cluster.
    process.stderr.write(`bench: posting ${hosts} full-mesh connectivity reports\n`);
    const connMs: number[] = [];
    for (const s of sims) {
      const output = JSON.stringify(await s.exec.connectivityCheck(await peersOf(s.id)));
      const t = performance.now();
      await call('POST', `/infra-envs/${ie.id}/hosts/${s.id}/instructions`, { step_type: 'connectivity-check', step_id: 'connectivity-check-0', exit_code: 0, output });
      connMs.push(performance.now() - t);
    }

    // Report → visible: an NTP reply flips ntp-synced; the next GET must show it.
    process.stderr.write(`bench: ${samples} report → visible samples\n`);
    const visibleMs: number[] = [];
    for (let i = 0; i < samples; i++) {
      const s = sims[i % sims.length]!;
      const synced = i % 2 === 0;
      const t = performance.now();
      await call('POST', `/infra-envs/${ie.id}/hosts/${s.id}/instructions`, { step_type: 'ntp-synchronizer', step_id: `ntp-${i}`, exit_code: 0, output: JSON.stringify({ ntp_sources: [{ source_name: 'ntp', source_state: synced ? 'synced' : 'unreachable' }] }) });
      const h = await call('GET', `/infra-envs/${ie.id}/hosts/${s.id}`);
      visibleMs.push(performance.now() - t);
      const v = Object.values(JSON.parse(h.validations_info) as Record<string, Array<{ id: string; status: string }>>).flat().find((x) => x.id === 'ntp-synced');
      if (v?.status !== (synced ? 'success' : 'failure')) throw new Error(`sample ${i}: ntp-synced is ${v?.status}, expected ${synced ? 'success' : 'failure'}`);
    }

    const refreshMs: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t = performance.now();
      await call('POST', `/clusters/${cluster.id}/actions/refresh`);
      refreshMs.push(performance.now() - t);
    }
    const c = await call('GET', `/clusters/${cluster.id}`);
    const line = (label: string, xs: number[], target?: number) =>
      `${label.padEnd(44)} p50 ${pct(xs, 0.5).toFixed(1).padStart(7)} ms   p99 ${pct(xs, 0.99).toFixed(1).padStart(7)} ms${target ? `   target p99 < ${target} ms: ${(target / pct(xs, 0.99)).toFixed(2)}x headroom` : ''}`;
    console.log(`\nlifecycle benchmark: ${hosts} hosts in one cluster (full-mesh connectivity), cluster status ${c.status}`);
    console.log(line('agent report → validations visible', visibleMs, 200));
    console.log(line(`connectivity reply (refresh, ${hosts - 1} peers each)`, connMs));
    console.log(line(`cluster refresh (${hosts} hosts)`, refreshMs));
  } finally {
    await stopProcess(api, 5000, 'SIGINT');
    await pg.stop();
    clearTimeout(dog);
  }
  if (cpuProf.length) {
    const { readdirSync, readFileSync } = await import('node:fs');
    const { summarizeCpuProfile, formatSummary } = await import('./cpuprofile-summary');
    const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
    if (file) console.log(`\nwhere the API process spent its CPU:\n${formatSummary(summarizeCpuProfile(JSON.parse(readFileSync(path.join(profDir, file), 'utf8')), undefined, 20))}`);
  }
}

main().catch((err) => {
  console.error(`bench: ${(err as Error).message}`);
  process.exit(1);
});
