/**
 * The Ignition of a day-2 host: it joins a running cluster as a worker. For a
 * cluster Landfall installed, the join credential is minted from the
 * cluster's stored PKI for this host alone and expires soon after (see
 * mintJoinCredential): kubeadm discovers the cluster from a kubeconfig that
 * pins the cluster's CA and carries that credential. An imported cluster's
 * CA is not Landfall's, so its hosts get what assisted-service gives them: a
 * pointer to the worker config the cluster itself serves.
 */
import { stringify as yaml } from 'yaml';
import { clientKubeconfig, type ClusterPki, type JoinCredential } from './pki';
import { b64file, unit } from './role-ignition';

/** Where a day-2 host's Ignition is kept: one per host, replaced by each install attempt and retry. */
export const day2IgnitionKey = (clusterId: string, hostId: string) => `clusters/${clusterId}/day2/${hostId}/worker.ign`;

export interface JoinTopology {
  clusterName: string;
  /** host:port of the cluster's API (the API VIP, or the API DNS name of an imported cluster). */
  controlPlaneEndpoint: string;
  /** The node name the host registers as. */
  nodeName: string;
  sshAuthorizedKey?: string;
}

export function day2JoinIgnition(pki: ClusterPki, t: JoinTopology, cred: JoinCredential): Record<string, unknown> {
  const kubeconfig = clientKubeconfig(pki.ca.certPem, `system:bootstrap:${cred.tokenId}`, { certPem: cred.certPem, keyPem: cred.keyPem }, t.clusterName, `https://${t.controlPlaneEndpoint}`);
  const join = yaml({
    apiVersion: 'kubeadm.k8s.io/v1beta4',
    kind: 'JoinConfiguration',
    // File discovery: the kubeconfig pins the CA, and its credential is used for the TLS bootstrap.
    discovery: { file: { kubeConfigPath: '/etc/landfall/join-kubeconfig.yaml' } },
    nodeRegistration: { name: t.nodeName },
  });
  return {
    ignition: { version: '3.4.0' },
    passwd: t.sshAuthorizedKey ? { users: [{ name: 'core', sshAuthorizedKeys: [t.sshAuthorizedKey] }] } : {},
    storage: {
      files: [
        b64file('/etc/kubernetes/pki/ca.crt', pki.ca.certPem),
        b64file('/etc/landfall/join-kubeconfig.yaml', kubeconfig, 0o600),
        b64file('/etc/landfall/kubeadm.yaml', join, 0o600),
        // When the credential stops working, for whoever reads the host's disk later.
        b64file('/etc/landfall/join-credential-expires', `${cred.notAfter}\n`),
      ],
    },
    systemd: { units: [{ name: 'landfall-kubeadm.service', enabled: true, contents: unit('Landfall: join the running cluster as a worker (day 2)', '/usr/bin/kubeadm join --config /etc/landfall/kubeadm.yaml') }] },
  };
}

/** An imported cluster's worker config, served by the cluster itself (assisted-service's day-2 pointer Ignition). */
export function importedClusterPointerIgnition(apiDnsName: string): Record<string, unknown> {
  return { ignition: { version: '3.4.0', config: { merge: [{ source: `https://${apiDnsName}:22624/config/worker` }] } } };
}
