/**
 * Reading the JSON-string fields the API carries (inventory, validations_info,
 * validation_remediation, network_suggestions) into what the pages show.
 * Every parser tolerates a missing or malformed field: a page never breaks on one.
 */
import type { Cluster, Host } from './api';

function parse<T>(s: string | undefined): T | undefined {
  if (!s) return undefined;
  try {
    return JSON.parse(s) as T;
  } catch {
    return undefined;
  }
}

interface Inventory {
  hostname?: string;
  cpu?: { count?: number };
  memory?: { physical_bytes?: number; usable_bytes?: number };
  disks?: Array<{ id?: string; name?: string; path?: string; size_bytes?: number; drive_type?: string; installation_eligibility?: { eligible?: boolean } }>;
  interfaces?: Array<{ name?: string; ipv4_addresses?: string[]; ipv6_addresses?: string[] }>;
}

export interface HostFacts {
  hostname: string;
  cpuCores: number | undefined;
  ramBytes: number | undefined;
  diskBytes: number | undefined;
  installDisk: string | undefined;
  addresses: string[];
}

export function hostFacts(h: Host): HostFacts {
  const inv = parse<Inventory>(h.inventory) ?? {};
  const disks = inv.disks ?? [];
  const chosen = disks.find((d) => d.id === h.installation_disk_id || d.path === h.installation_disk_path) ?? disks.find((d) => d.installation_eligibility?.eligible);
  const installDisk = h.installation_disk_path ?? chosen?.path;
  return {
    hostname: h.requested_hostname ?? inv.hostname ?? h.id.slice(0, 8),
    cpuCores: inv.cpu?.count,
    ramBytes: inv.memory?.physical_bytes,
    diskBytes: disks.length ? disks.reduce((a, d) => a + (d.size_bytes ?? 0), 0) : undefined,
    installDisk: installDisk ? `${installDisk}${chosen?.size_bytes ? ` (${Math.round(chosen.size_bytes / 1e9)} GB ${chosen.drive_type ?? ''})`.replace(/ \)$/, ')') : ''}` : undefined,
    addresses: (inv.interfaces ?? []).flatMap((i) => [...(i.ipv4_addresses ?? []), ...(i.ipv6_addresses ?? [])]),
  };
}

export interface FailingValidation {
  id: string;
  category: string;
  status: 'failure' | 'pending' | 'error';
  message: string;
  hint?: string;
  blocking: boolean;
}

type ValidationsInfo = Record<string, Array<{ id: string; status: string; message: string }>>;
type Remediation = Record<string, { cause?: string; hint?: string; blocking?: boolean }>;

/** Failures first, with their remediation hint; pending ones after (they usually mean "not reported yet"). */
export function failingValidations(x: { validations_info?: string; validation_remediation?: string }): FailingValidation[] {
  const info = parse<ValidationsInfo>(x.validations_info) ?? {};
  const rem = parse<Remediation>(x.validation_remediation) ?? {};
  const out: FailingValidation[] = [];
  for (const [category, list] of Object.entries(info)) {
    for (const v of list ?? []) {
      if (v.status === 'success' || v.status === 'disabled') continue;
      const r = rem[v.id];
      out.push({ id: v.id, category, status: v.status as FailingValidation['status'], message: v.message, hint: r?.hint, blocking: r?.blocking ?? true });
    }
  }
  return out.sort((a, b) => Number(b.status === 'failure') - Number(a.status === 'failure'));
}

export interface NetworkSuggestions {
  machine_network: string | null;
  api_vip: string | null;
  ingress_vip: string | null;
}

export function networkSuggestions(c: Cluster): NetworkSuggestions {
  return { machine_network: null, api_vip: null, ingress_vip: null, ...parse<Partial<NetworkSuggestions>>(c.network_suggestions) };
}

/** The IPv4 networks the hosts have addresses in, most common first (what a machine network can be). */
export function hostNetworks(hosts: Host[]): string[] {
  const count = new Map<string, number>();
  for (const h of hosts) {
    for (const a of new Set(hostFacts(h).addresses.map(networkOf).filter((n): n is string => Boolean(n)))) count.set(a, (count.get(a) ?? 0) + 1);
  }
  return [...count.entries()].sort((a, b) => b[1] - a[1]).map(([n]) => n);
}

/** "192.168.127.10/24" → "192.168.127.0/24" (IPv4 only; anything else is skipped). */
export function networkOf(cidr: string): string | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(cidr);
  if (!m) return undefined;
  const prefix = Number(m[5]);
  if (prefix > 32) return undefined;
  const ip = m.slice(1, 5).reduce((a, o) => a * 256 + Number(o), 0);
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  const net = (ip & mask) >>> 0;
  return `${[24, 16, 8, 0].map((s) => (net >>> s) & 255).join('.')}/${prefix}`;
}

export const PRE_INSTALL = ['insufficient', 'ready', 'pending-for-input'];
export const INSTALLING = ['preparing-for-installation', 'installing', 'finalizing', 'installing-pending-user-action'];

/** The step a cluster's page opens on when the URL names none. */
export function defaultStep(c: Cluster, hasInfraEnv: boolean): 'image' | 'hosts' | 'progress' | 'done' {
  // A cluster that accepts new hosts (day 2) is installed: its page is the last one, with the new hosts.
  if (c.status === 'installed' || c.status === 'adding-hosts') return 'done';
  if (!PRE_INSTALL.includes(c.status)) return 'progress';
  if (!hasInfraEnv || !(c.hosts?.length ?? 0)) return 'image';
  return 'hosts';
}

/**
 * The cluster's bar. The service's total_percentage is authoritative when it
 * moves, but it may lag behind the hosts during the install (or, seen once, stay
 * at 0 past the end), so the bar never shows less than the hosts' mean.
 */
export function clusterPercent(c: Cluster): number {
  if (c.status === 'installed') return 100;
  const reported = c.progress?.total_percentage ?? 0;
  if (!INSTALLING.includes(c.status) && c.status !== 'error') return reported;
  const hosts = c.hosts ?? [];
  const mean = hosts.length ? hosts.reduce((a, h) => a + (h.progress?.installation_percentage ?? 0), 0) / hosts.length : 0;
  return Math.max(reported, Math.round(mean));
}
