/**
 * The core components the in-cluster controller reports through
 * monitored-operators; the cluster is installed once all are available
 * (the kubeadm counterpart of AS's built-in `cvo` and `console` operators).
 */
export const REQUIRED_COMPONENTS = ['kube-apiserver', 'etcd', 'cni'] as const;

export function componentsAvailable(operators: Array<{ name?: unknown; status?: unknown }>): boolean {
  return REQUIRED_COMPONENTS.every((c) => operators.some((o) => o.name === c && o.status === 'available'));
}
