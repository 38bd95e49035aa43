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
export type StageRole = 'bootstrap' | 'master' | 'arbiter' | 'worker' | 'sno';

export const STAGES_BY_ROLE: Record<StageRole, readonly HostStage[]> = {
  bootstrap: ['Starting installation', 'Installing', 'Writing image to disk', 'Copying registry data to disk', 'Waiting for control plane', 'Waiting for bootkube', 'Waiting for controller', 'Rebooting', 'Configuring', 'Joined', 'Done'],
  master: ['Starting installation', 'Installing', 'Writing image to disk', 'Copying registry data to disk', 'Rebooting', 'Configuring', 'Joined', 'Done'],
  arbiter: ['Starting installation', 'Installing', 'Writing image to disk', 'Copying registry data to disk', 'Rebooting', 'Configuring', 'Joined', 'Done'],
  worker: ['Starting installation', 'Installing', 'Writing image to disk', 'Waiting for control plane', 'Rebooting', 'Waiting for ignition', 'Configuring', 'Joined', 'Done'],
  sno: ['Starting installation', 'Installing', 'Waiting for bootkube', 'Writing image to disk', 'Copying registry data to disk', 'Rebooting', 'Joined', 'Done'],
};

/** Stages that are optional in a role's walk (registry data is copied only in disconnected installs). */
const OPTIONAL: readonly HostStage[] = ['Copying registry data to disk'];

export function stageRole(role: string, bootstrap: boolean, controlPlaneCount: number): StageRole {
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
