/**
 * Agent ↔ one Landfall host (the Agent is named by the host id). The spec
 * (role, hostname, installation disk) goes to Landfall when it changes;
 * everything else flows back into status: inventory, validations, progress
 * and the reference's conditions. `spec.approved` is Kubernetes-only: it
 * gates the install in the cluster reconcile, as in the reference.
 */
import { LandfallError, isLandfallNotFound, type Json } from './landfall-client';
import { agentConditions, mergeConditions, type AgentFacts } from './conditions';
import { ensureFinalizer, qkey, removeFinalizer, writeStatus, type OperatorContext } from './context';
import { FINALIZER, INFRAENV_LABEL, RT } from './resources';
import { infraEnvIdOf } from './infra-env-reconciler';
import { agentInventory, failingValidations, hostDrift, hostParams, parseJson, specHash } from './spec-mapping';

const PRE_INSTALL = ['discovering', 'known', 'insufficient', 'pending-for-input', 'disconnected'];

export async function reconcileAgent(ctx: OperatorContext, agentKey: string): Promise<void> {
  const [ns, name] = agentKey.split('/') as [string, string];
  // From the watch cache (kept newest-first, context.ts): one round trip less on the path every host status change takes.
  let agent = ctx.cache.get(RT.agent, agentKey) ?? (await ctx.kube.find(RT.agent, ns, name));
  if (!agent) return;
  const ieName = agent.metadata.labels?.[INFRAENV_LABEL];
  const infraEnvId = ieName ? await infraEnvIdOf(ctx, `${ns}/${ieName}`) : undefined;

  if (agent.metadata.deletionTimestamp) {
    if (infraEnvId) await ctx.landfall.deleteHost(infraEnvId, name);
    await removeFinalizer(ctx, RT.agent, agent, FINALIZER.agent);
    return;
  }
  if (!infraEnvId) {
    // Its InfraEnv has not been reconciled since a restart: that reconcile learns the id and wakes us.
    if (ieName) ctx.queue.add(qkey('infraenv', `${ns}/${ieName}`));
    return;
  }
  agent = await ensureFinalizer(ctx, RT.agent, agent, FINALIZER.agent);

  let host: Json;
  try {
    host = await ctx.hostReads.get(infraEnvId, name);
  } catch (err) {
    if (!isLandfallNotFound(err)) throw err;
    // The host was deleted in Landfall: its Agent goes too (the finalizer finds nothing left to delete).
    await ctx.kube.delete(RT.agent, ns, name);
    return;
  }

  let syncError: AgentFacts['syncError'];
  let drift: string[] = [];
  let applied = agent.status?.landfall?.appliedSpecHash as string | undefined;
  const desired = hostParams(agent);
  const hash = specHash(desired);
  if (applied !== hash) {
    if (Object.keys(desired).length === 0) applied = hash;
    else if (!PRE_INSTALL.includes(host.status)) syncError = { kind: 'InputError', message: `the host is ${host.status}: a changed spec applies only before the installation starts` };
    else {
      try {
        host = await ctx.landfall.updateHost(infraEnvId, name, desired);
        applied = hash;
      } catch (err) {
        if (!(err instanceof LandfallError)) throw err;
        syncError = { kind: err.status >= 500 ? 'BackendError' : 'InputError', message: err.message };
      }
    }
  } else {
    drift = hostDrift(desired, host);
  }

  const facts: AgentFacts = {
    status: host.status,
    statusInfo: host.status_info ?? '',
    approved: agent.spec?.approved === true,
    failingValidations: failingValidations(host.validations_info),
    syncError,
    drift,
  };
  const p = host.progress ?? {};
  const inventory = agentInventory(host.inventory);
  await writeStatus(ctx, RT.agent, agent, {
    conditions: mergeConditions(agent.status?.conditions, agentConditions(facts), ctx.now().toISOString()),
    inventory: inventory ?? null,
    validationsInfo: parseJson(host.validations_info) ?? null,
    progress: {
      currentStage: p.current_stage ?? '',
      progressInfo: p.progress_info ?? '',
      installationPercentage: p.installation_percentage ?? 0,
      stageStartTime: p.stage_started_at ?? null,
      stageUpdateTime: p.stage_updated_at ?? null,
    },
    role: host.role === 'auto-assign' ? (host.suggested_role ?? 'auto-assign') : host.role,
    bootstrap: host.bootstrap === true,
    installation_disk_id: host.installation_disk_id ?? null,
    debugInfo: { state: host.status, stateInfo: host.status_info ?? '', eventsURL: `${ctx.publicUrl}/api/assisted-install/v2/events?host_id=${name}&infra_env_id=${infraEnvId}` },
    landfall: { hostID: name, infraEnvID: infraEnvId, appliedSpecHash: applied ?? null },
  });
}
