/**
 * Demo data for the insights page and the Grafana board (`DEMO_INSIGHTS_CLUSTERS`
 * with `landfall dev`): clusters installed through the public API by simulated
 * fleets whose host profiles succeed, fail, get fixed or get retried, so the
 * stored events hold a realistic mix. Nothing is written to the database
 * directly: every number the insights show comes from real installs of
 * simulated hosts. A cluster whose name already exists is left alone, so a
 * second start adds nothing.
 */
import type { Logger } from '../logger';
import { retryAfterMsOf, sleep } from '../../agent/service-client';

export interface DemoScenario {
  key: string;
  release: string;
  /** Profile mix for `landfall fleet` (agent/profiles). */
  mix: string;
  count: number;
  singleNode?: boolean;
  /** What a person would do while the hosts wait: rename a host whose name is invalid. */
  fixes?: Array<{ hostPrefix: string; afterSeconds: number; action: 'rename' }>;
  /** false: the cluster never becomes ready (a host cannot qualify); its hosts run for this long, then stop. */
  install?: false;
  holdSeconds?: number;
  /** Cancel this long after the hosts started installing. */
  cancelAfterSeconds?: number;
  /** After the install failed: retry the failed host (it succeeds the second time) or leave it failed. */
  onFailure?: 'retry' | 'leave';
}

/** The mix, cycled when more clusters are asked for than there are scenarios. */
export const DEMO_SCENARIOS: readonly DemoScenario[] = [
  { key: 'clean', release: '1.32', mix: 'control-plane:3,worker:2', count: 5 },
  // Two workers besides the three control planes: roles are suggested in the order inventories arrive, so the flaky
  // host may end up a control plane or a worker, and either way its failure fails the install (with one worker, a
  // failed worker left the cluster installed and the retry this scenario shows never happened).
  { key: 'flaky-disk', release: '1.31', mix: 'control-plane:3,worker:1,flaky-disk-worker:1', count: 5, onFailure: 'retry' },
  { key: 'broken-sno', release: '1.30', mix: 'failing-installer', count: 1, singleNode: true, onFailure: 'leave' },
  { key: 'renamed-host', release: '1.32', mix: 'control-plane:3,worker_bad_hostname:1', count: 4, fixes: [{ hostPrefix: 'worker_bad_hostname', afterSeconds: 20, action: 'rename' }] },
  { key: 'sno', release: '1.31', mix: 'control-plane', count: 1, singleNode: true },
  { key: 'cancelled', release: '1.32', mix: 'control-plane:3', count: 3, cancelAfterSeconds: 2 },
  { key: 'undersized', release: '1.31', mix: 'control-plane:3,undersized:1', count: 4, install: false, holdSeconds: 60 },
];

export interface DemoInsightsOptions {
  apiUrl: string;
  /** Headers of the user the clusters belong to (Authorization with AUTH_TYPE=local). */
  headers: Record<string, string>;
  /** An agent token for an infra-env ('' with AUTH_TYPE=none). */
  agentToken: (infraEnvId: string) => string;
  clusters: number;
  /** How many scenarios run at once (each runs its own simulated fleet). */
  concurrency?: number;
  pollIntervalSeconds?: number;
  logger: Logger;
}

type Json = Record<string, unknown>;
const PULL_SECRET = JSON.stringify({ auths: { 'registry.demo.invalid': { auth: 'ZGVtbzpkZW1v' } } });

