import { buildClusterView as buildFromPeers, stepViewPeers } from '../../src/services/step-args';
import { DEFAULT_STEP_REPEAT_MS, dueNow, stepRepeatSetting } from '../../src/services/step-cadence';
import { parseConfig } from '../../src/config';

const inventory = (n: number) => JSON.stringify({ interfaces: [{ name: 'eth0', mac_address: `52:54:00:00:00:${n.toString(16).padStart(2, '0')}`, ipv4_addresses: [`10.0.0.${n}/24`] }] });
const hosts = Array.from({ length: 12 }, (_, i) => ({ id: `00000000-0000-4000-8000-${String(i * 7919).padStart(12, '0')}`, inventory: inventory(i + 1) }));
const cluster = { name: 'c', doc: { base_dns_domain: 'example.com', machine_networks: [{ cidr: '10.0.0.0/24' }] } };
/** The view from host rows, as a poll builds it where no refresh stored one. */
const buildClusterView = (f: string, c: typeof cluster, rows: typeof hosts) => buildFromPeers(f, c, stepViewPeers(rows.map((h) => ({ id: h.id, interfaces: (JSON.parse(h.inventory) as { interfaces: [] }).interfaces }))));

function shuffled<T>(xs: T[], seed: number): T[] {
  const out = [...xs];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

describe('the connectivity peer list', () => {
  it('is the same whatever order the database returns the rows in', () => {
    const first = buildClusterView('f', cluster, hosts);
    for (const seed of [1, 2, 3, 4, 5]) {
      const other = buildClusterView('f', cluster, shuffled(hosts, seed));
      expect(other.peers).toEqual(first.peers);
    }
    expect(first.peers.map((p) => p.host_id)).toEqual([...hosts.map((h) => h.id)].sort());
  });

  it('so a step whose peers did not change is not handed out again within its interval', () => {
    const now = 1_000_000;
    const args = (view: ReturnType<typeof buildClusterView>) => [JSON.stringify(view.peers)];
    const sent = dueNow({}, 'connectivity-check', args(buildClusterView('f', cluster, hosts)), now);
    expect(sent).toMatchObject({ at: now });
    const sends = { 'connectivity-check': sent as { d: string; at: number } };
    // Rows returned in another order a minute later: the same arguments, not due.
    expect(dueNow(sends, 'connectivity-check', args(buildClusterView('f', cluster, shuffled(hosts, 9))), now + 60_000)).toBeUndefined();
    // A peer left: changed arguments go out at once.
    expect(dueNow(sends, 'connectivity-check', args(buildClusterView('f', cluster, hosts.slice(1))), now + 60_000)).toMatchObject({ at: now + 60_000 });
    // Unchanged, once the interval passed.
    expect(dueNow(sends, 'connectivity-check', args(buildClusterView('f', cluster, hosts)), now + DEFAULT_STEP_REPEAT_MS['connectivity-check']!)).toMatchObject({ at: now + 120_000 });
  });
});

describe('step repeat intervals as settings', () => {
  it('has a setting per repeating step, read from the environment, in seconds', () => {
    for (const type of Object.keys(DEFAULT_STEP_REPEAT_MS)) {
      const cfg = parseConfig({ [stepRepeatSetting(type)]: '45' });
      expect(cfg.stepRepeatSeconds[type]).toBe(45);
      expect(parseConfig({}).stepRepeatSeconds[type]).toBe(DEFAULT_STEP_REPEAT_MS[type]! / 1000);
    }
  });

  it('refuses a negative or non-numeric interval', () => {
    expect(() => parseConfig({ STEP_REPEAT_NTP_SYNCHRONIZER_SECONDS: '-1' })).toThrow();
    expect(() => parseConfig({ STEP_REPEAT_NTP_SYNCHRONIZER_SECONDS: 'often' })).toThrow();
  });

  it('0 hands a step out on every poll; a custom interval is honoured', () => {
    const args = ['x'];
    const first = dueNow({}, 'ntp-synchronizer', args, 0, { 'ntp-synchronizer': 0 }) as { d: string; at: number };
    expect(dueNow({ 'ntp-synchronizer': first }, 'ntp-synchronizer', args, 1, { 'ntp-synchronizer': 0 })).toBeDefined();
    expect(dueNow({ 'ntp-synchronizer': first }, 'ntp-synchronizer', args, 30_000, { 'ntp-synchronizer': 60_000 })).toBeUndefined();
    expect(dueNow({ 'ntp-synchronizer': first }, 'ntp-synchronizer', args, 60_000, { 'ntp-synchronizer': 60_000 })).toBeDefined();
  });

  it('counts a poll that comes a little early (the agents poll every ~60 s): a 2-minute step goes out every second poll', () => {
    const args = ['x'];
    const first = dueNow({}, 'ntp-synchronizer', args, 0) as { d: string; at: number };
    // Polls at 59.8 s and 119.7 s (each a little early): the second one gets it.
    expect(dueNow({ 'ntp-synchronizer': first }, 'ntp-synchronizer', args, 59_800)).toBeUndefined();
    expect(dueNow({ 'ntp-synchronizer': first }, 'ntp-synchronizer', args, 119_700)).toBeDefined();
    // But never much before its interval.
    expect(dueNow({ 'ntp-synchronizer': first }, 'ntp-synchronizer', args, 110_000)).toBeUndefined();
  });
});
