/**
 * What agents (and the installer on a host) call: register, poll for steps,
 * reply, report install progress. The poll path is the hot path of the whole
 * service (every host every minute): one UPDATE, which also says whether the
 * step queue needs a look. It reads the infra-env only when the caller's
 * access depends on it (user tokens, cluster-scoped agent tokens), and never
 * loads the host row or the cluster.
 */
import { createHash } from 'node:crypto';
import { randomHex8 } from '../util/random-hex';
import type { Knex } from 'knex';
import { InventoryShapeError, normalizeInventory } from '../domain/inventory';
import { nulProblem } from '../domain/input-rules';
import type { Principal } from '../auth/principal';
import { badRequest, conflict, notFound } from '../errors';
import { STEPS_BY_HOST_STATUS, UNKNOWN_STATUS_PLAN, skippedFor, stepId } from '../domain/host-steps';
import { checkStageTransition, stageRole } from '../domain/install-stages';
import { CONNECTIVITY_FACTS_FIELD, hostDisplayName } from '../api/assisted/presenters';
import { quietProbe } from '../domain/lifecycle/network';
import { connectivityFactsDigest } from './connectivity-facts';
import type { ConnectivityReport } from '../domain/lifecycle/facts';
import type { ClusterRow, HostRow } from '../db/rows';
import type { ServiceContext } from './context';
import { checkInfraEnvAccess, loadHost, loadInfraEnv, loadInfraEnvWithCluster } from './access';
import { CLUSTER_EDITABLE } from './clusters-service';
import { applyHostEvent, createHost, createHostAtOnce } from './status-writer';
import { lifecycleSettings, refreshForHost } from './refresh-service';
import { refreshNowOrRequest, requestRefresh, storeReplyFacts as storeFactsForRefresh, targetOfHost } from './refresh-queue';
import { stepArgs, viewCached, type DeferredArgs, type PollingHost } from './step-args';
import { dueBy, staleMark } from './step-cadence';
import { planHeld, type StepPlanGuess, type StepSends } from '../db/hosts-repo';
import { rememberView, viewHint } from './poll-memo';
import { diskSpeedOk } from '../domain/lifecycle/disk-speed';
import { INSTALL_PHASE_HOST_STATUSES } from './install-signals';
import { nextHostStatus } from '../domain/lifecycle/host-state-machine';
import { deliverHostReport, keepHostReport, pendingHostReport, reportTarget } from './report-delivery';
import { LOGS_WANTED_STATUSES, logsGatherSteps } from './logs-service';
import { attachEnrolledBmc, inventoryMacs } from '../bmc/bmc-service';
import { DAY2_HOST_KIND, isDay2Cluster, isDay2Host } from './day2-service';
import { day2IgnitionKey } from '../install/day2-ignition';

/** A step handed out but never answered is handed out again after this long. */
const RESEND_AFTER_MS = 10 * 60 * 1000;


export async function registerHost(ctx: ServiceContext, p: Principal, infraEnvId: string, body: { host_id: string; discovery_agent_version?: string }, requestId?: string) {
  const { cluster_doc: clusterDoc, cluster_status: clusterStatus, ...infraEnv } = await loadInfraEnvWithCluster(ctx, p, infraEnvId);
  if (infraEnv.doc.type === 'disconnected-iso') throw badRequest('hosts of a disconnected-iso infra-env cannot register');
  const key = { infraEnvId, hostId: body.host_id };
  // The common registration (a new host, into a cluster that takes hosts) is one statement. The cluster was read
  // with the infra-env, without a lock, for the new row's role; the statement locks it and checks its status again.
  if (!infraEnv.cluster_id || clusterStatus !== null) {
    const host = await createHostAtOnce(ctx, newHostRow(ctx, infraEnvId, infraEnv.cluster_id, clusterDoc ? { doc: clusterDoc } : undefined, body), CLUSTER_EDITABLE, requestId);
    if (host) return host;
  }
  // An agent that timed out retries with the same host id while its first registration may still run: with only a
  // key-share lock on the cluster both can find no row and insert; the loser runs again and finds the winner's row.
  for (let attempt = 0; ; attempt++) {
    try {
      return await registerOnce(ctx, infraEnv, key, body, requestId);
    } catch (err) {
      if (attempt > 0 || (err as { code?: string }).code !== '23505') throw err;
    }
  }
}

