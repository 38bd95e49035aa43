/* eslint-disable @typescript-eslint/no-explicit-any -- API bodies are read loosely in this test */
/**
 * The `landfall` client commands, spawned from dist/ against a live stack
 * (API, worker, Temporal, PostgreSQL, simulated fleet): each command's
 * `-o json` is checked against what the API itself answers, and failures come
 * out as one line and the documented exit code.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runFleet } from '../../agent/fleet';
import { EXIT } from '../../src/cli/exit-codes';
import { freePort } from '../../src/dev/process-utils';
import { call, SSH_KEY, startApiHarness } from '../support/api-harness';
import { bootFleet, FIXTURE_PROFILES, startInstallHarness, type InstallHarness } from '../support/install-harness';
import { buildSyntheticLiveIso, xorrisoAvailable } from '../support/live-iso';
import { eventually, tempDir } from '../support/services';

const MAIN = path.resolve(__dirname, '../../dist/src/cli/main.js');
const haveXorriso = xorrisoAvailable();

let h: InstallHarness;
let work: string;

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI without blocking this process (the API under test runs in it). */
/** Runs the CLI; a command that does not end by itself (`--follow`) is stopped once `until` holds for its output. */
function landfall(args: string[], o: { env?: Record<string, string>; timeoutMs?: number; until?: (stdout: string) => boolean } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], { cwd: work, env: { PATH: process.env.PATH!, LANDFALL_URL: h.api.url, ...o.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
      if (o.until?.(stdout)) child.kill('SIGTERM');
    });
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs ?? 60000);
    child.on('error', reject);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

