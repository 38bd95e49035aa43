/**
 * Two-sided registration diagnostics with the real bundled agent process: it
 * says why it cannot register (console and status file), keeps retrying, and
 * once it gets through the diagnosis appears as an event on its host.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import https from 'node:https';
import path from 'node:path';
import { freePort } from '../../src/dev/process-utils';
import { call, PULL_SECRET, startApiHarness, type ApiHarness } from '../support/api-harness';
import { eventually, tempDir } from '../support/services';

const AGENT = path.resolve(__dirname, '../../dist/agent/landfall-agent.js');

function startAgent(env: Record<string, string>): { proc: ChildProcess; output: () => string; statusFile: string } {
  const statusFile = path.join(tempDir('agent-status'), 'status.json');
  const proc = spawn(process.execPath, [AGENT], { env: { PATH: process.env.PATH!, LANDFALL_STATUS_FILE: statusFile, LANDFALL_POLL_INTERVAL_SECONDS: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return { proc, output: () => out, statusFile };
}

const status = (file: string) => (existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : undefined);

/**
 * The first diagnosis comes after the agent's first registration attempt has
 * failed; when the network fails, that attempt is four tries with jittered
 * backoff between them (up to 1 + 2 + 4 s, agent/service-client.ts), after
 * the process started: 3–5 s here on a quiet machine. CI once waited 20 s in
 * vain for the TLS one on a loaded machine, so the wait is 60 s and a timeout
 * says what the agent printed.
 */
function firstDiagnosis(a: ReturnType<typeof startAgent>, what: string): Promise<{ code: string; fix: string }> {
  return eventually(async () => status(a.statusFile)?.diagnosis, 60000, what).catch((e: Error) => {
    throw new Error(`${e.message}\nthe agent printed:\n${a.output()}`);
  });
}
const stop = (p: ChildProcess) => new Promise<void>((r) => (p.exitCode !== null ? r() : (p.once('exit', () => r()), p.kill('SIGTERM'))));

describe('agent registration diagnostics', () => {
  let h: ApiHarness;
  let infraEnvId: string;
  const agents: ChildProcess[] = [];
  beforeAll(async () => {
    h = await startApiHarness();
    infraEnvId = (await call('POST', `${h.base}/infra-envs`, { body: { name: 'diag', pull_secret: PULL_SECRET } })).body.id;
  });
  afterAll(async () => {
    await Promise.all(agents.map(stop));
    await h?.stop();
  });

  it('diagnoses a refused connection, keeps retrying, and reports it as an event once through', async () => {
    const port = await freePort();
    const a = startAgent({ LANDFALL_SERVICE_URL: `http://127.0.0.1:${port}`, LANDFALL_INFRA_ENV_ID: infraEnvId });
    agents.push(a.proc);
    const s = await firstDiagnosis(a, 'a diagnosis in the status file');
    expect(s.code).toBe('refused');
    expect(status(a.statusFile).state).toBe('cannot-reach-service');
    expect(a.output()).toContain(`connection to 127.0.0.1:${port} refused`);
    expect(a.output()).toMatch(/fix: nothing listens/);

    // The network is fixed: the port now leads to the service.
    const forward = net.createServer((c) => {
      const up = net.connect(Number(new URL(h.url).port), '127.0.0.1');
      c.pipe(up).pipe(c);
      c.on('error', () => up.destroy());
      up.on('error', () => c.destroy());
    });
    await new Promise<void>((r) => forward.listen(port, '127.0.0.1', () => r()));
    try {
      const events = await eventually(async () => {
        const r = await call('GET', `${h.base}/events?infra_env_id=${infraEnvId}`);
        const e = (r.body as Array<{ name: string; message: string; host_id?: string }>).filter((x) => x.name === 'host_registration_diagnosis');
        return e.length ? e : undefined;
      }, 60000, 'the diagnosis event').catch((e) => { throw new Error(e.message + '\n' + a.output()); });
      expect(events[0]!.message).toMatch(/could not reach the service for \d+ s \(\d+ attempts\): connection to 127\.0\.0\.1:\d+ refused/);
      expect(events[0]!.host_id).toBeTruthy();
      expect(status(a.statusFile).state).toBe('registered');
    } finally {
      await stop(a.proc);
      forward.close();
    }
  });

  it('diagnoses a service certificate it does not trust', async () => {
    const dir = tempDir('tls');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${dir}/key.pem`, '-out', `${dir}/cert.pem`, '-days', '1', '-subj', '/CN=127.0.0.1'], { stdio: 'ignore' });
    const server = https.createServer({ key: readFileSync(`${dir}/key.pem`), cert: readFileSync(`${dir}/cert.pem`) }, (_q, r) => r.end('{}'));
    const port = await freePort();
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
    const a = startAgent({ LANDFALL_SERVICE_URL: `https://127.0.0.1:${port}`, LANDFALL_INFRA_ENV_ID: infraEnvId });
    agents.push(a.proc);
    try {
      const d = await firstDiagnosis(a, 'a TLS diagnosis');
      expect(d.code).toBe('tls-ca');
      expect(d.fix).toMatch(/additional_trust_bundle/);
    } finally {
      await stop(a.proc);
      server.close();
    }
  });
});

describe('agent with a bad token', () => {
  let h: ApiHarness;
  afterAll(async () => {
    await h?.stop();
  });
  it('diagnoses the 401 and says to fetch a fresh image', async () => {
    h = await startApiHarness({ authType: 'local' });
    const admin = { Authorization: `Bearer ${h.signer.sign({ use: 'user', sub: 'root', admin: true })}` };
    const ie = (await call('POST', `${h.base}/infra-envs`, { headers: admin, body: { name: 'tok', pull_secret: PULL_SECRET } })).body.id;
    const { generateEcKeyPair, TokenSigner } = await import('../../src/auth/jwt');
    const foreign = new TokenSigner({ privateKeyPem: generateEcKeyPair().privateKeyPem }).sign({ use: 'agent', infra_env_id: ie });
    const a = startAgent({ LANDFALL_SERVICE_URL: h.url, LANDFALL_INFRA_ENV_ID: ie, LANDFALL_AGENT_TOKEN: foreign });
    try {
      const d = await firstDiagnosis(a, 'a 401 diagnosis');
      expect(d.code).toBe('unauthorized');
      expect(d.fix).toMatch(/download a fresh image/);
      expect((await call('GET', `${h.base}/infra-envs/${ie}/hosts`, { headers: admin })).body).toEqual([]);
    } finally {
      await stop(a.proc);
    }
  });
});
