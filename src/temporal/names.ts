/**
 * Task queues, workflow ids and search attributes in one file: the API, the
 * worker and the dev server must agree on every one of these strings, and an
 * operator types them into the Temporal UI.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const TASK_QUEUE = {
  /** Cluster installs and everything they call. */
  install: 'landfall-install',
} as const;

export const workflowIds = {
  installCluster: (clusterId: string, attempt: number): string => `install-cluster-${clusterId}-attempt-${attempt}`,
  /** One day-2 host's install into its running cluster; a reset and a new install is a new attempt. */
  installDay2Host: (hostId: string, attempt: number): string => `install-day2-host-${hostId}-attempt-${attempt}`,
  selfCheck: (checkId: string): string => `self-check-${checkId}`,
  hostMonitor: 'host-monitor',
  enrollBmcHost: (bmcId: string): string => `enroll-bmc-host-${bmcId}`,
};

/** Schedules the worker keeps in place (created at start, idempotent). */
export const SCHEDULE_IDS = {
  hostMonitor: 'host-monitor',
} as const;

/**
 * Custom search attributes, registered when the dev server starts and listed in
 * docker-compose for production. Keyword, not Text: exact-match filters such as
 * `InstallStatus = 'installing'` are what an operator runs, and SQL visibility
 * has only three Text slots.
 */
export const SEARCH_ATTRIBUTES = {
  clusterId: defineSearchAttributeKey('ClusterId', SearchAttributeType.KEYWORD),
  clusterName: defineSearchAttributeKey('ClusterName', SearchAttributeType.KEYWORD),
  installStatus: defineSearchAttributeKey('InstallStatus', SearchAttributeType.KEYWORD),
  kubernetesRelease: defineSearchAttributeKey('KubernetesRelease', SearchAttributeType.KEYWORD),
} as const;

/** `NAME=Type` arguments for `temporal server start-dev --search-attribute`. */
export function searchAttributeFlags(): string[] {
  return Object.values(SEARCH_ATTRIBUTES).map((k) => `${k.name}=Keyword`);
}
