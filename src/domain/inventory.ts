/**
 * An inventory as agents really send it, made into the shape the rest of the
 * service reads. The upstream Go agent drops zero values and sends empty
 * lists as `null` (`ipv4_addresses: null`, no `routes`, no `eligible`), older
 * agents leave out whole sections, and any agent reports the loopback NIC.
 * Absent fields get assisted-service's meaning (empty, zero, false); a field
 * of the wrong type is refused with its path, so nothing downstream has to
 * guard against either.
 *
 * Disk eligibility is the service's decision, as in assisted-service: the
 * agent's own reasons (removable, read-only, …) are kept, the size and
 * drive-type rules are the service's, and `eligible` is true exactly when no
 * reason is left. Pure: no I/O.
 */
import type { Disk, Interface, Inventory } from '../../agent/types';

export class InventoryShapeError extends Error {
  constructor(readonly field: string, expected: string) {
    super(`inventory field ${field} must be ${expected}`);
  }
}

type Json = Record<string, unknown>;

function obj(v: unknown, field: string): Json {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw new InventoryShapeError(field, 'an object');
  return v as Json;
}
function list(v: unknown, field: string): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new InventoryShapeError(field, 'an array');
  return v;
}
function str(v: unknown, field: string, dflt = ''): string {
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'string') throw new InventoryShapeError(field, 'a string');
  return v;
}
function num(v: unknown, field: string): number {
  if (v === undefined || v === null) return 0;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new InventoryShapeError(field, 'a number');
  return v;
}
function bool(v: unknown, field: string): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') throw new InventoryShapeError(field, 'a boolean');
  return v;
}
function strings(v: unknown, field: string): string[] {
  return list(v, field).map((s, i) => str(s, `${field}[${i}]`));
}
/** Optional fields stay absent when absent, so the stored document says only what the agent said. */
function optional<T>(o: Json, key: string, read: (v: unknown, field: string) => T, field: string): Partial<Record<string, T>> {
  return o[key] === undefined || o[key] === null ? {} : { [key]: read(o[key], `${field}.${key}`) };
}

const isLoopbackAddress = (cidr: string) => cidr.startsWith('127.') || cidr.split('/')[0] === '::1';

/**
 * Loopback never counts: it is not a path to any other host, and counting it
 * puts 127.0.0.0/8 in machine-network checks and 127.0.0.1 in peer lists.
 */
export function isLoopbackInterface(i: Pick<Interface, 'name' | 'flags' | 'ipv4_addresses'>): boolean {
  return i.name === 'lo' || (i.flags ?? []).some((f) => f.toLowerCase() === 'loopback');
}

function normalizeInterface(raw: unknown, field: string): Interface {
  const o = obj(raw, field);
  return {
    ...o,
    name: str(o.name, `${field}.name`),
    mac_address: str(o.mac_address, `${field}.mac_address`),
    ipv4_addresses: strings(o.ipv4_addresses, `${field}.ipv4_addresses`).filter((a) => !isLoopbackAddress(a)),
    ipv6_addresses: strings(o.ipv6_addresses, `${field}.ipv6_addresses`).filter((a) => !isLoopbackAddress(a)),
    mtu: num(o.mtu, `${field}.mtu`),
    has_carrier: bool(o.has_carrier, `${field}.has_carrier`),
    speed_mbps: num(o.speed_mbps, `${field}.speed_mbps`),
    type: str(o.type, `${field}.type`),
    flags: strings(o.flags, `${field}.flags`),
  } as Interface;
}

function normalizeDisk(raw: unknown, field: string): Disk {
  const o = obj(raw, field);
  const e = obj(o.installation_eligibility, `${field}.installation_eligibility`);
  const reasons = strings(e.not_eligible_reasons, `${field}.installation_eligibility.not_eligible_reasons`);
  return {
    ...o,
    id: str(o.id, `${field}.id`) || str(o.by_id, `${field}.by_id`) || str(o.path, `${field}.path`),
    name: str(o.name, `${field}.name`),
    path: str(o.path, `${field}.path`),
    drive_type: str(o.drive_type, `${field}.drive_type`),
    size_bytes: num(o.size_bytes, `${field}.size_bytes`),
    ...optional(o, 'removable', bool, field),
    ...optional(o, 'bootable', bool, field),
    ...optional(o, 'is_installation_media', bool, field),
    // What the agent said, until the service decides (diskEligibility).
    installation_eligibility: { eligible: reasons.length === 0 && bool(e.eligible, `${field}.installation_eligibility.eligible`), not_eligible_reasons: reasons },
  } as Disk;
}

