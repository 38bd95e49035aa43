/**
 * The refresher keeps each host's inventory as its text and a small parsed
 * view (src/services/facts-builder.ts KeptInventory, src/domain/lifecycle/facts.ts
 * InventoryView). Facts built from that copy must decide exactly what facts
 * built from the stored row decide: every check, the suggested roles, the
 * networks. And the copy must not hold the parsed whole.
 */
import { clusterFacts, hostFacts, keepReports, KeptInventory, rememberReport, type ReportMemo } from '../../src/services/facts-builder';
import { inventoryView, type HostFacts } from '../../src/domain/lifecycle/facts';
import { HOST_VALIDATIONS } from '../../src/domain/lifecycle/host-validations';
import { CLUSTER_VALIDATIONS } from '../../src/domain/lifecycle/cluster-validations';
import { DEFAULT_LIFECYCLE_SETTINGS } from '../../src/domain/lifecycle/requirements';
import { deriveMachineNetwork, hostNetworks, suggestRoles } from '../../src/domain/lifecycle/network';
import type { Inventory } from '../../agent/types';
import type { ClusterRow, HostRow } from '../../src/db/rows';
import { inventoryFor } from '../../bench/inventory';

const NOW = Date.parse('2026-11-29T12:00:00Z');

/** Host i of a cluster, with the bench's full inventory (disks with SMART reports, NICs, routes). */
function row(i: number, overrides: Partial<HostRow> = {}): HostRow {
  const inv = JSON.parse(inventoryFor(`host-${i}`, i)) as Inventory;
  // Host 4 is small in CPU and memory, host 5 in CPU only.
  if (i === 4 || i === 5) inv.cpu.count = 1;
  if (i === 4) inv.memory.physical_bytes = 8 * 1024 ** 3;
  return {
    id: `00000000-0000-0000-0000-00000000000${i}`,
    infra_env_id: 'ie',
    cluster_id: 'c',
    status: 'known',
    status_info: '',
    status_updated_at: new Date(NOW),
    role: 'auto-assign',
    suggested_role: i < 3 ? 'master' : 'worker',
    bootstrap: false,
    requested_hostname: null,
    inventory: JSON.stringify(inv),
    doc: {},
    checked_in_at: new Date(NOW - 5_000),
    agent_timestamp: String(NOW / 1000),
    discovery_agent_version: null,
    created_at: new Date(NOW - 60_000),
    updated_at: new Date(NOW - 60_000),
    ...overrides,
  };
}

const cluster = { id: 'c', name: 'c', status: 'insufficient', openshift_version: '4.18', pull_secret: 'x', doc: { control_plane_count: 3, base_dns_domain: 'example.com' } } as unknown as ClusterRow;

/** Facts as the refresher builds them: the large columns taken into a memo (keepReports), the row without its inventory text. */
function keptFacts(r: HostRow, memo: ReportMemo = new Map()): HostFacts {
  const doc = keepReports(r.inventory, r.doc as Record<string, unknown>, memo);
  return hostFacts({ ...r, inventory: null, doc }, NOW, memo);
}

/** Everything a refresh decides from facts: each host's checks, the cluster's, the suggested roles and networks. */
function decisions(hosts: HostFacts[]) {
  const c = clusterFacts(cluster, hosts);
  c.machineNetworks = [deriveMachineNetwork(hosts)!];
  const settings = DEFAULT_LIFECYCLE_SETTINGS;
  return {
    hosts: hosts.map((h) => HOST_VALIDATIONS.map((v) => ({ id: v.id, ...v.check(h, { cluster: c, settings }) }))),
    cluster: CLUSTER_VALIDATIONS.map((v) => ({ id: v.id, ...v.check(c, { settings, hostResults: new Map() }) })),
    roles: [...suggestRoles(c, settings.requirements.master)],
    networks: hosts.map(hostNetworks),
  };
}

