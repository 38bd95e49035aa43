import { createSelfCheckActivities, type SelfCheckDeps } from './self-check';

export type ActivityDeps = SelfCheckDeps;

/** All activities the worker registers, built once from injected ports. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createSelfCheckActivities(deps),
  };
}
