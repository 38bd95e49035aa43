/**
 * The install stages each role walks through, in order (reference §8). A
 * report may repeat the current stage (new progress info) or move forward;
 * going back, or naming a stage not in the role's list, is refused.
 */
export const HOST_STAGES = [
  'Starting installation',
  'Waiting for control plane',
  'Waiting for bootkube',
  'Waiting for controller',
  'Installing',
  'Writing image to disk',
  'Copying registry data to disk',
  'Rebooting',
  'Waiting for ignition',
  'Configuring',
  'Joined',
  'Done',
  'Failed',
] as const;

export type HostStage = (typeof HOST_STAGES)[number];
export type StageRole = 'bootstrap' | 'master' | 'arbiter' | 'worker' | 'sno' | 'day2';

export const STAGES_BY_ROLE: Record<StageRole, readonly HostStage[]> = {
  bootstrap: ['Starting installation', 'Installing', 'Writing image to disk', 'Copying registry data to disk', 'Waiting for control plane', 'Waiting for bootkube', 'Waiting for controller', 'Rebooting', 'Configuring', 'Joined', 'Done'],
  master: ['Starting installation', 'Installing', 'Writing image to disk', 'Copying registry data to disk', 'Rebooting', 'Configuring', 'Joined', 'Done'],
  arbiter: ['Starting installation', 'Installing', 'Writing image to disk', 'Copying registry data to disk', 'Rebooting', 'Configuring', 'Joined', 'Done'],
  worker: ['Starting installation', 'Installing', 'Writing image to disk', 'Waiting for control plane', 'Rebooting', 'Waiting for ignition', 'Configuring', 'Joined', 'Done'],
  sno: ['Starting installation', 'Installing', 'Waiting for bootkube', 'Writing image to disk', 'Copying registry data to disk', 'Rebooting', 'Joined', 'Done'],
  // A day-2 worker joins a running control plane (nothing to wait for); its installer and installed OS report up
  // to Configuring, the cluster's controller reports Joined and Done.
  day2: ['Starting installation', 'Installing', 'Writing image to disk', 'Rebooting', 'Waiting for ignition', 'Configuring', 'Joined', 'Done'],
};

/** The stages of a day-2 host the host itself reports; the rest come from the cluster's controller. */
export const DAY2_CONTROLLER_STAGES: readonly HostStage[] = ['Joined', 'Done'];

/** Stages that are optional in a role's walk (registry data is copied only in disconnected installs). */
const OPTIONAL: readonly HostStage[] = ['Copying registry data to disk'];

export function stageRole(role: string, bootstrap: boolean, controlPlaneCount: number, day2 = false): StageRole {
  if (day2) return 'day2';
  if (controlPlaneCount === 1 && (role === 'master' || bootstrap)) return 'sno';
  if (bootstrap) return 'bootstrap';
  return role === 'arbiter' ? 'arbiter' : role === 'worker' ? 'worker' : 'master';
}

export type StageCheck = { ok: true; percentage: number } | { ok: false; reason: string };

/** Whether `next` may follow `current` for this role; Failed may follow anything. */
export function checkStageTransition(stageRoleName: StageRole, current: string | undefined, next: string): StageCheck {
  const stages = STAGES_BY_ROLE[stageRoleName];
  if (next === 'Failed') return { ok: true, percentage: current ? percentage(stages, current) : 0 };
  const ni = stages.indexOf(next as HostStage);
  if (ni < 0) return { ok: false, reason: `stage "${next}" is not a stage of a ${stageRoleName} host (${stages.join(' → ')})` };
  if (current) {
    const ci = stages.indexOf(current as HostStage);
    if (ci > ni) return { ok: false, reason: `stage "${next}" comes before the current stage "${current}"` };
  }
  return { ok: true, percentage: percentage(stages, next) };
}

function percentage(stages: readonly HostStage[], stage: string): number {
  const counted = stages.filter((s) => !OPTIONAL.includes(s));
  const i = counted.indexOf(stage as HostStage);
  return i < 0 ? 0 : Math.round(((i + 1) / counted.length) * 100);
}

export interface ClusterProgress {
  preparing_for_installation_stage_percentage: number;
  installing_stage_percentage: number;
  finalizing_stage_percentage: number;
  total_percentage: number;
}

/** Statuses in which a cluster's progress is derived from its hosts; before them it is 0, at installed 100. */
const PHASE: Record<string, { preparing: number; finalizing: number; installingFromHosts: boolean } | undefined> = {
  'preparing-for-installation': { preparing: 50, finalizing: 0, installingFromHosts: false },
  installing: { preparing: 100, finalizing: 0, installingFromHosts: true },
  'installing-pending-user-action': { preparing: 100, finalizing: 0, installingFromHosts: true },
  finalizing: { preparing: 100, finalizing: 50, installingFromHosts: true },
  // A failed or cancelled install keeps showing how far it got.
  error: { preparing: 100, finalizing: 0, installingFromHosts: true },
  cancelled: { preparing: 100, finalizing: 0, installingFromHosts: true },
};

/**
 * A cluster's install progress the way AS weighs it (reference §4):
 * total = 0.1·preparing + 0.7·installing + 0.15·finalizing, 100 at installed;
 * installing = Σ(stage index + 1) / Σ(stage count) over the hosts, so a host
 * with more stages weighs more.
 */
export function clusterProgress(status: string, controlPlaneCount: number, hosts: Array<{ role: string; bootstrap: boolean; current_stage?: string }>): ClusterProgress | undefined {
  if (status === 'installed') return { preparing_for_installation_stage_percentage: 100, installing_stage_percentage: 100, finalizing_stage_percentage: 100, total_percentage: 100 };
  const phase = PHASE[status];
  if (!phase) return undefined;
  let done = 0;
  let all = 0;
  for (const h of hosts) {
    const counted = STAGES_BY_ROLE[stageRole(h.role, h.bootstrap, controlPlaneCount)].filter((s) => !OPTIONAL.includes(s));
    all += counted.length;
    const at = h.current_stage === 'Failed' ? -1 : counted.indexOf(h.current_stage as HostStage);
    done += at + 1;
  }
  const installing = phase.installingFromHosts && all > 0 ? Math.round((done / all) * 100) : 0;
  return {
    preparing_for_installation_stage_percentage: phase.preparing,
    installing_stage_percentage: installing,
    finalizing_stage_percentage: phase.finalizing,
    total_percentage: Math.round(0.1 * phase.preparing + 0.7 * installing + 0.15 * phase.finalizing),
  };
}
