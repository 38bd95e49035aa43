/**
 * What a cluster's refresh derives of its hosts' networks (the step view's
 * stamp, the machine network, majority groups, VIP suggestions), kept per
 * cluster in this process with the inputs it was derived from, as text.
 *
 * Under agents that report often the refresher refreshes each cluster every
 * second or so, and most reports change nothing a network is derived from
 * (a memory size, a disk, a clock): each refresh still hashed every host's
 * NICs twice and walked every host's networks (bench/refresh-cost, profiled:
 * stepViewStamp and deriveNetworks were 8.6 % of its busy time, all for
 * answers it already had). Each input's text is made once per parsed report
 * (WeakMaps on the report), so the key is fifty short concatenations.
 *
 * Only a refresh that found nothing to write is kept: a kept entry says
 * "with these inputs, the stored stamp and networks are current". A lost
 * entry costs the derivation, never an answer.
 */
import type { ClusterRow } from '../db/rows';
import { inventoryView, type HostFacts } from '../domain/lifecycle/facts';
import { reachDigest } from './connectivity-facts';

type Json = Record<string, unknown>;

/**
 * A host's addressed NICs as text (name, MAC, IPv4 addresses), once per
 * inventory view: what peers' checks read of it, what the poll's step view
 * shows of it (the step view's stamp) and every network derived from it.
 */
const nicsText = new WeakMap<object, string>();
export function addressedNics(f: HostFacts): string {
  const nics = inventoryView(f)?.interfaces;
  if (!nics) return '';
  let t = nicsText.get(nics);
  if (t === undefined) nicsText.set(nics, (t = nics.filter((i) => i.ipv4_addresses?.length).map((i) => `\u0001${i.name}\u0001${i.mac_address}\u0001${i.ipv4_addresses.join(',')}`).join('')));
  return t;
}

/**
 * Everything the derivation reads, as text: the cluster's own fields it
 * reads (and the derived values as stored, which it compares against), and
 * per host its id, whether it has an inventory, its addressed NICs (its
 * networks and addresses), whom it reached (reachDigest) and its free
 * addresses report (`freeDigests[i]`: the digest its text was kept under).
 * A derivation that starts reading something else must add it here.
 */
export function networkInputs(cluster: ClusterRow, hosts: HostFacts[], freeDigests: Array<string | undefined>): string {
  const d = cluster.doc as Json;
  let key = JSON.stringify([
    cluster.name,
    cluster.step_view_stamp ?? null,
    d.base_dns_domain ?? null,
    d.additional_ntp_source ?? null,
    d.machine_networks ?? null,
    d.api_vips ?? null,
    d.user_managed_networking ?? null,
    d.connectivity_majority_groups ?? null,
    d.network_suggestions ?? null,
  ]);
  for (let i = 0; i < hosts.length; i++) {
    const f = hosts[i]!;
    key += `\u0000${f.id}\u0002${inventoryView(f) ? 'v' : ''}${addressedNics(f)}\u0002${reachDigest(f)}\u0002${freeDigests[i] ?? ''}`;
  }
  return key;
}

interface Derived {
  key: string;
  /** The majority group of each network, as the derivation found it: a refresh that skips it tells the host checks (knownMajorityGroup). */
  groups: Array<[string, string[]]>;
}

/** Bounded: a process that refreshes only now and then keeps few, the refresher every cluster of a large fleet. */
const KEPT = 20_000;
const kept = new Map<string, Derived>();

/** The groups kept for this cluster when its inputs are still `key` (undefined: derive again). */
export function derivedFor(clusterId: string, key: string): Derived['groups'] | undefined {
  const d = kept.get(clusterId);
  return d?.key === key ? d.groups : undefined;
}

/** How many derivations this process ran (each ends in keepDerived or forgetDerived): what the memo saves is the refreshes that ran none. */
let derivations = 0;
export function derivationsRun(): number {
  return derivations;
}

/** After a derivation that changed nothing stored: its inputs and groups. */
export function keepDerived(clusterId: string, key: string, groups: Derived['groups']): void {
  derivations++;
  kept.delete(clusterId);
  kept.set(clusterId, { key, groups });
  if (kept.size > KEPT) kept.delete(kept.keys().next().value!);
}

/** After a derivation that wrote something: the next refresh derives again. */
export function forgetDerived(clusterId: string): void {
  derivations++;
  kept.delete(clusterId);
}
