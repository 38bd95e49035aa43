/**
 * The first end-to-end test: `landfall dev` (what `npm start` runs) brings up
 * real Temporal, PostgreSQL and storage; a self-check written through the API
 * runs a workflow to completion; the row is in PostgreSQL and the object in
 * storage; Ctrl-C leaves nothing running; a second start reuses the state.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import { Client, Connection } from '@temporalio/client';
import { canConnect, freePort, toolsDir } from '../../src/dev/process-utils';
import { localApiserverBinaries } from '../../src/operator/local-apiserver';
import { S3ObjectStore } from '../../src/storage/s3-object-store';
import { eventually, startTestMinio, tempDir, type TestMinio } from '../support/services';
import { buildSyntheticLiveIso, xorrisoAvailable } from '../support/live-iso';

const COREOS_INSTALLER = path.join(toolsDir(), 'cargo', 'bin', 'coreos-installer');

const MAIN = path.resolve(__dirname, '../../dist/src/cli/main.js');

interface Stack {
  proc: ChildProcess;
  output: () => string;
  apiUrl: string;
  ports: { api: number; temporal: number; ui: number; pg: number };
  stateDir: string;
}

async function startStack(stateDir: string, extraEnv: Record<string, string> = {}, ports?: Stack['ports']): Promise<Stack> {
  try {
    return await startStackOnce(stateDir, extraEnv, ports);
  } catch (err) {
    // A free port found by probing can be taken by a parallel test before landfall dev binds it: once more, on others.
    if (ports || !/address already in use/.test((err as Error).message)) throw err;
    return startStackOnce(stateDir, extraEnv);
  }
}

async function startStackOnce(stateDir: string, extraEnv: Record<string, string> = {}, ports?: Stack['ports']): Promise<Stack> {
  const p = ports ?? { api: await freePort(), temporal: await freePort(), ui: await freePort(), pg: await freePort() };
  const env = {
    PATH: process.env.PATH!,
    HOME: process.env.HOME ?? '/root',
    STATE_DIR: stateDir,
    API_HOST: '127.0.0.1',
    API_PORT: String(p.api),
    TEMPORAL_ADDRESS: `127.0.0.1:${p.temporal}`,
    TEMPORAL_UI_PORT: String(p.ui),
    EMBEDDED_POSTGRES_PORT: String(p.pg),
    LOG_LEVEL: 'info',
    ...extraEnv,
  };
  const proc = spawn(process.execPath, [MAIN, 'dev'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  // Either the banner or the process gone (then at once, not after the whole wait).
  await eventually(async () => proc.exitCode !== null || out.includes('Landfall is running'), 120000, 'the start banner');
  if (proc.exitCode !== null) throw new Error(`landfall dev exited ${proc.exitCode}: ${out.slice(-2000)}`);
  return { proc, output: () => out, apiUrl: `http://127.0.0.1:${p.api}`, ports: p, stateDir };
}

async function stopStack(s: Stack): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => s.proc.once('exit', (code) => resolve(code)));
  s.proc.kill('SIGINT');
  return exited;
}

async function temporalClient(port: number): Promise<Client> {
  return new Client({ connection: await Connection.connect({ address: `127.0.0.1:${port}` }), namespace: 'default' });
}

async function runSelfCheck(s: Stack, message: string) {
  const res = await fetch(`${s.apiUrl}/api/landfall/v1/self-checks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message }),
  });
  expect(res.status).toBe(202);
  const created = (await res.json()) as { id: string; workflow_id: string; status: string };
  expect(created.status).toBe('pending');
  expect(created.workflow_id).toBe(`self-check-${created.id}`);

  const client = await temporalClient(s.ports.temporal);
  try {
    const result = (await client.workflow.getHandle(created.workflow_id).result()) as { objectKey: string };
    expect(result.objectKey).toBe(`self-checks/${created.id}.json`);
  } finally {
    await client.connection.close();
  }
  return created;
}

async function queryRow(s: Stack, id: string) {
  const password = readFileSync(path.join(s.stateDir, 'postgres.password'), 'utf8').trim();
  const pg = new PgClient({ connectionString: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${s.ports.pg}/landfall` });
  await pg.connect();
  try {
    const { rows } = await pg.query('select status, object_key, storage, message from self_checks where id = $1', [id]);
    return rows[0] as { status: string; object_key: string; storage: string; message: string } | undefined;
  } finally {
    await pg.end();
  }
}

async function expectAllStopped(s: Stack) {
  for (const port of Object.values(s.ports)) expect(await canConnect('127.0.0.1', port)).toBe(false);
}

describe('landfall dev with the local storage backend', () => {
  const stateDir = tempDir('stack-local');
  let stack: Stack | undefined;
  afterAll(async () => {
    if (stack && stack.proc.exitCode === null) await stopStack(stack);
  });

  it('starts everything, prints the URLs, and runs a self-check through API, Temporal, PostgreSQL and storage', async () => {
    // With one insights demo cluster too (DEMO_INSIGHTS_CLUSTERS): seeded through the API beside the demo fleet.
    stack = await startStack(stateDir, { DEMO_INSIGHTS_CLUSTERS: '1' });
    const banner = stack.output();
    expect(banner).toContain(`http://localhost:${stack.ports.api}`);
    expect(banner).toContain(`Temporal UI   http://localhost:${stack.ports.ui}`);
    expect(banner).not.toContain(readFileSync(path.join(stateDir, 'postgres.password'), 'utf8').trim());

    const ready = await fetch(`${stack.apiUrl}/readyz`);
    expect(ready.status).toBe(200);
    // The Temporal UI is served.
    expect(await (await fetch(`http://127.0.0.1:${stack.ports.ui}/`)).text()).toMatch(/<html/i);

    // The demo fleet: a "demo" cluster whose simulated hosts register and report inventory.
    expect(banner).toContain('Demo fleet    5 simulated hosts');
    const demoHosts = await eventually(async () => {
      const clusters = (await (await fetch(`${stack!.apiUrl}/api/assisted-install/v2/clusters?with_hosts=true`)).json()) as Array<{ name: string; hosts: Array<{ inventory?: string }> }>;
      const demo = clusters.find((c) => c.name === 'demo');
      return demo && demo.hosts.length === 5 && demo.hosts.every((h) => h.inventory) ? demo.hosts : undefined;
    }, 30000, 'five demo hosts with inventory');
    expect(demoHosts).toHaveLength(5);
    // The insights demo's first scenario (a clean 3+2, src/dev/demo-insights.ts): its cluster, with its simulated hosts arriving.
    expect(banner).toContain('Insights demo 1 clusters of simulated hosts installing (insights-*)');
    const insightsLines = () => stack!.output().split('\n').filter((l) => /demo-insights|demo fleet|insights demo|at capacity|"level":(40|50)|\b(WARN|ERROR)\b/.test(l)).slice(-30).join('\n');
    // What each read saw and how long the slowest took: a failure says whether the reads were slow or the demo was.
    let lastSeen = 'no read answered';
    let slowestReadMs = 0;
    const waitStarted = Date.now();
    await eventually(async () => {
      const started = Date.now();
      const r = await fetch(`${stack!.apiUrl}/api/assisted-install/v2/clusters?with_hosts=true`, { signal: AbortSignal.timeout(30_000) });
      const clusters = (await r.json()) as Array<{ name: string; openshift_version: string; status: string; hosts: unknown[] }>;
      slowestReadMs = Math.max(slowestReadMs, Date.now() - started);
      const seeded = clusters.find((c) => c.name === 'insights-clean-1');
      lastSeen = `${new Date().toISOString()} HTTP ${r.status}: ${seeded ? `insights-clean-1 ${seeded.status}, ${seeded.hosts.length} hosts, release ${seeded.openshift_version}` : `no insights-clean-1 among ${clusters.length} clusters`}`;
      return seeded?.openshift_version === '1.32' && seeded.hosts.length === 5;
      // 300 s: an agent turned away (503 while the API is at capacity on a loaded machine) backs off up to 60 s, and
      // on a loaded CI machine (the API's event loop 1.9 s late) 120 s and then 180 s ran out seconds before the demo's
      // install ended (2026-11-29, twice); alone the cluster is there within seconds. Until that is understood, a slow
      // wait says what it saw (below), and a failure says it too.
    }, 300_000, 'the insights demo cluster with its five hosts').catch((err: Error) => {
      // What the demo said, so a failure on a loaded CI machine explains itself.
      throw new Error(`${err.message}\nlast read: ${lastSeen}; slowest read ${slowestReadMs} ms\n${insightsLines()}`);
    });
    if (Date.now() - waitStarted > 60_000) console.log(`the insights demo cluster took ${Math.round((Date.now() - waitStarted) / 1000)} s to show its five hosts; last read: ${lastSeen}; slowest read ${slowestReadMs} ms\n${insightsLines()}`);

    const created = await runSelfCheck(stack, 'hello from the local test');
    const row = await queryRow(stack, created.id);
    expect(row).toMatchObject({ status: 'completed', object_key: `self-checks/${created.id}.json`, message: 'hello from the local test' });
    const file = path.join(stateDir, 'objects', 'self-checks', `${created.id}.json`);
    expect(existsSync(file)).toBe(true);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ id: created.id, message: 'hello from the local test' });

    // The dev server is set up for installs: retention raised, search attributes registered.
    const client = await temporalClient(stack.ports.temporal);
    try {
      const ns = await client.connection.workflowService.describeNamespace({ namespace: 'default' });
      expect(Number(ns.config?.workflowExecutionRetentionTtl?.seconds)).toBe(720 * 3600);
      const sas = await client.connection.operatorService.listSearchAttributes({ namespace: 'default' });
      expect(Object.keys(sas.customAttributes ?? {})).toEqual(expect.arrayContaining(['ClusterId', 'ClusterName', 'InstallStatus', 'KubernetesRelease']));
    } finally {
      await client.connection.close();
    }

    const code = await stopStack(stack);
    expect(code).toBe(0);
    await expectAllStopped(stack);

    // A second start reuses the state: the row, the object and the workflow history are still there.
    stack = await startStack(stateDir, {}, stack.ports);
    const again = await fetch(`${stack.apiUrl}/api/landfall/v1/self-checks/${created.id}`);
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ id: created.id, status: 'completed' });
    const client2 = await temporalClient(stack.ports.temporal);
    try {
      const d = await client2.workflow.getHandle(created.workflow_id).describe();
      expect(d.status.name).toBe('COMPLETED');
    } finally {
      await client2.connection.close();
    }
    expect(await stopStack(stack)).toBe(0);
    await expectAllStopped(stack);
  }, 540_000);
});

/** The direct children of a process whose command line matches. */
function childPids(parent: number, match: RegExp): number[] {
  const out = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(parent)], { encoding: 'utf8' });
  return out.split('\n').map((l) => l.trim()).filter((l) => match.test(l)).map((l) => Number(l.split(/\s+/)[0]));
}