export async function seedInsightsDemo(o: DemoInsightsOptions, signal: AbortSignal): Promise<{ created: string[]; skipped: string[] }> {
  const base = `${o.apiUrl}/api/assisted-install/v2`;
  const call = async (method: string, path: string, body?: unknown): Promise<Json & Json[]> => {
    // A 503 or 429 (a dependency away, or the API shedding load on a busy machine: the request was not carried out) is
    // waited out as the API asks, for up to a minute; so is a failed read. Seen once in CI: a demo cluster never
    // seeded on a loaded machine, with only a warning to say so.
    const until = Date.now() + 60_000;
    const mayRetry = () => !signal.aborted && Date.now() < until;
    for (;;) {
      let r: Response;
      try {
        r = await fetch(`${base}${path}`, { method, headers: { 'content-type': 'application/json', ...o.headers }, body: body === undefined ? undefined : JSON.stringify(body), signal });
      } catch (err) {
        if (method !== 'GET' || !mayRetry()) throw err;
        await sleep(1000, signal);
        continue;
      }
      if ((r.status === 503 || r.status === 429) && mayRetry()) {
        await r.body?.cancel();
        await sleep(Math.min(5000, Math.max(1000, retryAfterMsOf(r.headers.get('retry-after')))), signal);
        continue;
      }
      if (!r.ok) throw new Error(`${method} ${path}: HTTP ${r.status} ${await r.text()}`);
      const text = await r.text();
      return (text ? JSON.parse(text) : {}) as Json & Json[];
    }
  };
  const waitFor = async (what: string, timeoutMs: number, check: () => Promise<boolean>) => {
    const deadline = Date.now() + timeoutMs;
    while (!signal.aborted) {
      if (await check()) return;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await sleep(2000, signal);
    }
    throw new Error('stopped');
  };
  const status = async (id: string) => String((await call('GET', `/clusters/${id}`)).status);
  const hostsOf = async (ieId: string) => (await call('GET', `/infra-envs/${ieId}/hosts`)) as Json[];
  const hostname = (h: Json) => String((h.requested_hostname as string | undefined) ?? (JSON.parse(String(h.inventory ?? '{}')) as { hostname?: string }).hostname ?? '');

  const existing = new Set(((await call('GET', '/clusters')) as Json[]).map((c) => String(c.name)));
  const plan = Array.from({ length: o.clusters }, (_, i) => ({ s: DEMO_SCENARIOS[i % DEMO_SCENARIOS.length]!, name: `insights-${DEMO_SCENARIOS[i % DEMO_SCENARIOS.length]!.key}-${Math.floor(i / DEMO_SCENARIOS.length) + 1}` }));
  const created: string[] = [];
  const skipped = plan.filter((p) => existing.has(p.name)).map((p) => p.name);
  const todo = plan.filter((p) => !existing.has(p.name));
  const { runFleet } = await import('../../agent/fleet');

  const runOne = async ({ s, name }: (typeof todo)[number]) => {
    const log = o.logger.child({ component: 'demo-insights', cluster: name });
    const cluster = await call('POST', '/clusters', {
      name,
      openshift_version: s.release,
      pull_secret: PULL_SECRET,
      base_dns_domain: 'demo.landfall.test',
      machine_networks: [{ cidr: '192.168.127.0/24' }],
      ...(s.singleNode ? { control_plane_count: 1, high_availability_mode: 'None' } : { api_vips: [{ ip: '192.168.127.250' }], ingress_vips: [{ ip: '192.168.127.251' }] }),
    });
    created.push(name);
    const id = String(cluster.id);
    const ie = await call('POST', '/infra-envs', { name: `${name}-ie`, pull_secret: PULL_SECRET, cluster_id: id });
    const ieId = String(ie.id);
    const fleetStop = new AbortController();
    const stopFleet = () => fleetStop.abort();
    signal.addEventListener('abort', stopFleet, { once: true });
    const fleet = runFleet({ serviceUrl: o.apiUrl, infraEnvId: ieId, agentToken: o.agentToken(ieId), count: s.count, mix: s.mix, seed: name, durationSeconds: 3600, pollIntervalSeconds: o.pollIntervalSeconds ?? 2, rampSeconds: 5 }, fleetStop.signal).catch((err: Error) => log.warn({ err: err.message }, 'demo fleet stopped'));
    try {
      for (const fix of s.fixes ?? []) {
        let target: Json | undefined;
        await waitFor(`a ${fix.hostPrefix} host`, 120_000, async () => Boolean((target = (await hostsOf(ieId)).find((h) => hostname(h).startsWith(fix.hostPrefix)))));
        await sleep(fix.afterSeconds * 1000, signal);
        await call('PATCH', `/infra-envs/${ieId}/hosts/${String(target!.id)}`, { host_name: `${fix.hostPrefix.replace(/[^a-z0-9-]/g, '-')}-renamed` });
        log.info({ host: hostname(target!), action: fix.action }, 'demo host fixed');
      }
      if (s.install === false) {
        await sleep((s.holdSeconds ?? 60) * 1000, signal);
        log.info({ status: await status(id) }, 'insights demo cluster left uninstalled');
        return;
      }
      await waitFor('ready', 300_000, async () => (await status(id)) === 'ready');
      await call('POST', `/clusters/${id}/actions/install`);
      const ended = ['installed', 'error', 'cancelled'];
      if (s.cancelAfterSeconds !== undefined) {
        // Cancelled once hosts are writing: a cancel while preparing only takes the cluster back to ready.
        await waitFor('the install to start', 300_000, async () => {
          const now = await status(id);
          return now.startsWith('installing') || ended.includes(now);
        });
        await sleep(s.cancelAfterSeconds * 1000, signal);
        await call('POST', `/clusters/${id}/actions/cancel`);
        ended.push('ready');
      }
      let final = '';
      await waitFor('the install to end', 600_000, async () => ended.includes((final = await status(id))));
      if (final === 'error' && s.onFailure === 'retry') {
        const failed = (await hostsOf(ieId)).find((h) => h.status === 'error');
        if (failed) {
          await call('POST', `/infra-envs/${ieId}/hosts/${String(failed.id)}/actions/retry-install`);
          await waitFor('the retried install to end', 600_000, async () => ['installed', 'error'].includes((final = await status(id))));
        }
      }
      log.info({ status: final }, 'insights demo cluster done');
    } finally {
      signal.removeEventListener('abort', stopFleet);
      stopFleet();
      await fleet;
    }
  };

  const queue = [...todo];
  const workers = Array.from({ length: Math.min(o.concurrency ?? 2, queue.length) }, async () => {
    for (let next = queue.shift(); next && !signal.aborted; next = queue.shift()) {
      await runOne(next).catch((err: Error) => !signal.aborted && o.logger.warn({ component: 'demo-insights', cluster: next!.name, err: err.message }, 'insights demo cluster failed to seed'));
    }
  });
  await Promise.all(workers);
  return { created, skipped };
}
