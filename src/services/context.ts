import type { Knex } from 'knex';
import type { Client } from '@temporalio/client';
import type { ObjectStore } from '../storage';
import type { TokenSigner } from '../auth/jwt';
import type { ImageUrlSigner } from '../auth/image-url-signer';
import type { BaseImages } from '../images/base-images';
import type { ReleaseCatalogue } from '../domain/releases';
import type { LifecycleSettings } from '../domain/lifecycle/requirements';
import { createClustersRepo } from '../db/clusters-repo';
import { createInfraEnvsRepo } from '../db/infra-envs-repo';
import { createHostsRepo } from '../db/hosts-repo';
import { createStepsRepo } from '../db/steps-repo';
import { createEventsRepo } from '../db/events-repo';
import { createManifestsRepo } from '../db/manifests-repo';
import { createSelfCheckRepo } from '../db/self-checks-repo';

export function createRepos(db: Knex) {
  return {
    clusters: createClustersRepo(db),
    infraEnvs: createInfraEnvsRepo(db),
    hosts: createHostsRepo(db),
    steps: createStepsRepo(db),
    events: createEventsRepo(db),
    manifests: createManifestsRepo(db),
    selfChecks: createSelfCheckRepo(db),
  };
}

export type Repos = ReturnType<typeof createRepos>;

/** The ports every use-case may need, built once in the entry point. */
export interface ServiceContext {
  db: Knex;
  repos: Repos;
  store: ObjectStore;
  temporal: Client;
  signer: TokenSigner | undefined;
  releases: ReleaseCatalogue;
  baseUrl: string;
  imageUrlTtlSeconds: number;
  /** Life of the agent tokens the service mints (0: they never expire); agents that poll get renewed ones. */
  agentTokenTtlSeconds?: number;
  /** Signs and checks the short presigned discovery-image URLs (its key may live in the database, hence a promise). */
  imageUrlSigner: () => Promise<ImageUrlSigner>;
  baseImages: BaseImages;
  lifecycle: LifecycleSettings;
  /** Repeat interval of each discovery step (step-cadence.ts); its defaults when unset. */
  stepRepeatMs?: import('./step-cadence').StepRepeatMs;
  installTimeouts: { preparingMs: number; stageSoftMs: number; stageHardMs: number; finalizingMs: number };
  /** Images named in install steps; assisted-service's defaults when unset (install-request.ts). */
  installImages?: { installer: string; controller: string };
  /** Log upload limit and collection timeouts; defaults when unset (logs-service.ts). */
  logs?: import('./logs-service').LogsSettings;
  metrics?: import('../metrics').MetricsPort;
  /** BMC drivers, the credentials box and the repo (src/bmc/ports.ts); unset where no BMC is driven. */
  bmc?: import('../bmc/ports').BmcPorts;
  /** Wakes the API's event streams when an event is recorded (src/api/event-wakeups.ts); unset: they poll. */
  eventWakeups?: import('../api/event-wakeups').EventWakeups;
  /**
   * Told of every status move the writer makes (status-writer.ts): which table
   * rule fired and the status it left (inside the caller's transaction, before
   * it commits). Unset in the service; the state-table
   * test (test/integration/state-table-callers.test.ts) listens with it to
   * prove every rule has a production caller.
   */
  statusMoved?: (move: StatusMove) => void;
  now: () => Date;
}

export interface StatusMove {
  aggregate: 'host' | 'cluster';
  id: string;
  from: string;
  rule: import('../domain/lifecycle/host-state-machine').HostRule | import('../domain/lifecycle/cluster-state-machine').ClusterRule;
}
