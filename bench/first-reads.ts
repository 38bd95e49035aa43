/**
 * A person's first reads of a freshly started API (not a timed test): the
 * API is started with and without API_WARM_VALIDATORS (each serving process
 * compiles every operation's request validation as it starts), 100 hosts are
 * registered, the validator's warm-up is given time to end, and then, on one
 * kept connection: a GET of an unknown host twice, of an unknown cluster,
 * then reads of real hosts and clusters. Each line is one request's time.
 *
 *   npm run build && node dist/bench/first-reads.js [--processes 1] [--reads 4]
 */
import http from 'node:http';
import { populate, startStack } from './agent-stack';
import { BASE_PATH } from '../src/api/assisted/presenters';
import { checkOptions, numberFlag } from './support';
import { sleep } from '../src/dev/process-utils';

checkOptions('usage: node dist/bench/first-reads.js [--processes 1] [--reads 4]', { numbers: ['processes', 'reads'] });

const ZERO = '00000000-0000-4000-8000-000000000000';

async function run(warm: boolean, processes: number, reads: number): Promise<string[]> {
  const s = await startStack({ processes, apiEnv: { API_WARM_VALIDATORS: String(warm) } });
  // One connection: every request goes to the same serving process (node:cluster hands out connections, not requests).
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = (p: string) =>
    new Promise<{ status: number; ms: number; text: string }>((resolve, reject) => {
      const t0 = performance.now();
      http
        .get({ host: '127.0.0.1', port: s.port, path: `${BASE_PATH}${p}`, agent }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0, text }));
        })
        .on('error', reject);
    });
  try {
    const fleet = await populate(s, 100, 50, 8, false);
    // The warm-up runs in the background of each process's start (~1.5 s): let it end, as it has long before a person's first read.
    await sleep(5000);
    const lines: string[] = [];
    const line = (what: string, r: { status: number; ms: number }) => lines.push(`${what.padEnd(28)} ${String(r.status).padEnd(4)} ${r.ms.toFixed(1).padStart(7)} ms`);
    line('unknown host', await get(`/v2/infra-envs/${ZERO}/hosts/${ZERO}`));
    line('unknown host, again', await get(`/v2/infra-envs/${ZERO}/hosts/${ZERO.replace(/0$/, '1')}`));
    line('unknown cluster', await get(`/v2/clusters/${ZERO}`));
    for (let k = 0; k < reads; k++) {
      const c = k % 2;
      line(`host (cluster ${c + 1})`, await get(`/v2/infra-envs/${fleet.infraEnvIds[c]}/hosts/${fleet.hostIds[c * 50 + k]}`));
      const ie = JSON.parse((await get(`/v2/infra-envs/${fleet.infraEnvIds[c]}`)).text) as { cluster_id: string };
      line(`cluster ${c + 1} (50 hosts)`, await get(`/v2/clusters/${ie.cluster_id}`));
    }
    return lines;
  } finally {
    agent.destroy();
    await s.stop();
  }
}

void (async () => {
  const processes = numberFlag('processes', 1);
  const reads = numberFlag('reads', 4);
  for (const warm of [false, true]) {
    process.stdout.write(`API_WARM_VALIDATORS=${warm}, API_PROCESSES=${processes}\n`);
    for (const l of await run(warm, processes, reads)) process.stdout.write(`  ${l}\n`);
  }
})().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