async function json(args: string[]): Promise<any> {
  const r = await landfall([...args, '-o', 'json']);
  if (r.status !== 0) throw new Error(`landfall ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** One line on stderr, no stack trace, nothing on stdout. */
function expectOneLineError(r: Run, code: number, pattern: RegExp) {
  expect({ status: r.status, stdout: r.stdout }).toEqual({ status: code, stdout: '' });
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^landfall: /);
  expect(lines[0]).toMatch(pattern);
  expect(r.stderr).not.toMatch(/\n\s+at /);
}

beforeAll(async () => {
  work = tempDir('cli');
  let env: Record<string, string> = {};
  if (haveXorriso) env = { BASE_ISO_PATH: (await buildSyntheticLiveIso({ fillerBytes: 3 * 1024 * 1024, name: 'cli.iso' })).path };
  h = await startInstallHarness(env);
});
afterAll(async () => {
  await h?.stop();
});

describe('landfall cluster, infraenv, hosts', () => {
  it('creates, lists, shows (by id and by name) and deletes clusters as the API has them', async () => {
    const versions = (await call('GET', `${h.api.base}/openshift-versions`)).body;
    const expectedRelease = Object.keys(versions).find((v) => versions[v].default) ?? Object.keys(versions).sort().at(-1);
    writeFileSync(path.join(work, 'id.pub'), SSH_KEY + '\n');
    writeFileSync(path.join(work, 'pull.json'), '{"auths":{"registry.example.com":{"auth":"dXNlcjpwYXNz"}}}');
    const created = await json(['cluster', 'create', 'cli-one', '--single-node', '--base-domain', 'example.com', '--ssh-key-file', 'id.pub', '--pull-secret-file', 'pull.json']);
    const api = (await call('GET', `${h.api.base}/clusters/${created.id}`)).body;
    expect(created).toMatchObject({ id: api.id, name: 'cli-one', openshift_version: expectedRelease, base_dns_domain: 'example.com', ssh_public_key: SSH_KEY, control_plane_count: 1, high_availability_mode: 'None', pull_secret_set: true });

    const listed = await json(['cluster', 'list']);
    expect(listed.map((c: any) => c.id)).toEqual((await call('GET', `${h.api.base}/clusters`)).body.map((c: any) => c.id));
    const byName = await json(['cluster', 'show', 'cli-one']);
    const byId = await json(['cluster', 'show', created.id]);
    expect(byName.id).toBe(created.id);
    expect({ ...byName, updated_at: undefined }).toEqual({ ...byId, updated_at: undefined });
    const table = await landfall(['cluster', 'list']);
    expect(table.stdout).toMatch(new RegExp(`^cli-one\\s+${created.id}\\s+${expectedRelease!.replace('.', '\\.')}\\s+\\S+`, 'm'));

    const updated = await json(['cluster', 'update', 'cli-one', '--base-domain', 'other.example.com']);
    expect(updated).toMatchObject({ id: created.id, base_dns_domain: 'other.example.com' });
    expect((await call('GET', `${h.api.base}/clusters/${created.id}`)).body.base_dns_domain).toBe('other.example.com');
    expect((await landfall(['cluster', 'update', 'cli-one'])).status).toBe(EXIT.usage.code);

    const removed = await json(['cluster', 'delete', 'cli-one']);
    expect(removed).toEqual({ id: created.id, name: 'cli-one', deleted: true });
    expect((await call('GET', `${h.api.base}/clusters/${created.id}`)).status).toBe(404);
  });

  it('creates an infra-env for a cluster named by name, with image type, SSH key and proxy', async () => {
    const c = await json(['cluster', 'create', 'cli-ie']);
    const ie = await json(['infraenv', 'create', '--cluster', 'cli-ie', '--image-type', 'minimal-iso', '--ssh-key-file', path.join(work, 'id.pub'), '--proxy', 'http://proxy.example.com:3128', '--noproxy', '.example.com']);
    const api = (await call('GET', `${h.api.base}/infra-envs/${ie.id}`)).body;
    expect(ie).toMatchObject({ id: api.id, cluster_id: c.id, name: 'cli-ie-infra-env', type: 'minimal-iso', ssh_authorized_key: SSH_KEY });
    expect(api.proxy).toEqual({ http_proxy: 'http://proxy.example.com:3128', https_proxy: 'http://proxy.example.com:3128', no_proxy: '.example.com' });
    expect((await json(['infraenv', 'list', '--cluster', 'cli-ie'])).map((x: any) => x.id)).toEqual([ie.id]);
  });

  it('shows hosts with their hardware and failing validations with remediation', async () => {
    const c = await json(['cluster', 'create', 'cli-hosts']);
    const ie = await json(['infraenv', 'create', '--cluster', c.id]);
    const stop = new AbortController();
    const fleet = runFleet({ serviceUrl: h.api.url, infraEnvId: ie.id, count: 2, mix: 'control-plane:1,undersized:1', seed: 'cli-hosts', durationSeconds: 120, pollIntervalSeconds: 0.5, rampSeconds: 0 }, stop.signal);
    try {
      const hosts = await eventually(async () => {
        const list = (await call('GET', `${h.api.base}/clusters/${c.id}/hosts`)).body as any[];
        return list.length === 2 && list.some((x) => x.status === 'insufficient' && x.validation_remediation && x.validation_remediation !== '{}') && list.every((x) => x.inventory) ? list : undefined;
      }, 40000, 'two hosts, one insufficient');
      const out = await json(['hosts', '--cluster', 'cli-hosts']);
      expect(out.map((x: any) => x.id).sort()).toEqual(hosts.map((x) => x.id).sort());
      const small = hosts.find((x) => x.status === 'insufficient')!;
      const remediation = JSON.parse(small.validation_remediation) as Record<string, { cause: string; hint: string }>;
      const [failingId, fix] = Object.entries(remediation)[0]!;
      const inv = JSON.parse(small.inventory);

      const t = await landfall(['hosts', '--cluster', 'cli-hosts']);
      expect(t.status).toBe(0);
      expect(t.stdout).toMatch(/^HOSTNAME\s+ROLE\s+STATUS\s+CPU\s+RAM\s+DISK\s+STAGE\s+FAILING$/m);
      // The undersized host's row: its name, status, 1 core and 4 GiB, as its inventory says.
      expect(t.stdout).toMatch(new RegExp(`^${inv.hostname}\\s+\\S+\\s+insufficient\\s+${inv.cpu.count}\\s+4\\.0 GiB\\s+`, 'm'));
      expect(t.stdout).toContain(`✗ ${failingId}`);
      expect(t.stdout).toContain(`fix: ${fix.hint}`);
    } finally {
      stop.abort();
      await fleet;
    }
  });
});

describe('landfall errors', () => {
  it('documents every exit code in --help and in the README', async () => {
    const help = await landfall(['--help']);
    expect(help.status).toBe(0);
    const readme = readFileSync(path.resolve(__dirname, '../../README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Using the CLI'), readme.indexOf('\n## ', readme.indexOf('## Using the CLI') + 5));
    const documented = [...section.matchAll(/^\| (\d+) \| /gm)].map((m) => Number(m[1]));
    expect(documented).toEqual(Object.values(EXIT).map((e) => e.code));
    for (const e of Object.values(EXIT)) expect(help.stdout).toContain(`${String(e.code).padEnd(4)}${e.meaning}`);
    // bin/landfall (the package's bin, what npx runs) is the same program.
    const version = await new Promise<string>((resolve) => {
      const child = spawn(path.resolve(__dirname, '../../bin/landfall'), ['--version'], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.on('close', () => resolve(out.trim()));
    });
    expect(version).toBe(JSON.parse(readFileSync(path.resolve(__dirname, '../../package.json'), 'utf8')).version);
  });

  it('an unknown cluster id: one line, exit "not found"', async () => {
    expectOneLineError(await landfall(['cluster', 'show', '00000000-0000-4000-8000-000000000000']), EXIT.notFound.code, /no cluster 00000000-0000-4000-8000-000000000000/);
    expectOneLineError(await landfall(['hosts', '--cluster', 'no-such-cluster']), EXIT.notFound.code, /no cluster named "no-such-cluster"/);
  });

  it('a request the API refuses: its reason, exit "usage"', async () => {
    const r = await landfall(['cluster', 'create', 'Not_A_Valid_Name']);
    expectOneLineError(r, EXIT.usage.code, /name.*\(HTTP 400\)$/);
    expectOneLineError(await landfall(['cluster', 'create', 'x', '--ssh-key-file', '/nonexistent/key.pub']), EXIT.usage.code, /--ssh-key-file: cannot read \/nonexistent\/key\.pub \(ENOENT\)/);
    expectOneLineError(await landfall(['cluster', 'list', '--bogus']), EXIT.usage.code, /unknown option '--bogus'/);
  });

  it('installing a cluster that is not ready: the API’s reason, exit "usage"', async () => {
    await json(['cluster', 'create', 'cli-not-ready']);
    expectOneLineError(await landfall(['install', '--cluster', 'cli-not-ready']), EXIT.usage.code, /\(HTTP 409\)$/);
  });

  it('AUTH_TYPE=local: no token is exit "unauthorized", --token or LANDFALL_TOKEN is sent as a bearer token', async () => {
    const secured = await startApiHarness({ authType: 'local' });
    try {
      const env = { LANDFALL_URL: secured.url };
      expectOneLineError(await landfall(['cluster', 'list'], { env }), EXIT.unauthorized.code, /\(HTTP 401\)$/);
      const token = secured.signer.sign({ use: 'user', sub: 'alice' });
      const created = JSON.parse((await landfall(['cluster', 'create', 'alice-one', '-o', 'json', '--token', token], { env })).stdout);
      const listed = await landfall(['cluster', 'list', '-o', 'json'], { env: { ...env, LANDFALL_TOKEN: token } });
      expect(JSON.parse(listed.stdout).map((c: any) => c.id)).toEqual([created.id]);
      expect((await call('GET', `${secured.base}/clusters/${created.id}`, { headers: { Authorization: `Bearer ${token}` } })).body.user_name).toBe('alice');
      // Another user's cluster is not found for bob.
      const bob = secured.signer.sign({ use: 'user', sub: 'bob' });
      expectOneLineError(await landfall(['cluster', 'show', created.id, '--token', bob], { env }), EXIT.notFound.code, /no cluster/);
    } finally {
      await secured.stop();
    }
  });

  it('a service that is not there: exit "unreachable"', async () => {
    const port = await freePort();
    const r = await landfall(['cluster', 'list'], { env: { LANDFALL_URL: `http://127.0.0.1:${port}` } });
    expectOneLineError(r, EXIT.unreachable.code, new RegExp(`cannot reach the Landfall API at http://127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\)`));
    // The client options may also come before the command.
    expectOneLineError(await landfall(['--url', `http://127.0.0.1:${port}`, '-o', 'json', 'cluster', 'list'], { env: { LANDFALL_URL: h.api.url } }), EXIT.unreachable.code, /ECONNREFUSED/);
    // --url wins over the environment.
    const flag = await landfall(['cluster', 'list', '--url', `http://127.0.0.1:${port}`, '-o', 'json'], { env: { LANDFALL_URL: h.api.url } });
    expect(flag.status).toBe(EXIT.unreachable.code);
  });
});

