/**
 * ClusterDeployment + AgentClusterInstall → one Landfall cluster.
 *
 * Every action is decided from what is observed now, so a reconcile that runs
 * twice (a restart, a duplicate wake-up) does the same thing once:
 * - the cluster is found again by its tag (the ClusterDeployment's uid) before
 *   one is created, so a crash between create and status write makes no second one;
 * - the install starts only while Landfall says `ready` (and Landfall's own
 *   compare-and-swap refuses a second start), never from a remembered intent;
 * - the kubeconfig Secret is written when Landfall says `installed`, as a create-or-update.
 *
 * Who wins: the resources own what they set (applied when they change: a new
 * spec digest); Landfall owns status. A field the REST API changed later is
 * reported on SpecSynced (reason ChangedOutsideOperator) and left alone until
 * the resource changes again: reverting it on every resync would silently undo
 * a person's deliberate fix, and applying the resource again is one edit away.
 */
import { KubeError, type KubeObject } from './kube-client';
import { LandfallError, isLandfallNotFound, type Json } from './landfall-client';
import { clusterConditions, clusterMayInstall, mergeConditions, type ClusterFacts } from './conditions';
import { ensureFinalizer, qkey, removeFinalizer, writeStatus, type OperatorContext } from './context';
import { FINALIZER, RT, key } from './resources';
import { SpecError, clusterDrift, clusterParams, clusterTag, failingValidations, parseJson, pullSecretOf, specHash } from './spec-mapping';
import { importCluster, installApprovedHosts, isDay2Cluster, openForNewHosts, wantsImport } from './day2';

const PRE_INSTALL = ['insufficient', 'pending-for-input', 'ready'];

export const kubeconfigSecretName = (cd: KubeObject) => `${cd.metadata.name}-admin-kubeconfig`;
export const passwordSecretName = (cd: KubeObject) => `${cd.metadata.name}-admin-password`;

/** The ClusterDeployment's AgentClusterInstall: the one it names, else the one that names it. */
export function aciOf(ctx: OperatorContext, cd: KubeObject): KubeObject | undefined {
  const ns = cd.metadata.namespace!;
  const named = cd.spec?.clusterInstallRef?.name as string | undefined;
  if (named) return ctx.cache.get(RT.agentClusterInstall, `${ns}/${named}`);
  return ctx.cache.list(RT.agentClusterInstall, ns).find((a) => a.spec?.clusterDeploymentRef?.name === cd.metadata.name);
}

/** The Landfall cluster of a ClusterDeployment: from the index, else found by its tag (after a restart the index is empty). */
export async function findClusterId(ctx: OperatorContext, cd: KubeObject): Promise<string | undefined> {
  const k = key(cd);
  const known = ctx.clusters.idOf(k);
  if (known) return known;
  const tag = clusterTag(cd.metadata.uid!);
  const found = (await ctx.landfall.listClusters()).find((c: Json) => String(c.tags ?? '').split(',').includes(tag));
  if (found) ctx.clusters.set(found.id, k);
  return found?.id;
}

