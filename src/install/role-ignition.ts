/**
 * Per-role Ignition (spec 3.4) for the installed OS. The bootstrap
 * control-plane host carries the CA keys and runs `kubeadm init` (with
 * --upload-certs); the other control-plane hosts `kubeadm join
 * --control-plane` with the certificate key; workers `kubeadm join`.
 */
import { stringify as yaml } from 'yaml';
import type { ClusterPki } from './pki';

export interface InstallTopology {
  clusterName: string;
  kubernetesVersion: string;
  /** host:port every node reaches the API at: the API VIP (or the single node). */
  controlPlaneEndpoint: string;
  bootstrapAddress: string;
  podSubnet: string;
  serviceSubnet: string;
  sshAuthorizedKey?: string;
}

export type IgnitionRole = 'bootstrap' | 'master' | 'worker';

export const b64file = (path: string, contents: string, mode = 0o644) => ({ path, mode, overwrite: true, contents: { source: `data:;base64,${Buffer.from(contents).toString('base64')}` } });

export function unit(description: string, exec: string) {
  return `[Unit]
Description=${description}
Wants=network-online.target kubelet.service
After=network-online.target
ConditionPathExists=!/etc/kubernetes/kubelet.conf

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=${exec}

[Install]
WantedBy=multi-user.target
`;
}

function kubeadmInit(pki: ClusterPki, t: InstallTopology): string {
  return [
    yaml({
      apiVersion: 'kubeadm.k8s.io/v1beta4',
      kind: 'InitConfiguration',
      bootstrapTokens: [{ token: pki.bootstrapToken, ttl: '24h0m0s', usages: ['signing', 'authentication'], groups: ['system:bootstrappers:kubeadm:default-node-token'] }],
      localAPIEndpoint: { advertiseAddress: t.bootstrapAddress, bindPort: 6443 },
      certificateKey: pki.certificateKey,
    }),
    yaml({
      apiVersion: 'kubeadm.k8s.io/v1beta4',
      kind: 'ClusterConfiguration',
      clusterName: t.clusterName,
      kubernetesVersion: `v${t.kubernetesVersion}`,
      controlPlaneEndpoint: t.controlPlaneEndpoint,
      networking: { podSubnet: t.podSubnet, serviceSubnet: t.serviceSubnet },
    }),
  ].join('---\n');
}

function kubeadmJoin(pki: ClusterPki, t: InstallTopology, controlPlane: boolean): string {
  return yaml({
    apiVersion: 'kubeadm.k8s.io/v1beta4',
    kind: 'JoinConfiguration',
    discovery: { bootstrapToken: { apiServerEndpoint: t.controlPlaneEndpoint, token: pki.bootstrapToken, caCertHashes: [pki.caCertHash] } },
    ...(controlPlane ? { controlPlane: { certificateKey: pki.certificateKey } } : {}),
  });
}

export function roleIgnition(role: IgnitionRole, pki: ClusterPki, t: InstallTopology): Record<string, unknown> {
  const files =
    role === 'bootstrap'
      ? [
          b64file('/etc/kubernetes/pki/ca.crt', pki.ca.certPem),
          b64file('/etc/kubernetes/pki/ca.key', pki.ca.keyPem, 0o600),
          b64file('/etc/kubernetes/pki/etcd/ca.crt', pki.etcdCa.certPem),
          b64file('/etc/kubernetes/pki/etcd/ca.key', pki.etcdCa.keyPem, 0o600),
          b64file('/etc/kubernetes/pki/front-proxy-ca.crt', pki.frontProxyCa.certPem),
          b64file('/etc/kubernetes/pki/front-proxy-ca.key', pki.frontProxyCa.keyPem, 0o600),
          b64file('/etc/kubernetes/pki/sa.key', pki.serviceAccount.privateKeyPem, 0o600),
          b64file('/etc/kubernetes/pki/sa.pub', pki.serviceAccount.publicKeyPem),
          b64file('/etc/landfall/kubeadm.yaml', kubeadmInit(pki, t), 0o600),
        ]
      : [b64file('/etc/landfall/kubeadm.yaml', kubeadmJoin(pki, t, role === 'master'), 0o600)];
  const exec = role === 'bootstrap' ? '/usr/bin/kubeadm init --config /etc/landfall/kubeadm.yaml --upload-certs' : '/usr/bin/kubeadm join --config /etc/landfall/kubeadm.yaml';
  return {
    ignition: { version: '3.4.0' },
    passwd: t.sshAuthorizedKey ? { users: [{ name: 'core', sshAuthorizedKeys: [t.sshAuthorizedKey] }] } : {},
    storage: { files },
    systemd: { units: [{ name: 'landfall-kubeadm.service', enabled: true, contents: unit(role === 'bootstrap' ? 'Landfall: create the cluster with kubeadm init' : `Landfall: join the cluster as ${role === 'master' ? 'control plane' : 'worker'}`, exec) }] },
  };
}
