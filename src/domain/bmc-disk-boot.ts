/**
 * When the install drives a host's BMC to boot it from disk (pure; used by
 * workflows/install-cluster.ts). Once the host reports a stage after
 * "Writing image to disk", the image is on the disk: the boot device becomes
 * the disk and the ISO is ejected ("switch"). When it reports Rebooting, it
 * is restarted through the BMC so the switch takes effect ("restart"). A host
 * that never had a BMC is never due, so installs without one run as before.
 */
import { STAGES_BY_ROLE, stageRole } from './install-stages';

export type DiskBootStep = 'switch' | 'restart';

export interface DiskBootHost {
  hostId: string;
  role: string;
  status: string;
  stage?: string;
  bmc?: boolean;
  /** switched: boot device and media done; restarted: and the restart sent; failed: the BMC could not be driven. */
  diskBoot?: 'switched' | 'restarted' | 'failed';
}

export function diskBootDue(h: DiskBootHost, install: { bootstrapHostId?: string; controlPlaneCount: number }): DiskBootStep | undefined {
  if (!h.bmc || !h.stage || h.diskBoot === 'failed' || h.diskBoot === 'restarted') return undefined;
  if (h.status !== 'installing-in-progress') return undefined;
  const stages = STAGES_BY_ROLE[stageRole(h.role, h.hostId === install.bootstrapHostId, install.controlPlaneCount)];
  const at = stages.indexOf(h.stage as (typeof stages)[number]);
  const written = stages.indexOf('Writing image to disk');
  if (at <= written) return undefined;
  if (!h.diskBoot) return 'switch';
  return h.stage === 'Rebooting' ? 'restart' : undefined;
}
