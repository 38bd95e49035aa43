/**
 * Hardware and network requirements per role: one table, configurable as a
 * whole (HOST_REQUIREMENTS_FILE). Numbers follow assisted-service's defaults
 * (reference §5a); the disk-speed and latency checks have a soft threshold
 * (warning, install allowed) and a hard one (blocks install).
 */
export interface RoleRequirements {
  cpuCores: number;
  ramMib: number;
  diskGb: number;
  /** fdatasync p99 of the install disk, ms: above soft warns, above hard blocks. */
  diskSyncSoftMs: number;
  diskSyncHardMs: number;
  /** Average L3 RTT to same-role peers, ms. */
  rttSoftMs: number;
  rttHardMs: number;
  /** Packet loss to same-role peers, percent. */
  lossSoftPercent: number;
  lossHardPercent: number;
}

export type RequirementRole = 'master' | 'worker' | 'arbiter' | 'sno';

export const DEFAULT_REQUIREMENTS: Record<RequirementRole, RoleRequirements> = {
  master: { cpuCores: 4, ramMib: 16384, diskGb: 100, diskSyncSoftMs: 10, diskSyncHardMs: 30, rttSoftMs: 100, rttHardMs: 200, lossSoftPercent: 0, lossHardPercent: 5 },
  arbiter: { cpuCores: 2, ramMib: 8192, diskGb: 50, diskSyncSoftMs: 10, diskSyncHardMs: 30, rttSoftMs: 1000, rttHardMs: 2000, lossSoftPercent: 0, lossHardPercent: 5 },
  worker: { cpuCores: 2, ramMib: 8192, diskGb: 100, diskSyncSoftMs: 10, diskSyncHardMs: 30, rttSoftMs: 1000, rttHardMs: 2000, lossSoftPercent: 10, lossHardPercent: 20 },
  sno: { cpuCores: 8, ramMib: 16384, diskGb: 100, diskSyncSoftMs: 10, diskSyncHardMs: 30, rttSoftMs: 1000, rttHardMs: 2000, lossSoftPercent: 100, lossHardPercent: 100 },
};

/** RAM is measured through meminfo on the host, a little below the DIMM size: allow 100 MiB + 2 %. */
export const RAM_TOLERANCE_MIB = 100;
export const RAM_TOLERANCE_FRACTION = 0.02;

export interface LifecycleSettings {
  requirements: Record<RequirementRole, RoleRequirements>;
  /** No poll for this long → disconnected (AS: 3 min). */
  disconnectTimeoutMs: number;
  /** Host clock this far behind / ahead of the service fails time-synced (AS: 20 min / 1 h). */
  clockBehindMaxS: number;
  clockAheadMaxS: number;
  /** Hosts' clocks must agree within this (cluster ntp-server-configured, AS: 4 min). */
  clusterClockSpreadMaxS: number;
}

export const DEFAULT_LIFECYCLE_SETTINGS: LifecycleSettings = {
  requirements: DEFAULT_REQUIREMENTS,
  disconnectTimeoutMs: 3 * 60_000,
  clockBehindMaxS: 20 * 60,
  clockAheadMaxS: 60 * 60,
  clusterClockSpreadMaxS: 4 * 60,
};

/** Merges a JSON override ({"master": {"cpuCores": 6}}) over the defaults, refusing unknown roles and fields. */
export function parseRequirementsOverride(json: unknown): Record<RequirementRole, RoleRequirements> {
  const out = structuredClone(DEFAULT_REQUIREMENTS);
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new Error('the requirements file must be a JSON object keyed by role');
  for (const [role, fields] of Object.entries(json as Record<string, Record<string, unknown>>)) {
    if (!(role in out)) throw new Error(`unknown role "${role}" (known: ${Object.keys(out).join(', ')})`);
    for (const [k, v] of Object.entries(fields ?? {})) {
      if (!(k in out[role as RequirementRole])) throw new Error(`unknown requirement "${role}.${k}"`);
      if (typeof v !== 'number' || !(v >= 0)) throw new Error(`requirement "${role}.${k}" must be a non-negative number`);
      (out[role as RequirementRole] as unknown as Record<string, number>)[k] = v;
    }
  }
  return out;
}