async function registerOnce(ctx: ServiceContext, infraEnv: Awaited<ReturnType<typeof loadInfraEnv>>, key: { infraEnvId: string; hostId: string }, body: { host_id: string; discovery_agent_version?: string }, requestId?: string) {
  const infraEnvId = key.infraEnvId;
  const registered = await ctx.db.transaction(async (trx) => {
    // Lock order everywhere: cluster, then its hosts. A key lock: the cluster cannot start installing while a host
    // joins it, but a refresh of its other hosts goes on (a boot storm registers into clusters being refreshed).
    const cluster = infraEnv.cluster_id ? await ctx.repos.clusters.getForKeyShare(infraEnv.cluster_id, trx) : undefined;
    const existing = await ctx.repos.hosts.getForUpdate(key, trx);
    // New hosts join only a cluster that is not installing; a known host registering again is a fact to record (it rebooted).
    if (!existing && cluster && !(CLUSTER_EDITABLE as readonly string[]).includes(cluster.status)) {
      throw conflict(`cluster ${cluster.id} does not accept new hosts in status ${cluster.status}`);
    }
    let host: HostRow;
    if (!existing) {
      host = await createHost(ctx, trx, newHostRow(ctx, infraEnvId, infraEnv.cluster_id, cluster, body), requestId);
    } else {
      // A host that registers again booted the discovery image again; the state machine says what that means now.
      const stage = ((existing.doc as Record<string, unknown>).progress as { current_stage?: string } | undefined)?.current_stage;
      // A host that registers again starts fresh: every discovery step is asked on its next poll.
      const m = await applyHostEvent(ctx, trx, existing, { type: 'RegisterHost', currentStage: stage }, {
        requestId,
        patch: { step_sends: {}, checked_in_at: ctx.now(), discovery_agent_version: body.discovery_agent_version ?? existing.discovery_agent_version, cluster_id: existing.cluster_id ?? infraEnv.cluster_id },
      });
      host = m.row;
      if (m.moved && host.cluster_id && INSTALL_PHASE_HOST_STATUSES.includes(host.status)) {
        const hostCluster = cluster?.id === host.cluster_id ? cluster : await ctx.repos.clusters.get(host.cluster_id, trx);
        await keepHostReport(trx, key, reportTarget(host, hostCluster), { hostId: body.host_id, status: host.status });
      }
    }
    // A machine enrolled by its BMC registers with its system UUID as host id: it carries that BMC from now on.
    const attached = await attachEnrolledBmc(ctx, trx, infraEnvId, body.host_id);
    // Validated by a refresher, not in this request: a rack powering on together registers at the rate
    // the rows can be written, and one refresh of the cluster covers every host that arrived meanwhile.
    await requestRefresh(trx, targetOfHost(host));
    // A new host's row as inserted; read again when anything wrote it since (a BMC's projection, a kept report).
    return attached || existing ? (await ctx.repos.hosts.get(key, trx))! : host;
  });
  // This report, or one a failed signal left pending, is sent now; if Temporal cannot take it, it stays pending
  // for the host's next poll or the monitor's sweep, and the agent still hears 201. Unlike a progress report, a
  // registration is not safe to repeat: an agent that hears 503 registers again, and a registration in the middle
  // of an install is the host restarting. Seen in the chaos test: the host failed on the first registration, a
  // person retried it, and the agent's repeat, still held back by a 503, failed the retried host again.
  if (registered.report_pending) await deliverHostReport(ctx, key).catch(() => undefined);
  return registered;
}

