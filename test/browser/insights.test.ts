/* eslint-disable @typescript-eslint/no-explicit-any -- API bodies are read loosely in this test */
/**
 * Install insights after real installs with known outcomes (Temporal, API,
 * worker, simulated fleets): three clusters, one installed cleanly (after a
 * host's hostname was fixed), one installed after a host failed writing its
 * disk and was retried, one that failed writing its disk. The expected
 * numbers are derived here from those outcomes and from what the API shows
 * per cluster (install reports, events), never read back from the insights
 * code; then the page shows them in Debian's headless Chromium.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { call, PULL_SECRET, startApiHarness } from '../support/api-harness';
import { bootFleet, FIXTURE_PROFILES, readyCluster, startInstallHarness, waitClusterStatus, type InstallHarness, type ReadyCluster } from '../support/install-harness';
import { eventually, tempDir } from '../support/services';
import { freePort, repoRoot } from '../../src/dev/process-utils';
import { webUiDir } from '../../src/api/web-ui';

const SHOTS = path.join(repoRoot(), 'test-artifacts', 'screenshots');
const FAILS_WRITING_ONCE = path.join(FIXTURE_PROFILES, 'worker-fails-writing.yaml');
const CP_ALWAYS_FAILS = path.join(FIXTURE_PROFILES, 'control-plane-fails-writing.yaml');
const BAD_HOSTNAME = path.join(FIXTURE_PROFILES, 'worker-bad-hostname-fast.yaml');
const WRITE_FAILURE = { stage: 'Writing image to disk', kind: 'error', cause: 'simulated failure at Writing image to disk' };

/** What each seeded cluster is known to do: its release, its attempts, and its hosts by hardware class. */
const SEEDED = [
  { name: 'ins-ok', release: '1.31', installed: true, hostRetries: 0, failures: [] as (typeof WRITE_FAILURE)[], hosts: [{ profile: '8-15 cores / 32-63 GiB / 120-499 GB SSD', n: 3, installed: 3, failed: 0 }, { profile: '4-7 cores / 16-31 GiB / 120-499 GB SSD', n: 1, installed: 1, failed: 0 }] },
  // The retried host failed once but installed: its attempt result is installed.
  // Two workers (the good one and the retried one), so that the first failure fails the install whatever role it had.
  { name: 'ins-retry', release: '1.32', installed: true, hostRetries: 1, failures: [WRITE_FAILURE], hosts: [{ profile: '8-15 cores / 32-63 GiB / 120-499 GB SSD', n: 3, installed: 3, failed: 0 }, { profile: '4-7 cores / 16-31 GiB / 120-499 GB SSD', n: 2, installed: 2, failed: 0 }] },
  { name: 'ins-fail', release: '1.30', installed: false, hostRetries: 0, failures: [WRITE_FAILURE], hosts: [{ profile: '16+ cores / 64+ GiB / 500-999 GB SSD', n: 1, installed: 0, failed: 1 }] },
];

/** Nearest rank, written again here so the test does not lean on the code it checks. */
function nearestRank(values: number[], p: number): number | null {
  if (!values.length) return null;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.ceil((p / 100) * s.length) - 1]!;
}
const ratio = (a: number, b: number) => (b ? Math.round((a / b) * 10000) / 10000 : null);

let h: InstallHarness;
let browser: Browser;
/** A real Prometheus (Debian's, beside promtool) scraping the API's /metrics through the installs, with the alert rules loaded. */
let prometheus: { proc: ChildProcess; url: string } | undefined;

