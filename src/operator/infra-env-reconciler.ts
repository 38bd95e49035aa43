/**
 * InfraEnv (+ the NMStateConfigs its label selector picks) → one Landfall
 * infra-env, and one Agent resource per host that boots its image.
 *
 * Found again by name (namespace, name and uid of the resource), so a crash
 * between create and status write makes no second infra-env. Agents are named
 * by the host id, as the reference names them: creating one that exists is a
 * 409 and nothing more.
 */
import { KubeError, type KubeObject } from './kube-client';
import { LandfallError, isLandfallNotFound, type Json } from './landfall-client';
import { infraEnvConditions, mergeConditions } from './conditions';
import { ensureFinalizer, qkey, removeFinalizer, writeStatus, type OperatorContext } from './context';
import { FINALIZER, INFRAENV_LABEL, RT, key } from './resources';
import { bareMetalHostsOf } from './bmh-reconciler';
import { findClusterId } from './cluster-reconciler';
import { SpecError, infraEnvName, infraEnvParams, pullSecretOf, selectsNmState, specHash } from './spec-mapping';

/** The Landfall infra-env of an InfraEnv: from the index, else found by its name (after a restart the index is empty). */
export async function findInfraEnvId(ctx: OperatorContext, ie: KubeObject): Promise<string | undefined> {
  const k = key(ie);
  const known = ctx.infraEnvs.idOf(k);
  if (known) return known;
  const found = (await ctx.landfall.listInfraEnvs()).find((x: Json) => x.name === infraEnvName(ie));
  if (found) ctx.infraEnvs.set(found.id, k);
  return found?.id;
}

/** The Landfall id of the InfraEnv `ns/name` (from the index, else looked up), if it has one yet. */
export async function infraEnvIdOf(ctx: OperatorContext, ieKey: string): Promise<string | undefined> {
  const known = ctx.infraEnvs.idOf(ieKey);
  if (known) return known;
  const ie = ctx.cache.get(RT.infraEnv, ieKey);
  return ie && !ie.metadata.deletionTimestamp ? findInfraEnvId(ctx, ie) : undefined;
}

export async function reconcileInfraEnv(ctx: OperatorContext, ieKey: string): Promise<void> {
  const [ns, name] = ieKey.split('/') as [string, string];
  let ie = await ctx.kube.find(RT.infraEnv, ns, name);
  if (!ie) {
    ctx.infraEnvs.drop(ieKey);
    return;
  }
  if (ie.metadata.deletionTimestamp) return deprovision(ctx, ie);
  ie = await ensureFinalizer(ctx, RT.infraEnv, ie, FINALIZER.infraEnv);

  let infraEnv: Json | undefined;
  const id = await findInfraEnvId(ctx, ie);
  if (id) {
    try {
      infraEnv = await ctx.landfall.getInfraEnv(id);
    } catch (err) {
      if (!isLandfallNotFound(err)) throw err;
      ctx.infraEnvs.drop(ieKey);
    }
  }

  let error: string | undefined;
  let applied = ie.status?.landfall?.appliedSpecHash as string | undefined;
  try {
    const secretName = ie.spec?.pullSecretRef?.name as string | undefined;
    if (!secretName) throw new SpecError('spec.pullSecretRef.name is required');
    const pullSecret = pullSecretOf(await ctx.kube.find(RT.secret, ns, secretName), `${ns}/${secretName}`);
    let clusterId: string | undefined;
    const ref = ie.spec?.clusterRef as { name?: string; namespace?: string } | undefined;
    if (ref?.name) {
      const cdKey = `${ref.namespace ?? ns}/${ref.name}`;
      // Not indexed yet after a restart: found by its tag, rather than reported missing for a moment.
      const cd = ctx.clusters.idOf(cdKey) ? undefined : ctx.cache.get(RT.clusterDeployment, cdKey);
      clusterId = ctx.clusters.idOf(cdKey) ?? (cd ? await findClusterId(ctx, cd) : undefined);
      // The cluster reconcile wakes this InfraEnv once it has made the cluster.
      if (!clusterId) throw new SpecError(`waiting for ClusterDeployment ${ref.namespace ?? ns}/${ref.name} to have its Landfall cluster`);
    }
    const nmstates = ctx.cache.list(RT.nmStateConfig, ns).filter((n) => selectsNmState(ie!, n));
    const desired = infraEnvParams(ie, pullSecret, clusterId, nmstates);
    const hash = specHash(desired);
    if (!infraEnv) {
      infraEnv = await ctx.landfall.createInfraEnv(desired);
      ctx.infraEnvs.set(infraEnv.id, ieKey);
      applied = hash;
      ctx.log.info({ resource: ieKey, infraEnvId: infraEnv.id }, 'infra-env created');
    } else if (applied !== hash) {
      const { name: _n, cluster_id: _c, ...patch } = desired;
      infraEnv = await ctx.landfall.updateInfraEnv(infraEnv.id, patch);
      applied = hash;
      ctx.log.info({ resource: ieKey, infraEnvId: infraEnv.id }, 'infra-env spec applied');
    }
  } catch (err) {
    if (err instanceof SpecError || (err instanceof LandfallError && err.status !== 404)) error = err.message;
    else throw err;
  }

  let iso: { url: string; expires_at?: string } | undefined;
  if (infraEnv) {
    iso = await ctx.landfall.imageUrl(infraEnv.id);
    await syncAgents(ctx, ie, infraEnv.id);
    // BareMetalHosts that were waiting for this infra-env's id (first reconcile, or after a restart).
    for (const b of bareMetalHostsOf(ctx, ieKey)) if (!b.status?.landfall?.bmcHostID) ctx.queue.add(qkey('bmh', key(b)));
    // A presigned URL expires: come back shortly before it does, to publish a fresh one.
    if (iso.expires_at) {
      const ms = new Date(iso.expires_at).getTime() - ctx.now().getTime() - 10 * 60_000;
      if (ms > 0 && ms < 7 * 24 * 3600_000) ctx.queue.addAfter(qkey('infraenv', ieKey), ms);
    }
  }
  // The URL changes on every read (it is signed); keep the published one while it is valid.
  const published = ie.status?.isoDownloadURL as string | undefined;
  const keepUrl = published && ie.status?.isoExpiresAt && new Date(ie.status.isoExpiresAt as string).getTime() - ctx.now().getTime() > 10 * 60_000;
  await writeStatus(ctx, RT.infraEnv, ie, {
    conditions: mergeConditions(ie.status?.conditions, infraEnvConditions({ error: infraEnv ? error : (error ?? 'not created yet') }), ctx.now().toISOString()),
    isoDownloadURL: keepUrl ? published : (iso?.url ?? null),
    isoExpiresAt: keepUrl ? ie.status.isoExpiresAt : (iso?.expires_at ?? null),
    createdTime: infraEnv?.created_at ?? null,
    agentLabelSelector: { matchLabels: { [INFRAENV_LABEL]: name } },
    debugInfo: infraEnv ? { eventsURL: `${ctx.publicUrl}/api/assisted-install/v2/events?infra_env_id=${infraEnv.id}` } : {},
    landfall: { infraEnvID: infraEnv?.id ?? null, appliedSpecHash: applied ?? null },
  });
}

