/**
 * Network facts derived from what hosts report: the machine network, who can
 * reach whom (majority groups), free addresses as VIP suggestions, roles for
 * auto-assign hosts. Pure functions over facts.
 */
import { ipInCidr } from '../input-rules';
import { DEFAULT_REQUIREMENTS, type RoleRequirements } from './requirements';
import { inventoryView, type ClusterFacts, type ConnectivityReport, type HostFacts } from './facts';

/** "192.168.1.20/24" → "192.168.1.0/24" (IPv4; IPv6 kept as given). */
export function networkOf(cidrAddress: string): string {
  const [ip, prefixText] = cidrAddress.split('/') as [string, string];
  if (!ip.includes('.')) return cidrAddress;
  const prefix = Number(prefixText);
  const n = ip.split('.').reduce((a, o) => (a << 8) + Number(o), 0) >>> 0;
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  const net = (n & mask) >>> 0;
  return `${net >>> 24}.${(net >>> 16) & 255}.${(net >>> 8) & 255}.${net & 255}/${prefix}`;
}

const networksCache = new WeakMap<object, string[]>();

export function hostNetworks(h: HostFacts): string[] {
  const nics = inventoryView(h)?.interfaces;
  if (!nics) return [];
  let out = networksCache.get(nics);
  if (!out) networksCache.set(nics, (out = [...new Set(nics.flatMap((i) => i.ipv4_addresses.map(networkOf)))]));
  return out;
}

/*
 * Memoised on the parsed report (the inventory view's interfaces), not on the
 * facts object: the refresher keeps a host's inventory view and connectivity
 * report from one refresh to the next while their text is unchanged
 * (facts-builder ReportMemo), so a cluster refresh recomputes these only for
 * the hosts that reported.
 */
const addressCache = new WeakMap<object, Map<string, string[]>>();

/** The host's addresses inside `cidr`; memoised per inventory view, since refresh asks for every pair of hosts. */
export function hostAddressesIn(h: HostFacts, cidr: string): string[] {
  const nics = inventoryView(h)?.interfaces;
  if (!nics) return [];
  let perCidr = addressCache.get(nics);
  if (!perCidr) addressCache.set(nics, (perCidr = new Map()));
  let out = perCidr.get(cidr);
  if (!out) perCidr.set(cidr, (out = nics.flatMap((i) => i.ipv4_addresses.map((a) => a.split('/')[0]!)).filter((ip) => ipInCidr(ip, cidr))));
  return out;
}

const reachCache = new WeakMap<object, Map<string, Set<string>>>();
const NOTHING_REACHED = new Map<string, Set<string>>();

/** Per reporting host: peer id → the peer addresses it reached at L3. */
export function reachedAddresses(from: HostFacts): Map<string, Set<string>> {
  return from.connectivity ? reportReach(from.connectivity) : NOTHING_REACHED;
}

/** reachedAddresses of one connectivity report, memoised per parsed report. */
export function reportReach(report: ConnectivityReport): Map<string, Set<string>> {
  let m = reachCache.get(report);
  if (!m) {
    m = new Map();
    for (const r of report.remote_hosts ?? []) m.set(r.host_id, new Set((r.l3_connectivity ?? []).filter((l) => l.successful).map((l) => l.remote_ip_address)));
    reachCache.set(report, m);
  }
  return m;
}

/** The network most hosts have an address in; ties go to the one listed first. Undefined without inventories. */
export function deriveMachineNetwork(hosts: HostFacts[]): string | undefined {
  const counts = new Map<string, number>();
  for (const h of hosts) for (const n of hostNetworks(h)) counts.set(n, (counts.get(n) ?? 0) + 1);
  let best: string | undefined;
  for (const [n, c] of counts) if (best === undefined || c > counts.get(best)!) best = n;
  return best;
}

/** Whether `from` reported a successful L3 probe to an address of `to` inside `cidr`. */
export function reaches(from: HostFacts, to: HostFacts, cidr: string): boolean {
  const reached = reachedAddresses(from).get(to.id);
  return Boolean(reached && hostAddressesIn(to, cidr).some((a) => reached.has(a)));
}

/**
 * The largest set of hosts in `cidr` that all reach each other both ways
 * (greedy by reach count, fine for the tens to hundreds of hosts of a cluster).
 */
const groupCache = new WeakMap<HostFacts[], Map<string, string[]>>();

/** majorityGroup, computed once per host list and network (every host's validation asks the same question). */
export function majorityGroupCached(hosts: HostFacts[], cidr: string): string[] {
  let perCidr = groupCache.get(hosts);
  if (!perCidr) groupCache.set(hosts, (perCidr = new Map()));
  let group = perCidr.get(cidr);
  if (!group) perCidr.set(cidr, (group = majorityGroup(hosts, cidr)));
  return group;
}

