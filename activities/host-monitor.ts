import type { Knex } from 'knex';
import type { HostRow } from '../src/db/rows';
import { latestShedEpisode } from '../src/db/service-pressure-repo';
import { SHED_GRACE_MS, type ShedEpisode } from '../src/domain/lifecycle/silence';
import type { ServiceContext } from '../src/services/context';
import { drainRefreshRequests, requestRefresh, settleHosts, targetOfHost } from '../src/services/refresh-queue';
import { expireLogCollection } from '../src/services/logs-service';
import { deliverAllPending } from '../src/services/report-delivery';
import { watchInstalls } from '../src/services/install-watch';

/** Silent hosts read per round, and rounds per run at most (the schedule runs every HOST_MONITOR_INTERVAL_MS). */
const SILENT_BATCH = 5000;
const MAX_ROUNDS = 40;
const WATCHED = ['discovering', 'known', 'insufficient', 'pending-for-input', 'preparing-for-installation', 'preparing-successful'];

/**
 * Hosts silent past the timeout, less the silence the service excused
 * (excusedSilenceMs of silence.ts, in SQL: the overlap of the silence with
 * the episode and its grace). The plain cutoff first, for the index.
 */
function silentSince(q: Knex.QueryBuilder, cutoff: Date, nowMs: number, timeoutMs: number, shedding: ShedEpisode | undefined): Knex.QueryBuilder {
  q.where('checked_in_at', '<', cutoff);
  if (!shedding) return q;
  const end = new Date(Math.min(nowMs, shedding.lastAtMs + SHED_GRACE_MS));
  return q.whereRaw(
    "extract(epoch from (?::timestamptz - checked_in_at)) - greatest(0, extract(epoch from (?::timestamptz - greatest(checked_in_at, ?::timestamptz)))) > ?",
    [new Date(nowMs), end, new Date(shedding.startedAtMs), timeoutMs / 1000],
  );
}

export function createHostMonitorActivities(ctx: ServiceContext) {
  return {
    /**
     * Finds hosts that stopped polling and refreshes what they belong to, so
     * the state machine marks them disconnected. Idempotent: a second run
     * finds them already disconnected and does nothing.
     */
    async markSilentHosts(): Promise<{ silentHosts: number; clustersRefreshed: number; disconnected: number; logsTimedOut: number; reportsDelivered: number; installsStarted: number; installsFailed: number }> {
      const nowMs = ctx.now().getTime();
      const timeoutMs = ctx.lifecycle.disconnectTimeoutMs;
      const cutoff = new Date(nowMs - timeoutMs);
      // Silence while the service turned agents away is not the host's (silence.ts): the same rule as the
      // `connected` check, so a host this finds is one its refresh disconnects.
      const shedding = await latestShedEpisode(ctx.db);
      let silentHosts = 0;
      let disconnected = 0;
      const clusters = new Set<string>();
      // In rounds of SILENT_BATCH hosts, so a whole fleet going silent at once is read in bounded statements,
      // and refreshed one cluster per transaction; until a round finds none, or moves none (a status whose
      // refresh does not disconnect it, such as preparing, stays for the install's own timeouts).
      for (let round = 0; round < MAX_ROUNDS; round++) {
        const silent = await ctx.db<HostRow>('hosts')
          .whereIn('status', WATCHED)
          .andWhere((w) => w.where((c) => silentSince(c, cutoff, nowMs, timeoutMs, shedding)).orWhereNull('checked_in_at'))
          .limit(SILENT_BATCH)
          .select('id', 'infra_env_id', 'cluster_id');
        if (!silent.length) break;
        // What they belong to is marked for a refresh (one request per cluster), and refreshed now by this
        // activity or by a refresher elsewhere, whichever claims it first; settled before counting.
        const targets = new Map(
          silent.map((h) => {
            const t = targetOfHost(h);
            return ['clusterId' in t ? t.clusterId : `${t.infraEnvId}/${t.hostId}`, t] as const;
          }),
        );
        for (const t of targets.values()) await requestRefresh(ctx.db, t);
        for (const t of targets.values()) if ('clusterId' in t) clusters.add(t.clusterId);
        await settleHosts(ctx, silent);
        const moved = Number((await ctx.db('hosts').whereIn(['infra_env_id', 'id'], silent.map((h) => [h.infra_env_id, h.id])).whereNotIn('status', WATCHED).count('* as n'))[0]!.n);
        silentHosts += silent.length;
        disconnected += moved;
        if (moved === 0 || silent.length < SILENT_BATCH) break;
      }
      // And whatever else is pending: with no API process running a refresher, this is the one that runs.
      await drainRefreshRequests(ctx, 1000);
      // Log collections that ran out of time are a monitor's job too: nothing else looks at a silent agent.
      const logs = await expireLogCollection(ctx);
      // And install reports whose signal failed with nobody asking since (no agent request about that host).
      const reports = await deliverAllPending(ctx);
      // And installs whose workflow never started or ended without finishing them (install-watch.ts).
      const installs = await watchInstalls(ctx);
      return { silentHosts, clustersRefreshed: clusters.size, disconnected, logsTimedOut: logs.hosts + logs.clusters, reportsDelivered: reports.delivered, installsStarted: installs.started.length, installsFailed: installs.failed.length };
    },
  };
}

export type HostMonitorActivities = ReturnType<typeof createHostMonitorActivities>;