describe('landfall dev restarts a component that dies', () => {
  const stateDir = tempDir('stack-restart');
  let stack: Stack | undefined;
  afterAll(async () => {
    if (stack && stack.proc.exitCode === null) await stopStack(stack);
  });

  it('brings the api, the worker, PostgreSQL and Temporal back, saying so, and keeps serving', async () => {
    stack = await startStack(stateDir, { DEMO_FLEET_HOSTS: '0' });
    const s = stack;
    const ready = async () => (await fetch(`${s.apiUrl}/readyz`).catch(() => undefined))?.status === 200;
    for (const [name, match] of [
      ['api', /main\.js api$/],
      ['worker', /main\.js worker$/],
      ['postgres', /\/postgres -D /],
      ['temporal', /temporal server start-dev/],
    ] as const) {
      const [pid] = childPids(s.proc.pid!, match);
      expect([name, pid]).toEqual([name, expect.any(Number)]);
      process.kill(pid!, 'SIGKILL');
      await eventually(async () => s.output().includes(`${name} restarted`), 60000, `${name} restarted`);
      expect(s.output()).toContain(`${name} exited unexpectedly; restarting it`);
      expect(s.proc.exitCode).toBeNull();
      await eventually(ready, 60000, `the API ready after ${name} restarted`);
    }
    // Everything works end to end after all four came back.
    await runSelfCheck(s, 'after the restarts');
    expect(await stopStack(s)).toBe(0);
    await expectAllStopped(s);
  }, 300000);
});