/**
 * A group the caller already has for these hosts and network (computed for
 * the same inputs before: src/services/connectivity-facts.ts): what
 * majorityGroupCached answers for this host list from now on, without its
 * O(n²) pass.
 */
export function knownMajorityGroup(hosts: HostFacts[], cidr: string, group: string[]): void {
  let perCidr = groupCache.get(hosts);
  if (!perCidr) groupCache.set(hosts, (perCidr = new Map()));
  perCidr.set(cidr, group);
}

export function majorityGroup(hosts: HostFacts[], cidr: string): string[] {
  const members = hosts.filter((h) => hostAddressesIn(h, cidr).length > 0);
  // Who reaches whom both ways, each pair asked once (the greedy pass below asks again and again).
  const mutual = new Map<string, Set<string>>(members.map((h) => [h.id, new Set<string>()]));
  for (let i = 0; i < members.length; i++) {
    const a = members[i]!;
    if (!a.connectivity) continue;
    for (let j = i + 1; j < members.length; j++) {
      const b = members[j]!;
      if (reaches(a, b, cidr) && reaches(b, a, cidr)) {
        mutual.get(a.id)!.add(b.id);
        mutual.get(b.id)!.add(a.id);
      }
    }
  }
  const ordered = [...members].sort((a, b) => mutual.get(b.id)!.size - mutual.get(a.id)!.size || a.id.localeCompare(b.id));
  const group: HostFacts[] = [];
  for (const h of ordered) if (group.every((g) => mutual.get(g.id)!.has(h.id))) group.push(h);
  return group.map((h) => h.id).sort();
}

/** Addresses every reporting host saw free in the network, as API/Ingress VIP suggestions. */
export function vipSuggestions(freeByHost: Array<Array<{ network: string; free_addresses: string[] }>>, cidr: string): string[] {
  const lists = freeByHost.map((r) => new Set(r.find((n) => n.network === cidr)?.free_addresses ?? [])).filter((s) => s.size > 0);
  if (!lists.length) return [];
  return [...lists[0]!].filter((ip) => lists.every((s) => s.has(ip))).slice(0, 2);
}

/** The ordering weight of reference §8: smallest sufficient hosts become control plane first. */
export function roleWeight(h: HostFacts): number {
  const v = inventoryView(h);
  if (!v) return Number.POSITIVE_INFINITY;
  return v.cpuCount - 4 + 0.1 * (v.physicalBytes / 1024 ** 3 - 16) + 0.004 * (v.largestEligibleDiskBytes / 1024 ** 3 - 100);
}

/** Against the master requirements in force (HOST_REQUIREMENTS_FILE may lower or raise them), the defaults otherwise. */
export function meetsMaster(h: HostFacts, req: RoleRequirements = DEFAULT_REQUIREMENTS.master): boolean {
  const v = inventoryView(h);
  return Boolean(v && v.cpuCount >= req.cpuCores && v.physicalBytes / 1024 ** 2 >= req.ramMib * 0.98 - 100);
}

/**
 * Suggested roles for auto-assign hosts: masters while fewer than the
 * control-plane count (counting hosts the user made masters), the rest workers.
 *
 * A suggestion sticks, as assisted-service's (host.go `selectRole` counts the
 * other hosts already master by role or by suggestion, so a host suggested
 * master stays one while it qualifies): hosts already suggested master keep
 * it first, and only the places left go to the smallest sufficient hosts
 * (reference §8 ordering). Re-ranking every host on each refresh made the
 * suggestions flap whenever a host's hardware moved (a memory report 1 GiB up
 * could swap two masters), which a user sees as roles changing under them,
 * and each flap re-validated and rewrote every host of the cluster.
 */
export function suggestRoles(cluster: ClusterFacts, masterReq: RoleRequirements = DEFAULT_REQUIREMENTS.master): Map<string, string> {
  const out = new Map<string, string>();
  let masters = cluster.hosts.filter((h) => h.role === 'master').length;
  const auto = cluster.hosts.filter((h) => h.role === 'auto-assign').sort((a, b) => roleWeight(a) - roleWeight(b) || a.id.localeCompare(b.id));
  const place = (h: HostFacts) => {
    if (masters < cluster.controlPlaneCount && meetsMaster(h, masterReq)) {
      out.set(h.id, 'master');
      masters++;
    }
  };
  for (const h of auto) if (h.suggestedRole === 'master') place(h);
  for (const h of auto) if (!out.has(h.id)) place(h);
  for (const h of auto) if (!out.has(h.id)) out.set(h.id, inventoryView(h) ? 'worker' : 'auto-assign');
  return out;
}

/** The lowest latency and loss any role tolerates without a warning: below both, a probe's figures change no check. */
export function quietProbe(requirements: Record<string, RoleRequirements>): { rttMs: number; lossPercent: number } {
  const all = Object.values(requirements);
  return { rttMs: Math.min(...all.map((r) => r.rttSoftMs)), lossPercent: Math.min(...all.map((r) => r.lossSoftPercent)) };
}
