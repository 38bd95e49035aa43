/**
 * The core components the in-cluster controller reports through
 * monitored-operators; the cluster is installed once all are available
 * (the kubeadm counterpart of AS's built-in `cvo` and `console` operators).
 */
export const REQUIRED_COMPONENTS = ['kube-apiserver', 'etcd', 'cni'] as const;

export function componentsAvailable(operators: Array<{ name?: unknown; status?: unknown }>): boolean {
  return REQUIRED_COMPONENTS.every((c) => operators.some((o) => o.name === c && o.status === 'available'));
}

/** How long each core component may take to become available once the cluster is finalizing (seconds). */
export const COMPONENT_TIMEOUT_SECONDS = 3600;

type Operator = Record<string, unknown> & { name?: unknown };

/**
 * The monitored-operators list as a controller must see it: every required
 * component is listed from the cluster's creation as a built-in operator
 * (status empty until reported), because a controller following the
 * assisted-service protocol reports exactly what it is told to monitor.
 * Reports of other names are kept after them.
 */
export function withBuiltinOperators(clusterId: string, stored: Operator[]): Operator[] {
  const builtins = REQUIRED_COMPONENTS.map((name) => ({ cluster_id: clusterId, name, operator_type: 'builtin', timeout_seconds: COMPONENT_TIMEOUT_SECONDS, ...stored.find((o) => o.name === name) }));
  return [...builtins, ...stored.filter((o) => !(REQUIRED_COMPONENTS as readonly unknown[]).includes(o.name))];
}