/** A registering host's row as it is inserted. */
function newHostRow(ctx: ServiceContext, infraEnvId: string, clusterId: string | null, cluster: Pick<ClusterRow, 'doc'> | undefined, body: { host_id: string; discovery_agent_version?: string }) {
  return {
    id: body.host_id,
    infra_env_id: infraEnvId,
    cluster_id: clusterId,
    // A single-node cluster's one host can only be its control plane: assisted-service makes it master at once.
    ...(((cluster?.doc as Record<string, unknown> | undefined)?.control_plane_count as number | undefined) === 1 && !isDay2Cluster(cluster) ? { role: 'master' } : {}),
    // A host joining a running cluster is a worker (assisted-service: day-2 hosts register as workers).
    ...(isDay2Cluster(cluster) ? { role: 'worker' } : {}),
    discovery_agent_version: body.discovery_agent_version ?? null,
    // Registering is contact: the host is connected from this moment.
    checked_in_at: ctx.now(),
    doc: { validations_info: '{}', progress: {}, logs_info: '', ...(isDay2Cluster(cluster) ? { kind: DAY2_HOST_KIND } : {}) },
  };
}

export async function nextSteps(ctx: ServiceContext, p: Principal, infraEnvId: string, hostId: string, agentTimestamp?: number, agentVersion?: string) {
  await checkInfraEnvAccess(ctx, p, infraEnvId);
  const key = { infraEnvId, hostId };
  const now = ctx.now().getTime();
  // The repeating steps planned before the check-in, from the cluster view this process last saw for the
  // infra-env (poll-memo.ts): the check-in then decides which are due and records them in its own statement.
  const guess = agentVersion !== undefined ? await guessedPlan(ctx, infraEnvId, hostId, agentVersion, now) : undefined;
  const host = await ctx.repos.hosts.checkIn(key, agentTimestamp, agentVersion, new Date(Date.now() - RESEND_AFTER_MS), guess?.plan);
  if (!host) {
    // A missing infra-env is reported as such (hosts go with their infra-env).
    await loadInfraEnv(ctx, p, infraEnvId);
    throw notFound(`host ${hostId}`);
  }
  rememberView(infraEnvId, host.clusterId, host.viewStamp);
  // Judged on the row as the check-in returned it (a disconnected host's status may move below).
  const held = guess ? planHeld(guess.plan, host) : undefined;
  // A report whose signal failed (Temporal away, an API process killed after its commit) goes now.
  // The poll's answer does not depend on it: if Temporal is still away it stays for the next poll.
  if (host.reportPending) await deliverHostReport(ctx, key).catch(() => undefined);
  if (host.status === 'disconnected') {
    // It polls again: refresh now rather than wait for a refresher, so this answer is already the plan of the
    // status it comes back to (a disconnected host is told to poll slowly). Once per reconnection, not per poll.
    // Never waiting for a refresh in progress: then the refresh is queued, and this answer is the disconnected plan.
    if (await refreshNowOrRequest(ctx, targetOfHost({ id: hostId, infra_env_id: infraEnvId, cluster_id: host.clusterId })))
      host.status = (await ctx.repos.hosts.get(key))!.status;
  }
  const plan = STEPS_BY_HOST_STATUS[host.status] ?? UNKNOWN_STATUS_PLAN;
  const instructions: Array<{ step_type: string; step_id: string; args: string[] }> = [];
  const handOut = (s: PlannedStep) => instructions.push({ step_type: s.type, step_id: stepId(s.type, randomHex8), args: Array.isArray(s.args) ? s.args : s.args.build() });
  if (held) {
    // The check-in recorded which repeating steps were due; a step that does not repeat always goes.
    for (const s of guess!.steps) if (!s.mark || held.sent[s.type]) handOut(s);
  } else {
    // Step arguments come from the per-cluster view; the host row is read only if a step needs it.
    let row: Promise<HostRow | undefined> | undefined;
    const polling = { id: hostId, cluster_id: host.clusterId, view_stamp: host.viewStamp, row: () => (row ??= ctx.repos.hosts.get(key)) };
    const sent: StepSends = {};
    for (const s of await stepsWithArgs(ctx, plan.steps, polling, agentVersion ?? host.agentVersion, now)) {
      const due = s.mark ? dueBy(host.stepSends[s.type], s.mark, now) : 'due';
      if (!due) continue;
      if (due !== 'due') sent[s.type] = due;
      handOut(s);
    }
    // Remembered on the host row, not in this process: the next poll may reach another replica.
    if (Object.keys(sent).length) await ctx.repos.hosts.recordStepSends(key, sent);
  }
  // A host in error or cancelled is asked for its logs once per failure or cancel.
  if (LOGS_WANTED_STATUSES.includes(host.status)) instructions.push(...(await logsGatherSteps(ctx, key, (type) => stepId(type, randomHex8))));
  // Most polls find the queue empty; checkIn said so without another round trip.
  const queued = host.stepsDue ? await ctx.repos.steps.takeDue(key, RESEND_AFTER_MS) : [];
  for (const s of queued) instructions.push({ step_type: s.step_type, step_id: s.step_id, args: s.args });
  return { next_instruction_seconds: plan.nextInstructionSeconds, post_step_action: 'continue' as const, instructions };
}