/** Parses and normalizes an inventory step's output; throws InventoryShapeError naming the field. */
export function normalizeInventory(raw: unknown): Inventory {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new InventoryShapeError('(inventory)', 'a JSON object');
  const o = raw as Json;
  const cpu = obj(o.cpu, 'cpu');
  const memory = obj(o.memory, 'memory');
  const vendor = obj(o.system_vendor, 'system_vendor');
  const boot = obj(o.boot, 'boot');
  const interfaces = list(o.interfaces, 'interfaces').map((n, i) => normalizeInterface(n, `interfaces[${i}]`));
  return {
    ...o,
    hostname: str(o.hostname, 'hostname'),
    cpu: { ...cpu, count: num(cpu.count, 'cpu.count'), architecture: str(cpu.architecture, 'cpu.architecture'), model_name: str(cpu.model_name, 'cpu.model_name'), flags: strings(cpu.flags, 'cpu.flags') },
    memory: { ...memory, physical_bytes: num(memory.physical_bytes, 'memory.physical_bytes'), usable_bytes: num(memory.usable_bytes, 'memory.usable_bytes') },
    disks: list(o.disks, 'disks').map((d, i) => normalizeDisk(d, `disks[${i}]`)),
    interfaces: interfaces.filter((i) => !isLoopbackInterface(i)),
    routes: list(o.routes, 'routes').map((r, i) => {
      const route = obj(r, `routes[${i}]`);
      return { ...route, interface: str(route.interface, `routes[${i}].interface`), destination: str(route.destination, `routes[${i}].destination`), family: num(route.family, `routes[${i}].family`) };
    }).filter((r) => r.interface !== 'lo'),
    system_vendor: { ...vendor, manufacturer: str(vendor.manufacturer, 'system_vendor.manufacturer'), product_name: str(vendor.product_name, 'system_vendor.product_name'), virtual: bool(vendor.virtual, 'system_vendor.virtual') },
    // No boot section: the agent could not tell; assisted-service reads that as BIOS.
    boot: { ...boot, current_boot_mode: str(boot.current_boot_mode, 'boot.current_boot_mode', 'bios') === 'uefi' ? 'uefi' : 'bios' },
  } as Inventory;
}

/** Drive types a cluster can be installed on (assisted-service's list, less the mainframe-only ones). */
export const INSTALLABLE_DRIVE_TYPES = ['HDD', 'SSD', 'Multipath', 'FC', 'iSCSI', 'RAID'];

/**
 * The service's reasons, in assisted-service's wording where it has one
 * (scripts and UIs match on these texts). Every text the service writes is
 * recognised by SERVICE_REASON, so deciding again (a new role, a new
 * requirement) replaces them instead of piling them up.
 */
const SERVICE_REASON = /^(Disk is too small \(|Drive type is |Disk appears to be an ISO installation media|Disk is removable$|Disk is read-only$)/;

/** go-humanize's SI byte sizes ("1.0 GB", "120 GB"), which assisted-service's messages use. */
export function humanBytes(n: number): string {
  if (n < 10) return `${n} B`;
  const units = ['B', 'kB', 'MB', 'GB', 'TB', 'PB', 'EB'];
  const e = Math.min(units.length - 1, Math.floor(Math.log(n) / Math.log(1000)));
  const v = n / 1000 ** e;
  return `${v < 10 ? v.toFixed(1) : v.toFixed(0)} ${units[e]}`;
}

export function diskEligibility(disk: Disk, minDiskGb: number): Disk['installation_eligibility'] {
  const reasons = disk.installation_eligibility.not_eligible_reasons.filter((r) => !SERVICE_REASON.test(r));
  const minBytes = minDiskGb * 1000 ** 3;
  // The agent's order: removable first, as the upstream agent reports it.
  if (disk.removable) reasons.push('Disk is removable');
  if (disk.size_bytes < minBytes) reasons.push(`Disk is too small (disk only has ${humanBytes(disk.size_bytes)}, but ${humanBytes(minBytes)} are required)`);
  if (!INSTALLABLE_DRIVE_TYPES.includes(disk.drive_type)) reasons.push(`Drive type is ${disk.drive_type || 'unknown'}, it must be one of ${INSTALLABLE_DRIVE_TYPES.join(', ')}.`);
  if (disk.is_installation_media) reasons.push('Disk appears to be an ISO installation media (has partition with type iso9660)');
  if ((disk as Disk & { read_only?: boolean }).read_only) reasons.push('Disk is read-only');
  const unique = [...new Set(reasons)];
  return { eligible: unique.length === 0, not_eligible_reasons: unique };
}

/**
 * The inventory with the service's eligibility on every disk, or the same
 * object when nothing changed (the caller writes only then).
 */
export function withDiskEligibility(inventory: Inventory, minDiskGb: number): Inventory {
  let changed = false;
  const disks = inventory.disks.map((d) => {
    const e = diskEligibility(d, minDiskGb);
    const same = e.eligible === d.installation_eligibility.eligible && e.not_eligible_reasons.length === d.installation_eligibility.not_eligible_reasons.length && e.not_eligible_reasons.every((r, i) => r === d.installation_eligibility.not_eligible_reasons[i]);
    if (same) return d;
    changed = true;
    return { ...d, installation_eligibility: e };
  });
  return changed ? { ...inventory, disks } : inventory;
}

/**
 * The disk the OS goes to: the one the user chose while it is still eligible,
 * else the first eligible disk in the agent's order (assisted-service picks
 * the same way).
 */
export function chooseInstallationDisk(inventory: Inventory, chosenId: string | undefined): Disk | undefined {
  const eligible = inventory.disks.filter((d) => d.installation_eligibility.eligible);
  return eligible.find((d) => d.id === chosenId || d.path === chosenId) ?? eligible[0];
}
