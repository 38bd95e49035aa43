/**
 * `landfall operator`: reconciles the custom resources of a Kubernetes API
 * server into Landfall clusters, infra-envs and hosts, through Landfall's
 * REST API only. Woken by two streams, never by polling:
 * - Kubernetes watches (list + watch) of the resources and of Secrets;
 * - Landfall's event stream (every event recorded, SSE), mapped back to the
 *   resource it concerns (a host event wakes its Agent and its cluster).
 * A periodic resync of everything (OPERATOR_RESYNC_MS) is only a safety net,
 * as is a full resync whenever the event stream reconnects (events may have
 * been missed while it was down).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Logger } from '../logger';
import { repoRoot } from '../dev/process-utils';
import { KubeClient, KubeError, type KubeConnection, type KubeObject, type ResourceType, type WatchEventType } from './kube-client';
import { LandfallClient, type LandfallEvent } from './landfall-client';
import { BiIndex, Cache, KindQueues, qkey, type OperatorContext } from './context';
import { WorkQueue } from './work-queue';
import { HostReads } from './host-reads';
import { INFRAENV_LABEL, RT, key } from './resources';
import { reconcileCluster } from './cluster-reconciler';
import { reconcileInfraEnv, reconcileNewHost } from './infra-env-reconciler';
import { reconcileAgent } from './agent-reconciler';
import { BMH_LABEL, bareMetalHostsOf, reconcileBareMetalHost } from './bmh-reconciler';
import { selectsNmState } from './spec-mapping';

export interface OperatorOptions {
  kube: KubeConnection;
  landfallUrl: string;
  landfallToken?: string;
  /** The Landfall URL people reach, for links in status (default: landfallUrl). */
  publicUrl?: string;
  /** Watch only these namespaces (empty: all). */
  namespaces: string[];
  resyncMs: number;
  concurrency?: number;
  installCrds?: boolean;
  logger: Logger;
}

export interface RunningOperator {
  ctx: OperatorContext;
  /** Resolves once every watch has listed once and the first full reconcile is queued. */
  synced: Promise<void>;
  stop(): Promise<void>;
}