export async function reconcileCluster(ctx: OperatorContext, cdKey: string): Promise<void> {
  const [ns, name] = cdKey.split('/') as [string, string];
  let cd = await ctx.kube.find(RT.clusterDeployment, ns, name);
  if (!cd) {
    ctx.clusters.drop(cdKey);
    return;
  }
  if (cd.metadata.deletionTimestamp) return deprovision(ctx, cd);
  cd = await ensureFinalizer(ctx, RT.clusterDeployment, cd, FINALIZER.clusterDeployment);
  const aciRef = aciOf(ctx, cd);
  // Fresh: its status carries the digest of the spec last applied.
  const aci = aciRef ? await ctx.kube.find(RT.agentClusterInstall, ns, aciRef.metadata.name) : undefined;
  if (!aci) return; // nothing to install until the AgentClusterInstall exists (its watch wakes us)

  let cluster: Json | undefined;
  const id = await findClusterId(ctx, cd);
  if (id) {
    try {
      // Hosts (for the progress Landfall derives from them) only once installing: before, the Agents' statuses say what is needed.
      const lastState = aci.status?.debugInfo?.state as string | undefined;
      cluster = await ctx.landfall.getCluster(id, { hosts: lastState !== undefined && !PRE_INSTALL.includes(lastState) });
    } catch (err) {
      if (!isLandfallNotFound(err)) throw err;
      ctx.clusters.drop(cdKey); // deleted through the REST API: made again below, as the resources ask
    }
  }

  let syncError: ClusterFacts['syncError'];
  let drift: string[] = [];
  let applied = aci.status?.landfall?.appliedSpecHash as string | undefined;
  try {
    const secretName = cd.spec?.pullSecretRef?.name as string | undefined;
    if (!secretName) throw new SpecError('spec.pullSecretRef.name of the ClusterDeployment is required');
    const pullSecret = pullSecretOf(await ctx.kube.find(RT.secret, ns, secretName), `${ns}/${secretName}`);
    const versions = await ctx.landfall.versions();
    const def = Object.entries(versions).find(([, v]) => v.default)?.[0] ?? Object.keys(versions)[0]!;
    const desired = { ...clusterParams(cd, aci, pullSecret, Object.keys(versions), def), tags: clusterTag(cd.metadata.uid!) };
    const hash = specHash(desired);
    if (!cluster) {
      // Already installed elsewhere (day 2): imported to grow it, not created.
      const day2 = wantsImport(cd);
      cluster = day2 ? await importCluster(ctx, cd, aci, desired) : await ctx.landfall.createCluster(desired);
      ctx.clusters.set(cluster.id, cdKey);
      applied = hash;
      ctx.log.info({ resource: cdKey, clusterId: cluster.id }, day2 ? 'cluster imported' : 'cluster created');
      // Its InfraEnvs were waiting for the cluster id.
      for (const ie of ctx.cache.list(RT.infraEnv, ns)) if (ie.spec?.clusterRef?.name === name) ctx.queue.add(qkey('infraenv', key(ie)));
    } else if (cluster.imported === true) {
      // Landfall did not install it: the day-1 fields of the spec neither apply nor drift.
    } else if (applied !== hash) {
      if (!PRE_INSTALL.includes(cluster.status)) throw new SpecError(`the cluster is ${cluster.status}: a changed spec applies only before the installation starts`);
      const { openshift_version: _v, tags: _t, ...patch } = desired;
      cluster = await ctx.landfall.updateCluster(cluster.id, patch);
      applied = hash;
      ctx.log.info({ resource: cdKey, clusterId: cluster.id }, 'cluster spec applied');
    } else {
      drift = clusterDrift(desired, cluster);
    }
  } catch (err) {
    if (err instanceof SpecError) syncError = { kind: 'InputError', message: err.message };
    else if (err instanceof LandfallError && err.status !== 404) syncError = { kind: err.status >= 500 ? 'BackendError' : 'InputError', message: err.message };
    else throw err;
  }

  const agents = ctx.cache
    .list(RT.agent, ns)
    .filter((a) => a.spec?.clusterDeploymentName?.name === name && (a.spec.clusterDeploymentName.namespace ?? ns) === ns && !a.metadata.deletionTimestamp);
  const req = aci.spec?.provisionRequirements ?? {};
  const facts: ClusterFacts = {
    status: cluster?.status,
    statusInfo: cluster?.status_info,
    failingValidations: failingValidations(cluster?.validations_info),
    requiredAgents: (req.controlPlaneAgents ?? 3) + (req.workerAgents ?? 0) + (req.arbiterAgents ?? 0),
    // Readiness as the Agents show it (their reconciles copy each host's status); Landfall's own `ready` check guards the install call.
    agents: agents.map((a) => ({ approved: a.spec?.approved === true, ready: a.status?.debugInfo?.state === 'known' })),
    holdInstallation: aci.spec?.holdInstallation === true,
    syncError,
    drift,
  };

  if (cluster && clusterMayInstall(facts)) {
    try {
      cluster = await ctx.landfall.installCluster(cluster.id);
      ctx.log.info({ resource: cdKey, clusterId: cluster.id }, 'installation started');
    } catch (err) {
      // 409: Landfall found it not ready after all (a host changed meanwhile); the next event brings us back.
      if (!(err instanceof LandfallError && err.status === 409)) throw err;
      cluster = await ctx.landfall.getCluster(cluster.id);
    }
    facts.status = cluster.status;
    facts.statusInfo = cluster.status_info;
  }

  if (cluster?.status === 'installed') {
    await publishCredentials(ctx, cd, cluster);
    // As the reference: once the ClusterDeployment says installed (the reconcile after the one that said so), the cluster accepts new hosts.
    if (cd.spec?.installed === true) {
      cluster = await openForNewHosts(ctx, cluster);
      facts.status = cluster.status;
      facts.statusInfo = cluster.status_info;
    }
  }
  if (isDay2Cluster(cluster)) await installApprovedHosts(ctx, cluster, agents);

  const now = ctx.now().toISOString();
  await writeStatus(ctx, RT.agentClusterInstall, aci, {
    conditions: mergeConditions(aci.status?.conditions, clusterConditions(facts), now),
    debugInfo: cluster
      ? { state: cluster.status, stateInfo: cluster.status_info, eventsURL: `${ctx.publicUrl}/api/assisted-install/v2/events?cluster_id=${cluster.id}`, logsURL: `${ctx.publicUrl}/api/assisted-install/v2/clusters/${cluster.id}/logs` }
      : {},
    progress: { totalPercentage: cluster?.progress?.total_percentage ?? 0 },
    validationsInfo: parseJson(cluster?.validations_info) ?? null,
    apiVIPs: (cluster?.api_vips ?? []).map((v: Json) => v.ip),
    ingressVIPs: (cluster?.ingress_vips ?? []).map((v: Json) => v.ip),
    landfall: { clusterID: cluster?.id ?? null, appliedSpecHash: applied ?? null },
  });
}