describe('landfall dev with the S3 backend on a real MinIO', () => {
  let minio: TestMinio;
  let stack: Stack | undefined;
  beforeAll(async () => {
    minio = await startTestMinio();
  });
  afterAll(async () => {
    if (stack && stack.proc.exitCode === null) await stopStack(stack);
    await minio?.stop();
  });

  it('writes the self-check object into the bucket; serves discovery ISOs from a catalogued base image kept there', async () => {
    // A base image named by the release catalogue: fetched by the running stack, kept in the bucket.
    const iso = xorrisoAvailable() ? await buildSyntheticLiveIso({ fillerBytes: 2 * 1024 * 1024, name: 'stack.iso' }) : undefined;
    const releasesFile = path.join(tempDir('stack-releases'), 'releases.json');
    if (iso) {
      const sha256 = createHash('sha256').update(readFileSync(iso.path)).digest('hex');
      writeFileSync(releasesFile, JSON.stringify({ '1.32': { display_name: 'Kubernetes 1.32.0', kubernetes_version: '1.32.0', default: true, cpu_architectures: ['x86_64'], base_images: { x86_64: { url: pathToFileURL(iso.path).href, sha256 } } } }));
    }
    const s3 = { DEMO_FLEET_HOSTS: '0', STORAGE_BACKEND: 's3', S3_ENDPOINT: minio.endpoint, S3_ACCESS_KEY: minio.accessKey, S3_SECRET_KEY: minio.secretKey, S3_BUCKET: 'landfall-e2e', ...(iso ? { RELEASES_FILE: releasesFile } : {}) };
    stack = await startStack(tempDir('stack-s3'), s3);
    const created = await runSelfCheck(stack, 'hello from the s3 test');
    const row = await queryRow(stack, created.id);
    expect(row?.status).toBe('completed');
    expect(row?.storage).toBe(`s3:${new URL(minio.endpoint).host}/landfall-e2e`);
    const store = new S3ObjectStore({ endpoint: minio.endpoint, accessKey: minio.accessKey, secretKey: minio.secretKey, bucket: 'landfall-e2e', region: 'us-east-1' });
    const body = JSON.parse((await store.getBuffer(`self-checks/${created.id}.json`)).toString());
    expect(body).toMatchObject({ id: created.id, message: 'hello from the s3 test' });
    // The S3 secret is never logged.
    expect(stack.output()).not.toContain(minio.secretKey);

    if (iso && existsSync(COREOS_INSTALLER)) {
      const base = `${stack.apiUrl}/api/assisted-install/v2`;
      const post = await fetch(`${base}/infra-envs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'stack-iso', pull_secret: '{"auths":{"r.example.com":{"auth":"eDp5"}}}', image_type: 'minimal-iso', kernel_arguments: [{ operation: 'append', value: 'rd.net.timeout.carrier=60' }] }),
      });
      expect(post.status).toBe(201);
      const ie = ((await post.json()) as { id: string }).id;
      const { url } = (await (await fetch(`${base}/infra-envs/${ie}/downloads/image-url`)).json()) as { url: string };
      const res = await fetch(url);
      // On failure, what the service said and logged (a 503 here once, in a CI run, with nothing else to go on).
      if (res.status !== 200) {
        const logged = stack.output().split('\n').filter((l) => /base image|"level":(40|50)|\b(WARN|ERROR)\b/.test(l)).slice(-20).join('\n');
        throw new Error(`the discovery ISO download answered ${res.status}: ${(await res.text()).slice(0, 500)}\nthe stack's warnings and errors:\n${logged}`);
      }
      const body = Buffer.from(await res.arrayBuffer());
      const file = path.join(tempDir('stack-iso'), 'minimal.iso');
      writeFileSync(file, body);
      const ci = (...args: string[]) => execFileSync(COREOS_INSTALLER, args, { encoding: 'utf8' });
      // AUTH_TYPE=none: the discovery Ignition carries no token, so it is byte for byte what the API serves.
      const ign = await (await fetch(`${base}/infra-envs/${ie}/downloads/files?file_name=discovery.ign`)).text();
      expect(ci('iso', 'ignition', 'show', file)).toBe(ign);
      expect(ci('iso', 'kargs', 'show', file).trim()).toBe(`mitigations=auto,nosmt ignition.firstboot ignition.platform.id=metal coreos.live.rootfs_url=http://localhost:${stack.ports.api}/images/boot-artifacts/1.32/x86_64/rootfs.img rd.net.timeout.carrier=60`);
      // A range across the embed area is the same bytes as the whole image's.
      const at = iso.ignition.offset - 100;
      const part = await fetch(url, { headers: { Range: `bytes=${at}-${at + 4999}` } });
      expect(part.status).toBe(206);
      expect(Buffer.from(await part.arrayBuffer()).equals(body.subarray(at, at + 5000))).toBe(true);
      // The rootfs the minimal ISO points at is served by the running stack.
      expect((await fetch(`${stack.apiUrl}/images/boot-artifacts/1.32/x86_64/rootfs.img`, { method: 'HEAD' })).status).toBe(200);
      // The base image was kept in the bucket.
      expect((await store.list('base-images/')).map((o) => o.key)).toEqual([expect.stringMatching(/^base-images\/1\.32-x86_64-[0-9a-f]{16}\.iso$/)]);
    }
    expect(await stopStack(stack)).toBe(0);
    await expectAllStopped(stack);
  });
});