async function startPrometheus(apiUrl: string): Promise<{ proc: ChildProcess; url: string }> {
  const dir = tempDir('prometheus');
  const port = await freePort();
  writeFileSync(
    path.join(dir, 'prometheus.yml'),
    JSON.stringify({ global: { scrape_interval: '1s', evaluation_interval: '1s' }, rule_files: [path.join(repoRoot(), 'deploy/prometheus/landfall-rules.yml')], scrape_configs: [{ job_name: 'landfall', static_configs: [{ targets: [new URL(apiUrl).host] }] }] }),
  );
  const proc = spawn('prometheus', [`--config.file=${path.join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  await eventually(async () => (await fetch(`${url}/-/ready`).catch(() => undefined))?.ok, 30000, 'prometheus ready');
  return { proc, url };
}
let from: Date;
let to: Date;
const clusters: Record<string, ReadyCluster> = {};

beforeAll(async () => {
  if (!existsSync(path.join(webUiDir(), 'index.html'))) {
    execFileSync('npx', ['--no-install', 'vite', 'build', 'web', '--logLevel', 'warn'], { cwd: repoRoot(), stdio: 'inherit' });
  }
  mkdirSync(SHOTS, { recursive: true });
  [h, browser] = await Promise.all([startInstallHarness(), chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] })]);
  prometheus = await startPrometheus(h.api.url);
  from = new Date(Date.now() - 1000);

  const okCluster = async () => {
    const cluster = (await call('POST', `${h.api.base}/clusters`, { body: { name: 'ins-ok', openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com', machine_networks: [{ cidr: '192.168.127.0/24' }], api_vips: [{ ip: '192.168.127.250' }], ingress_vips: [{ ip: '192.168.127.251' }] } })).body;
    const ie = (await call('POST', `${h.api.base}/infra-envs`, { body: { name: 'ins-ok-ie', pull_secret: PULL_SECRET, cluster_id: cluster.id } })).body;
    // The bad hostname blocks the host until it is renamed, a second after it is seen failing.
    const fix = (async () => {
      const bad = await eventually(async () => {
        const hosts = (await call('GET', `${h.api.base}/infra-envs/${ie.id}/hosts`)).body as any[];
        return hosts.find((x) => (x.validations_info ?? '').includes('"hostname-valid","status":"failure"'));
      }, 60000, 'the bad hostname to fail hostname-valid');
      await new Promise((r) => setTimeout(r, 1000));
      expect((await call('PATCH', `${h.api.base}/infra-envs/${ie.id}/hosts/${bad.id}`, { body: { host_name: 'worker-1' } })).status).toBe(201);
    })();
    const [c] = await Promise.all([bootFleet(h, cluster.id, ie.id, 'ins-ok', `control-plane:3,${BAD_HOSTNAME}:1`, 4), fix]);
    expect((await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/install`)).status).toBe(202);
    await waitClusterStatus(h, c.clusterId, ['installed'], 120000);
    return c;
  };
  const retryCluster = async () => {
    const c = await readyCluster(h, 'ins-retry', `control-plane:3,worker:1,${FAILS_WRITING_ONCE}:1`, 5, { openshift_version: '1.32' });
    expect((await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/install`)).status).toBe(202);
    const failed = await waitClusterStatus(h, c.clusterId, ['error'], 120000);
    const bad = failed.hosts.find((x: any) => x.status === 'error');
    expect((await call('POST', `${h.api.base}/infra-envs/${c.infraEnvId}/hosts/${bad.id}/actions/retry-install`)).status).toBe(202);
    await waitClusterStatus(h, c.clusterId, ['installed'], 120000);
    return c;
  };
  const failCluster = async () => {
    const c = await readyCluster(h, 'ins-fail', `${CP_ALWAYS_FAILS}:1`, 1, { openshift_version: '1.30', control_plane_count: 1, high_availability_mode: 'None' });
    expect((await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/install`)).status).toBe(202);
    await waitClusterStatus(h, c.clusterId, ['error'], 120000);
    return c;
  };
  [clusters['ins-ok'], clusters['ins-retry'], clusters['ins-fail']] = await Promise.all([okCluster(), retryCluster(), failCluster()]);
  to = new Date(Date.now() + 1000);
});
afterAll(async () => {
  await Promise.all(Object.values(clusters).map((c) => c.report()));
  prometheus?.proc.kill('SIGTERM');
  await browser?.close();
  await h?.stop();
});

const insightsUrl = () => `${h.api.url}/api/landfall/v1/insights?from=${encodeURIComponent(from.toISOString())}&to=${encodeURIComponent(to.toISOString())}`;