/** When the install is done: the kubeconfig and the admin password as Secrets, named from the ClusterDeployment as the reference names them. */
async function publishCredentials(ctx: OperatorContext, cd: KubeObject, cluster: Json): Promise<void> {
  const ns = cd.metadata.namespace!;
  const kcName = kubeconfigSecretName(cd);
  const pwName = passwordSecretName(cd);
  const owner = [{ apiVersion: cd.apiVersion ?? `${RT.clusterDeployment.group}/${RT.clusterDeployment.version}`, kind: 'ClusterDeployment', name: cd.metadata.name, uid: cd.metadata.uid!, controller: true }];
  const labels = { 'hive.landfall.io/cluster-deployment-name': cd.metadata.name, 'landfall.io/cluster-id': cluster.id };
  if (!(await ctx.kube.find(RT.secret, ns, kcName))) {
    const kubeconfig = await ctx.landfall.kubeconfig(cluster.id);
    await createOrReplaceSecret(ctx, ns, { metadata: { name: kcName, labels, ownerReferences: owner }, type: 'Opaque', data: { kubeconfig: Buffer.from(kubeconfig).toString('base64') } });
  }
  // A kubeadm cluster has no kubeadmin password: Landfall answers 409 and there is no such Secret.
  let password = Boolean(await ctx.kube.find(RT.secret, ns, pwName));
  if (!password) {
    const cred = await ctx.landfall.credentials(cluster.id).catch((err: unknown) => {
      if (err instanceof LandfallError && err.status === 409) return undefined;
      throw err;
    });
    if (cred) {
      await createOrReplaceSecret(ctx, ns, { metadata: { name: pwName, labels, ownerReferences: owner }, type: 'Opaque', data: { username: Buffer.from(cred.username).toString('base64'), password: Buffer.from(cred.password).toString('base64') } });
      password = true;
    }
  }
  if (cd.spec?.installed !== true || cd.spec?.clusterMetadata?.clusterID !== cluster.id) {
    await ctx.kube.mergePatch(RT.clusterDeployment, ns, cd.metadata.name, {
      spec: { installed: true, clusterMetadata: { clusterID: cluster.id, infraID: cluster.id, adminKubeconfigSecretRef: { name: kcName }, ...(password ? { adminPasswordSecretRef: { name: pwName } } : {}) } },
    });
  }
  if (!cd.status?.installedTimestamp) {
    await ctx.kube.mergePatch(RT.clusterDeployment, ns, cd.metadata.name, { status: { installedTimestamp: cluster.install_completed_at ?? ctx.now().toISOString(), apiURL: `https://api.${cluster.name}.${cluster.base_dns_domain}:6443` } }, 'status');
  }
}

async function createOrReplaceSecret(ctx: OperatorContext, ns: string, secret: KubeObject): Promise<void> {
  try {
    await ctx.kube.create(RT.secret, ns, secret);
  } catch (err) {
    if (!(err instanceof KubeError && err.status === 409)) throw err;
    await ctx.kube.mergePatch(RT.secret, ns, secret.metadata.name, { data: secret.data });
  }
}

/** The finalizer's work: the Landfall cluster and the Secrets we made go, then the resource may. */
async function deprovision(ctx: OperatorContext, cd: KubeObject): Promise<void> {
  if (!(cd.metadata.finalizers ?? []).includes(FINALIZER.clusterDeployment)) return;
  const id = await findClusterId(ctx, cd);
  if (id) {
    await ctx.landfall.deleteCluster(id);
    ctx.log.info({ resource: key(cd), clusterId: id }, 'cluster deleted');
  }
  // No garbage collector is assumed (a bare apiserver has none): delete what we created ourselves.
  await ctx.kube.delete(RT.secret, cd.metadata.namespace, kubeconfigSecretName(cd));
  await ctx.kube.delete(RT.secret, cd.metadata.namespace, passwordSecretName(cd));
  await removeFinalizer(ctx, RT.clusterDeployment, cd, FINALIZER.clusterDeployment);
  ctx.clusters.drop(key(cd));
}
