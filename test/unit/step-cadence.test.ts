import { buildClusterView as buildFromPeers, connectivityArgs, stepViewPeers } from '../../src/services/step-args';
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
    const me = hosts[3]!.id;
    const args = (view: ReturnType<typeof buildClusterView>) => connectivityArgs(view, me, now)!;
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

describe("a host's connectivity check", () => {
  const view = () => buildClusterView('f', cluster, hosts);
  /** What the upstream agent expects: every other peer with IPv4 NICs, addresses without their prefix. */
  const expected = (rows: typeof hosts, me: string) =>
    JSON.stringify(
      stepViewPeers(rows.map((h) => ({ id: h.id, interfaces: (JSON.parse(h.inventory) as { interfaces: [] }).interfaces })))
        .filter((p) => p.host_id !== me && p.nics.length)
        .map((p) => ({ host_id: p.host_id, nics: p.nics.map((n) => ({ ...n, ip_addresses: n.ip_addresses.map((a) => a.split('/')[0]) })) })),
    );

  it('names every other peer with its bare addresses', () => {
    for (const h of [hosts[0]!, hosts[7]!, hosts[11]!]) {
      const a = connectivityArgs(view(), h.id, 0)!;
      expect(a.build()).toEqual([expected(hosts, h.id)]);
      const peers = JSON.parse(a.build()[0]!) as Array<{ host_id: string; nics: Array<{ ip_addresses: string[] }> }>;
      expect(peers).toHaveLength(11);
      expect(peers.map((p) => p.host_id)).not.toContain(h.id);
      expect(peers[0]!.nics[0]!.ip_addresses[0]).toMatch(/^10\.0\.0\.\d+$/);
    }
  });

  it('leaves out peers without IPv4 addresses, and has none for a host alone or outside the view', () => {
    const bare = { id: '00000000-0000-4000-8000-999999999999', inventory: JSON.stringify({ interfaces: [{ name: 'eth0', mac_address: '52:54:00:00:01:00', ipv4_addresses: [] }] }) };
    const rows = [...hosts, bare];
    const v = buildClusterView('f', cluster, rows);
    expect(connectivityArgs(v, hosts[0]!.id, 0)!.build()).toEqual([expected(rows, hosts[0]!.id)]);
    expect(JSON.parse(connectivityArgs(v, hosts[0]!.id, 0)!.build()[0]!)).toHaveLength(11);
    // The peer without addresses still probes the others.
    expect(JSON.parse(connectivityArgs(v, bare.id, 0)!.build()[0]!)).toHaveLength(12);
    expect(connectivityArgs(buildClusterView('f', cluster, hosts.slice(0, 1)), hosts[0]!.id, 0)).toBeUndefined();
    expect(connectivityArgs(v, '00000000-0000-4000-8000-000000000bad', 0)).toBeUndefined();
  });

  it("has a digest that moves with any peer's addresses, the host's own too, and not with row order", () => {
    const me = hosts[2]!.id;
    const d = connectivityArgs(view(), me, 0)!.digest;
    expect(connectivityArgs(buildClusterView('g', cluster, shuffled(hosts, 4)), me, 0)!.digest).toBe(d);
    const moved = (i: number) => hosts.map((h, j) => (j === i ? { ...h, inventory: inventory(200 + i) } : h));
    expect(connectivityArgs(buildClusterView('f', cluster, moved(5)), me, 0)!.digest).not.toBe(d);
    expect(connectivityArgs(buildClusterView('f', cluster, moved(2)), me, 0)!.digest).not.toBe(d);
  });

  it('past 150 peers, probes a sample of 150 that rotates each minute, the minute in its digest', () => {
    const many = Array.from({ length: 200 }, (_, i) => ({ id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, inventory: inventory((i % 250) + 1) }));
    const v = buildClusterView('f', cluster, many);
    const me = many[10]!.id;
    const at = (ms: number) => connectivityArgs(v, me, ms)!;
    const ids = (ms: number) => (JSON.parse(at(ms).build()[0]!) as Array<{ host_id: string }>).map((p) => p.host_id);
    expect(ids(0)).toHaveLength(150);
    expect(ids(0)).not.toContain(me);
    expect(ids(59_000)).toEqual(ids(0));
    expect(at(59_000).digest).toBe(at(0).digest);
    expect(ids(60_000)).not.toEqual(ids(0));
    expect(at(60_000).digest).not.toBe(at(0).digest);
    // Over the minutes every peer is probed.
    const seen = new Set<string>();
    for (let m = 0; m < 199; m++) for (const id of ids(m * 60_000)) seen.add(id);
    expect(seen.size).toBe(199);
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