(haveXorriso ? describe : describe.skip)('landfall iso download', () => {
  it('downloads the discovery ISO with progress, and resumes a partial download', async () => {
    await json(['cluster', 'create', 'cli-iso']);
    const ie = await json(['infraenv', 'create', '--cluster', 'cli-iso']);
    const r = await landfall(['iso', 'download', '--infra-env', ie.id, '-f', 'a.iso']);
    expect(r.status).toBe(0);
    const size = statSync(path.join(work, 'a.iso')).size;
    const link = (await call('GET', `${h.api.base}/infra-envs/${ie.id}/downloads/image-url`)).body;
    const head = await fetch(link.url, { method: 'HEAD' });
    expect(size).toBe(Number(head.headers.get('content-length')));
    // Not a terminal: plain progress lines, then the summary.
    expect(r.stdout).toMatch(/^iso: started 0% 0 B of [\d.]+ MiB/m);
    expect(r.stdout).toMatch(/^iso: done 100% [\d.]+ MiB of [\d.]+ MiB/m);
    expect(r.stdout).toMatch(/^wrote a\.iso: [\d.]+ MiB/m);
    expect(existsSync(path.join(work, 'a.iso.part'))).toBe(false);

    // An interrupted download: the first megabyte of one image URL, and the URL it came from.
    const whole = Buffer.from(await (await fetch(link.url)).arrayBuffer());
    writeFileSync(path.join(work, 'b.iso.part'), whole.subarray(0, 1024 * 1024));
    writeFileSync(path.join(work, 'b.iso.part.json'), JSON.stringify({ url: link.url, expires_at: link.expires_at, etag: head.headers.get('etag') }));
    const resumed = await json(['iso', 'download', '--infra-env', 'cli-iso-infra-env', '-f', 'b.iso']);
    expect(resumed).toMatchObject({ infra_env_id: ie.id, file: 'b.iso', bytes: whole.length, resumed_from: 1024 * 1024 });
    expect(readFileSync(path.join(work, 'b.iso')).equals(whole)).toBe(true);
  });
});

