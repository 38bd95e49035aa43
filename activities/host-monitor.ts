import type { HostRow } from '../src/db/rows';
import type { ServiceContext } from '../src/services/context';
import { refreshCluster, refreshUnboundHost } from '../src/services/refresh-service';
import { expireLogCollection } from '../src/services/logs-service';
import { deliverAllPending } from '../src/services/report-delivery';
import { watchInstalls } from '../src/services/install-watch';

const WATCHED = ['discovering', 'known', 'insufficient', 'pending-for-input', 'preparing-for-installation', 'preparing-successful'];

export function createHostMonitorActivities(ctx: ServiceContext) {
  return {
    /**
     * Finds hosts that stopped polling and refreshes what they belong to, so
     * the state machine marks them disconnected. Idempotent: a second run
     * finds them already disconnected and does nothing.
     */
    async markSilentHosts(): Promise<{ silentHosts: number; clustersRefreshed: number; disconnected: number; logsTimedOut: number; reportsDelivered: number; installsStarted: number; installsFailed: number }> {
      const cutoff = new Date(ctx.now().getTime() - ctx.lifecycle.disconnectTimeoutMs);
      const silent = await ctx.db<HostRow>('hosts').whereIn('status', WATCHED).andWhere((w) => w.where('checked_in_at', '<', cutoff).orWhereNull('checked_in_at')).select('id', 'infra_env_id', 'cluster_id');
      const clusters = [...new Set(silent.map((h) => h.cluster_id).filter((c): c is string => Boolean(c)))];
      for (const id of clusters) await ctx.db.transaction((trx) => refreshCluster(ctx, trx, id));
      for (const h of silent.filter((x) => !x.cluster_id)) {
        await ctx.db.transaction(async (trx) => {
          const row = await ctx.repos.hosts.getForUpdate({ infraEnvId: h.infra_env_id, hostId: h.id }, trx);
          if (row) await refreshUnboundHost(ctx, trx, row);
        });
      }
      const ids = silent.map((h) => h.id);
      const disconnected = ids.length ? Number((await ctx.db('hosts').whereIn('id', ids).where({ status: 'disconnected' }).count('* as n'))[0]!.n) : 0;
      // Log collections that ran out of time are a monitor's job too: nothing else looks at a silent agent.
      const logs = await expireLogCollection(ctx);
      // And install reports whose signal failed with nobody asking since (no agent request about that host).
      const reports = await deliverAllPending(ctx);
      // And installs whose workflow never started or ended without finishing them (install-watch.ts).
      const installs = await watchInstalls(ctx);
      return { silentHosts: silent.length, clustersRefreshed: clusters.length, disconnected, logsTimedOut: logs.hosts + logs.clusters, reportsDelivered: reports.delivered, installsStarted: installs.started.length, installsFailed: installs.failed.length };
    },
  };
}

export type HostMonitorActivities = ReturnType<typeof createHostMonitorActivities>;