/** The statuses whose plan is the discovery checks: a poll's steps are planned before its check-in only for these. */
const CHECKING_STATUSES = Object.keys(STEPS_BY_HOST_STATUS).filter((s) => STEPS_BY_HOST_STATUS[s]!.steps === STEPS_BY_HOST_STATUS.known!.steps);

interface PlannedStep {
  type: string;
  /** Deferred ones are built only if the step goes out (step-args.ts). */
  args: string[] | DeferredArgs;
  /** A repeating step's digest and stale mark (step-cadence.ts); none for a step handed out on every poll. */
  mark?: { d: string; stale: number };
}

/** The steps of a plan this agent is asked for and that have arguments now, in plan order. */
async function stepsWithArgs(ctx: ServiceContext, types: readonly string[], polling: PollingHost, agentVersion: string | null | undefined, now: number): Promise<PlannedStep[]> {
  const skipped = skippedFor(agentVersion);
  const steps: PlannedStep[] = [];
  for (const type of types) {
    if (skipped.includes(type)) continue;
    const args = await stepArgs(ctx, type, polling);
    if (args) steps.push({ type, args, mark: staleMark(type, args, now, ctx.stepRepeatMs) });
  }
  return steps;
}

/**
 * The discovery checks of a host in a checking status, bound to the cluster
 * this process last saw for its infra-env, with their arguments; the
 * repeating ones' digests and stale marks go to the check-in (StepPlanGuess).
 */
async function guessedPlan(ctx: ServiceContext, infraEnvId: string, hostId: string, agentVersion: string, now: number) {
  const hint = viewHint(infraEnvId);
  // Only from a view already held: loading one here would label the cluster's current rows with the hint's stamp.
  if (!hint || !viewCached(hint.clusterId, hint.viewStamp)) return undefined;
  // Only steps the cluster view answers: a step that needs the host row is planned after the check-in.
  let needsRow = false;
  const polling = { id: hostId, cluster_id: hint.clusterId, view_stamp: hint.viewStamp, row: async () => void (needsRow = true) };
  const steps = await stepsWithArgs(ctx, STEPS_BY_HOST_STATUS.known!.steps, polling, agentVersion, now);
  if (needsRow) return undefined;
  const candidates = steps.flatMap((s) => (s.mark ? [{ t: s.type, d: s.mark.d, stale: s.mark.stale }] : []));
  return { plan: { statuses: CHECKING_STATUSES, clusterId: hint.clusterId, viewStamp: hint.viewStamp, at: now, candidates } satisfies StepPlanGuess, steps };
}

/** Step types whose reply output is a JSON document stored on the host as a string field. */
const REPLY_FIELD: Record<string, string | ((o: unknown) => Record<string, string>)> = {
  'connectivity-check': 'connectivity',
  'free-network-addresses': 'free_addresses',
  'ntp-synchronizer': (o) => ({ ntp_sources: JSON.stringify((o as { ntp_sources?: unknown }).ntp_sources ?? []) }),
  'domain-resolution': (o) => ({ domain_name_resolutions: JSON.stringify(o) }),
  'installation-disk-speed-check': 'disks_info',
  'container-image-availability': 'images_status',
  'tang-connectivity-check': 'tang_connectivity',
  'api-vip-connectivity-check': 'api_vip_connectivity',
};

