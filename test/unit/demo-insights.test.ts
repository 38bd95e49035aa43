/**
 * The insights demo's scenarios (src/dev/demo-insights.ts) name only shipped
 * host profiles, and the profiles meant to fail, be fixed or block do so by
 * their definition: what `DEMO_INSIGHTS_CLUSTERS` promises in the README.
 */
import { DEMO_SCENARIOS } from '../../src/dev/demo-insights';
import { expandMix, loadProfile } from '../../agent/profiles';

describe('insights demo scenarios', () => {
  it.each(DEMO_SCENARIOS.map((s) => [s.key, s] as const))('%s uses shipped profiles', (_key, s) => {
    const names = expandMix(s.mix, s.count);
    expect(names).toHaveLength(s.count);
    for (const n of names) expect(loadProfile(n).name).toBe(n);
    if (s.singleNode) expect(s.count).toBe(1);
  });

  it('covers success, a retried failure, a failure left failed, a fixed host, a cancel and a host that never qualifies', () => {
    const byKey = Object.fromEntries(DEMO_SCENARIOS.map((s) => [s.key, s]));
    const profilesOf = (key: string) => expandMix(byKey[key]!.mix, byKey[key]!.count).map(loadProfile);
    expect(profilesOf('flaky-disk').some((p) => p.install?.fail_once && p.install.fail_at_stage)).toBe(true);
    expect(byKey['flaky-disk']!.onFailure).toBe('retry');
    expect(profilesOf('broken-sno').every((p) => p.install?.fail_at_stage && !p.install.fail_once)).toBe(true);
    expect(profilesOf('renamed-host').some((p) => /_/.test(p.name))).toBe(true);
    expect(byKey['renamed-host']!.fixes?.map((f) => f.action)).toEqual(['rename']);
    expect(byKey.cancelled!.cancelAfterSeconds).toBeGreaterThan(0);
    expect(profilesOf('undersized').some((p) => p.cpu.count < 2)).toBe(true);
    expect(byKey.undersized!.install).toBe(false);
    expect(new Set(DEMO_SCENARIOS.map((s) => s.release)).size).toBeGreaterThanOrEqual(3);
  });
});
