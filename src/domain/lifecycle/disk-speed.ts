import { DEFAULT_REQUIREMENTS, type RoleRequirements } from './requirements';

/** Pre-install verdict on the install disk: only the hard threshold fails preparation (the soft one warns in validations). */
export function diskSpeedOk(disksInfo: string | undefined, req: RoleRequirements = DEFAULT_REQUIREMENTS.master): boolean | undefined {
  if (!disksInfo) return undefined;
  try {
    const ms = (JSON.parse(disksInfo) as { io_sync_duration?: number }).io_sync_duration;
    return typeof ms === 'number' ? ms <= req.diskSyncHardMs : undefined;
  } catch {
    return undefined;
  }
}
