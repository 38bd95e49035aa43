/**
 * Who is calling, decided once per request by the auth middleware. Handlers
 * ask `canSee*` questions; a resource the caller may not see is reported as
 * not found, so ids of other tenants cannot be probed.
 */
export type Principal =
  | { kind: 'admin'; user: string }
  | { kind: 'user'; user: string }
  | { kind: 'agent'; infraEnvId?: string; clusterId?: string }
  | { kind: 'image'; infraEnvId: string };

/** Security requirements of an operation, as the reference names them. */
export type SecurityScheme = 'user' | 'agent' | 'urlKey' | 'image';

export interface OwnedResource {
  owner: string;
}

export function ownerOf(p: Principal): string {
  return p.kind === 'admin' || p.kind === 'user' ? p.user : '';
}

export function canSeeCluster(p: Principal, cluster: OwnedResource & { id: string }, boundInfraEnvIds: () => Promise<string[]>): Promise<boolean> {
  switch (p.kind) {
    case 'admin':
      return Promise.resolve(true);
    case 'user':
      return Promise.resolve(cluster.owner === p.user);
    case 'agent':
      if (p.clusterId) return Promise.resolve(p.clusterId === cluster.id);
      if (p.infraEnvId) return boundInfraEnvIds().then((ids) => ids.includes(p.infraEnvId!));
      return Promise.resolve(false);
    case 'image':
      return Promise.resolve(false);
  }
}

/**
 * canSeeInfraEnv when only the infra-env's id is known: true or false when the
 * principal alone decides (an administrator; a token scoped to one infra-env),
 * undefined when the answer depends on the row (its owner or its cluster).
 * Lets the agent poll skip reading the infra-env.
 */
export function canSeeInfraEnvById(p: Principal, infraEnvId: string): boolean | undefined {
  switch (p.kind) {
    case 'admin':
      return true;
    case 'user':
      return undefined;
    case 'agent':
      return p.infraEnvId ? p.infraEnvId === infraEnvId : p.clusterId !== undefined ? undefined : false;
    case 'image':
      return p.infraEnvId === infraEnvId;
  }
}

export function canSeeInfraEnv(p: Principal, infraEnv: OwnedResource & { id: string; cluster_id: string | null }): boolean {
  switch (p.kind) {
    case 'admin':
      return true;
    case 'user':
      return infraEnv.owner === p.user;
    case 'agent':
      return p.infraEnvId ? p.infraEnvId === infraEnv.id : p.clusterId !== undefined && p.clusterId === infraEnv.cluster_id;
    case 'image':
      return p.infraEnvId === infraEnv.id;
  }
}
