/**
 * Per infra-env, the cluster and step-view stamp this API process's last
 * poll of one of its hosts found. A poll plans its discovery steps from it
 * before its check-in, so the check-in records the steps handed out in the
 * same statement: one round trip and one row version per poll instead of two
 * when a step is due (every other poll at the default cadence).
 *
 * A hint, never an answer: the check-in applies the plan only if the row
 * still matches it (status, cluster, stamp; hosts-repo.ts CHECK_IN_SQL; the
 * plan is made only when the agent states its version, so the stored one
 * never decides it) and decides which steps are due from the row itself;
 * otherwise the poll is planned again from the row returned. Losing it costs
 * the second statement. Kept per infra-env, not per host, so it holds
 * whichever process an agent's next poll reaches.
 */
export interface ViewHint {
  clusterId: string;
  viewStamp: string;
}

/** Past this many infra-envs the least recently polled go first. */
const MAX_INFRA_ENVS = 50_000;
const hints = new Map<string, ViewHint>();

export function viewHint(infraEnvId: string): ViewHint | undefined {
  return hints.get(infraEnvId);
}

export function rememberView(infraEnvId: string, clusterId: string | null, viewStamp: string | null): void {
  const had = hints.get(infraEnvId);
  if (!clusterId || !viewStamp) {
    if (had) hints.delete(infraEnvId);
    return;
  }
  if (had?.clusterId === clusterId && had.viewStamp === viewStamp) return;
  hints.delete(infraEnvId);
  hints.set(infraEnvId, { clusterId, viewStamp });
  if (hints.size > MAX_INFRA_ENVS) hints.delete(hints.keys().next().value!);
}

/** Forget every hint (tests). */
export function forgetViews(): void {
  hints.clear();
}
