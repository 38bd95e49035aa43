/**
 * Which steps a host is asked to run on each poll, keyed by host status, and
 * how long the agent waits before the next poll (reference §6). Queued steps
 * (the install step, a disk-speed check) are handed out in addition.
 */
export interface StepPlan {
  nextInstructionSeconds: number;
  steps: readonly string[];
}

const SLOW = 120;
/** What a discovered host keeps checking until install; each step is sent only when its arguments exist. */
const DISCOVERY_CHECKS = ['inventory', 'connectivity-check', 'free-network-addresses', 'ntp-synchronizer', 'domain-resolution', 'container-image-availability'] as const;
const NORMAL = 60;

export const STEPS_BY_HOST_STATUS: Record<string, StepPlan> = {
  discovering: { nextInstructionSeconds: NORMAL, steps: ['inventory'] },
  disconnected: { nextInstructionSeconds: SLOW, steps: ['inventory'] },
  insufficient: { nextInstructionSeconds: NORMAL, steps: DISCOVERY_CHECKS },
  'pending-for-input': { nextInstructionSeconds: NORMAL, steps: DISCOVERY_CHECKS },
  known: { nextInstructionSeconds: NORMAL, steps: DISCOVERY_CHECKS },
  'preparing-for-installation': { nextInstructionSeconds: NORMAL, steps: ['installation-disk-speed-check'] },
  'preparing-successful': { nextInstructionSeconds: NORMAL, steps: [] },
  installing: { nextInstructionSeconds: NORMAL, steps: [] },
  'installing-in-progress': { nextInstructionSeconds: NORMAL, steps: [] },
  // error and cancelled also get logs-gather and stop-installation, once per failure or cancel rather than on every poll (logs-service.ts).
  error: { nextInstructionSeconds: SLOW, steps: [] },
  cancelled: { nextInstructionSeconds: SLOW, steps: [] },
  'resetting-pending-user-action': { nextInstructionSeconds: SLOW, steps: [] },
};

export const UNKNOWN_STATUS_PLAN: StepPlan = { nextInstructionSeconds: NORMAL, steps: [] };

/** Step ids follow AS: `<type>-<8 hex>`. */
export function stepId(type: string, random: () => string): string {
  return `${type}-${random().slice(0, 8)}`;
}

/**
 * Steps an agent is not asked to run because its install does not need them.
 * Landfall's own agent installs with coreos-installer and never runs the
 * installer and controller images, so pulling them would prove nothing; the
 * upstream agent runs both, so it is asked, as assisted-service asks it.
 */
export function skippedFor(agentVersion: string | null | undefined): readonly string[] {
  return agentVersion?.startsWith('landfall-agent/') ? ['container-image-availability'] : [];
}