describe('insights after seeded installs with known outcomes', () => {
  let r: any;
  beforeAll(async () => {
    const res = await call('GET', insightsUrl());
    expect(res.status).toBe(200);
    r = res.body;
  });

  it('counts installs and success rates as the outcomes imply', () => {
    const installed = SEEDED.filter((s) => s.installed).length;
    const clean = SEEDED.filter((s) => s.installed && s.hostRetries === 0).length;
    expect(r.installs).toEqual({ attempts_started: SEEDED.length, clusters: SEEDED.length, installed, failed: SEEDED.length - installed, cancelled: 0, in_progress: 0, host_retries: SEEDED.reduce((n, s) => n + s.hostRetries, 0) });
    expect(r.first_attempt).toEqual({ clusters: SEEDED.length, concluded: SEEDED.length, succeeded: clean, success_rate: ratio(clean, SEEDED.length) });
    expect(r.eventual).toEqual({ clusters: SEEDED.length, concluded: SEEDED.length, succeeded: installed, success_rate: ratio(installed, SEEDED.length) });
    // Spelled out for the reader: 1 of 3 at the first attempt, 2 of 3 in the end.
    expect([r.first_attempt.success_rate, r.eventual.success_rate]).toEqual([0.3333, 0.6667]);
  });

  it('failures by stage and cause, by release and by host profile', () => {
    const failures = SEEDED.flatMap((s) => s.failures);
    expect(r.failures.total).toBe(failures.length);
    expect(r.failures.by_stage).toEqual([{ stage: WRITE_FAILURE.stage, count: failures.length }]);
    expect(r.failures.by_cause).toEqual([{ ...WRITE_FAILURE, count: failures.length, clusters: expect.any(Array) }]);
    // The cause names the clusters it failed, to open their install reports.
    expect(r.failures.by_cause[0].clusters.map((c: any) => [c.name, c.id]).sort()).toEqual(SEEDED.filter((x) => x.failures.length).map((x) => [x.name, clusters[x.name]!.clusterId]).sort());
    expect(r.by_release).toEqual(
      [...SEEDED]
        .sort((a, b) => a.release.localeCompare(b.release))
        .map((s) => ({ release: s.release, attempts: 1, installed: s.installed ? 1 : 0, failed: s.installed ? 0 : 1, cancelled: 0, in_progress: 0, success_rate: s.installed ? 1 : 0 })),
    );
    const profiles = new Map<string, { hosts: number; installed: number; failed: number }>();
    for (const x of SEEDED.flatMap((s) => s.hosts)) {
      const p = profiles.get(x.profile) ?? { hosts: 0, installed: 0, failed: 0 };
      profiles.set(x.profile, { hosts: p.hosts + x.n, installed: p.installed + x.installed, failed: p.failed + x.failed });
    }
    expect(Object.fromEntries(r.by_host_profile.map((p: any) => [p.profile, { hosts: p.hosts, installed: p.installed, failed: p.failed, failure_rate: p.failure_rate }]))).toEqual(
      Object.fromEntries([...profiles].map(([k, v]) => [k, { ...v, failure_rate: ratio(v.failed, v.installed + v.failed) }])),
    );
  });

  it('stage durations are the percentiles of the install reports’ completed stages', async () => {
    const samples = new Map<string, number[]>();
    for (const c of Object.values(clusters)) {
      const report = (await call('GET', `${h.api.base}/clusters/${c.clusterId}/install-report`)).body;
      for (const host of report.hosts) for (const s of host.stages) if (s.result === 'completed' && s.stage !== 'Done') samples.set(s.stage, [...(samples.get(s.stage) ?? []), s.duration_seconds]);
    }
    expect(samples.size).toBeGreaterThan(3);
    expect(Object.fromEntries(r.stage_durations.map((s: any) => [s.stage, [s.count, s.p50_seconds, s.p95_seconds]]))).toEqual(
      Object.fromEntries([...samples].map(([stage, v]) => [stage, [v.length, nearestRank(v, 50), nearestRank(v, 95)]])),
    );
  });

  it('registration to ready and blocked validations match the clusters’ events', async () => {
    const toReady: number[] = [];
    const blocked = new Map<string, number[]>();
    const unresolved = new Map<string, number>();
    for (const c of Object.values(clusters)) {
      const events = (await call('GET', `${h.api.base}/events?cluster_id=${c.clusterId}&order=ascending`)).body as any[];
      const first = events.find((e) => e.name === 'host_registration_succeeded');
      const ready = events.find((e) => e.name === 'cluster_status_updated' && JSON.parse(e.props).new_status === 'ready' && Date.parse(e.event_time) >= Date.parse(first.event_time));
      toReady.push(Math.round((Date.parse(ready.event_time) - Date.parse(first.event_time)) / 100) / 10);
      const open = new Map<string, number>();
      for (const e of events) {
        if (e.name !== 'host_validation_failed' && e.name !== 'host_validation_fixed') continue;
        const id = JSON.parse(e.props).validation_id as string;
        const key = `${e.host_id}/${id}`;
        if (e.name === 'host_validation_failed') {
          if (!open.has(key)) open.set(key, Date.parse(e.event_time));
        } else if (open.has(key)) {
          blocked.set(id, [...(blocked.get(id) ?? []), Math.round((Date.parse(e.event_time) - open.get(key)!) / 100) / 10]);
          open.delete(key);
        }
      }
      for (const key of open.keys()) unresolved.set(key.split('/')[1]!, (unresolved.get(key.split('/')[1]!) ?? 0) + 1);
    }
    expect(r.registration_to_ready).toEqual({ clusters: 3, ready: 3, p50_seconds: nearestRank(toReady, 50), p95_seconds: nearestRank(toReady, 95) });

    // The renamed host was blocked on hostname-valid for at least the second the test waited.
    expect(blocked.get('hostname-valid')?.length).toBeGreaterThanOrEqual(1);
    const got = Object.fromEntries(r.validations.map((v: any) => [v.validation_id, [v.resolved, v.unresolved, v.blocked_p50_seconds, v.blocked_p95_seconds]]));
    const ids = new Set([...blocked.keys(), ...unresolved.keys()]);
    expect(got).toEqual(Object.fromEntries([...ids].map((id) => [id, [blocked.get(id)?.length ?? 0, unresolved.get(id) ?? 0, nearestRank(blocked.get(id) ?? [], 50), nearestRank(blocked.get(id) ?? [], 95)]])));
    expect(r.validations.find((v: any) => v.validation_id === 'hostname-valid').blocked_max_seconds).toBeGreaterThanOrEqual(1);
  });

  it('landfall insights prints the same report (JSON) and says it for people (table)', async () => {
    // Asynchronously: the API answering it runs in this process.
    const cli = (args: string[]) =>
      new Promise<{ status: number; stdout: string; stderr: string }>((resolve) => {
        execFile(process.execPath, [path.join(repoRoot(), 'dist/src/cli/main.js'), 'insights', '--url', h.api.url, ...args], { encoding: 'utf8', env: { PATH: process.env.PATH! } }, (err, stdout, stderr) => resolve({ status: err ? Number(err.code) : 0, stdout, stderr }));
      });
    const window = ['--from', from.toISOString(), '--to', to.toISOString()];
    const json = await cli([...window, '-o', 'json']);
    expect([json.status, json.stderr]).toEqual([0, '']);
    const { generated_at: _a, ...fromCli } = JSON.parse(json.stdout);
    const { generated_at: _b, ...fromApi } = r;
    expect(fromCli).toEqual(fromApi);
    const text = await cli(window);
    expect(text.status).toBe(0);
    expect(text.stdout).toContain('installs started 3 (3 clusters): 2 installed, 1 failed, 0 cancelled, 0 running; 1 host retries');
    expect(text.stdout).toContain('first-attempt success 33.3% (1 of 3, no host retried); eventual success 66.7% (2 of 3)');
    expect(text.stdout).toMatch(/^Writing image to disk\s+error\s+2\s+ins-(fail,ins-retry|retry,ins-fail)\s+simulated failure at Writing image to disk$/m);
    const bad = await cli(['--since', 'a week']);
    expect([bad.status, bad.stderr.trim()]).toEqual([2, 'landfall: --since: "a week" is not a duration like 90m, 24h or 7d']);
  });

  it('a window before the installs holds none of them', async () => {
    const before = await call('GET', `${h.api.url}/api/landfall/v1/insights?from=${encodeURIComponent(new Date(from.getTime() - 3600e3).toISOString())}&to=${encodeURIComponent(from.toISOString())}`);
    expect(before.status).toBe(200);
    expect(before.body.installs.attempts_started).toBe(0);
    expect(before.body.by_release).toEqual([]);
  });

  it('the web page shows them in a real browser', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, reducedMotion: 'reduce' });
    const errors: string[] = [];
    try {
      const page = await context.newPage();
      page.on('pageerror', (e) => errors.push(String(e)));
      page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
      page.setDefaultTimeout(30000);
      await page.goto(`${h.api.url}/insights?from=${encodeURIComponent(from.toISOString())}&to=${encodeURIComponent(to.toISOString())}`);
      await page.getByRole('heading', { name: 'Install insights' }).waitFor();
      const kpi = (id: string) => page.getByTestId(id).locator('.kpi-value').textContent();
      await page.getByTestId('kpi-installs').waitFor();
      expect(await kpi('kpi-installs')).toBe('3');
      expect(await kpi('kpi-first-attempt')).toBe('33.3%');
      expect(await kpi('kpi-eventual')).toBe('66.7%');
      expect(await kpi('kpi-failures')).toBe('2');
      const stageRow = page.getByTestId('failures-by-stage').locator('tbody tr');
      expect(await stageRow.allInnerTexts()).toEqual([expect.stringMatching(/^Writing image to disk\s+2/)]);
      const releases = await page.getByTestId('by-release').locator('tbody tr').allInnerTexts();
      expect(releases.map((t) => t.split(/\s+/).join(' '))).toEqual(['1.30 1 0 1 0.0%', '1.31 1 1 0 100.0%', '1.32 1 1 0 100.0%']);
      expect(await page.getByTestId('failures-by-cause').innerText()).toContain('simulated failure at Writing image to disk');
      // Each cluster behind the cause links to its page (the install report).
      const causeLinks = page.getByTestId('failures-by-cause').getByRole('link');
      expect((await causeLinks.allInnerTexts()).sort()).toEqual(['ins-fail', 'ins-retry']);
      expect(await causeLinks.filter({ hasText: 'ins-fail' }).getAttribute('href')).toBe(`/clusters/${clusters['ins-fail']!.clusterId}`);
      expect(await page.getByTestId('by-host-profile').locator('tbody tr').count()).toBe(r.by_host_profile.length);
      expect(await page.getByTestId('validations').innerText()).toContain('hostname-valid');
      await page.screenshot({ path: path.join(SHOTS, 'insights.png'), fullPage: true });
      // The README shows the page from this run (docs/screenshots/insights.png is committed from it).
      if (process.env.UPDATE_SCREENSHOTS === '1') copyFileSync(path.join(SHOTS, 'insights.png'), path.join(repoRoot(), 'docs', 'screenshots', 'insights.png'));
    } finally {
      await context.close();
    }
    expect(errors).toEqual([]);
  });
});