/** deploy/crds/*.yaml, created or replaced, then waited for until Established. */
export async function installCrds(kube: KubeClient, dir = path.join(repoRoot(), 'deploy', 'crds')): Promise<string[]> {
  const names: string[] = [];
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.yaml')).sort()) {
    const crd = parseYaml(readFileSync(path.join(dir, f), 'utf8')) as KubeObject;
    const existing = await kube.find(RT.crd, undefined, crd.metadata.name);
    if (existing) await kube.replace(RT.crd, undefined, { ...crd, metadata: { ...crd.metadata, resourceVersion: existing.metadata.resourceVersion } });
    else await kube.create(RT.crd, undefined, crd);
    names.push(crd.metadata.name);
  }
  const deadline = Date.now() + 60_000;
  for (const n of names) {
    for (;;) {
      const c = await kube.get(RT.crd, undefined, n);
      if ((c.status?.conditions ?? []).some((x: { type: string; status: string }) => x.type === 'Established' && x.status === 'True')) break;
      if (Date.now() > deadline) throw new Error(`CRD ${n} not Established within 60 s`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return names;
}

export async function startOperator(o: OperatorOptions): Promise<RunningOperator> {
  const kube = new KubeClient(o.kube);
  const landfall = new LandfallClient(o.landfallUrl, o.landfallToken);
  const queue = new KindQueues({ cluster: new WorkQueue(), infraenv: new WorkQueue(), agent: new WorkQueue(), host: new WorkQueue(), bmh: new WorkQueue() });
  const abort = new AbortController();
  const log = o.logger;
  const ctx: OperatorContext = {
    kube,
    landfall,
    hostReads: new HostReads(landfall),
    cache: new Cache(),
    queue,
    clusters: new BiIndex(),
    infraEnvs: new BiIndex(),
    log,
    publicUrl: (o.publicUrl ?? o.landfallUrl).replace(/\/+$/, ''),
    now: () => new Date(),
  };
  if (o.installCrds) log.info({ crds: await installCrds(kube) }, 'CRDs installed');

  const enqueueFor = (rt: ResourceType, obj: KubeObject) => {
    const ns = obj.metadata.namespace!;
    switch (rt.plural) {
      case RT.clusterDeployment.plural:
        queue.add(qkey('cluster', key(obj)));
        break;
      case RT.agentClusterInstall.plural: {
        const cd = obj.spec?.clusterDeploymentRef?.name as string | undefined;
        if (cd) queue.add(qkey('cluster', `${ns}/${cd}`));
        break;
      }
      case RT.infraEnv.plural:
        queue.add(qkey('infraenv', key(obj)));
        break;
      case RT.nmStateConfig.plural:
        for (const ie of ctx.cache.list(RT.infraEnv, ns)) if (selectsNmState(ie, obj)) queue.add(qkey('infraenv', key(ie)));
        break;
      case RT.agent.plural: {
        queue.add(qkey('agent', key(obj)));
        // Approval, readiness and the count of Agents decide the cluster's RequirementsMet.
        const ref = obj.spec?.clusterDeploymentName as { name?: string; namespace?: string } | undefined;
        if (ref?.name) queue.add(qkey('cluster', `${ref.namespace ?? ns}/${ref.name}`));
        // A new Agent may be the machine a BareMetalHost enrolled: that one approves it.
        const ieName = obj.metadata.labels?.[INFRAENV_LABEL];
        if (ieName && !obj.metadata.labels?.[BMH_LABEL]) for (const b of bareMetalHostsOf(ctx, `${ns}/${ieName}`)) queue.add(qkey('bmh', key(b)));
        break;
      }
      case RT.bareMetalHost.plural:
        queue.add(qkey('bmh', key(obj)));
        break;
      case RT.secret.plural:
        // A pull secret created or fixed: whoever names it tries again.
        for (const cd of ctx.cache.list(RT.clusterDeployment, ns)) if (cd.spec?.pullSecretRef?.name === obj.metadata.name) queue.add(qkey('cluster', key(cd)));
        for (const ie of ctx.cache.list(RT.infraEnv, ns)) if (ie.spec?.pullSecretRef?.name === obj.metadata.name) queue.add(qkey('infraenv', key(ie)));
        for (const b of ctx.cache.list(RT.bareMetalHost, ns)) if (b.spec?.bmc?.credentialsName === obj.metadata.name) queue.add(qkey('bmh', key(b)));
        break;
    }
  };

  const watched: ResourceType[] = [RT.clusterDeployment, RT.agentClusterInstall, RT.infraEnv, RT.nmStateConfig, RT.agent, RT.bareMetalHost];
  const scopes: Array<string | undefined> = o.namespaces.length ? o.namespaces : [undefined];
  let listed = 0;
  const total = watched.length * scopes.length;
  let markSynced: () => void = () => undefined;
  const synced = new Promise<void>((r) => (markSynced = r));
  const watches: Array<Promise<void>> = [];
  for (const scope of scopes) {
    for (const rt of watched) {
      let first = true;
      watches.push(
        kube.listWatch(
          rt,
          scope,
          {
            onList: (items) => {
              ctx.cache.replaceAll(rt, items, scope);
              for (const it of items) enqueueFor(rt, it);
              if (first && ++listed === total) markSynced();
              first = false;
            },
            onEvent: (type: WatchEventType, obj) => {
              // The version it replaces wakes its own dependents too: an NMStateConfig relabelled out of a
              // selector, an Agent moved to another cluster, still concern the ones they left.
              const prev = ctx.cache.get(rt, key(obj));
              if (type === 'DELETED') ctx.cache.remove(rt, obj);
              else ctx.cache.put(rt, obj);
              enqueueFor(rt, obj);
              if (prev) enqueueFor(rt, prev);
            },
            onError: (err) => log.warn({ resource: rt.plural, err: err.message }, 'watch failed; listing again'),
          },
          abort.signal,
        ),
      );
    }
    // Secrets are not cached (they may be many and large): a change only wakes the resources naming it.
    watches.push(
      kube.listWatch(
        RT.secret,
        scope,
        { onList: () => undefined, onEvent: (_t, obj) => enqueueFor(RT.secret, obj), onError: (err) => log.warn({ resource: 'secrets', err: err.message }, 'watch failed; listing again') },
        abort.signal,
      ),
    );
  }

  const resyncAll = () => {
    for (const rt of watched) for (const obj of ctx.cache.list(rt)) enqueueFor(rt, obj);
  };
  const onLandfallEvent = (e: LandfallEvent) => {
    if (e.cluster_id) {
      const cd = ctx.clusters.keyOf(e.cluster_id);
      if (cd) queue.add(qkey('cluster', cd));
    }
    if (e.infra_env_id) {
      const ie = ctx.infraEnvs.keyOf(e.infra_env_id);
      if (ie) {
        const ns = ie.split('/')[0]!;
        if (e.host_id && ctx.cache.get(RT.agent, `${ns}/${e.host_id}`)) queue.add(qkey('agent', `${ns}/${e.host_id}`));
        else if (e.host_id && e.name !== 'host_deregistered') queue.add(qkey('host', `${e.infra_env_id}/${e.host_id}`)); // a new host: its Agent
        // An infra-env change, or a host gone: the infra-env's status and its Agents.
        if ((!e.host_id && !e.name.startsWith('bmc_')) || e.name === 'host_deregistered') queue.add(qkey('infraenv', ie));
        // A BMC moved on (enrolled, booting, attached to its host): the BareMetalHosts of that infra-env.
        if (e.name.startsWith('bmc_') || e.name === 'host_registration_succeeded') for (const b of bareMetalHostsOf(ctx, ie)) queue.add(qkey('bmh', key(b)));
      }
    }
  };
  let streamUp = false;
  const events = landfall.followEvents(onLandfallEvent, abort.signal, {
    onConnected: () => {
      // Every (re)connect, the first too: the stream starts at "now", and what changed between a
      // reconcile that ran before it (the first lists) and now was carried by no event we will see.
      resyncAll();
      if (streamUp) log.info('landfall event stream reconnected; resynced');
      streamUp = true;
    },
    onError: (err) => {
      log.warn({ err: err.message }, 'landfall event stream lost; reconnecting');
    },
  });
  const resync = setInterval(resyncAll, o.resyncMs);

  const handle = async (item: string) => {
    const i = item.indexOf(':');
    const kind = item.slice(0, i);
    const k = item.slice(i + 1);
    try {
      if (kind === 'cluster') await reconcileCluster(ctx, k);
      else if (kind === 'infraenv') await reconcileInfraEnv(ctx, k);
      else if (kind === 'agent') await reconcileAgent(ctx, k);
      else if (kind === 'host') await reconcileNewHost(ctx, k);
      else if (kind === 'bmh') await reconcileBareMetalHost(ctx, k);
      queue.forget(item);
    } catch (err) {
      if (abort.signal.aborted) return;
      const conflict = err instanceof KubeError && err.status === 409;
      // A 409 is someone else's newer write: read again, no alarm.
      if (!conflict) log.warn({ item, err: (err as Error).message }, 'reconcile failed; retrying');
      queue.retry(item);
    }
  };
  const c = o.concurrency ?? 4;
  // Reconciles start once every watch has listed: one that ran before its InfraEnv was in the cache would
  // find no Landfall id to work with (after a restart) and leave the Agent or BareMetalHost unrefreshed, or
  // report it as waiting. A list that cannot complete (a kind whose CRD is not installed) delays them 30 s at most.
  let cacheWait: NodeJS.Timeout | undefined;
  const cachesSynced = Promise.race([
    synced,
    new Promise<void>((r) => abort.signal.addEventListener('abort', () => r())),
    new Promise<void>((r) => {
      cacheWait = setTimeout(() => {
        log.warn('not every watch has listed after 30 s; reconciling anyway');
        r();
      }, 30_000);
    }),
  ]).finally(() => clearTimeout(cacheWait));
  const workers = cachesSynced.then(() => queue.run({ cluster: Math.max(1, c >> 1), infraenv: Math.max(1, c >> 1), agent: c * 2, host: Math.max(1, c >> 1), bmh: 1 }, handle));
  log.info({ namespaces: o.namespaces.length ? o.namespaces : 'all', resyncMs: o.resyncMs, landfall: o.landfallUrl, kube: o.kube.server }, 'operator started');

  return {
    ctx,
    synced,
    async stop() {
      abort.abort();
      clearInterval(resync);
      queue.stop();
      await Promise.allSettled([...watches, events, workers]);
      await kube.close();
    },
  };
}
