/**
 * A real Kubernetes API server on loopback for `LANDFALL_OPERATOR=1 npm start`,
 * the operator's tests and its benchmark: etcd (no fsync: state a restart may
 * lose is fine here) and kube-apiserver, both built from the Go module proxy by
 * scripts/install-kube-apiserver.sh. Authentication is one static bearer token
 * in group system:masters; the serving certificate is generated per run and
 * its CA goes into the kubeconfig written beside it. There is no
 * controller-manager, so nothing garbage-collects: owner references do not
 * cascade (the operator's finalizers do the clean-up that matters).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import forge from 'node-forge';
import { freePort, repoRoot, stopProcess, waitForPort } from '../dev/process-utils';
import type { KubeConnection } from './kube-client';

/** Versions pinned in scripts/versions.sh (one source for the build script and this code). */
export function pinnedVersions(): { kubeApiserver: string; etcd: string } {
  const text = readFileSync(path.join(repoRoot(), 'scripts', 'versions.sh'), 'utf8');
  const pick = (name: string) => {
    const m = new RegExp(`^${name}=(\\S+)`, 'm').exec(text);
    if (!m) throw new Error(`scripts/versions.sh has no ${name}`);
    return m[1]!;
  };
  return { kubeApiserver: pick('KUBE_APISERVER_VERSION'), etcd: pick('ETCD_VERSION') };
}

export function localApiserverBinaries(): { kubeApiserver: string; etcd: string; kubectl: string } {
  const v = pinnedVersions();
  const cache = path.join(os.homedir(), '.cache', 'landfall');
  return {
    kubeApiserver: path.join(cache, `kube-apiserver-${v.kubeApiserver}`, 'bin', 'kube-apiserver'),
    // Built beside it by the same script, for the tests' walk-through (the stack itself needs no kubectl).
    kubectl: path.join(cache, `kube-apiserver-${v.kubeApiserver}`, 'bin', 'kubectl'),
    etcd: path.join(cache, `etcd-${v.etcd}`, 'bin', 'etcd'),
  };
}

export function localApiserverBuilt(): boolean {
  const b = localApiserverBinaries();
  return existsSync(b.kubeApiserver) && existsSync(b.etcd);
}

export interface LocalApiserver {
  connection: KubeConnection;
  kubeconfigPath: string;
  url: string;
  stop(): Promise<void>;
}

function servingCertificate(): { caPem: string; certPem: string; keyPem: string } {
  const pair = () => {
    const k = generateKeyPairSync('rsa', { modulusLength: 2048 });
    return { priv: k.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(), pub: k.publicKey.export({ type: 'spki', format: 'pem' }).toString() };
  };
  const make = (cn: string, keys: { priv: string; pub: string }, issuer: { cert: forge.pki.Certificate; priv: string } | undefined) => {
    const cert = forge.pki.createCertificate();
    cert.publicKey = forge.pki.publicKeyFromPem(keys.pub);
    cert.serialNumber = `01${randomBytes(15).toString('hex')}`;
    cert.validity.notBefore = new Date(Date.now() - 5 * 60_000);
    cert.validity.notAfter = new Date(Date.now() + 365 * 24 * 3600_000);
    cert.setSubject([{ name: 'commonName', value: cn }]);
    cert.setIssuer(issuer ? issuer.cert.subject.attributes : [{ name: 'commonName', value: cn }]);
    cert.setExtensions(
      issuer
        ? [
            { name: 'basicConstraints', cA: false },
            { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
            { name: 'extKeyUsage', serverAuth: true },
            { name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }, { type: 2, value: 'localhost' }] },
          ]
        : [{ name: 'basicConstraints', cA: true, critical: true }, { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true }],
    );
    cert.sign(forge.pki.privateKeyFromPem(issuer ? issuer.priv : keys.priv), forge.md.sha256.create());
    return cert;
  };
  const caKeys = pair();
  const ca = make('landfall-local-apiserver-ca', caKeys, undefined);
  const keys = pair();
  const cert = make('kube-apiserver', keys, { cert: ca, priv: caKeys.priv });
  return { caPem: forge.pki.certificateToPem(ca), certPem: forge.pki.certificateToPem(cert), keyPem: keys.priv };
}

