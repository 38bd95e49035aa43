/**
 * GET …/clusters/{id}/install-report (Landfall extension): loads the cluster,
 * its hosts and its events, and lets src/domain/install-report.ts explain the
 * latest attempt. Same access rule as GET cluster.
 */
import type { Principal } from '../auth/principal';
import type { HostRow } from '../db/rows';
import { hostnameFromInventory } from '../api/assisted/presenters';
import { buildInstallReport, type InstallReport, type ReportEvent } from '../domain/install-report';
import type { ServiceContext } from './context';
import { loadCluster } from './access';

export async function getInstallReport(ctx: ServiceContext, p: Principal, clusterId: string): Promise<InstallReport> {
  const cluster = await loadCluster(ctx, p, clusterId);
  const hosts = await ctx.db<HostRow>('hosts').where({ cluster_id: clusterId }).orderBy('id');
  // Deleted hosts' events are kept but belong to no host of the report; limit -1: every event of the cluster.
  const page = cluster.install_attempt > 0 ? await ctx.repos.events.list({ clusterId, deletedHosts: true, limit: -1, order: 'ascending' }) : { events: [] };
  return buildInstallReport({
    cluster: { id: cluster.id, name: cluster.name, status: cluster.status, status_info: cluster.status_info, openshift_version: cluster.openshift_version, install_attempt: cluster.install_attempt },
    hosts: hosts.map((h) => ({
      id: h.id,
      hostname: h.requested_hostname ?? hostnameFromInventory(h.inventory) ?? h.id,
      role: h.role,
      bootstrap: h.bootstrap,
      status: h.status,
      status_info: h.status_info,
      progress: (h.doc as Record<string, unknown>).progress as { current_stage?: string; failed_at_stage?: string } | undefined,
    })),
    events: page.events as unknown as ReportEvent[],
    now: ctx.now(),
  });
}