describe('landfall install, events, kubeconfig, logs, report', () => {
  it('a failed install: install --wait exits 1 with plain progress lines, report names host, stage, cause and remediation', async () => {
    const c = await json(['cluster', 'create', 'cli-fail', '--base-domain', 'example.com', '--api-vip', '192.168.127.250', '--ingress-vip', '192.168.127.251', '--machine-network', '192.168.127.0/24']);
    const ie = await json(['infraenv', 'create', '--cluster', 'cli-fail']);
    // Two workers: whichever role the failing host is given, its failure leaves the success rule out of reach. With one
    // worker, a failed worker is allowed, and the failing host (the smallest) is a worker whenever the three control
    // planes' inventories were in before its own: the install then succeeded (a CI flake).
    const fleet = await bootFleet(h, c.id, ie.id, 'cli-fail', `control-plane:3,worker:1,${path.join(FIXTURE_PROFILES, 'worker-fails-writing.yaml')}:1`, 5);
    try {
      const r = await landfall(['install', '--cluster', 'cli-fail', '--wait'], { timeoutMs: 90000 });
      const api = (await call('GET', `${h.api.base}/clusters/${c.id}`)).body;
      expect(api.status).toBe('error');
      const bad = api.hosts.find((x: any) => x.status === 'error');
      const badName = bad.requested_hostname;
      expect(r.status).toBe(EXIT.failed.code);
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/^landfall: install of cli-fail failed \(error: .*\); see: landfall report --cluster cli-fail/);
      // stdout is a pipe: one plain line per change, hosts with their stages, events.
      expect(r.stdout).toMatch(/^cluster cli-fail: installing \d+%/m);
      expect(r.stdout).toMatch(new RegExp(`^host ${badName} \\S+( \\(bootstrap\\))?: \\d+% failed at Writing image to disk`, "m"));
      // Only this attempt's events: the first one shown is the install starting.
      expect(r.stdout.split('\n').find((l) => l.startsWith('event '))).toMatch(/^event \d\d:\d\d:\d\d info {5}Cluster starting to prepare for installation/);
      expect(r.stdout).not.toContain('\u001b[');

      // events: the API's list, and the live stream from its start (the other hosts go on installing until the fleet stops).
      await fleet.report();
      // Once the event list has settled (the workflow may still be recording the failure), the CLI lists the same.
      const names = (events: any[]) => events.map((e: any) => e.name).join(',');
      const apiEvents = await eventually(async () => {
        const first = (await call('GET', `${h.api.base}/events?cluster_id=${c.id}`)).body;
        const cli = await json(['events', '--cluster', 'cli-fail']);
        const again = (await call('GET', `${h.api.base}/events?cluster_id=${c.id}`)).body;
        return names(first) === names(again) && names(cli) === names(first) ? first : undefined;
      }, 30000, 'the CLI to list the API\'s settled events');
      const errors = await json(['events', '--cluster', 'cli-fail', '--severity', 'error']);
      expect(errors.length).toBeGreaterThan(0);
      expect(errors.every((e: any) => ['error', 'critical'].includes(e.severity))).toBe(true);
      // --follow does not end by itself: it is stopped once it has printed as many events as the list has.
      const followed = await landfall(['events', '--cluster', 'cli-fail', '--follow', '-o', 'json'], { timeoutMs: 60000, until: (out) => out.split('\n').length - 1 >= apiEvents.length });
      const streamed = followed.stdout.trim().split('\n').map((l) => JSON.parse(l));
      // The stream goes by sequence number, the list by event time: the same events, possibly in another order within a millisecond.
      const key = (e: any) => `${e.event_time} ${e.name} ${e.host_id ?? ''} ${e.message}`;
      expect(streamed.map(key).sort()).toEqual(apiEvents.map(key).sort());

      const report = await landfall(['report', '--cluster', 'cli-fail']);
      const apiReport = await call('GET', `${h.api.base}/clusters/${c.id}/install-report`);
      expect(apiReport.status).toBe(200);
      expect(report.status).toBe(0);
      expect({ ...(await json(['report', '--cluster', c.id])), generated_at: 'now' }).toEqual({ ...apiReport.body, generated_at: 'now' });
      const f = apiReport.body.failure;
      expect(f).toMatchObject({ host_id: bad.id, stage: 'Writing image to disk' });
      expect(report.stdout).toContain(`failure: host ${f.hostname} (${f.role}) at stage "Writing image to disk"`);
      expect(report.stdout).toContain(`cause:       ${f.cause}`);
      expect(report.stdout).toContain(`remediation: ${f.remediation}`);
      expect(f.remediation).toBeTruthy();
    } finally {
      await fleet.report();
    }
  });
});
