/**
 * The PKI of a kubeadm-style cluster, generated once per install attempt:
 * cluster CA, etcd CA, front-proxy CA, service-account key pair, an admin
 * client certificate, the bootstrap token and the certificate key kubeadm
 * uses to share control-plane certificates (--upload-certs). Keys come from
 * node:crypto (native, fast); node-forge only builds the X.509 certificates.
 */
import { createHash, createPublicKey, generateKeyPairSync, randomBytes, randomInt } from 'node:crypto';
import forge from 'node-forge';

export interface KeyPairPem {
  certPem: string;
  keyPem: string;
}

export interface ClusterPki {
  ca: KeyPairPem;
  etcdCa: KeyPairPem;
  frontProxyCa: KeyPairPem;
  serviceAccount: { publicKeyPem: string; privateKeyPem: string };
  admin: KeyPairPem;
  /** kubeadm's "abcdef.0123456789abcdef". */
  bootstrapToken: string;
  /** 32 bytes hex: encrypts the certificates kubeadm uploads for joining control-plane nodes. */
  certificateKey: string;
  /** sha256 of the CA's SubjectPublicKeyInfo, for --discovery-token-ca-cert-hash. */
  caCertHash: string;
}

function rsaKey(): { privateKeyPem: string; publicKeyPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { privateKeyPem: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(), publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
}

function serial(): string {
  // Positive, non-zero serial numbers: a leading 0x01..0x7f byte.
  return (randomInt(1, 0x7f).toString(16).padStart(2, '0') + randomBytes(15).toString('hex'));
}

function certificate(o: { cn: string; orgs?: string[]; keyPem: string; publicKeyPem: string; issuer?: KeyPairPem; ca: boolean; years: number; validForMs?: number; clientAuth?: boolean }): string {
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(o.publicKeyPem);
  cert.serialNumber = serial();
  const now = new Date();
  cert.validity.notBefore = new Date(now.getTime() - 5 * 60_000);
  cert.validity.notAfter = new Date(now.getTime() + (o.validForMs ?? o.years * 365 * 24 * 3600_000));
  const subject = [{ name: 'commonName', value: o.cn }, ...(o.orgs ?? []).map((v) => ({ name: 'organizationName', value: v }))];
  cert.setSubject(subject);
  cert.setIssuer(o.issuer ? forge.pki.certificateFromPem(o.issuer.certPem).subject.attributes : subject);
  cert.setExtensions(
    o.ca
      ? [{ name: 'basicConstraints', cA: true, critical: true }, { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, keyEncipherment: true, critical: true }, { name: 'subjectKeyIdentifier' }]
      : [{ name: 'basicConstraints', cA: false }, { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true }, { name: 'extKeyUsage', clientAuth: Boolean(o.clientAuth) }],
  );
  cert.sign(forge.pki.privateKeyFromPem(o.issuer ? o.issuer.keyPem : o.keyPem), forge.md.sha256.create());
  return forge.pki.certificateToPem(cert);
}

function ca(cn: string): KeyPairPem {
  const k = rsaKey();
  return { keyPem: k.privateKeyPem, certPem: certificate({ cn, keyPem: k.privateKeyPem, publicKeyPem: k.publicKeyPem, ca: true, years: 10 }) };
}

const TOKEN_CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789';
const token = (n: number) => Array.from({ length: n }, () => TOKEN_CHARS[randomInt(TOKEN_CHARS.length)]).join('');

export function caCertHash(certPem: string): string {
  return `sha256:${createHash('sha256').update(createPublicKey(certPem).export({ type: 'spki', format: 'der' })).digest('hex')}`;
}

export function generateClusterPki(): ClusterPki {
  const clusterCa = ca('kubernetes');
  const adminKey = rsaKey();
  const sa = rsaKey();
  return {
    ca: clusterCa,
    etcdCa: ca('etcd-ca'),
    frontProxyCa: ca('front-proxy-ca'),
    serviceAccount: { privateKeyPem: sa.privateKeyPem, publicKeyPem: sa.publicKeyPem },
    admin: { keyPem: adminKey.privateKeyPem, certPem: certificate({ cn: 'kubernetes-admin', orgs: ['system:masters'], keyPem: adminKey.privateKeyPem, publicKeyPem: adminKey.publicKeyPem, issuer: clusterCa, ca: false, years: 1, clientAuth: true }) },
    bootstrapToken: `${token(6)}.${token(16)}`,
    certificateKey: randomBytes(32).toString('hex'),
    caCertHash: caCertHash(clusterCa.certPem),
  };
}

/** The admin kubeconfig handed to the user once the cluster is installed. */
export function adminKubeconfig(pki: ClusterPki, clusterName: string, server: string): string {
  return clientKubeconfig(pki.ca.certPem, `admin@${clusterName}`, pki.admin, clusterName, server, `admin@${clusterName}`);
}

/**
 * A day-2 host's join credential: a client certificate signed by the
 * cluster's CA, valid for `validForMs` only. Its identity is what a kubeadm
 * bootstrap token authenticates as (user system:bootstrap:<id>, group
 * system:bootstrappers:kubeadm:default-node-token), so the RBAC kubeadm init
 * set up lets it read the join configuration and request the kubelet's own
 * certificate, which the cluster approves; nothing has to be registered in
 * the cluster first, and the credential is useless after it expires.
 */
export interface JoinCredential {
  tokenId: string;
  certPem: string;
  keyPem: string;
  notAfter: string;
}

export function mintJoinCredential(pki: ClusterPki, validForMs: number): JoinCredential {
  const k = rsaKey();
  const tokenId = token(6);
  const certPem = certificate({ cn: `system:bootstrap:${tokenId}`, orgs: ['system:bootstrappers', 'system:bootstrappers:kubeadm:default-node-token'], keyPem: k.privateKeyPem, publicKeyPem: k.publicKeyPem, issuer: pki.ca, ca: false, years: 0, validForMs, clientAuth: true });
  return { tokenId, certPem, keyPem: k.privateKeyPem, notAfter: forge.pki.certificateFromPem(certPem).validity.notAfter.toISOString() };
}

/** A kubeconfig for one client certificate (the admin's, or a day-2 host's join credential). */
export function clientKubeconfig(caPem: string, user: string, cert: KeyPairPem, clusterName: string, server: string, context = `${user}@${clusterName}`): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: ${clusterName}`,
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${b64(caPem)}`,
    'users:',
    `- name: ${user}`,
    '  user:',
    `    client-certificate-data: ${b64(cert.certPem)}`,
    `    client-key-data: ${b64(cert.keyPem)}`,
    'contexts:',
    `- name: ${context}`,
    '  context:',
    `    cluster: ${clusterName}`,
    `    user: ${user}`,
    `current-context: ${context}`,
    '',
  ].join('\n');
}