describe('landfall dev with LANDFALL_OPERATOR=1 (what `LANDFALL_OPERATOR=1 npm start` runs)', () => {
  it('also starts a local kube-apiserver and the operator: the example folder applied with kubectl becomes a Landfall cluster; Ctrl-C stops the apiserver too', async () => {
    const stack = await startStack(tempDir('stack-operator'), { DEMO_FLEET_HOSTS: '0', LANDFALL_OPERATOR: '1' });
    let kubePort = 0;
    try {
      const m = /Kubernetes\s+(https:\/\/\S+) \(local kube-apiserver \+ landfall operator; KUBECONFIG=(\S+)\)/.exec(stack.output());
      expect(m).not.toBeNull();
      kubePort = Number(new URL(m![1]!).port);
      // The README's walk-through, with the kubeconfig the banner names.
      const kubectl = (...args: string[]) => execFileSync(localApiserverBinaries().kubectl, args, { encoding: 'utf8', env: { PATH: process.env.PATH!, HOME: process.env.HOME!, KUBECONFIG: m![2]! } });
      expect(kubectl('apply', '-k', path.resolve(__dirname, '../../deploy/examples/ztp-3-2'))).toMatch(/infraenv\.agent-install\.landfall\.io\/edge-1 created/);
      const url = await eventually(async () => kubectl('-n', 'ztp-demo', 'get', 'infraenv', 'edge-1', '-o', 'jsonpath={.status.isoDownloadURL}') || undefined, 90000, 'the InfraEnv\'s ISO URL').catch((e: Error) => {
        throw new Error(`${e.message}; InfraEnv status ${kubectl('-n', 'ztp-demo', 'get', 'infraenv', 'edge-1', '-o', 'jsonpath={.status}')}; output ${stack.output().slice(-3000)}`);
      });
      const clusters = (await (await fetch(`${stack.apiUrl}/api/assisted-install/v2/clusters`)).json()) as Array<{ id: string; name: string }>;
      const edge = clusters.find((c) => c.name === 'edge-1');
      expect(edge).toBeDefined();
      expect(url).toContain(kubectl('-n', 'ztp-demo', 'get', 'infraenv', 'edge-1', '-o', 'jsonpath={.status.landfall.infraEnvID}'));
      expect(kubectl('-n', 'ztp-demo', 'get', 'agentclusterinstall', 'edge-1', '-o', 'jsonpath={.status.landfall.clusterID}')).toBe(edge!.id);
    } finally {
      expect(await stopStack(stack)).toBe(0);
    }
    await expectAllStopped(stack);
    expect(await canConnect('127.0.0.1', kubePort)).toBe(false);
  }, 240000);
});