export interface StepReply {
  step_type: string;
  step_id: string;
  /** Absent means success: the upstream Go agent leaves out a zero exit code. */
  exit_code?: number;
  output?: string;
  error?: string;
}

export async function postStepReply(ctx: ServiceContext, p: Principal, infraEnvId: string, hostId: string, body: StepReply, requestId?: string): Promise<void> {
  // As the poll: the infra-env is read only when the caller's access depends on it, or to tell a missing one from a missing host.
  await checkInfraEnvAccess(ctx, p, infraEnvId);
  const missingHost = async (): Promise<never> => {
    await loadInfraEnv(ctx, p, infraEnvId);
    throw notFound(`host ${hostId}`);
  };
  const reply = { ...body, exit_code: body.exit_code ?? 0 };
  const key = { infraEnvId, hostId };
  let output = reply.output ?? '';
  let parsed: unknown;
  const needsJson = reply.exit_code === 0 && output !== '' && (reply.step_type === 'inventory' || REPLY_FIELD[reply.step_type] !== undefined);
  if (needsJson) {
    try {
      parsed = JSON.parse(output);
    } catch {
      throw badRequest(`output of ${reply.step_type} step ${reply.step_id} is not valid JSON`, { field: 'output' });
    }
    if (typeof parsed !== 'object' || parsed === null) throw badRequest(`output of ${reply.step_type} must be a JSON object or array`, { field: 'output' });
    // JSON text can carry a NUL only as the escape \u0000: without one, no walk of the parsed document.
    const nul = output.includes('\\u0000') ? nulProblem(parsed, 'output') : undefined;
    if (nul) throw badRequest(nul.reason, { field: nul.field });
  }
  // The inventory is stored as the service reads it: nulls and absent sections filled, loopback dropped.
  let inventoryDigest: string | undefined;
  if (needsJson && reply.step_type === 'inventory') {
    inventoryDigest = createHash('sha256').update(output).digest('base64url');
    try {
      output = JSON.stringify(normalizeInventory(parsed));
    } catch (err) {
      if (err instanceof InventoryShapeError) throw badRequest(`output of inventory step ${reply.step_id}: ${err.message}`, { field: `output.${err.field}` });
      throw err;
    }
  }
  // A reply that can move the host's status (an install step failing, a disk-speed result while preparing) is
  // decided at once, under the cluster's and the host's locks; any other reply only stores its facts (below).
  const decides = (reply.exit_code !== 0 && reply.step_type === 'install') || (reply.exit_code === 0 && reply.step_type === 'installation-disk-speed-check');
  if (!decides) {
    await storeReplyFacts(ctx, key, reply, needsJson ? { output, parsed, inventoryDigest } : undefined, missingHost, requestId);
    return;
  }
  const change = await ctx.db.transaction(async (trx) => {
    const peek = await ctx.repos.hosts.get(key, trx);
    if (!peek) return missingHost();
    const cluster = peek.cluster_id ? await ctx.repos.clusters.getForUpdate(peek.cluster_id, trx) : undefined;
    const host = (await ctx.repos.hosts.getForUpdate(key, trx))!;
    const earlier = { pending: Boolean(host.report_pending) };
    await ctx.repos.steps.recordReply(key, reply.step_id, { exit_code: reply.exit_code, output, error: reply.error ?? '' }, trx);
    if (reply.exit_code !== 0) {
      await recordStepFailed(ctx, trx, host, reply, requestId);
      // An install step that fails is the host failing its install (reference §3), unless it is the
      // install step of a try that already ended: the reply of a failed try can arrive after the host
      // was retried (install-a1 after install-a1-r1 went out), and must not fail the new try.
      if (INSTALLING.includes(host.status) && (await ctx.repos.steps.latestOfType(key, 'install', trx))?.step_id === reply.step_id) {
        const m = await applyHostEvent(ctx, trx, host, { type: 'ProgressReported', stage: 'Failed', info: reply.error?.slice(0, 200) }, { requestId });
        // It will not answer this install step again: close it, as a Failed progress report does.
        if (m.moved) {
          await ctx.repos.steps.closeSent(key, 'install', trx);
          return { pending: await keepHostReport(trx, key, reportTarget(host, cluster), { hostId, status: m.row.status }) };
        }
      }
      return earlier;
    }
    // The disk-speed result: stored, validated, and while preparing, the host's verdict.
    await ctx.repos.hosts.update(key, { doc: { ...host.doc, disks_info: output } }, trx);
    await refreshForHost(ctx, trx, key, requestId);
    if (host.status === 'preparing-for-installation') {
      const fresh = (await ctx.repos.hosts.get(key, trx))!;
      const m = await applyHostEvent(ctx, trx, fresh, { type: 'DiskSpeedReported', ok: diskSpeedOk((fresh.doc as Record<string, unknown>).disks_info as string | undefined) ?? true }, { requestId });
      if (m.transition && m.row.status !== host.status) return { pending: await keepHostReport(trx, key, reportTarget(host, cluster), { hostId, status: m.row.status }) };
    }
    return earlier;
  });
  // The workflow hears of the change (or of one a failed signal left pending) before the agent hears 204.
  if (change.pending) await deliverHostReport(ctx, key);
}

