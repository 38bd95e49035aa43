/** The disconnect rule's arithmetic: the part of a host's silence the service excused while it turned agents away. */
import { excusedSilenceMs, isConnected, SHED_GRACE_MS } from '../../src/domain/lifecycle/silence';

const MIN = 60_000;
const now = 100 * MIN;

describe('excusedSilenceMs', () => {
  it('excuses nothing without an episode, or for an episode that ended (with its grace) before the last poll', () => {
    expect(excusedSilenceMs(now - 10 * MIN, now, undefined)).toBe(0);
    expect(excusedSilenceMs(now - 2 * MIN, now, { startedAtMs: now - 20 * MIN, lastAtMs: now - 2 * MIN - SHED_GRACE_MS - 1 })).toBe(0);
  });

  it('excuses the silence from the episode start when the host went silent before it', () => {
    // Silent 10 min; refusals from 8 min ago until 5 min ago, plus the grace.
    expect(excusedSilenceMs(now - 10 * MIN, now, { startedAtMs: now - 8 * MIN, lastAtMs: now - 5 * MIN })).toBe(3 * MIN + SHED_GRACE_MS);
  });

  it('excuses the silence from the last poll when it fell inside the episode, up to now for an episode still going', () => {
    expect(excusedSilenceMs(now - 4 * MIN, now, { startedAtMs: now - 8 * MIN, lastAtMs: now - 1000 })).toBe(4 * MIN);
  });
});

describe('isConnected', () => {
  const timeout = 3 * MIN;
  it('is the plain timeout without excused time, and never for a host that never polled', () => {
    expect(isConnected({ sinceCheckInMs: timeout }, timeout)).toBe(true);
    expect(isConnected({ sinceCheckInMs: timeout + 1 }, timeout)).toBe(false);
    expect(isConnected({ sinceCheckInMs: undefined, excusedSilenceMs: 10 * MIN }, timeout)).toBe(false);
  });
  it('does not count the excused part', () => {
    expect(isConnected({ sinceCheckInMs: 10 * MIN, excusedSilenceMs: 8 * MIN }, timeout)).toBe(true);
    expect(isConnected({ sinceCheckInMs: 10 * MIN, excusedSilenceMs: 6 * MIN }, timeout)).toBe(false);
  });
});
