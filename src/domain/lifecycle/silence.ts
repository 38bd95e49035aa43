/**
 * How long a host has been silent, as the disconnect rule counts it.
 *
 * A host is `disconnected` when its agent has not polled for the disconnect
 * timeout. But an agent whose poll the service turned away (load shedding,
 * src/api/admission.ts) did poll: the silence is the service's, not the
 * host's. Counting it made an overloaded service mark healthy hosts
 * disconnected, and every such status change (and the reconnect after it)
 * refreshed a cluster, which overloaded it further: the 20,000-host run of
 * 2026-11-27 (bench/README.md) never came out of that loop.
 *
 * So the time the service spent shedding agent requests, or running late
 * itself (an episode, stored by the API in `service_pressure`), plus the
 * longest an agent turned away takes to come back (SHED_GRACE_MS), is not
 * counted. One rule, read by the
 * `connected` validation and by the host monitor's query alike.
 */

/** The latest period in which an API process turned agent polls away or ran late: from its first such moment to its last. */
export interface ShedEpisode {
  startedAtMs: number;
  lastAtMs: number;
}

/**
 * After the last refusal, how long the episode still excuses silence: the
 * longest Retry-After the API gives (ADMISSION_RETRY_AFTER_S) plus an agent's
 * own backoff after a failed poll. Refusals closer together than this are one
 * episode.
 */
export const SHED_GRACE_MS = 60_000;

/** The part of a host's silence (checked in at `checkedInMs`, now `nowMs`) that falls in the shedding episode. */
export function excusedSilenceMs(checkedInMs: number, nowMs: number, episode: ShedEpisode | undefined): number {
  if (!episode) return 0;
  const end = Math.min(nowMs, episode.lastAtMs + SHED_GRACE_MS);
  return Math.max(0, end - Math.max(checkedInMs, episode.startedAtMs));
}

/** The disconnect rule: polled, and silent (less what the service excused) no longer than the timeout. */
export function isConnected(h: { sinceCheckInMs: number | undefined; excusedSilenceMs?: number }, disconnectTimeoutMs: number): boolean {
  return h.sinceCheckInMs !== undefined && h.sinceCheckInMs - (h.excusedSilenceMs ?? 0) <= disconnectTimeoutMs;
}
