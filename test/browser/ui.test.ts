/**
 * The web UI in a real browser (Debian's headless Chromium driven by
 * playwright-core) against the live stack: API serving dist/web, Temporal,
 * worker and a simulated fleet. Screenshots of every page go to
 * test-artifacts/screenshots/.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { runFleet } from '../../agent/fleet';
import { call, PULL_SECRET, SSH_KEY, startApiHarness, type ApiHarness } from '../support/api-harness';
import { FIXTURE_PROFILES, readyCluster, startInstallHarness, waitClusterStatus, type InstallHarness } from '../support/install-harness';
import { eventually } from '../support/services';
import { repoRoot } from '../../src/dev/process-utils';
import { webUiDir } from '../../src/api/web-ui';

const SHOTS = path.join(repoRoot(), 'test-artifacts', 'screenshots');
const BAD_WORKER = path.join(__dirname, 'fixtures', 'worker-bad-hostname.yaml');

let browser: Browser;
/** Errors the pages logged (a CSP violation, an uncaught exception): every test ends with none. */
const pageErrors: string[] = [];

beforeAll(async () => {
  if (!existsSync(path.join(webUiDir(), 'index.html'))) {
    execFileSync('npx', ['--no-install', 'vite', 'build', 'web', '--logLevel', 'warn'], { cwd: repoRoot(), stdio: 'inherit' });
  }
  mkdirSync(SHOTS, { recursive: true });
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
});
afterAll(async () => {
  await browser?.close();
});
afterEach(() => {
  expect(pageErrors.splice(0)).toEqual([]);
});

async function newPage(): Promise<Page> {
  // Reduced motion turns the progress bars' transition off, so a screenshot shows the bar the text says.
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true, reducedMotion: 'reduce' });
  const page = await context.newPage();
  page.on('console', (m) => {
    // A failed request (the 401 before sign-in, the 400 the error test provokes) is logged by Chromium too; those are expected.
    if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) pageErrors.push(m.text());
  });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  // Generous: under `npm test` other suites share the two cores.
  page.setDefaultTimeout(30000);
  return page;
}

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });

describe('web UI against the live stack (AUTH_TYPE=none)', () => {
  let h: InstallHarness;
  let page: Page;
  const fleetStop = new AbortController();
  let fleet: Promise<unknown> | undefined;

  beforeAll(async () => {
    h = await startInstallHarness({ INSTALL_STAGE_SOFT_TIMEOUT_MS: '1500', INSTALL_STAGE_HARD_TIMEOUT_MS: '600000' });
    page = await newPage();
  });
  afterAll(async () => {
    // The page holds an event stream open: close it before the server, whose close waits for open connections.
    await page?.context().close();
    fleetStop.abort();
    await fleet?.catch(() => undefined);
    await h?.stop();
  });

  it('serves the app at / and leaves API paths to the API', async () => {
    const root = await fetch(`${h.api.url}/clusters/some-id/hosts`);
    expect(root.status).toBe(200);
    expect(root.headers.get('content-type')).toMatch(/text\/html/);
    expect(await root.text()).toContain('<div id="root">');
    const apiMiss = await call('GET', `${h.api.url}/api/assisted-install/v2/no-such-thing`);
    expect(apiMiss.status).toBe(404);
    expect(apiMiss.headers.get('content-type')).toMatch(/json/);
    expect((await fetch(`${h.api.url}/healthz`)).headers.get('content-type')).toMatch(/json/);
    expect((await fetch(`${h.api.url}/assets/missing.js`)).status).toBe(404);
  });

  it('creates a cluster, fixes a host, installs it and downloads the kubeconfig', async () => {
    await page.goto(`${h.api.url}/`);
    await page.getByRole('heading', { name: 'Clusters', exact: true }).waitFor();
    await page.getByText('No clusters yet').waitFor();
    await shot(page, '01-clusters-empty');

    await page.getByRole('link', { name: 'Create cluster', exact: true }).click();
    await page.getByLabel('Cluster name').fill('ui-demo');
    await page.getByLabel('Base domain').fill('example.com');
    // The releases load after the form shows: wait for the default choice rather than read it at once.
    await page.waitForFunction("(document.getElementById('release') || {}).value", undefined, { timeout: 30000 });
    await expect(page.getByLabel('Kubernetes release').inputValue()).resolves.not.toBe('');
    await page.getByLabel('Control-plane hosts').selectOption('3');
    await page.getByLabel('SSH public key (optional)').fill(SSH_KEY);
    await page.getByLabel('Pull secret').fill(PULL_SECRET);
    await shot(page, '02-create');
    await page.getByRole('button', { name: 'Create cluster', exact: true }).click();

    await page.waitForURL(/\/clusters\/[0-9a-f-]{36}\/image$/);
    const clusterId = /clusters\/([0-9a-f-]{36})/.exec(page.url())![1]!;
    const infraEnvs = (await call('GET', `${h.api.base}/infra-envs?cluster_id=${clusterId}`)).body;
    expect(infraEnvs).toHaveLength(1);
    const infraEnvId: string = infraEnvs[0].id;
    expect(infraEnvs[0].ssh_authorized_key).toBe(SSH_KEY);

    // Image settings: minimal ISO with a proxy, saved through PATCH, then a fresh URL.
    await page.getByLabel(/Minimal image/).check();
    await page.getByText('Proxy', { exact: true }).click();
    await page.getByLabel('HTTP proxy URL').fill('http://proxy.example.com:3128');
    await page.getByRole('button', { name: 'Save image settings' }).click();
    const imageUrl = page.getByLabel('Discovery image URL');
    await imageUrl.waitFor();
    expect(await imageUrl.inputValue()).toContain(`/images/${infraEnvId}/minimal.iso`);
    const ie = (await call('GET', `${h.api.base}/infra-envs/${infraEnvId}`)).body;
    expect([ie.type, ie.proxy?.http_proxy]).toEqual(['minimal-iso', 'http://proxy.example.com:3128']);
    await shot(page, '03-image');

    // Machines boot the image: three control planes and a worker with a bad hostname.
    fleet = runFleet({ serviceUrl: h.api.url, infraEnvId, count: 4, mix: `control-plane:3,${BAD_WORKER}:1`, seed: 'ui-demo', durationSeconds: 300, pollIntervalSeconds: 0.5, rampSeconds: 0 }, fleetStop.signal);
    await page.getByRole('link', { name: 'Next: hosts' }).click();
    await page.waitForURL(/\/hosts$/);
    const hosts = page.locator('tbody.host');
    await eventually(async () => (await hosts.count()) === 4, 30000, 'four hosts in the table');
    const bad = page.locator('tbody.host[data-hostname^="Worker_Bad"]');
    const badValidation = bad.locator('[data-validation="hostname-valid"]');
    await badValidation.waitFor({ timeout: 30000 });
    expect(await badValidation.textContent()).toMatch(/Hostname Worker_Bad-\d is invalid.*How to fix:.*set a valid hostname/);
    await shot(page, '04-hosts-failing-validation');

    const badName = (await bad.getAttribute('data-hostname'))!;
    await page.getByLabel(`Hostname of ${badName}`).fill('worker-1');
    await bad.getByRole('button', { name: 'Save' }).click();
    const fixed = page.locator('tbody.host[data-hostname="worker-1"]');
    await fixed.waitFor();
    await eventually(async () => (await fixed.locator('[data-validation="hostname-valid"]').count()) === 0, 20000, 'hostname-valid to pass');
    // Roles are editable too: the renamed host is pinned as a worker.
    await page.getByLabel('Role of worker-1').selectOption('worker');
    await eventually(async () => (await call('GET', `${h.api.base}/infra-envs/${infraEnvId}/hosts`)).body.find((x: { requested_hostname?: string }) => x.requested_hostname === 'worker-1')?.role === 'worker', 10000, 'worker-1 to be a worker');

    // Networking: the machine network and VIPs suggested from the hosts' free addresses.
    await page.getByRole('link', { name: 'Next: networking' }).click();
    await page.getByRole('button', { name: 'Use suggestions' }).click({ timeout: 30000 });
    expect(await page.getByLabel('Machine network (CIDR)').inputValue()).toMatch(/^\d+\.\d+\.\d+\.0\/24$/);
    expect(await page.getByLabel('API virtual IP').inputValue()).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    await page.getByRole('button', { name: 'Save networking' }).click();
    await page.getByText('Network settings saved.').waitFor();
    await shot(page, '05-networking');

    // The renamed host is now known, with every other host.
    await page.getByRole('link', { name: /Hosts/ }).first().click();
    await eventually(async () => (await call('GET', `${h.api.base}/clusters/${clusterId}`)).body.status === 'ready', 40000, 'cluster ready');
    await fixed.locator('.badge', { hasText: 'known' }).waitFor();
    await shot(page, '06-hosts-known');

    await page.getByRole('link', { name: 'Review', exact: true }).click();
    const install = page.getByRole('button', { name: 'Install cluster', exact: true });
    await eventually(() => install.isEnabled(), 20000, 'install button enabled');
    await shot(page, '07-review');
    await install.click();

    await page.waitForURL(/\/progress$/);
    await page.locator('.event').first().waitFor();
    await page.locator('.badge', { hasText: 'installing-in-progress' }).first().waitFor({ timeout: 60000 });
    // The slow worker crosses the soft stage timeout: a warning, and the install goes on.
    const warnings = page.getByRole('region', { name: 'Warnings' });
    await warnings.getByText(/worker-1: installation stage .+ \(soft timeout\); still waiting/).first().waitFor({ timeout: 30000 });
    await shot(page, '08-progress');
    await page.getByText('The cluster is installed.').waitFor({ timeout: 120000 });
    expect(await page.getByRole('progressbar', { name: 'Cluster install progress' }).getAttribute('aria-valuenow')).toBe('100');
    expect(await page.getByRole('progressbar', { name: 'worker-1 progress' }).getAttribute('aria-valuenow')).toBe('100');
    await shot(page, '09-progress-installed');

    await page.getByRole('link', { name: 'Get the kubeconfig and the install report' }).click();
    await page.waitForURL(/\/done$/);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download kubeconfig', exact: true }).click()]);
    expect(download.suggestedFilename()).toBe('ui-demo-kubeconfig');
    const kubeconfig = readFileSync((await download.path())!, 'utf8');
    expect(kubeconfig).toMatch(/^apiVersion: v1$/m);
    expect(kubeconfig).toMatch(/^kind: Config$/m);
    expect(kubeconfig).toMatch(/server: https:\/\/[\d.]+:6443/);
    expect(kubeconfig).toContain('client-certificate-data:');
    await shot(page, '10-done');

    // A reload keeps the place: the URL names the cluster and the step, the API has the state.
    await page.reload();
    await page.getByRole('heading', { name: 'Your cluster is ready' }).waitFor();
    await page.goto(`${h.api.url}/`);
    const row = page.getByRole('row', { name: /ui-demo/ });
    await row.getByText('installed').waitFor();
    expect(await row.getByRole('progressbar').getAttribute('aria-valuenow')).toBe('100');
    await shot(page, '11-clusters');
  });

  it('retries a host that failed writing its image, from the progress page', async () => {
    const c = await readyCluster(h, 'ui-retry', `control-plane:3,worker:1,${path.join(FIXTURE_PROFILES, 'worker-fails-writing.yaml')}:1`, 5);
    try {
      // A cluster registered through the API opens on its hosts step.
      await page.goto(`${h.api.url}/clusters/${c.clusterId}`);
      await page.waitForURL(/\/hosts$/);
      await page.getByRole('link', { name: 'Review', exact: true }).click();
      await page.getByRole('button', { name: 'Install cluster', exact: true }).click();
      await page.waitForURL(/\/progress$/);
      const retry = page.getByRole('button', { name: /^Retry worker-fails-writing-\d$/ });
      await retry.waitFor({ timeout: 60000 });
      const failed = page.locator('tr', { has: retry });
      expect(await failed.textContent()).toMatch(/simulated failure at Writing image to disk/);
      await page.getByRole('button', { name: 'Reset cluster' }).waitFor();
      await shot(page, '14-progress-host-failed');
      await retry.click();
      await page.getByText('The cluster is installed.').waitFor({ timeout: 60000 });
      const report = (await call('GET', `${h.api.base}/clusters/${c.clusterId}/install-report`)).body;
      expect(report.hosts.find((x: { hostname: string }) => /worker-fails-writing/.test(x.hostname)).retries).toBe(1);
    } finally {
      await c.report();
    }
  });

  it('adds a host to an installed cluster: Add hosts, the new host boots, Install, installed', async () => {
    const c = await readyCluster(h, 'ui-grow', 'control-plane:3', 3);
    const stop = new AbortController();
    let day2: Promise<unknown> | undefined;
    try {
      expect((await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/install`)).status).toBe(202);
      await waitClusterStatus(h, c.clusterId, ['installed'], 120000);
      await page.goto(`${h.api.url}/clusters/${c.clusterId}`);
      await page.waitForURL(/\/done$/);
      await page.getByRole('button', { name: 'Add hosts', exact: true }).click();
      await page.getByRole('heading', { name: 'Add hosts', exact: true }).waitFor();
      await page.locator('.cluster-name .badge', { hasText: 'adding-hosts' }).waitFor();
      // The panel made the day-2 infra-env; a machine boots from it (its fleet runs apart: the running nodes answer it).
      const ie = await eventually(async () => ((await call('GET', `${h.api.base}/infra-envs?cluster_id=${c.clusterId}`)).body as Array<{ id: string; name: string }>).find((x) => x.name === 'ui-grow-day2'), 20000, 'the day-2 infra-env');
      day2 = runFleet({ serviceUrl: h.api.url, infraEnvId: ie.id, count: 1, mix: 'worker', seed: 'ui-grow-day2', durationSeconds: 300, pollIntervalSeconds: 0.5, rampSeconds: 0, firstIndex: 10, joinsRunningCluster: true }, stop.signal);
      const install = page.getByRole('button', { name: 'Install worker-10', exact: true });
      await install.waitFor({ timeout: 60000 }).catch(async (err: Error) => {
        // Failed once in a few full runs: say where the new host stood, to tell a stuck host from a slow one.
        await shot(page, '16-add-hosts-timed-out').catch(() => undefined);
        const hosts = ((await call('GET', `${h.api.base}/infra-envs/${ie.id}/hosts`)).body ?? []) as Array<{ status: string; status_info: string; validations_info?: string }>;
        const where = hosts.map((x) => ({ status: x.status, status_info: x.status_info, failing: Object.values(JSON.parse(x.validations_info ?? '{}') as Record<string, Array<{ id: string; status: string }>>).flat().filter((v) => v.status !== 'success').map((v) => `${v.id}:${v.status}`) }));
        throw new Error(`${err.message}\nthe day-2 infra-env's hosts: ${JSON.stringify(where)}`);
      });
      await shot(page, '16-add-hosts');
      await install.click();
      await page.locator('tr', { hasText: 'worker-10' }).locator('.badge', { hasText: /^installed$/ }).waitFor({ timeout: 60000 });
      const hosts = (await call('GET', `${h.api.base}/clusters/${c.clusterId}`)).body.hosts as Array<{ status: string; kind: string }>;
      expect(hosts.map((x) => `${x.kind}:${x.status}`).sort()).toEqual(['AddToExistingClusterHost:installed', 'Host:installed', 'Host:installed', 'Host:installed']);
      await shot(page, '17-add-hosts-installed');
    } finally {
      stop.abort();
      await day2?.catch(() => undefined);
      await c.report();
    }
  });

  it('cancels an install and resets the cluster', async () => {
    const c = await readyCluster(h, 'ui-cancel', path.join(FIXTURE_PROFILES, 'worker-slow-stages.yaml'), 1, { control_plane_count: 1, high_availability_mode: 'None' });
    try {
      expect((await call('POST', `${h.api.base}/clusters/${c.clusterId}/actions/install`)).status).toBe(202);
      // Cancelled while still preparing, a cluster only goes back to ready (nothing written yet): cancel an install under way.
      await waitClusterStatus(h, c.clusterId, ['installing'], 60000);
      await page.goto(`${h.api.url}/clusters/${c.clusterId}`);
      await page.waitForURL(/\/progress$/);
      page.once('dialog', (d) => void d.accept());
      await page.getByRole('button', { name: 'Cancel installation' }).click();
      await page.locator('.cluster-status .badge', { hasText: 'cancelled' }).waitFor();
      await shot(page, '15-progress-cancelled');
      await page.getByRole('button', { name: 'Reset cluster' }).click();
      await page.waitForURL(/\/hosts$/);
      await eventually(async () => !['cancelled', 'installing'].includes((await call('GET', `${h.api.base}/clusters/${c.clusterId}`)).body.status), 20000, 'cluster reset');
      await page.getByText('resetting-pending-user-action').first().waitFor();
    } finally {
      await c.report();
    }
  });
});

