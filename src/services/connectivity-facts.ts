/**
 * What the service's checks read of connectivity reports, as digests: so
 * that a report whose latencies moved (a real agent's move every time) costs
 * neither a refresh of its cluster nor the O(n²) majority-group pass. The
 * checks themselves are pure (src/domain/lifecycle); the digests are here,
 * where hashing is allowed.
 */
import { createHash } from 'node:crypto';
import type { ConnectivityReport, HostFacts } from '../domain/lifecycle/facts';
import { hostAddressesIn, knownMajorityGroup, majorityGroupCached, reportReach } from '../domain/lifecycle/network';

const sha1 = () => createHash('sha1');

/**
 * Whom a host reached at L3, at which addresses, as a digest: what a peer's
 * check reads of its connectivity report (majority group, who cannot reach
 * whom), and unlike latency and loss the same from one report to the next.
 * Once per parsed report.
 */
const reachDigests = new WeakMap<object, string>();
export function reachDigest(f: HostFacts): string {
  if (!f.connectivity) return '';
  let t = reachDigests.get(f.connectivity);
  if (t === undefined) reachDigests.set(f.connectivity, (t = sha1().update(reachText(f.connectivity)).digest('base64url')));
  return t;
}

/** Every probed peer with the addresses it was reached at, sorted: the reach both digests cover, as the checks read it (reportReach). */
function reachText(report: ConnectivityReport): string {
  return [...reportReach(report)]
    .map(([peer, addresses]) => `${peer}=${[...addresses].sort().join(',')}`)
    .sort()
    .join(';');
}

/**
 * Groups by what they are computed from, across host lists: every member's
 * id, its addresses in the network and whom it reached where (reachDigest).
 * A cluster's refresh builds a new host list each time, and each connectivity
 * report (new latencies every time) started the O(n²) pass again: 1.5 ms of a
 * 50-host refresh (bench/refresh-cost --connectivity) for a group that had
 * not changed. Bounded: the oldest inputs leave first.
 */
const groupsByInputs = new Map<string, string[]>();
const GROUPS_KEPT = 4_096;

function groupInputs(hosts: HostFacts[], cidr: string): string {
  const h = sha1().update(cidr);
  for (const x of hosts) {
    const addresses = hostAddressesIn(x, cidr);
    if (addresses.length) h.update(`\u0000${x.id}\u0001${addresses.join(',')}\u0001${reachDigest(x)}`);
  }
  return h.digest('base64url');
}

/** The majority group of these hosts in `cidr`, computed only for inputs not seen before; the host checks then see it too (knownMajorityGroup). */
export function majorityGroupKept(hosts: HostFacts[], cidr: string): string[] {
  const key = groupInputs(hosts, cidr);
  const known = groupsByInputs.get(key);
  if (known) {
    knownMajorityGroup(hosts, cidr, known);
    return known;
  }
  const group = majorityGroupCached(hosts, cidr);
  groupsByInputs.set(key, group);
  if (groupsByInputs.size > GROUPS_KEPT) groupsByInputs.delete(groupsByInputs.keys().next().value!);
  return group;
}

/**
 * What a refresh reads of a connectivity report, as a digest: whom the host
 * probed and reached at which addresses and, when any probe is above the
 * lowest latency or loss a role tolerates (quietProbe), the whole report (the
 * checks then quote the figures). A real agent's report differs every time
 * (each ping's average moves) while, on a healthy network, all of that stays
 * the same: a reply whose digest did not change is stored without asking for
 * a refresh of its cluster, which would compute the same validations again.
 */
export function connectivityFactsDigest(report: ConnectivityReport, text: string, tolerated: { rttMs: number; lossPercent: number }): string {
  const h = sha1().update(reachText(report));
  const quiet = (report.remote_hosts ?? []).every((r) => (r.l3_connectivity ?? []).every((l) => (l.average_rtt_ms ?? 0) <= tolerated.rttMs && (l.packet_loss_percentage ?? 0) <= tolerated.lossPercent));
  if (!quiet) h.update('\u0000').update(text);
  return h.digest('base64url');
}
