import type { HostRow } from '../src/db/rows';
import type { ServiceContext } from '../src/services/context';
import { drainRefreshRequests, requestRefresh, settleHosts, targetOfHost } from '../src/services/refresh-queue';
import { expireLogCollection } from '../src/services/logs-service';
import { deliverAllPending } from '../src/services/report-delivery';
import { watchInstalls } from '../src/services/install-watch';

/** Silent hosts marked per run at most (the schedule runs every HOST_MONITOR_INTERVAL_MS). */
const SILENT_BATCH = 5000;
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
      // Bounded: a whole fleet going silent at once is marked over several runs, never in one long statement.
      const silent = await ctx.db<HostRow>('hosts').whereIn('status', WATCHED).andWhere((w) => w.where('checked_in_at', '<', cutoff).orWhereNull('checked_in_at')).limit(SILENT_BATCH).select('id', 'infra_env_id', 'cluster_id');
      // What they belong to is marked for a refresh (one request per cluster), and refreshed now by this
      // activity or by an API process's refresher, whichever claims it first: one transaction per cluster.
      const targets = new Map(
        silent.map((h) => {
          const t = targetOfHost(h);
          return ['clusterId' in t ? t.clusterId : `${t.infraEnvId}/${t.hostId}`, t] as const;
        }),
      );
      for (const t of targets.values()) await requestRefresh(ctx.db, t);
      const clusters = [...targets.values()].filter((t) => 'clusterId' in t);
      // Refreshed (or waited for, where a refresher holds them) before counting what this run disconnected.
      await settleHosts(ctx, silent);
      // And whatever else is pending: with no API process running a refresher, this is the one that runs.
      await drainRefreshRequests(ctx, 1000);
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
