/**
 * Status conditions of the custom resources, as data: from a Landfall
 * cluster's or host's status (and the facts only Kubernetes knows: approval,
 * the agent counts asked for) to the condition types, reasons and messages the
 * Assisted Installer's operator writes (its docs/hive-integration/kube-api-conditions.md),
 * so tools and people that read those keep working. Pure: no I/O.
 */

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface Condition {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  lastTransitionTime?: string;
}


const CLUSTER_INSTALLING = ['preparing-for-installation', 'installing', 'finalizing', 'installing-pending-user-action', 'adding-hosts'];

export interface ClusterFacts {
  /** The Landfall cluster's status and status_info (undefined: not created yet). */
  status?: string;
  statusInfo?: string;
  /** Failing or pending cluster validations, "id: message" each. */
  failingValidations: string[];
  /** What the AgentClusterInstall asks for. */
  requiredAgents: number;
  /** Agents of the cluster's hosts: approved or not, and whether their host is ready (`known`). */
  agents: Array<{ approved: boolean; ready: boolean }>;
  holdInstallation: boolean;
  /** The spec could not be applied: what went wrong, and whose fault it was. */
  syncError?: { kind: 'InputError' | 'BackendError'; message: string };
  /** Fields the REST API changed after the operator applied the spec (reported, not reverted). */
  drift: string[];
}

/** The install may start: what RequirementsMet=True/ClusterIsReady promises, and the gate the operator acts on. */
export function clusterMayInstall(f: ClusterFacts): boolean {
  const c = clusterConditions(f);
  return f.status === 'ready' && c.find((x) => x.type === 'RequirementsMet')?.reason === 'ClusterIsReady' && !f.holdInstallation && !f.syncError;
}