/**
 * A reply's facts, stored: the step's record, and the host's fact when it
 * changed, with its target marked for a refresh (refresh-queue.ts). The
 * validations and statuses that follow are computed by a refresher, never in
 * the agent's request, and one refresh covers every reply of the cluster that
 * arrived meanwhile. A reply whose facts did not change writes only the step.
 */
async function storeReplyFacts(
  ctx: ServiceContext,
  key: { infraEnvId: string; hostId: string },
  reply: Required<Pick<StepReply, 'exit_code'>> & StepReply,
  json: { output: string; parsed: unknown; inventoryDigest?: string } | undefined,
  missingHost: () => Promise<never>,
  requestId?: string,
): Promise<void> {
  const { infraEnvId, hostId } = key;
  const step = { id: reply.step_id, exit_code: reply.exit_code, output: json?.output ?? reply.output ?? '', error: reply.error ?? '' };
  const facts = reply.exit_code === 0 && json ? replyFacts(ctx, reply.step_type, json) : undefined;
  // Nearly every reply is a success: one statement. An inventory in an infra-env where a BMC enrolment waits may
  // be the enrolled machine's (known by its boot MAC address): that statement leaves it to the locking path below.
  if (reply.exit_code === 0) {
    const stored = await storeFactsForRefresh(ctx.db, key, step, facts?.fields ?? {}, facts?.inventory, facts?.inventory !== undefined && Boolean(ctx.bmc), facts?.refreshKey);
    if (!stored) return missingHost();
    if (!stored.enrolment) return;
  }
  await ctx.db.transaction(async (trx) => {
    const host = await ctx.repos.hosts.getFacts(key, trx);
    if (!host) return missingHost();
    await ctx.repos.steps.recordReply(key, reply.step_id, { exit_code: step.exit_code, output: step.output, error: step.error }, trx);
    if (reply.exit_code !== 0) {
      const named = (await ctx.repos.hosts.get(key, trx))!;
      await recordStepFailed(ctx, trx, named, reply, requestId);
      return;
    }
    const doc = host.doc as Record<string, unknown>;
    const { fields, inventory } = facts!;
    // The same facts as last time are no new fact: nothing to write, nothing to re-validate.
    if (Object.entries(fields).every(([k, v]) => doc[k] === v) && (inventory === undefined || host.has_inventory)) return;
    // The enrolment's second write of the host row makes PostgreSQL take the cluster's key lock after the host's.
    // So the cluster's key lock first, as everywhere (a user's edit holding the cluster then waits for no one here).
    if (host.cluster_id) await ctx.repos.clusters.getForKeyShare(host.cluster_id, trx);
    await ctx.repos.hosts.mergeFacts(key, fields, inventory, trx);
    await attachEnrolledBmc(ctx, trx, infraEnvId, hostId, inventoryMacs(inventory!));
    await requestRefresh(trx, targetOfHost(host));
  });
}