describe('web UI with AUTH_TYPE=local', () => {
  let api: ApiHarness;
  let page: Page;
  beforeAll(async () => {
    api = await startApiHarness({ authType: 'local' });
    page = await newPage();
  });
  afterAll(async () => {
    await page?.context().close();
    await api?.stop();
  });

  it('asks for a token, rejects a bad one and signs in with a good one', async () => {
    await page.goto(`${api.url}/clusters/new`);
    await page.waitForURL(/\/token\?next=%2Fclusters%2Fnew$/);
    await page.getByLabel('API token').fill('not-a-token');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('alert').waitFor();
    await shot(page, '12-token');
    const token = api.signer.sign({ use: 'user', sub: 'alice' });
    await page.getByLabel('API token').fill(token);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL(/\/clusters\/new$/);
    await page.getByRole('heading', { name: 'Create a cluster', exact: true }).waitFor();
    expect(await page.evaluate("sessionStorage.getItem('landfall.token')")).toBe(token);
  });

  it('goes through the create form by keyboard and shows the API error message', async () => {
    await page.goto(`${api.url}/clusters/new`);
    await page.getByRole('heading', { name: 'Create a cluster', exact: true }).waitFor();
    // The page heading has focus; Tab walks the form in reading order.
    const order: string[] = [];
    const focused = () => page.evaluate<string>("document.activeElement?.id || document.activeElement?.textContent?.trim() || ''");
    await page.keyboard.press('Tab');
    order.push(await focused());
    await page.keyboard.type('kbd-cluster');
    for (const fill of [undefined, 'example.com', undefined, '', 'this is not JSON']) {
      await page.keyboard.press('Tab');
      order.push(await focused());
      if (fill) await page.keyboard.type(fill);
    }
    await page.keyboard.press('Tab');
    order.push(await focused());
    await page.keyboard.press('Tab');
    order.push(await focused());
    expect(order).toEqual(['cluster-name', 'release', 'base-domain', 'control-planes', 'ssh-key', 'pull-secret', 'Cancel', 'Create cluster']);
    // The focus ring is visible on the button the keyboard reached.
    expect(await page.evaluate('getComputedStyle(document.activeElement).outlineStyle')).toBe('solid');
    await page.keyboard.press('Enter');

    const alert = page.getByRole('alert');
    await alert.waitFor();
    const token = api.signer.sign({ use: 'user', sub: 'alice' });
    const direct = await call('POST', `${api.base}/clusters`, { headers: { Authorization: `Bearer ${token}` }, body: { name: 'kbd-cluster', openshift_version: await page.getByLabel('Kubernetes release').inputValue(), base_dns_domain: 'example.com', control_plane_count: 3, high_availability_mode: 'Full', pull_secret: 'this is not JSON' } });
    expect(direct.status).toBe(400);
    expect(await alert.textContent()).toContain(direct.body.reason);
    await shot(page, '13-api-error');
    expect(page.url()).toMatch(/\/clusters\/new$/);
  });

  it('reads the live event stream with the token in the Authorization header', async () => {
    const token = api.signer.sign({ use: 'user', sub: 'alice' });
    const created = await call('POST', `${api.base}/clusters`, { headers: { Authorization: `Bearer ${token}` }, body: { name: 'sse-auth', openshift_version: '1.31', base_dns_domain: 'example.com', pull_secret: PULL_SECRET } });
    expect(created.status).toBe(201);
    // Without a token the stream is refused, so events on the page prove the header was sent.
    expect((await fetch(`${api.base}/events/stream?cluster_id=${created.body.id}`)).status).toBe(401);
    await page.goto(`${api.url}/clusters/${created.body.id}/progress`);
    await page.locator('.live-live').waitFor();
    await page.locator('.event', { hasText: 'sse-auth' }).first().waitFor();
  });
});