export function clusterConditions(f: ClusterFacts): Condition[] {
  const info = f.statusInfo ?? '';
  const out: Condition[] = [];

  if (f.syncError) {
    out.push({ type: 'SpecSynced', status: 'False', reason: f.syncError.kind, message: `The Spec could not be synced due to ${f.syncError.kind === 'InputError' ? 'an input error' : 'backend error'}: ${f.syncError.message}` });
  } else if (f.drift.length) {
    out.push({ type: 'SpecSynced', status: 'False', reason: 'ChangedOutsideOperator', message: `Changed through the REST API after the Spec was applied (not reverted; edit the resource to apply it again): ${f.drift.join(', ')}` });
  } else {
    out.push({ type: 'SpecSynced', status: 'True', reason: 'SyncOK', message: 'The Spec has been successfully applied' });
  }

  const s = f.status;
  if (s === undefined) {
    out.push({ type: 'Validated', status: 'Unknown', reason: 'ValidationsUnknown', message: "The cluster's validations have not yet been calculated" });
  } else if (s === 'insufficient') {
    out.push({ type: 'Validated', status: 'False', reason: 'ValidationsFailing', message: `The cluster's validations are failing: ${f.failingValidations.join('; ')}` });
  } else if (s === 'pending-for-input') {
    out.push({ type: 'Validated', status: 'False', reason: 'ValidationsUserPending', message: `The cluster's validations are pending for user: ${f.failingValidations.join('; ')}` });
  } else {
    out.push({ type: 'Validated', status: 'True', reason: 'ValidationsPassing', message: "The cluster's validations are passing" });
  }

  const ready = f.agents.filter((a) => a.ready).length;
  const unapproved = f.agents.filter((a) => !a.approved).length;
  if (s === undefined || s === 'insufficient' || s === 'pending-for-input') {
    out.push({ type: 'RequirementsMet', status: 'False', reason: 'ClusterNotReady', message: 'The cluster is not ready to begin the installation' });
  } else if (s === 'ready') {
    if (ready < f.requiredAgents) out.push({ type: 'RequirementsMet', status: 'False', reason: 'InsufficientAgents', message: `The cluster currently requires ${f.requiredAgents} agents but only ${ready} are ready` });
    else if (f.agents.length > f.requiredAgents) out.push({ type: 'RequirementsMet', status: 'False', reason: 'AdditionalAgents', message: `The cluster currently requires exactly ${f.requiredAgents} agents but have ${f.agents.length} registered` });
    else if (unapproved > 0) out.push({ type: 'RequirementsMet', status: 'False', reason: 'UnapprovedAgents', message: `The installation is pending on the approval of ${unapproved} agents` });
    else out.push({ type: 'RequirementsMet', status: 'True', reason: 'ClusterIsReady', message: 'The cluster is ready to begin the installation' });
  } else if (CLUSTER_INSTALLING.includes(s)) {
    out.push({ type: 'RequirementsMet', status: 'True', reason: 'ClusterAlreadyInstalling', message: 'The cluster requirements are met' });
  } else {
    out.push({ type: 'RequirementsMet', status: 'True', reason: 'ClusterInstallationStopped', message: 'The cluster installation stopped' });
  }

  // A cluster adding hosts (day 2) was installed: the reference says so on Completed and Stopped.
  if (s === 'installed' || s === 'adding-hosts') out.push({ type: 'Completed', status: 'True', reason: 'InstallationCompleted', message: `The installation has completed: ${info}` });
  else if (s === 'error') out.push({ type: 'Completed', status: 'False', reason: 'InstallationFailed', message: `The installation has failed: ${info}` });
  else if (s !== undefined && CLUSTER_INSTALLING.includes(s)) out.push({ type: 'Completed', status: 'False', reason: 'InstallationInProgress', message: `The installation is in progress: ${info}` });
  else if (s === 'ready' && f.holdInstallation) out.push({ type: 'Completed', status: 'False', reason: 'InstallationOnHold', message: 'The installation is on hold, to unhold set holdInstallation to false' });
  else out.push({ type: 'Completed', status: 'False', reason: 'InstallationNotStarted', message: 'The installation has not yet started' });

  if (s === 'error') out.push({ type: 'Failed', status: 'True', reason: 'InstallationFailed', message: `The installation failed: ${info}` });
  else out.push({ type: 'Failed', status: 'False', reason: 'InstallationNotFailed', message: 'The installation has not failed' });

  if (s === 'error') out.push({ type: 'Stopped', status: 'True', reason: 'InstallationFailed', message: 'The installation has stopped due to error' });
  else if (s === 'cancelled') out.push({ type: 'Stopped', status: 'True', reason: 'InstallationCancelled', message: 'The installation has stopped because it was cancelled' });
  else if (s === 'installed' || s === 'adding-hosts') out.push({ type: 'Stopped', status: 'True', reason: 'InstallationCompleted', message: 'The installation has stopped because it completed successfully' });
  else out.push({ type: 'Stopped', status: 'False', reason: 'InstallationNotStopped', message: 'The installation is waiting to start or in progress' });
  return out;
}

const HOST_INSTALLING = ['preparing-for-installation', 'preparing-successful', 'installing', 'installing-in-progress', 'installing-pending-user-action'];
const HOST_STOPPED = ['installed', 'error', 'added-to-existing-cluster', 'cancelled'];

export interface AgentFacts {
  status: string;
  statusInfo: string;
  approved: boolean;
  failingValidations: string[];
  syncError?: { kind: 'InputError' | 'BackendError'; message: string };
  drift: string[];
}