describe('the refresher\'s kept inventory', () => {
  it('decides what facts from the stored row decide: every check, roles and networks', () => {
    const rows = [0, 1, 2, 3, 4].map((i) => row(i));
    const fromRows = decisions(rows.map((r) => hostFacts(r, NOW)));
    const memos = rows.map((): ReportMemo => new Map());
    const fromKept = decisions(rows.map((r, i) => keptFacts(r, memos[i])));
    expect(fromKept).toEqual(fromRows);
    // A later refresh, nothing read again: each host's own checks parse its kept text.
    const whole = jest.spyOn(KeptInventory.prototype, 'whole');
    try {
      const fromCopy = decisions(rows.map((r, i) => hostFacts({ ...r, inventory: null, doc: {} }, NOW, memos[i])));
      expect(fromCopy).toEqual(fromRows);
      expect(whole).toHaveBeenCalledTimes(rows.length);
    } finally {
      whole.mockRestore();
    }
    // Not vacuous: the small host fails its hardware checks and is not suggested master.
    expect(fromRows.hosts[4]!.find((r) => r.id === 'has-min-cpu-cores')!.status).toBe('failure');
    expect(fromRows.roles).toContainEqual([rows[4]!.id, 'worker']);
    expect(fromRows.networks[0]!.length).toBeGreaterThan(0);
  });

  it('suggests the roles facts from the stored row suggest, from the view of every host', () => {
    // Three hosts for three control-plane places, none suggested yet: each place goes to a host that qualifies, and the small one does not.
    const rows = [0, 1, 5].map((i) => row(i, { suggested_role: 'auto-assign' }));
    const fromRows = decisions(rows.map((r) => hostFacts(r, NOW)));
    const fromKept = decisions(rows.map((r) => keptFacts(r)));
    expect(fromKept.roles).toEqual(fromRows.roles);
    expect(new Map(fromRows.roles)).toEqual(new Map([[rows[0]!.id, 'master'], [rows[1]!.id, 'master'], [rows[2]!.id, 'worker']]));
  });

  it('keeps the text and a view, and parses the whole again for each facts that read it', () => {
    const r = row(1);
    const memo: ReportMemo = new Map();
    const first = keptFacts(r, memo);
    const kept = memo.get('inventory')!.value;
    expect(kept).toBeInstanceOf(KeptInventory);
    const stored = JSON.parse(r.inventory!) as Inventory;
    // The view: what every refresh reads of every host.
    expect(first.view).toEqual({
      hostname: 'host-1',
      cpuCount: stored.cpu.count,
      physicalBytes: stored.memory.physical_bytes,
      largestEligibleDiskBytes: Math.max(...stored.disks.map((d) => d.size_bytes)),
      interfaces: stored.interfaces.map((i) => ({ name: i.name, mac_address: i.mac_address, ipv4_addresses: i.ipv4_addresses })),
    });
    expect(first.hostname).toBe('host-1');
    // The parse made when the text was read goes to the facts of that refresh.
    expect(first.inventory).toEqual(stored);
    // The next refresh (same text, nothing read again) parses it on first read, each time anew: nothing holds it.
    const second = hostFacts({ ...r, inventory: null, doc: {} }, NOW, memo);
    const third = hostFacts({ ...r, inventory: null, doc: {} }, NOW, memo);
    expect(second.inventory).toEqual(stored);
    expect(second.inventory).not.toBe(first.inventory);
    expect(third.inventory).not.toBe(second.inventory);
    // Read twice, the same facts give the same object (parsed once).
    expect(second.inventory).toBe(second.inventory);
  });

  it('does not parse the whole for a spread of the facts, and takes an assigned inventory', () => {
    const memo: ReportMemo = new Map();
    keptFacts(row(2), memo);
    const facts = hostFacts({ ...row(2), inventory: null, doc: {} }, NOW, memo);
    const whole = jest.spyOn(KeptInventory.prototype, 'whole');
    try {
      const copy = { ...facts, status: 'insufficient' };
      expect(Object.keys(copy)).not.toContain('inventory');
      expect(Object.getOwnPropertySymbols(copy)).toEqual([]);
      expect(inventoryView(copy)).toBe(facts.view);
      expect(whole).not.toHaveBeenCalled();
      // The disk decision assigns the inventory it changed: that one is read after, and the view derived from it.
      const changed = { ...(JSON.parse(row(2).inventory!) as Inventory), hostname: 'renamed' };
      facts.inventory = changed;
      expect(facts.view).toBeUndefined();
      expect(facts.inventory).toBe(changed);
      expect(inventoryView(facts)!.hostname).toBe('renamed');
      expect(whole).not.toHaveBeenCalled();
    } finally {
      whole.mockRestore();
    }
  });

  it('remembers an inventory the refresh wrote itself, and a text that is not an inventory as none', () => {
    const memo: ReportMemo = new Map();
    const inv = JSON.parse(row(3).inventory!) as Inventory;
    inv.disks[0]!.installation_eligibility = { eligible: false, not_eligible_reasons: ['Disk is too small'] };
    rememberReport(memo, 'inventory', JSON.stringify(inv), inv);
    const facts = hostFacts({ ...row(3), inventory: null, doc: {} }, NOW, memo);
    expect(facts.inventory).toEqual(inv);
    expect(facts.inventory).not.toBe(inv);
    expect(facts.view!.largestEligibleDiskBytes).toBe(Math.max(...inv.disks.slice(1).map((d) => d.size_bytes)));

    const broken = new Map() as ReportMemo;
    keepReports('{not json', {}, broken);
    const none = hostFacts({ ...row(3), inventory: null, doc: {} }, NOW, broken);
    expect(none.inventory).toBeUndefined();
    expect(inventoryView(none)).toBeUndefined();
    expect(HOST_VALIDATIONS.find((v) => v.id === 'has-inventory')!.check(none, { cluster: undefined, settings: DEFAULT_LIFECYCLE_SETTINGS }).status).toBe('pending');
  });
});