/**
 * The host fields a successful reply sets, and the inventory it replaces.
 * An inventory is known by the digest of the report as sent (the stored text
 * differs from it: the service decides disk eligibility in it), so the same
 * report again is no new fact.
 */
function replyFacts(ctx: ServiceContext, stepType: string, json: { output: string; parsed: unknown; inventoryDigest?: string }): { fields: Record<string, unknown>; inventory?: string; refreshKey?: { field: string; value: string } } {
  if (stepType === 'inventory') return { fields: { inventory_digest: json.inventoryDigest }, inventory: json.output };
  // Its latencies move with every report: stored each time, refreshed for only when what the checks read moved.
  if (stepType === 'connectivity-check') {
    const value = connectivityFactsDigest(json.parsed as ConnectivityReport, json.output, quietProbe(lifecycleSettings(ctx).requirements));
    return { fields: { connectivity: json.output }, refreshKey: { field: CONNECTIVITY_FACTS_FIELD, value } };
  }
  const target = REPLY_FIELD[stepType]!;
  return { fields: typeof target === 'string' ? { [target]: json.output } : target(json.parsed) };
}

/** The event of a step the agent ran and that failed: which, its exit code and (the start of) its error. */
function recordStepFailed(ctx: ServiceContext, trx: Knex.Transaction, host: HostRow, reply: Required<Pick<StepReply, 'exit_code'>> & StepReply, requestId?: string) {
  return ctx.repos.events.add(
    { name: 'host_step_failed', hostId: host.id, infraEnvId: host.infra_env_id, clusterId: host.cluster_id, props: { host_name: hostDisplayName(host), step_type: reply.step_type, exit_code: reply.exit_code, error: (reply.error ?? '').slice(0, 500) || 'no error text' }, requestId },
    trx,
  );
}

const INSTALLING = ['installing', 'installing-in-progress', 'installing-pending-user-action'];
/** A day-2 node the controller saw join still takes its report of the node ready (Done). */
const DAY2_REPORTING = [...INSTALLING, 'added-to-existing-cluster'];