/** One Agent per host of the infra-env; an Agent whose host is gone goes too. */
async function syncAgents(ctx: OperatorContext, ie: KubeObject, infraEnvId: string): Promise<void> {
  const ns = ie.metadata.namespace!;
  const hosts = await ctx.landfall.listHosts(infraEnvId);
  const ids = new Set(hosts.map((h: Json) => h.id as string));
  for (const h of hosts) await createAgentFor(ctx, ie, h.id, infraEnvId);
  for (const a of ctx.cache.list(RT.agent, ns)) {
    if (a.metadata.labels?.[INFRAENV_LABEL] === ie.metadata.name && !ids.has(a.metadata.name) && !a.metadata.deletionTimestamp) {
      await ctx.kube.delete(RT.agent, ns, a.metadata.name);
    }
  }
}

/** The Agent of a host (named by its id), unless it exists; creating one that exists is a 409 and nothing more. */
async function createAgentFor(ctx: OperatorContext, ie: KubeObject, hostId: string, infraEnvId: string): Promise<void> {
  const ns = ie.metadata.namespace!;
  if (ctx.cache.get(RT.agent, `${ns}/${hostId}`)) return;
  const ref = ie.spec?.clusterRef as { name?: string; namespace?: string } | undefined;
  try {
    const agent = await ctx.kube.create(RT.agent, ns, {
      metadata: { name: hostId, labels: { ...(ie.spec?.agentLabels ?? {}), [INFRAENV_LABEL]: ie.metadata.name }, finalizers: [FINALIZER.agent] },
      spec: { approved: false, ...(ref?.name ? { clusterDeploymentName: { name: ref.name, namespace: ref.namespace ?? ns } } : {}) },
    });
    ctx.cache.put(RT.agent, agent);
    ctx.queue.add(qkey('agent', key(agent)));
    ctx.log.info({ resource: `${ns}/${hostId}`, infraEnvId }, 'agent created for a new host');
  } catch (err) {
    if (!(err instanceof KubeError && err.status === 409)) throw err;
  }
}

/**
 * A host Landfall just told us about (`<infra-env id>/<host id>`): its Agent, made at once rather
 * than by listing every host of the infra-env again, then its status.
 */
export async function reconcileNewHost(ctx: OperatorContext, item: string): Promise<void> {
  const [infraEnvId, hostId] = item.split('/') as [string, string];
  const ieKey = ctx.infraEnvs.keyOf(infraEnvId);
  const ie = ieKey ? ctx.cache.get(RT.infraEnv, ieKey) : undefined;
  if (!ie || ie.metadata.deletionTimestamp) return;
  try {
    await ctx.landfall.getHost(infraEnvId, hostId);
  } catch (err) {
    if (isLandfallNotFound(err)) return; // gone again already
    throw err;
  }
  await createAgentFor(ctx, ie, hostId, infraEnvId);
  ctx.queue.add(qkey('agent', `${ie.metadata.namespace}/${hostId}`));
}

async function deprovision(ctx: OperatorContext, ie: KubeObject): Promise<void> {
  if (!(ie.metadata.finalizers ?? []).includes(FINALIZER.infraEnv)) return;
  const id = await findInfraEnvId(ctx, ie);
  if (id) {
    // Landfall keeps an infra-env that still has hosts (409): they go first.
    for (const h of await ctx.landfall.listHosts(id).catch((err: unknown) => (isLandfallNotFound(err) ? [] : Promise.reject(err)))) await ctx.landfall.deleteHost(id, h.id);
    await ctx.landfall.deleteInfraEnv(id);
    ctx.log.info({ resource: key(ie), infraEnvId: id }, 'infra-env deleted');
  }
  // Its hosts went with it: so do their Agents (their finalizer finds the host already gone).
  for (const a of ctx.cache.list(RT.agent, ie.metadata.namespace)) {
    if (a.metadata.labels?.[INFRAENV_LABEL] === ie.metadata.name) await ctx.kube.delete(RT.agent, ie.metadata.namespace, a.metadata.name);
  }
  await removeFinalizer(ctx, RT.infraEnv, ie, FINALIZER.infraEnv);
  ctx.infraEnvs.drop(key(ie));
}