export function kubeconfigYaml(conn: { server: string; caPem: string; token: string }, name = 'landfall-local'): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: ${name}`,
    '  cluster:',
    `    server: ${conn.server}`,
    `    certificate-authority-data: ${b64(conn.caPem)}`,
    'users:',
    `- name: ${name}-admin`,
    '  user:',
    `    token: ${conn.token}`,
    'contexts:',
    `- name: ${name}`,
    '  context:',
    `    cluster: ${name}`,
    `    user: ${name}-admin`,
    `current-context: ${name}`,
    '',
  ].join('\n');
}

/**
 * Starts etcd and kube-apiserver with their state in `dir` (kept across
 * restarts of `landfall dev`; the certificate and token are made again each
 * time) and waits until the apiserver answers /readyz.
 */
export async function startLocalApiserver(opts: { dir: string; port?: number; onOutput?: (component: string, line: string) => void }): Promise<LocalApiserver> {
  const bin = localApiserverBinaries();
  for (const b of [bin.kubeApiserver, bin.etcd]) {
    if (!existsSync(b)) throw new Error(`${b} is missing; run "bash scripts/install-kube-apiserver.sh" (npm test's set-up does)`);
  }
  const pki = path.join(opts.dir, 'pki');
  mkdirSync(pki, { recursive: true, mode: 0o700 });
  const tls = servingCertificate();
  const sa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const token = randomBytes(24).toString('hex');
  const files = {
    cert: path.join(pki, 'apiserver.crt'),
    key: path.join(pki, 'apiserver.key'),
    ca: path.join(pki, 'ca.crt'),
    saPub: path.join(pki, 'sa.pub'),
    saKey: path.join(pki, 'sa.key'),
    tokens: path.join(pki, 'tokens.csv'),
  };
  writeFileSync(files.cert, tls.certPem);
  writeFileSync(files.key, tls.keyPem, { mode: 0o600 });
  writeFileSync(files.ca, tls.caPem);
  writeFileSync(files.saPub, sa.publicKey.export({ type: 'spki', format: 'pem' }).toString());
  writeFileSync(files.saKey, sa.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(), { mode: 0o600 });
  writeFileSync(files.tokens, `${token},landfall-admin,landfall-admin,"system:masters"\n`, { mode: 0o600 });

  const children: ChildProcess[] = [];
  const pipe = (name: string, child: ChildProcess) => {
    for (const s of [child.stdout, child.stderr]) s?.on('data', (d: Buffer) => d.toString().split('\n').filter(Boolean).forEach((l) => opts.onOutput?.(name, l)));
  };
  const stop = async () => {
    for (const c of children.reverse()) await stopProcess(c, 5000);
  };
  try {
    const etcdPort = await freePort();
    const peerPort = await freePort();
    const etcd = spawn(
      bin.etcd,
      [
        '--name', 'landfall',
        '--data-dir', path.join(opts.dir, 'etcd'),
        '--listen-client-urls', `http://127.0.0.1:${etcdPort}`,
        '--advertise-client-urls', `http://127.0.0.1:${etcdPort}`,
        '--listen-peer-urls', `http://127.0.0.1:${peerPort}`,
        '--initial-advertise-peer-urls', `http://127.0.0.1:${peerPort}`,
        '--initial-cluster', `landfall=http://127.0.0.1:${peerPort}`,
        // Throw-away development state: durability is not worth the fsync latency here.
        '--unsafe-no-fsync',
        '--log-level', 'error',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    children.push(etcd);
    pipe('etcd', etcd);
    await waitForPort('127.0.0.1', etcdPort, 30_000, 'etcd', etcd);

    const port = opts.port ?? (await freePort());
    const apiserver = spawn(
      bin.kubeApiserver,
      [
        `--etcd-servers=http://127.0.0.1:${etcdPort}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--secure-port=${port}`,
        `--tls-cert-file=${files.cert}`,
        `--tls-private-key-file=${files.key}`,
        `--token-auth-file=${files.tokens}`,
        '--authorization-mode=RBAC',
        '--service-account-issuer=https://kubernetes.default.svc',
        `--service-account-key-file=${files.saPub}`,
        `--service-account-signing-key-file=${files.saKey}`,
        '--service-cluster-ip-range=10.96.0.0/16',
        `--cert-dir=${pki}`,
        // No controller-manager runs: nothing keeps the kubernetes Service's endpoints, and loopback is not a valid one.
        '--endpoint-reconciler-type=none',
        '--v=0',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    children.push(apiserver);
    pipe('kube-apiserver', apiserver);
    const url = `https://127.0.0.1:${port}`;
    const connection: KubeConnection = { server: url, caPem: tls.caPem, token };
    const { KubeClient } = await import('./kube-client');
    const client = new KubeClient(connection);
    const deadline = Date.now() + 90_000;
    let last = '';
    try {
      for (;;) {
        if (apiserver.exitCode !== null) throw new Error(`kube-apiserver exited with code ${apiserver.exitCode}`);
        try {
          await client.request('GET', '/readyz');
          break;
        } catch (err) {
          last = (err as Error).message;
        }
        if (Date.now() > deadline) throw new Error(`kube-apiserver not ready within 90 s: ${last}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    } finally {
      await client.close();
    }
    const kubeconfigPath = path.join(opts.dir, 'kubeconfig');
    writeFileSync(kubeconfigPath, kubeconfigYaml({ server: url, caPem: tls.caPem, token }), { mode: 0o600 });
    return { connection, kubeconfigPath, url, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
