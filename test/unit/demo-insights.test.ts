/**
 * The insights demo's scenarios (src/dev/demo-insights.ts) name only shipped
 * host profiles, and the profiles meant to fail, be fixed or block do so by
 * their definition: what `DEMO_INSIGHTS_CLUSTERS` promises in the README.
 */
import { DEMO_SCENARIOS } from '../../src/dev/demo-insights';
import { expandMix, loadProfile } from '../../agent/profiles';
import { successRule } from '../../src/domain/lifecycle/success-rule';

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

  it('flaky-disk fails its install whichever role its flaky host gets, so the retry always happens', () => {
    const s = DEMO_SCENARIOS.find((x) => x.key === 'flaky-disk')!;
    const profiles = expandMix(s.mix, s.count).map(loadProfile);
    const flaky = profiles.findIndex((p) => p.install?.fail_once);
    expect(flaky).toBeGreaterThanOrEqual(0);
    // Three control planes (the demo's clusters are highly available) among the hosts, every choice of them.
    const n = profiles.length;
    let cases = 0;
    for (let a = 0; a < n; a++)
      for (let b = a + 1; b < n; b++)
        for (let c = b + 1; c < n; c++) {
          const hosts = profiles.map((_p, i) => ({ role: [a, b, c].includes(i) ? 'master' : 'worker', status: i === flaky ? 'error' : 'installed' }));
          expect(successRule(3, hosts)).toBe('impossible');
          cases++;
        }
    expect(cases).toBeGreaterThan(0);
  });
});