export function agentConditions(f: AgentFacts): Condition[] {
  const s = f.status;
  const out: Condition[] = [];
  if (f.syncError) out.push({ type: 'SpecSynced', status: 'False', reason: f.syncError.kind, message: `The Spec could not be synced due to ${f.syncError.kind === 'InputError' ? 'an input error' : 'backend error'}: ${f.syncError.message}` });
  else if (f.drift.length) out.push({ type: 'SpecSynced', status: 'False', reason: 'ChangedOutsideOperator', message: `Changed through the REST API after the Spec was applied (not reverted; edit the resource to apply it again): ${f.drift.join(', ')}` });
  else out.push({ type: 'SpecSynced', status: 'True', reason: 'SyncOK', message: 'The Spec has been successfully applied' });

  if (s === 'disconnected') out.push({ type: 'Connected', status: 'False', reason: 'AgentIsDisconnected', message: 'The agent has not contacted the installation service in some time, user action should be taken' });
  else out.push({ type: 'Connected', status: 'True', reason: 'AgentIsConnected', message: "The agent's connection to the installation service is unimpaired" });

  if (s === 'known' && f.approved) out.push({ type: 'RequirementsMet', status: 'True', reason: 'AgentIsReady', message: 'The agent is ready to begin the installation' });
  else if (s === 'known') out.push({ type: 'RequirementsMet', status: 'False', reason: 'AgentIsNotApproved', message: 'The agent is not approved' });
  else if (HOST_INSTALLING.includes(s)) out.push({ type: 'RequirementsMet', status: 'True', reason: 'AgentAlreadyInstalling', message: 'Installation already started and is in progress' });
  else if (HOST_STOPPED.includes(s)) out.push({ type: 'RequirementsMet', status: 'True', reason: 'AgentInstallationStopped', message: 'The agent installation stopped' });
  else out.push({ type: 'RequirementsMet', status: 'False', reason: 'AgentNotReady', message: 'The agent is not ready to begin the installation' });

  if (s === 'insufficient') out.push({ type: 'Validated', status: 'False', reason: 'ValidationsFailing', message: `The agent's validations are failing: ${f.failingValidations.join('; ')}` });
  else if (s === 'pending-for-input') out.push({ type: 'Validated', status: 'False', reason: 'ValidationsUserPending', message: `The agent's validations are pending for user: ${f.failingValidations.join('; ')}` });
  else if (s === 'discovering') out.push({ type: 'Validated', status: 'Unknown', reason: 'ValidationsUnknown', message: "The agent's validations have not yet been calculated" });
  else out.push({ type: 'Validated', status: 'True', reason: 'ValidationsPassing', message: "The agent's validations are passing" });

  if (s === 'installed' || s === 'added-to-existing-cluster') out.push({ type: 'Installed', status: 'True', reason: 'InstallationCompleted', message: `The installation has completed: ${f.statusInfo}` });
  else if (s === 'error') out.push({ type: 'Installed', status: 'False', reason: 'InstallationFailed', message: `The installation has failed: ${f.statusInfo}` });
  else if (HOST_INSTALLING.includes(s)) out.push({ type: 'Installed', status: 'False', reason: 'InstallationInProgress', message: `The installation is in progress: ${f.statusInfo}` });
  else out.push({ type: 'Installed', status: 'False', reason: 'InstallationNotStarted', message: 'The installation has not yet started' });

  out.push({ type: 'Bound', status: 'True', reason: 'Bound', message: 'The agent is bound to a cluster deployment' });
  return out;
}

export function infraEnvConditions(f: { error?: string }): Condition[] {
  return f.error
    ? [{ type: 'ImageCreated', status: 'False', reason: 'ImageCreationError', message: `Failed to create image: ${f.error}` }]
    : [{ type: 'ImageCreated', status: 'True', reason: 'ImageCreated', message: 'Image has been created' }];
}

/**
 * Merges freshly computed conditions into the stored ones, keeping a
 * condition's lastTransitionTime while its status is unchanged (what
 * Kubernetes readers expect: the time it last flipped, not the last resync).
 */
export function mergeConditions(previous: Condition[] | undefined, next: Condition[], now: string): Condition[] {
  const prev = new Map((previous ?? []).map((c) => [c.type, c]));
  return next.map((c) => {
    const p = prev.get(c.type);
    return { ...c, lastTransitionTime: p && p.status === c.status && p.lastTransitionTime ? p.lastTransitionTime : now };
  });
}

/** Only the parts a reader compares: type, status, reason, message. */
export function sameConditions(a: Condition[] | undefined, b: Condition[]): boolean {
  const key = (cs: Condition[]) => JSON.stringify(cs.map((c) => [c.type, c.status, c.reason, c.message]));
  return key(a ?? []) === key(b);
}