export async function updateProgress(ctx: ServiceContext, p: Principal, infraEnvId: string, hostId: string, progress: { current_stage: string; progress_info?: string }, requestId?: string): Promise<void> {
  const { host: before } = await loadHost(ctx, p, infraEnvId, hostId);
  const key = { infraEnvId, hostId };
  // A report a failed signal left pending goes first: the workflow hears this host's reports in order.
  if (before.report_pending) await deliverHostReport(ctx, key);
  const change = await ctx.db.transaction(async (trx) => {
    const host = (await ctx.repos.hosts.getForUpdate(key, trx))!;
    const day2 = isDay2Host(host);
    if (!(day2 ? DAY2_REPORTING : INSTALLING).includes(host.status)) throw conflict(`host ${hostId} is not installing (status ${host.status})`);
    const cluster = host.cluster_id ? await ctx.repos.clusters.get(host.cluster_id, trx) : undefined;
    const cp = (cluster?.doc.control_plane_count as number | undefined) ?? 3;
    const current = (host.doc.progress as { current_stage?: string } | undefined)?.current_stage;
    const check = checkStageTransition(stageRole(host.role, host.bootstrap, cp, day2), current, progress.current_stage);
    if (!check.ok) throw conflict(check.reason);
    const now = ctx.now().toISOString();
    const sameStage = current === progress.current_stage;
    const prev = (host.doc.progress as Record<string, unknown> | undefined) ?? {};
    const doc = {
      ...host.doc,
      progress: {
        ...prev,
        current_stage: progress.current_stage,
        progress_info: progress.progress_info ?? '',
        installation_percentage: check.percentage,
        // Where it failed is the stage before Failed: keep it for reports and metrics.
        ...(progress.current_stage === 'Failed' && current && current !== 'Failed' ? { failed_at_stage: current } : {}),
        stage_started_at: sameStage ? prev.stage_started_at : now,
        stage_updated_at: now,
      },
    };
    if (!sameStage && current && typeof prev.stage_started_at === 'string') {
      ctx.metrics?.stageDuration(current, host.bootstrap ? 'bootstrap' : host.role, (Date.parse(now) - Date.parse(prev.stage_started_at)) / 1000);
    }
    const event = { type: 'ProgressReported', stage: progress.current_stage, info: progress.progress_info, day2 } as const;
    // One signal per stage change, never one per report: the install's history stays small. The report
    // goes in the same UPDATE as the change: a second UPDATE of this row would make PostgreSQL check the
    // row's cluster key, locking the cluster after the host, against every refresh's order (a deadlock).
    const after = nextHostStatus(host.status, event)?.to ?? host.status;
    const target = !sameStage || after !== host.status ? reportTarget(host, cluster) : undefined;
    const reportPending = target ? pendingHostReport(target, { hostId, status: after, stage: progress.current_stage, info: progress.progress_info }) : undefined;
    const { row, moved } = await applyHostEvent(ctx, trx, host, event, { patch: { doc, ...(reportPending ? { report_pending: reportPending } : {}) }, requestId });
    if (day2 && progress.current_stage === 'Joined' && !sameStage) await ctx.repos.events.add({ name: 'host_joined_cluster', hostId, infraEnvId, clusterId: host.cluster_id, props: { host_name: hostDisplayName(row), stage: 'joined (Joined)' }, requestId }, trx);
    // A finished host answers its install step no more (it rebooted into the installed system): close it,
    // and, once installed, every other step still out (its discovery agent is gone); a failed host is still asked for logs.
    if (moved && (row.status === 'installed' || row.status === 'error')) await ctx.repos.steps.closeSent(key, row.status === 'installed' ? undefined : 'install', trx);
    // The same stage with the same info again is an agent's retry of a report whose answer it lost (an outage
    // mid-request): it refreshes the stage's timer above, and the history does not say it twice.
    const repeated = sameStage && (progress.progress_info ?? '') === ((prev.progress_info as string | undefined) ?? '');
    if (!repeated) {
      await ctx.repos.events.add(
        { name: 'host_install_progress_updated', hostId, infraEnvId, clusterId: host.cluster_id, props: { host_name: hostDisplayName(row), stage: progress.current_stage, progress_info: progress.progress_info ? ` (${progress.progress_info})` : '' }, requestId },
        trx,
      );
    }
    return { pending: reportPending !== undefined };
  });
  if (change.pending) await deliverHostReport(ctx, key);
}

/** The host's Ignition, written by the install's prepare activity; 409 until then. */
export async function hostIgnition(ctx: ServiceContext, p: Principal, infraEnvId: string, hostId: string): Promise<{ fileName: string; body: Buffer }> {
  const { host } = await loadHost(ctx, p, infraEnvId, hostId);
  if (!host.cluster_id) throw conflict(`host ${hostId} is not bound to a cluster`);
  if (isDay2Host(host)) {
    // Its own Ignition, with its own join credential (activities/install-day2.ts).
    const key = day2IgnitionKey(host.cluster_id, hostId);
    if (!(await ctx.store.stat(key))) throw conflict(`no Ignition for host ${hostId} yet: install it first (POST …/hosts/${hostId}/actions/install)`);
    return { fileName: `worker-${hostId}.ign`, body: await ctx.store.getBuffer(key) };
  }
  const role = host.bootstrap ? 'master' : host.role === 'auto-assign' ? host.suggested_role : host.role;
  const key = `clusters/${host.cluster_id}/ignition/${role}.ign`;
  if (!(await ctx.store.stat(key))) throw conflict(`no Ignition for host ${hostId} yet: the cluster has not been prepared for installation`);
  return { fileName: `${role}-${hostId}.ign`, body: await ctx.store.getBuffer(key) };
}
