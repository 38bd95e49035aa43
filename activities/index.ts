import { createSelfCheckActivities, type SelfCheckDeps } from './self-check';
import { createHostMonitorActivities } from './host-monitor';
import { createInstallActivities } from './install';
import { createBmcActivities } from './bmc';
import { createDay2Activities } from './install-day2';
import type { ServiceContext } from '../src/services/context';
import { heartbeating } from './heartbeat';

export type ActivityDeps = SelfCheckDeps & { services: ServiceContext };

/** All activities the worker registers, built once from injected ports; each heartbeats while it runs (heartbeat.ts). */
export function createActivities(deps: ActivityDeps) {
  return heartbeating({
    ...createSelfCheckActivities(deps),
    ...createHostMonitorActivities(deps.services),
    ...createInstallActivities(deps.services),
    ...createBmcActivities(deps.services),
    ...createDay2Activities(deps.services),
  });
}