describe('the Grafana board and alert rules on a real Prometheus scraping the installs', () => {
  const query = async (q: string) => {
    const res = await fetch(`${prometheus!.url}/api/v1/query?query=${encodeURIComponent(q)}`);
    const body = (await res.json()) as { status: string; error?: string; data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> } };
    return { q, status: body.status, error: body.error, result: body.data?.result ?? [] };
  };

  it('evaluates every dashboard query, and the install panels show the seeded installs', async () => {
    // The installs' last state is scraped (one scrape a second).
    await eventually(async () => (await query('sum(landfall_installs_total{outcome="succeeded"})')).result[0]?.value[1] === '2', 30000, 'prometheus to scrape the two installed clusters');
    const dash = JSON.parse(readFileSync(path.join(repoRoot(), 'deploy/grafana/landfall.json'), 'utf8')) as { panels: Array<{ title: string; targets?: Array<{ expr: string }> }> };
    const byPanel = new Map<string, Awaited<ReturnType<typeof query>>[]>();
    for (const p of dash.panels) {
      for (const t of p.targets ?? []) {
        const r = await query(t.expr.replace(/\$__rate_interval|\$__interval/g, '1m').replace(/\$__range/g, '1h'));
        expect([p.title, r.status, r.error]).toEqual([p.title, 'success', undefined]);
        byPanel.set(p.title, [...(byPanel.get(p.title) ?? []), r]);
      }
    }
    const nonEmpty = (title: string) => expect([title, byPanel.get(title)!.some((r) => r.result.length > 0)]).toEqual([title, true]);
    for (const title of ['Installs started', 'Install failures', 'Installs per hour by outcome', 'Failures by stage', 'Installs by release', 'Hosts by status', 'Most frequent failing validations', 'Install stage duration p50 / p95', 'Installed at the first attempt']) nonEmpty(title);
    expect(byPanel.get('Failures by stage')![0]!.result.map((x) => x.metric.failing_stage)).toContain('Writing image to disk');
    expect(new Set(byPanel.get('Installs by release')![0]!.result.map((x) => x.metric.release))).toEqual(new Set(SEEDED.map((x) => x.release)));
    // The metric counts install attempts, not host retries: both installed clusters installed at attempt 1.
    expect(Number(byPanel.get('Installed at the first attempt')![0]!.result[0]!.value[1])).toBe(1);
  });

  it('loads the alert rules without errors', async () => {
    const body = (await (await fetch(`${prometheus!.url}/api/v1/rules`)).json()) as { data: { groups: Array<{ rules: Array<{ name: string; health: string; lastError?: string }> }> } };
    const rules = body.data.groups.flatMap((g) => g.rules);
    expect(rules.length).toBeGreaterThanOrEqual(6);
    await eventually(async () => {
      const b = (await (await fetch(`${prometheus!.url}/api/v1/rules`)).json()) as typeof body;
      return b.data.groups.flatMap((g) => g.rules).every((r) => r.health === 'ok');
    }, 15000, 'every rule evaluated with health ok');
  });
});

