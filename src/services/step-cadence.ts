/**
 * How often a repeating discovery step is asked again with unchanged
 * arguments. A step whose arguments changed (new peers, another machine
 * network) goes out on the next poll; an unchanged one waits its interval,
 * which keeps the poll answer small (with 50 peers the connectivity-check
 * arguments alone are ~7 KB) and the fleet's replies few.
 *
 * This is a trade a user should see: the intervals are settings
 * (STEP_REPEAT_<TYPE>_SECONDS, src/config.ts), and docs/validation-freshness.md
 * says, per validation, how stale each lets it get. assisted-service hands every
 * discovery step out on every poll (an interval of 0 here).
 */
import { createHash } from 'node:crypto';
import type { StepSends } from '../db/hosts-repo';

export type StepRepeatMs = Record<string, number>;

/** The defaults, in milliseconds (the settings are in seconds). */
export const DEFAULT_STEP_REPEAT_MS: Readonly<StepRepeatMs> = Object.freeze({
  inventory: 5 * 60_000,
  'connectivity-check': 2 * 60_000,
  'free-network-addresses': 5 * 60_000,
  'ntp-synchronizer': 2 * 60_000,
  'domain-resolution': 5 * 60_000,
  'container-image-availability': 5 * 60_000,
});

/** The setting that overrides a step's interval: STEP_REPEAT_CONNECTIVITY_CHECK_SECONDS for connectivity-check. */
export function stepRepeatSetting(type: string): string {
  return `STEP_REPEAT_${type.toUpperCase().replace(/-/g, '_')}_SECONDS`;
}

/** How early a poll may come and still find a step due (at most a tenth of the interval). */
export const EARLY_POLL_SLACK_MS = 5000;

const digests = new WeakMap<string[], string>();

/**
 * A short digest of a step's arguments; memoised per arguments array (the
 * poll reuses its cached ones). Deferred arguments come with their own.
 */
function argsDigest(args: string[] | { digest: string }): string {
  if (!Array.isArray(args)) return args.digest;
  let d = digests.get(args);
  if (d === undefined) {
    d = createHash('sha1').update(args.join('\u0000')).digest('base64url').slice(0, 16);
    digests.set(args, d);
  }
  return d;
}

/**
 * Whether to hand out this step now: first time, changed arguments, or its
 * repeat interval passed. Decided from what the host row remembers (its
 * step_sends), so every API replica answers a poll the same way; returns the
 * record to store when the step goes out ('due' for a step that does not repeat).
 */
export function dueNow(sends: StepSends, type: string, args: string[] | { digest: string }, nowMs: number, repeatMs: StepRepeatMs = DEFAULT_STEP_REPEAT_MS): { d: string; at: number } | 'due' | undefined {
  const mark = staleMark(type, args, nowMs, repeatMs);
  return mark ? dueBy(sends[type], mark, nowMs) : 'due';
}

/** dueNow for a repeating step whose stale mark is known: the record to store if it goes out now. */
export function dueBy(prev: { d: string; at: number } | undefined, mark: { d: string; stale: number }, nowMs: number): { d: string; at: number } | undefined {
  if (prev && prev.d === mark.d && prev.at > mark.stale) return undefined;
  return { d: mark.d, at: nowMs };
}

/**
 * A repeating step's argument digest, and the instant at or before which a
 * send of those arguments is stale (due again); undefined for a step that
 * does not repeat. The check-in applies the same rule in SQL (hosts-repo.ts).
 */
export function staleMark(type: string, args: string[] | { digest: string }, nowMs: number, repeatMs: StepRepeatMs = DEFAULT_STEP_REPEAT_MS): { d: string; stale: number } | undefined {
  const every = repeatMs[type];
  if (every === undefined) return undefined;
  // A poll that comes a little early still counts: agents poll every ~60 s, and a strict bound would let one
  // that arrives at 119.9 s of a 120 s interval wait a whole extra poll (every 3 minutes instead of 2).
  return { d: argsDigest(args), stale: nowMs - (every - Math.min(EARLY_POLL_SLACK_MS, every / 10)) };
}