describe('insights API: access and bad input', () => {
  it('asks for a user token, scopes to the caller, and answers bad windows with 400 in the error shape', async () => {
    const a = await startApiHarness({ authType: 'local' });
    try {
      const url = `${a.url}/api/landfall/v1/insights`;
      const user = (name: string) => ({ Authorization: `Bearer ${a.signer.sign({ use: 'user', sub: name })}` });
      expect((await call('GET', url)).status).toBe(401);
      // Alice's cluster gets a host registered through the agent API: her insights see it, Bob's do not.
      const cluster = (await call('POST', `${a.base}/clusters`, { headers: user('alice'), body: { name: 'mine', openshift_version: '1.31', pull_secret: PULL_SECRET } })).body;
      const ie = (await call('POST', `${a.base}/infra-envs`, { headers: user('alice'), body: { name: 'mine-ie', pull_secret: PULL_SECRET, cluster_id: cluster.id } })).body;
      const agent = { 'X-Secret-Key': a.signer.sign({ use: 'agent', infra_env_id: ie.id }) };
      expect((await call('POST', `${a.base}/infra-envs/${ie.id}/hosts`, { headers: agent, body: { host_id: '5b0cbb64-8d4e-4a38-a59f-1a1d1f0f7a01', discovery_agent_version: 'test' } })).status).toBe(201);
      const alice = await call('GET', url, { headers: user('alice') });
      expect(alice.status).toBe(200);
      expect(alice.body.registration_to_ready).toEqual({ clusters: 1, ready: 0, p50_seconds: null, p95_seconds: null });
      expect((await call('GET', url, { headers: user('bob') })).body.registration_to_ready.clusters).toBe(0);
      expect((await call('GET', url, { headers: { Authorization: `Bearer ${a.signer.sign({ use: 'user', sub: 'root', admin: true })}` } })).body.registration_to_ready.clusters).toBe(1);

      const bad = async (query: string, reason: RegExp) => {
        const res = await call('GET', `${url}?${query}`, { headers: user('alice') });
        expect([query, res.status]).toEqual([query, 400]);
        expect(res.body).toMatchObject({ kind: 'Error', code: '400', reason: expect.stringMatching(reason) });
      };
      await bad('from=yesterday', /from/);
      await bad('to=2026-13-40T00:00:00Z', /to/);
      await bad('from=2026-11-20T00:00:00Z&to=2026-11-19T00:00:00Z', /from must be before/);
      await bad('from=2026-11-20T00:00:00Z&to=2026-11-20T00:00:00Z', /from must be before/);
      await bad('from=2024-01-01T00:00:00Z&to=2026-01-01T00:00:00Z', /at most 366 days/);
      await bad('window=7d', /window/);
      expect((await call('GET', `${url}?from=2026-11-01T00:00:00Z&to=2026-11-02T00:00:00Z`, { headers: user('alice') })).body).toMatchObject({ from: '2026-11-01T00:00:00.000Z', to: '2026-11-02T00:00:00.000Z' });
    } finally {
      await a.stop();
    }
  });
});
